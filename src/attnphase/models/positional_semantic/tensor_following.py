"""A branch followed on a tensor rule: in α from its anchor (`follow`), and along a path of parameters at fixed α
(`carry`, from the default σ, λ and A: `path_from_defaults`), each step a `branch_solve.solve_branch` judged by
`branches.branch_loss`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from attnphase.models.positional_semantic.branch_solve import solve_branch, unsolved
from attnphase.models.positional_semantic.branches import ENDS_A_BRANCH, absence, branch_loss
from attnphase.models.positional_semantic.coordinates import BranchCoordinates, initial_guess
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution
from attnphase.numeric.branches import FollowedBranch
from attnphase.params import check_choice
from attnphase.results import Status

__all__ = ["ANCHOR_ALPHA", "TRIVIAL_ANCHOR_ALPHA", "FOLLOW_MAX_STEP", "FOLLOW_MIN_STEP", "CARRY_STEP",
           "CARRY_MIN_STEP", "END_LOOKAHEAD_STEPS", "follow", "carry", "path_from_defaults", "continuous_end_on_path"]

# Where each branch is anchored, and the continuation steps that reach any α from there: the positional
# branch leaves the trivial state continuously at a small α (ω = 0.3: m = 0.0742, 0.0370 at α = 0.1, 0.07 on
# split-line 12 and count-split 12 alike, m² linear in α, 0 near α = 0.06; below it the followed path is lost,
# "not_converged" or "collapsed") and ends at large α only for small ω (split-line rules: α ≈ 0.90 at ω = 0, where
# m → 0); the semantic branch exists at large α and ends at a spinodal below α_c (ω = 0.3: α ≈ 0.64). A cold start
# elsewhere can land on another fixed point of the same invariant set: at ω = 0.3, α = 2 the default start of the
# positional branch converges on 10 nodes to m = 0.101, q = 0.097, V = 22.0 (unstable) where the branch followed
# from small α on the same rule has m = 0.261, q = 0.0500, V = 11.08 (stable).
ANCHOR_ALPHA = {"positional": 0.3, "semantic": 3.0}
# The trivial state (m = θ = 0) is the whole solution as α → 0 (q → 0); where its cold start fails at α (ω = 0.3,
# α = 1.25: the map leaves the domain), it is carried there from this α.
TRIVIAL_ANCHOR_ALPHA = 0.01
FOLLOW_MAX_STEP = 0.5
FOLLOW_MIN_STEP = 0.01


def follow(branch: str, params: Parameters, nodes_per_dim: int, *, low: float | None = None,
           high: float | None = None) -> FollowedBranch:
    """The positional or semantic branch as a continuation in α on the tensor rule with `nodes_per_dim`
    nodes (frozen-basin solves), from its anchor (ANCHOR_ALPHA; the semantic one's moved to `high` when the wanted
    range extends beyond it, with ANCHOR_ALPHA as the fallback, and for other than the default σ, λ and A the range's
    far end, reached by `carry`; for one α there, also where the path from the anchor does not reach α): `at(α)` is
    the branch's solution or None, `loss(α)` where and why it ended."""
    coords = BranchCoordinates(check_choice("branch", branch, ("positional", "semantic")), params)
    anchor = ANCHOR_ALPHA[branch]
    # The positional branch is followed down from its anchor, never started cold below it: below α ≈ 0.06 (ω = 0.3) it
    # has reached the trivial state, and a cold start at α = 1e-4 landed near it and passed for the branch (its path
    # up then jumped at α = 0.11, leaving the branch unsolved at every α).
    if branch == "semantic" and high is not None:
        anchor = max(anchor, high)
    # Where the moved anchor's cold start finds nothing (ω = 0.9, α = 6: the map leaves the domain), the branch is
    # followed there from its usual anchor, so that its loss is the path's evidence, not a failed start.
    fallback = [ANCHOR_ALPHA[branch]]
    path = path_from_defaults(params)
    # Away from the default parameters a branch can be absent at its usual anchor and present in the wanted range:
    # at ω = 0.3, λ = 0.06 the positional branch carried from λ = 0.01 at α = 0.3 ends continuously near λ = 0.046,
    # while at α = 1.25 it exists (m = 0.186 on 10 nodes). The far end of the range is then an anchor too, reached
    # without a cold start (one there can land on another fixed point): the default parameters' branch, followed
    # there in α from its own anchor, is carried to these parameters.
    carried_anchor = None if path is None else (high if branch == "positional" else low)
    if carried_anchor is not None:
        fallback.append(carried_anchor)

    def solve(alpha, guess, previous):
        if previous is None and alpha == carried_anchor and alpha not in (anchor, ANCHOR_ALPHA[branch]):
            return carried_from_defaults(alpha, None)
        solution = solve_branch(branch, alpha, params, nodes_per_dim=nodes_per_dim, guess=guess, stability=False)
        # a cold start at an anchor that finds no fixed point of the branch (none, or one on the trivial set): the
        # branch carried there from the default parameters
        if previous is None and path is not None and branch_loss(solution, None, coords) in ("not_converged",
                                                                                             "collapsed"):
            return carried_from_defaults(alpha, solution)
        return solution

    def carried_from_defaults(alpha, cold: BranchSolution | None) -> BranchSolution:
        """The branch at α carried from the default parameters (`carry` along `path` at fixed α), started from a cold
        start there where `cold` is the failed cold start at these parameters, else from the default parameters'
        branch followed to α."""
        start = None
        if cold is None:
            defaults = path(0.0)
            reached = follow(branch, defaults, nodes_per_dim, low=alpha, high=alpha)
            start = reached.at(alpha)
            if start is None:
                why = reached.loss(alpha).message
                return unsolved(branch, alpha, params, nodes_per_dim, "the branch at the default σ, λ and A, from "
                                f"which it would be carried, does not reach α = {alpha:g}: {why}")
        carried = carry(branch, lambda t: (path(t), alpha), nodes_per_dim,
                        start=None if start is None else start.state)
        return _carried_or_why_not(cold, carried, path, branch, alpha, nodes_per_dim)

    def lost(solution, prediction):
        if solution.status == Status.LOST:  # carried from where it exists, it met the trivial set on the way: evidence
            return "absent"
        reason = branch_loss(solution, prediction, coords)
        return reason if reason in ENDS_A_BRANCH else None

    def followed_from(start: float, fallback_anchors) -> FollowedBranch:
        return FollowedBranch(solve, lost, lambda solution: coords.from_state(solution.state), start,
                            max_step=FOLLOW_MAX_STEP, min_step=FOLLOW_MIN_STEP,
                            anchor_guess=initial_guess(branch, params), contains=coords.contains, name="α",
                            absent=absence(branch, params), fallback_anchors=fallback_anchors)

    near = followed_from(anchor, fallback)
    if carried_anchor is None or low != high or carried_anchor == anchor:
        return near
    # One α away from the default σ, λ and A: the branch can exist at the usual anchor and at α on two sheets that
    # do not meet in α (ω = 0.3, λ = 0.05: followed from α = 0.3 it ends at a fold near α = 0.34, while at α = 1.25 it
    # exists, m = 0.2036, continuous in λ with the default branch). Where the path from the usual anchor does not
    # reach α, the branch carried to α from the default parameters is it; where that fails too, the path's end
    # stays the evidence.
    if near.at(carried_anchor) is not None or carried_anchor in near.holes or near.loss(carried_anchor) is None:
        return near
    far = followed_from(carried_anchor, ())
    return far if far.at(carried_anchor) is not None else near


