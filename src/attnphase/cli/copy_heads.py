"""`attnphase solve|threshold|scaling|simulate copy-heads`.

P convention used by default in every command: P counts TARGET TOKENS and the squared error is summed
over positions, so n = β·P with β = 1 (periodic boundary: a sequence of length L carries L targets).
`--P-counts sequences` makes P count sequences (n = β·P·T); `--loss averaged` divides β by T.

The options come from the model's declarations (`models.copy_heads.convention`, `models.copy_heads.parameters`),
so the ranges are the API's; results are printed with `as_dict()`. Renamed options (old spelling accepted for one
release): --sigma2 is --score-variance, and for simulate --sampler sgld|adam is --algorithm mala|adam, --chains
is --trials.
"""

from __future__ import annotations

import functools

import click

from attnphase.cli.common import (
    RenamedOptionsCommand, as_option_error, declared_options, emit, json_option, option_name, options_from,
    threads_option,
)
from attnphase.cli.groups import scaling, simulate, solve, threshold
from attnphase.errors import ParameterError
from attnphase.models.copy_heads.convention import LINEAR_ONLY, Convention
from attnphase.models.copy_heads.parameters import (
    DataSize, InstanceParameters, ScalingRange, SimulationSettings, ThresholdSettings,
)
from attnphase.results import Status

MODEL = "copy-heads"
P_HELP = ("P convention (default): P counts target tokens, loss summed, n = beta*P. "
          "Change with --P-counts/--loss.")
RENAMED = {"--sigma2": "--score-variance"}
DECLARED = (InstanceParameters, Convention, DataSize, ThresholdSettings, ScalingRange, SimulationSettings)


def _example(arguments: str) -> str:
    """A help-text example block (\\b keeps click from rewrapping it)."""
    return f"\n\n\b\nExample:\n  attnphase {arguments}"


def _call(call, *args, **kwargs):
    """call(*args, **kwargs) with a ParameterError about any declared parameter renamed to its CLI option
    (`as_option_error`), and the messages of its results naming the options too: the model names a parameter as its
    caller spells it (`homogeneous.options_named`), and the CLI hands it the options ("P (--P)", "--tau = 2")."""
    from attnphase.models.copy_heads.homogeneous import options_named

    with options_named(declared_options(*DECLARED)):
        return as_option_error(DECLARED, call, *args, **kwargs)


_CONVENTION_FIELDS = [name for name in Convention.declarations() if name != "bias"]
# The convention's options that only linear attention has, besides --no-bias (the model refuses them too; the CLI
# checks first to name the option as typed).
_LINEAR_ONLY = tuple(name for name in LINEAR_ONLY if name != "bias")


def refuse_other_activation(attention: str, options: dict[str, tuple[object, object]]) -> None:
    """A ParameterError for the first of `options` (option -> (value, default)) set away from its default: each
    applies to the other activation only, so with `attention` it would be echoed in the parameters as if applied
    while changing nothing. Left at its default it changes nothing either way, and passes (as --fluctuations passes
    with --algorithm adam where it is left out)."""
    other = "linear" if attention == "softmax" else "softmax"
    for option, (value, default) in options.items():
        if value != default:
            raise ParameterError(option, value, f"left out with --attention {attention}: it applies to {other} "
                                                "attention only")


def convention_options(func):
    """Options that choose the convention (each moves thresholds by powers of L and V). With --attention softmax
    the linear-only ones (--no-bias, --linear-scale, --row-sums, --s1) are refused unless left at their defaults."""
    func = options_from(Convention, _CONVENTION_FIELDS)(func)
    func = click.option("--no-bias", is_flag=True, help="Linear attention without the uniform score bias b.")(func)
    declared = Convention.declarations()

    @functools.wraps(func)
    def wrapper(*args, no_bias, **kwargs):
        fields = {name: kwargs.pop(name) for name in _CONVENTION_FIELDS}
        if kwargs["attention"] == "softmax":
            refuse_other_activation("softmax", {"--no-bias": (no_bias, False), **{
                option_name(declared[name]): (fields[name], declared[name].default) for name in _LINEAR_ONLY}})
        return func(*args, convention=Convention(bias=not no_bias, **fields), **kwargs)

    return wrapper


