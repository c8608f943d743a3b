"""`attnphase solve|threshold|scaling|simulate copy-heads`.

P convention used by default in every command: P counts TARGET TOKENS and the squared error is summed
over positions, so n = β·P with β = 1 (periodic boundary: a sequence of length L carries L targets).
`--P-counts sequences` makes P count sequences (n = β·P·T); `--loss averaged` divides β by T.
"""

from __future__ import annotations

import functools
import math

import click

from attnphase.cli.common import Int, Real, emit, json_option, rng_option
from attnphase.cli.groups import scaling, simulate, solve, threshold
from attnphase.models.copy_heads import (
    BOUNDARIES, LINEAR_SCALES, LOSS_REDUCTIONS, P_COUNTS, READ_OUTS, REMAINDERS, ROW_SUMS, TAU_SCALES, TOKENS,
    Convention,
)

MODEL = "copy-heads"
P_HELP = ("P convention (default): P counts target tokens, loss summed, n = beta*P. "
          "Change with --P-counts/--loss.")


def _example(arguments: str) -> str:
    """A help-text example block (\\b keeps click from rewrapping it)."""
    return f"\n\n\b\nExample:\n  attnphase {arguments}"


def convention_options(func):
    """Options that choose the convention (each moves thresholds by powers of L and V)."""
    opts = [
        click.option("--P-counts", "P_counts", type=click.Choice(P_COUNTS), default="tokens", show_default=True,
                     help="What P counts: target tokens or sequences."),
        click.option("--loss", type=click.Choice(LOSS_REDUCTIONS), default="summed", show_default=True,
                     help="Squared error summed or averaged over positions."),
        click.option("--boundary", type=click.Choice(BOUNDARIES), default="periodic", show_default=True,
                     help="periodic (y_1 = x_L), drop-first (no target at position 1) or causal (drop-first and "
                          "row l attends to positions <= l)."),
        click.option("--tau-scale", type=click.Choice(TAU_SCALES), default="one", show_default=True,
                     help="Value-prior variance tau or tau/V."),
        click.option("--linear-scale", type=click.Choice(LINEAR_SCALES), default="1/L", show_default=True,
                     help="Linear attention G = kappa (A + b 11^T)."),
        click.option("--no-bias", is_flag=True, help="Linear attention without the uniform score bias b."),
        click.option("--remainder", type=click.Choice(REMAINDERS), default="map", show_default=True,
                     help="map: saddle point over G (Convention A); entropy: keep the remainder's volume."),
        click.option("--row-sums", "row_sums", type=click.Choice(ROW_SUMS), default="shared", show_default=True,
                     help="Linear attention, periodic/drop-first: one global row sum (shared) or one per row "
                          "(per-row; same saddle point, but the posterior means of simulate --fluctuations then "
                          "match the sampled network). The causal mask is always per row."),
        click.option("--read-out", "read_out", type=click.Choice(READ_OUTS), default="integrated", show_default=True,
                     help="integrated: W marginalised (Bayesian); map: joint MAP over W (what Adam minimises)."),
        click.option("--tokens", type=click.Choice(TOKENS), default="one-hot", show_default=True,
                     help="Inputs one-hot or centred (x - 1/V; targets one-hot; softmax unchanged)."),
        click.option("--beta", type=Real(0, None, low_open=True), default=1.0, show_default=True, help="Inverse temperature."),
        click.option("--tau", type=Real(0, None, low_open=True), default=1.0, show_default=True, help="Value-prior variance."),
        click.option("--sigma2", type=Real(0, None, low_open=True), default=1.0, show_default=True, help="Score prior variance."),
        click.option("--s1", type=Real(0, None, low_open=True), default=1.0, show_default=True, help="Bias prior variance (linear)."),
    ]
    for opt in reversed(opts):
        func = opt(func)

    @functools.wraps(func)
    def wrapper(*args, P_counts, loss, boundary, tau_scale, linear_scale, no_bias, remainder, row_sums, read_out, tokens, beta,
                tau, sigma2, s1, **kwargs):
        conv = Convention(boundary=boundary, P_counts=P_counts, loss=loss, tau_scale=tau_scale, linear_scale=linear_scale,
                          bias=not no_bias, remainder=remainder, row_sums=row_sums, read_out=read_out, tokens=tokens,
                          beta=beta, tau0=tau, sigma2=sigma2, s1=s1)
        return func(*args, convention=conv, **kwargs)

    return wrapper


