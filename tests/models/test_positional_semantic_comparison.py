"""`simulate positional-semantic` held against the theory (models.positional_semantic.comparison): the branch a run is
compared with, each quantity's mean and standard error against `solve`'s value and error, z and the verdict."""

from __future__ import annotations

import dataclasses
import io
import json
import math

import numpy as np
from scipy import stats
import pytest
from click.testing import CliRunner

from attnphase.api import positional_semantic as ps
from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.results import Status

ALPHA = 1.25
ERRORS = ("q", "m", "theta", "V", "test_error", "train_loss", "free_energy")


def branch(name, m, theta, q, test_error, train_loss, error=1e-5):
    """A found branch at ALPHA with every field's error `error` (relative to nothing: absolute, as solve's)."""
    return ps.BranchSolution(name, ALPHA, q, m, theta, 18.0, -train_loss, train_loss, test_error, True, 0.9,
                             Status.CONVERGED, "every requested tolerance met", 100, 1e-12, 12, np.zeros(5),
                             math.nan, {f: error for f in ERRORS}, "split-line 12", "split-line 8, split-line 10")


POSITIONAL = branch("positional", 0.2525, 0.0, 0.0510, 0.00340, 0.00290, 1e-4)
SEMANTIC = branch("semantic", 0.0, 0.1180, 0.0816, 0.00235, 0.00272, 2e-5)


def solved(*branches, missing=()):
    return ps.SolveResult(tuple(branches), None, 0.002, 3e-3, Status.CONVERGED, "", tuple(missing))


def run(init="semantic", status=Status.CONVERGED, trials=4, **values):
    """A constructed `simulate` result at d = 50, ω = 0.3, α = ALPHA: four trials near the semantic branch whose ε_g
    lies far above it (a rejection), unless `values` says otherwise."""
    arrays = {"m": [0.01, 0.02, 0.015, 0.005], "theta": [0.12, 0.11, 0.125, 0.115], "q": [0.08, 0.085, 0.07, 0.09],
              "test_error": [0.0030, 0.0031, 0.0029, 0.0030], "train_loss": [0.0027, 0.0028, 0.0026, 0.0027]}
    arrays = {k: np.asarray(values.get(k, v)[:trials], float) for k, v in arrays.items()}
    return ps.GDResult(**arrays, init=init, optimizer="adam" if init == "random" else "gd", d=50, n=62, steps=5000,
                       lr=0.15, device="cpu", test_samples=2000, status=status, message="5000 gd steps",
                       test_error_sem=np.full(trials, 1e-4), alpha=ALPHA, params=ps.Parameters.validated(omega=0.3))


