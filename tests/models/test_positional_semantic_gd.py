"""Finite-d full-batch GD (models.positional_semantic.network, on validate.training) against the saddle point
of the positional-semantic model."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from attnphase.api import positional_semantic as api
from attnphase.errors import ParameterError
from attnphase.validate.compare import compare
from attnphase.validate.finite_size import binomial_interval, classify_minimum, fit_gap_rate, gap_at_size
from attnphase.api.positional_semantic import simulate


def test_gd_is_reproducible_and_seeds_are_independent():
    kwargs = dict(omega=0.3, alpha=1.0, d=40, init="positional", trials=3, steps=20, test_samples=200,
                  num_threads=1)
    a, b = simulate(seed=7, **kwargs), simulate(seed=7, **kwargs)
    np.testing.assert_array_equal(a.test_error, b.test_error)
    assert len(set(np.round(a.test_error, 12))) == 3  # each seed has its own data and teacher
    c = simulate(seed=8, **kwargs)
    assert not np.array_equal(a.test_error, c.test_error)


def test_gd_at_init_matches_the_uniform_attention_limit():
    """With zero steps of learning (Q tiny) the student attends uniformly: ε_g → 0.0044146 (spec §7).

    Q₀ = 0.1·N(0,1) (random init) with one Adam step of lr 1e-12 leaves Q ≈ 0.1 N(0,1): the fields h
    have variance σ² · 0.01, so the attention differs from uniform by O(σ² · 0.01) and ε_g by O(1e-5).
    """
    r = simulate(omega=0.3, alpha=0.5, d=200, init="random", trials=4, steps=1, lr=1e-12, test_samples=4000,
                 num_threads=1)
    assert r.status == "converged" and r.optimizer == "adam"
    # spread of the test-error estimate over seeds + the O(1e-5) offset of Q₀ ≠ 0
    c = compare("eps_g(Q≈0)", 0.00441456, r.test_error, theory_error=3e-5)
    assert c.agrees, c.summary()


def test_overlaps_at_the_initial_students_are_the_closed_forms():
    """m, θ and q of students left at their initialisation: one GD step of lr 1e-300 moves no entry of Q in float64
    (lr·λ and lr·∇R are below the rounding of entries of size 1/√d or N(0, 1)). With the spec's definitions (§1, §6:
    |m| = |1ᵀQ|/d, θ = σ²|Q*ᵀQ|/d, q = σ²‖Q‖²/d) and Q* ~ N(0, I_d):
    positional, Q = 1_d/√d: m = 1/√d and q = σ²/d exactly, and dθ/σ² = |1ᵀQ*|/√d ~ |N(0, 1)| per trial;
    semantic, Q = Q*: θ = q (the same sum), Σ_k d q_k/σ² = ‖Q*‖² summed over the K trials ~ χ²_{Kd}, and
    √d m = |1ᵀQ*|/√d ~ |N(0, 1)|. The exact ones within the float64 rounding of a sum of d terms, (d + 2)ε relative;
    the sums of squares inside their χ² 0.1 % and 99.9 % quantiles. (q without σ² was 4 times these.)"""
    d, K, sigma = 200, 8, 0.5
    rounding = (d + 2) * 2.0**-52
    kwargs = dict(omega=0.3, alpha=0.5, d=d, trials=K, steps=1, lr=1e-300, test_samples=2, sigma=sigma, seed=11,
                  num_threads=1)
    positional, semantic = simulate(init="positional", **kwargs), simulate(init="semantic", **kwargs)
    np.testing.assert_allclose(positional.m, 1 / math.sqrt(d), rtol=rounding, atol=0)
    np.testing.assert_allclose(positional.q, sigma**2 / d, rtol=rounding, atol=0)
    np.testing.assert_allclose(semantic.theta, semantic.q, rtol=2 * rounding, atol=0)
    for squares, dof in ((np.sum((d * positional.theta / sigma**2) ** 2), K),
                         (np.sum(d * semantic.q / sigma**2), K * d), (np.sum(d * semantic.m**2), K)):
        assert stats.chi2.ppf(0.001, dof) < squares < stats.chi2.ppf(0.999, dof), (squares, dof)


def test_bad_simulation_parameters():
    with pytest.raises(ParameterError):
        simulate(omega=0.3, alpha=1.0, d=40, init="sideways", trials=1, steps=1)
    with pytest.raises(ParameterError):
        simulate(omega=0.3, alpha=-1.0, d=40, init="semantic", trials=1, steps=1)


def test_a_diverging_run_is_reported_by_status():
    """GD with lr = 1e300 (allowed: lr·λ = 1 < 2 for λ = 1e-300) overflows Q within a few steps: every
    trial's measurements end non-finite and the run says so (status diverged, the count in the message)."""
    r = simulate(omega=0.3, alpha=1.0, d=20, init="semantic", trials=2, steps=5, lr=1e300, lam=1e-300, test_samples=50,
                 num_threads=1)
    assert r.status == "diverged" and "2 of 2" in r.message and not np.isfinite(r.m).any()


