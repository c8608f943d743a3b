"""numeric.mcmc against closed forms: AR(1) chains with a known integrated autocorrelation time and
variance of the mean, i.i.d. draws, and chains with different means; and against ArviZ where installed.

AR(1): x_t = φ x_{t-1} + √(1 − φ²) ε_t started from its stationary law N(0, 1). Its autocorrelation is
φ^t, so τ = (1 + φ)/(1 − φ) and the variance of the mean of N draws is exactly
(1/N) [1 + 2 Σ_{k=1}^{N−1} (1 − k/N) φ^k]. The estimators are random; each test repeats the experiment
on independent chains and compares the average of the estimates with the closed form, allowing four
standard errors of that average (from the spread of the repeats), plus the estimator's known
deterministic bias where it has one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.signal import lfilter

from attnphase.errors import ParameterError
from attnphase.numeric import mcmc
from attnphase.results import Status


def ar1_chains(phi: float, chains: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    innovations = rng.standard_normal((chains, draws)) * math.sqrt(1.0 - phi * phi)
    innovations[:, 0] = rng.standard_normal(chains)  # x_0 ~ N(0, 1): stationary from the start
    return lfilter([1.0], [1.0, -phi], innovations, axis=1)


def variance_of_mean(phi: float, n: int) -> float:
    """Var(mean of n consecutive draws) of the unit-variance AR(1), exactly."""
    k = np.arange(1, n)
    return (1.0 + 2.0 * np.sum((1.0 - k / n) * phi**k)) / n


def average_within(estimates, expected: float, bias: float = 0.0, sigmas: float = 4.0) -> None:
    estimates = np.asarray(estimates)
    standard_error = estimates.std(ddof=1) / math.sqrt(len(estimates))
    assert abs(estimates.mean() - (expected + bias)) <= sigmas * standard_error, (
        estimates.mean(), expected, bias, standard_error)


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.9])
def test_mean_ess_of_ar1_chains_is_draws_over_tau(phi):
    """ESS_mean → M N / τ with τ = (1 + φ)/(1 − φ): 24 repeats of 4 chains × 4000 draws. The truncated
    sum's bias is O(τ/N) (below 1% here), far inside 4 standard errors (about 3% for φ = 0.9)."""
    rng = np.random.default_rng(20211)
    tau = (1 + phi) / (1 - phi)
    ess = [mcmc.effective_sample_size(ar1_chains(phi, 4, 4000, rng), "mean") for _ in range(24)]
    average_within(ess, 4 * 4000 / tau)


def test_bulk_ess_of_gaussian_ar1_chains_matches_the_mean_ess():
    """Rank-normalising Gaussian draws changes them only slightly (their normal scores), so the bulk ESS
    has the same expectation M N / τ."""
    rng = np.random.default_rng(7)
    phi = 0.8
    ess = [mcmc.effective_sample_size(ar1_chains(phi, 4, 4000, rng), "bulk") for _ in range(24)]
    average_within(ess, 4 * 4000 * (1 - phi) / (1 + phi))


def test_batch_means_standard_error_of_ar1_chains_matches_the_exact_variance():
    """E[sem²] equals Var(batch mean)/(number of batches) for independent batches; for batches of size b
    of an AR(1) this is the exact variance_of_mean(φ, b) / (M n_batches), which differs from the variance
    of the overall mean by the known finite-batch bias (6% here), computed in closed form, not fitted."""
    rng = np.random.default_rng(3)
    phi, chains, draws, n_batches = 0.8, 4, 4900, 70
    size = draws // n_batches
    squared = [mcmc.batch_means_sem(ar1_chains(phi, chains, draws, rng), n_batches) ** 2 for _ in range(60)]
    exact = variance_of_mean(phi, draws) / chains
    expected_estimate = variance_of_mean(phi, size) / (chains * n_batches)
    average_within(squared, exact, bias=expected_estimate - exact)
    assert abs(expected_estimate / exact - 1) < 0.1  # and the bias is small


