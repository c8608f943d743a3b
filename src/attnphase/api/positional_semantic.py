"""Public entry points for the positional-vs-semantic attention model (mirrors `attnphase ... positional-semantic`).

Accuracy is an input: every number comes with an error verified on finer quadrature rules.

* `solve(omega, alpha, ..., tol=0.003)`: the positional (θ = 0) and semantic (m = 0) branches (and the trivial
  and mixed ones on request, `branches=`), each followed from where it is known to exist, with q, m, θ, V, ε_g, ε_t = −Φ
  and Φ to the relative tolerance `tol` (`<field>_error`), its stability (None where not computed), the branch
  with the lowest training loss and the linear baseline; a branch that does not exist at α is listed with the evidence.
  `solve_along(omega, alphas, ...)`: the same at several α, each branch followed once across them.
* `threshold(omega, ..., tol=1e-3)`: α_c (equal training losses of the positional and semantic branches) and
  α_l (the semantic test error equals the linear baseline's), each to the absolute tolerance `tol`.
* `phase_curve(omegas, ..., tol=1e-3)`: both thresholds along ω, by the same path continued in ω.
* `plot_phase_diagram(curve)`, `plot_order_parameters(result_or_rows)`: matplotlib Figures of the above.
* `spinodals(omega, ...)`: where each branch ceases to exist or becomes unstable (tensor rules).
* `linear_baseline_error(omega, sigma, L)`: ε_g^lin.
* `simulate(omega=..., alpha=..., ...)`: finite-d full-batch GD / Adam, batched over trials.
* The building blocks: `Parameters` (validated once), `SaddlePointEquations`, `Rule` and `state_ladder` (the
  quadrature rules), `solve_branch`, `follow`, `on_rule`, `follow_on_rule`, `climb_branch`, and the result types.

This module is a facade: every name comes from `attnphase.models.positional_semantic`, where the model
lives, imported on first use (the simulator needs torch, the solvers SymPy and numba, the plots matplotlib).
"""

import numpy as _np

from attnphase.errors import ParameterError as _ParameterError
from attnphase.models import positional_semantic as _model
from attnphase.params import check_real as _check_real

__all__ = list(_model.__all__)


def state_vector(q, V, theta, m):
    """x = (q, V, θ, m_1..m_L), a state of the saddle-point map, from checked values: q, V and θ finite real numbers
    and m the L overlaps m_1..m_L, L in the model's range [2, 6] (ParameterError naming q, V, theta or m; q = NaN or
    None gave a NaN entry, m = [] a state of 3 entries). The solvers build their states with the unchecked
    `attnphase.models.positional_semantic.state_evolution.state_vector`."""
    values = [_check_real(name, value) for name, value in (("q", q), ("V", V), ("theta", theta))]
    L_range = _model.Parameters.declarations()["L"].metadata["allowed"]
    allowed = f"a list of L real numbers, L in [{L_range.low}, {L_range.high}] (the model's number of tokens)"
    try:
        overlaps = [_check_real("m", v) for v in _np.atleast_1d(_np.asarray(m, dtype=object))]
    except (TypeError, ValueError):  # a ragged nesting, or an entry that is not a finite real number
        raise _ParameterError("m", m, allowed) from None
    if not L_range.low <= len(overlaps) <= L_range.high:
        raise _ParameterError("m", m, allowed)
    return _model.state_vector(*values, overlaps)


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_model, name)


def __dir__():
    return sorted(set(globals()) | set(__all__))
