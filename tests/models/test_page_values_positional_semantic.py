"""The current values of docs/models/positional_semantic.md held to the commands that print them: each test reads the
page's numbers from the page and runs the page's command (or the same API call), so it fails if either changes.
A value must equal the command's to the page's printed digits (half a unit of its last digit), an error the command's
rounded to as many significant digits as the page prints, a quoted message must be part of the command's message.

Where another test already runs the same command, it checks the page there (test_positional_semantic_ladder.py:
the thresholds table, the branch table at ω = 0.3, α = 1.25, the message at ω = 0, α = 2.4;
test_positional_semantic_branch_end.py: the branch ends at ω = 0.15 and 0.2) with the helpers below.
Every test here runs a solve or a simulation of 30 s to minutes: all slow.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from attnphase.api import positional_semantic as api
from attnphase.cli import main
from model_pages import PAGES

PAGE = "positional_semantic.md"
NUMBER = r"[−-]?\d+(?:\.\d+)?(?:e[−-]?\d+)?"


def page_text() -> str:
    """The model page with every run of whitespace (line breaks included) made one space."""
    return " ".join((PAGES / PAGE).read_text().split())


def printed(pattern: str) -> tuple[str, ...]:
    """The groups of `pattern`'s first match in the page (whitespace normalised)."""
    found = re.search(pattern, page_text())
    assert found, f"not on the page: {pattern}"
    return found.groups()


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def _decimals(text: str) -> int:
    mantissa = text.replace("−", "-").split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def assert_value(value: float, text: str, what: str = "") -> None:
    """`value` shown as the page's `text`: within half a unit of its last printed digit."""
    exponent = int(text.split("e")[1].replace("−", "-")) if "e" in text else 0
    assert abs(value - _number(text)) <= 0.5 * 10.0 ** (exponent - _decimals(text)) + 1e-12, (what, value, text)


def assert_error(error: float, text: str, what: str = "") -> None:
    """`error` shown as the page's `text`: rounded to as many significant digits as the page prints."""
    digits = len(text.replace("−", "").split("e")[0].replace(".", "").lstrip("0"))
    assert float(f"{error:.{max(digits, 1)}g}") == pytest.approx(_number(text), rel=1e-9), (what, error, text)


def assert_quoted(message: str, quote: str) -> None:
    """The page's quotation of a message is part of the message (whitespace normalised)."""
    assert quote in " ".join(message.split()), (quote, message)


# -- the branch table at ω = 0.3, α = 1.25 (checked where the slow fields test solves it, in the ladder tests) ----
FIELDS = {"q": 1, "V": 2, "m": 3, "theta": 4, "test_error": 5, "free_energy": 6}


def branch_table() -> dict[str, list[str]]:
    """branch -> the cells of its row in the page's table "Branches at ω = 0.3, α = 1.25"."""
    from model_pages import page_table_after

    return {cells[0]: cells for cells in page_table_after(PAGE, "Branches at ω = 0.3, α = 1.25")}


def check_branch_table(result) -> None:
    """`solve(0.3, 1.25, branches=("positional", "semantic"))` against the page's branch table (every field, its
    error, the rule, the rules it was checked on, the status) and the Φ gap the page quotes after it."""
    table = branch_table()
    assert sorted(table) == sorted(b.branch for b in result.branches), table
    for branch in result.branches:
        cells = table[branch.branch]
        for name, column in FIELDS.items():
            value = abs(getattr(branch, name)) if name in ("m", "theta") else getattr(branch, name)
            if cells[column] == "0":
                assert value == 0, (branch.branch, name, value)
                continue
            shown, shown_error = re.fullmatch(rf"({NUMBER}) ± ({NUMBER})", cells[column]).groups()
            assert_value(value, shown, (branch.branch, name))
            assert_error(branch.errors[name], shown_error, (branch.branch, name))
        rule, checked = re.fullmatch(r"(.+?) \((.+)\)", cells[7]).groups()
        assert branch.rule == rule, (branch.branch, branch.rule, rule)
        # the page shortens "split-line 8, split-line 10" to "8, 10"
        assert branch.checked_on.replace("split-line ", "") == checked.replace("split-line ", ""), branch.checked_on
        assert branch.status == cells[8], (branch.branch, branch.status)
    (gap,) = printed(r"The Φ gap \(([0-9.e−-]+)\) exceeds the two Φ errors")
    phi = {b.branch: b for b in result.branches}
    difference = phi["positional"].free_energy - phi["semantic"].free_energy
    assert float(f"{difference:.3g}") == _number(gap), (difference, gap)
    assert difference > phi["positional"].errors["free_energy"] + phi["semantic"].errors["free_energy"]
    assert result.global_branch == "positional"