def test_iid_draws_have_ess_near_the_draw_count_and_rhat_near_one():
    """i.i.d. N(0, 1): τ = 1, ESS = M N (bulk and mean). For one data set of 8 split chains of 1000 draws,
    R-hat² − 1 ≈ (B/W − 1)/1000 with B/W ~ F(7, ∞) (mean 1, sd 0.53): R-hat exceeds 1.004 with
    probability below 1e-6."""
    rng = np.random.default_rng(11)
    for kind in ("bulk", "mean"):
        ess = [mcmc.effective_sample_size(rng.standard_normal((4, 2000)), kind) for _ in range(24)]
        average_within(ess, 8000.0)
    draws = rng.standard_normal((4, 2000))
    assert 0.99 < mcmc.split_rhat(draws) < 1.004
    assert mcmc.summarize_chains(draws).status == Status.CONVERGED


def test_chains_with_different_means_give_rhat_well_above_one():
    """Three chains around 0 and one around 1 (unit variance): the split chains' means have a between-chain
    variance 0.214 (6 at 0, 2 at 1), so the classic split R-hat → sqrt(1 + 0.214) = 1.102; the
    rank-normalised R-hat is also far above 1.01 and the summary reports poor mixing."""
    rng = np.random.default_rng(5)
    draws = rng.standard_normal((4, 20000)) + np.array([[0.0], [0.0], [0.0], [1.0]])
    expected = math.sqrt(1 + np.var([0, 0, 0, 0, 0, 0, 1, 1], ddof=1) / 1.0)
    # sampling error of the chain means: sd 1/sqrt(10000) each, i.e. about 0.01 on the between variance
    assert mcmc.split_rhat(draws, rank_normalized=False) == pytest.approx(expected, abs=0.01)
    assert mcmc.split_rhat(draws) > 1.05
    summary = mcmc.summarize_chains(draws)
    assert summary.status == Status.POOR_MIXING and "R-hat" in summary.message
    # The ESS-based standard error grows with the spread of the chain means (their sd is 0.5 here,
    # so about 0.5/sqrt(4) = 0.25 for four chains), far above the i.i.d. value 1/sqrt(80000) = 0.0035.
    assert summary.mcse_mean > 0.1


def test_a_trending_chain_is_caught_by_splitting():
    """One chain whose first half sits at 0 and second half at 2: unsplit R-hat would see one chain; the
    split halves differ, so R-hat is large."""
    rng = np.random.default_rng(2)
    chain = np.concatenate([rng.standard_normal(2000), 2 + rng.standard_normal(2000)])
    assert mcmc.split_rhat(chain) > 1.3


def test_bad_draws_are_parameter_errors():
    with pytest.raises(ParameterError, match="draws"):
        mcmc.split_rhat([[1.0, 2.0, math.nan, 3.0]])
    with pytest.raises(ParameterError, match="draws"):
        mcmc.effective_sample_size(np.zeros((2, 3)))
    with pytest.raises(ParameterError, match="kind"):
        mcmc.effective_sample_size(np.zeros((2, 10)), "median")
    with pytest.raises(ParameterError, match="n_batches"):
        mcmc.batch_means_sem(np.zeros((1, 10)), 11)


def test_autocovariance_by_fft_equals_the_direct_sum():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 57))
    centred = x - x.mean(axis=1, keepdims=True)
    direct = np.array([[np.dot(c[: 57 - t], c[t:]) / 57 for t in range(57)] for c in centred])
    np.testing.assert_allclose(mcmc.autocovariance(x), direct, rtol=1e-12, atol=1e-14)


def test_agrees_with_arviz():
    """The same estimators as ArviZ (the reference implementation users compare with), to rounding."""
    import arviz as az  # in the test extra
    rng = np.random.default_rng(42)
    for draws in (ar1_chains(0.9, 4, 1001, rng), rng.standard_normal((3, 500)) + np.arange(3)[:, None] * 0.3,
                  rng.exponential(size=(4, 800)), ar1_chains(-0.5, 2, 300, rng)):
        assert mcmc.split_rhat(draws) == pytest.approx(float(az.rhat(draws, method="rank")), rel=1e-10)
        for kind in ("bulk", "tail", "mean"):
            assert mcmc.effective_sample_size(draws, kind) == pytest.approx(
                float(az.ess(draws, method=kind)), rel=1e-10)
        assert mcmc.mcse_mean(draws) == pytest.approx(float(np.squeeze(az.mcse(draws, method="mean"))), rel=1e-10)


