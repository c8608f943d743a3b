"""Integrals along lines of a function of a GLOBAL minimiser, split where the minimiser switches basin.

The building block of the split-line rules (numeric.split_line): for each line through given outer points, the
integral along the coordinate z_axis of integrand(z, x*(z), F*(z)) against the normal density, where x*(z) is the
global minimiser of a non-convex objective (it jumps where two local minima exchange the role of the global one).
On each line

1. the global minimiser is computed at `probe_nodes` uniform probes on [−6, 6];
2. a basin switch between neighbouring probes is detected by continuation: a local minimisation at
   probe i+1 started from x*(probe i) (and the reverse) landing on a different minimum than the
   global one there (spurious detections, e.g. a fast but smooth move near a cusp, only add a
   harmless breakpoint; a continuation that finds a LOWER minimum corrects the global one);
3. the switch point is located by 40 bisections on "which basin is lower" (each side's minimum is
   continued from the bracket end, so the two basins are compared at the same z);
4. the pieces of [−T, T] between switch points (T = 7.5: the normal mass beyond is 6e-14) are
   integrated against the normal density by adaptive Gauss-Kronrod (7, 15) to `panel_tol` per panel;
   the minimiser at a Kronrod node is the local one started from the interpolation of the minimisers at
   the two probes around it on the same piece (no switch lies in between), or from the nearest probe's,
   or from the basin minimiser at the piece's end; where the two probes' minimisers are far apart (a fold
   or pitchfork can lie between them, FOLD_GAP) also from each of them, the lowest end kept.

On each piece the integrand is smooth, so the line integrals converge to the panel tolerance (checked:
changing the probes or the tolerance moves nothing at 1e-10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnphase.numeric.concurrent import map_side_by_side

__all__ = ["LineIntegrals", "line_integrals", "integrals_in_blocks", "detect_switches", "normal_density", "FOLD_GAP",
           "LINE_CUTS"]

# Normal mass beyond ±7.5: 6e-14, below the 1e-7 target on any bounded integrand by six orders.
HALF_WIDTH = 7.5
# Bisection halvings of a probe interval (width ≤ ~1): 2⁻⁴⁰ ≈ 1e-12, so a jump J in the integrand
# moves the line integral by < J·1e-12·φ.
BISECTIONS = 40
PROBE_HALF_WIDTH = 6.0
# Neighbouring probes' minimisers farther apart than this (max norm) can have a fold or pitchfork between them, where
# a line's nodes are also started from each probe's minimiser (`line_integrals`). Measured at the states of ω = 0.3,
# α = 1.25 on the outer-split rule (12, 10): started from the probes' interpolation alone, 0.9 % of the positional
# branch's Kronrod nodes ended in a local minimum above the global one (by up to 3.6e-3; E[M] 3.1e-9 too high, 8.3e-9
# from the nearest probe); with the extra starts beyond 0.3 (3 % of the nodes) or 0.1 (8 %), E[M] equals that of a
# global search at every node to 1e-15.
FOLD_GAP = 0.1
# Initial panel edges inside [−T, T] (`line_integrals`' default): narrow where the normal density is large.
LINE_CUTS = (-4.5, -2.5, -1.0, 0.0, 1.0, 2.5, 4.5)
# Initial panel edges of an outer coordinate integrated adaptively (numeric.split_line's OuterSplit, the count split
# of numeric.basin_planes): fewer than along the lines, each outer node costing a whole line (or plane) integral;
# interval halving refines where the estimate asks for it.
OUTER_CUTS = np.array([-3.0, 0.0, 3.0])
MAX_ROUNDS = 16
# Gauss-Kronrod (7, 15) on [−1, 1] (QUADPACK's qk15 constants).
_KRONROD_POS = np.array([0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
                         0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
                         0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
                         0.207784955007898467600689403773245, 0.0])
_KRONROD_POS_W = np.array([0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
                           0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
                           0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
                           0.204432940075298892414161999234649, 0.209482141084727828012999174891714])
KRONROD_X = np.concatenate([-_KRONROD_POS[:-1], _KRONROD_POS[::-1]])
KRONROD_W = np.concatenate([_KRONROD_POS_W[:-1], _KRONROD_POS_W[::-1]])
GAUSS_IN_KRONROD = np.array([1, 3, 5, 7, 9, 11, 13])
GAUSS_W = np.array([0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
                     0.381830050505118944950369775488975, 0.417959183673469387755102040816327,
                     0.381830050505118944950369775488975, 0.279705391489276667901467771423780,
                     0.129484966168869693270611432679082])


def normal_density(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)

def panels_cut_at(cuts_per_row) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The panels (lo, hi, owner) that cut [−T, T] at each row's points (cuts_per_row[r], sorted or not, repeats
    allowed): owner is the row each panel belongs to."""
    lo, hi, owner = [], [], []
    for row, cuts in enumerate(cuts_per_row):
        edges = np.concatenate([[-HALF_WIDTH], np.unique(cuts), [HALF_WIDTH]])
        lo += list(edges[:-1])
        hi += list(edges[1:])
        owner += [row] * (len(edges) - 1)
    return np.array(lo), np.array(hi), np.array(owner, dtype=int)


