"""`attnphase solve|threshold|simulate positional-semantic`: the positional-vs-semantic attention model.

Each command mirrors a function of `attnphase.api.positional_semantic` (solve, threshold, phase_curve,
simulate) and prints one JSON object with `--json`. Accuracy is an input: `--tol` (relative for the fields
of `solve`, absolute in α for `threshold`), met by climbing the model's ladder of quadrature rules. The
model's options (--omega, --sigma, --lam, --A, --L) come from the declarations of its `Parameters`; the
model package is imported inside the commands only, to keep CLI start-up fast.
"""

from __future__ import annotations

import dataclasses

import click

from attnphase.cli.common import (Int, RenamedOptionsCommand, as_option_error, emit, json_option, options_from,
                                  rng_option, threads_option)
from attnphase.cli.groups import keep_when_interrupted, simulate, solve, threshold
from attnphase.cli.output_paths import OutputPath
from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import (DEFAULT_A, Accuracy, Parameters, Simulation,
                                                             ThresholdSearch, check_parameter)
from attnphase.params import check_int
from attnphase.results import Status

MODEL = "positional-semantic"
omega_option = options_from(Parameters, ["omega"], required=["omega"])
alpha_option = options_from(Simulation, ["alpha"], required=["alpha"])
model_options = options_from(Parameters, ["sigma", "lam", "A", "L"])


def teacher_A(A, L):
    """A as the command used it, for its printed parameters: the default where none was given for L = 2 (so that a
    saved result records the teacher it was computed for)."""
    return list(DEFAULT_A) if A is None and L == 2 else A


def named_by_option(settings, call, *args, **kwargs):
    """call(...), a ParameterError about a model parameter or one of `settings` (a ParameterSet class) named
    by its option: the API names its arguments, the user typed options."""
    return as_option_error((settings, Parameters), call, *args, **kwargs)


def deprecated_rules(func):
    """The tensor-rule options of earlier releases, accepted for one release (hidden from --help): --nodes N
    [--check-nodes M] asks for a tensor-only ladder (N, M) instead of the model's ladder; --scan and --refine
    are ignored (the range is --alpha-min/--alpha-max, and every value is refined now)."""
    for name, kind in (("--nodes", int), ("--check-nodes", int), ("--scan", int), ("--refine", str)):
        func = click.option(name, "deprecated_" + name[2:].replace("-", "_"), type=kind, default=None, hidden=True)(func)
    return func


numba_threads_option = click.option(
    "--threads", type=Int(1, 4096), default=None,
    help="Threads of the minimisation loops, an integer in [1, 4096] (default: every core numba may use, at most the "
         "cores this process may run on).")


def use_threads(threads) -> int:
    """The numba threads of the proximal-map loops (derive.fused) for the rest of the command (restored when it
    ends: `validate.device.using_numba_threads`): --threads (at most numba's), else all of numba's. Every map
    evaluation solves 1e4-1e6 independent minimisations in one parallel loop, so the idle-core rule of the torch
    simulations does not apply: right after any computation the load average is about 1, and that rule then halved
    the threads (two-branch solve at ω = 0.3, α = 1.25 on 2 idle cores: 46 s with one thread, 34 s with two; the
    results are identical, each node being independent)."""
    import numba

    from attnphase.validate.device import available_cores, using_numba_threads

    # numba's pool has NUMBA_NUM_THREADS threads (default: the machine's cores); a larger value than the cores this
    # process may run on only oversubscribes them, so the default is the smaller of the two
    count = (check_int("--threads", threads, 1, 4096) if threads
             else min(numba.config.NUMBA_NUM_THREADS, available_cores()))
    return click.get_current_context().with_resource(using_numba_threads(count))


def tensor_rules(nodes, check_nodes, scan=None, refine=None):
    """The `rules` argument for the deprecated options (and their deprecation messages on stderr)."""
    for option, value, note in (("--scan", scan, "the α range is --alpha-min/--alpha-max"),
                                ("--refine", refine, "every value is refined on the model's ladder now")):
        if value is not None:
            click.echo(f"attnphase: {option} is deprecated and ignored ({note}); it will be removed in the next "
                       "release", err=True)
    if nodes is None and check_nodes is None:
        return "auto"
    if nodes is None:
        raise ParameterError("--check-nodes", check_nodes, "only together with --nodes (both are deprecated)")
    for option, value in (("--nodes", nodes), ("--check-nodes", check_nodes)):
        if value is not None and not 4 <= value <= 48:
            raise ParameterError(option, value, "an integer in [4, 48]")
    if check_nodes is not None and check_nodes <= nodes:
        raise ParameterError("--check-nodes", check_nodes, f"an integer in [{nodes + 1}, 48] (finer than --nodes)")
    click.echo("attnphase: --nodes/--check-nodes are deprecated and will be removed in the next release: they ask "
               "for tensor rules only, whose errors are not verified (status limited); use --tol", err=True)
    return (nodes,) if check_nodes is None else (nodes, check_nodes)


