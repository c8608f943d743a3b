"""Reproduction of the signal-recovery claims: landscape, ODE against SGA, sweep, headline run.

`run(out_dir, quick, device)` writes report.md (through `report.Report`, figures embedded) with PNG
figures and the CSV data behind every figure and table:

* headline.csv — the 30-trial headline run (10 in quick mode) under the default schedule (planned by
  `choose_schedule` for its 5000 steps), against the retraction-corrected ODE from the trials' starts;
* landscape.png / .csv — J_∞(ρ) and the drift (1 − ρ²)J′ for sign models A, B, C under both θ_d
  scalings at the headline size, with exact finite-L reduction points (`plot_objective`);
  landscape_gap.csv — the largest relative gap between the two;
* trajectories.png / .csv — SGA |ρ| against the ODE from the same starts, retraction-corrected and plain
  (`plot_trajectories`; bands: 10%–90% quantiles of the trials, inside [0, 1]);
* sweep.png / .csv — final |ρ| and noise-token mass, theory against simulation, over nuisance ratio, θ,
  d, sign model and scaling; recovery.csv — where recovery holds, per scaling and sign model;
* checkpoint.json — every finished sweep point and the headline run, keyed by their configuration
  (`resume.Checkpoint`), and theory/, simulations/ — the landscape's curves and the trajectory runs
  (`resume.computed_once`): an interrupted run resumes where it stopped, and a rerun by the same code redraws
  the report from them; delete them to recompute.

Run time on 2 cores: quick 65–75 s when idle (10 headline trials, a 16-point sweep at d = 64); full about 1 h at
load 5–8 (30 headline trials, 162 sweep points up to d = 1000, L = 10 500); a GPU shortens both. SGA runs use
the exact O(L + d) projected sampler (the law of dense tokens; see
`attnphase.models.signal_recovery.network.projected_pooling_gradient` and its test against dense tokens). The
sweep's figure, tables and counts are drawn in `signal_recovery_sweep`.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from attnphase import progress
from attnphase.api import signal_recovery as api
from attnphase.models.signal_recovery.escape import AGREEMENT_SIGMAS, agreement
from attnphase.report import Report, value_with_error, write_csv
from attnphase.reproduce.read_back import computed_once, note_read_back
from attnphase.reproduce.signal_recovery_sweep import sweep_section
from attnphase.resume import Checkpoint

__all__ = ["RunConfig", "HEADLINE", "QUICK_HEADLINE", "run_headline", "sweep_configs", "run_sweep", "run"]


@dataclass(frozen=True)
class RunConfig:
    """One SGA configuration: model parameters, budget, and the schedule η_k = η₀/(k + k₀)^γ (None: planned
    for `steps` by `choose_schedule`, as `simulate` does by default)."""

    d: int
    L: int
    R: int
    theta: float
    theta_scaling: str = "sqrt-d"
    sign_model: str = "A"
    trials: int = 30
    steps: int = 5000
    eta0: float | None = None
    k0: float | None = None
    gamma: float | None = None
    batch: int = 1
    seed: int = 0


#: The paper's headline: 30 trials, θ = 0.25, R = 500 informative and 10 000 nuisance tokens, d = 1000,
#: θ_d = θ√d, 5000 steps under the default (planned) schedule.
HEADLINE = RunConfig(d=1000, L=10_500, R=500, theta=0.25)
QUICK_HEADLINE = replace(HEADLINE, trials=10)


def run_headline(config: RunConfig = HEADLINE, device: str = "auto", progress: bool = False) -> api.SimulationResult:
    """The headline SGA run of `config` (projected sampler)."""
    return api.simulate(
        config.d, config.L, config.R, config.theta, config.trials, config.steps, config.theta_scaling,
        sign_model=config.sign_model, eta0=config.eta0, k0=config.k0, gamma=config.gamma, batch=config.batch,
        seed=config.seed, device=device, record_every=max(1, config.steps // 50), progress=progress,
    )


def _headline(report: Report, quick: bool, device: str, checkpoint: Checkpoint) -> dict:
    config = QUICK_HEADLINE if quick else HEADLINE
    key = _checkpoint_key("headline", config)
    numbers = checkpoint.get(key)
    params = api.make_parameters(config.d, config.L, config.R, config.theta, config.theta_scaling,
                                 sign_model=config.sign_model)
    if numbers is None:
        note_read_back()
        result = run_headline(config, device)
        numbers = {"final_rho": result.final_rho.tolist(), "alignment_mean": result.alignment_mean,
                   "alignment_error": result.alignment_error, "alignment_std": result.alignment_std,
                   "nuisance_mass_mean": result.nuisance_mass_mean, "nuisance_mass_error": result.nuisance_mass_error,
                   "eta0": result.eta0, "k0": result.k0,
                   "gamma": result.gamma, "t_final": result.t_final,
                   "predicted_alignment": result.predicted_alignment,
                   "predicted_alignment_error": result.predicted_alignment_error, "seconds": result.seconds,
                   "nuisance_mass_theory_at_xi": float(api.curve(params, [1.0]).nuisance_mass[0])}
        checkpoint.put(key, numbers)
    final_rho = np.asarray(numbers["final_rho"])
    # The mass where the trials ended (each trial's final ρ, averaged as the SGA mean is): at ρ = 1 alone it is the
    # limit, below the runs' mass by what the last 0.3 % of alignment leaves (0.00732 against 0.00750 at the default).
    # Its error is the large-L form's error bound (`large_L_accuracy`) averaged alike: it bounds the average's error.
    at_trials = api.curve(params, final_rho)
    at_xi = api.curve(params, [1.0])
    numbers.update(config=asdict(config), alignment_min=float(np.abs(final_rho).min()),
                   positive_fraction=float(np.mean(final_rho > 0)),
                   nuisance_mass_theory_at_trials=float(np.mean(at_trials.nuisance_mass)),
                   nuisance_mass_theory_at_trials_error=float(np.mean(at_trials.nuisance_mass_error)),
                   nuisance_mass_theory_at_xi_error=float(at_xi.nuisance_mass_error[0]))
    for name, (mean, error, theory, theory_error) in {
            "prediction": ("alignment_mean", "alignment_error", "predicted_alignment", "predicted_alignment_error"),
            "nuisance_mass": ("nuisance_mass_mean", "nuisance_mass_error", "nuisance_mass_theory_at_trials",
                              "nuisance_mass_theory_at_trials_error")}.items():
        z, agrees = agreement(numbers[mean], _finite_or_none(numbers[error]), _finite_or_none(numbers[theory]),
                              _finite_or_none(numbers[theory_error]))
        numbers[f"{name}_z"], numbers[f"{name}_agrees"] = z, agrees
    report.heading("Headline")
    report.paragraph(
        f"{config.trials} trials, d = {config.d}, L = {config.L}, R = {config.R}, θ = {config.theta} "
        f"(θ_d = θ√d = {params.theta_d:.4g}), sign model {config.sign_model}, {config.steps} steps under the default "
        f"schedule, planned for this step count: η_k = {numbers['eta0']:.4g}/(k + {numbers['k0']:.4g}) "
        f"(t = Σ η_k = {numbers['t_final']:.4g}). Prediction: the retraction-corrected ODE from each trial's own ρ₀ "
        "under the same schedule, dρ/dt = (1 − ρ²)J′(ρ) − ½η(t)ρN(ρ), with N(ρ) = E‖G_⊥‖² the tangent noise: the "
        "mean squared norm of the stochastic gradient's part tangent to the unit sphere of q, which a finite step "
        "turns into a loss of alignment when q is renormalised; its error is that of N's estimate (from a pilot of "
        "sampled gradients at five alignments) only. The noise-token mass's theory is the "
        "large-L closed form, its ± the form's error bound (`large_L_accuracy`: the O(1/L) terms it leaves out). "
        "z = (SGA − theory)/√(SGA error² + theory error²); the theory agrees with the run where |z| ≤ "
        f"{AGREEMENT_SIGMAS:g}, the rule of the sweep below.")

    def verdict(agrees) -> str:
        # no "|" in a cell: it would split the Markdown table's column
        limit = f"{AGREEMENT_SIGMAS:g}"
        if agrees is None:
            return "n/a"
        return f"agrees (−{limit} ≤ z ≤ {limit})" if agrees else f"disagrees (z beyond ±{limit})"

    def measured(mean, error) -> str:
        if _finite_or_none(numbers[mean]) is None:
            return "n/a"
        error = _finite_or_none(numbers[error])
        return value_with_error(numbers[mean], math.inf if error is None else error, min_decimals=4)

    def z_cell(z) -> str:
        return "n/a" if _finite_or_none(z) is None else f"{z:.2f}"

    report.table([
        {"quantity": "mean final abs ρ", "SGA (± standard error)": measured("alignment_mean", "alignment_error"),
         "theory (± its error)": measured("predicted_alignment", "predicted_alignment_error"),
         "z": z_cell(numbers["prediction_z"]), "verdict": verdict(numbers["prediction_agrees"]),
         "theory's note": "retraction-corrected ODE from each trial's ρ₀"},
        {"quantity": "noise-token attention mass",
         "SGA (± standard error)": measured("nuisance_mass_mean", "nuisance_mass_error"),
         "theory (± its error)": measured("nuisance_mass_theory_at_trials", "nuisance_mass_theory_at_trials_error"),
         "z": z_cell(numbers["nuisance_mass_z"]), "verdict": verdict(numbers["nuisance_mass_agrees"]),
         "theory's note": "large-L, at each trial's final ρ, averaged"},
        {"quantity": "noise-token attention mass at +ξ (the limit)", "SGA (± standard error)": "",
         "theory (± its error)": measured("nuisance_mass_theory_at_xi", "nuisance_mass_theory_at_xi_error"),
         "z": "", "verdict": "", "theory's note": "large-L, at ρ = 1"},
        {"quantity": "smallest final abs ρ", "SGA (± standard error)": f"{numbers['alignment_min']:.6f}",
         "theory (± its error)": "", "z": "", "verdict": "", "theory's note": ""},
        {"quantity": "fraction of trials at +ξ", "SGA (± standard error)": f"{numbers['positive_fraction']:g}",
         "theory (± its error)": "", "z": "", "verdict": "", "theory's note": ""},
    ])
    write_csv(report.out_dir / "headline.csv",
              [{"trial": i, "final_rho": float(r), "abs_rho": abs(float(r))} for i, r in enumerate(final_rho)])
    report.paragraph("Every trial's final ρ: [`headline.csv`](headline.csv).")
    if not quick:
        # Direct scaling (θ_d = θ) at the headline size is far too slow to simulate here (≈ 3 × 10⁵ steps):
        # what the retraction-corrected ODE predicts for the schedule aiming at |ρ| = 0.99.
        direct = api.make_parameters(config.d, config.L, config.R, config.theta, "direct", sign_model=config.sign_model)
        plan = api.choose_schedule(direct, deficit=0.005, max_steps=2_000_000)
        mass = float(api.curve(direct, [1.0]).nuisance_mass[0])
        numbers["direct_scaling_plan"] = {"eta0": plan.eta0, "k0": plan.k0, "steps": plan.steps,
                                          "t_final": plan.t_final, "predicted_final": plan.predicted_final,
                                          "nuisance_mass_at_xi": mass}
        report.paragraph(
            f"Direct scaling (θ_d = θ = {config.theta}) at the same size is not simulated here: "
            f"`choose_schedule(deficit=0.005)` asks for η_k = {plan.eta0:.4g}/(k + {plan.k0:.4g}), {plan.steps} steps "
            f"(t = {plan.t_final:.1f}), for which the retraction-corrected ODE predicts |ρ| = {plan.predicted_final:.4f}; "
            f"the noise-token mass at ρ = 1 is {mass:.3f} (it does not vanish: βθ_d stays {config.theta}).")
    return numbers


def _finite_or_none(value) -> float | None:
    """A stored number, None where missing or not finite (a checkpoint reads a missing number back as NaN)."""
    return None if value is None or not math.isfinite(value) else float(value)


#: Finite-L samples per landscape point, and the trajectories' trials and steps (quick: True, full: False).
LANDSCAPE_SAMPLES = {True: 64, False: 512}
TRAJECTORY_TRIALS_AND_STEPS = {True: (16, 1200), False: (30, 3000)}

#: The alignments of the landscape's large-L lines and of its exact finite-L points.
LANDSCAPE_RHOS = np.linspace(-1, 1, 201)
LANDSCAPE_CHECK_RHOS = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])


def _landscape_curves(scaling: str, sign_model: str, samples: int) -> tuple:
    """(large-L curve on LANDSCAPE_RHOS, exact finite-L reduction on LANDSCAPE_CHECK_RHOS, large-L curve there) at
    the headline size."""
    p = api.make_parameters(HEADLINE.d, HEADLINE.L, HEADLINE.R, HEADLINE.theta, scaling, sign_model=sign_model)
    return (api.curve(p, LANDSCAPE_RHOS), api.curve(p, LANDSCAPE_CHECK_RHOS, finite=True, samples=samples, seed=1),
            api.curve(p, LANDSCAPE_CHECK_RHOS))


def _landscape(report: Report, quick: bool) -> dict:
    import matplotlib.pyplot as plt

    samples = LANDSCAPE_SAMPLES[quick]
    rows, gaps, limited = [], [], []
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
    with progress.task("signal-recovery landscape", total=6) as bar:
        for col, scaling in enumerate(("direct", "sqrt-d")):
            curves, labels = [], []
            for m in ("A", "B", "C"):
                large, exact, large_at_checks = computed_once(
                    report.out_dir / "theory" / f"landscape_{scaling}_{m}_{samples}samples.result",
                    lambda scaling=scaling, m=m: _landscape_curves(scaling, m, samples))
                gap = np.abs(large_at_checks.J - exact.J) / exact.J
                worst = int(np.argmax(gap))
                gaps.append({"theta_scaling": scaling, "sign_model": m, "max_relative_gap": float(gap[worst]),
                             "at_rho": float(LANDSCAPE_CHECK_RHOS[worst]),
                             "standard_error_there": float(exact.J_error[worst] / exact.J[worst]),
                             "finite_L_status": exact.status.value})
                limited += [_limited_curve(scaling, m, c) for c in (large, exact) if c.status.value != "converged"]
                curves += [large, exact]
                labels += [f"model {m}, large L", f"model {m}, exact finite L (±2 s.e.)"]
                rows += [{"theta_scaling": scaling, "sign_model": m, "method": c.method, **row}
                         for c in (large, exact) for row in c.rows()]
                bar.advance(f"{scaling}, model {m}")
            api.plot_objective(curves, labels, axes=axes[:, col])
            axes[0, col].set_title(f"θ_d {scaling}: d = {HEADLINE.d}, L = {HEADLINE.L}, R = {HEADLINE.R}, "
                                   f"θ = {HEADLINE.theta}", fontsize=9)
    report.heading("Landscape")
    report.figure(fig, "landscape", "J(ρ) and the drift (1 − ρ²)J′(ρ) at the headline size for sign models A, B, C: "
                  "large-L closed form (lines) and the exact finite-L reduction (points, two standard errors; a value "
                  "a curve could not estimate is not drawn, n/a in the data, and listed below).", rows)
    if limited:
        report.paragraph("Curves whose status is not converged (the values they could not estimate are missing from "
                         "the figure and empty in landscape.csv):\n" + "\n".join(f"* {line}" for line in limited))
    else:
        report.paragraph("Every curve of the figure converged: no value is missing.")
    report.paragraph("Largest relative gap |J_∞ − J_exact|/J_exact over ρ ∈ {−1, −½, 0, ½, 1} (with the reduction's "
                     "relative standard error at that ρ):")
    report.table(gaps, "landscape_gap.csv")
    return {"max_relative_gap_large_L_vs_finite": {f"{g['theta_scaling']} {g['sign_model']}": g["max_relative_gap"]
                                                   for g in gaps}}


def _limited_curve(scaling: str, sign_model: str, curve) -> str:
    """One line of the landscape's list of curves that are not converged: which curve, its status, the alignments
    where a value is missing (NaN) and the curve's own message (why)."""
    missing = []
    for name, label in (("J", "J"), ("dJ", "J′"), ("drift", "drift")):
        values = np.asarray(getattr(curve, name), float)
        where = ", ".join(f"{r:g}" for r, v in zip(curve.rho, values) if not np.isfinite(v))
        if where:
            missing.append(f"{label} at ρ = {where}")
    what = "; ".join(missing) if missing else "no value missing"
    return (f"θ_d {scaling}, model {sign_model}, {curve.method}: status {curve.status.value} ({what}): "
            f"{curve.message}")