def agreement(name, theory, theory_error, large, small):
    """GD at two sizes against a theory value: (the Comparison at the larger size, the allowed deviation).

    Allowed |mean − theory| = finite-size bound + 3 √(sem² + theory_error²). The finite-size bound is measured
    from the runs themselves: the gap to d = ∞ shrinks at least like d^(−1/2) (measured exponents −0.5 to −0.8
    for every quantity at α = 1.5, docs/research/positional_semantic.md), so at the larger size (twice the
    smaller) the bias is at most |mean_small − mean_large| / (√2 − 1), the difference taken with two of its own
    standard errors."""
    c_small = compare(name, theory, small, theory_error=theory_error)
    c_large = compare(name, theory, large, theory_error=theory_error)
    difference = abs(c_small.mean - c_large.mean) + 2 * math.hypot(c_small.sem, c_large.sem)
    finite_size = difference / (math.sqrt(2) - 1)
    allowed = finite_size + 3 * math.hypot(c_large.sem, theory_error)
    return c_large, allowed


@pytest.mark.slow
@pytest.mark.parametrize("init, order", [("semantic", "theta"), ("positional", "m")])
def test_gd_agrees_with_theory_and_a_shifted_theory_is_rejected(init, order):
    """ω = 0.3, α = 1.25, GD at d = 200 and 400 (8 seeds each) from each init against its branch from
    `api.solve` (verified errors): |m| (positional) or |θ| (semantic), q, ε_g and ε_t agree within the
    finite-size bound measured from the two sizes plus three standard errors (`agreement`), and the theory
    shifted by twice that allowed deviation is rejected by the same criterion (the comparison can fail)."""
    (theory,) = api.solve(0.3, 1.25, branches=(init,), stability=False).branches
    runs = {d: simulate(omega=0.3, alpha=1.25, d=d, init=init, trials=8, steps=4000, test_samples=5000, num_threads=1)
            for d in (200, 400)}
    for name in (order, "q", "test_error", "train_loss"):
        value = abs(getattr(theory, name)) if name == order else getattr(theory, name)
        samples = {d: np.abs(getattr(r, name)) if name == order else getattr(r, name) for d, r in runs.items()}
        c, allowed = agreement(name, value, theory.errors[name], samples[400], samples[200])
        assert abs(c.mean - value) <= allowed, (c.summary(), allowed)
        for shift in (-2 * allowed, 2 * allowed):
            shifted, _ = agreement(name, value + shift, theory.errors[name], samples[400], samples[200])
            assert abs(shifted.mean - (value + shift)) > allowed


# -- Monte-Carlo error of the test-error estimate -------------------------------------------------------
def test_test_error_sem_predicts_the_spread_of_independent_test_sets():
    """Same seed, same trained Q: a run with 2 test chunks shares its first chunk with a 1-chunk run, so
    ε₂ = 2 ε(2 chunks) − ε(1 chunk) is an independent estimate on fresh samples. Over K seeds,
    z = (ε₁ − ε₂)/(√2 sem₁) must be N(0, 1): Σ z² ~ χ²_K, checked at the 0.1 % / 99.9 % quantiles."""

    kwargs = dict(omega=0.3, alpha=1.0, d=50, init="semantic", trials=48, steps=50, num_threads=1, test_chunk=1500)
    one = simulate(test_samples=1500, **kwargs)
    two = simulate(test_samples=3000, **kwargs)
    np.testing.assert_array_equal(one.m, two.m)  # the same training: only the test sets differ
    second_half = 2 * two.test_error - one.test_error
    z = (one.test_error - second_half) / (np.sqrt(2) * one.test_error_sem)
    K = z.size
    assert stats.chi2.ppf(0.001, K) < np.sum(z**2) < stats.chi2.ppf(0.999, K)