attention_option = click.option("--attention", type=click.Choice(["softmax", "linear"]), required=True, help="Attention activation.")
L_option = click.option("--L", "L", type=Int(2, None), required=True, help="Sequence length (>= 2).")
V_option = click.option("--V", "V", type=Int(2, None), required=True, help="Vocabulary size (>= 2).")


def _conv_dict(conv: Convention) -> dict:
    return {k: getattr(conv, k) for k in conv.__dataclass_fields__}


@threshold.command(MODEL, help="P* of the copy transition (mpmath-polished) and, for linear attention, the crossover. " + P_HELP + _example("threshold copy-heads --attention softmax --L 256 --V 4 --digits 30 --json"))
@attention_option
@L_option
@V_option
@click.option("--digits", type=Int(1, 100), default=30, show_default=True, help="Significant digits of P_star_digits.")
@click.option("--reduction", type=click.Choice(["convention-a", "first-attempt"]), default="convention-a", show_default=True,
              help="Linear: reduced action of spec §2b (t, c) or the first attempt of §2 (m, q only).")
@click.option("--row-rate", type=click.Choice(["shortcut", "exact"]), default="shortcut", show_default=True,
              help="Softmax: also compute P* with the exact row rate (Sobol over the other scores; float64; P_star_exact_row_rate_digits keeps only the digits its Sobol error supports).")
@convention_options
@json_option
def threshold_cmd(attention, L, V, digits, reduction, row_rate, convention, as_json):
    from attnphase.api.copy_heads import softmax_exact_prior_threshold
    from attnphase.api.copy_heads import supported_digits_string as api_supported_digits
    from attnphase.api.copy_heads import threshold as api_threshold

    r = api_threshold(attention, L, V, digits, convention, reduction=reduction)
    result = {"order": r.order, "P_star": r.P_star, "P_star_digits": r.P_star_digits, "error": r.error,
              "n_star": r.n_star, "status": r.status, "message": r.message}
    if attention == "linear":
        result.update({"P_crossover": r.P_crossover, "P_crossover_digits": r.P_crossover_digits,
                       "soft_mode": r.soft_mode, "exponent": r.exponent, "landau_a4": r.landau_a4})
    else:
        result.update({"spinodals": r.spinodals, "jump": r.jump, **r.details})
        if row_rate == "exact":
            ex = softmax_exact_prior_threshold(L, V, convention)
            result.update({"order_exact_row_rate": ex["order"], "P_star_exact_row_rate": ex["P_star_exact"],
                           "P_star_exact_row_rate_error": ex.get("error"),
                           # only the digits the Sobol error supports (at most --digits): see api.supported_digits_string
                           "P_star_exact_row_rate_digits": api_supported_digits(ex["P_star_exact"], ex.get("error", math.nan), digits)})
    emit("threshold", MODEL, {"attention": attention, "L": L, "V": V, "digits": digits, "reduction": reduction, "row_rate": row_rate,
                              "convention": _conv_dict(convention)}, result, as_json)


