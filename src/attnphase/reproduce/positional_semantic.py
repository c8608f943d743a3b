"""Reproduction of the positional-vs-semantic claims: branches, energies, baseline, GD, thresholds.

`run(out_dir, quick, device)` writes report.md, PNG figures and the CSV behind each figure:

* branches.csv / overlaps.png — |m| and |θ| against α for the positional and semantic branches (ω = 0.3);
* errors.csv / errors.png — ε_g of each branch and of the global minimum (largest Φ) against the linear
  baseline, with finite-d GD points (semantic and positional inits; d = 1000 protocol runs in full mode);
* phase_diagram.png — full mode: α_c(ω) and α_l(ω) with error bars at five ω (thresholds.csv) and the
  α_c(ω) curve at 22 ω in [0, 0.45] with its error band (`alpha_c_curve_split_line`,
  alpha_c_curve.csv); quick mode: a
  coarse (α, ω) grid (phase_grid.csv) with crossings interpolated between grid points, error = half a
  grid step (phase_crossings.csv);
* full mode only, the finite-d validation (spec §6, `gd_validation`): protocol.csv and
  protocol_global.csv (d = 1000 GD against the branch each seed landed on), finite_size.csv,
  finite_size_fits.csv, finite_size.png (gap to theory against d with fitted rates), random_init.csv,
  random_init.png (fraction of Adam runs from a random init reaching each minimum).

Cost of the full validation: one d = 1000, 5-seed, 5000-step GD run takes ≈ 230·α CPU-seconds on an
idle core (two matrix-vector products with the K·n·L·d training tokens per step; measured 45 ms per
step at α = 1) and about twice that on a loaded machine (α = 1.5: 700 CPU-seconds measured), so the
protocol alone is 40–80 CPU-minutes and the whole validation 1–2 CPU-hours; use --device cuda where
available (on one H200 all of it took 252 s). Every finished run is kept in out_dir/gd_runs/
(`cached_runner`), so an interrupted report resumes, and runs made on a GPU machine by
`simulate_gd_plan(out_dir / "gd_runs", "cuda")` are reused when their files are copied there.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from attnphase.api import positional_semantic as api
from attnphase.errors import ParameterError
from attnphase.report import Checkpoint, write_csv, write_json_atomically
from attnphase.validate.compare import compare
from attnphase.validate.finite_size import (MINIMA, binomial_interval, classify_minimum, fit_gap_rate,
                                            gap_at_size)

OMEGA = 0.3
THRESHOLD_OMEGAS = (0.0, 0.1, 0.2, 0.3, 0.4)  # the full report's α_c(ω), α_l(ω) table
CURVE_OMEGAS = tuple(float(w) for w in np.linspace(0.0, 0.45, 22))  # the full report's α_c(ω) curve


def branch_table(alphas, tracker: api.BranchTracker) -> list[dict]:
    """Positional and semantic branches along α at ω = 0.3 (warm-started continuation by `tracker`)."""
    rows = []
    for a in alphas:
        for branch in ("positional", "semantic"):
            s = tracker.at(branch, float(a))
            rows.append({"alpha": float(a), "branch": branch, "status": s.status, "q": s.q, "abs_m": abs(s.m),
                         "abs_theta": abs(s.theta), "V": s.V, "free_energy": s.free_energy,
                         "train_loss": s.train_loss, "test_error": s.test_error})
    return rows


# Quick phase diagram: the ω = 0.3 branch table plus these rows, each solved on the same α grid and
# started from the ω = 0.3 solution at the same α. A fixed-point tolerance of 1e-7 (instead of 1e-10)
# leaves Φ accurate to ~1e-9, far below the smallest |ΔΦ| seen on the grid (~1e-5), at fewer evaluations.
QUICK_PHASE_OMEGAS = (0.1, 0.45)


def coarse_phase_diagram(tracker: api.BranchTracker, alphas, omegas) -> tuple[list[dict], list[dict]]:
    """Global branch and the semantic-vs-baseline sign on an (α, ω) grid, and per ω the crossings.

    Returns (grid rows, crossing rows). A crossing is located by linear interpolation of ΔΦ =
    Φ_sem − Φ_pos (α_c) or of ε_g^lin − ε_g,sem (α_l) between the two grid points that bracket its sign
    change; its stated error is half the bracket (the grid resolution), not a quadrature error. With
    no sign change on the grid the crossing is reported as below / above the grid.
    """
    alphas = sorted(float(a) for a in alphas)
    grid = []
    for omega in sorted(set(omegas) | {OMEGA}):
        params = api.Parameters.validated(omega=omega)
        baseline = api.linear_baseline(params).value
        for a in alphas:
            solution = {}
            for branch in ("positional", "semantic"):
                start = tracker.at(branch, a)
                if omega == OMEGA:
                    solution[branch] = start
                    continue
                guess = api.BranchCoordinates(branch, params).from_state(start.state) if start.status == "converged" else None
                solution[branch] = api.solve_branch(branch, a, params, nodes_per_dim=tracker.nodes_per_dim, guess=guess,
                                                    tol=1e-7, accept=1e-6, stability=False)
            converged = all(sol.status == "converged" for sol in solution.values())
            delta_phi = solution["semantic"].free_energy - solution["positional"].free_energy if converged else math.nan
            grid.append({"omega": omega, "alpha": a, "delta_free_energy": delta_phi,
                         "global_branch": ("semantic" if delta_phi > 0 else "positional") if converged else "unresolved",
                         "baseline_minus_semantic": baseline - solution["semantic"].test_error,
                         "positional_abs_m": abs(solution["positional"].m), "semantic_abs_theta": abs(solution["semantic"].theta)})
    crossings = []
    for omega in sorted({g["omega"] for g in grid}):
        row = {"omega": omega, "grid_step": alphas[1] - alphas[0] if len(alphas) > 1 else math.nan}
        points = [g for g in grid if g["omega"] == omega]
        # Both crossing functions grow through 0 at their threshold: the semantic branch becomes the
        # global minimum (ΔΦ > 0), its ε_g drops below the baseline (ε_g^lin − ε_g,sem > 0).
        for name, key in (("alpha_c", "delta_free_energy"), ("alpha_l", "baseline_minus_semantic")):
            values = [g[key] for g in points]
            value, error, note = math.nan, math.nan, f"no sign change on [{alphas[0]:g}, {alphas[-1]:g}]"
            for i in range(len(points) - 1):
                f0, f1 = values[i], values[i + 1]
                if np.isfinite(f0) and np.isfinite(f1) and f0 < 0 <= f1:
                    a0, a1 = alphas[i], alphas[i + 1]
                    value, error, note = a0 + (a1 - a0) * f0 / (f0 - f1), 0.5 * (a1 - a0), "grid interpolation"
                    break
            if not np.isfinite(value) and all(np.isfinite(values)):
                note = f"> {alphas[-1]:g}" if values[-1] < 0 else f"< {alphas[0]:g}"
            row.update({name: value, f"{name}_error": error, f"{name}_note": note})
        crossings.append(row)
    return grid, crossings


def gd_table(alphas, d: int, trials: int, steps: int, device: str) -> list[dict]:
    rows = []
    for a in alphas:
        for init in ("semantic", "positional"):
            r = api.simulate(omega=OMEGA, alpha=float(a), d=d, init=init, trials=trials, steps=steps, test_samples=4000,
                             device=device, num_threads=1)
            rows.append({"alpha": float(a), "init": init, "d": d, "trials": trials, "steps": steps,
                         "abs_m": float(r.m.mean()), "abs_theta": float(r.theta.mean()),
                         "test_error": float(r.test_error.mean()),
                         "test_error_sem": float(r.test_error.std(ddof=1) / np.sqrt(trials)) if trials > 1 else 0.0,
                         "train_loss": float(r.train_loss.mean())})
    return rows


# ==================================================================================================
# Finite-d validation (spec §6): paper protocol, finite-size scan, random initialisation
# ==================================================================================================
# The paper's protocol: d = 1000, n = round(αd), full-batch GD (lr 0.15, 5000 steps, weight decay λ)
# from the semantic (Q₀ = Q*) and positional (Q₀ = 1_d/√d) inits. Both inits use the same seed at a
# given α, hence the same teacher and training set, so per seed the lower training loss of the two
# runs is the empirical global minimum.
PROTOCOL_ALPHAS = (0.5, 1.0, 1.5, 2.0)
PROTOCOL = {"d": 1000, "trials": 5, "steps": 5000, "test_samples": 10_000, "seed": 0}
# Finite-size scan at one α where both branches exist: (d, trials), more trials where runs are cheap
# (a run costs ∝ trials·d²) so that the gap stays resolved above the seed spread at every size.
SCAN_ALPHA = 1.5
SCAN_SIZES = ((50, 40), (100, 20), (200, 10), (400, 8), (1000, 5))
SCAN = {"steps": 5000, "test_samples": 10_000, "seed": 0}
# Random init Q₀ = 0.1·N(0, 1) trained by Adam (lr 0.01): which minimum do runs reach?
RANDOM_INIT_ALPHAS = (0.5, 1.0, 1.5, 2.0, 2.5)
RANDOM_INIT = {"d": 200, "trials": 16, "steps": 3000, "test_samples": 10_000, "seed": 0}
# Theory for the comparisons: converged split-line studies started from tensor-rule solutions on this rule.
THEORY_NODES = 14
# Quantities compared per branch: the overlap that is non-zero on it, q and the two errors.
COMPARED = {"positional": ("abs_m", "q", "test_error", "train_loss"),
            "semantic": ("abs_theta", "q", "test_error", "train_loss")}
SIM_KEYS = {"abs_m": "m", "abs_theta": "theta", "q": "q", "test_error": "test_error", "train_loss": "train_loss"}


def simulate_run(alpha: float, d: int, init: str, trials: int, steps: int, test_samples: int, seed: int,
                 device: str) -> dict:
    """One batched simulation (api.simulate) at ω = 0.3, as a dict of per-trial arrays (GDResult.as_dict)."""
    result = api.simulate(omega=OMEGA, alpha=alpha, d=d, init=init, trials=trials, steps=steps,
                          test_samples=test_samples, seed=seed, device=device, num_threads=1)
    return result.as_dict()


def gd_run_plan() -> list[tuple]:
    """Every simulation `gd_validation` makes, as runner arguments (α, d, init, trials, steps, test_samples, seed)."""
    plan = [(a, PROTOCOL["d"], init, PROTOCOL["trials"], PROTOCOL["steps"], PROTOCOL["test_samples"], PROTOCOL["seed"])
            for a in PROTOCOL_ALPHAS for init in ("semantic", "positional")]
    plan += [(SCAN_ALPHA, d, init, trials, SCAN["steps"], SCAN["test_samples"], SCAN["seed"])
             for d, trials in SCAN_SIZES for init in ("semantic", "positional")]
    plan += [(a, RANDOM_INIT["d"], "random", RANDOM_INIT["trials"], RANDOM_INIT["steps"], RANDOM_INIT["test_samples"],
              RANDOM_INIT["seed"]) for a in RANDOM_INIT_ALPHAS]
    return list(dict.fromkeys(plan))  # the scan reuses the protocol's d = 1000 runs


def cached_runner(cache_dir: Path, runner=simulate_run):
    """A runner that keeps every finished simulation as a JSON file in `cache_dir` and reuses it.

    A full report interrupted during its CPU-hours of GD loses no finished run, and runs made elsewhere
    (e.g. on a GPU: `simulate_gd_plan(cache_dir, "cuda")`) are used by copying their files in. The file
    name is the run's arguments; the device is not part of it (any device samples the same law).
    """
    import json

    cache_dir = Path(cache_dir)

    def cached(alpha, d, init, trials, steps, test_samples, seed, device):
        path = cache_dir / f"gd_a{alpha:g}_d{d}_{init}_K{trials}_s{steps}_t{test_samples}_seed{seed}.json"
        if path.exists():  # lists are the per-seed arrays (null: a non-finite measurement)
            stored = json.loads(path.read_text())
            return {k: np.asarray(v, dtype=float) if isinstance(v, list) else v for k, v in stored.items()}
        result = runner(alpha, d, init, trials, steps, test_samples, seed, device)
        write_json_atomically(path, result)
        return result

    return cached


def simulate_gd_plan(cache_dir: Path, device: str = "auto") -> float:
    """Run (or find in `cache_dir`) every simulation of `gd_run_plan`; returns the seconds taken."""
    start = time.time()
    runner = cached_runner(cache_dir)
    for arguments in gd_run_plan():
        runner(*arguments, device)
    return time.time() - start


def theory_reference(alphas, nodes: int = THEORY_NODES, cache_path: Path | None = None) -> dict:
    """Both branches at each α (ω = 0.3), converged: {(branch, α): {quantity: value, quantity + "_error": error}}.

    Values come from `api.convergence_study` (the fixed point carried to the split-line rules by defect
    correction): q, |m|, |θ| and ε_g at the fine state rule with the coarse-to-fine difference as the
    error; ε_t = −Φ and Φ with the study's error. Tensor rules alone are not a reference here: they
    have spurious fixed points (positional branch: |m| = 0.101 on 10 nodes at α = 2 where the
    converged branch has 0.258 and the 14-node rule 0.256; continuation along α on 14 nodes slid onto
    such a point at α = 1.5), and carried to the split-line rule that point goes to m = 0, not to the
    branch. So each distinct tensor-rule start — the branch solved cold from its invariant subspace and
    by warm continuation along α on the `nodes` rule — is carried over, and the start whose converged
    state keeps the branch's order parameter (the larger one if both do) is used; the entry records
    how many distinct starts there were. A study takes minutes, so with `cache_path` every finished
    entry is kept in that JSON file (`report.Checkpoint`) and reused.
    """
    params = api.Parameters.validated(omega=OMEGA)
    tracker = api.BranchTracker(params, nodes)
    checkpoint = Checkpoint(cache_path) if cache_path else None
    reference = {}
    for a in sorted(alphas):
        for branch in ("positional", "semantic"):
            cache_key = f"{branch} {float(a)!r} nodes={nodes}"
            if checkpoint and checkpoint.get(cache_key) is not None:
                reference[(branch, float(a))] = checkpoint.get(cache_key)
                continue
            order = "m" if branch == "positional" else "theta"
            starts = [api.solve_branch(branch, float(a), params, nodes_per_dim=nodes, stability=False),
                      tracker.at(branch, float(a))]
            starts = [s for s in starts if s.status == "converged"]
            distinct = [s for i, s in enumerate(starts)
                        if all(abs(abs(getattr(s, order)) - abs(getattr(t, order))) > 1e-4 for t in starts[:i])]
            studies = [api.convergence_study(branch, float(a), params, start=s) for s in distinct]
            kept = [st for st in studies if st.success and abs(getattr(st.state_rows[-1], order)) > 1e-6]
            entry = {"status": "converged" if kept else "failed", "tensor_starts": len(distinct),
                     "message": "" if kept else "; ".join(st.message[:80] for st in studies) or "no tensor-rule start"}
            if kept:
                study = max(kept, key=lambda st: abs(getattr(st.state_rows[-1], order)))
                coarse, fine = study.state_rows[0], study.state_rows[-1]
                for key, attribute in (("abs_m", "m"), ("abs_theta", "theta"), ("q", "q")):
                    value, previous = float(getattr(fine, attribute)), float(getattr(coarse, attribute))
                    entry[key] = abs(value) if key.startswith("abs") else value
                    entry[key + "_error"] = abs(abs(value) - abs(previous))
                entry.update({"test_error": study.test_error, "test_error_error": study.test_error_error,
                              "free_energy": study.free_energy, "free_energy_error": study.free_energy_error,
                              "train_loss": study.train_loss, "train_loss_error": study.free_energy_error})
            else:
                entry.update({k: math.nan for k in ("abs_m", "abs_m_error", "abs_theta", "abs_theta_error", "q",
                                                    "q_error", "test_error", "test_error_error", "free_energy",
                                                    "free_energy_error", "train_loss", "train_loss_error")})
            reference[(branch, float(a))] = entry
            if checkpoint:
                checkpoint.put(cache_key, entry)
    return reference


def landed_labels(run: dict, reference: dict, alpha: float) -> np.ndarray:
    """Per-seed minimum reached (finite_size.classify_minimum against the two theory branches at α; a
    branch without a converged theory value at α is never assigned)."""
    def existing(branch, key):
        value = reference[(branch, alpha)][key]
        return value if reference[(branch, alpha)]["status"] == "converged" and np.isfinite(value) and value > 0 else None

    return classify_minimum(run["m"], run["theta"], existing("positional", "abs_m"), existing("semantic", "abs_theta"))


def protocol_rows(runs: dict, reference: dict) -> list[dict]:
    """Theory vs GD for every (α, init): each quantity of the branch the trials landed on.

    runs: {(α, init): simulate_run dict}. A (α, init) whose trials split between minima is compared
    per group; trials labelled "other" are listed but not compared.
    """
    rows = []
    for (a, init), run in sorted(runs.items()):
        labels = landed_labels(run, reference, a)
        for branch in ("positional", "semantic", "other"):
            mask = labels == branch
            if not mask.any():
                continue
            quantities = COMPARED.get(branch, ())
            for key in quantities:
                samples = np.asarray(run[SIM_KEYS[key]], float)[mask]
                theory = reference[(branch, a)]
                row = {"alpha": a, "init": init, "landed": branch, "trials": int(mask.sum()), "quantity": key,
                       "theory": theory[key], "theory_error": theory[key + "_error"],
                       "gd_mean": float(samples.mean()),
                       "gd_std": float(samples.std(ddof=1)) if samples.size > 1 else math.nan}
                if samples.size > 1 and np.isfinite(theory[key + "_error"]):
                    c = compare(key, theory[key], samples, theory_error=theory[key + "_error"])
                    row.update({"z": c.z, "agrees": c.agrees})
                else:
                    row.update({"z": math.nan, "agrees": None})
                rows.append(row)
            if branch == "other":
                rows.append({"alpha": a, "init": init, "landed": branch, "trials": int(mask.sum()),
                             "quantity": "abs_m|abs_theta",
                             "gd_mean": f"{np.mean(np.asarray(run['m'])[mask]):.4f}|"
                                        f"{np.mean(np.asarray(run['theta'])[mask]):.4f}"})
    return rows


def theory_global(reference: dict, alpha: float) -> str:
    """The branch with the larger Φ at α among those with a converged theory value ("none" if neither)."""
    phi = {b: reference[(b, alpha)]["free_energy"] for b in ("positional", "semantic")}
    phi = {b: value for b, value in phi.items() if np.isfinite(value)}
    return max(phi, key=phi.get) if phi else "none"


def empirical_global_rows(runs: dict, reference: dict) -> list[dict]:
    """Per α: trials whose semantic-init run has the lower training loss (same data for both inits),
    against the theory's global branch (larger Φ)."""
    rows = []
    for a in sorted({a for a, _ in runs}):
        if (a, "semantic") not in runs or (a, "positional") not in runs:
            continue
        semantic_lower = np.asarray(runs[(a, "semantic")]["train_loss"]) < np.asarray(runs[(a, "positional")]["train_loss"])
        rows.append({"alpha": a, "trials": int(semantic_lower.size), "semantic_init_lower_train_loss": int(semantic_lower.sum()),
                     "theory_global": theory_global(reference, a),
                     "theory_delta_train_loss": reference[("semantic", a)]["train_loss"] - reference[("positional", a)]["train_loss"]})
    return rows


