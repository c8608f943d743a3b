"""Signal recovery: the theory against simulation, with error bars from the simulations' own statistics.

Every comparison goes through `attnphase.validate.compare.compare`: agreement means |mean − theory| ≤
n_sigma·√(sem² + theory_error²), with sem the standard error over independent trials (each trial is one
sample: its final |ρ|, or its noise-token mass averaged over its last recording window) and theory_error
the theory's own error (the Monte Carlo error of the tangent noise N, or of the exact finite-L reduction).
For each comparison a theory shifted by twice that claimed agreement is shown to be rejected, and where a
competing theory exists (the plain ODE without the retraction loss) it is rejected too.

References: closed-form changes of variable of the mean-field ODE, solved independently here with scipy.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.integrate import solve_ivp

from attnphase.api import signal_recovery as api
from attnphase.cli import main
from attnphase.validate.compare import compare

N_SIGMA = 4.0


def assert_agrees_and_shifted_theory_fails(name, theory, samples, theory_error):
    """The theory agrees with the samples, and the same theory moved by ± twice the claimed agreement (the
    band n_sigma·√(sem² + theory_error²)) is rejected: the comparison has the resolution it claims."""
    verdict = compare(name, theory, samples, theory_error=theory_error, n_sigma=N_SIGMA)
    assert verdict.agrees, verdict.summary()
    band = N_SIGMA * math.hypot(verdict.sem, theory_error)
    for shift in (-2 * band, 2 * band):
        shifted = compare(name, theory + shift, samples, theory_error=theory_error, n_sigma=N_SIGMA)
        assert shifted.agrees is False, shifted.summary()
    return verdict, band


def test_step_variable_ode_equals_its_time_variable_form():
    """`retraction_corrected_rho` integrates in the step count k; in t = ∫η dk the same ODE has the closed
    forms t(k) = η₀[(k + k₀)^{1−γ} − k₀^{1−γ}]/(1 − γ) (η₀ ln(1 + k/k₀) for γ = 1) and η(t) from them.
    Integrated here in t with scipy's DOP853, for γ = 1, 0.6 and 0 (constant step)."""
    params = api.make_parameters(40, 400, 40, 0.9, sign_model="C")
    noise = api.tangent_noise(params, pilot=32)
    rho0, K = 0.2, 300
    for eta0, k0, gamma in ((3.0, 20.0, 1.0), (0.4, 10.0, 0.6), (0.02, 0.0, 0.0)):
        if gamma == 1.0:
            horizon = eta0 * math.log1p(K / k0)

            def eta_of_t(t):
                return eta0 / k0 * math.exp(-t / eta0)
        else:
            a = 1.0 - gamma
            horizon = eta0 * ((K + k0) ** a - k0**a) / a

            def eta_of_t(t, a=a):
                return eta0 * (k0**a + a * t / eta0) ** (-gamma / a)

        def rhs(t, y):
            rho = float(np.clip(y[0], -1.0, 1.0))
            return [api.large_L(params, rho)[2] - 0.5 * eta_of_t(t) * rho * float(noise.at(rho))]

        reference = solve_ivp(rhs, (0.0, horizon), [rho0], method="DOP853", rtol=1e-9, atol=1e-11).y[0, -1]
        value = api.retraction_corrected_rho(params, noise, rho0, eta0, k0, K, gamma=gamma)
        assert value == pytest.approx(reference, abs=1e-6), (eta0, k0, gamma)


def test_retraction_corrected_ode_predicts_sga_where_the_plain_ode_does_not():
    """With steps large enough that the retraction loss ½η²N matters (first step 1/3, ½ηρN several times
    the drift), the mean |ρ| of 32 trials from ρ₀ = 0.3 follows dρ/dt = (1 − ρ²)J′ − ½ηρN at each record,
    within 4 combined errors (trials' standard error and N's Monte Carlo error), and not the plain ODE."""
    d, L, R, theta = 32, 600, 40, 0.6
    params = api.make_parameters(d, L, R, theta)
    noise = api.tangent_noise(params, pilot=1024)
    eta0, k0, steps, rho0 = 20.0, 60.0, 500, 0.3
    settings = api.SimulationSettings.validated(trials=32, steps=steps, eta0=eta0, k0=k0, gamma=1.0, seed=4, rho0=rho0,
                                                record_every=100)
    sim = api.run_sga(params, settings, "cpu", noise=noise, predict=False)
    corrected = api.predicted_trajectories(sim)
    shifted = api.predicted_trajectories(sim, noise_shift=1.0)
    plain = api.predicted_trajectories(sim, retraction=False)
    for j in range(1, len(sim.trajectory.steps)):
        samples = np.abs(sim.trajectory.rho[j])
        theory, error = corrected.rho[j, 0], abs(shifted.rho[j, 0] - corrected.rho[j, 0])  # N one s.e. up
        _, band = assert_agrees_and_shifted_theory_fails(f"|rho| at step {sim.trajectory.steps[j]}", theory, samples,
                                                         error)
        assert abs(plain.rho[j, 0] - samples.mean()) > 3 * band  # the plain ODE (at |ρ| ≈ 1) is far outside


