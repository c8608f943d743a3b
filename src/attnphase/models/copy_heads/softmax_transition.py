"""The softmax transition of the homogeneous action, located by counting its minima along n.

The softmax action has no symmetric "disordered" state (x → −x is not a symmetry and the copy minimum is far
from the uniform one), so a Landau expansion cannot see it. Instead the minima of S(x; n) are counted along n:
two coexisting stable minima over an interval of n with a change of the global one is first order; the
interval ends are the spinodals (saddle-nodes S' = S'' = 0, solved jointly in mpmath); the coexistence point
is the crossing of the two branches' actions (`numeric.threshold.branch_crossing`, each branch polished at its
minimum in mpmath). A single minimum everywhere is "none" (a smooth crossover; at small L, e.g. L ≤ 6 for
V = 4). `classify_by_counting` is the classifier; a fold-following classifier can replace it alone.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy.special import expit

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.homogeneous import softmax_stationary_points
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.results import ExactRowRateThreshold, SoftmaxTransition
from attnphase.numeric.precision import working_dps
from attnphase.numeric.threshold import bisect_count_change, branch_crossing
from attnphase.params import check_int
from attnphase.results import Status

__all__ = ["softmax_n_scale", "classify_by_counting", "softmax_transition", "exact_row_rate_threshold",
           "softmax_exact_prior_threshold", "supported_digits_string"]


def softmax_n_scale(inst: CopyHeadsInstance) -> float:
    """The natural scale of the softmax threshold in n: T ln²L/σ² + V² (at least 1)."""
    return max(1.0, inst.T * math.log(inst.L) ** 2 / inst.convention.sigma2 + inst.V * inst.V)


def _minima(inst: CopyHeadsInstance, n_, refine: bool = False) -> list:
    return softmax_stationary_points(inst, n_, refine)[0]


def classify_by_counting(inst: CopyHeadsInstance) -> tuple[float, float] | None:
    """The interval of n with two coexisting minima, (lower, upper) to 1e-6 relative (bisection on the count),
    or None when there is one minimum at every n of 121 points over 1e-4…1e4 × `softmax_n_scale`."""
    scale = softmax_n_scale(inst)
    grid = np.geomspace(scale * 1e-4, scale * 1e4, 121)
    two = [i for i, v in enumerate(grid) if len(_minima(inst, v)) >= 2]
    if not two:
        return None
    i0, i1 = two[0], two[-1]

    def count(n_):
        return len(_minima(inst, n_))

    lower = bisect_count_change(count, grid[i0 - 1], grid[i0]).bracket[1] if i0 > 0 else grid[0]
    upper = bisect_count_change(count, grid[i1], grid[i1 + 1]).bracket[0] if i1 + 1 < len(grid) else grid[-1]
    return lower, upper


def _branch(inst: CopyHeadsInstance, which: int):
    """The action along the uniform (which = 0) or the copy (which = −1) branch: f(n) in float64 (NaN where the
    branch does not exist), f_mp(n) in mpmath (Newton on S' from the branch's float64 minimum)."""
    action = inst.reduced

    def f(n_):
        minima = _minima(inst, n_, refine=True)
        return float(action.action(minima[which], n_)) if len(minima) >= 2 else math.nan

    def f_mp(n_mp):
        start = _minima(inst, float(n_mp))[which]
        root = mpmath.findroot(lambda xv: action.gradient_mp(xv, n_mp)[0], mpmath.mpf(start),
                               df=lambda xv: action.hessian_mp(xv, n_mp)[0, 0])
        return action.action_mp(root, n_mp)

    return f, f_mp


def _spinodal_mp(inst: CopyHeadsInstance, n64: float, x64: float):
    """Saddle-node point in n: S'(x) = S''(x) = 0 solved jointly in (x, ln n) at the working precision (the
    float64 end of the window when the solve fails)."""
    action = inst.reduced

    def equations(xv, ln_n):
        n_ = mpmath.exp(ln_n)
        return [action.gradient_mp(xv, n_)[0], action.hessian_mp(xv, n_)[0, 0]]

    try:
        return mpmath.exp(mpmath.findroot(equations, (mpmath.mpf(x64), mpmath.log(n64)))[1])
    except (ValueError, ZeroDivisionError):
        return mpmath.mpf(n64)


def softmax_transition(inst: CopyHeadsInstance, digits: int = 30) -> SoftmaxTransition:
    """Classify the softmax transition by counting the minima of S(x; n) along n; polish with mpmath."""
    L, V = inst.L, inst.V
    window = classify_by_counting(inst)
    if window is None:
        return SoftmaxTransition("softmax", L, V, "none", math.nan, "", math.nan, math.nan, Status.NOT_FOUND,
                                 "one minimum at every n scanned: no first-order transition")
    s_lo, s_hi = window
    f1, f1_mp = _branch(inst, 0)
    f2, f2_mp = _branch(inst, -1)
    dps = working_dps(digits, 2 * math.log10(L))  # actions ~ n ~ L ln²L: digits lost in their difference
    with mpmath.workdps(dps):
        res = branch_crossing(f1, f2, s_lo * (1 + 1e-9), s_hi * (1 - 1e-9), f1_mp=f1_mp, f2_mp=f2_mp, digits=digits,
                              n_scan=8)
    n_star = res.value
    minima = _minima(inst, n_star, refine=True)
    a = [float(expit(v)) for v in (minima[0], minima[-1])]
    P_star = inst.P_of_n(n_star)
    with mpmath.workdps(dps):
        P_mp = inst.P_of_n(res.value_mp) if res.value_mp is not None else mpmath.mpf(P_star)
        P_digits = mpmath.nstr(P_mp, digits) if res.status == Status.CONVERGED else res.digits_string
        lo_minima = _minima(inst, s_lo * (1 + 1e-6))
        hi_minima = _minima(inst, s_hi * (1 - 1e-6))
        # the spinodal where the copy minimum is born (left) and where the uniform one dies (right)
        sp_lo = _spinodal_mp(inst, s_lo, lo_minima[-1] if lo_minima else 0.0)
        sp_hi = _spinodal_mp(inst, s_hi, hi_minima[0])
    error = inst.P_of_n(res.error) if math.isfinite(res.error) else res.error
    return SoftmaxTransition(
        "softmax", L, V, "first", P_star, P_digits, error, n_star, res.status,
        f"two coexisting minima for n in ({s_lo:.6g}, {s_hi:.6g}); " + res.message,
        spinodals=(inst.P_of_n(float(sp_lo)), inst.P_of_n(float(sp_hi))), jump=a[1] - a[0], a_uniform=a[0],
        a_copy=a[1], n_spinodals=(float(sp_lo), float(sp_hi)))


def supported_digits_string(value: float, error: float, requested: int = 17) -> str:
    """`value` with only the significant digits its error supports: d = ⌊log10(|value| / (2·error))⌋
    (the 2-sigma interval moves no digit kept), at least 1 and at most `requested` (and 17, float64).

    The exact-row-rate P* is a float64 computation whose precision is set by the Sobol error of the row
    density (relative ~1e-3), not by the arithmetic: an mpmath evaluation of the same Sobol sums would
    carry more digits of the same estimate, not more correct digits. This string is what `--digits`
    can honestly deliver for it."""
    if not (math.isfinite(value) and math.isfinite(error)):
        return ""
    digits = 17 if error <= 0 else int(math.floor(math.log10(abs(value) / (2 * error))))
    kept = max(1, min(digits, requested, 17))
    return f"{value:.{kept}g}"


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

    I(x) = −ln p(x), p(x) = E[φ_σ(x + ln Σ_{m≠prev} e^{z_m})] over the other L−1 scores (numeric.gauss
    Sobol points), and k = (L−1)E Σw² likewise, tabulated on a grid of x and interpolated by a cubic
    spline; the action is the compiled shortcut action with T·I_shortcut replaced by T·I. Float64
    (the Sobol error, propagated through the branch difference, bounds the precision; the digit string keeps
    at most `digits` of those it supports).
    """
    from scipy.interpolate import CubicSpline
    from scipy.optimize import brentq, minimize_scalar

    from attnphase.models.copy_heads import exact
    from attnphase.numeric.gauss import sobol_expectation

    L, s2, T_ = inst.L, inst.convention.sigma2, inst.T
    short = softmax_transition(inst, digits=15)
    # the copy branch sits at a < 0.9 (x < 2.2) for every size tested; beyond x ≈ 6 the density is so far
    # in the tail that its Sobol estimate loses relative accuracy
    xs = np.linspace(-math.log(L - 1) - s2 / 2 - 6 * math.sqrt(s2), 6.0, n_grid)
    mean, cov = np.zeros(L - 1), np.eye(L - 1) * s2
    dens = sobol_expectation(exact.row_logit_density_integrand(xs, s2), mean, cov, n_points=n_points, replicates=replicates)
    part = sobol_expectation(exact.row_participation_integrand(s2), mean, cov, n_points=n_points, replicates=replicates)
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
    return ExactRowRateThreshold("first", P_exact, P_err, supported_digits_string(P_exact, P_err, digits),
                                 x_minima=(m[0][0], m[-1][0]), status=Status.CONVERGED,
                                 message="coexistence of two minima with the exact row rate", **common)
