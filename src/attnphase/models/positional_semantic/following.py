"""A branch followed in α on one split-line rule, and where the positional branch ends on it.

A branch the tensor rule carries to some α is not always there on the accurate rules: at ω = 0 the tensor
rules continue the positional branch up to α = 3, while on split-line rules it ends near α = 0.90 (and with
the g integrands a tensor solution carried across at α = 2.4 landed on another fixed point). So the branch is
followed on the first split-line rule itself from its anchor (`follow_on_rule`): it is either reached from
where it is known to exist or reported missing with the place where it ended on that rule.

Where the positional branch ends continuously (m → 0), its fixed points at fixed α are ill-conditioned (m ∝ √(α_e − α))
and the solves there stop converging before the end; at fixed |m| the branch is regular, so the end is located there
(`continuous_end`) and the branch below it reached through |m| (`at_alpha_through_order_parameter`). Where α at fixed
|m| peaks before m reaches 0, the branch ends at that fold (`fold_end`), and is reached through |m| on its side of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.accurate import (RUNG_MAX_ITER, RUNG_STEP_TOL, RUNG_TOL, AccurateState,
                                                           defect_correction, on_rule)
from attnphase.models.positional_semantic.branches import (ANCHOR_ALPHA, ENDS_A_BRANCH, FOLLOW_MAX_STEP,
                                                           FOLLOW_MIN_STEP, BranchCoordinates, branch_loss, unsolved)
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution
from attnphase.models.positional_semantic.rules import Rule
from attnphase.numeric.branches import Continuation
from attnphase.numeric.fixedpoint import Broyden, FixedPointResult, solve_fixed_point
from attnphase.numeric.threshold import illinois
from attnphase.numeric.transforms import Positive
from attnphase.results import Status

__all__ = ["RETRY_MAX_STEP", "LOWER_END_WINDOW", "END_ORDER_FRACTIONS", "FOLD_ORDER_FRACTIONS", "OrderParameterPoint",
           "at_order_parameter", "BranchEnd", "continuous_end", "fold_end", "order_parameter_solver", "located_end", "extrapolated_end",
           "at_alpha_through_order_parameter", "FollowedOnRule", "follow_on_rule"]

# `follow_on_rule` retries a failed step from the path's own extrapolation only on steps up to this long: the branch's
# end is bracketed by a failed step of FOLLOW_MIN_STEP, and a longer failed step is halved anyway (the retry would
# only save steps; at ω = 0 the retries on longer steps cost 75 evaluations of split-line 8 without changing the end).
RETRY_MAX_STEP = 2 * FOLLOW_MIN_STEP
# Where the positional branch ends continuously (m → 0, α ≈ α_e − c m²), the solves at fixed α stop converging before
# the end (at ω = 0 on split-line 8 they converged at |m| = 0.027 and failed at 0.013; at ω = 0.15 they failed at |m| ≈
# 0.04, 0.004 before the end): the branch is then solved at fixed |m| for α (`at_order_parameter`), at these fractions
# of |m| at the last α alive, and α_e extrapolated in m² (`continuous_end`).
END_ORDER_FRACTIONS = (0.5, 0.25, 0.125)
# Where m falls along the path but no continuous end is located, α at fixed |m| can peak before m reaches 0: at ω = 0.2
# on split-line 8 it rises from 1.7300 at |m| = 0.200 (the fixed point at α = 1.73) to 1.7359 near |m| = 0.155 and falls
# back to the trivial state's subcritical pitchfork at 1.7326 (research notes). The branch is then sampled at these
# fractions of |m| at the last α alive (`fold_end`).
FOLD_ORDER_FRACTIONS = (0.9, 0.8, 0.7, 0.6) + END_ORDER_FRACTIONS
# The branch at a requested α below that end (`at_alpha_through_order_parameter`): regula falsi in m² on a bracket of
# points at fixed |m|, each solved to ORDER_TOL relative, until its α matches to ALPHA_MATCH relative (then F − x at α
# is ~1e-8 relative, below RUNG_TOL). Where α lies below the end's points (on a finer rule, whose end lies higher: at
# ω = 0.2, α = 1.745 on count-split 12 the branch has |m| ≈ 0.232, the points reach 0.199), the bracket is first
# widened outwards by ORDER_OUTWARD_FACTOR in |m|.
ORDER_ROOT_STEPS = 12
ORDER_OUTWARD_STEPS = 8
ORDER_OUTWARD_FACTOR = 1.15
ORDER_TOL = 1e-9
ALPHA_MATCH = 1e-9
# A root step's solve that stops above ORDER_TOL but below this is kept: near the end at ω = 0.2 count-split 16's map
# is noisy at that level (Broyden stopped at 1.7e-9 after 10 steps); the verification at α decides the state anyway.
ORDER_NOISE_TOL = 1e-8
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
class BranchEnd:
    """Where a followed positional branch ends on one rule, parameterised by |m|: `kind` "continuous" where α rises as
    |m| falls to 0 (the end at m = 0, `continuous_end`), "fold" where α peaks at |m| ≈ `size` > 0 and the branch turns
    back (`fold_end`); `alpha` ± `error`, the α of the fixed point it was located from, the points at fixed |m|
    (decreasing) it was located from, the same on every rule it is located on (branch_end.end_on_rule), and at a
    fold the two points that refined it."""

    alpha: float
    error: float
    rule: str
    located_from: float
    points: tuple[OrderParameterPoint, ...]
    kind: str = "continuous"
    size: float = 0.0  # |m| of the largest sampled α at a fold (0 for a continuous end)
    refined: tuple[OrderParameterPoint, ...] = ()

    @property
    def criterion(self) -> str:
        """The loss criterion of a step past the end."""
        return "continuous_end" if self.kind == "continuous" else "fold"

    def on_branch(self) -> tuple[OrderParameterPoint, ...]:
        """The points on the followed side of the end (at a fold, those at |m| ≥ `size`)."""
        return tuple(p for p in (*self.points, *self.refined) if _size(p) >= self.size)

    def describe(self) -> str:
        sizes = ", ".join(f"{_size(p):.2g}" for p in self.points)
        if self.kind == "fold":
            return (f"parameterised by |m| ({sizes}) its α peaks at α = {self.alpha:.5f} ± {self.error:.1g}, |m| ≈ "
                    f"{self.size:.2g}, on {self.rule} (a fold)")
        return (f"parameterised by |m| ({sizes}) it reaches m = 0 continuously at α = {self.alpha:.5f} ± "
                f"{self.error:.1g} on {self.rule}")


def continuous_end(alive: AccurateState, params: Parameters, rule: Rule, side: int = 1) -> BranchEnd | None:
    """Where the positional branch, alive at `alive` (a fixed point on `rule`), reaches m = 0 above it (side 1) or
    below it (side −1, a lower end: α falls as |m| falls), or None when it does not do so continuously from there.

    The branch is solved at |m| = f·|m_alive| for f in END_ORDER_FRACTIONS (`at_order_parameter`, m kept in the
    direction of m_alive). Near a continuous end α = α_e − c m² + O(m⁴): α must rise as |m| falls, each step by at
    most half the one before (a quarter for the m² law; a fold ahead would make the steps grow or turn back). α_e is
    the m² extrapolation through the last two points, its error the difference from the extrapolation through the two
    before (the m⁴ term moves the last one sixteen times less) plus twice the solves' own (each point's α within
    RUNG_STEP_TOL relative).
    """
    points = _sampled(alive, END_ORDER_FRACTIONS, params, rule)
    if points is None:
        return None
    solution = alive.solution
    located = extrapolated_end([float(np.linalg.norm(solution.state[3:]))] + [_size(p) for p in points],
                               [solution.alpha] + [p.alpha for p in points], side)
    return None if located is None else BranchEnd(*located, rule.label, solution.alpha, points)


def fold_end(alive: AccurateState, params: Parameters, rule: Rule) -> BranchEnd | None:
    """Where the positional branch, alive at `alive` (a fixed point on `rule`), turns back at a fold: sampled at
    |m| = f·|m_alive| for f in FOLD_ORDER_FRACTIONS (`at_order_parameter`), the first maximum of α as |m| falls
    (`located_end`). None where α has no maximum there (a continuous end, or one farther ahead)."""
    points = _sampled(alive, FOLD_ORDER_FRACTIONS, params, rule)
    if points is None:
        return None
    located = located_end(points, rule.label, alive.solution.alpha, order_parameter_solver(params, rule))
    return located if located is not None and located.kind == "fold" else None


def order_parameter_solver(params: Parameters, rule: Rule):
    """solve(size, near): the positional branch on `rule` at |m| = size in the direction of the point `near`, started
    from it (`at_order_parameter`); None where it is not solved."""
    def solve(size: float, near: OrderParameterPoint) -> OrderParameterPoint | None:
        point = at_order_parameter(size, near.state[3:] / _size(near), [near.state[0], near.state[1], near.alpha],
                                   params, rule, inverse=near.result.inverse_jacobian)
        return point if point.success else None
    return solve


def _sampled(alive: AccurateState, fractions, params: Parameters, rule: Rule) -> tuple[OrderParameterPoint, ...] | None:
    """The positional branch at |m| = f·|m_alive| for f in `fractions` (decreasing), m kept in the direction of
    m_alive, each point started from the one before; None where one is not solved, or at m = 0."""
    solution = alive.solution
    m = np.asarray(solution.state[3:], float)
    size = float(np.linalg.norm(m))
    if solution.branch != "positional" or size == 0.0:
        return None
    points = []
    start = np.array([solution.q, solution.V, solution.alpha])
    for fraction in fractions:
        point = at_order_parameter(fraction * size, m / size, start, params, rule)
        if not point.success:
            return None
        points.append(point)
        start = np.array([point.state[0], point.state[1], point.alpha])
    return tuple(points)


def located_end(points, rule: str, located_from: float, solve) -> BranchEnd | None:
    """The end of the branch from its points at decreasing fixed |m| (at least three): at the first maximum of α as
    |m| falls, a fold (`_fold`, refined with `solve`, an `order_parameter_solver`); where α rises throughout, the
    continuous end extrapolated from the last three points (`extrapolated_end`). None where α falls from the first
    point on (a peak above the sampled |m|), a refining point is not solved, or neither applies."""
    alphas = [p.alpha for p in points]
    peak = next((k for k in range(1, len(alphas) - 1) if alphas[k] >= alphas[k - 1] and alphas[k] > alphas[k + 1]),
                None)
    if peak is not None:
        return _fold(points, peak, rule, located_from, solve)
    if alphas[1] <= alphas[0]:
        return None
    located = extrapolated_end([_size(p) for p in points[-3:]], alphas[-3:])
    return None if located is None else BranchEnd(*located, rule, located_from, tuple(points))


def _fold(points, peak: int, rule: str, located_from: float, solve) -> BranchEnd | None:
    """The fold at the sampled peak `points[peak]`: the vertex of the parabola (in |m|) through the largest α and its
    neighbours after the two intervals beside the peak are halved (two more points by `solve`), its error the
    difference from the vertex through the coarse three (the parabola's error falls at least fourfold when the spacing
    halves, so the difference bounds the finer one's; at ω = 0.2 on split-line 8, samples 0.028 apart put the coarse
    vertex 1.2e-4 below the peak, while the largest sample lay within 1e-5 of it) plus twice the points' own (each α
    within RUNG_STEP_TOL relative)."""
    three = points[peak - 1:peak + 2]
    coarse = _parabola_vertex([_size(p) for p in three], [p.alpha for p in three])
    near = points[peak]
    halves = [solve(0.5 * (_size(points[peak + side]) + _size(near)), near) for side in (-1, 1)]
    if None in halves:
        return None
    merged = sorted((*points, *halves), key=_size, reverse=True)
    at = next(k for k, p in enumerate(merged) if p is near)
    top = max((at - 1, at, at + 1), key=lambda k: merged[k].alpha)  # the halves lie beside the peak sample
    fine = merged[top - 1:top + 2]
    vertex = _parabola_vertex([_size(p) for p in fine], [p.alpha for p in fine])
    error = abs(vertex - coarse) + 2 * RUNG_STEP_TOL * vertex
    return BranchEnd(vertex, error, rule, located_from, tuple(points), "fold", _size(merged[top]), tuple(halves))


def _parabola_vertex(x, y) -> float:
    """The extreme value of the parabola through three points (x_k, y_k)."""
    a, b, c = np.polyfit(np.asarray(x) - x[1], y, 2)
    return float(c - b * b / (4 * a))


def extrapolated_end(sizes, alphas, side: int = 1) -> tuple[float, float] | None:
    """(α_e, error) of a continuous end from the branch's α at decreasing |m| = `sizes` (at least three), or None
    where the points do not approach one (`continuous_end`'s criteria: α rising as |m| falls, falling at a lower end
    (side −1), each step at most half the one before; α_e the m² extrapolation through the last two points, its error
    the difference from the one through the two before plus twice the points' own)."""
    steps = side * np.diff(alphas)
    if not (np.all(steps > 0) and np.all(steps[1:] <= 0.5 * steps[:-1])):
        return None
    squares = np.square(sizes)
    extrapolated = [a1 + (a1 - a0) * s1 / (s0 - s1) for a0, a1, s0, s1 in zip(alphas, alphas[1:], squares, squares[1:])]
    return extrapolated[-1], abs(extrapolated[-1] - extrapolated[-2]) + 2 * RUNG_STEP_TOL * extrapolated[-1]


def _size(point: OrderParameterPoint) -> float:
    return float(np.linalg.norm(point.state[3:]))


def _squared_m(point: OrderParameterPoint) -> float:
    return float(point.state[3:] @ point.state[3:])


def at_alpha_through_order_parameter(alpha: float, end: BranchEnd, solution: BranchSolution, params: Parameters,
                                     rule: Rule) -> AccurateState | None:
    """The positional branch at α below its end `end`, reached at fixed |m| (`at_order_parameter`), where the solves
    at fixed α fail. On the branch's side of the end (`BranchEnd.on_branch`) α falls as |m| grows, so α is bracketed
    in m² by the end's points (at a continuous end, with the end itself at m² = 0), widened outwards where α lies
    below them all; regula falsi with the Illinois modification in m² (numeric.threshold.illinois; α is nearly
    linear in m² near a continuous end) until a point's α is α to ALPHA_MATCH or the bracket is narrower than that (its solves to ORDER_TOL, the bracket's to RUNG_TOL, each from the
    solved point nearest in |m|), then that state verified as the fixed point at α (`defect_correction`: a residual
    below RUNG_TOL at the start costs one evaluation; it decides, also where ORDER_ROOT_STEPS end short of α).
    `solution`: the branch's solution nearest α (its fields are carried over). None where a solve fails, no bracket is
    found, or the verified state lies past a fold's |m| (a fixed point at α on the part of the branch that turned
    back, not the followed one)."""
    solved = list(end.on_branch())
    direction = solved[0].state[3:] / _size(solved[0])

    def point_at(size: float, bracketing: bool = False) -> OrderParameterPoint | None:
        """The branch at |m| = size from the solved point nearest in |m|; to RUNG_TOL (`bracketing`: α guessed as that
        point's) or to ORDER_TOL (α guessed as the requested one, which the root steps approach)."""
        nearest = min(solved, key=lambda p: abs(_size(p) - size))
        start = [nearest.state[0], nearest.state[1], nearest.alpha if bracketing else alpha]
        accuracy = {} if bracketing else {"tol": ORDER_TOL, "step_tol": None}
        point = at_order_parameter(size, direction, start, params, rule, inverse=nearest.result.inverse_jacobian,
                                   **accuracy)
        if not (point.success or not bracketing and point.result.residual <= ORDER_NOISE_TOL):
            return None
        solved.append(point)
        return point

    outermost = max(solved, key=_size)
    for _ in range(ORDER_OUTWARD_STEPS):
        if outermost.alpha < alpha:
            break
        outermost = point_at(ORDER_OUTWARD_FACTOR * _size(outermost), bracketing=True)
        if outermost is None:
            return None
    above = [(_squared_m(p), p.alpha - alpha) for p in solved if p.alpha > alpha]
    below = [(_squared_m(p), p.alpha - alpha) for p in solved if p.alpha < alpha]
    if end.kind == "continuous":
        above.append((0.0, end.alpha - alpha))
    if not above or not below:
        return None
    (inner, f_inner), (outer, f_outer) = max(above), min(below)

    def offset(squared):
        point = point_at(math.sqrt(squared))
        return None if point is None else point.alpha - alpha

    # to a bracket narrower than ALPHA_MATCH relative: α at fixed |m| is known to its solves' accuracy only (count-split
    # 14: ±5e-9, above ALPHA_MATCH · α), so the match in α alone may never come
    if illinois(offset, inner, outer, f_inner, f_outer, ALPHA_MATCH * outer, ftol=ALPHA_MATCH * alpha,
                max_iter=ORDER_ROOT_STEPS) is None:
        return None
    last = min(solved, key=lambda p: abs(p.alpha - alpha))
    state = defect_correction(replace(solution, alpha=alpha, state=last.state), params, rule, anderson=False)
    if not state.success or float(np.linalg.norm(state.solution.state[3:])) < end.size:
        return None
    return state


class FollowedOnRule(Continuation):
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
