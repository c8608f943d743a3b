"""The real network at several P in one batched run: `simulate_sweep` (order parameters and losses per P, on
independent training sets, with the trap rule for MALA chains) and `simulate_hysteresis` (uniform and copy starts on
shared training sets). Each builds on `simulation`'s helpers: the size check, the data sets from one seeded generator,
the alternating starts.
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.models.copy_heads.chain_statistics import trapped_chains
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.exact import order_parameters_of
from attnphase.models.copy_heads.fluctuations import sign_folded
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.parameters import SimulationSettings, check_P_values
from attnphase.models.copy_heads.simulation import alternating_starts, check_simulation_size, prepare_data
from attnphase.models.copy_heads.simulation_results import (
    HysteresisChain, HysteresisPoint, HysteresisResult, StartMean, SweepResult,
)
from attnphase.params import check_int
from attnphase.validate.compare import batch_means_error

__all__ = ["SWEEP_TRAP_SDS", "simulate_sweep", "simulate_hysteresis"]

SWEEP_TRAP_SDS = 3.0  # `simulate_sweep`'s trap cut, in within-chain spreads (why: its docstring)


_SETTING = SimulationSettings.default  # the defaults shared with `simulate`, from their one declaration


def simulate_sweep(attention: str, L: int, V: int, P_values, *, algorithm: str = _SETTING("algorithm"),
                   trials_per_P: int = 2, steps: int = 2000, seed: int = _SETTING("seed"),
                   device: str = _SETTING("device"), convention: Convention = DEFAULT,
                   n_test_sequences: int = _SETTING("n_test_sequences"), data_sets: int = 1,
                   trap_sds: float = SWEEP_TRAP_SDS) -> SweepResult:
    """Order parameters and losses of the real network at several P in ONE batched run: at each P, `data_sets`
    independent training sets (drawn from one generator seeded with `seed`, P by P, as `simulate` draws them), and
    `trials_per_P` runs on each. MALA chains alternate uniform/copy starts over all runs (one chain per set: the sets
    alternate); Adam seeds start from prior draws and are filtered per training set by the rule of
    `samplers.run_adam`.

    MALA chains get `simulate`'s trap rule (`chain_statistics.trapped_chains`) applied to all chains at one P: a chain
    whose mean data term lies more than trap_sds pooled within-chain spreads above the lowest chain's at its P is
    trapped, kept False, and the message counts it. The training sets of one P are draws of one distribution, so a
    set with a single chain is checked too. The cut is SWEEP_TRAP_SDS = 3 spreads, not `simulate`'s 5: at linear
    L = 8, V = 4 (about 3600 chains of 16 or 32 sets per P, P = 24…2048, 40 seeds) no untrapped chain lay more than 1.3
    spreads above the lowest (0.62 at P ≥ 320), while the trap's excess grows with P, 4.0–5.9 spreads at P = 256–320
    (27–40 nats; a cut at 5 kept 40% of those chains, each pulling the pooled c down by 0.04) and 13–18 at P = 1280.
    Below P ≈ 250 the trap is not told apart by its data term. Arrays of the result: one entry per run, in the order
    P, training set, run on that set (`SweepResult`)."""
    from attnphase.models.copy_heads import network as net
    from attnphase.models.copy_heads.samplers import run_adam, run_langevin
    from attnphase.validate.seeds import seed_after

    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
    per_set = check_int("trials_per_P", trials_per_P, 1, 4096)
    D = check_int("data_sets", data_sets, 1, 4096)
    settings = SimulationSettings.validated(algorithm=algorithm, steps=steps, seed=seed, device=device,
                                            n_test_sequences=n_test_sequences, trap_sds=trap_sds)
    algorithm, steps, seed = settings.algorithm, settings.steps, settings.seed
    conv = inst.convention
    cfg = net.CopyTaskConfig.of(inst)
    P_checked = check_P_values("P_values", P_values)
    sequences = [conv.sequences_of_P(P, inst.L) for P in P_checked]
    K = len(sequences) * D * per_set
    for P, k in zip(P_checked, sequences):
        check_simulation_size(inst, float(P), k * D, K, steps, settings.n_test_sequences)
    dev, train, test, _ = prepare_data(cfg, settings.device, seed, "device", [k for k in sequences for _ in range(D)],
                                       settings.n_test_sequences)
    train = train.repeat(per_set)
    run_seed = seed_after(seed)
    message = None
    if algorithm == "mala":
        run = run_langevin(cfg, train, test, alternating_starts(K), steps=steps, seed=run_seed, device=str(dev))
        trapped, _ = trapped_chains(run.data_term, np.arange(K) // (D * per_set), run.starts, settings.trap_sds)
        kept = ~trapped
        message = (f"{run.message}; {int(trapped.sum())} of {K} chains trapped (mean data term more than "
                   f"{settings.trap_sds:g} pooled within-chain spreads above the lowest chain's at its P): kept False")
    else:
        # run_adam filters each block of per_set consecutive seeds, i.e. each training set (of its P), by its rule
        run = run_adam(cfg, train, test, K, steps=steps, seed=run_seed, device=str(dev), per_data_set=per_set)
        kept = run.kept
    op = order_parameters_of(run.G, conv.boundary)
    t_runs, c_runs = op["t"], op["c"]
    if attention == "linear":
        t_runs, c_runs = sign_folded(t_runs, c_runs, axis=-1)
    sems = [batch_means_error(c_)[1] for c_ in c_runs]
    per_P = D * per_set
    return SweepResult("mala" if algorithm == "mala" else "adam",
                       np.repeat([float(conv.P_of_sequences(k, inst.L)) for k in sequences], per_P),
                       np.tile(np.arange(per_P), len(sequences)), tuple(run.starts), kept, t_runs.mean(-1),
                       c_runs.mean(-1), np.array(sems), run.train_loss.mean(-1), run.test_loss.mean(-1),
                       run.G.mean(1), run.status, message or run.message,
                       data_set=np.tile(np.repeat(np.arange(D), per_set), len(sequences)))


def simulate_hysteresis(L: int, V: int, P_values, *, data_sets: int = 2, steps: int = 4000, burn_in: int | None = None,
                        seed: int = 0, device: str = "auto", convention: Convention = DEFAULT,
                        read_out_start: str = "small") -> HysteresisResult:
    """Softmax hysteresis test: at each P, `data_sets` independent training sets, each sampled by two MALA
    chains, one started uniform (scores 0) and one started copy (scores 2 ln L on the previous position).

    Per chain: the time-mean copy strength c with a batch-means error. Per P and start: the mean over
    data sets with the standard error over data sets (which includes the data-set-to-data-set spread the
    self-averaged theory does not have). The hysteresis statistic is the paired difference
    Δc = c(copy start) − c(uniform start) on the same data set, its mean and standard error over data sets
    (for one data set, the two chains' batch-means errors combined). In equilibrium Δc = 0; two
    starts stuck in different minima give Δc ≈ the jump of the homogeneous theory. `c_trace` (per chain,
    every 10 steps after burn-in) gives the histograms. read_out_start: see `samplers.run_langevin` ("small", the
    default, lets a copy start fall below its equilibrium first at L = 128; "conditional" starts W at its posterior
    mean given the start).
    """
    from attnphase.models.copy_heads import network as net
    from attnphase.models.copy_heads.samplers import run_langevin
    from attnphase.validate.seeds import seed_after

    inst = CopyHeadsInstance.validated(attention="softmax", L=L, V=V, convention=convention)
    P_values = check_P_values("P_values", P_values)
    data_sets = check_int("data_sets", data_sets, 1, 1000)
    steps = check_int("steps", steps, 20, 10**7)
    if burn_in is not None:  # at least two samples (every 10 steps) after burn-in for a batch-means error
        burn_in = check_int("burn_in", burn_in, 0, steps - 20)
    conv = inst.convention
    cfg = net.CopyTaskConfig.of(inst)
    sequences = [conv.sequences_of_P(P, inst.L) for P in P_values]
    dev, train, test, _ = prepare_data(cfg, device, seed, "device", [k for k in sequences for _ in range(data_sets)],
                                       500)
    run = run_langevin(cfg, train.repeat(2), test, ["uniform", "copy"] * (len(sequences) * data_sets), steps=steps,
                       burn_in=burn_in, seed=seed_after(seed), device=str(dev), record_matrices=False,
                       read_out_start=read_out_start)
    points = []
    for i, k in enumerate(sequences):
        chains, deltas, delta_errs = [], [], []
        for d in range(data_sets):
            j = 2 * (i * data_sets + d)
            pair = []
            for start, idx in (("uniform", j), ("copy", j + 1)):
                sem = batch_means_error(run.c_trace[idx])[1]  # burn_in leaves at least two samples: two batches
                c_ = float(run.c_trace[idx].mean())
                chains.append(HysteresisChain(d, start, c_, sem, float(run.acceptance[idx]), run.c_trace[idx]))
                pair.append((c_, sem))
            deltas.append(pair[1][0] - pair[0][0])
            delta_errs.append(math.hypot(pair[0][1], pair[1][1]))
        per_start = {}
        for start in ("uniform", "copy"):
            cs = np.array([ch.c for ch in chains if ch.start == start])
            sems = np.array([ch.c_sem for ch in chains if ch.start == start])
            err = float(cs.std(ddof=1) / math.sqrt(len(cs))) if len(cs) > 1 else float(sems[0])
            per_start[start] = StartMean(float(cs.mean()), err)
        deltas = np.array(deltas)
        d_err = float(deltas.std(ddof=1) / math.sqrt(len(deltas))) if len(deltas) > 1 else delta_errs[0]
        points.append(HysteresisPoint(conv.P_of_sequences(k, inst.L), k, per_start["uniform"], per_start["copy"],
                                      float(deltas.mean()), d_err, tuple(chains)))
    return HysteresisResult(inst.L, inst.V, steps, data_sets, tuple(points), run.status, run.message)
