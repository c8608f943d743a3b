"""Signal recovery: symbolic large-L forms, the exact reduction, fixed points, API validation.

References: the spec's closed forms typed in independently here; direct d-dimensional Monte Carlo of
‖f_q‖²; finite differences on common random numbers; the symmetry of sign models B and C.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import torch

from attnphase.api import signal_recovery as api
from attnphase.errors import ParameterError
from attnphase.models.signal_recovery import population
from attnphase.models.signal_recovery import symbolic as model
from attnphase.models.signal_recovery.network import PlantedTokens
from attnphase.numeric.digits import error_significant_up
from attnphase.numeric.scaling import fit_power_law
from attnphase.validate.sphere_sga import initial_queries

RNG = np.random.default_rng(20240611)
POINTS = [
    {model.beta: b, model.sigma: s, model.theta_d: t, model.pi_inf: p, model.pi_noise: 1 - p, model.d: dd, model.L: ll,
     model.rho: r}
    for b, s, t, p, dd, ll, r in zip(
        RNG.uniform(0.3, 2, 6), RNG.uniform(0.5, 1.5, 6), RNG.uniform(0, 3, 6), RNG.uniform(0.02, 0.9, 6),
        RNG.integers(2, 2000, 6), RNG.integers(100, 20000, 6), RNG.uniform(-1, 1, 6),
    )
]


def spec_objective_A():
    """The spec's §3 large-L form, typed in: J = β²σ⁴ + 2βσ²θρw + θ²w² + σ²(d−1)V/L."""
    b, s, t, p, d, L, r = model.beta, model.sigma, model.theta_d, model.pi_inf, model.d, model.L, model.rho
    w = p * sp.exp(b * t * r) / (p * sp.exp(b * t * r) + 1 - p)
    V = sp.exp(b**2 * s**2) * (p * sp.exp(2 * b * t * r) + 1 - p) / (p * sp.exp(b * t * r) + 1 - p) ** 2
    return b**2 * s**4 + 2 * b * s**2 * t * r * w + t**2 * w**2 + s**2 * (d - 1) / L * V


def independent_objective_C():
    """Per-token signs, derived by hand: u = βθρ, signed mass w_C = π sinh u / (π cosh u + 1 − π)."""
    b, s, t, p, d, L, r = model.beta, model.sigma, model.theta_d, model.pi_inf, model.d, model.L, model.rho
    u = b * t * r
    w = p * sp.sinh(u) / (p * sp.cosh(u) + 1 - p)
    V = sp.exp(b**2 * s**2) * (p * sp.cosh(2 * u) + 1 - p) / (p * sp.cosh(u) + 1 - p) ** 2
    return b**2 * s**4 + 2 * b * s**2 * t * r * w + t**2 * w**2 + s**2 * (d - 1) / L * V


@pytest.mark.parametrize("point", POINTS)
def test_derived_large_L_forms_equal_independent_closed_forms(point):
    J_A = model.large_L_objective("A")
    assert float(J_A.subs(point)) == pytest.approx(float(spec_objective_A().subs(point)), rel=1e-12)
    assert float(model.large_L_objective("C").subs(point)) == pytest.approx(
        float(independent_objective_C().subs(point)), rel=1e-12)
    flipped = {**point, model.rho: -point[model.rho]}
    J_B = float(model.large_L_objective("B").subs(point))
    assert J_B == pytest.approx(0.5 * (float(J_A.subs(point)) + float(J_A.subs(flipped))), rel=1e-12)
    # Nuisance mass at the spec's ρ = 1 formula (model A): (1 − π)/(π e^{βθ} + 1 − π).
    at_one = {**point, model.rho: 1}
    b, t, p = (float(point[k]) for k in (model.beta, model.theta_d, model.pi_inf))
    assert float(model.nuisance_mass("A").subs(at_one)) == pytest.approx((1 - p) / (p * math.exp(b * t) + 1 - p), rel=1e-12)


def test_sign_symmetry_and_preferred_sign():
    """B and C are exactly even in ρ; A has J′(0) = 2βσ²θ_dπ + 2βθ_d³π²(1 − π) > 0 (V′(0) = 0)."""
    for m in ("B", "C"):
        J = model.large_L_objective(m)
        odd_part = J - J.subs(model.rho, -model.rho)
        for point in POINTS[:3]:  # zero to 40 digits at random points (a symbolic simplify is far slower)
            assert abs(odd_part.evalf(50, subs=point)) < sp.Float(10) ** -40 * abs(J.evalf(50, subs=point))
    p = api.make_parameters(300, 3000, 150, 0.4, score_scale=0.7, sigma=1.2)
    J, dJ = api.large_L(p, 0.0)[:2]
    pi = 150 / 3000
    assert dJ == pytest.approx(2 * 0.7 * 1.2**2 * 0.4 * pi + 2 * 0.7 * 0.4**3 * pi**2 * (1 - pi), rel=1e-12)
    for m in ("B", "C"):
        pm = api.make_parameters(300, 3000, 150, 0.4, score_scale=0.7, sigma=1.2, sign_model=m)
        assert abs(api.large_L(pm, 0.0)[1]) < 1e-14


