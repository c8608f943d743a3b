"""The fixed-point solvers of numeric.fixedpoint: small frozen values saying what to run, and `run`.

Each solver's `run(problem, x0, tol)` iterates a numeric.wrapped_map.WrappedMap (the map in the
transforms' unconstrained coordinates, counting its evaluations) and returns an `_Outcome`; a SolverStop
raised inside the map ends the run as an outcome at the last point evaluated (`run_solver`). The solvers, and
when to use which, are described in numeric.fixedpoint, which re-exports them; `solve_fixed_point` there
runs one and adds the spectrum.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from attnphase.errors import ParameterError
from attnphase.numeric.jacobian import forward_difference_jacobian
from attnphase.numeric.wrapped_map import SolverStop, WrappedMap
from attnphase.params import check_int, check_positive, check_real
from attnphase.results import Status

__all__ = ["Damped", "Anderson", "Hybr", "Broyden", "Chain", "run_solver"]


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


def run_solver(solver, problem: WrappedMap, x0: np.ndarray, tol: float) -> _Outcome:
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
        result = run_solver(self.stages[0], problem, x0, tol)
        for stage in self.stages[1:]:
            inside = problem.contains(result.x)
            if self.polish:
                usable = inside and (self.usable is None or self.usable(result.x))
                result = run_solver(stage, problem, result.x if usable else x0, tol)
                continue
            if result.status in (Status.CONVERGED, Status.DIVERGED) or not inside:
                break
            later = run_solver(stage, problem, result.x, tol)
            if later.residual < result.residual:
                result = later
        return result
