"""The signal-recovery report resumes an interrupted sweep from its checkpoint."""

from __future__ import annotations

import copy
import functools
import math
import re

import numpy as np
import pytest

from attnphase.api import signal_recovery as api
from attnphase.reproduce import signal_recovery as report
from attnphase.reproduce import signal_recovery_sweep as sweep_report
from attnphase.resume import Checkpoint
from model_pages import PAGES


@functools.cache
def _computed_point(*args):
    return api.sweep_point(*args)


def sweep_point_once(*args):
    """api.sweep_point(*args), computed once in this module (a copy of the point each time): the point at θ = 1
    (d = 64, L = 100) is read by two tests."""
    return copy.deepcopy(_computed_point(*args))


def _fake_point(calls):
    """A stand-in for api.sweep_point whose values identify the configuration (no simulation)."""

    def point(d, L, R, theta, theta_scaling, sigma, beta, sign_model, trials, steps, seed, device):
        calls.append((d, L, theta, theta_scaling, sign_model))
        keys = ("theta_d", "steps", "t_final", "budget_limited", "alignment_mean", "ode_alignment_mean",
                "ode_limit_alignment_mean", "positive_fraction", "ode_limit_positive_fraction",
                "nuisance_mass_mean", "ode_nuisance_mass_mean", "ode_limit_nuisance_mass_mean",
                "minus_xi_stable", "nuisance_mass_at_xi")
        value = d + L / 1e5 + theta / 10 + (sign_model == "B") / 100
        return {k: value for k in keys}

    return point


def test_interrupted_sweep_resumes_without_recomputing(tmp_path, monkeypatch):
    """Kill the sweep after 5 points, rerun: the 5 finished points come from checkpoint.json, only the
    rest is computed, and the rows equal those of an uninterrupted sweep."""
    configs = report.sweep_configs(quick=True)
    calls = []
    compute = _fake_point(calls)

    def interrupted(*args):
        if len(calls) == 5:
            raise KeyboardInterrupt
        return compute(*args)

    monkeypatch.setattr(api, "sweep_point", interrupted)
    with pytest.raises(KeyboardInterrupt):
        report.run_sweep(Checkpoint(tmp_path / "checkpoint.json"), True, "cpu")
    assert len(Checkpoint(tmp_path / "checkpoint.json").entries) == 5

    monkeypatch.setattr(api, "sweep_point", compute)
    resumed = report.run_sweep(Checkpoint(tmp_path / "checkpoint.json"), True, "cpu")
    assert len(calls) == len(configs)  # 5 before the interruption, the rest after it; none twice
    assert len(set(calls)) == len(configs)

    fresh = report.run_sweep(Checkpoint(tmp_path / "fresh.json"), True, "cpu")
    assert resumed == fresh


# -- what the report says of points and curves that are not converged ---------------------------------------------


def test_a_sweep_point_says_why_it_is_limited():
    """sweep_point carries the run's and the plan's reasons (`message`): a point with no prediction says why (the
    exact finite-L drift at L = 100, θ_d = 8 is not available), one whose plan falls short says by how much."""
    unpredicted = sweep_point_once(64, 100, 50, 1.0, "sqrt-d", 1.0, 1.0, "A", 8, 400, 0, "cpu")
    assert unpredicted["status"] == "limited" and unpredicted["predicted_alignment"] is None
    assert "no prediction: the exact finite-L drift is not available" in unpredicted["message"], unpredicted
    short = api.sweep_point(16, 64, 8, 1.0, trials=2, max_steps=20)
    assert short["status"] == "limited" and short["predicted_alignment"] is not None
    assert "schedule planned: the retraction-corrected ODE reaches |rho| = " in short["message"]
    assert "< target 0.98 within 20 steps" in short["message"], short["message"]
    # the schedule that ran is stored with the point: t = Σ_{k<steps} η₀/(k + k₀)^γ
    k = np.arange(int(short["steps"]))
    t = float(np.sum(short["eta0"] / (k + short["k0"]) ** short["gamma"]))
    assert short["t_final"] == pytest.approx(t, rel=1e-12)
    # simulate's verdict on the prediction, stored with the point: none without a prediction
    assert unpredicted["prediction_z"] is None and unpredicted["prediction_agrees"] is None
    z = ((short["alignment_mean"] - short["predicted_alignment"])
         / math.hypot(short["alignment_error"], short["predicted_alignment_error"]))
    assert short["prediction_z"] == pytest.approx(z, rel=1e-12)
    assert short["prediction_agrees"] == float(abs(z) <= 3)


