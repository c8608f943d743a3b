"""Which significant digits of a value its error supports, and how they are written.

One rule for every digit string the package prints from a value and its absolute error:

- `supported_digits(value, error, requested)`: n = ⌊−log10(error / |value|)⌋ significant digits, at most `requested`;
  all `requested` when the error is 0, none when it is above |value|/10 (so whenever it is as large as the value,
  which fixes not even its first digit) or is not finite. Every kept digit is then supported: the error is at most
  |value|·10^(−n), less than one unit of the n-th significant digit; one digit more would not be (the error is
  above |value|·10^(−n−1)). The ratio is taken in float64, so a boundary case is decided to ~1e-16 relative.
- `digits_text(value, n_digits)`: the value rounded to n_digits significant digits, trailing zeros kept (they are
  digits), in one notation rule.
- `digit_string(value, n_digits, requested)`: `digits_text` at a working precision above the requested digits, so
  the string is exact to its last digit; "" for no digit.
- `error_rounded_up(error, decimals)`, `error_significant_up(error, significant)`: an error written to a number of
  decimals or of significant digits, rounded up, never below itself.
- `beyond_float64(name, value, digits, digits_field)`: the clause a message adds where a located value is a digit
  string beyond float64's range (the float is inf, null in JSON).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from decimal import ROUND_CEILING, Decimal

import mpmath

from attnphase.errors import ParameterError
from attnphase.params import check_int, check_real

__all__ = ["FLOAT64_DIGITS", "supported_digits", "digits_text", "digit_string", "error_rounded_up",
           "error_significant_up", "beyond_float64"]

FLOAT64_DIGITS = 17
"""Significant digits that tell every float64 apart: more digits of a float64 value are those of its binary
representation, not of the quantity it estimates, so a float64 computation asks for at most these."""


def _real(value):
    """`value` as a finite float or mpmath number (an mpmath number or a Python integer may lie beyond float64's
    range: an integer is taken exactly, as an mpmath number)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return mpmath.mpf(value)
    if isinstance(value, mpmath.mpf):
        if not mpmath.isfinite(value):
            raise ParameterError("value", value, "a finite real number in (-inf, inf)")
        return value
    return check_real("value", value)


def supported_digits(value, error, requested: int) -> int:
    """How many of `requested` significant digits of `value` its absolute `error` supports: ⌊−log10(error/|value|)⌋,
    clipped to [0, requested].

    error 0: all `requested` (an exact value; a value of 0 with error 0 is an exact zero, written "0" by
    `digit_string`). error > |value|/10 (so every error of a value 0: a zero has no significant digit an error can
    support), inf or NaN (the error of a location that failed): none. value: a finite real number (float, int or
    mpmath mpf; mpmath values are compared at their own precision, beyond float64's range as well); error: a real
    number ≥ 0, inf or NaN; requested: an integer ≥ 1. Negative values are ruled by |value|."""
    value = _real(value)
    requested = check_int("requested", requested, 1, None)
    if isinstance(error, int) and not isinstance(error, bool):
        error = mpmath.mpf(error)  # exactly: an integer can lie beyond float64's range (10**400)
    if isinstance(error, mpmath.mpf):  # kept in mpmath: it may lie beyond float64's range
        if mpmath.isnan(error) or error == mpmath.inf:
            return 0
        if error < 0:
            raise ParameterError("error", error, "a real number in [0, inf), or inf or NaN (no digit supported)")
    elif isinstance(error, numbers.Real) and not isinstance(error, bool) and (math.isnan(error) or error == math.inf):
        return 0
    else:
        error = check_real("error", error, 0.0)
    if error == 0:
        return requested
    if value == 0:
        return 0
    error64, magnitude = float(error), abs(float(value))
    if 0 < error64 < math.inf and 0 < magnitude < math.inf and error64 / magnitude > 0:  # in float64 where it can
        ratio_log = -math.log10(error64 / magnitude)
    else:  # beyond float64's range, or the ratio underflows: in mpmath
        with mpmath.workdps(30):
            ratio_log = float(-mpmath.log10(mpmath.mpf(error) / abs(mpmath.mpf(value))))
    if ratio_log <= 0:
        return 0
    return min(requested, int(math.floor(ratio_log)))