def _trajectory_run(cfg: RunConfig, device: str) -> tuple:
    """(the SGA run of `cfg`, the retraction-corrected ODE from its starts, the plain ODE from them)."""
    sim = run_headline(cfg, device)
    return sim, api.predicted_trajectories(sim), api.predicted_trajectories(sim, retraction=False)


def _trajectories(report: Report, quick: bool, device: str) -> dict:
    import matplotlib.pyplot as plt

    trials, steps = TRAJECTORY_TRIALS_AND_STEPS[quick]
    configs = [RunConfig(d=64, L=1050, R=50, theta=0.25, sign_model=m, trials=trials, steps=steps) for m in ("A", "B")]
    rows, table = [], []
    fig, axes = plt.subplots(1, len(configs), figsize=(11, 4))
    with progress.task("signal-recovery trajectories", total=len(configs)) as bar:
        for ax, cfg in zip(axes, configs):
            sim, corrected, plain = computed_once(
                report.out_dir / "simulations" / f"trajectories_{cfg.sign_model}_d{cfg.d}_L{cfg.L}_R{cfg.R}_"
                                                 f"{cfg.trials}trials_{cfg.steps}steps_seed{cfg.seed}.result",
                lambda cfg=cfg: _trajectory_run(cfg, device))
            api.plot_trajectories(sim, [corrected, plain], ax=ax)
            sga, ode_c, ode_p = (np.abs(x) for x in (sim.trajectory.rho, corrected.rho, plain.rho))
            error = sga.std(axis=1, ddof=1) / np.sqrt(cfg.trials)
            for j, t in enumerate(sim.trajectory.times):
                rows.append({"sign_model": cfg.sign_model, "step": int(sim.trajectory.steps[j]), "t": float(t),
                             "sga_mean": sga[j].mean(), "sga_standard_error": error[j],
                             "sga_q10": np.quantile(sga[j], 0.1), "sga_q90": np.quantile(sga[j], 0.9),
                             "ode_corrected_mean": ode_c[j].mean(), "ode_plain_mean": ode_p[j].mean()})
            z = np.abs(sga.mean(axis=1) - ode_c.mean(axis=1))[1:] / error[1:]
            table.append({"sign model": cfg.sign_model, "steps": cfg.steps, "η₀": sim.eta0, "k₀": sim.k0,
                          "t final": sim.t_final, "SGA final": sga[-1].mean(), "± (s.e.)": error[-1],
                          "ODE corrected": ode_c[-1].mean(), "ODE plain": ode_p[-1].mean(),
                          "largest gap/s.e. (corrected)": float(z.max())})
            bar.advance(f"model {cfg.sign_model}")
    report.heading("ODE against SGA")
    report.figure(fig, "trajectories", f"|ρ| against t = Σ η_k, d = 64, L = 1050, R = 50, θ = 0.25 (θ√d), "
                  f"{configs[0].trials} trials under the default schedule: SGA and the ODE from the same starts, "
                  "retraction-corrected and plain; lines are means, bands the 10%–90% quantiles of the trials.", rows)
    report.table(table)
    return {row["sign model"]: row for row in table}


