"""Signal recovery for a notebook or the shell: the schedule a simulation runs, labelled results, figures.

References: the schedule's own formula η_k = η₀/(k + k₀)^γ summed directly; the plain ODE from
`ode_trajectory` (DOP853 in t) for the step-schedule integrator of `predicted_trajectories` (LSODA);
the drawn data of the figures against the results they were drawn from.
"""

from __future__ import annotations

import json
import math
import re

import matplotlib
import numpy as np
import pytest
from click.testing import CliRunner

from attnphase.api import signal_recovery as api
from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.dynamics import FINITE_DRIFT_GRID, FINITE_DRIFT_SAMPLES
from attnphase.models.signal_recovery.simulate import check_sweep_point
from model_pages import PAGES

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def auto_run():
    """A short run under the default schedule (planned for its 120 steps)."""
    return api.simulate(16, 64, 16, 1.2, 6, 120, seed=2, device="cpu", record_every=20)


def test_schedule_is_planned_unless_given():
    resolved = {
        (): "auto", (("eta0", 0.3),): "manual", (("gamma", 0.6),): "manual", (("schedule", "manual"),): "manual",
        (("schedule", "auto"),): "auto",
    }
    for given, kind in resolved.items():
        assert api.SimulationSettings.validated(trials=1, steps=5, **dict(given)).schedule_kind == kind
    partial = api.SimulationSettings.validated(trials=1, steps=5, eta0=0.3)
    assert partial.manual_schedule == (0.3, api.MANUAL_SCHEDULE["k0"], api.MANUAL_SCHEDULE["gamma"])
    with pytest.raises(ParameterError) as info:
        api.SimulationSettings.validated(trials=1, steps=5, schedule="auto", k0=3.0)
    assert info.value.name == "schedule"
    with pytest.raises(ParameterError) as info:
        api.SimulationSettings.validated(trials=1, steps=5, k0=0.0)  # γ defaults to 1: a step 1/0
    assert info.value.name == "k0"
    assert api.SimulationSettings.validated(trials=1, steps=5, k0=0.0, gamma=0.0).manual_schedule == (0.05, 0.0, 0.0)
    assert api.SimulationSettings.validated(trials=1, steps=5).sampler == "projected"


def test_simulation_reports_the_schedule_that_ran(auto_run):
    run = auto_run
    assert run.schedule == "auto" and run.plan.steps == 120 and run.gamma == 1.0
    assert (run.eta0, run.k0) == (run.plan.eta0, run.plan.k0)
    # t_final is the sum of the steps that ran
    assert run.t_final == pytest.approx(sum(run.eta0 / (k + run.k0) for k in range(120)), rel=1e-12)
    assert run.alignment_error == pytest.approx(run.alignment.std(ddof=1) / np.sqrt(6), rel=1e-12)
    manual = api.simulate(16, 64, 16, 1.2, 2, 30, eta0=0.2, device="cpu")
    assert manual.schedule == "manual" and manual.plan is None
    assert (manual.eta0, manual.k0, manual.gamma) == (0.2, 50.0, 1.0)
    assert manual.t_final == pytest.approx(sum(0.2 / (k + 50.0) for k in range(30)), rel=1e-12)
    assert manual.threads == 1  # small tensors: one thread (validate.device.choose_threads)
    assert api.simulate(16, 64, 16, 1.2, 2, 5, eta0=0.2, device="cpu", threads=2).threads == 2


