"""The criteria that say whether a solution is (still) the branch it was started on: `distinct` (reported at all),
`branch_loss` (why a followed branch ended), `absence` (no fixed point at any α).
"""

from __future__ import annotations

import numpy as np

from attnphase.models.positional_semantic.coordinates import BranchCoordinates
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution

__all__ = ["COLLAPSE_LEVEL", "JUMP_FRACTION", "ENDS_A_BRANCH", "distinct", "branch_loss", "absence"]

COLLAPSE_LEVEL = 1e-6  # |θ| (semantic) or |m| (positional) below this: collapsed onto the trivial set
# A continuation step that moves any reduced coordinate by more than this fraction of its size
# (|c|, |m| measured against 0.1) from the linear prediction is a jump onto another fixed point, not
# the branch: at ω = 0.3 the semantic branch's loss moved c from 0.72 to 0.57 and V by 14% in one
# 0.02 step, while genuine steps of 0.1 move the prediction error by < 1%.
JUMP_FRACTION = 0.1
# What ends a followed branch: no converged fixed point, a collapse onto the trivial set, or a jump to
# another fixed point (an instability does not: the branch still exists, `stable` says the rest).
ENDS_A_BRANCH = ("not_converged", "collapsed", "jumped")


def distinct(solution: BranchSolution, others=()) -> bool:
    """A branch solution is reported only if it converged and did not collapse onto another branch."""
    if not solution.success:
        return False
    if solution.branch == "positional" and abs(solution.m) < COLLAPSE_LEVEL:
        return False  # collapsed onto the trivial fixed point
    if solution.branch == "semantic" and abs(solution.theta) < COLLAPSE_LEVEL:
        return False
    if solution.branch == "mixed":
        for o in others:
            if np.allclose(o.state, solution.state, atol=1e-6):
                return False
        if abs(solution.m) < COLLAPSE_LEVEL or abs(solution.theta) < COLLAPSE_LEVEL:
            return False
    return True


def branch_loss(solution: BranchSolution, prediction, coords: BranchCoordinates) -> str | None:
    """Why `solution` is no longer the continued branch (None if it still is).

    Checked in order: not converged; collapsed onto the trivial set (not checked for the trivial branch, whose order
    parameters vanish by definition); jumped (some reduced coordinate differs from the continuation's `prediction`
    by more than JUMP_FRACTION of its size; skipped without a prediction); unstable (`solution.stable` False: an
    eigenvalue of dF with real part ≥ 1). A solution whose stability was not computed (`stable` None, e.g.
    `solve_branch(..., stability=False)`) is not judged on it: it is still the branch if it passes the other checks.
    """
    if not solution.success:
        return "not_converged"
    order = abs(solution.theta) if solution.branch == "semantic" else abs(solution.m)
    if solution.branch != "trivial" and order < COLLAPSE_LEVEL:
        return "collapsed"
    if prediction is not None:
        y = coords.from_state(solution.state)
        size = np.abs(prediction)
        if coords.has_c or coords.has_m:
            size[2:] = np.maximum(size[2:], 0.1)
        if np.any(np.abs(y - prediction) > JUMP_FRACTION * size):
            return "jumped"
    if solution.stable is False:  # None: not computed
        return "unstable"
    return None


def absence(branch: str, params: Parameters) -> str | None:
    """Why `branch` has no fixed point at any α for these parameters (None when it may have one).

    At ω = 1 the teacher y = A x does not depend on Q*: the prox depends on (ξ, η) through ξ alone, so
    E[g η] = 0 and θ̂ = α E[g η]/V* = 0 for every state, and θ = 0 after one step of the map. No fixed point
    has θ ≠ 0, on any rule. (Just below ω = 1 the tensor rule has semantic fixed points whose θ does not shrink
    with 1 − ω, |θ| = 0.021 at ω = 0.999, α = 3; split-line 8 has none at ω = 0.9 and 0.99, α = 3.)"""
    if branch == "semantic" and params.omega == 1.0:
        return "at ω = 1 the teacher (y = A x) does not depend on Q*, so θ̂ = α E[g η]/V* = 0 for every state"
    return None
