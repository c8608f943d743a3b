"""numeric.digits: the one rule for the digits an error supports, against hand-worked cases and a property."""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnphase import numeric
from attnphase.errors import ParameterError
from attnphase.numeric.digits import FLOAT64_DIGITS, beyond_float64, digit_string, digits_text, supported_digits
from attnphase.numeric.threshold import noisy_threshold, threshold_from_error
from attnphase.results import Status

# (value, error, requested, n, text); n = ⌊−log10(error/|value|)⌋ worked by hand, clipped to [0, requested]
HAND_WORKED = [
    (1.2345678, 7e-4, 15, 3, "1.23"),  # 7e-4/1.2346 = 5.67e-4: −log10 = 3.25
    (0.8, 5e-3, 15, 2, "0.80"),  # 6.25e-3: 2.20; the trailing zero is a digit
    (123.456, 3.0, 15, 1, "1e+2"),  # 2.43e-2: 1.61
    (1234.5678, 0.004, 17, 5, "1234.6"),  # 3.24e-6: 5.49
    (1234.5678, 0.004, 3, 3, "1.23e+3"),  # 5 supported, 3 requested
    (581.152372, 0.128, 17, 3, "581"),  # 2.20e-4: 3.66
    (1.234e-4, 1e-8, 15, 4, "0.0001234"),  # exponent −4: still positional (the %g rule)
    (1.2349999, 1e-3, 3, 3, "1.23"),  # rounded once, at a precision above the digits (twice: "1.24")
    (1.0, 1e-3, 15, 3, "1.00"),  # error = |value|·10^−3 exactly: the third digit is supported
    (0.5, 0.7, 15, 0, ""),  # error ≥ |value|: no digit (the copy-heads rule printed "0.5")
    (0.5, 0.5, 15, 0, ""),  # error = |value|
    (0.5, 0.07, 15, 0, ""),  # 0.14: −log10 = 0.85, the first digit is not fixed to ±1 unit
    (1234.5678, 2000.0, 17, 0, ""),
    (-1234.5678, 0.004, 17, 5, "-1234.6"),  # negative values: by |value|
    (-0.0123456, 4e-7, 15, 4, "-0.01235"),  # 3.24e-5: 4.49
    (-2.5e-8, 1e-12, 15, 4, "-2.500e-8"),  # 4e-5: 4.40; scientific below 1e-4
    (1 / 3, 0.0, 7, 7, "0.3333333"),  # error 0: every requested digit
    (0.0, 0.0, 5, 5, "0"),  # an exact zero
    (-0.0, 0.0, 5, 5, "0"),
    (0.0, 1e-3, 15, 0, ""),  # a zero known to an error has no significant digit
    (1e-10, 1e-3, 15, 0, ""),  # within the error of zero (the copy-heads rule printed "1e-10")
    (1234.5678, math.inf, 17, 0, ""),  # an unbounded error
    (1234.5678, math.nan, 17, 0, ""),  # the error of a location that failed
    (1e300, 1e-300, 15, 15, "1.00000000000000e+300"),  # the ratio 1e-600 underflows float64: taken in mpmath
]


@pytest.mark.parametrize(("value", "error", "requested", "n", "text"), HAND_WORKED)
def test_hand_worked_cases(value, error, requested, n, text):
    assert supported_digits(value, error, requested) == n
    assert digit_string(value, n, requested) == text


