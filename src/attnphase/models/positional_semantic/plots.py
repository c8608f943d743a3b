"""Figures of the model for a notebook or a report: the phase diagram and the order parameters along α.

Each function returns a matplotlib Figure (matplotlib is imported when one is drawn) and draws every value
with its verified error: an error band along a curve, error bars at points. `reproduce` draws its figures
with these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.results import PhaseCurve, SolveResult

__all__ = ["plot_phase_diagram", "plot_order_parameters"]

_THRESHOLDS = (("alpha_c", "α_c: equal training loss", "tab:blue"),
               ("alpha_l", "α_l: semantic ε_g = linear baseline", "tab:green"))


def _axes(ax, figsize):
    import matplotlib.pyplot as plt

    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def plot_phase_diagram(curve, ax=None):
    """α_c(ω) and α_l(ω) of a `PhaseCurve` (or its `rows()`) in the (α, ω) plane, each with its error band and bars;
    a value whose error does not meet the tolerance (status limited) is drawn as an open marker, and one without
    an error bound (infinite error) without a band. Below α_c
    the positional branch has the lower training loss, above it the semantic one."""
    rows = list(curve.rows()) if isinstance(curve, PhaseCurve) else _items(
        "curve", curve, Mapping, "a PhaseCurve or its rows() (a non-empty list)")
    fig, ax = _axes(ax, (5.5, 4))
    for name, label, color in _THRESHOLDS:
        points = [r for r in rows if r.get(f"{name}_status") in ("converged", "limited")
                  and np.isfinite(r.get(name, np.nan))]
        if not points:
            continue
        omega = np.array([r["omega"] for r in points])
        value = np.array([r[name] for r in points])
        # an unbounded error (a rung drift that does not slow down) gets no band: the band breaks there
        error = np.array([r[f"{name}_error"] for r in points], float)
        error[~np.isfinite(error)] = np.nan
        ax.fill_betweenx(omega, value - error, value + error, color=color, alpha=0.25, lw=0)
        # the band is often a pixel wide (errors of 1e-3 on an axis of 3): bars with caps show each error too
        ax.errorbar(value, omega, xerr=error, fmt="none", ecolor=color, elinewidth=0.8, capsize=2.5)
        ax.plot(value, omega, "-", color=color, lw=1, label=f"{label} (± error: band and bars)")
        limited = np.array([r[f"{name}_status"] == "limited" for r in points])
        ax.plot(value[~limited], omega[~limited], "o", color=color, ms=3)
        if limited.any():
            ax.plot(value[limited], omega[limited], "o", mfc="none", color=color, ms=5,
                    label=f"{name}: tolerance not met (limited)")
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("ω (positional weight of the teacher)")
    ax.set_title("positional (left of α_c) vs semantic (right) learning", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def plot_order_parameters(results, axes=None):
    """|m| (positional branch), |θ| (semantic branch) and ε_g of both branches against α, from `SolveResult`s
    at several α (one ω; a single SolveResult gives one α), each value with its error bar, and the linear
    baseline. axes: two matplotlib Axes (else a new figure)."""
    import matplotlib.pyplot as plt

    results = _items("results", [results] if isinstance(results, SolveResult) else results, SolveResult,
                     "a SolveResult or a non-empty sequence of them (`solve` at several α)")
    results = sorted(results, key=lambda r: r.branches[0].alpha if r.branches else np.inf)
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    else:
        fig = axes[0].figure
    for branch, order, color in (("positional", "m", "tab:blue"), ("semantic", "theta", "tab:orange")):
        found = [b for r in results for b in r.branches if b.branch == branch]
        if not found:
            continue
        alpha = [b.alpha for b in found]
        axes[0].errorbar(alpha, [abs(getattr(b, order)) for b in found], _bars(found, order), fmt="o-", color=color,
                         ms=3, capsize=2, label=f"|{'m' if order == 'm' else 'θ'}| ({branch})")
        axes[1].errorbar(alpha, [b.test_error for b in found], _bars(found, "test_error"), fmt="o-", color=color, ms=3,
                         capsize=2, label=f"ε_g ({branch})")
    axes[1].axhline(results[0].linear_baseline_test_error, color="gray", lw=1, label="linear baseline")
    axes[0].set_xlabel("α")
    axes[0].set_ylabel("overlap")
    axes[1].set_xlabel("α")
    axes[1].set_ylabel("test error ε_g")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _bars(solutions, name: str) -> np.ndarray:
    """The errors of `name` for error bars: NaN (no bar) where not verified or unbounded."""
    bars = np.array([b.errors.get(name, np.nan) for b in solutions], float)
    bars[~np.isfinite(bars)] = np.nan
    return bars


def _items(name: str, given, kind: type, allowed: str) -> list:
    """The items of `given` when it is a non-empty iterable of `kind`s, else a ParameterError naming `name` (before
    anything is drawn: None or a number would fail deep inside matplotlib or numpy, and nothing to draw would give
    empty axes, as `signal_recovery.plot_objective([])` refuses too)."""
    items = list(given) if isinstance(given, Iterable) and not isinstance(given, (str, Mapping)) else None
    if not items or not all(isinstance(item, kind) for item in items):
        raise ParameterError(name, given, allowed)
    return items