def test_generated_kernel_matches_sympy_evaluation():
    p = api.make_parameters(700, 5000, 300, 0.3, "sqrt-d", sigma=0.9, score_scale=1.1, sign_model="C")
    point = {model.beta: 1.1, model.sigma: 0.9, model.theta_d: p.theta_d, model.pi_inf: 300 / 5000,
             model.pi_noise: 4700 / 5000, model.d: 700, model.L: 5000, model.rho: 0.37}
    values = api.large_L(p, 0.37)
    for v, expr in zip(values, model.large_L_expressions("C")):
        assert v == pytest.approx(float(expr.subs(point)), rel=1e-11)
    assert p.theta_d == pytest.approx(0.3 * math.sqrt(700), rel=1e-15)


def direct_monte_carlo(params: api.Parameters, rho: float, n: int, seed: int):
    """‖f_q‖² and the noise-token mass over n d-dimensional sequences (float64 torch)."""
    gen = torch.Generator().manual_seed(seed)
    tokens = PlantedTokens(params)
    q = initial_queries(1, params.d, gen, "cpu", rho0=rho)[0]
    X = tokens.fill(torch.empty(n, params.L, params.d, dtype=torch.float64), gen)
    a = torch.softmax(params.score_scale * (X @ q), dim=1)
    f = (a.unsqueeze(-1) * X).sum(dim=1)
    return (f * f).sum(dim=1).numpy(), a[:, params.R:].sum(dim=1).numpy()


@pytest.mark.parametrize("sign_model", ["A", "B", "C"])
def test_reduction_equals_direct_monte_carlo(sign_model):
    params = api.make_parameters(5, 12, 4, 1.2, sigma=1.1, score_scale=0.8, sign_model=sign_model)
    rho, n = 0.4, 60_000
    f_sq, nuisance = direct_monte_carlo(params, rho, n, seed=7)
    red = api.finite_reduction(params, [rho], n_samples=n, seed=11)
    for samples, mean, err in ((f_sq, red.J[0], red.J_error[0]), (nuisance, red.nuisance_mass[0], red.nuisance_mass_error[0])):
        se = samples.std(ddof=1) / math.sqrt(n)
        band = 4 * math.hypot(se, err)
        assert abs(samples.mean() - mean) <= band
        assert band < 0.015 * mean  # the comparison resolves the value to better than 1.5%
        for shifted in (mean - 2 * band, mean + 2 * band):  # a reduction off by twice the band is rejected
            assert abs(samples.mean() - shifted) > band


@pytest.mark.parametrize("sign_model", ["A", "C"])
def test_control_kurtosis_equals_the_kurtosis_of_sampled_token_averages(sign_model):
    """The exact kurtosis of the reduction's controls against direct draws of the tokens' scores: per sequence, the
    sums over the noise tokens and over the informative tokens of e^{βy} and y e^{βy} (model C: also of s e^{βy},
    s y e^{βy}), divided by L, each token centred on its exact mean given its shift (y = ρθ_d s + σg). Error from 20
    batches of the draws."""
    params = api.make_parameters(5, 12, 4, 1.2, sigma=1.0, score_scale=0.5, sign_model=sign_model)
    rho, n, batches = 0.7, 1_000_000, 20
    rng = np.random.default_rng(3)
    beta, sigma = params.score_scale, params.sigma
    signs = np.ones((n, params.R)) if sign_model == "A" else rng.choice([-1.0, 1.0], (n, params.R))
    shift = np.zeros((n, params.L))
    shift[:, :params.R] = rho * params.theta_d * signs
    y = shift + sigma * rng.standard_normal((n, params.L))
    lognormal_mean = np.exp(beta * shift + (beta * sigma) ** 2 / 2)  # E e^{βy} given the shift
    e = np.exp(beta * y) - lognormal_mean
    ye = y * np.exp(beta * y) - (shift + beta * sigma**2) * lognormal_mean
    R, L = params.R, params.L
    columns = [e[:, R:].sum(axis=1) / L, ye[:, R:].sum(axis=1) / L, e[:, :R].sum(axis=1) / L, ye[:, :R].sum(axis=1) / L]
    if sign_model == "C":
        columns += [(e[:, :R] * signs).sum(axis=1) / L, (ye[:, :R] * signs).sum(axis=1) / L]
    assert len(population.control_kurtosis(params, rho)) == len(columns)

    def kurtosis(x):
        x = x - x.mean()
        return np.mean(x**4) / np.mean(x**2) ** 2

    exact = population.control_kurtosis(params, rho)
    for k, column in enumerate(columns):
        per_batch = [kurtosis(b) for b in np.split(column, batches)]
        error = np.std(per_batch, ddof=1) / math.sqrt(batches)
        assert abs(kurtosis(column) - exact[k]) < 4 * error + 1e-3 * exact[k]
        assert error < 0.1 * (exact[k] - 3)  # the comparison resolves the excess kurtosis to 10 %