def test_each_quantity_is_its_trials_mean_and_standard_error_against_the_branch_with_z_and_the_band():
    """Semantic init: |θ|, q, ε_g and ε_t of the trials against the semantic branch, by hand: sem = spread (ddof 1) /
    √trials, z = (mean − theory)/√(sem² + theory error²), agrees where |z| is within the 99.73% Student-t band of 4
    trials (3 degrees of freedom: the error comes from the trials). ε_g lies 14 standard errors above: rejected, and
    said so in the message with the numbers, the band, its reason and d; the JSON has x_error = x_std/√trials."""
    result = ps.compare_with_theory(run(), theory=solved(POSITIONAL, SEMANTIC))
    by_name = {c.name: c for c in result.comparisons}
    assert list(by_name) == ["abs_theta", "q", "test_error", "train_loss"]
    values = {"abs_theta": (result.theta, 0.1180), "q": (result.q, 0.0816), "test_error": (result.test_error, 0.00235),
              "train_loss": (result.train_loss, 0.00272)}
    for name, (samples, theory) in values.items():
        c = by_name[name]
        sem = np.std(samples, ddof=1) / 2
        z = (np.mean(samples) - theory) / math.hypot(sem, 2e-5)
        assert (c.theory, c.theory_error, c.n) == (theory, 2e-5, 4)
        assert c.n_sigma == pytest.approx(stats.t.ppf(1 - 0.0027 / 2, 3), rel=1e-12)
        assert c.mean == pytest.approx(np.mean(samples), rel=1e-14) and c.sem == pytest.approx(sem, rel=1e-12)
        assert c.z == pytest.approx(z, rel=1e-12) and c.agrees is bool(abs(z) <= c.n_sigma)
    assert by_name["test_error"].z > 10 and [c.agrees for c in result.comparisons] == [True, True, False, True]
    assert result.theory_agrees is False and result.theory is SEMANTIC and result.landed == ("semantic",) * 4
    assert "this run at d = 50, so a finite-d offset of the means is expected" in result.message
    assert result.message.endswith(
        "its semantic branch (the semantic init's branch): with the band ±9.22, the 99.73% Student-t band of the "
        "trials' mean (its error from the trials themselves), the theory is rejected by test_error: "
        "0.003 ± 4.1e-05 against 0.00235 ± 2e-05 (z = 14.3); it agrees with abs_theta (z = -0.155), q (z = -0.082), "
        "train_loss (z = -0.44)"), result.message

    data = json.loads(json.dumps(result.as_dict(), allow_nan=False))
    assert data["theta_error"] == pytest.approx(data["theta_std"] / 2, rel=1e-12)
    assert data["test_error_error"] == pytest.approx(np.std(result.test_error, ddof=1) / 2, rel=1e-12)
    assert data["theory"] == {"branch": "semantic", "choice": "the semantic init's branch", "tol": 3e-3,
                              **{k: v for k, v in SEMANTIC.as_dict().items() if k != "branch"}}
    assert data["theory"]["theta_error"] == 2e-5 and data["theory_agrees"] is False
    assert [c["agrees"] for c in data["comparisons"]] == [True, True, False, True]
    assert data["landed"] == ["semantic"] * 4


def test_a_bar_and_a_theory_error_of_zero_give_no_z_and_agree_only_on_the_value_itself():
    """validate.compare's rule where √(sem² + theory error²) = 0: no z, and agreement only where the mean is the
    theory's value; the message then names the quantity without a z, and a theory error of 0 is not written."""
    exact = branch("semantic", 0.0, 0.1180, 0.0816, 0.00235, 0.00272, 0.0)
    result = ps.compare_with_theory(run(q=[0.0816] * 4), theory=solved(POSITIONAL, exact))
    q = result.comparisons[1]
    assert (q.name, q.z, q.agrees) == ("q", None, True)
    assert result.message.endswith(
        ": with the band ±9.22, the 99.73% Student-t band of the trials' mean (its error from the trials themselves), "
        "the theory is rejected by test_error: 0.003 ± 4.1e-05 against 0.00235 (z = 15.9); it "
        "agrees with abs_theta (z = -0.155), q, train_loss (z = -0.49)"), result.message


def test_the_positional_init_is_held_against_the_positional_branch_and_trials_landed_elsewhere_are_counted():
    """Positional init: |m| (not |θ|) is compared, with the positional branch's errors; a trial that sits at the
    semantic branch is counted in the message, and the comparison still takes every trial (the init's branch)."""
    result = ps.compare_with_theory(run("positional", m=[0.25, 0.26, 0.245, 0.02], theta=[0.01, 0.02, 0.01, 0.12],
                                        q=[0.051, 0.052, 0.05, 0.08]), theory=solved(POSITIONAL, SEMANTIC))
    assert [c.name for c in result.comparisons] == ["abs_m", "q", "test_error", "train_loss"]
    assert result.comparisons[0].theory == 0.2525 and result.comparisons[0].theory_error == 1e-4
    assert result.comparisons[0].n == 4 and result.comparisons[0].mean == pytest.approx(0.19375, rel=1e-14)
    assert result.landed == ("positional",) * 3 + ("semantic",)
    assert "the positional init's branch; of the 4 trials 1 on the semantic branch instead" in result.message