def test_short_recovery_run_matches_the_retraction_corrected_ode():
    """The model's central claim, at a size the default suite affords: 48 trials from uniform random starts
    (d = 64, L = 512, R = 64, θ = 1, model A) recover ξ under the default schedule planned for 600 steps.
    Against the retraction-corrected ODE from each trial's own start (N from 2048 sequences per alignment),
    within 4 combined errors:
    * the mean final |ρ| (the band is below 0.01);
    * the path: per trial, |ρ| averaged over the 24 records minus the same average of its own ODE path (a
      paired difference, one number per independent trial). The ODE with its drift scaled by 0.8 or 1.2
      is rejected, the plain ODE too: this is the resolution of the claim at this size;
    * the noise-token mass of the last recording window against the exact finite-L reduction at the
      trials' mean final ρ.
    No interior fixed point lies within reach of the starts (the separatrix of −ξ is at ρ ≈ −0.9 while
    |ρ₀| ~ 1/8), so the ODE from each start is the mean-field path of that trial."""
    params = api.make_parameters(64, 512, 64, 1.0)
    interior = [r for r in api.fixed_points(params).rho if abs(r) < 1]
    assert len(interior) == 1 and interior[0] < -0.85
    noise = api.tangent_noise(params, pilot=2048)
    settings = api.SimulationSettings.validated(trials=48, steps=600, seed=11, record_every=25)
    sim = api.run_sga(params, settings, "cpu", noise=noise)
    # 600 steps are short of the planner's target (|ρ| = 0.996), so the run is `limited`, as its plan
    assert sim.schedule == "auto" and sim.plan.steps == 600 and sim.plan.status == sim.status == "limited"
    assert sim.alignment_mean > 0.95 and np.all(sim.final_rho > 0)  # recovered, every trial at +ξ
    verdict, band = assert_agrees_and_shifted_theory_fails("final |rho|", sim.predicted_alignment, sim.alignment,
                                                           sim.predicted_alignment_error)
    assert band < 0.01

    def path_differences(theory):
        return np.abs(sim.trajectory.rho[1:]).mean(axis=0) - np.abs(theory.rho[1:]).mean(axis=0)

    corrected = api.predicted_trajectories(sim)
    path_error = abs(np.abs(api.predicted_trajectories(sim, noise_shift=1.0).rho[1:]).mean()
                     - np.abs(corrected.rho[1:]).mean())
    assert_agrees_and_shifted_theory_fails("time-averaged |rho| - ODE", 0.0, path_differences(corrected), path_error)
    drift = api.large_L_drift(params)
    alternatives = [api.predicted_trajectories(sim, drift=lambda r, f=f: f * drift(r)) for f in (0.8, 1.2)]
    alternatives.append(api.predicted_trajectories(sim, retraction=False))
    for theory in alternatives:
        assert compare("path", 0.0, path_differences(theory), theory_error=path_error, n_sigma=N_SIGMA).agrees is False
    window_mass = sim.trajectory.observable[-1]  # per trial, averaged over its last recording window
    exact = api.finite_reduction(params, [float(sim.final_rho.mean())], n_samples=2048, seed=5)
    assert_agrees_and_shifted_theory_fails("noise-token mass", exact.nuisance_mass[0], window_mass,
                                           exact.nuisance_mass_error[0])