def test_the_noise_mass_bar_holds_with_one_noise_token_at_a_large_score_scale():
    """L = 64, R = 63 (one noise token), β = 1.5, ρ = 0.3 (audit sr15): the noise mass was 0.95 of its errors high on
    average over 20 seeds (rms 1.49, one at 3.6): the all-token and informative-token controls passed their kurtosis
    rule one by one, but the regression used their difference, the lone noise token's e^{βσg}/L, of kurtosis
    ~e^{4β²σ²}. Reference, written here: given the informative tokens' S = Σ_I e^{β(θ_dρ + σg_i)} the mass is
    E_g[e^{βσg}/(S + e^{βσg})] over the noise token's g, by Gauss-Hermite (120 nodes, exact to far below the
    Monte Carlo), averaged over 2¹⁶ draws of S (a bounded integrand: its standard error is the reference's error).
    The deviations of 20 seeds in units of the combined errors: mean within 3/√20 of 0, mean square within three of
    its standard errors (√(2/20)) of 1."""
    params = api.make_parameters(16, 64, 63, 1.0, score_scale=1.5)
    rho, n = 0.3, 2**16
    a = params.score_scale * params.sigma
    nodes, weights = np.polynomial.hermite_e.hermegauss(120)
    rng = np.random.default_rng(2024)
    S = np.exp(params.score_scale * params.theta_d * rho) * np.exp(a * rng.standard_normal((n, params.R))).sum(axis=1)
    noise = np.exp(a * nodes)
    masses = (noise[None, :] / (S[:, None] + noise[None, :])) @ (weights / weights.sum())
    reference, reference_error = masses.mean(), masses.std(ddof=1) / math.sqrt(n)
    z = []
    for seed in range(20):
        run = api.finite_reduction(params, [rho], seed=seed)
        z.append((run.nuisance_mass[0] - reference) / math.hypot(run.nuisance_mass_error[0], reference_error))
    assert abs(np.mean(z)) <= 3 / math.sqrt(20), z
    assert abs(np.mean(np.square(z)) - 1) <= 3 * math.sqrt(2 / 20), z


# score scale 3 (heavier-tailed weights) in the slow suite: 30 seeds and a 64× reference each (3 s)
@pytest.mark.parametrize("score_scale", [1.0, pytest.param(3.0, marks=pytest.mark.slow)])
def test_finite_reduction_errors_cover_a_reference_with_64_times_the_draws(score_scale):
    """The reported standard errors of J, J′ and the noise mass hold over 30 seeds: the deviations from a 64× larger
    run, in units of the combined errors, have a spread within three of its own standard errors of 1 and none beyond 5.
    At β = 3 (controls of kurtosis ~1e15, left out) the regression on them had given spreads of 1.8-5.2; at β = 1 the
    controls are used."""
    params = api.make_parameters(16, 64, 4, 1.0, score_scale=score_scale, sign_model="C")
    rho, seeds = 0.6, 30
    assert population.reliable_controls(params, rho, 4096).all() == (score_scale == 1.0)
    reference = api.finite_reduction(params, [rho], n_samples=64 * 4096, seed=12345)
    z = []
    for seed in range(seeds):
        run = api.finite_reduction(params, [rho], n_samples=4096, seed=seed)
        z.append([(getattr(run, f)[0] - getattr(reference, f)[0])
                  / math.hypot(getattr(run, f + "_error")[0], getattr(reference, f + "_error")[0])
                  for f in ("J", "dJ", "nuisance_mass")])
    z = np.array(z)
    spread_error = 1 / math.sqrt(2 * (seeds - 1))
    assert np.all(np.abs(z.std(axis=0, ddof=1) - 1) < 3 * spread_error)
    assert np.all(np.abs(z) < 5)


