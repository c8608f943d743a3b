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
    from attnphase.models.copy_heads.samplers import run_adam, run_langevin, step_work
    from attnphase.validate.device import choose_threads
    from attnphase.validate.seeds import seed_after

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
    conv, mala = inst.convention, settings.algorithm == "mala"
    cfg = net.CopyTaskConfig.of(inst, settings.qk_width)
    sequences = conv.sequences_of_P(P, inst.L)
    check_simulation_size(inst, P, sequences * settings.data_sets, settings.trials, settings.steps,
                          settings.n_test_sequences)
    P_used = conv.P_of_sequences(sequences, inst.L)
    theory_inst = inst if mala else inst.with_convention(conv.with_(read_out="map"))
    theory = solve_instance(theory_inst, float(P_used), diagnose=False)  # unusable_theory diagnoses a failure
    if theory.status != Status.CONVERGED:  # before sampling: without a theory there is nothing to compare with
        raise unusable_theory(theory_inst, float(P_used), theory.message)
    if settings.fluctuations and not mala:
        raise ParameterError("fluctuations", True, "left out with algorithm 'adam' (a joint MAP has no posterior "
                                                   "to average over)")
    row_means = row_well = None
    if settings.fluctuations and attention == "softmax":
        if inst.L < 3:
            raise ParameterError("fluctuations", True, f"left out at L = {inst.L} for softmax: the row mean field "
                                                       "needs rows with two other positions (L >= 3)")
        row_means = softmax_row_posterior_means(inst.L, inst.V, float(P_used), conv)
        row_well = min(row_means.wells, key=lambda well: well.free_energy)
        if math.isnan(row_well.c_mean):
            raise ParameterError("fluctuations", True, f"left out at L = {inst.L}, V = {inst.V}, P = {P_used:g}: the "
                                                       "joint row mean field's lowest well is not convex there")
    D, per = settings.data_sets, settings.trials // settings.data_sets
    dev, train, test, test_tokens = prepare_data(cfg, settings.device, settings.seed, settings.rng, [sequences] * D,
                                    settings.n_test_sequences)
    if D > 1:
        train = train.repeat(per)
    n_threads = choose_threads(settings.threads, work=step_work(cfg, settings.trials), device=dev)
    starts = [("uniform", "copy")[j % 2] for _ in range(D) for j in range(per)]
    run_seed = seed_after(settings.seed)  # the runs' stream; the data's is seed itself
    if mala:
        run = run_langevin(cfg, train, test, starts, steps=settings.steps, seed=run_seed, device=str(dev),
                           rng=settings.rng, threads=n_threads)
    else:
        run = run_adam(cfg, train, test, settings.trials, steps=settings.steps, seed=run_seed, device=str(dev),
                       rng=settings.rng, threads=n_threads, per_data_set=per)
    op = order_parameters_of(run.G, conv.boundary)
    t_meas, c_meas = op["t"], op["c"]
    if attention == "linear":
        t_meas, c_meas = sign_folded(t_meas, c_meas, axis=-1)
    g = theory.global_minimum
    groups_all = np.arange(settings.trials) // per
    trap, trap_notes = np.zeros(len(run.starts), bool), []
    if mala:
        trap, trap_notes = trapped_chains(run.data_term, groups_all, run.starts, settings.trap_sds)
    keep = run.kept if run.kept.size else ~trap if settings.trapped == "leave-out" else np.ones(len(run.starts), bool)
    runs = tuple(RunSummary(run.starts[k], bool(keep[k]), float(t_meas[k].mean()), float(c_meas[k].mean()),
                            float(c_meas[k].std()), float(op["rho"][k].mean()), float(run.train_loss[k].mean()),
                            float(run.test_loss[k].mean()), float(run.acceptance[k])) for k in range(len(run.starts)))
    selected = np.nonzero(keep)[0]
    groups = groups_all[selected]
    run_withheld = []
    if mala and D == 1 and selected.size < 2:
        # One chain's split R-hat and ESS cannot see how far chains from other starts would lie: at linear L = 8,
        # P = 1000 chain means scatter by about twice the bar of one chain, so no bar of one chain is offered as one.
        left_out = [f"chain {k}" for k in np.nonzero(~keep)[0]]
        run_withheld.append("one chain on the training set" + (f", {', '.join(left_out)} left out as trapped"
                                                               if left_out else "")
                            + ": the error of a single chain cannot be diagnosed")
    if trap.any() and settings.trapped == "keep":
        run_withheld.append("trapped chains kept in the means: a mean over chains in different regions")
    half = {}
    if not mala:
        op_half = order_parameters_of(run.G_half, conv.boundary)
        t_half, c_half = op_half["t"], op_half["c"]
        if attention == "linear":
            t_half, c_half = sign_folded(t_half, c_half, axis=-1)
        half = {"c_copy": c_half, "c_uniform": t_half, "test_loss": run.test_loss_half, "rho": op_half["rho"]}
    measured = [("c_copy", c_meas, g.c_copy),
                ("test_loss", run.test_loss, g.loss_gibbs if mala else g.loss_mean_predictor)]
    if attention == "linear":
        # softmax rows sum to one, so there c_uniform ≡ 1 = the theory's by construction: comparing it would count a
        # tautology as agreement
        measured.insert(1, ("c_uniform", t_meas, g.c_uniform))
        # remainder norm per target row: 0 in Convention A, ρ at the minimum with the remainder's entropy kept
        measured.append(("rho", op["rho"], g.rho))
    means = row_means
    errors = {}
    if settings.fluctuations and attention == "linear":
        means = posterior_means_instance(theory_inst, float(P_used), seed=settings.seed)
        key = {"c_copy": "c", "c_uniform": "t", "test_loss": "loss_gibbs", "rho": "rho"}
        errors = {name: means.errors[key[name]] for name, _, _ in measured}
        measured = [(name, values, means.means[key[name]]) for name, values, _ in measured]
    elif row_well is not None:
        row_theory = {"c_copy": (row_well.c_mean, row_well.error),
                      "test_loss": (row_well.loss_gibbs_mean, row_well.loss_gibbs_error)}
        errors = {name: row_theory[name][1] for name in row_theory}
        measured = [(name, values, row_theory[name][0] if name in row_theory else th) for name, values, th in measured]
    test_error = test_set_error(run.loss_moments, selected, test_tokens, cfg)
    comparisons, diagnostics, unsettled, no_verdict = [], [], [], {}
    for name, values, th in measured:
        statistics = draw_statistics(np.asarray(values)[selected], groups, name, "mala" if mala else "adam",
                                      rhat_max=settings.rhat_max, ess_min=settings.ess_min,
                                      half=np.asarray(half[name])[selected] if name in half else None)
        if name == "test_loss":  # the theory's loss is an expectation over test data, not this test set's mean
            statistics = (*statistics[:2], math.hypot(statistics[2], test_error), *statistics[3:])
        withheld = run_withheld + verdict_withheld(statistics)  # the run's reasons first: the message groups them
        comparisons.append(comparison_with_theory(name, th, errors.get(name, 0.0), statistics, withheld))
        if withheld:
            no_verdict[name] = tuple(withheld)
        if statistics[5] is not None:
            diagnostics.append(statistics[5])
        change = statistics[6]
        if change is not None and change > settings.adam_tolerance * max(1.0, abs(statistics[0])):
            unsettled.append(f"{name} changed by {change:.2g}")
    status, message = run.status, run.message
    if P_used != P:  # whole training sequences only: the run and its theory are at the P they realise
        message = (f"P = {P:g} rounded to {sequences} training sequence{'s' if sequences > 1 else ''}: run and theory "
                   f"at P = {P_used:g}; {message}")
    if mala:
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
            message += (f"; not settled (tolerance {settings.adam_tolerance:g} relative): {', '.join(unsettled)} "
                        "(in the error bars)")
            if status == Status.CONVERGED:
                status = Status.LIMITED
    if row_means is not None:
        message += (f"; theory: posterior means over the joint row mean field's lowest well (c mode "
                    f"{row_well.c_mode:.4g}; {row_means.status.value})")
    elif mala and attention == "softmax":
        theory_used = ("the row mean field's minimum, each row at its mean participation" if inst.causal
                       else "the reduced action's minimum, every row alike")
        message += (f"; theory: {theory_used} (--fluctuations, fluctuations=True in Python, compares with the joint "
                    "row mean field's posterior means)")
    elif mala:
        message += linear_theory_note(conv, settings.fluctuations)
    if comparisons:  # the verdict on the theory, at the end: the status above is the run's own (mixed, settled)
        # several training sets: each comparison's band is Student's t for their means (comparison_with_theory)
        widened_by = f"the 99.73% Student-t band of {D} training sets" if D > 1 else None
        message += f"; {verdict_message(comparisons, no_verdict, band_reason=widened_by)}"
    return SimulationResult("mala" if mala else "adam", P_used, sequences, conv.n_of_P(P_used, inst.L), runs, theory,
                            tuple(comparisons), net.coverage(run.G[selected], conv.boundary), status, message, means,
                            D, tuple(diagnostics), n_threads, test_error, no_verdict)


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