@pytest.mark.slow
def test_headline_thirty_trials_recover_xi():
    """30 trials, θ = 0.25, R = 500, 10 000 nuisance tokens, d = 1000, θ_d = θ√d, model A, 5000 steps under
    the default schedule (planned for them): mean |ρ| ≥ 0.99, equal to the retraction-corrected ODE's
    prediction from the trials' starts within 4 combined errors; every trial ends on the side of the
    separatrix it started on (−ξ is also stable here, βθ_d ≈ 7.9 > 1.04: the drift has the stable ends ±1
    and one unstable interior zero ρ* < 0, and starts at |ρ₀| ~ 1/√d all lie above ρ*, so every trial
    reaches +ξ); the noise-token mass of the last recording window equal to the exact finite-L reduction
    at the trials' mean ρ within 4 combined standard errors. About 25 s on one CPU thread."""
    from attnphase.reproduce.signal_recovery import HEADLINE, run_headline

    result = run_headline(HEADLINE, device="cpu")
    assert result.alignment_mean >= 0.99 and result.schedule == "auto"
    assert_agrees_and_shifted_theory_fails("final |rho|", result.predicted_alignment, result.alignment,
                                           result.predicted_alignment_error)
    params = api.make_parameters(HEADLINE.d, HEADLINE.L, HEADLINE.R, HEADLINE.theta, HEADLINE.theta_scaling)
    fixed = api.fixed_points(params)
    assert fixed.stable == [True, False, True] and fixed.rho[0] == -1.0 and fixed.rho[-1] == 1.0
    separatrix = fixed.rho[1]
    assert separatrix < 0 and np.all(result.final_rho > 0)
    assert np.all(np.sign(result.final_rho) == np.sign(result.trajectory.rho[0] - separatrix))
    window = result.trajectory.observable[-1]  # per trial, the noise mass over the last record_every steps
    reduction = api.finite_reduction(params, [float(np.mean(result.final_rho))], n_samples=512, seed=3)
    assert_agrees_and_shifted_theory_fails("noise-token mass", reduction.nuisance_mass[0], window,
                                           reduction.nuisance_mass_error[0])
    # the page's headline row is this run: its command is HEADLINE at the CLI's defaults
    row = _page_row("headline:")
    options = shlex.split(row.command)[3:]
    assert dict(zip(options[::2], options[1::2])) == {
        "--d": str(HEADLINE.d), "--L": str(HEADLINE.L), "--R": str(HEADLINE.R), "--theta": str(HEADLINE.theta),
        "--theta-scaling": HEADLINE.theta_scaling, "--trials": str(HEADLINE.trials), "--steps": str(HEADLINE.steps)}
    assert HEADLINE.seed == 0 and HEADLINE.sign_model == "A" and HEADLINE.eta0 is None
    assert result.noise.pilot == 2048  # the page: 1/40 of the run's 150 000 sequences, capped at 2048
    _assert_run_matches_page_row(row, result.alignment, result.final_rho, result.eta0, result.k0,
                                 result.predicted_alignment)
    assert result.t_final == pytest.approx(float(re.search(r"t = ([\d.]+);", row.value).group(1)), abs=5e-4)
    mass = float(re.search(r"noise-token mass ([\d.]+)", row.value).group(1))
    assert abs(result.nuisance_mass_mean - mass) < _decimals(str(mass)) + result.nuisance_mass_error


class PageRow:
    """A row of the model page's table of current values: its value cell and its command (the first `...` span)."""

    def __init__(self, cells: list[str]):
        self.label, self.value = cells[0], cells[1]
        self.command = re.search(r"`([^`]*)`", cells[2]).group(1)


def _page_row(label_start: str) -> PageRow:
    """The row of docs/models/signal_recovery.md's "Current values" table whose first cell starts with `label_start`."""
    lines = (Path(__file__).resolve().parents[2] / "docs" / "models" / "signal_recovery.md").read_text().splitlines()
    start = lines.index("## Current values")
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))])
        elif rows:
            break
    (row,) = [r for r in rows[2:] if r[0].startswith(label_start)]
    return PageRow(row)


def _decimals(text: str) -> float:
    """Half a unit in the last printed digit of a number, the rounding of a value given without an error."""
    return 0.5 * 10.0 ** -len(text.partition(".")[2])


def _assert_run_matches_page_row(row: PageRow, alignment, final_rho, eta0, k0, predicted):
    """A run of the row's command against the row: the mean final |ρ| within the stated standard error (plus the
    rounding of the printed digits; one seed reruns to those digits on one machine, and a rerun that differs in
    rounding is a second sample of the same law, within about that error), the std and min within the same band,
    every trial at +ξ, the planned η₀ and k₀ to their printed digits (the plan depends on the seed-0 CPU pilot alone),
    and the prediction within its stated error."""
    found = re.search(r"mean final \\\|ρ\\\| = ([\d.]+) ± ([\d.]+) \(std ([\d.]+), min ([\d.]+)\), all (\d+ )?at \+ξ",
                      row.value)
    assert found, row.value
    mean, error, std, smallest = (float(x) for x in found.groups()[:4])
    band = error
    alignment = np.asarray(alignment)
    assert abs(alignment.mean() - mean) < band + _decimals(found.group(1))
    assert abs(alignment.std(ddof=1) - std) < band + _decimals(found.group(3))
    assert abs(alignment.min() - smallest) < band + _decimals(found.group(4))
    assert np.all(np.asarray(final_rho) > 0)
    planned = re.search(r"η_k = ([\d.]+)/\(k \+ ([\d.]+)\)", row.value)
    if planned:
        assert abs(eta0 - float(planned.group(1))) <= _decimals(planned.group(1))
        assert abs(k0 - float(planned.group(2))) <= _decimals(planned.group(2))
    stated = re.search(r"predicted ([\d.]+)(?: ± ([\d.]+))?", row.value)
    tolerance = (float(stated.group(2)) if stated.group(2) else 0.0) + _decimals(stated.group(1))
    assert abs(predicted - float(stated.group(1))) < tolerance


