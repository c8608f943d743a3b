"""Public entry points for the positional-vs-semantic attention model (mirrors `attnphase ... positional-semantic`).

* `solve(omega, alpha, ...)`: every branch (positional θ = 0, semantic m = 0, trivial m = θ = 0, mixed)
  of the state-evolution fixed point, with its stability, free energy Φ, training loss ε_t = −Φ and test
  error ε_g, the global minimum (largest Φ) and the linear baseline.
* `threshold(omega, ...)`: α_c (free energies of the positional and semantic branches cross) and α_l
  (semantic ε_g crosses the linear baseline), each with an error estimate (a check rule, or split-line
  convergence studies with `refine`).
* `alpha_c_curve(omegas, ...)`, `alpha_c_curve_split_line(omegas, ...)`: the thresholds along ω.
* `spinodals(omega, ...)`: where each branch ceases to exist or becomes unstable.
* `linear_baseline_error(omega, sigma, L)`: ε_g^lin (spec §5).
* `simulate(omega=..., alpha=..., ...)`: finite-d full-batch GD / Adam, batched over trials.
* The building blocks: `Parameters` (validated once), `SaddlePointEquations`, `solve_branch`,
  `BranchTracker`, `refine_branch`, `convergence_study`, and the result types.

This module is a facade: every name comes from `attnphase.models.positional_semantic`, where the model
lives, imported on first use (the simulator needs torch, the solvers SymPy and numba).
"""

from attnphase.models import positional_semantic as _model

__all__ = list(_model.__all__)


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_model, name)


def __dir__():
    return sorted(set(globals()) | set(__all__))
