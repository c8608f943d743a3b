"""The real network against the theory: `simulate` (one P) and `simulate_row_model` (the row model); the runs over
several P in one batch (`simulate_sweep`, `simulate_hysteresis`) are `batched_simulation`'s, on the helpers here.

Every run is the same composition: a validated instance → its network (`network.CopyTaskConfig.of`) → the data
sets, sampled from one seeded generator (`prepare_data`) → a batched run on `validate.mala` (`samplers`) →
order parameters of the sampled matrices, batch means and comparisons (`validate.compare`). The network and
its samplers (torch) are imported when a simulation runs.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.copy_heads import kernels
from attnphase.models.copy_heads.chain_statistics import (
    comparison_with_theory, draw_statistics, test_set_error, trapped_chains, verdict_withheld,
)
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.exact import order_parameters_of
from attnphase.models.copy_heads.fluctuations import posterior_means_instance, sign_folded
from attnphase.models.copy_heads.homogeneous import scale_at_fault, solvable_range, solve_instance
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.parameters import DataSize, SimulationSettings
from attnphase.models.copy_heads.results import PosteriorMeans, SolveResult
from attnphase.models.copy_heads.row_mean_field_results import RowPosteriorMeans
from attnphase.models.copy_heads.row_posterior import softmax_row_posterior_means
from attnphase.models.copy_heads.simulation_results import RowModelResult, RunSummary, SimulationResult
from attnphase.params import check_int
from attnphase.results import Status
from attnphase.validate.compare import batch_means_error, verdict_message

__all__ = ["MAX_SIMULATION_ENTRIES", "check_simulation_size", "prepare_data", "alternating_starts", "simulate",
           "simulate_row_model"]

# Largest array a simulation may build, in float64 entries (4 GiB): the one-hot data (sequences × L × V),
# the sufficient statistics (chains × L² × V², twice) and the recorded samples of G (chains × L² per
# 10 steps after burn-in). Beyond it a run would exhaust memory instead of failing with a message.
MAX_SIMULATION_ENTRIES = 2**29


def check_simulation_size(inst: CopyHeadsInstance, P: float, sequences: int, trials: int, steps: int,
                          n_test_sequences: int) -> None:
    """A ParameterError (naming L or V, P or steps) when a run would build an array beyond MAX_SIMULATION_ENTRIES."""
    cap, L, V = MAX_SIMULATION_ENTRIES, inst.L, inst.V
    if 2 * trials * L * L * V * V > cap or n_test_sequences * L * V > cap:
        # the larger of L and V is the one to lower
        name, value, other = ("V", V, f"L = {L}") if V > L else ("L", L, f"V = {V}")
        raise ParameterError(name, value, f"small enough that 2·chains·L²·V² <= 2^29 (chains = {trials}, {other}): "
                                          "the simulation keeps L²V² statistics per chain")
    if sequences * L * V > cap:
        raise ParameterError("P", P, f"at most about {cap / (L * V) * (P / sequences):.3g} for L = {L}, V = {V} "
                                     f"(the training set is one-hot encoded in (P/T) × L × V <= 2^29 entries)")
    if trials * L * L * (steps // 20 + 1) > cap:
        raise ParameterError("steps", steps, f"small enough that chains·L²·steps/20 <= 2^29 (chains = {trials}, "
                                             f"L = {L}): samples of G are recorded every 10 steps after burn-in")


def prepare_data(cfg, device: str, seed: int, rng: str, train_sequences: list[int],
                 test_sequences: int):
    """(device, training statistics (one data set per entry of train_sequences), test statistics, the test tokens):
    every data set drawn from one generator seeded with `seed`, the training sets first."""
    from attnphase.models.copy_heads import network as net
    from attnphase.validate.device import select_device
    from attnphase.validate.seeds import generator

    dev = select_device(device)
    gen = generator(seed, dev, rng)
    train = net.statistics([net.sample_tokens(k, cfg, gen, dev) for k in train_sequences], cfg.V, boundary=cfg.boundary)
    test_tokens = net.sample_tokens(test_sequences, cfg, gen, dev)
    return dev, train, net.statistics([test_tokens], cfg.V, boundary=cfg.boundary), test_tokens


def alternating_starts(count: int) -> list[str]:
    """MALA starts for `count` chains: uniform, copy, uniform, …"""
    return [("uniform", "copy")[i % 2] for i in range(count)]


class _Default:
    """The default of a parameter that has a deprecated spelling, told apart from the same value given explicitly
    (`_renamed`); shown as the value in signatures."""

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def _renamed(name: str, value, old_name: str, old_value, old_meaning=None):
    """The value of a parameter given by its name or by its one-release old spelling (a DeprecationWarning): its
    `_Default` when neither is given, a ParameterError naming both when both are given with different values (neither
    may silently win). old_meaning maps an old value to its new spelling (sampler="sgld" is algorithm="mala")."""
    given = not isinstance(value, _Default)
    if old_value is None:
        return value if given else value.value
    note = f" ({', '.join(f'{old!r} is {new!r}' for old, new in old_meaning.items())})" if old_meaning else ""
    warnings.warn(f"{old_name}= is deprecated; use {name}={note}", DeprecationWarning, stacklevel=3)
    meant = old_meaning.get(old_value, old_value) if old_meaning and isinstance(old_value, str) else old_value
    if given and value != meant:
        raise ParameterError(old_name, old_value, f"left out, or equal to {name}={value!r} (its new name, given too)")
    return meant


_SETTING = SimulationSettings.default  # the run settings' defaults, from their one declaration


def simulate(attention: str, L: int, V: int, P: float, *, algorithm: str = _Default(_SETTING("algorithm")),
             trials: int = _Default(_SETTING("trials")), steps: int = _SETTING("steps"), seed: int = _SETTING("seed"),
             device: str = _SETTING("device"), convention: Convention = DEFAULT,
             qk_width: int | None = _SETTING("qk_width"), n_test_sequences: int = _SETTING("n_test_sequences"),
             rng: str = _SETTING("rng"), fluctuations: bool = _SETTING("fluctuations"),
             data_sets: int = _SETTING("data_sets"), threads: int | None = _SETTING("threads"),
             rhat_max: float = _SETTING("rhat_max"), ess_min: float = _SETTING("ess_min"),
             trap_sds: float = _SETTING("trap_sds"), trapped: str = _SETTING("trapped"),
             adam_tolerance: float = _SETTING("adam_tolerance"), sampler: str | None = None,
             chains: int | None = None) -> SimulationResult:
    """Sample (MALA, trials alternating uniform and copy starts) or train (Adam, `trials` seeds) the real network at
    P and compare the measured order parameters and losses with the theory (sampler= and chains= are the deprecated
    spellings of algorithm= and trials=). rng: "device" or "cpu", where the random numbers are drawn
    (`attnphase.validate.seeds`).

    The number of training sequences is P/T rounded (P counts target tokens by default) or P
    (`P_counts="sequences"`). data_sets: independent training sets of that size, trials/data_sets consecutive runs
    on each (MALA: alternating starts within each); the error bars then hold the finite-P spread between data sets
    (`SimulationResult`). Linear attention has the symmetry (G, W) -> (−G, −W); its order parameters are reported as
    |t| and c·sign(t). MALA samples the Bayesian posterior (read-out integrated out); Adam minimises the joint
    objective over all weights, whose reduced action has no log-det terms.

    fluctuations (MALA): compare with posterior means instead of the values at the reduced action's minimum. Linear
    attention: the means of the order parameters and of the Gibbs loss over exp(−S) of the reduced action
    (`linear_posterior_means`, its Monte Carlo error as the theory error). Softmax: the means of c and of the Gibbs
    loss over the well of the joint row mean field with the lowest free energy (each row's fluctuations kept;
    `softmax_row_posterior_means`, its quadrature error as the theory error); at L = 8 the sampled c lies below it by
    a finite-P gap, small against c at large P (pooled over 16 training sets: about −0.009 at P = 40, −0.007 at 320,
    not resolved at 1280; docs/models/copy_heads.md), and no finite-P term is added to it. Softmax rows sum to one:
    c_uniform is 1 in the network and in the theory by construction, and not compared (the runs still report it).
    qk_width None or 0: scores sampled directly (wide limit); else ≥ L. threads: torch CPU threads (None:
    `validate.device.choose_threads`).

    Status (MALA): poor_mixing when a chain accepts ≤ 20%, when a compared quantity's split R-hat exceeds rhat_max or
    the effective sample size of its mean is below ess_min, or when a chain is trapped (its mean data term more than
    trap_sds within-chain spreads above the lowest chain's on its training set: `trapped` "leave-out" drops it from the
    means and the coverage, its run has kept False; "keep" keeps it and every comparison's agrees is None); else
    converged. The default cut, 5, misses part of the trap at linear L = 8, P = 256-320 (4.0-5.9 spreads there), where
    trap_sds=3 catches it: `simulate_sweep` cuts at 3 (SWEEP_TRAP_SDS; its docstring gives the measurements). Adam: each
    run's lowest-U iterate; the error is the spread of the training sets' means (NaN for one set: its runs reach one
    minimum, whose finite-P offset from the theory they cannot show) ⊕ the largest change of a run over the second half
    of the steps, and the status is limited when that change exceeds adam_tolerance·max(1, |value|).

    Verdict: a comparison agrees or rejects within its band, or has none (agrees None; `no_verdict` gives the reason
    and theory_agrees is then not True): a quantity whose own diagnostics fail ("not resolved", neither agreement nor
    rejection: `chain_statistics.verdict_withheld`), two training sets, trapped chains kept, (MALA) one chain on the
    only training set (trials 1, or the others left out as trapped), whose error cannot be diagnosed, or (Adam) one
    training set, whose error is not estimated.
    """
    from attnphase.models.copy_heads import network as net

    algorithm = _renamed("algorithm", algorithm, "sampler", sampler, old_meaning={"sgld": "mala"})
    trials = _renamed("trials", trials, "chains", chains)
    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
    P = DataSize.validated(P=P).P
    settings = SimulationSettings.validated(algorithm=algorithm, trials=trials, steps=steps, seed=seed, device=device,
                                            qk_width=qk_width, n_test_sequences=n_test_sequences, rng=rng,
                                            fluctuations=fluctuations, data_sets=data_sets, threads=threads,
                                            rhat_max=rhat_max, ess_min=ess_min, trap_sds=trap_sds, trapped=trapped,
                                            adam_tolerance=adam_tolerance)
    if not settings.wide and settings.qk_width < inst.L:  # the copy start must be representable
        raise ParameterError("qk_width", settings.qk_width, f"0 (wide limit) or an integer >= L ({inst.L})")
    conv = inst.convention
    cfg = net.CopyTaskConfig.of(inst, settings.qk_width)
    sequences = conv.sequences_of_P(P, inst.L)
    check_simulation_size(inst, P, sequences * settings.data_sets, settings.trials, settings.steps,
                          settings.n_test_sequences)
    P_used = conv.P_of_sequences(sequences, inst.L)
    theory = _theory_for(inst, settings, float(P_used))  # before the run: without it there is nothing to compare with
    run, test_tokens, n_threads = _run(cfg, settings, sequences)
    keep, trap, trap_notes = _kept(run, settings)
    selected = np.nonzero(keep)[0]
    measured, runs = _measured(inst, run, theory, settings, keep)
    test_error = test_set_error(run.loss_moments, selected, test_tokens, cfg)
    comparisons, diagnostics, unsettled, no_verdict = _compared(
        measured, selected, settings, test_error, _run_withheld(settings, keep, trap))
    status, message = _status_and_message(run, settings, selected, trap, trap_notes, diagnostics, unsettled)
    if P_used != P:  # whole training sequences only: the run and its theory are at the P they realise
        message = (f"P = {P:g} rounded to {sequences} training sequence{'s' if sequences > 1 else ''}: run and theory "
                   f"at P = {P_used:g}; {message}")
    message += _theory_note(inst, settings, theory)
    if comparisons:  # the verdict on the theory, at the end: the status above is the run's own (mixed, settled)
        # several training sets: each comparison's band is Student's t for their means (comparison_with_theory)
        D = settings.data_sets
        widened_by = f"the 99.73% Student-t band of {D} training sets" if D > 1 else None
        message += f"; {verdict_message(comparisons, no_verdict, band_reason=widened_by)}"
    return SimulationResult(settings.algorithm, P_used, sequences, conv.n_of_P(P_used, inst.L), runs, theory.minimum,
                            tuple(comparisons), net.coverage(run.G[selected], conv.boundary), status, message,
                            theory.means, settings.data_sets, tuple(diagnostics), n_threads, test_error, no_verdict)


@dataclass(frozen=True)
class _Theory:
    """What `simulate` compares with: the reduced action's solution for `inst` (its read-out at the MAP for Adam),
    and, with fluctuations, the posterior means that replace its minimum (linear: `posterior_means_instance`;
    softmax: `softmax_row_posterior_means`, whose lowest well is `row_well`)."""

    inst: CopyHeadsInstance
    minimum: SolveResult
    means: PosteriorMeans | RowPosteriorMeans | None = None
    row_well: object = None


def _theory_for(inst: CopyHeadsInstance, settings: SimulationSettings, P: float) -> _Theory:
    """The theory a run at P is compared with; a ParameterError where it is not computed or the settings ask for
    one that does not exist (fluctuations with Adam, the softmax row mean field below L = 3 or in a non-convex well)."""
    conv, mala = inst.convention, settings.algorithm == "mala"
    theory_inst = inst if mala else inst.with_convention(conv.with_(read_out="map"))
    minimum = solve_instance(theory_inst, P, diagnose=False)  # unusable_theory diagnoses a failure
    if minimum.status != Status.CONVERGED:
        raise unusable_theory(theory_inst, P, minimum.message)
    if settings.fluctuations and not mala:
        raise ParameterError("fluctuations", True, "left out with algorithm 'adam' (a joint MAP has no posterior "
                                                   "to average over)")
    if not settings.fluctuations:
        return _Theory(theory_inst, minimum)
    if inst.attention == "linear":
        return _Theory(theory_inst, minimum, posterior_means_instance(theory_inst, P, seed=settings.seed))
    if inst.L < 3:
        raise ParameterError("fluctuations", True, f"left out at L = {inst.L} for softmax: the row mean field "
                                                   "needs rows with two other positions (L >= 3)")
    row_means = softmax_row_posterior_means(inst.L, inst.V, P, conv)
    row_well = min(row_means.wells, key=lambda well: well.free_energy)
    if math.isnan(row_well.c_mean):
        raise ParameterError("fluctuations", True, f"left out at L = {inst.L}, V = {inst.V}, P = {P:g}: the "
                                                   "joint row mean field's lowest well is not convex there")
    return _Theory(theory_inst, minimum, row_means, row_well)


def _run(cfg, settings: SimulationSettings, sequences: int):
    """(the run, the test set's tokens, the torch threads used): the training sets drawn from settings.seed, then
    MALA (starts alternating uniform, copy within each training set) or Adam on them, from the seed after it."""
    from attnphase.models.copy_heads.samplers import run_adam, run_langevin, step_work
    from attnphase.validate.device import choose_threads
    from attnphase.validate.seeds import seed_after

    D, per = settings.data_sets, settings.trials // settings.data_sets
    dev, train, test, test_tokens = prepare_data(cfg, settings.device, settings.seed, settings.rng, [sequences] * D,
                                                 settings.n_test_sequences)
    if D > 1:
        train = train.repeat(per)
    n_threads = choose_threads(settings.threads, work=step_work(cfg, settings.trials), device=dev)
    run_seed = seed_after(settings.seed)  # the runs' stream; the data's is seed itself
    if settings.algorithm == "mala":
        starts = [("uniform", "copy")[j % 2] for _ in range(D) for j in range(per)]
        run = run_langevin(cfg, train, test, starts, steps=settings.steps, seed=run_seed, device=str(dev),
                           rng=settings.rng, threads=n_threads)
    else:
        run = run_adam(cfg, train, test, settings.trials, steps=settings.steps, seed=run_seed, device=str(dev),
                       rng=settings.rng, threads=n_threads, per_data_set=per)
    return run, test_tokens, n_threads


def _training_set(settings: SimulationSettings) -> np.ndarray:
    """The training set of each run: trials/data_sets consecutive runs on each."""
    return np.arange(settings.trials) // (settings.trials // settings.data_sets)


def _kept(run, settings: SimulationSettings):
    """(kept, trapped, notes) per run: Adam's filter (`samplers.run_adam`); MALA's chains not trapped
    (`chain_statistics.trapped_chains`) with trapped "leave-out", every chain with "keep"."""
    trap, notes = np.zeros(len(run.starts), bool), []
    if settings.algorithm == "mala":
        trap, notes = trapped_chains(run.data_term, _training_set(settings), run.starts, settings.trap_sds)
    keep = run.kept if run.kept.size else ~trap if settings.trapped == "leave-out" else np.ones(len(run.starts), bool)
    return keep, trap, notes


def _measured(inst: CopyHeadsInstance, run, theory: _Theory, settings: SimulationSettings, keep):
    """([(name, draws per run, Adam's draws half-way or None, theory value, theory error)], the runs' summaries): the
    order parameters of the sampled matrices (linear: sign-folded, `fluctuations.sign_folded`) and the test loss."""
    mala, linear = settings.algorithm == "mala", inst.attention == "linear"

    def order_parameters(G):
        op = order_parameters_of(G, inst.convention.boundary)
        t, c = sign_folded(op["t"], op["c"], axis=-1) if linear else (op["t"], op["c"])
        return {"c_copy": c, "c_uniform": t, "rho": op["rho"]}

    draws = {**order_parameters(run.G), "test_loss": run.test_loss}
    half = {**order_parameters(run.G_half), "test_loss": run.test_loss_half} if not mala else {}
    g = theory.minimum.global_minimum
    values = {"c_copy": g.c_copy, "c_uniform": g.c_uniform, "rho": g.rho,
              "test_loss": g.loss_gibbs if mala else g.loss_mean_predictor}
    errors = {}
    if isinstance(theory.means, PosteriorMeans):  # linear, fluctuations
        key = {"c_copy": "c", "c_uniform": "t", "test_loss": "loss_gibbs", "rho": "rho"}
        values = {name: theory.means.means[key[name]] for name in key}
        errors = {name: theory.means.errors[key[name]] for name in key}
    elif theory.row_well is not None:  # softmax, fluctuations
        well = theory.row_well
        values.update(c_copy=well.c_mean, test_loss=well.loss_gibbs_mean)
        errors = {"c_copy": well.error, "test_loss": well.loss_gibbs_error}
    # softmax rows sum to one, so there c_uniform ≡ 1 = the theory's by construction: comparing it would count a
    # tautology as agreement; rho, the remainder norm per target row: 0 in Convention A, ρ at the minimum with the
    # remainder's entropy kept
    names = ("c_copy", "c_uniform", "test_loss", "rho") if linear else ("c_copy", "test_loss")
    measured = [(name, draws[name], half.get(name), values[name], errors.get(name, 0.0)) for name in names]
    runs = tuple(RunSummary(run.starts[k], bool(keep[k]), float(draws["c_uniform"][k].mean()),
                            float(draws["c_copy"][k].mean()), float(draws["c_copy"][k].std()),
                            float(draws["rho"][k].mean()), float(run.train_loss[k].mean()),
                            float(run.test_loss[k].mean()), float(run.acceptance[k])) for k in range(len(run.starts)))
    return measured, runs


def _run_withheld(settings: SimulationSettings, keep, trap) -> list[str]:
    """The run's own reasons to withhold every verdict (`simulate`'s docstring, "Verdict")."""
    reasons = []
    if settings.algorithm == "mala" and settings.data_sets == 1 and np.count_nonzero(keep) < 2:
        # One chain's split R-hat and ESS cannot see how far chains from other starts would lie: at linear L = 8,
        # P = 1000 chain means scatter by about twice the bar of one chain, so no bar of one chain is offered as one.
        left_out = [f"chain {k}" for k in np.nonzero(~keep)[0]]
        reasons.append("one chain on the training set" + (f", {', '.join(left_out)} left out as trapped"
                                                          if left_out else "")
                       + ": the error of a single chain cannot be diagnosed")
    if trap.any() and settings.trapped == "keep":
        reasons.append("trapped chains kept in the means: a mean over chains in different regions")
    return reasons


def _compared(measured, selected, settings: SimulationSettings, test_error: float, run_withheld: list[str]):
    """(comparisons, diagnostics, Adam's unsettled quantities, no_verdict): each measured quantity's statistics over
    the selected runs (`chain_statistics.draw_statistics`), the test loss's bar widened by the test set's own error."""
    groups = _training_set(settings)[selected]
    comparisons, diagnostics, unsettled, no_verdict = [], [], [], {}
    for name, values, half, theory, theory_error in measured:
        statistics = draw_statistics(np.asarray(values)[selected], groups, name, settings.algorithm,
                                     rhat_max=settings.rhat_max, ess_min=settings.ess_min,
                                     half=None if half is None else np.asarray(half)[selected])
        if name == "test_loss":  # the theory's loss is an expectation over test data, not this test set's mean
            statistics = (*statistics[:2], math.hypot(statistics[2], test_error), *statistics[3:])
        withheld = run_withheld + verdict_withheld(statistics)  # the run's reasons first: the message groups them
        comparisons.append(comparison_with_theory(name, theory, theory_error, statistics, withheld))
        if withheld:
            no_verdict[name] = tuple(withheld)
        if statistics[5] is not None:
            diagnostics.append(statistics[5])
        change = statistics[6]
        if change is not None and change > settings.adam_tolerance * max(1.0, abs(statistics[0])):
            unsettled.append(f"{name} changed by {change:.2g}")
    return comparisons, diagnostics, unsettled, no_verdict


def _status_and_message(run, settings: SimulationSettings, selected, trap, trap_notes, diagnostics, unsettled):
    """(status, message) of the run itself: MALA mixed or poor_mixing (a chain accepting ≤ 20%, trapped chains,
    failed diagnostics); Adam settled or limited (a compared quantity still moving over the second half)."""
    status, message = run.status, run.message
    if settings.algorithm == "mala":
        problems = list(trap_notes)
        if run.status == Status.POOR_MIXING:
            problems.insert(0, "a chain accepts 20% of its proposals or fewer")
        if trap.any():
            problems.append("left out of the means" if settings.trapped == "leave-out"
                            else "kept in the means: no agreement is claimed")
        problems += [d.message for d in diagnostics if d.status != Status.CONVERGED]
        if problems:
            message += "; not mixed: " + "; ".join(problems)
            if status == Status.CONVERGED:
                status = Status.POOR_MIXING
        else:
            message += (f"; mixed: R-hat <= {settings.rhat_max:g} and ESS >= {settings.ess_min:g} for every compared "
                        "quantity, no trapped chain")
    else:
        dU = float(np.max(np.abs(run.objective - run.objective_half)[selected]))
        message += f"; over the second half of the steps U changed by at most {dU:.2g}"
        if unsettled:
            in_bars = " (in the error bars)" if settings.data_sets > 1 else ""  # one set has none (`draw_statistics`)
            message += (f"; not settled (tolerance {settings.adam_tolerance:g} relative): {', '.join(unsettled)}"
                        + in_bars)
            if status == Status.CONVERGED:
                status = Status.LIMITED
    return status, message


def _theory_note(inst: CopyHeadsInstance, settings: SimulationSettings, theory: _Theory) -> str:
    """What a MALA run was compared with, where that is not what the sampled network realises ("" for Adam)."""
    if theory.row_well is not None:
        return (f"; theory: posterior means over the joint row mean field's lowest well (c mode "
                f"{theory.row_well.c_mode:.4g}; {theory.means.status.value})")
    if settings.algorithm != "mala":
        return ""
    if inst.attention == "softmax":
        theory_used = ("the row mean field's minimum, each row at its mean participation" if inst.causal
                       else "the reduced action's minimum, every row alike")
        return (f"; theory: {theory_used} (--fluctuations, fluctuations=True in Python, compares with the joint "
                "row mean field's posterior means)")
    return linear_theory_note(inst.convention, settings.fluctuations)


def linear_theory_note(conv, fluctuations: bool) -> str:
    """What a linear MALA run is compared with, where it is not the theory the sampled network realises: the
    remainder-entropy convention with a row sum per row and the order parameters' fluctuations (docs/models/
    copy_heads.md); against any other the verdict is that theory's, not the network's ("" under that one)."""
    if conv.remainder == "entropy" and conv.row_sums == "per-row" and fluctuations:
        return ""
    theory = "posterior means over exp(-S)" if fluctuations else "minimum"
    return (f"; theory: the reduced action's {theory} under --remainder {conv.remainder}, --row-sums {conv.row_sums} "
            "(the sampled network realises --remainder entropy --row-sums per-row with --fluctuations; Convention A "
            "has rho = 0 and a Gibbs loss several times below it)")


def unusable_theory(inst: CopyHeadsInstance, P: float, message: str) -> ParameterError:
    """The ParameterError for a simulation whose theory (the reduced action's minimum) is not computed: the convention
    scale that alone causes it, with the range in which the theory is computed at these L, V, P
    (`homogeneous.scale_at_fault`, `homogeneous.solvable_range`; `--tau 1e300` was a bare RuntimeError); P itself
    when no single scale does."""
    name = scale_at_fault(inst, P)
    if name is not None:
        return ParameterError(name, getattr(inst.convention, name),
                              f"a value in {solvable_range(inst, P, name)} at L = {inst.L}, V = {inst.V}, P = {P:g}: "
                              f"beyond it the theory simulate compares with is not computed ({message})")
    return ParameterError("P", P, f"a data size at which the theory simulate compares with is computed at "
                                  f"L = {inst.L}, V = {inst.V} and this convention ({message})")


def simulate_row_model(L: int, V: int, P: float, *, trials: int = _Default(8), steps: int = 3000, seed: int = 0,
                       device: str = "auto", convention: Convention = DEFAULT,
                       chains: int | None = None) -> RowModelResult:
    """Softmax: MALA of the row model, the attention scores under the self-averaged data term S_data(m, q) (no data
    set; `samplers.run_row_model`), chains alternating uniform and copy starts. It is the model the row mean field
    approximates by its saddle point over (m, q) (and, with row_density "exact", by each row's mean participation),
    and it differs from the sampled network (`simulate`, `simulate_hysteresis`) only by the finite data set;
    comparing the three separates the approximations. Time means over the chains after burn-in, errors from batch
    means (10 batches per chain). chains= is the deprecated spelling of trials=."""
    from attnphase.models.copy_heads import network as net
    from attnphase.models.copy_heads.samplers import run_row_model

    trials = _renamed("trials", trials, "chains", chains)
    inst = CopyHeadsInstance.validated(attention="softmax", L=L, V=V, convention=convention)
    P = DataSize.validated(P=P).P
    trials = check_int("trials", trials, 1, 4096)
    steps = check_int("steps", steps, 20, 10**7)
    if trials * inst.L * inst.L > MAX_SIMULATION_ENTRIES:
        raise ParameterError("trials", trials,
                             f"at most {MAX_SIMULATION_ENTRIES // (inst.L * inst.L)} for L = {inst.L}")
    n_ = inst.n_of_P(P)
    data_term = kernels.bind(kernels.torch_data_term(), {**inst.values(), "n": n_})
    run = run_row_model(net.CopyTaskConfig.of(inst), data_term, alternating_starts(trials), steps=steps, seed=seed,
                        device=device)
    summary = {}
    for name in ("c", "q"):
        summary[name] = batch_means_error(getattr(run, name))
    return RowModelResult(P, n_, *summary["c"], *summary["q"], tuple(run.c.mean(-1).tolist()),
                          tuple(run.acceptance.tolist()), run.status, run.message)