def test_the_d_64_rows_lagging_trial_starts_between_zero_and_the_separatrix_where_the_drift_is_weak():
    """The row's explanation of its prediction's lag: the separatrix of −ξ (the interior fixed point, an mpmath-scanned
    root of the drift) and the large-L drift (1 − ρ²)J′ at the lagging trial's ρ₀ = −2.06/√d, as the row states them,
    to their printed digits."""
    row = _page_row("30 trials, d = 64, L = 10 500")
    d = 64
    params = api.make_parameters(d, 10500, 500, 0.25, theta_scaling="sqrt-d")
    start = float(re.search(r"ρ₀ = −([\d.]+)/√d", row.value).group(1))
    separatrix = float(re.search(r"ρ\* = −([\d.]+)/√d", row.value).group(1))
    drift = re.search(r"\(1 − ρ²\)J′ = ([\d.]+)", row.value).group(1)
    (interior,) = [r for r in api.fixed_points(params).rho if abs(r) < 1]
    assert abs(-interior * math.sqrt(d) - separatrix) <= 0.005
    assert separatrix > 1.5 * start  # halfway to it from ρ = 0, not next to it
    at_start = api.solve(d, 10500, 500, 0.25, -start / math.sqrt(d), theta_scaling="sqrt-d", reduction="large-L")
    assert abs(at_start.drift - float(drift)) <= 0.0005


@pytest.mark.slow
@pytest.mark.parametrize("label", ["`--help` example", "30 trials, d = 64, L = 10 500"])
def test_the_pages_simulation_rows_rerun_to_their_values(label):
    """The page's `--help` example (8 trials, d = 64, L = 512; about 6 s, and again with the fewer steps it quotes)
    and its d = 64, L = 10 500 row (30 trials; about 15 s): the row's own command, run here, against the numbers the
    row states."""
    row = _page_row(label)
    args = shlex.split(row.command)
    assert args[:3] == ["attnphase", "simulate", "signal-recovery"]
    out = CliRunner().invoke(main, args[1:] + ["--json"])
    assert out.exit_code == 0, out.output
    run = json.loads(out.stdout)
    _assert_run_matches_page_row(row, run["alignment"], run["final_rho"], run["eta0"], run["k0"],
                                 run["predicted_alignment"])
    if "exact finite-L drift" in row.value:
        assert "predicted with the exact finite-L drift" in run["message"]
    # z with its sign, which the page writes with a minus sign (U+2212)
    verdict = re.search(r"prediction_agrees (true|false)(?: \(z = |, z = )([−-]?[\d.]+)", row.value)
    assert verdict, row.value  # the row states the run's verdict on its prediction, and the run gives it
    stated, z = verdict.groups()
    assert run["prediction_agrees"] is (stated == "true")
    assert abs(run["prediction_z"] - float(z.replace("−", "-"))) <= 0.5 * 10.0 ** -len(z.partition(".")[2])
    shorter = re.search(r"; (\d+) steps reach ([\d.]+): limited\)", row.value)
    assert (shorter is not None) == (label == "`--help` example"), row.value
    if label == "`--help` example":  # the command's own help quotes the same run (audit h19: 0.9973 for 0.9972)
        help_text = " ".join(CliRunner().invoke(main, ["simulate", "signal-recovery", "--help"]).output.split())
        mean, error, predicted = re.search(r"mean final \|rho\| ([\d.]+) \+- ([\d.]+) against the predicted ([\d.]+)",
                                           help_text).groups()
        assert float(mean) == round(run["alignment_mean"], 4)
        assert float(predicted) == round(run["predicted_alignment"], 4)
        assert float(error) == pytest.approx(run["alignment_error"], abs=0.5e-4)
    if shorter:  # the row's same run with fewer steps: planned for them, it falls short of the target
        steps, reached = shorter.groups()
        short_args = args[1:args.index("--steps") + 1] + [steps] + args[args.index("--steps") + 2:]
        short = json.loads(CliRunner().invoke(main, short_args + ["--json"]).stdout)
        assert short["status"] == "limited", short["message"]
        assert abs(short["alignment_mean"] - float(reached)) <= 0.5e-4, short["alignment_mean"]