@scaling.command(MODEL, help="P* over L = L-min, 2^k, L-max and fits against each claimed law. " + P_HELP + _example("scaling copy-heads --attention linear --V 4 --L-min 16 --L-max 4096 --json"))
@attention_option
@V_option
@click.option("--L-min", "L_min", type=Int(2, None), required=True, help="Smallest L.")
@click.option("--L-max", "L_max", type=Int(2, 2**24), required=True, help="Largest L (>= L-min).")
@click.option("--digits", type=Int(1, 100), default=15, show_default=True)
@convention_options
@json_option
def scaling_cmd(attention, V, L_min, L_max, digits, convention, as_json):
    from attnphase.api.copy_heads import scaling as api_scaling
    from attnphase.errors import ParameterError

    if L_max < L_min:
        raise ParameterError("--L-max", L_max, f"an integer >= --L-min ({L_min})")
    try:
        r = api_scaling(attention, V, L_min, L_max, digits, convention)
    except ParameterError as exc:
        if exc.name != "L_max":
            raise
        raise ParameterError("--L-max", L_max, exc.allowed.replace("L_min", "--L-min").replace("L_max", "--L-max")) from None
    result = {"points": r.points, "fit": r.fits, "extrapolation": r.extrapolation, "status": r.status, "message": r.message}
    emit("scaling", MODEL, {"attention": attention, "V": V, "L_min": L_min, "L_max": L_max, "convention": _conv_dict(convention)}, result, as_json)


@solve.command(MODEL, help="Minima of the reduced action at one P (stability from the Hessian). " + P_HELP + _example("solve copy-heads --attention softmax --L 16 --V 4 --P 300 --json"))
@attention_option
@L_option
@V_option
@click.option("--P", "P", type=Real(0, None, low_open=True), required=True, help="Number of samples (> 0), see the P convention.")
@convention_options
@json_option
def solve_cmd(attention, L, V, P, convention, as_json):
    from attnphase.api.copy_heads import solve as api_solve

    r = api_solve(attention, L, V, P, convention)
    result = {"minima": r.minima, "global": r.minima[r.global_index] if r.global_index is not None else None,
              "global_index": r.global_index, "n": r.n, "status": r.status, "message": r.message}
    emit("solve", MODEL, {"attention": attention, "L": L, "V": V, "P": P, "convention": _conv_dict(convention)}, result, as_json)
    if r.status == "failed":  # the result was printed (status and message); the exit status says it too
        raise SystemExit(1)


@simulate.command(MODEL, help="The real one-head network on the copy task: SGLD (posterior) or Adam (MAP). "
                  "P counts target tokens by default (P // T sequences; --P-counts sequences to count sequences)." + _example("simulate copy-heads --attention softmax --L 8 --V 4 --P 400 --sampler sgld --chains 2 --json"))
@attention_option
@L_option
@V_option
@click.option("--P", "P", type=Real(0, None, low_open=True), required=True)
@click.option("--sampler", type=click.Choice(["sgld", "adam"]), default="sgld", show_default=True)
@click.option("--chains", type=Int(1, 4096), default=2, show_default=True, help="SGLD chains (alternating uniform/copy starts) or Adam seeds.")
@click.option("--steps", type=Int(10, 10**7), default=4000, show_default=True)
@click.option("--seed", type=Int(0, 2**63 - 1), default=0, show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--qk-width", "qk_width", type=Int(0, 10**5), default=0, show_default=True,
              help="Query/key width d (>= L) for scores Q^T K/sqrt(d); 0 samples the scores directly (wide limit).")
@click.option("--fluctuations", is_flag=True,
              help="Linear attention, sgld: compare with the means of the order parameters over exp(-S) of the reduced action "
                   "(their own fluctuations) instead of its minimum.")
@rng_option
@convention_options
@json_option
def simulate_cmd(attention, L, V, P, sampler, chains, steps, seed, device, qk_width, fluctuations, rng, convention, as_json):
    from attnphase.api.copy_heads import simulate as api_simulate
    from attnphase.errors import ParameterError

    if 0 < qk_width < L:
        raise ParameterError("--qk-width", qk_width, f"0 or an integer >= L ({L})")
    r = api_simulate(attention, L, V, P, sampler=sampler, chains=chains, steps=steps, seed=seed, device=device,
                     convention=convention, qk_width=qk_width or None, rng=rng, fluctuations=fluctuations)
    emit("simulate", MODEL, {"attention": attention, "L": L, "V": V, "P": P, "sampler": sampler, "chains": chains,
                             "steps": steps, "seed": seed, "device": device, "rng": rng, "qk_width": qk_width,
                             "fluctuations": fluctuations,
                             "convention": _conv_dict(convention)}, r, as_json)
