"""Projected SGA with finite steps: the retraction-corrected ODE and the step schedules chosen from it.

Projected SGA follows the limiting ODE (`dynamics`) up to its retraction loss: renormalising q after a step of
size η loses ½η²‖G_⊥‖² of alignment on average, so with finite steps the mean-field equation is
dρ/dt = (1 − ρ²)J′ − ½ηρN(ρ), N = E‖G_⊥‖² (`retraction_corrected_rho`, `tangent_noise`), and the schedule
η_k = η₀/(k + k₀) is chosen from it (`choose_schedule`). `predicted_trajectories` gives the ODE along a
simulation's own starts and schedule, `predicted_alignment` the corrected ODE's final |ρ| with its error.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.parameters import MAX_STEPS, Parameters, as_parameters
from attnphase.models.signal_recovery.closed_form import checked_rhos, large_L, large_L_accuracy, large_L_overflow
from attnphase.models.signal_recovery.dynamics import (
    FINITE_DRIFT_GRID, FINITE_DRIFT_MAX_L, FINITE_DRIFT_SAMPLES, finite_drift, large_L_drift, ode_time_to_reach,
)
from attnphase.models.signal_recovery.population import finite_reduction
from attnphase.models.signal_recovery.results import PredictedTrajectories, ScheduleChoice, SimulationResult, TangentNoise
from attnphase.numeric.minimize import log_pattern_search
from attnphase.numeric.heavy_tails import heavy_tailed_mean
from attnphase.numeric.ode import integrate_drift
from attnphase.params import check_bool, check_int, check_positive, check_real
from attnphase.results import Status

__all__ = ["tangent_noise", "retraction_corrected_rho", "choose_schedule", "schedule_reach",
           "predicted_trajectories", "predicted_alignment", "NOISE_GRID", "MAX_STEP_NOISE", "PLAN_EVALUATIONS"]

#: Alignments at which the tangent noise N(ρ) is sampled (linear interpolation between them).
NOISE_GRID = np.linspace(-1.0, 1.0, 5)


def tangent_noise(params: Parameters, rhos=NOISE_GRID, *, pilot: int = 128, seed: int = 0) -> TangentNoise:
    """N(ρ) = E‖(I − qqᵀ)∇‖f‖²‖² per sequence at each alignment in `rhos`, with its standard error:
    the mean over `pilot` sequences of the exact projected sampler (whose law is that of dense tokens), with a Pareto
    tail fitted above its √pilot largest values (`numeric.heavy_tails.heavy_tailed_mean`: ‖G_⊥‖² can have an infinite variance, where the
    sample mean and its naive error fall short); and from the same sequences E⟨G_⊥, ξ⟩² (`along`, the noise that
    moves ρ) and the mean of ⟨G_⊥, ξ⟩ (`along_mean`)."""
    from attnphase.models.signal_recovery.network import PlantedTokens, ProjectedSampler
    from attnphase.validate.device import using_threads
    from attnphase.validate.seeds import generator
    from attnphase.validate.sphere_sga import initial_queries

    params = as_parameters(params)
    pilot = check_int("pilot", pilot, 2)
    seed = check_int("seed", seed, 0)
    rhos = checked_rhos(rhos)
    gen = generator(seed, "cpu")
    sampler = ProjectedSampler(PlantedTokens(params), gen)
    # Sequences per batch: about 2**22 numbers of the (batch × (L + d)) arrays at a time.
    chunk = max(1, min(pilot, 2**22 // (params.L + params.d)))
    noise, error, along, along_mean = [], [], [], []
    with using_threads(1):  # small tensors: one thread is fastest, and fair to other processes
        for rho in rhos:
            squared, along_xi = [], []
            for lo in range(0, pilot, chunk):
                q = initial_queries(min(chunk, pilot - lo), params.d, gen, "cpu", rho0=float(rho))
                _, grad, _ = sampler(q)
                grad_tangent = grad - (grad * q).sum(dim=1, keepdim=True) * q
                squared.append((grad_tangent**2).sum(dim=1).numpy())
                along_xi.append(grad_tangent[:, 0].numpy())  # ξ = e₁
            squared = np.concatenate(squared)
            with np.errstate(all="ignore"):  # overflow: reported by the status below
                # an overflowing gradient has no mean to estimate: a non-finite N fails the status below
                mean, mean_error = heavy_tailed_mean(squared) if np.all(np.isfinite(squared)) else (math.inf, math.nan)
                noise.append(mean)
                error.append(mean_error)
                along.append(float(np.square(np.concatenate(along_xi)).mean()))
                along_mean.append(float(np.concatenate(along_xi).mean()))
    noise, error = np.asarray(noise), np.asarray(error)
    finite = bool(np.all(np.isfinite(noise)) and np.all(np.isfinite(error)))
    return TangentNoise(rhos, noise, error, pilot, seed, Status.CONVERGED if finite else Status.FAILED,
                        f"mean and standard error over {pilot} sequences of the projected sampler (seed {seed}), "
                        "a Pareto tail above the largest sqrt(pilot) (heavy_tailed_mean)"
                        if finite else "non-finite tangent noise (overflow in the pooling gradient)", np.asarray(along),
                        np.asarray(along_mean))


def _step_size(eta0, k0, gamma, k):
    """η(k) = η₀/(k + k₀)^γ, the schedule continued to real k."""
    return eta0 / (k + k0) ** gamma


# Cases integrated together in one LSODA call: its finite-difference Jacobian costs one drift call per
# case, so the work grows as the square of the cases in one call.
FLOW_CHUNK = 64
# Drift evaluations allowed to one LSODA call of the flow: the `simulate` runs of the model page take at most about
# 4000 (the headline); with rates of 1e40 (β = 10) LSODA's steps fall far below the span, and the call is stopped
# (no prediction) instead of running for hours.
FLOW_EVALUATIONS = 100_000
#: Drift evaluations the schedule planner may spend on all its integrations together (a few seconds). The plans of
#: the model page take at most 4800 (the headline), the 162 points of the report's sweep at most 24 824; where the
#: large-L drift is far outside its expansion (score scale 5 at d = 16, L = 64: J′(1) = 5.5e10 against an exact
#: 3.9 ± 0.3) its rates make LSODA's steps vanish, and the planner spent 90 s (score scale 12: 270 s) before it failed.
PLAN_EVALUATIONS = 100_000


def _corrected_flow(params: Parameters, noise: TangentNoise | None, rho0, eta0, k0, gamma, steps, fractions, *,
                    drift=None, noise_shift: float = 0.0, budget: list[int] | None = None) -> np.ndarray:
    """ρ of the mean-field ODE at step counts `fractions`·steps, for every case of the broadcast arrays
    (ρ₀, η₀, k₀, γ, steps); shape (len(fractions), *broadcast shape).

    In the step variable k the ODE reads dρ/dk = η(k)[v(ρ) − ½η(k)ρN(ρ)], η(k) = η₀/(k + k₀)^γ, v the
    drift (default: the large-L one) and N = 0 without `noise` (the plain ODE in t = ∫η dk). Each case
    is integrated over its own horizon, rescaled to s = k/steps ∈ [0, 1], up to `FLOW_CHUNK` cases per
    LSODA call of at most FLOW_EVALUATIONS drift evaluations; `budget` ([evaluations left], decremented here):
    what all calls may spend together, the cases after it is spent are not integrated. NaN where an integration
    failed or was not run.
    """
    cases = [np.asarray(x, dtype=float) for x in np.broadcast_arrays(rho0, eta0, k0, gamma, steps)]
    shape = cases[0].shape
    cases = [x.ravel() for x in cases]
    velocity = drift or large_L_drift(params)
    fractions = np.atleast_1d(np.asarray(fractions, dtype=float))
    out = np.full((fractions.size, cases[0].size), np.nan)
    for lo in range(0, cases[0].size, FLOW_CHUNK):
        rho0_c, eta0_c, k0_c, gamma_c, steps_c = (x[lo:lo + FLOW_CHUNK] for x in cases)

        def field(state, eta0_c=eta0_c, k0_c=k0_c, gamma_c=gamma_c, steps_c=steps_c):
            rho, s = np.clip(state[:-1], -1.0, 1.0), state[-1]
            eta = _step_size(eta0_c, k0_c, gamma_c, s * steps_c)
            loss = 0.0 if noise is None else 0.5 * eta * rho * np.maximum(noise.at(rho, noise_shift), 0.0)
            return np.append(steps_c * eta * (velocity(rho) - loss), 1.0)

        allowed = FLOW_EVALUATIONS if budget is None else min(FLOW_EVALUATIONS, budget[0])
        if allowed < 1:
            break
        traj = integrate_drift(field, np.append(rho0_c, 0.0), (0.0, 1.0), t_eval=fractions, method="LSODA",
                               rtol=1e-7, atol=1e-9, max_evaluations=allowed)
        if budget is not None:
            budget[0] -= traj.evaluations
        if traj.status == Status.CONVERGED:
            out[:, lo:lo + FLOW_CHUNK] = np.clip(np.asarray(traj.x).reshape(fractions.size, -1)[:, :-1], -1.0, 1.0)
    return out.reshape(fractions.size, *shape)


def retraction_corrected_rho(params: Parameters, noise: TangentNoise, rho0, eta0, k0, steps, *, gamma=1.0,
                             drift=None) -> np.ndarray:
    """ρ after `steps` steps of η_k = η₀/(k + k₀)^γ from ρ₀, by the mean-field ODE

        dρ/dt = (1 − ρ²)J′(ρ) − ½ η(t) ρ N(ρ),   t = ∫₀^k η(k′) dk′,  η(k) = η₀/(k + k₀)^γ,

    for every (ρ₀, η₀, k₀, γ, steps) of the broadcast arrays. The second term is the mean loss of the
    retraction q ← (q + ηG_⊥)/‖q + ηG_⊥‖: ρ' = (ρ + η⟨G_⊥, ξ⟩)(1 + η²‖G_⊥‖²)^{−1/2}, whose mean is
    ρ + η(1 − ρ²)J′ − ½η²ρN + O(η³) with N(ρ) = E‖G_⊥‖² (`noise`, a `TangentNoise`). η(k) is the
    schedule continued to real k (t ≈ Σ η_k). `drift`: ρ -> (1 − ρ²)J′ (default: the large-L drift;
    e.g. the finite-L one of `interpolated_finite_drift`). NaN where the integration failed.
    """
    params = as_parameters(params)
    if not isinstance(noise, TangentNoise):
        raise ParameterError("noise", noise, "a TangentNoise (tangent_noise(params))")
    rho0 = _real_array("rho0", rho0, "a real number in [-1, 1]", lambda x: np.abs(x) <= 1)
    eta0 = _real_array("eta0", eta0, "a real number > 0", lambda x: x > 0)
    gamma = _real_array("gamma", gamma, "a real number in [0, 1]", lambda x: (x >= 0) & (x <= 1))
    k0 = _real_array("k0", k0, "a real number >= 0, > 0 where gamma > 0", lambda x: (x >= 0) & ((x > 0) | (gamma == 0)))
    steps = _real_array("steps", steps, f"an integer in [1, {MAX_STEPS}]",
                        lambda x: (x >= 1) & (x <= MAX_STEPS) & (x == np.round(x)))
    return _corrected_flow(params, noise, rho0, eta0, k0, gamma, steps, [1.0], drift=drift)[0]


def _real_array(name: str, values, allowed: str, inside) -> np.ndarray:
    """`values` as a float array whose every entry is finite and satisfies `inside`, else a ParameterError."""
    try:
        given = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
        if given.dtype == bool or (given.dtype == object and any(isinstance(v, (bool, np.bool_)) for v in given.flat)):
            raise ParameterError(name, values, allowed)  # True is not the number 1 here
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(name, values, allowed) from None
    with np.errstate(invalid="ignore"):
        if array.size == 0 or not np.all(np.isfinite(array) & inside(array)):
            raise ParameterError(name, values, allowed)
    return array


def choose_schedule(params: Parameters, *, deficit: float = 0.002, max_steps: int = 5000, steps: int | None = None,
                    max_first_step_noise=0.1, pilot: int = 128, seed: int = 0,
                    noise: TangentNoise | None = None) -> ScheduleChoice:
    """Robbins–Monro schedule η_k = η₀/(k + k₀) (γ = 1) from theory, not from trial runs.

    * Last step (noise floor): near ρ = 1 the retraction loses ½η²N per step and the drift restores
      2(1 − ρ)J′(1)η, so the stationary deficit is 1 − ρ ≈ ηN(1)/(4J′(1)); η_K is set so that this
      equals `deficit` (N = E‖G_⊥‖² from `pilot` sequences of the projected sampler at each of 5
      alignments, or `noise` when given); with little noise (σ ≲ 0.01), where that step would exceed the
      first-step limit below, half that limit.
    * Early steps: the same retraction loss −½ηρN slows the whole approach, not just the end: when
      ½ηρN is comparable with the drift (1 − ρ²)J′, SGA stalls far from the ODE (at θ_d = 0.25, d = 1000,
      L = 10 500 a first step of 0.29 held |ρ| near ½ while the ODE was at 0.97). So the remaining two
      parameters — K steps and the offset k₀ (which sets the first step η₀/k₀ for a given last step) —
      are chosen with the retraction-corrected ODE (`retraction_corrected_rho`): the smallest K ≤
      `max_steps` for which some k₀ brings it to the target |ρ| = 1 − 2·deficit from ρ₀ = ±1/√d (the
      typical random start, on the side the plain ODE leaves more slowly), with
      the k₀ that gets there (or, when the budget is short, gets furthest); the first step is kept
      where that expansion holds, η₁²N ≤ `max_first_step_noise`.
    * `steps` given: the schedule for exactly that many steps (what `simulate` runs by default). The
      last step is then free as well: among last steps η_K = 2^{−j} times the noise-floor rule's
      (j = −3 … 8) or 2^{−j/2} times the first-step limit (j = 1 … 8, and 1 − 1e-3 of it) and 12 offsets each, the
      pair that carries ρ furthest along the flow (the drift's sign at ρ₀), refined by a pattern search in both
      down to factors of 2^(1/16), reported as its predicted final |ρ| — a long run ends below the `deficit` floor,
      a short one trades floor for speed.
    `t_target` is the time the plain ODE needs for the target (a lower bound on t_final). Status limited
    (`budget_limited`) when the schedule's predicted |ρ| stays below the target.
    """
    params = as_parameters(params)
    deficit = check_real("deficit", deficit, 0.0, 0.25, low_open=True)
    max_steps = check_int("max_steps", max_steps, 1, MAX_STEPS)
    if steps is not None:
        steps = check_int("steps", steps, 1, MAX_STEPS)
    max_first_step_noise = check_positive("max_first_step_noise", max_first_step_noise)
    if noise is not None and not isinstance(noise, TangentNoise):
        raise ParameterError("noise", noise, "None or a TangentNoise (tangent_noise(params))")
    if noise is None:
        noise = tangent_noise(params, NOISE_GRID, pilot=pilot, seed=seed)
    noise_at_xi = float(noise.at(1.0))
    with np.errstate(all="ignore"):
        slope_at_xi = float(large_L(params, 1.0)[1])
        floor_step = 4 * abs(slope_at_xi) * deficit / noise_at_xi if noise_at_xi > 0 else math.inf

    def unplanned(reason: str) -> ScheduleChoice:
        nan = math.nan
        return ScheduleChoice(nan, nan, 1.0, steps or max_steps, nan, nan, nan, nan, noise_at_xi, 1.0 - 2.0 * deficit,
                              nan, nan, True, Status.FAILED, f"no schedule planned: {reason}")

    if not (noise.success and math.isfinite(floor_step) and floor_step > 0 and np.all(noise.noise > 0)):
        slope_text = (f"{slope_at_xi:.4g}" if math.isfinite(slope_at_xi)
                      else f"not finite ({large_L_overflow(params, [1.0])})")
        noise_text = f"{noise_at_xi:.4g}" if math.isfinite(noise_at_xi) else f"not finite ({noise.message})"
        return unplanned(f"the large-L J'(1) = {slope_text} and N(1) = {noise_text} (a planned schedule needs a "
                         "finite J'(1) > 0 and a finite N > 0)")
    target = 1.0 - 2.0 * deficit
    # Random starts have ρ₀ ≈ ±1/√d; plan for the slower side (model A's −1/√d when J′(0) > 0).
    starts = (1 / math.sqrt(params.d), -1 / math.sqrt(params.d))
    start_times = [ode_time_to_reach(params, r, level=target) for r in starts]
    rho0 = starts[int(np.argmax(start_times))]
    # Schedules are ranked by how far they carry ρ along the flow from ρ₀ (the drift's sign there), not by |ρ|: from
    # −1/√d under model A the flow first passes ρ = 0, so a short budget's largest |ρ| was the schedule that hardly
    # moved (d = 64, 50 steps: t_final 6.6e-5, |ρ| left at its start, and a prediction that agreed with the run).
    with np.errstate(all="ignore"):
        along_flow = 1.0 if float(large_L(params, rho0)[2]) >= 0 else -1.0
    # Offsets from a constant step (k₀ ≫ K) to a first step at the expansion limit η₁²N_max = bound.
    first_step_limit = math.sqrt(max_first_step_noise / float(np.max(noise.noise)))
    budget = [PLAN_EVALUATIONS]  # drift evaluations left to all of the planner's integrations

    def best(K: int, last_steps) -> tuple[float, float, float]:
        """(η_K, k₀, predicted ρ) of the pair for K steps, among the last steps `last_steps`, that carries ρ
        furthest along the flow (predicted NaN where no pair has a finite prediction)."""
        last_steps = np.asarray(last_steps, dtype=float)[:, None]
        with np.errstate(all="ignore"):  # a last step above the first-step limit has no offset: its k₀ is inf, unused
            k0_min = np.maximum(1e-3, last_steps * K / np.maximum(first_step_limit - last_steps, 1e-300))
            unit = np.linspace(0.0, 1.0, 12)[None, :]
            k0s = k0_min * (np.maximum(100.0 * K, 10 * k0_min) / k0_min) ** unit  # 12 geometric offsets per η_K
        eta_last = np.broadcast_to(last_steps, k0s.shape)
        finals = _corrected_flow(params, noise, rho0, eta_last * (K + k0s), k0s, 1.0, K, [1.0], budget=budget)[0]
        usable = np.isfinite(finals) & (eta_last < first_step_limit)
        if not usable.any():
            return math.nan, math.nan, math.nan
        i, j = np.unravel_index(int(np.argmax(np.where(usable, along_flow * finals, -math.inf))), finals.shape)
        return float(eta_last[i, j]), float(k0s[i, j]), float(finals[i, j])

    def polished(K: int, eta_last: float, k0: float, predicted: float) -> tuple[float, float, float]:
        """`best`'s pair for K steps refined by a pattern search in (ln η_K, ln k₀) (`numeric.minimize.
        log_pattern_search`, from the grid's factor √2 down to 2^(1/32)). A k₀ whose first step would pass the
        first-step limit is replaced by the one at the limit, so that a plan whose first step is at the limit moves
        along it. At d = 64, L = 512, 4000 steps, the grid alone left 1 − ρ 9% above the best (last step 2.6e-4,
        where 3.4e-4 is best)."""
        def progress(etas, k0s):
            finals = _corrected_flow(params, noise, rho0, etas * (K + k0s), k0s, 1.0, K, [1.0], budget=budget)[0]
            return np.where(etas < first_step_limit, along_flow * finals, -math.inf)

        def at_most_the_first_step_limit(etas, k0s):
            with np.errstate(all="ignore"):
                return np.maximum(k0s, etas * K / np.maximum(first_step_limit - etas, 1e-300))

        eta_last, k0, along = log_pattern_search(progress, eta_last, k0, along_flow * predicted,
                                                 feasible=at_most_the_first_step_limit, go_on=lambda: budget[0] > 0)
        return eta_last, k0, along_flow * along

    # With little noise (small σ) the noise floor allows last steps beyond the first-step limit, where no offset
    # exists; the expansion's limit then bounds the last step instead (half of it: a first step above the last).
    last_step = min(floor_step, 0.5 * first_step_limit)
    if steps is not None:
        # up to the first-step limit itself (1 − 1e-3 of it: a nearly constant step there): a short budget's best
        # schedule is nearly constant at the limit (d = 64, L = 512, 20 steps: 0.202 from −1/8, where decaying from
        # the limit to limit/√2 reached 0.148 and the last steps of at most 8 times the noise-floor rule's 0.03)
        near_limit = first_step_limit * np.append(1 - 1e-3, 2.0 ** -np.arange(0.5, 4.5, 0.5))
        eta_final, k0, predicted = polished(steps, *best(steps, np.union1d(last_step * 2.0 ** -np.arange(-3, 9),
                                                                           near_limit)))
    else:
        eta_final = last_step
        _, k0, predicted = best(max_steps, [eta_final])
        steps = max_steps
        if abs(predicted) >= target:  # bisect on the step count: the fewest steps that still reach the target
            lo, hi = 0, max_steps
            while hi - lo > max(1, hi // 10) and budget[0] > 0:  # 10% in the step count
                mid = (lo + hi) // 2
                _, k0_mid, final_mid = best(mid, [eta_final]) if mid > 0 else (eta_final, k0, 0.0)
                if abs(final_mid) >= target:
                    hi, k0, predicted = mid, k0_mid, final_mid
                else:
                    lo = mid
            steps = hi
    eta0, predicted = eta_final * (steps + k0), abs(predicted)
    if not (math.isfinite(predicted) and math.isfinite(eta0) and math.isfinite(k0)):  # no finite prediction
        return unplanned(_unintegrable_drift(params, noise, slope_at_xi, budget[0] <= 0))
    t_final = eta0 * float(np.sum(1.0 / (np.arange(steps) + k0)))
    t_target = max(start_times)
    limited = predicted < target
    status = Status.LIMITED if limited else Status.CONVERGED
    message = (f"the retraction-corrected ODE reaches |rho| = {predicted:.4g} < target {target:.4g} within {steps} steps"
               if limited else f"|rho| = {predicted:.4g} >= target {target:.4g} after {steps} steps")
    return ScheduleChoice(eta0, k0, 1.0, steps, t_final, t_target, eta_final, eta0 / k0, noise_at_xi, target, rho0,
                          predicted, limited, status, message)


def schedule_reach(params: Parameters, noise: TangentNoise, eta0: float, k0: float, gamma: float, steps: int, *,
                   deficit: float = 0.002) -> tuple[float, float, float]:
    """What `choose_schedule` asks of the schedules it plans, asked of a schedule given (a manual one): (the |ρ| that
    the retraction-corrected ODE of the large-L drift reaches in `steps` steps of η_k = η₀/(k + k₀)^γ from the slower
    random start ±1/√d, the target 1 − 2·deficit, that start). The |ρ| is NaN where the ODE cannot be integrated
    (within PLAN_EVALUATIONS drift evaluations) or its inputs are not finite."""
    target = 1.0 - 2.0 * deficit
    starts = (1 / math.sqrt(params.d), -1 / math.sqrt(params.d))
    with np.errstate(all="ignore"):
        if not (noise.success and np.all(np.isfinite(large_L(params, np.array([-1.0, 0.0, 1.0]))[..., 2]))):
            return math.nan, target, starts[0]
        rho0 = starts[int(np.argmax([ode_time_to_reach(params, r, level=target) for r in starts]))]
        final = _corrected_flow(params, noise, rho0, eta0, k0, gamma, steps, [1.0], budget=[PLAN_EVALUATIONS])[0]
    return float(abs(final)), target, rho0


def _unintegrable_drift(params: Parameters, noise: TangentNoise, slope_at_xi: float, spent: bool) -> str:
    """Why the planner's retraction-corrected ODE of the large-L drift could not be integrated, with what the drift
    should be: its largest value on the noise grid against the gradients' root mean square √N, which bounds the exact
    drift ((1 − ρ²)J′ = ⟨E G_⊥, ξ⟩ ≤ (E‖G_⊥‖²)^{1/2}), and, where the prediction follows it (L ≤ FINITE_DRIFT_MAX_L),
    the exact finite-L J′(1)."""
    with np.errstate(all="ignore"):
        drift = np.abs(large_L(params, noise.rho)[..., 2]) / np.sqrt(noise.noise)
    how = (f"within {PLAN_EVALUATIONS} drift evaluations" if spent
           else "(no candidate schedule had a finite prediction)")
    message = f"the retraction-corrected ODE of the large-L drift could not be integrated {how}"
    if np.all(np.isfinite(drift)):
        worst = int(np.argmax(drift))
        message += (f"; the large-L drift at rho = {noise.rho[worst]:g} is {drift[worst]:.3g} times the gradients' "
                    "root mean square sqrt(N), which bounds the exact drift")
    if params.L <= FINITE_DRIFT_MAX_L:
        exact = finite_reduction(params, [1.0], n_samples=FINITE_DRIFT_SAMPLES)
        if exact.success:
            message += (f"; the large-L J'(1) = {slope_at_xi:.4g}, the exact finite-L J'(1) = {exact.dJ[0]:.4g} "
                         f"+- {exact.dJ_error[0]:.2g} ({FINITE_DRIFT_SAMPLES} draws): the large-L form is far outside "
                         f"its expansion at L = {params.L}")
    return message


def _flow_along_schedule(params: Parameters, noise: TangentNoise | None, rho0, etas: np.ndarray, times: np.ndarray,
                         t_eval, *, drift=None, noise_shift: float = 0.0) -> np.ndarray:
    """ρ(t) of dρ/dt = v(ρ) − ½η(t)ρN(ρ) from every start in `rho0` at `t_eval` (shape (len(t_eval), n)),
    with the schedule's own times: t_k = Σ_{j<k} η_j (`times`, K + 1 values) and η(t) interpolated between
    (t_k, η_k) — so t is the simulation's t at every step. N = 0 without `noise` (the plain ODE)."""
    rho0 = np.atleast_1d(np.asarray(rho0, dtype=float))
    velocity = drift or large_L_drift(params)
    knots, steps_at_knots = times[:-1], etas
    out = np.full((len(t_eval), rho0.size), np.nan)
    for lo in range(0, rho0.size, FLOW_CHUNK):

        def rhs(state):
            rho, t = np.clip(state[:-1], -1.0, 1.0), state[-1]
            eta = np.interp(t, knots, steps_at_knots)
            loss = 0.0 if noise is None else 0.5 * eta * rho * np.maximum(noise.at(rho, noise_shift), 0.0)
            return np.append(velocity(rho) - loss, 1.0)

        start = np.append(rho0[lo:lo + FLOW_CHUNK], 0.0)
        traj = integrate_drift(rhs, start, (0.0, float(times[-1])), t_eval=t_eval, method="LSODA", rtol=1e-7,
                               atol=1e-9, max_evaluations=FLOW_EVALUATIONS)
        if traj.status == Status.CONVERGED:
            out[:, lo:lo + FLOW_CHUNK] = np.clip(np.asarray(traj.x).reshape(len(t_eval), -1)[:, :-1], -1.0, 1.0)
    return out


@lru_cache(maxsize=16)  # `simulate`, then `predicted_trajectories` (twice for `plot_trajectories(ode="both")`)
def prediction_drift(params: Parameters) -> tuple:
    """The drift a prediction from a simulation follows, as `simulate` chooses it, computed once per parameters (the
    reduction takes seconds, and its draws are seeded: every call gives the same): (the finite-L reduction it
    interpolates, or None for the large-L drift; the words that name it; "" or why there is none). Up to
    FINITE_DRIFT_MAX_L the exact finite-L drift (the large-L one can be 1e6 times off there, so it is never used
    instead: a failed reduction is the reason given), beyond it the large-L drift, named with its expansion's failure
    where it fails somewhere (it may still predict well)."""
    grid = np.linspace(-1.0, 1.0, FINITE_DRIFT_GRID)
    if params.L <= FINITE_DRIFT_MAX_L:
        reduction = finite_reduction(params, grid, n_samples=FINITE_DRIFT_SAMPLES)
        words = f"exact finite-L drift ({FINITE_DRIFT_GRID} alignments, {FINITE_DRIFT_SAMPLES} draws each)"
        if not reduction.success:
            return None, words, f"the exact finite-L drift is not available: {reduction.message}"
        return reduction, words, ""
    accuracy = large_L_accuracy(params, grid)
    return None, "large-L drift" + ("" if accuracy.success else
                                    f", outside its O(1/L) expansion at some alignments ({accuracy.message})"), ""


def predicted_trajectories(simulation: SimulationResult, *, retraction: bool = True, drift=None,
                           noise_shift: float = 0.0) -> PredictedTrajectories:
    """The ODE from each trial's own ρ₀ under the schedule the simulation ran, at its recorded steps.

    retraction=True: the retraction-corrected ODE dρ/dt = (1 − ρ²)J′ − ½η(t)ρN (with the simulation's
    tangent noise N); False: the plain ODE dρ/dt = (1 − ρ²)J′. t is the simulation's t = Σ_{j<k} η_j at
    every step (η(t) interpolated between the steps). `drift`: ρ -> (1 − ρ²)J′ (default: the drift `simulate`'s
    own prediction follows, `prediction_drift`: the exact finite-L one up to L = FINITE_DRIFT_MAX_L, so that the
    drawn trajectories end where `simulate` predicts). `noise_shift` moves N by that many standard errors (for
    error bars).
    """
    from attnphase.validate.sphere_sga import StepSchedule

    if not isinstance(simulation, SimulationResult):
        raise ParameterError("simulation", simulation, "a SimulationResult (simulate(...))")
    retraction = check_bool("retraction", retraction)
    run = simulation.trajectory
    params = simulation.params
    noise = simulation.noise if retraction else None
    if retraction and noise is None:
        noise = tangent_noise(params)
    schedule = StepSchedule(simulation.eta0, simulation.k0, simulation.gamma)
    total = int(run.steps[-1])
    kind = "retraction-corrected" if retraction else "plain"
    words = "the given drift"
    if drift is None:
        reduction, words, missing = prediction_drift(params)
        if missing:
            return PredictedTrajectories(run.steps, run.times, np.full_like(run.rho, np.nan), kind, Status.FAILED,
                                         missing)
        drift = None if reduction is None else finite_drift(reduction)
    rho = _flow_along_schedule(params, noise, run.rho[0], schedule.eta(total), schedule.times(total), run.times,
                               drift=drift, noise_shift=noise_shift)
    if not np.all(np.isfinite(rho)):
        return PredictedTrajectories(run.steps, run.times, rho, kind, Status.FAILED, "the ODE integration failed")
    return PredictedTrajectories(run.steps, run.times, rho, kind, Status.CONVERGED,
                                 f"{kind} ODE from each of the {rho.shape[1]} trials' starts, {words}")


#: Largest η²·max N for which a prediction is made: the retraction-corrected ODE keeps the terms of a
#: step to order η², so it says nothing about steps that move q by more than its own length.
MAX_STEP_NOISE = 1.0


def predicted_alignment(params: Parameters, noise: TangentNoise, rho0, eta0, k0, gamma, steps, *,
                        reduction=None) -> tuple[float, float] | None:
    """Mean over the starts `rho0` of |ρ| after `steps` steps of η_k = η₀/(k + k₀)^γ by the
    retraction-corrected ODE (in the schedule's own t = Σ η_k), and its error: the change when N moves up by
    one standard error, plus, with the finite-L drift, the change when J′ moves up by one. `reduction`: the finite-L
    reduction on a ρ grid (`interpolated_finite_drift`) whose drift the ODE follows; None: the large-L drift.
    None when a step is outside the expansion the ODE rests on (η²·max N > `MAX_STEP_NOISE`)."""
    from attnphase.validate.sphere_sga import StepSchedule

    schedule = StepSchedule(eta0, k0, gamma)
    with np.errstate(all="ignore"):
        etas, times = schedule.eta(steps), schedule.times(steps)
        if not np.max(etas) ** 2 * np.max(noise.noise) <= MAX_STEP_NOISE:
            return None

    def mean_alignment(noise_shift=0.0, drift_shift=0.0):
        drift = None if reduction is None else finite_drift(reduction, drift_shift)
        flow = _flow_along_schedule(params, noise, rho0, etas, times, [times[-1]], drift=drift,
                                    noise_shift=noise_shift)
        return float(np.abs(flow[0]).mean())

    nominal = mean_alignment()
    error = abs(mean_alignment(noise_shift=1.0) - nominal)
    if reduction is not None:
        error += abs(mean_alignment(drift_shift=1.0) - nominal)
    return nominal, error