def sweep_configs(quick: bool) -> list[RunConfig]:
    """The sweep's configurations: θ_d scaling × sign model × d × θ × nuisance ratio."""
    R = 50 if quick else 500
    ratios = (1, 20) if quick else (1, 5, 20)
    thetas = (0.25, 1.0) if quick else (0.25, 0.5, 1.0)
    dims = (64,) if quick else (64, 256, 1000)
    models = ("A", "B") if quick else ("A", "B", "C")
    configs = []
    for scaling in ("sqrt-d", "direct"):
        for m in models:
            for d in dims:
                for theta in thetas:
                    for ratio in ratios:
                        configs.append(RunConfig(d=d, L=R * (1 + ratio), R=R, theta=theta, theta_scaling=scaling,
                                                 sign_model=m, trials=8, steps=400 if quick else 2000))
    return configs


def _quick_mode_text() -> str:
    """What the quick report reduces, from the sizes themselves (keyed by quick: True, full: False)."""
    def sweep(quick: bool) -> str:
        configs = sweep_configs(quick)

        def values(of) -> str:
            return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in sorted({of(c) for c in configs}))
        return (f"d = {values(lambda c: c.d)}, R = {values(lambda c: c.R)}, nuisance ratios "
                f"{values(lambda c: c.L // c.R - 1)}, θ = {values(lambda c: c.theta)}, sign models "
                f"{values(lambda c: c.sign_model)}, {configs[0].trials} trials × {configs[0].steps} steps a point")
    (quick_trials, quick_steps), (full_trials, full_steps) = (TRAJECTORY_TRIALS_AND_STEPS[True],
                                                              TRAJECTORY_TRIALS_AND_STEPS[False])
    return ("Quick mode (the default of `attnphase reproduce`; `--full` runs the full sizes, about an hour on 2 cores): "
            f"{QUICK_HEADLINE.trials} headline trials instead of {HEADLINE.trials}; {LANDSCAPE_SAMPLES[True]} finite-L "
            f"samples per landscape point instead of {LANDSCAPE_SAMPLES[False]}; trajectories of {quick_trials} trials "
            f"× {quick_steps} steps instead of {full_trials} × {full_steps}; the sweep at {sweep(True)} (full: "
            f"{sweep(False)}).")


