"""The limiting ODE dρ/dt = (1 − ρ²)J′(ρ) in t = Σ η_k: its drift, fixed points and trajectories.

Fixed points are ρ = ±1 and the zeros of J′, stable where the drift's derivative is negative
(`fixed_points`). The drift is the large-L one (`large_L_drift`) or, up to FINITE_DRIFT_MAX_L, the exact finite-L
reduction interpolated on a grid (`interpolated_finite_drift`). Finite steps, their retraction loss and the step
schedules built on this ODE are `schedules`.
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.parameters import Parameters, as_parameters
from attnphase.models.signal_recovery.closed_form import large_L, large_L_accuracy, large_L_overflow, large_L_precise
from attnphase.models.signal_recovery.population import finite_reduction
from attnphase.models.signal_recovery.results import FixedPointsResult
from attnphase.numeric.ode import Trajectory, fixed_points_1d, integrate_drift
from attnphase.params import check_int, check_real, check_real_list
from attnphase.results import Status

__all__ = ["fixed_points", "ode_limit_point", "ode_trajectory", "interpolated_finite_drift", "finite_drift",
           "ode_time_to_reach", "large_L_drift", "FINITE_DRIFT_MAX_L", "FINITE_DRIFT_GRID", "FINITE_DRIFT_SAMPLES"]

#: Up to this L the prediction follows the exact finite-L drift (the reduction on FINITE_DRIFT_GRID alignments with
#: FINITE_DRIFT_SAMPLES draws each, about 1 s at L = 64, 2 s at L = 512), beyond it the large-L drift, whose O(1/L)
#: error it leaves out: at d = 16, L = 64, R = 4, score scale 3 the large-L J′ is 100-1000 times the exact one, and
#: the prediction from it was 0.999 where SGA reached 0.27 ± 0.05 (from the exact drift: 0.19).
FINITE_DRIFT_MAX_L = 1024
FINITE_DRIFT_GRID = 41
FINITE_DRIFT_SAMPLES = 1024


def _check_rho(rho, name: str = "rho0") -> float:
    """An alignment in [−1, 1], named as the caller's argument."""
    return check_real(name, rho, -1.0, 1.0)


def large_L_drift(params: Parameters):
    """ρ -> (1 − ρ²)J′(ρ) of the large-L form (ρ clipped to [−1, 1]: an integrator may overshoot by rounding),
    the default drift of the ODEs here; scale or replace it to try another theory (`drift=` arguments)."""
    return lambda r: large_L(params, np.clip(r, -1.0, 1.0))[..., 2]


def fixed_points(params: Parameters, *, n_grid: int = 2001) -> FixedPointsResult:
    """Zeros of the large-L drift on [−1, 1] (ρ = ±1 included) with stability from the drift's slope.

    The drift and its slope are evaluated in mpmath (`large_L_precise`, about 1 s for the 2001 points): in float64
    J′ is a difference of terms of the size of J times βθ_d + β²σ², and where J′ is much smaller than that (e^{β²σ²}
    large, or all the attention on one kind of token) its rounding changed sign from point to point: at d = 299,
    L = 10⁶, R = 1, θ = 28.7, σ = 2.58, β = 2.41 (model A) it gave a dozen spurious fixed points and called ρ = 1
    unstable (slope +5.5e5 for −1839)."""
    return _fixed_points(as_parameters(params), check_int("n_grid", n_grid, 3, 10**7))


@lru_cache(maxsize=64)
def _fixed_points(params: Parameters, n_grid: int) -> FixedPointsResult:
    """`fixed_points` for validated arguments, kept: a sweep point asks for them, and so does the escape check of each
    of its runs (`escape.drift_fixed_points`), a few seconds each in mpmath."""
    if params.theta_d == 0.0:
        return FixedPointsResult([], [], [], Status.FAILED,
                                 "theta_d = 0: the drift vanishes identically, every rho is a fixed point")
    if params.sign_model == "B" and params.R == params.L:
        # Every token carries the signal with the sequence's sign: the scores share the shift θ_d ρ s, which the
        # softmax does not see, and the sign averages the cross term out, so J is the same at every ρ (any L).
        return FixedPointsResult([], [], [], Status.FAILED,
                                 "sign model B with R = L: J does not depend on rho, the drift vanishes identically, "
                                 "every rho is a fixed point")

    def drift(r):
        values = large_L_precise(params, r)[:, 2]
        return values if np.ndim(r) else float(values[0])

    def slope(r):
        return float(large_L_precise(params, [r])[0, 3])

    # The drift in float64 first: where it overflows, mpmath would take minutes over exponentials of up to e^{1e300}.
    check_grid = np.linspace(-1.0, 1.0, 101)
    with np.errstate(all="ignore"):
        finite_drift = np.all(np.isfinite(large_L(params, check_grid)[..., 2]))
    if finite_drift:  # its slope can be NaN in float64 (a difference of infinities) and finite in mpmath
        finite_drift = np.all(np.isfinite(large_L_precise(params, check_grid)[:, 2:4]))
    if not finite_drift:
        return FixedPointsResult([], [], [], Status.FAILED, f"non-finite large-L drift on [-1, 1] "
                                 f"({large_L_overflow(params, [1.0])}): fixed points not computed")
    points = fixed_points_1d(drift, -1.0, 1.0, derivative=slope, n_grid=n_grid)
    found = sorted(points, key=lambda p: p.x)
    rho = np.array([p.x for p in found], float)
    slopes = np.array([p.slope for p in found], float)
    bound = large_L_accuracy(params, rho)
    at_pole = np.abs(rho) == 1.0
    with np.errstate(all="ignore"):
        rho_error = np.where(at_pole, 0.0, bound.drift_error / np.abs(slopes))
    slope_error = np.where(at_pole, 2.0 * bound.dJ_error, math.nan)
    message = f"{len(found)} fixed points of the large-L drift"
    if not bound.accurate.all():
        message += f"; their distance from the finite-L drift's is not bounded here ({bound.message})"
    return FixedPointsResult(
        rho=rho.tolist(), slope=slopes.tolist(), stable=[bool(p.stable) for p in found], status=Status.CONVERGED,
        message=message, rho_error=rho_error.tolist(), slope_error=slope_error.tolist(),
    )


