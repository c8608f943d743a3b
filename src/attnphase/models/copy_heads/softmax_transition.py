"""The softmax transition of the homogeneous action, from its stationary branches followed in n.

The softmax action has no symmetric "disordered" state (x → −x is not a symmetry and the copy minimum is far
from the uniform one), so a Landau expansion cannot see it. Instead every stationary branch S'(x; n) = 0 is
followed by pseudo-arclength continuation in ln n (`numeric.continuation`, through its folds, with a step rule
that cannot step over a fold pair), the folds (saddle-nodes: the spinodals) are located as roots of (S', S'') and
polished in mpmath, and `numeric.transition.classify_transition` reads the order off the branches: two minimum
segments whose actions cross is first order (the crossing, polished in mpmath, is P*); a single minimum
everywhere is "none" (a smooth crossover, at small L). A classifier that counts minima on a grid of n misses
every window narrower than its step (it reported "none" at V = 16, L = 18 and 20); this one does not depend on a
grid in n.

Branches: through the uniform minimum at the lowest n and the copy minimum at the highest n of the range
1e-4…1e4 × `softmax_n_scale`; then every stationary point found by a grid scan in x at 41 values of n is checked
to lie on a followed branch, and a branch is followed from any that does not (a closed branch, an isola, that
crosses none of those 41 levels would still be missed: none was ever seen).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy.special import expit

from attnphase.errors import ParameterError
from attnphase.models.copy_heads import kernels
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.homogeneous import softmax_grid, softmax_stationary_points, spelled
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.results import ExactRowRateThreshold, SoftmaxTransition
from attnphase.numeric.continuation import ActionSystem, follow_branch
from attnphase.numeric.digits import FLOAT64_DIGITS, beyond_float64, digit_string, supported_digits
from attnphase.numeric.points_on_branches import stationary_points_at
from attnphase.numeric.precision import newton_steps_mp
from attnphase.numeric.minimize import sign_change_brackets
from attnphase.numeric.threshold import Threshold, rounded_error
from attnphase.numeric.transition import classify_transition
from attnphase.params import check_int
from attnphase.results import Status

__all__ = ["softmax_n_scale", "softmax_n_range", "softmax_system", "softmax_branches", "softmax_transition",
           "exact_row_rate_threshold", "softmax_exact_prior_threshold"]

CHECK_LEVELS = 41
"""Values of n (geometric over the range) at which every grid stationary point must lie on a followed branch."""
MAX_BRANCHES = 8


def softmax_n_scale(inst: CopyHeadsInstance) -> float:
    """The natural scale of the softmax threshold in n: T ln²L/σ² + V² (at least 1)."""
    return max(1.0, inst.T * math.log(inst.L) ** 2 / inst.convention.sigma2 + inst.V * inst.V)


def softmax_n_range(inst: CopyHeadsInstance) -> tuple[float, float]:
    """The range of n the classifier covers, 1e-4…1e4 × `softmax_n_scale` (the scale at τ = 1), the upper end
    widened by τ^{−1/2} where τ < 1. n enters the action as τn (the log-det terms) and τn² (the copy fit), so the
    threshold moves up between not at all (τn ≫ V: the fit saturates) and ∝ τ^{−1/2} (τn ≪ V: only √τ·n enters;
    τ = 1e-10 at L = 16, V = 4: two minima coexist at n = 5e6…1e7, beyond the unwidened range's 1.4e6); for τ > 1 it
    falls at most to where the fit saturates, within the lower end's margin."""
    scale = softmax_n_scale(inst)
    return scale * 1e-4, scale * 1e4 * max(1.0, 1 / math.sqrt(inst.convention.tau(inst.V)))


def softmax_system(inst: CopyHeadsInstance) -> ActionSystem:
    """The homogeneous softmax action S(x; n) as an `ActionSystem` continued in ln n."""
    return ActionSystem(kernels.softmax_kernels(inst.convention.centred), "n", inst.values(exact=True),
                        log_control=True)


def _polyline_states(branches, ln_n: float) -> list[tuple[float, float]]:
    """(x, |Δx| of the segment) where each followed branch's polyline crosses the level ln n (linear interpolation)."""
    out = []
    for branch in branches:
        c, x = branch.control, branch.state[:, 0]
        for i in np.nonzero((np.minimum(c[:-1], c[1:]) <= ln_n) & (np.maximum(c[:-1], c[1:]) >= ln_n))[0]:
            w = (ln_n - c[i]) / (c[i + 1] - c[i]) if c[i + 1] != c[i] else 0.0
            out.append((x[i] + w * (x[i + 1] - x[i]), abs(x[i + 1] - x[i])))
    return out


def _unfollowed_points(inst: CopyHeadsInstance, system: ActionSystem, branches, levels) -> list[tuple[float, float]]:
    """(x, ln n) of the grid stationary points at `levels` that lie on no followed branch. One vectorised scan of
    S' over `softmax_grid` × levels; a grid point within a grid step (plus the polyline's step) of a followed
    branch's polyline is on it, any other is checked exactly (continued from the branch points, Newton)."""
    xs = softmax_grid(inst)
    spacing = xs[1] - xs[0]
    with np.errstate(all="ignore"):
        g = np.asarray(inst.reduced.gradient(xs[None, :], np.exp(levels)[:, None]), float)[..., 0]
    missing = []
    for ln_n, row in zip(levels, g):
        idx = sign_change_brackets(row)
        candidates = _polyline_states(branches, ln_n)
        for x in 0.5 * (xs[idx] + xs[idx + 1]):
            if any(abs(x - xb) <= 2 * spacing + step for xb, step in candidates):
                continue
            exact = [p["x"][0] for p in stationary_points_at(system, branches, ln_n)]
            if not any(abs(x - v) <= 2 * spacing for v in exact):
                missing.append((x, ln_n))
    return missing


class UnresolvedAction(ArithmeticError):
    """A sign change of the float64 S′ on the grid from which Newton's method reaches no stationary point: there the
    float64 action does not resolve its stationary points (τ = 1e-200 at L = 16, V = 4: at n = 1e106, the top of the
    range widened for τ)."""

    def __init__(self, x: float, n_: float):
        self.x, self.n = x, n_
        super().__init__(f"S' changes sign at x = {x:.6g} with no stationary point there")


def softmax_branches(inst: CopyHeadsInstance, digits: int = 15):
    """(system, followed branches, (ln n_lo, ln n_hi)): every stationary branch of the homogeneous softmax action
    over `softmax_n_range` (module docstring), folds located to `digits` digits in ln n; no branches when the action
    has no minimum on its grid at n_lo to start from (scales far outside the grid's, e.g. σ² = 1e300).
    `UnresolvedAction` where a stationary point of the float64 grid scan is not one."""
    system = softmax_system(inst)
    n_lo, n_hi = softmax_n_range(inst)
    control_range = (math.log(n_lo), math.log(n_hi))
    starts = softmax_stationary_points(inst, n_lo)[0]
    if not starts:
        return system, [], control_range
    branches = [follow_branch(system, [starts[0]], control_range[0], control_range, digits=digits)]
    levels = np.linspace(*control_range, CHECK_LEVELS)
    levels[-1] -= 1e-9 * (control_range[1] - control_range[0])  # inside the range, where a branch's last point may round
    for check in (levels[-1:], levels[1:-1]):  # the copy minimum at the top of the range first
        for _ in range(MAX_BRANCHES):
            missing = _unfollowed_points(inst, system, branches, check)
            if not missing:
                break
            x, ln_n = missing[0]
            try:
                branches.append(follow_branch(system, [x], ln_n, control_range, digits=digits))
            except ParameterError as error:
                if error.name != "x0":
                    raise
                raise UnresolvedAction(x, math.exp(ln_n)) from error
        else:
            raise RuntimeError(f"stationary points of the softmax action at L = {inst.L}, V = {inst.V} remain off "
                               f"{MAX_BRANCHES} followed branches")
    return system, branches, control_range


def _in_n(inst: CopyHeadsInstance, at: Threshold, digits: int) -> tuple[float, float, str]:
    """(P, its error, its digit string) of a location found in ln n."""
    if not math.isfinite(at.value):
        return math.nan, math.nan, ""
    with mpmath.workdps(digits + 20):
        n_mp = mpmath.exp(at.value_mp if at.value_mp is not None else mpmath.mpf(at.value))
        P_mp = inst.P_of_n(n_mp)
        error = P_mp * at.error  # d P = P d ln n, in mpmath: P can lie beyond float64's range where n does not
        supported = supported_digits(P_mp, error, digits)
        text = mpmath.nstr(P_mp, supported, strip_zeros=False) if supported else ""
        return float(P_mp), rounded_error(P_mp, float(error)), text


def _order_parameters_at(inst: CopyHeadsInstance, at: Threshold, values: tuple[float, float],
                         digits: int) -> tuple[float, float, float]:
    """(a_uniform, a_copy, |a_copy − a_uniform|) at the coexistence point `at` (in ln n), correct to float64 rounding:
    each coexisting minimum's logit x taken by Newton's method in mpmath at n* from logit(a) of the float64 state
    (`values`). The float64 states carried |x|·2⁻⁵³ of relative error into a = σ(x): 6e-16 at L = 10, V = 8, 5e-15 at
    L = 2²⁰⁰ where x ≈ −67 (audit ch15). An a of exactly 0 or 1 (x beyond float64) is kept as it is."""
    action = inst.reduced
    polished = []
    with mpmath.workdps(digits + 20):
        n_mp = mpmath.exp(at.value_mp if at.value_mp is not None else mpmath.mpf(at.value))
        for a in values:
            if not 0.0 < a < 1.0:
                polished.append(mpmath.mpf(a))
                continue
            found = newton_steps_mp(action.gradient_mp, action.hessian_mp, [math.log(a) - math.log1p(-a)], (n_mp,),
                                    NEWTON_STEPS)
            if found is None:  # a singular curvature at these digits: the float64 state's value
                polished.append(mpmath.mpf(a))
                continue
            x = found[0][0]
            polished.append(1 / (1 + mpmath.exp(-x)))
        return float(polished[0]), float(polished[1]), float(abs(polished[1] - polished[0]))


# From a float64 minimum Newton's steps shrink quadratically: 2⁻⁵³ → 2⁻¹⁰⁶ → 2⁻²¹² covers 50 digits in 3 steps
NEWTON_STEPS = 4


def _range_scales(inst: CopyHeadsInstance) -> str:
    """What sets the range of n, by parameter (as the caller spelled it: `homogeneous.spelled`): σ² through the
    scale, τ < 1 through the upper end's widening."""
    conv = inst.convention
    named = [f"{spelled('sigma2')} = {conv.sigma2:g}"] if conv.sigma2 != 1.0 else []
    if conv.tau(inst.V) < 1.0:
        named.append(f"{spelled('tau0')} = {conv.tau0:g} (τ = {conv.tau(inst.V):g}: the upper end grows as "
                     "τ^(-1/2))")
    return f", set by {' and '.join(named)}" if named else ""


def _n_at(at: Threshold) -> float:
    """n at a location found in ln n (NaN where it was not found): from the polished ln n itself, not back from P,
    which can lie beyond float64's range where n does not (P* = n*/β at β = 1e-306)."""
    if not math.isfinite(at.value):
        return math.nan
    with mpmath.workdps(30):
        return float(mpmath.exp(at.value_mp if at.value_mp is not None else mpmath.mpf(at.value)))


def _overflowed(error: float, spinodal_P: list[tuple[float, float, str]]) -> list[str]:
    """The fields besides P* that an overflow of P beyond float64 leaves null: P*'s error, the spinodals in P
    (whose digit strings are kept in `spinodals_digits`)."""
    names = [] if math.isfinite(error) else ["error"]
    if any(math.isinf(P) for P, _, _ in spinodal_P):
        names.append("spinodals (spinodals_digits holds their digits)")
    return names


def _end(n_: float, otherwise: str) -> str:
    return f"{n_:.6g}" if math.isfinite(n_) else otherwise


def softmax_transition(inst: CopyHeadsInstance, digits: int = 30) -> SoftmaxTransition:
    """Classify the softmax transition on the followed stationary branches of S(x; n); P* and both spinodals
    polished in mpmath (ln n carries two more digits than asked, so that n keeps `digits`)."""
    L, V = inst.L, inst.V
    try:
        system, branches, control_range = softmax_branches(inst, digits + 2)
    except UnresolvedAction as unresolved:
        return SoftmaxTransition("softmax", L, V, "undetermined", math.nan, "", math.nan, math.nan, Status.FAILED,
                                 f"the float64 action does not resolve its stationary points at n = {unresolved.n:.4g} "
                                 f"({unresolved}), inside the range of n followed, [{softmax_n_range(inst)[0]:.4g}, "
                                 f"{softmax_n_range(inst)[1]:.4g}]{_range_scales(inst)}: threshold not computed",
                                 spinodals=None)
    if not branches:
        return SoftmaxTransition("softmax", L, V, "none", math.nan, "", math.nan, math.nan, Status.FAILED,
                                 f"no minimum of the softmax action on its grid at n = {math.exp(control_range[0]):.4g} "
                                 f"to follow the branches from (β = {inst.convention.beta:g}, σ² = "
                                 f"{inst.convention.sigma2:g}: scales the grid does not resolve)", spinodals=None)
    found = classify_transition(system, branches, control_range, digits=digits + 2,
                                order_parameter=lambda x: float(expit(x[0])), control_label="ln n")
    folds = sorted(math.exp(s.control.value) for b in branches for s in b.singularities if s.kind == "fold")
    where = (f"{len(branches)} branch(es) followed over n in [{math.exp(control_range[0]):.4g}, "
             f"{math.exp(control_range[1]):.4g}], folds at n = " + (", ".join(f"{v:.8g}" for v in folds) or "none"))
    if found.order != "first":
        status = Status.NOT_FOUND if found.status in (Status.NOT_FOUND, Status.CONVERGED) else found.status
        what = ("one minimum at every n: no first-order transition" if not folds else
                "coexisting minima, but the global minimum never changes branch: no first-order transition")
        return SoftmaxTransition("softmax", L, V, "none", math.nan, "", math.nan, math.nan, status,
                                 f"{what} ({where}; {found.message})", spinodals=None)
    P_star, error, P_digits = _in_n(inst, found.control, digits)
    spinodal_P = [_in_n(inst, s, digits) for s in found.spinodals]
    n_spinodals = tuple(_n_at(s) for s in found.spinodals)
    a_uniform, a_copy, jump = _order_parameters_at(inst, found.control, found.order_parameter, digits)
    later = f"; {len(found.later)} further change(s) of the global minimum at larger n" if found.later else ""
    return SoftmaxTransition(
        "softmax", L, V, "first", P_star, P_digits, error, _n_at(found.control), found.status,
        f"two coexisting minima for n in ({_end(n_spinodals[0], 'below the range')}, "
        f"{_end(n_spinodals[1], 'beyond the range')}), the global one jumps at P* ({where}){later}"
        + beyond_float64("P_star", P_star, P_digits, "P_star_digits", also=_overflowed(error, spinodal_P)),
        spinodals=tuple(p[0] for p in spinodal_P), jump=jump, a_uniform=a_uniform, a_copy=a_copy,
        n_spinodals=n_spinodals, spinodals_digits=tuple(p[2] for p in spinodal_P),
        spinodal_kinds=found.spinodal_kinds)


def softmax_exact_prior_threshold(L: int, V: int, convention: Convention = DEFAULT, *, n_points: int = 2**12,
                                  replicates: int = 8, n_grid: int = 241, digits: int = 17) -> ExactRowRateThreshold:
    """P* with the EXACT row rate instead of the large-L shortcut (`exact_row_rate_threshold`), periodic or
    drop-first (under the causal mask the threshold already uses the exact row densities, one per row length)."""
    inst = CopyHeadsInstance.validated(attention="softmax", L=L, V=V, convention=convention)
    if inst.causal:
        raise ParameterError("boundary", "causal", "'periodic' or 'drop-first' (under the causal mask the threshold "
                                                   "already uses the exact row densities, one per row length)")
    return exact_row_rate_threshold(inst, n_points=check_int("n_points", n_points, 2, 2**20),
                                    replicates=check_int("replicates", replicates, 2, 1000),
                                    n_grid=check_int("n_grid", n_grid, 10, 10**5), digits=check_int("digits", digits, 1, 100))


def exact_row_rate_threshold(inst: CopyHeadsInstance, *, n_points: int = 2**12, replicates: int = 8,
                             n_grid: int = 241, digits: int = 17) -> ExactRowRateThreshold:
    """P* with the EXACT row rate instead of the large-L shortcut (the shortcut's effect on P*).

    I(x) = −ln p(x), p(x) = E[φ_σ(x + ln Σ_{m≠prev} e^{z_m})] over the other L−1 scores (scrambled
    Sobol points, numeric.sobol), and k = (L−1)E Σw² likewise, tabulated on a grid of x and interpolated by a cubic
    spline; the action is the compiled shortcut action with T·I_shortcut replaced by T·I. Float64
    (the Sobol error, propagated through the branch difference, bounds the precision; the digit string keeps
    at most `digits` of those it supports).
    """
    from scipy.interpolate import CubicSpline
    from scipy.optimize import brentq, minimize_scalar

    from attnphase.models.copy_heads import exact
    from attnphase.numeric.sobol import sobol_expectation

    L, s2, T_ = inst.L, inst.convention.sigma2, inst.T
    short = softmax_transition(inst, digits=15)
    # the copy branch sits at a < 0.9 (x < 2.2) for every size tested; beyond x ≈ 6 the density is so far
    # in the tail that its Sobol estimate loses relative accuracy
    xs = np.linspace(-math.log(L - 1) - s2 / 2 - 6 * math.sqrt(s2), 6.0, n_grid)
    mean, cov = np.zeros(L - 1), np.eye(L - 1) * s2
    dens = sobol_expectation(exact.row_logit_density_integrand(xs, s2), mean, cov, n_points=n_points, replicates=replicates)
    part = sobol_expectation(exact.row_participation_integrand, mean, cov, n_points=n_points, replicates=replicates)
    I_exact = -np.log(np.asarray(dens.value))
    I_err_spline = CubicSpline(xs, np.asarray(dens.error) / np.asarray(dens.value))  # absolute error of I(x)
    spline = CubicSpline(xs, I_exact)
    k_exact = float(part.value)
    exact_action = inst.reduced.action.bind(k_rest=k_exact)

    def shortcut_rate(x):
        return (x + math.log(L - 1) + s2 / 2) ** 2 / (2 * s2) + 0.5 * math.log(2 * math.pi * s2)

    def action(x, n_):
        return np.asarray(exact_action(x, n_)) - T_ * shortcut_rate(x) + T_ * spline(x)

    def minima(n_):
        S = action(xs, n_)
        out = []
        for j in np.nonzero((S[1:-1] < S[:-2]) & (S[1:-1] < S[2:]))[0] + 1:
            r = minimize_scalar(lambda x: float(action(x, n_)), bracket=(xs[j - 1], xs[j], xs[j + 1]))
            out.append((r.x, r.fun))
        return out

    def diff(n_):
        m = minima(n_)
        return m[-1][1] - m[0][1] if len(m) >= 2 else math.nan

    two = [v for v in np.geomspace(short.n_star / 30, short.n_star * 30, 121) if len(minima(v)) >= 2]
    common = dict(P_star_shortcut=short.P_star, k_exact=k_exact, k_shortcut=math.exp(s2))
    if not two:
        return ExactRowRateThreshold("none", math.nan, math.nan, "", x_minima=(), status=Status.NOT_FOUND,
                                     message="one minimum at every n scanned with the exact rate", **common)
    a, b = two[0], two[-1]
    if not diff(a) * diff(b) < 0:
        return ExactRowRateThreshold("undetermined", math.nan, math.nan, "", x_minima=(), status=Status.FAILED,
                                     message="two minima but no sign change of their action difference", **common)
    n_star = brentq(diff, a, b, xtol=1e-12 * b)
    # error: the Sobol error of I at the two minima (T rows each), over the slope of the branch difference
    m = minima(n_star)
    slope = (diff(n_star * (1 + 1e-6)) - diff(n_star * (1 - 1e-6))) / (2e-6 * n_star)
    err_diff = T_ * (abs(float(I_err_spline(m[0][0]))) + abs(float(I_err_spline(m[-1][0]))))
    P_exact, P_err = inst.P_of_n(n_star), inst.P_of_n(err_diff / abs(slope))
    # float64 from Sobol sums: only the digits the Sobol error supports (numeric.digits), at most --digits and 17
    kept = min(digits, FLOAT64_DIGITS)
    text = digit_string(P_exact, supported_digits(P_exact, P_err, kept), kept) if math.isfinite(P_exact) else ""
    return ExactRowRateThreshold("first", P_exact, P_err, text,
                                 x_minima=(m[0][0], m[-1][0]), status=Status.CONVERGED,
                                 message="coexistence of two minima with the exact row rate", **common)