def test_the_sweep_table_shows_each_points_status_and_the_reason_of_a_limited_one(tmp_path):
    """The "Every point" table has a status column; each point not converged, or without a verdict on its prediction
    (z n/a: a converged one had no note, audit r9 F-A), has a note with its own message; the caption counts the
    points the left panel cannot draw (no prediction, n/a)."""
    import re

    from attnphase.report import Report

    points = [(64, 100, 50, 1.0, "sqrt-d", "A"), (64, 100, 50, 0.25, "sqrt-d", "A")]
    rows = []
    for d, L, R, theta, scaling, model in points:
        point = sweep_point_once(d, L, R, theta, scaling, 1.0, 1.0, model, 8, 400, 0, "cpu")
        checkpoint = Checkpoint(tmp_path / "checkpoint.json")  # read back as run_sweep reads it (None -> NaN)
        checkpoint.put(f"{theta}", point)
        rows.append({"theta_scaling": scaling, "sign_model": model, "d": d, "L": L, "R": R,
                     "nuisance_ratio": (L - R) / R, "theta": theta, **Checkpoint(checkpoint.path).get(f"{theta}")})
    out = Report(tmp_path / "report", "sweep")
    sweep_report.sweep_section(out, rows)
    text = out.write().read_text()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|") and "| status |" in line)
    cells = [c.strip() for c in lines[start].strip("|").split("|")]
    assert cells[-2:] == ["status", "note"], cells
    body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[start + 2:start + 2 + len(rows)]]
    statuses = [row[cells.index("status")] for row in body]
    # z where a prediction was made, the point's own; n/a where none was
    zs = [row[cells.index("z (SGA − ODE)")] for row in body]
    for z, r in zip(zs, rows):
        assert (z == "n/a") if r["prediction_z"] != r["prediction_z"] else float(z) == pytest.approx(r["prediction_z"],
                                                                                                      rel=1e-2)
    assert statuses == [r["status"] for r in rows] and "limited" in statuses
    noted = [r for r in rows if r["status"] != "converged" or r["prediction_z"] != r["prediction_z"]]
    for number, r in enumerate(noted, 1):
        assert f"\n{number}. {r['message']}" in text
    assert [row[-1] for row in body] == [str(noted.index(r) + 1) if r in noted else "" for r in rows]
    unpredicted = sum(1 for r in rows if r["predicted_alignment"] != r["predicted_alignment"])
    assert unpredicted == 1
    assert re.search(rf"{unpredicted} of {len(rows)} points have no retraction-corrected prediction", text)


def test_the_landscape_states_every_value_the_finite_L_reduction_could_not_estimate(tmp_path):
    """Under θ_d = θ√d at the headline size the exact reduction with 64 samples is limited (J′ and the drift NaN at
    some alignments, empty in landscape.csv): the report lists each such curve with its status, the missing
    alignments read back from the CSV, and its message; landscape_gap.csv carries the status."""
    import csv

    from attnphase.report import Report

    out = Report(tmp_path, "landscape")
    report._landscape(out, quick=True)
    text = out.write().read_text()
    with (tmp_path / "landscape.csv").open() as handle:
        data = list(csv.DictReader(handle))
    missing: dict[tuple, dict] = {}
    for row in data:
        for column, label in (("J", "J"), ("dJ", "J′"), ("drift", "drift")):
            if row[column] == "":
                key = (row["theta_scaling"], row["sign_model"], row["method"])
                missing.setdefault(key, {}).setdefault(label, []).append(f"{float(row['rho']):g}")
    assert missing, "the quick landscape has no missing value any more: this test needs another case"
    for (scaling, model, method), where in missing.items():
        listed = "; ".join(f"{label} at ρ = {', '.join(rhos)}" for label, rhos in where.items())
        assert f"* θ_d {scaling}, model {model}, {method}: status limited ({listed}): " in text, (listed, text)
    with (tmp_path / "landscape_gap.csv").open() as handle:
        gaps = {(r["theta_scaling"], r["sign_model"]): r["finite_L_status"] for r in csv.DictReader(handle)}
    for (scaling, model, method) in missing:
        if method == "finite-L":
            assert gaps[(scaling, model)] == "limited"