def ode_limit_point(params: Parameters, points: FixedPointsResult, rho0: float) -> float:
    """The fixed point the ODE reaches from ρ₀ (t → ∞): the next fixed point in the drift's direction.
    `points`: `fixed_points(params)`, found (status converged)."""
    params, rho0 = as_parameters(params), _check_rho(rho0)
    if not (isinstance(points, FixedPointsResult) and points.success and len(points.rho)):
        raise ParameterError("points", points, "the FixedPointsResult of fixed_points(params), with status converged")
    direction = float(large_L_precise(params, [rho0])[0, 2])  # its sign, as fixed_points saw it
    if not math.isfinite(direction):
        raise ParameterError("params", params, f"parameters whose large-L drift is finite at rho0 = {rho0:g} (it "
                                               "overflows here)")
    rhos = np.asarray(points.rho)
    if direction > 0:
        return float(rhos[rhos > rho0].min())
    if direction < 0:
        return float(rhos[rhos < rho0].max())
    return rho0


def ode_trajectory(params: Parameters, rho0: float, times, *, drift=None) -> Trajectory:
    """ρ(t) of dρ/dt = drift(ρ) from ρ₀ at `times` (default drift: the large-L one), as a
    `numeric.ode.Trajectory` (`.t`, `.x` = ρ(t), status converged unless the integration failed). `times`: an
    increasing list of t ≥ 0. ρ(t) is clipped to [−1, 1]: ρ = ±1 are fixed points, and next to them the integrator
    overshoots by rounding (1.0000000000006 at d = 64, L = 1050, R = 50, θ = 0.5 under θ√d, t = 0.64), a value every
    function of ρ here refuses."""
    params, rho0 = as_parameters(params), _check_rho(rho0)
    times = np.asarray(check_real_list("times", times, low=0.0))
    if np.any(np.diff(times) <= 0):
        raise ParameterError("times", times.tolist(), "an increasing list of times t >= 0")
    trajectory = integrate_drift(drift or large_L_drift(params), rho0, (0.0, float(times[-1])), t_eval=times)
    return dataclasses.replace(trajectory, x=np.clip(trajectory.x, -1.0, 1.0))


def interpolated_finite_drift(params: Parameters, *, n_grid: int = 41, n_samples: int = 2048, seed: int = 0):
    """The finite-L drift (1 − ρ²)J′ as a cubic spline through the reduction on a ρ grid (common samples).

    Returns (drift callable, the `Curve` of the reduction it interpolates)."""
    grid = np.linspace(-1.0, 1.0, check_int("n_grid", n_grid, 4))
    reduction = finite_reduction(params, grid, n_samples=n_samples, seed=seed)
    return finite_drift(reduction), reduction


def finite_drift(reduction, shift: float = 0.0):
    """ρ -> (1 − ρ²)J′ through the cubic spline of a finite-L reduction's J′ on its ρ grid, J′ moved by `shift`
    of its standard errors (for error bars)."""
    from scipy.interpolate import CubicSpline

    spline = CubicSpline(reduction.rho, reduction.dJ + shift * reduction.dJ_error)
    return lambda r: (1 - np.clip(r, -1, 1) ** 2) * spline(np.clip(r, -1, 1))


def ode_time_to_reach(params: Parameters, rho0: float, level: float = 0.99, t_max: float = 1e6) -> float:
    """First t with |ρ(t)| ≥ level on the large-L ODE from ρ₀ (inf if not reached by t_max)."""
    params, rho0 = as_parameters(params), _check_rho(rho0)
    level = check_real("level", level, 0.0, 1.0, low_open=True)
    t_max = check_real("t_max", t_max, 0.0, None, low_open=True)
    times = np.concatenate([[0.0], np.geomspace(min(1e-4, t_max / 10), t_max, 400)])
    traj = integrate_drift(large_L_drift(params), rho0, (0.0, t_max), t_eval=times, rtol=1e-8, atol=1e-12)
    reached = np.nonzero(np.abs(traj.x) >= level)[0]
    return float(traj.t[reached[0]]) if reached.size else math.inf
