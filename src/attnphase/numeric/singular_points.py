"""Folds (saddle-nodes) and branch points of followed stationary branches, located by Newton's method on
regular extended systems, in float64 and polished in mpmath (numeric.continuation finds them along a
branch; these locate them to the requested digits).

The same Newton iteration serves both precisions (`_Arithmetic`); the error of a polished value is the
difference of two polishes at different working precisions plus the last Newton step
(numeric.threshold.threshold_from_error turns it into the digits it supports).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from attnphase.numeric.threshold import Threshold, threshold_from_error
from attnphase.params import check_int
from attnphase.results import Status

__all__ = ["solve_fold", "fold_threshold", "solve_branch_point", "branch_point_threshold"]


class _Arithmetic:
    """float64 (dps None) or mpmath at dps decimal places: the few operations the fold and branch-point
    Newton iterations need, so that one algorithm serves both precisions."""

    def __init__(self, dps: int | None):
        self.dps = dps
        self.eps = np.finfo(float).eps if dps is None else mpmath.mpf(10) ** (-dps)
        self.number = float if dps is None else mpmath.mpf

    def det(self, H):
        return np.linalg.det(np.asarray(H, dtype=float)) if self.dps is None else mpmath.det(mpmath.matrix(H))

    def solve(self, A, b):
        if self.dps is None:
            return list(np.linalg.solve(np.asarray(A, dtype=float), np.asarray(b, dtype=float)))
        return list(mpmath.lu_solve(mpmath.matrix(A), mpmath.matrix(b)))

    def root(self, value, k: int):
        return value ** (self.number(1) / k)


def _newton(E, y0, arithmetic: _Arithmetic, max_iter: int, what: str):
    """Newton's method on E(y) = 0 (as many equations as unknowns) with a central-difference Jacobian of
    step h = u^{1/3} max(1, |y_j|) (u the unit roundoff): its O(h²) error makes Newton converge linearly
    with rate O(u^{2/3}), full precision in a few steps. Stops when the step is below 10 u (relative),
    or below √u and no longer halving (the rounding floor of E). Returns (y, size of the last step)."""
    y = [arithmetic.number(v) for v in y0]
    tol = 10 * arithmetic.eps
    step = previous = math.inf
    for _ in range(max_iter):
        residual = E(y)
        columns = []
        for j in range(len(y)):
            h = arithmetic.root(arithmetic.eps, 3) * max(1, abs(y[j]))
            up, down = list(y), list(y)
            up[j] += h
            down[j] -= h
            columns.append([(a - b) / (2 * h) for a, b in zip(E(up), E(down))])
        jacobian = [[columns[j][i] for j in range(len(y))] for i in range(len(residual))]
        delta = arithmetic.solve(jacobian, [-r for r in residual])
        y = [a + b for a, b in zip(y, delta)]
        step = max(abs(t) for t in delta)
        if not (step == step and abs(step) != math.inf):  # NaN or inf: left the domain
            raise ArithmeticError(f"Newton on the {what} system left the finite numbers")
        scale = max(1, max(abs(t) for t in y))
        if step <= tol * scale or (step <= arithmetic.root(tol, 2) * scale and step >= previous / 2):
            return y, step
        previous = step
    raise ArithmeticError(f"Newton on the {what} system did not converge in {max_iter} steps (last step {step})")


def solve_fold(gradient, hessian, x0, c0, *, dps: int | None = None, max_iter: int = 60):
    """A fold (saddle-node) of the stationary points ∇S(x, c) = 0 near (x0, c0), by Newton's method on
    the extended system (∇S, det ∇²S) = 0 in (x, c), which is regular at a quadratic fold.

    gradient(x, c) -> n values and hessian(x, c) -> n × n values, in float64 (`dps=None`: numpy arrays)
    or in mpmath at `dps` decimal places (they then take and return mpf). Returns (x, c, size of the
    last Newton step: the error of the last iterate is at most about that); raises ArithmeticError
    when Newton does not converge.
    """
    arithmetic = _Arithmetic(dps)
    with mpmath.workdps(dps or 15):
        def E(y):
            return [*gradient(y[:-1], y[-1]), arithmetic.det(hessian(y[:-1], y[-1]))]

        y, step = _newton(E, [*np.ravel(x0), c0], arithmetic, max_iter, "fold")
        return np.array(y[:-1], dtype=object if dps else float), y[-1], step


def solve_branch_point(gradient, hessian, x0, c0, *, dps: int | None = None, max_iter: int = 60):
    """A branch point of ∇S(x, c) = 0 near (x0, c0) (two branches crossing: transcritical or pitchfork),
    by Newton's method on Moore's regularised system in (x, c, v, μ),

        ∇S + μ v = 0,   ∇²S v = 0,   v·v = 1,   v·∂_c∇S = 0,

    which is regular at a simple branch point (where μ = 0), while any parametrisation of the branches
    themselves is singular there (Moore, SIAM J. Numer. Anal. 17, 567 (1980)). ∂_c∇S is a fourth-order
    central difference (step u^{1/5}, error O(u^{4/5})). Arguments and return as `solve_fold`.
    """
    arithmetic = _Arithmetic(dps)
    n = len(np.ravel(x0))
    with mpmath.workdps(dps or 15):
        def control_gradient(x, c):
            h = arithmetic.root(arithmetic.eps, 5) * max(1, abs(c))
            g1, g2 = gradient(x, c + h), gradient(x, c - h)
            g3, g4 = gradient(x, c + 2 * h), gradient(x, c - 2 * h)
            return [(8 * (a - b) - (p - q)) / (12 * h) for a, b, p, q in zip(g1, g2, g3, g4)]

        def E(y):
            x, c, v, mu = y[:n], y[n], y[n + 1: 2 * n + 1], y[-1]
            H = hessian(x, c)
            H = [[H[i, j] for j in range(n)] for i in range(n)]
            return ([g + mu * vi for g, vi in zip(gradient(x, c), v)]
                    + [sum(H[i][j] * v[j] for j in range(n)) for i in range(n)]
                    + [sum(vi * vi for vi in v) - 1, sum(vi * gc for vi, gc in zip(v, control_gradient(x, c)))])

        H0 = np.array(hessian(list(np.ravel(x0)), c0).tolist(), dtype=float).reshape(n, n)
        values, vectors = np.linalg.eigh(H0)
        v0 = vectors[:, int(np.argmin(np.abs(values)))]
        y, step = _newton(E, [*np.ravel(x0), c0, *v0, 0.0], arithmetic, max_iter, "branch-point")
        return np.array(y[:n], dtype=object if dps else float), y[n], step


def _singular_point_threshold(solver, what: str, offsets: tuple[int, int], gradient, hessian, x0, c0, gradient_mp,
                              hessian_mp, digits, bracket) -> Threshold:
    digits = check_int("digits", digits, 1, 1000)
    try:
        x64, c64, step64 = solver(gradient, hessian, x0, c0)
    except (ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
        return Threshold(math.nan, None, "", math.nan, Status.FAILED, f"{what} not located: {exc}", bracket)
    if gradient_mp is None or hessian_mp is None:
        error = float(step64) + 8 * np.finfo(float).eps * max(abs(c64), np.finfo(float).tiny)
        return threshold_from_error(mpmath.mpf(float(c64)), error, digits, bracket, f"{what} (float64)")
    try:
        _, c1, _ = solver(gradient_mp, hessian_mp, x64, c64, dps=digits + offsets[0])
        _, c2, step2 = solver(gradient_mp, hessian_mp, x64, c64, dps=digits + offsets[1])
    except (ArithmeticError, ValueError, ZeroDivisionError) as exc:
        return Threshold(float(c64), mpmath.mpf(float(c64)), "", math.nan, Status.FAILED,
                         f"mpmath polish of the {what} failed ({exc}); the float64 value is in value", bracket)
    with mpmath.workdps(digits + offsets[1]):
        error = float(abs(c1 - c2) + step2)
    return threshold_from_error(c2, error, digits, bracket, what)


def fold_threshold(gradient, hessian, x0, c0, *, gradient_mp=None, hessian_mp=None, digits: int = 15,
                   bracket: tuple[float, float] | None = None) -> Threshold:
    """The control value c of a fold (saddle-node) near (x0, c0), to `digits` significant digits.

    `solve_fold` in float64 from (x0, c0), then, when mpmath evaluations `gradient_mp` and `hessian_mp`
    are given, again at digits + 10 and digits + 20 decimal places; the error is the difference of the
    two polishes plus the last Newton step (without them: the float64 fold, at most ~15 digits, with
    its step and rounding as the error). bracket: the followed points around the fold, if known.
    """
    return _singular_point_threshold(solve_fold, "fold", (10, 20), gradient, hessian, x0, c0, gradient_mp,
                                     hessian_mp, digits, bracket)


def branch_point_threshold(gradient, hessian, x0, c0, *, gradient_mp=None, hessian_mp=None, digits: int = 15,
                           bracket: tuple[float, float] | None = None) -> Threshold:
    """The control value c of a branch point near (x0, c0) (`solve_branch_point`), polished like
    `fold_threshold` but at digits + 15 and digits + 25 places (the difference quotient for ∂_c∇S
    keeps about 4/5 of the working digits)."""
    return _singular_point_threshold(solve_branch_point, "branch point", (15, 25), gradient, hessian, x0, c0,
                                     gradient_mp, hessian_mp, digits, bracket)
