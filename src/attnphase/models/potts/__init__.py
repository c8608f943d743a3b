"""The mean-field q-state Potts model, built from the layers: `symbolic` (free energy), `parameters`,
`solve` (stationary states at β, the transition in β), `results`. See docs/adding-a-model.md."""

__all__ = ["symbolic", "parameters", "solve", "results"]
