"""Drift fields dx/dt = v(x): trajectories, fixed points and their linear stability.

Gradient-flow and mean-field dynamics of the order parameters are autonomous ODEs. Trajectories use
`scipy.integrate.solve_ivp` with a high-order explicit method (DOP853) or LSODA for stiff drifts, at
tight tolerances, with terminal events when a coordinate leaves its allowed interval (so a trajectory
that leaves the physical domain stops there and says so rather than producing numbers outside it).

In one dimension every fixed point x* (v(x*) = 0) with v'(x*) != 0 is stable iff v'(x*) < 0. They are
found by scanning v on a grid, refining each sign change with brentq, and taking the slope from the
supplied derivative or a central difference. In n dimensions, x* is linearly stable iff every
eigenvalue of the Jacobian dv/dx at x* has negative real part (for a flow) or modulus < 1 (for a map).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize

from attnphase.errors import ParameterError
from attnphase.params import check_choice, check_int, check_positive, check_real
from attnphase.results import Result, Status

__all__ = ["Trajectory", "FixedPoint", "integrate_drift", "fixed_points_1d", "linear_stability"]


@dataclass(frozen=True)
class Trajectory(Result):
    """t: times (m,); x: states (m,) for a scalar x0, else (m, n); status: converged (integrated to the
    end) | lost (a coordinate reached its bound: the trajectory left the domain) | failed; message: in
    words; exit_time: time the domain was left (None otherwise); evaluations: drift calls."""

    t: np.ndarray
    x: np.ndarray
    status: Status
    message: str = ""
    exit_time: float | None = None
    evaluations: int = 0

    def rows(self):
        states = self.x.reshape(len(self.t), -1)
        return [{"t": float(t), **{f"x{j}": float(v) for j, v in enumerate(row)}} for t, row in zip(self.t, states)]


@dataclass(frozen=True)
class FixedPoint:
    """A zero of a 1-D drift: x, slope v'(x), stable (slope < 0), and x's error bound from brentq."""

    x: float
    slope: float
    stable: bool
    error: float = 0.0


class _Stopped(Exception):
    """The drift can no longer be integrated: a non-finite value, a wrong size, or the evaluation budget spent."""


def integrate_drift(
    drift,
    x0,
    t_span,
    t_eval=None,
    *,
    method: str = "DOP853",
    rtol: float = 1e-10,
    atol: float = 1e-12,
    bounds=None,
    max_evaluations: int = 1_000_000,
) -> Trajectory:
    """Integrate dx/dt = drift(x) from x0 over t_span = (t0, t1).

    drift: callable x -> dx/dt (x a float for a scalar x0, else an array of shape (n,)).
    t_eval: times at which to report the state (default: the solver's own steps).
    method: "DOP853" (explicit, 8th order) or "LSODA" (switches to implicit for stiff drifts) or
        "Radau".
    bounds: optional (low, high) per coordinate (None for an open side); the integration stops with
        status lost when a coordinate reaches a bound.
    max_evaluations: stop (status failed) after this many drift calls (the default: seconds to a minute); a drift
        whose rates are enormous on the span (a stiff one, rates ~1e40) can otherwise take hours of steps far below
        the span.
    """
    method = check_choice("method", method, ("DOP853", "LSODA", "Radau"))
    rtol = check_positive("rtol", rtol)
    atol = check_positive("atol", atol)
    if not (isinstance(t_span, (tuple, list)) and len(t_span) == 2):
        raise ParameterError("t_span", t_span, "a pair (t0, t1)")
    t0, t1 = check_real("t_span[0]", t_span[0]), check_real("t_span[1]", t_span[1])
    if t1 == t0:
        raise ParameterError("t_span", t_span, "t1 different from t0")
    x0_arr = np.asarray(x0, dtype=float)
    scalar = x0_arr.ndim == 0
    y0 = x0_arr.ravel()
    n = y0.size
    if n == 0 or not np.all(np.isfinite(y0)):
        raise ParameterError("x0", x0, "finite numbers")
    if t_eval is not None:
        t_eval = np.asarray(t_eval, dtype=float)
        if not np.all(np.isfinite(t_eval)) or np.any((t_eval - t0) * (t_eval - t1) > 0):
            raise ParameterError("t_eval", "array", f"finite times inside [{t0:g}, {t1:g}]")

    events = []
    if bounds is not None:
        if len(bounds) != n:
            raise ParameterError("bounds", bounds, f"{n} pairs (low, high)")
        for i, (low, high) in enumerate(bounds):
            for bound, sign in ((low, 1.0), (high, -1.0)):
                if bound is None:
                    continue
                bound = check_real(f"bounds[{i}]", bound)
                if sign * (y0[i] - bound) < 0:
                    raise ParameterError("x0", x0, f"coordinate {i} inside the bounds {bounds[i]}")

                def event(t, y, i=i, bound=bound, sign=sign):
                    return sign * (y[i] - bound)

                event.terminal = True
                event.direction = -1.0
                events.append(event)

    counter = [0]

    max_evaluations = check_int("max_evaluations", max_evaluations, 1)

    def rhs(t, y):
        counter[0] += 1
        if counter[0] > max_evaluations:
            raise _Stopped(f"stopped after {max_evaluations} drift evaluations at t = {t:.6g} of {t1:g}")
        with np.errstate(all="ignore"):
            v = np.asarray(drift(float(y[0]) if scalar else y.copy()), dtype=float).ravel()
        if v.size != n:
            raise _Stopped(f"drift returned {v.size} values for {n} coordinates")
        if not np.all(np.isfinite(v)):
            raise _Stopped(f"drift returned non-finite values at t = {t:.6g}, x = {y.tolist()}")
        return v

    try:
        # A span over which x moves by less than the tolerance asks (to first order, exact as the span shrinks)
        # returns its start: LSODA does not come back from spans near the smallest floats (t1 ~ 1e-200 from a step
        # size of that order), its first step underflowing.
        if np.all(abs(t1 - t0) * np.abs(rhs(t0, y0)) <= atol + rtol * np.abs(y0)):
            times = np.array([t0, t1]) if t_eval is None else t_eval
            x = np.tile(y0, (len(times), 1))
            return Trajectory(times, x[:, 0] if scalar else x, Status.CONVERGED,
                              f"integrated to t = {t1:g}: the span moves x by less than the tolerance", None, counter[0])
        sol = integrate.solve_ivp(rhs, (t0, t1), y0, method=method, t_eval=t_eval, rtol=rtol, atol=atol,
                                  events=events or None)
    except _Stopped as exc:
        return Trajectory(np.empty(0), np.empty((0,) if scalar else (0, n)), Status.FAILED, str(exc), None, counter[0])
    except Exception as exc:  # user drift raised: a status, not a traceback
        if isinstance(exc, ParameterError):
            raise
        return Trajectory(np.empty(0), np.empty((0,) if scalar else (0, n)), Status.FAILED,
                          f"drift raised {type(exc).__name__}: {exc}", None, counter[0])
    x = sol.y.T
    if scalar:
        x = x[:, 0]
    if sol.status == 1:
        exit_time = float(min(te[0] for te in sol.t_events if len(te)))
        return Trajectory(sol.t, x, Status.LOST, f"a coordinate reached its bound at t = {exit_time:.10g}",
                          exit_time, counter[0])
    if sol.status != 0:
        return Trajectory(sol.t, x, Status.FAILED, sol.message, None, counter[0])
    return Trajectory(sol.t, x, Status.CONVERGED, f"integrated to t = {t1:g} with {method}", None, counter[0])


def fixed_points_1d(drift, lo: float, hi: float, derivative=None, n_grid: int = 2001) -> list[FixedPoint]:
    """Zeros of a scalar drift on [lo, hi] with their stability, in increasing order.

    The drift is scanned on n_grid points (called with the whole grid when it accepts arrays, else
    point by point); each sign change is refined by brentq and each exact zero on the grid kept.
    Zeros of even multiplicity (touching zero without crossing) and pairs of zeros closer than the
    grid spacing are not seen: refine the grid if the physics allows them.
    stable: v'(x*) < 0 (from `derivative` if given, else a central difference, one-sided at the ends
    of the interval so that the drift is never evaluated outside [lo, hi]).
    """
    lo = check_real("lo", lo)
    hi = check_real("hi", hi)
    if not hi > lo:
        raise ParameterError("hi", hi, f"greater than lo = {lo}")
    n_grid = check_int("n_grid", n_grid, 3, 10**7)
    grid = np.linspace(lo, hi, n_grid)

    def v(x):
        with np.errstate(all="ignore"):
            return float(drift(float(x)))

    try:
        with np.errstate(all="ignore"):
            values = np.asarray(drift(grid), dtype=float)
        if values.shape != grid.shape:
            raise TypeError
    except Exception:
        values = np.array([v(x) for x in grid])
    roots: list[tuple[float, float]] = []
    for i in range(n_grid):
        if values[i] == 0.0:
            roots.append((grid[i], 0.0))
        elif i + 1 < n_grid and values[i + 1] != 0.0 and np.isfinite(values[i]) and np.isfinite(values[i + 1]) \
                and (values[i] > 0) != (values[i + 1] > 0):
            # A root at 0 is bisected towards the 1e-300 tolerance: about 1000 halvings (brentq's default is 100).
            x = optimize.brentq(v, grid[i], grid[i + 1], xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=2000)
            roots.append((x, 4 * np.finfo(float).eps * max(abs(x), 1e-300)))
    out = []
    for x, err in roots:
        slope = float(derivative(x)) if derivative is not None else _slope(v, x, lo, hi)
        out.append(FixedPoint(float(x), float(slope), bool(slope < 0), float(err)))
    return out


def _slope(v, x: float, lo: float, hi: float) -> float:
    """v'(x) by a central difference, or a second-order one-sided one at the ends of [lo, hi]
    (a drift like (1 - rho^2) J'(rho) may be undefined outside its interval)."""
    h = np.finfo(float).eps ** (1 / 3) * max(1.0, abs(x))
    if x - h >= lo and x + h <= hi:
        central = (v(x + h) - v(x - h)) / (2 * h)
        if np.isfinite(central):
            return float(central)
    sign = 1.0 if x + 2 * h <= hi else -1.0
    return float(sign * (-3 * v(x) + 4 * v(x + sign * h) - v(x + 2 * sign * h)) / (2 * h))


def linear_stability(jacobian_matrix, *, discrete: bool = False) -> tuple[np.ndarray, bool]:
    """Eigenvalues of the Jacobian at a fixed point and linear stability.

    Flow dx/dt = v(x) (default): stable iff max Re(eigenvalue) < 0. Map x -> F(x) (`discrete=True`):
    stable iff max |eigenvalue| < 1.
    """
    J = np.atleast_2d(np.asarray(jacobian_matrix, dtype=float))
    if J.ndim != 2 or J.shape[0] != J.shape[1] or not np.all(np.isfinite(J)):
        raise ParameterError("jacobian_matrix", jacobian_matrix, "a finite square matrix")
    eigenvalues = np.linalg.eigvals(J).astype(complex)
    if discrete:
        return eigenvalues, bool(np.max(np.abs(eigenvalues)) < 1.0)
    return eigenvalues, bool(np.max(eigenvalues.real) < 0.0)