# -- further along the followed branches ---------------------------------------------------------------------
@pytest.mark.slow
def test_the_branches_at_alpha_2_and_2_5_are_the_pages():
    """`solve positional-semantic --omega 0.3 --alpha 2` and `--alpha 2.5` (default tolerance, both branches): the
    positional m, q, V with their errors, its stability and rule, and the semantic θ and rule, as the page's "Further
    along the followed branches" prints them. 9-10 s each on 2 idle cores."""
    at_2 = printed(rf"at α = 2 the positional branch has m = ({NUMBER}) ± ({NUMBER}), q = ({NUMBER}) ± ({NUMBER}), "
                   rf"V = ({NUMBER}) ± ({NUMBER}), (stable), on (split-line \d+|count-split \d+)")
    at_2_5 = printed(rf"at α = 2\.5 m = ({NUMBER}) ± ({NUMBER}), V = ({NUMBER}) ± ({NUMBER}), (stable), on "
                     r"(split-line \d+|count-split \d+)")
    theta_2, theta_2_5, semantic_rule = printed(rf"the semantic branch has θ = ({NUMBER}) and ({NUMBER}) there "
                                                r"\((split-line \d+|count-split \d+)\)")
    expected = {2.0: (dict(m=at_2[0:2], q=at_2[2:4], V=at_2[4:6]), at_2[7], theta_2),
                2.5: (dict(m=at_2_5[0:2], V=at_2_5[2:4]), at_2_5[5], theta_2_5)}
    for alpha, (fields, rule, theta) in expected.items():
        result = api.solve(0.3, alpha)
        branches = {b.branch: b for b in result.branches}
        positional, semantic = branches["positional"], branches["semantic"]
        for name, (shown, shown_error) in fields.items():
            value = abs(positional.m) if name == "m" else getattr(positional, name)
            assert_value(value, shown, (alpha, name))
            assert_error(positional.errors[name], shown_error, (alpha, name))
        assert positional.stable and positional.status == "converged" and positional.rule == rule, positional.message
        assert_value(abs(semantic.theta), theta, (alpha, "theta"))
        assert semantic.rule == semantic_rule, semantic.message


# -- where the positional branch ends ----------------------------------------------------------------------------
@pytest.mark.slow
def test_below_its_lower_end_at_omega_0_3_the_positional_branch_is_reported_as_the_page_quotes():
    """`solve positional-semantic --omega 0.3 --alpha 0.05 --branches positional`: not_found, with the message the
    page quotes (the bracket, the sizes |m| and the end on split-line 8). About 30 s on 2 idle cores."""
    (quote,) = printed(r"--alpha 0\.05 --branches positional` \(about 30 s\) says \"(.+?)\"")
    result = api.solve(0.3, 0.05, branches=("positional",))
    (missing,) = result.missing
    assert missing.status == "not_found", missing.message
    assert_quoted(missing.message, quote)


@pytest.mark.slow
def test_next_to_its_end_at_omega_0_the_positional_branch_is_reported_as_the_page_quotes():
    """`solve positional-semantic --omega 0 --alpha 0.9 --branches positional`: m with its error, status limited, and
    the end on each top rung in the message as the page quotes them. 163 s on 2 idle cores."""
    m, m_error, status, quote = printed(rf"--omega 0 --alpha 0\.9 --branches positional` \([^)]*\) reports "
                                        rf"m = ({NUMBER}) ± ({NUMBER}), `(\w+)` \([^)]*\), \"(.+?)\"")
    result = api.solve(0.0, 0.9, branches=("positional",))
    (branch,) = result.branches
    assert branch.status == status, branch.message
    assert_value(abs(branch.m), m, "m")
    assert_error(branch.errors["m"], m_error, "m")
    assert_quoted(branch.message, quote)
    # the page's summary of the ends, "from 0.90158 on split-line 8 to 0.93242 on count-split 16" at ω = 0
    (top,) = printed(r"at ω = 0 from [0-9.]+ on split-line 8 to ([0-9.]+) on count-split 16")
    assert f"{top} on count-split 16" in branch.message, branch.message


