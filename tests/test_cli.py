"""The command line as a user meets it: version, derivations in sync, bad input -> exit 2."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from attnphase import __version__
from attnphase.cli import main


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_version():
    result = run("--version")
    assert result.exit_code == 0 and __version__ in result.output


def test_checked_in_derivations_are_up_to_date():
    result = run("derive", "all", "--check", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["stale"] == []


def test_unknown_model_exits_2_naming_the_choices():
    result = run("reproduce", "no-such-model")
    assert result.exit_code == 2
    assert "positional-semantic" in result.output


def test_console_entry_point_runs_as_module():
    out = subprocess.run([sys.executable, "-m", "attnphase", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and __version__ in out.stdout


@pytest.mark.parametrize("command", ["derive", "solve", "threshold", "scaling", "simulate", "reproduce"])
def test_every_command_has_help_with_examples_or_subcommands(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output
