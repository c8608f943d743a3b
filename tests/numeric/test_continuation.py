"""Branch continuation, folds, branch points and the transition classifier against closed forms.

References, all independent of the code: Landau polynomials whose folds, branch points and coexistence
points solve by hand (evaluated in mpmath at 50 digits), and the roots of a cubic (numpy) for the grid
classifier that the continuation must beat.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
import sympy as sp

from attnphase.derive.codegen import compile_action
from attnphase.errors import ParameterError
from attnphase.numeric.continuation import (
    ActionSystem, ContinuationSettings, FunctionSystem, follow_branch, follow_branches,
)
from attnphase.numeric.points_on_branches import stationary_points_at
from attnphase.numeric.transition import classify_transition, minimum_segments

x, y, c, eps, c0 = sp.symbols("x y c epsilon c0", real=True)
TILTED = compile_action(x**4 / 4 - eps * x**2 / 2 - (c - c0) * x, [x], [c, eps, c0])
mpmath.mp.dps = 50


def tilted(epsilon: float, center: float) -> ActionSystem:
    return ActionSystem(TILTED, "c", {"epsilon": epsilon, "c0": center})


def folds_of_tilted(epsilon: float, center: float):
    """x³ − εx = c − c0 and 3x² = ε: c = c0 ∓ (2ε/3)√(ε/3) (in mpmath, from the float parameters)."""
    e, c_0 = mpmath.mpf(epsilon), mpmath.mpf(center)
    half = 2 * e / 3 * mpmath.sqrt(e / 3)
    return c_0 - half, c_0 + half


def agrees(threshold, exact, digits):
    """The threshold's digit string and error are right: |value − exact| ≤ its error, and the error
    supports `digits` digits."""
    with mpmath.workdps(60):
        deviation = abs(mpmath.mpf(threshold.value_mp) - exact)
    return threshold.digits >= digits and deviation <= max(threshold.error, 10.0 ** (-digits - 5) * abs(float(exact)))


def test_tilted_double_well_folds_and_coexistence():
    """S = x⁴/4 − x²/2 − (c − 0.1)x: folds at 0.1 ∓ 2/(3√3), coexistence at 0.1 by symmetry, jump x = −1 → +1."""
    system = tilted(1.0, 0.1)
    branch = follow_branch(system, [1.0], -1.0, (-1.0, 1.0), digits=25)
    assert branch.status == "converged" and branch.ends == ("range", "range")
    folds = sorted((s for s in branch.singularities if s.kind == "fold"), key=lambda s: s.control.value)
    assert len(folds) == 2 and len(branch.singularities) == 2
    for fold, exact in zip(folds, folds_of_tilted(1.0, 0.1)):
        assert agrees(fold.control, exact, 25), (fold.control, exact)
        assert abs(abs(fold.state[0]) - 1 / math.sqrt(3)) < 1e-12  # 3x² = 1
        assert {fold.index_before, fold.index_after} == {0, 1}  # a minimum meets the saddle
    assert set(branch.index) == {0, 1}
    transition = classify_transition(system, [branch], (-1.0, 1.0), digits=25)
    assert transition.order == "first" and transition.status == "converged"
    assert agrees(transition.control, mpmath.mpf(0.1), 25)
    assert transition.jump == pytest.approx(2.0, abs=1e-12)
    assert transition.spinodal_kinds == ("fold", "fold")
    for spinodal, exact in zip(transition.spinodals, folds_of_tilted(1.0, 0.1)):
        assert agrees(spinodal, exact, 25)


def test_a_window_narrower_than_any_grid_step_is_found():
    """Folds 1e-6 apart in c, centred off any grid: counting minima on a 10⁴-point grid of c sees one
    minimum everywhere; the continuation finds both folds and the coexistence point to 20 digits."""
    epsilon = (1e-6 * 3 * math.sqrt(3) / 4) ** (2 / 3)
    center = 0.0123456789
    low, high = folds_of_tilted(epsilon, center)
    assert float(high - low) == pytest.approx(1e-6, rel=1e-9)
    grid = np.linspace(-1.0, 1.0, 10_001)
    minima = [sum(1 for r in np.roots([1, 0, -epsilon, -(g - center)]) if abs(r.imag) < 1e-12 and 3 * r.real**2 > epsilon)
              for g in grid]
    assert set(minima) == {1}  # the grid classifier: no coexistence anywhere
    system = tilted(epsilon, center)
    branches = follow_branches(system, [([1.0], -1.0), ([-1.0], 1.0)], (-1.0, 1.0), digits=20)
    assert len(branches) == 1  # the second start lies on the branch already followed
    folds = sorted(s.control.value for s in branches[0].singularities if s.kind == "fold")
    assert len(folds) == 2
    transition = classify_transition(system, branches, (-1.0, 1.0), digits=20)
    assert transition.order == "first" and agrees(transition.control, mpmath.mpf(center), 20)
    assert agrees(transition.spinodals[0], low, 20) and agrees(transition.spinodals[1], high, 20)
    assert transition.jump == pytest.approx(2 * math.sqrt(epsilon), rel=1e-9)  # x = ±√ε at c = c0


def test_the_test_function_rule_is_what_keeps_the_pair():
    """With the test-function rule switched off and large steps allowed, the same narrow pair is stepped
    over (no fold found): the rule, not luck, finds it above."""
    epsilon = (1e-6 * 3 * math.sqrt(3) / 4) ** (2 / 3)
    loose = ContinuationSettings(nonlinearity=1e12, max_angle=3.0, initial_step=0.1, max_step=0.1)
    branch = follow_branch(tilted(epsilon, 0.0123456789), [1.0], -1.0, (-1.0, 1.0), settings=loose)
    assert not any(s.kind == "fold" for s in branch.singularities)
    strict = ContinuationSettings(initial_step=0.1, max_step=0.1)
    branch = follow_branch(tilted(epsilon, 0.0123456789), [1.0], -1.0, (-1.0, 1.0), settings=strict)
    assert sum(s.kind == "fold" for s in branch.singularities) == 2


def test_sextic_first_order_with_a_branch_point_and_a_fold():
    """S = x⁶/6 − x⁴/4 + c x²/2: minima x = 0 (c > 0) and x² = (1 + √(1 − 4c))/2 (c < 1/4); equal action at
    x² = 3/4, c = 3/16; the window runs from the branch point c = 0 to the fold c = 1/4; jump √3/2."""
    kernels = compile_action(x**6 / 6 - x**4 / 4 + c * x**2 / 2, [x], [c])
    system = ActionSystem(kernels, "c", {})
    branches = follow_branches(system, [([0.0], 1.0), ([1.0], -0.5)], (-0.5, 1.0), digits=30)
    transition = classify_transition(system, branches, (-0.5, 1.0), digits=30)
    assert transition.order == "first" and transition.status == "converged"
    assert agrees(transition.control, mpmath.mpf(3) / 16, 30)
    assert transition.spinodal_kinds == ("branch_point", "fold")
    assert abs(transition.spinodals[0].value) <= max(transition.spinodals[0].error, 1e-30)
    assert agrees(transition.spinodals[1], mpmath.mpf(1) / 4, 30)
    assert transition.jump == pytest.approx(math.sqrt(3) / 2, rel=1e-12)


def test_pitchfork_is_second_order_at_the_branch_point():
    """S = x⁴/4 + (1 − c)x²/2: x = 0 loses stability at c = 1 where ±√(c − 1) branch off: the global
    minimum passes continuously, a second-order transition at c = 1 (30 digits), no jump."""
    kernels = compile_action(x**4 / 4 + (1 - c) * x**2 / 2, [x], [c])
    system = ActionSystem(kernels, "c", {})
    branches = follow_branches(system, [([0.0], 0.0), ([1.0], 2.0)], (0.0, 2.0), digits=30)
    trivial = branches[0]
    assert [s.kind for s in trivial.singularities] == ["branch_point"] and not any(s.kind == "fold" for s in trivial.singularities)
    assert agrees(trivial.singularities[0].control, mpmath.mpf(1), 30)
    side = branches[1]  # +√(c − 1) and −√(c − 1) meet at the tip c = 1: a branch point, not a fold
    assert [s.kind for s in side.singularities] == ["branch_point"]
    assert side.singularities[0].control.value == pytest.approx(1.0, abs=1e-7)
    assert len(minimum_segments(side)) == 2
    transition = classify_transition(system, branches, (0.0, 2.0), digits=30)
    assert transition.order == "second" and transition.jump == 0.0
    assert agrees(transition.control, mpmath.mpf(1), 30)
    at = {round(float(p["x"][0]), 9): p["index"] for p in stationary_points_at(system, branches, 1.36)}
    assert at == {-0.6: 0, 0.0: 1, 0.6: 0}  # minima ±√(c − 1) = ±0.6, the maximum at 0


def test_two_dimensional_action():
    """S(x, y) = x⁴/4 − x²/2 − (c − 0.2)x + (y − 2x)²: y = 2x at every stationary point, so the folds are the
    one-dimensional ones, c = 0.2 ∓ 2/(3√3), and det ∇²S = 2(3x² − 1) changes sign there."""
    kernels = compile_action(x**4 / 4 - x**2 / 2 - (c - c0) * x + (y - 2 * x) ** 2, [x, y], [c, c0])
    system = ActionSystem(kernels, "c", {"c0": 0.2})
    branch = follow_branch(system, [1.0, 2.0], -1.0, (-1.0, 1.0), digits=20)
    folds = sorted((s for s in branch.singularities if s.kind == "fold"), key=lambda s: s.control.value)
    assert len(folds) == 2
    for fold, exact in zip(folds, folds_of_tilted(1.0, 0.2)):
        assert agrees(fold.control, exact, 20)
        assert fold.state[1] == pytest.approx(2 * fold.state[0], rel=1e-10)
    assert np.allclose(branch.state[:, 1], 2 * branch.state[:, 0], atol=1e-10)
    assert set(branch.index) == {0, 1}
    transition = classify_transition(system, [branch], (-1.0, 1.0), digits=20)
    assert transition.order == "first" and agrees(transition.control, mpmath.mpf(0.2), 20)


def test_curvatures_hundreds_of_decades_apart():
    """S = x⁴/4 − cx²/2 + (K/2)y² − axy − bcy with K = 1e300 (a prior variance of 1e-300), a = 1e8, b = 1e9: the
    minimum branch is x = √c, y = (a√c + bc)/K exactly in float64 (a²/K = 1e-284 shifts x by less than a unit in
    the last place). The stiff row's rounding noise (~1e284) once passed for stationarity of the soft one, so the
    guess x = 1.5 came back unpolished, the SVD tangent's y part was rounding noise (~1e-17 instead of ~1e-291),
    and the branch was lost at both ends; now every point is the closed form to 1e-14, without overflow."""
    K, a, b = 1e300, 1e8, 1e9
    system = FunctionSystem(
        2, lambda v, c_: v[0] ** 4 / 4 - c_ * v[0] ** 2 / 2 + K * v[1] ** 2 / 2 - a * v[0] * v[1] - b * c_ * v[1],
        lambda v, c_: np.array([v[0] ** 3 - c_ * v[0] - a * v[1], K * v[1] - a * v[0] - b * c_]),
        lambda v, c_: np.array([[3 * v[0] ** 2 - c_, -a], [-a, K]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        branch = follow_branch(system, [1.5, 0.0], 1.0, (0.25, 4.0))
    assert branch.status == "converged" and branch.ends == ("range", "range") and not branch.singularities
    assert branch.control[0] == 0.25 and branch.control[-1] == 4.0 and set(branch.index) == {0}
    assert np.allclose(branch.state[:, 0], np.sqrt(branch.control), rtol=1e-14, atol=0)
    assert np.allclose(branch.state[:, 1], (a * np.sqrt(branch.control) + b * branch.control) / K, rtol=1e-14, atol=0)


def test_gradient_rounding_noise_that_the_curvatures_do_not_show():
    """∇S computed with a cancellation of terms ~1e7 (as σ² → 0 in the copy-heads prior makes them): its rounding
    noise, ~eps·1e7, is far above what the Hessian predicts, so the corrector's Newton steps stall at ~1e-9
    instead of shrinking. They used to be rejected as "not contracting": 31 000 points at ever smaller steps
    (max_points). A stall far below the step is convergence: the branch x = √c is followed as fast as without
    the noise, every point within noise / curvature of the closed form."""
    big = 1e7

    def gradient(v, c_, noisy):
        return np.array([v[0] ** 3 - c_ * v[0] + (((big + v[0]) - big - v[0]) if noisy else 0.0)])

    def system(noisy):
        return FunctionSystem(1, lambda v, c_: v[0] ** 4 / 4 - c_ * v[0] ** 2 / 2, lambda v, c_: gradient(v, c_, noisy),
                              lambda v, c_: np.array([[3 * v[0] ** 2 - c_]]))

    clean = follow_branch(system(False), [1.0], 1.0, (0.25, 4.0))
    noisy = follow_branch(system(True), [1.0], 1.0, (0.25, 4.0))
    assert clean.status == noisy.status == "converged" and noisy.ends == ("range", "range")
    assert len(noisy.control) <= 2 * len(clean.control)
    # the noise is at most two roundings of 1e7; the smallest curvature on the range is 2c = 0.5
    noise = 2 * np.finfo(float).eps * big
    assert np.max(np.abs(noisy.state[:, 0] - np.sqrt(noisy.control))) <= noise / 0.5


def test_bad_input():
    with pytest.raises(ParameterError) as info:
        ActionSystem(TILTED, "delta", {"epsilon": 1.0, "c0": 0.0})
    assert info.value.name == "control"
    with pytest.raises(ParameterError) as info:
        ActionSystem(TILTED, "c", {"epsilon": 1.0})
    assert info.value.name == "fixed" and "c0" in str(info.value)
    with pytest.raises(ParameterError):
        follow_branch(tilted(1.0, 0.0), [1.0], -1.0, (1.0, -1.0))
    with pytest.raises(ParameterError):
        follow_branch(tilted(1.0, 0.0), [1.0], 2.0, (-1.0, 1.0))


def test_fold_threshold_alone_float64_and_mpmath():
    """The fold of x³ − x − c = 0 at x = 1/√3, c = −2/(3√3): float64 only supports ~15 digits (status
    limited when 25 are asked), mpmath polishing supports 25; the digit string keeps its zeros."""
    from attnphase.numeric.singular_points import fold_threshold

    system = tilted(1.0, 0.0)
    exact = -2 / (3 * mpmath.sqrt(3))
    plain = fold_threshold(system.gradient, system.hessian, [0.6], -0.4, digits=25)
    assert plain.status == "limited" and 13 <= plain.digits <= 16 and agrees(plain, exact, plain.digits)
    polished = fold_threshold(system.gradient, system.hessian, [0.6], -0.4, gradient_mp=system.gradient_mp,
                              hessian_mp=system.hessian_mp, digits=25)
    assert polished.status == "converged" and agrees(polished, exact, 25)
    assert len(polished.digits_string.replace("-", "").replace(".", "").lstrip("0")) == 25
    kernels = compile_action(x**3 / 3 - c * x, [x], [c])  # x² = c: the fold at c = 0 is exactly 0
    at_zero = fold_threshold(ActionSystem(kernels, "c", {}).gradient, ActionSystem(kernels, "c", {}).hessian,
                             [0.1], 0.01, digits=10)
    assert abs(at_zero.value) <= at_zero.error + 1e-300


def test_no_transition_in_range_is_not_found():
    """On c ∈ [0.5, 1] the tilted well has one minimum (c > 0.1 + 2/(3√3) = 0.485): order none, not_found."""
    system = tilted(1.0, 0.1)
    branches = follow_branches(system, [([1.0], 0.5)], (0.5, 1.0))
    assert not branches[0].singularities
    transition = classify_transition(system, branches, (0.5, 1.0))
    assert transition.order == "none" and transition.status == "not_found" and transition.control is None
