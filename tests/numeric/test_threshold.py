"""Thresholds located to many digits, checked against mpmath.findroot on the closed form at a higher
working precision (an independent Newton/secant solve that shares nothing with the scan-and-polish
path but the function)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.numeric.threshold import branch_crossing, find_crossing, noisy_threshold
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
