"""One precision policy for mpmath polishing, and numerics that stay exact in either arithmetic.

* `working_dps`: the decimal places a polish runs at: the digits asked for, a fixed guard, and the digits a
  computation is known to cancel (a difference of two actions of size ~L³ loses 3·log10 L digits). Every
  threshold polish calls this one function instead of writing its own formula.
* `to_mp`: float64 inputs of an mpmath evaluation, converted exactly (mpf of a float is exact at any dps).
* Scale-free smallest curvatures of symmetric matrices, in float64 (stacked) and in mpmath: a sign change of
  the smallest eigenvalue marks an instability, and curvatures that span many decades (σ² → 0 makes some
  ~1e300) must neither overflow nor lose the small one to rounding.
* `larger_quadratic_root`: the larger root of a₂x² + a₁x + a₀ without the cancellation of the textbook
  formula.
"""

from __future__ import annotations

import mpmath
import numpy as np

__all__ = ["GUARD_DIGITS", "working_dps", "to_mp", "scaled_lowest_curvature_2x2", "normalised_min_eigenvalue",
           "normalised_min_eigenvalue_mp", "larger_quadratic_root", "larger_quadratic_root_mp"]

GUARD_DIGITS = 15
"""Decimal places kept beyond the requested digits: room for the rounding of a long evaluation chain."""


def working_dps(digits: int, lost_digits: float = 0.0) -> int:
    """Working precision (decimal places) for a result to `digits` significant digits when the computation
    cancels about `lost_digits` digits (e.g. 2·log10 L for a difference of two actions of size L ln²L)."""
    return digits + GUARD_DIGITS + int(lost_digits)


def to_mp(values) -> list:
    """The values as mpmath numbers (mpf values pass through; floats convert exactly)."""
    return [v if isinstance(v, mpmath.mpf) else mpmath.mpf(v) for v in values]


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
    c = a₀/a₂, 2|c|/(b + √(b² − 4c)) when b > 0 (the difference form would cancel), (√(b² − 4c) − b)/2 else."""
    b, c0 = a1 / a2, a0 / a2
    root = np.sqrt(b * b - 4 * c0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, -2 * c0 / (b + root), (root - b) / 2)


def larger_quadratic_root_mp(a2, a1, a0) -> mpmath.mpf:
    """`larger_quadratic_root` for mpmath numbers at the working precision."""
    b, c0 = a1 / a2, a0 / a2
    root = mpmath.sqrt(b * b - 4 * c0)
    return -2 * c0 / (b + root) if b > 0 else (root - b) / 2
