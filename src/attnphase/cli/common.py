"""Option types and output helpers shared by every command.

* `Real`, `Int` and `Choice`-like option types validate through `attnphase.params`, so the CLI and the
  Python API reject the same values with the same message, and click reports them with exit status 2.
* `emit` prints exactly one JSON object (with `--json`) that carries the command, the model, the
  parameters used and the code version, or a readable summary otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from attnphase import __version__
from attnphase.errors import ParameterError
from attnphase.jsonio import dumps, to_jsonable
from attnphase.params import check_int, check_real, check_real_list


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
            self.fail(str(exc), param, ctx)


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
            self.fail(str(exc), param, ctx)


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
            self.fail(str(exc), param, ctx)


def _param_name(param) -> str:
    if param is None:
        return "value"
    opts = getattr(param, "opts", None)
    return max(opts, key=len) if opts else param.name


def json_option(func: Callable) -> Callable:
    """Add `--json`: print exactly one JSON object on stdout."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout."
    )(func)


def rng_option(func: Callable) -> Callable:
    """--rng: where a simulation draws its random numbers (`attnphase.validate.seeds.RNG_SOURCES`)."""
    return click.option("--rng", type=click.Choice(["device", "cpu"]), default="device", show_default=True,
                        help="device: the simulation device's own generator (fastest); cpu: drawn on the CPU and "
                             "copied, so that the same seed gives the same numbers on every device.")(func)


def emit(command: str, model: str, parameters: dict[str, Any], result: dict[str, Any], as_json: bool) -> None:
    """Print a command's result: one JSON object with `--json`, else `key: value` lines."""
    payload = {
        "command": command,
        "model": model,
        "version": __version__,
        "parameters": to_jsonable(parameters),
        **to_jsonable(result),
    }
    if as_json:
        sys.stdout.write(dumps(payload) + "\n")
        return
    for key, value in payload.items():
        click.echo(f"{key}: {dumps(value) if isinstance(value, (dict, list)) else value}")