@pytest.mark.parametrize("sign_model", ["A", "B", "C"])
def test_pathwise_derivative_equals_finite_difference_on_common_samples(sign_model):
    """Per sample, dJ/dρ by the chain rule through S₁, S₂, S₃ equals (J(ρ+h) − J(ρ−h))/2h on the same draws."""
    params = api.make_parameters(40, 300, 30, 0.8, sign_model=sign_model)
    h = 1e-5
    for rho in (-0.6, 0.1, 0.9):
        plus = api.reduction_samples(params, rho + h, n_samples=64, seed=5)[0]
        minus = api.reduction_samples(params, rho - h, n_samples=64, seed=5)[0]
        value, slope, _ = api.reduction_samples(params, rho, n_samples=64, seed=5)
        fd = (plus - minus) / (2 * h)
        # Truncation ~ h² J‴ and cancellation ~ ε J / h bound the agreement.
        assert np.allclose(fd, slope, rtol=1e-6, atol=1e-7 * np.abs(value).max())


def test_large_L_form_within_half_percent_at_L_2000_and_above():
    """Spec claim: large-L form vs exact reduction within 0.5% at L ≥ 2000 (here where attention stays spread)."""
    cases = [
        (api.make_parameters(200, 2000, 100, 0.5), np.array([-0.8, 0.0, 0.5, 1.0]), 512),
        (api.make_parameters(64, 2000, 100, 1.0, sign_model="B"), np.array([0.0, 0.5, 1.0]), 256),
        (api.make_parameters(1000, 10500, 500, 0.25, "sqrt-d"), np.array([0.0, 1.0]), 128),
    ]
    for params, rhos, n in cases:
        red = api.finite_reduction(params, rhos, n_samples=n, seed=1)
        big = api.large_L(params, rhos)[:, 0]
        assert np.all(np.abs(big - red.J) <= 0.005 * red.J + 3 * red.J_error)
        assert np.all(red.J_error < 0.001 * red.J)  # the check resolves 0.5%


