"""Conversion of results to JSON-safe values.

Every float printed by the toolkit is finite or reported as not computed (`null`). Dataclasses, numpy
scalars and arrays, mpmath numbers and paths are converted recursively.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """Recursively convert `obj` to plain JSON types; non-finite floats become None."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return x if math.isfinite(x) else None
    if isinstance(obj, complex):
        return {"real": to_jsonable(obj.real), "imag": to_jsonable(obj.imag)}
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # torch scalars
        return to_jsonable(obj.item())
    try:  # mpmath numbers
        import mpmath

        if isinstance(obj, mpmath.mpf):
            return to_jsonable(float(obj))
    except ImportError:  # pragma: no cover - mpmath is a hard dependency
        pass
    raise TypeError(f"cannot convert {type(obj).__name__} to JSON")


def dumps(obj: Any, **kwargs) -> str:
    """JSON text of `obj`; never emits NaN or Infinity."""
    return json.dumps(to_jsonable(obj), allow_nan=False, **kwargs)
