"""The statistics of a copy-heads simulation's draws: per quantity the mean over training sets and its error
(Monte Carlo error of each set's chains, or Adam runs' spread and unsettled change), the chains' diagnostics
(split R-hat, effective sample size), chains trapped far above the others, and the comparison with the theory."""

from __future__ import annotations

import math

import numpy as np

from attnphase.models.copy_heads.simulation_results import ChainDiagnostics
from attnphase.results import Status
from attnphase.validate.compare import NORMAL_BAND, Comparison, student_band

__all__ = ["MIN_DRAWS", "TEST_BLOCKS", "draw_statistics", "test_set_error", "trapped_chains",
           "verdict_withheld", "comparison_with_theory"]

MIN_DRAWS = 4
"""Draws per chain that split R-hat and the effective sample size need (two halves of at least two draws)."""

TEST_BLOCKS = 20
"""Equal parts of the test set whose losses give its own sampling error (`test_set_error`)."""


def draw_statistics(draws: np.ndarray, groups: np.ndarray, name: str, algorithm: str, *, rhat_max: float = 1.05,
                     ess_min: float = 100.0, half: np.ndarray | None = None):
    """(mean, sd, sem, n, dof, diagnostics, change) of one quantity: draws (runs, samples) of the selected runs, groups
    their training set. MALA: per training set the mean and its Monte Carlo standard error (ESS over its chains),
    diagnostics with status poor_mixing when the largest split R-hat exceeds rhat_max or the summed ESS of the mean is
    below ess_min. MALA, one set: that set's numbers (dof None: normal band); several: the mean of the sets' means and
    their standard error, at least the sets' own errors combined (dof = sets − 1: Student-t band). Adam: per set the
    mean of its kept runs; the mean of the sets' means, with their standard error over sets (dof = sets − 1), NaN for
    one set (its runs' spread is no error of the finite-P minimum: dof None, no verdict); `change`, the largest change
    of a run over the second half of its steps (`half`: the values it had then), is added to the error in quadrature
    (change None for MALA).

    MALA with fewer than MIN_DRAWS draws per chain, or with a chain whose draws never change (a chain that did not
    move, e.g. at acceptance 0: its draws are its start): no diagnostics can be computed; the error is the draws'
    standard deviation (an effective sample size of 1) and the diagnostics say poor_mixing, with rhat and the ESS NaN
    (not computed). A constant quantity read "constant: no diagnostics", converged, with an error of 0, and agreed with
    any theory equal to its start (ρ = 0 of chains that never left the plane)."""
    from attnphase.numeric.mcmc import summarize_chains

    sets = np.unique(groups)
    means, errors, summaries, undiagnosed = [], [], [], None
    for d in sets:
        block = draws[groups == d]
        means.append(float(block.mean()))
        if algorithm == "adam":
            continue  # no error of its own: the runs on one set reach its one minimum (below)
        if block.shape[1] < MIN_DRAWS or np.any(np.ptp(block, axis=1) == 0):
            undiagnosed = undiagnosed or (
                f"{block.shape[1]} draw(s) per chain, fewer than the {MIN_DRAWS} that split R-hat and the ESS need: "
                "not diagnosed (error: the draws' standard deviation, ESS taken as 1; more --steps)"
                if block.shape[1] < MIN_DRAWS else
                "a chain never changed it (the chain did not move): not diagnosed (error: the draws' standard "
                "deviation)")
            errors.append(float(block.std(ddof=1)) if block.size > 1 else float(np.abs(block).max()))
        else:
            summary = summarize_chains(block)
            summaries.append(summary)
            errors.append(summary.mcse_mean)
    values = draws.reshape(-1)
    sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
    diagnostics, combined = None, math.sqrt(sum(e * e for e in errors)) / len(sets)
    if undiagnosed:
        diagnostics = ChainDiagnostics(name, math.nan, math.nan, math.nan, combined, draws.shape[0], draws.shape[1],
                                       Status.POOR_MIXING, f"{name}: {undiagnosed}", math.nan)
    elif summaries:
        rhat, ess_mean = max(sm.rhat for sm in summaries), sum(sm.ess_mean for sm in summaries)
        problems = []
        if not rhat <= rhat_max:
            problems.append(f"R-hat {rhat:.3f} > {rhat_max:g}")
        if not ess_mean >= ess_min:
            problems.append(f"ESS {ess_mean:.0f} < {ess_min:g}")
        diagnostics = ChainDiagnostics(name, rhat, sum(sm.ess_bulk for sm in summaries),
                                       sum(sm.ess_tail for sm in summaries), combined, draws.shape[0], draws.shape[1],
                                       Status.POOR_MIXING if problems else Status.CONVERGED,
                                       f"{name}: {', '.join(problems)}" if problems else "", ess_mean)
    change = None
    if algorithm == "adam" and half is not None:
        change = float(np.max(np.abs(draws.reshape(-1) - half.reshape(-1))))
    if algorithm == "adam":
        # Adam's runs on one training set reach the minimum of that set's objective (the kept ones the same one, to
        # ~1e-11 in c at linear L = V = 4, P = 200): their spread is no error of it. What separates that minimum from
        # the self-averaged theory is the finite-P scatter between training sets, seen only over several sets. One
        # set (one run or many) has no such estimate: NaN, and no verdict (`verdict_withheld`), as MALA's lone chain.
        spread = float(np.std(means, ddof=1) / math.sqrt(len(sets))) if len(sets) > 1 else math.nan
        mean, sem, dof = float(np.mean(means)), spread, (len(sets) - 1 if len(sets) > 1 else None)
    elif len(sets) == 1:
        mean, sem, dof = means[0], errors[0], None
    else:  # the sets' spread, but never below their own errors combined (two means can agree by chance)
        spread = float(np.std(means, ddof=1) / math.sqrt(len(sets)))
        own = math.sqrt(sum(e * e for e in errors)) / len(sets)
        mean, sem, dof = float(np.mean(means)), max(spread, own), len(sets) - 1
    if change is not None:
        sem = math.hypot(sem, change)
    return mean, sd, sem, values.size, dof, diagnostics, change


