"""Projected SGA of the query at finite (d, L, R), and one sweep point of theory against simulation.

`simulate` composes the model's token samplers (`network`) with the generic batched driver
`attnphase.validate.sphere_sga`; `sweep_point` runs it under the theory-chosen schedule
(`schedules.choose_schedule`) and compares with the large-L ODE.
"""

from __future__ import annotations

import math
from contextlib import nullcontext

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.dynamics import (
    FINITE_DRIFT_MAX_L, fixed_points, ode_limit_point, ode_trajectory,
)
from attnphase.models.signal_recovery.escape import AGREEMENT_SIGMAS, ESCAPE_SIGMAS, agreement, escape_starts
from attnphase.models.signal_recovery.schedules import (
    MAX_STEP_NOISE, choose_schedule, predicted_alignment, prediction_drift, schedule_reach, tangent_noise,
)
from attnphase.models.signal_recovery.parameters import (
    FLOAT32_MAX, MAX_PROJECTED_NUMBERS, MAX_SIMULATION_NUMBERS, MAX_STEPS, Parameters, SimulationSettings,
    make_parameters, max_simulated_token_norm, noise_token_norm,
)
from attnphase.models.signal_recovery.closed_form import large_L
from attnphase.models.signal_recovery.results import ScheduleChoice, SimulationResult, TangentNoise
from attnphase.params import check_bool, check_choice, check_int, check_real
from attnphase.results import Status

__all__ = ["check_float32_tokens", "check_simulation_size", "run_sga", "simulate", "check_sweep_point", "sweep_point",
           "MAX_PILOT", "PILOT_NUMBERS", "CHEAP_PILOT"]

#: Largest pilot (sequences per alignment) of the tangent noise a simulation estimates for its prediction, as 1/40 of
#: the run's sequences.
MAX_PILOT = 2048
#: Random numbers per alignment (sequences × (L + d)) a pilot draws however small the run, up to CHEAP_PILOT sequences:
#: ‖G_⊥‖² is heavy-tailed, so a small pilot underestimates N and its error (d = 16, L = 64, R = 8, model B: 400
#: sequences gave N(0) = 18.2 ± 1.2 where 131072 give 25.0 ± 0.2, and the prediction missed a recomputation with the
#: latter by 2.4 of its errors); 2²¹ numbers take about 0.15 s.
PILOT_NUMBERS = 2**21
CHEAP_PILOT = 32768


def check_float32_tokens(params: Parameters) -> None:
    """Refuse a θ_d (or σ, or score scale) whose gradients float32 cannot hold: tokens of norm at most
    θ_d + σ(√d + 10) (`noise_token_norm`) within `max_simulated_token_norm`. `simulate` and `sweep_point` check it
    before they run, and a sweep before any point (`check_sweep_point`)."""
    largest, noise = max_simulated_token_norm(params.score_scale), noise_token_norm(params.d, params.sigma)
    why = "the simulation's float32 gradients, tokens of norm θ_d + σ(√d + 10) at most (3.4e38/(64·score scale))^(1/3)"
    if noise > largest:  # no θ_d fits: the score scale (or σ, where the score scale is not above 1) is at fault
        name, value = ("score_scale", params.score_scale) if params.score_scale > 1.0 else ("sigma", params.sigma)
        raise ParameterError(name, value, f"score_scale·(σ(√d + 10))³ at most {FLOAT32_MAX / 64:.3g} (d = {params.d}, "
                                          f"sigma = {params.sigma:g}, score scale {params.score_scale:g}: {why})")
    if params.theta_d + noise > largest:
        raise ParameterError("theta", params.theta, f"theta_d = {params.theta_d:g} at most {largest - noise:.3g} "
                                                    f"(d = {params.d}, sigma = {params.sigma:g}, score scale "
                                                    f"{params.score_scale:g}: {why})")


