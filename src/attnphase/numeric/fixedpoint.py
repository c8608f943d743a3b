"""Fixed points x = F(x) of state-evolution / saddle-point maps, with their stability.

The solvers work in unconstrained coordinates u = T(x), one transform per coordinate (numeric.transforms,
re-exported here): variances live on (0, inf) and are iterated as log x (`Positive`), normalised
overlaps live on (a, b) and are iterated through an atanh-type map (`Interval`). The map in u-coordinates, G = T o F o T^-1, has the
same fixed points as F and, at a fixed point, a Jacobian similar to dF (DG = DT dF DT^-1), so the
spectrum is the same in both coordinate systems.

Solvers are small frozen values, passed to `solve_fixed_point(F, x0, solver)`:
* `Damped(damping)`: u <- damping u + (1 - damping) G(u). Robust, but it converges at the rate of the
  spectral radius of the damped map, which tends to 1 near a continuous transition.
* `Anderson(damping, memory)`: type-II Anderson acceleration (Walker & Ni 2011) with mixing
  1 - damping, a bounded history, column dropping when the least-squares problem becomes
  ill-conditioned, and a restart (plain damped step, history cleared) when a step increases the
  residual tenfold.
* `Hybr()`: MINPACK's hybrid Powell method (`scipy.optimize.root`) on the residual G(u) - u.
* `Broyden(...)`: Broyden's ("good") method on F(x) - x in the original coordinates, from a
  forward-difference Jacobian (or a carried inverse Jacobian), each step capped per coordinate and
  kept inside the domain; for maps whose noise makes the other solvers stall (quadrature with adaptive
  panels), and whose inverse Jacobian is worth carrying from one solve to the next; `step_tol` stops it
  on the predicted distance to the fixed point rather than on the residual.
* `Chain(first, then, ...)`: solvers one after another (e.g. Anderson to get close, then hybr where it
  stalls); see `Chain` for the two ways of chaining.

Accelerated solvers converge just as happily to unstable fixed points, so every converged result
carries the spectrum of dF at the solution (finite differences in the original coordinates, or a
user-supplied Jacobian) and `stable` = spectral radius below 1 by more than its error.

Nothing leaks: non-finite values from F, an F(x) outside the domain of the transforms, exceptions in
F and non-convergence all end as a status with a message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import optimize

from attnphase.errors import ParameterError
from attnphase.numeric.jacobian import forward_difference_jacobian, map_jacobian, spectral_radius_error
from attnphase.numeric.transforms import Identity, Interval, Positive
from attnphase.numeric.wrapped_map import SolverStop, WrappedMap
from attnphase.params import check_int, check_positive, check_real
from attnphase.results import Result, Status

__all__ = [
    "Identity",
    "Positive",
    "Interval",
    "Damped",
    "Anderson",
    "Hybr",
    "Broyden",
    "Chain",
    "FixedPointResult",
    "LastEvaluation",
    "solve_fixed_point",
]


# --------------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True)
class FixedPointResult(Result):
    """Outcome of `solve_fixed_point`.

    value: the fixed point (float for a scalar x0, else an array of x0's shape); when not
        converged, the last point F was evaluated at (if finite).
    residual: max |F(x) - x| at `value` (original coordinates; `Broyden`: relative to max(|x|, its
        residual_floor), the criterion it stops on).
    iterations: solver iterations (hybr: function evaluations, MINPACK does not count iterations).
    evaluations: calls of F by the solver (every stage of a chain), not counting the Jacobian below.
    status: converged | max_iter | diverged (F returned NaN/inf or the iterate blew up) | failed (F
        raised, F(x) left the domain of the transforms, or the solver stalled).
    message: what happened, in words.
    jacobian: dF at the solution (n x n); jacobian_eigenvalues: its eigenvalues (complex),
        spectral_radius: max |eigenvalue|, spectral_radius_error: how far the noise of the finite
        differences (rounding of F and map_error; not their O(h²) truncation) can move it, stable:
        spectral_radius < 1 − spectral_radius_error (a radius within its error of 1 is marginal, not stable,
        and the message says so). Not computed (empty / nan / False) when the solver did not converge or the
        Jacobian could not be evaluated.
    method: the solver (the stage of a chain) that produced `value`.
    jacobian_evaluations: calls of F spent on the finite-difference Jacobian.
    error: estimated distance max |x - x*| to the exact fixed point of the exact map,
        ||(I - dF)^-1||_inf (residual + map_error + rounding of x) (the size of a Newton correction;
        large near a bifurcation where I - dF is nearly singular); nan without the Jacobian.
    inverse_jacobian: `Broyden`'s inverse of (dF - I) at the end (reduced coordinates), a warm start
        for the next solve (`Broyden(inverse=...)`); None for the other solvers.
    """

    value: float | np.ndarray
    residual: float
    iterations: int
    evaluations: int
    status: Status
    message: str
    jacobian_eigenvalues: np.ndarray
    spectral_radius: float
    stable: bool
    spectral_radius_error: float = math.nan
    method: str = ""
    jacobian: np.ndarray = field(default_factory=lambda: np.empty((0, 0)), repr=False)
    jacobian_evaluations: int = 0
    error: float = math.nan
    inverse_jacobian: np.ndarray | None = field(default=None, repr=False)


@dataclass(frozen=True)
class _Outcome:
    """What one solver (one stage) returned: its last point x (flat), residual, status and message."""

    x: np.ndarray
    residual: float
    iterations: int
    status: Status
    message: str
    method: str
    inverse_jacobian: np.ndarray | None = None


def _run(solver, problem: WrappedMap, x0: np.ndarray, tol: float) -> _Outcome:
    """One solver from x0; a SolverStop becomes an outcome at the last point F was evaluated (if finite)."""
    problem.last_x = None
    try:
        return solver.run(problem, x0, tol)
    except SolverStop as stop:
        last = problem.last_x if problem.last_x is not None and np.all(np.isfinite(problem.last_x)) else x0
        return _Outcome(last, math.nan, problem.evaluations, stop.status, stop.message, solver.name)


# --------------------------------------------------------------------------------------------------
# Solvers (frozen values: what to run, not how it went)


@dataclass(frozen=True)
class Damped:
    """Damped iteration u <- damping u + (1 - damping) G(u); `max_iter` iterations at most."""

    damping: float = 0.5
    max_iter: int = 100_000
    name = "damped"

    def __post_init__(self):
        check_real("damping", self.damping, 0.0, 1.0, high_open=True)
        check_int("max_iter", self.max_iter, 1, None)

    def run(self, problem: WrappedMap, x0, tol) -> _Outcome:
        u = problem.to_u(x0)
        for it in range(1, self.max_iter + 1):
            x, y, gu = problem.G(u)
            residual = float(np.max(np.abs(y - x)))
            if residual <= tol:
                return _Outcome(x, residual, it, Status.CONVERGED, f"damped iteration converged in {it} iterations",
                                self.name)
            u = self.damping * u + (1.0 - self.damping) * gu
        message = f"damped iteration: residual {residual:.3g} > tol after {self.max_iter} iterations"
        return _Outcome(x, residual, self.max_iter, Status.MAX_ITER, message, self.name)


@dataclass(frozen=True)
class Anderson:
    """Type-II Anderson acceleration with mixing 1 - damping and a history of `memory` differences
    (at most the number of coordinates is used); `max_iter` iterations at most."""

    damping: float = 0.5
    memory: int = 6
    max_iter: int = 1000
    name = "anderson"

    def __post_init__(self):
        check_real("damping", self.damping, 0.0, 1.0, high_open=True)
        check_int("memory", self.memory, 1, 100)
        check_int("max_iter", self.max_iter, 1, None)

    def run(self, problem: WrappedMap, x0, tol) -> _Outcome:
        """u+ = u + b g - (dU + b dG) gamma, gamma = argmin |g - dG gamma|, g = G(u) - u."""
        u = problem.to_u(x0)
        beta = 1.0 - self.damping
        # More than n differences in n dimensions are linearly dependent; with n = 1 this is the secant
        # method.
        memory = min(self.memory, u.size)
        dU: list[np.ndarray] = []
        dG: list[np.ndarray] = []
        u_prev = g_prev = None
        best = math.inf
        for it in range(1, self.max_iter + 1):
            x, y, gu = problem.G(u)
            residual = float(np.max(np.abs(y - x)))
            if residual <= tol:
                return _Outcome(x, residual, it, Status.CONVERGED, f"Anderson converged in {it} iterations", self.name)
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
        return _Outcome(x, residual, self.max_iter, Status.MAX_ITER,
                        f"Anderson: residual {residual:.3g} > tol after {self.max_iter} iterations", self.name)


@dataclass(frozen=True)
class Hybr:
    """MINPACK's hybrid Powell method on G(u) - u; `max_evaluations` calls of F (default 200 (n + 1))."""

    max_evaluations: int | None = None
    name = "hybr"

    def __post_init__(self):
        if self.max_evaluations is not None:
            check_int("max_evaluations", self.max_evaluations, 1, None)

    def run(self, problem: WrappedMap, x0, tol) -> _Outcome:
        max_evaluations = self.max_evaluations or 200 * (x0.size + 1)

        def residual_u(u):
            return problem.G(u)[2] - u

        sol = optimize.root(residual_u, problem.to_u(x0), method="hybr",
                            options={"xtol": 1e-14, "maxfev": max_evaluations})
        # Re-evaluate at the returned point: MINPACK's last call need not be at its answer.
        x, y, _ = problem.G(np.asarray(sol.x, dtype=float))
        residual = float(np.max(np.abs(y - x)))
        nfev = int(sol.nfev) + 1
        if residual <= tol:
            return _Outcome(x, residual, nfev, Status.CONVERGED, f"hybr converged ({nfev} evaluations)", self.name)
        if sol.status == 2:
            message = f"hybr: residual {residual:.3g} > tol after maxfev={max_evaluations} evaluations"
            return _Outcome(x, residual, nfev, Status.MAX_ITER, message, self.name)
        return _Outcome(x, residual, nfev, Status.FAILED, f"hybr stopped with residual {residual:.3g} > tol: {sol.message}",
                        self.name)


@dataclass(frozen=True)
class Broyden:
    """Broyden's ("good") method on F(x) − x in the original coordinates.

    Converged when max_j |F(x) − x|_j / max(|x_j|, residual_floor) ≤ tol (relative per coordinate,
    absolute below residual_floor), or, with `step_tol`, when the next step predicted from the current inverse,
    −(dF − I)⁻¹(F(x) − x), is at most step_tol in the same relative measure (checked from the second evaluation
    on, once the inverse has been updated with a secant of this solve's map). That step estimates the distance to
    the fixed point, which is what a caller needing the point to some accuracy wants: the residual measures it
    only up to ‖(dF − I)⁻¹‖, and a tol set for the largest such factor costs an evaluation where it is small.
    The inverse of (dF − I) starts from `inverse` when given (e.g. the previous solve's
    `FixedPointResult.inverse_jacobian`), else from a forward-difference Jacobian (`forward_difference_jacobian`
    with `jacobian_step`, n extra evaluations, only if a step is needed).
    Each step is capped per coordinate at max_step_fraction · max(|x_j|, step_floor), so that a step
    from a poor Jacobian cannot leave the solution's basin of attraction, and halved up to `backtracks`
    times to stay inside the transforms' domain. Status: converged, max_iter after `max_iter` steps, or
    diverged when F is not finite (or the step could not be kept in the domain); the point returned is
    then the last one where F was finite.
    """

    max_iter: int = 16
    max_step_fraction: float = 0.25
    step_floor: float = 0.05
    residual_floor: float = 1e-3
    jacobian_step: float = 1e-2
    backtracks: int = 5
    step_tol: float | None = None
    inverse: np.ndarray | None = field(default=None, repr=False, compare=False)
    name = "broyden"

    def __post_init__(self):
        check_int("max_iter", self.max_iter, 0, None)
        check_positive("max_step_fraction", self.max_step_fraction)
        check_positive("step_floor", self.step_floor)
        check_positive("residual_floor", self.residual_floor)
        check_positive("jacobian_step", self.jacobian_step)
        check_int("backtracks", self.backtracks, 0, 60)
        if self.step_tol is not None:
            check_positive("step_tol", self.step_tol)

    def run(self, problem: WrappedMap, x0, tol) -> _Outcome:
        n = x0.size

        def evaluate(x):
            """F(x), or NaN where F is undefined: outside the domain, not finite, or raising."""
            if not problem.contains(x):
                return np.full(n, np.nan)
            try:
                return problem.call(x)
            except SolverStop:
                return np.full(n, np.nan)

        inverse = None if self.inverse is None else np.array(self.inverse, dtype=float)
        y = np.array(x0, dtype=float)
        f = evaluate(y)
        status, residual, steps, predicted = Status.MAX_ITER, math.inf, 0, math.inf
        for steps in range(self.max_iter):
            defect = f - y
            residual = float(np.max(np.abs(defect) / np.maximum(np.abs(y), self.residual_floor)))
            if not np.isfinite(residual):
                status = Status.DIVERGED
                break
            if residual <= tol:
                status = Status.CONVERGED
                break
            if self.step_tol is not None and steps > 0:
                predicted = float(np.max(np.abs(inverse @ defect) / np.maximum(np.abs(y), self.residual_floor)))
                if predicted <= self.step_tol:
                    status = Status.CONVERGED
                    break
            if inverse is None:
                J = forward_difference_jacobian(evaluate, y, f, self.jacobian_step)
                try:
                    inverse = np.linalg.inv(J - np.eye(n))
                except np.linalg.LinAlgError:
                    status = Status.FAILED
                    break
            step = -inverse @ defect
            cap = self.max_step_fraction * np.maximum(np.abs(y), self.step_floor)
            step *= min(1.0, float(np.min(cap / np.maximum(np.abs(step), 1e-300))))
            for _halving in range(self.backtracks):  # back into the domain
                if problem.contains(y + step):
                    break
                step *= 0.5
            y_new = y + step
            f_new = evaluate(y_new)
            if not np.all(np.isfinite(f_new)):
                status = Status.DIVERGED
                break
            # Broyden's ("good") update of the inverse Jacobian of G = F − I: superlinear convergence
            dy, dg = y_new - y, (f_new - y_new) - defect
            v = dy @ inverse
            if abs(v @ dg) > 0:
                inverse = inverse + np.outer(dy - inverse @ dg, v) / (v @ dg)
            y, f = y_new, f_new
        stop = f" (predicted step {predicted:.2g})" if residual > tol else ""
        message = {Status.CONVERGED: f"Broyden converged after {steps} steps: relative residual {residual:.2g}{stop}",
                   Status.MAX_ITER: f"Broyden: relative residual {residual:.2g} > tol after {self.max_iter} steps",
                   Status.DIVERGED: f"Broyden: F not finite after {steps} steps (relative residual {residual:.2g})",
                   Status.FAILED: "Broyden: the Jacobian of F − I is singular"}[status]
        return _Outcome(y, residual, steps, status, message, self.name, inverse)


@dataclass(frozen=True, init=False)
class Chain:
    """Solvers run one after another, each from the point where the previous one ended.

    Chain(first, then, ...) (fallback, the default): stop at the first stage that converges; a stage
    that did not converge hands its end point to the next one unless it diverged or the point left the
    domain; the result with the smaller residual is kept (a stage that failed without a residual is
    kept over a later one, as the comparison with NaN is false). E.g. Chain(Anderson(), Hybr()):
    Anderson is globally robust, MINPACK finishes where Anderson stalls.

    Chain(first, then, polish=True): every stage runs and the last one decides the result; a stage
    starts from the previous end point when that point lies in the domain and `usable(point)` holds,
    else from x0. E.g. Chain(Anderson(), Broyden(), polish=True): Anderson gets close on a noisy map,
    Broyden meets its relative criterion; `usable` rejects an end point that slid onto another
    solution.
    """

    stages: tuple
    polish: bool = False
    usable: Callable | None = None
    name = "chain"

    def __init__(self, *stages, polish: bool = False, usable: Callable | None = None):
        if len(stages) < 2 or not all(hasattr(s, "run") for s in stages):
            raise ParameterError("stages", stages, "two or more solvers (Damped, Anderson, Hybr, Broyden, Chain)")
        object.__setattr__(self, "stages", tuple(stages))
        object.__setattr__(self, "polish", bool(polish))
        object.__setattr__(self, "usable", usable)

    def run(self, problem: WrappedMap, x0, tol) -> _Outcome:
        result = _run(self.stages[0], problem, x0, tol)
        for stage in self.stages[1:]:
            inside = problem.contains(result.x)
            if self.polish:
                usable = inside and (self.usable is None or self.usable(result.x))
                result = _run(stage, problem, result.x if usable else x0, tol)
                continue
            if result.status in (Status.CONVERGED, Status.DIVERGED) or not inside:
                break
            later = _run(stage, problem, result.x, tol)
            if later.residual < result.residual:
                result = later
        return result


# --------------------------------------------------------------------------------------------------
# Entry point


def solve_fixed_point(
    F,
    x0,
    solver=None,
    *,
    transforms=None,
    tol: float = 1e-10,
    jacobian=None,
    spectrum: bool = True,
    map_error: float = 0.0,
) -> FixedPointResult:
    """Solve x = F(x) starting from x0 with `solver` (default `Hybr()`).

    F: callable taking x (a float when x0 is a scalar, else an array of x0's shape) and returning
        F(x) of the same shape.
    solver: Damped(...), Anderson(...), Hybr(...), Broyden(...) or a Chain of them.
    transforms: one of Identity() / Positive() / Interval(a, b) per coordinate (default Identity);
        x0 must lie inside their domains.
    tol: convergence when max |F(x) - x| <= tol in the original coordinates (Broyden: relative, see it).
    jacobian: optional callable x -> dF/dx (n x n) used for the spectrum instead of finite differences.
    spectrum: compute the Jacobian spectrum at a converged solution (default True).
    map_error: absolute error of the evaluation of F (e.g. a quadrature error estimate); it enters
        the `error` of the result as ||(I - dF)^-1|| (residual + map_error + rounding).
    """
    solver = Hybr() if solver is None else solver
    if not hasattr(solver, "run"):
        raise ParameterError("solver", solver, "Damped(), Anderson(), Hybr(), Broyden() or a Chain of them")
    tol = check_positive("tol", tol)
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

    problem = WrappedMap(F, shape, transforms)
    outcome = _run(solver, problem, flat0, tol)
    result = FixedPointResult(
        value=_shaped(outcome.x, shape), residual=outcome.residual, iterations=outcome.iterations,
        evaluations=problem.evaluations, status=outcome.status, message=outcome.message,
        jacobian_eigenvalues=np.empty(0, dtype=complex), spectral_radius=math.nan, stable=False,
        method=outcome.method, inverse_jacobian=outcome.inverse_jacobian,
    )
    if outcome.status != Status.CONVERGED or not spectrum:
        return result
    message = outcome.message
    try:
        jac_evals = 0
        if jacobian is not None:
            J = np.asarray(jacobian(_shaped(outcome.x, shape)), dtype=float).reshape(n, n)
        else:
            J, jac_evals = map_jacobian(F, outcome.x.reshape(shape), transforms=transforms)
        if not np.all(np.isfinite(J)):
            raise SolverStop(Status.FAILED, "the Jacobian has non-finite entries")
    except SolverStop as stop:
        return replace(result, message=f"{message}; spectrum not computed: {stop.message}")
    eigenvalues, eigenvectors = np.linalg.eig(J)
    eigenvalues = eigenvalues.astype(complex)
    radius = float(np.max(np.abs(eigenvalues)))
    radius_error = spectral_radius_error(J, eigenvectors, outcome.x, outcome.residual, map_error,
                                          finite_differences=jacobian is None)
    try:
        # F itself is known only to map_error (e.g. its quadrature error) plus rounding.
        uncertainty = outcome.residual + map_error + 4 * np.finfo(float).eps * float(np.max(np.abs(outcome.x)))
        error = float(np.linalg.norm(np.linalg.inv(np.eye(n) - J), np.inf) * uncertainty)
    except np.linalg.LinAlgError:
        error = math.inf
    if abs(radius - 1.0) <= radius_error:
        message = (f"{message}; marginal: spectral radius {radius:.15g} is 1 within its error {radius_error:.2g} "
                   "(reported not stable)")
    return replace(result, message=message, jacobian_eigenvalues=eigenvalues, spectral_radius=radius,
                   spectral_radius_error=radius_error, stable=radius < 1.0 - radius_error, jacobian=J,
                   jacobian_evaluations=jac_evals, error=error)


class LastEvaluation:
    """An expensive map that remembers its last argument and value.

    A solver's final F(x) and a quantity evaluated at the same x afterwards (e.g. a free energy from the
    same quadrature) then cost one evaluation, not two. Only for maps that are deterministic functions
    of x; the value is returned as computed (not copied).
    """

    def __init__(self, function: Callable):
        self.function = function
        self._last: tuple[np.ndarray, object] | None = None

    def __call__(self, x):
        x = np.asarray(x, dtype=float)
        if self._last is not None and np.array_equal(self._last[0], x):
            return self._last[1]
        value = self.function(x)
        self._last = (x.copy(), value)
        return value


def _shaped(x: np.ndarray, shape):
    return float(x[0]) if shape == () else x.reshape(shape).copy()