def test_large_L_gap_exceeds_half_percent_when_attention_concentrates_and_scales_as_one_over_L():
    """With θ_d = 0.25√1000 and R/L = 0.05 the attention sits on ~R tokens: the gap at L = 2000 is
    about 2% (the 0.5% claim fails there). It vanishes as L grows at fixed d and R/L; over L = 250..2000
    the fitted exponent is about −1.6 (the d/L·V term carries its own O(1/L) relative correction, so
    the gap is a mix of L^-1 and d·L^-2 terms here), not yet the asymptotic −1."""
    rho = 1.0
    Ls = [250, 500, 1000, 2000]
    gaps, errors = [], []
    for L in Ls:
        params = api.make_parameters(1000, L, L // 20, 0.25, "sqrt-d")
        red = api.finite_reduction(params, [rho], n_samples=1024, seed=2)
        big = api.large_L(params, rho)[0]
        gaps.append(big - red.J[0])
        errors.append(red.J_error[0])
        if L == 2000:
            assert (gaps[-1] - 3 * errors[-1]) > 0.005 * red.J[0]
    gaps, errors = np.array(gaps), np.array(errors)
    assert np.all(gaps > 3 * errors)
    assert np.all(np.diff(gaps) < 0)
    fit = fit_power_law(Ls, gaps, y_error=errors)
    assert fit.exponent_high < -1.0


def _check_pm_one_stable_zero_unstable(sign_model):
    """At the headline size ±1 are stable fixed points and 0 the one interior one, unstable."""
    fps = api.fixed_points(api.make_parameters(1000, 10500, 500, 0.25, sign_model=sign_model))
    assert fps.rho[0] == -1.0 and fps.rho[-1] == 1.0 and fps.stable[0] and fps.stable[-1]
    interior = [(r, s) for r, s in zip(fps.rho, fps.stable) if abs(r) < 1]
    assert len(interior) == 1 and abs(interior[0][0]) < 1e-12 and not interior[0][1]


@pytest.mark.slow
def test_fixed_points_of_model_C_at_the_headline_size():
    """Model C as model B in `test_fixed_points_and_stability` (its 2001-point mpmath drift takes about 2 s)."""
    _check_pm_one_stable_zero_unstable("C")


def test_fixed_points_and_stability():
    # Model A at the headline size: +ξ is the only stable fixed point.
    fps = api.fixed_points(api.make_parameters(1000, 10500, 500, 0.25))
    assert fps.rho == [-1.0, 1.0] and fps.stable == [False, True]
    # drift'(±1) = ∓2 J′(±1): the slopes reported come from the generated derivative.
    p = api.make_parameters(1000, 10500, 500, 0.25)
    for r, slope in zip(fps.rho, fps.slope):
        assert slope == pytest.approx(-2 * r * api.large_L(p, r)[1], rel=1e-12)
    # Model B: ±1 stable, 0 unstable with slope J″(0) > 0 (model C, the same: the slow test below).
    _check_pm_one_stable_zero_unstable("B")
    # Model A at large d/L: −ξ becomes stable, separated by an interior unstable zero of J′.
    pa = api.make_parameters(5000, 1000, 50, 0.25)
    fps = api.fixed_points(pa)
    assert fps.stable[0] and fps.stable[-1] and len(fps.rho) == 3
    r_star = fps.rho[1]
    assert -1 < r_star < 0 and not fps.stable[1]
    assert abs(api.large_L(pa, r_star)[1]) < 1e-10
    # No signal: the drift vanishes identically; reported as failed with the reason, not as 2001 fixed points.
    none = api.fixed_points(api.make_parameters(100, 1000, 50, 0.0))
    assert none.status == "failed" and none.rho == [] and "vanishes identically" in none.message


def test_fixed_points_errors_cover_the_finite_L_drifts_fixed_points():
    """Each fixed point carries how far the finite-(d, L, R) drift's may lie from it (the large-L form's bound): at
    d = 64, L = 512, R = 64 the exact reduction's J′ changes sign between ρ = −0.91 and −0.90 (8192 draws, each value
    more than 3 of its errors from 0), so its unstable root lies there, within the large-L root's error; at ρ = ±1 the
    root is exact and the finite slope −2ρJ′ lies within the slope's error (and 3 of the reduction's errors)."""
    params = api.make_parameters(64, 512, 64, 1.0)
    fps = api.fixed_points(params)
    assert fps.rho[0] == -1.0 and fps.rho[-1] == 1.0 and len(fps.rho) == 3
    assert fps.rho_error[0] == fps.rho_error[-1] == 0.0 and math.isnan(fps.slope_error[1])
    root, root_error = fps.rho[1], fps.rho_error[1]
    assert 0 < root_error < 0.05  # a bound, not a vacuous one
    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "models" / "signal_recovery.md").read_text().split())
    assert f"root {root:.4f} ± {error_significant_up(root_error, 2)} covers".replace("-", "−") in page
    exact = api.curve(params, [-0.91, -0.90], finite=True, samples=8192, seed=3)
    assert exact.dJ[0] < -3 * exact.dJ_error[0] and exact.dJ[1] > 3 * exact.dJ_error[1]
    assert abs(-0.91 - root) <= root_error and abs(-0.90 - root) <= root_error
    poles = api.curve(params, [-1.0, 1.0], finite=True, samples=8192, seed=3)
    for i, rho in ((0, -1.0), (1, 1.0)):
        finite_slope, finite_error = -2 * rho * poles.dJ[i], 2 * poles.dJ_error[i]
        slope, slope_error = fps.slope[-i], fps.slope_error[-i]
        assert abs(finite_slope - slope) <= slope_error + 3 * finite_error, (rho, finite_slope, slope, slope_error)
    table = fps.to_pandas()
    assert table.columns.tolist() == ["rho", "rho_error", "slope", "slope_error", "stable"]
    assert np.array_equal(table["rho_error"], fps.rho_error, equal_nan=True)
    assert np.array_equal(table["slope_error"], fps.slope_error, equal_nan=True)
    # at ρ = ±1 the slope is ∓2J′: its error is twice the bound on J′ there, exactly
    bound = api.large_L_accuracy(params, [-1.0, 1.0]).dJ_error
    assert (fps.slope_error[0], fps.slope_error[-1]) == (2 * bound[0], 2 * bound[1])
    assert "not bounded" not in fps.message
    # where the large-L form's bound does not hold (expansion ratio q = 6.2 at d = 8, L = 16), the roots inside have
    # no error and the message says why; the poles stay exact
    loose = api.fixed_points(api.make_parameters(8, 16, 2, 3.0))
    assert "their distance from the finite-L drift's is not bounded here (expansion ratio" in loose.message
    assert loose.rho_error[0] == loose.rho_error[-1] == 0.0 and all(math.isnan(e) for e in loose.rho_error[1:-1])