def _convention_json(convention: Convention) -> dict:
    """The convention by option name (--tau is printed as "tau", --score-variance as "score_variance")."""
    return {option_name(field).lstrip("-").replace("-", "_"): getattr(convention, name)
            for name, field in Convention.declarations().items()}


instance_options = options_from(InstanceParameters, ["attention", "L", "V"])


@threshold.command(MODEL, cls=RenamedOptionsCommand, renamed_options=RENAMED,
                   help="P* of the copy transition (mpmath-polished) and, for linear attention, the crossover. "
                        "The digits are those of the model at the options' float64 values (--beta 0.8 is "
                        "0.8000000000000000444...). " + P_HELP
                        + _example("threshold copy-heads --attention softmax --L 256 --V 4 --digits 30 --json"))
@instance_options
@options_from(ThresholdSettings)
@convention_options
@json_option
def threshold_cmd(attention, L, V, digits, reduction, row_rate, convention, as_json):
    from attnphase.api.copy_heads import softmax_exact_prior_threshold
    from attnphase.api.copy_heads import threshold as api_threshold

    # --reduction chooses linear attention's reduction, --row-rate softmax's row rate
    name, value = ("reduction", reduction) if attention == "softmax" else ("row_rate", row_rate)
    declared = ThresholdSettings.declarations()[name]
    refuse_other_activation(attention, {option_name(declared): (value, declared.default)})

    r = _call(api_threshold, attention, L, V, digits, convention, reduction=reduction)
    result = r.as_dict()
    if attention == "softmax" and row_rate == "exact":
        ex = _call(softmax_exact_prior_threshold, L, V, convention, digits=digits)
        # only the digits the Sobol error supports (at most --digits and 17, float64): numeric.digits.supported_digits
        result.update({"order_exact_row_rate": ex.order, "P_star_exact_row_rate": ex.P_star_exact,
                       "P_star_exact_row_rate_error": ex.error, "P_star_exact_row_rate_digits": ex.P_star_exact_digits})
    emit("threshold", MODEL, {"attention": attention, "L": L, "V": V, "digits": digits, "reduction": reduction,
                              "row_rate": row_rate, "convention": _convention_json(convention)}, result, as_json)


@scaling.command(MODEL, cls=RenamedOptionsCommand, renamed_options=RENAMED,
                 help="P* over L = L-min, 2^k, L-max and fits against each claimed law, in L: each fit's law is the "
                      "power of L it tests, and not_tested names the part of the claim it leaves (the V power: "
                      "api.copy_heads.scaling_in_V fits in V). exponent_low/high: the exponent's 95% band widened by "
                      "the drift of the local slope and the geometric tail of its changes (systematic; settles: "
                      "false where they do not shrink, and no tail is added). verdict: yes (the claimed exponent "
                      "lies in that band and the band excludes the exponents 'resolution', 0.5, away), no (outside "
                      "the band) or undecided (inside, but the band too wide to tell the claim from its neighbours), "
                      "the rule of the reproduce report; holds: the same as a flag (true, false, null for "
                      "undecided). statistical_low/high: the band from the residuals alone, too narrow while the "
                      "slope drifts. Where the corrections are logarithmic (softmax P*/ln^2 L) the widened band "
                      "bounds the effective exponent over the sizes fitted, not the limit 1. Softmax: "
                      "fit.P_star.verdict (and holds) is the verdict on the asymptotic law P* ~ L ln^2 L by the "
                      "corrected ratio (the criterion of the reproduce report and the model page; 'criterion' says "
                      "why); the plain log-log fit of P*/ln^2 L, biased by slowly decaying log corrections, keeps its "
                      "own as verdict_by_plain_fit and holds_by_plain_fit. "
                      + P_HELP
                      + _example("scaling copy-heads --attention linear --V 4 --L-min 16 --L-max 4096 --json"))