# -- finite-size statistics (validate.finite_size) on synthetic data with known answers ---------------
def spread_within(values, errors, sigmas: float = 4.0) -> None:
    """The standard deviation of `values` over independent repeats against the mean of the `errors` reported for them,
    within `sigmas` standard errors of the difference: the sample sd's, σ√((κ − (R − 3)/(R − 1))/(4R)) for R repeats
    of kurtosis κ (Var s² = σ⁴(κ − (R − 3)/(R − 1))/R, δs = δ(s²)/2s; κ estimated from the values), and the mean
    error's, sd/√R."""
    values, errors = np.asarray(values), np.asarray(errors)
    R, spread = len(values), values.std(ddof=1)
    kurtosis = stats.kurtosis(values, fisher=False)
    standard_error = math.hypot(spread * math.sqrt((kurtosis - (R - 3) / (R - 1)) / (4 * R)),
                                errors.std(ddof=1) / math.sqrt(R))
    assert abs(spread - errors.mean()) <= sigmas * standard_error, (spread, errors.mean(), standard_error)


def test_gap_statistics_recover_a_known_bias_and_spread_with_errors_of_their_spread():
    """x_k = t + b + s ξ_k + e_k with Monte-Carlo noise e_k of known sem ε, against a theory value drawn around t with
    its error θ: 200 independent experiments of 800 seeds. Centres: bias → b and rms² → b² + θ² + s² (both estimates
    unbiased: the MC part is removed), within 4 standard errors of the mean over the experiments. Errors: the spread
    of bias and of rms over the experiments against the mean reported bias_error and rms_error (`spread_within`, 4
    sampling errors of a standard deviation, 5 % each at R = 200); a bar half its size, or a bias_error without θ
    (0.6 times the spread here), is rejected. The delta method's rms_error is first order in 1/√K: at K = 800 the
    ratio spread/error was 0.996 ± 0.005 over 20000 experiments, far inside the window."""
    rng = np.random.default_rng(17)
    t, b, s, eps, theta, R, K = 1.0, 0.02, 0.05, 0.04, 0.003, 200, 800
    x = t + b + s * rng.standard_normal((R, K)) + eps * rng.standard_normal((R, K))
    reported = t + theta * rng.standard_normal(R)
    gaps = [gap_at_size(100, row, theory, theory_error=theta, measurement_sem=np.full(K, eps))
            for row, theory in zip(x, reported)]
    bias, rms = np.array([g.bias for g in gaps]), np.array([g.rms for g in gaps])
    assert abs(bias.mean() - b) <= 4 * bias.std(ddof=1) / math.sqrt(R)
    assert abs(np.mean(rms**2) - (b**2 + theta**2 + s**2)) <= 4 * np.std(rms**2, ddof=1) / math.sqrt(R)
    spread_within(bias, [g.bias_error for g in gaps])
    spread_within(rms, [g.rms_error for g in gaps])


def test_gap_rate_fit_recovers_a_known_exponent():
    """Per-run deviations with spread 0.3 d^(-1/2) at five sizes (like a self-averaging observable):
    the fitted rms exponent's 95 % band contains −1/2 and excludes 0."""
    rng = np.random.default_rng(5)
    gaps = [gap_at_size(d, 0.3 * d**-0.5 * rng.standard_normal(200), 0.0) for d in (100, 200, 400, 700, 1000)]
    fit = fit_gap_rate(gaps, "rms")
    assert fit.exponent_low < -0.5 < fit.exponent_high
    assert fit.exponent_high < 0


def test_minimum_classification_rule():
    labels = classify_minimum([0.25, 0.01, 0.02, 0.2, 0.11], [0.0, 0.13, 0.01, 0.13, 0.0], 0.25, 0.13)
    # |m| ≥ ½ m_pos decides first (also for the mixed-like 4th run); then |θ| ≥ ½ θ_sem; else "other"
    assert list(labels) == ["positional", "semantic", "other", "positional", "other"]
    # A branch that does not exist at this α is never assigned: those runs become "other".
    assert list(classify_minimum([0.25, 0.01], [0.0, 0.13], 0.25, None)) == ["positional", "other"]
    assert list(classify_minimum([0.25, 0.01], [0.0, 0.13], None, 0.13)) == ["other", "semantic"]
    with pytest.raises(ParameterError, match="semantic_theta"):
        classify_minimum([0.25], [0.0], 0.25, float("nan"))


