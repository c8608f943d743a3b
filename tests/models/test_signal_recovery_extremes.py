"""Signal recovery where numbers leave float range or the ODE sits on its boundary: the sweep of the README's example,
the exact reduction at a large noise or score scale, and what the large-L form and the schedule planner say when
their exponentials overflow.

References: a Monte Carlo of full L × d token sequences with a max-subtracted softmax, written here in numpy (not the
reduction to L scalar scores, nor its control variates); J′ from central differences of it on common draws; the
overflow thresholds of the exponentials, log(float max) = 709.78.
"""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from attnphase.api import signal_recovery as api
from attnphase.errors import ParameterError
from attnphase.cli import main
from model_pages import PAGES
from attnphase.models.signal_recovery.dynamics import large_L_drift
from attnphase.numeric.ode import integrate_drift
from attnphase.store import ResultStore

# The third sweep point of the README's example (README.md, "Sweeps and the results store") at θ = 0.5: two of its
# trials start at these ρ₀, and the ODE to the run's t_final ends 6e-13 above ρ = 1 by rounding.
README_POINT = dict(d=64, L=1050, R=50, theta=0.5, theta_scaling="sqrt-d")
OVERSHOOTING_STARTS = (0.28748161103663483, 0.058371589635261054)
README_T_FINAL = 0.643387621268247


def test_the_ode_stays_in_its_domain_where_the_integrator_overshoots_rho_one():
    params = api.make_parameters(**README_POINT)
    for rho0 in OVERSHOOTING_STARTS:
        raw = integrate_drift(large_L_drift(params), rho0, (0.0, README_T_FINAL), t_eval=[0.0, README_T_FINAL]).x[-1]
        assert 1.0 < raw < 1.0 + 1e-10  # the integrator's rounding, which the ODE layer must absorb
        end = api.ode_trajectory(params, rho0, [0.0, README_T_FINAL]).x[-1]
        assert end == 1.0  # clipped onto the fixed point it reached
        assert np.isfinite(api.large_L(params, end)).all()  # a value every function of ρ accepts


def test_the_readme_sweep_point_runs_and_stores_its_values(tmp_path):
    """`attnphase sweep signal-recovery` of the README's example at θ = 0.5 (exit status 2 before the ODE was kept
    in [−1, 1]); about 2 s."""
    store = tmp_path / "s.sqlite"
    grid = ["--grid", "theta=0.5"] + [x for k, v in README_POINT.items() if k != "theta"
                                      for x in ("--set", f"{k}={v}")]
    out = CliRunner().invoke(main, ["sweep", "signal-recovery", *grid, "--workers", "1", "--store", str(store),
                                    "--json"])
    assert out.exit_code == 0, out.output
    with ResultStore(store) as results:
        (row,) = results.rows("signal-recovery")
    values = row.result
    assert row.params["theta"] == 0.5
    for name in ("ode_alignment_mean", "ode_limit_alignment_mean", "alignment_mean", "predicted_alignment"):
        assert 0.0 <= values[name] <= 1.0, name
    # the ODE from the trials' own starts against SGA (0.796 against 0.788 ± 0.06 when measured): within 4 of the
    # run's standard errors plus the O(1/L)-free spread of the ODE's ends, which this point does not resolve
    assert abs(values["ode_alignment_mean"] - values["alignment_mean"]) < 4 * values["alignment_error"] + 0.05


def _token_monte_carlo(d, L, R, theta_d, score_scale, sigma, rhos, n, seed, chunk=2048):
    """Per-sequence J = ‖Σ a_i x_i‖² and the noise-token mass Σ_{i>R} a_i of full token sequences (model A) at each
    query q = ρξ + √(1 − ρ²)e ⟂-completed, on common draws: arrays (len(rhos), n)."""
    rng = np.random.default_rng(seed)
    queries = np.zeros((len(rhos), d))
    queries[:, 0], queries[:, 1] = rhos, np.sqrt(1 - np.square(rhos))
    J, mass = [], []
    for lo in range(0, n, chunk):
        x = sigma * rng.standard_normal((min(chunk, n - lo), L, d))
        x[:, :R, 0] += theta_d
        z = score_scale * np.einsum("nld,kd->knl", x, queries)
        a = np.exp(z - z.max(axis=2, keepdims=True))
        a /= a.sum(axis=2, keepdims=True)
        f = np.einsum("knl,nld->knd", a, x)
        J.append((f * f).sum(axis=2))
        mass.append(a[:, :, R:].sum(axis=2))
    return np.concatenate(J, axis=1), np.concatenate(mass, axis=1)


