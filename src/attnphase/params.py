"""Validation of parameters where they enter the public API and the CLI.

Each helper returns the value converted to the expected type or raises `ParameterError` naming the
parameter and its allowed range. NaN, infinities and booleans are rejected wherever a finite number
is expected.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Sequence

import numpy as np

from attnphase.errors import ParameterError


def _describe_interval(low, high, low_open, high_open) -> str:
    left = "(" if low_open or low is None else "["
    right = ")" if high_open or high is None else "]"
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"a finite real number in {left}{lo}, {hi}{right}"


SMALLEST_FLOAT = 5e-324  # the smallest positive float64 (subnormal)


def underflows_to_zero(text: str) -> bool:
    """Whether a number written as `text` is not zero but reads as the float 0.0 (1e-400): below SMALLEST_FLOAT.

    Used where text becomes a float, so that such a value is refused, naming it, instead of being read as 0."""
    try:
        if float(text) != 0.0:
            return False
    except (TypeError, ValueError, OverflowError):
        return False
    mantissa = text.strip().lower().split("e")[0]
    return any(digit in mantissa for digit in "123456789")


def underflow_rule(text: str, what: str = "a value") -> str:
    """What is allowed, said of a value `text` that `underflows_to_zero` (`what`: how the rule names the values)."""
    return (f"{what} that a float holds: {text.strip()} is not 0, but below the smallest positive float "
            f"{SMALLEST_FLOAT!r}, so it would be read as 0")


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
    if isinstance(value, str) and underflows_to_zero(value):  # not 0, and no float holds it: never read as 0
        raise ParameterError(name, value, f"{allowed}; {underflow_rule(value)}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ParameterError(name, value, allowed)
    if high is not None and (x > high or (high_open and x == high)):
        raise ParameterError(name, value, allowed)
    return x


def check_positive(name: str, value: object) -> float:
    """A finite float > 0."""
    return check_real(name, value, 0.0, None, low_open=True)


def _integer_text(n: int) -> str:
    """A bound as text: a power of two from 2^32 on as 2^k (2^256 has 78 digits), any other integer in digits."""
    if n >= 2**32 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n)


def _describe_integers(low: int | None, high: int | None) -> str:
    # an unbounded side is open: no integer is inf ("[1, inf)", as the real ranges write it)
    lo = "(-inf" if low is None else f"[{_integer_text(low)}"
    hi = "inf)" if high is None else f"{_integer_text(high)}]"
    return f"an integer in {lo}, {hi}"


def check_int(name: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """Return `value` as an int inside [low, high], or raise `ParameterError`."""
    allowed = _describe_integers(low, high)
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


def check_bool(name: str, value: object) -> bool:
    """Return `value` as a bool if it is one (Python's or numpy's), or raise `ParameterError`: a flag given as a
    string or a number ("no", 0) would otherwise act by its truth value."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ParameterError(name, value, "True or False")


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
    """A list of finite floats (a comma-separated string is accepted, every entry a number: "0.6,,0.4" is refused,
    not read as two numbers), optionally of a fixed length."""
    if isinstance(values, str):
        parts: Iterable[object] = [p.strip() for p in values.split(",")]
        if values.strip() and "" in parts:
            raise ParameterError(name, values, "a comma-separated list of numbers, no entry empty")
        parts = [p for p in parts if p]
    elif isinstance(values, Iterable):
        parts = list(values)
    else:
        # None or a number where a list belongs: the rule of an empty list (text is read comma-separated above)
        raise ParameterError(name, values, "a non-empty list of numbers")
    if any(isinstance(p, Iterable) and not isinstance(p, str) for p in parts):  # e.g. a matrix given as its rows
        raise ParameterError(name, values, "a flat list of numbers (a matrix row-major: its first row, then the next)")
    out = [check_real(name, p, low, high) for p in parts]
    if length is not None and len(out) != length:
        raise ParameterError(name, values, f"a list of exactly {length} numbers")
    if not out:
        raise ParameterError(name, values, "a non-empty list of numbers")
    return out


# --- declared ranges: a model's parameters are declared once, for the API, the CLI and the simulator ---


