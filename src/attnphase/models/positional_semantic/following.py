"""A branch followed in α on one split-line rule, and where the positional branch ends on it.

A branch the tensor rule carries to some α is not always there on the accurate rules: at ω = 0 the tensor
rules continue the positional branch up to α = 3, while on split-line rules it ends near α = 0.90 (and with
the g integrands a tensor solution carried across at α = 2.4 landed on another fixed point). So the branch is
followed on the first split-line rule itself from its anchor (`follow_on_rule`): it is either reached from
where it is known to exist or reported missing with the place where it ended on that rule.

Where the positional branch ends continuously (m → 0), its fixed points at fixed α are ill-conditioned (m ∝ √(α_e − α))
and the solves there stop converging before the end; at fixed |m| the branch is regular, so the end is located there
(`continuous_end`) and the branch below it reached through |m| (`at_alpha_through_order_parameter`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.accurate import (RUNG_MAX_ITER, RUNG_STEP_TOL, RUNG_TOL, AccurateState,
                                                           defect_correction, on_rule)
from attnphase.models.positional_semantic.branches import (ENDS_A_BRANCH, FOLLOW_MAX_STEP, FOLLOW_MIN_STEP,
                                                           BranchCoordinates, branch_loss)
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution
from attnphase.models.positional_semantic.rules import Rule
from attnphase.numeric.branches import Continuation
from attnphase.numeric.fixedpoint import Broyden, FixedPointResult, solve_fixed_point
from attnphase.numeric.threshold import root_steps
from attnphase.numeric.transforms import Positive
from attnphase.results import Status

__all__ = ["RETRY_MAX_STEP", "END_ORDER_FRACTIONS", "OrderParameterPoint", "at_order_parameter", "ContinuousEnd",
           "continuous_end", "extrapolated_end", "at_alpha_through_order_parameter", "FollowedOnRule", "follow_on_rule"]

# `follow_on_rule` retries a failed step from the path's own extrapolation only on steps up to this long: the branch's
# end is bracketed by a failed step of FOLLOW_MIN_STEP, and a longer failed step is halved anyway (the retry would
# only save steps; at ω = 0 the retries on longer steps cost 75 evaluations of split-line 8 without changing the end).
RETRY_MAX_STEP = 2 * FOLLOW_MIN_STEP
# Where the positional branch ends continuously (m → 0, α ≈ α_e − c m²), the solves at fixed α stop converging before
# the end (at ω = 0 on split-line 8 they converged at |m| = 0.027 and failed at 0.013; at ω = 0.15 they failed at |m| ≈
# 0.04, 0.004 before the end): the branch is then solved at fixed |m| for α (`at_order_parameter`), at these fractions
# of |m| at the last α alive, and α_e extrapolated in m² (`continuous_end`).
END_ORDER_FRACTIONS = (0.5, 0.25, 0.125)
# The branch at a requested α below that end (`at_alpha_through_order_parameter`): secant steps in m², each point solved
# to ORDER_TOL relative, until its α matches to ALPHA_MATCH relative (then F − x at α is ~1e-8 relative, below
# RUNG_TOL).
ORDER_SECANT_STEPS = 6
ORDER_TOL = 1e-9
ALPHA_MATCH = 1e-9
# A continuous end is looked for where a step up fails and m² falls along the path on a line that reaches 0 within this
# of the last point: near the end (at ω = 0.15 on split-line 8 the line from α = 1.450, 1.460 reaches 0 at 1.476, the
# end is at 1.4743); looked for from farther (the line from 1.30, 1.3625 reaches 0 at 1.66), the m² extrapolation
# of the end is off by 0.02 and bars the solves through |m| for α within that of it.
END_LOOKAHEAD = 2 * RETRY_MAX_STEP


@dataclass(frozen=True)
class OrderParameterPoint:
    """The positional branch at a fixed m = μ u (u: a unit direction) on one rule, solved for (q, V, α): `state` x =
    (q, V, 0, m), `result` the fixed-point solve of (q, V, α)."""

    alpha: float
    state: np.ndarray
    result: FixedPointResult

    @property
    def success(self) -> bool:
        return self.result.status == Status.CONVERGED


def at_order_parameter(mu: float, direction, start, params: Parameters, rule: Rule, *, tol: float = RUNG_TOL,
                       step_tol: float | None = RUNG_STEP_TOL, inverse=None) -> OrderParameterPoint:
    """The positional fixed point on `rule` with m = mu · direction, solved for (q, V, α) from start = (q, V, α)
    (tol, step_tol: Broyden's, as in `defect_correction`; inverse: a neighbouring point's inverse Jacobian).

    At fixed α the branch's m is ill-conditioned near a continuous end (m ∝ √(α_e − α)); at fixed m, α is a smooth
    function of m², so Broyden's method (a forward-difference Jacobian first) converges in a few evaluations on
    (q, V, α) ↦ (F_q, F_V, α · (u · F_m) / μ), whose fixed points are those of the map with m = μ u (u · F_m = μ), in
    defect_correction's relative measure (the α residual is that of m).
    """
    direction = np.asarray(direction, float)

    def state(y):
        return np.array([y[0], y[1], 0.0, *(mu * direction)])

    def next_point(y):
        F = rule.equations(params, y[2]).evaluate(state(y)).next
        return np.array([F[0], F[1], y[2] * float(direction @ F[3:]) / mu])

    solver = Broyden(max_iter=RUNG_MAX_ITER, step_tol=step_tol, inverse=inverse)
    result = solve_fixed_point(next_point, np.asarray(start, float), solver,
                               transforms=(Positive(), Positive(), Positive()), tol=tol, spectrum=False)
    y = np.asarray(result.value, float)
    return OrderParameterPoint(float(y[2]), state(y), result)


@dataclass(frozen=True)
class ContinuousEnd:
    """Where a followed positional branch reaches m = 0 on one rule: `alpha` ± `error` (`continuous_end`), the α of
    the fixed point it was located from, and the points at fixed |m| it was extrapolated from."""

    alpha: float
    error: float
    rule: str
    located_from: float
    points: tuple[OrderParameterPoint, ...]

    def describe(self) -> str:
        sizes = ", ".join(f"{abs(p.state[3]):.2g}" for p in self.points)
        return (f"parameterised by |m| ({sizes}) it reaches m = 0 continuously at α = {self.alpha:.5f} ± "
                f"{self.error:.1g} on {self.rule}")


def continuous_end(alive: AccurateState, params: Parameters, rule: Rule) -> ContinuousEnd | None:
    """Where the positional branch, alive at `alive` (a fixed point on `rule`), reaches m = 0, or None when it does
    not do so continuously from there.

    The branch is solved at |m| = f·|m_alive| for f in END_ORDER_FRACTIONS (`at_order_parameter`, m kept in the
    direction of m_alive). Near a continuous end α = α_e − c m² + O(m⁴): α must rise as |m| falls, each step by at
    most half the one before (a quarter for the m² law; a fold ahead would make the steps grow or turn back). α_e is
    the m² extrapolation through the last two points, its error the difference from the extrapolation through the two
    before (the m⁴ term moves the last one sixteen times less) plus twice the solves' own (each point's α within
    RUNG_STEP_TOL relative).
    """
    solution = alive.solution
    m = np.asarray(solution.state[3:], float)
    size = float(np.linalg.norm(m))
    if solution.branch != "positional" or size == 0.0:
        return None
    direction = m / size
    sizes, alphas = [size], [solution.alpha]
    points = []
    start = np.array([solution.q, solution.V, solution.alpha])
    for fraction in END_ORDER_FRACTIONS:
        mu = fraction * size
        point = at_order_parameter(mu, direction, start, params, rule)
        if not point.success:
            return None
        points.append(point)
        sizes.append(mu)
        alphas.append(point.alpha)
        start = np.array([point.state[0], point.state[1], point.alpha])
    located = extrapolated_end(sizes, alphas)
    return None if located is None else ContinuousEnd(*located, rule.label, solution.alpha, tuple(points))


def extrapolated_end(sizes, alphas) -> tuple[float, float] | None:
    """(α_e, error) of a continuous end from the branch's α at decreasing |m| = `sizes` (at least three), or None
    where the points do not approach one (`continuous_end`'s criteria: α rising as |m| falls, each step at most half
    the one before; α_e the m² extrapolation through the last two points, its error the difference from the one
    through the two before plus twice the points' own)."""
    steps = np.diff(alphas)
    if not (np.all(steps > 0) and np.all(steps[1:] <= 0.5 * steps[:-1])):
        return None
    squares = np.square(sizes)
    extrapolated = [a1 + (a1 - a0) * s1 / (s0 - s1) for a0, a1, s0, s1 in zip(alphas, alphas[1:], squares, squares[1:])]
    return extrapolated[-1], abs(extrapolated[-1] - extrapolated[-2]) + 2 * RUNG_STEP_TOL * extrapolated[-1]


def _squared_m(point: OrderParameterPoint) -> float:
    return float(point.state[3:] @ point.state[3:])


def at_alpha_through_order_parameter(alpha: float, end: ContinuousEnd, solution: BranchSolution, params: Parameters,
                                     rule: Rule) -> AccurateState | None:
    """The positional branch at α below its continuous end `end`, reached at fixed |m| (`at_order_parameter`), where
    the solves at fixed α fail: m² by secant steps (numeric.threshold.root_steps) from the end's two points nearest
    α (α is nearly linear in m² there) until the point's α is α to ALPHA_MATCH (its solves to ORDER_TOL), then that
    state verified as the fixed point at α (`defect_correction`: a residual below RUNG_TOL at the start costs one
    evaluation; it decides, also where ORDER_SECANT_STEPS end short of α). `solution`: the branch's solution nearest α
    (its fields are carried over). None where a step fails, m² would turn negative, or the verification fails."""
    a, b = sorted(end.points, key=lambda p: abs(p.alpha - alpha))[:2]
    direction = b.state[3:] / math.sqrt(_squared_m(b))
    solved = [b]  # the points at fixed |m|, the last one the start of the next

    def alpha_offset(squared):
        if not squared > 0:
            return "m² would turn negative"
        last = solved[-1]
        point = at_order_parameter(math.sqrt(squared), direction, [last.state[0], last.state[1], alpha], params, rule,
                                   tol=ORDER_TOL, step_tol=None, inverse=last.result.inverse_jacobian)
        if not point.success:
            return point.result.message
        solved.append(point)
        return point.alpha - alpha, None

    slope = (b.alpha - a.alpha) / (_squared_m(b) - _squared_m(a))  # dα/d(m²)
    _, failed = root_steps(alpha_offset, _squared_m(b) - (b.alpha - alpha) / slope, ALPHA_MATCH * alpha / abs(slope),
                           known=[(_squared_m(b), b.alpha - alpha, slope)], max_steps=ORDER_SECANT_STEPS)
    if failed is not None:
        return None
    state = defect_correction(replace(solution, alpha=alpha, state=solved[-1].state), params, rule, anderson=False)
    return state if state.success else None


class FollowedOnRule(Continuation):
    """A branch followed on one rule (`follow_on_rule`) that knows where the positional branch reaches m = 0 once a
    failed step has located it (`end`, a ContinuousEnd, else None), and the α it solved through the order parameter
    (`through_order_parameter`), and the end on the ladder's top rungs (`ladder_ends`, by branch_end.next_to_end).
    `loss(α)` then names that end, and below it, where the branch exists but its fixed point at α was not found, the
    loss is failed, not converged."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.end: ContinuousEnd | None = None
        self.through_order_parameter: set[float] = set()  # the α solved at fixed |m|
        self.ladder_ends = None  # the end on the ladder's top rungs (branch_end.TopEnds), once located

    def short_of_end(self, control: float) -> bool:
        """Whether `control` lies between the anchor and the located end, below its error: the branch exists there."""
        return self.end is not None and self.anchor <= control < self.end.alpha - self.end.error

    def loss(self, control: float):
        loss = super().loss(control)
        if loss is None or self.end is None or control < self.anchor:
            return loss
        message = f"{loss.message}; {self.end.describe()}"
        if self.short_of_end(control):
            return replace(loss, status=Status.FAILED,
                           message=f"{message}: the branch exists at α = {control:g}, where it was not solved")
        return replace(loss, message=message)


def follow_on_rule(tensor_path: Continuation, branch: str, params: Parameters, rule: Rule) -> FollowedOnRule:
    """The positional or semantic branch followed in α on the split-line `rule`, from the anchor of its
    tensor-rule path (`branches.follow`), carried onto the rule there: `at(α)` is an AccurateState or
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
    (`continuous_end`, kept as the path's `end`). Steps past it then fail without a solve ("continuous_end"); steps
    between the point it was located from and the end are solved through the order parameter
    (`at_alpha_through_order_parameter`; at fixed α a solve from the path can converge onto another fixed point
    there), and so is any other failed step below the end. Those solutions are not judged for a jump from the path's
    linear extrapolation, which misses m ∝ √(α_e − α).
    """
    coords = BranchCoordinates(branch, params)
    seeded_at: dict[float, np.ndarray] = {}  # α -> the tensor-seeded start of the solve there
    end_tried: set[float] = set()  # the path points a continuous end was looked for from
    tensor_path.at(tensor_path.anchor)  # settles the anchor (a fallback one where the first fails) before it is read

    def tensor_state(alpha):
        solution = tensor_path.at(alpha)
        return None if solution is None else coords.from_state(solution.state)

    def solve(alpha, guess, previous: AccurateState | None) -> AccurateState:
        end = followed.end
        if previous is not None and end is not None and alpha > end.alpha + end.error:
            past = replace(previous.solution, alpha=alpha, status=Status.NOT_FOUND,
                           message=f"past the branch's continuous end on {rule.label}")
            return AccurateState(past, None, rule.label)
        if previous is not None and end is not None and end.located_from < alpha < end.alpha - end.error:
            # between the point the end was located from and the end: through |m| first (at fixed α a solve from the
            # path can converge onto another fixed point there: ω = 0.15, α = 1.4735 on split-line 8)
            reached = through_order_parameter(alpha, end, previous)
            if reached is not None:
                return reached
        state = solve_at_fixed_alpha(alpha, guess, previous)
        if state.success or previous is None or branch != "positional" or alpha < previous.solution.alpha:
            return state
        if followed.end is None and previous.solution.alpha not in end_tried and m_vanishes_ahead(previous):
            end_tried.add(previous.solution.alpha)
            followed.end = continuous_end(previous, params, rule)
        end = followed.end
        if end is None or alpha >= end.alpha - end.error:
            return state
        return through_order_parameter(alpha, end, previous) or state

    def through_order_parameter(alpha, end: ContinuousEnd, previous: AccurateState) -> AccurateState | None:
        reached = at_alpha_through_order_parameter(alpha, end, previous.solution, params, rule)
        if reached is not None:
            followed.through_order_parameter.add(alpha)
        return reached

    def m_vanishes_ahead(previous: AccurateState) -> bool:
        """Whether m² falls from the path's point below `previous` to it, on a line that reaches 0 within
        END_LOOKAHEAD above it."""
        below = [a for a in followed.path if a < previous.solution.alpha]
        if not below:
            return False
        earlier = followed.path[max(below)].solution
        now, before = previous.solution.m ** 2, earlier.m ** 2
        return now < before and now * (previous.solution.alpha - earlier.alpha) / (before - now) <= END_LOOKAHEAD

    def solve_at_fixed_alpha(alpha, guess, previous: AccurateState | None) -> AccurateState:
        if previous is None:  # the anchor: the tensor path's solution there, carried onto the rule
            anchored = tensor_path.at(alpha)
            if anchored is None:
                raise ParameterError("tensor_path", tensor_path.loss(alpha).message,
                                     f"a tensor path of the {branch} branch with a solution at its anchor")
            return on_rule(AccurateState(anchored), params, rule)
        here, there = tensor_state(alpha), tensor_state(previous.solution.alpha)
        seeded = None if here is None or there is None else here + coords.from_state(previous.solution.state) - there
        if seeded is None or not coords.contains(seeded):
            moved = replace(previous.solution, alpha=alpha, state=coords.to_state(guess))
            return on_rule(AccurateState(moved, previous.inverse, previous.rule), params, rule)
        seeded_at[alpha] = seeded
        moved = replace(previous.solution, alpha=alpha, state=coords.to_state(seeded))
        state = on_rule(AccurateState(moved, previous.inverse, previous.rule), params, rule)
        # Continuation hands over its extrapolation, or the nearest solution's own state where it has none
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
            return "continuous_end"
        if state.solution.alpha in followed.through_order_parameter:
            prediction = None
        seeded = None if prediction is None else seeded_at.get(state.solution.alpha)
        reason = branch_loss(state.solution, prediction if seeded is None else seeded, coords)
        if reason == "jumped" and seeded is not None:
            # from the seeded start alone, every step past α = 0.84 at ω = 0 longer than ~0.01 "jumped" (see `solve`)
            reason = branch_loss(state.solution, prediction, coords)
        return reason if reason in ENDS_A_BRANCH else None

    followed = FollowedOnRule(solve, lost, lambda state: coords.from_state(state.solution.state), tensor_path.anchor,
                              max_step=FOLLOW_MAX_STEP, min_step=FOLLOW_MIN_STEP, contains=coords.contains, name="α")
    return followed
