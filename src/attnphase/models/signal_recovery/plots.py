"""Figures of the signal-recovery model for notebooks and reports: each helper returns a matplotlib Figure.

* `plot_objective(curves)` — J(ρ) and the drift (1 − ρ²)J′(ρ) of one or more `Curve`s (large-L curves as
  lines, finite-L reductions as points with two standard errors);
* `plot_trajectories(simulation, ode=...)` — |ρ| against t = Σ η_k: the trials' mean with the band
  between their 10% and 90% quantiles, and the ODE from the same starts (retraction-corrected, plain,
  or a `PredictedTrajectories` computed beforehand).

|ρ| is bounded by 1, so the spread over trials is drawn as quantiles (which stay inside [0, 1]), not as
mean ± standard deviation (which does not). matplotlib is imported when a helper is called; pass `ax` /
`axes` to draw into an existing figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.results import Curve, PredictedTrajectories, SimulationResult

__all__ = ["plot_objective", "plot_trajectories", "QUANTILE_BAND"]

#: The quantiles of |ρ| over trials between which `plot_trajectories` shades the spread.
QUANTILE_BAND = (0.1, 0.9)


def plot_objective(curves: Curve | Sequence[Curve], labels: Sequence[str] | None = None, *, axes=None):
    """J(ρ) (top) and the drift (1 − ρ²)J′(ρ) (bottom) of each curve; returns the Figure.

    curves: one `Curve` or several (e.g. `api.curve(params, rhos)` for several parameter sets), with
    `labels` for the legend (default: the method and θ_d). Finite-L curves are drawn as points with
    error bars of two standard errors; a finite-L curve that directly follows a large-L one takes its
    colour (pass the two evaluations of one parameter set as a pair). axes: two matplotlib axes to draw
    into (default: a new figure).
    """
    import matplotlib.pyplot as plt

    curves = [curves] if isinstance(curves, Curve) else list(curves) if isinstance(curves, Sequence) else None
    if not curves or not all(isinstance(c, Curve) for c in curves):
        raise ParameterError("curves", curves, "a Curve or a non-empty list of Curves (curve(params, rhos))")
    labels = list(labels) if labels is not None else [f"{c.method}, θ_d = {c.theta_d:.4g}" for c in curves]
    if len(labels) != len(curves):
        raise ParameterError("labels", labels, f"one label per curve ({len(curves)})")
    if axes is None:
        fig, axes = plt.subplots(2, 1, figsize=(6, 6.5), sharex=True)
    else:
        fig = axes[0].figure
    top, bottom = axes
    previous = None  # (method, colour) of the curve drawn last
    for c, label in zip(curves, labels):
        if c.method == "finite-L":
            colour = previous[1] if previous is not None and previous[0] == "large-L" else None
            line = top.errorbar(c.rho, c.J, yerr=2 * c.J_error, fmt="o", ms=4, color=colour, label=label)
            colour = line[0].get_color()
            bottom.errorbar(c.rho, c.drift, yerr=2 * c.drift_error, fmt="o", ms=4, color=colour, label=label)
        else:
            line, = top.plot(c.rho, c.J, label=label)
            colour = line.get_color()
            bottom.plot(c.rho, c.drift, color=colour, label=label)
        previous = (c.method, colour)
    top.set_ylabel("J(ρ) = E‖f_q‖²")
    bottom.set_ylabel("drift (1 − ρ²) J′(ρ)")
    bottom.axhline(0.0, color="k", lw=0.5)
    bottom.set_xlabel("ρ = ⟨q, ξ⟩")
    top.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _mean_and_band(values: np.ndarray):
    low, high = np.quantile(values, QUANTILE_BAND, axis=1)
    return values.mean(axis=1), low, high


def plot_trajectories(simulation: SimulationResult, ode="retraction-corrected", *, ax=None, title: str | None = None):
    """|ρ| against t = Σ η_k for the simulation's trials and the ODE from the same starts; returns the Figure.

    ode: "retraction-corrected" (default), "plain", "both", None (no theory), or `PredictedTrajectories`
    (one or a list; e.g. `api.predicted_trajectories(simulation, drift=...)` with a finite-L drift).
    Each is drawn as the mean over trials with the band between the 10% and 90% quantiles of |ρ|.
    """
    import matplotlib.pyplot as plt

    from attnphase.models.signal_recovery.schedules import predicted_trajectories

    if not isinstance(simulation, SimulationResult):
        raise ParameterError("simulation", simulation, "a SimulationResult (simulate(...))")

    if isinstance(ode, PredictedTrajectories):
        theories = [ode]
    elif ode is None:
        theories = []
    elif isinstance(ode, str):
        kinds = {"retraction-corrected": [True], "plain": [False], "both": [True, False]}
        if ode not in kinds:
            raise ValueError(f"plot_trajectories: ode={ode!r}, expected one of {sorted(kinds)}, None or "
                             "PredictedTrajectories")
        theories = [predicted_trajectories(simulation, retraction=r) for r in kinds[ode]]
    else:
        theories = list(ode)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4))
    else:
        fig = ax.figure
    run = simulation.trajectory
    curves = [("SGA", run.times, np.abs(run.rho))] + [(f"ODE, {p.kind}", p.times, np.abs(p.rho)) for p in theories]
    for label, times, values in curves:
        mean, low, high = _mean_and_band(values)
        line, = ax.plot(times, mean, label=f"{label}: mean")
        ax.fill_between(times, low, high, color=line.get_color(), alpha=0.2, lw=0)
    p = simulation.params
    power = "" if simulation.gamma == 1 else f"^{simulation.gamma:g}"
    ax.set_title(title or (f"d = {p.d}, L = {p.L}, R = {p.R}, θ_d = {p.theta_d:.3g}, model {p.sign_model}; "
                           f"η_k = {simulation.eta0:.3g}/(k + {simulation.k0:.3g}){power}"), fontsize=8)
    ax.set_xlabel("t = Σ η_k")
    ax.set_ylabel(f"|ρ| (mean; band: {QUANTILE_BAND[0]:.0%}–{QUANTILE_BAND[1]:.0%} of trials)")
    ax.set_ylim(0.0, 1.02)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