def test_predicted_trajectories_follow_the_runs_own_starts_and_times(auto_run):
    """The plain ODE along the schedule with the large-L drift equals `ode_trajectory` from each start at the run's
    times; by default the trajectories follow the drift of `simulate`'s own prediction (the exact finite-L one: the
    run's L is small) and end at the run's `predicted_alignment` (audit s19: with the large-L drift they ended 4 of the
    run's errors away from it). From a start ρ₀ > 0 (model A: the drift at 0 is positive, so neither path crosses 0)
    the corrected drift is the plain one minus ½ηρN ≥ 0, so the corrected path stays below the plain one (comparison
    of 1-D ODEs)."""
    run = auto_run
    large_L = api.large_L_drift(run.params)
    plain_large_L = api.predicted_trajectories(run, retraction=False, drift=large_L)
    reference = np.stack([api.ode_trajectory(run.params, r0, run.trajectory.times).x for r0 in run.trajectory.rho[0]],
                         axis=1)
    assert plain_large_L.success and np.allclose(plain_large_L.rho, reference, atol=1e-6, rtol=0)
    plain = api.predicted_trajectories(run, retraction=False)
    corrected = api.predicted_trajectories(run)
    assert "exact finite-L drift" in corrected.message
    assert np.abs(corrected.rho[-1]).mean() == pytest.approx(run.predicted_alignment, abs=1e-7)
    # the starts to the rounding of LSODA's output at t = 0 (a unit in the last place)
    assert np.allclose(corrected.rho[0], run.trajectory.rho[0], rtol=0, atol=4 * np.finfo(float).eps)
    assert np.array_equal(corrected.times, run.trajectory.times)
    exact = api.finite_reduction(run.params, np.linspace(-1.0, 1.0, FINITE_DRIFT_GRID), n_samples=FINITE_DRIFT_SAMPLES)
    with_exact_drift = api.predicted_trajectories(run, drift=api.finite_drift(exact))
    assert np.abs(with_exact_drift.rho[-1]).mean() == pytest.approx(run.predicted_alignment, abs=1e-7)
    positive = run.trajectory.rho[0] > 0
    assert positive.any() and np.all(corrected.rho[1:, positive] < plain.rho[1:, positive])
    rows = corrected.to_pandas()
    assert list(rows.columns) == ["step", "t", "trial", "rho"] and len(rows) == corrected.rho.size


def test_every_result_has_labels_and_json():
    params = api.make_parameters(20, 100, 20, 0.8)
    curve = api.curve(params, [-0.5, 0.0, 0.5])
    assert list(curve.to_pandas().columns) == ["rho", "J", "J_error", "dJ", "dJ_error", "drift", "drift_error",
                                               "nuisance_mass", "nuisance_mass_error"]
    noise = api.tangent_noise(params, pilot=16)
    assert noise.to_pandas().shape == (5, 4) and np.all(noise.noise_error > 0)  # rho, noise, its error, along
    plan = api.choose_schedule(params, steps=50, noise=noise)
    assert plan.to_pandas().loc[0, "steps"] == 50
    run = api.simulate(20, 100, 20, 0.8, 3, 20, device="cpu", record_every=5)
    payload = json.loads(json.dumps(run.as_dict(), allow_nan=False))
    assert payload["plan"]["steps"] == 20 and payload["schedule"] == "auto" and "trajectory" not in payload
    assert run.to_pandas().shape == (3, 3)
    assert run.trajectory.to_pandas().shape == (5 * 3, 6)
    assert api.fixed_points(params).to_pandas().columns.tolist() == ["rho", "rho_error", "slope", "slope_error",
                                                                     "stable"]


@pytest.mark.parametrize("settings, reason", [
    (dict(score_scale=10.0), "could not be integrated"),  # J'(1) ~ 1e41: no candidate step's flow is integrated
    (dict(sigma=1e300), "not finite"),                 # the large-L moments themselves overflow
])
def test_a_schedule_that_cannot_be_planned_says_why_in_words(settings, reason, small_plan_budget):
    """Where the planner's inputs overflow, the plan fails with the reason in words (never a NaN in the text) and no
    step size, so a run falls back to the manual default instead of an infinite η₀."""
    plan = api.choose_schedule(api.make_parameters(16, 32, 8, 1.0, **settings), steps=50, pilot=16)
    assert plan.status == "failed" and reason in plan.message and "nan" not in plan.message.lower()
    assert np.isnan(plan.eta0) and np.isnan(plan.k0)