def _checkpoint_key(kind: str, cfg: RunConfig) -> str:
    return kind + " " + " ".join(f"{k}={v!r}" for k, v in asdict(cfg).items())


def run_sweep(checkpoint: Checkpoint, quick: bool, device: str) -> list[dict]:
    """Every sweep point, from `checkpoint` when already computed, else computed and stored there; the rows."""
    rows = []
    configs = sweep_configs(quick)
    with progress.task("signal-recovery sweep", total=len(configs)) as bar:
        for cfg in configs:
            key = _checkpoint_key("sweep", cfg)
            point = checkpoint.get(key)
            if point is None:
                note_read_back()
                checkpoint.put(key, api.sweep_point(cfg.d, cfg.L, cfg.R, cfg.theta, cfg.theta_scaling, 1.0, 1.0,
                                                    cfg.sign_model, cfg.trials, cfg.steps, cfg.seed, device))
                point = checkpoint.get(key)  # as a resumed run reads it (a missing number as NaN, never None)
            rows.append({"theta_scaling": cfg.theta_scaling, "sign_model": cfg.sign_model, "d": cfg.d, "L": cfg.L,
                         "R": cfg.R, "nuisance_ratio": (cfg.L - cfg.R) / cfg.R, "theta": cfg.theta, **point})
            bar.advance(f"{cfg.theta_scaling} {cfg.sign_model} d={cfg.d} theta={cfg.theta} L={cfg.L}")
    return rows


