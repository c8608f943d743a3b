"""Compiled kernels of the copy-heads expressions (derive.codegen), built once per process and called by name.

Every kernel takes its variables first and then its parameters, the parameters being the expression's other
free symbols in name order; callers bind the parameters by their SymPy names (`bind`), so no argument list is
kept in step with an expression by hand. `CopyHeadsInstance` binds the kernels its reduced action needs when
it is made; the auxiliary kernels (Landau coefficients, the row mean field's data term) are built here on
first use and cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy

from attnphase.derive.codegen import ActionKernels, BoundKernel, Kernel, compile_action, compile_kernel
from attnphase.models.copy_heads import symbolic as s

__all__ = ["BoundAction", "parameters_of", "bind", "bind_action", "linear_kernels", "softmax_kernels",
           "first_attempt_kernels", "causal_linear_kernels", "loss_kernel", "loss_kernel_mp",
           "row_loss_kernel", "linear_landau_kernel_mp",
           "first_attempt_landau_kernel", "causal_landau_kernel", "causal_stability_kernels",
           "causal_remainder_quadratic_kernels", "softmax_data_kernel", "finite_data_kernel", "torch_data_term"]


def parameters_of(exprs, variables) -> list:
    """The free symbols of `exprs` (an expression, a list or a Matrix) other than `variables`, by name."""
    items = list(exprs) if isinstance(exprs, (list, tuple, sympy.MatrixBase)) else [exprs]
    free = set().union(*(sympy.sympify(e).free_symbols for e in items)) - set(variables)
    return sorted(free, key=lambda symbol: symbol.name)


def _compile(exprs, variables, backend: str = "numpy", **options) -> Kernel:
    return compile_kernel(exprs, list(variables) + parameters_of(exprs, variables), backend=backend, **options)


def bind(kernel: Kernel, values: dict) -> BoundKernel:
    """The kernel with every parameter in `values` that it takes fixed by name (others it does not take are
    ignored: a convention can drop a term, and with it a parameter)."""
    return kernel.bind(**{name: value for name, value in values.items() if name in kernel.arg_names})


@dataclass(frozen=True)
class BoundAction:
    """An action's six kernels (value, gradient, Hessian; float64 and mpmath) with parameters bound by name."""

    action: BoundKernel
    gradient: BoundKernel
    hessian: BoundKernel
    action_mp: BoundKernel
    gradient_mp: BoundKernel
    hessian_mp: BoundKernel


def bind_action(kernels: ActionKernels, values: dict) -> BoundAction:
    return BoundAction(*(bind(getattr(kernels, name), values) for name in
                         ("action", "gradient", "hessian", "action_mp", "gradient_mp", "hessian_mp")))


def _action(expr, variables) -> ActionKernels:
    return compile_action(expr, variables, parameters_of(expr, variables))


# -- reduced actions ----------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def linear_kernels(remainder: str = "map", centred: bool = False) -> ActionKernels:
    """Convention A in (t, c) (remainder "map") or with the remainder in (t, c, r), ρ = e^r ("entropy")."""
    if remainder == "map":
        return _action(s.linear_action_map(centred), (s.t, s.c))
    return _action(s.linear_action_log_remainder(centred), (s.t, s.c, s.r))


@lru_cache(maxsize=None)
def softmax_kernels(centred: bool = False) -> ActionKernels:
    """The homogeneous softmax action in the previous-position logit x (centred tokens: without the all-ones
    terms, which are constant in x)."""
    return _action(s.softmax_action(centred=centred), (s.x,))


@lru_cache(maxsize=None)
def first_attempt_kernels() -> ActionKernels:
    """The first attempt (the reduction to m and q alone) in (m, r), q = m² + e^r."""
    return _action(s.first_attempt_action_log_gap(), (s.m, s.r))


@lru_cache(maxsize=None)
def causal_linear_kernels(centred: bool = False, remainder: bool = False) -> ActionKernels:
    """The row-resolved linear action in its collective variables (Q_t, M_t, T1, T2, c[, r])."""
    collective = (s.sum_t2_l, s.sum_t_l, s.sum_t, s.sum_t2, s.c)
    if not remainder:
        return _action(s.causal_linear_action(centred), collective)
    return _action(s.causal_linear_action_log_remainder(centred), collective + (s.r,))


# -- losses ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def loss_kernel(centred: bool = False) -> Kernel:
    """(mean-predictor loss, Gibbs loss) per position at (m, q, t)."""
    exprs = [s.mean_predictor_loss(s.m, s.q, s.t, centred), s.gibbs_loss(s.m, s.q, s.t, centred)]
    return _compile(exprs, (s.m, s.q, s.t))


