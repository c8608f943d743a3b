"""Sweep grids: the values a sweep takes for each swept parameter, and the fixed settings beside them.

A grid is one swept parameter: its name and its values in sweep order (`Grid`). `parse_grid` reads the
command-line form, either `NAME=START:STOP:NUM` (NUM evenly spaced values from START to STOP, both ends
included) or `NAME=V1,V2,...` (distinct finite numbers); integer START and STOP whose evenly spaced values
are all integers (NUM - 1 divides STOP - START) give an integer grid, exact however large.
`parse_setting` reads `--set NAME=VALUE` (a number, text, or a flag's true or false, as the parameter is
declared). `grid_points` is the Cartesian product of the grids (first grid slowest), at most MAX_POINTS points.

The inner values of a range of floats are rounded to GRID_DIGITS significant digits so that a range grid hits the
same store keys as the list a person would type (0.30000000000000004 -> 0.3); START and STOP are kept as typed.
The floats of a list given from Python (`as_grids` with a mapping) are rounded the same way, so that
np.linspace(0.5, 2, 301) and `0.5:2:301` are the same points; a list typed as text keeps its values as typed.
Rounding error is ~1e-15 relative, far below any physical resolution; a grid so fine that rounding merges points
is refused, and so is a range of floats whose ends a float cannot hold exactly (an integer beyond 2^53 where
NUM - 1 does not divide STOP - START).
"""

from __future__ import annotations

import itertools
import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import underflow_rule, underflows_to_zero

__all__ = ["GRID_FORM", "SETTING_FORM", "MAX_POINTS", "LIST_RULE", "Grid", "parse_grid", "parse_setting", "split_list",
           "as_grids", "grid_points", "GIVEN", "SWEPT", "as_sweep_option_error"]

GRID_FORM = (
    "NAME=START:STOP:NUM (NUM evenly spaced values from START to STOP, START < STOP and NUM >= 2, "
    "or START == STOP and NUM == 1) or NAME=V1,V2,... (distinct finite numbers)"
)
SETTING_FORM = "NAME=VALUE with VALUE a finite number, a text value, or true or false for a flag"
# How a flag's --set VALUE may be written (compared in lower case: True and False too).
_FLAG_WORDS = {"true": True, "1": True, "false": False, "0": False}
MAX_POINTS = 1_000_000
# The inner linspace values of a range of floats are rounded to this many significant digits so that a range grid
# hits the same store keys as the list a person would type (0.30000000000000004 -> 0.3). Rounding error is ~1e-15
# relative, far below any physical resolution; a grid so fine that rounding merges points is refused.
GRID_DIGITS = 15
# What a comma-separated list option allows of its form (`split_list`).
LIST_RULE = "a non-empty list without empty entries"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INTEGER = re.compile(r"^[+-]?\d+$")

# How the errors of `run_sweep` and its helpers name what was given: as run_sweep's arguments (grid NAME, the values
# of `grids` for NAME; base NAME, a fixed value in `base`), which `attnphase sweep` renames to its options
# (`as_sweep_option_error`). `parse_setting` reads the command line only and names --set itself.
_OPTION_OF = {"grids": "--grid", "grid": "--grid", "base": "--set", "workers": "--workers", "store": "--store",
              "scheduler": "--scheduler", "model": "MODEL"}
SWEPT = "swept by a grid"
_SWEPT_OPTION = "swept by --grid"
GIVEN = f"fixed in base or {SWEPT}"  # how a Python call gives a parameter at every point
# What `run_sweep` takes as its grids (`as_grids`).
_GRIDS_FORMS = "a mapping {NAME: values}, or Grid objects or text specs (one, or a list of them)"


def _given_option(name: str) -> str:
    return f"fixed by --set {name}=VALUE or swept by --grid {name}=..."


