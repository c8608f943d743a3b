"""One precision policy for mpmath polishing, and numerics that stay exact in either arithmetic.

* `working_dps`: the decimal places a polish runs at: the digits asked for, a fixed guard, and the digits a
  computation is known to cancel (a difference of two actions of size ~L³ loses 3·log10 L digits). Every
  threshold polish calls this one function instead of writing its own formula.
* `to_mp`: float64 inputs of an mpmath evaluation, converted exactly (mpf of a float is exact at any dps).
* `agreed_evaluation`: an mpmath evaluation at doubling places until two agree, for expressions whose cancellation
  is not known in advance.
* Scale-free smallest curvatures of symmetric matrices, in float64 (stacked) and in mpmath: a sign change of
  the smallest eigenvalue marks an instability, and curvatures that span many decades (σ² → 0 makes some
  ~1e300) must neither overflow nor lose the small one to rounding.
* `larger_quadratic_root`: the larger root of a₂x² + a₁x + a₀ without the cancellation of the textbook
  formula.
* `propagated_errors`, `float_error`, `as_float_with_error`, `float_at_least`: the error of a quantity evaluated at a point known to
  per-coordinate errors (the moves over them plus the evaluation's rounding), and of its float64 value (its
  distance from the accurate value, rounded up): every numeric field of a result carries such an error.
* `equilibration`, `equilibrated_solve`, `equilibrated_null_vector`, `equilibrated_determinant_sign`: exact
  power-of-two row and column scalings that bring every row and column of a matrix to unit size, so that linear
  algebra on curvatures many decades apart neither overflows nor loses the small ones to the rounding of the large
  ones.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import check_real

__all__ = ["GUARD_DIGITS", "DERIVED_ROUNDING", "working_dps", "to_mp", "agreed_evaluation", "polished_stationary_point",
           "newton_steps_mp",
           "scaled_lowest_curvature_2x2", "normalised_min_eigenvalue",
           "normalised_min_eigenvalue_mp", "larger_quadratic_root", "larger_quadratic_root_mp", "equilibration",
           "equilibrated_solve", "equilibrated_null_vector", "equilibrated_determinant_sign", "propagated_errors",
           "float_error", "as_float_with_error", "float_at_least"]

GUARD_DIGITS = 15
"""Decimal places kept beyond the requested digits: room for the rounding of a long evaluation chain."""

DERIVED_ROUNDING = 4 * float(np.finfo(float).eps)
"""Relative rounding of the few float64 operations that turn a polished state into a reported quantity (each within
half an ulp): the part of that quantity's error the polish does not see."""


def working_dps(digits: int, lost_digits: float = 0.0) -> int:
    """Working precision (decimal places) for a result to `digits` significant digits when the computation
    cancels about `lost_digits` digits (e.g. 2·log10 L for a difference of two actions of size L ln²L)."""
    return digits + GUARD_DIGITS + int(lost_digits)


def to_mp(values) -> list:
    """The values as mpmath numbers (mpf values pass through; floats convert exactly)."""
    return [v if isinstance(v, mpmath.mpf) else mpmath.mpf(v) for v in values]


def agreed_evaluation(evaluate, agreement: float, max_dps: int, start_dps: int = 30) -> list:
    """evaluate() -> a sequence of mpmath numbers, run at start_dps places and then twice as many each time until two
    evaluations agree to `agreement` relative (and 1e-300 absolute) in every value, or max_dps is reached: the last
    evaluation's values. For expressions whose cancellation is not known in advance, where `working_dps` cannot be
    told the digits lost. A value that is exactly 0 at both places must be 0 at twice as many again: a cancellation
    below the places gives 0 wherever they do not resolve it ((e^200 + 1) − e^200 is 0 at 30 and 60 places, 1 from
    120), so two zeros alone do not agree; one deeper than that is still read as 0."""
    dps, previous, zeros_to_confirm = start_dps, None, False
    while True:
        with mpmath.workdps(dps):
            current = list(evaluate())
            tiny = mpmath.mpf(10) ** -300
            agreed = previous is not None and all(abs(a - b) <= agreement * abs(b) + tiny
                                                  for a, b in zip(previous, current))
        zeros = agreed and any(a == 0 and b == 0 for a, b in zip(previous, current))
        if (agreed and (not zeros or zeros_to_confirm)) or dps >= max_dps:
            return current
        zeros_to_confirm = zeros
        previous, dps = current, 2 * dps


