"""`attnphase reproduce copy-heads`: theory against the real network, the P* scaling, the convention table.

Writes into out_dir:
* order_parameters.png / .csv: copy strength c and uniform strength t against P (theory: every local
  minimum, the global one marked; MALA chains from uniform and copy starts; Adam runs kept by the
  filter), both activations;
* loss.png / .csv: test loss against P (theory Gibbs loss for MALA, mean-predictor loss of the joint
  MAP for Adam; measured test loss);
* scaling.png / scaling.csv: P* against L (softmax; with the law L ln²L and its large-L form) and the
  linear transition and crossover against L, with the fitted exponents; P* against V (linear);
* conventions.csv: per convention, fitted exponent, band and whether each claim holds;
* hysteresis.png / hysteresis_*.csv / mean_field_windows.csv: the softmax jump in sampling (theory windows of
  the homogeneous action and of the row mean field; uniform- and copy-start MALA chains across them);
  bimodality.png / .csv (full run): chains at the L = 64 mean-field coexistence point;
* report.md;
* simulations/*.result.pickle: every finished simulation (`report.computed_once`, Result objects), so an
  interrupted run resumes without repeating them; delete the directory to rerun them.
P convention: P counts target tokens, loss summed, β = 1 (n = P), unless a row says otherwise.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from attnphase.api import copy_heads as api
from attnphase.report import computed_once, write_csv


def _theory_curves(attention, L, V, P_grid, conv):
    rows = []
    for P in P_grid:
        sol = api.solve(attention, L, V, float(P), conv)
        for i, mn in enumerate(sol.minima):
            if not mn.stable:
                continue
            rows.append({"attention": attention, "read_out": conv.read_out, "remainder": conv.remainder, "P": float(P),
                         "global": i == sol.global_index, "c_uniform": mn.c_uniform, "c_copy": mn.c_copy,
                         "loss_gibbs": mn.loss_gibbs, "loss_mean_predictor": mn.loss_mean_predictor})
    return rows


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


def _hysteresis(out_dir, quick, device, plt):
    """Softmax jump in sampling: theory windows (homogeneous action and row mean field), uniform- and
    copy-start MALA chains across them, histograms of c. Returns report lines and headline numbers."""
    V = 4
    # the window scans cost ~1 s per P at L = 128 (a Sobol table over L − 1 scores, then 1-D integrals);
    # the quick report keeps L = 64 (≈ 15 s), the smallest L whose window has a barrier above T (5.2)
    window_Ls = (32, 64) if quick else (32, 64, 128, 256)
    factors = np.geomspace(0.6, 2.5, 17 if quick else 49)
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
    write_csv(out_dir / "mean_field_windows.csv", windows)

    runs = [(32, [0.7, 0.85, 1.0, 1.25, 1.5, 2.0], 1 if quick else 2, 2000 if quick else 4000)]
    if not quick:
        runs.append((128, [0.8, 1.0, 1.1, 1.25, 1.4, 1.7, 2.0], 2, 4000))
    sim_rows, theory_rows, hist_rows, summary = [], [], [], []
    fig, axes = plt.subplots(1, len(runs) + 1, figsize=(5.5 * (len(runs) + 1), 4.5))
    for ax, (L, facs, data_sets, steps) in zip(axes, runs):
        P_hom = api.threshold("softmax", L, V, digits=10)
        # read-out started at its conditional mean given the start's scores: a small read-out makes a copy start dip
        # to low c and climb back over ~2000 steps at L = 128 (docs), which biases short runs low
        res = computed_once(
            out_dir / "simulations" / f"hysteresis_L{L}_V{V}_{len(facs)}P_{data_sets}sets_{steps}steps_conditional.result.pickle",
            lambda: api.simulate_hysteresis(L, V, [f * P_hom.P_star for f in facs], data_sets=data_sets, steps=steps,
                                            seed=21, device=device, read_out_start="conditional"))
        for pt in res.points:
            mf = api.softmax_row_mean_field(L, V, pt.P)
            # the row mean field with each row's logit and participation jointly, and one finite data set's correction
            corrected = api.softmax_finite_data_correction(L, V, pt.P)
            hom_c, _ = _homogeneous_minima(L, V, pt.P)
            summary.append({"L": L, "P": pt.P, "P_over_P_star_homogeneous": pt.P / P_hom.P_star,
                            "c_uniform_start": pt.uniform_start.c, "c_uniform_start_err": pt.uniform_start.c_err,
                            "c_copy_start": pt.copy_start.c, "c_copy_start_err": pt.copy_start.c_err,
                            "delta_c": pt.delta_c, "delta_c_err": pt.delta_c_err,
                            "mean_field_minima_c": " ".join(f"{m.c:.4f}" for m in mf.minima),
                            "mean_field_barriers": " ".join(f"{b.from_uniform_side:.2f}/{b.from_copy_side:.2f}" for b in mf.barriers),
                            "joint_mean_field_minima_c": " ".join(f"{w.c_mean_field:.4f}" for w in corrected.wells),
                            "finite_data_corrected_c": " ".join(f"{w.c_corrected:.4f}" for w in corrected.wells),
                            "homogeneous_minima_c": " ".join(f"{c:.4f}" for c in hom_c)})
            for ch in pt.chains:
                sim_rows.append({"L": L, "P": pt.P, "P_over_P_star_homogeneous": pt.P / P_hom.P_star, "data_set": ch.data_set,
                                 "start": ch.start, "c": ch.c, "c_sem": ch.c_sem, "acceptance": ch.acceptance})
            for start, fill in (("uniform", "none"), ("copy", None)):
                kw = {"mfc": fill} if fill else {}
                mean = getattr(pt, f"{start}_start")
                ax.errorbar([pt.P / P_hom.P_star], [mean.c], yerr=[mean.c_err], fmt="o",
                            color="tab:blue" if start == "uniform" else "tab:red", ms=6, **kw)
            ax.plot([pt.P / P_hom.P_star] * len(corrected.wells), [w.c_corrected for w in corrected.wells], "D",
                    color="tab:green", ms=4)
        # theory curves on a finer grid: every minimum of the row mean field and of the homogeneous action
        for f in np.geomspace(min(facs), max(facs), 40 if quick else 80):
            P_ = f * P_hom.P_star
            mf = api.softmax_row_mean_field(L, V, P_)
            for m in mf.minima:
                theory_rows.append({"L": L, "P": P_, "P_over_P_star_homogeneous": f, "theory": "row mean field", "c": m.c})
            for c in _homogeneous_minima(L, V, P_)[0]:
                theory_rows.append({"L": L, "P": P_, "P_over_P_star_homogeneous": f, "theory": "homogeneous rows", "c": c})
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
    fig.savefig(out_dir / "hysteresis.png", dpi=120)
    plt.close(fig)
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
        bar = (f"{w['barrier_mean_field_at_coexistence']:.2f} ± {w['barrier_mean_field_error']:.2f}"
               if w["barrier_mean_field_at_coexistence"] is not None else "")
        co = f"{w['P_coexistence_mean_field']:.1f}" if w["P_coexistence_mean_field"] else ""
        hb = f"{w['barrier_homogeneous_at_P_star']:.2f}" if w["barrier_homogeneous_at_P_star"] is not None else ""
        lines.append(f"| {w['L']} | {w['P_star_homogeneous']:.1f} | [{w['spinodal_low_homogeneous']:.0f}, "
                     f"{w['spinodal_high_homogeneous']:.0f}] | {hb} | {w['mean_field_order']} | {win} | {co} | {bar} |")
    lines += ["", "MALA chains, one uniform start (scores 0) and one copy start (scores 2 ln L on the previous position) "
              "per data set; c = time mean after burn-in; error = standard error over data sets (batch means for one); "
              "Δc = paired difference copy − uniform start on the same data set:", "",
              "| L | P | P/P*hom | c (uniform start) | c (copy start) | Δc | mean-field minima c (barriers u/c) | joint rows | "
              "joint + finite data | homogeneous minima c |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary:
        lines.append(f"| {r['L']} | {r['P']:g} | {r['P_over_P_star_homogeneous']:.2f} | {r['c_uniform_start']:.4f} ± "
                     f"{r['c_uniform_start_err']:.4f} | {r['c_copy_start']:.4f} ± {r['c_copy_start_err']:.4f} | "
                     f"{r['delta_c']:.4f} ± {r['delta_c_err']:.4f} | {r['mean_field_minima_c']} ({r['mean_field_barriers']}) | "
                     f"{r['joint_mean_field_minima_c']} | {r['finite_data_corrected_c']} | {r['homogeneous_minima_c']} |")
    lines += ["", "The row mean field above uses each row's logit density with its other weights' participation at the "
              "prior average (`row_density=\"exact\"`); with the two jointly (`row_density=\"joint\"`) and one finite data "
              "set's second-order correction (`softmax_finite_data_correction`) the copy minimum moves down by 0.01-0.03, "
              "onto the sampled copy branch (docs: copy-heads, the softmax copy-branch offset). Chains start the read-out "
              "at its conditional mean given the start's scores."]
    return lines, {"windows": windows, "hysteresis": summary}


def _bimodality(out_dir, device, plt, windows):
    """Equilibrium bimodality at L = 64 (full run only): at the row mean field's coexistence point the
    barrier is ~5 units, low enough for MALA chains to cross it a few times in 16000 steps. Writes
    bimodality.png (traces and the pooled histogram of c with the mean-field minima) and bimodality.csv."""
    L, V = 64, 4
    w = next(wr for wr in windows if wr["L"] == L)
    if not w["P_coexistence_mean_field"]:
        return ["", f"No mean-field coexistence found at L = {L}: no bimodality run."], {}
    res = computed_once(out_dir / "simulations" / f"bimodality_L{L}_V{V}_P{w['P_coexistence_mean_field']:.6g}.result.pickle",
                        lambda: api.simulate_hysteresis(L, V, [w["P_coexistence_mean_field"]], data_sets=1, steps=16000,
                                                        burn_in=1000, seed=9, device=device))
    pt = res.points[0]
    mf = api.softmax_row_mean_field(L, V, pt.P)
    rows = [{"start": ch.start, "sample": i, "step": 1000 + 10 * i, "c": float(v)}
            for ch in pt.chains for i, v in enumerate(ch.c_trace)]
    write_csv(out_dir / "bimodality.csv", rows)
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
    fig.savefig(out_dir / "bimodality.png", dpi=120)
    plt.close(fig)
    b = mf.barriers[0] if mf.barriers else None
    lines = ["", f"Bimodality (bimodality.png/csv): L = {L}, P = {pt.P:g} ≈ the mean-field coexistence point "
             f"{w['P_coexistence_mean_field']:.1f}, mean-field minima c = {lo:.4f} and {hi:.4f}"
             + (f", barriers {b.from_uniform_side:.2f} / {b.from_copy_side:.2f}" if b else "")
             + f"; two MALA chains × 16000 steps. Fraction of the pooled samples in the lower / middle / upper third "
             f"between the minima: {occupancy['uniform_third']:.3f} / {occupancy['middle_third']:.3f} / {occupancy['copy_third']:.3f}."]
    return lines, {"P": pt.P, "occupancy": occupancy, "mean_field_minima_c": [lo, hi]}


def run(out_dir: Path, quick: bool, device: str = "auto") -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    L, V = 8, 4
    P_sim = [40, 80, 160, 320, 640, 1280] if quick else [24, 40, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048]
    steps = 1500 if quick else 4000
    P_grid = np.geomspace(16, 2048, 14 if quick else 40)

    # -- theory and simulation, both activations ---------------------------------------------------
    theory, sims, coverages = [], [], {}
    for attention in ("softmax", "linear"):
        conv_a = api.DEFAULT
        theory += _theory_curves(attention, L, V, P_grid, conv_a)
        if attention == "linear":
            theory += _theory_curves(attention, L, V, P_grid, conv_a.with_(remainder="entropy"))
        theory += _theory_curves(attention, L, V, P_grid, conv_a.with_(read_out="map"))
        for algorithm in ("mala", "adam"):
            per_P, algorithm_steps = (2, steps) if algorithm == "mala" else (4, steps // 2)
            sweep = computed_once(
                out_dir / "simulations" / f"{attention}_{algorithm}_L{L}_V{V}_{len(P_sim)}P_{algorithm_steps}steps.result.pickle",
                lambda: api.simulate_sweep(attention, L, V, P_sim, algorithm=algorithm, trials_per_P=per_P,
                                           steps=algorithm_steps, seed=7, device=device))
            if algorithm == "mala":
                from attnphase.models.copy_heads.network import coverage

                coverages[attention] = coverage(sweep.G_mean)
            sims += [dict(r, attention=attention, algorithm=algorithm) for r in sweep.rows()]
    # linear attention: what the sampled network realises is the remainder-entropy theory with one row sum per row,
    # averaged over the order parameters' own fluctuations (docs: "Which convention the real linear network realises")
    per_row = api.DEFAULT.with_(remainder="entropy", row_sums="per-row")
    walkers, walker_steps = (128, 3000) if quick else (256, 6000)
    posterior = [computed_once(
        out_dir / "simulations" / f"linear_posterior_means_L{L}_V{V}_P{P:g}_{walkers}x{walker_steps}.result.pickle",
        lambda P=P: api.linear_posterior_means(L, V, float(P), per_row, walkers=walkers, steps=walker_steps, seed=11))
        for P in P_sim]
    posterior_rows = [{"P": pm.P, **dataclasses.asdict(pm.means),
                       **{f"{k}_error": v for k, v in dataclasses.asdict(pm.errors).items()}, "status": str(pm.status)}
                      for pm in posterior]
    write_csv(out_dir / "order_parameters_theory.csv", theory)
    write_csv(out_dir / "order_parameters_linear_posterior_means.csv", posterior_rows)
    write_csv(out_dir / "order_parameters_simulation.csv", sims)

    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
    for col, attention in enumerate(("softmax", "linear")):
        ax_c, ax_l = axes[0, col], axes[1, col]
        if attention == "linear":
            # the sampled posterior keeps the remainder's entropy (measured remainder norm and loss; docs):
            # that convention is the theory the MALA points are compared with; Convention A is shown for reference
            styles = [("integrated", "entropy", "tab:purple", "remainder entropy, shared row sum: saddle point"),
                      ("integrated", "map", "k", "Convention A (MAP over G): not realised by sampling")]
        else:
            styles = [("integrated", "map", "k", "theory for MALA: W integrated (homogeneous rows)")]
        styles.append(("map", "map", "tab:gray", "theory for Adam: joint MAP"))
        for read_out, remainder, color, label in styles:
            rows = [r for r in theory if r["attention"] == attention and r["read_out"] == read_out and r["remainder"] == remainder]
            glob = [r for r in rows if r["global"]]
            line = ":" if (attention == "linear" and remainder == "map" and read_out == "integrated") else "-"
            ax_c.plot([r["P"] for r in glob], [r["c_copy"] for r in glob], line, color=color, label=label)
            ax_c.plot([r["P"] for r in rows], [r["c_copy"] for r in rows], ".", color=color, ms=3)
            if attention == "linear":
                ax_c.plot([r["P"] for r in glob], [r["c_uniform"] for r in glob], "--", color=color, lw=1)
            loss_key = "loss_mean_predictor" if read_out == "map" else "loss_gibbs"
            ax_l.plot([r["P"] for r in glob], [r[loss_key] for r in glob], line, color=color)
        if attention == "linear":
            ok = [r for r in posterior_rows if r["status"] == "converged"]
            ax_c.errorbar([r["P"] for r in ok], [r["c"] for r in ok], yerr=[r["c_error"] for r in ok], fmt="-",
                          color="tab:green", label="theory for MALA: posterior means, one row sum per row, remainder entropy")
            ax_c.plot([r["P"] for r in ok], [r["t"] for r in ok], "--", color="tab:green", lw=1)
            ax_l.errorbar([r["P"] for r in ok], [r["loss_gibbs"] for r in ok], yerr=[r["loss_gibbs_error"] for r in ok],
                          fmt="-", color="tab:green")
        for algorithm, marker, color in (("mala", "o", "tab:blue"), ("adam", "s", "tab:orange")):
            for start, fill in (("uniform", "none"), ("copy", None), ("prior", None)):
                rows = [r for r in sims if r["attention"] == attention and r["algorithm"] == algorithm and r["start"] == start
                        and r["kept"]]
                if not rows:
                    continue
                kw = {"mfc": fill} if fill else {}
                ax_c.errorbar([r["P"] for r in rows], [r["c_copy"] for r in rows], yerr=[r["c_copy_sem"] for r in rows],
                              fmt=marker, color=color, ms=5, label=f"{algorithm} ({start} start)", **kw)
                ax_l.plot([r["P"] for r in rows], [r["test_loss"] for r in rows], marker, color=color, ms=5, **kw)
        ax_c.set_xscale("log")
        ax_c.set_title(f"{attention} attention, L={L}, V={V}")
        ax_c.set_ylabel("copy strength c (linear: dashed = uniform t)")
        ax_l.set_ylabel("test loss per position")
        ax_l.set_xlabel("P (target tokens)")
        ax_c.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out_dir / "order_parameters_and_loss.png", dpi=120)
    plt.close(fig)

    # -- scaling ---------------------------------------------------------------------------------------
    Ls = [2**k for k in (range(4, 13, 2) if quick else range(4, 21))]
    soft = api.scaling("softmax", 4, Ls[0], Ls[-1], digits=30 if not quick else 15, L_values=Ls)
    lin = api.scaling("linear", 4, Ls[0], Ls[-1], digits=30 if not quick else 15, L_values=Ls)
    Vs = [4, 8, 16, 32, 64] if quick else [4, 8, 16, 32, 64, 128, 256]
    linV = api.scaling_in_V("linear", 4096, Vs, digits=15)
    scal_rows = ([{"attention": "softmax", "L": p.L, "V": 4, "P_star": p.P_star, "P_star_digits": p.P_star_digits,
                   "P_crossover": None, "order": p.order} for p in soft.points]
                 + [{"attention": "linear", "L": p.L, "V": 4, "P_star": p.P_star, "P_star_digits": p.P_star_digits,
                     "P_crossover": p.P_crossover, "order": p.order} for p in lin.points]
                 + [{"attention": "linear", "L": 4096, "V": p.V, "P_star": p.P_star, "P_star_digits": "",
                     "P_crossover": p.P_crossover, "order": p.order} for p in linV.points])
    write_csv(out_dir / "scaling.csv", scal_rows)

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    Ls_a = np.array(Ls, float)
    Ps = np.array([p.P_star for p in soft.points])
    ax = axes[0]
    ax.loglog(Ls_a, Ps, "o", label="softmax P* (coexistence)")
    f = soft.fit["P_star"]
    ax.loglog(Ls_a, f.exponent and Ps[-1] * (Ls_a / Ls_a[-1]) ** f.exponent * (np.log(Ls_a) / np.log(Ls_a[-1])) ** 2, "-",
              label=f"fit L^{f.exponent:.3f} ln^2 L [{f.exponent_low:.3f}, {f.exponent_high:.3f}]")
    R_inf = soft.extrapolation.R_inf_predicted
    ax.loglog(Ls_a, [R_inf * L_ * math.log(L_) ** 2 * api.softmax_large_L_correction(L_, 4) for L_ in Ls], "--",
              label="large-L form L ln²L/(4εσ²)·C(ln L)")
    ax.set_xlabel("L")
    ax.set_ylabel("P*")
    ax.legend(fontsize=7)
    ax = axes[1]
    ax.loglog(Ls_a, [p.P_star for p in lin.points], "o", label="linear transition")
    ax.loglog(Ls_a, [p.P_crossover for p in lin.points], "s", label="linear crossover")
    fc = lin.fit["P_crossover"]
    ax.loglog(Ls_a, lin.points[-1].P_crossover * (Ls_a / Ls_a[-1]) ** fc.exponent, "-",
              label=f"crossover fit L^{fc.exponent:.3f}")
    ax.set_xlabel("L (V = 4)")
    ax.legend(fontsize=7)
    ax = axes[2]
    Vs_a = np.array(Vs, float)
    ax.loglog(Vs_a, [p.P_star for p in linV.points], "o", label=f"transition, fit V^{linV.fit['P_star'].exponent:.3f}")
    ax.loglog(Vs_a, [p.P_crossover for p in linV.points], "s", label=f"crossover, fit V^{linV.fit['P_crossover'].exponent:.3f}")
    ax.set_xlabel("V (L = 4096)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "scaling.png", dpi=120)
    plt.close(fig)

    # -- convention table ------------------------------------------------------------------------------
    table = api.convention_table(L_values=(16, 64, 256, 1024) if quick else (16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
                                 V_values=(4, 16, 64) if quick else (4, 8, 16, 32, 64, 128), L_fixed=1024 if quick else 4096)
    conv_rows = []
    for row in table.conventions:
        for attention in ("softmax", "linear"):
            entry = getattr(row, attention)
            if entry is None:
                conv_rows.append({"convention": row.convention, "attention": attention, "law": row.note})
                continue
            for fit in entry.fits:
                conv_rows.append({"convention": row.convention, "attention": attention, "law": fit.law, "variable": fit.variable,
                                  "claimed": fit.claimed_exponent, "exponent": fit.exponent, "band_low": fit.exponent_low,
                                  "band_high": fit.exponent_high, "systematic": fit.systematic, "holds": fit.holds,
                                  "orders": "/".join(entry.orders)})
    write_csv(out_dir / "conventions.csv", conv_rows)

    hysteresis_lines, hysteresis_numbers = _hysteresis(out_dir, quick, device, plt)
    if not quick:
        bimodality_lines, bimodality_numbers = _bimodality(out_dir, device, plt, hysteresis_numbers["windows"])
        hysteresis_lines += bimodality_lines
        hysteresis_numbers["bimodality"] = bimodality_numbers

    # -- report ----------------------------------------------------------------------------------------
    lines = [
        "# Copy-head emergence: theory against the real network",
        "",
        f"P counts target tokens, loss summed, beta = 1 (n = P); L = {L}, V = {V} for the simulations; "
        f"{'quick' if quick else 'full'} run in {time.time() - t_start:.0f} s.",
        "",
        "## Thresholds (mpmath-polished)",
        "",
        "| attention | L | V | order | P* | P_crossover |",
        "|---|---|---|---|---|---|",
    ]
    for r in scal_rows:
        cross = "" if r["P_crossover"] is None else f"{r['P_crossover']:.6g}"
        lines.append(f"| {r['attention']} | {r['L']} | {r['V']} | {r['order']} | {r['P_star_digits'] or r['P_star']} | {cross} |")
    ex = soft.extrapolation
    lines += ["", "## Claimed laws", "",
              f"* softmax P* ~ L ln²L: log-log exponent of P*/ln²L over the upper half of L = {Ls[0]}..{Ls[-1]}: "
              f"{f.exponent:.4f} [{f.exponent_low:.4f}, {f.exponent_high:.4f}], holds by the band rule: {f.holds}. "
              f"The large-L analysis gives P* = L ln²L/(4εσ²)·(1 + (2 ln ln L + 4σ² + 2 − 2 ln 2)/ln L + O(ln²ln L/ln²L)); "
              f"P*/(L ln²L) at the largest L = {ex.ratio[-1]:.4f} vs the limit {ex.R_inf_predicted:.4f}; the corrected "
              f"ratio is {ex.corrected_ratio[-1]:.4f} (→ 1). So P*/(L ln²L) tends to a constant, with slowly decaying "
              "log corrections that bias any finite-range power-law fit below 1.",
              f"* linear transition vs L (claim: no L dependence): exponent {lin.fit['P_star'].exponent:.4f} "
              f"[{lin.fit['P_star'].exponent_low:.4f}, {lin.fit['P_star'].exponent_high:.4f}], holds: {lin.fit['P_star'].holds}",
              f"* linear transition vs V (claim 2): {linV.fit['P_star'].exponent:.4f} [{linV.fit['P_star'].exponent_low:.4f}, "
              f"{linV.fit['P_star'].exponent_high:.4f}], holds: {linV.fit['P_star'].holds}",
              f"* linear crossover vs L (claim 3/2): {lin.fit['P_crossover'].exponent:.4f} [{lin.fit['P_crossover'].exponent_low:.4f}, "
              f"{lin.fit['P_crossover'].exponent_high:.4f}], holds: {lin.fit['P_crossover'].holds}",
              f"* linear crossover vs V (claim 1/2): {linV.fit['P_crossover'].exponent:.4f} [{linV.fit['P_crossover'].exponent_low:.4f}, "
              f"{linV.fit['P_crossover'].exponent_high:.4f}], holds: {linV.fit['P_crossover'].holds}",
              "", "## Conventions", "",
              "Rule: a claim holds when the claimed exponent lies in the 95% band of the fit over the upper half "
              "of the sizes, widened by the drift of the local slope (`systematic`).", "",
              "| convention | attention | law | variable | claimed | exponent | band | holds |", "|---|---|---|---|---|---|---|---|"]
    for r in conv_rows:
        if "exponent" not in r:
            lines.append(f"| {r['convention']} | {r['attention']} | {r['law']} | | | | | |")
            continue
        lines.append(f"| {r['convention']} | {r['attention']} | {r['law']} | {r['variable']} | {r['claimed']} | "
                     f"{r['exponent']:.3f} | [{r['band_low']:.3f}, {r['band_high']:.3f}] ± {r['systematic']:.3f} | {r['holds']} |")
    lines += ["", "## Simulation against theory", "",
              "MALA = Metropolis-adjusted Langevin on (scores, W, bias) at beta = 1; Adam keeps runs within "
              "max(1, 1e-3|U_best|) of the best objective per P. Figures: order_parameters_and_loss.png, scaling.png.", "",
              "Linear attention: the sampled posterior is compared with the convention it realises, the remainder's "
              "entropy kept (`remainder=\"entropy\"`): sampling integrates over all L² scores, so the remainder of G keeps "
              "its prior volume (measured remainder norm per row ≈ the entropy convention's ρ, Convention A has ρ = 0). "
              "Convention A (saddle point over G) is drawn dotted for reference; its Gibbs loss is 4-5× below the sampled one. "
              "Under the entropy convention the linear transition still scales as V², but the crossover scales as L² with no "
              "V dependence (see the convention table). The green line is that theory with one row sum per row and averaged "
              "over the order parameters' own fluctuations (`linear_posterior_means`, random-walk Metropolis on the reduced "
              "action), which is what sampling measures; the purple line is its saddle point with one shared row sum.", "",
              "| P | theory c (posterior mean) | theory t | theory Gibbs loss | MALA c, each chain | MALA t | MALA test loss |",
              "|---|---|---|---|---|---|---|"]
    for row in posterior_rows:
        chains = [r for r in sims if r["attention"] == "linear" and r["algorithm"] == "mala" and r["P"] == row["P"] and r["kept"]]
        lines.append(f"| {row['P']:g} | {row['c']:.3f} ± {row['c_error']:.3f} | {row['t']:.3f} | {row['loss_gibbs']:.4f} | "
                     + ", ".join(f"{r['c_copy']:.3f} ± {r['c_copy_sem']:.3f}" for r in chains) + " | "
                     + ", ".join(f"{r['c_uniform']:.3f}" for r in chains) + " | "
                     + ", ".join(f"{r['test_loss']:.4f}" for r in chains) + " |")
    lines += ["", "(theory errors: Monte Carlo only; the finite-P error of the self-averaged action, |value|/√P, is not "
              "included; MALA errors: batch means of one chain)", "",
              "Coverage (chain-mean attention matrices across the P sweep; fraction of their variance about the pooled "
              "mean captured by span{U, S − U}; top-2 PCA for comparison; fraction of the second moment):", ""]
    for attention, cv in coverages.items():
        lines.append(f"* {attention}: variance {cv.variance_fraction:.3f}, PCA top-2 {cv.pca_top2_fraction:.3f}, "
                     f"second moment {cv.second_moment_fraction:.3f}")
    lines.append("")
    lines.append("| attention | algorithm | P | start | c (measured) | t (measured) | test loss |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in sims:
        if r["kept"]:
            lines.append(f"| {r['attention']} | {r['algorithm']} | {r['P']} | {r['start']} | {r['c_copy']:.3f} ± {r['c_copy_sem']:.3f} | "
                         f"{r['c_uniform']:.3f} | {r['test_loss']:.4f} |")
    lines += hysteresis_lines
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
    return {"softmax_P_star_exponent": f.exponent, "softmax_ratio_last": ex.ratio[-1], "softmax_corrected_ratio_last": ex.corrected_ratio[-1],
            "linear_transition_V_exponent": linV.fit["P_star"].exponent, "linear_crossover_L_exponent": lin.fit["P_crossover"].exponent,
            "linear_crossover_V_exponent": linV.fit["P_crossover"].exponent,
            "coverage": {a: c.variance_fraction for a, c in coverages.items()},
            "mean_field_windows": hysteresis_numbers["windows"], "hysteresis": hysteresis_numbers["hysteresis"],
            "bimodality": hysteresis_numbers.get("bimodality"),
            "seconds": time.time() - t_start}