def test_solve_results_and_validation():
    r = api.solve(1000, 10500, 500, 0.25, 0.5, reduction="large-L")
    assert r.method == "large-L" and 0 < r.J_error < 0.01 * r.J and r.status == "converged" and r.success
    assert r.drift == pytest.approx((1 - 0.25) * r.dJ, rel=1e-14)
    # The finite-L and large-L paths compute the same J and J′ at the same point up to the large-L
    # truncation: the spec's 0.5% at L = 2000, scaled as 1/L to L = 1000 (the gap falls faster than 1/L
    # at these sizes: test_large_L_gap_exceeds_half_percent...), plus 4 standard errors of the sampling.
    rl = api.solve(100, 1000, 50, 0.25, 0.5, finite=False)
    rf = api.solve(100, 1000, 50, 0.25, 0.5, finite=True, samples=512)
    assert rf.J_error > 0 and rf.status == "converged" and rf.samples == 512
    assert abs(rf.J - rl.J) < 0.01 * rl.J + 4 * rf.J_error
    assert abs(rf.dJ - rl.dJ) < 0.01 * abs(rl.dJ) + 4 * rf.dJ_error
    assert rf.drift == pytest.approx((1 - 0.25) * rf.dJ, rel=1e-14)
    # As σ → 0 the scores are deterministic and the large-L form is exact at any L (the softmax weights,
    # S₁, S₂ and L·S₃ take their large-L values with π = R/L exactly), so the two paths differ by O(σ²)
    # (odd orders vanish under g → −g): the relative gap in J falls by 100 from σ = 0.01 to σ = 0.001,
    # within its Monte Carlo error (4 standard errors) and 1% for the next order (O(σ²) = 1e-4 relative
    # times a coefficient ratio up to 100).
    gaps, errors = [], []
    for sigma in (0.01, 0.001):
        large = api.solve(100, 1000, 50, 0.25, 0.5, sigma=sigma, reduction="large-L")
        exact = api.solve(100, 1000, 50, 0.25, 0.5, sigma=sigma, finite=True, samples=512)
        gaps.append((exact.J - large.J) / large.J)
        errors.append(exact.J_error / large.J)
    assert abs(gaps[1]) > 4 * errors[1]  # the small gap is resolved
    ratio = gaps[0] / gaps[1]
    ratio_error = abs(ratio) * math.hypot(errors[0] / gaps[0], errors[1] / gaps[1])
    assert abs(ratio - 100) < 4 * ratio_error + 1.0, (gaps, errors)
    bad = [
        dict(d=1), dict(R=0), dict(R=2000), dict(L=0), dict(sigma=0.0), dict(score_scale=-1.0), dict(theta=-0.1),
        dict(rho=1.01), dict(rho=float("nan")), dict(sign_model="D"), dict(theta_scaling="log"),
        dict(finite=True, samples=1e300), dict(finite=True, samples=2**24 + 1), dict(finite="no"),
        dict(reduction="exact"), dict(reduction=None, finite=1),
    ]
    base = dict(d=100, L=1000, R=50, theta=0.25, rho=0.5)
    for change in bad:
        with pytest.raises(ParameterError):
            api.solve(**{**base, **change})


def test_derivation_markdown_is_deterministic():
    from attnphase.models.signal_recovery import derivation

    text = derivation.derivation_markdown()
    assert text == derivation.derivation_markdown()
    for needle in ("Sign model A", "Sign model B", "Sign model C", "Exact scalar reduction"):
        assert needle in text


def test_ode_limit_point_matches_long_integration():
    """The t → ∞ limit read off the fixed points equals a long ODE integration from the same start."""
    cases = [
        (api.make_parameters(64, 1050, 50, 1.0, "sqrt-d", sign_model="B"), (-0.05, 0.05)),
        (api.make_parameters(5000, 1000, 50, 0.25), (-0.5, -0.01, 0.3)),
    ]
    for params, starts in cases:
        fps = api.fixed_points(params)
        for r0 in starts:
            traj = api.ode_trajectory(params, r0, [0.0, 3e3])
            assert traj.status == "converged"
            traj = traj.x
            assert api.ode_limit_point(params, fps, r0) == pytest.approx(traj[-1], abs=1e-6)


