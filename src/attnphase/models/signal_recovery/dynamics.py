"""The limiting ODE dρ/dt = (1 − ρ²)J′(ρ) in t = Σ η_k: fixed points, trajectories, step schedules.

Fixed points are ρ = ±1 and the zeros of J′, stable where the drift's derivative is negative
(`fixed_points`). Projected SGA follows the ODE up to its retraction loss: renormalising q after a
step of size η loses ½η²‖G_⊥‖² of alignment on average, so with finite steps the mean-field equation
is dρ/dt = (1 − ρ²)J′ − ½ηρN(ρ), N = E‖G_⊥‖² (`retraction_corrected_rho`, `tangent_noise`), and the
schedule η_k = η₀/(k + k₀) is chosen from it (`choose_schedule`).
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.models.signal_recovery.parameters import MAX_STEPS, Parameters, as_parameters
from attnphase.models.signal_recovery.population import finite_reduction, large_L
from attnphase.models.signal_recovery.results import FixedPointsResult, ScheduleChoice
from attnphase.numeric.ode import Trajectory, fixed_points_1d, integrate_drift
from attnphase.params import check_int, check_positive, check_real
from attnphase.results import Status

__all__ = [
    "fixed_points", "ode_limit_point", "ode_trajectory", "interpolated_finite_drift", "ode_time_to_reach",
    "tangent_noise", "retraction_corrected_rho", "choose_schedule",
]


def _check_rho(rho) -> float:
    return check_real("rho", rho, -1.0, 1.0)


def _large_L_drift(params: Parameters):
    """ρ -> (1 − ρ²)J′(ρ) of the large-L form, clipped to [−1, 1] (an integrator may overshoot by rounding)."""
    return lambda r: large_L(params, np.clip(r, -1.0, 1.0))[..., 2]


def fixed_points(params: Parameters, *, n_grid: int = 2001) -> FixedPointsResult:
    """Zeros of the large-L drift on [−1, 1] (ρ = ±1 included) with stability from the drift's slope."""
    params = as_parameters(params)
    n_grid = check_int("n_grid", n_grid, 3, 10**7)
    if params.theta_d == 0.0:
        return FixedPointsResult([], [], [], Status.FAILED,
                                 "theta_d = 0: the drift vanishes identically, every rho is a fixed point")

    def drift(r):
        return large_L(params, r)[..., 2]

    def slope(r):
        return float(large_L(params, r)[..., 3])

    with np.errstate(all="ignore"):
        finite_drift = np.all(np.isfinite(large_L(params, np.linspace(-1.0, 1.0, 101))[..., 2:4]))
    if not finite_drift:
        return FixedPointsResult([], [], [], Status.FAILED,
                                 "non-finite large-L drift on [-1, 1] (overflow of e^{βθ_dρ}): fixed points not computed")
    points = fixed_points_1d(drift, -1.0, 1.0, derivative=slope, n_grid=n_grid)
    found = sorted(points, key=lambda p: p.x)
    return FixedPointsResult(
        rho=[float(p.x) for p in found], slope=[float(p.slope) for p in found],
        stable=[bool(p.stable) for p in found], status=Status.CONVERGED, message=f"{len(found)} fixed points",
    )


def ode_limit_point(params: Parameters, points: FixedPointsResult, rho0: float) -> float:
    """The fixed point the ODE reaches from ρ₀ (t → ∞): the next fixed point in the drift's direction."""
    rho0 = _check_rho(rho0)
    direction = float(large_L(params, rho0)[..., 2])
    rhos = np.asarray(points.rho)
    if direction > 0:
        return float(rhos[rhos > rho0].min())
    if direction < 0:
        return float(rhos[rhos < rho0].max())
    return rho0


def ode_trajectory(params: Parameters, rho0: float, times, *, drift=None) -> Trajectory:
    """ρ(t) of dρ/dt = drift(ρ) from ρ₀ at `times` (default drift: the large-L one), as a
    `numeric.ode.Trajectory` (`.t`, `.x` = ρ(t), status converged unless the integration failed)."""
    rho0 = _check_rho(rho0)
    times = np.asarray(times, dtype=float)
    return integrate_drift(drift or _large_L_drift(params), rho0, (0.0, float(times[-1])), t_eval=times)


