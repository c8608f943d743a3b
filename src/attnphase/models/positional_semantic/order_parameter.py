"""The positional branch parameterised by its order parameter |m| on one rule, and where it ends.

Where the positional branch ends continuously (m → 0), its fixed points at fixed α are ill-conditioned (m ∝ √(α_e − α))
and the solves there stop converging before the end; at fixed |m| the branch is regular (`at_order_parameter`), so the
end is located there (`continuous_end`, above the point it is looked for from or below it) and the branch next to it
reached through |m| (`at_alpha_through_order_parameter`). Where α at fixed |m| peaks before m reaches 0, the branch
ends at that fold (`fold_end`), and is reached through |m| on its side of it. `following` looks for these ends while
it follows a branch; `branch_end` locates them on the ladder's top rungs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from attnphase.models.positional_semantic.accurate import (RUNG_MAX_ITER, RUNG_STEP_TOL, RUNG_TOL, AccurateState,
                                                           defect_correction)
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution
from attnphase.models.positional_semantic.rules import Rule
from attnphase.numeric.fixedpoint import Broyden, FixedPointResult, solve_fixed_point
from attnphase.numeric.threshold import illinois
from attnphase.numeric.transforms import Positive
from attnphase.results import Status

__all__ = ["END_ORDER_FRACTIONS", "FOLD_ORDER_FRACTIONS", "ORDER_TOL", "ORDER_NOISE_TOL", "OrderParameterPoint",
           "at_order_parameter", "BranchEnd", "continuous_end", "fold_end", "order_parameter_solver", "located_end",
           "extrapolated_end", "at_alpha_through_order_parameter"]

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
    """The positional branch at α below its end `end`, reached at fixed |m| (`at_order_parameter`), where the solves at
    fixed α fail. On the branch's side of the end (`BranchEnd.on_branch`) α falls as |m| grows, so α is bracketed in m²
    by the end's points (at a continuous end, with the end itself at m² = 0), widened outwards where α lies below them
    all; regula falsi with the Illinois modification in m² (numeric.threshold.illinois; α is nearly linear in m² near a
    continuous end) until a point's α is α to ALPHA_MATCH or the bracket is narrower than that (its solves to ORDER_TOL,
    the bracket's to RUNG_TOL, each from the solved point nearest in |m|), then that state verified as the fixed point
    at α (`defect_correction`: a residual below RUNG_TOL at the start costs one evaluation; it decides, also where
    ORDER_ROOT_STEPS end short of α). `solution`: the branch's solution nearest α (its fields are carried over). None
    where a solve fails, no bracket is found, or the verified state lies past a fold's |m| (a fixed point at α on the
    part of the branch that turned back, not the followed one)."""
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
