"""Minima of the homogeneous reduced actions (every target row alike) and `solve`.

Softmax: the action is one-dimensional in the previous-position logit x; its stationary points are the sign
changes of S' on a grid, refined on all brackets at once (`numeric.minimize.bracketed_roots`). Linear: every
local minimum of S(t, c[, r]) from a grid of starts (`numeric.minimize.multistart_local_minima`), the sign
symmetry (t, c) ↦ (−t, −c) folded. Softmax points are then polished by Newton's method in mpmath
(`numeric.precision.polished_stationary_point`), which gives their error. The linear proposals are only starts of a
damped Newton descent in mpmath (`numeric.mp_descent`, `linear_polish`): next to P* the landscape is quartic and the
float64 minimiser stops far from the minimum, at large n wherever rounding leaves it. Under the causal mask `solve`
hands over to `causal.causal_solve`.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Mapping

import mpmath
import numpy as np
from scipy.special import expit

from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.linear_polish import bound_descent, loss_kernel_mp, working_digits
from attnphase.models.copy_heads.parameters import DataSize
from attnphase.models.copy_heads.results import Minimum, SolveResult
from attnphase.numeric.minimize import (
    LocalMinima, bracketed_roots, multistart_local_minima, refined_at_dips, sign_change_brackets,
)
from attnphase.numeric.mp_descent import MAX_STEPS, Descent, action_error, descend
from attnphase.numeric.precision import (
    DERIVED_ROUNDING, as_float_with_error, float_error, polished_stationary_point, propagated_errors,
)
from attnphase.numeric.threshold import bisect_geometric
from attnphase.results import Status

__all__ = ["softmax_grid", "softmax_stationary_points", "LINEAR_STARTS", "linear_grid_starts", "linear_minima", "solve",
           "solve_instance", "finite_minima", "solve_result", "SCALE_FIELDS", "options_named",
           "spelled", "named", "scale_at_fault", "solvable_range", "solvable_P_range"]



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
    # just past a spinodal a minimum and a maximum lie closer than one grid step (L = 16, V = 4, P = 216.7: at
    # x = −1.0686 and −1.08, step 0.06), where S' dips towards 0 without a sign change: refined there
    xs, g = refined_at_dips(lambda x: action.gradient(x, n_)[..., 0], softmax_grid(inst))
    idx = sign_change_brackets(g)
    is_min = g[idx] < 0
    if not refine or len(idx) == 0:
        roots = 0.5 * (xs[idx] + xs[idx + 1])
    else:
        roots = bracketed_roots(lambda x: action.gradient(x, n_)[..., 0], lambda x: action.hessian(x, n_)[..., 0, 0],
                                xs[idx].copy(), xs[idx + 1].copy(), g[idx].copy(), max_iter=60, rtol=1e-13)
    return roots[is_min].tolist(), roots[~is_min].tolist()


# Fixed starts of the linear multistart in both sign quadrants of (t, c) (the fold (t, c) ↦ (−t, −c) maps the
# others onto these): from starts at c ≥ 0 only, the metastable minimum with t > 0, c < 0 (L = 16, V = 4, P = 400:
# (0.146, −0.128)) was never reached.
LINEAR_STARTS = tuple((t0, sign * c0) for t0 in (0.0, 0.5, 1.0, 2.0) for c0 in (0.0, 0.1, 0.5, 1.0) for sign in (1, -1)
                      if sign == 1 or (t0 > 0 and c0 > 0))
# Points per axis of the grid whose local minima seed the multistart besides LINEAR_STARTS, and at most how many of
# those minima, the lowest first: where the grid's cells are wider than a narrow valley (along t = c at n ~ 1e5) it
# has a grid minimum every few cells along it (22 at L = 8, V = 16, P = 144839), each a start of a few ms.
GRID_POINTS = 401
MAX_GRID_STARTS = 64


def linear_grid_starts(inst: CopyHeadsInstance, n_, r0: float | None = None) -> list:
    """(t ≥ 0, c) at the local minima of the float64 linear action on a grid (r = r0 with the remainder's entropy)
    whose action is below the symmetric point's. Only there can `solve` report a minimum, and that region lies
    inside the ellipse λ_t t² + λ_c c² ≤ n, since the data term is at least −n/2 (its fits m²/q ≤ 1 and the
    all-ones fit are each bounded by their saturation); the grid spans its bounding box, cubic in the coordinates,
    so that minima near the symmetric point (|t|, |c| ~ 1e-2 of the box at n ~ 1e5) are resolved. The fixed starts
    alone missed such minima (L = 8, V = 16, P = 144839: (0.0358, −0.970))."""
    values = inst.values()
    # a prior precision λ that underflowed to 0 (σ² or s1 ~ 1e307) puts the bound beyond float64, as a division by
    # it would (Python's float division raises there instead of giving inf)
    lams = [float(values[name]) for name in ("lam_t", "lam_c")]
    with np.errstate(all="ignore"):
        half = [math.sqrt(n_ / lam) if lam > 0 else math.inf for lam in lams]
    if not all(math.isfinite(h) and h > 0 for h in half):
        return []  # n = 0 (no data term: the prior's minimum is the symmetric point) or a bound beyond float64
    axis = np.linspace(-1.0, 1.0, GRID_POINTS) ** 3
    t, c = half[0] * axis[:, None], half[1] * axis[None, :]
    extra = () if r0 is None else (r0,)
    with np.errstate(all="ignore"):  # overflow at extreme scales: such a grid point is no start
        S = np.asarray(inst.reduced.action(t, c, *extra, n_), float)
        S0 = float(inst.reduced.action(0.0, 0.0, *extra, n_))
    S = np.where(np.isfinite(S), S, np.inf)
    inner = S[1:-1, 1:-1]
    lowest = np.isfinite(inner) & (inner < S0)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                lowest &= inner < S[1 + di:GRID_POINTS - 1 + di, 1 + dj:GRID_POINTS - 1 + dj]
    lowest[: GRID_POINTS // 2 - 1] = False  # t < 0: the images of those with t > 0 (the grid is symmetric)
    i, j = np.nonzero(lowest)
    order = np.argsort(inner[i, j])[:MAX_GRID_STARTS]
    return [(float(t[i[k] + 1, 0]), float(c[0, j[k] + 1])) for k in order]


def linear_minima(inst: CopyHeadsInstance, n_) -> LocalMinima:
    """Local minima of the linear action in (t, c[, r]) (`numeric.minimize.LocalMinima`) from LINEAR_STARTS and
    from the grid minima of `linear_grid_starts`; the action is even under (t, c) ↦ (−t, −c), so each minimum is
    reported with t ≥ 0. Only the fixed starts' end points that stopped short are returned in `stopped` (each is
    then descended in mpmath): at n ≳ 1e14, where float64 cannot follow the narrow valley along t = c, the grid
    starts stop short along it by the dozen and reach nothing the fixed starts do not."""
    action = inst.reduced
    dim = 3 if inst.entropy else 2
    r0 = [math.log(1e-2)] if dim == 3 else []
    flip = np.r_[-1, -1, np.ones(dim - 2)]

    def from_starts(seeds) -> LocalMinima:
        return multistart_local_minima(lambda v: float(action.action(*v, n_)),
                                       lambda v: np.asarray(action.gradient(*v, n_), float),
                                       lambda v: np.asarray(action.hessian(*v, n_), float),
                                       [[t0, c0] + r0 for t0, c0 in seeds],
                                       canonical=lambda v: v * (1 if v[0] >= 0 else flip))

    fixed = from_starts(LINEAR_STARTS)
    grid = linear_grid_starts(inst, n_, *r0)
    if not grid:
        return fixed
    seeded = from_starts(grid)
    # the same tolerance as multistart_local_minima's own: one minimum reached from both sets of starts is kept once
    points = list(fixed.points) + [p for p in seeded.points
                                   if not any(np.allclose(p, q, atol=1e-6, rtol=1e-6) for q in fixed.points)]
    status = Status.CONVERGED if points else fixed.status
    return dataclasses.replace(fixed, points=tuple(points), iterations=fixed.iterations + seeded.iterations,
                               status=status, message=f"{len(points)} local minimum/minima from {len(LINEAR_STARTS)} "
                                                      f"fixed starts and {len(grid)} grid minima")


def _softmax_minima(inst: CopyHeadsInstance, n_) -> tuple[list, int]:
    minima, paths = [], []
    for found in softmax_stationary_points(inst, n_)[0]:
        # at n ≳ 1e32 the float64 S' is rounding noise next to the copy minimum: its sign changes there many times over
        # (β = 1e40: 47 of them), and all go downhill to the one minimum, kept once. A root on the path of an earlier
        # descent is skipped (going downhill from it follows the same path); one that ends at an earlier minimum
        # within the two errors is dropped.
        if any(min(start, end) <= found <= max(start, end) for start, end, _ in paths):
            continue
        xv, x_error = _polished_softmax_minimum(inst, found, n_)
        if any(abs(xv - end) <= x_error + error for _, end, error in paths):
            continue
        paths.append((found, xv, x_error))
        minima.append(_softmax_minimum(inst, xv, x_error, n_))
    return minima, len(softmax_grid(inst))


def _softmax_minimum(inst: CopyHeadsInstance, xv: float, x_error: float, n_) -> Minimum:
    """The softmax Minimum at the polished logit xv (within x_error of the stationary point): the action, a and the
    losses in float64 (an action that overflows there marks the end of the solvable range: `finite_minima`), S'' in
    mpmath at `linear_polish.working_digits` (the float64 S'' is rounding noise at n ≳ 1e32, β = 1e40: ±1e11 where it
    is 1.5e3, and so is S'' in mpmath where 1 − a is below its precision), each with its error:
    x_error propagated (`numeric.precision.propagated_errors`; the action's by `numeric.mp_descent.action_error`) plus
    the float64 evaluation's rounding, measured against mpmath at xv (at large n the mean-predictor loss's
    cancellation 1 − w(2 − w))."""
    action, L, dps = inst.reduced, inst.L, working_digits(inst, n_)
    k = inst.values(exact=True)["k_rest"]
    losses_mp = loss_kernel_mp(inst)
    a = float(expit(xv))  # logistic without overflow at x ≪ 0 (huge σ²)
    q_ = a * a + inst.values()["k_rest"] * (1 - a) ** 2 / (L - 1)
    c_ = (L * a - 1) / (L - 1)
    moved = a * (1 - a) * x_error  # da = a(1 − a) dx
    error_c = L / (L - 1) * moved + DERIVED_ROUNDING * max(abs(c_), a)  # dc = L/(L−1) da
    # ρ = q − (1 + (L−1)c²)/L, a float64 difference of terms of size q: its rounding scales with q, not with c
    # (audit e18: ρ = 0.852 one ulp off against an error 5e-17 of size c); dρ/da = 2a − 2k(1 − a)/(L − 1) − 2c
    error_rho = (abs(2 * a - 2 * inst.values()["k_rest"] * (1 - a) / (L - 1) - 2 * c_) * moved
                 + DERIVED_ROUNDING * max(q_, (1 + (L - 1) * c_**2) / L))
    error = max(error_c, error_rho)
    S = float(action.action(xv, n_))
    losses = [float(x) for x in np.ravel(inst.losses(a, q_, 1.0, n_))]
    with mpmath.workdps(dps):
        point, errors = [mpmath.mpf(xv)], [mpmath.mpf(x_error)]
        S_mp, S_error = action_error(*bound_descent(action, n_), Descent(point, errors, True, 0), dps)

    def weight(p):
        return [1 / (1 + mpmath.exp(-p[0]))]

    def curvature(p):
        return [np.atleast_2d(action.hessian_mp(p[0], n_))[0][0]]

    def losses_at(p):
        a_ = weight(p)[0]
        return list(np.ravel(losses_mp(a_, a_ * a_ + k * (1 - a_) ** 2 / (L - 1), 1, n_)))

    (a_mp, a_error), = propagated_errors(weight, point, errors, dps)
    (h, h_error), = propagated_errors(curvature, point, errors, dps)
    h, h_error = as_float_with_error(h, h_error)
    loss_errors = [float_error(value, exact, bound)
                   for value, (exact, bound) in zip(losses, propagated_errors(losses_at, point, errors, dps))]
    rho_ = q_ - (1 + (L - 1) * c_**2) / L
    return Minimum(1.0, c_, S, h > 0, a, rho_, (h,), losses[0], losses[1], error, float_error(S, S_mp, S_error),
                   float_error(a, a_mp, a_error), (h_error,), *loss_errors)


def _polished_softmax_minimum(inst: CopyHeadsInstance, found: float, n_) -> tuple[float, float]:
    """(x, its error) of the softmax minimum next to the float64 root `found`: Newton's method in mpmath at
    `linear_polish.working_digits` (1 − a = e^−x must be resolved), which from a float64 root converges in its few
    steps; where it has not (n ≳ 1e32: the float64 S' is rounding noise, and its sign changes up to 8 units of x short
    of the minimum), a damped Newton descent in mpmath (`numeric.mp_descent`) from there."""
    action, dps = inst.reduced, working_digits(inst, n_)
    polished, x_error = polished_stationary_point(action.gradient_mp, action.hessian_mp, found, n_, dps=dps)
    x, error = float(polished[0]), float(x_error[0])
    if error <= 1e-8 * max(1.0, abs(x)):
        return x, error
    descent = descend(*bound_descent(action, n_), [x], dps)
    with mpmath.workdps(dps):
        x = float(descent.point[0])
        total = descent.errors[0] + abs(mpmath.mpf(x) - descent.point[0])
        error = float(total)
        if error < total:  # rounded down to float64: the next float up bounds it
            error = math.nextafter(error, math.inf)
    return x, error


def _linear_minima(inst: CopyHeadsInstance, n_) -> tuple[list, int, str, bool]:
    """The linear minima: the float64 minimiser's proposals (and the starts it stopped short of, and the symmetric
    point) taken downhill in mpmath (`numeric.mp_descent`, at `linear_polish.working_digits`); a point whose action
    is not below the symmetric point's by more than its error is that point and is dropped; a descent that stopped
    before its tolerance makes the result limited (the returned note says which)."""
    action = inst.reduced
    found = linear_minima(inst, n_)
    dim = 3 if inst.entropy else 2
    symmetric = np.array([0.0, 0.0] + ([math.log(1e-2)] if dim == 3 else []))
    dps = working_digits(inst, n_)
    mp_action = bound_descent(action, n_)
    descents, steps = [], 0
    for start in [symmetric, *found.points, *found.stopped]:
        descent = descend(*mp_action, start, dps)
        steps += descent.steps
        with mpmath.workdps(dps):
            if descent.point[0] < 0:  # the action is even under (t, c) -> (-t, -c)
                descent = Descent([-descent.point[0], -descent.point[1], *descent.point[2:]], descent.errors,
                                  descent.converged, descent.steps)
            if not any(_same(descent, other) for other in descents):
                descents.append(descent)
    origin = descents[0]
    S0, S0_error = action_error(*mp_action, origin, dps)
    losses_mp = loss_kernel_mp(inst)
    minima, dropped, unconverged = [], 0, 0
    for k, descent in enumerate(descents):
        S, S_error = action_error(*mp_action, descent, dps)
        if k > 0 and S - S0 >= -(S_error + S0_error):
            dropped += 1
            continue
        unconverged += not descent.converged
        minima.append(_linear_minimum(inst, descent, S, S_error, losses_mp, n_, dps))
    notes = []
    if dropped:
        notes.append(f"{dropped} other end point(s) not below the symmetric point's action within their error "
                     "(the symmetric point, reached slowly in a flat landscape) dropped")
    if unconverged:
        notes.append(f"{unconverged} point(s) where Newton's method in mpmath did not converge within "
                     f"{MAX_STEPS} steps (a flat landscape next to P*): their error is the geometric tail of the "
                     "observed contraction")
    return minima, found.iterations + steps, "; ".join(notes), bool(unconverged)


def _same(a: Descent, b: Descent) -> bool:
    """Two end points at the same stationary point: every coordinate within the two errors plus 1e-20 relative
    (below the float64 rounding of what is reported)."""
    return all(abs(x - y) <= ex + ey + 1e-20 * max(abs(x), abs(y)) for x, y, ex, ey
               in zip(a.point, b.point, a.errors, b.errors))


def _linear_minimum(inst: CopyHeadsInstance, descent: Descent, S, S_error, losses_mp, n_, dps: int) -> Minimum:
    """The linear Minimum at the descent's end point: m, the Hessian's eigenvalues and the losses in mpmath there, each
    with its error (`numeric.precision.propagated_errors` from the descent's coordinate errors; the action's, S_error,
    from `numeric.mp_descent.action_error`)."""
    L, v = inst.L, descent.point

    def eigenvalues(p):
        H = mpmath.matrix(np.atleast_2d(inst.reduced.hessian_mp(*p, n_)).tolist())
        return sorted(mpmath.eigsy(H)[0])

    def overlap(p):
        return [(p[0] + (L - 1) * p[1]) / L]

    def losses(p):
        rho = mpmath.exp(p[2]) if len(p) == 3 else mpmath.mpf(0)
        return list(np.ravel(losses_mp(overlap(p)[0], (p[0] ** 2 + (L - 1) * p[1] ** 2) / L + rho, p[0], n_)))

    eig = [as_float_with_error(*pair) for pair in propagated_errors(eigenvalues, v, descent.errors, dps)]
    m_, m_error = as_float_with_error(*propagated_errors(overlap, v, descent.errors, dps)[0])
    (lm, lm_error), (lg, lg_error) = (as_float_with_error(*pair)
                                      for pair in propagated_errors(losses, v, descent.errors, dps))
    with mpmath.workdps(dps):
        rho_mp = mpmath.exp(v[2]) if len(v) == 3 else mpmath.mpf(0)
        t_, c_, rho_ = float(v[0]), float(v[1]), float(rho_mp)
        errors = [abs(e) + abs(mpmath.mpf(float(x)) - x) for e, x in zip(descent.errors, v)]
        if len(v) == 3:
            errors[2] = rho_mp * errors[2]  # the error of ρ = e^r
        worst = max(errors)
        error = float(worst)
        if error < worst:  # rounded down to float64: the next float up still bounds it (an exact 0 stays 0)
            error = math.nextafter(error, math.inf)
    error += DERIVED_ROUNDING * max(abs(t_), abs(c_), rho_)
    action, action_error_ = as_float_with_error(S, S_error)
    return Minimum(t_, c_, action, eig[0][0] > 0, m_, rho_, tuple(e for e, _ in eig), lm, lg, error, action_error_,
                   m_error, tuple(e for _, e in eig), lm_error, lg_error)


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


def solve_instance(inst: CopyHeadsInstance, P: float, *, diagnose: bool = True) -> SolveResult:
    """`solve` for a validated instance and P. A failure names the convention scale that alone causes it
    (`scale_at_fault`), or else, with τ, σ² and s₁ at 1, the range of P in which the action is solved
    (`solvable_P_range`), or else the options of the scales set away from 1; diagnose=False leaves these searches
    out."""
    result = _solved(inst, P)
    if diagnose and result.status == Status.FAILED:
        name = scale_at_fault(inst, P)
        if name is not None:
            value = getattr(inst.convention, name)
            result = dataclasses.replace(result, message=f"{result.message}; {named(name)} = "
                                                         f"{value:g} alone puts them there: with {name} = 1 the action "
                                                         f"is solved at L = {inst.L}, V = {inst.V}, P = {P:g}")
        elif math.isfinite(inst.n_of_P(P)):  # an n beyond float64 has said so: β·P, not P alone, is the cause
            away = [f"{spelled(name)} = {getattr(inst.convention, name):g}" for name in SCALE_FIELDS
                    if name != "beta" and getattr(inst.convention, name) != 1.0]
            # with other scales away from 1 too, P's range is not searched: its bisection runs a solve per step, up
            # to seconds each (what the error paths of sweeps over extreme scales would pay at every point)
            where = (solvable_P_range(inst, P) if not away else
                     f"resetting {' or '.join(away)} to 1 alone does not solve it, so {named('P')} = {P:g} lies beyond "
                     f"the solvable range at these scales (the range of P is named where τ, σ² and s1 are 1)")
            result = dataclasses.replace(result, message=f"{result.message}; {where}")
    return result


def solvable_P_range(inst: CopyHeadsInstance, P: float) -> str:
    """Where the solve converges in P at these L, V and convention, for a P where it does not: the first of P·10^(∓10k)
    (k = 1, 2, …, towards 1) at which it converges, and the last at which it does not, which bracket the bound. The
    float64 proposals of the minima stop resolving the action at large n (L = 16, V = 4: linear from n ~ 1e77, where
    the float64 Hessian overflows, softmax from ~1e154, where n² does). Past the bound a solve fails in milliseconds,
    next to it a linear one takes seconds (its mpmath descent at ~200 digits): a bisection to 0.1 decades took
    70-130 s, this scan a few seconds."""
    def converges(P_):
        return _solved(inst, P_).status == Status.CONVERGED

    if not converges(1.0):
        return f"{named('P')} = {P:g} fails, and so does P = 1 at L = {inst.L}, V = {inst.V}"
    step = 1e-10 if P > 1.0 else 1e10
    failing, trial = P, P * step
    while (trial > 1.0 if P > 1.0 else trial < 1.0) and not converges(trial):
        failing, trial = trial, trial * step
    solved = max(trial, 1.0) if P > 1.0 else min(trial, 1.0)  # P = 1 converges
    return (f"{named('P')} = {P:g} lies beyond the range in which the action is solved at L = {inst.L}, "
            f"V = {inst.V} and this convention: it is solved at P = {solved:.3g} and not at P = {failing:.3g}")


def _solved(inst: CopyHeadsInstance, P: float) -> SolveResult:
    if inst.causal:
        from attnphase.models.copy_heads.causal import causal_solve

        return causal_solve(inst, P)
    n_ = inst.n_of_P(P)
    if not math.isfinite(n_):  # β·P beyond float64 (β = 1e308): the linear descent's working precision was inf
        return SolveResult(inst.attention, inst.L, inst.V, P, n_, (), None, Status.FAILED,
                           f"the data term n overflows float64 at β = {inst.convention.beta:g}, P = {P:g}; the "
                           "parameters are outside the solvable range", 0, math.nan)
    if inst.attention == "linear":
        values = inst.values()
        infinite = [name for name in ("lam_t", "lam_c", "lam_r") if not math.isfinite(float(values.get(name, 0.0)))]
        if infinite:  # σ² or s1 so small that a prior precision overflows: no float64 proposal of the minima
            return SolveResult(inst.attention, inst.L, inst.V, P, n_, (), None, Status.FAILED,
                               f"the prior precision {infinite[0]} overflows float64 at σ² = "
                               f"{inst.convention.sigma2:g}, s1 = {inst.convention.s1:g}; the parameters are outside "
                               "the solvable range", 0, math.nan)
    if inst.attention == "softmax":
        minima, iterations = _softmax_minima(inst, n_)
        note, limited = "", False
    else:
        minima, iterations, note, limited = _linear_minima(inst, n_)
    failure = (f"no stable minimum of the reduced action resolved in float64 at n = {n_:.6g} "
               f"({len(finite_minima(minima))} finite stationary point(s)); the parameters are outside the solvable "
               "range")
    result = solve_result(inst, P, minima, iterations, failure)
    if note and result.status == Status.CONVERGED:
        status = Status.LIMITED if limited else Status.CONVERGED
        result = dataclasses.replace(result, status=status, message=f"{result.message}; {note}")
    return result


# The convention's scales a solve can fail on alone, as Convention fields.
SCALE_FIELDS = ("tau0", "sigma2", "beta", "s1")


# How the caller spells each parameter in messages (parameter name -> its spelling; set by `options_named`, e.g. the
# CLI's options). Empty: a parameter is named as a Python call names it.
_SPELLING: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar("copy_heads_spelling", default={})


@contextlib.contextmanager
def options_named(options: Mapping[str, str]):
    """Inside this block the messages of a failed solve or an overflowing action name each parameter in `options`
    (parameter name -> how the caller gave it) by that spelling too: the CLI (`cli.copy_heads`) passes its options,
    so that messages read "P (--P)", "tau0 (--tau)", "--tau = 2". The model knows no CLI option; outside such a
    block (from Python) the messages name the parameters as the call does ("P", "tau0")."""
    token = _SPELLING.set(dict(options))
    try:
        yield
    finally:
        _SPELLING.reset(token)


def spelled(name: str) -> str:
    """The parameter `name` (a convention scale, or P) as the caller gave it: its spelling under `options_named`
    (e.g. "--tau"), else its name."""
    return _SPELLING.get().get(name, name)


def named(name: str) -> str:
    """The parameter `name` with, under `options_named`, the spelling the caller gave it: "tau0 (--tau)"."""
    spelling = spelled(name)
    return name if spelling == name else f"{name} ({spelling})"


def scale_at_fault(inst: CopyHeadsInstance, P: float) -> str | None:
    """The first scale of SCALE_FIELDS whose reset to 1 makes the solve converge; None when no single scale does (P
    itself, or several together)."""
    for name in SCALE_FIELDS:
        if getattr(inst.convention, name) != 1.0 and _solved_with(inst, P, name, 1.0):
            return name
    return None


def solvable_range(inst: CopyHeadsInstance, P: float, name: str) -> str:
    """The range of the scale `name` in which the solve converges at these L, V, P, the other scales as they are:
    "(0, b]" above 1, "[b, inf)" below, b the last value at which it converges, found by geometric bisection between 1
    and the instance's value (`numeric.threshold.bisect_geometric`) to a decade, which is what a user needs to pick a
    value. Each step that converges is a solve of seconds for the linear action at n ~ 1e60, where its mpmath descent
    runs at 190 digits (one that fails takes milliseconds): a bisection to 0.1 decades took 22 s at β = 1e300."""
    value = float(getattr(inst.convention, name))
    last = bisect_geometric(lambda v: _solved_with(inst, P, name, v), 1.0, value, iterations=200, rtol=9.0).bracket[0]
    return f"(0, {last:.3g}]" if value > 1.0 else f"[{last:.3g}, inf)"


def _solved_with(inst: CopyHeadsInstance, P: float, name: str, value: float) -> bool:
    other = inst.with_convention(inst.convention.with_(**{name: value}))
    return _solved(other, P).status == Status.CONVERGED


def solve(attention: str, L: int, V: int, P: float, convention: Convention = DEFAULT) -> SolveResult:
    """Every local minimum of the reduced action at P (a `SolveResult`: `minima`, each with its order parameters
    c_uniform = t and c_copy = c, stability, action and losses; `global_minimum`, the lowest stable one).

    attention: "softmax" or "linear"; L: sequence length (tokens per sequence, ≥ 2); V: vocabulary size (≥ 2);
    P: the data size, by default the number of target tokens with the loss summed over them (n = βP, β the
    inverse temperature; `Convention.P_counts`, `loss` and `beta` change what P counts and how n follows from it).
    convention: every modelling choice of the action (`Convention`: boundary, scales of the priors and of linear
    attention, the remainder's treatment, tokens; `DEFAULT` is Convention A of docs/models/copy_heads.md). A failed
    solve (status failed) says why in its message: the scale that alone puts the action beyond float64, or the range
    of P in which it is solved."""
    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
    return solve_instance(inst, DataSize.validated(P=P).P)
