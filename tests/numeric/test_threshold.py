"""Thresholds located to many digits, checked against mpmath.findroot on the closed form at a higher
working precision (an independent Newton/secant solve that shares nothing with the scan-and-polish
path but the function)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.numeric.threshold import (CrossingValue, bisect_increasing, branch_crossing, find_crossing, noisy_newton_root,
                                         scan_crossing, second_difference_bound, secant_root)

CROSSINGS = {
    # name: (f1, f2, f1_mp, f2_mp, lo, hi, guess)
    "cos_x_equals_x": (math.cos, lambda x: x, mpmath.cos, lambda x: x, 0.0, 2.0, 0.74),
    "exp_minus_x_equals_x2_minus_1": (
        lambda x: math.exp(-x), lambda x: x * x - 1, lambda x: mpmath.exp(-x), lambda x: x * x - 1, 0.0, 3.0, 1.15,
    ),
    "lambert_type_x_ex_equals_3": (
        lambda x: x * math.exp(x), lambda x: 3.0, lambda x: x * mpmath.exp(x), lambda x: mpmath.mpf(3), 0.0, 5.0, 1.05,
    ),
}


def reference(f1_mp, f2_mp, guess, dps):
    with mpmath.workdps(dps):
        return mpmath.findroot(lambda x: f1_mp(x) - f2_mp(x), mpmath.mpf(guess))


@pytest.mark.parametrize("name", sorted(CROSSINGS))
@pytest.mark.parametrize("digits", [20, 30, 60])
def test_crossing_to_many_digits(name, digits):
    f1, f2, f1_mp, f2_mp, lo, hi, guess = CROSSINGS[name]
    res = branch_crossing(f1, f2, lo, hi, f1_mp=f1_mp, f2_mp=f2_mp, digits=digits)
    ref = reference(f1_mp, f2_mp, guess, digits + 20)
    assert res.status == "converged" and res.digits == digits
    with mpmath.workdps(digits + 20):
        true_error = abs(res.value_mp - ref)
        assert true_error <= res.error
        assert res.error <= abs(ref) * mpmath.mpf(10) ** (-digits)
        assert res.digits_string == mpmath.nstr(ref, digits, strip_zeros=False)
    assert res.bracket[0] <= float(ref) <= res.bracket[1]
    assert abs(res.value - float(ref)) <= 2 * np.finfo(float).eps * abs(float(ref))


def test_lambert_crossing_against_closed_form():
    """x e^x = 3 is x = W(3): a closed form independent of any root finder."""
    f1, f2, f1_mp, f2_mp, lo, hi, _ = CROSSINGS["lambert_type_x_ex_equals_3"]
    res = branch_crossing(f1, f2, lo, hi, f1_mp=f1_mp, f2_mp=f2_mp, digits=30)
    with mpmath.workdps(50):
        assert abs(res.value_mp - mpmath.lambertw(3).real) <= res.error


def test_float64_only():
    res = find_crossing(lambda x: math.cos(x) - x, 0.0, 2.0)
    assert res.status == "converged" and res.digits == 15
    with mpmath.workdps(30):
        ref = mpmath.findroot(lambda x: mpmath.cos(x) - x, 0.74)
    assert abs(res.value - float(ref)) <= res.error
    limited = find_crossing(lambda x: math.cos(x) - x, 0.0, 2.0, digits=25)
    assert limited.status == "limited" and limited.digits < 25


def test_function_error_limits_digits():
    """An f known only to 1e-9 (say a quadrature) supports ~ 1e-9 / |f'| in the root."""
    f = lambda x: math.cos(x) - x  # noqa: E731
    res = find_crossing(f, 0.0, 2.0, digits=30, f_mp=lambda x: mpmath.cos(x) - x, f_error=1e-9)
    slope = -math.sin(0.7390851332151607) - 1
    assert res.status == "limited"
    assert math.isclose(res.error, 1e-9 / abs(slope), rel_tol=1e-6)
    # 6e-10 absolute on 0.739 is 8e-10 relative: 9 significant digits are supported.
    assert res.digits == math.floor(-math.log10(res.error / 0.7390851332151607)) == 9
    assert res.digits_string == "0.739085133"


def test_no_sign_change_and_failures():
    res = find_crossing(lambda x: x * x + 1, -1.0, 1.0)
    assert res.status == "not_found" and res.bracket is None and "does not change sign" in res.message
    res = find_crossing(lambda x: math.log(x), -1.0, 2.0)
    assert res.status == "failed" and "ValueError" in res.message
    with pytest.raises(ParameterError):
        find_crossing(math.cos, 1.0, 0.0)
    with pytest.raises(ParameterError):
        find_crossing(math.cos, 0.0, 2.0, digits=0)


def test_first_of_several_crossings_and_exact_grid_zero():
    res = find_crossing(math.sin, 1.0, 10.0, digits=25, f_mp=mpmath.sin)
    with mpmath.workdps(40):
        assert abs(res.value_mp - mpmath.pi) <= res.error <= mpmath.pi * mpmath.mpf(10) ** -25
    res = find_crossing(lambda x: x - 0.5, 0.0, 1.0, n_scan=4, digits=20, f_mp=lambda x: x - mpmath.mpf(1) / 2)
    assert res.status == "converged" and res.value_mp == mpmath.mpf(1) / 2


