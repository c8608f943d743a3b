"""Thresholds located to many digits, checked against mpmath.findroot on the closed form at a higher
working precision (an independent Newton/secant solve that shares nothing with the scan-and-polish
path but the function)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.numeric.threshold import branch_crossing, find_crossing, illinois, noisy_threshold, root_steps
from attnphase.results import Status

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


def test_a_noisy_threshold_keeps_the_digits_its_error_supports():
    """0.8 ± 5e-3: the error is 10^-2.2 relative, so two significant digits; an exact value keeps 15; a value
    without a finite error keeps none (and no mpmath value)."""
    assert noisy_threshold(0.8, 5e-3, Status.CONVERGED, "").digits_string == "0.80"
    assert noisy_threshold(1.2515375, 2.3e-4, Status.CONVERGED, "").digits_string == "1.25"
    assert noisy_threshold(0.8, 0.0, Status.CONVERGED, "").digits == 15
    missing = noisy_threshold(0.8, math.nan, Status.LIMITED, "")
    assert missing.digits == 0 and missing.digits_string == "" and missing.value_mp is None


def test_root_steps_newton_with_the_exact_slope_converges_quadratically_to_the_root():
    """x² − 2 with its exact slope from x = 1: Newton's iterates 1, 1.5, 17/12, 577/408, … (each error about the
    square of the last), stopped by the first step ≤ 1e-10; the root of the last point is √2 to rounding."""
    evaluations = []

    def evaluate(x):
        evaluations.append(x)
        return x * x - 2.0, 2.0 * x

    points, failure = root_steps(evaluate, 1.0, 1e-10)
    assert failure is None and [p[0] for p in points] == evaluations
    np.testing.assert_allclose([p[0] for p in points[:4]], [1.0, 1.5, 17 / 12, 577 / 408], rtol=1e-15)
    x, value, slope = points[-1]
    assert abs(x - value / slope - math.sqrt(2.0)) <= 1e-15 and len(points) == 5


def test_root_steps_secant_uses_the_given_slope_first_and_then_the_last_two_points():
    """x³ − 2 without a slope, from x = 1 with the slope 3 (exact there) and with a known earlier point: the first
    step is Newton's, every later slope is the secant through the two points before it, the steps stop at one
    ≤ 1e-9, and the root of the last point is 2^(1/3) within that (the secant converges superlinearly)."""
    f = lambda x: (x**3 - 2.0, None)  # noqa: E731
    for known in ((), ((0.5, 0.5**3 - 2.0, math.nan),)):
        points, failure = root_steps(f, 1.0, 1e-9, slope=3.0, known=known, max_steps=20)
        new = points[len(known):]
        assert failure is None and new[0][0] == 1.0
        if not known:
            assert new[0][2] == 3.0 and new[1][0] == 1.0 - (-1.0) / 3.0
        for before, after in zip(points[:-1], points[1:]):
            assert after[2] == (after[1] - before[1]) / (after[0] - before[0])
        x, value, slope = points[-1]
        assert abs(value / slope) <= 1e-9 and abs(x - value / slope - 2.0 ** (1 / 3)) <= 1e-9


def test_root_steps_stops_at_a_failed_evaluation_and_after_max_steps():
    """An evaluation that returns a text ends the steps with that text and the points before it; otherwise at most
    max_steps evaluations are made, however large the last step."""
    def failing(x):
        return "no fixed point" if x > 1.45 else (x * x - 2.0, 2.0 * x)

    points, failure = root_steps(failing, 1.0, 1e-10)
    assert failure == "no fixed point" and [p[0] for p in points] == [1.0]
    slow = lambda x: (x - 1e6, 1e-3)  # noqa: E731  (steps of 1e9: never below the tolerance)
    points, failure = root_steps(slow, 0.0, 1e-6, max_steps=3)
    assert failure is None and len(points) == 3
    with pytest.raises(ParameterError, match="max_steps"):
        root_steps(slow, 0.0, 1e-6, max_steps=0)


def test_root_steps_halves_a_step_whose_end_has_no_value():
    """Newton on x² − 2 from x = 0.5 steps to 2.25; with no value above 1.6 that step is halved back towards 0.5
    (to 1.375, inside), and Newton goes on from there to √2. Without halvings the same start fails, and where every
    halving also lands outside the function's range the last failure is returned with the points before it."""
    evaluations = []

    def partial(x):
        evaluations.append(x)
        return "no fixed point" if x > 1.6 else (x * x - 2.0, 2.0 * x)

    points, failure = root_steps(partial, 0.5, 1e-12, halvings=3)
    assert failure is None and evaluations[:3] == [0.5, 2.25, 1.375]
    assert [p[0] for p in points][:2] == [0.5, 1.375]
    x, value, slope = points[-1]
    assert abs(x - value / slope - math.sqrt(2.0)) <= 1e-15
    points, failure = root_steps(partial, 0.5, 1e-12)
    assert failure == "no fixed point" and [p[0] for p in points] == [0.5]
    nowhere = lambda x: "no fixed point" if x > 0.51 else (x * x - 2.0, 2.0 * x)  # noqa: E731
    points, failure = root_steps(nowhere, 0.5, 1e-12, halvings=3)  # 2.25, 1.375, 0.9375, 0.71875: none has a value
    assert failure == "no fixed point" and [p[0] for p in points] == [0.5]
    with pytest.raises(ParameterError, match="halvings"):
        root_steps(partial, 0.5, 1e-12, halvings=-1)


def test_illinois_shrinks_a_bracket_to_the_root_or_stops_at_a_small_value_or_a_missing_one():
    """f = x³ − 2 on [1, 2] (root 2^(1/3)): to a bracket of width 1e-12 around the root in a few dozen steps; with
    ftol, at a point where |f| <= ftol; where f has no value (None) at a point it would evaluate, None."""
    def f(x):
        return x ** 3 - 2

    root = 2 ** (1 / 3)
    a, b, fa, fb = illinois(f, 1.0, 2.0, f(1.0), f(2.0), 1e-12, max_iter=60)
    assert abs(b - a) <= 1e-12 and min(a, b) <= root + 1e-15 and max(a, b) >= root - 1e-15
    a, b, fa, fb = illinois(f, 1.0, 2.0, f(1.0), f(2.0), 0.0, ftol=1e-6)
    assert a == b and abs(fa) <= 1e-6 and abs(a - root) <= 1e-6 / (3 * root ** 2) * 1.01
    assert illinois(lambda x: None if x > 1.2 else f(x), 1.0, 2.0, f(1.0), f(2.0), 1e-12) is None
