"""The mean-field q-state Potts model, built from the layers: `symbolic` (free energy), `derivation` (its
rendering, derivations/potts.md), `parameters`, `solve` (stationary states at β, the transition in β),
`results`. See docs/adding-a-model.md."""

__all__ = ["symbolic", "derivation", "parameters", "solve", "results"]
