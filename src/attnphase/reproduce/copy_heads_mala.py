"""The copy-heads report's MALA chains against their theories (`reproduce.copy_heads`): linear attention against the
posterior means of the remainder-entropy convention (`linear_posterior_means`), softmax against the posterior means
over the joint row mean field's lowest well (`softmax_row_posterior_means`) and the homogeneous action's saddle point.
At each P the chains run on independent training sets; the pooled c is the mean of the sets' means with the standard
error over the sets (`pooled_comparison`), and the verdict is the Student-t band of that many sets at the two-sided
level of 3σ (99.73%). The verdict sentences and tables, and Convention A's Gibbs loss at the chains' P for reference.
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.api import copy_heads as api
from attnphase.models.copy_heads.batched_simulation import SWEEP_TRAP_SDS
from attnphase.numeric.digits import error_rounded_up
from attnphase.report import value_with_error
from attnphase.validate.compare import student_band

__all__ = ["MALA_DATA_SETS", "mala_settings", "mala_chains", "convention_A_losses", "pooled_chains",
           "pooled_comparison", "softmax_mala_theory", "simulation_paragraph", "linear_table", "softmax_table"]


MALA_DATA_SETS = {True: 16, False: 32}  # quick, full: independent training sets per P, one chain on each


def mala_settings(quick: bool, attention: str) -> tuple[int, int, int]:
    """(training sets per P, chains per set, MALA steps) of the report's sweep. Linear chains need the longer run:
    their autocorrelation time is 20–40 draws (draws every 10 steps after half the steps), and at 1500 steps the
    pooled c of P = 1280 lay +0.012 ± 0.003 above its equilibrium; softmax chains decorrelate within 2–4 draws."""
    steps = {"linear": 6000, "softmax": 3000} if quick else {"linear": 12000, "softmax": 6000}
    return MALA_DATA_SETS[quick], 1, steps[attention]


def mala_chains(sims, attention: str = "linear") -> list[dict]:
    """The MALA chains of `attention` among the simulation rows `sims` that the run kept (not trapped)."""
    return [r for r in sims if r["attention"] == attention and r["algorithm"] == "mala" and r["kept"]]


def convention_A_losses(L, V, sims) -> dict[float, float]:
    """Convention A's Gibbs loss (the default convention's global minimum, drawn dotted) at each P of the linear MALA
    chains, solved there (not read off the figure's grid)."""
    return {P: api.solve("linear", L, V, float(P), api.DEFAULT).global_minimum.loss_gibbs
            for P in sorted({r["P"] for r in mala_chains(sims, "linear")})}


def pooled_chains(sims, attention: str) -> list[dict]:
    """Per P of the MALA chains of `attention`: the training sets with a kept chain (`sets`), the chains left out as
    trapped (`trapped`), the pooled c (mean over those sets of each set's mean over its kept chains) with its standard
    error sd(set means)/√sets (NaN for one set), and the pooled test loss the same way."""
    rows = []
    for P in sorted({r["P"] for r in sims if r["attention"] == attention and r["algorithm"] == "mala"}):
        chains = [r for r in sims if r["attention"] == attention and r["algorithm"] == "mala" and r["P"] == P]
        kept = [r for r in chains if r["kept"]]
        sets = sorted({r["data_set"] for r in kept})
        c = np.array([np.mean([r["c_copy"] for r in kept if r["data_set"] == d]) for d in sets])
        loss = np.array([np.mean([r["test_loss"] for r in kept if r["data_set"] == d]) for d in sets])
        error = float(c.std(ddof=1) / math.sqrt(len(c))) if len(c) > 1 else math.nan
        rows.append({"P": P, "sets": len(sets), "chains": len(chains), "trapped": len(chains) - len(kept),
                     "c": float(c.mean()) if len(c) else math.nan, "c_error": error,
                     "test_loss": float(loss.mean()) if len(loss) else math.nan})
    return rows


def pooled_comparison(sims, theory_rows, attention: str, key: str = "c") -> list[dict]:
    """Per P (`pooled_chains`) the pooled c against the theory row at that P (`key`, with its error `key`_error, 0
    when the row has none): the gap pooled − theory, its error (the pooled error and the theory's combined), t = gap /
    error, the band (`validate.compare.student_band` with sets − 1 degrees of freedom: the 99.73% level of 3σ) and
    agrees (|t| ≤ band; None with fewer than 3 sets, whose band says nothing)."""
    theory = {r["P"]: r for r in theory_rows if r["status"] == "converged"}
    rows = []
    for pooled in pooled_chains(sims, attention):
        if pooled["P"] not in theory or pooled["sets"] < 1:
            continue
        row = theory[pooled["P"]]
        theory_error = row.get(f"{key}_error", 0.0)
        gap, gap_error = pooled["c"] - row[key], math.hypot(pooled["c_error"], theory_error)
        band = student_band(pooled["sets"] - 1) if pooled["sets"] >= 3 else math.nan
        t = gap / gap_error if gap_error > 0 else math.nan
        agrees = bool(abs(t) <= band) if pooled["sets"] >= 3 else None
        rows.append({**pooled, "theory": row[key], "theory_error": theory_error, "gap": gap, "gap_error": gap_error,
                     "t": t, "band": band, "agrees": agrees})
    return rows


def _verdict(row) -> str:
    if row["agrees"] is None:
        return "no verdict (fewer than 3 training sets)"
    if row["agrees"]:
        return "within the band"
    return f"{'below' if row['gap'] < 0 else 'above'} the theory, outside the band"


def _gap(row, digits: int = 4) -> str:
    if not math.isfinite(row["gap_error"]):  # one training set: no spread to take the error from
        return f"{row['gap']:+.{digits}f} (no error)"
    return f"{row['gap']:+.{digits}f} ± {error_rounded_up(row['gap_error'], digits)}"


def _number(value: float, spec: str, prefix: str = "") -> str:
    return f"{prefix}{value:{spec}}" if math.isfinite(value) else "n/a"


def _verdict_sentence(rows, what: str) -> str:
    """How the pooled c of each P compares with `what`: the gaps as measured (sign, size, P), and where they lie
    outside the band."""
    if not rows:
        return f"no MALA chain to compare {what} with"
    below = sum(r["gap"] < 0 for r in rows)
    outside = [r for r in rows if r["agrees"] is False]
    within = [r for r in rows if r["agrees"] is True]
    undecided = [r for r in rows if r["agrees"] is None]
    text = (f"the pooled c minus {what} is " + ", ".join(f"{_gap(r)} (P = {r['P']:g})" for r in rows)
            + f": negative at {below} of {len(rows)} P; ")
    if outside:
        text += ("outside the band at P = " + ", ".join(f"{r['P']:g} (t = {r['t']:.2g})" for r in outside)
                 + (", within it at P = " + ", ".join(f"{r['P']:g}" for r in within) if within else ""))
    elif within and not undecided:
        text += f"within the band at every P (largest |t| {max(abs(r['t']) for r in within):.2g})"
    elif within:
        text += "within the band at P = " + ", ".join(f"{r['P']:g}" for r in within)
    if undecided:  # fewer than 3 training sets with a kept chain: the band decides nothing there
        text += ("; " if outside or within else "") + "no verdict at P = " + ", ".join(
            f"{r['P']:g} ({r['sets']} training set{'' if r['sets'] == 1 else 's'})" for r in undecided)
    decided = sorted((r["sets"], r["band"]) for r in rows if r["agrees"] is not None)
    if not decided:
        return text
    (few, wide), (most, narrow) = decided[0], decided[-1]
    if few == most:
        return text + f" (band |t| ≤ {narrow:.3g}: Student's t for {most} training sets at 99.73%)"
    return text + (f" (band: Student's t for the training sets of each P at 99.73%, |t| ≤ {narrow:.3g} for {most} "
                   f"sets to {wide:.3g} for {few})")


def _trapped_sentence(sims) -> str:
    trapped = [r for r in sims if r["algorithm"] == "mala" and not r["kept"]]
    chains = [r for r in sims if r["algorithm"] == "mala"]
    if not trapped:
        return f"No MALA chain of the {len(chains)} was trapped."
    where = ", ".join(f"{a} P = {P:g}: {n}" for (a, P), n in sorted(
        {(r["attention"], r["P"]): sum(1 for s in trapped if (s["attention"], s["P"]) == (r["attention"], r["P"]))
         for r in trapped}.items()))
    return (f"{len(trapped)} of {len(chains)} MALA chains were trapped (mean data term more than {SWEEP_TRAP_SDS:g} "
            f"within-chain spreads above the lowest chain's at their P) and are left out ({where}).")

SOFTMAX_MALA_THEORY = "posterior means, joint row mean field (theory for MALA)"
SOFTMAX_HOMOGENEOUS = "saddle point of the homogeneous action (W integrated)"


def softmax_mala_theory(L, V, P_values) -> list[dict]:
    """The theory the softmax MALA chains are compared with, at each P: the posterior means of c and of the Gibbs
    loss over the lowest well (least free energy) of the row mean field with the joint row density, with their
    quadrature errors (`softmax_row_posterior_means`; what `simulate copy-heads --attention softmax --fluctuations`
    compares with), and beside it the homogeneous action's global minimum c_homogeneous (the figure's black line,
    solved at the same P)."""
    rows = []
    for P in sorted({float(P) for P in P_values}):
        means = api.softmax_row_posterior_means(L, V, P)
        well = min(means.wells, key=lambda w: w.free_energy)
        rows.append({"P": P, "c": well.c_mean, "c_error": well.error, "loss_gibbs": well.loss_gibbs_mean,
                     "loss_gibbs_error": well.loss_gibbs_error, "c_mode": well.c_mode, "wells": len(means.wells),
                     "c_homogeneous": api.solve("softmax", L, V, P, api.DEFAULT).global_minimum.c_copy,
                     "status": str(means.status)})
    return rows


def simulation_paragraph(sims, posterior_rows, losses_A: dict[float, float], softmax_rows=(), sizes: str = "") -> str:
    """The text above the order-parameter figure; its statements about the runs are computed from this run's
    numbers: per P the pooled c of the linear chains against the posterior means and of the softmax chains against the
    joint row mean field's posterior means and the homogeneous action's saddle point (`pooled_comparison`; the gaps
    as measured, the band's verdict), the trapped chains left out, and how far Convention A's Gibbs loss lies below
    the sampled test loss at each P. sizes: how many training sets, chains and steps (said first)."""
    linear = pooled_comparison(sims, posterior_rows, "linear")
    ratios = []
    for P, loss_A in losses_A.items():
        sampled = [r["test_loss"] for r in pooled_chains(sims, "linear") if r["P"] == P]
        if sampled and loss_A > 0:
            ratios.append((P, sampled[0] / loss_A))
    ratio_text = ", ".join(f"{ratio:.2g}× (P = {P:g})" for P, ratio in ratios)
    below = (f"the sampled test loss is {ratio_text} its Gibbs loss" if ratios
             else "no linear MALA chain to compare its Gibbs loss with")
    softmax = ("Softmax: the theory for the sampled posterior is the posterior mean over the lowest well of the row "
               "mean field with the joint row density (each row's fluctuations kept; green; "
               "`softmax_row_posterior_means`, what `simulate copy-heads --attention softmax --fluctuations` compares "
               "with; docs)")
    if softmax_rows:
        joint = pooled_comparison(sims, softmax_rows, "softmax")
        hom = pooled_comparison(sims, softmax_rows, "softmax", key="c_homogeneous")
        softmax += (f": {_verdict_sentence(joint, 'it')}. The homogeneous action (black; its saddle point, every row "
                    "at the same logit; its row rate the large-L shortcut, which needs L ≫ e^{σ²}) is not the theory "
                    f"for MALA: {_verdict_sentence(hom, 'its c')}.")
    else:
        softmax += "; no softmax MALA chain to compare it with."
    return ("MALA = Metropolis-adjusted Langevin on (scores, W, bias) at beta = 1; Adam keeps runs within "
            "max(1, 1e-3|U_best|) of the best objective per P. " + (sizes + " " if sizes else "")
            + "Errors of a pooled c: the standard error over the independent training sets (it holds the "
            "set-to-set spread of a finite data set, which the self-averaged theories have not), combined with the "
            "theory's own error; no finite-P term is added to any theory. Linear attention: the theory for the "
            "sampled posterior is the remainder-entropy convention with one row sum per row, averaged over the order "
            f"parameters' own fluctuations (green; `linear_posterior_means`; docs): {_verdict_sentence(linear, 'it')}. "
            f"Convention A (saddle point over G) is drawn dotted for reference: {below}. " + softmax + " "
            + _trapped_sentence(sims))


def _pooled_cells(row) -> dict:
    return {"training sets (trapped chains left out)": f"{row['sets']} ({row['trapped']})",
            "MALA c (pooled)": value_with_error(row["c"], row["c_error"]),
            "gap (pooled − theory)": _gap(row), "t": _number(row["t"], ".2g"), "band": _number(row["band"], ".3g", "±"),
            "verdict": _verdict(row)}


def linear_table(sims, posterior_rows) -> list[dict]:
    """The report's linear table: per P the posterior means (c with its Monte Carlo error, t, the Gibbs loss) and the
    pooled MALA c against them (`pooled_comparison`)."""
    theory = {r["P"]: r for r in posterior_rows}
    return [{"P": row["P"], "theory c": value_with_error(row["theory"], row["theory_error"]),
             "theory t": f"{theory[row['P']]['t']:.3f}", "theory Gibbs loss": f"{theory[row['P']]['loss_gibbs']:.4f}",
             **_pooled_cells(row)} for row in pooled_comparison(sims, posterior_rows, "linear")]


def softmax_table(sims, softmax_rows) -> list[dict]:
    """The report's softmax table: per P the theory for MALA (joint row mean field's posterior means of c and of the
    Gibbs loss, with their errors) and the pooled MALA c against it (`pooled_comparison`), then the homogeneous saddle
    point's c and the pooled c's gap to it with its verdict (no theory error)."""
    theory = {r["P"]: r for r in softmax_rows}
    hom = {r["P"]: r for r in pooled_comparison(sims, softmax_rows, "softmax", key="c_homogeneous")}
    rows = []
    for row in pooled_comparison(sims, softmax_rows, "softmax"):
        th, h = theory[row["P"]], hom[row["P"]]
        rows.append({"P": row["P"], "theory for MALA: c": value_with_error(row["theory"], row["theory_error"]),
                     "theory for MALA: Gibbs loss": value_with_error(th["loss_gibbs"], th["loss_gibbs_error"]),
                     **_pooled_cells(row), "homogeneous saddle point c": f"{th['c_homogeneous']:.4f}",
                     "gap to the homogeneous saddle point": _gap(h), "its verdict": _verdict(h)})
    return rows