def check_simulation_size(params: Parameters, settings: SimulationSettings) -> None:
    """Refuse, before any allocation, a run whose memory no slicing can bound: queries and per-sequence
    gradients (float64, trials·(1 + batch)·d), the projected sampler's (sequences × (L + d)) arrays, one
    dense token sequence (L·d), the recorded trajectories (3 numbers per trial per record); and a θ_d
    whose gradients float32 cannot hold (`check_float32_tokens`)."""
    check_float32_tokens(params)
    if settings.trials * (1 + settings.batch) * params.d > MAX_SIMULATION_NUMBERS:
        # named by the batch where it is above one (a batch of 10^8 with 2 trials had named the trials), else by the
        # trials where they are, else by d (a d of 1e12 with one trial had named the trials, already at their least)
        name, value = (("batch", settings.batch) if settings.batch > 1 else ("trials", settings.trials)
                       if settings.trials > 1 else ("d", params.d))
        raise ParameterError(name, value, f"trials·(1 + batch)·d at most {MAX_SIMULATION_NUMBERS} "
                                          f"(d = {params.d}, trials = {settings.trials}, batch = {settings.batch}; "
                                          "memory)")
    if settings.sampler == "projected" and settings.trials * settings.batch * (params.L + params.d) > MAX_PROJECTED_NUMBERS:
        raise ParameterError("L", params.L, f"trials·batch·(L + d) at most {MAX_PROJECTED_NUMBERS} for the projected sampler "
                                            f"(trials = {settings.trials}, batch = {settings.batch}, d = {params.d}; "
                                            "memory: about ten arrays of that size per step)")
    if settings.sampler == "dense" and params.L * params.d > MAX_SIMULATION_NUMBERS:
        raise ParameterError("L", params.L, f"L·d at most {MAX_SIMULATION_NUMBERS} for the dense sampler "
                                            f"(d = {params.d}; memory); the projected sampler needs O(L + d) per sequence")
    if 3 * (settings.steps // settings.recording_interval + 2) * settings.trials > MAX_SIMULATION_NUMBERS:
        raise ParameterError("record_every", settings.recording_interval,
                             f"at least 3·(steps/record_every)·trials ≤ {MAX_SIMULATION_NUMBERS} recorded numbers (memory)")


def _threads_for(params: Parameters, settings: SimulationSettings, threads: int | None, device) -> int:
    """`validate.device.choose_threads` with the work of a step's largest tensor operation: the
    (sequences × L) score arrays of the projected sampler (a few operations per element), or the
    batched mat-vec of one slice of dense tokens (2·L·d operations per sequence)."""
    from attnphase.validate.device import choose_threads

    sequences = settings.trials * settings.batch
    if settings.sampler == "projected":
        work = 8.0 * sequences * (params.L + params.d)
    else:
        work = 2.0 * sequences * params.L * params.d
    return choose_threads(threads, work=work, device=device)


def run_sga(params: Parameters, settings: SimulationSettings, device: str = "auto", *, rng: str = "device",
            memory_budget_bytes: int = 1 << 30, threads: int | None = None,
            noise: TangentNoise | None = None, predict: bool = True,
            planned: ScheduleChoice | None = None) -> SimulationResult:
    """Projected SGA of `settings.trials` independent queries (validated objects; see `simulate`).

    `noise`: the tangent noise N(ρ) for the planner and the prediction (default: `tangent_noise(params)`
    from 128 to `MAX_PILOT` sequences per alignment, 1/40 of the run's, or PILOT_NUMBERS // (L + d) up to CHEAP_PILOT
    where that is more; drawn from its own CPU generator so that the simulation's numbers do not depend on it).
    `predict=False` skips the prediction (and, under a manual schedule, the tangent noise): for timing the SGA loop
    alone. `planned`: the plan a manual schedule was taken from (a sweep point's, made at the sweep's deficit): the
    run is judged by that plan's target, as a planned run is, not by the default deficit's.
    """
    import torch

    from attnphase.models.signal_recovery.network import DenseSampler, PlantedTokens, ProjectedSampler
    from attnphase.validate.device import select_device, using_numba_threads
    from attnphase.validate.seeds import generator
    from attnphase.validate.sphere_sga import StepSchedule, sphere_sga

    check_simulation_size(params, settings)
    torch_device = select_device(device)
    memory_budget_bytes = check_int("memory_budget_bytes", memory_budget_bytes, 1)
    n_threads = _threads_for(params, settings, threads, torch_device)
    if noise is None and (predict or settings.schedule_kind == "auto"):
        # The pilot grows with the run (1/40 of its sequences at each of the 5 alignments) and is at least what
        # PILOT_NUMBERS allows at this size.
        pilot = max(min(MAX_PILOT, max(128, settings.trials * settings.batch * settings.steps // 40)),
                    min(CHEAP_PILOT, PILOT_NUMBERS // (params.L + params.d)))
        noise = tangent_noise(params, pilot=pilot)
    # a step moves q by the mean of --batch sequences' gradients: its noise is what the plan and the prediction take
    step_noise = None if noise is None else noise.of_batch_mean(settings.batch)
    plan = None
    eta0, k0, gamma = settings.manual_schedule
    if settings.schedule_kind == "auto":
        plan = choose_schedule(params, steps=settings.steps, noise=step_noise)
        if plan.status != Status.FAILED:
            eta0, k0, gamma = plan.eta0, plan.k0, plan.gamma
    elif planned is not None:
        if (eta0, k0, gamma, settings.steps) != (planned.eta0, planned.k0, planned.gamma, planned.steps):
            raise ParameterError("planned", planned, f"the plan of the schedule run (eta0 = {eta0:g}, k0 = {k0:g}, "
                                                     f"gamma = {gamma:g}, {settings.steps} steps)")
        plan = planned
    gen = generator(settings.seed, torch_device, rng)
    tokens = PlantedTokens(params)
    projected = settings.sampler == "projected"
    sampler = (ProjectedSampler(tokens, gen) if projected else
               DenseSampler(tokens, gen, normal_source=settings.normal_source, memory_budget_bytes=memory_budget_bytes))
    with nullcontext() if projected else using_numba_threads(n_threads):
        run = sphere_sga(sampler, d=params.d, schedule=StepSchedule(eta0, k0, gamma), steps=settings.steps,
                         trials=settings.trials, batch=settings.batch, generator=gen, device=torch_device,
                         rho0=settings.rho0, record_every=settings.recording_interval, dtype=torch.float32,
                         threads=n_threads)
    alignment = np.abs(run.final_rho)
    finite = bool(np.all(np.isfinite(run.final_rho)))
    predicted = predicted_error = reduction = None
    drift_used = no_drift = ""
    if predict and finite and noise.success:
        reduction, drift_used, no_drift = prediction_drift(params)
        if not no_drift:
            with np.errstate(all="ignore"):
                prediction = predicted_alignment(params, step_noise, run.rho[0], eta0, k0, gamma, int(run.steps[-1]),
                                                 reduction=reduction)
            if prediction is not None and all(math.isfinite(x) for x in prediction):
                predicted, predicted_error = prediction
    std = float(alignment.std(ddof=1)) if settings.trials > 1 else 0.0
    alignment_mean, alignment_error = float(alignment.mean()), std / math.sqrt(settings.trials)
    steps_run = int(run.steps[-1])
    message = run.message
    if plan is not None and plan.status == Status.FAILED:
        message += f"; {plan.message}: ran the manual default eta_k = {eta0:g}/(k + {k0:g})^{gamma:g}"
    elif plan is not None:
        message += f"; schedule planned: {plan.message}"
    short_of_target = False
    if plan is None and settings.schedule_kind == "manual" and predicted is not None:  # the planner's criterion
        note, short_of_target = _manual_schedule_reach(params, step_noise, eta0, k0, gamma, steps_run)
        message += note
    if predict and no_drift:
        message += f"; no prediction: {no_drift}"
    elif predict and predicted is None:
        message += ("; no prediction (non-finite tangent noise or drift, or steps with eta^2 N > "
                    f"{MAX_STEP_NOISE:g}, outside the small-step expansion)")
    elif predict:
        message += f"; predicted with the {drift_used}"
    z = agrees = None
    if predicted is not None:
        predicted_error, note, nearest = _escape_check(params, noise, run.rho[0], StepSchedule(eta0, k0, gamma),
                                                       steps_run, settings.batch, reduction, predicted_error)
        z, agrees = agreement(alignment_mean, alignment_error if settings.trials > 1 else None, predicted,
                              predicted_error)
        message += note + _verdict(alignment_mean, alignment_error, predicted, predicted_error, z, agrees,
                                   params.L > FINITE_DRIFT_MAX_L, nearest)
    status = run.status
    # a run that finished is `limited` where it is not what was asked for: a schedule that does not reach the
    # planner's target (planned, manual, or none could be planned), or a prediction asked for and not made (the
    # reasons are in the message); whether the prediction agrees with the run is `prediction_agrees`
    if status == Status.CONVERGED and ((plan is not None and plan.status != Status.CONVERGED) or short_of_target
                                       or (predict and predicted is None)):
        status = Status.LIMITED
    return SimulationResult(
        alignment=alignment,
        alignment_mean=alignment_mean,
        alignment_std=std,
        alignment_error=alignment_error,
        final_rho=run.final_rho,
        positive_fraction=float((run.final_rho > 0).mean()) if finite else None,
        nuisance_mass_mean=float(np.mean(run.observable[-1])) if finite else None,
        nuisance_mass_error=(float(np.std(run.observable[-1], ddof=1) / math.sqrt(settings.trials))
                             if finite and settings.trials > 1 else None),
        theta_d=params.theta_d,
        t_final=float(run.times[-1]),
        schedule="auto" if plan is not None and plan.status != Status.FAILED else "manual",  # the schedule that ran
        eta0=float(eta0),
        k0=float(k0),
        gamma=float(gamma),
        plan=plan,
        predicted_alignment=predicted,
        predicted_alignment_error=predicted_error,
        prediction_agrees=agrees,
        prediction_z=z,
        device=run.device,
        threads=n_threads if torch_device.type == "cpu" else 1,
        seconds=run.seconds,
        sequences_per_slice=settings.trials * settings.batch if projected else sampler.per_slice,
        status=status,
        message=message,
        trajectory=run,
        params=params,
        noise=noise,
    )


def _manual_schedule_reach(params: Parameters, noise, eta0: float, k0: float, gamma: float,
                           steps: int) -> tuple[str, bool]:
    """The message's account of a manual schedule against the planner's target (`schedules.schedule_reach`), and
    whether it falls short (status limited, as a planned schedule that falls short)."""
    reached, target, start = schedule_reach(params, noise, eta0, k0, gamma, steps)
    criterion = (f"the retraction-corrected ODE of the large-L drift from rho0 = {start:+.3g} (1/sqrt(d), the slower "
                 f"random start) in {steps} steps")
    if not math.isfinite(reached):
        return (f"; the manual schedule could not be checked against the planner's target |rho| = {target:.4g} "
                f"({criterion} could not be integrated): status limited, as where no schedule can be planned"), True
    if reached < target:
        return (f"; the manual schedule falls short of the planner's target: {criterion} reaches |rho| = "
                f"{reached:.4g} < {target:.4g} (status limited, as for a planned schedule)"), True
    return f"; the manual schedule reaches the planner's target: {criterion} reaches |rho| = {reached:.4g} >= " \
           f"{target:.4g}", False


def _escape_check(params: Parameters, noise, rho0, schedule, steps: int, batch: int, reduction,
                  predicted_error: float) -> tuple[float | None, str, tuple | None]:
    """The prediction's error (None where a trial starts within the escape region of an unstable fixed point,
    `escape.escape_starts`), the message's account of it, and the start nearest to an unstable point in noise scales
    (`escape.escape_starts`)."""
    inside, nearest = escape_starts(params, noise, rho0, schedule.eta(steps), batch, reduction)
    if not inside.any():
        return predicted_error, "", nearest
    _, rho_u, scale, start = nearest
    where = (f"at the unstable fixed point rho = {rho_u:.3g} of the limiting drift itself, where the ODE stays"
             if start == rho_u else
             f"within the noise-driven escape region of the unstable fixed point rho = {rho_u:.3g} of the limiting "
             f"drift (|rho0 - rho_u| < {ESCAPE_SIGMAS:g} s, s = {scale:.2g} the spread SGA's noise adds to a start "
             "there under this schedule), which the ODE leaves out")
    return None, (f"; no error on the prediction: {int(inside.sum())} of {inside.size} trials start {where} "
                  "(docs/models/signal_recovery.md, 'The theory behind simulate'): it describes neither when nor to "
                  "which side those trials escape"), nearest


def _verdict(mean: float, error: float, predicted: float, predicted_error: float | None, z: float | None,
             agrees: bool | None, large_L_drift: bool, nearest: tuple | None = None) -> str:
    """The message's verdict on the prediction, at its end (`status` is the run's own); where it does not agree, with
    the start nearest to an unstable fixed point in noise scales, the likeliest reason where it is a few."""
    run = f"mean final |rho| {mean:.4g} +- {error:.2g}"
    theory = f"{predicted:.4g}" + ("" if predicted_error is None else f" +- {predicted_error:.2g}")
    if agrees is None:
        why = "one trial, no error on its mean" if not error > 0 else "the prediction has no error"
        return f"; no verdict on the prediction ({why}): {run} against {theory}"
    if agrees:
        return (f"; the prediction agrees with the run: {run} against {theory} (z = {z:.2g}, within "
                f"{AGREEMENT_SIGMAS:g})")
    left_out = ("the noise-driven escape from unstable fixed points met on the way, the mean-field equation's O(eta) "
                "fluctuation terms" + (", the large-L drift's O(1/L) error" if large_L_drift else ""))
    near = ("" if nearest is None else
            f"; the start nearest to an unstable fixed point, rho0 = {nearest[3]:.3g}, lies {nearest[0]:.2g} noise "
            f"scales s = {nearest[2]:.2g} from rho_u = {nearest[1]:.3g} (its escape region is {ESCAPE_SIGMAS:g} s)")
    return (f"; the prediction does NOT agree with the run: {run} against {theory} (z = {z:.3g}, beyond "
            f"{AGREEMENT_SIGMAS:g}); the prediction leaves out {left_out} (docs/models/signal_recovery.md, 'The "
            f"theory behind simulate'){near}")


def simulate(
    d, L, R, theta, trials, steps, theta_scaling="direct", sigma=1.0, score_scale=1.0, sign_model="A", *,
    schedule=None, eta0=None, k0=None, gamma=None, batch=1, seed=0, device="auto", rho0=None, record_every=None,
    memory_budget_bytes: int = 1 << 30, sampler: str = "projected", threads: int | None = None,
    predict: bool = True, progress: bool = False, normal_source: str = "auto", rng: str = "device", beta=None,
) -> SimulationResult:
    """Projected SGA of `trials` independent queries from uniform random starts (or from alignment ρ₀).

    Steps η_k = η₀/(k + k₀)^γ: with `schedule="auto"` (the default when none of eta0, k0, gamma is
    given) η₀ and k₀ (γ = 1) are planned from the retraction-corrected ODE for exactly `steps` steps
    (`choose_schedule`); giving any of them (or `schedule="manual"`) runs them as given, with
    η₀ = 0.05, k₀ = 50, γ = 1 for those left out. `batch` sequences per gradient. The final
    noise-token mass is averaged over the last recording window (the last `record_every` steps,
    default steps/50) and over trials. The result carries the ODE's prediction of the mean final |ρ|
    from the trials' own starts (`SimulationResult.predicted_alignment`; `predict=False` skips it).
    `sampler`: "projected" (the gradient's exact law from 2L + 2d numbers per sequence) or "dense" (L×d
    tokens per sequence, float32, in slices under `memory_budget_bytes`; the same law, for validation).
    `normal_source` is the dense sampler's Gaussian source (`network.normal_fill`); rng: "device" or
    "cpu", where the random numbers are drawn (`attnphase.validate.seeds`; "cpu" with normal_source
    "torch" gives the same numbers on every device). `threads`: torch CPU threads (default:
    `validate.device.choose_threads`). `progress=True` shows a progress bar on a terminal (otherwise
    the caller's `attnphase.progress.shown` setting holds). `beta` is the deprecated name of `score_scale`.
    """
    from attnphase import progress as progress_display

    params = make_parameters(d, L, R, theta, theta_scaling, sigma, score_scale, sign_model, beta=beta)
    settings = SimulationSettings.validated(trials=trials, steps=steps, schedule=schedule, eta0=eta0, k0=k0,
                                            gamma=gamma, batch=batch, seed=seed, sampler=sampler, rho0=rho0,
                                            normal_source=normal_source, record_every=record_every)
    if threads is not None:
        threads = check_int("threads", threads, 1, 4096)
    predict, progress = check_bool("predict", predict), check_bool("progress", progress)
    with progress_display.shown(True) if progress else nullcontext():
        return run_sga(params, settings, device, rng=rng, memory_budget_bytes=memory_budget_bytes, threads=threads,
                       predict=predict)


def check_sweep_point(
    d, L, R, theta, theta_scaling="direct", sigma=1.0, score_scale=1.0, sign_model="A", trials=8, max_steps=2000,
    seed=0, device="cpu", deficit=0.01, *, beta=None,
) -> None:
    """What `sweep_point` checks of its parameters before its simulation, for a sweep to run on every point before
    computing any (the trials are checked with the schedule the point plans, and whether a CUDA device is there when
    the point runs): the parameters, with the θ_d, σ and score scale whose float32 gradients `simulate` refuses
    before it runs (`check_float32_tokens`; a θ of 1e13 had reached the planner and failed there)."""
    check_float32_tokens(make_parameters(d, L, R, theta, theta_scaling, sigma, score_scale, sign_model, beta=beta))
    check_choice("device", device, ("auto", "cpu", "cuda"))
    check_int("seed", seed, 0)
    check_real("deficit", deficit, 0.0, 0.25, low_open=True)
    check_int("max_steps", max_steps, 1, MAX_STEPS)
    check_int("trials", trials, 1)


def sweep_point(
    d, L, R, theta, theta_scaling="direct", sigma=1.0, score_scale=1.0, sign_model="A", trials=8, max_steps=2000,
    seed=0, device="cpu", deficit=0.01, *, beta=None,
) -> dict[str, float]:
    """One sweep point: SGA from random starts under the theory-chosen schedule (`choose_schedule`)
    against the large-L ODE started from each trial's own ρ₀ and run to the same t = Σ η_k, plain
    (`ode_*`) and retraction-corrected (`predicted_alignment`, with its error from N's sampling), and the run's
    status (`SimulationResult.status`: limited where the plan, made at `deficit`, falls short of its target or no
    prediction was made; `run_sga(planned=)`) with
    its `message`: the run's own (how it ran, the prediction made or why none was) and the plan's; `prediction_z` and
    `prediction_agrees` are simulate's verdict on the prediction (|z| ≤ 3, both errors combined)."""
    params = make_parameters(d, L, R, theta, theta_scaling, sigma, score_scale, sign_model, beta=beta)
    check_float32_tokens(params)
    noise = tangent_noise(params, seed=check_int("seed", seed, 0))
    plan = choose_schedule(params, deficit=check_real("deficit", deficit, 0.0, 0.25, low_open=True),
                           max_steps=check_int("max_steps", max_steps, 1, MAX_STEPS), noise=noise)
    if not math.isfinite(plan.eta0):  # a sweep records the point as failed, with this reason, and goes on
        raise RuntimeError(f"no step schedule could be planned for this point: {plan.message}")
    settings = SimulationSettings.validated(trials=trials, steps=plan.steps, eta0=plan.eta0, k0=plan.k0,
                                            gamma=plan.gamma, seed=seed, sampler="projected",
                                            record_every=max(1, plan.steps // 20))
    sim = run_sga(params, settings, device, noise=noise, planned=plan)
    run = sim.trajectory
    t_final = float(run.times[-1])
    ode_final = np.array([ode_trajectory(params, r0, [0.0, t_final]).x[-1] for r0 in run.rho[0]])
    fps = fixed_points(params)
    if not fps.success:  # a sweep records the point as failed, with this reason, and goes on
        raise RuntimeError(f"the limiting ODE's fixed points, which this point reports, are not defined: {fps.message}")
    ode_limit = np.array([ode_limit_point(params, fps, r0) for r0 in run.rho[0]])
    return {
        "theta_d": params.theta_d,
        "eta0": plan.eta0,  # the schedule η_k = η₀/(k + k₀)^γ that ran, so that a point can be run again
        "k0": plan.k0,
        "gamma": plan.gamma,
        "steps": float(plan.steps),
        "t_final": t_final,
        "t_target": plan.t_target,
        "budget_limited": float(plan.budget_limited),
        "retraction_corrected_alignment": plan.predicted_final,  # from ρ₀ = ±1/√d (see choose_schedule)
        "alignment_mean": sim.alignment_mean,
        "alignment_std": sim.alignment_std,
        "alignment_error": sim.alignment_error,
        "predicted_alignment": sim.predicted_alignment,
        "predicted_alignment_error": sim.predicted_alignment_error,
        # the verdict of `simulate` on the prediction (None where none was made), 1.0 / 0.0 like the flags below
        "prediction_z": sim.prediction_z,
        "prediction_agrees": None if sim.prediction_agrees is None else float(sim.prediction_agrees),
        "positive_fraction": float(np.mean(sim.final_rho > 0)),
        "nuisance_mass_mean": sim.nuisance_mass_mean,
        "nuisance_mass_error": sim.nuisance_mass_error,
        "ode_alignment_mean": float(np.mean(np.abs(ode_final))),
        "ode_positive_fraction": float(np.mean(ode_final > 0)),
        "ode_nuisance_mass_mean": float(np.mean(large_L(params, ode_final)[..., 4])),
        "ode_limit_alignment_mean": float(np.mean(np.abs(ode_limit))),
        "ode_limit_positive_fraction": float(np.mean(ode_limit > 0)),
        "ode_limit_nuisance_mass_mean": float(np.mean(large_L(params, ode_limit)[..., 4])),
        "nuisance_mass_at_xi": float(large_L(params, 1.0)[..., 4]),
        "minus_xi_stable": float(any(s for r, s in zip(fps.rho, fps.stable) if r == -1.0)),
        "interior_fixed_points": float(sum(1 for r in fps.rho if abs(r) < 1)),
        "status": sim.status.value,
        "message": sim.message,
    }