def test_the_recovery_summary_counts_points_where_a_trial_ended_below_zero_and_says_so():
    """The summary's column counted the points where some trial ended at ρ < 0 and was headed "some trial at −ξ": at
    θ = 0.25 (direct, L = 100 and 1050) three of eight trials ended at |ρ| = 0.13 on the negative side, nowhere near −ξ
    (audit sr6 F-f). A point records only the share of its trials at ρ > 0, so the heading now says what is counted."""
    def point(positive_fraction):
        return {"theta_scaling": "direct", "sign_model": "A", "alignment_mean": 0.13, "budget_limited": 1.0,
                "ode_limit_alignment_mean": 1.0, "positive_fraction": positive_fraction, "nuisance_mass_mean": 0.94,
                "ode_limit_nuisance_mass_mean": 0.94}

    (row,) = sweep_report.recovery_summary([point(5 / 8), point(1.0), point(0.0)])
    assert not any("−ξ" in heading for heading in row)
    assert row["some trial ended at ρ < 0"] == 2 and row["points"] == 3
    # a point without a z is counted apart, not as one whose prediction agrees (audit r9 F-A)
    judged = [{**point(1.0), "prediction_z": z, "prediction_agrees": agrees}
              for z, agrees in ((0.5, 1.0), (4.0, 0.0), (math.nan, None))]
    (row,) = sweep_report.recovery_summary(judged + [point(1.0)])
    assert (row["prediction disagrees (z beyond ±3)"], row["no verdict (z n/a)"]) == (1, 2)


def _headline_from_kept(tmp_path, **changes):
    """The quick headline written from a kept checkpoint (no SGA runs): its numbers, its Markdown text and its table
    as {quantity: {column: cell}}. `changes` replace entries of the kept numbers."""
    from attnphase.report import Report

    config = report.QUICK_HEADLINE
    params = api.make_parameters(config.d, config.L, config.R, config.theta, config.theta_scaling)
    kept = Checkpoint(tmp_path / "checkpoint.json")
    kept.put(report._checkpoint_key("headline", config),
             {"final_rho": [0.9968, -0.9971, 0.9975], "alignment_mean": 0.9971, "alignment_error": 2e-4,
              "alignment_std": 3e-4, "nuisance_mass_mean": 0.0075, "nuisance_mass_error": 1e-5, "eta0": 0.04,
              "k0": 23.0, "gamma": 1.0, "t_final": 0.21, "predicted_alignment": 0.9974,
              "predicted_alignment_error": 1e-4, "seconds": 1.0,
              "nuisance_mass_theory_at_xi": float(api.curve(params, [1.0]).nuisance_mass[0]), **changes})
    out = Report(tmp_path / "report", "headline")
    numbers = report._headline(out, True, "cpu", Checkpoint(kept.path))
    text = out.write().read_text()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| quantity |"))
    head = [c.strip() for c in lines[start].strip("|").split("|")]
    table = {row[0]: dict(zip(head, row)) for row in
             ([c.strip() for c in line.strip("|").split("|")] for line in lines[start + 2:start + 7])}
    return numbers, text, table


def test_a_headline_without_a_prediction_says_n_a_and_keeps_four_decimals_of_the_mean(tmp_path):
    """A headline whose prediction could not be computed (a None kept) shows "n/a" for the theory, its z and the
    verdict, not a number or a verdict of agreement; the SGA mean keeps 4 decimals even where its error is 0.042, so
    the ρ of different reports line up (audit t17 M52, M58)."""
    numbers, _, table = _headline_from_kept(tmp_path, alignment_error=0.042, predicted_alignment=None,
                                            predicted_alignment_error=None)
    prediction = table["mean final abs ρ"]
    assert prediction["SGA (± standard error)"] == "0.9971 ± 0.0420"
    assert (prediction["theory (± its error)"], prediction["z"], prediction["verdict"]) == ("n/a", "n/a", "n/a")
    assert numbers["prediction_agrees"] is None
    assert table["noise-token attention mass"]["verdict"] != "n/a"  # the other comparison is unaffected