def test_tail_ess_is_zero_when_draws_tie_at_the_top():
    """10 % of the draws at the largest value (an order parameter pinned at its bound): the 95 % quantile is that value,
    and the indicator of x <= it is always 1, so it carries no information (ArviZ: NaN). The summary reports 0 and
    poor mixing with the reason, never NaN. With 3 % tied the quantile is crossed, and the tail ESS is that of
    independent draws (about their count)."""
    rng = np.random.default_rng(3)
    uniforms, below = rng.random((4, 400)), -rng.exponential(size=(4, 400))
    # The tolerance from the estimator's scatter on S = 1600 independent draws: each ρ̂_t has sd 1/√S = 0.025, and
    # τ̂ = 1 + 2ρ̂_1 + 2(ρ̂_2 + ρ̂_3) + … keeps about one pair after ρ̂_1, so sd(τ̂) ≈ 2 √2 × 0.025 ≈ 0.07: the ESS
    # S/τ̂ scatters by about 7%. The smaller of the two indicators' ESS is low by about 0.56 sd (the mean of the
    # smaller of two normals), 4%; four sd of 7% either side of that.
    tail_ess = mcmc.effective_sample_size(np.where(uniforms < 0.03, 0.0, below), "tail")
    assert tail_ess == pytest.approx(1600 * (1 - 0.56 * 0.07), rel=4 * 0.07)
    draws = np.where(uniforms < 0.10, 0.0, below)
    assert mcmc.effective_sample_size(draws, "tail") == 0.0
    summary = mcmc.summarize_chains(draws)
    assert summary.ess_tail == 0.0 and summary.status is Status.POOR_MIXING
    assert "tail ESS 0: more than 5% of the draws tie at their largest value" in summary.message
    assert all(math.isfinite(v) for v in (summary.ess_bulk, summary.ess_mean, summary.mcse_mean, summary.rhat))


def test_the_ess_rule_asks_for_100_effective_draws_per_chain_not_100_in_all():
    """Vehtari et al.'s rule, as the summary states it: bulk and tail ESS of at least 100 per chain, i.e. 400 for
    4 chains. AR(1) chains with φ = 59/61 (τ = (1 + φ)/(1 − φ) = 60) of 4 × 3000 draws have ESS → M N / τ = 200,
    inside (100, 400), the only band where "per chain" shows; the bulk ESS of one data set scatters by about 20%
    (153 … 281 over six seeds), a factor 2 from either end. With R-hat's own rule loosened to 1.1 (R-hat is about
    1 + 1/(2 × 25 effective draws per split chain) ≈ 1.02 here), the ESS rule alone must report poor mixing, naming
    the per-chain count; with the default rules the same reason is given. 4 × 20000 draws with φ = 0.95
    (M N / τ = 2051, five times 400) converge."""
    rng = np.random.default_rng(0)
    phi = 59 / 61
    draws = ar1_chains(phi, 4, 3000, rng)
    alone = mcmc.summarize_chains(draws, rhat_max=1.1)
    assert 100 < alone.ess_bulk < 400 and alone.rhat < 1.1  # the premise: only the per-chain count can fail
    assert alone.status is Status.POOR_MIXING
    assert f"bulk ESS {alone.ess_bulk:.0f} < 100 per chain x 4 chains" in alone.message
    assert "R-hat" not in alone.message
    default = mcmc.summarize_chains(draws)
    assert default.status is Status.POOR_MIXING and "< 100 per chain x 4 chains" in default.message
    mixed = mcmc.summarize_chains(ar1_chains(0.95, 4, 20000, rng))
    assert mixed.status is Status.CONVERGED and mixed.ess_bulk > 400, mixed.message