def test_choose_schedule_meets_its_rules():
    params = api.make_parameters(64, 1050, 50, 0.25, "sqrt-d")
    plan = api.choose_schedule(params, deficit=0.01, max_steps=5000)
    assert not plan.budget_limited and plan.predicted_final >= plan.target == pytest.approx(0.98)
    # final step from the noise-floor rule, and η₀/(K + k₀) equals it
    assert plan.eta_final == pytest.approx(4 * api.large_L(params, 1.0)[1] * 0.01 / plan.noise, rel=1e-12)
    assert plan.eta0 / (plan.steps + plan.k0) == pytest.approx(plan.eta_final, rel=1e-12)
    # the retraction only slows the approach: at least the plain ODE's time to the target
    assert plan.t_final >= plan.t_target
    # first step inside the small-step expansion η₁² max N ≤ 0.1 (N at most a few × N(1) here; with the heavy-tailed
    # mean N(1) is the largest, and a first step at the limit meets it up to rounding)
    assert plan.eta_first**2 * plan.noise <= 0.1 * (1 + 1e-9)
    # the prediction is the retraction-corrected ODE under the chosen schedule (same pilot, same noise)
    assert plan.rho0 == -1 / 8  # model A (J′(0) > 0) leaves −1/√d more slowly than +1/√d
    noise = api.tangent_noise(params)
    again = api.retraction_corrected_rho(params, noise, plan.rho0, plan.eta0, plan.k0, plan.steps)
    assert abs(again) == pytest.approx(plan.predicted_final, abs=1e-5)
    capped = api.choose_schedule(params, deficit=0.01, max_steps=10)
    assert capped.budget_limited and capped.steps == 10 and capped.predicted_final < capped.target
    # For a fixed step count (what `simulate` plans) the last step is free too: its candidates include the
    # noise-floor rule's last step with the same offsets, so at the plan's own step count it does at least
    # as well (up to the integrator's tolerance).
    fixed = api.choose_schedule(params, deficit=0.01, steps=plan.steps, noise=noise)
    assert fixed.steps == plan.steps
    assert fixed.eta0 / (plan.steps + fixed.k0) == pytest.approx(fixed.eta_final, rel=1e-12)
    assert fixed.predicted_final >= plan.predicted_final - 1e-6
    assert abs(api.retraction_corrected_rho(params, noise, plan.rho0, fixed.eta0, fixed.k0, plan.steps)) == \
        pytest.approx(fixed.predicted_final, abs=1e-5)


@pytest.mark.parametrize("steps", [20, 50, 100])
def test_a_short_budget_is_planned_to_carry_the_query_as_far_along_the_flow_as_it_can(steps):
    """d = 64, L = 512, R = 64, θ = 1 under model A: from the planned start −1/√d the flow first passes ρ = 0. Ranked
    by |ρ|, a budget of 20–100 steps was planned as a schedule that hardly moved (t_final ~ 1e-4, |ρ| left at 1/8),
    and a run of it "agreed" with its prediction because nothing moved. The plan must carry ρ along the flow at least
    as far as schedules planned by hand from the same start (the manual default η = 0.05/(k + 50), and constant steps
    at half the first-step limit and at the limit itself, which an audit found beat the plan by 0.05 at 20 steps), each
    integrated by the same retraction-corrected ODE."""
    params = api.make_parameters(64, 512, 64, 1.0)
    noise = api.tangent_noise(params)
    plan = api.choose_schedule(params, steps=steps, noise=noise)
    assert plan.rho0 == -1 / 8 and api.large_L(params, plan.rho0)[2] > 0  # the flow carries ρ upwards from there
    planned = api.retraction_corrected_rho(params, noise, plan.rho0, plan.eta0, plan.k0, steps)
    assert abs(planned) == pytest.approx(plan.predicted_final, abs=1e-5)
    first_step_limit = math.sqrt(0.1 / float(np.max(noise.noise)))
    by_hand = [api.retraction_corrected_rho(params, noise, plan.rho0, 0.05, 50.0, steps)] + [
        api.retraction_corrected_rho(params, noise, plan.rho0, fraction * first_step_limit, 0.0, steps, gamma=0.0)
        for fraction in (0.5, 0.999)]
    assert planned >= max(by_hand) - 1e-5 and planned > plan.rho0 + 0.05, (planned, by_hand)


def test_a_long_budgets_plan_is_not_beaten_by_its_neighbouring_schedules():
    """At 4000 steps (d = 64, L = 512, R = 64, θ = 1) the planner's grid of last steps, factors of 2 apart, left 1 − ρ
    3% above the best on a finer grid (9% with the pilot `simulate` draws). Schedules whose last step and offset
    are 2^(±1/16) and 2^(±1/8) times the plan's, or whose first step is at the limit, must not carry ρ further than
    the plan by more than 1e-6, ten times the integration's relative tolerance (LSODA at rtol 1e-7). The code before
    the refinement fails this by 8e-5."""
    params = api.make_parameters(64, 512, 64, 1.0)
    noise = api.tangent_noise(params)
    steps = 4000
    plan = api.choose_schedule(params, steps=steps, noise=noise)
    first_step_limit = math.sqrt(0.1 / float(np.max(noise.noise)))
    factors = 2.0 ** (np.array([-2.0, -1.0, 0.0, 1.0, 2.0]) / 16)
    last = plan.eta_final * factors[:, None]
    k0 = np.concatenate([plan.k0 * np.broadcast_to(factors, (5, 5)),  # the offset scaled, or the first step at the limit
                         last * steps / (first_step_limit - last)], axis=1)
    last = np.broadcast_to(last, k0.shape)
    first = last * (steps + k0) / k0
    finals = api.retraction_corrected_rho(params, noise, plan.rho0, last * (steps + k0), k0, steps)
    neighbours = np.abs(finals[first <= first_step_limit * (1 + 1e-9)])
    assert neighbours.size >= 15 and np.all(np.isfinite(neighbours))
    assert plan.predicted_final >= neighbours.max() - 1e-6, (plan.predicted_final, neighbours.max())