def test_the_headline_compares_the_noise_mass_where_the_trials_ended_and_keeps_the_limit_apart(tmp_path):
    """The SGA's noise-token mass is a mean over trials ending just short of +ξ; the theory beside it is the large-L
    mass at each trial's own final ρ, averaged alike (the mass at ρ = 1, the limit, on its own row: it lay 16 standard
    errors below the runs). A kept headline is read back, so no SGA runs here."""
    config = report.QUICK_HEADLINE
    params = api.make_parameters(config.d, config.L, config.R, config.theta, config.theta_scaling)
    final_rho = [0.9968, -0.9971, 0.9975]
    numbers, text, table = _headline_from_kept(tmp_path, final_rho=final_rho)
    one_by_one = [float(api.curve(params, [rho]).nuisance_mass[0]) for rho in final_rho]
    assert numbers["nuisance_mass_theory_at_trials"] == pytest.approx(sum(one_by_one) / 3, rel=1e-12)
    assert numbers["nuisance_mass_theory_at_xi"] < min(one_by_one)  # the mass falls as |ρ| rises to 1
    assert "large-L, at each trial's final ρ" in text and "at +ξ (the limit)" in text
    # N is defined where the report first uses it (audit u16 L10)
    assert text.index("ρN") == text.index("ρN(ρ), with N(ρ) = E‖G_⊥‖² the tangent noise: the mean squared norm")
    # every theory has a number in its error column, and each comparison a z and the verdict of the sweep's rule
    # (|z| ≤ 3), audit u16 L5: the prediction had neither, the noise mass's error column held text
    prediction = table["mean final abs ρ"]
    # each cell is "value ± error", the error to two significant digits rounded up and the value to its decimals
    assert prediction["SGA (± standard error)"] == "0.99710 ± 0.00020"
    assert prediction["theory (± its error)"] == "0.99740 ± 0.00010"
    z = (0.9971 - 0.9974) / math.hypot(2e-4, 1e-4)  # -1.34
    assert float(prediction["z"]) == pytest.approx(z, abs=0.005) and prediction["verdict"] == "agrees (−3 ≤ z ≤ 3)"
    mass, limit = table["noise-token attention mass"], table["noise-token attention mass at +ξ (the limit)"]
    mass_theory, mass_error = (float(v) for v in mass["theory (± its error)"].split(" ± "))
    # the error of the large-L mass at the trials' ρ: the closed form's bound there, averaged as the mass is; printed
    # to two significant digits, rounded up
    bound = sum(float(api.large_L_accuracy(params, [rho]).nuisance_mass_error[0]) for rho in final_rho) / 3
    assert bound <= mass_error < bound + 10.0 ** (math.floor(math.log10(bound)) - 1)
    assert mass_theory == pytest.approx(sum(one_by_one) / 3, abs=0.5e-6)  # to the printed decimals
    mass_z = (0.0075 - sum(one_by_one) / 3) / math.hypot(1e-5, bound)
    assert float(mass["z"]) == pytest.approx(mass_z, abs=0.005)
    assert mass["verdict"] == ("agrees (−3 ≤ z ≤ 3)" if abs(mass_z) <= 3 else "disagrees (z beyond ±3)")
    # at ρ = 1 the bound covers the exact finite-L mass the model page gives (1024× the draws of a report), and is of
    # the size the page quotes for the closed form (± 0.00010)
    page = " ".join((PAGES / "signal_recovery.md").read_text().split())
    exact, exact_error, quoted = (float(v) for v in re.search(
        r"θ√d: ([\d.]+) ± ([\d.]+) \(large L: [\d.]+ ± ([\d.]+);", page).groups())
    limit_value, limit_error = (float(v) for v in limit["theory (± its error)"].split(" ± "))
    assert abs(limit_value - exact) <= limit_error + 3 * exact_error
    assert limit_error == pytest.approx(quoted, rel=0.1)