@solve.command(MODEL)
@omega_option
@alpha_option
@model_options
@options_from(Accuracy)
@click.option("--branches", default="positional,semantic", show_default=True,
              help="Comma-separated branches to solve for (positional, semantic, trivial, mixed).")
@numba_threads_option
@deprecated_rules
@json_option
def solve_command(omega, alpha, sigma, lam, A, L, tol, branches, threads, deprecated_nodes, deprecated_check_nodes,
                  deprecated_scan, deprecated_refine, as_json):
    """The positional and semantic branches (trivial and mixed on request) at (ω, α), each followed from where it
    is known to exist and refined until every field has a verified relative error ≤ --tol (<field>_error).

    A branch that does not exist at α is listed under "missing" with the evidence (where it was lost when
    followed from its anchor). global_branch: of the requested branches, the one with the lowest training loss
    ε_t = −Φ; null where the Φ gap is within the errors or a requested branch was not solved.

    On two cores, at the default tolerance: both branches at ω = 0.3, α = 1.25 in about 10 s (the positional
    branch climbs to count-split 10 there); longer where the ladder goes further up the count-split rules.

    \b
    Examples:
      attnphase solve positional-semantic --omega 0.3 --alpha 1.25 --branches positional,semantic --json
      attnphase solve positional-semantic --omega 0.3 --alpha 2 --tol 0.01 --json
    """
    from attnphase.api.positional_semantic import BRANCHES
    from attnphase.api.positional_semantic import solve as solve_point
    from attnphase.grids import LIST_RULE, split_list
    from attnphase.params import check_choice

    entries = split_list(branches)
    if entries is None:  # as --omega-grid refuses `0.3,0.4,`: an empty entry is not dropped
        raise ParameterError("--branches", branches, f"{LIST_RULE}: names of {', '.join(BRANCHES)}, each at most once")
    names = tuple(check_choice("--branches", b, BRANCHES) for b in entries)
    rules = tensor_rules(deprecated_nodes, deprecated_check_nodes, deprecated_scan, deprecated_refine)
    threads = use_threads(threads)
    try:
        result = named_by_option(Accuracy, solve_point, omega, alpha, sigma, lam, A, L, tol=tol, branches=names,
                                 rules=rules)
    except ParameterError as exc:  # the API names the list of branches, the user typed one option
        if exc.name != "branches":
            raise
        raise ParameterError("--branches", branches, exc.allowed) from None
    parameters = {"omega": omega, "alpha": alpha, "sigma": sigma, "lam": lam, "A": teacher_A(A, L), "L": L, "tol": tol,
                  "branches": list(names), "rules": rules if rules == "auto" else list(rules), "threads": threads}
    emit("solve", MODEL, parameters, result.as_dict(), as_json)
    if result.status == Status.FAILED:  # printed with its message; the exit status says it too, as for other models
        raise SystemExit(1)


@threshold.command(MODEL)
@options_from(Parameters, ["omega"], defaults={"omega": None})
@click.option("--omega-grid", default=None, metavar="START:STOP:NUM",
              help="Instead of --omega: α_c(ω) and α_l(ω) at NUM evenly spaced ω in [START, STOP] ⊂ [0, 1] (or a "
                   "list V1,V2,...), each by the same path as --omega, continued in ω. The results are listed by "
                   "ascending ω (a list is sorted).")
@model_options
@options_from(ThresholdSearch)
@click.option("--which", type=click.Choice(["both", "alpha_c", "alpha_l"]), default="both", show_default=True,
              help="The thresholds to compute (the other one's status is not_requested).")
@click.option("--checkpoint-dir", type=OutputPath(directory=True), default=None,
              help="Where each finished threshold (each finished ω with --omega-grid) is kept, so that the same "
                   "command run again after an interruption goes on from there.  [default: "
                   "$ATTNPHASE_CACHE_DIR/thresholds, else ~/.cache/attnphase/thresholds]")
