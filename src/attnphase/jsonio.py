"""Conversion of results to JSON-safe values.

* `to_jsonable` / `dumps`: for output. Every float printed by the toolkit is finite or reported as not
  computed (`null`). Dataclasses, numpy scalars and arrays, mpmath numbers and paths are converted
  recursively; the conversion is one-way.
* `encode_exact` / `decode_exact`: for files that are read back (`attnphase.resume.computed_once`, the results
  in the results store): an exact round trip through JSON plus numpy arrays, without pickle.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["to_jsonable", "dumps", "encode_exact", "decode_exact", "TRUSTED_PACKAGE"]


def to_jsonable(obj: Any, *, keep_non_finite: bool = False) -> Any:
    """Recursively convert `obj` to plain JSON types; non-finite floats become None, or with `keep_non_finite` stay
    floats (for a writer that encodes them itself: the results store keeps them exactly, see `encode_exact`)."""
    return _plain(obj, keep_non_finite)


def _plain(obj: Any, keep_non_finite: bool) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, enum.Enum):
        return _plain(obj.value, keep_non_finite)
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return x if keep_non_finite or math.isfinite(x) else None
    if isinstance(obj, complex):
        return {"real": _plain(obj.real, keep_non_finite), "imag": _plain(obj.imag, keep_non_finite)}
    if isinstance(obj, np.ndarray):
        return [_plain(v, keep_non_finite) for v in obj.tolist()]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name), keep_non_finite) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _plain(v, keep_non_finite) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_plain(v, keep_non_finite) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # torch scalars
        return _plain(obj.item(), keep_non_finite)
    try:  # mpmath numbers
        import mpmath

        if isinstance(obj, mpmath.mpf):
            return _plain(float(obj), keep_non_finite)
    except ImportError:  # pragma: no cover - mpmath is a hard dependency
        pass
    raise TypeError(f"cannot convert {type(obj).__name__} to JSON")


def dumps(obj: Any, **kwargs) -> str:
    """JSON text of `obj`; never emits NaN or Infinity."""
    return json.dumps(to_jsonable(obj), allow_nan=False, **kwargs)


# --- exact round trips: JSON text plus numpy arrays, no pickle ----------------------------------------
#
# `encode_exact` turns a result into JSON-safe data that `decode_exact` turns back into an equal object:
# the types that a computation returns (numbers of every kind, text, None, lists, tuples, dicts, numpy
# arrays and scalars, mpmath numbers, enums and dataclasses of this package) are written as JSON, with a
# one-key tag object for what JSON cannot say ({"__array__": "a0"}, {"__float__": "nan"}, ...). Arrays go
# into a separate mapping (saved as .npz by `attnphase.resume.computed_once`). Classes are rebuilt only when
# they live in the `attnphase` package: reading a file can never run other code.

TRUSTED_PACKAGE = "attnphase"
_TAGS = ("__array__", "__float__", "__numpy__", "__mpf__", "__mpc__", "__complex__", "__tuple__", "__dict__",
         "__enum__", "__dataclass__", "__path__")


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _trusted_class(path: str) -> type:
    """The class at "module:qualname", imported only from inside the attnphase package."""
    import importlib

    module_name, _, qualname = path.partition(":")
    if not (module_name == TRUSTED_PACKAGE or module_name.startswith(TRUSTED_PACKAGE + ".")):
        raise ValueError(f"refusing to rebuild {path}: only classes of the {TRUSTED_PACKAGE} package are rebuilt")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ValueError(f"{path} is not a class")
    return obj


def _encode_float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return {"__float__": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def encode_exact(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    """JSON-safe data from which `decode_exact(data, arrays)` rebuilds an object equal to `obj`.

    numpy arrays are moved into `arrays` (name -> array; numeric, boolean or text dtypes only). Raises
    TypeError for anything it cannot rebuild exactly (arbitrary objects, object arrays, classes from
    outside the attnphase package).
    """
    mpmath = sys.modules.get("mpmath")  # an mpmath number exists only once mpmath is imported: not imported for it

    if isinstance(obj, enum.Enum):  # first: a StrEnum is also a str
        cls = type(obj)
        _check_trusted(cls)
        return {"__enum__": _class_path(cls), "value": encode_exact(obj.value, arrays)}
    if obj is None or type(obj) in (bool, str):
        return obj
    if type(obj) is int:
        return obj
    if type(obj) is float:
        return _encode_float(obj)
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("an array of Python objects cannot be stored without pickle; convert it to a list")
        name = f"a{len(arrays)}"
        arrays[name] = obj
        return {"__array__": name}
    if isinstance(obj, np.generic):
        return {"__numpy__": obj.dtype.str, "value": encode_exact(obj.item(), arrays)}
    if mpmath is not None and isinstance(obj, mpmath.mpf):
        if not mpmath.isfinite(obj):
            return {"__mpf__": str(obj)}  # "nan", "+inf", "-inf"
        man, exp = obj.man_exp  # obj == man * 2**exp exactly, whatever the working precision
        return {"__mpf__": [str(int(man)), int(exp)]}
    if mpmath is not None and isinstance(obj, mpmath.mpc):
        return {"__mpc__": [encode_exact(obj.real, arrays), encode_exact(obj.imag, arrays)]}
    if isinstance(obj, complex):
        return {"__complex__": [_encode_float(obj.real), _encode_float(obj.imag)]}
    if isinstance(obj, Path):
        return {"__path__": str(obj)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        _check_trusted(cls)
        return {"__dataclass__": _class_path(cls),
                "fields": {f.name: encode_exact(getattr(obj, f.name), arrays) for f in dataclasses.fields(obj)}}
    if type(obj) is tuple:
        return {"__tuple__": [encode_exact(v, arrays) for v in obj]}
    if type(obj) is list:
        return [encode_exact(v, arrays) for v in obj]
    if type(obj) is dict:
        if all(isinstance(k, str) for k in obj) and not any(k in _TAGS for k in obj):
            return {k: encode_exact(v, arrays) for k, v in obj.items()}
        return {"__dict__": [[encode_exact(k, arrays), encode_exact(v, arrays)] for k, v in obj.items()]}
    raise TypeError(f"cannot store a {type(obj).__module__}.{type(obj).__qualname__} without pickle")


def _check_trusted(cls: type) -> None:
    module = cls.__module__
    if not (module == TRUSTED_PACKAGE or module.startswith(TRUSTED_PACKAGE + ".")):
        raise TypeError(f"cannot store a {module}.{cls.__qualname__}: only dataclasses and enums of the "
                        f"{TRUSTED_PACKAGE} package are rebuilt from stored files")


def decode_exact(data: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    """The object that `encode_exact` encoded as `data` (with its arrays in `arrays`)."""
    if isinstance(data, list):
        return [decode_exact(v, arrays) for v in data]
    if not isinstance(data, dict):
        return data
    if len(data) >= 1:
        tag = next(iter(data))
        if tag == "__array__":
            return np.asarray(arrays[data["__array__"]])
        if tag == "__float__":
            return float(data["__float__"])
        if tag == "__numpy__":
            return np.dtype(data["__numpy__"]).type(decode_exact(data["value"], arrays))
        if tag == "__mpf__":
            import mpmath  # here, not for every decoding: reading a results store needs no mpmath

            value = data["__mpf__"]
            if isinstance(value, str):
                return mpmath.mpf(value)
            man, exp = int(value[0]), int(value[1])
            with mpmath.workprec(max(53, man.bit_length())):  # enough bits to hold the mantissa exactly
                return mpmath.mpf((man, exp))
        if tag == "__mpc__":
            import mpmath

            real, imag = (decode_exact(v, arrays) for v in data["__mpc__"])
            return mpmath.mpc(real, imag)
        if tag == "__complex__":
            real, imag = (decode_exact(v, arrays) for v in data["__complex__"])
            return complex(real, imag)
        if tag == "__path__":
            return Path(data["__path__"])
        if tag == "__tuple__":
            return tuple(decode_exact(v, arrays) for v in data["__tuple__"])
        if tag == "__dict__":
            return {_as_key(decode_exact(k, arrays)): decode_exact(v, arrays) for k, v in data["__dict__"]}
        if tag == "__enum__":
            return _trusted_class(data["__enum__"])(decode_exact(data["value"], arrays))
        if tag == "__dataclass__":
            return _rebuild_dataclass(_trusted_class(data["__dataclass__"]),
                                      {k: decode_exact(v, arrays) for k, v in data["fields"].items()})
    return {k: decode_exact(v, arrays) for k, v in data.items()}


def _as_key(key: Any) -> Any:
    return tuple(_as_key(k) for k in key) if isinstance(key, list) else key


def _rebuild_dataclass(cls: type, values: dict[str, Any]) -> Any:
    if not dataclasses.is_dataclass(cls):
        raise ValueError(f"{_class_path(cls)} is no longer a dataclass")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if set(fields) != set(values):
        raise ValueError(f"the fields of {_class_path(cls)} changed since the file was written")
    obj = cls(**{name: values[name] for name, f in fields.items() if f.init})
    for name, f in fields.items():
        if not f.init:  # computed in __post_init__ from the others; the stored value is the computed one
            object.__setattr__(obj, name, values[name])
    return obj