def finite_size_gaps(runs: dict, reference: dict) -> tuple[list[dict], list[dict]]:
    """Gap to theory against d at SCAN_ALPHA for each init's branch and quantity, and the fitted rates.

    runs: {(d, init): simulate_run dict}. Returns (gap rows, fit rows); the ε_g gap removes the
    Monte-Carlo error of each seed's test-error estimate (see finite_size.gap_at_size).
    """
    gap_rows, fit_rows = [], []
    for init in ("semantic", "positional"):
        theory = reference[(init, SCAN_ALPHA)]
        for key in COMPARED[init]:
            gaps = []
            for d in sorted(d for d, i in runs if i == init):
                run = runs[(d, init)]
                mc = run.get("test_error_mc_sem") if key == "test_error" else None
                gap = gap_at_size(d, run[SIM_KEYS[key]], theory[key], theory_error=theory[key + "_error"],
                                  measurement_sem=mc)
                gaps.append(gap)
                gap_rows.append({"init": init, "quantity": key, **gap.as_dict()})
            for measure in ("rms", "bias"):
                try:
                    fit = fit_gap_rate(gaps, measure)
                except ParameterError as error:  # fewer than 3 sizes with a resolved gap
                    fit_rows.append({"init": init, "quantity": key, "measure": measure, "exponent": math.nan,
                                     "exponent_low": math.nan, "exponent_high": math.nan, "sizes": 0,
                                     "note": str(error)})
                    continue
                fit_rows.append({"init": init, "quantity": key, "measure": measure, "exponent": fit.exponent,
                                 "exponent_low": fit.exponent_low, "exponent_high": fit.exponent_high,
                                 "prefactor": fit.prefactor, "chi2": fit.chi2, "sizes": fit.n, "note": ""})
    return gap_rows, fit_rows


