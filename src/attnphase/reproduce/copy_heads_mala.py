"""The copy-heads report's MALA chains against their theories (`reproduce.copy_heads`): linear attention against the
posterior means of the remainder-entropy convention (`linear_posterior_means`), softmax against the posterior means
over the joint row mean field's lowest well (`softmax_row_posterior_means`), each chain's z with its batch-means error,
the verdict sentences and tables, and Convention A's Gibbs loss at the chains' P for reference.
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.api import copy_heads as api
from attnphase.numeric.digits import error_rounded_up
from attnphase.report import value_with_error

__all__ = ["AGREEMENT_SIGMAS", "SOFTMAX_MALA_THEORY", "SOFTMAX_HOMOGENEOUS", "mala_chains", "convention_A_losses",
           "chain_z_scores", "softmax_mala_theory", "simulation_paragraph", "softmax_table"]


AGREEMENT_SIGMAS = 3.0  # the band of a chain's c against the posterior means (as `simulate`'s comparisons)


def mala_chains(sims, attention: str = "linear") -> list[dict]:
    """The MALA chains of `attention` among the simulation rows `sims` that the run kept."""
    return [r for r in sims if r["attention"] == attention and r["algorithm"] == "mala" and r["kept"]]


def convention_A_losses(L, V, sims) -> dict[float, float]:
    """Convention A's Gibbs loss (the default convention's global minimum, drawn dotted) at each P of the linear MALA
    chains, solved there (not read off the figure's grid)."""
    return {P: api.solve("linear", L, V, float(P), api.DEFAULT).global_minimum.loss_gibbs
            for P in sorted({r["P"] for r in mala_chains(sims, "linear")})}


def chain_z_scores(sims, posterior_rows, attention: str = "linear", key: str = "c") -> list[dict]:
    """Each kept MALA chain of `attention` against the theory row at its P: z = (c − c_theory)/√(sem² + error²), the
    chain's batch-means error and the theory's error (`key` + "_error"; 0 when the row has none) combined. Linear: the
    posterior means (`linear_posterior_means`); softmax: the joint row mean field's posterior means (key "c") or the
    homogeneous action's saddle point (key "c_homogeneous", no error)."""
    theory = {r["P"]: r for r in posterior_rows if r["status"] == "converged"}
    return [{"P": r["P"], "start": r["start"],
             "z": (r["c_copy"] - theory[r["P"]][key])
                  / math.hypot(r["c_copy_sem"], theory[r["P"]].get(f"{key}_error", 0.0))}
            for r in mala_chains(sims, attention) if r["P"] in theory]


def _z_verdict(zs, what: str) -> str:
    """"the MALA chains' c lies within 3 combined errors of <what> for k of n chains (largest |z| …); outside it
    at …"."""
    outside = [z for z in zs if abs(z["z"]) > AGREEMENT_SIGMAS]
    within = [z for z in zs if abs(z["z"]) <= AGREEMENT_SIGMAS]
    verdict = (f"the MALA chains' c lies within {AGREEMENT_SIGMAS:g} combined errors of {what} for {len(within)} of "
               f"{len(zs)} chains")
    if within:
        worst = max(within, key=lambda z: abs(z["z"]))
        verdict += f" (largest |z| {abs(worst['z']):.2g}: P = {worst['P']:g}, {worst['start']} start)"
    if outside:
        verdict += "; outside it at " + ", ".join(f"P = {z['P']:g} ({z['start']} start, z = {z['z']:.2g})"
                                                  for z in outside)
    return verdict


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


def simulation_paragraph(sims, posterior_rows, losses_A: dict[float, float], softmax_rows=()) -> str:
    """The text above the order-parameter figure; its statements about the runs are computed from this run's
    numbers: how the linear chains' c compare with the posterior means (z of each chain, `chain_z_scores`), how far
    Convention A's Gibbs loss lies below the sampled test loss at each P, and (softmax_rows, `softmax_mala_theory`)
    how the softmax chains' c compare with the joint row mean field's posterior means and with the homogeneous
    action's saddle point."""
    verdict = _z_verdict(chain_z_scores(sims, posterior_rows), "them")
    verdict += " (errors: one chain's batch means, not independent chains; no finite-P term is claimed)"
    ratios = []
    for P, loss_A in losses_A.items():
        sampled = [r["test_loss"] for r in mala_chains(sims, "linear") if r["P"] == P]
        if sampled and loss_A > 0:
            ratios.append((P, float(np.mean(sampled)) / loss_A))
    ratio_text = ", ".join(f"{ratio:.2g}× (P = {P:g})" for P, ratio in ratios)
    below = (f"the sampled test loss is {ratio_text} its Gibbs loss" if ratios
             else "no linear MALA chain to compare its Gibbs loss with")
    softmax = ("Softmax: the theory for the sampled posterior is the posterior mean over the lowest well of the row "
               "mean field with the joint row density (each row's fluctuations kept; green; "
               "`softmax_row_posterior_means`, what `simulate copy-heads --attention softmax --fluctuations` compares "
               "with; docs)")
    if softmax_rows:
        joint = chain_z_scores(sims, softmax_rows, "softmax")
        hom = chain_z_scores(sims, softmax_rows, "softmax", key="c_homogeneous")
        hom_out = [z for z in hom if abs(z["z"]) > AGREEMENT_SIGMAS]
        softmax += (f": {_z_verdict(joint, 'it')} (z: the chain's c minus the theory over its batch-means error "
                    "and the theory's quadrature error combined). The homogeneous action (black; its saddle point, "
                    "every row at the same logit; its row rate the large-L shortcut, which needs L ≫ e^{σ²}) is not "
                    f"the theory for MALA: {len(hom_out)} of {len(hom)} chains lie more than {AGREEMENT_SIGMAS:g} "
                    "errors from it"
                    + (f" (z from {min(z['z'] for z in hom):.2g} to {max(z['z'] for z in hom):.2g})" if hom else "")
                    + ".")
    else:
        softmax += "; no softmax MALA chain to compare it with."
    return ("MALA = Metropolis-adjusted Langevin on (scores, W, bias) at beta = 1; Adam keeps runs within "
            "max(1, 1e-3|U_best|) of the best objective per P. Linear attention: the theory for the sampled posterior "
            "is the remainder-entropy convention with one row sum per row, averaged over the order parameters' own "
            f"fluctuations (green; `linear_posterior_means`; docs): {verdict}. Convention A (saddle point over G) is "
            f"drawn dotted for reference: {below}. " + softmax)


def softmax_table(sims, softmax_rows) -> list[dict]:
    """The report's softmax table: per P, the theory for MALA (joint row mean field's posterior means of c and of the
    Gibbs loss, with their errors), the homogeneous saddle point's c, each kept MALA chain's c and its z against
    both."""
    joint = chain_z_scores(sims, softmax_rows, "softmax")
    hom = chain_z_scores(sims, softmax_rows, "softmax", key="c_homogeneous")
    return [{"P": row["P"], "theory for MALA: c": value_with_error(row["c"], row["c_error"]),
             "theory for MALA: Gibbs loss": value_with_error(row["loss_gibbs"], row["loss_gibbs_error"]),
             "homogeneous saddle point c": f"{row['c_homogeneous']:.4f}",
             "MALA c (each chain)": ", ".join(f"{r['c_copy']:.3f} ± {error_rounded_up(r['c_copy_sem'], 3)}"
                                            for r in mala_chains(sims, "softmax") if r["P"] == row["P"]),
             "z against the theory for MALA": ", ".join(f"{z['z']:.2g}" for z in joint if z["P"] == row["P"]),
             "z against the homogeneous saddle point": ", ".join(f"{z['z']:.2g}" for z in hom if z["P"] == row["P"])}
            for row in softmax_rows]
