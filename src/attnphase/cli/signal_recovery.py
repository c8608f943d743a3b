"""`attnphase solve|simulate signal-recovery`.

Conventions: scores β⟨q, x_i⟩; x_i = θ_d s_i ξ + z_i on the R informative tokens (s_i per sign model A/B/C)
and x_i = z_i on the others, z_i ~ N(0, σ² I_d); θ_d = θ (--theta-scaling direct) or θ√d (sqrt-d);
L counts all tokens, R the informative ones. Defaults σ = 1, β = 1, sign model A, direct.
"""

from __future__ import annotations

import sys

import click
import numpy as np

from attnphase.cli.common import Int, Real, emit, json_option, rng_option
from attnphase.cli.groups import simulate, solve
from attnphase.api.signal_recovery import MAX_SIZE, MAX_STEPS, MIN_TOKENS
from attnphase.errors import ParameterError
from attnphase.models.signal_recovery import SIGN_MODELS, THETA_SCALINGS
from attnphase.validate.device import DEVICE_CHOICES

MODEL = "signal-recovery"


def model_options(func):
    """The model's parameters, shared by both commands."""
    opts = [
        click.option("--d", "d", type=Int(2, MAX_SIZE), required=True, help="Dimension (>= 2)."),
        click.option("--L", "L", type=Int(MIN_TOKENS, MAX_SIZE), required=True,
                     help="Number of tokens, all of them (>= 2: one token makes the objective flat)."),
        click.option("--R", "R", type=Int(1, None), required=True, help="Number of informative tokens (1..L; R = L: no nuisance tokens)."),
        click.option("--theta", type=Real(0, None), required=True, help="Signal strength (>= 0)."),
        click.option("--theta-scaling", type=click.Choice(THETA_SCALINGS), default="direct", show_default=True,
                     help="theta_d = theta (direct) or theta*sqrt(d)."),
        click.option("--sigma", type=Real(0, None, low_open=True), default=1.0, show_default=True,
                     help="Noise standard deviation."),
        click.option("--beta", type=Real(0, None, low_open=True), default=1.0, show_default=True,
                     help="Score scale: scores beta*<q, x_i>."),
        click.option("--sign-model", type=click.Choice(SIGN_MODELS), default="A", show_default=True,
                     help="A: +theta_d xi; B: one random sign per sequence; C: one random sign per informative token."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def _check_R(R: int, L: int) -> None:
    if R > L:
        raise ParameterError("--R", R, f"an integer in [1, {L}] (at most --L)")


# API parameters that are options of these commands (an error about any other name comes from inside a
# solver and keeps its name).
_OPTION_PARAMETERS = ("d", "L", "R", "theta", "theta_scaling", "sigma", "beta", "sign_model", "rho", "samples", "seed",
                      "trials", "steps", "eta0", "k0", "gamma", "batch", "device", "sampler", "rho0",
                      "normal_source", "rng")


def _as_option_error(call, *args, **kwargs):
    """call(*args, **kwargs), with the API's cross-parameter errors (about d, L, theta, trials...) renamed
    to the option that carries the parameter."""
    try:
        return call(*args, **kwargs)
    except ParameterError as exc:
        if exc.name not in _OPTION_PARAMETERS:
            raise
        raise ParameterError("--" + exc.name.replace("_", "-"), exc.value, exc.allowed) from None


@solve.command(MODEL)
@model_options
@click.option("--rho", type=Real(-1, 1), required=True, help="Alignment <q, xi> in [-1, 1].")
@click.option("--finite", is_flag=True, help="Exact finite-L reduction (Monte Carlo, adds J_error) instead of the large-L form.")
@click.option("--samples", type=Int(2, None), default=4096, show_default=True, help="Monte Carlo samples with --finite.")
@click.option("--seed", type=Int(0, 2**63 - 1), default=0, show_default=True, help="Seed of the --finite samples.")
@json_option
def solve_cmd(d, L, R, theta, theta_scaling, sigma, beta, sign_model, rho, finite, samples, seed, as_json):
    """J(rho), J'(rho), the drift (1 - rho^2) J' and the noise-token attention mass.

    \b
    Example:
      attnphase solve signal-recovery --d 1000 --L 10500 --R 500 --theta 0.25 --rho 0.5 --json
    """
    from attnphase.api.signal_recovery import solve as api_solve

    _check_R(R, L)
    r = _as_option_error(api_solve, d, L, R, theta, rho, theta_scaling, sigma, beta, sign_model, finite, samples=samples, seed=seed)
    result = {"J": r.J, "dJ": r.dJ, "drift": r.drift, "nuisance_mass": r.nuisance_mass, "theta_d": r.theta_d,
              "method": r.method, "status": r.status, "message": r.message}
    if finite:
        result.update({"J_error": r.J_error, "dJ_error": r.dJ_error, "drift_error": r.drift_error,
                       "nuisance_mass_error": r.nuisance_mass_error, "samples": r.n_samples})
    params = {"d": d, "L": L, "R": R, "theta": theta, "theta_scaling": theta_scaling, "sigma": sigma, "beta": beta,
              "sign_model": sign_model, "rho": rho, "finite": finite}
    if finite:
        params.update({"samples": samples, "seed": seed})
    emit("solve", MODEL, params, result, as_json)
    if r.status == "failed":  # the result was printed (status and message); the exit status says it too
        raise SystemExit(1)


@simulate.command(MODEL)
@model_options
@click.option("--trials", type=Int(1, None), required=True, help="Independent trials (batched).")
@click.option("--steps", type=Int(1, MAX_STEPS), required=True, help="SGA steps.")
@click.option("--eta0", type=Real(0, None, low_open=True), default=0.05, show_default=True, help="Step size eta_k = eta0/(k + k0)^gamma.")
@click.option("--k0", type=Real(0, None), default=10.0, show_default=True, help="Schedule offset k0.")
@click.option("--gamma", type=Real(0, 1), default=0.6, show_default=True, help="Schedule exponent gamma.")
@click.option("--batch", type=Int(1, None), default=1, show_default=True, help="Sequences per gradient (mini-batch).")
@click.option("--seed", type=Int(0, 2**63 - 1), default=0, show_default=True, help="Seed.")
@click.option("--device", type=click.Choice(DEVICE_CHOICES), default="auto", show_default=True, help="Torch device.")
@click.option("--sampler", type=click.Choice(["dense", "projected"]), default="dense", show_default=True,
              help="dense: L x d tokens per sequence; projected: the same gradient law from 2L + 2d numbers.")
@click.option("--rho0", type=Real(-1, 1), default=None, help="Start every trial at this alignment (default: uniform on the sphere).")
@click.option("--normal-source", "normal_source", type=click.Choice(["auto", "ziggurat", "torch"]), default="auto",
              show_default=True, help="Dense sampler's Gaussian source: ziggurat (CPU only), torch, or auto (ziggurat on the CPU).")
@rng_option
@json_option
def simulate_cmd(d, L, R, theta, theta_scaling, sigma, beta, sign_model, trials, steps, eta0, k0, gamma, batch, seed,
                 device, sampler, rho0, normal_source, rng, as_json):
    """Projected SGA of the query, all trials batched; final |rho| per trial and the noise-token mass.

    \b
    Example:
      attnphase simulate signal-recovery --d 64 --L 512 --R 64 --theta 1 --trials 8 --steps 200 --json
    """
    from attnphase.api.signal_recovery import simulate as api_simulate

    _check_R(R, L)
    if k0 == 0 and gamma > 0:
        raise ParameterError("--k0", k0, "a real number > 0 when --gamma > 0")
    r = _as_option_error(api_simulate, d, L, R, theta, trials, steps, theta_scaling, sigma, beta, sign_model, eta0, k0, gamma, batch,
                     seed, device, rho0=rho0, sampler=sampler, progress=not as_json and sys.stderr.isatty(),
                     normal_source=normal_source, rng=rng)
    run = r.trajectory
    result = {"alignment_mean": r.alignment_mean, "alignment_std": r.alignment_std, "alignment": r.alignment,
              "final_rho": r.final_rho,
              "positive_fraction": float((r.final_rho > 0).mean()) if np.all(np.isfinite(r.final_rho)) else None,
              "nuisance_mass_mean": r.nuisance_mass_mean, "theta_d": r.theta_d, "t_final": float(run.times[-1]),
              "device": run.device, "seconds": run.seconds, "status": r.status, "message": r.message}
    params = {"d": d, "L": L, "R": R, "theta": theta, "theta_scaling": theta_scaling, "sigma": sigma, "beta": beta,
              "sign_model": sign_model, "trials": trials, "steps": steps, "eta0": eta0, "k0": k0, "gamma": gamma,
              "batch": batch, "seed": seed, "device": device, "sampler": sampler, "rho0": rho0,
              "normal_source": normal_source, "rng": rng}
    emit("simulate", MODEL, params, result, as_json)
    if r.status == "diverged":  # printed with its message; the non-finite alignments are null
        raise SystemExit(1)
