"""Figures of the copy-heads model for notebooks and reports: the action's landscape at one P, the order
parameters against P (theory with its jumps, simulations on top), and P* against L with the fits it names.

Each function returns a matplotlib Figure (matplotlib is imported when one is drawn) and takes an optional
axes to draw into; `reproduce.copy_heads` draws its report's figures with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.homogeneous import softmax_stationary_points, solve_instance
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.parameters import DataSize, check_P_values
from attnphase.models.copy_heads.results import ScalingResult

__all__ = ["theory_curves", "global_line", "plot_landscape", "plot_order_parameters", "plot_scaling"]


def _axes(ax, figsize=(5.5, 4.2)):
    import matplotlib.pyplot as plt

    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def theory_curves(attention: str, L: int, V: int, P_values: Sequence[float], convention: Convention = DEFAULT) -> list[dict]:
    """Every stable minimum of the reduced action at each P (`solve`): rows {P, global, c_uniform, c_copy,
    loss_gibbs, loss_mean_predictor}."""
    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
    rows = []
    for P in check_P_values("P_values", P_values):
        sol = solve_instance(inst, P)
        for i, mn in enumerate(sol.minima):
            if mn.stable:
                rows.append({"P": float(P), "global": i == sol.global_index, "c_uniform": mn.c_uniform,
                             "c_copy": mn.c_copy, "loss_gibbs": mn.loss_gibbs, "loss_mean_predictor": mn.loss_mean_predictor})
    return rows


def global_line(rows: Sequence[dict], key: str) -> tuple[np.ndarray, np.ndarray]:
    """(P, value of `key`) of the global minimum along the rows of `theory_curves`, with a NaN wherever the global
    minimum changes branch: between two neighbouring P where it is not the stable minimum closest (in c) to the
    previous global one. A line drawn through them stops at first-order jumps and nowhere else."""
    by_P: dict = {}
    for r in rows:
        by_P.setdefault(r["P"], []).append(r)
    xs, ys, previous = [], [], None
    for P in sorted(by_P):
        minima = by_P[P]
        glob = next((r for r in minima if r["global"]), None)
        if glob is None:
            continue
        if previous is not None and len(minima) > 1:
            nearest = min(minima, key=lambda r: abs(r["c_copy"] - previous["c_copy"]))
            if nearest is not glob:
                xs.append(math.nan)
                ys.append(math.nan)
        xs.append(P)
        ys.append(glob[key])
        previous = glob
    return np.array(xs, float), np.array(ys, float)


def plot_landscape(attention: str, L: int, V: int, P: float, convention: Convention = DEFAULT, *, ax=None):
    """The reduced action at one P. Softmax: S against the previous-position weight a (relative to its lowest
    minimum), minima and maxima marked; linear: contours of S(t, c) with its minima (remainder at its minimum for
    remainder "entropy" is not drawn: the map convention's plane)."""
    from scipy.special import expit

    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
    P = DataSize.validated(P=P).P
    n_ = inst.n_of_P(P)
    fig, ax = _axes(ax)
    if attention == "softmax":
        minima, maxima = softmax_stationary_points(inst, n_)
        lo = min(minima) - 2.0
        hi = max(minima + maxima) + 2.0
        xs = np.linspace(lo, hi, 600)
        S = np.asarray(inst.reduced.action(xs, n_), float)
        base = min(float(inst.reduced.action(x, n_)) for x in minima)
        ax.plot(expit(xs), S - base, color="k", lw=1.2, label="S(a) − S(lowest minimum)")
        for points, marker, label in ((minima, "o", "minima"), (maxima, "^", "maxima (barriers)")):
            if points:
                ax.plot(expit(np.array(points)), [float(inst.reduced.action(x, n_)) - base for x in points], marker,
                        color="tab:red", label=label)
        ax.set_xscale("log")
        ax.set_xlabel("previous-position weight a (log scale)")
        ax.set_ylabel("action, units of the Bayesian temperature")
    else:
        sol = solve_instance(inst, P)
        stable = [mn for mn in sol.minima if mn.stable]
        extent = 1.5 * max([abs(mn.c_uniform) for mn in stable] + [abs(mn.c_copy) for mn in stable] + [0.5])
        t = np.linspace(-extent, extent, 161)
        c = np.linspace(-extent, extent, 161)
        T_, C_ = np.meshgrid(t, c, indexing="ij")
        if inst.entropy:
            raise NotImplementedError("plot_landscape draws the (t, c) plane of remainder 'map' only")
        S = np.asarray(inst.reduced.action(T_, C_, n_), float)
        levels = np.quantile(S, np.linspace(0.0, 0.6, 16))
        ax.contour(T_, C_, S, levels=np.unique(levels), cmap="viridis", linewidths=0.8)
        ax.plot([mn.c_uniform for mn in stable], [mn.c_copy for mn in stable], "o", color="tab:red", label="minima")
        ax.set_xlabel("uniform strength t")
        ax.set_ylabel("copy strength c")
    ax.set_title(f"{attention}, L={L}, V={V}, P={P:g}")
    ax.legend(fontsize=7)
    return fig


def plot_order_parameters(attention: str, L: int, V: int, P_values: Sequence[float], convention: Convention = DEFAULT, *,
                          theory: Sequence[dict] | None = None, simulation=None, label: str = "theory", color: str = "k",
                          ax=None):
    """Copy strength c against P: the global minimum of the reduced action as a line broken at first-order jumps
    (`global_line`: where it changes branch), the other stable minima as small labelled points,
    and, if given, a simulation (`SweepResult` or `SimulationResult`) on top. theory: rows of `theory_curves` (else
    computed over P_values). Returns the Figure."""
    rows = list(theory) if theory is not None else theory_curves(attention, L, V, P_values, convention)
    fig, ax = _axes(ax)
    x, y = global_line(rows, "c_copy")
    ax.plot(x, y, "-", color=color, label=f"{label}: global minimum")
    others = [r for r in rows if not r["global"]]
    if others:
        ax.plot([r["P"] for r in others], [r["c_copy"] for r in others], ".", color=color, ms=3,
                label=f"{label}: other (metastable) minima")
    if simulation is not None:
        _draw_simulation(ax, simulation)
    ax.set_xscale("log")
    ax.set_xlabel("P (target tokens)")
    ax.set_ylabel("copy strength c")
    ax.set_title(f"{attention}, L={L}, V={V}")
    ax.legend(fontsize=7, loc="best")
    return fig


def _draw_simulation(ax, simulation) -> None:
    """Points of a sweep (one per kept run) or of one simulation (one per chain) with their errors."""
    if hasattr(simulation, "rows"):
        rows = [r for r in simulation.rows() if r["kept"]] if hasattr(simulation, "c_copy_sem") else []
    else:
        rows = []
    if rows:
        for start, fill, color in (("uniform", "none", "tab:blue"), ("copy", None, "tab:red"), ("prior", None, "tab:orange")):
            mine = [r for r in rows if r["start"] == start]
            if mine:
                kw = {"mfc": fill} if fill else {}
                ax.errorbar([r["P"] for r in mine], [r["c_copy"] for r in mine], yerr=[r["c_copy_sem"] for r in mine],
                            fmt="o", color=color, ms=5, label=f"{simulation.algorithm} ({start} start)", **kw)
        return
    measured = simulation.comparison("c_copy")
    ax.errorbar([simulation.P_used], [measured.mean], yerr=[measured.sem], fmt="o", color="tab:red",
                label=f"{simulation.algorithm}, mean of {len(simulation.chains)} runs")


def plot_scaling(result, *, ax=None):
    """P* against the size a `ScalingResult` varies (L or V; log-log): the computed thresholds, and every line the
    legend names is drawn: each fitted law through the largest size, and for softmax over L the large-L form
    L ln²L/(4εσ²)·C(ln L). A fit's label brackets the band its verdict uses (`law_fit`: the 95% band widened by the
    drift of the local slope), which the legend's title says. Returns the Figure."""
    from attnphase.models.copy_heads.scaling_laws import softmax_large_L_correction

    if not isinstance(result, ScalingResult):
        raise ParameterError("result", result, "a ScalingResult (from scaling or scaling_in_V)")
    fig, ax = _axes(ax, figsize=(5.5, 4.2))
    fitted = False
    over_L = result.variable == "L"
    size = (lambda p: p.L) if over_L else (lambda p: p.V)
    name = "L" if over_L else "V"
    log_power = 2 if (result.attention == "softmax" and over_L) else 0
    for key, marker, color, what in (("P_star", "o", "tab:blue", "P*"), ("P_crossover", "s", "tab:orange", "crossover")):
        points = [(size(p), getattr(p, key, None)) for p in result.points]
        points = [(x, y) for x, y in points if y is not None and math.isfinite(y)]
        if not points:
            continue
        xs, ys = np.array([x for x, _ in points], float), np.array([y for _, y in points])
        ax.loglog(xs, ys, marker, color=color, label=f"{result.attention} {what}")
        fit = result.fit.get(key)
        if fit is not None and fit.exponent is not None and math.isfinite(fit.exponent):
            power = log_power if key == "P_star" else 0
            line = ys[-1] * (xs / xs[-1]) ** fit.exponent * (np.log(xs) / np.log(xs[-1])) ** power
            law = f"{name}^{fit.exponent:.3f}" + (" ln²L" if power else "")
            ax.loglog(xs, line, "-", color=color, lw=0.8,
                      label=f"{what} fit {law} [{fit.exponent_low:.3f}, {fit.exponent_high:.3f}]")
            fitted = True
    if log_power and result.extrapolation is not None:
        V = result.fixed["V"]
        Ls = np.array([p.L for p in result.points if math.isfinite(p.P_star)], float)
        R = result.extrapolation.R_inf_predicted
        ax.loglog(Ls, [R * L_ * math.log(L_) ** 2 * softmax_large_L_correction(int(L_), V) for L_ in Ls], "--",
                  color="k", lw=0.8, label="large-L form L ln²L/(4εσ²)·C(ln L)")
    fixed = ", ".join(f"{k} = {v}" for k, v in result.fixed.items())
    ax.set_xlabel(f"{name} ({fixed})")
    ax.set_ylabel("P (target tokens)")
    _label_sizes(ax, [size(p) for p in result.points])
    title = "[ ]: 95% band of the exponent, widened by the drift of the local slope" if fitted else None
    ax.legend(fontsize=7, loc="best", title=title, title_fontsize=6)
    return fig


_MAX_SIZE_LABELS = 9


def _size_ticks(sizes: Sequence[int], max_labels: int = _MAX_SIZE_LABELS) -> list[int]:
    """The sizes that label a scan's log axis: every size when there are at most max_labels, else every k-th
    (k the smallest stride that leaves at most max_labels), always ending at the largest size. A scan within one
    decade (V = 4…64) gets its own sizes as labels, where decade labels would leave one (10¹)."""
    sizes = sorted({int(x) for x in sizes})
    stride = max(1, math.ceil(len(sizes) / max_labels))
    return sizes[::-1][::stride][::-1]


def _label_sizes(ax, sizes: Sequence[int]) -> None:
    """Label the x axis of a log-log scan at `_size_ticks(sizes)`, written as integers; no minor ticks or labels
    (minor labels collide on short ranges)."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter, NullLocator

    ticks = _size_ticks(sizes)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([str(t) for t in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
