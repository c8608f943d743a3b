"""Bad input to every command: exit status 2, one message naming the option and its range.

The command tree is walked at run time, so every option that a model registers is fuzzed without
this file knowing about it. Only bad values are sent: click converts (and rejects) them before the
command body runs, so no computation starts.
"""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from attnphase.cli import main
from attnphase.cli.common import Int, Real, RealList


def leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()):
    """Every command below `group`, loading the lazy ones (`list_commands`/`get_command`, as click does)."""
    ctx = click.Context(group, info_name=prefix[-1] if prefix else "attnphase")
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        path = prefix + (name,)
        if isinstance(command, click.Group):
            yield from leaf_commands(command, path)
        elif command is not None:
            yield path, command


def numeric_options():
    for path, command in leaf_commands(main):
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, (Real, Int, RealList)):
                yield pytest.param(path, param, id=" ".join(path) + " " + max(param.opts, key=len))


NUMERIC_OPTIONS = list(numeric_options())


def test_the_walk_finds_every_command_and_their_numeric_options():
    """Without this, an empty walk (e.g. of lazily loaded commands) would skip the fuzz test silently."""
    paths = {path for path, _ in leaf_commands(main)}
    assert {("solve", "positional-semantic"), ("simulate", "copy-heads"), ("sweep",), ("store", "list")} <= paths
    assert len(NUMERIC_OPTIONS) >= 30


def bad_values(param_type) -> st.SearchStrategy[str]:
    """Strings that the option type must reject."""
    junk = st.sampled_from(["nan", "NaN", "inf", "-inf", "1e999", "abc", "", "1,2,x", "0x", "--"])
    if isinstance(param_type, RealList):
        return junk.filter(lambda s: s not in ("",))
    outside = []
    low, high = param_type.low, param_type.high
    if isinstance(param_type, Int):
        if low is not None:
            outside.append(st.integers(max_value=low - 1))
        if high is not None:
            outside.append(st.integers(min_value=high + 1))
        outside.append(st.sampled_from([1.5, 2.25]))
    else:
        if low is not None:
            outside.append(st.floats(max_value=low, allow_nan=False, allow_infinity=False,
                                     exclude_max=not param_type.low_open))
        if high is not None:
            outside.append(st.floats(min_value=high, allow_nan=False, allow_infinity=False,
                                     exclude_min=not param_type.high_open))
    return st.one_of(junk, *[s.map(repr) for s in outside]) if outside else junk


@pytest.mark.parametrize(("path", "param"), NUMERIC_OPTIONS)
# A fifth of the profile's examples per option (20 in the ci profile; 88 options, about 10 s); the profile
# (tests/conftest.py) sets the randomness
@settings(max_examples=max(1, settings.default.max_examples // 5),
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_bad_numeric_value_exits_2_naming_the_option(path, param, data):
    value = data.draw(bad_values(param.type))
    option = max(param.opts, key=len)
    result = CliRunner().invoke(main, [*path, f"{option}={value}"])
    assert result.exit_code == 2, (path, option, value, result.output)
    assert option in result.output or param.name in result.output
    assert "Traceback" not in result.output