def polished_stationary_point(gradient_mp, hessian_mp, x, *args, dps: int = 30, steps: int = 4):
    """Newton's method in mpmath from a float64 stationary point `x` (gradient_mp(*x, *args) and hessian_mp(*x,
    *args) its gradient and Hessian kernels): (the point rounded to float64, the error of each coordinate: the last
    Newton step plus the float's rounding, rounded up). From a float64 minimiser the steps shrink quadratically, so the
    last one is far below the float's rounding; where the Hessian is (nearly) singular they do not shrink, and the
    error says so. A Hessian singular at `dps` digits (curvatures 1e34 apart at σ² = e^-77) is retried at twice and
    four times the digits; infinite errors where it stays singular."""
    for digits in (dps, 2 * dps, 4 * dps):
        polished = _newton_mp(gradient_mp, hessian_mp, x, args, digits, steps)
        if polished is not None:
            return polished
    return np.asarray(x, dtype=float), np.full(np.size(x), np.inf)


def _newton_mp(gradient_mp, hessian_mp, x, args, dps: int, steps: int):
    """`polished_stationary_point` at `dps` digits; None where the Hessian is singular at that precision."""
    with mpmath.workdps(dps):
        found = newton_steps_mp(gradient_mp, hessian_mp, x, args, steps)
        if found is None:
            return None
        point, step = found
        rounded = np.array([float(p) for p in point])
        totals = [abs(d) + abs(mpmath.mpf(r) - p) for d, r, p in zip(step, rounded, point)]
        error = np.array([float_at_least(t) for t in totals])
    return rounded, error


def newton_steps_mp(gradient_mp, hessian_mp, x, args, steps: int):
    """`steps` Newton steps in mpmath, at the current mp.dps, from the float64 point `x` on ∇S = 0 (gradient_mp(*x,
    *args), hessian_mp(*x, *args)): (the point as mpf numbers, the last step), or None where the Hessian is singular
    at this precision. For callers that need the point itself beyond float64 (a function of it evaluated in mpmath);
    `polished_stationary_point` rounds it, with its error."""
    point = to_mp(np.atleast_1d(np.asarray(x, dtype=float)))
    step = [mpmath.inf] * len(point)
    for _ in range(steps):
        gradient = mpmath.matrix(np.atleast_1d(gradient_mp(*point, *args)).tolist())
        hessian = mpmath.matrix(np.atleast_2d(hessian_mp(*point, *args)).tolist())
        # scaled to unit diagonal: mpmath judges singularity relative to the largest entry, and curvatures 1e124
        # apart (σ² = e^-77) would be singular at any precision
        scale = [1 / mpmath.sqrt(abs(hessian[i, i])) if hessian[i, i] != 0 else 1 for i in range(len(point))]
        scaled = mpmath.matrix([[scale[i] * hessian[i, j] * scale[j] for j in range(len(point))]
                                for i in range(len(point))])
        scaled_gradient = mpmath.matrix([scale[i] * gradient[i] for i in range(len(point))])
        try:
            scaled_step = mpmath.lu_solve(scaled, -scaled_gradient)
        except ZeroDivisionError:  # singular at this precision
            return None
        step = [scale[i] * scaled_step[i] for i in range(len(point))]
        point = [p + d for p, d in zip(point, step)]
    return point, step


def scaled_lowest_curvature_2x2(a, b, d, sqrt=np.sqrt):
    """λ_min/(|a| + |d|) of [[a, b], [b, d]] normalised by |a| + |b| + |d|: the sign of the smallest eigenvalue,
    scale-free, so that it changes sign exactly where the matrix turns indefinite.

    Written as det/λ_max after normalising: the difference form λ_max/2 − √(...) loses every
    digit of a small curvature next to a large one, and squares of curvatures ~1e300 overflow. Works on
    numpy arrays (elementwise) and on mpmath numbers (`sqrt=mpmath.sqrt`).
    """
    size = abs(a) + abs(b) + abs(d)
    a, b, d = a / size, b / size, d / size
    lam_max = (a + d) / 2 + sqrt(((a - d) / 2) ** 2 + b * b)
    return (a * d - b * b) / (lam_max * (abs(a) + abs(d)))


