"""The positional branch next to its end, decided on the top rungs of the ladder.

`following` locates where the positional branch ends on the first split-line rule: where it reaches m = 0, or at a
fold. That end moves with the rule by far more than the rules' other differences: at ω = 0 it lies at α = 0.9016,
0.9072, 0.9103, 0.9148, 0.9192 on split-line 8 … 16 and 0.9152, 0.9188, 0.9258, 0.9307, 0.9324 on count-split 8 … 16
(at ω = 0.15 from 1.4743 on split-line 8 to 1.5083 on count-split 16; at ω = 0.2 from a fold at 1.7360 on split-line 8
to a continuous end at 1.7689 on count-split 16; research notes). So the first rule alone reported the branch missing
where the finer rules have it. Near its end, whether the branch exists at α and its fixed point there are decided on
the top SPREAD_RUNGS rungs of the ladder, the rungs whose spread is every other value's error:
- `end_on_rule`: the end on a finer rule, located at the same |m| as on another rule, each point started from that
  rule's (at fixed |m| the branch is regular; at fixed α its m ∝ √(α_e − α) is ill-conditioned), a fold or a
  continuous end, whichever that rule has (order_parameter.located_end);
- `top_ends`: the end on each top rung, the first located from the first rule's end, each next from the one below;
- `next_to_end`: past the top rungs' end by more than their spread, the branch reported missing with those ends as
  the evidence; within it, undecided; below it, the branch on each top rung whose own end lies above α, reached
  through |m| (order_parameter.at_alpha_through_order_parameter) and climbed like every other branch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from attnphase.models.positional_semantic.accurate import AccurateState, climb_branch
from attnphase.models.positional_semantic.following import FollowedOnRule
from attnphase.models.positional_semantic.order_parameter import (BranchEnd, at_alpha_through_order_parameter,
                                                                  at_order_parameter, located_end,
                                                                  order_parameter_solver)
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import MissingBranch
from attnphase.models.positional_semantic.rules import SPREAD_RUNGS, Rule
from attnphase.numeric.convergence import LadderResult, Tolerance
from attnphase.results import Result, Status

__all__ = ["END_WINDOW", "LocatedEnd", "TopEnds", "end_on_rule", "top_ends", "next_to_end",
           "with_split_line_free_energy"]

# How far past the first rule's end the top rungs are asked. On the default ladder the top rungs' end lies 0.031 (ω = 0)
# and 0.034 (ω = 0.15) above split-line 8's; beyond four times that, the branch is reported missing with the first
# rule's end as the evidence, without the end on the top rungs (about a minute of count-split evaluations).
END_WINDOW = 0.15


@dataclass(frozen=True)
class LocatedEnd(Result):
    """The positional branch's end on one rule (`end`, an order_parameter.BranchEnd), or why it was not located there
    (status failed, `end` None)."""

    status: Status
    message: str
    end: BranchEnd | None = None


def end_on_rule(other: BranchEnd, params: Parameters, rule: Rule) -> LocatedEnd:
    """The positional branch's end on `rule`, located at the |m| of `other` (the end on another rule): each point
    solved for (q, V, α) at fixed m (`at_order_parameter`), the first started from other's point at that |m| (with its
    inverse Jacobian), each next from other's point shifted by the offset between the two rules at the point before;
    then a fold at the first peak of α as |m| falls, else the continuous end extrapolated in m²
    (order_parameter.located_end; at ω = 0.2 a fold on count-split 12, a continuous end on count-split 16). Its
    `located_from` is the α of its point at the largest |m|."""
    points = []
    for k, lower in enumerate(other.points):
        mu = float(np.linalg.norm(lower.state[3:]))
        start = np.array([lower.state[0], lower.state[1], lower.alpha])
        inverse = lower.result.inverse_jacobian
        if points:
            before, other_before = points[-1], other.points[k - 1]
            start += np.array([before.state[0] - other_before.state[0], before.state[1] - other_before.state[1],
                               before.alpha - other_before.alpha])
            inverse = before.result.inverse_jacobian
        point = at_order_parameter(mu, lower.state[3:] / mu, start, params, rule, inverse=inverse)
        if not point.success:
            return LocatedEnd(Status.FAILED, f"no fixed point at |m| = {mu:.2g} on {rule.label}: {point.result.message}")
        points.append(point)
    end = located_end(points, rule.label, points[0].alpha, order_parameter_solver(params, rule))
    if end is None:
        alphas = ", ".join(f"{p.alpha:.5f}" for p in points)
        return LocatedEnd(Status.FAILED, f"α = {alphas} at the |m| of {other.rule}: no end located")
    return LocatedEnd(Status.CONVERGED, end.describe(), end)


@dataclass(frozen=True)
class TopEnds(Result):
    """The positional branch's end on the top rungs (`top_ends`): `alpha` (the top rung's) ± `error` (the spread over
    the rungs, plus the top end's own error), and each rung's LocatedEnd in climbing order (`ends`).
    Status failed where a rung's end was not located (then alpha and error are NaN)."""

    status: Status
    message: str
    alpha: float
    error: float
    ends: tuple[LocatedEnd, ...]

    def describe(self) -> str:
        located = ", ".join(f"{e.end.alpha:.5f} on {e.end.rule}" for e in self.ends if e.success)
        return f"α = {self.alpha:.5f} ± {self.error:.2g} on the top rungs ({located})"


def top_ends(first: BranchEnd, params: Parameters, rules: tuple[Rule, ...]) -> TopEnds:
    """The end `first` (on the rule it was followed on) located on each of the last SPREAD_RUNGS of `rules`
    (`end_on_rule`), the first of them from `first`, each next from the one below (at ω = 0: 11, 7 and 7 evaluations
    of count-split 12, 14 and 16 from split-line 8's continuous end)."""
    ends, other = [], first
    for rule in rules[-SPREAD_RUNGS:]:
        located = end_on_rule(other, params, rule)
        ends.append(located)
        if not located.success:
            return TopEnds(Status.FAILED, located.message, float("nan"), float("nan"), tuple(ends))
        other = located.end
    alphas = [e.end.alpha for e in ends]
    error = max(alphas) - min(alphas) + ends[-1].end.error
    return TopEnds(Status.CONVERGED, "", alphas[-1], error, tuple(ends))


def next_to_end(alpha: float, followed: FollowedOnRule, params: Parameters, rules: tuple[Rule, ...],
                tolerance: Tolerance) -> LadderResult | MissingBranch:
    """The positional branch at α next to its end `followed.end` (on rules[0], where it was followed): α
    more than END_WINDOW past that end, or past the top rungs' end (`top_ends`, kept in `followed.ladder_ends` for the
    next α) by more than its error: MissingBranch not_found with that end as the evidence; within its error:
    MissingBranch limited (whether the branch exists at α is not decided); below it: the branch on the top rungs whose
    own end lies above α, each reached through |m| from its end's points on the branch's side of the end, climbed to
    `tolerance` (`climb_branch`), with Φ from the split-line rules where the top rungs are count-split ones
    (`with_split_line_free_energy`)."""
    first = followed.end
    if alpha > first.alpha + END_WINDOW:
        followed.at(alpha)  # past the end a step fails without a solve: the loss says where the branch was lost
        return MissingBranch("positional", Status.NOT_FOUND,
                             f"positional: {rules[0].label} does not reach α = {alpha:g}: {followed.loss(alpha).message};"
                             f" α is more than {END_WINDOW:g} past that end, over four times the most the finer rules "
                             f"move it (research notes)")
    if followed.ladder_ends is None:
        followed.ladder_ends = top_ends(first, params, rules)
    ends = followed.ladder_ends
    if not ends.success:
        return MissingBranch("positional", Status.FAILED,
                             f"positional: next to its end ({first.describe()}), not located on the top rungs: "
                             f"{ends.message}")
    if alpha > ends.alpha + ends.error:
        return MissingBranch("positional", Status.NOT_FOUND, f"positional: past its end, {ends.describe()}")
    if alpha >= ends.alpha - ends.error:
        return MissingBranch("positional", Status.LIMITED, f"positional: whether it exists at α = {alpha:g} is not "
                                                           f"decided: its end is {ends.describe()}")
    nearest = followed.path[min(followed.path, key=lambda a: abs(a - alpha))].solution
    top = rules[-SPREAD_RUNGS:]
    located = {e.end.rule: e.end for e in ends.ends}

    def through_order_parameter(rule: Rule, previous: AccurateState | None) -> AccurateState:
        solution = nearest if previous is None or not previous.success else previous.solution
        end = located[rule.label]
        if alpha >= end.alpha - end.error:
            return AccurateState(replace(solution, alpha=alpha, status=Status.NOT_FOUND,
                                         message=f"past its end on {rule.label}, α = {end.alpha:.5f}"), None, rule.label)
        reached = at_alpha_through_order_parameter(alpha, end, solution, params, rule)
        if reached is None:
            return AccurateState(replace(solution, alpha=alpha, status=Status.FAILED,
                                         message=f"not reached through |m| from its end on {rule.label}"), None,
                                 rule.label)
        return reached

    # the lowest top rung whose end lies above α (the top one's does: α is below it by more than the error)
    start = next(k for k, rule in enumerate(top) if alpha < located[rule.label].alpha - located[rule.label].error)
    climbed = climb_branch(None, params, top[start:], tolerance, carry=through_order_parameter)
    note = f"; next to its end ({ends.describe()}), reached through |m| on the top rungs"
    if start:
        note += f"; past its end on {', '.join(r.label for r in top[:start])}"
    climbed = replace(climbed, message=climbed.message + note)
    return with_split_line_free_energy(climbed, params, rules, tolerance) if climbed.values else climbed


def with_split_line_free_energy(climbed: LadderResult, params: Parameters, rules: tuple[Rule, ...],
                                tolerance: Tolerance) -> LadderResult:
    """A climb on count-split rungs alone with Φ and ε_t = −Φ added: those rules do not integrate E[M] to Φ's accuracy
    (accurate.FAMILY_CHECKED), so Φ is taken at the climb's top state on the top SPREAD_RUNGS split-line rules of
    `rules`: the finest one's value, its error the spread over them plus the spread of the finest one's Φ over the
    climb's states (Φ is stationary at the fixed point, so a state's error moves it at second order; this bounds
    that). Limited where that error is above `tolerance`."""
    if "free_energy" in climbed.values:
        return climbed
    split = [rule for rule in rules if rule.family == "split-line"][-SPREAD_RUNGS:]
    top = climbed.answer.solution
    on_rules = [rule.equations(params, top.alpha).free_energy_of_state(top.state) for rule in split]
    finest = split[-1].equations(params, top.alpha)
    at_states = [finest.free_energy_of_state(a.solution.state) for a in climbed.answers if a.success]
    phi = on_rules[-1]
    error = max(on_rules) - min(on_rules) + max(at_states) - min(at_states)
    values = {**climbed.values, "free_energy": phi, "train_loss": -phi}
    errors = {**climbed.errors, "free_energy": error, "train_loss": error}
    status, message = climbed.status, f"{climbed.message}; Φ at its state on {', '.join(r.label for r in split)}"
    if status == Status.CONVERGED and not tolerance.allows(error, phi):
        status, message = Status.LIMITED, f"{message}: Φ error {error:.2g} above the tolerance"
    return replace(climbed, values=values, errors=errors, status=status, message=message)