def kronrod_nodes(lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """The 15 Kronrod nodes of each panel [lo, hi] (P, 15), and the normal density there times the half width (the
    factor of the rule on [−1, 1])."""
    half = 0.5 * (hi - lo)
    along = (lo + half)[:, None] + half[:, None] * KRONROD_X[None, :]
    return along, half[:, None] * normal_density(along)


def kronrod_estimates(values, density) -> tuple[np.ndarray, np.ndarray]:
    """The panels' integrals of `values` ((P, 15, k), at `kronrod_nodes`) against the normal density by the Kronrod
    rule (P, k), and their error estimates |Kronrod − Gauss| (P, k)."""
    kronrod = np.einsum("pnk,pn->pk", values, density * KRONROD_W[None, :])
    gauss = np.einsum("pnk,pn->pk", values[:, GAUSS_IN_KRONROD], density[:, GAUSS_IN_KRONROD] * GAUSS_W[None, :])
    return kronrod, np.abs(kronrod - gauss)


def halve_open_panels(lo, hi, owner, done) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The panels not `done`, each cut in two halves (interval halving's next round)."""
    mid = 0.5 * (lo + hi)
    return (np.concatenate([lo[~done], mid[~done]]), np.concatenate([mid[~done], hi[~done]]),
            np.concatenate([owner[~done], owner[~done]]))


@dataclass(frozen=True)
class LineIntegrals:
    """Per-line results of `line_integrals` (n_lines rows): integrals (n_lines, k) of the integrand
    against the normal density along the line; n_switches: detected basin switches; unresolved_panels
    and unresolved_error: panels left above the tolerance and their summed Kronrod error estimates;
    n_points: minimisations used in total; n_lines: lines integrated. From the count split (numeric.basin_planes;
    one row per plane): count_error (n_planes, k): the accepted panels' |Kronrod − Gauss| along the count axis,
    summed; n_count_cuts: changes of the switch count located; unresolved_count_panels: count-axis panels
    left above the tolerance."""

    integrals: np.ndarray
    n_switches: np.ndarray
    unresolved_panels: np.ndarray
    unresolved_error: np.ndarray
    n_points: int
    n_lines: int = 0
    count_error: np.ndarray | None = None
    n_count_cuts: int = 0
    unresolved_count_panels: int = 0


def detect_switches(global_minimum, local_minimum, outer, axis: int, probe_nodes: int, same_tol: float):
    """Steps 1-2 of the module docstring on the lines through the rows of `outer` ((n_lines, dim − 1)):
    returns the probes along the line, the global minimisers x at the probes (n_lines, n_probe, n_var)
    (corrected by continuation), switch (n_lines, n_probe − 1): a basin switch detected between
    neighbouring probes, and the minimisations used."""
    dim = outer.shape[1] + 1
    # uniform probes on [−6, 6] (mass outside 2e-9; a switch out there moves a bounded integrand by
    # less than that times the jump)
    probe_x = np.linspace(-PROBE_HALF_WIDTH, PROBE_HALF_WIDTH, probe_nodes)
    n_lines, n_probe = len(outer), len(probe_x)

    # 1. global minimiser at the probes (points line-major: line l, probe j at row l * n_probe + j)
    z = np.insert(np.repeat(outer, n_probe, axis=0), axis, np.tile(probe_x, n_lines), axis=1)
    x, value = global_minimum(z)
    n_var = x.shape[1]
    x = x.reshape(n_lines, n_probe, n_var)
    value = value.reshape(n_lines, n_probe)
    n_points = z.shape[0]

    def same(a, b):
        return np.abs(a - b).max(axis=-1) <= same_tol * (1.0 + np.abs(b).max(axis=-1))

    # 2. switch detection by continuation between neighbouring probes (both directions)
    left, right = x[:, :-1].reshape(-1, n_var), x[:, 1:].reshape(-1, n_var)
    z_left, z_right = z.reshape(n_lines, n_probe, dim)[:, :-1].reshape(-1, dim), z.reshape(n_lines, n_probe, dim)[:, 1:].reshape(-1, dim)
    forward, forward_value = local_minimum(z_right, left)
    backward, backward_value = local_minimum(z_left, right)
    switch = ~(same(forward, right) & same(backward, left))
    # A continuation that found a LOWER minimum than the multi-start search corrects the global one.
    v_left, v_right = value[:, :-1].ravel(), value[:, 1:].ravel()
    better_right = forward_value < v_right - 1e-15 * np.abs(v_right)
    better_left = backward_value < v_left - 1e-15 * np.abs(v_left)
    if better_right.any() or better_left.any():
        line, gap = np.divmod(np.arange(n_lines * (n_probe - 1)), n_probe - 1)
        x[line[better_right], gap[better_right] + 1] = forward[better_right]
        value[line[better_right], gap[better_right] + 1] = forward_value[better_right]
        x[line[better_left], gap[better_left]] = backward[better_left]
        value[line[better_left], gap[better_left]] = backward_value[better_left]
    return probe_x, x, switch.reshape(n_lines, n_probe - 1), n_points


def line_integrals(global_minimum, local_minimum, integrand, outer, axis: int, probe_nodes: int,
                   panel_tol: float, same_tol: float, initial_cuts=LINE_CUTS) -> LineIntegrals:
    """Integrals along z_axis of integrand·φ(z_axis) on the lines through the rows of `outer` (the
    other coordinates, (n_lines, dim − 1)), each split where the global minimiser switches basin
    (steps 1-4 of the module docstring). initial_cuts: where every piece is cut before the first round of the
    Gauss-Kronrod panels (the halving then refines where the panel tolerance asks for it)."""
    probe_x, x, switch, n_points = detect_switches(global_minimum, local_minimum, outer, axis, probe_nodes, same_tol)
    n_lines, n_probe, n_var = x.shape
    split = switch.any(axis=1)

    def same(a, b):
        return np.abs(a - b).max(axis=-1) <= same_tol * (1.0 + np.abs(b).max(axis=-1))

    # pieces of every line: [−T, T] for a line without a switch; cut at the switch points otherwise. Each piece has
    # the minimisers that seed the nodes near its ends (start_lo, start_hi): the centre probe's on an unsplit line,
    # else the basin minimisers at its ends from the bisection.
    unsplit = np.nonzero(~split)[0]
    centre = n_probe // 2
    piece_lo, piece_hi = np.full(len(unsplit), -HALF_WIDTH), np.full(len(unsplit), HALF_WIDTH)
    piece_line, start_lo, start_hi = unsplit, x[unsplit, centre], x[unsplit, centre]
    if split.any():
        # 3. bisection of every detected interval (vectorised over all of them)
        line_id, gap_id = np.nonzero(switch)
        a, b = probe_x[gap_id].copy(), probe_x[gap_id + 1].copy()
        xa, xb = x[line_id, gap_id].copy(), x[line_id, gap_id + 1].copy()
        for _ in range(BISECTIONS):
            c = 0.5 * (a + b)
            zc = np.insert(outer[line_id], axis, c, axis=1)
            ya, va = local_minimum(zc, xa)
            yb, vb = local_minimum(zc, xb)
            coincide = same(ya, yb)
            # Which basin is the global one at c. When both continuations land on one minimum, the
            # other basin does not exist at c: that minimum belongs to the side whose end it is nearer.
            left_wins = np.where(coincide, np.abs(ya - xa).max(-1) <= np.abs(ya - xb).max(-1), va <= vb)
            a = np.where(left_wins, c, a)
            b = np.where(left_wins, b, c)
            xa = np.where(left_wins[:, None], ya, xa)
            xb = np.where(left_wins[:, None], xb, yb)
        # the split lines' pieces, line by line from left to right: one ending at each switch (its left end the
        # previous switch of the line, or −T), then one from the line's last switch to T
        order = np.lexsort((a + b, line_id))
        line_id, xa, xb = line_id[order], xa[order], xb[order]
        cut = np.clip(0.5 * (a + b)[order], -HALF_WIDTH, HALF_WIDTH)
        first = np.r_[True, line_id[1:] != line_id[:-1]]  # the line's first switch
        last = np.r_[line_id[1:] != line_id[:-1], True]
        before = np.r_[0, np.arange(len(cut) - 1)]  # the switch before each one (where it is on the same line)
        position = np.arange(len(cut)) + np.cumsum(first) - 1  # of the piece ending at each switch
        n_pieces = len(cut) + int(last.sum())
        lo, hi, line = np.empty(n_pieces), np.empty(n_pieces), np.empty(n_pieces, dtype=int)
        seed_lo, seed_hi = np.empty((n_pieces, n_var)), np.empty((n_pieces, n_var))
        lo[position], hi[position], line[position] = np.where(first, -HALF_WIDTH, cut[before]), cut, line_id
        seed_lo[position], seed_hi[position] = np.where(first[:, None], xa, xb[before]), xa
        final = position[last] + 1
        lo[final], hi[final], line[final] = cut[last], HALF_WIDTH, line_id[last]
        seed_lo[final], seed_hi[final] = xb[last], xb[last]
        piece_lo, piece_hi = np.concatenate([piece_lo, lo]), np.concatenate([piece_hi, hi])
        piece_line = np.concatenate([piece_line, line])
        start_lo, start_hi = np.concatenate([start_lo, seed_lo]), np.concatenate([start_hi, seed_hi])

    # 4. adaptive Gauss-Kronrod (7, 15) on the pieces, each cut first at those of `initial_cuts` inside it (the
    # points of a row kept in order; consecutive kept points of one piece bound a panel)
    initial_cuts = np.asarray(initial_cuts, float)
    n_pieces = len(piece_lo)
    points = np.column_stack([piece_lo, np.broadcast_to(initial_cuts, (n_pieces, len(initial_cuts))), piece_hi])
    inside = (initial_cuts > piece_lo[:, None]) & (initial_cuts < piece_hi[:, None])
    kept = np.column_stack([np.ones(n_pieces, bool), inside, np.ones(n_pieces, bool)])
    row = np.broadcast_to(np.arange(n_pieces)[:, None], points.shape)[kept]
    edges = points[kept]
    panel = row[1:] == row[:-1]
    lo, hi, owner = edges[:-1][panel], edges[1:][panel], row[:-1][panel]
    spacing = probe_x[1] - probe_x[0]

    def _node_minima(z, t, piece):
        """The minimiser and minimum at the nodes z (at z_axis = t on `piece`), by local Newton: between two probes on
        the same piece (no switch between them, so the node's global minimiser is their basin's) from the linear
        interpolation of their minimisers, else from the minimiser at the nearest probe when that probe lies on the
        piece, else from the basin minimiser at the nearer end of the piece (from the bisection).
        Where the two probes' minimisers are more than FOLD_GAP apart, a fold or pitchfork can lie between them: two
        minima coexist there, each continuing one probe's, and the global minimiser switches between them although the
        continuations from the probes agree (each lands on the other probe's minimiser, the other family having
        ended). There the node is also started from each probe's minimiser and the lowest end is kept."""
        line = piece_line[piece]
        nearest = np.clip(np.rint((t - probe_x[0]) / spacing).astype(int), 0, n_probe - 1)
        inside = (probe_x[nearest] >= piece_lo[piece]) & (probe_x[nearest] <= piece_hi[piece])
        end = np.where((t - piece_lo[piece] < piece_hi[piece] - t)[:, None], start_lo[piece], start_hi[piece])
        below = np.clip(np.floor((t - probe_x[0]) / spacing).astype(int), 0, n_probe - 2)
        left, right = x[line, below], x[line, below + 1]
        between = (probe_x[below] >= piece_lo[piece]) & (probe_x[below + 1] <= piece_hi[piece]) & ~switch[line, below]
        weight = ((t - probe_x[below]) / spacing)[:, None]
        start = np.where(between[:, None], (1.0 - weight) * left + weight * right,
                         np.where(inside[:, None], x[line, nearest], end))
        minimiser, minimum = local_minimum(z, start)
        fold = np.nonzero(between & (np.abs(left - right).max(axis=1) > FOLD_GAP))[0]
        for probe_minimiser in (left[fold], right[fold]):
            other, other_minimum = local_minimum(z[fold], probe_minimiser)
            lower = other_minimum < minimum[fold]
            minimiser[fold[lower]], minimum[fold[lower]] = other[lower], other_minimum[lower]
        return minimiser, minimum, len(start) + 2 * len(fold)

    integrals = None
    unresolved = np.zeros(n_lines, dtype=int)
    unresolved_error = np.zeros(n_lines)
    for round_ in range(MAX_ROUNDS):
        along, density = kronrod_nodes(lo, hi)  # (panels, 15)
        zp = np.insert(np.repeat(outer[piece_line[owner]], len(KRONROD_X), axis=0), axis, along.ravel(), axis=1)
        xp, vp, used = _node_minima(zp, along.ravel(), np.repeat(owner, len(KRONROD_X)))
        n_points += used
        values = integrand(zp, xp, vp).reshape(len(lo), len(KRONROD_X), -1)
        kronrod, error = kronrod_estimates(values, density)
        if integrals is None:
            integrals = np.zeros((n_lines, values.shape[2]))
        error = error.max(axis=1)
        done = (error <= panel_tol) | (round_ == MAX_ROUNDS - 1)
        stuck = done & (error > panel_tol)
        np.add.at(unresolved, piece_line[owner[stuck]], 1)
        np.add.at(unresolved_error, piece_line[owner[stuck]], error[stuck])
        np.add.at(integrals, piece_line[owner[done]], kronrod[done])
        lo, hi, owner = halve_open_panels(lo, hi, owner, done)
        if lo.size == 0:
            break
    return LineIntegrals(integrals=integrals, n_switches=switch.sum(axis=1), unresolved_panels=unresolved,
                         unresolved_error=unresolved_error, n_points=int(n_points), n_lines=n_lines)


# Lines (or planes) per block below which `integrals_in_blocks` keeps them together.
MIN_BLOCK_LINES = 8


def integrals_in_blocks(integrals, points) -> LineIntegrals:
    """integrals(points) (LineIntegrals, one row per point), the points cut into contiguous blocks integrated side by
    side (numeric.concurrent). Every line is integrated on its own (its probes, switches and panels do not depend on
    the other lines), so the rows are those of one call."""
    import numba

    blocks = min(numba.get_num_threads(), len(points) // MIN_BLOCK_LINES)
    if blocks < 2:
        return integrals(points)
    parts = map_side_by_side(integrals, np.array_split(points, blocks))

    def rows(name):
        found = [getattr(part, name) for part in parts]
        return None if found[0] is None else np.concatenate(found)

    return LineIntegrals(integrals=rows("integrals"), n_switches=rows("n_switches"),
                         unresolved_panels=rows("unresolved_panels"), unresolved_error=rows("unresolved_error"),
                         n_points=sum(part.n_points for part in parts), n_lines=sum(part.n_lines for part in parts),
                         count_error=rows("count_error"), n_count_cuts=sum(part.n_count_cuts for part in parts),
                         unresolved_count_panels=sum(part.unresolved_count_panels for part in parts))
