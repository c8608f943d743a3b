"""Checking a sweep's parameters before any point runs (`sweep.run_sweep` calls `check_sweep_parameters` first): every
name against the point function's signature, every required parameter given, and, for the registered models, every
point's values against the ranges the model declares (`POINT_CHECKS`); and the points' keys with the function's
defaults filled in (`with_defaults_in_the_key`)."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attnphase.errors import ParameterError
from attnphase.grids import GIVEN, Grid, parse_setting
from attnphase.models.registry import MODELS
from attnphase.point_code import load_point, resolve_point
from attnphase.store import canonical_params

__all__ = ["POINT_CHECKS", "point_parameters", "declared_defaults", "check_sweep_parameters",
           "with_defaults_in_the_key"]

# --- checking a sweep's parameters before any point runs ---------------------------------------------
#
# A point check takes a point's parameters by name, with the point function's defaults filled in, and
# raises ParameterError for a bad value. It costs microseconds against a point's seconds, so every point
# is checked. It lives next to its point function and validates as that function does, with the ranges
# declared once in the model's parameters.py; what only the point function sees (e.g. the trials of a
# signal-recovery point, checked with the schedule it plans) is still caught when that point runs.


def _one_of_the_parameters(model: str, required: Sequence[str], optional: Sequence[str], given: str) -> str:
    listed = [f"{kind} {', '.join(names)}" for kind, names in (("required", required), ("optional", optional))
              if names]
    # A name spelled as another command's option (copy-heads' --tau is tau0 here) or mistyped: say the sweep's name.
    close = difflib.get_close_matches(given, [*required, *optional], n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"one of the parameters {model} takes ({'; '.join(listed)}){hint}"


def point_parameters(model: str) -> tuple[list[str], dict[str, Any], bool]:
    """The parameters `model`'s point function takes by name: the required ones, the optional ones with their
    defaults, and whether it also takes any other name (**kwargs). Empty for a function without a signature to
    read. `sweep MODEL --help` lists them."""
    _, function = resolve_point(model)
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return [], {}, True
    by_name = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return ([p.name for p in by_name if p.default is p.empty],
            {p.name: p.default for p in by_name if p.default is not p.empty},
            any(p.kind is p.VAR_KEYWORD for p in parameters))


def declared_defaults(model: str) -> dict[str, Any]:
    """The defaults of the parameters that `model`'s point function takes by name (empty for a function without a
    signature to read): the CLI reads a --set value as the type of its parameter's default (`grids.parse_setting`)."""
    return point_parameters(model)[1]


# Point function ("module:function") -> its point check ("module:function", next to the point function in the model:
# `ModelEntry.sweep_check`). A point function without one (a researcher's own) gets the checks of names only, and its
# bad values stop the sweep when its first point runs.
POINT_CHECKS: dict[str, str] = {
    "attnphase.sweep:curie_weiss_point": "attnphase.sweep:check_curie_weiss_point",
    **{entry.sweep_point: entry.sweep_check for entry in MODELS.values() if entry.sweep_check is not None},
}