def random_init_rows(runs: dict, reference: dict) -> list[dict]:
    """Fraction of Adam runs from Q₀ = 0.1·N(0, 1) reaching each minimum, with Wilson 95 % intervals.

    runs: {α: simulate_run dict}."""
    rows = []
    for a, run in sorted(runs.items()):
        labels = landed_labels(run, reference, a)
        row = {"alpha": a, "trials": int(labels.size), "theory_global": theory_global(reference, a)}
        for minimum in MINIMA:
            count = int(np.sum(labels == minimum))
            low, high = binomial_interval(count, labels.size)
            row.update({f"{minimum}": count, f"{minimum}_fraction": count / labels.size,
                        f"{minimum}_low": low, f"{minimum}_high": high})
        rows.append(row)
    return rows


def _gd_points(runs: dict) -> list[dict]:
    """Protocol runs as the GD points of errors.png (mean and standard error over trials)."""
    rows = []
    for (a, init), run in sorted(runs.items()):
        test = np.asarray(run["test_error"], float)
        rows.append({"alpha": a, "init": init, "d": run["d"], "trials": test.size, "steps": run["steps"],
                     "abs_m": float(np.mean(run["m"])), "abs_theta": float(np.mean(run["theta"])),
                     "test_error": float(test.mean()), "test_error_sem": float(test.std(ddof=1) / math.sqrt(test.size)),
                     "train_loss": float(np.mean(run["train_loss"]))})
    return rows