# -- simulate held against the theory ----------------------------------------------------------------------------
def _simulate(arguments: list[str]) -> dict:
    out = CliRunner().invoke(main, arguments, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def _comparisons(payload: dict) -> dict:
    return {c["name"]: c for c in payload["comparisons"]}


@pytest.mark.slow
def test_the_simulate_example_at_d_200_is_the_pages():
    """The page's `simulate` example (the command of "How to reproduce": d = 200, four trials, semantic init, seed 0):
    lands on the semantic branch, agrees on |θ| (its mean, error, theory and z as printed), q and ε_t (z), and on ε_g
    (mean, error, theory, its error and z as printed) within the Student-t band of four trials. 37 s on 2 idle cores."""
    (command,) = printed(r"attnphase (simulate positional-semantic [^`]*?--d 200 [^`]*?--json)")
    payload = _simulate(command.split())
    theta, theta_error, theta_theory, theta_z, q_z, train_z, test, test_error, test_theory, test_theory_error, \
        test_z = printed(rf"agrees on \|θ\| \(({NUMBER}) ± ({NUMBER}) against ({NUMBER}), z = ({NUMBER})\), "
                         rf"q \(z = ({NUMBER})\), ε_t \(z = ({NUMBER})\) and ε_g \(({NUMBER}) ± "
                         rf"({NUMBER}) against ({NUMBER}) ± ({NUMBER}), z = ({NUMBER}):")
    assert payload["landed"] == ["semantic"] * 4 and payload["theory"]["branch"] == "semantic"
    c = _comparisons(payload)
    assert_value(c["abs_theta"]["mean"], theta, "|θ|")
    assert_error(c["abs_theta"]["sem"], theta_error, "|θ| error")
    assert_value(c["abs_theta"]["theory"], theta_theory, "|θ| theory")
    for name, z in (("abs_theta", theta_z), ("q", q_z), ("train_loss", train_z)):
        assert_value(c[name]["z"], z, (name, "z"))
        assert c[name]["agrees"] is True, c[name]
    assert_value(c["test_error"]["mean"], test, "ε_g")
    assert_error(c["test_error"]["sem"], test_error, "ε_g error")
    assert_value(c["test_error"]["theory"], test_theory, "ε_g theory")
    assert_error(c["test_error"]["theory_error"], test_theory_error, "ε_g theory error")
    assert_value(c["test_error"]["z"], test_z, "ε_g z")
    assert c["test_error"]["agrees"] is True and payload["theory_agrees"] is True
    assert 3 < c["test_error"]["z"] < c["test_error"]["n_sigma"] == pytest.approx(9.2187, abs=1e-4)


@pytest.mark.slow
def test_the_simulate_run_at_the_default_size_is_the_pages():
    """`simulate positional-semantic --omega 0.3 --alpha 1.5` at its defaults (d = 1000, five trials): every quantity
    agrees, with the means, errors and z the page prints. 398 s on two shared cores."""
    values = printed(rf"every quantity agrees: \|θ\| ({NUMBER}) ± ({NUMBER}), q ({NUMBER}) ± ({NUMBER}), ε_g "
                     rf"({NUMBER}) ± ({NUMBER}), ε_t ({NUMBER}) ± ({NUMBER}) \(z = ({NUMBER}), ({NUMBER}), "
                     rf"({NUMBER}), ({NUMBER})\)")
    payload = _simulate(["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1.5", "--json"])
    assert payload["d"] == 1000 and payload["parameters"]["trials"] == 5
    c = _comparisons(payload)
    for k, name in enumerate(("abs_theta", "q", "test_error", "train_loss")):
        assert_value(c[name]["mean"], values[2 * k], name)
        assert_error(c[name]["sem"], values[2 * k + 1], name)
        assert_value(c[name]["z"], values[8 + k], (name, "z"))
        assert c[name]["agrees"] is True, c[name]
    assert payload["theory_agrees"] is True


def test_the_fields_reference_the_page_quotes_is_the_references_file():
    """The fields reference quoted beside the branch table (the count-split-16 fixed points at ω = 0.3, α = 1.25) is
    the one `benchmarks/positional_semantic_references.py --only fields` wrote to
    benchmarks/positional_semantic_reference.json, which the slow fields test reads: every quoted number to its
    printed digits (audit ps15: the page had been typed from the file, with nothing to fail if they parted)."""
    from pathlib import Path

    reference = json.loads((Path(__file__).parents[2] / "benchmarks" / "positional_semantic_reference.json")
                           .read_text())["fields(0.3,1.25)"]
    number = r"([\d.]+)"
    quoted = printed(rf"positional q {number}, V {number}, m {number}, ε_g {number}, semantic q {number}, "
                     rf"V {number}, θ {number}, ε_g {number}")
    expected = [reference["positional"][k] for k in ("q", "V", "m", "test_error")] + \
        [reference["semantic"][k] for k in ("q", "V", "theta", "test_error")]
    for value, text in zip(expected, quoted):
        assert_value(value, text)