def test_mpmath_values_at_50_digits():
    """π at 50 digits: an error of 1e-40 supports ⌊40.497⌋ = 40 digits (the 41st digit of π is 1: rounded down), 1e-45
    supports 45 (…71693|99 rounds up to …716940, a trailing zero kept). A value beyond float64's range is ruled in
    mpmath: 1.5e400 ± 1e396 supports ⌊4.18⌋ = 4 digits."""
    with mpmath.workdps(50):
        pi = +mpmath.pi
        assert supported_digits(pi, 1e-40, 50) == 40
        assert digit_string(pi, 40, 50) == "3.141592653589793238462643383279502884197"
        assert supported_digits(pi, 1e-45, 50) == 45
        assert digit_string(pi, 45, 50) == "3.14159265358979323846264338327950288419716940"
        assert supported_digits(pi, mpmath.mpf("1e-45"), 30) == 30  # clipped to the requested digits
        big = mpmath.mpf("1.5e400")
        assert supported_digits(big, mpmath.mpf("1e396"), 50) == 4
        assert digit_string(big, 4, 50) == "1.500e+400"
        assert supported_digits(-big, mpmath.mpf("2e399"), 50) == 0  # 0.13: −log10 = 0.88
        assert supported_digits(big, 1e300, 50) == 50  # a float64 error: 1e300/1.5e400 gives 100.2, clipped to 50
        assert supported_digits(big, mpmath.inf, 50) == 0


def test_bad_input_is_refused_by_name():
    for call, name in ((lambda: supported_digits(math.nan, 1e-3, 5), "value"),
                       (lambda: supported_digits(math.inf, 1e-3, 5), "value"),
                       (lambda: supported_digits(mpmath.inf, 1e-3, 5), "value"),
                       (lambda: supported_digits(True, 1e-3, 5), "value"),
                       (lambda: supported_digits(1.2345, -1e-3, 5), "error"),
                       (lambda: supported_digits(1.2345, -math.inf, 5), "error"),
                       (lambda: supported_digits(1.2345, mpmath.mpf(-1), 5), "error"),
                       (lambda: supported_digits(1.2345, -10**400, 5), "error"),
                       (lambda: supported_digits(1.2345, None, 5), "error"),
                       (lambda: supported_digits(1.2345, 1e-3, 0), "requested"),
                       (lambda: digit_string(1.2345, 4, 3), "n_digits"),
                       (lambda: digit_string(1.2345, -1, 3), "n_digits"),
                       (lambda: digit_string(math.nan, 2, 3), "value"),
                       (lambda: digits_text(1.5, 0), "n_digits")):
        with pytest.raises(ParameterError) as info:
            call()
        assert info.value.name == name


def test_the_threshold_constructors_and_the_package_use_the_rule():
    """noisy_threshold and threshold_from_error print what the rule prints, with `digits` its count; the numeric
    package re-exports the module's names."""
    for value, error, _, _, _ in HAND_WORKED:
        if value == 0 or not math.isfinite(error):
            continue
        n = supported_digits(value, error, 15)
        noisy = noisy_threshold(value, error, Status.CONVERGED, "")
        located = threshold_from_error(value, error, 15, None, "x")
        assert (noisy.digits, noisy.digits_string) == (located.digits, located.digits_string) == (
            n, digit_string(value, n, 15))
    assert numeric.supported_digits is supported_digits and numeric.digit_string is digit_string
    assert numeric.digits_text is digits_text and numeric.FLOAT64_DIGITS == FLOAT64_DIGITS == 17


def test_a_failed_polish_prints_no_digits_and_says_so_in_its_digits():
    """A crossing whose mpmath polish fails has no error estimate: digits_string "" and digits 0 (it printed 15
    digits of the float64 root with digits 0); the float64 root stays in value."""
    def failing(x):
        raise ValueError("no value")

    t = numeric.find_crossing(lambda x: x - 0.3, 0.0, 1.0, f_mp=failing, digits=20)
    assert t.status == "failed" and math.isnan(t.error)
    assert (t.digits_string, t.digits) == ("", 0) and abs(t.value - 0.3) <= 4e-16