def normalised_min_eigenvalue(K: np.ndarray) -> np.ndarray:
    """Smallest eigenvalue of D^{-1/2} K D^{-1/2}, D = diag|K|, for a stack (..., n, n) of symmetric matrices:
    the same inertia as K (Sylvester), scale-free."""
    d = np.sqrt(np.abs(np.diagonal(K, axis1=-2, axis2=-1)))
    return np.linalg.eigvalsh(K / (d[..., :, None] * d[..., None, :]))[..., 0]


def normalised_min_eigenvalue_mp(K) -> mpmath.mpf:
    """`normalised_min_eigenvalue` of one symmetric matrix of mpmath numbers (an mpmath matrix or an object
    array) at the working precision."""
    size = len(K)
    d = [mpmath.sqrt(abs(K[i, i])) for i in range(size)]
    normalised = mpmath.matrix(size, size)
    for i in range(size):
        for j in range(size):
            normalised[i, j] = K[i, j] / (d[i] * d[j])
    return min(mpmath.eigsy(normalised)[0])


def larger_quadratic_root(a2, a1, a0):
    """The larger root of a₂x² + a₁x + a₀ (a₂ > 0, real roots), elementwise over arrays: with b = a₁/a₂ and
    c = a₀/a₂, 2|c|/(b + √(b² − 4c)) when b > 0 (the difference form would cancel), (√(b² − 4c) − b)/2 else.
    A NaN coefficient, an a₂ that is not > 0, or a negative discriminant (no real root) raises ParameterError;
    infinite a₁ or a₀ (float64 overflow) go through."""
    _check_quadratic(a2, a1, a0)
    b, c0 = a1 / a2, a0 / a2
    root = np.sqrt(b * b - 4 * c0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, -2 * c0 / (b + root), (root - b) / 2)


def _check_quadratic(a2, a1, a0) -> None:
    """ParameterError for the first element of the coefficients outside `larger_quadratic_root`'s domain."""
    a2_, a1_, a0_ = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (a2, a1, a0)))
    for name, values in (("a2", a2_), ("a1", a1_), ("a0", a0_)):
        if np.any(np.isnan(values)):
            check_real(name, float(values[np.isnan(values)][0]))
    if not np.all(a2_ > 0):
        check_real("a2", float(a2_[~(a2_ > 0)][0]), 0.0, None, low_open=True)
    with np.errstate(all="ignore"):
        b = a1_ / a2_
        negative = b * b - 4 * (a0_ / a2_) < 0  # the discriminant the root is taken of
    if np.any(negative):
        at = np.argmax(negative.ravel())
        bound = b.ravel()[at] ** 2 / 4 * a2_.ravel()[at]
        raise ParameterError("a0", float(a0_.ravel()[at]), f"at most a1²/(4·a2) = {bound:g} (real roots)")


def larger_quadratic_root_mp(a2, a1, a0) -> mpmath.mpf:
    """`larger_quadratic_root` for mpmath numbers at the working precision."""
    b, c0 = a1 / a2, a0 / a2
    root = mpmath.sqrt(b * b - 4 * c0)
    return -2 * c0 / (b + root) if b > 0 else (root - b) / 2