def digits_text(value, n_digits: int) -> str:
    """`value` rounded to `n_digits` significant digits, trailing zeros kept, in one notation rule whatever the digits
    asked: positional where the rounded value's decimal exponent e satisfies −4 ≤ e < n_digits (the rule of the
    printf format %g), else scientific, d.ddd…e±x; never a trailing point ("3", "3e+1", not "3.", "3.e+1"). The
    rounding is mpmath's at the current working precision."""
    n_digits = check_int("n_digits", n_digits, 1, None)
    text = mpmath.nstr(value if isinstance(value, mpmath.mpf) else mpmath.mpf(value), n_digits, strip_zeros=False,
                       min_fixed=-5, max_fixed=n_digits)
    return text.replace(".e", "e")[:-1] if text.endswith(".") else text.replace(".e", "e")


def digit_string(value, n_digits: int, requested: int) -> str:
    """`value` to `n_digits` significant digits (`digits_text`: trailing zeros kept), "" for none (n_digits 0); an
    exact zero is "0". The rounding runs at a working precision 10 digits above the `requested` ones (at least 25),
    so the string is exact to its last digit. n_digits: an integer in [0, requested] (`supported_digits`)."""
    requested = check_int("requested", requested, 1, None)
    n_digits = check_int("n_digits", n_digits, 0, requested)
    if not n_digits:
        return ""
    value = _real(value)
    if value == 0:
        return "0"
    with mpmath.workdps(max(requested, 15) + 10):
        return digits_text(value, n_digits)


# Rounding an error up must not turn float noise into a digit: 1e-4·(1 + 2e-16) is 0.0001, not 0.0002.
ROUND_UP_SLACK = Decimal("1e-12")


def _ceiling(error: float, decimals: int) -> str:
    """`error` rounded up at the decimal place 10^−decimals (decimals < 0: tens, hundreds, …), written out in full;
    the float read by its shortest decimal repr and less ROUND_UP_SLACK of itself, so that rounding noise is not
    rounded up."""
    exact = Decimal(repr(float(error)))
    return f"{(exact - exact * ROUND_UP_SLACK).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_CEILING):f}"


def error_rounded_up(error, decimals: int) -> str:
    """`error` rounded UP to `decimals` decimal places, as text: an error bar is never printed smaller than it is
    (0.05499 at 2 decimals is "0.06", not "0.05"); an error that is a printed value up to float rounding stays that
    value (0.05 is "0.05"). error: a finite real number ≥ 0; decimals: an integer ≥ 0."""
    error = check_real("error", error, 0.0)
    decimals = check_int("decimals", decimals, 0, None)
    return _ceiling(error, decimals)


def error_significant_up(error, significant: int) -> str:
    """`error` to `significant` significant digits, rounded up (as `error_rounded_up`, at the decimal place of its last
    such digit): 0.000823448 at 2 digits is "0.00083", 0.000245 at 1 is "0.0003", 23 at 1 is "30"; "0" for 0.
    error: a finite real number ≥ 0; significant: an integer ≥ 1."""
    error = check_real("error", error, 0.0)
    significant = check_int("significant", significant, 1, FLOAT64_DIGITS)
    if error == 0:
        return "0"
    decade = math.floor(math.log10(error))
    text = _ceiling(error, significant - 1 - decade)
    # rounded up into the next decade (0.0099999 -> 0.010, 9.99…98e-5 -> 0.00010): one digit fewer there
    return _ceiling(error, significant - 2 - decade) if float(text) >= 10.0 ** (decade + 1) else text


def beyond_float64(name: str, value: float, digits: str, digits_field: str, also: Sequence[str] = ()) -> str:
    """"" where the float `value` is finite; else the clause a message adds to say so: the value (`digits`, its digit
    string, computed beyond float64) lies beyond float64's range, so the float `name` is inf (null in JSON) and
    `digits_field` holds it. A copy-heads P* = n*/β at β = 1e-308 is such a value: n* = 19.58 is a float, P* is not.
    `also`: the other fields the same overflow leaves null (P*'s error, the spinodals in P), named in the clause so
    that a reader of the JSON is not left to guess why they are null."""
    if math.isfinite(value):
        return ""
    others = f"; {', '.join(also)} {'is' if len(also) == 1 else 'are'} null for the same reason" if also else ""
    return (f"; {name} = {digits or '(no digit supported)'} lies beyond float64's range (largest 1.8e308): {name} is "
            f"inf (null in JSON), {digits_field} holds its digits{others}")