def _mean_and_error(samples):
    return samples.mean(axis=-1), samples.std(axis=-1, ddof=1) / math.sqrt(samples.shape[-1])


@pytest.mark.parametrize("sigma, score_scale", [(100.0, 1.0), (1.0, 38.0)])
def test_exact_reduction_where_the_control_means_overflow(sigma, score_scale):
    """e^{β²σ²/2}, the exact mean of the e^{βy} control, is beyond float range (σ = 100; β = 38 > √(2·709.78)), so
    every control is left out and the plain sample means are given (status failed, NaN, before). Reference: 10⁵ full
    token sequences, J′ by central differences at h = 0.05 and 0.1 on the same draws (the truncation error of the
    first is about a third of their difference, which the tolerance adds in full). About 3 s each."""
    rho, h = 0.3, 0.05
    r = api.solve(16, 64, 8, 1.0, rho, sigma=sigma, score_scale=score_scale, reduction="finite")
    assert r.success and "their exact means or draws overflow" in r.message
    J, mass = _token_monte_carlo(16, 64, 8, 1.0, score_scale, sigma, [rho, rho - 2 * h, rho - h, rho + h, rho + 2 * h],
                                 100_000, seed=12345)
    (J_ref, J_err), (mass_ref, mass_err) = _mean_and_error(J[0]), _mean_and_error(mass[0])
    assert abs(r.J - J_ref) < 4 * math.hypot(r.J_error, J_err)
    assert abs(r.nuisance_mass - mass_ref) < 4 * math.hypot(r.nuisance_mass_error, mass_err)
    slope_h, slope_h_err = _mean_and_error((J[3] - J[2]) / (2 * h))
    slope_2h, _ = _mean_and_error((J[4] - J[1]) / (4 * h))
    assert abs(r.dJ - slope_h) < 4 * math.hypot(r.dJ_error, slope_h_err) + abs(slope_2h - slope_h)
    # the errors are those of the plain means (no control can shrink them): within 20% of the reference's spread
    assert r.nuisance_mass_error == pytest.approx(mass[0].std() / math.sqrt(r.samples), rel=0.2)


@pytest.mark.parametrize("score_scale", [1e4, 1e300])
def test_where_the_softmax_rarely_splits_its_attention_the_derivative_is_not_reported(score_scale):
    """At β = 10⁴ the softmax splits its attention between an informative and a noise token in under one of 4096 draws,
    at β = 1e300 (saturated in float64) in none: the pathwise J′ misses the switching between them (it gave 0.95 ± 0.03
    at β = 1e300 where central differences of J on common draws give 1.30), so J′ and the drift are not reported
    (status limited, the message says why), and J, with its error, still is: against 2·10⁴ full token sequences."""
    r = api.solve(16, 64, 8, 1.0, 0.3, score_scale=score_scale, reduction="finite")
    assert r.status == "limited" and "misses the switching" in r.message, r.message
    # the hint names what limits the draws here: the score scale βσ, not the signal (θ_d|ρ|/σ = 0.3)
    assert "what limits them is the score scale: βσ = " in r.message and "is 0.3 noise spreads" in r.message
    assert math.isnan(r.dJ) and math.isnan(r.drift) and r.dJ_error is None and r.drift_error is None
    J, mass = _token_monte_carlo(16, 64, 8, 1.0, score_scale, 1.0, [0.3], 20_000, seed=7)
    (J_ref, J_err), (mass_ref, mass_err) = _mean_and_error(J[0]), _mean_and_error(mass[0])
    assert abs(r.J - J_ref) < 4 * math.hypot(r.J_error, J_err)
    assert abs(r.nuisance_mass - mass_ref) < 4 * math.hypot(r.nuisance_mass_error, mass_err)


