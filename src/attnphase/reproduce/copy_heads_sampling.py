"""The copy-heads report's finite-size sampling of the softmax jump (`reproduce.copy_heads`): hysteresis and bimodality.

* `hysteresis`: the softmax jump in sampling. Theory windows of the homogeneous action and of the row mean field
  (mean_field_windows.csv), uniform- and copy-start MALA chains across them and histograms of c (hysteresis.png,
  hysteresis_*.csv);
* `bimodality` (full run only): equilibrium bimodality at the L = 64 row mean field's coexistence point, where the
  barrier is ~5 units, low enough for MALA chains to cross it a few times in 16000 steps (bimodality.png: traces
  and the pooled histogram of c with the mean-field minima; bimodality.csv).
Each returns its report lines, its headline numbers and its figure (figure, caption, data) for `report.Report`;
the simulations are kept in out_dir/simulations (`resume.computed_once`), so an interrupted run resumes.
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.api import copy_heads as api
from attnphase.report import write_csv
from attnphase.numeric.digits import error_rounded_up
from attnphase.reproduce.read_back import computed_once

__all__ = ["hysteresis", "bimodality", "mean_field_barriers", "barrier_with_error"]



def _up(error) -> str:
    """A chain statistic's error to the table's 4 decimals, rounded up (`numeric.digits.error_rounded_up`); "n/a"
    where there is none."""
    return error_rounded_up(error, 4) if error is not None and math.isfinite(error) else "n/a"

def _homogeneous_minima(L, V, P, conv=api.DEFAULT):
    """Copy strengths c of the homogeneous action's minima and the barrier between them (if two)."""
    from attnphase.models.copy_heads.homogeneous import softmax_stationary_points

    inst = api.CopyHeadsInstance.validated(attention="softmax", L=L, V=V, convention=conv)
    n_ = inst.n_of_P(P)
    mins, maxs = softmax_stationary_points(inst, n_)
    action = inst.reduced.action
    cs = [(L / (1 + math.exp(-x)) - 1) / (L - 1) for x in mins]
    barrier = None
    if len(mins) >= 2 and maxs:
        top = float(action(maxs[0], n_))
        barrier = (top - float(action(mins[0], n_)), top - float(action(mins[-1], n_)))
    return cs, barrier


def mean_field_barriers(mf) -> str:
    """The row mean field's barriers at one P as "u/c" (from the uniform / the copy side, units of the Bayesian
    temperature), one per pair of neighbouring minima; with a single minimum there is no barrier, and the cell says
    so instead of staying empty."""
    if not mf.barriers:
        return "none (one minimum)" if len(mf.minima) == 1 else f"none ({len(mf.minima)} minima, no saddle found)"
    return " ".join(f"{b.from_uniform_side:.2f}/{b.from_copy_side:.2f}" for b in mf.barriers)


def barrier_with_error(barrier, error) -> str:
    """The mean-field barrier's table cell, "b ± e" to 2 decimals with the error rounded up (0.05499 is "0.06", as
    the page prints it: an error bar is never shown smaller than it is); "" without a barrier, "(no error)" without
    a finite error."""
    if barrier is None:
        return ""
    if error is None or not math.isfinite(error):
        return f"{barrier:.2f} (no error)"
    return f"{barrier:.2f} ± {error_rounded_up(error, 2)}"


def _mean_field_windows(window_Ls, V, factors) -> list[dict]:
    """mean_field_windows.csv: per L, the homogeneous action's threshold, spinodals and barrier, and the row mean
    field's order, window, coexistence point and barrier there."""
    windows = []
    for L in window_Ls:
        w = api.softmax_mean_field_window(L, V, factors=factors)
        _, hom_barrier = _homogeneous_minima(L, V, w.homogeneous_P_star)
        b = w.barrier
        windows.append({"L": L, "V": V, "P_star_homogeneous": w.homogeneous_P_star,
                        "spinodal_low_homogeneous": w.homogeneous_spinodals[0],
                        "spinodal_high_homogeneous": w.homogeneous_spinodals[1],
                        "barrier_homogeneous_at_P_star": hom_barrier[0] if hom_barrier else None,
                        "mean_field_order": w.order, "mean_field_window_low": w.window[0] if w.window else None,
                        "mean_field_window_high": w.window[1] if w.window else None,
                        "mean_field_window_resolution": w.window_resolution,
                        "P_coexistence_mean_field": w.P_coexistence,
                        "barrier_mean_field_at_coexistence": b.from_uniform_side if b else None,
                        "barrier_mean_field_error": b.error if b else None})
    return windows


