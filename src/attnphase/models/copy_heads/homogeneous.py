"""Minima of the homogeneous reduced actions (every target row alike) and `solve`.

Softmax: the action is one-dimensional in the previous-position logit x; its stationary points are the sign
changes of S' on a grid, refined on all brackets at once (`numeric.minimize.bracketed_roots`). Linear: every
local minimum of S(t, c[, r]) from a grid of starts (`numeric.minimize.multistart_local_minima`), the sign
symmetry (t, c) ↦ (−t, −c) folded. Each point is then polished by Newton's method in mpmath
(`numeric.precision.polished_stationary_point`), which gives its error: near the transition the curvature is small
and the float64 minimiser stops ~1e-10 from the stationary point. Under the causal mask `solve` hands over to
`causal.causal_solve`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.parameters import DataSize
from attnphase.models.copy_heads.results import Minimum, SolveResult
from attnphase.numeric.minimize import bracketed_roots, multistart_local_minima, sign_change_brackets
from attnphase.numeric.precision import DERIVED_ROUNDING, polished_stationary_point
from attnphase.results import Status

__all__ = ["softmax_grid", "softmax_stationary_points", "linear_minima", "solve", "solve_instance", "finite_minima",
           "solve_result"]



def softmax_grid(inst: CopyHeadsInstance) -> np.ndarray:
    """The x grid of the softmax scans: from 12σ below the prior mean of the logit to x = 80 (a → 1)."""
    sigma2 = inst.convention.sigma2
    lo = -math.log(inst.L - 1) - sigma2 / 2 - 12 * math.sqrt(sigma2)
    return np.linspace(lo, 80.0, 1601)


def softmax_stationary_points(inst: CopyHeadsInstance, n_, refine: bool = True) -> tuple[list, list]:
    """(minima, maxima) of the softmax action in x at n: sign changes of S' on `softmax_grid`, refined by a
    safeguarded Newton iteration on all brackets at once (refine=False: the bracket midpoints, enough to count).
    1e-13 relative: the action at a stationary point is quadratic in the error of x, and the mpmath polish
    starts from here anyway."""
    action = inst.reduced
    xs = softmax_grid(inst)
    g = action.gradient(xs, n_)[..., 0]
    idx = sign_change_brackets(g)
    is_min = g[idx] < 0
    if not refine or len(idx) == 0:
        roots = 0.5 * (xs[idx] + xs[idx + 1])
    else:
        roots = bracketed_roots(lambda x: action.gradient(x, n_)[..., 0], lambda x: action.hessian(x, n_)[..., 0, 0],
                                xs[idx].copy(), xs[idx + 1].copy(), g[idx].copy(), max_iter=60, rtol=1e-13)
    return roots[is_min].tolist(), roots[~is_min].tolist()


def linear_minima(inst: CopyHeadsInstance, n_):
    """Local minima of the linear action in (t, c[, r]) from 16 starts (`numeric.minimize.LocalMinima`); the
    action is even under (t, c) ↦ (−t, −c), so each minimum is reported with t ≥ 0."""
    action = inst.reduced
    dim = 3 if inst.entropy else 2
    starts = [[t0, c0] + ([math.log(1e-2)] if dim == 3 else []) for t0 in (0.0, 0.5, 1.0, 2.0) for c0 in (0.0, 0.1, 0.5, 1.0)]
    flip = np.r_[-1, -1, np.ones(dim - 2)]
    return multistart_local_minima(lambda v: float(action.action(*v, n_)),
                                   lambda v: np.asarray(action.gradient(*v, n_), float),
                                   lambda v: np.asarray(action.hessian(*v, n_), float), starts,
                                   canonical=lambda v: v * (1 if v[0] >= 0 else flip))


def _softmax_minima(inst: CopyHeadsInstance, n_) -> tuple[list, int]:
    action, L = inst.reduced, inst.L
    k = inst.values()["k_rest"]
    minima = []
    for found in softmax_stationary_points(inst, n_)[0]:
        polished, x_error = polished_stationary_point(action.gradient_mp, action.hessian_mp, found, n_)
        xv = float(polished[0])
        a = float(expit(xv))  # logistic without overflow at x ≪ 0 (huge σ²)
        q_ = a * a + k * (1 - a) ** 2 / (L - 1)
        h = float(action.hessian(xv, n_)[..., 0, 0])
        losses = inst.losses(a, q_, 1.0, n_)
        c_ = (L * a - 1) / (L - 1)
        error = L / (L - 1) * a * (1 - a) * float(x_error[0]) + DERIVED_ROUNDING * max(abs(c_), a)  # dc = L/(L−1) da
        minima.append(Minimum(1.0, c_, float(action.action(xv, n_)), h > 0, a, q_ - (1 + (L - 1) * c_**2) / L, (h,),
                              float(losses[0]), float(losses[1]), error))
    return minima, len(softmax_grid(inst))


def _linear_minima(inst: CopyHeadsInstance, n_) -> tuple[list, int]:
    action, L = inst.reduced, inst.L
    found = linear_minima(inst, n_)
    minima = []
    for v in found.points:
        v, v_error = polished_stationary_point(action.gradient_mp, action.hessian_mp, v, n_)
        eig = np.linalg.eigvalsh(np.asarray(action.hessian(*v, n_), float))
        t_, c_ = float(v[0]), float(v[1])
        rho_ = math.exp(v[2]) if len(v) == 3 else 0.0
        error = max(float(v_error[0]), float(v_error[1]), rho_ * float(v_error[2]) if len(v) == 3 else 0.0)
        m_ = (t_ + (L - 1) * c_) / L
        q_ = (t_ * t_ + (L - 1) * c_ * c_) / L + rho_
        losses = inst.losses(m_, q_, t_, n_)
        error += DERIVED_ROUNDING * max(abs(t_), abs(c_), rho_)
        minima.append(Minimum(t_, c_, float(action.action(*v, n_)), bool(eig.min() > 0), m_, rho_, tuple(eig.tolist()),
                              float(losses[0]), float(losses[1]), error))
    return minima, found.iterations


def finite_minima(minima: list) -> list:
    """The stationary points whose numbers are all finite: one that overflowed is float64 noise, not a minimum
    (e.g. the softmax copy minimum beyond the grid's x = 80 at n ≳ 1e30, where S' is rounding noise around a → 1)."""
    def finite(mn: Minimum) -> bool:
        values = [mn.c_uniform, mn.c_copy, mn.action, mn.a_copy, mn.rho, mn.loss_mean_predictor, mn.loss_gibbs,
                  *mn.hessian_eigenvalues]
        return all(math.isfinite(v) for v in values)

    return [mn for mn in minima if finite(mn)]


def solve_result(inst: CopyHeadsInstance, P: float, minima: list, iterations: int, failure: str,
                 prefix: str = "") -> SolveResult:
    """The SolveResult of these stationary points: the global minimum is the lowest stable one."""
    n_ = inst.n_of_P(P)
    minima = finite_minima(minima)
    stable = [i for i, mn in enumerate(minima) if mn.stable]
    if not stable:
        return SolveResult(inst.attention, inst.L, inst.V, P, n_, tuple(minima), None, Status.FAILED, failure,
                           iterations, math.nan)
    best = min(stable, key=lambda i: minima[i].action)
    return SolveResult(inst.attention, inst.L, inst.V, P, n_, tuple(minima), best, Status.CONVERGED,
                       f"{prefix}{len(stable)} stable minimum/minima", iterations, minima[best].error)


def solve_instance(inst: CopyHeadsInstance, P: float) -> SolveResult:
    """`solve` for a validated instance and P."""
    if inst.causal:
        from attnphase.models.copy_heads.causal import causal_solve

        return causal_solve(inst, P)
    n_ = inst.n_of_P(P)
    minima, iterations = (_softmax_minima if inst.attention == "softmax" else _linear_minima)(inst, n_)
    failure = (f"no stable minimum of the reduced action resolved in float64 at n = {n_:.6g} "
               f"({len(finite_minima(minima))} finite stationary point(s)); the parameters are outside the solvable range")
    return solve_result(inst, P, minima, iterations, failure)


def solve(attention: str, L: int, V: int, P: float, convention: Convention = DEFAULT) -> SolveResult:
    """All local minima of the reduced action at P, with stability, the global one and the losses."""
    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
    return solve_instance(inst, DataSize.validated(P=P).P)