@lru_cache(maxsize=None)
def loss_kernel_mp(centred: bool = False) -> Kernel:
    """`loss_kernel` in mpmath."""
    exprs = [s.mean_predictor_loss(s.m, s.q, s.t, centred), s.gibbs_loss(s.m, s.q, s.t, centred)]
    return _compile(exprs, (s.m, s.q, s.t), backend="mpmath")


@lru_cache(maxsize=None)
def row_loss_kernel(centred: bool = False) -> Kernel:
    """(mean-predictor loss, Gibbs loss) when the rows differ, at (m, q, t = mean row sum, t2)."""
    exprs = [s.mean_predictor_loss_rows(s.m, s.q, s.t, s.t2, centred), s.gibbs_loss_rows(s.m, s.q, s.t, s.t2, centred)]
    return _compile(exprs, (s.m, s.q, s.t, s.t2))


# -- Landau coefficients and the causal stability matrix ------------------------------------------------
@lru_cache(maxsize=None)
def linear_landau_kernel_mp(remainder: str = "map", centred: bool = False) -> Kernel:
    """(da₂/dn, a₂, a₄, a₆) along a soft direction (v_t, v_c) (`symbolic.linear_landau_coefficients`), in mpmath
    (at the critical point and soft vector in the working precision, so that the float a₄ is right to its last
    digit: `linear_transition`; there is no float64 version)."""
    return _compile(s.linear_landau_coefficients(remainder, centred), (s.v_t, s.v_c), backend="mpmath")


@lru_cache(maxsize=None)
def first_attempt_landau_kernel() -> Kernel:
    """(da₂/dn, a₄, a₆) of the first attempt along m at q − m² = e^{r0}."""
    return _compile(s.first_attempt_landau_coefficients(), (s.r0,))


@lru_cache(maxsize=None)
def causal_landau_kernel(centred: bool = False, remainder: bool = False) -> Kernel:
    """(da₂/dn, a₂, a₄, a₆) along a direction given by its collective sums (`symbolic.causal_direction`)."""
    return _compile(s.causal_landau_coefficients(centred, remainder), s.causal_direction)


@lru_cache(maxsize=None)
def causal_stability_kernels(centred: bool = False, remainder: bool = False) -> tuple[Kernel, Kernel, Kernel, Kernel]:
    """((λ, μ) of the row curvatures d_l = λ/l + μ, the same in mpmath, the 3×3 stability matrix K in the Gram
    sums (Σ_a, Σ_b, Σ_c), the same in mpmath). remainder=True: both take ρ (the remainder at the symmetric
    point) as a parameter."""
    lam_mu = list(s.causal_row_curvatures(centred, remainder))
    K = s.causal_stability_matrix(centred, remainder)
    return (_compile(lam_mu, ()), _compile(lam_mu, (), backend="mpmath"),
            _compile(K, s.causal_gram), _compile(K, s.causal_gram, backend="mpmath"))


@lru_cache(maxsize=None)
def causal_remainder_quadratic_kernels() -> tuple[Kernel, Kernel]:
    """(a₂, a₁, a₀) of the remainder's stationarity at the symmetric point, float64 and mpmath."""
    coefficients = s.causal_remainder_quadratic()
    return _compile(coefficients, ()), _compile(coefficients, (), backend="mpmath")


# -- the row mean field and the finite-data correction (softmax) ------------------------------------------
@lru_cache(maxsize=None)
def softmax_data_kernel() -> Kernel:
    """(S_data, ∂S_data/∂m, ∂S_data/∂q) at (m, q), row sum t = 1."""
    return _compile(s.softmax_data_terms(), (s.m, s.q))


@lru_cache(maxsize=None)
def finite_data_kernel() -> Kernel:
    """(η_B, κ) of `symbolic.finite_data_field_coefficients` at (m, q) (vectorised numpy: called once per point)."""
    return _compile(list(s.finite_data_field_coefficients(s.m, s.q)), (s.m, s.q), compiler="none")


@lru_cache(maxsize=None)
def torch_data_term() -> Kernel:
    """`symbolic.data_action_rows` for torch (autograd): S_data(m, q, T1 = t1, T2 = t2; parameters)."""
    return _compile(s.data_action_rows(s.m, s.q, s.sum_t, s.sum_t2), (s.m, s.q, s.sum_t, s.sum_t2), backend="torch")