def _carried_or_why_not(cold: BranchSolution | None, carried: FollowedBranch, path: Callable[[float], Parameters],
                        branch: str, alpha: float, nodes_per_dim: int) -> BranchSolution:
    """The branch carried to α from the default parameters along `path` where that succeeds; else the failed cold
    start `cold` (an unsolved one where there was none) with the carry's outcome, where it stopped given in the
    parameters: status lost where the carried branch collapsed onto the trivial set on the way or reached it
    continuously (`continuous_end_on_path`; the branch followed from where it exists ends there, as a loss in α
    does), its message added otherwise."""
    solution = carried.at(1.0)
    if solution is not None:
        return solution
    loss = carried.loss(1.0)
    where = ""
    if loss.bracket is not None and all(math.isfinite(t) for t in loss.bracket):
        alive, lost = (path(t) for t in loss.bracket)
        where = f" (alive at {_changed(alive, path(1.0))}, lost at {_changed(lost, path(1.0))})"
    what = (f"carried from the default σ, λ and A (t = 0) to the requested ones (t = 1) at α = {alpha:g} on a straight "
            f"path in log σ, log λ and A: {loss.message}{where}")
    if cold is None:  # reached only by the carry: its outcome is the whole message
        cold = unsolved(branch, alpha, path(1.0), nodes_per_dim, what)
    if loss.criterion == "collapsed":
        return replace(cold, status=Status.LOST, message=f"it collapses onto the trivial set: {what}")
    end = continuous_end_on_path(carried, branch)
    if end is not None:
        t_end, error = end
        order = "m" if branch == "positional" else "θ"
        return replace(cold, status=Status.LOST, message=(
            f"it reaches the trivial set continuously on the way, {order} = 0 at t = {t_end:.4f} ± {error:.1g} "
            f"({_changed(path(t_end), path(1.0))}; {order}² falls linearly in t over its last three points): {what}"))
    return cold if cold.message == what else replace(cold, message=f"{cold.message}; {what}")