def trapped_chains(data_term: np.ndarray, groups: np.ndarray, starts, trap_sds: float):
    """(trapped, notes): per run, whether its mean data term lies more than trap_sds pooled within-chain standard
    deviations above the lowest chain's mean on its training set (never the lowest chain itself); a note per trapped
    chain. In equilibrium the chains' mean data terms differ by a small fraction of that spread (≤ 0.2 of it at linear
    L = 8, P = 1000), and a chain stuck in the trap of that point sits 11–13 spreads (77–88 nats) above."""
    trapped, notes = np.zeros(len(data_term), bool), []
    for d in np.unique(groups):
        runs = np.nonzero(groups == d)[0]
        if len(runs) < 2 or data_term.shape[1] < 2:
            continue
        block = data_term[runs]
        means, spread = block.mean(axis=1), math.sqrt(float(np.mean(block.var(axis=1, ddof=1))))
        lowest = int(np.argmin(means))
        for i, k in enumerate(runs):
            gap = float(means[i] - means[lowest])
            if spread > 0 and gap > trap_sds * spread:
                trapped[k] = True
                notes.append(f"chain {k} ({starts[k]} start) trapped: its data term lies {gap:.3g} nats above chain "
                             f"{runs[lowest]}'s, {gap / spread:.3g} times the within-chain spread {spread:.3g}")
    return trapped, notes