@numba_threads_option
@deprecated_rules
@json_option
def threshold_command(omega, omega_grid, sigma, lam, A, L, tol, alpha_min, alpha_max, which, checkpoint_dir, threads,
                      deprecated_nodes, deprecated_check_nodes, deprecated_scan, deprecated_refine, as_json):
    """α_c (the positional and semantic branches have the same training loss) and α_l (the semantic test
    error equals the linear baseline's) at ω, each with a verified error ≤ --tol in α; or, with
    --omega-grid, both along ω.

    Each finished threshold (with --omega-grid, each finished ω) is kept (--checkpoint-dir): interrupted, the same
    command goes on from there, and its values are those of an uninterrupted run; run again, it reads them back.

    Status per threshold: converged, limited (the most accurate rules reached do not meet --tol: the value
    and its error are still given), not_found (no crossing where both branches exist; the message says which
    side wins and where a branch ended) or failed.

    α_c's value and error come from Φ of both branches on outer-split rules (three, then finer ones while the
    error is above --tol), at the states of the split-line rules (the split-line value, whose spread can miss a
    bias, is kept in the message); an error shown as n/a (null in JSON) means the rules' values still drift
    without slowing: no bound.

    \b
    On two cores, at the default tolerance: both thresholds at ω = 0.3 in about 20 s; 30-35 s at ω ≤ 0.1, where
    α_c climbs the finer outer-split rules.

    \b
    Examples:
      attnphase threshold positional-semantic --omega 0.3 --json
      attnphase threshold positional-semantic --omega 0.4 --which alpha_c --tol 0.005 --json
      attnphase threshold positional-semantic --omega-grid 0.3,0.4 --which alpha_c --tol 0.005 --json
    """
    from attnphase.api.positional_semantic import phase_curve
    from attnphase.api.positional_semantic import threshold as find_thresholds

    rules = tensor_rules(deprecated_nodes, deprecated_check_nodes, deprecated_scan, deprecated_refine)
    if omega is None and omega_grid is None:  # as click says it of a required option
        raise click.UsageError("Missing option '--omega' (one ω), or '--omega-grid' (the α_c(ω) curve).")
    if omega is not None and omega_grid is not None:
        raise ParameterError("--omega", omega, "exactly one of --omega and --omega-grid (--omega-grid was given too)")
    threads = use_threads(threads)
    names = ("alpha_c", "alpha_l") if which == "both" else (which,)
    from attnphase.resume import cache_root, kept_by_this_process, take_tally

    kept = checkpoint_dir if checkpoint_dir is not None else cache_root() / "thresholds"
    take_tally()  # from here on: what this command finds kept
    kept_before = kept_by_this_process()

    def what_an_interruption_keeps() -> str:  # counted when it is stopped: a run stopped early may have kept nothing
        pieces = kept_by_this_process() - kept_before
        if not pieces:
            return f"no piece of the threshold search finished in this run (pieces are kept in {kept})"
        return (f"{pieces} finished piece{'' if pieces == 1 else 's'} of the threshold search kept in {kept} in this "
                "run; the same command goes on from there")

    keep_when_interrupted(what_an_interruption_keeps)
    settings = dict(tol=tol, alpha_min=alpha_min, alpha_max=alpha_max, which=names, rules=rules, checkpoint_dir=kept)
    parameters = {"sigma": sigma, "lam": lam, "A": teacher_A(A, L), "L": L, "tol": tol, "alpha_min": alpha_min,
                  "alpha_max": alpha_max, "which": list(names), "rules": rules if rules == "auto" else list(rules),
                  "threads": threads}
    if omega_grid is not None:
        from attnphase.grids import parse_grid

        try:
            omegas = [check_parameter("omega", w) for w in parse_grid(f"omega={omega_grid}").values]
        except ParameterError as exc:  # the grid's rule, in this option's own form (no NAME=, which --grid has)
            rule = exc.allowed.split("; the form is ")[0]
            raise ParameterError("--omega-grid", omega_grid, f"{rule}; the form is START:STOP:NUM (NUM values from "
                                                             "START to STOP) or V1,V2,...") from None
        result = _kept_in_option(phase_curve, omegas, sigma, lam, A, L, **settings)
        _say_other_version(take_tally()["other_version"], kept)
        emit("threshold", MODEL, {"omega_grid": omega_grid, **parameters}, result.as_dict(), as_json)
        if result.status == Status.FAILED:
            raise SystemExit(1)
        return
    result = _kept_in_option(find_thresholds, omega, sigma, lam, A, L, **settings)
    _say_other_version(take_tally()["other_version"], kept)
    if result.read_back:
        click.echo(f"attnphase: {', '.join(result.read_back)} read back from {kept} (finished by an earlier run of "
                   "the same command; delete that directory to recompute)", err=True)
    emit("threshold", MODEL, {"omega": omega, **parameters}, result.as_dict(), as_json)
    if result.status == Status.FAILED:
        raise SystemExit(1)