# Where a carry stops on a point whose order parameter's square extrapolates linearly in t to 0 within this many of
# its last steps, the branch has met the trivial set continuously there (`continuous_end_on_path`).
END_LOOKAHEAD_STEPS = 2


def continuous_end_on_path(carried: FollowedBranch, branch: str) -> tuple[float, float] | None:
    """(t_e, error) where the branch, carried along a path (`carry`) and lost after its last point alive, reaches the
    trivial set continuously (|m| for the positional branch, |θ| for the semantic one → 0 like √(t_e − t)); None
    where its last three points do not show that.

    Near such an end the solves at fixed parameters stop converging before it, as they do in α (`following`), so the
    end is extrapolated: the order parameter's square must fall along the last three points, t_e is the zero of the
    line through the last two, within END_LOOKAHEAD_STEPS of the last step beyond it, and its error, the difference
    from the zero through the two before, at most half that distance (a fold, where the square falls ever faster, or
    a path that only dips, fails these). At ω = 0.3, α = 0.3, on the path to σ = 0.3, λ = 0.1 the positional branch's
    m² falls 1.83e-3, 1.28e-3, 7.97e-4 at t = 0.3197, 0.3238, 0.3277: t_e = 0.3342 ± 0.0008, where q falls to 0 too."""
    loss = carried.loss(1.0)
    if loss is None or loss.bracket is None:
        return None
    alive = loss.bracket[0]
    ts = sorted(t for t in carried.path if t <= alive)[-3:]
    if len(ts) < 3:
        return None
    squares = [_order_parameter_size(carried.path[t], branch) ** 2 for t in ts]
    if not squares[0] > squares[1] > squares[2] > 0:
        return None
    zeros = [t1 + s1 * (t1 - t0) / (s0 - s1) for t0, t1, s0, s1 in zip(ts, ts[1:], squares, squares[1:])]
    ahead, error = zeros[-1] - alive, abs(zeros[-1] - zeros[-2])
    if not 0 < ahead <= END_LOOKAHEAD_STEPS * (alive - ts[1]) or error > 0.5 * ahead:
        return None
    return zeros[-1], error