def test_bisect_increasing_finds_cube_roots_within_its_bracket_bound():
    targets = np.linspace(-7.0, 20.0, 11)
    lo, hi, n = np.full(targets.shape, -3.0), np.full(targets.shape, 3.0), 30
    roots = bisect_increasing(lambda x: x**3 - targets, lo, hi, iterations=n)
    assert np.all(np.abs(roots - np.cbrt(targets)) <= (hi - lo) * 2.0 ** (-n - 1))


def test_bisect_increasing_rejects_a_bad_iteration_count():
    with pytest.raises(ParameterError, match="iterations"):
        bisect_increasing(lambda x: x, [-1.0], [1.0], iterations=0)


# -- crossings of noisy functions ----------------------------------------------------------------------
def test_scan_crossing_root_and_check_rule_error_in_closed_form():
    """A linear crossing function with a known offset on the check rule: root 0.8 and error
    |offset / slope| + rtol·root."""
    f = lambda a: 2e-4 * (a - 0.8)  # noqa: E731
    f_check = lambda a: f(a) + 1e-6  # noqa: E731
    alphas = np.linspace(0.5, 1.0, 6)
    result = scan_crossing(f, alphas, [f(a) for a in alphas], f_check, 1e-6)
    assert result.status == "converged" and result.bracket == (0.7, 0.8) or result.bracket == (0.8, 0.9)
    assert abs(result.value - 0.8) < 1e-6
    assert abs(result.error - (1e-6 / 2e-4 + 1e-6 * 0.8)) < 1e-9
    assert result.digits_string == "0.80"  # two significant digits supported by an error of 5e-3


def test_scan_without_a_sign_change_says_what_the_sign_means_and_where_a_secant_would_cross():
    alphas = np.linspace(1.0, 3.0, 5)
    values = np.array([4e-3, 3e-3, 2e-3, 1.5e-3, 1e-3])
    result = scan_crossing(lambda a: math.nan, alphas, values, lambda a: math.nan, 1e-3,
                           meaning={1: "the function stays positive"}, name="α")
    assert result.status == "not_found" and math.isnan(result.value) and math.isnan(result.error)
    assert "the function stays positive" in result.message
    assert "α ≈ 4" in result.message  # the secant through the last two points (slope -1e-3 per 0.5)


@pytest.mark.parametrize("values", [[-1e-5, math.nan, 2e-5, 3e-5], [1e-5, math.nan, 2e-5, 3e-5], [math.nan] * 4])
def test_unsolved_scan_points_never_give_a_number(values):
    """A sign change across an unevaluated point, or one that could hide a sign change, is failed."""
    result = scan_crossing(lambda a: math.nan, np.linspace(0.5, 1.1, 4), np.array(values), lambda a: math.nan, 1e-3,
                           why=lambda a: "branch lost")
    assert result.status == "failed" and math.isnan(result.value)
    assert "0.7 (branch lost)" in result.message


def test_secant_root_from_a_close_guess_and_the_check_shift():
    """From a guess within a step of the root (the continuation regime it is made for) the secant root's
    interpolation error over the final bracket, |f''|/(2|f'|)·|x − a_0||x − a_1| ≈ (2/4.6)·0.02·0.01 < 1e-4,
    lies inside the reported error (the check rule's shift 1e-4 over the slope, plus rtol·x)."""
    f = lambda a: (a - 1.3) * (1 + a)  # noqa: E731  root 1.3, slope 2.3 there
    result = secant_root(f, 1.29, lambda a: f(a) + 2.3e-4, 1e-6, (0.5, 3.0))
    assert result.status == "converged"
    assert abs(result.value - 1.3) <= result.error
    assert result.error == pytest.approx(1e-4 * 2.3 / abs(result.slope) + 1e-6 * result.value, rel=1e-6)
    assert secant_root(f, 2.9, f, 1e-6, (2.0, 3.0)).status == "failed"  # the root lies outside the bounds


def test_second_difference_bound_of_a_quadratic_is_its_curvature():
    assert second_difference_bound(lambda x: 3 * x * x - x, 0.7) == pytest.approx(6.0, rel=1e-9)


def test_noisy_newton_root_error_covers_the_root():
    """f(x) = x² − 2 known to ±1e-6 at each evaluation (a deterministic perturbation of that size), with
    its exact slope 2x: Newton from 1.3 stops once the next step's linearisation error is below 1e-6; the
    reported error covers √2. With secant slopes (and a reference slope) it still covers it."""
    noise = lambda x: 1e-6 * math.sin(1e3 * x)  # noqa: E731

    def exact_slope(x):
        return CrossingValue(x, x * x - 2 + noise(x), 1e-6, 2 * x)

    root, points = noisy_newton_root(exact_slope, 1.3, curvature=2.0, initial_slope=2.6, max_steps=6)
    assert root.status == "converged" and abs(root.value - math.sqrt(2)) <= root.error
    assert root.error < 1e-5 and len(points) <= 4

    def secant(x):
        return CrossingValue(x, x * x - 2 + noise(x), 1e-6)

    root, _ = noisy_newton_root(secant, 1.3, curvature=2.0, initial_slope=2.6, reference_slope=2.8, max_steps=6)
    assert abs(root.value - math.sqrt(2)) <= root.error

    failing = noisy_newton_root(lambda x: CrossingValue(x, failure="no value"), 1.3, curvature=2.0, initial_slope=1.0)
    assert failing[0].status == "failed" and "no value" in failing[0].message