@pytest.mark.parametrize("sigma", [1e-2, 1e-3])
def test_a_small_noise_schedule_is_planned_and_the_run_meets_its_prediction(sigma):
    """With little noise the noise-floor rule would ask for last steps above the first-step limit (no offset exists
    there): the last step is held below that limit instead, the plan succeeds, and 8 trials end at the predicted
    mean |ρ| within 4 combined errors plus the flow's own tolerance (LSODA's atol 1e-9 on ρ)."""
    run = api.simulate(16, 32, 8, 1.0, 8, 200, sigma=sigma, device="cpu")
    assert run.plan.status == "converged" and run.plan.eta_first ** 2 * run.plan.noise < 0.1, run.plan.message
    band = 4 * math.hypot(run.alignment_error, run.predicted_alignment_error) + 1e-9
    assert abs(run.alignment_mean - run.predicted_alignment) <= band


def test_plot_objective_draws_the_curves_it_is_given():
    params = api.make_parameters(50, 400, 40, 0.6)
    rhos = np.linspace(-1, 1, 11)
    large, exact = api.curve(params, rhos), api.curve(params, rhos[::5], finite=True, samples=64)
    fig = api.plot_objective([large, exact], ["large L", "exact"])
    top, bottom = fig.axes
    assert np.array_equal(top.lines[0].get_ydata(), large.J) and np.array_equal(bottom.lines[0].get_ydata(), large.drift)
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["large L", "exact"]
    with pytest.raises(ValueError):
        api.plot_objective([large], ["a", "b"])


def test_plot_trajectories_bands_stay_inside_the_unit_interval(auto_run):
    """Means of |ρ| with bands between the 10% and 90% quantiles of the trials: inside [0, 1], unlike
    mean ± standard deviation."""
    fig = api.plot_trajectories(auto_run, ode="both")
    ax = fig.axes[0]
    sga = np.abs(auto_run.trajectory.rho)
    assert np.allclose(ax.lines[0].get_ydata(), sga.mean(axis=1))
    assert len(ax.lines) == 3 and len(ax.collections) == 3
    for band in ax.collections:
        y = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
        assert y.min() >= 0.0 and y.max() <= 1.0
    with pytest.raises(ValueError):
        api.plot_trajectories(auto_run, ode="exact")


def test_cli_names_the_schedule_and_the_prediction(monkeypatch):
    from attnphase.models.signal_recovery import simulate as simulate_module

    # The manual run is printed twice, as JSON and for a person: the command given the same options is simulated once
    # (run_sga's arguments, all values, are the key), each printout made from that result.
    run_sga, runs = simulate_module.run_sga, {}

    def run_once(*args, **kwargs):
        key = repr((args, sorted(kwargs.items())))
        if key not in runs:
            runs[key] = run_sga(*args, **kwargs)
        return runs[key]

    monkeypatch.setattr(simulate_module, "run_sga", run_once)
    base = ["simulate", "signal-recovery", "--d", "16", "--L", "64", "--R", "16", "--theta", "1.2", "--trials", "3",
            "--steps", "40", "--device", "cpu", "--json"]
    out = CliRunner().invoke(main, base)
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert payload["schedule"] == "auto" and payload["plan"]["steps"] == 40 and payload["parameters"]["sampler"] == "projected"
    assert 0 <= payload["predicted_alignment"] <= 1 and payload["predicted_alignment_error"] >= 0
    assert payload["threads"] == 1
    manual = json.loads(CliRunner().invoke(main, base + ["--eta0", "0.3", "--threads", "2"]).stdout)
    assert manual["schedule"] == "manual" and manual["eta0"] == 0.3 and manual["threads"] == 2
    bad = CliRunner().invoke(main, base + ["--schedule", "auto", "--eta0", "0.3"])
    assert bad.exit_code == 2 and "--schedule" in bad.output and "Traceback" not in bad.output
    human = CliRunner().invoke(main, base[:-1] + ["--eta0", "0.3", "--threads", "2"])
    assert human.exit_code == 0 and "predicted_alignment" in human.output and "schedule" in human.output
    assert len(runs) == 2  # the automatic and the manual run; the refused one never reached run_sga


