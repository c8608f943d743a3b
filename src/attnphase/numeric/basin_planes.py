"""Integrals over planes of a function of a GLOBAL minimiser: the count split of the split-line rules.

`plane_integrals` is the building block of `CountSplit` (numeric.split_line, where the method and its measured
accuracy are described): for each plane (line axis, count axis) through given outer points, the count axis is
integrated by adaptive Gauss-Kronrod against the normal density, cut where the number of basin switches detected on
the line (numeric.basin_lines) changes, and every Kronrod node is a whole split line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnphase.numeric.basin_lines import (KRONROD_W, KRONROD_X, MAX_ROUNDS, OUTER_CUTS, PROBE_HALF_WIDTH,
                                          LineIntegrals, detect_switches, halve_open_panels, kronrod_estimates,
                                          kronrod_nodes, line_integrals, panels_cut_at)
from attnphase.params import check_int, check_real

__all__ = ["CountSplit", "plane_integrals"]


@dataclass(frozen=True)
class CountSplit:
    """Integrate one more OUTER coordinate adaptively, cut where the number of switches on a line changes.

    Where the switching set has bounded pieces inside the plane (line axis, `axis`) — segments with
    cusp ends, closed curves — the number of basin switches on a line changes along `axis` (a pair of
    switches is born or dies where a line touches such a piece), and the line integral has a
    square-root point or a kink there, across which Gauss-Hermite in `axis` converges only
    algebraically. The coordinate `axis` is then integrated by adaptive Gauss-Kronrod (7, 15) against
    the normal density on [−T, T], cut where the switch count detected on the line (numeric.basin_lines,
    steps 1-2) differs between neighbouring of `probe_nodes` uniform probes on [−6, 6]; each such
    change is located by `bisections` halvings on that count; panels are halved until their
    |Kronrod − Gauss| ≤ `panel_tol` (absolute, per unit weight of the remaining coordinates); 30
    bisections place a cut to 12/47·2⁻³⁰ ≈ 2.4e-10. Every Kronrod node is a whole split line: at the model's ω = 0
    state (inside an OuterSplit along ζ_1) 1.0e4-1.6e4 lines per remaining Gauss-Hermite node.
    With an OuterSplit, its indicator must not depend on this coordinate either (it is evaluated at 0).
    """

    axis: int
    probe_nodes: int = 48
    panel_tol: float = 1e-9
    bisections: int = 30

    def __post_init__(self):
        check_int("probe_nodes", self.probe_nodes, 4, 400)
        check_real("panel_tol", self.panel_tol, 0.0, 1.0, low_open=True)
        check_int("bisections", self.bisections, 1, 60)


def plane_integrals(global_minimum, local_minimum, integrand, rows, axis: int, count_position: int,
                    count_split: CountSplit, *, probe_nodes: int, panel_tol: float, line_cuts, same_tol: float
                    ) -> LineIntegrals:
    """Integrals of integrand·φ(z_axis)·φ(z_count) over the planes (line axis, count axis) through the rows
    of `rows` (the remaining coordinates, (n_planes, dim − 2)); z_count sits at `count_position` among the
    line's dim − 1 outer coordinates. Adaptive Gauss-Kronrod along z_count, cut where the number of
    switches detected on the line changes (see CountSplit); each node a split line (`line_integrals` with
    probe_nodes, panel_tol, line_cuts and same_tol)."""
    n_planes = len(rows)

    def line_points(plane, t):
        return np.insert(rows[plane], count_position, t, axis=1)

    def switch_counts(plane, t):
        _, _, switch, used = detect_switches(global_minimum, local_minimum, line_points(plane, t), axis,
                                              probe_nodes, same_tol)
        return switch.sum(axis=1), used

    # 1. switch counts on lines at uniform probes of z_count; bisection of every change
    probe_t = np.linspace(-PROBE_HALF_WIDTH, PROBE_HALF_WIDTH, count_split.probe_nodes)
    n_probe = len(probe_t)
    counts, n_points = switch_counts(np.repeat(np.arange(n_planes), n_probe), np.tile(probe_t, n_planes))
    counts = counts.reshape(n_planes, n_probe)
    plane_id, gap_id = np.nonzero(counts[:, :-1] != counts[:, 1:])
    a, b, count_a = probe_t[gap_id].copy(), probe_t[gap_id + 1].copy(), counts[plane_id, gap_id]
    for _ in range(count_split.bisections if len(plane_id) else 0):
        c = 0.5 * (a + b)
        count_c, used = switch_counts(plane_id, c)
        n_points += used
        left = count_c == count_a
        a, b = np.where(left, c, a), np.where(left, b, c)
    changes = 0.5 * (a + b)

    # 2. initial panels: [−T, T] cut at the changes and at OUTER_CUTS; 3. interval halving
    lo, hi, owner = panels_cut_at([np.concatenate([changes[plane_id == plane], OUTER_CUTS])
                                   for plane in range(n_planes)])
    total = error_sum = None
    n_switches = np.zeros(n_planes, dtype=int)
    unresolved = np.zeros(n_planes, dtype=int)
    unresolved_error = np.zeros(n_planes)
    n_lines = unresolved_count = 0
    for round_ in range(MAX_ROUNDS):
        along, density = kronrod_nodes(lo, hi)
        node_plane = np.repeat(owner, len(KRONROD_X))
        lines = line_integrals(global_minimum, local_minimum, integrand, line_points(node_plane, along.ravel()), axis,
                                probe_nodes, panel_tol, same_tol, line_cuts)
        n_points += lines.n_points
        n_lines += lines.n_lines
        np.add.at(n_switches, node_plane, lines.n_switches)
        np.add.at(unresolved, node_plane, lines.unresolved_panels)
        np.add.at(unresolved_error, node_plane, (density * KRONROD_W[None, :]).ravel() * lines.unresolved_error)
        kronrod, error = kronrod_estimates(lines.integrals.reshape(len(lo), len(KRONROD_X), -1), density)
        if total is None:
            total, error_sum = np.zeros((n_planes, kronrod.shape[1])), np.zeros((n_planes, kronrod.shape[1]))
        done = (error.max(axis=1) <= count_split.panel_tol) | (round_ == MAX_ROUNDS - 1)
        unresolved_count += int((done & (error.max(axis=1) > count_split.panel_tol)).sum())
        np.add.at(total, owner[done], kronrod[done])
        np.add.at(error_sum, owner[done], error[done])
        lo, hi, owner = halve_open_panels(lo, hi, owner, done)
        if lo.size == 0:
            break
    return LineIntegrals(integrals=total, n_switches=n_switches, unresolved_panels=unresolved,
                         unresolved_error=unresolved_error, n_points=int(n_points), n_lines=n_lines,
                         count_error=error_sum, n_count_cuts=int(len(changes)), unresolved_count_panels=unresolved_count)