def _kept_in_option(call, *args, **kwargs):
    """A threshold call with a ParameterError about its checkpoint_dir named by where that came from (and the others
    by their options, `named_by_option`): --checkpoint-dir, or $ATTNPHASE_CACHE_DIR with its value when the default
    was made of it (the user gave no --checkpoint-dir, and would look for none)."""
    try:
        return named_by_option(ThresholdSearch, call, *args, **kwargs)
    except ParameterError as exc:
        if exc.name != "checkpoint_dir":
            raise
        import os

        from click.core import ParameterSource

        from attnphase.resume import CACHE_ENV

        given = click.get_current_context().get_parameter_source("checkpoint_dir") is not ParameterSource.DEFAULT
        if given or not os.environ.get(CACHE_ENV):
            raise ParameterError("--checkpoint-dir", exc.value, exc.allowed) from None
        raise ParameterError(f"${CACHE_ENV}", os.environ[CACHE_ENV], exc.allowed) from None


def _say_other_version(count: int, kept) -> None:
    """One line on stderr where results kept in `kept` by another code version were computed again (the code version
    covers the whole source tree, so any commit does it): silence had read as if nothing had been kept."""
    if count:
        click.echo(f"attnphase: {count} result(s) kept in {kept} by another code version were computed again (results "
                   "of two code versions are never mixed)", err=True)


@simulate.command(MODEL, cls=RenamedOptionsCommand, renamed_options={"--seeds": "--trials"})
@omega_option
@options_from(Simulation, required=["alpha"])
@rng_option
@threads_option
@model_options
@click.option("--theory/--no-theory", default=True, show_default=True,
              help="Hold the runs against `solve` at the same point (the solve adds 10-40 s on two cores); "
                   "--no-theory reports the runs alone.")
@json_option
def simulate_command(omega, alpha, d, init, trials, seed, steps, lr, test_samples, device, rng, threads, sigma, lam,
                     A, L, theory, as_json):
    """Full-batch GD (Adam for --init random) at finite d, batched over trials, held against the theory.

    Per quantity x: the trials' values, x_mean, x_error (its standard error, x_std/√trials) and x_std (the trials'
    spread). theory: the branch the run is compared with, as `attnphase solve positional-semantic` gives it at the
    same ω, α, σ, λ, A, L (default tolerance; each field with its error): the semantic init is compared with the
    semantic branch, the positional init with the positional one, the random init with the one most trials landed
    on (by |m| and |θ| against both branches; `landed` per trial); where that branch does not exist at α the message
    says so.
    comparisons: |θ| or |m| (the branch's non-zero overlap), q, ε_g and ε_t, each with z = (mean − theory) /
    √(error² + theory error²) and agrees (|z| within n_sigma, the 99.73% Student-t band of a mean over the trials,
    trials − 1 degrees of freedom: 9.22 for 4 trials, 3.0 for many); no verdict from one or two trials or from a run
    that has not settled. theory_agrees: false if any quantity rejects the theory, true if all agree. The theory is
    d → ∞: at finite d an offset of the means is expected, and the message states d with the verdict. The solve adds
    10-40 s on two cores.

    \b
    Example:
      attnphase simulate positional-semantic --omega 0.3 --alpha 1.5 --d 200 --init semantic --trials 4 --json
    """
    from attnphase.api.positional_semantic import compare_with_theory
    from attnphase.api.positional_semantic import simulate as simulate_network

    result = named_by_option(Simulation, simulate_network, omega=omega, alpha=alpha, d=d, init=init, trials=trials,
                             seed=seed, steps=steps, lr=lr, test_samples=test_samples, device=device, sigma=sigma,
                             lam=lam, A=A, L=L, rng=rng, num_threads=threads)
    if theory:
        result = compare_with_theory(result)
    else:
        result = dataclasses.replace(result, message=f"{result.message}; not held against the theory (--no-theory)")
    parameters = {"omega": omega, "alpha": alpha, "d": d, "init": init, "trials": trials, "seed": seed,
                  "steps": steps, "lr": result.lr, "test_samples": test_samples, "device": result.device, "rng": rng,
                  "threads": result.threads, "sigma": sigma, "lam": lam, "A": teacher_A(A, L), "L": L,
                  "theory": theory}
    emit("simulate", MODEL, parameters, result.as_dict(), as_json)
    if result.status == "diverged":  # printed with its message (non-finite values are null); exit 1 says it too
        raise SystemExit(1)