def _hysteresis_theory(L, V, P_values, P_star, fine_factors) -> dict:
    """The theory beside the hysteresis chains at one L. "points": per simulated P, the minima and barriers of the row
    mean field, the joint-row minima with one finite data set's correction (`softmax_finite_data_correction`) and the
    homogeneous action's minima; "curves": every minimum of the row mean field and of the homogeneous action on
    the finer grid P = f P* (hysteresis_theory.csv)."""
    points = []
    for P in P_values:
        mf = api.softmax_row_mean_field(L, V, P)
        corrected = api.softmax_finite_data_correction(L, V, P)
        points.append({"mean_field_minima_c": " ".join(f"{m.c:.4f}" for m in mf.minima),
                       "mean_field_copy_c": max(m.c for m in mf.minima),
                       "mean_field_barriers": mean_field_barriers(mf),
                       "joint_minima_c": [w.c_mean_field for w in corrected.wells],
                       "corrected_c": [w.c_corrected for w in corrected.wells],
                       "homogeneous_minima_c": " ".join(f"{c:.4f}" for c in _homogeneous_minima(L, V, P)[0])})
    curves = []
    for f in fine_factors:
        P = f * P_star
        curves += [{"L": L, "P": P, "P_over_P_star_homogeneous": f, "theory": "row mean field", "c": m.c}
                   for m in api.softmax_row_mean_field(L, V, P).minima]
        curves += [{"L": L, "P": P, "P_over_P_star_homogeneous": f, "theory": "homogeneous rows", "c": c}
                   for c in _homogeneous_minima(L, V, P)[0]]
    return {"points": points, "curves": curves}