def test_where_a_large_signal_makes_the_split_rare_the_hint_names_it_and_sizes_the_samples():
    """At β = σ = 1 and θ_d = 8, ρ = −1 (model A) the informative tokens' scores sit 8 noise spreads below the noise
    tokens', and 64 draws hold about 0.013 effective ones: the hint had blamed the score scale (1 here) and asked for
    samples "about in proportion to" it (audit u16 L7). It must name the signal's shift and ask for 64 × 5/effective
    samples. Reference: the effective fraction per draw, 4·m(1 − m) with m the softmax's informative mass, from 2^19
    full score vectors in numpy; the tolerance is 4 standard errors of a 64-draw mean of it plus the hint's rounding
    to 2 digits. Twice the samples it asks for give J′ (status converged)."""
    import re

    r = api.solve(16, 64, 8, 8.0, -1.0, reduction="finite", samples=64, seed=0)
    assert r.status == "limited" and math.isnan(r.dJ), r.message
    assert "what limits them is the signal: its score shift βθ_d|ρ| = 8 is 8 noise spreads βσ = 1 wide" in r.message
    assert "score scale, or a smaller score scale" not in r.message and "smaller score scale" not in r.message
    effective = float(re.search(r"only (\S+) effective draws of 64", r.message).group(1))
    stated = float(re.search(r"about ([\d ]+) samples \(64 × 5/", r.message).group(1).replace(" ", ""))
    rounding = 0.5 * 10 ** (math.floor(math.log10(stated)) - 1)  # half a unit of the count's second digit
    assert abs(stated - 64 * 5 / effective) <= rounding + 0.005 * stated  # the effective draws printed to 3 digits
    rng = np.random.default_rng(11)
    weights = []
    for _ in range(8):
        y = rng.standard_normal((2**16, 64))
        y[:, :8] -= 8.0
        a = np.exp(y - y.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        m = a[:, :8].sum(axis=1)
        weights.append(4 * m * (1 - m))
    w = np.concatenate(weights)
    fraction, spread = w.mean(), w.std()
    needed = 5 / fraction
    tolerance = 4 * needed * spread / (fraction * math.sqrt(64)) + rounding
    assert abs(stated - needed) < tolerance, (stated, needed, tolerance)
    assert not 64 * 0.5 <= needed <= 64 * 50  # far from "about in proportion to the score scale" (β = 1)
    enough = api.solve(16, 64, 8, 8.0, -1.0, reduction="finite", samples=int(2 * stated), seed=0)
    assert enough.status == "converged" and math.isfinite(enough.dJ), enough.message


@pytest.mark.parametrize("changed, cause, option", [
    ({"sigma": 100.0}, "overflow of e^{β²σ²}: β²σ² = 1e+04", "--sigma"),
    ({"score_scale": 30.0}, "overflow of e^{β²σ²}: β²σ² = 900", "--sigma"),
    ({"theta": 250.0, "sigma": 0.01, "rho": 1.0}, "overflow of e^{βθ_dρ}: βθ_d|ρ| = 250", "--theta"),
    # audit b17 M1: at ρ = 0 no exponential of θ_d is there; J′ ~ θ_d³ overflows (it said e^{βθ_dρ}, βθ_d|ρ| = 0)
    ({"theta": 1e300, "rho": 0.0}, "overflow of the powers of θ_d (J ~ θ_d², J′ ~ θ_d³): θ_d = 1e+300", "--theta"),
])
def test_large_L_overflow_names_the_exponential_that_overflows(changed, cause, option):
    """At σ = 100 or β = 30 the form's e^{3β²σ²} is beyond e^{709.78} while βθ_d|ρ| is 0.3 or 9 (the message said
    e^{βθ_dρ} overflowed); at θ_d = 250, ρ = 1, σ = 0.01 its e^{4βθ_dρ} is (and β²σ² is 1e-4). Nothing is computed
    there: the option is refused (exit status 2) with the exponential that overflows and the largest value taken. At
    ρ = 0 it is θ_d's powers that overflow."""
    given = {"d": 16, "L": 64, "R": 8, "theta": 1.0, "rho": 0.3, "sigma": 1.0, "score_scale": 1.0, **changed}
    options = [x for name, value in given.items() for x in ("--" + name.replace("_", "-"), str(value))]
    out = CliRunner().invoke(main, ["solve", "signal-recovery", *options, "--reduction", "large-L", "--json"])
    assert out.exit_code == 2 and f"invalid value for {option}" in out.output and cause in out.output, out.output
    assert "Traceback" not in out.output
    params = api.make_parameters(16, 64, 8, given["theta"], sigma=given["sigma"], score_scale=given["score_scale"])
    with np.errstate(all="ignore"):
        assert not np.isfinite(api.large_L(params, given["rho"])[[0, 1, 2, 4]]).all()


def test_the_planner_gives_up_within_its_budget_and_says_why(small_plan_budget):
    """`simulate` at its defaults where the large-L drift is far outside its expansion (d = 16, L = 32, score scale 10:
    its J′(1) = 1.4e41, the exact one about 3): the planner's ODE cannot be integrated. It spent 166 s before it gave
    up (score scale 12 at L = 64: 276 s), quoting the large-L J′(1) alone; it stops after PLAN_EVALUATIONS drift
    evaluations (7 s in all), runs the manual default (status limited) and gives the exact finite-L J′(1), checked
    here against the reduction with 4096 draws of another seed, and the large-L drift against the gradients' root mean
    square √N (which bounds the exact drift, (1 − ρ²)J′ = ⟨E G_⊥, ξ⟩)."""
    import re

    from attnphase.models.signal_recovery.schedules import PLAN_EVALUATIONS

    out = CliRunner().invoke(main, ["simulate", "signal-recovery", "--d", "16", "--L", "32", "--R", "8", "--theta", "1",
                                    "--trials", "8", "--steps", "300", "--score-scale", "10", "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    plan = payload["plan"]
    assert payload["schedule"] == "manual" and plan["status"] == "failed" and plan["eta0"] is None  # what ran
    assert (payload["eta0"], payload["k0"], payload["gamma"]) == (0.05, 50.0, 1.0)  # the manual default ran
    assert payload["status"] == "limited" and 0.0 <= payload["alignment_mean"] <= 1.0
    message = plan["message"]
    assert f"could not be integrated within {PLAN_EVALUATIONS} drift evaluations" in message, message
    assert "no schedule planned" in payload["message"] and "ran the manual default" in payload["message"]
    params = api.make_parameters(16, 32, 8, 1.0, score_scale=10.0)
    exact_slope, exact_error = map(float, re.search(r"exact finite-L J'\(1\) = (\S+) \+- (\S+) ", message).groups())
    reference = api.finite_reduction(params, [1.0], n_samples=4096, seed=7)
    assert abs(exact_slope - reference.dJ[0]) < 4 * math.hypot(exact_error, reference.dJ_error[0])
    large_slope = float(re.search(r"the large-L J'\(1\) = (\S+),", message).group(1))
    assert large_slope == pytest.approx(api.large_L(params, 1.0)[1], rel=1e-3) and large_slope > 1e40
    ratio = float(re.search(r"is (\S+) times the gradients' root mean square", message).group(1))
    assert ratio > 1e30  # the exact drift is at most 1 times it
    # the model page quotes both slopes of this run to their digits
    page = " ".join((PAGES / "signal_recovery.md").read_text().split())
    mantissa, power, exact, error = re.search(r"score scale 10 at L = 32 \(its J′\(1\) = ([\d.]+) × 10([⁰¹²³⁴⁵⁶⁷⁸⁹]+), "
                                              r"the exact J′\(1\) = ([\d.]+) ± ([\d.]+)\)", page).groups()
    power = int("".join(str("⁰¹²³⁴⁵⁶⁷⁸⁹".index(c)) for c in power))
    assert round(large_slope / 10.0**power, 1) == float(mantissa)
    # (the error rounded up, as an error is)
    assert (round(exact_slope, 1), math.ceil(10 * exact_error) / 10) == (float(exact), float(error)), exact_error


@pytest.mark.parametrize("changed", [{"score_scale": 30.0}, {"sigma": 100.0}])
def test_an_unplanned_schedule_names_the_exponential_that_overflows(changed):
    params = api.make_parameters(16, 64, 8, 1.0, **changed)
    plan = api.choose_schedule(params, steps=100, noise=api.tangent_noise(params, pilot=64))
    assert plan.status == "failed" and math.isnan(plan.eta0)
    assert "the large-L J'(1) = not finite (overflow of e^{β²σ²}" in plan.message, plan.message


def test_a_sweep_point_without_a_schedule_fails_with_the_planners_reason(small_plan_budget):
    """Where no schedule can be planned (score scale 12 at L = 64: the large-L drift is 1e60 times what bounds the
    exact one), a sweep point fails with the planner's reason, which the sweep records, instead of passing η₀ = NaN on
    to the simulation (which refused it as a bad --eta0 the user never gave)."""
    with pytest.raises(RuntimeError, match="no step schedule could be planned for this point: .*far outside its "
                                           "expansion"):
        api.sweep_point(16, 64, 8, 1.0, score_scale=12.0, trials=2, max_steps=100)


@pytest.mark.parametrize("sign_model", ["A", "B"])
def test_the_closed_form_without_noise_tokens_at_negative_alignment(sign_model):
    """R = L, ρ = −0.9, βθ_d|ρ| = 54: the generated large-L form cancels about e^{54} of its size, and float64 gave
    J = 76.0 ± 1.4e-4 (J′ = 720) for 399.73 (0.300), status converged. The reported values are now evaluated in
    mpmath until two precisions agree; against the exact reduction (all tokens alike: 1024 draws suffice)."""
    args = dict(sigma=0.05, score_scale=3.0, sign_model=sign_model)
    closed = api.solve(16, 4096, 4096, 20.0, -0.9, reduction="large-L", **args)
    exact = api.solve(16, 4096, 4096, 20.0, -0.9, reduction="finite", samples=1024, **args)
    assert closed.success and exact.success, (closed.message, exact.message)
    assert abs(closed.J - exact.J) <= closed.J_error + 4 * exact.J_error, (closed.J, exact.J)
    assert abs(closed.dJ - exact.dJ) <= closed.dJ_error + 4 * exact.dJ_error, (closed.dJ, exact.dJ)


def test_without_noise_tokens_the_derivative_needs_no_switching():
    """R = L, model A: every token has the same shift, so J′ has no β-proportional terms, and the switching gate must
    not withhold it (it did: "0 effective draws"); J′ against central differences of J on the same draws."""
    r = api.solve(16, 64, 64, 1.0, 0.3, reduction="finite")
    assert r.success, r.message
    h = 0.01
    plus, minus = (api.solve(16, 64, 64, 1.0, 0.3 + s, reduction="finite") for s in (h, -h))
    assert r.dJ == pytest.approx((plus.J - minus.J) / (2 * h), abs=4 * r.dJ_error)


def test_a_simulation_gives_no_prediction_where_the_exact_drift_is_withheld():
    """d = 16, L = 256, R = 32, σ = 0.5, score scale 8: the exact reduction withholds J′ near ρ = −1 (the softmax
    rarely splits its attention there), and the prediction fell back to the large-L drift, 1e6 times the exact one:
    0.99998 against SGA's 0.19 ± 0.05, status converged. Now there is no prediction, and the message says why."""
    r = api.simulate(16, 256, 32, 1.0, 8, 200, sigma=0.5, score_scale=8.0, seed=0, device="cpu")
    assert r.predicted_alignment is None
    assert "no prediction: the exact finite-L drift is not available" in r.message, r.message


def test_an_overflow_of_the_product_alone_is_named_as_such():
    """θ = 150, σ = 24, ρ = 1, β = 1: the form is finite in float64 without the signal shift (β²σ² = 576) and without
    the noise's tilt (βθ_dρ = 150), not with both (the message had blamed e^{βθ_dρ})."""
    with pytest.raises(ParameterError) as info:
        api.solve(16, 64, 16, 150.0, 1.0, sigma=24.0, reduction="large-L")
    assert info.value.name == "theta"
    assert "overflow of the product of e^{β²σ²} and e^{βθ_dρ}, neither alone" in info.value.allowed, info.value


def test_the_drift_at_the_poles_is_zero_also_where_the_derivative_is_withheld():
    """(1 − ρ²)J′ vanishes at ρ = ±1 whatever J′ is: reported as 0 ± 0 where J′ itself is withheld (it was null)."""
    c = api.curve(api.make_parameters(16, 64, 8, 1.0, score_scale=1e4), [-1.0, 0.3, 1.0], reduction="finite")
    assert c.status == "limited" and np.all(np.isnan(c.dJ))
    assert list(c.drift[[0, 2]]) == [0.0, 0.0] and list(c.drift_error[[0, 2]]) == [0.0, 0.0]
    assert math.isnan(c.drift[1])


def test_the_float64_closed_form_without_noise_tokens_is_its_exact_form():
    """R = L, model A: every token is shifted by θ_dρ, so J = (θ_dρ + βσ²)² + θ_d²(1 − ρ²) + σ²(d − 1)e^{β²σ²}/L and
    J′ = 2βσ²θ_d exactly. The generated float64 kernel (what the ODEs integrate) had the mixture moment
    π e^{βθ_dρ} + (1 − π) as π e^{βθ_dρ} − π + 1, which cancelled to rounding where π = 1: J = 76.0, J′ = 720 at
    ρ = −0.9 for 399.73 and 0.3. Tolerance: a thousand roundings of terms of size J·(1 + βθ_d)."""
    d, L, theta, sigma, beta = 16, 4096, 20.0, 0.05, 3.0
    values = api.large_L(api.make_parameters(d, L, L, theta, sigma=sigma, score_scale=beta), np.linspace(-1, 1, 41))
    rho = np.linspace(-1, 1, 41)
    noise_term = sigma**2 * (d - 1) * math.exp((beta * sigma) ** 2) / L
    J = (theta * rho + beta * sigma**2) ** 2 + theta**2 * (1 - rho**2) + noise_term
    rounding = 1000 * np.finfo(float).eps * J * (1 + beta * theta)
    assert np.all(np.abs(values[:, 0] - J) <= rounding)
    assert np.all(np.abs(values[:, 1] - 2 * beta * sigma**2 * theta) <= rounding)


def test_sign_model_B_without_noise_tokens_has_no_isolated_fixed_points():
    """R = L, model B: the scores share the shift θ_dρs, which the softmax does not see, and the sequence's sign
    averages the cross term out, so J does not depend on ρ (checked on the exact reduction at two alignments, where
    model A's J differs by 2βσ²θ_d·1.2 = 2.4). The float64 drift was then its rounding, whose sign changes were
    reported as dozens of fixed points; now the status is failed with the reason, and a sweep point says why."""
    fp = api.fixed_points(api.make_parameters(252, 4096, 4096, 13.1, sigma=0.65, score_scale=1.692, sign_model="B"))
    assert fp.status == "failed" and "J does not depend on rho" in fp.message, fp
    low, high = (api.solve(16, 64, 64, 1.0, r, sign_model="B", reduction="finite") for r in (-0.5, 0.7))
    assert abs(low.J - high.J) <= 4 * math.hypot(low.J_error, high.J_error) < 0.1, (low.J, high.J)
    with pytest.raises(RuntimeError, match="fixed points, which this point reports, are not defined: sign model B"):
        api.sweep_point(16, 64, 64, 1.0, sign_model="B", trials=2, max_steps=200)


def test_fixed_points_where_the_float64_drift_is_rounding():
    """L = 10⁶, R = 1, β²σ² = 38.6: J carries e^{β²σ²} ≈ 6e16 while the drift near ρ = 1 is of order 1e3, below the
    float64 drift's rounding, whose sign changes gave spurious fixed points and called ρ = 1 unstable (slope +5.5e5).
    Against the spec's large-L form of model A typed in here and differentiated in mpmath at 60 digits: the same
    sign changes of the drift on the same grid, and the slopes at them."""
    d, L, R, theta, sigma, beta, n_grid = 299, 10**6, 1, 28.721, 2.577, 2.411, 201
    with mpmath.workdps(60):
        b, s, t, pi = (mpmath.mpf(x) for x in (beta, sigma, theta, R / L))

        def J(r):
            weight = pi * mpmath.exp(b * t * r)
            w = weight / (weight + 1 - pi)
            V = mpmath.exp((b * s) ** 2) * (pi * mpmath.exp(2 * b * t * r) + 1 - pi) / (weight + 1 - pi) ** 2
            return b**2 * s**4 + 2 * b * s**2 * t * r * w + t**2 * w**2 + s**2 * (d - 1) * V / L

        def drift(r):
            return (1 - r * r) * mpmath.diff(J, r)

        grid = np.linspace(-1, 1, n_grid)
        values = [drift(mpmath.mpf(x)) for x in grid]
        brackets = [(grid[i], grid[i + 1]) for i in range(n_grid - 1)
                    if values[i] != 0 and values[i + 1] != 0 and (values[i] > 0) != (values[i + 1] > 0)]
        zeros = [x for x, v in zip(grid, values) if v == 0]
        fp = api.fixed_points(api.make_parameters(d, L, R, theta, sigma=sigma, score_scale=beta), n_grid=n_grid)
        assert fp.success, fp.message
        assert len(fp.rho) == len(brackets) + len(zeros) == 3
        for rho, slope in zip(fp.rho, fp.slope):
            assert rho in zeros or any(lo <= rho <= hi for lo, hi in brackets), rho
            reference = mpmath.diff(drift, mpmath.mpf(rho))
            assert abs(slope - reference) <= 1e-9 * abs(reference), (rho, slope, reference)
    assert fp.stable == [True, False, True]