def interpolated_finite_drift(params: Parameters, *, n_grid: int = 41, n_samples: int = 2048, seed: int = 0):
    """The finite-L drift (1 − ρ²)J′ as a cubic spline through the reduction on a ρ grid (common samples).

    Returns (drift callable, the `Curve` of the reduction it interpolates)."""
    from scipy.interpolate import CubicSpline

    grid = np.linspace(-1.0, 1.0, check_int("n_grid", n_grid, 4))
    reduction = finite_reduction(params, grid, n_samples=n_samples, seed=seed)
    spline = CubicSpline(grid, reduction.dJ)
    return lambda r: (1 - np.clip(r, -1, 1) ** 2) * spline(np.clip(r, -1, 1)), reduction


def ode_time_to_reach(params: Parameters, rho0: float, level: float = 0.99, t_max: float = 1e6) -> float:
    """First t with |ρ(t)| ≥ level on the large-L ODE from ρ₀ (inf if not reached by t_max)."""
    times = np.concatenate([[0.0], np.geomspace(1e-4, t_max, 400)])
    traj = integrate_drift(_large_L_drift(params), _check_rho(rho0), (0.0, t_max), t_eval=times, rtol=1e-8, atol=1e-12)
    reached = np.nonzero(np.abs(traj.x) >= level)[0]
    return float(traj.t[reached[0]]) if reached.size else math.inf


def tangent_noise(params: Parameters, rhos, *, pilot: int = 128, seed: int = 0) -> np.ndarray:
    """E‖(I − qqᵀ)∇‖f‖²‖² per sequence at each alignment in `rhos` (mean over `pilot` sequences of the
    exact projected sampler, whose law is that of dense tokens)."""
    from attnphase.models.signal_recovery.network import PlantedTokens, ProjectedSampler
    from attnphase.validate.seeds import generator
    from attnphase.validate.sphere_sga import initial_queries

    pilot = check_int("pilot", pilot, 2)
    gen = generator(seed, "cpu")
    sampler = ProjectedSampler(PlantedTokens(params), gen)
    noise = []
    for rho in np.atleast_1d(rhos):
        q = initial_queries(pilot, params.d, gen, "cpu", rho0=float(rho))
        _, grad, _ = sampler(q)
        grad_tangent = grad - (grad * q).sum(dim=1, keepdim=True) * q
        noise.append(float((grad_tangent**2).sum(dim=1).mean()))
    return np.asarray(noise)


def retraction_corrected_rho(params: Parameters, noise_grid, noise_values, rho0: float, eta0, k0, steps) -> np.ndarray:
    """ρ after `steps` steps of η_k = η₀/(k + k₀) from ρ₀, by the mean-field ODE

        dρ/dt = (1 − ρ²)J′(ρ) − ½ η(t) ρ N(ρ),   η(t) = (η₀/k₀) e^{−t/η₀},  t ∈ [0, η₀ ln(1 + K/k₀)],

    for every (η₀, k₀, K) of the broadcast arrays. The second term is the mean loss of the retraction
    q ← (q + ηG_⊥)/‖q + ηG_⊥‖: ρ' = (ρ + η⟨G_⊥, ξ⟩)(1 + η²‖G_⊥‖²)^{−1/2}, whose mean is
    ρ + η(1 − ρ²)J′ − ½η²ρN + O(η³) with N(ρ) = E‖G_⊥‖² (interpolated from `noise_values` on
    `noise_grid`). η(t) is the continuous form of the schedule (t ≈ Σ η_k, η(t_K) = η₀/(K + k₀)). Each
    case is integrated over its own horizon, rescaled to s = t/t_K ∈ [0, 1].
    """
    eta0, k0, steps = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(eta0, k0, steps))
    shape = eta0.shape
    eta0, k0, steps = eta0.ravel(), k0.ravel(), steps.ravel()
    horizon = eta0 * np.log1p(steps / k0)

    def field(state):
        rho, s = np.clip(state[:-1], -1.0, 1.0), state[-1]
        eta = eta0 / k0 * np.exp(-s * horizon / eta0)
        drift = large_L(params, rho)[..., 2] - 0.5 * eta * rho * np.interp(rho, noise_grid, noise_values)
        return np.append(horizon * drift, 1.0)

    start = np.append(np.full(eta0.size, float(rho0)), 0.0)
    traj = integrate_drift(field, start, (0.0, 1.0), t_eval=[1.0], method="LSODA", rtol=1e-6, atol=1e-8)
    return np.clip(np.asarray(traj.x)[-1, :-1], -1.0, 1.0).reshape(shape)