@given(
    value=st.floats(1e-300, 1e300) | st.floats(-1e300, -1e-300),
    log_ratio=st.floats(-19.0, 1.5),
    requested=st.integers(1, FLOAT64_DIGITS),
)
def test_the_printed_digits_read_back_within_the_error_and_half_a_unit(value, log_ratio, requested):
    """Property: the digit string, read back, lies within error + half a unit of its last digit of the value (the
    rounding alone moves it at most half a unit); each kept digit is supported (error ≤ |value|·10^−n) and one more
    would not be (error > |value|·10^−n−1) unless the requested digits stop it; no digit when error > |value|/10.
    The rule's ratio is taken in float64: the bounds hold to a relative 1e-12."""
    error = abs(value) * 10.0**log_ratio
    n = supported_digits(value, error, requested)
    text = digit_string(value, n, requested)
    slack = 1 + 1e-12
    if n == 0:
        assert text == "" and error * 10 * slack > abs(value)
        return
    with mpmath.workdps(60):
        read, exact = mpmath.mpf(text), mpmath.mpf(value)
        unit = mpmath.mpf(10) ** (mpmath.floor(mpmath.log10(abs(read))) - n + 1)
        assert abs(read - exact) <= unit / 2 <= error + unit / 2
    significant = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    assert len(significant) == n, (text, n)
    assert error <= abs(value) * 10.0**-n * slack
    assert n == requested or error * slack > abs(value) * 10.0 ** -(n + 1)


def test_integers_beyond_float64_are_taken_exactly():
    """A Python integer error or value beyond float64's range (10**400) is compared exactly, in mpmath: it raised
    OverflowError."""
    assert supported_digits(1.0, 10**400, 5) == 0
    assert supported_digits(10**400, 3, 5) == 5 and digit_string(10**400, 5, 5) == "1.0000e+400"
    assert supported_digits(12345, 1, 5) == 4 and digit_string(12345, 4, 5) == "1.235e+4"


@pytest.mark.parametrize("error, significant, text", [
    (0.000823448, 2, "0.00083"), (0.000245569, 1, "0.0003"), (0.00440125, 2, "0.0045"), (5.73712e-05, 2, "0.000058"),
    (0.05, 1, "0.05"), (23.0, 1, "30"), (1234.5, 2, "1300"), (0.0, 2, "0"), (0.0099999, 1, "0.01"),
    (9.999999999999983e-05, 1, "0.0001"),  # one digit, not "0.00010", when rounding up reaches the next decade
])
def test_an_error_to_its_significant_digits_is_rounded_up(error, significant, text):
    """`error_significant_up`: never below the error (0.000245569 at one digit was printed "0.0002", 19% short), and
    less than one unit of its last digit above it."""
    from attnphase.numeric.digits import error_significant_up

    shown = error_significant_up(error, significant)
    assert shown == text
    assert error * (1 - 1e-12) <= float(shown) < error + 10.0 ** (math.floor(math.log10(error)) - significant + 2) \
        if error else True
    digits = shown.replace(".", "").lstrip("0")
    assert len(digits) <= significant or set(digits[significant:]) == {"0"}, shown



def test_beyond_float64_says_where_the_digits_of_an_overflowed_value_are():
    from attnphase.numeric.digits import beyond_float64

    assert beyond_float64("x", 1.0, "1", "x_digits") == ""
    assert beyond_float64("P_star", math.inf, "2.59e+308", "P_star_digits") == (
        "; P_star = 2.59e+308 lies beyond float64's range (largest 1.8e308): P_star is inf (null in JSON), "
        "P_star_digits holds its digits")
    assert "P_star = (no digit supported) lies beyond" in beyond_float64("P_star", math.inf, "", "P_star_digits")


def test_the_beyond_float64_clause_is_empty_for_a_float_and_names_the_value_and_the_other_null_fields():
    assert beyond_float64("P_star", 1.0e308, "1.0e+308", "P_star_digits", also=["error"]) == ""
    clause = beyond_float64("P_star", math.inf, "2.59e+308", "P_star_digits")
    assert clause == ("; P_star = 2.59e+308 lies beyond float64's range (largest 1.8e308): P_star is inf (null in "
                      "JSON), P_star_digits holds its digits")
    assert "P_star = (no digit supported) lies beyond" in beyond_float64("P_star", math.inf, "", "P_star_digits")
    assert beyond_float64("P", math.inf, "2e308", "P_digits", also=["error"]).endswith(
        "; error is null for the same reason")
    assert beyond_float64("P", math.inf, "2e308", "P_digits", also=["error", "spinodals"]).endswith(
        "; error, spinodals are null for the same reason")