def test_entry_points_refuse_what_they_cannot_compute():
    """Every public function of the ODE layer names a bad argument (before: IndexError, numpy's zero-size reduction,
    NaN or a number for ρ outside [−1, 1], a silent override by the deprecated beta)."""
    params = api.make_parameters(16, 32, 4, 1.0)
    noise = api.tangent_noise(params, pilot=16)
    no_signal = api.fixed_points(api.make_parameters(64, 512, 64, 0.0))
    calls = {
        "points": [lambda: api.ode_limit_point(params, no_signal, 0.5), lambda: api.ode_limit_point(params, None, 0.5)],
        "times": [lambda: api.ode_trajectory(params, 0.1, []), lambda: api.ode_trajectory(params, 0.1, None),
                  lambda: api.ode_trajectory(params, 0.1, [0.0, float("nan")]),
                  lambda: api.ode_trajectory(params, 0.1, [1.0, 0.5])],
        "params": [lambda: api.ode_trajectory(None, 0.1, [0.0, 1.0])],
        "level": [lambda: api.ode_time_to_reach(params, 0.1, level=float("nan")),
                  lambda: api.ode_time_to_reach(params, 0.1, level="x")],
        "t_max": [lambda: api.ode_time_to_reach(params, 0.1, t_max=0)],
        "eta0": [lambda: api.retraction_corrected_rho(params, noise, 0.1, -1, 50, 100),
                 lambda: api.retraction_corrected_rho(params, noise, 0.1, float("nan"), 50, 100)],
        "k0": [lambda: api.retraction_corrected_rho(params, noise, 0.1, 0.05, -50, 100),
               lambda: api.retraction_corrected_rho(params, noise, 0.1, 0.05, 0, 100)],
        "rho0": [lambda: api.retraction_corrected_rho(params, noise, 5.0, 0.05, 50, 100)],
        "steps": [lambda: api.retraction_corrected_rho(params, noise, 0.1, 0.05, 50, -100)],
        "rho": [lambda: api.large_L(params, 5.0), lambda: api.large_L(params, float("nan"))],
        "curves": [lambda: api.plot_objective(None)],
        "simulation": [lambda: api.predicted_trajectories(None), lambda: api.plot_trajectories(None)],
        "noise": [lambda: api.choose_schedule(params, noise="x")],
        "beta": [lambda: api.solve(64, 512, 64, 1.0, 0.5, score_scale=3.0, beta=2.0)],
        "max_steps": [lambda: check_sweep_point(16, 32, 4, 1.0, max_steps=10**9)],
        "device": [lambda: check_sweep_point(16, 32, 4, 1.0, device="tpu")],  # before the store is opened
        "progress": [lambda: api.simulate(16, 32, 4, 1.0, trials=2, steps=5, progress="yes")],
    }
    for name, attempts in calls.items():
        for attempt in attempts:
            with pytest.raises(ParameterError) as raised:
                attempt()
            assert raised.value.name == name
    # in range, the same functions still compute
    assert 0.0 < api.retraction_corrected_rho(params, noise, 0.1, 0.05, 50, 100) <= 1.0
    assert api.ode_time_to_reach(params, 0.1, t_max=1e-6) == math.inf


@pytest.fixture(scope="module")
def one_trial_run():
    """One trial of 20 steps at d = 16, L = 64, R = 8, θ = 1 (η₀ 0.05), read by two tests."""
    return api.simulate(16, 64, 8, 1.0, trials=1, steps=20, eta0=0.05, device="cpu")


def test_noise_token_mass_of_two_seeds_agrees_within_its_standard_errors(one_trial_run):
    """nuisance_mass_error is the standard error over the trials: two seeds' masses differ by less than four of their
    combined errors, and one trial has none."""
    runs = [api.simulate(16, 64, 8, 1.0, trials=16, steps=200, eta0=0.05, seed=seed, device="cpu") for seed in (0, 1)]
    assert all(run.nuisance_mass_error > 0 for run in runs)
    difference = abs(runs[0].nuisance_mass_mean - runs[1].nuisance_mass_mean)
    assert difference <= 4 * math.hypot(runs[0].nuisance_mass_error, runs[1].nuisance_mass_error)
    assert one_trial_run.nuisance_mass_error is None


