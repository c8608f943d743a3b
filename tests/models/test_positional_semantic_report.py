"""The positional-semantic report (`attnphase reproduce positional-semantic`): what it keeps for a resumed run."""

from __future__ import annotations

import csv
import math
import re

import numpy as np
import pytest

from attnphase.reproduce import positional_semantic as report
from attnphase.results import Status


def test_the_branch_table_keeps_each_alpha_and_an_interrupted_run_solves_only_the_rest(tmp_path, monkeypatch):
    """With `kept`, each α's SolveResult is stored as solve_along yields it: after an interruption at the second
    α the next call solves only that one, its paths passing through the kept α first, so the resumed table is the
    uninterrupted one to the last bit (audit r17: followed from the anchor without the first α on its path, the
    fixed points differed within the solver's tolerance, 4e-10 in q)."""
    alphas, tensor_rules = [1.0, 1.5], (4, 6)  # cheap rules: the values are not the point
    uninterrupted = report.branch_results(alphas, 0.05, tensor_rules)
    real_solve_along = report.api.solve_along
    asked = []

    passed = []

    def interrupted_after_the_first(omega, wanted, **kwargs):
        asked.append(list(wanted))
        passed.append(list(kwargs["passing_through"]))
        for count, result in enumerate(real_solve_along(omega, wanted, **kwargs)):
            if count == 1 and len(asked) == 1:
                raise KeyboardInterrupt
            yield result

    monkeypatch.setattr(report.api, "solve_along", interrupted_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        report.branch_results(alphas, 0.05, tensor_rules, kept=tmp_path)
    resumed = report.branch_results(alphas, 0.05, tensor_rules, kept=tmp_path)
    assert asked == [[1.0, 1.5], [1.5]] and passed == [[], [1.0]]
    resumed_rows, uninterrupted_rows = report.branch_rows(resumed), report.branch_rows(uninterrupted)
    # on tensor rules alone the values are the same fixed point either way, to the solves' accuracy (residual ≤ 1e-8;
    # an error, a difference of close values, to 2e-12 relative): on the report's ladder they are the same to the last
    # bit only through the kept α (`test_a_resumed_branch_table_is_the_uninterrupted_one`)
    for again, reference in zip(resumed_rows, uninterrupted_rows, strict=True):
        assert again.keys() == reference.keys() and again["status"] == reference["status"]
        for key, value in reference.items():
            if isinstance(value, float):
                assert math.isclose(again[key], value, rel_tol=1e-6, abs_tol=1e-12), (again.get("alpha"), key)
    report.branch_results(alphas, 0.05, tensor_rules, kept=tmp_path)
    assert len(asked) == 2  # everything kept: nothing solved
    report.branch_results([1.0], 0.04, tensor_rules, kept=tmp_path)
    assert asked[2:] == [[1.0]]  # another tolerance reuses nothing


@pytest.mark.slow
def test_a_resumed_branch_table_is_the_uninterrupted_one():
    """Audit r17: the quick report resumed after α = 0.75 (its ladder, tol 0.05) solved 1.25 and 1.75 with paths that
    no longer passed through 0.75, and its fixed points differed within the solver's tolerance (q by 4e-10, its
    error 3e-4): through the kept α they are the same to the last bit (2-5 minutes on 2 cores)."""
    settings = dict(tol=0.05, branches=("positional", "semantic"), stability=False)
    uninterrupted = list(report.api.solve_along(report.OMEGA, [0.75, 1.25, 1.75], **settings))[1:]
    resumed = list(report.api.solve_along(report.OMEGA, [1.25, 1.75], passing_through=[0.75], **settings))
    assert [r.as_dict() for r in resumed] == [r.as_dict() for r in uninterrupted]


def _branch(name, alpha, train_loss, error):
    from types import SimpleNamespace

    return SimpleNamespace(branch=name, alpha=alpha, free_energy=-train_loss, train_loss=train_loss,
                           errors={"free_energy": error, "train_loss": error})


def test_the_lower_training_loss_is_undecided_where_the_gap_lies_within_the_errors():
    """The rule of `solve`'s global branch: a branch is named only when the Φ gap exceeds the sum of the two Φ errors. The quick
    report's α = 1.25 (ε_t 0.0027198368 ± 6.1e-6 positional, 0.0027212975 ± 7.6e-7 semantic) is undecided."""
    from types import SimpleNamespace

    close = SimpleNamespace(missing=(), branches=(_branch("positional", 1.25, 0.0027198368, 6.1e-6),
                                      _branch("semantic", 1.25, 0.0027212975, 7.6e-7)))
    verdict, line = report.lower_training_loss(close)
    assert verdict == "undecided"
    assert line.startswith("α = 1.25: undecided (the gap 1.5e-06 lies within the errors 6.9e-06")
    far = SimpleNamespace(missing=(), branches=(_branch("positional", 1.75, 0.0038952837, 6.2e-6),
                                    _branch("semantic", 1.75, 0.0033405689, 1.7e-6)))
    assert report.lower_training_loss(far)[0] == "semantic"
    low = SimpleNamespace(missing=(), branches=(_branch("positional", 0.75, 0.0016441430, 4.3e-7),
                                    _branch("semantic", 0.75, 0.0018518012, 1.4e-6)))
    assert report.lower_training_loss(low)[0] == "positional"
    # one branch found: named where the other is shown absent, undecided where it was not solved (as `solve` does)
    one = SimpleNamespace(branches=(_branch("semantic", 3.0, 0.004, 1e-6),),
                          missing=(SimpleNamespace(branch="positional", status=Status.NOT_FOUND),))
    assert report.lower_training_loss(one)[0] == "semantic"
    unsolved = SimpleNamespace(branches=one.branches, missing=(SimpleNamespace(branch="positional",
                                                                               status=Status.FAILED),))
    assert report.lower_training_loss(unsolved) == ("undecided", "α = 3: undecided (positional not solved)")


def _found(name, alpha, status, message, **errors):
    """A found branch with the values of ω = 0.3, α = 0.75 and the given errors (the others 1e-3 of the value)."""
    from types import SimpleNamespace

    values = {"q": 0.0539, "m": 0.0, "theta": -0.0391, "V": 28.6, "test_error": 0.00367, "train_loss": 0.00185,
              "free_energy": -0.00185}
    within = {field: 1e-3 * abs(value) for field, value in values.items()}
    return SimpleNamespace(branch=name, alpha=alpha, status=status, message=message, rule="count-split 16",
                           errors={**within, **errors}, **values)


def test_a_limited_branch_names_the_fields_above_the_tolerance_and_carries_the_solvers_message():
    """Audit r12 F2: a limited branch's row says which fields missed the tolerance (error > tol·|value|; a field
    without a finite error too), in branches.csv (above_tolerance, and the solver's message on every row) and in the
    report's table (its status cell, a numbered note with the message below), and the report says what limited
    means. The values are those of the full report's α = 0.75 semantic branch (θ 0.0391 ± 0.00137, V ± 0.13 against
    the tolerance 3e-3 of the value)."""
    from types import SimpleNamespace

    message = ("top rung count-split 16 (checked on count-split 12, count-split 14): theta error 0.00137 above the "
               "tolerance 0.000117")
    limited = _found("semantic", 0.75, Status.LIMITED, message, theta=0.00137, V=0.13, train_loss=math.nan)
    converged = _found("positional", 0.75, Status.CONVERGED, "count-split 14 checked on count-split 10, count-split "
                       "12: every requested tolerance met")
    assert report.above_tolerance(limited, 3e-3) == ["theta", "V", "train_loss"]  # no bound: above
    assert report.above_tolerance(converged, 3e-3) == []
    rows = report.branch_rows([SimpleNamespace(tol=3e-3, branches=(converged, limited), missing=())])
    assert [(r["above_tolerance"], r["message"]) for r in rows] == [("", converged.message), ("theta V train_loss",
                                                                                              message)]
    lines = report.branch_table(rows, 3e-3)
    table = [line for line in lines if line.startswith("| 0.75")]
    assert table[0].endswith("| converged |")
    assert table[1].endswith("| limited (abs(θ), V, ε_t) [1] |") and table[1].count("|") == 8  # seven cells
    text = "\n".join(lines)
    assert "limited where the solve ended with some field's error above it" in text
    assert "(0.003 of the field's value)" in text
    assert f"* [1] α = 0.75, semantic: {message}" in lines
    # nothing limited: the status is still explained, without notes
    lines = report.branch_table(rows[:1], 3e-3)
    assert "limited where the solve ended" in "\n".join(lines) and not any(line.startswith("* [") for line in lines)


def test_a_missing_branch_has_its_alpha_in_branches_csv_and_in_the_table(tmp_path):
    """Audit r12 F3: a missing branch's row carries its α (branches.csv and the report's table, where it stands with
    the other branch at that α), also at an α where neither branch is found (a SolveResult does not hold its α)."""
    from dataclasses import replace
    from types import SimpleNamespace

    from attnphase.models.positional_semantic.results import MissingBranch
    from attnphase.report import write_csv

    absent = MissingBranch("semantic", Status.NOT_FOUND, "semantic branch does not reach α")
    results = [SimpleNamespace(tol=3e-3, branches=(_found("positional", 0.5, Status.CONVERGED, "met"),),
                               missing=(absent,)),
               SimpleNamespace(tol=3e-3, branches=(), missing=(absent, replace(absent, branch="positional"))),
               SimpleNamespace(tol=3e-3, branches=(_found("semantic", 1.0, Status.CONVERGED, "met"),), missing=())]
    rows = report.branch_rows(results, [0.5, 0.75, 1.0])
    assert [(r["alpha"], r["branch"]) for r in rows] == [(0.5, "positional"), (0.5, "semantic"), (0.75, "semantic"),
                                                         (0.75, "positional"), (1.0, "semantic")]
    write_csv(tmp_path / "branches.csv", rows)
    lines = (tmp_path / "branches.csv").read_text().splitlines()
    assert lines[2].startswith("0.5,semantic,not_found,") and lines[3].startswith("0.75,semantic,not_found,")
    table = [line for line in report.branch_table(rows, 3e-3) if line.startswith("| 0") or line.startswith("| 1")]
    assert [line.split(" | ")[:2] for line in table] == [["| 0.50", "positional"], ["| 0.50", "semantic"],
                                                          ["| 0.75", "semantic"], ["| 0.75", "positional"],
                                                          ["| 1.00", "semantic"]]
    assert table[1].startswith("| 0.50 | semantic | missing: semantic branch does not reach α |")
    # a message with "|" in it ("parameterised by |m|") stays in its cell: every row has the header's seven cells
    with_bars = [{**row, "message": "lost at 0.9 (continuous_end); parameterised by |m| (0.046, 0.023)"}
                 if "q" not in row else row for row in rows]
    header, *body = [line for line in report.branch_table(with_bars, 3e-3) if line.startswith("| ")]
    cells = lambda line: len(re.split(r"(?<!\\)\|", line)) - 2  # noqa: E731 - cells between unescaped bars
    assert cells(header) == 7 and all(cells(line) == 7 for line in body), body
    # without the α list: a found branch's α where there is one
    assert [r["alpha"] for r in report.branch_rows(results[:1])] == [0.5, 0.5]


def _solved(alpha):
    """A solve result at α to THEORY_TOL with both branches (values that vary with α, errors 1e-3 of them)."""
    from types import SimpleNamespace

    from attnphase.reproduce.positional_semantic_gd import THEORY_TOL

    def branch(name, m, theta, q, test_error, train_loss):
        values = {"q": q, "m": m, "theta": theta, "V": 10.0, "test_error": test_error, "train_loss": train_loss,
                  "free_energy": -train_loss}
        return SimpleNamespace(branch=name, alpha=alpha, status=Status.CONVERGED, message="met", rule="split-line 12",
                               errors={k: 1e-3 * abs(v) for k, v in values.items()}, **values)

    return SimpleNamespace(tol=THEORY_TOL, missing=(), branches=(
        branch("positional", 0.25 + 0.001 * alpha, 0.0, 0.05 + 0.001 * alpha, 0.0034, 0.002 * alpha),
        branch("semantic", 0.0, 0.1 + 0.01 * alpha, 0.08 + 0.01 * alpha, 0.002, 0.0021 * alpha)))


def _fake_run(alpha, d, init, trials, steps, test_samples, seed, device):
    """A run whose trials sit next to the branch of their init (the random init: half on each)."""
    rng = np.random.default_rng(round(100 * alpha) + d)
    landed = np.array(["positional" if init == "positional" or (init == "random" and k % 2) else "semantic"
                       for k in range(trials)])
    theory = {b.branch: b for b in _solved(alpha).branches}
    values = {key: np.array([getattr(theory[b], key) for b in landed]) * (1 + 0.01 * rng.standard_normal(trials))
              for key in ("m", "theta", "q", "test_error", "train_loss")}
    return {**values, "test_error_mc_sem": np.full(trials, 1e-6), "d": d, "steps": steps, "status": "converged",
            "message": "settled"}


def test_the_gd_validation_quotes_the_branches_it_is_given_and_solves_only_the_alpha_they_lack(tmp_path, monkeypatch):
    """Audit r12 F5: the full report hands its branches (ω = 0.3, THEORY_TOL: `solve_along` at α = 0.5 … 3) to the GD
    validation, which holds the runs against them at its α (0.5 … 2.5) instead of solving the theory again (a second
    `solve_along` over 0.5 … 2.5, kept in its own file, ~4 minutes, values 1e-8 off the table's): protocol.csv quotes
    the branches' values and errors, nothing is solved, no theory_reference.json is written. An α the given branches
    lack is solved (and kept) alone; results to another tolerance are refused. About 2 s on fake runs."""
    from attnphase.errors import ParameterError
    from attnphase.reproduce import positional_semantic_gd as gd

    monkeypatch.setattr(gd.api, "solve_along", _refuse_solve)
    theory = {alpha: _solved(alpha) for alpha in report.BRANCH_ALPHAS}
    validation = gd.gd_validation(tmp_path, "cpu", runner=_fake_run, theory=theory)
    assert not (tmp_path / "theory_reference.json").exists()
    rows = list(csv.DictReader((tmp_path / "protocol.csv").open()))
    assert {float(r["alpha"]) for r in rows} == set(gd.PROTOCOL_ALPHAS) and len(rows) == 4 * 2 * 4
    for r in rows:
        branch = next(b for b in theory[float(r["alpha"])].branches if b.branch == r["landed"])
        name = {"abs_m": "m", "abs_theta": "theta"}.get(r["quantity"], r["quantity"])
        assert float(r["theory"]) == abs(getattr(branch, name)) and float(r["theory_error"]) == branch.errors[name]
    assert any("Theory: the branches of the table above, api.solve" in line for line in validation["lines"])

    asked = []

    def solve_along(omega, alphas, **kwargs):
        asked.append(list(alphas))
        return [_solved(alpha) for alpha in alphas]

    monkeypatch.setattr(gd.api, "solve_along", solve_along)
    without = {alpha: result for alpha, result in theory.items() if alpha != 2.5}
    gd.gd_validation(tmp_path, "cpu", runner=_fake_run, theory=without)
    assert asked == [[2.5]] and (tmp_path / "theory_reference.json").exists()
    coarse = _solved(1.0)
    coarse.tol = 0.05
    with pytest.raises(ParameterError, match="THEORY_TOL"):
        gd.gd_validation(tmp_path, "cpu", runner=_fake_run, theory={1.0: coarse})


def test_the_full_report_hands_its_branches_to_the_gd_validation(tmp_path, monkeypatch):
    """`run` in full mode gives `gd_validation` the branch results of its table, by α (stopped there: the rest is
    hours of GD)."""
    handed = {}

    class Stop(Exception):
        pass

    def gd_validation(out_dir, device, runner, theory=None):
        handed.update(theory)
        raise Stop

    monkeypatch.setattr(report, "branch_results", lambda alphas, tol, **kwargs: [_solved(a) for a in alphas])
    monkeypatch.setattr(report, "gd_validation", gd_validation)
    with pytest.raises(Stop):
        report.run(tmp_path, quick=False, device="cpu")
    assert list(handed) == list(report.BRANCH_ALPHAS)
    assert all(handed[a].branches[0].alpha == a for a in handed)


def _refuse_solve(*args, **kwargs):
    raise AssertionError("the theory was solved again")


def test_the_report_defines_every_symbol_its_tables_and_figures_use():
    """The report is read cold (audit u16: q, m, θ, V, Φ, ω, α undefined): its symbols paragraph defines each symbol
    that the branch and GD tables' headers and the phase diagram use."""
    from attnphase.reproduce.positional_semantic import SYMBOLS, gd_table

    used = set(re.findall(r"α_c|α_l|ε_[gt]|[αωqmθVΦ]", " ".join(gd_table([]) + report.branch_table([], 0.05))))
    assert {"α", "m", "θ", "ε_g", "ε_t", "Φ"} <= used
    for symbol in used | {"ω", "q", "V", "α_c", "α_l"}:
        assert re.search(rf"(^|[ ;(,]){re.escape(symbol)}( |₁| =)", SYMBOLS), symbol


def test_the_phase_diagram_caption_gives_the_largest_error_of_each_threshold_as_the_table_prints_it():
    rows = [{"omega": 0.0, "alpha_c": 0.6149, "alpha_c_error": 0.00041, "alpha_l": 1.1, "alpha_l_error": math.inf},
            {"omega": 0.1, "alpha_c": 0.7507, "alpha_c_error": 0.00213, "alpha_l": 1.2, "alpha_l_error": 0.00052},
            {"omega": 0.2, "alpha_c": math.nan, "alpha_c_error": 0.5, "alpha_l": 1.3, "alpha_l_error": 0.0003}]
    caption = report._phase_diagram_caption(rows)
    # the missing α_c's error and the unbounded α_l error are not the largest; each rounded up as the table does
    assert "(the largest: α_c ± 0.0022, α_l ± 0.0006, as in the table)" in caption
    assert report._threshold_error(0.7507, 0.00213) == "0.0022"
    assert "largest" not in report._phase_diagram_caption([{**rows[2], "alpha_l_error": math.inf}])
