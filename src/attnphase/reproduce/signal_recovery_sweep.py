"""The signal-recovery report's sweep (`reproduce.signal_recovery`): the figure of SGA against the ODE's prediction
and the large-L noise mass at every point, the per-point table with the reason of each limited point, and the count
of recovered points per theta scaling and sign model.
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.models.signal_recovery.escape import AGREEMENT_SIGMAS
from attnphase.report import Report

__all__ = ["SWEEP_COLUMNS", "SWEEP_MARKERS", "SWEEP_COLOURS", "sweep_figure", "sweep_section", "recovery_summary"]


SWEEP_COLUMNS = {  # sweep row key -> table heading
    "theta_scaling": "scaling", "sign_model": "model", "d": "d", "L": "L", "nuisance_ratio": "ratio", "theta": "θ",
    "theta_d": "θ_d", "steps": "steps", "t_final": "t", "budget_limited": "capped", "alignment_mean": "SGA abs ρ",
    "alignment_error": "± s.e.", "predicted_alignment": "ODE corrected abs ρ", "prediction_z": "z (SGA − ODE)",
    "ode_alignment_mean": "ODE plain abs ρ",
    "ode_limit_alignment_mean": "ODE ∞ abs ρ", "positive_fraction": "SGA +ξ", "ode_limit_positive_fraction": "ODE ∞ +ξ",
    "nuisance_mass_mean": "SGA mass", "ode_nuisance_mass_mean": "ODE mass", "ode_limit_nuisance_mass_mean": "ODE ∞ mass",
    "minus_xi_stable": "−ξ stable", "status": "status",
}


#: Markers of the sweep figure: shape by θ_d scaling, colour by sign model.
SWEEP_MARKERS = {"sqrt-d": "o", "direct": "s"}
SWEEP_COLOURS = {"A": "tab:blue", "B": "tab:orange", "C": "tab:green"}


def sweep_figure(sweep: list[dict]):
    """SGA against the theory at every sweep point. Left: final |ρ| against the retraction-corrected ODE, bars
    ±AGREEMENT_SIGMAS × √(s.e.² + error²), the combined error of the point's z, so that a point agrees (|z| ≤ 3) where
    its bar reaches the diagonal; a point whose prediction has no error (no verdict) is drawn open, with
    ±AGREEMENT_SIGMAS s.e. of the SGA mean alone. Right: the noise-token mass against the large-L ODE's, bars
    ±AGREEMENT_SIGMAS s.e. of the SGA mean. Shape: θ_d scaling; colour: sign model. Bars are cut at 0 and 1."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))

    def bars(mean, half):
        return [mean - np.maximum(mean - half, 0.0), np.minimum(mean + half, 1.0) - mean]

    groups = sorted({(r["theta_scaling"], r["sign_model"]) for r in sweep},
                    key=lambda g: (list(SWEEP_MARKERS).index(g[0]), g[1]))
    for scaling, model in groups:
        sel = [r for r in sweep if (r["theta_scaling"], r["sign_model"]) == (scaling, model)]
        marker, colour = SWEEP_MARKERS[scaling], SWEEP_COLOURS[model]
        label = f"θ_d {scaling}, model {model}"
        for judged in (True, False):
            part = [r for r in sel if _without_verdict(r) != judged]
            if not part:
                continue
            mean = np.array([r["alignment_mean"] for r in part])
            error = np.array([r["alignment_error"] for r in part])
            if judged:
                error = np.hypot(error, [r["predicted_alignment_error"] for r in part])
            axes[0].errorbar([r["predicted_alignment"] for r in part], mean, yerr=bars(mean, AGREEMENT_SIGMAS * error),
                             fmt=marker, ms=5, color=colour, mfc=colour if judged else "none", capsize=2,
                             label=label if judged else f"{label}, no verdict")
        mass = np.array([r["nuisance_mass_mean"] for r in sel])
        mass_error = np.array([r.get("nuisance_mass_error", math.nan) for r in sel])
        axes[1].errorbar([r["ode_nuisance_mass_mean"] for r in sel], mass,
                         yerr=bars(mass, AGREEMENT_SIGMAS * mass_error), fmt=marker, ms=5, color=colour, capsize=2,
                         label=label)
    limit = f"{AGREEMENT_SIGMAS:g}"
    axes[0].set_xlabel("retraction-corrected ODE from the trials' starts: final |ρ|")
    axes[0].set_ylabel(f"SGA: final |ρ| (±{limit}·√(s.e.² + ODE error²))")
    axes[1].set_xlabel("large-L ODE at the same t: noise-token attention mass")
    axes[1].set_ylabel(f"SGA: noise-token attention mass (±{limit} s.e.)")
    for ax in axes:
        ax.plot([0, 1], [0, 1], "k--", lw=0.8)
        ax.legend(fontsize=7)
    return fig