def test_the_random_init_is_held_against_the_branch_most_trials_landed_on_and_over_those_trials():
    """Random init: three trials at the semantic branch, one at the positional: compared with the semantic branch over
    those three (n = 3), and the message says how the branch was chosen; two and two: no branch, no verdict."""
    split = ps.compare_with_theory(run("random", m=[0.01, 0.25, 0.015, 0.005], theta=[0.12, 0.01, 0.125, 0.115]),
                                   theory=solved(POSITIONAL, SEMANTIC))
    assert split.theory is SEMANTIC and {c.n for c in split.comparisons} == {3}
    assert split.comparisons[0].mean == pytest.approx(np.mean([0.12, 0.125, 0.115]), rel=1e-14)
    assert "the branch most trials landed on" in split.message and "1 on the positional branch, 3 on the semantic" \
        in split.message
    even = ps.compare_with_theory(run("random", m=[0.01, 0.25, 0.26, 0.005], theta=[0.12, 0.01, 0.01, 0.115]),
                                  theory=solved(POSITIONAL, SEMANTIC))
    assert even.theory is None and even.comparisons == () and even.theory_agrees is None
    assert "no branch to compare with" in even.message
    assert even.as_dict()["theory"]["branch"] is None and even.as_dict()["comparisons"] == []


def test_a_branch_that_does_not_exist_at_alpha_is_said_to_be_missing_without_a_comparison():
    gone = ps.MissingBranch("semantic", Status.NOT_FOUND, "the semantic branch ends at α = 0.7")
    result = ps.compare_with_theory(run(), theory=solved(POSITIONAL, missing=(gone,)))
    assert result.theory is gone and result.comparisons == () and result.theory_agrees is None
    assert "its semantic branch (the semantic init's branch; of the 4 trials 4 on neither branch instead, by |m| and " \
           "|θ| against both branches) does not exist there: the semantic branch ends at α = 0.7" in result.message
    assert result.as_dict()["theory"] == {"branch": "semantic", "choice": result.theory_choice, "tol": 3e-3,
                                          "status": "not_found", "message": "the semantic branch ends at α = 0.7"}


@pytest.mark.parametrize("status, trials, verdict", [
    (Status.LIMITED, 4, "no verdict on abs_theta (z = -0.155), q (z = -0.082), test_error (z = 14.3), train_loss "
                        "(z = -0.44) (the run has not settled)"),
    (Status.CONVERGED, 2, "no verdict on abs_theta (z = -0.6), q (z = 0.36), test_error (z = 13), train_loss "
                          "(z = 0.557) (two trials: one degree of freedom)"),
    (Status.CONVERGED, 1, "no verdict on abs_theta, q, test_error, train_loss (one trial: no spread)"),
])
def test_no_verdict_where_the_run_cannot_give_one_but_the_numbers_are_kept(status, trials, verdict):
    """A run that has not settled, or two trials (their spread, one degree of freedom, bounds nothing), or one: agrees
    None, theory_agrees None, the reason once in the message for the four quantities; z where a spread exists (ε_g's
    is large, and shown)."""
    result = ps.compare_with_theory(run(status=status, trials=trials), theory=solved(POSITIONAL, SEMANTIC))
    assert [c.agrees for c in result.comparisons] == [None] * 4 and result.theory_agrees is None
    assert result.message.endswith(f"its semantic branch (the semantic init's branch): {verdict}"), result.message
    test_error = result.comparisons[2]
    if trials > 1:
        assert test_error.z > 3
    else:
        assert test_error.z is None and math.isnan(test_error.sem) and result.as_dict()["theta_error"] is None


def test_a_diverged_run_is_not_solved_for_and_a_theory_elsewhere_is_refused(monkeypatch):
    from attnphase.models.positional_semantic import point

    monkeypatch.setattr(point, "solve", lambda *args, **kwargs: pytest.fail("a diverged run needs no solve"))
    diverged = ps.compare_with_theory(run(status=Status.DIVERGED, theta=[np.nan] * 4))
    assert diverged.comparisons == () and "no comparison with the theory: the run diverged" in diverged.message
    assert json.loads(json.dumps(diverged.as_dict(), allow_nan=False))["theory"]["branch"] is None
    elsewhere = dataclasses.replace(SEMANTIC, alpha=1.5)
    with pytest.raises(ParameterError, match="theory"):
        ps.compare_with_theory(run(), theory=solved(POSITIONAL, elsewhere))
    with pytest.raises(ParameterError, match="theory"):
        ps.compare_with_theory(run(), theory=solved(SEMANTIC))  # the positional branch neither found nor missing