def as_sweep_option_error(exc: ParameterError) -> ParameterError:
    """`exc` as `attnphase sweep` says it: an error that names an argument of `run_sweep` (grid NAME, base NAME,
    workers, store, scheduler, model) renamed to the option that gave it (--grid NAME, --set NAME, --workers, --store,
    --scheduler, MODEL); others as they are (run_sweep's progress, connect_timeout and on_start, which the command
    gives itself)."""
    first, _, rest = exc.name.partition(" ") if isinstance(exc.name, str) else ("", "", "")
    option = _OPTION_OF.get(first)
    if option is None:
        return exc
    allowed = exc.allowed.replace(GIVEN, _given_option(rest)).replace(SWEPT, _SWEPT_OPTION)
    return type(exc)(f"{option} {rest}" if rest else option, exc.value, allowed)


@dataclass(frozen=True)
class Grid:
    """One swept parameter: its name, its values in sweep order, and the text it was parsed from."""

    name: str
    values: tuple[Any, ...]
    spec: str


def _number(text: str) -> int | float:
    """An int if the text is an integer literal, else a float; raises ValueError when not finite."""
    text = text.strip()
    if _INTEGER.match(text):
        return int(text)
    x = float(text)
    if not math.isfinite(x):
        raise ValueError("not finite")
    return x


def _round_grid_value(x: float) -> float:
    """`x` to GRID_DIGITS significant digits, unless rounding would carry it past the float range."""
    rounded = float(f"{x:.{GRID_DIGITS}g}")
    return rounded if math.isfinite(rounded) else x


def _as_exact_float(x: int | float) -> float | None:
    """`x` as a float when a float holds it exactly, else None (an integer beyond 2^53, or beyond the float range)."""
    if isinstance(x, float):
        return x
    try:
        as_float = float(x)
    except OverflowError:
        return None
    return as_float if as_float == x else None


def parse_grid(spec: str) -> Grid:
    """Parse `NAME=START:STOP:NUM` (evenly spaced, both ends included) or `NAME=V1,V2,...`.

    Integer START and STOP whose evenly spaced values are all integers give an integer grid, exact however large.

    >>> parse_grid("beta=0.5:1.5:3").values
    (0.5, 1.0, 1.5)
    >>> parse_grid("L=2:10:5").values
    (2, 4, 6, 8, 10)
    >>> parse_grid("seed=2000000000000001:2000000000000021:3").values
    (2000000000000001, 2000000000000011, 2000000000000021)
    """
    if not isinstance(spec, str) or "=" not in spec:
        raise ParameterError("grid", spec, GRID_FORM)
    name, _, body = (part.strip() for part in spec.partition("="))
    if not _NAME.match(name):
        raise ParameterError("grid", spec, f"NAME a parameter name (letters, digits, _); the form is {GRID_FORM}")
    option = f"grid {name}"

    def bad(rule: str) -> ParameterError:
        return ParameterError(option, spec, f"{rule}; the form is {GRID_FORM}")

    if ":" in body:
        parts = body.split(":")
        if len(parts) != 3:
            raise bad("a range has exactly three parts START:STOP:NUM")
        try:
            start, stop = _number(parts[0]), _number(parts[1])
        except ValueError:
            raise bad("START and STOP are finite numbers") from None
        _refuse_underflow(parts[:2], bad)
        num_text = parts[2].strip()
        # (a NUM of more digits than MAX_POINTS is out of range, and int() refuses text of over 4300 digits)
        if (not _INTEGER.match(num_text) or len(num_text.lstrip("+-").lstrip("0")) > len(str(MAX_POINTS))
                or not 1 <= int(num_text) <= MAX_POINTS):
            raise bad(f"NUM is an integer in [1, {MAX_POINTS}]")
        num = int(num_text)
        if start > stop:
            raise bad("START <= STOP (the grid is reversed)")
        if start == stop and num != 1:
            raise bad("START < STOP when NUM >= 2 (START == STOP would repeat one point)")
        if start < stop and num == 1:
            raise bad("NUM >= 2 when START < STOP (NUM = 1 needs START == STOP)")
        if isinstance(start, int) and isinstance(stop, int) and (num == 1 or (stop - start) % (num - 1) == 0):
            # Integer arithmetic: the values are exact at any size (floats would shift them beyond 2^53).
            step = (stop - start) // (num - 1) if num > 1 else 0
            values = [start + k * step for k in range(num)]
        else:
            values = _float_range(start, stop, num, bad)
    else:
        parts = split_list(body)
        if parts is None:
            raise bad(LIST_RULE)
        try:
            values = [_number(p) for p in parts]
        except ValueError:
            raise bad("every listed value is a finite number") from None
        _refuse_underflow(parts, bad)
        if len(set(values)) != len(values):  # exact: 1 and 1.0 are one value, 2**60 and 2**60 + 1 two
            raise bad("distinct values (a repeated value names the same point)")
    return Grid(name, tuple(values), spec)