@options_from(InstanceParameters, ["attention", "V"])
@options_from(ScalingRange)
@convention_options
@json_option
def scaling_cmd(attention, V, L_min, L_max, digits, convention, as_json):
    from attnphase.api.copy_heads import scaling as api_scaling

    r = _call(api_scaling, attention, V, L_min, L_max, digits, convention)
    result = r.as_dict()
    verdict = result.pop("law_verdict")
    if verdict is not None:  # softmax: the verdict by the corrected ratio, and its criterion, beside the fit it judges
        result["fit"]["P_star"].update(verdict)
    emit("scaling", MODEL, {"attention": attention, "V": V, "L_min": L_min, "L_max": L_max,
                            "convention": _convention_json(convention)}, result, as_json)
    if r.status == Status.FAILED:  # printed with its message; the exit status says it too, as for other commands
        raise SystemExit(1)


@solve.command(MODEL, cls=RenamedOptionsCommand, renamed_options=RENAMED,
               help="Minima of the reduced action at one P (stability from the Hessian). " + P_HELP
                    + _example("solve copy-heads --attention softmax --L 16 --V 4 --P 300 --json"))
@instance_options
@options_from(DataSize)
@convention_options
@json_option
def solve_cmd(attention, L, V, P, convention, as_json):
    from attnphase.api.copy_heads import solve as api_solve

    r = _call(api_solve, attention, L, V, P, convention)
    emit("solve", MODEL, {"attention": attention, "L": L, "V": V, "P": P, "convention": _convention_json(convention)},
         r.as_dict(), as_json)
    if not r.success:  # the result was printed (status and message); the exit status says it too
        raise SystemExit(1)


@simulate.command(MODEL, cls=RenamedOptionsCommand,
                  renamed_options={**RENAMED, "--sampler": "--algorithm", "--chains": "--trials"},
                  renamed_values={("--algorithm", "sgld"): "mala"},
                  help="The real one-head network on the copy task: MALA sampling of the posterior or Adam (MAP), "
                       "against the theory, with error bars from the chains' own statistics (ESS, R-hat in "
                       "'diagnostics'; --data-sets for independent training sets). status and success describe the "
                       "run itself (mixed, settled), as in every model's simulate; theory_agrees is the verdict on "
                       "the theory it compared with (false when any compared quantity rejects it, and the message "
                       "names each one with its z; null while a quantity has no verdict, e.g. 'not resolved' where "
                       "its own R-hat or ESS fail: no_verdict says why). P counts target tokens by default "
                       "(P // T sequences; --P-counts sequences to count sequences). The example (about half a "
                       "minute) samples linear attention against the convention it realises; its status is "
                       "poor_mixing: the chains move slowly along c (R-hat about 1.16, ESS about 17 of 1200 draws), "
                       "so c_uniform (t), c_copy (c) and rho are not resolved and only test_loss (the Gibbs loss) "
                       "gets a verdict (it agrees with the posterior mean); more --steps resolve more of them."
                       + _example("simulate copy-heads --attention linear --L 8 --V 4 --P 1000 --remainder entropy "
                                  "--row-sums per-row --fluctuations --trials 4 --steps 6000 --seed 3 --device cpu "
                                  "--json"))
@instance_options
@options_from(DataSize)
@options_from(SimulationSettings, ["algorithm", "trials", "steps", "seed", "device", "qk_width", "rng", "data_sets"],
              defaults={"qk_width": 0})
@click.option("--fluctuations", is_flag=True, help=SimulationSettings.declarations()["fluctuations"].metadata["help"])
@threads_option
@convention_options
@json_option
def simulate_cmd(attention, L, V, P, algorithm, trials, steps, seed, device, qk_width, rng, data_sets, fluctuations,
                 threads, convention, as_json):
    from attnphase.api.copy_heads import simulate as api_simulate

    r = _call(api_simulate, attention, L, V, P, algorithm=algorithm, trials=trials, steps=steps, seed=seed,
              device=device, convention=convention, qk_width=qk_width, rng=rng, fluctuations=fluctuations,
              data_sets=data_sets, threads=threads)
    emit("simulate", MODEL, {"attention": attention, "L": L, "V": V, "P": P, "algorithm": algorithm, "trials": trials,
                             "steps": steps, "seed": seed, "device": device, "rng": rng, "qk_width": qk_width,
                             "data_sets": data_sets, "fluctuations": fluctuations,
                             "convention": _convention_json(convention)}, r.as_dict(), as_json)