def test_wilson_interval_closed_forms():
    """0 of n: upper bound z²/(n + z²) (closed form); symmetric for k and n − k; contains k/n."""
    z2 = 1.959963984540054**2
    low, high = binomial_interval(0, 16)
    assert low == 0.0 and high == pytest.approx(z2 / (16 + z2), rel=1e-12)
    low7, high7 = binomial_interval(7, 20)
    low13, high13 = binomial_interval(13, 20)
    assert low7 == pytest.approx(1 - high13, rel=1e-12) and high7 == pytest.approx(1 - low13, rel=1e-12)
    assert low7 < 7 / 20 < high7
    with pytest.raises(ParameterError):
        binomial_interval(5, 4)


# -- finite-size scan (slow) ---------------------------------------------------------------------------
@pytest.mark.slow
def test_finite_size_gap_to_the_semantic_branch_shrinks():
    """Semantic init, ω = 0.3, α = 1.5, the paper's GD (lr 0.15, 5000 steps, λ = 0.01) at d = 50…400.

    Gap = per-run rms deviation from the semantic branch (validate.finite_size.gap_at_size; the
    test-set Monte-Carlo error removed). For ε_g the weighted power-law fit's 95 % band on the exponent
    must lie below 0 (measured on CPU: −0.74 [−1.15, −0.33]). For |θ| the band is only just below 0
    with 4 sizes (−0.46 [−0.88, −0.04]), so the assertion is the direct one: the gap at d = 400 is
    below the gap at d = 50 by more than 3 combined standard errors (measured 4.3). The theory error
    (14- vs 10-node rule: ~4e-5 on |θ|, ~6e-7 on ε_g) is far below the gaps (≥ 1e-2 and ≥ 1e-4).
    The runs are those of the full reproduce's scan (same seeds), so the report shows the same numbers.
    About 3 CPU-minutes (d = 400 dominates).
    """
    params = api.Parameters.validated(omega=0.3)
    fine = api.solve_branch("semantic", 1.5, params, nodes_per_dim=14, stability=False)
    guess = api.BranchCoordinates("semantic", params).from_state(fine.state)
    coarse = api.solve_branch("semantic", 1.5, params, nodes_per_dim=10, guess=guess, stability=False)
    theta_gaps, error_gaps = [], []
    for d, seeds in ((50, 40), (100, 20), (200, 10), (400, 8)):
        run = simulate(omega=0.3, alpha=1.5, d=d, init="semantic", trials=seeds, seed=0, steps=5000,
                       test_samples=10_000, device="cpu", num_threads=1)
        theta_gaps.append(gap_at_size(d, run.theta, abs(fine.theta), theory_error=abs(abs(fine.theta) - abs(coarse.theta))))
        error_gaps.append(gap_at_size(d, run.test_error, fine.test_error,
                                      theory_error=abs(fine.test_error - coarse.test_error),
                                      measurement_sem=run.test_error_sem))
    fit = fit_gap_rate(error_gaps, "rms")
    assert fit.exponent_high < 0, (fit.exponent, fit.exponent_low, fit.exponent_high)
    first, last = theta_gaps[0], theta_gaps[-1]
    assert first.rms - last.rms > 3 * np.hypot(first.rms_error, last.rms_error)


def test_cached_runner_keeps_each_run_and_reuses_it(tmp_path):
    """A stored run comes back equal (arrays included) without simulating again; a new argument runs."""
    from attnphase.reproduce.positional_semantic_gd import cached_runner, gd_run_plan, simulate_run

    calls = []

    def counting(*arguments):
        calls.append(arguments)
        return simulate_run(*arguments)

    runner = cached_runner(tmp_path, counting)
    first = runner(1.0, 20, "semantic", 2, 30, 50, 3, "cpu")
    again = runner(1.0, 20, "semantic", 2, 30, 50, 3, "cpu")
    assert len(calls) == 1 and not list(tmp_path.glob("*.partial"))
    for key in ("m", "theta", "q", "test_error", "train_loss", "test_error_mc_sem"):
        np.testing.assert_array_equal(again[key], first[key])
    runner(1.0, 20, "semantic", 2, 30, 50, 4, "cpu")
    assert len(calls) == 2
    # The plan lists each of the full report's simulations once (the scan reuses the d = 1000 protocol runs).
    plan = gd_run_plan()
    assert len(plan) == len(set(plan)) == 8 + 2 * 4 + 5


