"""Fixed points x = F(x) of state-evolution / saddle-point maps, with their stability.

The solvers work in unconstrained coordinates u = T(x), one transform per coordinate: variances
live on (0, inf) and are iterated as log x (`Positive`), normalised overlaps live on (a, b) and are
iterated through an atanh-type map (`Interval`). The map in u-coordinates, G = T o F o T^-1, has the
same fixed points as F and, at a fixed point, a Jacobian similar to dF (DG = DT dF DT^-1), so the
spectrum is the same in both coordinate systems.

Methods:
* "damped": u <- damping u + (1 - damping) G(u). Robust, but it converges at the rate of the
  spectral radius of the damped map, which tends to 1 near a continuous transition.
* "anderson": type-II Anderson acceleration (Walker & Ni 2011) with mixing 1 - damping, a bounded
  history, column dropping when the least-squares problem becomes ill-conditioned, and a restart
  (plain damped step, history cleared) when a step increases the residual tenfold.
* "hybr": MINPACK's hybrid Powell method (`scipy.optimize.root`) on the residual G(u) - u.

Accelerated solvers converge just as happily to unstable fixed points, so every converged result
carries the spectrum of dF at the solution (finite differences in the original coordinates, or a
user-supplied Jacobian) and `stable` = spectral radius < 1.

Nothing leaks: non-finite values from F, an F(x) outside the domain of the transforms, exceptions in
F and non-convergence all end as a status with a message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from attnphase.errors import ParameterError
from attnphase.params import check_choice, check_int, check_positive, check_real

__all__ = [
    "Identity",
    "Positive",
    "Interval",
    "FixedPointResult",
    "solve_fixed_point",
    "map_jacobian",
]


# --------------------------------------------------------------------------------------------------
# Coordinate transforms


@dataclass(frozen=True)
class Identity:
    """x = u on the whole real line."""

    def to_unconstrained(self, x):
        return np.asarray(x, dtype=float)

    def from_unconstrained(self, u):
        return np.asarray(u, dtype=float)

    def contains(self, x) -> bool:
        return bool(np.isfinite(x))

    def describe(self) -> str:
        return "(-inf, inf)"


@dataclass(frozen=True)
class Positive:
    """x = exp(u) on (0, inf): for variances and other positive quantities."""

    def to_unconstrained(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(np.asarray(x, dtype=float))

    def from_unconstrained(self, u):
        with np.errstate(over="ignore"):
            return np.exp(np.asarray(u, dtype=float))

    def contains(self, x) -> bool:
        return bool(np.isfinite(x) and x > 0)

    def describe(self) -> str:
        return "(0, inf)"


@dataclass(frozen=True)
class Interval:
    """x = a + (b - a) (1 + tanh u) / 2 on the open interval (a, b): for overlaps and correlations."""

    low: float
    high: float

    def __post_init__(self):
        low = check_real("Interval.low", self.low)
        high = check_real("Interval.high", self.high)
        if not high > low:
            raise ParameterError("Interval.high", self.high, f"greater than low = {low}")

    def to_unconstrained(self, x):
        s = 2.0 * (np.asarray(x, dtype=float) - self.low) / (self.high - self.low) - 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.arctanh(s)

    def from_unconstrained(self, u):
        return self.low + (self.high - self.low) * 0.5 * (1.0 + np.tanh(np.asarray(u, dtype=float)))

    def contains(self, x) -> bool:
        return bool(np.isfinite(x) and self.low < x < self.high)

    def describe(self) -> str:
        return f"({self.low:g}, {self.high:g})"


# --------------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True)
class FixedPointResult:
    """Outcome of `solve_fixed_point`.

    value: the fixed point (float for a scalar x0, else an array of x0's shape); when not
        converged, the last point F was evaluated at (if finite).
    residual: max |F(x) - x| at `value` (original coordinates).
    iterations: solver iterations (hybr: function evaluations, MINPACK does not count iterations).
    evaluations: calls of F by the solver, not counting the Jacobian below.
    status: "converged" | "max_iter" | "diverged" (F returned NaN/inf or the iterate blew up) |
        "failed" (F raised, F(x) left the domain of the transforms, or the solver stalled).
    message: what happened, in words. success: status == "converged".
    jacobian: dF at the solution (n x n); jacobian_eigenvalues: its eigenvalues (complex),
        spectral_radius: max |eigenvalue|, stable: spectral_radius < 1. Not computed (empty / nan /
        False) when the solver did not converge or the Jacobian could not be evaluated.
    jacobian_evaluations: calls of F spent on the finite-difference Jacobian.
    error: estimated distance max |x - x*| to the exact fixed point of the exact map,
        ||(I - dF)^-1||_inf (residual + map_error + rounding of x) (the size of a Newton correction;
        large near a bifurcation where I - dF is nearly singular); nan without the Jacobian.
    """

    value: float | np.ndarray
    residual: float
    iterations: int
    evaluations: int
    status: str
    message: str
    success: bool
    jacobian_eigenvalues: np.ndarray
    spectral_radius: float
    stable: bool
    method: str = ""
    jacobian: np.ndarray = field(default_factory=lambda: np.empty((0, 0)), repr=False)
    jacobian_evaluations: int = 0
    error: float = math.nan


class _Stop(Exception):
    """Internal: abort the solver with a status and a message."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class _Problem:
    """F wrapped for the solvers: shape handling, evaluation counting, domain and finiteness checks."""

    def __init__(self, F, shape, transforms):
        self.F = F
        self.shape = shape
        self.transforms = transforms
        self.evaluations = 0
        self.last_x: np.ndarray | None = None  # the last point F was called at (for error reports)

    def call(self, x: np.ndarray) -> np.ndarray:
        """F(x) as a flat array; raises _Stop on exceptions, wrong shapes and non-finite values."""
        self.evaluations += 1
        self.last_x = x
        arg = float(x[0]) if self.shape == () else x.reshape(self.shape).copy()
        try:
            with np.errstate(all="ignore"):
                y = np.asarray(self.F(arg), dtype=float).ravel()
        except ParameterError:
            raise
        except Exception as exc:  # F is user code; its failure is a status, not a traceback
            raise _Stop("failed", f"F raised {type(exc).__name__}: {exc} at x = {x.tolist()}") from None
        if y.shape != x.shape:
            raise _Stop("failed", f"F returned {y.size} values for {x.size} coordinates")
        if not np.all(np.isfinite(y)):
            raise _Stop("diverged", f"F returned non-finite values at x = {x.tolist()}")
        return y

    def to_u(self, x: np.ndarray) -> np.ndarray:
        return np.array([t.to_unconstrained(xi) for t, xi in zip(self.transforms, x)], dtype=float)

    def to_x(self, u: np.ndarray) -> np.ndarray:
        return np.array([t.from_unconstrained(ui) for t, ui in zip(self.transforms, u)], dtype=float)

    def G(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x, F(x), T(F(x))) for x = T^-1(u)."""
        if not np.all(np.isfinite(u)):
            raise _Stop("diverged", f"the iterate became non-finite (unconstrained coordinates {u.tolist()})")
        x = self.to_x(u)
        y = self.call(x)
        for i, (t, yi) in enumerate(zip(self.transforms, y)):
            if not t.contains(yi):
                raise _Stop(
                    "failed",
                    f"F(x) left the domain: coordinate {i} = {yi:.6g} is outside {t.describe()} at x = {x.tolist()}",
                )
        return x, y, self.to_u(y)


# --------------------------------------------------------------------------------------------------
# Solvers


def _damped(problem: _Problem, u, damping, tol, max_iter):
    for it in range(1, max_iter + 1):
        x, y, gu = problem.G(u)
        residual = float(np.max(np.abs(y - x)))
        if residual <= tol:
            return x, residual, it, "converged", f"damped iteration converged in {it} iterations"
        u = damping * u + (1.0 - damping) * gu
    message = f"damped iteration: residual {residual:.3g} > tol after {max_iter} iterations"
    return x, residual, max_iter, "max_iter", message


def _anderson(problem: _Problem, u, damping, tol, max_iter, memory):
    """Type-II Anderson: u+ = u + b g - (dU + b dG) gamma, gamma = argmin |g - dG gamma|, g = G(u) - u."""
    beta = 1.0 - damping
    # More than n differences in n dimensions are linearly dependent; with n = 1 this is the secant
    # method.
    memory = min(memory, u.size)
    dU: list[np.ndarray] = []
    dG: list[np.ndarray] = []
    u_prev = g_prev = None
    best = math.inf
    for it in range(1, max_iter + 1):
        x, y, gu = problem.G(u)
        residual = float(np.max(np.abs(y - x)))
        if residual <= tol:
            return x, residual, it, "converged", f"Anderson converged in {it} iterations"
        g = gu - u
        if residual > 10.0 * best:
            # The extrapolation made things much worse: forget the history, take a damped step.
            dU.clear()
            dG.clear()
            u_prev = g_prev = None
        best = min(best, residual)
        if g_prev is not None:
            dU.append(u - u_prev)
            dG.append(g - g_prev)
            if len(dU) > memory:
                dU.pop(0)
                dG.pop(0)
        u_prev, g_prev = u, g
        step = beta * g
        while dG:
            G_mat = np.stack(dG, axis=1)
            gamma, _, _, singular = np.linalg.lstsq(G_mat, g, rcond=None)
            # Drop the oldest differences while they are nearly collinear (ill-conditioned LSQ).
            if len(dG) > 1 and singular[-1] <= 1e-10 * singular[0]:
                dU.pop(0)
                dG.pop(0)
                continue
            step = beta * g - (np.stack(dU, axis=1) + beta * G_mat) @ gamma
            break
        if not np.all(np.isfinite(step)):
            dU.clear()
            dG.clear()
            step = beta * g
        u = u + step
    return x, residual, max_iter, "max_iter", f"Anderson: residual {residual:.3g} > tol after {max_iter} iterations"


def _hybr(problem: _Problem, u0, tol, max_iter):
    def residual_u(u):
        return problem.G(u)[2] - u

    sol = optimize.root(residual_u, u0, method="hybr", options={"xtol": 1e-14, "maxfev": max_iter})
    # Re-evaluate at the returned point: MINPACK's last call need not be at its answer.
    x, y, _ = problem.G(np.asarray(sol.x, dtype=float))
    residual = float(np.max(np.abs(y - x)))
    nfev = int(sol.nfev) + 1
    if residual <= tol:
        return x, residual, nfev, "converged", f"hybr converged ({nfev} evaluations)"
    if sol.status == 2:
        message = f"hybr: residual {residual:.3g} > tol after maxfev={max_iter} evaluations"
        return x, residual, nfev, "max_iter", message
    return x, residual, nfev, "failed", f"hybr stopped with residual {residual:.3g} > tol: {sol.message}"


# --------------------------------------------------------------------------------------------------
# Jacobian


def map_jacobian(F, x, *, transforms=None, step: float | None = None) -> tuple[np.ndarray, int]:
    """dF/dx at x by finite differences in the original coordinates; returns (J, evaluations).

    Central differences (error O(h^2), h = eps^(1/3) max(1, |x_j|)) where x_j +- h stay in the domain
    of the transforms and F is finite there; otherwise the second-order one-sided stencil
    (-3 F(x) + 4 F(x + h) - F(x + 2h)) / 2h towards the side that works (e.g. a fixed point on the
    boundary of a domain, like m = 0 of a map that contains sqrt(m)). Raises _Stop if neither works.
    """
    x = np.asarray(x, dtype=float)
    shape = x.shape
    flat = x.ravel()
    n = flat.size
    transforms = transforms or [Identity()] * n
    problem = _Problem(F, shape, transforms)
    f0 = problem.call(flat)
    J = np.empty((n, n))
    for j in range(n):
        h = step if step is not None else np.finfo(float).eps ** (1 / 3) * max(1.0, abs(flat[j]))

        def at(offset, j=j):
            xs = flat.copy()
            xs[j] += offset
            if not transforms[j].contains(xs[j]) and not isinstance(transforms[j], Identity):
                return None
            try:
                return problem.call(xs)
            except _Stop:
                return None

        plus, minus = at(h), at(-h)
        if plus is not None and minus is not None:
            J[:, j] = (plus - minus) / (2 * h)
            continue
        for sign, first in ((1.0, plus), (-1.0, minus)):
            if first is None:
                continue
            second = at(2 * sign * h)
            if second is not None:
                J[:, j] = sign * (-3 * f0 + 4 * first - second) / (2 * h)
                break
        else:
            raise _Stop("failed", f"no finite-difference stencil for coordinate {j} stays where F is finite")
    return J, problem.evaluations


# --------------------------------------------------------------------------------------------------
# Entry point

_DEFAULT_MAX_ITER = {"damped": 100_000, "anderson": 1_000, "hybr": None}


def solve_fixed_point(
    F,
    x0,
    *,
    transforms=None,
    method: str = "hybr",
    damping: float = 0.5,
    tol: float = 1e-10,
    max_iter: int | None = None,
    memory: int = 6,
    jacobian=None,
    spectrum: bool = True,
    map_error: float = 0.0,
) -> FixedPointResult:
    """Solve x = F(x) starting from x0.

    F: callable taking x (a float when x0 is a scalar, else an array of x0's shape) and returning
        F(x) of the same shape.
    transforms: one of Identity() / Positive() / Interval(a, b) per coordinate (default Identity);
        x0 must lie inside their domains.
    method: "hybr" (default), "anderson" or "damped".
    damping: weight of the old iterate, in [0, 1): damped iteration u <- damping u + (1-damping) G(u);
        Anderson uses the mixing 1 - damping; ignored by hybr.
    tol: convergence when max |F(x) - x| <= tol in the original coordinates.
    max_iter: iterations (damped, anderson) or function evaluations (hybr; default 200 (n + 1)).
    memory: Anderson history length (at most the number of coordinates is used).
    jacobian: optional callable x -> dF/dx (n x n) used for the spectrum instead of finite differences.
    spectrum: compute the Jacobian spectrum at a converged solution (default True).
    map_error: absolute error of the evaluation of F (e.g. a quadrature error estimate); it enters
        the `error` of the result as ||(I - dF)^-1|| (residual + map_error + rounding).
    """
    method = check_choice("method", method, ("hybr", "anderson", "damped"))
    damping = check_real("damping", damping, 0.0, 1.0, high_open=True)
    tol = check_positive("tol", tol)
    memory = check_int("memory", memory, 1, 100)
    map_error = check_real("map_error", map_error, 0.0, None)
    x0_arr = np.asarray(x0, dtype=float)
    shape = x0_arr.shape
    flat0 = x0_arr.ravel().copy()
    n = flat0.size
    if n == 0 or not np.all(np.isfinite(flat0)):
        raise ParameterError("x0", x0, "a non-empty array of finite numbers")
    if transforms is None:
        transforms = [Identity()] * n
    else:
        transforms = list(transforms) if isinstance(transforms, (list, tuple)) else [transforms] * n
        if len(transforms) != n or not all(isinstance(t, (Identity, Positive, Interval)) for t in transforms):
            raise ParameterError("transforms", transforms, f"{n} of Identity(), Positive(), Interval(a, b)")
    for i, (t, xi) in enumerate(zip(transforms, flat0)):
        if not t.contains(xi):
            raise ParameterError("x0", x0, f"coordinate {i} inside {t.describe()}")
    if max_iter is None:
        max_iter = _DEFAULT_MAX_ITER[method] or 200 * (n + 1)
    max_iter = check_int("max_iter", max_iter, 1, None)

    problem = _Problem(F, shape, transforms)
    u0 = problem.to_u(flat0)
    x_last = flat0
    try:
        if method == "damped":
            x_last, residual, iterations, status, message = _damped(problem, u0, damping, tol, max_iter)
        elif method == "anderson":
            x_last, residual, iterations, status, message = _anderson(problem, u0, damping, tol, max_iter, memory)
        else:
            x_last, residual, iterations, status, message = _hybr(problem, u0, tol, max_iter)
    except _Stop as stop:
        if problem.last_x is not None and np.all(np.isfinite(problem.last_x)):
            x_last = problem.last_x
        return FixedPointResult(
            value=_shaped(x_last, shape), residual=math.nan, iterations=problem.evaluations,
            evaluations=problem.evaluations, status=stop.status, message=stop.message, success=False,
            jacobian_eigenvalues=np.empty(0, dtype=complex), spectral_radius=math.nan, stable=False,
            method=method,
        )
    evaluations = problem.evaluations
    eigenvalues = np.empty(0, dtype=complex)
    radius, stable, J, jac_evals, error = math.nan, False, np.empty((0, 0)), 0, math.nan
    if status == "converged" and spectrum:
        try:
            if jacobian is not None:
                J = np.asarray(jacobian(_shaped(x_last, shape)), dtype=float).reshape(n, n)
            else:
                J, jac_evals = map_jacobian(F, x_last.reshape(shape), transforms=transforms)
            if not np.all(np.isfinite(J)):
                raise _Stop("failed", "the Jacobian has non-finite entries")
            eigenvalues = np.linalg.eigvals(J).astype(complex)
            radius = float(np.max(np.abs(eigenvalues)))
            stable = radius < 1.0
            try:
                # F itself is known only to map_error (e.g. its quadrature error) plus rounding.
                uncertainty = residual + map_error + 4 * np.finfo(float).eps * float(np.max(np.abs(x_last)))
                error = float(np.linalg.norm(np.linalg.inv(np.eye(n) - J), np.inf) * uncertainty)
            except np.linalg.LinAlgError:
                error = math.inf
        except _Stop as stop:
            message += f"; spectrum not computed: {stop.message}"
    return FixedPointResult(
        value=_shaped(x_last, shape), residual=residual, iterations=iterations, evaluations=evaluations,
        status=status, message=message, success=status == "converged", jacobian_eigenvalues=eigenvalues,
        spectral_radius=radius, stable=stable, method=method, jacobian=J, jacobian_evaluations=jac_evals,
        error=error,
    )


def _shaped(x: np.ndarray, shape):
    return float(x[0]) if shape == () else x.reshape(shape).copy()