def run(out_dir: Path, quick: bool, device: str = "auto") -> dict:
    """Write the report directory; return the headline numbers."""
    start = time.perf_counter()
    report = Report(Path(out_dir), "Signal recovery by a learned softmax-attention query" + (" (quick)" if quick else ""))
    checkpoint = Checkpoint(report.out_dir / "checkpoint.json")
    report.paragraph(
        "Conventions: scores β⟨q, x_i⟩ with β = 1, σ = 1; x_i = θ_d s_i ξ + z_i on the R informative tokens; "
        "θ_d = θ (direct) or θ√d (sqrt-d); steps η_k = η₀/(k + k₀)^γ; t = Σ η_k. SGA uses the exact projected "
        "sampler (2L + 2d Gaussian numbers per sequence, the law of dense tokens). Spreads over trials are shown "
        "as 10%–90% quantiles (|ρ| ≤ 1); ± is a standard error of a mean over independent trials.")
    if quick:
        report.paragraph(_quick_mode_text())
    headline = _headline(report, quick, device, checkpoint)
    landscape = _landscape(report, quick)
    trajectories = _trajectories(report, quick, device)
    sweep = run_sweep(checkpoint, quick, device)
    sweep_section(report, sweep)
    seconds = time.perf_counter() - start
    report.paragraph(f"Total time {seconds:.0f} s.")
    report.write()
    return {"headline_alignment_mean": headline["alignment_mean"], "headline_alignment_error": headline["alignment_error"],
            "headline_predicted_alignment": headline["predicted_alignment"],
            "headline_predicted_alignment_error": headline["predicted_alignment_error"],
            "headline": {k: v for k, v in headline.items() if k != "final_rho"}, **landscape,
            "trajectories": trajectories, "sweep_points": len(sweep), "seconds": seconds}
