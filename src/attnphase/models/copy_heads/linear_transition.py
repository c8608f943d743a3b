"""The linear transition: the first instability of the symmetric state t = c = 0, its order, and the crossover.

The smallest curvature at the symmetric point changes sign at the transition (scanned in ln n, polished in
mpmath); the Landau expansion of the action along the soft mode classifies it (derive.landau); the other
mode's own curvature vanishes at the crossover. The first attempt (only m and q) is classified the
same way. The followed stationary branches check the order and see the crossover's jump (`linear_branches`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import mpmath
import numpy as np
import sympy
from scipy.optimize import brentq

from attnphase.models.copy_heads import kernels
from attnphase.models.copy_heads.convention import DEFAULT
from attnphase.models.copy_heads.homogeneous import linear_minima, spelled
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.linear_branches import (action_system, branch_classification, checked_order,
                                                        later_jump, state_scale)
from attnphase.models.copy_heads.results import LinearTransition
from attnphase.numeric.digits import beyond_float64
from attnphase.numeric.minimize import sign_change_brackets
from attnphase.numeric.precision import scaled_lowest_curvature_2x2, working_dps
from attnphase.numeric.threshold import bisect_geometric, find_crossing, log_crossing, rounded_error
from attnphase.results import Status

__all__ = ["n_range", "default_n_range", "crossover_n_range", "scale_factors", "symmetric_point_hessian", "soft_vector",
           "remainder_at_origin", "classify_landau", "landau_order", "instability_transition", "linear_transition",
           "first_attempt_transition", "scales_away_from_one"]


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
        system = action_system(kernels.linear_kernels(inst.convention.remainder, inst.convention.centred),
                               inst.values())
        found = branch_classification(system, lambda n_: _candidates(linear_minima(inst, n_)), lo, hi,
                                      state_scale(inst))
        land = _with_branches(land, checked_order(found, n_star, land))
        if math.isfinite(cross.value) and math.exp(cross.value) > hi:  # the branches were not followed up to it
            crossover, status, message = ({"crossover_order": "not classified"}, Status.LIMITED,
                                          f"; the crossover is not classified: it lies above the followed range "
                                          f"(n ≤ {hi:.4g}){scales_away_from_one(inst)}")
        else:
            crossover, status, message = later_jump(inst, found)
        land = {**land, "status": status or land.get("status"), "message": land["message"] + message}
    else:
        crossover = {}
    beyond = ("" if math.isfinite(cross.value) else
              f"no crossover (the {'copy' if other else 'uniform'} mode's own curvature keeps its sign) for n up to "
              f"{cross_hi:.4g}{scales_away_from_one(inst)}; ")
    return instability_transition(LinearTransition, inst, res, cross, digits, dps, land,
                                  f"symmetric state loses stability along the {soft_mode} mode; {beyond}",
                                  soft_mode=soft_mode, soft_vector=tuple(soft.tolist()), **crossover)


def scales_away_from_one(inst: CopyHeadsInstance) -> str:
    """The convention's scales that move the linear thresholds, where set away from 1, each named as the caller
    spells it (`homogeneous.spelled`: "tau0" from Python, "--tau" from the CLI)."""
    conv = inst.convention
    named = [f"{spelled(name)} = {getattr(conv, name):g}" for name in ("tau0", "sigma2", "s1")
             if getattr(conv, name) != 1.0]
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
    beyond = (beyond_float64("P_star", float(P_mp), P_digits, "P_star_digits",
                             also=[] if math.isfinite(P_error) else ["error"])
              + (beyond_float64("P_crossover", float(Pc_mp), Pc_digits, "P_crossover_digits",
                                also=[] if math.isfinite(Pc_error) else ["P_crossover_error"]) if crossed else ""))
    return kind("linear", inst.L, inst.V, land["order"], float(P_mp), P_digits, P_error, n_star,
                land.get("status") or instability.status, message + land["message"] + beyond,
                exponent=land.get("exponent"),
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
