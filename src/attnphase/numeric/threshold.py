"""Thresholds: where a function, or the difference of two branches, changes sign.

Two stages:
1. float64: scan f on a uniform grid of [lo, hi], take the first sign change, and solve it with
   `scipy.optimize.brentq` to full double precision.
2. mpmath (when an mpmath-evaluable `f_mp` is given): around the float64 root, bracket the sign
   change at the working precision and shrink the bracket with the Illinois (bisection-secant) method,
   which keeps the root bracketed and converges superlinearly. The polish runs at two working
   precisions (digits + 10 and digits + 20 decimal places); their difference, with the final bracket
   width, is the polish error.

The error estimate adds the function's own error, if the caller knows it (e.g. a quadrature error
estimate `f_error`), propagated to the root through the slope: dx = f_error / |f'(x*)|. When the
estimate does not support the requested digits, status is "limited" and the digit string keeps only
the digits the estimate supports.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import mpmath
import numpy as np
from scipy import optimize

from attnphase.errors import ParameterError
from attnphase.numeric.digits import digit_string, supported_digits
from attnphase.numeric.precision import float_at_least
from attnphase.params import check_int, check_positive, check_real
from attnphase.results import Result, Status

__all__ = [
    "Threshold", "find_crossing", "branch_crossing", "rounded_error",
    # a crossing known to an error (quadrature rules), a root known to a given error
    "noisy_threshold", "root_steps", "illinois", "threshold_from_error",
    # counts, windows and coexistence
    "log_crossing", "bisect_geometric", "window_and_coexistence",
]


@dataclass(frozen=True)
class Threshold(Result):
    """A located threshold (a sign change, a crossing of two branches, a fold); the one threshold result.

    value: the root as a float64; value_mp: the polished root (mpmath mpf; equals value without f_mp);
    digits_string: the root with as many significant digits as requested and supported by `error`;
    error: estimated absolute error of value_mp (polish + f_error / |slope|); status: converged |
    limited (error does not support the requested digits) | not_found (no sign change) | failed;
    message: in words; bracket: (a, b) of the float64 sign change (None when none found);
    slope: f'(x*) from a fresh central difference at the root, not from the bracket (find_crossing: step
    10^(−dps/2) at the polish precision with f_mp, else 1e-6·max(|x*|, 1) in float64, at most a quarter of the
    bracket; noisy_threshold and threshold_from_error: the caller's); digits: significant digits in digits_string,
    by `numeric.digits.supported_digits` (0 and "" when the error supports none, e.g. a failed location's NaN).
    """

    value: float
    value_mp: object
    digits_string: str
    error: float
    status: Status
    message: str
    bracket: tuple[float, float] | None
    slope: float = math.nan
    digits: int = 0


def _f_error_at(f_error, x: float) -> float:
    if f_error is None:
        return 0.0
    e = f_error(x) if callable(f_error) else f_error
    return check_real("f_error", e, 0.0, None)


def illinois(f, a, b, fa, fb, xtol, *, ftol=0, max_iter: int = 400):
    """Shrink a sign-change bracket [a, b] of f (floats or mpmath numbers) to width <= xtol, or until |f(c)| <= ftol
    at a point c (then both ends are c): (a, b, fa, fb). f(c) may return None where it has no value at c (a solve
    that failed): the search stops and returns None.

    Regula falsi with the Illinois modification: when the same end is retained twice, its function
    value is halved, which restores superlinear convergence; a bisection step is taken whenever the
    secant point would fall within a rounding distance of an end.
    """
    side = 0
    for _ in range(max_iter):
        if abs(b - a) <= xtol:
            break
        c = b - fb * (b - a) / (fb - fa) if fb != fa else (a + b) / 2
        if not (min(a, b) < c < max(a, b)):
            c = (a + b) / 2
        fc = f(c)
        if fc is None:
            return None
        if abs(fc) <= ftol:
            return c, c, fc, fc
        if (fc > 0) == (fb > 0):
            b, fb = c, fc
            if side == -1:
                fa /= 2
            side = -1
        else:
            a, fa = c, fc
            if side == 1:
                fb /= 2
            side = 1
    return a, b, fa, fb


def _polish(f_mp, a64: float, b64: float, x64: float, dps: int):
    """Root of f_mp near x64 at `dps` decimal places: (root, bracket width, slope)."""
    with mpmath.workdps(dps):
        x = mpmath.mpf(x64)
        lo, hi = mpmath.mpf(a64), mpmath.mpf(b64)
        half = max(abs(x), mpmath.mpf(1e-300)) * mpmath.mpf(2) ** -40
        # Grow a bracket around the float64 root until f_mp changes sign (or the scan bracket is hit,
        # which is a sign change by construction).
        while True:
            a, b = max(lo, x - half), min(hi, x + half)
            fa, fb = f_mp(a), f_mp(b)
            if fa == 0:
                return a, mpmath.mpf(0), mpmath.nan
            if fb == 0:
                return b, mpmath.mpf(0), mpmath.nan
            if (fa > 0) != (fb > 0):
                break
            if a == lo and b == hi:
                raise ArithmeticError("f_mp has no sign change on the float64 bracket")
            half *= 64
        xtol = max(abs(x), mpmath.mpf(10) ** (-dps)) * mpmath.mpf(10) ** (-(dps - 3))
        a, b, fa, fb = illinois(f_mp, a, b, fa, fb, xtol)
        root = b - fb * (b - a) / (fb - fa) if fb != fa else (a + b) / 2
        # The end values were rescaled by the Illinois steps: take the slope from a fresh central
        # difference (step 10^(-dps/2), accurate to ~10^(-dps/2) relative, plenty for an error bar).
        step = max(abs(root), mpmath.mpf(1)) * mpmath.mpf(10) ** (-(dps // 2))
        slope = (f_mp(root + step) - f_mp(root - step)) / (2 * step)
        return +root, abs(b - a), slope


def find_crossing(
    f,
    lo: float,
    hi: float,
    *,
    digits: int = 15,
    f_mp=None,
    f_error=None,
    n_scan: int = 64,
) -> Threshold:
    """First sign change of f on [lo, hi], to `digits` significant digits.

    f: float -> float (float64 evaluation, used for the scan and brentq).
    f_mp: optional mpf -> mpf evaluation of the same function at the current mpmath precision; without
        it the result is float64 (at most ~15 digits).
    f_error: optional absolute error of f near the root (a float, or a callable x -> float), e.g. a
        quadrature error; it enters the error estimate as f_error / |slope|.
    n_scan: grid intervals of the scan.
    """
    lo = check_real("lo", lo)
    hi = check_real("hi", hi)
    if not hi > lo:
        raise ParameterError("hi", hi, f"greater than lo = {lo}")
    digits = check_int("digits", digits, 1, 1000)
    n_scan = check_int("n_scan", n_scan, 1, 10**7)

    def f64(x):
        try:
            with np.errstate(all="ignore"):
                return float(f(x))
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise _Failure(f"f raised {type(exc).__name__} at x = {x!r}: {exc}") from None

    try:
        grid = np.linspace(lo, hi, n_scan + 1)
        values = np.array([f64(x) for x in grid])
        bracket = None
        for i in range(n_scan):
            fa, fb = values[i], values[i + 1]
            if not (math.isfinite(fa) and math.isfinite(fb)):
                continue
            if fa == 0.0:
                bracket = (grid[i], grid[i])
                break
            if (fa > 0) != (fb > 0) and fb != 0.0:
                bracket = (grid[i], grid[i + 1])
                break
            if fb == 0.0:
                bracket = (grid[i + 1], grid[i + 1])
                break
        if bracket is None:
            finite = values[np.isfinite(values)]
            span = f"[{finite.min():.3g}, {finite.max():.3g}]" if finite.size else "no finite values"
            return Threshold(
                math.nan, None, "", math.nan, Status.NOT_FOUND,
                f"f does not change sign on a {n_scan}-interval scan of [{lo:g}, {hi:g}] (values {span})",
                None,
            )
        a64, b64 = float(bracket[0]), float(bracket[1])
        if a64 == b64:
            x64 = a64
        else:
            x64 = optimize.brentq(f64, a64, b64, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=200)
        slope64 = _slope64(f64, x64, a64, b64)
    except _Failure as failure:
        return Threshold(math.nan, None, "", math.nan, Status.FAILED, str(failure), None)

    if f_mp is None:
        # brentq stops within rtol = 4 eps of the root; rounding of f itself near the root moves the
        # zero by ~ eps |f scale| / |slope|, which the caller's f_error should carry when it matters.
        polish_error = 4 * np.finfo(float).eps * max(abs(x64), np.finfo(float).tiny)
        root_mp = mpmath.mpf(x64)
        slope = slope64
    else:
        # An exact zero on the grid has a degenerate bracket: polish within the neighbouring cells.
        spacing = (hi - lo) / n_scan
        p_lo, p_hi = (a64, b64) if a64 != b64 else (max(lo, x64 - spacing), min(hi, x64 + spacing))
        try:
            r1, w1, _ = _polish(f_mp, p_lo, p_hi, x64, digits + 10)
            r2, w2, s2 = _polish(f_mp, p_lo, p_hi, x64, digits + 20)
        except (ArithmeticError, ValueError, TypeError, ZeroDivisionError) as exc:
            # no error estimate, so no digit is supported (the one rule of numeric.digits): digits_string "",
            # digits 0; the float64 root stays in value
            return Threshold(
                x64, mpmath.mpf(x64), "", math.nan, Status.FAILED,
                # the exception's first line: mpmath's own advice after it ("tweak arguments") is not the caller's
                f"mpmath polish failed ({type(exc).__name__}: {str(exc).splitlines()[0]}); the float64 root is in "
                "value",
                (a64, b64), slope64,
            )
        with mpmath.workdps(digits + 20):
            polish_error = float(abs(r1 - r2) + w1 + w2)
        root_mp = r2
        slope = float(s2) if mpmath.isfinite(s2) else slope64

    fe = _f_error_at(f_error, x64)
    propagated = fe / abs(slope) if fe > 0 else 0.0
    if fe > 0 and not (math.isfinite(slope) and slope != 0.0):
        propagated = math.inf
    error = float(polish_error + propagated)
    n_digits = supported_digits(root_mp, error, digits)
    if n_digits >= digits:
        status, message = Status.CONVERGED, f"root located to {digits} significant digits (error {error:.3g})"
    else:
        status = Status.LIMITED
        source = "f_error / |slope|" if propagated >= polish_error else "float64 evaluation (give f_mp)"
        message = f"only {n_digits} of {digits} requested digits are supported (error {error:.3g}, limited by {source})"
    return Threshold(float(root_mp), root_mp, digit_string(root_mp, n_digits, digits), error, status, message,
                     (a64, b64), slope, n_digits)


def rounded_error(value_mp, error: float) -> float:
    """The error of float(value_mp): `error` (that of value_mp itself) plus the rounding to float64. A root polished
    to 30 digits and printed as a float carries the float's half-unit rounding, which its own error does not.
    A non-finite error is returned as it is (NaN: the error of a location that failed, inf: an unbounded one); a
    negative one, or one that is not a real number, raises ParameterError."""
    if isinstance(error, numbers.Real) and not isinstance(error, bool) and not math.isfinite(error):
        return error
    error = check_real("error", error, 0.0)
    if not isinstance(value_mp, mpmath.mpf):
        return float(error)
    with mpmath.workdps(30):  # the difference is rounded relative to itself, so 30 digits are plenty
        return float_at_least(error + abs(mpmath.mpf(float(value_mp)) - value_mp))


def branch_crossing(f1, f2, lo: float, hi: float, *, f1_mp=None, f2_mp=None, f_error=None, **kwargs) -> Threshold:
    """First crossing of two functions (e.g. the free energies of two branches): the sign change of
    f1 - f2 on [lo, hi]. mpmath polishing needs both f1_mp and f2_mp. `f_error` is the error of the
    difference (e.g. the sum of the two quadrature errors)."""
    f_mp = None
    if f1_mp is not None and f2_mp is not None:
        def f_mp(x):
            return f1_mp(x) - f2_mp(x)
    return find_crossing(lambda x: f1(x) - f2(x), lo, hi, f_mp=f_mp, f_error=f_error, **kwargs)


class _Failure(Exception):
    pass


def _slope64(f64, x, a, b) -> float:
    h = max(abs(x), 1.0) * 1e-6
    if b > a:
        h = min(h, (b - a) / 4) or h
    try:
        return (f64(x + h) - f64(x - h)) / (2 * h)
    except _Failure:
        return math.nan


# --- a crossing known to an error ----------------------------------------------------------------------
# A crossing function evaluated by a quadrature rule (or a fixed-point solve on one) is known only to that
# rule's error; the models locate such crossings on their own ladders of rules (numeric.convergence) and
# report them through `noisy_threshold`, whose `digits_string` keeps the digits the error supports.


def noisy_threshold(value: float, error: float, status: Status, message: str,
                    bracket: tuple[float, float] | None = None, slope: float = math.nan) -> Threshold:
    """A `Threshold` for a root known to `error` (no mpmath polish): digits_string keeps the significant
    digits the error supports (at most 15). The caller gives the status: for roots located on a ladder of rules,
    whose tolerance (not a number of digits) decides converged or limited, and for roots not found (value NaN).
    A root asked for to a number of digits is `threshold_from_error`'s."""
    if not (math.isfinite(value) and math.isfinite(error)):
        return Threshold(value, None, "", error, status, message, bracket, slope, 0)
    digits = supported_digits(value, error, 15)
    return Threshold(value, mpmath.mpf(value), digit_string(value, digits, 15), error, status, message, bracket, slope,
                     digits)


def threshold_from_error(root, error: float, digits: int, bracket, what: str, slope: float = math.nan) -> Threshold:
    """A Threshold for `root` with absolute `error`: as many of `digits` significant digits as the error supports,
    and the status from them (converged when all `digits` are supported, else limited); for roots polished to a
    requested number of digits (a ladder's root, whose status its tolerance decides, is `noisy_threshold`'s). root
    must be finite (a float or an mpmath number), error ≥ 0 or not finite (inf or NaN, the error of a location
    that has none: no digit supported, status limited), digits in [1, 1000]."""
    if isinstance(root, mpmath.mpf):  # an mpmath root may lie beyond float64's range and still be finite
        if not mpmath.isfinite(root):
            raise ParameterError("root", root, "a finite real number in (-inf, inf)")
    else:
        check_real("root", root)
    if not (isinstance(error, numbers.Real) and (math.isnan(error) or error == math.inf)):
        check_real("error", error, 0.0)
    digits = check_int("digits", digits, 1, 1000)
    n_digits = supported_digits(root, error, digits)
    if n_digits >= digits:
        status, message = Status.CONVERGED, f"{what} located to {digits} significant digits (error {error:.3g})"
    else:
        status = Status.LIMITED
        message = f"{what}: only {n_digits} of {digits} requested digits are supported (error {error:.3g})"
    return Threshold(float(root), root, digit_string(root, n_digits, digits), float(error), status, message, bracket,
                     slope, n_digits)


def root_steps(evaluate, start: float, step_tol: float, *, slope: float | None = None, known=(),
               max_steps: int = 6, halvings: int = 0) -> tuple[list, str | None]:
    """Newton steps towards a root of a function known only at the points it is evaluated (e.g. on a quadrature
    rule, each value a fixed-point solve), or secant steps where it has no exact slope.

    evaluate(x) -> (value, slope) with the exact slope there, or (value, None) for the secant through the last two
    points (`slope` at the first, when `known` holds no earlier point); or a text saying why there is no value at x.
    From `start`, one step per evaluation, until a step is ≤ step_tol or after `max_steps` steps. A step whose end
    has no value is halved, back towards the last point, up to `halvings` times (a step from a start far from the
    root can overshoot into a range where the function has no value, e.g. where a solve started from the last
    point does not converge). Returns the points (x, value, slope), `known` ones first (the root of the last,
    x − value/slope, is the next estimate), and the text of the evaluation that failed (else None; the points are
    then those before it)."""
    points, x = list(known), start
    halvings = check_int("halvings", halvings, 0, None)
    for _ in range(check_int("max_steps", max_steps, 1, None)):
        found = evaluate(x)
        for _ in range(halvings if points else 0):
            if not isinstance(found, str):
                break
            x = 0.5 * (x + points[-1][0])
            found = evaluate(x)
        if isinstance(found, str):
            return points, found
        value, exact = found
        if exact is not None:
            slope = exact
        elif points:
            slope = (value - points[-1][1]) / (x - points[-1][0])
        points.append((x, value, slope))
        step = -value / slope
        if abs(step) <= step_tol:
            break
        x = x + step
    return points, None


# --- counts, windows and coexistence (landscapes with several minima) --------------------------------
def log_crossing(f, f_mp, lo: float, hi: float, *, digits: int, values=None, n_grid: int = 1201) -> Threshold:
    """First root of f(x) for x in [lo, hi] > 0 searched in ln x (the control spans many decades).

    The result is `find_crossing`'s in s = ln x (value, value_mp and error are of ln x; the relative error of
    x is `error`). f and f_mp take x (float64 and mpmath). `values(s_grid)`, when given, evaluates f on the
    whole n_grid-point scan grid of ln x at once (vectorised) and only the bracketing cell is handed on;
    otherwise the scan is 400 scalar evaluations.
    """
    lo_s, hi_s = math.log(lo), math.log(hi)
    if values is not None:
        grid = np.linspace(lo_s, hi_s, n_grid)
        v = values(grid)
        change = np.nonzero(np.sign(v[:-1]) != np.sign(v[1:]))[0]
        if len(change):
            lo_s, hi_s = grid[change[0]], grid[change[0] + 1]
    return find_crossing(lambda s: f(math.exp(s)), lo_s, hi_s, digits=digits + 2,
                         f_mp=lambda s: f_mp(mpmath.exp(s)), n_scan=4 if values is not None else 400)


def bisect_geometric(holds, inside: float, outside: float, *, iterations: int = 60,
                     rtol: float | None = None) -> Threshold:
    """Where a property of a positive control stops holding, by bisection at the geometric midpoint.

    holds(inside) is True and holds(outside) False (either order on the axis). After each step the pair
    moves to the midpoint on its side; the loop ends after `iterations` steps or when the pair is within
    `rtol` relative. bracket: (last point where it holds, first point where it does not), in that order;
    value: their geometric mean; error: the bracket width. inside and outside must be finite and positive (the
    midpoint is geometric), iterations ≥ 0, rtol (when given) > 0.
    """
    inside = check_positive("inside", inside)
    outside = check_positive("outside", outside)
    iterations = check_int("iterations", iterations, 0, None)
    if rtol is not None:
        rtol = check_positive("rtol", rtol)
    steps = 0
    for steps in range(1, iterations + 1):
        mid = math.sqrt(inside) * math.sqrt(outside)  # not sqrt(inside·outside), which overflows for 1e300 and 1e200
        if holds(mid):
            inside = mid
        else:
            outside = mid
        if rtol is not None and max(inside, outside) / min(inside, outside) - 1 < rtol:
            break
    return Threshold(math.sqrt(inside) * math.sqrt(outside), None, "", abs(outside - inside), Status.CONVERGED,
                     f"property holds up to {inside:.10g}, not at {outside:.10g} ({steps} bisection steps)",
                     (inside, outside))


def window_and_coexistence(scan, count, depth_difference, *, refine_iterations: int = 10,
                           xtol_relative: float = 1e-8) -> Threshold:
    """The window of a control where two minima coexist, and the coexistence point inside it.

    scan: (x, number of minima) in increasing x > 0, at least one point with two or more; count(x): the
    number of minima at x; depth_difference(x): depth of the upper minimum minus the lower one (NaN with
    fewer than two). Each window end is refined by `refine_iterations` geometric bisections on "two or more
    minima" between the last scan point inside and the first outside (an end at the scan's edge stays
    there); the coexistence point is the root of depth_difference in the window (brentq to xtol_relative of
    the upper end). bracket: the window ends; value: the coexistence point, NaN with status not_found when
    the depth difference does not change sign over the window.
    """
    from scipy.optimize import brentq

    xs = [x for x, _ in scan]
    two = [i for i, (_, k) in enumerate(scan) if k >= 2]
    if not two:
        raise ParameterError("scan", "no point with two minima", "at least one scan point with two or more minima")

    def end(i_inside, i_outside):
        if not 0 <= i_outside < len(scan):
            return xs[i_inside]
        return bisect_geometric(lambda x: count(x) >= 2, xs[i_inside], xs[i_outside],
                                iterations=refine_iterations).bracket[0]

    lo, hi = end(two[0], two[0] - 1), end(two[-1], two[-1] + 1)
    d_lo, d_hi = depth_difference(lo), depth_difference(hi)
    if not d_lo * d_hi < 0:
        return Threshold(math.nan, None, "", math.nan, Status.NOT_FOUND,
                         f"two minima for x in [{lo:.6g}, {hi:.6g}], but their depth difference does not change sign "
                         "there", (lo, hi))
    xtol = xtol_relative * hi
    root = brentq(depth_difference, lo, hi, xtol=xtol)
    return Threshold(root, None, "", xtol, Status.CONVERGED,
                     f"two minima for x in [{lo:.6g}, {hi:.6g}], equally deep at {root:.10g}", (lo, hi))
