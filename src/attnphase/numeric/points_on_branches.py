"""The stationary points at one control read off followed branches (`numeric.continuation`): where a branch's
polyline crosses the level of the control, the point there solved at that control, folds included."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from attnphase.numeric.continuation import StationaryBranch, continue_in_control, stationary_point
from attnphase.numeric.stationary_systems import StationarySystem
from attnphase.results import Status

__all__ = ["stationary_points_at"]


def stationary_points_at(system: StationarySystem, branches: Sequence[StationaryBranch], c: float) -> list[dict]:
    """Every stationary point at control c on the followed branches: x, action, Hessian eigenvalues and
    index (one per crossing of the level c by a branch; branches are not deduplicated).

    A branch's located folds are vertices of its polyline too: between the last point before a fold and the fold,
    the two stationary points that meet there lie on either side of the fold's control only, and a level c in
    that gap crossed no segment of the points alone (the Potts model at q = 3 lost its metastable minimum for
    1e-4 above its fold spinodal). Next to a fold, Newton's method at c starts from the fold's normal form,
    x = x_f + √((c − c_f)/(c_v − c_f)) (x_v − x_f) towards the branch's point v, and a point whose index is not
    that of the fold's side it belongs to (the partner across the fold) is not kept. A branch point where the
    branch turns in the control (the bifurcating branch of a pitchfork, c − c_b ∝ (x − x_b)²) is such a vertex
    too, with the same normal form: the Potts model at q = 2 lost both ordered minima for βJ within 1e-9 of 2."""
    found = []
    for branch in branches:
        for (ca, xa, fold_a), (cb, xb, fold_b), index, last in _segments_with_folds(branch):
            if not (min(ca, cb) <= c <= max(ca, cb)) or (c == cb and not last):
                continue
            if fold_a or fold_b:
                (cf, xf), (cv, xv) = ((ca, xa), (cb, xb)) if fold_a else ((cb, xb), (ca, xa))
                x = stationary_point(system, xf + math.sqrt(max(0.0, (c - cf) / (cv - cf))) * (xv - xf), c)
            else:
                near_a = abs(c - ca) <= abs(c - cb)
                x = continue_in_control(system, xa if near_a else xb, ca if near_a else cb, c, substeps=4)
            if x is None:
                continue
            eigenvalues = np.linalg.eigvalsh(system.hessian(x, c))
            point = {"x": x, "action": system.value(x, c), "eigenvalues": eigenvalues,
                     "index": int(np.sum(eigenvalues < 0))}
            if (fold_a or fold_b) and point["index"] != index:
                continue
            found.append(point)
    return found


def _segments_with_folds(branch: StationaryBranch):
    """The segments of the branch's polyline with its located turns in the control inserted as vertices: ((c, x, is
    a turn) at either end, the Hessian index of the segment's branch points, whether it is the last segment). A turn
    is a fold, or a branch point with the points on both sides of it beyond its control on the same side (a
    pitchfork's bifurcating branch); a branch point the branch passes straight through is not."""
    control = [float(c) for c in branch.control]

    def turns(s) -> bool:
        if s.status != Status.CONVERGED or not math.isfinite(s.control.value):
            return False
        if s.kind == "fold":
            return True
        i = s.between[0]
        return (s.kind == "branch_point" and i + 1 < len(control)
                and (control[i] - s.control.value) * (control[i + 1] - s.control.value) > 0)

    folds = {s.between[0]: s for s in branch.singularities if turns(s)}
    vertices, indices = [], []
    for i, (c, x, index) in enumerate(zip(branch.control, branch.state, branch.index)):
        vertices.append((float(c), x, False))
        indices.append(int(index))
        fold = folds.get(i)
        if fold is not None and i + 1 < len(branch.control):
            vertices.append((float(fold.control.value), np.asarray(fold.state, dtype=float), True))
            indices.append(int(branch.index[i + 1]))  # the segment from the fold on lies on the side after it
    n = len(vertices) - 1
    for k in range(n):
        # a segment's index: that of its end that is not a fold (before a fold: the point before it)
        index = indices[k] if not vertices[k][2] else indices[k + 1] if not vertices[k + 1][2] else indices[k]
        yield vertices[k], vertices[k + 1], index, k + 1 == n