def _refuse_underflow(texts: Sequence[str], bad) -> None:
    """bad(...) for the first of `texts` that is not zero but reads as 0.0 (1e-400): it is never read as 0."""
    for text in texts:
        if underflows_to_zero(text):
            raise bad(underflow_rule(text, "every value"))


def split_list(text: str) -> list[str] | None:
    """The stripped entries of a comma-separated list, or None for an empty list or one with an empty entry
    (`a,,b`, a trailing comma): a list option refuses these with LIST_RULE rather than dropping the empty entry."""
    parts = text.split(",")
    if not text.strip() or any(not part.strip() for part in parts):
        return None
    return [part.strip() for part in parts]


def _float_range(start: int | float, stop: int | float, num: int, bad) -> list[float]:
    """NUM evenly spaced floats from START to STOP: the ends as typed, the inner values rounded to GRID_DIGITS."""
    first, last = _as_exact_float(start), _as_exact_float(stop)
    if first is None or last is None:
        raise bad("START and STOP that a float holds exactly (integers up to 2^53), unless NUM - 1 divides "
                  "STOP - START, which gives an integer grid of any size")
    if num == 1:
        return [first]
    with np.errstate(over="ignore", invalid="ignore"):
        raw = np.linspace(first, last, num)
    if not np.all(np.isfinite(raw)):
        raise bad("a range whose spacing is a finite float (STOP - START overflows)")
    values = [first, *(_round_grid_value(float(v)) for v in raw[1:-1]), last]
    # Rounding merges values closer than GRID_DIGITS digits, and can carry one past an unrounded end.
    if any(a >= b for a, b in zip(values, values[1:])):
        raise bad(f"a spacing that is resolvable in {GRID_DIGITS} significant digits")
    return values


def parse_setting(spec: str, defaults: Mapping[str, Any] | None = None) -> tuple[str, Any]:
    """Parse `--set NAME=VALUE` as the parameter NAME is declared, given `defaults` (the point function's, by name).

    A parameter whose default is a bool (a flag) reads true or false (also True, False, 1, 0) as a bool; one whose
    default is text keeps VALUE as typed (linear_scale=1 is the text '1', one of its choices). Any other VALUE is a
    number when it reads as one (it must be finite), else text.
    """
    if not isinstance(spec, str) or "=" not in spec:
        raise ParameterError("--set", spec, SETTING_FORM)
    name, _, text = (part.strip() for part in spec.partition("="))
    if not _NAME.match(name):
        raise ParameterError("--set", spec, f"NAME a parameter name (letters, digits, _); the form is {SETTING_FORM}")
    if not text:
        raise ParameterError(f"--set {name}", spec, SETTING_FORM)
    default = (defaults or {}).get(name)
    if isinstance(default, bool):
        if text.lower() not in _FLAG_WORDS:
            raise ParameterError(f"--set {name}", text, "true or false (a flag; also True, False, 1 or 0)")
        return name, _FLAG_WORDS[text.lower()]
    if isinstance(default, str):
        return name, text
    if _INTEGER.match(text):
        return name, int(text)
    try:
        value = float(text)
    except ValueError:
        return name, text
    if underflows_to_zero(text):
        raise ParameterError(f"--set {name}", text, underflow_rule(text))
    if not math.isfinite(value):
        raise ParameterError(f"--set {name}", text, "a finite number (NaN and infinities are not parameters)")
    return name, value