def test_fewer_than_two_tokens_are_rejected_everywhere():
    """L counts all tokens; with one the softmax weight is 1 whatever q (flat J, no drift): every entry
    point names L and the allowed range [2, ...]."""
    from click.testing import CliRunner

    import attnphase.cli.signal_recovery  # noqa: F401 - registers the commands
    from attnphase.cli import main
    calls = [
        lambda: api.make_parameters(10, 1, 1, 0.5),
        lambda: api.solve(10, 1, 1, 0.5, 0.2),
        lambda: api.solve(10, 1, 1, 0.5, 0.2, finite=True, samples=32),
        lambda: api.simulate(10, 1, 1, 0.5, 2, 3, device="cpu"),
        lambda: api.sweep_point(10, 1, 1, 0.5, trials=2, max_steps=3),
        lambda: api.Parameters.validated(d=10, L=1, R=1, theta=0.5),
    ]
    for call in calls:
        with pytest.raises(ParameterError) as info:
            call()
        assert info.value.name == "L" and "[2," in str(info.value)
    for command, extra in (("solve", ["--rho", "0.2"]), ("simulate", ["--trials", "2", "--steps", "3"])):
        result = CliRunner().invoke(main, [command, "signal-recovery", "--d", "10", "--L", "1", "--R", "1",
                                           "--theta", "0.5", *extra, "--json"])
        assert result.exit_code == 2 and "--L" in result.output and "2" in result.output
        assert "Traceback" not in result.output


def test_no_nuisance_tokens_is_allowed():
    """R = L (π = 1): the noise-token mass is exactly 0 in every path, and J matches its π = 1 form
    J_∞ = β²σ⁴ + 2βσ²θ_dρ + θ_d² + σ²(d − 1)e^{β²σ²}/L (w = 1, V = e^{β²σ²})."""
    d, L, theta, rho = 20, 400, 0.7, 0.3
    large = api.solve(d, L, L, theta, rho, reduction="large-L")
    assert large.nuisance_mass == 0.0 and math.copysign(1.0, large.nuisance_mass) == 1.0  # not −0.0
    assert large.J == pytest.approx(1 + 2 * theta * rho + theta**2 + (d - 1) * math.e / L, rel=1e-12)
    finite = api.solve(d, L, L, theta, rho, finite=True, samples=256)
    assert finite.nuisance_mass == 0.0
    assert abs(finite.J - large.J) < 0.01 * large.J + 4 * finite.J_error  # O(1/L) gap plus sampling
    for sampler in ("dense", "projected"):
        sim = api.simulate(d, 50, 50, theta, 2, 5, device="cpu", sampler=sampler, predict=sampler == "projected")
        assert sim.nuisance_mass_mean == 0.0 and np.all(np.isfinite(sim.final_rho))


def test_curve_is_labelled_one_row_per_rho_and_agrees_with_solve():
    """`curve` over an array of ρ: the values of `solve` at each ρ (same kernel, same numbers), one row per
    ρ; sign model C is exactly even in ρ (J even, J′ odd), and drift = (1 − ρ²)J′."""
    p = api.make_parameters(50, 400, 40, 0.6, sign_model="C")
    rhos = np.linspace(-1.0, 1.0, 9)
    c = api.curve(p, rhos)
    rows = c.rows()
    assert c.status == "converged" and len(rows) == 9 and [row["rho"] for row in rows] == list(rhos)
    for rho, row in zip(rhos, rows):
        single = api.solve(50, 400, 40, 0.6, rho, sign_model="C", reduction="large-L")
        assert (row["J"], row["dJ"], row["drift"], row["nuisance_mass"]) == (single.J, single.dJ, single.drift,
                                                                            single.nuisance_mass)
        assert row["J_error"] == single.J_error > 0
    assert np.allclose(c.J, c.J[::-1], rtol=1e-13) and np.allclose(c.dJ, -c.dJ[::-1], rtol=1e-12, atol=1e-15)
    assert np.allclose(c.drift, (1 - rhos**2) * c.dJ, rtol=1e-14, atol=0)
    finite = api.curve(p, rhos[::4], finite=True, samples=64, seed=2)
    assert finite.method == "finite-L" and np.all(finite.J_error > 0) and len(finite.rows()) == 3
    assert finite.rows()[0]["J_error"] == finite.J_error[0]
