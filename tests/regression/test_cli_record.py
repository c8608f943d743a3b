"""The CLI record (tests/regression/cli_record.json): fixed commands give the numbers they gave.

Each recorded command runs again in-process and every field of its recorded JSON output must still be
there with the same value: text, integers and flags exactly, floats to 1e-12 relative (rounding: the
record was made on the same kind of machine, and the restructuring changes no arithmetic). Fields may be
added. A deliberate change is an entry of "changes" in the record: the command (its argv as one string),
a glob over the field's dotted path, and either a tolerance (rtol, atol), a new path (renamed_to), the value the
field has now in place of the recorded one (now; compared as the recorded value was) or removed: true, each with
its reason.
"""

from __future__ import annotations

import fnmatch
import json
import math

import pytest

from cli_record import RECORD, run_command

RELATIVE = 1e-12
ABSOLUTE = 1e-14
IGNORED = {"version", "seconds"}  # the code version changes with every commit by design; wall-clock time

record = json.loads(RECORD.read_text())


def _changes_for(argv: str) -> list[dict]:
    return [c for c in record["changes"] if c["command"] == argv]


def _rule(changes: list[dict], path: str) -> dict | None:
    for change in changes:
        if fnmatch.fnmatchcase(path, change["path"]):
            return change
    return None


def _lookup(tree, path: str):
    node = tree
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def _leaves(tree, prefix=""):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, f"{prefix}{key}.")
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from _leaves(value, f"{prefix}{i}.")
    else:
        yield prefix[:-1], tree


def _same(old, new, rtol: float, atol: float) -> bool:
    if isinstance(old, bool) or isinstance(new, bool) or isinstance(old, str) or old is None:
        return old == new
    if isinstance(old, int) and isinstance(new, int):
        return old == new
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return math.isclose(old, new, rel_tol=rtol, abs_tol=atol)
    return False


def differences(argv: str, old_output: dict, new_output: dict) -> list[str]:
    """Every recorded field that is missing or differs beyond its allowed tolerance."""
    changes = _changes_for(argv)
    problems = []
    for path, old in _leaves(old_output):
        if path.split(".")[0] in IGNORED:
            continue
        rule = _rule(changes, path) or {}
        if rule.get("removed"):
            continue
        old = rule.get("now", old)
        new_path = rule.get("renamed_to", path)
        try:
            new = _lookup(new_output, new_path)
        except (KeyError, IndexError, ValueError, TypeError):
            problems.append(f"{path}: missing (recorded {old!r})")
            continue
        if not _same(old, new, rule.get("rtol", RELATIVE), rule.get("atol", ABSOLUTE)):
            problems.append(f"{path}: {new!r}, recorded {old!r}")
    return problems


def test_every_change_names_a_recorded_command_and_a_reason():
    commands = {" ".join(entry["argv"]) for entry in record["commands"]}
    for change in record["changes"]:
        assert change["command"] in commands, change
        assert change.get("reason", "").strip(), change


def test_the_comparison_sees_a_changed_number():
    old = {"a": {"b": [1.0, 2.0]}, "status": "converged"}
    assert differences("x", old, {"a": {"b": [1.0, 2.0 * (1 + 1e-9)]}, "status": "converged"}) == [
        "a.b.1: 2.000000002, recorded 2.0"]
    assert differences("x", old, {"a": {"b": [1.0]}, "status": "converged"}) == ["a.b.1: missing (recorded 2.0)"]
    assert differences("x", old, {"a": {"b": [1.0, 2.0]}, "status": "limited"})


# Recorded commands run in the slow suite only: `simulate positional-semantic` solves its theory at the default
# tolerance (both branches, about 30 s of CPU); its runs and its comparison have their own default-suite tests.
SLOW_COMMANDS = ("simulate positional-semantic",)


def _entries():
    for entry in record["commands"]:
        slow = " ".join(entry["argv"][:2]) in SLOW_COMMANDS
        yield pytest.param(entry, marks=pytest.mark.slow) if slow else entry


@pytest.mark.parametrize("entry", list(_entries()), ids=lambda e: " ".join(e["argv"][:2]) + " " + " ".join(e["argv"][2:8]))
def test_recorded_command_gives_the_recorded_numbers(entry):
    argv = " ".join(entry["argv"])
    problems = differences(argv, entry["output"], run_command(tuple(entry["argv"])))
    assert not problems, "\n".join(problems)
