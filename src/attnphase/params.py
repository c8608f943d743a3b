"""Validation of parameters where they enter the public API and the CLI.

Each helper returns the value converted to the expected type or raises `ParameterError` naming the
parameter and its allowed range. NaN, infinities and booleans are rejected wherever a finite number
is expected.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence

from attnphase.errors import ParameterError


def _describe_interval(low, high, low_open, high_open) -> str:
    left = "(" if low_open or low is None else "["
    right = ")" if high_open or high is None else "]"
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"a finite real number in {left}{lo}, {hi}{right}"


def check_real(
    name: str,
    value: object,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return `value` as a finite float inside the interval, or raise `ParameterError`."""
    allowed = _describe_interval(low, high, low_open, high_open)
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ParameterError(name, value, allowed)
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(name, value, allowed) from None
    if not math.isfinite(x):
        raise ParameterError(name, value, allowed)
    if low is not None and (x < low or (low_open and x == low)):
        raise ParameterError(name, value, allowed)
    if high is not None and (x > high or (high_open and x == high)):
        raise ParameterError(name, value, allowed)
    return x


def check_positive(name: str, value: object) -> float:
    """A finite float > 0."""
    return check_real(name, value, 0.0, None, low_open=True)


def check_int(name: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """Return `value` as an int inside [low, high], or raise `ParameterError`."""
    lo = "-inf" if low is None else str(low)
    hi = "inf" if high is None else str(high)
    allowed = f"an integer in [{lo}, {hi}]"
    if isinstance(value, bool):
        raise ParameterError(name, value, allowed)
    if isinstance(value, numbers.Integral):
        n = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        n = int(value)
    elif isinstance(value, str):
        try:
            n = int(value.strip())
        except ValueError:
            raise ParameterError(name, value, allowed) from None
    else:
        raise ParameterError(name, value, allowed)
    if (low is not None and n < low) or (high is not None and n > high):
        raise ParameterError(name, value, allowed)
    return n


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Return `value` if it is one of `choices`, or raise `ParameterError`."""
    if not isinstance(value, str) or value not in choices:
        raise ParameterError(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_real_list(
    name: str,
    values: object,
    length: int | None = None,
    low: float | None = None,
    high: float | None = None,
) -> list[float]:
    """A list of finite floats (a comma-separated string is accepted), optionally of a fixed length."""
    if isinstance(values, str):
        parts: Iterable[object] = [p for p in values.split(",") if p.strip()]
    elif isinstance(values, Iterable):
        parts = list(values)
    else:
        raise ParameterError(name, values, "a comma-separated list of numbers")
    out = [check_real(name, p, low, high) for p in parts]
    if length is not None and len(out) != length:
        raise ParameterError(name, values, f"a list of exactly {length} numbers")
    if not out:
        raise ParameterError(name, values, "a non-empty list of numbers")
    return out