def equilibration(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer exponents (r, s) such that every row and column of M_ij 2^(r_i + s_j) has its largest magnitude
    within a factor 4 of one (rows or columns of zeros get exponent 0; a matrix with non-finite entries gets no
    scaling).

    Ruiz's iteration (each pass divides every row and every column by the square root of its largest magnitude), run
    on log₂|M| so that entries ~1e±300 neither overflow nor underflow, and rounded to powers of two, which scale
    exactly: the scaled matrix has the same null space, solutions (up to the column scaling) and determinant sign.
    A symmetric M gets r = s.
    """
    M = np.asarray(M, dtype=float)
    rows, columns = np.zeros(M.shape[0]), np.zeros(M.shape[1])
    if not np.all(np.isfinite(M)):
        return rows.astype(int), columns.astype(int)
    with np.errstate(divide="ignore"):
        logs = np.log2(np.abs(M))  # -inf for zeros: they never set a row's or column's size
    for _ in range(64):  # each pass halves log₂ of every row's and column's size: ~12 passes span all of float64
        scaled = logs + rows[:, None] + columns[None, :]
        row_size, column_size = scaled.max(axis=1), scaled.max(axis=0)
        row_size[~np.isfinite(row_size)] = 0.0
        column_size[~np.isfinite(column_size)] = 0.0
        if max(np.max(np.abs(row_size)), np.max(np.abs(column_size))) <= 1.0:
            break
        rows -= row_size / 2
        columns -= column_size / 2
    return np.rint(rows).astype(int), np.rint(columns).astype(int)


def equilibrated_solve(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """M⁻¹b solved on the equilibrated M (`equilibration`): rows whose entries are ~1e300 then do not drown the
    others in their rounding, as they do in LU with partial pivoting on M itself. Raises numpy's LinAlgError where
    the equilibrated M is singular."""
    r, s = equilibration(M)
    scaled = np.ldexp(np.asarray(M, dtype=float), r[:, None] + s[None, :])
    return np.ldexp(np.linalg.solve(scaled, np.ldexp(np.asarray(b, dtype=float), r)), s)


def equilibrated_null_vector(A: np.ndarray) -> np.ndarray:
    """The unit null vector of an n × (n+1) matrix A (its sign as the SVD returns it), from the SVD of the equilibrated
    A mapped back through the column scaling. An SVD of A itself resolves the components only to ε times its largest
    entry: next to a curvature ~1e300 the others would be rounding noise."""
    r, s = equilibration(A)
    t = np.ldexp(np.linalg.svd(np.ldexp(np.asarray(A, dtype=float), r[:, None] + s[None, :]))[2][-1], s)
    t = t / np.max(np.abs(t))  # before the norm, whose squares could overflow
    return t / np.linalg.norm(t)


def equilibrated_determinant_sign(M: np.ndarray) -> float:
    """The sign of det M (1, -1, or 0 where singular), on the equilibrated M: the determinant of M itself overflows
    with entries ~1e300."""
    r, s = equilibration(M)
    return float(np.linalg.slogdet(np.ldexp(np.asarray(M, dtype=float), r[:, None] + s[None, :]))[0])


def float_error(value: float, exact, error) -> float:
    """The error of the float64 `value` of a quantity whose accurate value is `exact` within `error` (mpmath numbers):
    their difference plus that error, rounded up; NaN where the float64 value is not finite."""
    if not math.isfinite(value):
        return math.nan
    with mpmath.workdps(max(mpmath.mp.dps, 30) + 20):
        return float_at_least(abs(mpmath.mpf(value) - exact) + error)


def float_at_least(bound) -> float:
    """The float64 nearest a bound (an mpmath or Python number) at or above it: float() rounds to nearest, which can
    lie below, and a bound rounded down is no longer a bound."""
    rounded = float(bound)
    return rounded if rounded >= bound else math.nextafter(rounded, math.inf)


def propagated_errors(quantities, point: list, errors: list, dps: int) -> list:
    """[(value, error)] of each of quantities(point) (mpmath numbers): the value at dps + 20 digits; the error, how far
    the coordinates' errors move it (Σ_i max± |f(p ± δ_i e_i) − f(p)|: the first-order sensitivity times the error,
    with the higher orders along each coordinate) plus the evaluation's rounding (the difference between dps and
    dps + 20 digits); infinite where a coordinate's error is."""
    with mpmath.workdps(dps + 20):
        exact = quantities(point)
    with mpmath.workdps(dps):
        base = quantities(point)
        bounds = [abs(b - e) for b, e in zip(base, exact)]
        for i, delta in enumerate(errors):
            if not mpmath.isfinite(delta):
                bounds = [mpmath.inf] * len(bounds)
                break
            if delta == 0:
                continue
            moved = [quantities([*point[:i], point[i] + sign * delta, *point[i + 1:]]) for sign in (1, -1)]
            bounds = [bound + max(abs(up - b), abs(down - b)) for bound, up, down, b in zip(bounds, *moved, base)]
    return list(zip(exact, bounds))


def as_float_with_error(value, error) -> tuple[float, float]:
    """(value as a float64, its error): the error plus the float's own rounding, rounded up (`float_error`)."""
    rounded = float(value)
    return rounded, float_error(rounded, value, error)
