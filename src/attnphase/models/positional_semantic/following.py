"""A branch followed in α on one split-line rule, and where the positional branch ends on it.

A branch the tensor rule carries to some α is not always there on the accurate rules: at ω = 0 the tensor
rules continue the positional branch up to α = 3, while on split-line rules it ends near α = 0.90 (and with
the g integrands a tensor solution carried across at α = 2.4 landed on another fixed point). So the branch is
followed on the first split-line rule itself from its anchor (`follow_on_rule`): it is either reached from
where it is known to exist or reported missing with the place where it ended on that rule.

Where a step fails while |m| falls along the path, the end is looked for at fixed |m| (`order_parameter`): a
continuous end or a fold above the anchor, a continuous end below it; the branch next to an upper end is reached
through |m| there.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.accurate import AccurateState, defect_correction, on_rule
from attnphase.models.positional_semantic.branch_solve import unsolved
from attnphase.models.positional_semantic.branches import ENDS_A_BRANCH, branch_loss
from attnphase.models.positional_semantic.coordinates import BranchCoordinates
from attnphase.models.positional_semantic.order_parameter import (BranchEnd, at_alpha_through_order_parameter,
                                                                  continuous_end, fold_end)
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.rules import Rule
from attnphase.models.positional_semantic.tensor_following import ANCHOR_ALPHA, FOLLOW_MAX_STEP, FOLLOW_MIN_STEP
from attnphase.numeric.branches import FollowedBranch
from attnphase.results import Status

__all__ = ["RETRY_MAX_STEP", "END_LOOKAHEAD", "LOWER_END_WINDOW", "FollowedOnRule", "follow_on_rule"]

# `follow_on_rule` retries a failed step from the path's own extrapolation only on steps up to this long: the branch's
# end is bracketed by a failed step of FOLLOW_MIN_STEP, and a longer failed step is halved anyway (the retry would
# only save steps; at ω = 0 the retries on longer steps cost 75 evaluations of split-line 8 without changing the end).
RETRY_MAX_STEP = 2 * FOLLOW_MIN_STEP
# A continuous end is looked for where a step up fails and m² falls along the path on a line that reaches 0 within this
# of the last point: near the end (at ω = 0.15 on split-line 8 the line from α = 1.450, 1.460 reaches 0 at 1.476, the
# end is at 1.4743); looked for from farther (the line from 1.30, 1.3625 reaches 0 at 1.66), the m² extrapolation
# of the end is off by 0.02 and bars the solves through |m| for α within that of it.
END_LOOKAHEAD = 2 * RETRY_MAX_STEP
# Below the anchor the positional branch can reach m = 0 continuously too, α falling as |m| falls (at ω = 0.3 near
# α = 0.058, where the trivial state's multiplier in m crosses 1). The end moves with the rule, by the crossing of
# that multiplier: from split-line 8 to count-split 16 by −3.3e-4 at ω = 0.3 (1.01907 against 1.02197 at α = 0.06,
# slope about 9 per unit α), +3.3e-4 at ω = 0.45 (end near 0.043) and −1.7e-3 at ω = 0.15 (1.00645 against 1.0175
# at α = 0.08, slope 6.6; end near 0.079). Within four times the largest (and the end's own error) of split-line 8's
# lower end the branch is undecided (status limited); below that, absent.
LOWER_END_WINDOW = 7e-3


class FollowedOnRule(FollowedBranch):
    """A branch followed on one rule (`follow_on_rule`) that knows where the positional branch ends once a failed
    step has located it (`end`, a BranchEnd: where it reaches m = 0, or a fold; else None), and the α it solved
    through the order parameter (`through_order_parameter`), and the end on the ladder's top rungs (`ladder_ends`, by
    branch_end.next_to_end).
    `loss(α)` then names that end, and below it, where the branch exists but its fixed point at α was not found, the
    loss is failed, not converged."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.end: BranchEnd | None = None
        self.lower_end: BranchEnd | None = None  # where it reaches m = 0 below the anchor, once located
        self.through_order_parameter: set[float] = set()  # the α solved at fixed |m|
        self.ladder_ends = None  # the end on the ladder's top rungs (branch_end.TopEnds), once located

    def short_of_end(self, control: float) -> bool:
        """Whether `control` lies between the anchor and the located end, below its error: the branch exists there."""
        return self.end is not None and self.anchor <= control < self.end.alpha - self.end.error

    def past_lower_end(self, control: float) -> bool:
        """Whether `control` lies below the located lower end by more than its error and LOWER_END_WINDOW (the most
        the finer rules move it): the branch is absent there."""
        end = self.lower_end
        return end is not None and control < end.alpha - end.error - LOWER_END_WINDOW

    def loss(self, control: float):
        loss = super().loss(control)
        lower = self.lower_end
        if loss is not None and lower is not None and control < self.anchor and loss.status != Status.FAILED:
            message = f"{loss.message}; {lower.describe()}"
            if self.past_lower_end(control):
                return replace(loss, message=message)
            if control <= lower.alpha + lower.error + LOWER_END_WINDOW:
                return replace(loss, status=Status.LIMITED,
                               message=f"{message}: undecided at α = {control:g}, within {LOWER_END_WINDOW:g} of that "
                                       "end, by which the finer rules move it")
            return replace(loss, status=Status.FAILED,
                           message=f"{message}: the branch exists at α = {control:g}, where it was not solved")
        if loss is None or self.end is None or control < self.anchor:
            return loss
        message = f"{loss.message}; {self.end.describe()}"
        if self.short_of_end(control):
            return replace(loss, status=Status.FAILED,
                           message=f"{message}: the branch exists at α = {control:g}, where it was not solved")
        return replace(loss, message=message)