def test_theory_reference_takes_solve_with_its_errors_and_caches_it(tmp_path, monkeypatch):
    """The GD theory is `api.solve_along` (each branch followed from its anchor, verified errors): a found branch
    becomes an entry with every quantity and its error, a missing one an entry with status not_found, NaN
    values and the evidence. Each α is cached as soon as it is solved: a run interrupted after the first of two
    keeps it, and the next call solves only the other; a call with everything cached solves nothing."""
    from types import SimpleNamespace

    from attnphase.reproduce import positional_semantic_gd as reproduce

    calls, passed = [], []

    def solve_along(omega, alphas, tol, branches, stability, passing_through):
        calls.append(list(alphas))
        passed.append(list(passing_through))
        for alpha in alphas:
            if alpha == 1.0 and len(calls) == 1:
                raise KeyboardInterrupt  # the first run stops after its first α
            positional = SimpleNamespace(branch="positional", status="converged", message="", m=-0.258, theta=0.0,
                                         q=0.0511 * alpha, test_error=0.00347, free_energy=-0.0046, train_loss=0.0046,
                                         errors={"m": 1e-4, "theta": 0.0, "q": 2e-5, "test_error": 1e-6,
                                                 "free_energy": 3e-7, "train_loss": 3e-7})
            missing = SimpleNamespace(branch="semantic", status="not_found", message="semantic branch does not reach α")
            yield SimpleNamespace(branches=[positional], missing=[missing])

    monkeypatch.setattr(reproduce.api, "solve_along", solve_along)
    cache = tmp_path / "theory.json"
    with pytest.raises(KeyboardInterrupt):
        reproduce.theory_reference([0.5, 1.0], cache_path=cache)
    first = reproduce.theory_reference([0.5, 1.0], cache_path=cache)
    assert calls == [[0.5, 1.0], [1.0]]  # the second run solved only the α the first did not finish
    assert passed == [[], [0.5]]  # its paths through the kept α, as the first run's went
    assert first[("positional", 0.5)]["abs_m"] == 0.258 and first[("positional", 0.5)]["abs_m_error"] == 1e-4
    assert first[("positional", 1.0)]["q"] == 0.0511
    assert first[("semantic", 0.5)]["status"] == "not_found" and math.isnan(first[("semantic", 0.5)]["q"])
    again = reproduce.theory_reference([0.5, 1.0], cache_path=cache)
    assert len(calls) == 2 and again[("positional", 0.5)]["q"] == 0.0511 * 0.5


def test_the_gd_points_group_the_seeds_by_the_minimum_they_landed_on_and_keep_the_runs_status():
    """Four semantic-init seeds, two near each branch (|m| against ½ m_pos = 0.126, then |θ| against ½ θ_sem = 0.059):
    two points, each the mean of its own seeds (a mean over all four, ε_g 0.0029, describes neither minimum), with
    the standard error over those seeds; one positional-init seed alone: no standard error. The run's status and
    message (here: not settled) are kept with every point."""
    from attnphase.reproduce.positional_semantic_gd import gd_points

    reference = {("positional", 1.25): {"abs_m": 0.2523, "status": "converged"},
                 ("semantic", 1.25): {"abs_theta": 0.118, "status": "converged"}}
    semantic_init = {"m": [0.02, -0.25, 0.03, 0.24], "theta": [0.12, 0.01, -0.11, 0.02],
                     "test_error": [0.0024, 0.0034, 0.0022, 0.0036], "train_loss": [0.0029, 0.0027, 0.0030, 0.0026],
                     "d": 100, "steps": 500, "status": "limited", "message": "not settled"}
    positional_init = {"m": [0.24], "theta": [0.02], "test_error": [0.0035], "train_loss": [0.0027], "d": 100,
                       "steps": 500, "status": "converged", "message": "settled"}
    rows = gd_points({(1.25, "semantic"): semantic_init, (1.25, "positional"): positional_init}, reference)
    by_landing = {(r["init"], r["landed"]): r for r in rows}
    assert set(by_landing) == {("semantic", "semantic"), ("semantic", "positional"), ("positional", "positional")}
    semantic = by_landing[("semantic", "semantic")]
    assert semantic["trials"] == 2 and semantic["test_error"] == pytest.approx(0.0023, rel=1e-12)
    assert semantic["test_error_error"] == pytest.approx(0.0001, rel=1e-9)  # std (ddof 1) 0.0001·√2 over √2
    assert semantic["abs_theta"] == pytest.approx(0.115, rel=1e-12)
    assert by_landing[("semantic", "positional")]["abs_m"] == pytest.approx(0.245, rel=1e-12)
    assert all(r["status"] == "limited" and r["message"].startswith("not settled; this row: the 2 of 4 seeds that "
                                                                     f"landed on the {r['landed']} minimum")
               for r in rows if r["init"] == "semantic")
    alone = by_landing[("positional", "positional")]
    assert alone["trials"] == 1 and math.isnan(alone["test_error_error"]) and alone["status"] == "converged"
    # the report's table of these points: ε_g with its error over the seeds and the training loss ε_t of each row
    from attnphase.reproduce.positional_semantic import gd_table

    table = gd_table(rows)
    assert table[0].split(" | ")[-3:] == ["ε_g", "ε_t", "status |"] and len(table) == 2 + len(rows)
    semantic_row = next(line for line in table if "| semantic | semantic |" in line)
    assert "| 0.002300 ± 0.0001 | 0.0029500 | limited |" in semantic_row, semantic_row
    positional_row = next(line for line in table if "| positional | positional |" in line)
    assert "(one seed: no error) | 0.0027000 | converged |" in positional_row, positional_row


