"""One result convention for every public entry point.

`Status` is the project's single status vocabulary: one word for success, one for "nothing in the
searched range", one for "a value, but not to the requested accuracy", and so on. `Result` is the base
of every result object: a frozen dataclass with `status` and `message` fields gets `success`,
`as_dict()` (JSON-safe, through `attnphase.jsonio`) and `to_pandas()`.

A result whose natural form is a table (a curve, a sweep, per-chain values) overrides `rows()`, and
`to_pandas()` then gives one DataFrame row per entry; otherwise it gives a one-row frame of the scalar
fields. A point result made of parts (the minima of a solve, its branches) has a row per part, the point's
scalar fields repeated on each (`rows_per_part`).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from attnphase.jsonio import to_jsonable

__all__ = ["Status", "Result", "SUCCESS", "rows_per_part"]


class Status(enum.StrEnum):
    """What happened, in one word. A `StrEnum`, so `status == "converged"` and JSON output are plain text."""

    CONVERGED = "converged"
    """The value is computed and its error estimate meets what was asked (tolerance, digits)."""
    LIMITED = "limited"
    """A value is computed, but its verified error does not meet the request; `message` says why."""
    NOT_FOUND = "not_found"
    """Nothing of the kind in the searched range (no sign change, no minimum, no branch there)."""
    LOST = "lost"
    """A followed path ended before the requested control: a branch at a fold, or collapsed onto another invariant
    set (positional-semantic: onto the trivial one), or a branch or trajectory that left its domain (an ODE's
    coordinate at its bound). The message says which."""
    MAX_ITER = "max_iter"
    """An iteration stopped at its budget before meeting its tolerance."""
    DIVERGED = "diverged"
    """An iteration or simulation left the finite numbers."""
    NOT_CONVEX = "not_convex"
    """A local quadratic approximation was required but the Hessian is not positive definite."""
    NOT_REQUESTED = "not_requested"
    """Not computed: the caller did not ask for it (one threshold of two, `--which`), so nothing was searched."""
    POOR_MIXING = "poor_mixing"
    """A Markov chain's diagnostics (acceptance, effective sample size, R-hat) do not support its estimate."""
    FAILED = "failed"
    """Anything else that left no usable value; `message` says what."""


SUCCESS = frozenset({Status.CONVERGED})


def _hold_arrays_read_only(value):
    """`value` with every numpy array in it held as a read-only view: in the fields of frozen dataclasses and in
    tuples, at any depth (a result's parts: the chains of a hysteresis point). A mutable dataclass (a solver's cache
    of a followed branch), a list or a dict is the caller's to change, and is left as it is."""
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            return value
        view = value.view()
        view.flags.writeable = False
        return view
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and type(value).__dataclass_params__.frozen:
        for f in dataclasses.fields(value):
            field_value = getattr(value, f.name)
            held = _hold_arrays_read_only(field_value)
            if held is not field_value:
                object.__setattr__(value, f.name, held)
        return value
    if isinstance(value, tuple) and not hasattr(value, "_fields"):  # a named tuple keeps its type: left as it is
        held = tuple(_hold_arrays_read_only(item) for item in value)
        return value if all(a is b for a, b in zip(held, value)) else held
    return value


class Result:
    """Mixin for frozen dataclasses with `status: Status` and `message: str` fields.

    A result is a value: its numpy arrays are held as read-only views (`__post_init__`), so that `result.J[0] = 99`
    raises instead of changing the result (and its `to_pandas()`) in place. The arrays the caller passed stay
    writeable, and a view shares their memory (no copy of large traces): code that changes an array after handing it
    to a result changes the result."""

    status: Status
    message: str

    def __post_init__(self):
        if dataclasses.is_dataclass(self):
            _hold_arrays_read_only(self)

    @property
    def success(self) -> bool:
        """Whether the status is `converged`."""
        return self.status in SUCCESS

    def as_dict(self) -> dict[str, Any]:
        """The fields as JSON-safe values (non-finite floats become None), plus `success`."""
        if not dataclasses.is_dataclass(self):
            raise TypeError(f"{type(self).__name__} must be a dataclass to use Result.as_dict")
        out = {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self) if f.repr}
        out["success"] = self.success
        return out

    def rows(self) -> Iterable[Mapping[str, Any]]:
        """Table form of the result, one mapping per row (default: one row of the scalar fields)."""
        flat = {k: v for k, v in self.as_dict().items() if not isinstance(v, (dict, list))}
        return [flat]

    def to_pandas(self):
        """`rows()` as a pandas DataFrame (pandas is imported only here)."""
        import pandas

        return pandas.DataFrame(list(self.rows()))


def rows_per_part(result: Result, key: str, label: str) -> list[dict[str, Any]]:
    """`result.rows()` for a point result made of parts, the list `as_dict()[key]` (the minima, the branches): one row
    per part, the result's scalar fields (its default row) first, then the part's scalar fields (its values and their
    errors). A part's field whose name the result also has is prefixed with `label` (a branch's status is
    `branch_status` beside the point's `status`); a part without a name of its own gets its position as `label`
    (`minimum` 0, 1, ...). No part (nothing found): the one row of the result's scalar fields."""
    point = Result.rows(result)[0]
    out = []
    for i, part in enumerate(result.as_dict()[key]):
        row = dict(point) if label in part else {**point, label: i}
        for name, value in part.items():
            if not isinstance(value, (dict, list)):
                row[f"{label}_{name}" if name in point else name] = value
        out.append(row)
    return out or [point]