def hysteresis(out_dir, quick, device, plt):
    """Softmax jump in sampling: theory windows (homogeneous action and row mean field), uniform- and
    copy-start MALA chains across them, histograms of c. Returns report lines and headline numbers."""
    V = 4
    # the window scans cost ~1 s per P at L = 128 (a Sobol table over L − 1 scores, then 1-D integrals);
    # the quick report keeps L = 64 (≈ 15 s), the smallest L whose window has a barrier above T (5.2)
    window_Ls = (32, 64) if quick else (32, 64, 128, 256)
    factors = np.geomspace(0.6, 2.5, 17 if quick else 49)
    theory_dir = out_dir / "theory"
    windows = computed_once(theory_dir / f"mean_field_windows_V{V}_L{'-'.join(map(str, window_Ls))}_"
                                         f"{len(factors)}factors.result",
                            lambda: _mean_field_windows(window_Ls, V, factors))
    write_csv(out_dir / "mean_field_windows.csv", windows)

    runs = [(32, [0.7, 0.85, 1.0, 1.25, 1.5, 2.0], 1 if quick else 2, 2000 if quick else 4000)]
    if not quick:
        runs.append((128, [0.8, 1.0, 1.1, 1.25, 1.4, 1.7, 2.0], 2, 4000))
    sim_rows, theory_rows, hist_rows, summary = [], [], [], []
    fig, axes = plt.subplots(1, len(runs) + 1, figsize=(5.5 * (len(runs) + 1), 4.5))
    for ax, (L, facs, data_sets, steps) in zip(axes, runs):
        P_hom = computed_once(theory_dir / f"softmax_threshold_L{L}_V{V}_10digits.result",
                              lambda: api.threshold("softmax", L, V, digits=10))
        # read-out started at its conditional mean given the start's scores: a small read-out makes a copy start dip
        # to low c and climb back over ~2000 steps at L = 128 (docs), which biases short runs low
        res = computed_once(
            out_dir / "simulations" / f"hysteresis_L{L}_V{V}_{len(facs)}P_{data_sets}sets_{steps}steps_conditional.result",
            lambda: api.simulate_hysteresis(L, V, [f * P_hom.P_star for f in facs], data_sets=data_sets, steps=steps,
                                            seed=21, device=device, read_out_start="conditional"))
        fine_factors = np.geomspace(min(facs), max(facs), 40 if quick else 80)
        theory = computed_once(
            theory_dir / f"hysteresis_theory_L{L}_V{V}_{len(facs)}P_{len(fine_factors)}fine.result",
            lambda: _hysteresis_theory(L, V, [pt.P for pt in res.points], P_hom.P_star, fine_factors))
        for pt, at_P in zip(res.points, theory["points"]):
            copy_corrected = max(at_P["corrected_c"])
            summary.append({"L": L, "P": pt.P, "P_over_P_star_homogeneous": pt.P / P_hom.P_star,
                            "c_uniform_start": pt.uniform_start.c, "c_uniform_start_err": pt.uniform_start.c_err,
                            "c_copy_start": pt.copy_start.c, "c_copy_start_err": pt.copy_start.c_err,
                            "delta_c": pt.delta_c, "delta_c_err": pt.delta_c_err,
                            "mean_field_minima_c": at_P["mean_field_minima_c"],
                            "mean_field_barriers": at_P["mean_field_barriers"],
                            "joint_mean_field_minima_c": " ".join(f"{c:.4f}" for c in at_P["joint_minima_c"]),
                            "finite_data_corrected_c": " ".join(f"{c:.4f}" for c in at_P["corrected_c"]),
                            "homogeneous_minima_c": at_P["homogeneous_minima_c"],
                            # the copy minimum (the largest c) moved by the joint rows and finite data, and held
                            # against the copy-start chains
                            "copy_minimum_shift": copy_corrected - at_P["mean_field_copy_c"],
                            "copy_minimum_minus_copy_start": copy_corrected - pt.copy_start.c,
                            "copy_minimum_minus_copy_start_z": (copy_corrected - pt.copy_start.c) / pt.copy_start.c_err,
                            "data_sets": data_sets})
            for ch in pt.chains:
                sim_rows.append({"L": L, "P": pt.P, "P_over_P_star_homogeneous": pt.P / P_hom.P_star, "data_set": ch.data_set,
                                 "start": ch.start, "c": ch.c, "c_sem": ch.c_sem, "acceptance": ch.acceptance})
            for start, fill in (("uniform", "none"), ("copy", None)):
                kw = {"mfc": fill} if fill else {}
                mean = getattr(pt, f"{start}_start")
                ax.errorbar([pt.P / P_hom.P_star], [mean.c], yerr=[mean.c_err], fmt="o",
                            color="tab:blue" if start == "uniform" else "tab:red", ms=6, **kw)
            ax.plot([pt.P / P_hom.P_star] * len(at_P["corrected_c"]), at_P["corrected_c"], "D", color="tab:green", ms=4)
        theory_rows += theory["curves"]
        for kind, color, marker in (("row mean field", "k", "."), ("homogeneous rows", "tab:gray", "x")):
            pts = [r for r in theory_rows if r["L"] == L and r["theory"] == kind]
            ax.plot([r["P_over_P_star_homogeneous"] for r in pts], [r["c"] for r in pts], marker, color=color, ms=3,
                    label=f"theory minima: {kind}")
        w = next((wr for wr in windows if wr["L"] == L), None)
        if w and w["mean_field_window_low"]:
            ax.axvspan(w["mean_field_window_low"] / P_hom.P_star, w["mean_field_window_high"] / P_hom.P_star, color="k",
                       alpha=0.08, label="row mean field: two minima")
        for sp in P_hom.spinodals:
            ax.axvline(sp / P_hom.P_star, color="tab:gray", ls="--", lw=0.8)
        ax.plot([], [], "D", color="tab:green", ms=4, label="theory: joint rows + finite-data correction")
        ax.plot([], [], "o", mfc="none", color="tab:blue", label="MALA, uniform start")
        ax.plot([], [], "o", color="tab:red", label="MALA, copy start")
        ax.set_xscale("log")
        ax.set_xlabel("P / P*(homogeneous)   (dashed: homogeneous spinodals)")
        ax.set_ylabel("copy strength c")
        ax.set_title(f"softmax, L={L}, V={V}, {steps} MALA steps, {data_sets} data set(s) per P")
        ax.legend(fontsize=6)
        # histogram at the P inside the mean-field window (or at P*_hom when there is none)
        target = 1.25 if L >= 128 else 1.0
        pt = min(res.points, key=lambda q: abs(q.P / P_hom.P_star - target))
        for ch in pt.chains:
            for v in ch.c_trace:
                hist_rows.append({"L": L, "P": pt.P, "start": ch.start, "data_set": ch.data_set, "c": float(v)})
    ax = axes[-1]
    for L in sorted({r["L"] for r in hist_rows}):
        for start, color in (("uniform", "tab:blue"), ("copy", "tab:red")):
            vals = [r["c"] for r in hist_rows if r["L"] == L and r["start"] == start]
            P_ = next(r["P"] for r in hist_rows if r["L"] == L)
            ax.hist(vals, bins=40, histtype="step", color=color, ls="-" if L == 32 else "--",
                    label=f"L={L}, P={P_:g}, {start} start")
    ax.set_xlabel("copy strength c of each sample (every 10 steps after burn-in)")
    ax.set_ylabel("samples")
    ax.legend(fontsize=6)
    fig.tight_layout()
    write_csv(out_dir / "hysteresis_simulation.csv", sim_rows)
    write_csv(out_dir / "hysteresis_summary.csv", summary)
    write_csv(out_dir / "hysteresis_theory.csv", theory_rows)
    write_csv(out_dir / "hysteresis_histogram.csv", hist_rows)

    lines = ["", "## The softmax jump in sampling (hysteresis.png, hysteresis_*.csv, mean_field_windows.csv)", "",
             "Two theories of the same posterior. The homogeneous reduced action puts every target row at the same "
             "previous-position logit (a saddle point per row). The row mean field keeps each row's fluctuations: the "
             "rows are independent under the prior and the data term sees them only through the averages m and q, so "
             "F(m, q) = T Λ*(m, q) + S_data(m, q) with Λ* the Cramér (Legendre) function of one row's (a, q) under the "
             "exact row-logit density. Windows where F has two minima, and the barrier (units of the Bayesian "
             "temperature) where the two minima are equally deep:", "",
             "| L | P* hom. | hom. spinodals | hom. barrier at P* | mean-field order | mean-field window | P_coex (MF) | MF barrier |",
             "|---|---|---|---|---|---|---|---|"]
    for w in windows:
        win = (f"[{w['mean_field_window_low']:.0f}, {w['mean_field_window_high']:.0f}] (relative resolution {w['mean_field_window_resolution']:.0e})"
               if w["mean_field_window_low"] else "none")
        bar = barrier_with_error(w["barrier_mean_field_at_coexistence"], w["barrier_mean_field_error"])
        co = f"{w['P_coexistence_mean_field']:.1f}" if w["P_coexistence_mean_field"] else ""
        hb = f"{w['barrier_homogeneous_at_P_star']:.2f}" if w["barrier_homogeneous_at_P_star"] is not None else ""
        lines.append(f"| {w['L']} | {w['P_star_homogeneous']:.1f} | [{w['spinodal_low_homogeneous']:.0f}, "
                     f"{w['spinodal_high_homogeneous']:.0f}] | {hb} | {w['mean_field_order']} | {win} | {co} | {bar} |")
    sets = sorted({r["data_sets"] for r in summary})
    lines += ["", "MALA chains, one uniform start (scores 0) and one copy start (scores 2 ln L on the previous position) "
              f"per data set, {' or '.join(map(str, sets))} data set(s) per P; c = time mean after burn-in; error = "
              "standard error over data sets (with one: the chain's batch means, without the spread over training "
              "sets); Δc = paired difference copy − uniform start on the same data set:", "",
              "| L | P | P/P*hom | c (uniform start) | c (copy start) | Δc | mean-field minima c | mean-field barriers "
              "(from uniform / from copy side, units of T) | joint rows | joint + finite data | homogeneous minima c |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary:
        lines.append(f"| {r['L']} | {r['P']:g} | {r['P_over_P_star_homogeneous']:.2f} | {r['c_uniform_start']:.4f} ± "
                     f"{_up(r['c_uniform_start_err'])} | {r['c_copy_start']:.4f} ± {_up(r['c_copy_start_err'])} | "
                     f"{r['delta_c']:.4f} ± {_up(r['delta_c_err'])} | {r['mean_field_minima_c']} | "
                     f"{r['mean_field_barriers']} | "
                     f"{r['joint_mean_field_minima_c']} | {r['finite_data_corrected_c']} | {r['homogeneous_minima_c']} |")
    lines += ["", copy_branch_sentence(summary)]
    caption = ("The softmax jump in sampling: copy strength of uniform- and copy-start MALA chains across the row "
               "mean field's window, with the theories' minima (left panels) and histograms of c (right).")
    return lines, {"windows": windows, "hysteresis": summary}, (fig, caption, sim_rows)


def copy_branch_sentence(summary) -> str:
    """What the joint rows and one finite data set's correction do to the copy minimum at the simulated P, as this run
    measured it (hysteresis_summary.csv): its shift from the row mean field's copy minimum and its distance from the
    copy-start chains, in their errors (which, with one data set per P, are one chain's batch means)."""
    shifts = [r["copy_minimum_shift"] for r in summary]
    z = [r["copy_minimum_minus_copy_start_z"] for r in summary]
    within = sum(abs(v) <= 3 for v in z)
    one_set = all(r["data_sets"] == 1 for r in summary)
    errors = ("one chain's batch-means error each: with one data set per P, the spread over training sets is not in "
              "them" if one_set else "the standard error over data sets")
    return ("The row mean field above uses each row's logit density with its other weights' participation at the prior "
            "average (`row_density=\"exact\"`); with the two jointly (`row_density=\"joint\"`) and one finite data "
            "set's second-order correction (`softmax_finite_data_correction`, the table's \"joint + finite data\") the "
            f"copy minimum (the largest c) moves by {min(shifts):+.4f} to {max(shifts):+.4f} across these "
            f"{len(summary)} P ({sum(s < 0 for s in shifts)} of them down) and lies within 3 errors of the copy-start "
            f"chains at {within} of {len(summary)} (z from {min(z):+.1f} to {max(z):+.1f}; {errors}). Chains start the "
            "read-out at its conditional mean given the start's scores.")


def bimodality(out_dir, device, plt, windows):
    """Equilibrium bimodality at L = 64 (full run only): at the row mean field's coexistence point the
    barrier is ~5 units, low enough for MALA chains to cross it a few times in 16000 steps. Writes
    bimodality.png (traces and the pooled histogram of c with the mean-field minima) and bimodality.csv."""
    L, V = 64, 4
    w = next(wr for wr in windows if wr["L"] == L)
    if not w["P_coexistence_mean_field"]:
        return ["", f"No mean-field coexistence found at L = {L}: no bimodality run."], {}, None
    res = computed_once(out_dir / "simulations" / f"bimodality_L{L}_V{V}_P{w['P_coexistence_mean_field']:.6g}.result",
                        lambda: api.simulate_hysteresis(L, V, [w["P_coexistence_mean_field"]], data_sets=1, steps=16000,
                                                        burn_in=1000, seed=9, device=device))
    pt = res.points[0]
    mf = api.softmax_row_mean_field(L, V, pt.P)
    rows = [{"start": ch.start, "sample": i, "step": 1000 + 10 * i, "c": float(v)}
            for ch in pt.chains for i, v in enumerate(ch.c_trace)]
    pooled = np.concatenate([ch.c_trace for ch in pt.chains])
    lo, hi = mf.minima[0].c, mf.minima[-1].c
    third = (hi - lo) / 3
    occupancy = {"uniform_third": float(np.mean(pooled < lo + third)), "middle_third": float(np.mean((pooled >= lo + third) & (pooled <= hi - third))),
                 "copy_third": float(np.mean(pooled > hi - third))}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ch, color in zip(pt.chains, ("tab:blue", "tab:red")):
        axes[0].plot(1000 + 10 * np.arange(len(ch.c_trace)), ch.c_trace, color=color, lw=0.6, label=f"{ch.start} start")
    axes[1].hist(pooled, bins=40, color="tab:gray")
    for m in mf.minima:
        for ax in axes:
            (ax.axhline if ax is axes[0] else ax.axvline)(m.c, color="k", ls="--", lw=0.8)
    axes[0].set_xlabel("MALA step")
    axes[0].set_ylabel("copy strength c")
    axes[0].legend(fontsize=7)
    axes[0].set_title(f"softmax L={L}, V={V}, P={pt.P:g} (mean-field coexistence); dashed: mean-field minima")
    axes[1].set_xlabel("c (both chains pooled)")
    fig.tight_layout()
    b = mf.barriers[0] if mf.barriers else None
    lines = ["", f"Bimodality (bimodality.png/csv): L = {L}, P = {pt.P:g} ≈ the mean-field coexistence point "
             f"{w['P_coexistence_mean_field']:.1f}, mean-field minima c = {lo:.4f} and {hi:.4f}"
             + (f", barriers {b.from_uniform_side:.2f} / {b.from_copy_side:.2f}" if b else "")
             + f"; two MALA chains × 16000 steps. Fraction of the pooled samples in the lower / middle / upper third "
             f"between the minima: {occupancy['uniform_third']:.3f} / {occupancy['middle_third']:.3f} / {occupancy['copy_third']:.3f}."]
    figure = (fig, f"Bimodality at the L = {L} mean-field coexistence point: traces and the pooled histogram of c.", rows)
    return lines, {"L": L, "P": pt.P, "occupancy": occupancy, "mean_field_minima_c": [lo, hi]}, figure