def follow_on_rule(tensor_path: FollowedBranch, branch: str, params: Parameters, rule: Rule) -> FollowedOnRule:
    """The positional or semantic branch followed in α on the split-line `rule`, from the anchor of its
    tensor-rule path (`tensor_following.follow`), carried onto the rule there: `at(α)` is an AccurateState or
    None with `loss(α)` saying where the branch ended on the rule.

    A tensor solution carried onto the rule at α itself can land on another fixed point: at ω = 0 the tensor rules
    continue the positional branch to α = 3, while on split-line rules it ends near α = 0.90, and (with the g
    integrands in place of the by-parts ones) the carry at α = 2.4 landed on a positional fixed point with |m| =
    0.003 (tensor: 0.023) that the branch does not reach. Each step starts from the tensor path's state at the new α
    shifted by the offset between the two rules at the nearest solved α (the rules differ by a slowly varying bias:
    at ω = 0.3 this takes the positional branch from 0.3 to 1.25 in steps of FOLLOW_MAX_STEP, where the path's own
    extrapolation from one point failed at 0.8), with the inverse Jacobian of that solution (`on_rule`: Broyden,
    then a fresh Jacobian of this rule's map), and where that fails on a step of at most RETRY_MAX_STEP, once more
    from the path's own extrapolation (at ω = 0, near the end, the seeded start misses the branch); the branch ends
    where no fixed point is found in steps down to FOLLOW_MIN_STEP, or where it collapses or jumps (`branch_loss`; a
    jump is a solution far from both that tensor-seeded start and the path's linear extrapolation: the extrapolation
    misses the curvature of the positional branch at ω = 0.3 by more than the jump fraction over a 0.45 step, and the
    tensor-seeded start misses the fall of its |m| towards the end at ω = 0).

    Where the positional branch ends continuously (m → 0), the solves at fixed α fail up to ~0.004 before the end. So
    where a step up fails while the path's m² falls towards 0 within END_LOOKAHEAD, the end is located at fixed |m|
    (`continuous_end`, kept as the path's `end`). Where m² falls but no continuous end is located, α at fixed |m| may
    peak first (a fold, `fold_end`: ω = 0.2), and that is the end. Steps past it then fail without a solve (criterion
    "continuous_end" or "fold"); steps between the point it was located from and the end are solved through the order
    parameter on the branch's side of the end (`at_alpha_through_order_parameter`; at fixed α a solve from the path
    can converge onto another fixed point there), and so is any other failed step below the end. Those solutions are
    not judged for a jump from the path's linear extrapolation, which misses m ∝ √(α_e − α).

    Below the anchor the branch can end continuously too, α falling as |m| falls (ω = 0.3: near α = 0.058). Where a
    step down fails while m² falls towards 0 within END_LOOKAHEAD, that end is located the same way (`lower_end`);
    steps more than LOWER_END_WINDOW (and its error) below it fail without a solve (criterion "continuous_end"), and
    `loss` names it: the branch absent below that, undecided (status limited) within it, and failed where it was lost
    above that (it exists there).
    """
    coords = BranchCoordinates(branch, params)
    seeded_at: dict[float, np.ndarray] = {}  # α -> the tensor-seeded start of the solve there
    end_tried: set[float] = set()  # the path points an end was looked for from
    lower_end_tried: set[float] = set()  # the same for the lower end
    tensor_path.at(tensor_path.anchor)  # settles the anchor (a fallback one where the first fails) before it is read

    def tensor_state(alpha):
        solution = tensor_path.at(alpha)
        return None if solution is None else coords.from_state(solution.state)

    def solve(alpha, guess, previous: AccurateState | None) -> AccurateState:
        if previous is not None and followed.past_lower_end(alpha):
            past = replace(previous.solution, alpha=alpha, status=Status.NOT_FOUND,
                           message=f"past the branch's lower end on {rule.label} (continuous_end)")
            return AccurateState(past, None, rule.label)
        end = followed.end
        if previous is not None and end is not None and alpha > end.alpha + end.error:
            past = replace(previous.solution, alpha=alpha, status=Status.NOT_FOUND,
                           message=f"past the branch's end on {rule.label} ({end.criterion})")
            return AccurateState(past, None, rule.label)
        if previous is not None and end is not None and end.located_from < alpha < end.alpha - end.error:
            # between the point the end was located from and the end: through |m| first (at fixed α a solve from the
            # path can converge onto another fixed point there: ω = 0.15, α = 1.4735 on split-line 8)
            reached = through_order_parameter(alpha, end, previous)
            if reached is not None:
                return reached
        state = solve_at_fixed_alpha(alpha, guess, previous)
        if state.success or previous is None or branch != "positional":
            return state
        if alpha < previous.solution.alpha:
            if (followed.lower_end is None and previous.solution.alpha not in lower_end_tried
                    and m_falls_to(previous, within=END_LOOKAHEAD, side=-1)):
                lower_end_tried.add(previous.solution.alpha)
                followed.lower_end = continuous_end(previous, params, rule, side=-1)
            return state
        if followed.end is None and previous.solution.alpha not in end_tried and m_falls_to(previous):
            end_tried.add(previous.solution.alpha)
            vanishes = m_falls_to(previous, within=END_LOOKAHEAD)
            followed.end = (continuous_end(previous, params, rule) if vanishes else None) or fold_end(previous, params,
                                                                                                         rule)
        end = followed.end
        if end is None or alpha >= end.alpha - end.error:
            return state
        return through_order_parameter(alpha, end, previous) or state

    def through_order_parameter(alpha, end: BranchEnd, previous: AccurateState) -> AccurateState | None:
        reached = at_alpha_through_order_parameter(alpha, end, previous.solution, params, rule)
        if reached is not None:
            followed.through_order_parameter.add(alpha)
        return reached

    def m_falls_to(previous: AccurateState, within: float = math.inf, side: int = 1) -> bool:
        """Whether m² falls from the path's point before `previous` (below it; above it for side −1, a follow
        downwards) to it, on a line that reaches 0 within `within` beyond it."""
        here = previous.solution.alpha
        before_it = [a for a in followed.path if side * (a - here) < 0]
        if not before_it:
            return False
        earlier = followed.path[min(before_it, key=lambda a: abs(a - here))].solution
        now, before = previous.solution.m ** 2, earlier.m ** 2
        return now < before and now * abs(here - earlier.alpha) / (before - now) <= within

    def solve_at_fixed_alpha(alpha, guess, previous: AccurateState | None) -> AccurateState:
        if previous is None:  # an anchor: the tensor path's solution there, carried onto the rule
            anchored = tensor_path.at(alpha)
            if anchored is None and alpha == tensor_path.anchor:
                raise ParameterError("tensor_path", tensor_path.loss(alpha).message,
                                     f"a tensor path of the {branch} branch with a solution at its anchor")
            if anchored is None:  # the fallback anchor, off the tensor path
                return AccurateState(unsolved(branch, alpha, params, rule.nodes, "the tensor path does not reach "
                                              f"it: {tensor_path.loss(alpha).message}"), None, rule.label)
            return on_rule(AccurateState(anchored), params, rule)
        here, there = tensor_state(alpha), tensor_state(previous.solution.alpha)
        seeded = None if here is None or there is None else here + coords.from_state(previous.solution.state) - there
        if seeded is None or not coords.contains(seeded):
            moved = replace(previous.solution, alpha=alpha, state=coords.to_state(guess))
            return on_rule(AccurateState(moved, previous.inverse, previous.rule), params, rule)
        seeded_at[alpha] = seeded
        moved = replace(previous.solution, alpha=alpha, state=coords.to_state(seeded))
        state = on_rule(AccurateState(moved, previous.inverse, previous.rule), params, rule)
        # FollowedBranch hands over its extrapolation, or the nearest solution's own state where it has none
        extrapolated = not np.array_equal(guess, coords.from_state(previous.solution.state))
        if state.success or not extrapolated or abs(alpha - previous.solution.alpha) > RETRY_MAX_STEP:
            return state
        # Where the offset between the rules changes fast, the seeded start misses the branch and the path's own
        # extrapolation (`guess`) is the better one: at ω = 0 the tensor rule's positional |m| stays near 0.11 past
        # α = 0.8 while on count-split 10 it falls to 0 at α = 0.9188 (0.111, 0.095, 0.074, 0.049 at 0.8, 0.839,
        # 0.874, 0.901); from the seeded start (|m| 0.049) the solve at 0.9106 failed, from the extrapolation (0.039)
        # a fresh-Jacobian Broyden solve converges in 11 evaluations to 0.033. (The residual at either start does not
        # tell which is better: near the end the map is nearly neutral in m.)
        retried = defect_correction(replace(moved, state=coords.to_state(guess)), params, rule, anderson=False)
        return retried if retried.success else state

    def lost(state: AccurateState, prediction):
        if followed.end is not None and state.solution.alpha > followed.end.alpha + followed.end.error:
            return followed.end.criterion
        if followed.past_lower_end(state.solution.alpha):
            return "continuous_end"
        if state.solution.alpha in followed.through_order_parameter:
            prediction = None
        seeded = None if prediction is None else seeded_at.get(state.solution.alpha)
        reason = branch_loss(state.solution, prediction if seeded is None else seeded, coords)
        if reason == "jumped" and seeded is not None:
            # from the seeded start alone, every step past α = 0.84 at ω = 0 longer than ~0.01 "jumped" (see `solve`)
            reason = branch_loss(state.solution, prediction, coords)
        return reason if reason in ENDS_A_BRANCH else None

    # Where the tensor path's anchor was moved to the requested α (above 3 for the semantic branch) and the carry onto
    # the rule fails there, the branch is followed on the rule from its usual anchor, where it is known to exist.
    followed = FollowedOnRule(solve, lost, lambda state: coords.from_state(state.solution.state), tensor_path.anchor,
                              max_step=FOLLOW_MAX_STEP, min_step=FOLLOW_MIN_STEP, contains=coords.contains, name="α",
                              fallback_anchors=[ANCHOR_ALPHA[branch]])
    return followed