def choose_schedule(params: Parameters, *, deficit: float = 0.002, max_steps: int = 5000, max_first_step_noise=0.1,
                    pilot: int = 128, seed: int = 0) -> ScheduleChoice:
    """Robbins–Monro schedule η_k = η₀/(k + k₀) (γ = 1) from theory, not from trial runs.

    * Last step (noise floor): near ρ = 1 the retraction loses ½η²N per step and the drift restores
      2(1 − ρ)J′(1)η, so the stationary deficit is 1 − ρ ≈ ηN(1)/(4J′(1)); η_K is set so that this
      equals `deficit` (N = E‖G_⊥‖² from `pilot` sequences of the projected sampler at each of 5 alignments).
    * Early steps: the same retraction loss −½ηρN slows the whole approach, not just the end: when
      ½ηρN is comparable with the drift (1 − ρ²)J′, SGA stalls far from the ODE (at θ_d = 0.25, d = 1000,
      L = 10 500 a first step of 0.29 held |ρ| near ½ while the ODE was at 0.97). So the remaining two
      parameters — K steps and the offset k₀ (which sets the first step η₀/k₀ for a given last step) —
      are chosen with the retraction-corrected ODE (`retraction_corrected_rho`): the smallest K ≤
      `max_steps` for which some k₀ brings it to the target |ρ| = 1 − 2·deficit from ρ₀ = ±1/√d (the
      typical random start, on the side the plain ODE leaves more slowly), with
      the k₀ that gets there (or, when the budget is short, gets furthest); the first step is kept
      where that expansion holds, η₁²N ≤ `max_first_step_noise`.
    `t_target` is the time the plain ODE needs for the target (a lower bound on t_final). Status limited
    (`budget_limited`) when `max_steps` cannot reach the target.
    """
    params = as_parameters(params)
    deficit = check_real("deficit", deficit, 0.0, 0.25, low_open=True)
    max_steps = check_int("max_steps", max_steps, 1, MAX_STEPS)
    max_first_step_noise = check_positive("max_first_step_noise", max_first_step_noise)
    noise_grid = np.linspace(-1.0, 1.0, 5)
    noise_values = tangent_noise(params, noise_grid, pilot=pilot, seed=seed)
    noise = float(noise_values[-1])
    slope_at_xi = float(large_L(params, 1.0)[1])
    eta_final = 4 * abs(slope_at_xi) * deficit / noise
    target = 1.0 - 2.0 * deficit
    # Random starts have ρ₀ ≈ ±1/√d; plan for the slower side (model A's −1/√d when J′(0) > 0).
    starts = (1 / math.sqrt(params.d), -1 / math.sqrt(params.d))
    start_times = [ode_time_to_reach(params, r, level=target) for r in starts]
    rho0 = starts[int(np.argmax(start_times))]
    # Offsets from a constant step (k₀ ≫ K) to a first step at the expansion limit η₁²N_max = bound.
    first_step_limit = math.sqrt(max_first_step_noise / float(noise_values.max()))

    def best_offset(K: int) -> tuple[float, float]:
        k0_min = max(1e-3, eta_final * K / max(first_step_limit - eta_final, 1e-300))
        k0s = np.geomspace(k0_min, max(100.0 * K, 10 * k0_min), 12)
        finals = np.abs(retraction_corrected_rho(params, noise_grid, noise_values, rho0, eta_final * (K + k0s), k0s, K))
        j = int(np.argmax(finals))
        return float(k0s[j]), float(finals[j])

    k0, predicted = best_offset(max_steps)
    steps = max_steps
    if predicted >= target:  # bisect on the step count: the fewest steps that still reach the target
        lo, hi = 0, max_steps
        while hi - lo > max(1, hi // 10):  # 10% in the step count
            mid = (lo + hi) // 2
            k0_mid, final_mid = best_offset(mid) if mid > 0 else (k0, 0.0)
            if final_mid >= target:
                hi, k0, predicted = mid, k0_mid, final_mid
            else:
                lo = mid
        steps = hi
    eta0 = eta_final * (steps + k0)
    t_final = eta0 * float(np.sum(1.0 / (np.arange(steps) + k0)))
    t_target = max(start_times)
    limited = predicted < target
    status = Status.LIMITED if limited else Status.CONVERGED
    message = (f"the retraction-corrected ODE reaches |rho| = {predicted:.4g} < target {target:.4g} within {steps} steps"
               if limited else f"|rho| = {predicted:.4g} >= target {target:.4g} after {steps} steps")
    return ScheduleChoice(eta0, k0, 1.0, steps, t_final, t_target, eta_final, eta0 / k0, noise, target, rho0,
                          predicted, limited, status, message)
