"""`solve` at a P beyond the range its float64 proposals resolve: status failed (exit 1), and the message names --P
and the range of P in which the action is solved (audit ch10: "outside the solvable range", no range given, while
--P is declared (0, inf))."""

from __future__ import annotations

import json
import re
import sys

import pytest
from click.testing import CliRunner

from attnphase.api import copy_heads as api
from attnphase.cli import main


def _failed_solve_range(attention: str, P: str) -> float:
    """The upper end b of the range "(0, b]" that `solve --json` names for --P P (exit 1, status failed)."""
    out = CliRunner().invoke(main, ["solve", "copy-heads", "--attention", attention, "--L", "16", "--V", "4",
                                    "--P", P, "--json"])
    assert out.exit_code == 1, out.output
    result = json.loads(out.stdout)
    assert result["status"] == "failed"
    named = re.search(r"P \(--P\) = (\S+) lies outside the range \(0, ([0-9.e+]+)\] in which the action is solved "
                      r"at L = 16, V = 4", result["message"])
    assert named and float(named.group(1)) == float(P), result["message"]
    return float(named.group(2))


def _solved_at_the_bound_and_not_beyond(attention: str, bound: float) -> None:
    """The range is what the message says: solved at its end, not 0.2 decades beyond (it is bisected to 0.1)."""
    assert api.solve(attention, 16, 4, bound).status == "converged"
    assert api.solve(attention, 16, 4, bound * 10**0.2).status == "failed"


def test_softmax_solve_at_P_1e200_names_the_range_where_n_squared_stays_finite():
    """Softmax, L = 16, V = 4, P = 1e200. The action's copy fit holds τn² (n = P here), which overflows float64 above
    √(largest float) = 1.34e154: the named bound lies within the 0.1 decade below it."""
    bound = _failed_solve_range("softmax", "1e200")
    root_of_largest = sys.float_info.max ** 0.5
    assert bound <= root_of_largest < bound * 10**0.1
    _solved_at_the_bound_and_not_beyond("softmax", bound)


@pytest.mark.slow
def test_linear_solve_at_P_1e100_names_the_range():
    """Linear, L = 16, V = 4, P = 1e100 (about a minute: each solve next to the bound, n ~ 1e67, runs its mpmath
    descent at ~140 digits). P = 1e50 solves (the audit's reference agreed there), so the bound lies above it."""
    bound = _failed_solve_range("linear", "1e100")
    assert 1e50 < bound < 1e100
    _solved_at_the_bound_and_not_beyond("linear", bound)