def _markdown_table(rows: list[dict], keys) -> list[str]:
    def cell(v):
        if isinstance(v, float):
            return "n/a" if not math.isfinite(v) else f"{v:.6g}"
        return str(v)
    return ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys),
            *["| " + " | ".join(cell(r.get(k, "")) for k in keys) + " |" for r in rows], ""]


def finite_size_figure(gap_rows: list[dict], fit_rows: list[dict], path: Path) -> None:
    """Log-log rms gap to theory against d per init and quantity, with the fitted power laws."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, init in zip(axes, ("semantic", "positional")):
        for key, marker in ((COMPARED[init][0], "o"), ("test_error", "s"), ("train_loss", "^")):
            pts = [g for g in gap_rows if g["init"] == init and g["quantity"] == key and math.isfinite(g["rms"])]
            if not pts:
                continue
            ds = np.array([g["d"] for g in pts], float)
            line = ax.errorbar(ds, [g["rms"] for g in pts], [g["rms_error"] for g in pts], fmt=marker, label=key)
            fit = next((f for f in fit_rows if f["init"] == init and f["quantity"] == key and f["measure"] == "rms"
                        and math.isfinite(f["exponent"])), None)
            if fit:
                ax.plot(ds, fit["prefactor"] * ds ** fit["exponent"], "-", color=line[0].get_color(),
                        label=f"  d^({fit['exponent']:.2f} [{fit['exponent_low']:.2f}, {fit['exponent_high']:.2f}])")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("d")
        ax.set_ylabel("rms |GD − theory| per run")
        ax.set_title(f"{init} init, α = {SCAN_ALPHA}, ω = {OMEGA}")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def random_init_figure(fractions: list[dict], path: Path) -> None:
    """Fraction of random-init runs reaching each minimum against α (Wilson 95 % bars)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for minimum, marker in zip(MINIMA, ("o", "s", "x")):
        xs = [r["alpha"] for r in fractions]
        ys = np.array([r[f"{minimum}_fraction"] for r in fractions])
        # clipped at 0: at a fraction of exactly 0 or 1 the Wilson bound equals it up to rounding
        err = np.clip([[y - r[f"{minimum}_low"], r[f"{minimum}_high"] - y] for y, r in zip(ys, fractions)], 0, None).T
        ax.errorbar(xs, ys, err, fmt=marker + "-", capsize=3, label=minimum)
    semantic_global = [r["alpha"] for r in fractions if r["theory_global"] == "semantic"]
    if semantic_global:
        ax.axvspan(min(semantic_global), max(r["alpha"] for r in fractions), color="gray", alpha=0.15,
                   label="theory: semantic global")
    ax.set_xlabel("α")
    ax.set_ylabel("fraction of runs")
    ax.set_title(f"Adam from Q₀ = 0.1·N(0,1), d = {RANDOM_INIT['d']}, {RANDOM_INIT['trials']} trials (95 % Wilson)", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gd_validation(out_dir: Path, device: str, runner=simulate_run) -> dict:
    """The finite-d validation of the full report: protocol, finite-size scan, random initialisation.

    Writes protocol.csv, protocol_global.csv, finite_size.csv, finite_size_fits.csv, finite_size.png,
    random_init.csv, random_init.png. `runner(alpha, d, init, trials, steps, test_samples, seed, device)`
    returns one batched run as a dict (default: `simulate_run`). Returns {"gd_rows": GD points for
    errors.png, "lines": report lines, "headline": numbers}.
    """
    alphas = sorted(set(PROTOCOL_ALPHAS) | {SCAN_ALPHA} | set(RANDOM_INIT_ALPHAS))
    reference = theory_reference(alphas, cache_path=out_dir / "theory_reference.json")
    timings = {}

    start = time.time()
    protocol = {(a, init): runner(a, PROTOCOL["d"], init, PROTOCOL["trials"], PROTOCOL["steps"],
                                  PROTOCOL["test_samples"], PROTOCOL["seed"], device)
                for a in PROTOCOL_ALPHAS for init in ("semantic", "positional")}
    timings["protocol_s"] = time.time() - start
    comparison = protocol_rows(protocol, reference)
    write_csv(out_dir / "protocol.csv", comparison)
    global_rows = empirical_global_rows(protocol, reference)
    write_csv(out_dir / "protocol_global.csv", global_rows)

    start = time.time()
    scan = {}
    for d, trials in SCAN_SIZES:
        for init in ("semantic", "positional"):
            if d == PROTOCOL["d"] and SCAN_ALPHA in PROTOCOL_ALPHAS and trials == PROTOCOL["trials"]:
                scan[(d, init)] = protocol[(SCAN_ALPHA, init)]  # the same runs: reuse, don't rerun
            else:
                scan[(d, init)] = runner(SCAN_ALPHA, d, init, trials, SCAN["steps"], SCAN["test_samples"], SCAN["seed"],
                                         device)
    timings["finite_size_s"] = time.time() - start
    gap_rows, fit_rows = finite_size_gaps(scan, reference)
    write_csv(out_dir / "finite_size.csv", gap_rows)
    write_csv(out_dir / "finite_size_fits.csv", fit_rows)
    finite_size_figure(gap_rows, fit_rows, out_dir / "finite_size.png")

    start = time.time()
    random_runs = {a: runner(a, RANDOM_INIT["d"], "random", RANDOM_INIT["trials"], RANDOM_INIT["steps"],
                             RANDOM_INIT["test_samples"], RANDOM_INIT["seed"], device) for a in RANDOM_INIT_ALPHAS}
    timings["random_init_s"] = time.time() - start
    fractions = random_init_rows(random_runs, reference)
    write_csv(out_dir / "random_init.csv", fractions)
    random_init_figure(fractions, out_dir / "random_init.png")

    lines = [
        "## Finite-d validation",
        "",
        f"Protocol (spec §6): d = {PROTOCOL['d']}, ω = {OMEGA}, n = round(αd), full-batch GD lr 0.15, "
        f"{PROTOCOL['steps']} steps, weight decay λ = 0.01, {PROTOCOL['trials']} trials (base seed {PROTOCOL['seed']}; both "
        f"inits share teacher and data per seed), ε_g on {PROTOCOL['test_samples']} fresh samples per seed. Theory: "
        "converged split-line studies (api.convergence_study) started from the branch on the "
        f"{THEORY_NODES}-node tensor rule; error = coarse-to-fine state-rule difference (Φ: the study's error). "
        "Each seed is compared with the branch it landed on (classification rule in validate.finite_size."
        "classify_minimum); agreement = |mean − theory| ≤ 3 √(sem² + theory error²).",
        "",
        *_markdown_table(comparison, ["alpha", "init", "landed", "trials", "quantity", "theory", "theory_error",
                                      "gd_mean", "gd_std", "z", "agrees"]),
        "Empirical global minimum (per seed, the init with the lower training loss) against the theory:",
        "",
        *_markdown_table(global_rows, list(global_rows[0]) if global_rows else []),
        f"### Finite-size scan (α = {SCAN_ALPHA}, ω = {OMEGA}; (d, trials) = {list(SCAN_SIZES)})",
        "",
        "rms = per-run rms deviation from theory (test-set Monte-Carlo error removed); bias = mean − theory. "
        "Fits: gap ≈ A d^β weighted by the gap errors, 95 % band (numeric.scaling.fit_power_law).",
        "",
        *_markdown_table(gap_rows, ["init", "quantity", "d", "seeds", "theory", "mean", "bias", "bias_error", "rms",
                                    "rms_error"]),
        *_markdown_table(fit_rows, ["init", "quantity", "measure", "exponent", "exponent_low", "exponent_high", "sizes",
                                    "note"]),
        "![finite-size gaps](finite_size.png)",
        "",
        f"### Random initialisation (Adam lr 0.01, Q₀ = 0.1·N(0,1), d = {RANDOM_INIT['d']}, {RANDOM_INIT['steps']} steps, "
        f"{RANDOM_INIT['trials']} trials per α)",
        "",
        *_markdown_table(fractions, ["alpha", "trials", "theory_global", *MINIMA,
                                     *[f"{m}_{e}" for m in ("positional", "semantic") for e in ("low", "high")]]),
        "![random init fractions](random_init.png)",
        "",
        f"Simulation wall times (a run reused from gd_runs/ counts 0 s): {', '.join(f'{k} {v:.0f} s' for k, v in timings.items())}.",
        "",
    ]
    headline = {"protocol_agreement": f"{sum(r.get('agrees') is True for r in comparison)}/"
                                      f"{sum(r.get('agrees') is not None for r in comparison)}",
                "finite_size_fits": fit_rows, "random_init": fractions, **timings}
    return {"gd_rows": _gd_points(protocol), "lines": lines, "headline": headline}


def run(out_dir: Path, quick: bool, device: str = "auto") -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.time()
    nodes = 8 if quick else 12
    alphas = [0.75, 1.25, 1.75] if quick else list(np.arange(0.5, 3.01, 0.25))
    tracker = api.BranchTracker(api.Parameters.validated(omega=OMEGA), nodes)
    rows = branch_table(alphas, tracker)
    write_csv(out_dir / "branches.csv", rows)
    baseline = api.linear_baseline_error(OMEGA).value

    validation = None
    if quick:
        gd = gd_table([1.25], d=100, trials=2, steps=500, device=device)
    else:
        validation = gd_validation(out_dir, device, runner=cached_runner(out_dir / "gd_runs"))
        gd = validation["gd_rows"]
    write_csv(out_dir / "gd.csv", gd)

    by_branch = {b: [r for r in rows if r["branch"] == b and r["status"] == "converged"] for b in ("positional", "semantic")}
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for b, style in (("positional", "o-"), ("semantic", "s-")):
        xs = [r["alpha"] for r in by_branch[b]]
        ax.plot(xs, [r["abs_m"] for r in by_branch[b]], style, label=f"|m| {b}")
        ax.plot(xs, [r["abs_theta"] for r in by_branch[b]], style, mfc="none", label=f"|θ| {b}")
    ax.set_xlabel("α")
    ax.set_title(f"overlaps, ω = {OMEGA}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "overlaps.png", dpi=120)
    plt.close(fig)

    global_rows = []
    for a in alphas:
        candidates = [r for r in rows if r["alpha"] == a and r["status"] == "converged"]
        if candidates:
            best = max(candidates, key=lambda r: r["free_energy"])
            global_rows.append({"alpha": a, "global_branch": best["branch"], "test_error": best["test_error"],
                                "linear_baseline_error": baseline})
    write_csv(out_dir / "errors.csv", global_rows)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for b in ("positional", "semantic"):
        ax.plot([r["alpha"] for r in by_branch[b]], [r["test_error"] for r in by_branch[b]], "--", label=f"ε_g {b}")
    ax.plot([r["alpha"] for r in global_rows], [r["test_error"] for r in global_rows], "k-", lw=2, label="global minimum")
    ax.axhline(baseline, color="gray", label="linear baseline")
    for init, marker in (("semantic", "s"), ("positional", "o")):
        pts = [g for g in gd if g["init"] == init]
        ax.errorbar([g["alpha"] for g in pts], [g["test_error"] for g in pts], [g["test_error_sem"] for g in pts],
                    fmt=marker, label=f"GD {init} init (d={pts[0]['d']})")
    ax.set_xlabel("α")
    ax.set_ylabel("ε_g")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "errors.png", dpi=120)
    plt.close(fig)

    # α_c on the grid: the first α where the semantic branch has the larger Φ.
    crossing = next((r["alpha"] for r in global_rows if r["global_branch"] == "semantic"), None)
    headline = {"omega": OMEGA, "nodes_per_dim": nodes, "linear_baseline_error": baseline,
                "first_alpha_semantic_global": crossing}
    thresholds = []
    if not quick:
        # Refined on the split-line rule (3–12 min per ω): the tensor rules' own error bars do not cover
        # the converged thresholds (docs/models/positional_semantic.md). Each finished ω is checkpointed.
        checkpoint = Checkpoint(out_dir / "thresholds.json")
        for omega in THRESHOLD_OMEGAS:
            key = f"omega={omega!r}"
            if checkpoint.get(key) is None:
                t = api.threshold(omega, nodes_per_dim=8, check_nodes_per_dim=10, alpha_min=0.4, alpha_max=2.75,
                                  n_scan=5, rtol=1e-3, refine=("alpha_c", "alpha_l"))
                checkpoint.put(key, {k: v for k, v in t.as_dict().items() if k != "message"})
            # the convergence studies behind each refined value stay in thresholds.json, out of the table
            thresholds.append({"omega": omega, **{k: v for k, v in checkpoint.get(key).items() if k != "studies"}})
        write_csv(out_dir / "thresholds.csv", thresholds)
        if checkpoint.get("alpha_c_curve") is None:
            checkpoint.put("alpha_c_curve", api.alpha_c_curve_split_line(CURVE_OMEGAS).as_dict())
        stored = checkpoint.get("alpha_c_curve")
        curve = [{"omega": w, "alpha_c": np.nan if a is None else a, "alpha_c_error": np.nan if e is None else e,
                  "status": st} for w, a, e, st in zip(stored["omega"], stored["alpha_c"], stored["alpha_c_error"],
                                                      stored["alpha_c_status"])]
        write_csv(out_dir / "alpha_c_curve.csv", curve)
        fig, ax = plt.subplots(figsize=(5, 3.5))
        om = [t["omega"] for t in thresholds]
        solved = [c for c in curve if c["status"] == "converged"]
        centre = np.array([c["alpha_c"] for c in solved])
        half_width = np.array([c["alpha_c_error"] for c in solved])
        ax.fill_betweenx([c["omega"] for c in solved], centre - half_width, centre + half_width, color="tab:blue",
                         alpha=0.25, lw=0, label="α_c curve ± error (split line)")
        ax.plot(centre, [c["omega"] for c in solved], "-", color="tab:blue", lw=1)
        ax.errorbar([t["alpha_c"] for t in thresholds], om, xerr=[t["alpha_c_error"] for t in thresholds], fmt="o",
                    color="tab:blue", label="α_c (refined)")
        ax.errorbar([t["alpha_l"] for t in thresholds], om, xerr=[t["alpha_l_error"] for t in thresholds], fmt="s-",
                    color="tab:green", label="α_l (refined)")
        ax.set_xlabel("α")
        ax.set_ylabel("ω")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "phase_diagram.png", dpi=120)
        plt.close(fig)
        headline["thresholds"] = thresholds
        headline["alpha_c_curve"] = curve
    phase_grid, phase_crossings = [], []
    if quick:
        phase_grid, phase_crossings = coarse_phase_diagram(tracker, alphas, QUICK_PHASE_OMEGAS)
        write_csv(out_dir / "phase_grid.csv", phase_grid)
        write_csv(out_dir / "phase_crossings.csv", phase_crossings)
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for branch, marker, color in (("positional", "o", "tab:blue"), ("semantic", "s", "tab:orange")):
            pts = [g for g in phase_grid if g["global_branch"] == branch]
            ax.scatter([g["alpha"] for g in pts], [g["omega"] for g in pts], marker=marker, color=color, alpha=0.4,
                       label=f"global: {branch}")
        for name, fmt in (("alpha_c", "kD-"), ("alpha_l", "g^--")):
            pts = [c for c in phase_crossings if np.isfinite(c[name])]
            ax.errorbar([c[name] for c in pts], [c["omega"] for c in pts], xerr=[c[f"{name}_error"] for c in pts],
                        fmt=fmt, capsize=3, label=f"{'α_c' if name == 'alpha_c' else 'α_l'} (grid interpolation)")
        ax.set_xlabel("α")
        ax.set_ylabel("ω")
        ax.set_title(f"coarse phase diagram: {nodes}-node rule, α step {alphas[1] - alphas[0]:g} "
                     "(error bars = half a grid step)", fontsize=8)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.tight_layout()
        fig.savefig(out_dir / "phase_diagram.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        headline["coarse_phase_crossings"] = phase_crossings

    lines = [
        "# Positional vs semantic attention — reproduction",
        "",
        f"Mode: {'quick' if quick else 'full'}; Gauss-Hermite nodes per dimension: {nodes}; ω = {OMEGA}; "
        f"wall time {time.time() - start:.0f} s.",
        "",
        f"Linear baseline ε_g^lin = {baseline:.8f} (spec: 0.00402323 (1−ω)² = {0.00402323 * (1 - OMEGA) ** 2:.8f}).",
        "",
        "| α | branch | abs(m) | abs(θ) | Φ | ε_g |",
        "|---|---|---|---|---|---|",
        *[f"| {r['alpha']:.2f} | {r['branch']} | {r['abs_m']:.4f} | {r['abs_theta']:.4f} | {r['free_energy']:.7f} | "
          f"{r['test_error']:.6f} |" for r in rows],
        "",
        f"First α on the grid where the semantic branch is the global minimum: {crossing}.",
        "",
        "Figures: overlaps.png (branches.csv), errors.png (errors.csv, gd.csv), phase_diagram.png ("
        + ("thresholds.csv)." if thresholds else "phase_grid.csv, phase_crossings.csv: a coarse grid, see below)."),
    ]
    if phase_crossings:
        lines += ["", f"Coarse phase diagram (quick mode): ω ∈ {sorted({c['omega'] for c in phase_crossings})}, α grid "
                  f"{alphas}, {nodes}-node rule. Crossings by linear interpolation between grid points; the error is "
                  "half a grid step (resolution), the quadrature error is not included.", "",
                  "| ω | α_c | ± | note | α_l | ± | note |", "|---|---|---|---|---|---|---|",
                  *[f"| {c['omega']} | {c['alpha_c']:.3f} | {c['alpha_c_error']:.3f} | {c['alpha_c_note']} | "
                    f"{c['alpha_l']:.3f} | {c['alpha_l_error']:.3f} | {c['alpha_l_note']} |" for c in phase_crossings]]
    if thresholds:
        lines += ["", "Thresholds refined on the split-line rule (api.threshold, refine both; statuses and the tensor-rule "
                  "values in thresholds.csv):", "", "| ω | α_c | ± | α_l | ± |", "|---|---|---|---|---|",
                  *[f"| {t['omega']} | {t['alpha_c']:.4f} | {t['alpha_c_error']:.4f} | {t['alpha_l']:.4f} | "
                    f"{t['alpha_l_error']:.4f} |" for t in thresholds],
                  "", f"α_c(ω) curve (api.alpha_c_curve_split_line, {len(curve)} values of ω; alpha_c_curve.csv):", "",
                  "| ω | α_c | ± | status |", "|---|---|---|---|",
                  *[f"| {c['omega']:.4f} | {c['alpha_c']:.4f} | {c['alpha_c_error']:.4f} | {c['status']} |"
                    for c in curve]]
    if validation:
        lines += ["", *validation["lines"]]
        headline["validation"] = validation["headline"]
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
    return headline
