"""`solve` at a P beyond the range its float64 proposals resolve: status failed (exit 1), and the message names --P
and two values of P that bracket the end of the range in which the action is solved (audit ch10: "outside the
solvable range", no range given, while --P is declared (0, inf))."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnphase.api import copy_heads as api
from attnphase.cli import main


def _failed_solve_range(attention: str, P: str) -> tuple[float, float]:
    """The values (solved, not solved) that bracket the bound, as `solve --json` names them for --P P (exit 1, status
    failed)."""
    out = CliRunner().invoke(main, ["solve", "copy-heads", "--attention", attention, "--L", "16", "--V", "4",
                                    "--P", P, "--json"])
    assert out.exit_code == 1, out.output
    result = json.loads(out.stdout)
    assert result["status"] == "failed"
    named = re.search(r"P \(--P\) = (\S+) lies beyond the range in which the action is solved at L = 16, V = 4 and "
                      r"this convention: it is solved at P = ([0-9.e+]+) and not at P = ([0-9.e+]+)", result["message"])
    assert named and float(named.group(1)) == float(P), result["message"]
    return float(named.group(2)), float(named.group(3))


def _solved_at_one_end_and_not_at_the_other(attention: str, solved: float, failing: float) -> None:
    """The bracket is what the message says: solved at its lower end, not at its upper end, ten decades apart."""
    assert failing == pytest.approx(1e10 * solved, rel=1e-6)
    assert api.solve(attention, 16, 4, solved).status == "converged"
    assert api.solve(attention, 16, 4, failing).status == "failed"


def test_softmax_solve_at_P_1e200_names_the_range_where_n_squared_stays_finite():
    """Softmax, L = 16, V = 4, P = 1e200. The action's copy fit holds τn² (n = P here), which overflows float64 above
    √(largest float) = 1.34e154: the named bracket holds it."""
    solved, failing = _failed_solve_range("softmax", "1e200")
    assert solved <= sys.float_info.max ** 0.5 < failing
    _solved_at_one_end_and_not_at_the_other("softmax", solved, failing)


@pytest.mark.slow
def test_linear_solve_at_P_1e100_names_the_range():
    """Linear, L = 16, V = 4, P = 1e100 (about 25 s: solves next to the bound, n ~ 1e67, run their mpmath descent
    at ~140 digits). P = 1e50 solves (the audit's reference agreed there), so the bound lies above it."""
    solved, failing = _failed_solve_range("linear", "1e100")
    assert 1e50 <= solved < failing < 1e100
    _solved_at_one_end_and_not_at_the_other("linear", solved, failing)


def _pages_bound(attention: str) -> float:
    """The bound of the solved range at L = 16, V = 4 that the model page's Ranges table quotes for `attention`."""
    page = (Path(__file__).parents[2] / "docs" / "models" / "copy_heads.md").read_text()
    quoted = re.search(r"L = 16, V = 4: linear ([0-9.e]+), ragged over its last percent; softmax ([0-9.e]+), where n² "
                       r"overflows", page)
    assert quoted, "the Ranges table's bounds are not on the page"
    return float(quoted.group(1 if attention == "linear" else 2))


def _solved_below_and_failed_above(attention: str, bound: float, margin: float) -> None:
    assert api.solve(attention, 16, 4, (1 - margin) * bound).status == "converged"
    assert api.solve(attention, 16, 4, (1 + margin) * bound).status == "failed"


def test_the_pages_softmax_bound_is_where_solve_stops():
    """Solved 1 % below the page's softmax bound and failed 1 % above it; the bound is √(largest float) to three
    digits."""
    _solved_below_and_failed_above("softmax", _pages_bound("softmax"), 0.01)
    assert _pages_bound("softmax") == pytest.approx(sys.float_info.max ** 0.5, rel=5e-3)


@pytest.mark.slow
def test_the_pages_linear_bound_is_where_solve_stops():
    """Solved 2 % below the page's linear bound and failed 2 % above it (about 10 s; the float64 proposals fail and
    succeed in turn over the last percent: measured 4.99e76 failed, 5.01e76 and 5.02e76 solved, failed from
    5.04e76)."""
    _solved_below_and_failed_above("linear", _pages_bound("linear"), 0.02)