def _order_parameter_size(solution: BranchSolution, branch: str) -> float:
    """|m| (positional) or |θ| (semantic): what vanishes on the trivial set."""
    return float(np.linalg.norm(solution.state[3:])) if branch == "positional" else abs(float(solution.theta))


def _changed(params: Parameters, target: Parameters) -> str:
    """σ, λ and A of `params`, as far as the path moves them (those that differ from their defaults at `target`)."""
    defaults = Parameters(omega=target.omega, L=target.L, gram=target.gram)
    parts = [f"σ = {params.sigma:.4g}" if target.sigma != defaults.sigma else "",
             f"λ = {params.lam:.4g}" if target.lam != defaults.lam else "",
             "A = (" + ", ".join(f"{a:.4g}" for a in params.A) + ")" if target.A != defaults.A else ""]
    return ", ".join(p for p in parts if p)


# A branch is carried along a path of parameters (`carry`) in steps of at most CARRY_STEP of the path, halved on a
# failure down to CARRY_MIN_STEP.
CARRY_STEP = 1 / 8
CARRY_MIN_STEP = 1 / 256


def carry(branch: str, path, nodes_per_dim: int, *, start=None) -> FollowedBranch:
    """The branch's fixed point carried along `path` (t in [0, 1] -> (Parameters, α)) from t = 0, where its solve from
    `start` (a full state; None: the cold start `initial_guess`) is to find it, as a `numeric.branches.FollowedBranch`
    in t (steps of at most CARRY_STEP, halved down to CARRY_MIN_STEP where the solve fails, the branch collapses onto
    the trivial set or jumps): `at(1.0)` is the branch at the path's end, None where it is lost on the way
    (`loss(1.0)` says where and why) or not found at t = 0. The path is extrapolated in the full state (q, V, θ, m),
    whose reduced coordinates depend on the parameters along it."""
    # One set of reduced coordinates measures every jump: the same metric along the whole path.
    metric = BranchCoordinates(branch, path(0.0)[0])

    def solve(t, guess, previous):
        params, alpha = path(t)
        start = None if guess is None else BranchCoordinates(branch, params).from_state(guess)
        return solve_branch(branch, alpha, params, nodes_per_dim=nodes_per_dim, guess=start, stability=False)

    def lost(solution, prediction):
        predicted = None if prediction is None else metric.from_state(prediction)
        reason = branch_loss(solution, predicted, metric)
        return reason if reason in ENDS_A_BRANCH else None

    return FollowedBranch(solve, lost, lambda solution: solution.state, 0.0, max_step=CARRY_STEP,
                        min_step=CARRY_MIN_STEP, name="t", anchor_guess=start)


def path_from_defaults(params: Parameters) -> Callable[[float], Parameters] | None:
    """The straight path t in [0, 1] -> Parameters from the default σ, λ and A (at the same ω, L and encodings;
    t = 0) to `params` (t = 1), in log σ, log λ and A (the scales move geometrically; a row-stochastic A stays
    so): the path a branch is carried along (`carry`) where its cold start fails for other parameters (σ = 0.7,
    ω = 0.3: the semantic map leaves the domain from it at α = 3), from where it is known to exist. None where the
    parameters are the defaults."""
    defaults = Parameters(omega=params.omega, L=params.L, gram=params.gram)
    if defaults.A is None or (defaults.sigma, defaults.lam, defaults.A) == (params.sigma, params.lam, params.A):
        return None
    start_A, end_A = np.array(defaults.A), np.array(params.A)

    def path(t):
        return Parameters(omega=params.omega, sigma=defaults.sigma * (params.sigma / defaults.sigma) ** t,
                          lam=defaults.lam * (params.lam / defaults.lam) ** t,
                          A=tuple(float(a) for a in start_A + t * (end_A - start_A)), L=params.L, gram=params.gram)

    return path

