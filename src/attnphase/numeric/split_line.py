"""Gaussian expectations of functions of a GLOBAL minimiser, split where the minimiser switches basin.

Problem: E_z[f(z, x*(z))] for z ~ N(0, I_dim), where x*(z) = argmin_x F(x; z) is the global minimiser
of a non-convex objective. Where two local minima exchange the role of the global one, x* jumps, so
f (e.g. g = (prox − ω)/V) jumps and the envelope min_x F has a kink. A tensor Gauss-Hermite rule then
converges only algebraically and not monotonically (which nodes fall on which side changes with the
node count).

Method ("split lines"): one coordinate z_axis is integrated along lines, each split where the global
minimiser switches basin and its pieces integrated by adaptive Gauss-Kronrod (numeric.basin_lines), the
others by a pruned tensor Gauss-Hermite rule. The outer integrand (the line integrals
as functions of the other coordinates) is continuous, C¹ for the envelope, but not smooth where a line
is tangent to the switching surface; the outer Gauss-Hermite rule therefore converges algebraically
or with oscillations at a much lower level than the tensor rule on the raw integrand (for the
positional-semantic model: ~1e-7 against ~1e-6 on E[M]). Convergence is measured by refining the outer
rule.

Outer split (`OuterSplit`, optional): when the set where the line integrals are not smooth is known as
the zero set of a smooth indicator of the outer coordinates, one outer coordinate is integrated like
the lines themselves: its sign changes along each outer line are located (probes + bisection) and the
pieces between them are integrated by adaptive Gauss-Kronrod (7, 15) against the normal density; the
remaining outer coordinates keep Gauss-Hermite (per-coordinate node counts allowed). Each outer Kronrod
node is a whole split line, so this costs ~15-30× the plain rule at equal Gauss-Hermite counts.

For the positional-semantic prox the loss depends on h only through the attention s(h), which is even
in h, so at ω = 0 the point h = 0 is always critical and loses stability in a pitchfork where the
smallest eigenvalue of the Moreau Hessian at (h, ω) = (0, 0) crosses zero (a function of the teacher
fields h* only). There the switching set is born, and the line integrals (hence the outer integrand)
are not smooth across that set. `rotation` (an orthogonal R, z = R u) lets the caller integrate in
coordinates where h* depends on the outer coordinates alone (u = (χ, ζ) with ζ = h*/√ρ), so the
indicator does not depend on the line coordinate. Measured at ω = 0.3, α = 1.25 (fixed converged
states, lines along χ_1, split along ζ_1, Gauss-Hermite in (χ_2, ζ_2)): E[M] from the plain rule
oscillates by ~1e-7 over outer 10-24 nodes; the outer-split rule converges to ~1e-9 (positional:
(χ_2, ζ_2) = (20, 14), (20, 18), (24, 18) agree to 9e-10; semantic: ζ_2 = 14, 18, 22 move it by
1.1e-8, 1.2e-9). Not at ω = 0: there the line integrals are also rough in χ_2 (switching segments
with cusp ends inside the (χ_1, χ_2) plane) and χ_2 = 16, 20, 24, 28 still move E[M] by 3e-7, 3e-7,
1.5e-7 (positional).

Count split (`CountSplit`, optional, with or without an OuterSplit): a second outer coordinate is
integrated by adaptive Gauss-Kronrod, cut where the number of switches detected on a line changes
(located by bisection on that count); every Kronrod node is a whole split line, so the rule integrates
planes (line axis, count axis). The cuts help only where the count changes where the line integral is
not smooth; the interval halving does the rest (a cusp end where the jump vanishes is detected by the
probes only once the jump exceeds `same_tol` and the two basins coexist across a probe interval, so the
cut lands near, not at, the cusp; the panel containing it is then refined by halving). Measured at
ω = 0, α = 0.615 on planes (χ_1, χ_2) of the positional branch: plane integrals converge to ~1e-10 in the
count-split tolerance, where Gauss-Hermite in χ_2 is still off by 7e-7 on 48 and 64 nodes.
Limits, shared with the lines themselves: a switch the probes miss (a window of the other basin narrower
than the probe spacing near its birth, or a switch whose two basins both vanish within one probe
interval near a cusp) is integrated in the wrong basin on its piece where the minimisers at the probes
around it are less than basin_lines.FOLD_GAP apart; at the ω = 0 state (measured with nodes started from
the nearest probe) this moves plane integrals by up to 1.3e-8 between 32 and 64 probes per line (64 and 128
agree to 4e-10), so use ≥ 64 probes there.

Reflections (`numeric.reflections.Reflection`, optional, every rule above): when the problem is symmetric under
involutions z → S z (signed permutations) with x*(S z) = T x*(z) and the same minimum value, the line (or plane)
through the outer node S o is the image of the one through o, and its integral is that of
integrand(S z, T x*(z), F*(z)) along the line through o. So only one node of each orbit of the outer rule is
integrated, with the integrand and its images as the columns (panels are refined until all meet the tolerance):
half the minimisations per independent reflection when no outer node is fixed by one. S must map the line axis
(with a count split: the plane's two axes, as a set) and an outer split's axis onto themselves. For the
positional-semantic prox: S = −I, T = −I on the m = 0 set, η → −η (T = I) on the θ = 0 set, and on count-split
planes with a token-reversal symmetric A the exchange of the two tokens' coordinates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from attnphase.errors import ParameterError
from attnphase.numeric.basin_lines import (BISECTIONS, HALF_WIDTH, KRONROD_W, KRONROD_X, LINE_CUTS, MAX_ROUNDS,
                                          OUTER_CUTS, PROBE_HALF_WIDTH, halve_open_panels, integrals_in_blocks,
                                          kronrod_estimates, kronrod_nodes, line_integrals, panels_cut_at)
from attnphase.numeric.basin_planes import CountSplit, plane_integrals
from attnphase.numeric.reflections import ReflectionGroup, fold_orbits, orbit_rule
from attnphase.params import check_int, check_real

__all__ = ["SplitLineRule", "OuterSplit", "SplitLineExpectation",
           "split_line_expectation", "OUTER_WEIGHT_FLOOR"]

# Nodes of the outer tensor Gauss-Hermite rules at or below this weight are left out (with n nodes in each of d
# coordinates, at most n^d · 1e-14 of the weight: below 1e-10 for every rule here).
OUTER_WEIGHT_FLOOR = 1e-14


@dataclass(frozen=True)
class SplitLineRule:
    """Resolution of the split-line rule: Gauss-Hermite nodes per outer dimension, uniform probes along
    the line (switch detection), absolute Gauss-Kronrod error tolerance per panel, and the points where each
    line is cut before its first round of panels (increasing, inside (−7.5, 7.5)): fewer cuts cost fewer
    minimisations where the integrand is smooth enough for wide panels to meet the tolerance, more halvings
    where it is not."""

    outer_nodes_per_dim: int
    probe_nodes: int
    panel_tol: float
    line_cuts: tuple[float, ...] = LINE_CUTS

    def __post_init__(self):
        check_int("outer_nodes_per_dim", self.outer_nodes_per_dim, 2, 60)
        check_int("probe_nodes", self.probe_nodes, 4, 400)
        check_real("panel_tol", self.panel_tol, 0.0, 1.0, low_open=True)
        allowed = f"increasing numbers inside (−{HALF_WIDTH:g}, {HALF_WIDTH:g})"
        try:
            cuts = np.asarray(self.line_cuts, float)
        except (TypeError, ValueError):
            raise ParameterError("line_cuts", self.line_cuts, allowed) from None
        if cuts.ndim != 1 or not (np.all(np.diff(cuts) > 0) and np.all(np.abs(cuts) < HALF_WIDTH)):
            raise ParameterError("line_cuts", self.line_cuts, allowed)
        object.__setattr__(self, "line_cuts", tuple(float(c) for c in cuts))

    def label(self) -> str:
        return f"{self.outer_nodes_per_dim}/{self.probe_nodes}/{self.panel_tol:.0e}"


@dataclass(frozen=True)
class OuterSplit:
    """Integrate one OUTER coordinate adaptively too, cut where the line integrals are not smooth.

    axis: that coordinate (an index of z, not the line axis); it is integrated by adaptive
    Gauss-Kronrod (7, 15) against the normal density instead of Gauss-Hermite, the remaining
    dim − 2 coordinates keep the Gauss-Hermite rule. indicator(z) -> (N,): a smooth function whose
    zero set contains the points where the line integrals are not smooth (for the proximal maps of
    the positional-semantic model: where the symmetric minimiser h = 0 at ω = 0 loses stability, a
    pitchfork; see the module docstring). It is evaluated at points z with the line coordinate 0 and
    must not depend on it. Its sign changes along each outer line are found on `probe_nodes` uniform
    probes on [−6, 6] and located by bisection; the pieces between them are integrated to
    `panel_tol` (absolute, per panel, per unit Gauss-Hermite weight) by interval halving.
    nodes_per_dim: Gauss-Hermite nodes for each remaining coordinate (in increasing coordinate order),
    default the rule's outer_nodes_per_dim for all of them. weight_floor: their tensor rule's nodes of weight at or
    below it are left out (each outer node costs a whole adaptive line integral; what is left out is at most
    their total weight, ≤ (number of nodes) × weight_floor, times the largest line integral).
    """

    axis: int
    indicator: Callable
    probe_nodes: int = 48
    panel_tol: float = 1e-9
    nodes_per_dim: tuple[int, ...] | None = None
    weight_floor: float = OUTER_WEIGHT_FLOOR

    def __post_init__(self):
        check_int("probe_nodes", self.probe_nodes, 4, 400)
        check_real("panel_tol", self.panel_tol, 0.0, 1.0, low_open=True)
        check_real("weight_floor", self.weight_floor, 0.0, 1e-6)
        for n in self.nodes_per_dim or ():
            check_int("nodes_per_dim", n, 2, 60)


@dataclass(frozen=True)
class SplitLineExpectation:
    """value (k,): the expectation; n_points: minimisations at probes and Kronrod nodes;
    n_lines, n_split_lines: lines, and lines with at least one switch; n_switches: breakpoints;
    switch_weight: outer weight of the lines with a switch; unresolved_panels: panels still above the
    tolerance after the last refinement round (a switch missed by the probes), unresolved_error: their
    outer-weighted Kronrod error estimates summed (an estimate of what they contribute).
    With an OuterSplit: outer_error: the outer Gauss-Kronrod error estimates |K − G| of the accepted
    outer panels, Gauss-Hermite weighted and summed (k,) (zero without an OuterSplit); n_outer_cuts:
    zeros of the indicator found along the outer lines; unresolved_outer_panels: outer panels still
    above their tolerance after the last round. With a CountSplit: count_error, n_count_cuts,
    unresolved_count_panels: the same for the count-split coordinate (its Kronrod estimates weighted by
    the outer rule; changes of the switch count located); n_lines still counts lines, but n_split_lines
    and switch_weight count planes (a plane "with a switch": any of its lines has one)."""

    value: np.ndarray
    n_points: int
    n_lines: int
    n_split_lines: int
    n_switches: int
    switch_weight: float
    unresolved_panels: int
    unresolved_error: float
    outer_error: np.ndarray | None = None
    n_outer_cuts: int = 0
    unresolved_outer_panels: int = 0
    count_error: np.ndarray | None = None
    n_count_cuts: int = 0
    unresolved_count_panels: int = 0


def _outer_rule(dim: int, n: int):
    """Pruned tensor Gauss-Hermite rule in `dim` standard normals, n nodes each (nodes, weights)."""
    return _anisotropic_outer_rule((n,) * dim)


@functools.lru_cache(maxsize=32)
def _anisotropic_outer_rule(counts: tuple[int, ...], floor: float = OUTER_WEIGHT_FLOOR):
    """Pruned tensor Gauss-Hermite rule with counts[i] nodes in coordinate i (nodes, weights)."""
    rules = [special.roots_hermitenorm(n) for n in counts]
    rules = [(x, w / w.sum()) for x, w in rules]
    grids = np.meshgrid(*(x for x, _ in rules), indexing="ij")
    weights = np.prod(np.meshgrid(*(w for _, w in rules), indexing="ij"), axis=0).ravel()
    nodes = np.stack([g.ravel() for g in grids], axis=1)
    keep = weights > floor
    return nodes[keep], weights[keep]


def split_line_expectation(global_minimum, local_minimum, integrand, dim: int, axis: int,
                           rule: SplitLineRule, *, same_tol: float = 1e-6, rotation=None,
                           outer_split: OuterSplit | None = None,
                           count_split: CountSplit | None = None,
                           reflection=None) -> SplitLineExpectation:
    """E_z[integrand(z, x*(z), F*(z))], z ~ N(0, I_dim), split along z_axis where x* switches basin.

    global_minimum(z) -> (x (N, n), value (N,)): the global minimiser at points z (N, dim).
    local_minimum(z, start) -> (x, value): the local minimiser reached from `start` (N, n).
    integrand(z, x, value) -> (N, k): the function to average.
    Two minima are the same when they differ by less than `same_tol` (relative to 1 + |x|).

    rotation: an orthogonal dim × dim matrix R; the rule then integrates over u ~ N(0, I) with z = R u
    (the same distribution), so "the line axis" and the outer coordinates are those of u; the callables
    still receive z. outer_split: see OuterSplit (default: Gauss-Hermite in every outer coordinate).
    count_split: see CountSplit (default: none); with both, the count-split integrals over the plane
    (line axis, count axis) are the integrand of the outer split. reflection: a Reflection of the problem or a
    sequence of commuting ones (numeric.reflections; they act on the coordinates integrated over, u with a
    rotation), used to integrate one line (plane) of each orbit of outer nodes. With it, n_points and n_lines
    count the lines integrated, the other counts and weights every line of the rule.

    Where the caller has two or more numba threads the lines (planes) are integrated in blocks side by side on worker
    threads (numeric.basin_lines.integrals_in_blocks), so the three callables are called from several threads at
    once: they must not change shared state. The values do not depend on the number of threads.
    """
    axis = check_int("axis", axis, 0, dim - 1)
    same_tol = check_real("same_tol", same_tol, 0.0, 1.0, low_open=True)
    if rotation is not None:
        R = np.asarray(rotation, float)
        if R.shape != (dim, dim) or not np.allclose(R @ R.T, np.eye(dim), atol=1e-12):
            raise ParameterError("rotation", rotation, f"an orthogonal {dim}x{dim} matrix")
        global_minimum, local_minimum, integrand = _rotated(global_minimum, local_minimum, integrand, R)
    # `integrals(points)`: the line integrals (or, with a count split, the plane integrals) through
    # points given in the `reduced` coordinates (all but the line axis and the count axis)
    reduced = [d for d in range(dim) if d != axis]
    blocks = [{axis}]
    if count_split is not None:
        count_axis = check_int("count_split.axis", count_split.axis, 0, dim - 1)
        if count_axis == axis or (outer_split is not None and count_axis == outer_split.axis):
            raise ParameterError("count_split.axis", count_axis, "an outer coordinate other than the line axis "
                                 "and the outer split's axis")
        count_position = reduced.index(count_axis)
        reduced.remove(count_axis)
        blocks = [{axis, count_axis}]
    group = None
    if reflection is not None:
        group = ReflectionGroup.generated_by(reflection, dim)
        if outer_split is not None:
            blocks.append({check_int("outer_split.axis", outer_split.axis, 0, dim - 1)})
        group.check_blocks(blocks, "the line axis" + (", the count axis" if count_split else "")
                           + (" and the outer split's axis" if outer_split else ""))
        own_integrand = integrand

        def integrand(z, x, value):  # the line's integrand and its images', as blocks of columns
            return np.hstack([own_integrand(gz, gx, value) for gz, gx in group.images(z, x)])
    if count_split is None:
        def integrate(rows):
            return line_integrals(global_minimum, local_minimum, integrand, rows, axis, rule.probe_nodes,
                                  rule.panel_tol, same_tol, rule.line_cuts)
    else:
        def integrate(rows):
            return plane_integrals(global_minimum, local_minimum, integrand, rows, axis, count_position, count_split,
                                   probe_nodes=rule.probe_nodes, panel_tol=rule.panel_tol, line_cuts=rule.line_cuts,
                                   same_tol=same_tol)

    def integrals(points):
        return integrals_in_blocks(integrate, points)

    if outer_split is not None:
        return _split_outer_expectation(integrals, reduced, dim, axis, rule, outer_split,
                                        None if rotation is None else R, group)
    outer, outer_w = _outer_rule(len(reduced), rule.outer_nodes_per_dim)
    rows, table = orbit_rule(outer, outer_w, None if group is None else group.on(reduced))
    lines = integrals(rows)
    copies = (table != 0).sum(axis=1)  # the lines each integrated row stands for
    weight = table.sum(axis=1)
    split = lines.n_switches > 0
    return SplitLineExpectation(value=fold_orbits(lines.integrals, table), n_points=lines.n_points,
                                n_lines=lines.n_lines, n_split_lines=int(copies[split].sum()),
                                n_switches=int(copies @ lines.n_switches),
                                switch_weight=float(weight[split].sum()),
                                unresolved_panels=int(copies @ lines.unresolved_panels),
                                unresolved_error=float(weight @ lines.unresolved_error),
                                count_error=None if lines.count_error is None else fold_orbits(lines.count_error, table),
                                n_count_cuts=lines.n_count_cuts, unresolved_count_panels=lines.unresolved_count_panels)


def _rotated(global_minimum, local_minimum, integrand, R):
    """The callables as functions of u, z = R u (rows: z = u Rᵀ)."""
    return (lambda u: global_minimum(u @ R.T), lambda u, start: local_minimum(u @ R.T, start),
            lambda u, x, value: integrand(u @ R.T, x, value))


def _split_outer_expectation(integrals, reduced, dim, axis, rule, outer_split: OuterSplit, R,
                             group: ReflectionGroup | None) -> SplitLineExpectation:
    """Split lines along z_axis (`integrals` of points in the `reduced` coordinates: lines or count-split
    planes), adaptive Gauss-Kronrod along z_{outer_split.axis} cut at the indicator's zeros, Gauss-Hermite
    in the remaining reduced coordinates (all in the u coordinates when R is given). group: the reflections (the
    integrals then hold each point's columns and its images'): one outer line of each orbit of the Gauss-Hermite
    rows is integrated, an image row's panels being the images of its own."""
    outer_axis = check_int("outer_split.axis", outer_split.axis, 0, dim - 1)
    if outer_axis not in reduced:
        raise ParameterError("outer_split.axis", outer_axis, f"an outer coordinate (not the line axis {axis})")
    others = [d for d in reduced if d != outer_axis]
    counts = outer_split.nodes_per_dim or (rule.outer_nodes_per_dim,) * len(others)
    if len(counts) != len(others):
        raise ParameterError("outer_split.nodes_per_dim", counts, f"{len(others)} node counts (one per remaining coordinate)")
    rest, rest_w = (_anisotropic_outer_rule(tuple(counts), outer_split.weight_floor) if others
                    else (np.zeros((1, 0)), np.ones(1)))
    rest, rest_table = orbit_rule(rest, rest_w, None if group is None else group.on(others))
    n_rest = len(rest)

    def full_points(rest_rows, t):
        """Points z (in u coordinates) with the remaining coordinates from rest_rows, z_outer = t, line 0."""
        z = np.zeros((len(t), dim))
        z[:, others] = rest_rows
        z[:, outer_axis] = t
        return z

    def indicator(z):
        return np.asarray(outer_split.indicator(z if R is None else z @ R.T), float)

    # 1. zeros of the indicator along every outer line: probes, then bisection of each sign change
    probe_t = np.linspace(-PROBE_HALF_WIDTH, PROBE_HALF_WIDTH, outer_split.probe_nodes)
    n_probe = len(probe_t)
    values = indicator(full_points(np.repeat(rest, n_probe, axis=0), np.tile(probe_t, n_rest))).reshape(n_rest, n_probe)
    line_id, gap_id = np.nonzero(np.sign(values[:, :-1]) * np.sign(values[:, 1:]) < 0)
    a, b = probe_t[gap_id].copy(), probe_t[gap_id + 1].copy()
    fa = values[line_id, gap_id]
    for _ in range(BISECTIONS):
        c = 0.5 * (a + b)
        fc = indicator(full_points(rest[line_id], c))
        same_side = np.sign(fc) == np.sign(fa)
        a, fa = np.where(same_side, c, a), np.where(same_side, fc, fa)
        b = np.where(same_side, b, c)
    roots = 0.5 * (a + b)

    # 2. initial panels: [−T, T] cut at the zeros and at OUTER_CUTS
    lo, hi, owner = panels_cut_at([np.concatenate([roots[line_id == r], OUTER_CUTS]) for r in range(n_rest)])

    # 3. interval halving; every Kronrod node of an outer panel is a whole split line
    total, error_sum, count_error = None, None, None
    n_points = n_lines = n_split = n_switches = unresolved = unresolved_outer = n_count_cuts = unresolved_count = 0
    switch_weight = unresolved_error = 0.0
    for round_ in range(MAX_ROUNDS):
        along, density = kronrod_nodes(lo, hi)
        z = full_points(np.repeat(rest[owner], len(KRONROD_X), axis=0), along.ravel())
        lines = integrals(z[:, reduced])
        node_w = (density * KRONROD_W[None, :]).ravel()
        line_table = np.repeat(rest_table[owner], len(KRONROD_X), axis=0) * node_w[:, None]  # its images' too
        line_w = line_table.sum(axis=1)
        copies = (line_table != 0).sum(axis=1)
        split = lines.n_switches > 0
        n_points += lines.n_points
        n_lines += lines.n_lines
        n_count_cuts += lines.n_count_cuts
        unresolved_count += lines.unresolved_count_panels
        if lines.count_error is not None:
            count_error = (0.0 if count_error is None else count_error) + fold_orbits(lines.count_error,
                                                                               np.abs(line_table))
        n_split += int(copies[split].sum())
        n_switches += int(copies @ lines.n_switches)
        switch_weight += float(line_w[split].sum())
        unresolved += int(copies @ lines.unresolved_panels)
        unresolved_error += float(np.abs(line_w) @ lines.unresolved_error)
        kronrod, error = kronrod_estimates(lines.integrals.reshape(len(lo), len(KRONROD_X), -1), density)
        done = (error.max(axis=1) <= outer_split.panel_tol) | (round_ == MAX_ROUNDS - 1)
        unresolved_outer += int((done & (error.max(axis=1) > outer_split.panel_tol)).sum())
        value = fold_orbits(kronrod[done], rest_table[owner[done]])
        value_error = fold_orbits(error[done], rest_table[owner[done]])
        total = value if total is None else total + value
        error_sum = value_error if error_sum is None else error_sum + value_error
        lo, hi, owner = halve_open_panels(lo, hi, owner, done)
        if lo.size == 0:
            break
    return SplitLineExpectation(value=total, n_points=int(n_points), n_lines=int(n_lines), n_split_lines=n_split,
                                n_switches=n_switches, switch_weight=switch_weight, unresolved_panels=unresolved,
                                unresolved_error=unresolved_error, outer_error=error_sum,
                                n_outer_cuts=int(len(roots)), unresolved_outer_panels=unresolved_outer,
                                count_error=count_error, n_count_cuts=n_count_cuts,
                                unresolved_count_panels=unresolved_count)