def _grid_from_values(name: str, values: Any) -> Grid:
    """A list grid from Python values (numpy scalars accepted), validated like `NAME=V1,V2,...`.

    Floats are rounded to GRID_DIGITS significant digits, as the inner values of a range are: a list computed in
    Python (np.linspace(0.5, 2, 301)) then names the same points, and store keys, as the range `0.5:2:301`.
    """
    if isinstance(values, str):
        return parse_grid(f"{name}={values}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ParameterError("grid", name, f"NAME a parameter name (letters, digits, _); the form is {GRID_FORM}")
    shape = getattr(values, "shape", None)
    if isinstance(shape, tuple) and len(shape) > 1:  # an array's rows are no values (np.ones((2, 2)))
        raise ParameterError(f"grid {name}", f"an array of shape {shape}",
                             "a list of distinct finite numbers: a flat list, or an array of one dimension")
    try:
        items = list(values)
    except TypeError:
        raise ParameterError(f"grid {name}", values, "a list of distinct finite numbers") from None
    clean = []
    given_as = {}  # rounded float -> the value given, to name two values that rounding merges
    for v in items:
        if hasattr(v, "item") and not isinstance(v, numbers.Number):
            try:
                v = v.item()  # zero-dimensional numpy / torch values, and arrays of one element
            except (TypeError, ValueError):  # an array of several values, where a list holds one per point
                raise ParameterError(f"grid {name}", v, "a list of distinct finite numbers (one number each)") from None
        if isinstance(v, numbers.Integral) and not isinstance(v, bool):
            clean.append(int(v))
        elif isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v)):
            rounded = _round_grid_value(float(v))
            if given_as.setdefault(rounded, float(v)) != float(v):
                raise ParameterError(f"grid {name}", f"{given_as[rounded]!r} and {float(v)!r}",
                                     f"a list of values distinct in {GRID_DIGITS} significant digits (the digits a "
                                     "list's floats are rounded to)")
            clean.append(rounded)
        else:
            raise ParameterError(f"grid {name}", v, "a list of distinct finite numbers")
    return parse_grid(f"{name}=" + ",".join(repr(v) for v in clean))


def as_grids(grids: Iterable[str | Grid] | Mapping[str, Sequence[Any]]) -> list[Grid]:
    """Grids from any of the forms `run_sweep` accepts: Grid objects, command-line specs (one or several), or a
    mapping name -> values."""
    if isinstance(grids, Mapping):
        return [_grid_from_values(name, values) for name, values in grids.items()]
    if isinstance(grids, str):
        grids = [grids]
    if not isinstance(grids, Iterable):  # None, a number: no grid at all, as an empty mapping is
        raise ParameterError("grids", grids, f"{_GRIDS_FORMS}: at least one grid, {GRID_FORM}")
    return [g if isinstance(g, Grid) else parse_grid(g) for g in grids]


def grid_points(grids: Sequence[Grid], base: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The Cartesian product of the grids (first grid slowest), each point merged over `base`."""
    base = dict(base or {})
    if not grids:
        raise ParameterError("grids", None, f"at least one grid, {GRID_FORM}")
    names = [g.name for g in grids]
    for name in names:
        if names.count(name) > 1:
            raise ParameterError(f"grid {name}", name, "each parameter swept by one grid only")
        if name in base:
            raise ParameterError(f"base {name}", base[name], f"a parameter that is not also {SWEPT}")
    n_points = math.prod(len(g.values) for g in grids)
    if n_points > MAX_POINTS:
        raise ParameterError("grids", " ".join(g.spec for g in grids), f"grids with at most {MAX_POINTS} points in all")
    return [{**base, **dict(zip(names, values))} for values in itertools.product(*(g.values for g in grids))]