@dataclasses.dataclass(frozen=True)
class RealRange:
    """A finite real number in an interval (None: unbounded on that side)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def check(self, name: str, value: object) -> float:
        return check_real(name, value, self.low, self.high, low_open=self.low_open, high_open=self.high_open)

    def describe(self) -> str:
        return _describe_interval(self.low, self.high, self.low_open, self.high_open)


@dataclasses.dataclass(frozen=True)
class IntRange:
    """An integer in [low, high] (None: unbounded on that side)."""

    low: int | None = None
    high: int | None = None

    def check(self, name: str, value: object) -> int:
        return check_int(name, value, self.low, self.high)

    def describe(self) -> str:
        return _describe_integers(self.low, self.high)


@dataclasses.dataclass(frozen=True)
class OneOf:
    """One of a fixed set of words."""

    choices: tuple[str, ...]

    def check(self, name: str, value: object) -> str:
        return check_choice(name, value, self.choices)

    def describe(self) -> str:
        return "one of " + ", ".join(repr(c) for c in self.choices)


@dataclasses.dataclass(frozen=True)
class RealListRange:
    """A list of finite reals in [low, high] (a comma-separated string is accepted), as a tuple."""

    length: int | None = None
    low: float | None = None
    high: float | None = None

    def check(self, name: str, value: object) -> tuple[float, ...]:
        return tuple(check_real_list(name, value, self.length, self.low, self.high))

    def describe(self) -> str:
        size = f"{self.length} " if self.length else ""
        return f"a list of {size}numbers in {_describe_interval(self.low, self.high, False, False)[len('a finite real number in '):]}"


Range = RealRange | IntRange | OneOf | RealListRange


def parameter(allowed: Range | None, default: object = dataclasses.MISSING, *, help: str = "",
              option: str | None = None) -> dataclasses.Field:
    """A field of a `ParameterSet`: its allowed range, default, help text and (optionally) CLI option name.

    `allowed=None` declares a value that is checked only by `ParameterSet.check_joint` (e.g. a matrix whose
    shape depends on another parameter). `default=None` means "absent": None then skips the range check
    (None for a parameter with another default, or none, is checked like any value, and rejected).
    """
    return dataclasses.field(default=default, metadata={"allowed": allowed, "help": help, "option": option})


def option_name(field: dataclasses.Field) -> str:
    """The CLI option of a declared parameter: its `option` metadata or --name-with-dashes."""
    return field.metadata.get("option") or "--" + field.name.replace("_", "-")


class ParameterSet:
    """Base of a model's frozen parameter object (a frozen dataclass whose fields use `parameter`).

    `validated(**values)` checks every value against its declared range, then the cross-parameter
    constraints of `check_joint`, and returns the object; everything downstream trusts it. The same
    declarations give the CLI its options (`attnphase.cli.common.options_from`), so a range is written
    once.
    """

    @classmethod
    def validated(cls, **values):
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = set(values) - names
        if unknown:
            name = sorted(unknown)[0]
            raise ParameterError(name, values[name], "one of the parameters " + ", ".join(sorted(names)))
        checked = {}
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            if f.name in values:
                value = values[f.name]
            elif f.default is not dataclasses.MISSING:
                value = f.default
            elif f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
            else:
                raise ParameterError(f.name, None, "a value (this parameter is required)")
            allowed = f.metadata.get("allowed")
            # None is "absent" only where it is the declared default; a required value or any other default
            # must be given as a value of its range.
            absent = value is None and f.default is None
            checked[f.name] = allowed.check(f.name, value) if allowed is not None and not absent else value
        obj = cls(**checked)
        obj.check_joint()
        return obj

    def check_joint(self) -> None:
        """Constraints between parameters; raise `ParameterError` naming one of them. Default: none."""

    def replace(self, **changes):
        """A validated copy with some values changed."""
        current = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        return type(self).validated(**{**current, **changes})

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.repr}

    @classmethod
    def declarations(cls) -> dict[str, dataclasses.Field]:
        """The declared fields by name (for option generation and documentation)."""
        return {f.name: f for f in dataclasses.fields(cls) if f.init}