def sweep_section(report: Report, sweep: list[dict]) -> None:
    fig = sweep_figure(sweep)
    report.heading("Sweep")
    report.paragraph(
        "Schedule per point from `choose_schedule`: last step from the noise floor 1 − ρ ≈ 0.01; step count and "
        "first step from the retraction-corrected ODE dρ/dt = (1 − ρ²)J′ − ½ηρN (N the tangent noise, defined in the "
        "headline) aiming at |ρ| = 0.98, within the "
        "step budget (`capped` = 1 when the budget cannot reach it). 8 trials per point. ODE corrected: the "
        "retraction-corrected ODE from each trial's own ρ₀; ODE plain: the large-L ODE from the same starts to the "
        "same t; ODE ∞: its limit t → ∞ (stable fixed point).")
    unpredicted = sum(1 for r in sweep if not np.isfinite(r["predicted_alignment"]))
    limit = f"{AGREEMENT_SIGMAS:g}"
    report.figure(fig, "sweep", "Each sweep point: SGA against the theory at the same t (dashed: equality); marker "
                  "shape: θ_d scaling, colour: sign model. Left: bars ±" + limit + "·√(s.e.² + error²), the combined "
                  "error of the point's z, so a point's prediction agrees (|z| ≤ " + limit + ") where its bar reaches "
                  "the dashed line; open markers: the prediction has no error (no verdict), bars ±" + limit + " s.e. "
                  "of the SGA mean alone. Right: bars ±" + limit + " s.e. of the SGA mean (the ODE's mass has no "
                  "error). Bars are cut at 0 and 1."
                  + (f" {unpredicted} of {len(sweep)} points have no retraction-corrected prediction (n/a in the "
                     "table below, the reason in its note) and are missing from the left panel." if unpredicted
                     else ""), sweep)
    report.paragraph("Where recovery holds, per scaling and sign model (numbers of points; \"some trial ended at "
                     "ρ < 0\" counts the points where a trial ended on the negative side of ρ = 0, near −ξ or not: a "
                     "point records the share of trials at ρ > 0, not how far the others got; \"prediction "
                     "disagrees\" counts the points whose z, in the table after it, exceeds 3 in size, \"no verdict\" "
                     "those without a z):")
    report.table(recovery_summary(sweep), "recovery.csv")
    # a point kept by an earlier version has no z (NaN, as a point without a prediction)
    constant = {k: sweep[0].get(k, math.nan) for k in SWEEP_COLUMNS
                if k != "status" and len({r.get(k, math.nan) for r in sweep}) == 1}
    same = (" (" + ", ".join(f"{SWEEP_COLUMNS[k]} = {v}" for k, v in constant.items()) + " at every point)"
            if constant else "")
    report.paragraph(f"Every point{same}, with z, the SGA mean minus the corrected ODE in standard errors of both "
                       "(the prediction agrees where |z| ≤ 3), its status (`simulate`'s: limited where the planned "
                       "schedule falls short of its target or no prediction was made) and, where not converged or "
                       "without a verdict on its prediction (z n/a), a note giving the point's own message (how it "
                       "ran, its prediction or why there is none, or why it has no verdict, and its plan):")
    notes = []
    table = []
    for r in sweep:
        row = {heading: r.get(k, math.nan) for k, heading in SWEEP_COLUMNS.items() if k not in constant}
        noted = r["status"] != "converged" or _without_verdict(r)
        if noted:
            notes.append(r.get("message") or "(no message recorded)")
        row["note"] = str(len(notes)) if noted else ""
        table.append(row)
    report.table(table)
    if notes:
        report.paragraph("Notes:\n" + "\n".join(f"{i}. {note}" for i, note in enumerate(notes, 1)))


def _without_verdict(point: dict) -> bool:
    """Whether a sweep point has no verdict on its prediction (no z: none made, no error on it, or kept by an earlier
    version)."""
    z = point.get("prediction_z")
    return z is None or not math.isfinite(z)


def recovery_summary(sweep: list[dict]) -> list[dict]:
    """Where recovery holds, per θ_d scaling and sign model, read off the sweep rows."""
    groups: dict[tuple, list[dict]] = {}
    for r in sweep:
        groups.setdefault((r["theta_scaling"], r["sign_model"]), []).append(r)
    table = []
    for (scaling, model), rows in groups.items():
        recovered = [r for r in rows if r["alignment_mean"] >= 0.95]
        mass = [r["nuisance_mass_mean"] for r in rows]
        limit_mass = [r["ode_limit_nuisance_mass_mean"] for r in rows]
        table.append({
            "scaling": scaling, "model": model, "points": len(rows), "SGA mean abs ρ ≥ 0.95": len(recovered),
            "of those not capped": sum(1 for r in recovered if not r["budget_limited"]),
            "capped": sum(1 for r in rows if r["budget_limited"]),
            "ODE ∞ abs ρ → 1": sum(1 for r in rows if r["ode_limit_alignment_mean"] > 0.999),
            # positive_fraction counts the trials that end at ρ > 0: this is where some did not, wherever they ended
            # (at θ = 0.25, direct, L = 100, three of eight had |ρ| = 0.13 on the negative side, nowhere near −ξ)
            "some trial ended at ρ < 0": sum(1 for r in rows if r["positive_fraction"] < 1),
            # simulate's verdict: the corrected ODE more than 3 standard errors (both combined) from the run
            "prediction disagrees (z beyond ±3)": sum(1 for r in rows if r.get("prediction_agrees") == 0.0),
            # a point without a z is not an agreement: counted apart
            "no verdict (z n/a)": sum(1 for r in rows if _without_verdict(r)),
            "noise mass SGA (min–max)": f"{min(mass):.3g}–{max(mass):.3g}",
            "ODE ∞ mass (min–max)": f"{min(limit_mass):.3g}–{max(limit_mass):.3g}"})
    return table
