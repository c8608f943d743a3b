"""`attnphase reproduce copy-heads`: theory against the real network, the P* scaling, the convention table.

Writes into out_dir:
* order_parameters.png / .csv: copy strength c and uniform strength t against P (theory: every local
  minimum, the global one marked; SGLD chains from uniform and copy starts; Adam runs kept by the
  filter), both activations;
* loss.png / .csv: test loss against P (theory Gibbs loss for SGLD, mean-predictor loss of the joint
  MAP for Adam; measured test loss);
* scaling.png / scaling.csv: P* against L (softmax; with the law L ln²L and its large-L form) and the
  linear transition and crossover against L, with the fitted exponents; P* against V (linear);
* conventions.csv: per convention, fitted exponent, band and whether each claim holds;
* report.md.
P convention: P counts target tokens, loss summed, β = 1 (n = P), unless a row says otherwise.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from attnphase.api import copy_heads as api
from attnphase.models import copy_heads as model
from attnphase.report import write_csv




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
        conv_a = model.DEFAULT
        theory += _theory_curves(attention, L, V, P_grid, conv_a)
        if attention == "linear":
            theory += _theory_curves(attention, L, V, P_grid, conv_a.with_(remainder="entropy"))
        theory += _theory_curves(attention, L, V, P_grid, conv_a.with_(read_out="map"))
        for sampler in ("sgld", "adam"):
            rows = api.simulate_sweep(attention, L, V, P_sim, sampler=sampler, chains_per_P=2 if sampler == "sgld" else 4,
                                      steps=steps if sampler == "sgld" else steps // 2, seed=7, device=device)
            if sampler == "sgld":
                from attnphase.validate.sgld import coverage as _coverage

                coverages[attention] = _coverage(np.stack([r["G_mean"] for r in rows]))
            for r in rows:
                r.pop("G_mean")
                r.update({"attention": attention, "sampler": sampler})
            sims += rows
    write_csv(out_dir / "order_parameters_theory.csv", theory)
    write_csv(out_dir / "order_parameters_simulation.csv", sims)

    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
    for col, attention in enumerate(("softmax", "linear")):
        ax_c, ax_l = axes[0, col], axes[1, col]
        styles = [("integrated", "map", "k", "theory: W integrated, MAP over G (Conv. A)")]
        if attention == "linear":
            styles.append(("integrated", "entropy", "tab:purple", "theory: W integrated, remainder entropy"))
        styles.append(("map", "map", "tab:gray", "theory: joint MAP (Adam's objective)"))
        for read_out, remainder, color, label in styles:
            rows = [r for r in theory if r["attention"] == attention and r["read_out"] == read_out and r["remainder"] == remainder]
            glob = [r for r in rows if r["global"]]
            ax_c.plot([r["P"] for r in glob], [r["c_copy"] for r in glob], "-", color=color, label=label)
            ax_c.plot([r["P"] for r in rows], [r["c_copy"] for r in rows], ".", color=color, ms=3)
            if attention == "linear":
                ax_c.plot([r["P"] for r in glob], [r["c_uniform"] for r in glob], "--", color=color, lw=1)
            loss_key = "loss_mean_predictor" if read_out == "map" else "loss_gibbs"
            ax_l.plot([r["P"] for r in glob], [r[loss_key] for r in glob], "-", color=color)
        for sampler, marker, color in (("sgld", "o", "tab:blue"), ("adam", "s", "tab:orange")):
            for start, fill in (("uniform", "none"), ("copy", None), ("prior", None)):
                rows = [r for r in sims if r["attention"] == attention and r["sampler"] == sampler and r["start"] == start and r["kept"]]
                if not rows:
                    continue
                kw = {"mfc": fill} if fill else {}
                ax_c.errorbar([r["P"] for r in rows], [r["c_copy"] for r in rows], yerr=[r["c_copy_sem"] for r in rows],
                              fmt=marker, color=color, ms=5, label=f"{sampler} ({start} start)", **kw)
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
    scal_rows = ([{"attention": "softmax", "L": p["L"], "V": 4, "P_star": p["P_star"], "P_star_digits": p["P_star_digits"],
                   "P_crossover": None, "order": p["order"]} for p in soft.points]
                 + [{"attention": "linear", "L": p["L"], "V": 4, "P_star": p["P_star"], "P_star_digits": p["P_star_digits"],
                     "P_crossover": p["P_crossover"], "order": p["order"]} for p in lin.points]
                 + [{"attention": "linear", "L": 4096, "V": p["V"], "P_star": p["P_star"], "P_star_digits": "",
                     "P_crossover": p["P_crossover"], "order": p["order"]} for p in linV.points])
    write_csv(out_dir / "scaling.csv", scal_rows)

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    Ls_a = np.array(Ls, float)
    Ps = np.array([p["P_star"] for p in soft.points])
    ax = axes[0]
    ax.loglog(Ls_a, Ps, "o", label="softmax P* (coexistence)")
    f = soft.fits["P_star"]
    ax.loglog(Ls_a, f.exponent and Ps[-1] * (Ls_a / Ls_a[-1]) ** f.exponent * (np.log(Ls_a) / np.log(Ls_a[-1])) ** 2, "-",
              label=f"fit L^{f.exponent:.3f} ln^2 L [{f.exponent_low:.3f}, {f.exponent_high:.3f}]")
    R_inf = soft.extrapolation["R_inf_predicted"]
    ax.loglog(Ls_a, [R_inf * L_ * math.log(L_) ** 2 * api.softmax_large_L_correction(L_, 4) for L_ in Ls], "--",
              label="large-L form L ln²L/(4εσ²)·C(ln L)")
    ax.set_xlabel("L")
    ax.set_ylabel("P*")
    ax.legend(fontsize=7)
    ax = axes[1]
    ax.loglog(Ls_a, [p["P_star"] for p in lin.points], "o", label="linear transition")
    ax.loglog(Ls_a, [p["P_crossover"] for p in lin.points], "s", label="linear crossover")
    fc = lin.fits["P_crossover"]
    ax.loglog(Ls_a, lin.points[-1]["P_crossover"] * (Ls_a / Ls_a[-1]) ** fc.exponent, "-",
              label=f"crossover fit L^{fc.exponent:.3f}")
    ax.set_xlabel("L (V = 4)")
    ax.legend(fontsize=7)
    ax = axes[2]
    Vs_a = np.array(Vs, float)
    ax.loglog(Vs_a, [p["P_star"] for p in linV.points], "o", label=f"transition, fit V^{linV.fits['P_star'].exponent:.3f}")
    ax.loglog(Vs_a, [p["P_crossover"] for p in linV.points], "s", label=f"crossover, fit V^{linV.fits['P_crossover'].exponent:.3f}")
    ax.set_xlabel("V (L = 4096)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "scaling.png", dpi=120)
    plt.close(fig)

    # -- convention table ------------------------------------------------------------------------------
    table = api.convention_table(L_values=(16, 64, 256, 1024) if quick else (16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
                                 V_values=(4, 16, 64) if quick else (4, 8, 16, 32, 64, 128), L_fixed=1024 if quick else 4096)
    conv_rows = []
    for row in table:
        for attention in ("softmax", "linear"):
            entry = row.get(attention)
            if isinstance(entry, str):
                conv_rows.append({"convention": row["convention"], "attention": attention, "law": entry})
                continue
            for key, fit in entry.items():
                if not hasattr(fit, "exponent"):
                    continue
                conv_rows.append({"convention": row["convention"], "attention": attention, "law": fit.law, "variable": fit.variable,
                                  "claimed": fit.claimed_exponent, "exponent": fit.exponent, "band_low": fit.exponent_low,
                                  "band_high": fit.exponent_high, "systematic": fit.systematic, "holds": fit.holds,
                                  "orders": "/".join(entry.get("orders", []))})
    write_csv(out_dir / "conventions.csv", conv_rows)

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
              f"P*/(L ln²L) at the largest L = {ex['ratio'][-1]:.4f} vs the limit {ex['R_inf_predicted']:.4f}; the corrected "
              f"ratio is {ex['corrected_ratio'][-1]:.4f} (→ 1). So P*/(L ln²L) tends to a constant, with slowly decaying "
              "log corrections that bias any finite-range power-law fit below 1.",
              f"* linear transition vs L (claim: no L dependence): exponent {lin.fits['P_star'].exponent:.4f} "
              f"[{lin.fits['P_star'].exponent_low:.4f}, {lin.fits['P_star'].exponent_high:.4f}], holds: {lin.fits['P_star'].holds}",
              f"* linear transition vs V (claim 2): {linV.fits['P_star'].exponent:.4f} [{linV.fits['P_star'].exponent_low:.4f}, "
              f"{linV.fits['P_star'].exponent_high:.4f}], holds: {linV.fits['P_star'].holds}",
              f"* linear crossover vs L (claim 3/2): {lin.fits['P_crossover'].exponent:.4f} [{lin.fits['P_crossover'].exponent_low:.4f}, "
              f"{lin.fits['P_crossover'].exponent_high:.4f}], holds: {lin.fits['P_crossover'].holds}",
              f"* linear crossover vs V (claim 1/2): {linV.fits['P_crossover'].exponent:.4f} [{linV.fits['P_crossover'].exponent_low:.4f}, "
              f"{linV.fits['P_crossover'].exponent_high:.4f}], holds: {linV.fits['P_crossover'].holds}",
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
              "SGLD = Metropolis-adjusted Langevin on (scores, W, bias) at beta = 1; Adam keeps runs within "
              "max(1, 1e-3|U_best|) of the best objective per P. Figures: order_parameters_and_loss.png, scaling.png.", "",
              "Coverage (chain-mean attention matrices across the P sweep; fraction of their variance about the pooled "
              "mean captured by span{U, S − U}; top-2 PCA for comparison; fraction of the second moment):", ""]
    for attention, cv in coverages.items():
        lines.append(f"* {attention}: variance {cv['variance_fraction']:.3f}, PCA top-2 {cv['pca_top2_fraction']:.3f}, "
                     f"second moment {cv['second_moment_fraction']:.3f}")
    lines.append("")
    lines.append("| attention | sampler | P | start | c (measured) | t (measured) | test loss |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in sims:
        if r["kept"]:
            lines.append(f"| {r['attention']} | {r['sampler']} | {r['P']} | {r['start']} | {r['c_copy']:.3f} ± {r['c_copy_sem']:.3f} | "
                         f"{r['c_uniform']:.3f} | {r['test_loss']:.4f} |")
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
    return {"softmax_P_star_exponent": f.exponent, "softmax_ratio_last": ex["ratio"][-1], "softmax_corrected_ratio_last": ex["corrected_ratio"][-1],
            "linear_transition_V_exponent": linV.fits["P_star"].exponent, "linear_crossover_L_exponent": lin.fits["P_crossover"].exponent,
            "linear_crossover_V_exponent": linV.fits["P_crossover"].exponent,
            "coverage": {a: c["variance_fraction"] for a, c in coverages.items()}, "seconds": time.time() - t_start}