def check_sweep_parameters(model: str, grids: Sequence[Grid], base: Mapping[str, Any],
                           points: Iterable[Mapping[str, Any]]) -> None:
    """Raise ParameterError for parameters that no point could run with; `run_sweep` calls it first.

    A grid or base name the point function does not take, or a parameter it requires that neither
    gives, is named as that argument gives it (grid NAME, base NAME; the CLI says --grid NAME, --set NAME:
    `grids.as_sweep_option_error`), with the parameters the function takes. A value outside the range
    the model declares (`POINT_CHECKS`) is named as the model names it (the CLI adds --grid or --set); a number given
    in `base` as text, where the model's check takes a number, as base NAME (`_refuse_numbers_given_as_text`).
    """
    target, function = resolve_point(model)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # no signature to read (e.g. a C function): its points will tell
        return
    parameters = list(signature.parameters.values())
    by_name = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for parameter in parameters:
        if parameter.kind is parameter.POSITIONAL_ONLY and parameter.default is parameter.empty:
            raise ParameterError("model", model, f"a point function whose parameters can be given by name "
                                                 f"({parameter.name} is positional-only)")
    if not any(p.kind is p.VAR_KEYWORD for p in parameters):  # with **kwargs it takes any name
        names = {p.name for p in by_name}
        required = [p.name for p in by_name if p.default is p.empty]
        optional = [p.name for p in by_name if p.default is not p.empty]
        for grid in grids:
            if grid.name not in names:
                raise ParameterError(f"grid {grid.name}", grid.spec,
                                     _one_of_the_parameters(model, required, optional, grid.name))
        for name, value in base.items():
            if name not in names:
                raise ParameterError(f"base {name}", value, _one_of_the_parameters(model, required, optional, name))
    given = {grid.name for grid in grids} | set(base)
    missing = [p.name for p in by_name if p.default is p.empty and p.name not in given]
    if missing:  # the first named as the option to give, every one listed: one run finds them all
        also = f" (missing too: {', '.join(missing[1:])})" if missing[1:] else ""
        raise ParameterError(f"base {missing[0]}", None,
                             f"a value at every point: {model} requires {missing[0]}, {GIVEN}{also}")
    check_target = POINT_CHECKS.get(target)
    if check_target is not None:
        check = load_point(check_target)
        first = None
        for point in points:
            check(**_with_defaults(signature, point))
            first = point if first is None else first
        if first is not None:
            _refuse_numbers_given_as_text(check, signature, base, first)


def _refuse_numbers_given_as_text(check: Callable[..., Any], signature: inspect.Signature, base: Mapping[str, Any],
                                  point: Mapping[str, Any]) -> None:
    """ParameterError naming base NAME for a number given as text ({"q": "3"}) where the model's check takes a
    number: the point function would read the text as that number, but the store keys a point by the values as given,
    so the point would be stored a second time, beside the one keyed by the number (a list of `grids` from Python
    refuses text for the same reason). A text parameter whose check refuses the number (copy-heads' linear_scale,
    whose choice '1' is text) keeps its text. `point`: one point of the sweep, which the check has passed."""
    for name, value in base.items():
        if not isinstance(value, str):
            continue
        try:
            number = parse_setting(f"{name}={value}")[1]  # as the command reads --set NAME=VALUE
        except ParameterError:  # empty, or a number no float holds: the check has taken it as text
            continue
        if isinstance(number, str):
            continue
        try:
            check(**_with_defaults(signature, {**point, name: number}))
        except ParameterError:
            continue  # a text parameter, whose value is this text
        rule = "a number"
        try:  # the model's rule of the parameter, as it states it of a value that is no number
            check(**_with_defaults(signature, {**point, name: "?"}))
        except ParameterError as exc:
            rule = f"{exc.allowed}, given as a number" if exc.name == name else rule
        raise ParameterError(f"base {name}", value, f"{rule}: {number!r}, not the text {value!r} (the store keys a "
                                                    "point by its values as given: the text would store the number's "
                                                    "points again)")


def _with_defaults(signature: inspect.Signature, point: Mapping[str, Any]) -> dict[str, Any]:
    """The point's parameters by name with the function's defaults filled in (**kwargs spread out)."""
    bound = signature.bind(**point)
    bound.apply_defaults()
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            arguments[name] = value
    return arguments


def with_defaults_in_the_key(function: Callable[..., Any], points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points with the point function's defaults filled in, so that a parameter given at its default value
    (`--set h=0` where h defaults to 0) and one left out name the same stored point.

    A default that cannot be part of a key (not a number, a string, a bool or None) is left to the function; so is
    every default of a function without a signature to read.
    """
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return points
    defaults = {}
    for parameter in parameters:
        if parameter.default is parameter.empty or parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD,
                                                                          parameter.KEYWORD_ONLY):
            continue
        try:
            canonical_params({parameter.name: parameter.default})
        except ParameterError:
            continue
        defaults[parameter.name] = parameter.default
    return [{**defaults, **point} for point in points]