def test_the_training_tail_change_is_that_of_gradient_descent_on_a_quadratic():
    """f(Q) = c‖Q‖²/2 per trial: GD with rate η multiplies Q by 1 − ηc per step, so over the last tenth of 50 steps
    (5 steps) f falls by the factor (1 − ηc)^10, in closed form."""
    import torch

    from attnphase.validate.training import train_full_batch

    c = torch.tensor([0.5, 2.0], dtype=torch.float64)
    run = train_full_batch(lambda Q: 0.5 * c * (Q**2).sum(dim=1), torch.ones(2, 3, dtype=torch.float64),
                           optimizer="gd", lr=0.1, steps=50)
    expected = np.abs(1 - (1 - 0.1 * c.numpy()) ** -10)  # |before − final| / final
    assert run.tail_change() == pytest.approx(expected, rel=1e-12)


def test_a_run_that_has_not_settled_is_limited_and_one_test_sample_is_refused():
    """One GD step read "converged" (only finiteness was checked), and one test sample gave a standard error of 0."""
    r = simulate(omega=0.3, alpha=1.5, d=50, trials=2, steps=1, test_samples=100, device="cpu")
    assert r.status == "limited" and "not settled: the training loss still moved by" in r.message
    with pytest.raises(ParameterError, match="test_samples"):
        simulate(omega=0.3, alpha=1.5, d=10, trials=2, steps=10, test_samples=1, device="cpu")


UNSETTLED_POINT = dict(omega=0.3, alpha=1.0, d=20, trials=3, test_samples=200, device="cpu")


def test_an_unsettled_run_is_told_the_remedy():
    """Where the training loss rose on a step of the last tenth the rate is too large (GD at lr = 150, lr·λ = 1.5,
    200 steps): the message says to lower --lr. Where it only fell (the default rate, 50 steps) it says more steps.
    The short runs of the slow test below, which holds the longer ones (0.1 s here, 3.5 s there): that the remedy is
    the right one, more steps not settling the first and settling the second."""
    oscillating = simulate(**UNSETTLED_POINT, steps=200, lr=150.0)
    assert oscillating.status == "limited" and oscillating.message.endswith("a lower --lr"), oscillating.message
    short = simulate(**UNSETTLED_POINT, steps=50)
    assert short.status == "limited" and short.message.endswith("more steps"), short.message
    assert re.search(r"still moved by ([0-9.e+-]+)", short.message), short.message


@pytest.mark.slow
def test_an_unsettled_run_is_told_the_remedy_that_settles_it():
    """Where the training loss rose on a step of the last tenth the rate is too large, and more steps do not help
    (GD at lr = 150, lr·λ = 1.5: still unsettled after ten times the steps): the message says to lower --lr. Where it
    only fell (the default rate, 50 steps) it says more steps, and with a hundred times more the loss moves over the
    last tenth ten times less (it settles near 20000)."""
    point = UNSETTLED_POINT
    for steps in (200, 2000):
        oscillating = simulate(**point, steps=steps, lr=150.0)
        assert oscillating.status == "limited" and oscillating.message.endswith("a lower --lr"), oscillating.message
    moved = []
    for steps in (50, 5000):
        short = simulate(**point, steps=steps)
        assert short.status == "limited" and short.message.endswith("more steps"), short.message
        moved.append(float(re.search(r"still moved by ([0-9.e+-]+)", short.message).group(1)))
    assert moved[1] < moved[0] / 5, moved