def verdict_withheld(statistics) -> list[str]:
    """Why (mean, sd, sem, n, dof, diagnostics, ...) of `draw_statistics` supports no verdict on the theory, in words;
    empty when it does.

    * Diagnostics that fail (split R-hat above the run's rhat_max, an ESS of the mean below its ess_min, too few draws
      to tell, chains that never moved): "not resolved". Neither an agreement nor a rejection is claimed. Such draws
      need not describe the posterior, and their error bar is not known to cover: at linear L = 8, V = 4, P = 1000 a
      lone chain of ESS 11 scatters by about twice its bar about the converged mean, and two chains caught together
      in the trap (R-hat 1.35, ESS 5) give c = −0.45, 74 of their bars below the theory's 0.356, where the converged
      posterior mean is about 0.37. No widening of the bar repairs a mean that is not the posterior's, so an
      undiagnosed z decides nothing either way.
      This holds where the bar is made of the chains' own draws (one training set). With three or more sets the bar is
      the spread of the sets' means, which a set whose chains disagree widens as it moves its mean: there the
      diagnostics are reported and the verdict stands.
    * Two training sets: their one-degree Student-t band (±236σ) would call almost anything agreement (z = 141 did).
    * No error bar (NaN: Adam on one training set, `draw_statistics`): its runs reach that set's one minimum, and
      the minimum lies from the self-averaged theory by a finite-P amount that only several sets measure; with a bar
      of 0 (or the 1e-11 of runs at the same minimum) any such amount read as a rejection at |z| ~ 1e8.
    """
    sem, dof, diagnostics = statistics[2], statistics[4], statistics[5]
    reasons = []
    if math.isnan(sem):
        reasons.append("one training set: Adam's runs on it reach one minimum, whose finite-P scatter about the "
                       "theory needs several sets (data_sets >= 3): no error bar")
    if dof is None and diagnostics is not None and diagnostics.status != Status.CONVERGED:
        reasons.append("not resolved: " + diagnostics.message.removeprefix(f"{diagnostics.name}: "))
    if dof == 1:
        reasons.append("two training sets: their one-degree band is ±236σ wide")
    return reasons


def comparison_with_theory(name: str, theory: float, theory_error: float, statistics, withheld=()) -> Comparison:
    """`validate.compare.Comparison` of a theory value with (mean, sd, sem, n, dof) of `draw_statistics`: agreement
    within 3σ of a normal band, or the same two-sided level (99.73%) of Student's t with dof degrees of freedom; no
    verdict (agrees None, z still given) where `withheld` names a reason (`verdict_withheld` and the run's own)."""
    mean, sd, sem, n, dof = statistics[:5]
    n_sigma = NORMAL_BAND if dof is None else student_band(dof)
    scale = math.hypot(sem, theory_error)
    z = (mean - theory) / scale if scale > 0 else None
    agrees = None if withheld else (abs(z) <= n_sigma) if z is not None else (mean == theory)
    return Comparison(name, float(theory), float(theory_error), mean, sd, sem, int(n), z, agrees, n_sigma)


def test_set_error(loss_moments, selected, test_tokens, cfg) -> float:
    """The standard error of a test loss from the test set's own sampling: the theory's loss is an expectation over
    test data, the simulation's its mean over one test set, which the chains' Monte Carlo error leaves out. The test
    set is cut into TEST_BLOCKS equal parts (fewer for a shorter set); the loss on each, averaged over the selected
    chains, comes from their `network.loss_moments` (the loss is linear in them), and the error is the parts' spread
    over √parts. At linear L = 8, V = 4, P = 1000 on 2000 test sequences it is 7e-5 to 1.3e-4, against a Monte Carlo
    error of 5.7e-4 for 4 chains × 6000 steps and 1.7e-4 for sixteen training sets. loss_moments: the run's
    (quadratic, linear) means per chain; selected: the chains kept."""
    import torch

    from attnphase.models.copy_heads import network as net

    quadratic, linear = (torch.as_tensor(np.asarray(moment)[selected]) for moment in loss_moments)
    parts = min(TEST_BLOCKS, test_tokens.shape[0])
    size = test_tokens.shape[0] // parts
    losses = []
    for k in range(parts):
        block = net.statistics([test_tokens[k * size:(k + 1) * size]], cfg.V, boundary=cfg.boundary)
        error = net.squared_error_of_moments(quadratic.to(block.C), linear.to(block.C), block)
        losses.append(float(error.mean() / block.n_targets[0]))
    return float(np.std(losses, ddof=1) / math.sqrt(parts))