class _PilotSeen(Exception):
    pass


def test_the_tangent_noise_pilot_is_at_least_what_two_million_numbers_allow(one_trial_run, monkeypatch):
    """The model page's rule for the sequences per alignment of N's pilot: max(p, min(32768, 2²¹/(L + d))), p = 1/40 of
    the run's sequences within 128-2048. A short run at L = 64 (one trial of 20 steps: p = 128) takes the second term,
    2²¹/80 = 26214; the page's `--help` example (8 trials of 4000 steps at d = 64, L = 512) the number the page
    quotes, read from the pilot `simulate` asks for (stopped there); the headline, where p = 2048 dominates, is
    checked by the slow headline test."""
    from attnphase.models.signal_recovery import simulate as simulate_module

    run = one_trial_run
    assert run.noise.pilot == 2**21 // 80 == 26214
    asked = []

    def tangent_noise(params, pilot):
        asked.append(pilot)
        raise _PilotSeen

    monkeypatch.setattr(simulate_module, "tangent_noise", tangent_noise)
    with pytest.raises(_PilotSeen):
        api.simulate(64, 512, 64, 1.0, trials=8, steps=4000, device="cpu")
    page = " ".join((PAGES / "signal_recovery.md").read_text().split())
    quoted = re.search(r"\((\d+) sequences for the `--help` example below", page).group(1)
    assert asked == [int(quoted)]


def test_a_sweep_point_whose_plan_falls_short_is_stored_limited():
    """20 steps cannot reach the planner's target at d = 16 (t 0.027 of the 4.1 it needs): the point's status is
    limited, as `simulate`'s is for the same shortfall (an audit found it stored as converged)."""
    point = api.sweep_point(16, 64, 8, 1.0, trials=2, max_steps=20)
    assert point["budget_limited"] == 1.0 and point["t_final"] < point["t_target"]
    assert point["status"] == "limited"


def test_a_sweep_point_whose_plan_reaches_its_target_is_stored_converged():
    """At the sweep's deficit 0.01 (target |ρ| 0.98) d = 16, L = 64, R = 8, θ = 1 is planned within its budget, and
    the point is converged, judged by that target alone: it was re-judged as a manual schedule against simulate's
    default target 0.996, so no point at the default deficit could be converged (an audit found every one limited)."""
    point = api.sweep_point(16, 64, 8, 1.0, trials=2, max_steps=2000)
    assert point["budget_limited"] == 0.0 and point["retraction_corrected_alignment"] >= 0.98
    assert point["status"] == "converged", point["message"]
    assert "0.996" not in point["message"] and point["message"].count("schedule planned") == 1
    assert point["nuisance_mass_error"] > 0  # the mass with its standard error over the trials


def _refused(call, name):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == name, info.value
    return info.value


def test_alignments_are_checked_and_named_as_passed():
    """An empty list of alignments was a bare numpy ValueError (curve, large_L_accuracy) or an empty array (large_L);
    errors about rhos= and rho0= named `rho`; large_L took True as ρ = 1; curve took any samples and seed with the
    large-L form (nan, -1, None, 2**70), which the CLI refuses."""
    p = api.make_parameters(d=100, L=200, R=20, theta=1.0)
    for call in (lambda: api.curve(p, []), lambda: api.large_L_accuracy(p, []), lambda: api.curve(p, [0.1, math.nan]),
                 lambda: api.large_L_accuracy(p, [True]), lambda: api.curve(p, rhos=None),
                 lambda: api.finite_reduction(p, []), lambda: api.tangent_noise(p, [])):
        error = _refused(call, "rhos")
        assert "a non-empty list of real numbers in [-1, 1]" in error.allowed
    for call in (lambda: api.large_L(p, []), lambda: api.large_L(p, rho=True), lambda: api.large_L(p, [0.2, True])):
        _refused(call, "rho")
    for call in (lambda: api.ode_time_to_reach(p, rho0=math.nan), lambda: api.ode_trajectory(p, 1.5, [1.0]),
                 lambda: api.ode_trajectory(p, True, [1.0])):
        _refused(call, "rho0")
    for bad in (math.nan, math.inf, -1, None, [], "x", 2**70, True, 15):
        _refused(lambda: api.curve(p, [0.1, 0.3], samples=bad), "samples")
    for bad in (math.nan, -1, None, [], 2**70, True):
        _refused(lambda: api.curve(p, [0.1, 0.3], seed=bad), "seed")


