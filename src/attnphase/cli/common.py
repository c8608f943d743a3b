"""Option types and output helpers shared by every command.

* `Real`, `Int` and `Choice`-like option types validate through `attnphase.params`, so the CLI and the
  Python API reject the same values with the same message, and click reports them with exit status 2.
* `emit` prints exactly one JSON object (with `--json`) that carries the command, the model, the
  parameters used and the code version (`attnphase.version.code_version()`), or tables otherwise
  (`attnphase.cli.display`).
* `json_option` also decides whether progress bars are shown: on a terminal and without `--json`.
* `threads_option` adds `--threads` (the rule is `attnphase.validate.device.choose_threads`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from attnphase import progress
from attnphase.errors import ParameterError
from attnphase.jsonio import dumps, to_jsonable
from attnphase.params import check_int, check_real, check_real_list, option_name

__all__ = [
    "Real", "Int", "RealList", "json_option", "rng_option", "threads_option", "emit", "option_name",
    "options_from", "declared_options", "renamed_to_option", "as_option_error", "RenamedOptionsCommand",
    "warn_of_damaged_rows", "store_path_or_default",
]


class Real(click.ParamType):
    """A finite real number in an interval."""

    name = "real"

    def __init__(self, low=None, high=None, *, low_open=False, high_open=False):
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            return check_real(
                _param_name(param), value, self.low, self.high,
                low_open=self.low_open, high_open=self.high_open,
            )
        except ParameterError as exc:
            self.fail(_without_name(exc), param, ctx)


class Int(click.ParamType):
    """An integer in an interval."""

    name = "integer"

    def __init__(self, low=None, high=None):
        self.low, self.high = low, high

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            if (self.low is None or value >= self.low) and (self.high is None or value <= self.high):
                return value
        try:
            return check_int(_param_name(param), value, self.low, self.high)
        except ParameterError as exc:
            self.fail(_without_name(exc), param, ctx)


class RealList(click.ParamType):
    """A comma-separated list of finite reals, optionally of a fixed length."""

    name = "list"

    def __init__(self, length=None, low=None, high=None):
        self.length, self.low, self.high = length, low, high

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        try:
            return check_real_list(_param_name(param), value, self.length, self.low, self.high)
        except ParameterError as exc:
            self.fail(_without_name(exc), param, ctx)


def _without_name(error: ParameterError) -> str:
    """The error's value and allowed range: click's message names the option itself ("Invalid value for '--P'")."""
    return f"{error.value!r} (allowed: {error.allowed})"


def _param_name(param) -> str:
    if param is None:
        return "value"
    opts = getattr(param, "opts", None)
    return max(opts, key=len) if opts else param.name


# ctx.meta key (shared by every context of one command line): (command, model) of a command run with --json, so that
# an interruption, which never reaches `emit`, still prints its one JSON object (cli.groups.GuardedGroup).
JSON_COMMAND = "attnphase.json_command"


def _progress_unless_json(ctx: click.Context, param, as_json: bool) -> bool:
    # Entered here, while the command's options are parsed, and left when the command's context closes:
    # the command body runs with progress shown on a terminal, and silent with --json or when piped.
    ctx.with_resource(progress.shown(not as_json))
    if as_json:
        from attnphase.cli.groups import ModelGroup

        # "attnphase threshold positional-semantic" -> ("threshold", "positional-semantic"): below a model group the
        # subcommand is the model; "attnphase store export" -> ("store export", None), as `emit` names it.
        words = ctx.command_path.split()[1:] or [ctx.info_name]
        if len(words) > 1 and isinstance(ctx.parent.command, ModelGroup):
            ctx.meta[JSON_COMMAND] = (words[0], words[1])
        else:
            ctx.meta[JSON_COMMAND] = (" ".join(words), None)
    return as_json


def json_option(func: Callable) -> Callable:
    """Add `--json`: print exactly one JSON object on stdout (and show no progress)."""
    return click.option(
        "--json", "as_json", is_flag=True, callback=_progress_unless_json,
        help="Print exactly one JSON object on stdout (no tables, no progress bars).",
    )(func)


def threads_option(func: Callable) -> Callable:
    """Add `--threads N`: torch CPU threads of a simulation (default: chosen by
    `attnphase.validate.device.choose_threads`, one unless the work is large). The command passes the
    value (None when not given) to `choose_threads(threads, work=..., device=...)`."""
    return click.option(
        "--threads", type=Int(1, 4096), default=None,
        help="CPU threads for torch, an integer in [1, 4096] (default: 1, or the idle cores when one step is large "
             "enough to gain from more; see the docs' 'Threads' section).",
    )(func)


def rng_option(func: Callable) -> Callable:
    """--rng: where a simulation draws its random numbers (`attnphase.validate.seeds.RNG_SOURCES`)."""
    return click.option("--rng", type=click.Choice(["device", "cpu"]), default="device", show_default=True,
                        help="device: the simulation device's own generator (fastest); cpu: drawn on the CPU and "
                             "copied, so that the same seed gives the same numbers on every device.")(func)


def emit(command: str, model: str, parameters: dict[str, Any], result: dict[str, Any], as_json: bool, *,
         units: dict[str, str] | None = None) -> None:
    """Print a command's result: one JSON object with `--json`, else tables (`attnphase.cli.display`).

    units: optional field -> unit or convention text shown beside the values in the tables (a field's
    path such as "branches.positional.q", or a bare name that applies wherever it appears), e.g.
    `attnphase.cli.display.units_from(result)` for a result type that declares them on its fields
    (`field(metadata={"unit": ...})`); the JSON output is unchanged by it.
    """
    from attnphase.version import code_version

    payload = {
        "command": command,
        "model": model,
        "version": code_version(),
        "parameters": to_jsonable(parameters),
        **to_jsonable(result),
    }
    if as_json:
        sys.stdout.write(dumps(payload) + "\n")
        return
    from attnphase.cli.display import render

    render(payload, units)


def store_path_or_default(store_path: Path | None, path_type: click.ParamType) -> Path:
    """`--store`'s value, else its default ($ATTNPHASE_STORE, else ./results.sqlite) checked by `path_type` as the
    option checks a value given to it: a path that cannot be a store is the same bad value (exit status 2, naming
    where it came from) whichever way it was given."""
    if store_path is not None:
        return store_path
    from attnphase.store import STORE_ENV, default_store_path

    default = default_store_path()
    try:
        return path_type.convert(os.fspath(default), None, click.get_current_context())
    except click.BadParameter as exc:
        given = f"${STORE_ENV}" if os.environ.get(STORE_ENV) else f"--store (default {default})"
        raise click.BadParameter(exc.message, param_hint=f"'{given}'") from None


DAMAGED_ROWS_NAMED = 5  # in the warning; --json and `attnphase store check` give every one


def warn_of_damaged_rows(store_path, damaged_rows: Sequence[str]) -> None:
    """One line on stderr for the damaged rows of the store that a command skipped (`store.DamagedRow`), naming the
    first few, when there are any."""
    if not damaged_rows:
        return
    n = len(damaged_rows)
    named = "; ".join(damaged_rows[:DAMAGED_ROWS_NAMED]) + ("; ..." if n > DAMAGED_ROWS_NAMED else "")
    click.echo(f"warning: results store {store_path}: {n} damaged row{'' if n == 1 else 's'} skipped (a sweep that "
               f"includes its point computes it again and replaces the row; `attnphase store check` lists every "
               f"problem): {named}", err=True)


def _option_type(allowed):
    from attnphase.params import IntRange, OneOf, RealListRange, RealRange

    if isinstance(allowed, RealRange):
        return Real(allowed.low, allowed.high, low_open=allowed.low_open, high_open=allowed.high_open)
    if isinstance(allowed, IntRange):
        return Int(allowed.low, allowed.high)
    if isinstance(allowed, OneOf):
        return click.Choice(list(allowed.choices))
    if isinstance(allowed, RealListRange):
        return RealList(allowed.length, allowed.low, allowed.high)
    return None


def options_from(parameter_set: type, names: Sequence[str] | None = None, *, required: Sequence[str] = (),
                 defaults: dict[str, Any] | None = None) -> Callable:
    """Click options for the declared parameters of `parameter_set` (a `params.ParameterSet` subclass).

    names: which parameters (default: all, in declaration order); required: parameters the command must be
    given; defaults: command-specific defaults that replace the declared ones. The option's help ends with
    the allowed range, so the range is stated once, in the declaration.
    """
    declared = parameter_set.declarations()
    chosen = list(declared) if names is None else list(names)
    defaults = defaults or {}

    def decorate(func: Callable) -> Callable:
        for name in reversed(chosen):
            field = declared[name]
            allowed = field.metadata.get("allowed")
            default = defaults.get(name, field.default)
            is_required = name in required or default is dataclasses.MISSING
            help_text = field.metadata.get("help", "")
            if allowed is not None:
                help_text = f"{help_text} ({allowed.describe()})".strip()
            settings: dict[str, Any] = {"required": is_required, "help": help_text}
            if not is_required:  # a default given to a required option would switch the requirement off
                settings.update(default=default, show_default=default is not None)
            func = click.option(option_name(field), name, type=_option_type(allowed), **settings)(func)
        return func

    return decorate


def declared_options(*parameter_sets: type) -> dict[str, str]:
    """Parameter name -> CLI option, for every parameter the ParameterSet classes declare (the first to declare a
    name gives its option)."""
    options: dict[str, str] = {}
    for parameter_set in parameter_sets:
        for name, field in parameter_set.declarations().items():
            options.setdefault(name, option_name(field))
    return options


def renamed_to_option(exc: ParameterError, options: Mapping[str, str]) -> ParameterError:
    """`exc` under the option that carries its parameter (`options`: parameter name -> option), the same message;
    `exc` itself when its name is not in `options`."""
    if exc.name not in options:
        return exc
    return ParameterError(options[exc.name], exc.value, exc.allowed)


def as_option_error(options: type | tuple[type, ...] | Mapping[str, str], call: Callable, *args, **kwargs):
    """call(*args, **kwargs), with a ParameterError about a declared parameter renamed to its CLI option.

    options: a ParameterSet class, a tuple of them (`declared_options`), or parameter name -> option. A
    cross-parameter check (`ParameterSet.check_joint`) names the field; the user typed the option. Any other
    ParameterError comes from inside a solver and keeps its name. Every command renames its errors through this
    function (or, for an error already caught, `renamed_to_option`).
    """
    if isinstance(options, type):
        options = declared_options(options)
    elif isinstance(options, tuple):
        options = declared_options(*options)
    try:
        return call(*args, **kwargs)
    except ParameterError as exc:
        renamed = renamed_to_option(exc, options)
        if renamed is exc:
            raise
        raise renamed from None


class RenamedOptionsCommand(click.Command):
    """A command that still accepts old option spellings (and old option values) for one release.

    renamed_options: old option -> new option (e.g. {"--seeds": "--trials"}); renamed_values: (new option,
    old value) -> new value (e.g. {("--algorithm", "sgld"): "mala"}). An old spelling is rewritten before
    parsing and a deprecation message goes to stderr, so `--json` output on stdout stays one object. An old spelling
    given together with its new one is refused (exit status 2): which value was meant is unknown.
    Use as `@solve.command(NAME, cls=RenamedOptionsCommand, renamed_options={...})`.
    """

    def __init__(self, *args, renamed_options: dict[str, str] | None = None,
                 renamed_values: dict[tuple[str, str], str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.renamed_options = dict(renamed_options or {})
        self.renamed_values = dict(renamed_values or {})

    def parse_args(self, ctx, args):
        rewritten: list[str] = []
        pending_option = None  # the (new) option whose value comes next
        spelled: dict[str, str] = {}  # renamed option (new spelling) -> how it was first given
        for token in args:
            if pending_option is not None:
                token = self._renamed_value(pending_option, token)
                pending_option = None
                rewritten.append(token)
                continue
            name, eq, value = token.partition("=")
            new = self.renamed_options.get(name, name)
            if new in self.renamed_options.values():
                first = spelled.setdefault(new, name)
                if first != name:
                    old = first if first != new else name
                    raise click.UsageError(f"{old} is the old spelling of {new}: give one of them, not both", ctx=ctx)
            if name in self.renamed_options:
                click.echo(f"attnphase: {name} is deprecated and will be removed in the next release; use {new}",
                           err=True)
                name = new
            if name.startswith("--") and any(option == name for option, _ in self.renamed_values):
                if eq:
                    value = self._renamed_value(name, value)
                else:
                    pending_option = name
            rewritten.append(f"{name}={value}" if eq else name)
        return super().parse_args(ctx, rewritten)

    def _renamed_value(self, option: str, value: str) -> str:
        new = self.renamed_values.get((option, value))
        if new is None:
            return value
        click.echo(f"attnphase: {option} {value} is deprecated and will be removed in the next release; use "
                   f"{option} {new}", err=True)
        return new
