"""The rows of the results store (`attnphase.store`): the key of a parameter dict, the text of a result, each row's
checksum, and a row read back as the point it holds or as what is wrong with it (`DamagedRow`).

A result is kept exactly, non-finite floats included: JSON has no NaN or infinities, so they are written as the
tags of `attnphase.jsonio.encode_exact` ({"__float__": "nan"}, "inf", "-inf") and read back as floats. Rows written
before kept them as null, which reads back as None.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attnphase.errors import ParameterError
from attnphase.jsonio import decode_exact, encode_exact, to_jsonable

__all__ = ["ROW_COLUMNS", "StoredPoint", "DamagedRow", "canonical_params", "result_text", "row_checksum",
           "text_as_stored", "read_row"]

#: The columns a row is read with, in `read_row`'s order.
ROW_COLUMNS = "id, model, params, version, result, created, elapsed, checksum"


def _canonical_value(name: str, value: Any) -> Any:
    """A parameter value in the form used for keys: int, finite float, str, bool or None."""
    if hasattr(value, "item") and not isinstance(value, (numbers.Number, str)):
        value = value.item()  # zero-dimensional numpy / torch values (np.True_ becomes True, not 1, below)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x):
            raise ParameterError(name, value, "a finite number (NaN and infinities cannot be keys)")
        # Integral floats become ints so that 1 and 1.0 name the same point (exactly representable
        # integers only; beyond 2**53 a float is not a faithful integer).
        if x.is_integer() and abs(x) <= 2**53:
            return int(x)
        return x
    raise ParameterError(name, value, "a number, a string, a bool or None")


def canonical_params(params: Mapping[str, Any]) -> str:
    """The key text of a parameter dict: JSON, sorted keys, floats by repr, integral floats as ints.

    >>> canonical_params({"h": 0.0, "beta": 1.5})
    '{"beta":1.5,"h":0}'
    """
    if not isinstance(params, Mapping):
        raise ParameterError("params", params, "a mapping of parameter names to values")
    clean = {}
    for name, value in params.items():
        if not isinstance(name, str) or not name:
            raise ParameterError("params", name, "non-empty string parameter names")
        clean[name] = _canonical_value(name, value)
    # json writes floats with float.__repr__, the shortest text that round-trips exactly.
    return json.dumps(clean, sort_keys=True, separators=(",", ":"), allow_nan=False)


def result_text(result: Mapping[str, Any]) -> str:
    """The text a result is stored as: JSON with sorted keys, its non-finite floats tagged (`encode_exact`)."""
    exact = encode_exact(to_jsonable(result, keep_non_finite=True), {})  # plain JSON values: no arrays to set aside
    return json.dumps(exact, sort_keys=True, separators=(",", ":"), allow_nan=False)


def row_checksum(model: str, params: str, version: str, result: str) -> str:
    h = hashlib.sha256()
    for part in (model, params, version, result):
        h.update(part.encode("utf-8", "surrogateescape"))  # the bytes as stored, also where they are not UTF-8
        h.update(b"\x00")
    return h.hexdigest()


def text_as_stored(raw: bytes) -> str:
    """A text column as read: UTF-8, with any other byte kept as a lone surrogate (`surrogateescape`), so that a row
    whose bytes were damaged is read, and then fails its checksum, rather than failing the whole query."""
    return raw.decode("utf-8", "surrogateescape")


def _printable(text: str) -> str:
    """`text` with damaged bytes written as escapes (\\udcff), fit for a terminal and for JSON."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class StoredPoint:
    """One row of the store."""

    model: str
    params: dict[str, Any]
    version: str
    result: dict[str, Any]
    created: float
    elapsed: float | None


@dataclass(frozen=True)
class DamagedRow:
    """A row that cannot be trusted: its checksum fails (its bytes changed after it was written) or its text is not
    JSON. Readers skip it; `put` of its point replaces it."""

    row_id: int
    model: str
    params: str  # the key as stored (possibly damaged itself), printable
    problem: str
    version: str  # printable, as the model

    def __str__(self) -> str:
        return f"row {self.row_id} (model {self.model!r}, parameters {self.params}) {self.problem}"


def read_row(row: tuple) -> StoredPoint | DamagedRow:
    """A row of ROW_COLUMNS as the point it holds, or as what is wrong with it."""
    row_id, model, params, version, result, created, elapsed, checksum = row
    if not all(isinstance(text, str) for text in (model, params, version, result, checksum)):
        return DamagedRow(row_id, _printable(str(model)), _printable(str(params)),
                          "has a column of the wrong type (its bytes changed after it was written)",
                          _printable(str(version)))
    if row_checksum(model, params, version, result) != checksum:
        return DamagedRow(row_id, _printable(model), _printable(params),
                          "fails its checksum (its bytes changed after it was written)", _printable(version))
    try:
        return StoredPoint(model, json.loads(params), version, _result_of(json.loads(result)), created, elapsed)
    except json.JSONDecodeError as exc:  # checksum matched but the text is not JSON: written damaged
        return DamagedRow(row_id, _printable(model), _printable(params), f"is not valid JSON ({exc})",
                          _printable(version))


def _result_of(stored: Any) -> Any:
    """A row's result: its exact encoding decoded (`result_text`). A row written before results were encoded exactly
    is plain JSON, which decodes as itself unless a result name is one of the encoding's tags (a first key
    "__float__"): where decoding fails or gives no dict, such a row is read as the plain JSON it is."""
    try:
        decoded = decode_exact(stored, {})
    except (TypeError, ValueError, KeyError, IndexError):
        return stored
    return decoded if isinstance(decoded, dict) or not isinstance(stored, dict) else stored
