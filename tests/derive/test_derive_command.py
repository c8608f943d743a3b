"""`attnphase derive --check --dir DIR`: a stale page's advice rewrites the pages that were checked (same model, same
directory), and a directory that does not exist is a wrong path (exit 2, as other bad paths), not a stale page."""

from __future__ import annotations

import re
import shlex

from click.testing import CliRunner

from attnphase.cli import main


def _derive(*args):
    return CliRunner().invoke(main, ["derive", *args])


def test_the_advice_for_a_stale_page_names_the_directory_checked_and_rewrites_it(tmp_path):
    shelf = tmp_path / "my pages"  # a space: the advice must quote it
    shelf.mkdir()
    (shelf / "potts.md").write_text("edited\n")
    stale = _derive("potts", "--check", "--dir", str(shelf))
    assert stale.exit_code == 1 and (shelf / "potts.md").read_text() == "edited\n"
    advice = re.search(r"stale derivations \(run `([^`]+)`\)", stale.stderr)
    assert advice is not None, stale.stderr
    argv = shlex.split(advice.group(1))
    assert argv[:3] == ["attnphase", "derive", "potts"] and argv[3:] == ["--dir", str(shelf)], argv
    assert _derive(*argv[2:]).exit_code == 0  # the advised command, as a user runs it
    assert _derive("potts", "--check", "--dir", str(shelf)).exit_code == 0


def test_a_missing_directory_is_a_bad_path_not_a_stale_page(tmp_path):
    missing = tmp_path / "no" / "such"
    for extra in ([], ["--json"]):
        result = _derive("potts", "--check", "--dir", str(missing), *extra)
        assert result.exit_code == 2, result.output
        assert result.stdout == "" and "stale" not in result.output
        assert f"{missing} does not exist" in result.stderr and "'--dir'" in result.stderr, result.stderr
    assert not missing.exists()
