"""The end of the positional branch on a rule (`order_parameter.continuous_end`, `order_parameter.fold_end`, the follow
that uses them, and `branch_end` on the top rungs), against independent characterisations of the same point: a branch
that leaves the trivial state (m = θ = 0) continuously does so where the trivial state's multiplier in the m direction,
∂F_m/∂m at m = 0, crosses 1 (a pitchfork), a root in α of a property of the trivial state alone; a fold is the maximum
of α along the branch parameterised by |m|, found by golden-section search on the same rule."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from attnphase.api import positional_semantic as api
from attnphase.models.positional_semantic.accurate import RUNG_STEP_TOL, defect_correction
from attnphase.models.positional_semantic.branch_end import END_WINDOW, next_to_end, top_ends
from attnphase.models.positional_semantic.following import LOWER_END_WINDOW, FollowedOnRule
from attnphase.models.positional_semantic.order_parameter import (END_ORDER_FRACTIONS, FOLD_ORDER_FRACTIONS,
                                                                  ORDER_NOISE_TOL, ORDER_TOL, BranchEnd,
                                                                  OrderParameterPoint,
                                                                  at_alpha_through_order_parameter,
                                                                  at_order_parameter, continuous_end,
                                                                  extrapolated_end, fold_end, located_end)
from attnphase.models.positional_semantic.results import MissingBranch
from attnphase.models.positional_semantic.rules import FIELD_TOL
from attnphase.models.positional_semantic.state_evolution import state_vector
from attnphase.numeric.convergence import Tolerance
from test_page_values_positional_semantic import NUMBER, assert_error, assert_value, printed

SPLIT_LINE_8 = api.state_ladder(2)[0]
# The m of the central differences of the multiplier: F_m = λ m − b m³ gives λ − b δ², which moves the crossing by
# about c δ² ≈ 6e-8 (c ≈ 6 from α ≈ α_e − c m² at ω = 0), far below the ends' errors (1e-4).
MULTIPLIER_STEP = 1e-4
PITCHFORK_REFERENCE_ERROR = 1e-6
# The golden-section peak (`_peak`, to 1e-4 in |m|) lies below the maximum by at most the curvature of α(|m|) times
# (1e-4)²: under 1e-6 for curvatures up to 100 (about 5 at ω = 0.2 on split-line 8: α falls by 1.6e-3 at 0.025 above the
# peak's |m|).
PEAK_REFERENCE_ERROR = 1e-6


def _trivial_multiplier(alpha: float, params, rule, near) -> float:
    """∂F_m1/∂m1 along m = (δ, −δ) at the trivial fixed point on `rule` at α (solved from `near` = (q, V))."""
    tensor = api.solve_branch("trivial", alpha, params, nodes_per_dim=10, stability=False, guess=list(near))
    trivial = defect_correction(tensor, params, rule, tol=1e-10, step_tol=None, anderson=False)
    assert trivial.success, trivial.message
    q, V = trivial.solution.q, trivial.solution.V
    equations = rule.equations(params, alpha)

    def F_m(m):
        return equations.evaluate(state_vector(q, V, 0.0, np.array([m, -m]))).next[3]

    return (F_m(MULTIPLIER_STEP) - F_m(-MULTIPLIER_STEP)) / (2 * MULTIPLIER_STEP)


def _pitchfork(params, rule, low: float, high: float, near) -> float:
    """The α in [low, high] where the trivial state's multiplier in m crosses 1 (secant steps down to 1e-9)."""
    a, b = low, high
    fa, fb = (_trivial_multiplier(x, params, rule, near) - 1 for x in (a, b))
    assert fa * fb < 0, (fa, fb)
    for _ in range(10):
        a, b, fa = b, b - fb * (b - a) / (fb - fa), fb
        fb = _trivial_multiplier(b, params, rule, near) - 1
        if abs(b - a) <= 1e-9:
            return b
    raise AssertionError(f"the multiplier's secant did not settle: last step {b - a:.2g}")


