"""The code that computes a sweep's points: the named point functions (`SWEEP_POINTS`, `resolve_point`), a point
function as a process loads it, and the code version under which its results are stored.

A result is stored under the version of the code that computed it, which the process that ran the point reports
(`LoadedPoint.version`): the driver refuses a result whose version differs from the sweep's (`point_version`, the
code as it is on disk when the sweep starts). The two differ when a process keeps code it imported before an edit: a
long-lived dask worker keeps the modules it imported first, whatever the files now hold, and so does a Python
session that has not reloaded an edited module.

A version is `code_version()` (the release and a hash of attnphase's source), for a point function outside attnphase
followed by `.point.` and a hash of the bytes of its module's file. A process that loads a point function records
the file's hash as the module is imported (read just before the import; a module imported earlier by other code is
hashed when a sweep first loads it), and attnphase's own version as this module was imported.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from attnphase.errors import ParameterError
from attnphase.models.registry import MODELS
from attnphase.version import HASH_DIGITS, PACKAGE_DIR, code_version, hash_of_tree, source_hash

__all__ = ["LoadedPoint", "loaded_point", "load_point", "point_version", "point_version_on_disk",
           "point_source_found", "SWEEP_POINTS", "register_point", "resolve_point", "current_version"]

# attnphase's code version as this process imported the package: taken when a process that runs points imports this
# module (a dask worker, with its first point) rather than on first use, which in a long-lived worker could come
# after an edit of the source and so name code the worker does not run. (`code_version()` keeps this value.)
_IMPORTED_CODE_VERSION = code_version()


@dataclass(frozen=True)
class LoadedPoint:
    """A point function as this process loaded it, and the code version of what it loaded (`point_version` of its
    module as it was imported)."""

    function: Callable[..., Any]
    version: str


_loaded: dict[str, LoadedPoint] = {}


def loaded_point(target: str) -> LoadedPoint:
    """The point function named "module:function", imported where it runs (in the driver or a worker) once, and again
    when its module was reloaded (`importlib.reload`) or the name now holds another function."""
    module_name, _, function_name = target.partition(":")
    cached = _loaded.get(target)
    if cached is not None and getattr(sys.modules.get(module_name), function_name, None) is cached.function:
        return cached
    # Read before the import: an edit in between then gives a version that no sweep started after it has, so the
    # result is refused rather than stored as the edited code's.
    version = point_version(target)
    function = getattr(importlib.import_module(module_name), function_name)
    if not callable(function):
        raise TypeError(f"{target} is not callable")
    _loaded[target] = LoadedPoint(function, version)
    return _loaded[target]


def load_point(target: str) -> Callable[..., Any]:
    """The function of `loaded_point(target)`."""
    return loaded_point(target).function


def point_version(target: str) -> str:
    """The code version that keys the results of the point function `target` ("module:function").

    For attnphase's own functions, `code_version()` (a hash of the package's source). For any other, that plus
    `.point.` and a hash of the bytes of the file of `module` (the imported module's file, else the one the import
    path finds, without running it; `register_point` names a function by the module that defines it), read when this
    is called, so that editing that file changes the key and results of the old code are not reused. Only that one
    file is hashed: modules it imports (your own helpers in other files included), data files it reads and installed
    packages are not, and a module without a file of its own (typed at an interactive prompt, built in) is keyed by
    `code_version()` alone.
    """
    return _point_version(target, _IMPORTED_CODE_VERSION)


def point_version_on_disk(target: str) -> str:
    """`point_version(target)` of the code as it is on disk now, which a process started now runs (a local pool's
    worker): attnphase's source hashed again (a few milliseconds), not taken as this process imported it. The two
    differ when the source was edited after this process imported attnphase."""
    # code_version() ends with the hash of the source as this process first read it (attnphase.version): replaced by
    # the hash of the source as it is now.
    attnphase_now = code_version().removesuffix(source_hash()) + hash_of_tree(PACKAGE_DIR)[:HASH_DIGITS]
    return _point_version(target, attnphase_now)


def point_source_found(target: str) -> bool:
    """Whether the source file of the point function `target` ("module:function") is found (attnphase's own always
    is): without it its code version, which hashes that file, cannot be known (`point_version` is then attnphase's)."""
    module_name = target.partition(":")[0]
    return module_name == "attnphase" or module_name.startswith("attnphase.") or _point_source(module_name) is not None


def _point_source(module_name: str) -> str | None:
    source = getattr(sys.modules.get(module_name), "__file__", None) or _file_on_the_import_path(module_name)
    return source if source is not None and os.path.isfile(source) else None


def _point_version(target: str, attnphase_version: str) -> str:
    module_name = target.partition(":")[0]
    if module_name == "attnphase" or module_name.startswith("attnphase."):
        return attnphase_version
    source = _point_source(module_name)
    if source is None:
        return attnphase_version
    with open(source, "rb") as file:
        digest = hashlib.sha256(file.read()).hexdigest()
    return f"{attnphase_version}.point.{digest[:HASH_DIGITS]}"


def _file_on_the_import_path(module_name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):  # ValueError: a module without a spec (__main__ at an interactive prompt)
        return None
    return spec.origin if spec is not None else None


# --- the named point functions --------------------------------------------------------------------

# The registered models' point functions (attnphase.models.registry), plus the Curie-Weiss demo.
SWEEP_POINTS: dict[str, str] = {
    "demo": "attnphase.sweep:curie_weiss_point",
    **{name: entry.sweep_point for name, entry in MODELS.items() if entry.sweep_point is not None},
}


def register_point(model: str, target: str | Callable[..., Mapping[str, Any]]) -> None:
    """Make `model` sweepable with `target`: a "module:function" string or a top-level function."""
    if not isinstance(model, str) or not model:
        raise ParameterError("model", model, "a non-empty model name")
    if callable(target):
        qualname = getattr(target, "__qualname__", "")
        if "." in qualname or "<" in qualname:
            raise ParameterError("target", target, "a top-level function (workers import it by name)")
        target = f"{target.__module__}:{qualname}"
    SWEEP_POINTS[model] = target
    resolve_point(model)


def resolve_point(model: str) -> tuple[str, Callable[..., Any]]:
    """The "module:function" target and the function for `model` (a registered name or a target)."""
    allowed = "one of " + ", ".join(SWEEP_POINTS) + ", or module:function"
    if not isinstance(model, str):
        raise ParameterError("model", model, allowed)
    target = SWEEP_POINTS.get(model, model if ":" in model else None)
    if target is None:
        raise ParameterError("model", model, allowed)
    try:
        return target, load_point(target)
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        raise ParameterError(
            "model", model, f"a model whose sweep point {target} can be imported ({type(exc).__name__}: {exc})"
        ) from None


def current_version(model: str) -> str:
    """The code version under which a sweep of `model` (a registered name or "module:function") run now stores its
    points: `point_version` of its point function. A name registered in another session is not known here: it gets
    `code_version()`, as a module that cannot be found does."""
    return point_version(SWEEP_POINTS.get(model, model))