CHEAP = ["simulate", "positional-semantic", "--omega", "0.3", "--alpha", str(ALPHA), "--d", "50", "--trials", "4",
         "--test-samples", "2000", "--device", "cpu", "--rng", "cpu"]


def check_against_solve(payload: dict, solve_payload: dict) -> None:
    """The simulate JSON's theory is solve's semantic branch, field for field, and each comparison is that branch's
    value and error against the run's mean and standard error, with z and the verdict of the ±3 band."""
    (semantic,) = [b for b in solve_payload["branches"] if b["branch"] == "semantic"]
    assert {k: v for k, v in payload["theory"].items() if k not in ("choice", "tol")} == semantic
    assert payload["theory"]["choice"] == "the semantic init's branch" and payload["status"] == "converged"
    for c in payload["comparisons"]:
        field = {"abs_theta": "theta"}.get(c["name"], c["name"])
        assert (c["theory"], c["theory_error"]) == (abs(semantic[field]), semantic[field + "_error"])
        assert (c["mean"], c["sem"]) == (payload[field + "_mean"], payload[field + "_error"])
        z = (c["mean"] - c["theory"]) / math.hypot(c["sem"], c["theory_error"])
        assert c["z"] == pytest.approx(z, rel=1e-12) and c["agrees"] is (abs(z) <= 3)
    verdicts = [c["agrees"] for c in payload["comparisons"]]
    assert len(verdicts) == 4 and payload["theory_agrees"] is (False if False in verdicts else True)


def test_the_cheap_cli_run_prints_the_theory_and_the_verdict(monkeypatch):
    """d = 50, four trials, semantic init at ω = 0.3, α = 1.25 (GD settles there in 5000 steps, about 3 s), with the
    solve replaced by a constructed one (the slow test below solves): the JSON carries the branch and the
    comparisons as `check_against_solve` asks, and the text output (the same payload as the command without --json
    renders it) shows them with the verdict and d."""
    from attnphase.cli.display import render
    from attnphase.models.positional_semantic import point

    theory = solved(POSITIONAL, SEMANTIC)
    monkeypatch.setattr(point, "solve", lambda *args, **kwargs: theory)
    out = CliRunner().invoke(main, [*CHEAP, "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    check_against_solve(payload, theory.as_dict())
    buffer = io.StringIO()
    render(payload, file=buffer)
    text = " ".join(buffer.getvalue().split())
    for shown in ("theta_error", "theory_agrees", "comparisons (4 rows)", "abs_theta", "n_sigma", "choice",
                  "the semantic init's branch", "d = 50"):
        assert shown in text, shown


@pytest.mark.slow
def test_the_cheap_cli_run_is_held_against_solve_at_the_same_point():
    """The same cheap run with the real solve (about a minute on two cores: two solves, each 10-40 s): its theory and
    comparisons are those of `attnphase solve positional-semantic` at the same point; at d = 50 the trials land on
    the semantic branch, and every quantity agrees within the band (z = −0.86, −1.24, 2.11, 1.04 for |θ|, q, ε_g,
    ε_t: four trials do not resolve the finite-d offset here)."""
    out = CliRunner().invoke(main, [*CHEAP, "--json"], catch_exceptions=False)
    solve = CliRunner().invoke(main, ["solve", "positional-semantic", "--omega", "0.3", "--alpha", str(ALPHA),
                                      "--json"], catch_exceptions=False)
    payload = json.loads(out.stdout)
    check_against_solve(payload, json.loads(solve.stdout))
    assert payload["landed"] == ["semantic"] * 4 and payload["theory_agrees"] is True
