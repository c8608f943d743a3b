"""Fixed points x = F(x) of state-evolution / saddle-point maps, with their stability.

The solvers (numeric.fixedpoint_solvers, re-exported here) work in unconstrained coordinates u = T(x), one
transform per coordinate (numeric.transforms, re-exported here): variances live on (0, inf) and are iterated as
log x (`Positive`), normalised overlaps live on (a, b) and are iterated through an atanh-type map (`Interval`).
The map in u-coordinates, G = T o F o T^-1, has the same fixed points as F and, at a fixed point, a Jacobian
similar to dF (DG = DT dF DT^-1), so the spectrum is the same in both coordinate systems.

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

from attnphase.errors import ParameterError
from attnphase.numeric.fixedpoint_solvers import Anderson, Broyden, Chain, Damped, Hybr, run_solver
from attnphase.numeric.jacobian import map_jacobian, spectral_radius_error
from attnphase.numeric.transforms import Identity, Interval, Positive
from attnphase.numeric.wrapped_map import SolverStop, WrappedMap
from attnphase.params import check_positive, check_real
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
    outcome = run_solver(solver, problem, flat0, tol)
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
