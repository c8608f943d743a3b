"""`attnphase solve|simulate signal-recovery`.

Conventions: scores β⟨q, x_i⟩ (β: --score-scale); x_i = θ_d s_i ξ + z_i on the R informative tokens (s_i per
sign model A/B/C) and x_i = z_i on the others, z_i ~ N(0, σ² I_d); θ_d = θ (--theta-scaling direct) or θ√d
(sqrt-d); L counts all tokens, R the informative ones. The options and their ranges come from the
declarations in `attnphase.models.signal_recovery.parameters`. `--beta` is the old spelling of
`--score-scale` (accepted for one release). `solve` evaluates the exact finite-L reduction wherever it fits in
memory (L <= 65536) and the large-L form beyond (--reduction auto); `--finite` is the old spelling of
`--reduction finite`. `simulate` plans its step schedule unless --eta0, --k0 or
--gamma is given, runs the projected sampler unless --sampler dense, and chooses its CPU threads unless
--threads is given.
"""

from __future__ import annotations

import click

from attnphase.cli.common import (
    RenamedOptionsCommand, as_option_error, declared_options, emit, json_option, options_from, rng_option,
    threads_option,
)
from attnphase.cli.groups import simulate, solve
from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.parameters import Parameters, SimulationSettings, SolveSettings
from attnphase.results import Status

__all__ = ["solve_cmd", "simulate_cmd"]

MODEL = "signal-recovery"
RENAMED = {"--beta": "--score-scale"}
model_options = options_from(Parameters, required=("d", "L", "R", "theta"))


def _as_option_error(call, *args, **kwargs):
    """call(*args, **kwargs), with an error about a declared parameter (a cross-parameter check, a memory
    bound) or the device named by the option that carries it; any other error keeps its name."""
    options = {**declared_options(Parameters, SolveSettings, SimulationSettings), "device": "--device", "rng": "--rng"}
    return as_option_error(options, call, *args, **kwargs)


@solve.command(MODEL, cls=RenamedOptionsCommand, renamed_options=RENAMED)
@model_options
@options_from(SolveSettings, required=("rho",))
@click.option("--reduction", type=click.Choice(["auto", "finite", "large-L"]), default=None,
              help="finite: the exact finite-L reduction (Monte Carlo with standard errors); large-L: the closed form "
                   "(no sampling; an error bound where its O(1/L) expansion holds, status limited where it does not); "
                   "auto (default): finite where L <= 65536, else large-L.")
@click.option("--finite", is_flag=True, default=None, help="Old spelling of --reduction finite.")
@json_option
def solve_cmd(rho, samples, seed, reduction, finite, as_json, **model):
    """J(rho), J'(rho), the drift (1 - rho^2) J' and the noise-token attention mass, with their errors.

    By default at the given finite d, L, R: the exact reduction to L scalar scores, by Monte Carlo (--samples draws,
    standard errors; 4096 draws take about 1 s at L = 500, 5-8 s at L = 10500, 30 s at L = 65536), and the large-L
    closed form for L > 65536. The closed form (--reduction large-L; no sampling) is exact as L -> infinity; its errors
    bound the O(1/L) terms it leaves out. Where those are not small (few tokens or a large score scale: the softmax
    is dominated by a few tokens) its status is limited, its errors null, and the message says by how much.

    \b
    Example (5-8 s; with --reduction large-L the closed form, 0.02% from the exact value here):
      attnphase solve signal-recovery --d 1000 --L 10500 --R 500 --theta 0.25 --rho 0.5 --json
    """
    from attnphase.models.signal_recovery.population import curve, resolve_reduction

    params = _as_option_error(Parameters.validated, **model)
    settings = _as_option_error(SolveSettings.validated, rho=rho, samples=samples, seed=seed)
    if finite is not None:  # said as for the renamed options (RenamedOptionsCommand), whose rewriting a flag escapes
        click.echo("attnphase: --finite is deprecated and will be removed in the next release; use --reduction finite",
                   err=True)
    try:
        asked = resolve_reduction(reduction, finite, "auto")
    except ParameterError:
        raise ParameterError("--finite", True, f"left out when --reduction {reduction} is given (--finite is the old "
                                               "spelling of --reduction finite)") from None
    result = _as_option_error(curve, params, [settings.rho], reduction=asked, samples=settings.samples,
                              seed=settings.seed)
    r = result.at(0, settings.rho)
    parameters = {**params.as_dict(), "rho": rho, "reduction": asked}
    if r.method == "finite-L":
        parameters.update({"samples": samples, "seed": seed})
    emit("solve", MODEL, parameters, r.as_dict(), as_json)
    if r.status == Status.FAILED:  # the result was printed (status and message); the exit status says it too
        raise SystemExit(1)


@simulate.command(MODEL, cls=RenamedOptionsCommand, renamed_options=RENAMED)
@model_options
@options_from(SimulationSettings, ["trials", "steps", "schedule", "eta0", "k0", "gamma", "batch", "seed"],
              required=("trials", "steps"))
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Torch device.")
@threads_option
@options_from(SimulationSettings, ["sampler", "rho0", "normal_source"])
@rng_option
@json_option
def simulate_cmd(trials, steps, schedule, eta0, k0, gamma, batch, seed, device, threads, sampler, rho0, normal_source,
                 rng, as_json, **model):
    """Projected SGA of the query, all trials batched; final |rho| per trial and the noise-token mass.

    By default the step schedule eta_k = eta0/(k + k0) is planned for the given number of steps from the
    retraction-corrected ODE (--schedule auto); the output names the schedule that ran and the ODE's
    prediction of the mean final |rho| from the trials' own starts (predicted_alignment), and whether it
    agrees with the run (prediction_agrees: |z| <= 3, both errors combined; null where the prediction has no
    error, as for trials that start within the noise-driven escape region of an unstable fixed point). The
    status is the run's own: converged where the schedule that ran reaches the planner's target |rho|. Giving
    --eta0, --k0 or --gamma runs that schedule instead (--schedule manual).

    \b
    Example (recovers xi: mean final |rho| 0.9973 +- 0.0001 against the predicted 0.9972, status converged; the
    planned schedule needs about 4000 steps to reach the default target 0.996 here, 2000 reach 0.994 (limited);
    about 9 s of CPU, 9-10 s wall on 2 idle cores):
      attnphase simulate signal-recovery --d 64 --L 512 --R 64 --theta 1 --trials 8 --steps 4000
    """
    from attnphase.cli.display import units_from
    from attnphase.models.signal_recovery.simulate import run_sga

    params = _as_option_error(Parameters.validated, **model)
    settings = _as_option_error(SimulationSettings.validated, trials=trials, steps=steps, schedule=schedule, eta0=eta0,
                                k0=k0, gamma=gamma, batch=batch, seed=seed, sampler=sampler, rho0=rho0,
                                normal_source=normal_source)
    r = _as_option_error(run_sga, params, settings, device, rng=rng, threads=threads)
    # The schedule kind as resolved (auto unless eta0, k0 or gamma was given); the result has the values that ran.
    parameters = {**params.as_dict(), **settings.as_dict(), "schedule": settings.schedule_kind, "device": device,
                  "rng": rng, "threads": threads}
    emit("simulate", MODEL, parameters, r.as_dict(), as_json, units=units_from(r))
    if r.status == Status.DIVERGED:  # printed with its message; the non-finite alignments are null
        raise SystemExit(1)