def test_the_quick_report_says_what_it_reduces_from_the_sizes_it_runs():
    text = report._quick_mode_text()
    quick, full = report.sweep_configs(True), report.sweep_configs(False)
    assert f"{report.QUICK_HEADLINE.trials} headline trials instead of {report.HEADLINE.trials}" in text
    assert f"d = {', '.join(str(d) for d in sorted({c.d for c in full}))}" in text
    assert f"{quick[0].trials} trials × {quick[0].steps} steps a point" in text and "--full" in text
    # the model page's "How to reproduce" counts the full report's sweep points and the quick report's headline size
    page = " ".join((PAGES / "signal_recovery.md").read_text().split())
    headline_trials, points = re.search(r"--full --out reports # about 1 h: (\d+) headline trials, (\d+) sweep points",
                                        page).groups()
    assert (int(headline_trials), int(points)) == (report.HEADLINE.trials, len(full))


def test_the_sweep_figure_draws_the_agreement_rule_and_tells_the_models_apart():
    """audit u16 L6: the left panel drew ±2 s.e. of the SGA mean while a prediction agrees where |z| ≤ 3 with z in
    the combined error √(s.e.² + error²); the right panel drew no bars though sweep.csv has the mass's standard error;
    models A and B shared markers. Now: left bars ±3·√(s.e.² + error²) (a point agrees where its bar reaches the
    diagonal), open markers without a verdict (±3 s.e. alone), right bars ±3 s.e.; one marker style per scaling and
    model."""
    from matplotlib.colors import to_rgba

    def point(scaling, model, mean, error, predicted, predicted_error, mass, mass_error):
        z = (mean - predicted) / math.hypot(error, predicted_error) if predicted_error == predicted_error else math.nan
        return {"theta_scaling": scaling, "sign_model": model, "alignment_mean": mean, "alignment_error": error,
                "predicted_alignment": predicted, "predicted_alignment_error": predicted_error, "prediction_z": z,
                "nuisance_mass_mean": mass, "nuisance_mass_error": mass_error, "ode_nuisance_mass_mean": mass + 0.01}

    rows = [point("sqrt-d", "A", 0.50, 0.01, 0.55, 0.02, 0.30, 0.004),  # z = -2.24: agrees, its bar reaches 0.55
            point("sqrt-d", "B", 0.60, 0.03, 0.70, math.nan, 0.50, 0.010),  # no error on the prediction
            point("direct", "A", 0.20, 0.01, 0.30, 0.01, 0.90, 0.002),  # z = -7.1: disagrees, bar short of 0.30
            point("direct", "B", 0.10, 0.02, 0.11, 0.02, 0.95, 0.003)]
    fig = sweep_report.sweep_figure(rows)
    left, right = fig.axes
    drawn = {}
    for container in left.containers:
        line, _, (segments,) = container.lines
        for (x, y), ((_, low), (_, high)) in zip(line.get_xydata(), [s for s in segments.get_segments()]):
            drawn[(round(x, 6), round(y, 6))] = (low, high, line.get_marker(), to_rgba(line.get_color()),
                                                 line.get_markerfacecolor())
    for r in rows:
        low, high, marker, colour, face = drawn[(r["predicted_alignment"], r["alignment_mean"])]
        judged = r["prediction_z"] == r["prediction_z"]
        error = math.hypot(r["alignment_error"], r["predicted_alignment_error"]) if judged else r["alignment_error"]
        half = 3 * error
        assert (low, high) == pytest.approx((r["alignment_mean"] - half, r["alignment_mean"] + half), abs=1e-12)
        assert (face == "none") == (not judged)
        # the bar reaches the diagonal exactly where the rule says the prediction agrees
        if judged:
            assert (low <= r["predicted_alignment"] <= high) == (abs(r["prediction_z"]) <= 3)
    styles = {(drawn[(r["predicted_alignment"], r["alignment_mean"])][2],
               drawn[(r["predicted_alignment"], r["alignment_mean"])][3]) for r in rows}
    assert len(styles) == len(rows)  # every scaling and model its own marker and colour
    masses = {}
    for container in right.containers:
        line, _, (segments,) = container.lines
        for (x, y), ((_, low), (_, high)) in zip(line.get_xydata(), segments.get_segments()):
            masses[round(y, 6)] = (low, high)
    for r in rows:
        half = 3 * r["nuisance_mass_error"]
        assert masses[r["nuisance_mass_mean"]] == pytest.approx((r["nuisance_mass_mean"] - half,
                                                                 r["nuisance_mass_mean"] + half), abs=1e-12)