@pytest.mark.parametrize("rho, score_scale, scaling", [(0.3, 1.0, "direct"), (1.0, 2.0, "direct"),
                                                      (0.5, 0.7, "sqrt-d")])
def test_large_L_refuses_a_theta_it_cannot_compute_naming_the_largest_it_takes(rho, score_scale, scaling):
    """θ = 1e21 at ρ = 0.3 gave status failed and null values (API: J = nan) while the range said [0, inf). Now the
    large-L reduction refuses it (API and CLI) and names the largest θ at which its form is finite: for ρ > 0 the
    form's largest exponential is e^{3βθ_dρ}, so the bound is ln(float64 max)/(3βρ) in θ_d (θ√d under sqrt-d), to
    the 6 digits printed; the form is finite there and not 1e-5 above it."""
    d = 100
    error = _refused(lambda: api.solve(d, 200, 20, 1e21, rho, sigma=0.5, score_scale=score_scale,
                                       theta_scaling=scaling, reduction="large-L"), "theta")
    bound = float(error.allowed.split("[0, ")[1].split("]")[0])
    exact = math.log(np.finfo(float).max) / (3 * score_scale * rho) / (math.sqrt(d) if scaling == "sqrt-d" else 1)
    assert bound <= exact and bound == pytest.approx(exact, rel=1e-5)
    r = api.solve(d, 200, 20, bound, rho, sigma=0.5, score_scale=score_scale, theta_scaling=scaling,
                  reduction="large-L")
    assert math.isfinite(r.J) and math.isfinite(r.dJ)
    _refused(lambda: api.solve(d, 200, 20, exact * (1 + 1e-5), rho, sigma=0.5, score_scale=score_scale,
                               theta_scaling=scaling, reduction="large-L"), "theta")
    out = CliRunner().invoke(main, ["solve", "signal-recovery", "--d", "100", "--L", "200", "--R", "20", "--theta",
                                    "1e21", "--rho", "0.3", "--reduction", "large-L", "--json"])
    assert out.exit_code == 2 and "invalid value for --theta: 1e+21" in out.output and "Traceback" not in out.output
    help_text = CliRunner().invoke(main, ["solve", "signal-recovery", "--help"]).output
    assert "ln(float64 max)/3 = 236.59" in " ".join(help_text.split())
    assert f"{math.log(np.finfo(float).max) / 3:.2f}" == "236.59"


def test_the_predictions_drift_is_chosen_as_simulate_chooses_it_and_a_withheld_one_is_said():
    """`prediction_drift` (audit t19): the exact finite-L drift up to L = FINITE_DRIFT_MAX_L = 1024 included; beyond
    it the large-L drift, named with its expansion's failure where it fails (score_scale 3 at L = 2048: expansion
    ratio 7e5); where the exact drift cannot be computed (score_scale 8, σ = 0.5: its reduction is withheld),
    `predicted_trajectories` gives no trajectories and says why, rather than the large-L drift under the exact one's
    name."""
    from attnphase.models.signal_recovery.schedules import prediction_drift

    _, words, missing = prediction_drift(api.make_parameters(16, 1024, 16, 1.0))
    assert words.startswith("exact finite-L drift") and missing == ""
    _, words, missing = prediction_drift(api.make_parameters(16, 2048, 8, 1.0, score_scale=3.0))
    assert words.startswith("large-L drift, outside its O(1/L) expansion") and missing == ""
    withheld = api.simulate(16, 256, 32, 1.0, 8, 200, sigma=0.5, score_scale=8.0, seed=0, device="cpu")
    trajectories = api.predicted_trajectories(withheld)
    assert not trajectories.success and "the exact finite-L drift is not available" in trajectories.message
