"""The linear transition: the first instability of the symmetric state t = c = 0, its order, and the crossover.

The smallest curvature at the symmetric point changes sign at the transition (scanned in ln n, polished in
mpmath); the Landau expansion of the action along the soft mode classifies it (derive.landau); the other
mode's own curvature vanishes at the crossover. The first attempt (only m and q) is classified the
same way.
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache

import mpmath
import numpy as np
import sympy
from scipy.optimize import brentq

from attnphase.models.copy_heads import kernels
from attnphase.models.copy_heads.convention import DEFAULT
from attnphase.models.copy_heads.homogeneous import linear_minima
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.results import LinearTransition
from attnphase.numeric.minimize import sign_change_brackets
from attnphase.numeric.precision import polished_stationary_point, scaled_lowest_curvature_2x2, working_dps
from attnphase.numeric.continuation import ActionSystem, FunctionSystem, follow_branches, stationary_point
from attnphase.numeric.threshold import bisect_geometric, find_crossing, log_crossing, rounded_error
from attnphase.numeric.transition import classify_transition
from attnphase.results import Status

__all__ = ["BRANCH_DIGITS", "action_system", "branch_classification", "checked_order", "later_jump", "n_range",
           "default_n_range", "crossover_n_range", "scale_factors", "state_scale", "symmetric_point_hessian",
           "soft_vector", "remainder_at_origin", "classify_landau", "landau_order",
           "instability_transition", "linear_transition", "first_attempt_transition"]


def n_range(inst: CopyHeadsInstance) -> tuple[float, float]:
    """The range of n the scans for the first instability cover: at the default convention's scales from 1e-3
    (n_U ~ V² does not grow with L: start low) to 10⁶ times the larger of the claimed scales V², L^{3/2}V^{1/2} and
    LV (`default_n_range`); the upper end widened by the smaller of `scale_factors` where it is above 1 (the first
    instability lies below both modes' own roots, so only a convention that moves both up moves it up: τ < 1). The
    lower end moves only without the log-det terms (read-out "map"): with them H ⪰ τn(A − nB) (A the log-det terms'
    curvature, positive definite; B the fits'), so the first instability lies above the first root of
    det(A − nB), which depends on V and L alone (~V²)."""
    factors = scale_factors(inst)
    lo, hi = default_n_range(inst)
    low = min(1.0, *factors) if inst.convention.log_det_weight == 0 else 1.0
    return lo * low, hi * max(1.0, min(factors))


def default_n_range(inst: CopyHeadsInstance) -> tuple[float, float]:
    """1e-3 … 10⁶ (V² + L^{3/2}V^{1/2} + LV): the range of n that holds both modes' roots at the default scales."""
    L, V = inst.L, inst.V
    return 1e-3, (V * V + L**1.5 * V**0.5 + L * V) * 1e6


def crossover_n_range(inst: CopyHeadsInstance, mode: int) -> tuple[float, float]:
    """The range of n in which the curvature of `mode` (0: t, 1: c) at the symmetric point is scanned for its root
    (the crossover): `n_range` with the upper end widened by that mode's own scale factor, but no further than the
    float64 curvature stays finite (σ² = 1e-300 puts the copy root near n = 1e152, where τn² is near overflow)."""
    lo, hi = n_range(inst)
    widest = default_n_range(inst)[1] * max(1.0, scale_factors(inst)[mode])
    if widest <= hi:
        return lo, hi

    def finite(n_):
        with np.errstate(all="ignore"):
            return bool(np.isfinite(np.asarray(inst.reduced.hessian(0.0, 0.0, *_remainder_start(inst), n_),
                                               float)[mode, mode]))

    if finite(widest):
        return lo, widest
    return lo, bisect_geometric(finite, hi, widest, rtol=1e-3).bracket[0]


def _remainder_start(inst: CopyHeadsInstance) -> list:
    """The remainder's coordinate r = ln ρ = 0 where the action has one (only finiteness is asked of it there)."""
    return [0.0] if inst.entropy else []


def scale_factors(inst: CopyHeadsInstance) -> tuple[float, float]:
    """√(s_t), √(s_c), s_i = (λ_i/τ) / (λ_i/τ at the default convention), i = t, c: the factors by which the
    convention moves the curvature roots of the symmetric point, between 1 and √s_i. n enters its Hessian as τn (the
    log-det terms, a_i ≥ 0) and τn² (the fits, b_i > 0), so H_ii = λ_i + a_iτn − b_iτn² vanishes at
    n_i = a_i/(2b_i) + √(a_i²/(4b_i²) + λ_i/(b_iτ)), and the first instability lies between the root of
    det(Λ − τn²B) (the log-det terms left out), which scales as √(λ/τ), and the smaller n_i. Small τ alone:
    thresholds ∝ τ^{−1/2} (τ = 1e-16: P* = 3.97e8, beyond the default range's 2.1e8 at L = 16, V = 4)."""
    L, tau = inst.L, inst.convention.tau(inst.V)
    own, default = inst.convention.linear_precisions(L), DEFAULT.linear_precisions(L)
    with np.errstate(all="ignore"):  # an extreme scale's factor overflows to inf: the scan then refuses to run
        return tuple(float(np.sqrt(np.float64(own[k]) / default[k] / tau)) for k in ("lam_t", "lam_c"))


def remainder_at_origin(inst: CopyHeadsInstance, n_) -> float:
    """ln ρ₀ of the remainder at the symmetric point t = c = 0 (its own minimum: ∂S/∂r = 0, brentq)."""
    gradient = inst.reduced.gradient
    return brentq(lambda r: float(gradient(0.0, 0.0, r, n_)[..., 2]), -200, 50)


def symmetric_point_hessian(inst: CopyHeadsInstance, n_, mp: bool = False):
    """Hessian in (t, c) at the symmetric state t = c = 0 (with the remainder at its own minimum); float64 (2×2
    array) or mpmath (an object array whose [i, j] entries are used)."""
    action = inst.reduced
    if not inst.entropy:
        if mp:
            return action.hessian_mp(mpmath.mpf(0), mpmath.mpf(0), n_)
        return np.asarray(action.hessian(0.0, 0.0, n_), float)
    if mp:
        zero = mpmath.mpf(0)
        return action.hessian_mp(zero, zero, _remainder_at_origin_mp(inst, n_), n_)
    return np.asarray(action.hessian(0.0, 0.0, remainder_at_origin(inst, n_), n_), float)[:2, :2]


def _remainder_at_origin_mp(inst: CopyHeadsInstance, n_):
    """`remainder_at_origin` polished by mpmath's root finder at the working precision."""
    zero = mpmath.mpf(0)
    return mpmath.findroot(lambda r: inst.reduced.gradient_mp(zero, zero, r, n_)[2],
                           mpmath.mpf(remainder_at_origin(inst, float(n_))))


def soft_vector(inst: CopyHeadsInstance, n_):
    """The soft direction (v_t, v_c) at the symmetric state at n (mpmath, at the working precision): the unit
    eigenvector of the smallest eigenvalue of its Hessian, its larger component positive. At n* (the eigenvalue 0)
    it is the null vector: evaluated at n* itself, since off it the vector turns (at n*(1 + 1e-9), which was used,
    by 5e-9 at L = V = 64, where the two curvatures are comparable: 8 of the 17 printed digits, and of a₄ with
    it)."""
    h = symmetric_point_hessian(inst, n_, mp=True)
    values, vectors = mpmath.eigsy(mpmath.matrix([[h[0, 0], h[0, 1]], [h[0, 1], h[1, 1]]]))
    k = 0 if values[0] <= values[1] else 1
    v = [vectors[0, k], vectors[1, k]]
    larger = v[0] if abs(v[0]) >= abs(v[1]) else v[1]
    return [x if larger > 0 else -x for x in v]


@lru_cache(maxsize=None)
def landau_order(s2: int, s4: int, s6: int) -> tuple[str, float | None, str]:
    """derive.landau.classify_transition on the canonical polynomial s₂δφ² + s₄φ⁴ + s₆φ⁶.

    Positive rescalings of F, δ and φ map a₂'δφ² + a₄φ⁴ + a₆φ⁶ onto this form (δ → δ|a₄|/|a₂'|·s⁻², φ → φs with
    s² = |a₄/a₆|, F → F/|a₄|), and leave the order and the exponent unchanged, so the classification depends on
    the three signs only (and is cached).
    """
    from attnphase.derive.landau import classify_transition

    phi, delta = sympy.Symbol("phi", real=True), sympy.Symbol("delta", real=True)
    result = classify_transition(s2 * delta * phi**2 + s4 * phi**4 + s6 * phi**6, phi, delta)
    exponent = float(result.exponent) if result.exponent is not None else None
    return result.order, exponent, result.message


def _sign(v: float) -> int:
    return (v > 0) - (v < 0)


def classify_landau(a2_slope: float, a4: float, a6: float) -> tuple[str, float | None, str]:
    """Order, exponent and message of F = a₂'(n*)δφ² + a₄φ⁴ + a₆φ⁶ near the critical point (δ = n − n*)."""
    return landau_order(_sign(a2_slope), _sign(a4), _sign(a6))


def _classify_symmetric_state(inst: CopyHeadsInstance, n_star, soft) -> dict:
    """The Landau classification along the soft mode, in mpmath at n* and the soft vector (`soft_vector`; the
    working precision), so that the float a₄ is right to its last digit. The action is even under
    (t, c) → (−t, −c), so cubic terms vanish and the restriction to the soft line φ·v carries the quartic
    coefficient that decides the order."""
    conv = inst.convention
    values = inst.values(exact=True)
    if inst.entropy:
        values["rho"] = mpmath.exp(_remainder_at_origin_mp(inst, n_star))
    kernel = kernels.bind(kernels.linear_landau_kernel_mp(conv.remainder, conv.centred), values)
    a2_slope, _, a4, a6 = (float(v) for v in kernel(soft[0], soft[1], n_star))
    order, exponent, message = classify_landau(a2_slope, a4, a6)
    return {"order": order, "exponent": exponent, "a4": a4, "message": message}


BRANCH_DIGITS = 12
"""Digits the followed branches locate their singular points and crossings to (float64): enough to tell the
instability they find from the one located to `digits` digits on the symmetric state."""


def action_system(inst: CopyHeadsInstance, action_kernels, values: dict) -> ActionSystem:
    """An action of this instance as an `ActionSystem` in ln n, float64 (the parameters it takes, from `values`)."""
    names = {str(p) for p in action_kernels.parameters}
    return ActionSystem(action_kernels, "n", {k: v for k, v in values.items() if k in names}, log_control=True,
                        mp=False)


def _lowest_stable(system: ActionSystem, points, c: float):
    """The stable stationary point of lowest action that Newton's method reaches from the candidate points. The
    candidates are polished first: where the curvatures span hundreds of decades (σ² → 0) the multistart minimiser
    gives up at its start points, whose actions then say nothing about which minimum is lowest."""
    polished = [x for p in points if (x := stationary_point(system, p, c)) is not None]
    stable = [x for x in polished if np.all(np.linalg.eigvalsh(system.hessian(x, c)) > 0)]
    return min(stable, key=lambda x: system.value(x, c)) if stable else None


def branch_classification(system: ActionSystem, minima_at, n_lo: float, n_hi: float, state_scale: float = 1.0):
    """The order of the transition from the followed stationary branches (`numeric.transition`): the branches
    through the lowest stable minimum at n_lo and at n_hi (minima_at(n) -> candidate points), followed in ln n,
    the global minimum read off them. It sees a first-order jump anywhere in the range, which the Landau
    expansion at the instability cannot. state_scale (`state_scale`): the branches are followed in (t, c) divided by
    it, which the continuation's steps (at most 0.1) are sized for."""
    if state_scale != 1.0:
        system, minima_at = _scaled_system(system, state_scale), _scaled_points(minima_at, state_scale)
    control_range = (math.log(n_lo), math.log(n_hi))
    # at V ≳ 2^20 the float64 action's terms overflow along the branches (the equilibration of the continuation's
    # null vector and determinant sign then overflows too): those points are non-finite, a branch ends there as lost
    # and the classification says so; numpy's RuntimeWarnings about it went to stderr
    with np.errstate(over="ignore", invalid="ignore"):
        starts = [(p, c) for c in control_range
                  if (p := _lowest_stable(system, minima_at(math.exp(c)), c)) is not None]
        branches = follow_branches(system, starts, control_range, digits=BRANCH_DIGITS)
        return classify_transition(system, branches, control_range, digits=BRANCH_DIGITS,
                                   order_parameter=lambda x: state_scale * float(np.hypot(x[0], x[1])),
                                   canonical=_even_image, control_label="ln n")


def state_scale(inst: CopyHeadsInstance) -> float:
    """The size of the ordered minima relative to the default convention's, at least 1: at small τ the fit saturates
    where τnq/V ~ 1, i.e. q ~ V/(τn), with n ∝ (λ/τ)^{1/2}, so (t, c) ∝ (τλ)^{−1/4} (λ the smaller prior precision
    relative to the default's). At L = 16, V = 4, τ = 1e-16 the minimum at the top of the range is t ≈ c ≈ 1800: in
    steps of at most 0.1 the branch from there ran out of its 20000 points before reaching P*. Where τλ underflows to
    0 (s1 or the score variance ~1e306) it is taken as the smallest normal float: the scale is then ~1e77, as just
    above the underflow, and the branches are as far out of float64's reach."""
    own, default = inst.convention.linear_precisions(inst.L), DEFAULT.linear_precisions(inst.L)
    gamma = min(own[k] / default[k] for k in ("lam_t", "lam_c"))
    return max(1.0, max(inst.convention.tau(inst.V) * gamma, sys.float_info.min) ** -0.25)


def _scaled_points(minima_at, scale: float):
    """minima_at with (t, c) of each point divided by scale (the remainder's log, if any, unchanged)."""
    def scaled(n_):
        points = [np.asarray(x, float).copy() for x in minima_at(n_)]
        for x in points:
            x[:2] /= scale
        return points

    return scaled


def _scaled_system(system: ActionSystem, scale: float) -> FunctionSystem:
    """`system` in the variables (t/scale, c/scale[, r])."""
    factor = np.r_[scale, scale, np.ones(system.n - 2)]

    def value(y, n_):
        return system.value(factor * y, math.log(n_))

    def gradient(y, n_):
        return factor * system.gradient(factor * y, math.log(n_))

    def hessian(y, n_):
        return np.outer(factor, factor) * system.hessian(factor * y, math.log(n_))

    return FunctionSystem(system.n, value, gradient, hessian, log_control=True)


def _even_image(x: np.ndarray) -> np.ndarray:
    """The action is even under (t, c) ↦ (−t, −c) (the remainder, if any, unchanged): the image with t ≥ 0."""
    x = np.asarray(x, float).copy()
    if x[0] < 0 or (x[0] == 0 and x[1] < 0):
        x[:2] *= -1
    return x


def checked_order(found, n_star: float, landau: dict) -> tuple[str, Status | None, str]:
    """(order, status override, message) from the branch classification `found` against the instability at n_star:
    second order at a branch point equal to n_star (to 1e-8) confirms it; a first-order jump is reported as such
    (the instability is then not the transition); anything else leaves the Landau order with status limited."""
    if found.order == "second" and found.control is not None:
        n_branch = math.exp(found.control.value)
        if abs(n_branch - n_star) <= 1e-8 * n_star:
            return landau["order"], None, "; followed branches: second order at the same point"
        return landau["order"], Status.LIMITED, (f"; followed branches: second order at n = {n_branch:.12g}, not at the "
                                                 "instability")
    if found.order == "first" and found.control is not None:
        return "first", None, (f"; followed branches: FIRST order, the global minimum jumps at n = "
                               f"{math.exp(found.control.value):.12g} ({found.message})")
    return landau["order"], Status.LIMITED, f"; followed branches did not classify the transition ({found.message})"


def later_jump(inst: CopyHeadsInstance, found) -> tuple[dict, Status | None, str]:
    """The crossover as the followed branches see it (fields, status override, message): "first" when the global
    minimum jumps again after the transition (a fold pair on the ordered branch: the uniform-pooling minimum and the
    copy minimum coexist), with the coexistence point, its window and the jump of √(t² + c²); "smooth" when it
    does not; "not classified" when the branches were not classified or a later change of the global minimum was not
    (a branch missing there can hide a jump: at L = 2^24 the float64 branches lose the uniform-pooling minimum near
    the crossover)."""
    if found.status == Status.FAILED:  # checked_order has said why
        return {"crossover_order": "not classified"}, None, ""
    unclassified = [t for t in found.later if t.status == Status.FAILED]
    if unclassified:
        return ({"crossover_order": "not classified"}, Status.LIMITED,
                f"; the crossover is not classified: {unclassified[0].message}")
    jumps = [t for t in found.later if t.order == "first" and t.control is not None]
    if not jumps:
        return {"crossover_order": "smooth"}, None, ""
    jump = jumps[0]
    window = tuple(inst.P_of_n(math.exp(s.value)) if math.isfinite(s.value) else math.nan for s in jump.spinodals)
    P_jump = inst.P_of_n(math.exp(jump.control.value))
    size, size_error = _jump_of_polished_states(inst, jump)
    # the branches are located in float64 (BRANCH_DIGITS): each location's error in ln n is its relative error in P
    # (P ∝ n), beside the float's own rounding
    return ({"crossover_order": "first", "P_crossover_jump": P_jump,
             "P_crossover_jump_error": _in_P(P_jump, jump.control.error), "crossover_window": window,
             "crossover_window_error": tuple(_in_P(P, s.error) for P, s in zip(window, jump.spinodals)),
             "crossover_jump": size, "crossover_jump_error": size_error}, None, "")


# Digits of the polish of the coexisting states: the sizes are needed to float64 rounding, from states whose curvatures
# span ~L (the mpmath Newton steps then shrink from 1e-13 to far below it in two steps)
POLISH_DPS = 40


def _jump_of_polished_states(inst: CopyHeadsInstance, jump) -> tuple[float, float]:
    """The jump of √(t² + c²) at the crossover's coexistence point and its error: both coexisting states polished by
    Newton's method in mpmath at the located ln n (the float64 states sit at the gradient's rounding floor: 5.7e-14
    off in √(t² + c²) at L = 1024, V = 4), plus each size's move over the location's error (its slope along its
    branch times the error in ln n) and the float64 rounding of the result."""
    scale = state_scale(inst)
    n_ = mpmath.mpf(math.exp(jump.control.value))
    sizes = []
    for state in jump.states:
        x = np.asarray(state, float).copy()
        x[:2] *= scale
        polished, errors = polished_stationary_point(inst.reduced.gradient_mp, inst.reduced.hessian_mp, x, n_,
                                                     dps=POLISH_DPS)
        sizes.append((math.hypot(polished[0], polished[1]), float(errors[0] + errors[1])))
    slopes = [abs(slope) for slope in jump.order_parameter_slopes]  # of the sizes themselves (`branch_classification`)
    size = abs(sizes[1][0] - sizes[0][0])
    error = (sum(slopes) * jump.control.error + sizes[0][1] + sizes[1][1]
             + 2.0**-52 * (sizes[0][0] + sizes[1][0] + size))
    return size, error


def _in_P(P: float, ln_n_error: float) -> float:
    """The error of P at a location found in ln n with `ln_n_error`, plus P's float64 rounding."""
    return abs(P) * (ln_n_error + 2.0**-52) if math.isfinite(P) else math.nan


def linear_transition(inst: CopyHeadsInstance, digits: int = 30, classify: bool = True,
                      follow: bool = True) -> LinearTransition:
    """First instability of the symmetric state and the copy-curvature crossover (periodic, drop-first).

    The smallest eigenvalue of the 2×2 Hessian (scale-free) changes sign exactly at the first instability; det H
    would change sign twice when both modes go soft within one grid cell. classify=False skips the Landau
    classification (order "not classified"), for long sweeps; follow=False keeps the Landau classification but
    skips the check on the followed stationary branches (and with it the crossover's order), for scaling scans.
    """
    L, V = inst.L, inst.V
    dps = working_dps(digits, 3 * math.log10(L))  # curvatures span ~L³: digits lost in det H
    lo, hi = n_range(inst)

    def lowest(n_):
        h = symmetric_point_hessian(inst, n_)
        return float(scaled_lowest_curvature_2x2(h[0, 0], h[0, 1], h[1, 1]))

    def lowest_mp(n_):
        h = symmetric_point_hessian(inst, n_, mp=True)
        return scaled_lowest_curvature_2x2(h[0, 0], h[0, 1], h[1, 1], sqrt=mpmath.sqrt)

    def hessian_grid(ln_n):
        return np.asarray(inst.reduced.hessian(0.0, 0.0, np.exp(ln_n)), float)

    def lowest_grid(ln_n):
        h = hessian_grid(ln_n)
        return scaled_lowest_curvature_2x2(h[:, 0, 0], h[:, 0, 1], h[:, 1, 1])

    vectorised = not inst.entropy  # the grid evaluation needs the remainder's minimum per n otherwise
    with mpmath.workdps(dps):
        res = log_crossing(lowest, lowest_mp, lo, hi, digits=digits, values=lowest_grid if vectorised else None)
    if res.status != Status.CONVERGED and not math.isfinite(res.value):
        return LinearTransition("linear", L, V, "none", math.nan, "", math.nan, math.nan, Status.NOT_FOUND, res.message)
    n_star = math.exp(res.value)
    with mpmath.workdps(dps):
        n_star_mp = mpmath.exp(res.value_mp)
        soft_mp = soft_vector(inst, n_star_mp)
    soft = np.array([float(v) for v in soft_mp])
    soft_mode = "uniform" if abs(soft[0]) >= abs(soft[1]) else "copy"
    other = 1 if soft_mode == "uniform" else 0
    cross_hi = crossover_n_range(inst, other)[1]
    with mpmath.workdps(dps):
        cross = log_crossing(lambda n_: float(symmetric_point_hessian(inst, n_)[other, other]),
                             lambda n_: symmetric_point_hessian(inst, n_, mp=True)[other, other], lo, cross_hi,
                             digits=digits,
                             values=(lambda ln_n: hessian_grid(ln_n)[:, other, other]) if vectorised else None)
    if classify:
        with mpmath.workdps(dps):
            land = _classify_symmetric_state(inst, n_star_mp, soft_mp)
    else:
        land = {"order": "not classified", "message": ""}
    if classify and follow:
        system = action_system(inst, kernels.linear_kernels(inst.convention.remainder, inst.convention.centred),
                               inst.values())
        found = branch_classification(system, lambda n_: _candidates(linear_minima(inst, n_)), lo, hi,
                                      state_scale(inst))
        land = _with_branches(land, checked_order(found, n_star, land))
        if math.isfinite(cross.value) and math.exp(cross.value) > hi:  # the branches were not followed up to it
            crossover, status, message = ({"crossover_order": "not classified"}, Status.LIMITED,
                                          f"; the crossover is not classified: it lies above the followed range "
                                          f"(n ≤ {hi:.4g}){_scales_set(inst)}")
        else:
            crossover, status, message = later_jump(inst, found)
        land = {**land, "status": status or land.get("status"), "message": land["message"] + message}
    else:
        crossover = {}
    beyond = ("" if math.isfinite(cross.value) else
              f"no crossover (the {'copy' if other else 'uniform'} mode's own curvature keeps its sign) for n up to "
              f"{cross_hi:.4g}{_scales_set(inst)}; ")
    return instability_transition(LinearTransition, inst, res, cross, digits, dps, land,
                                  f"symmetric state loses stability along the {soft_mode} mode; {beyond}",
                                  soft_mode=soft_mode, soft_vector=tuple(soft.tolist()), **crossover)


def _scales_set(inst: CopyHeadsInstance) -> str:
    """The options of the convention's scales that move the linear thresholds, where set away from 1."""
    conv = inst.convention
    named = [f"{option} = {value:g}" for option, value in (("--tau", conv.tau0), ("--score-variance", conv.sigma2),
                                                            ("--s1", conv.s1)) if value != 1.0]
    return f" (at {', '.join(named)})" if named else ""


def _candidates(minima) -> tuple:
    """The minima found and the end points that stopped short of one: `branch_classification` polishes them all."""
    return minima.points + minima.stopped


def _with_branches(land: dict, checked) -> dict:
    order, status, message = checked
    return {**land, "order": order, "status": status, "message": land["message"] + message}


def instability_transition(kind: type, inst: CopyHeadsInstance, instability, crossover, digits: int, dps: int,
                           land: dict, message: str, **fields):
    """The `kind` result of a symmetric state's instability: P* from the crossing `instability` and the crossover from
    `crossover` (both found in ln n; digit strings polished at `dps`), the Landau classification `land` (order,
    exponent, a4, message), and the kind's own `fields`."""
    crossed = math.isfinite(crossover.value)
    with mpmath.workdps(dps):
        P_mp = inst.P_of_n(mpmath.exp(instability.value_mp))
        Pc_mp = inst.P_of_n(mpmath.exp(crossover.value_mp)) if crossed else None
        P_digits = mpmath.nstr(P_mp, digits, strip_zeros=False)  # a trailing zero is a digit
        Pc_digits = mpmath.nstr(Pc_mp, digits, strip_zeros=False) if crossed else None
        # P is proportional to n, so d P = P d ln n; the floats carry their rounding too
        P_error = rounded_error(P_mp, float(P_mp) * instability.error)
        Pc_error = rounded_error(Pc_mp, float(Pc_mp) * crossover.error) if crossed else None
        # n from the polished root, as accurate as P (exp of the float root lost digits: n_crossover 2.2e-6 off at
        # L = 2^20, ten times P_crossover's error)
        n_star = float(mpmath.exp(instability.value_mp))
        n_crossover = float(mpmath.exp(crossover.value_mp)) if crossed else None
    return kind("linear", inst.L, inst.V, land["order"], float(P_mp), P_digits, P_error, n_star,
                land.get("status") or instability.status, message + land["message"], exponent=land.get("exponent"),
                landau_a4=land.get("a4"), P_crossover=float(Pc_mp) if crossed else None, P_crossover_digits=Pc_digits,
                P_crossover_error=Pc_error, n_crossover=n_crossover, **fields)


def first_attempt_transition(inst: CopyHeadsInstance, digits: int = 30) -> LinearTransition:
    """Spec §2 first attempt (only m and q, i.i.d. G with its entropy, no all-ones mode): the overlap m becomes
    nonzero where its curvature at m = 0 (q at its own minimum) vanishes; classified by derive.landau along m
    with q frozen at the critical point."""
    L, V = inst.L, inst.V
    values = inst.first_attempt_values(exact=True)
    action = kernels.bind_action(kernels.first_attempt_kernels(), values)
    dps = working_dps(digits, 3 * math.log10(L))

    def state(n_):
        """r₀ = ln(q₀) at m = 0 (q at its own minimum) and the curvature in m there."""
        r0 = brentq(lambda r: float(action.gradient(0.0, r, n_)[..., 1]), -300, 60)
        return r0, float(action.hessian(0.0, r0, n_)[..., 0, 0])

    def curvature_mp(n_):
        r0, _ = state(float(n_))
        zero = mpmath.mpf(0)
        r_mp = mpmath.findroot(lambda r: action.gradient_mp(zero, r, n_)[1], mpmath.mpf(r0))
        return action.hessian_mp(zero, r_mp, n_)[0, 0]

    grid = np.linspace(math.log(1e-2), math.log(1e14 + 1e4 * (L * L + V * V)), 200)
    change = sign_change_brackets(np.array([state(math.exp(v))[1] for v in grid]))
    if not len(change):
        return LinearTransition("linear", L, V, "none", math.nan, "", math.nan, math.nan, Status.NOT_FOUND,
                                "the curvature of m at m = 0 never vanishes in the range scanned")
    with mpmath.workdps(dps):
        res = find_crossing(lambda s: state(math.exp(s))[1], grid[change[0]], grid[change[0] + 1], digits=digits + 2,
                            f_mp=lambda s: curvature_mp(mpmath.exp(s)), n_scan=4)
        P_mp = inst.P_of_n(mpmath.exp(res.value_mp))
        P_digits = mpmath.nstr(P_mp, digits, strip_zeros=False)  # a trailing zero is a digit
        P_error = rounded_error(P_mp, float(P_mp) * res.error)
        n_star_mp = mpmath.exp(res.value_mp)
    n_star = float(n_star_mp)
    r0, _ = state(n_star)
    landau = kernels.bind(kernels.first_attempt_landau_kernel(), values)
    a2_slope, a4, a6 = (float(v) for v in landau(r0, n_star))
    order, exponent, message = classify_landau(a2_slope, a4, a6)
    if res.status != Status.CONVERGED:  # say why first: the classification is only that at the float64 estimate
        message = (f"P* not located: {res.message} (the first attempt's curvature of m loses its digits from about "
                   f"L = 2^43; the default reduction, convention-a, locates P*); at the float64 estimate of P*: "
                   f"{message}")
        P_digits = ""  # no digits a failed polish supports (it printed 30, wrong from the 15th)
    return LinearTransition("linear", L, V, order, float(P_mp), P_digits, P_error, n_star, res.status,
                            "first attempt (m and q only): " + message, exponent=exponent, landau_a4=a4,
                            soft_mode="copy (m)")