def _peak(params, rule, direction, low: float, high: float, start, size_tol: float):
    """The maximum of α along the positional branch parameterised by |m| ∈ [low, high] on `rule` (golden-section
    search to `size_tol` in |m|, each point solved to ORDER_TOL from the last, with its inverse Jacobian; a solve that
    stops below ORDER_NOISE_TOL is kept, as in the root steps through |m|): (|m|, α). `start`: (q, V, α) near the
    peak."""
    ratio = (math.sqrt(5) - 1) / 2
    last = {"start": list(start), "inverse": None}

    def alpha_at(size):
        point = at_order_parameter(size, direction, last["start"], params, rule, tol=ORDER_TOL, step_tol=None,
                                   inverse=last["inverse"])
        if not point.success and point.result.residual > ORDER_NOISE_TOL:
            # the carried inverse Jacobian can be stale where the last point was far along |m|: a fresh one
            point = at_order_parameter(size, direction, last["start"], params, rule, tol=ORDER_TOL, step_tol=None)
        assert point.success or point.result.residual <= ORDER_NOISE_TOL, point.result.message
        last["start"], last["inverse"] = [point.state[0], point.state[1], point.alpha], point.result.inverse_jacobian
        return point.alpha

    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = alpha_at(c), alpha_at(d)
    while b - a > size_tol:
        if fc > fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = alpha_at(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = alpha_at(d)
    return (c, fc) if fc > fd else (d, fd)


def _point(size: float, alpha: float) -> OrderParameterPoint:
    return OrderParameterPoint(alpha, np.array([0.1, 20.0, 0.0, size / math.sqrt(2), -size / math.sqrt(2)]), None)


def test_an_end_is_located_within_its_error_from_closed_forms_sampled_like_split_line_8s():
    """Closed forms sampled at the fold fractions (FOLD_ORDER_FRACTIONS) of |m| = 0.2 (as at ω = 0.2 on split-line 8),
    0.28 and 0.33: a fold α = 1.7 − 2 (μ − 0.15)² + 5 (μ − 0.15)³ (peak 1.7 at μ = 0.15, asymmetric like the branch) is
    located within the interpolation part of its error (the closed forms have no solve error), below 1e-3 in all; a
    continuous end α = 1.7 − 0.5 μ² − 3 μ⁴ (m = 0 reached at 1.7) within its error; α falling from the first point on
    (a peak above the sampled |m|) is no end."""
    def located(law):
        return located_end([_point(s, law(s)) for s in sizes], "closed form", 1.69,
                           lambda size, near: _point(size, law(size)))

    for top in (0.2, 0.28, 0.33):  # samples 0.02, 0.028, 0.033 apart around the peak
        sizes = [top * f for f in FOLD_ORDER_FRACTIONS]
        fold = located(lambda s: 1.7 - 2 * (s - 0.15) ** 2 + 5 * (s - 0.15) ** 3)
        assert fold.kind == "fold" and fold.error < 1e-3 and abs(fold.size - 0.15) < 0.02, fold.describe()
        assert abs(fold.alpha - 1.7) <= fold.error - 2 * RUNG_STEP_TOL * fold.alpha, fold.describe()
    continuous = located(lambda s: 1.7 - 0.5 * s ** 2 - 3 * s ** 4)
    assert continuous.kind == "continuous" and continuous.size == 0.0, continuous.describe()
    assert abs(continuous.alpha - 1.7) <= continuous.error < 1e-3, continuous.describe()
    assert located(lambda s: 1.7 + s) is None


def test_a_lower_end_is_extrapolated_from_a_closed_form_with_alpha_falling_as_m_falls():
    """A lower end, α = 0.058 + 3 μ² + 40 μ⁴ (m = 0 reached at 0.058 from above, as at ω = 0.3), sampled at |m| =
    0.075 and END_ORDER_FRACTIONS of it: located within its error (side −1), and refused as an upper end (side 1),
    where α must rise as |m| falls."""
    sizes = [0.075] + [0.075 * f for f in END_ORDER_FRACTIONS]
    alphas = [0.058 + 3 * s ** 2 + 40 * s ** 4 for s in sizes]
    alpha, error = extrapolated_end(sizes, alphas, side=-1)
    assert abs(alpha - 0.058) <= error < 1e-3, (alpha, error)
    assert extrapolated_end(sizes, alphas) is None


@pytest.mark.parametrize("lost_below, status", [(0.050, "converged"), (0.0575, "limited"), (0.0700, "failed")])
def test_a_loss_below_the_lower_end_is_judged_by_where_it_lies_from_that_end(lost_below, status):
    """A follow downwards whose steps fail below `lost_below` (a stand-in solver on one control), with its lower end
    at 0.058 ± 1e-4: a loss more than LOWER_END_WINDOW below the end is the branch's absence (converged), one within
    it undecided (limited), one above it a failure (the branch exists there, it was not solved)."""
    from types import SimpleNamespace

    def solve(alpha, guess, previous):
        return SimpleNamespace(alpha=alpha, ok=alpha >= lost_below)

    followed = FollowedOnRule(solve, lambda solution, prediction: None if solution.ok else "not_converged",
                              lambda solution: np.array([solution.alpha]), 0.3, max_step=0.1, min_step=5e-4)
    followed.lower_end = BranchEnd(0.058, 1e-4, "split-line 8", 0.07, ())
    assert followed.at(0.01) is None
    first_lost = followed.loss(0.01).bracket[1]  # within 5e-4 below `lost_below`
    assert lost_below - 5e-4 <= first_lost < lost_below
    loss = followed.loss(0.01 if status == "converged" else first_lost)
    assert loss.status == status and "it reaches m = 0 continuously at α = 0.05800" in loss.message, loss.message


@pytest.mark.slow
def test_the_positional_branch_at_omega_0_3_reaches_the_trivial_state_below_its_anchor():
    """ω = 0.3, split-line 8, followed down from its anchor α = 0.3 to 0.01: below α ≈ 0.06 the solves at fixed α stop
    converging, and the branch was reported lost near 0.05 ("not_converged"), with no evidence that it ends there. Its
    lower end is now located at fixed |m| (α falls as |m| falls) and lies within its error of the trivial state's
    pitchfork in m on the same rule; the loss names it, status converged (absent) more than LOWER_END_WINDOW below it,
    limited (undecided) within that of it. About 40 s."""
    params = api.Parameters.validated(omega=0.3)
    path = api.follow("positional", params, 10, low=0.01, high=0.3)
    accurate = api.follow_on_rule(path, "positional", params, SPLIT_LINE_8)
    assert accurate.at(0.01) is None
    loss = accurate.loss(0.01)
    end = accurate.lower_end
    assert loss.status == "converged" and end is not None, loss.message
    assert "it reaches m = 0 continuously at α = 0.0578" in loss.message
    alphas = [end.located_from] + [point.alpha for point in end.points]
    assert np.all(np.diff(alphas) < 0)  # α falls as |m| falls towards the end
    last = accurate.at(end.located_from).solution
    reference = _pitchfork(params, SPLIT_LINE_8, 0.055, 0.061, (last.q, last.V))
    assert abs(end.alpha - reference) <= end.error + PITCHFORK_REFERENCE_ERROR, (end.describe(), reference)
    within = end.alpha - end.error - 0.5 * LOWER_END_WINDOW
    assert accurate.at(within) is None and accurate.loss(within).status == "limited", accurate.loss(within)


@pytest.mark.slow
def test_solve_far_below_the_lower_end_reports_the_positional_branch_absent_with_that_end():
    """ω = 0.3, α = 1e-4: the tensor path's anchor was moved to α itself, whose cold start landed near the trivial
    state and passed for the branch; its path up jumped at α = 0.11 and the branch was `failed` at every α. Followed
    down from α = 0.3, it is `not_found` with its lower end (within 1e-4 of the other test's 0.05786) as the
    evidence. About 40 s."""
    result = api.solve(0.3, 1e-4, branches=("positional",))
    (missing,) = result.missing
    assert missing.status == "not_found" and "followed from α = 0.3" in missing.message, missing.message
    end = float(re.search(r"reaches m = 0 continuously at α = ([0-9.]+)", missing.message).group(1))
    assert abs(end - 0.05786) < 1e-4, missing.message


@pytest.mark.slow
def test_at_omega_0_2_the_positional_branch_turns_back_at_a_fold_above_a_subcritical_pitchfork():
    """ω = 0.2, split-line 8: from the branch's fixed point at α = 1.73 (|m| = 0.200), α at fixed |m| rises to a peak
    near |m| = 0.16 and falls back towards m = 0 (so no continuous end is located from there). The fold (`fold_end`)
    lies within its error of the maximum of α(|m|) by golden-section search to 1e-4 in |m|; the trivial state's
    pitchfork lies below it by more than its error (subcritical: the branch returns to the trivial state through a
    part that turned back). At α = 1.735, between the two, the branch reached through |m| is the fixed point on the
    followed side (|m| above the fold's), not the one at |m| ≈ 0.13 on the part that turned back. About 40 seconds."""
    alpha = 1.73
    params, alive = _alive_on_split_line_8(0.2, alpha, (0.08797, 20.184, 0.14141))
    assert continuous_end(alive, params, SPLIT_LINE_8) is None
    fold = fold_end(alive, params, SPLIT_LINE_8)
    assert fold is not None and fold.kind == "fold" and fold.error < 1e-3
    direction = alive.solution.state[3:] / np.linalg.norm(alive.solution.state[3:])
    start = (alive.solution.q, alive.solution.V, alpha)
    size, peak = _peak(params, SPLIT_LINE_8, direction, fold.size - 0.02, fold.size + 0.02, start, 1e-4)
    assert abs(fold.alpha - peak) <= fold.error + PEAK_REFERENCE_ERROR, (fold.describe(), size, peak)
    pitchfork = _pitchfork(params, SPLIT_LINE_8, 1.728, 1.737, start[:2])
    assert pitchfork < fold.alpha - fold.error, (pitchfork, fold.describe())
    # the model page's subcritical pitchfork ("falls back to a subcritical pitchfork of the trivial state at 1.7326")
    (shown,) = printed(rf"subcritical pitchfork of the trivial state at ({NUMBER})")
    assert abs(pitchfork - float(shown)) <= 0.5e-4 + PITCHFORK_REFERENCE_ERROR, (pitchfork, shown)

    between = 1.735
    assert pitchfork < between < fold.alpha - fold.error
    turned_back = [at_order_parameter(s, direction, start, params, SPLIT_LINE_8) for s in (0.12, 0.14)]
    assert turned_back[0].alpha < between < turned_back[1].alpha  # a fixed point at α on the part that turned back
    reached = at_alpha_through_order_parameter(between, fold, alive.solution, params, SPLIT_LINE_8)
    assert reached is not None and reached.solution.alpha == between
    assert np.linalg.norm(reached.solution.state[3:]) > fold.size
    F = SPLIT_LINE_8.equations(params, between).evaluate(reached.solution.state).next
    state = reached.solution.state
    assert np.max(np.abs(F - state) / np.maximum(np.abs(state), 1e-3)) <= RUNG_STEP_TOL


def _alive_on_split_line_8(omega: float, alpha: float, near: tuple[float, float, float]):
    """(params, the positional branch's fixed point on split-line 8 at α), solved from near = (q, V, m₁) with
    m = (m₁, −m₁); it must have kept |m₁| within 10 % of that."""
    params = api.Parameters.validated(omega=omega)
    q, V, m = near
    tensor = api.solve_branch("positional", alpha, params, nodes_per_dim=10, stability=False)
    near_the_branch = replace(tensor, state=state_vector(q, V, 0.0, np.array([m, -m])))
    alive = defect_correction(near_the_branch, params, SPLIT_LINE_8, anderson=False)
    assert alive.success and abs(abs(alive.solution.m) - m) < 0.1 * m, alive.message
    return params, alive


@pytest.mark.slow  # 10 s; the end's extrapolation stays in the default suite on the closed forms above
def test_the_positional_branch_at_omega_zero_ends_where_the_trivial_state_loses_stability_in_m():
    """ω = 0, split-line 8: from the branch's fixed point at α = 0.8874 (|m| ≈ 0.049), solved at |m|/2, /4, /8 for α
    and extrapolated in m², the end is α_e = 0.90158; it lies within its error of the pitchfork of the trivial state.
    A law linear in |m| instead of m² would put it 1.5e-3 lower."""
    alpha = 0.8874
    params, alive = _alive_on_split_line_8(0.0, alpha, (0.0726, 26.07, 0.0488))
    end = continuous_end(alive, params, SPLIT_LINE_8)
    assert end is not None
    alphas = [alpha] + [point.alpha for point in end.points]
    assert np.all(np.diff(alphas) > 0) and alphas[-1] < end.alpha  # α rises as |m| falls towards the end
    reference = _pitchfork(params, SPLIT_LINE_8, 0.895, 0.905, (alive.solution.q, alive.solution.V))
    assert abs(end.alpha - reference) <= end.error + PITCHFORK_REFERENCE_ERROR, (end.describe(), reference)
    assert end.error < 1e-3


@pytest.mark.slow
def test_the_positional_branch_at_omega_0_15_is_followed_to_its_continuous_end():
    """ω = 0.15, split-line 8: the positional branch reaches m = 0 continuously near α = 1.4743. Followed from α = 0.3,
    the follow must bracket the trivial state's pitchfork (alive below, lost above, lost "continuous_end"), name an end
    that covers it within its error, and reach α = 1.4735 (|m| ≈ 0.018) through the order parameter: the solves at
    fixed α fail there, and the follow without the order parameter ended "alive at 1.4601, lost at 1.4701
    (not_converged)", reporting the branch missing where it exists. About a minute."""
    params = api.Parameters.validated(omega=0.15)
    path = api.follow("positional", params, 10, low=0.3, high=2.7)
    accurate = api.follow_on_rule(path, "positional", params, SPLIT_LINE_8)
    assert accurate.at(2.7) is None
    loss = accurate.loss(2.7)
    alive, lost = loss.bracket
    assert loss.status == "converged" and loss.criterion == "continuous_end", loss.message
    last = accurate.at(alive).solution
    reference = _pitchfork(params, SPLIT_LINE_8, 1.47, 1.478, (last.q, last.V))
    assert alive < reference < lost, (loss.message, reference)
    end = accurate.end
    assert abs(end.alpha - reference) <= end.error + PITCHFORK_REFERENCE_ERROR, (end.describe(), reference)
    near = accurate.at(1.4735)
    assert near is not None and near.success, accurate.loss(1.4735)
    # on the branch: |m| falls along it towards the end, below its value at the end's first point (at a lower α)
    first = end.points[0]
    assert first.alpha < 1.4735 and 0 < abs(near.solution.m) < abs(first.state[3]), (near.solution.m, first.state)


@pytest.mark.slow
def test_next_to_its_end_the_positional_branch_is_decided_on_the_top_rungs():
    """ω = 0 on the ladder split-line 8, 10, 12 (cheap stand-ins for the default ladder's top rungs; their ends are
    0.90158, 0.90719 and 0.91030): the end on each top rung, located at split-line 8's |m|, lies within its error of
    that rung's pitchfork of the trivial state (split-line 12 here), and the branch at α is decided against the top
    rungs' end and its spread (0.0087), not split-line 8's alone, which reported it missing past 0.90158:
    - α = 0.9 (below every rung's end): found, reached through |m| on each rung; the reported state is the fixed point
      of split-line 12's map at α itself, and its |m| is larger than on split-line 8 (its end lies later);
    - α = 0.905 (within the spread of the ends): not decided, reported limited with the ends;
    - α = 1.06 (more than END_WINDOW past split-line 8's end): missing, without locating the end on the top rungs.
    About 75 seconds."""
    params = api.Parameters.validated(omega=0.0)
    ladder = api.state_ladder(2)[:3]
    path = api.follow("positional", params, 10, low=0.3, high=0.9)
    followed = api.follow_on_rule(path, "positional", params, SPLIT_LINE_8)
    first = followed.at(0.9)
    assert first is not None and followed.end is not None, followed.loss(0.9)
    assert 0.9 < followed.end.alpha < 0.9 + END_WINDOW

    beyond = next_to_end(0.9 + END_WINDOW + 0.01, followed, params, ladder, Tolerance(rtol=FIELD_TOL))
    assert isinstance(beyond, MissingBranch) and beyond.status == "not_found", beyond
    assert followed.ladder_ends is None  # decided without the top rungs

    found = next_to_end(0.9, followed, params, ladder, Tolerance(rtol=FIELD_TOL))
    ends = followed.ladder_ends
    assert ends.success and [e.end.rule for e in ends.ends] == [rule.label for rule in ladder], ends
    top = ends.ends[-1].end
    reference = _pitchfork(params, ladder[-1], 0.9095, 0.9115, (first.solution.q, first.solution.V))
    assert abs(top.alpha - reference) <= top.error + PITCHFORK_REFERENCE_ERROR, (top.describe(), reference)

    assert found.values and found.rung == ladder[-1].label, found.message
    state = found.answer.solution
    assert state.alpha == 0.9 and abs(state.m) > abs(first.solution.m)
    F = ladder[-1].equations(params, 0.9).evaluate(state.state).next
    # defect_correction's measure: converged to RUNG_TOL, or within a predicted Broyden step of RUNG_STEP_TOL
    assert np.max(np.abs(F - state.state) / np.maximum(np.abs(state.state), 1e-3)) <= RUNG_STEP_TOL
    assert found.values["m"] == abs(state.m) and found.errors["m"] > 0

    undecided = next_to_end(0.905, followed, params, ladder, Tolerance(rtol=FIELD_TOL))
    assert isinstance(undecided, MissingBranch) and undecided.status == "limited", undecided
    assert ends.alpha - ends.error <= 0.905 <= ends.alpha + ends.error


def _decided_on_the_top_rungs(omega: float, below: float, past: float):
    """`solve` (positional branch, default ladder) at α = `below`, next to the branch's end, and at `past`, beyond it:
    the first must be found on the top rung through |m|, at a fixed point of that rung's map at α, the second
    reported missing past the end. Then the follow on split-line 8 to `below`, which must end short of it, and the end
    on the top rungs from its end, within END_WINDOW / 4 of it (the window's bound). Returns (params, ladder, the
    found branch, the follow, the top ends)."""
    params = api.Parameters.validated(omega=omega)
    ladder = api.state_ladder(2)
    results = list(api.solve_along(omega, [below, past], branches=("positional",), stability=False))
    (found,) = results[0].branches
    assert found.rule == ladder[-1].label and "through |m| on the top rungs" in found.message, found.message
    F = ladder[-1].equations(params, below).evaluate(found.state).next
    assert np.max(np.abs(F - found.state) / np.maximum(np.abs(found.state), 1e-3)) <= RUNG_STEP_TOL
    (missing,) = results[1].missing
    assert missing.status == "not_found" and "past its end" in missing.message, missing.message

    path = api.follow("positional", params, 10, low=0.3, high=below)
    followed = api.follow_on_rule(path, "positional", params, SPLIT_LINE_8)
    assert followed.at(below) is None and followed.end is not None, followed.loss(below)
    ends = top_ends(followed.end, params, ladder)
    assert ends.success and ends.alpha - followed.end.alpha < END_WINDOW / 4, ends.describe()
    return params, ladder, found, followed, ends


@pytest.mark.slow
def test_solve_next_to_the_end_decides_the_branch_on_the_top_rungs():
    """ω = 0.15 on the default ladder: split-line 8 ends at 1.4743, the top rungs (count-split 12, 14, 16) later, each
    end within its error of that rung's pitchfork of the trivial state, and less than END_WINDOW / 4 above split-line
    8's (the window's bound, also at ω = 0). `solve` at α = 1.49 (reported missing from split-line 8 alone before)
    finds the branch on the top rungs through |m|, its state the fixed point of count-split 16 at α and its Φ (from the
    split-line rules at that state) within its error of the outer-split rules' there; at α = 1.52 it is past the top
    rungs' end. About ten minutes."""
    params, ladder, found, followed, ends = _decided_on_the_top_rungs(0.15, 1.49, 1.52)
    # the model page's ends at ω = 0.15 ("from 1.4743 to 1.5083": split-line 8's, count-split 16's)
    first, last = printed(rf"at ω = 0\.15 from ({NUMBER}) to ({NUMBER})")
    assert_value(followed.end.alpha, first, "split-line 8")
    assert ends.ends[-1].end.rule == "count-split 16"
    assert_value(ends.ends[-1].end.alpha, last, "count-split 16")
    # Φ (from split-line 12, 14, 16 at the count-split state) against the outer-split rules at that state, whose own
    # uncertainty is taken as the difference between (16, 14) and (20, 18)
    outer = [api.Rule.outer_split(nodes).equations(params, 1.49).free_energy_of_state(found.state)
             for nodes in ((16, 14), (20, 18))]
    assert abs(found.free_energy - outer[-1]) <= found.errors["free_energy"] + abs(outer[1] - outer[0]), \
        (found.free_energy, found.errors["free_energy"], outer)
    near = (found.q, found.V)
    for located, rule in zip(ends.ends, ladder[-3:]):
        reference = _pitchfork(params, rule, located.end.alpha - 0.002, located.end.alpha + 0.002, near)
        assert abs(located.end.alpha - reference) <= located.end.error + PITCHFORK_REFERENCE_ERROR, \
            (located.end.describe(), reference)


@pytest.mark.slow
def test_solve_next_to_a_fold_decides_the_branch_on_the_top_rungs():
    """ω = 0.2 on the default ladder: split-line 8's branch turns back at a fold at α = 1.7360; on the top rungs it ends
    later (measured: folds at 1.7650 and 1.7685 on count-split 12 and 14, a continuous end at 1.7689 on count-split 16).
    Each top end lies within its error of an independent reference on its rung (a continuous end: the trivial state's
    pitchfork; a fold: the maximum of α(|m|) by golden-section search). `solve` at α = 1.745, reported missing from
    split-line 8 alone before, finds the branch on the top rungs through |m|, at a fixed point of count-split 16 at α;
    at α = 1.78 (the page's value) the branch is past the top rungs' end (at 1.79 the tensor rule's path has already
    ended, by a jump).
    About ten minutes."""
    past, = printed(rf"α = ({NUMBER}) is `not_found`")
    params, ladder, found, followed, ends = _decided_on_the_top_rungs(0.2, 1.745, float(past))
    assert followed.end.kind == "fold" and ends.alpha - ends.error > 1.745, (followed.end.describe(), ends.describe())
    # the model page's numbers for ω = 0.2: split-line 8's fold, the ends on the top rungs, and the branch at 1.745
    fold, fold_error, size = printed(rf"its α peaks at ({NUMBER}) ± ({NUMBER}) near \|m\| ≈ ({NUMBER})")
    assert_value(followed.end.alpha, fold, "fold")
    assert_error(followed.end.error, fold_error, "fold")
    assert_value(followed.end.size, size, "|m| at the fold")
    folds = printed(rf"folds at ({NUMBER}) and ({NUMBER}) on count-split 12 and 14, a continuous end at ({NUMBER}) on "
                    rf"count-split 16 \(its pitchfork\), so the end is ({NUMBER}) ± ({NUMBER})")
    kinds = ("fold", "fold", "continuous")
    for located, rule, kind, shown in zip(ends.ends, ("count-split 12", "count-split 14", "count-split 16"), kinds,
                                          folds):
        assert (located.end.rule, located.end.kind) == (rule, kind), located.end.describe()
        assert_value(located.end.alpha, shown, rule)
    assert_value(ends.alpha, folds[3], "top end")
    assert_error(ends.error, folds[4], "top end")
    m, status = printed(rf"on the top rungs, m = ({NUMBER}), `(\w+)` \(q, m and V still drift one way there")
    assert_value(abs(found.m), m, "m")
    assert found.status == status and all(math.isinf(found.errors[name]) for name in ("q", "m", "V")), found.errors
    for located, rule in zip(ends.ends, ladder[-3:]):
        end = located.end
        if end.kind == "continuous":
            reference = _pitchfork(params, rule, end.alpha - 0.002, end.alpha + 0.002, (found.q, found.V))
        else:
            nearest = min(end.points, key=lambda p: abs(np.linalg.norm(p.state[3:]) - end.size))
            direction = nearest.state[3:] / np.linalg.norm(nearest.state[3:])
            _, reference = _peak(params, rule, direction, end.size - 0.02, end.size + 0.02,
                                 (nearest.state[0], nearest.state[1], nearest.alpha), 1e-4)
        reference_error = PITCHFORK_REFERENCE_ERROR if end.kind == "continuous" else PEAK_REFERENCE_ERROR
        assert abs(end.alpha - reference) <= end.error + reference_error, (end.describe(), reference)
