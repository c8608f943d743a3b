import math

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.validate.compare import (Comparison, batch_means_error, compare, student_band, verdict_message,
                                       verdict_of)


def test_statistics_match_numpy_definitions():
    samples = np.array([1.0, 2.0, 4.0, 7.0])
    record = compare("x", 3.0, samples, theory_error=0.5)
    assert record.mean == pytest.approx(3.5, abs=1e-15)
    assert record.std == pytest.approx(np.std(samples, ddof=1), rel=1e-14)
    assert record.sem == pytest.approx(record.std / 2.0, rel=1e-14)
    assert record.z == pytest.approx(0.5 / math.hypot(record.sem, 0.5), rel=1e-14)
    assert record.agrees is True


def test_agreement_rate_matches_gaussian_coverage():
    # Draw many simulated "experiments" whose mean is the theory value. With n_sigma = 2 the record
    # must agree in about 95% of them (t-distribution with 19 dof: 94.0%), binomial error ~0.75%.
    rng = np.random.default_rng(7)
    agreements = [compare("x", 1.0, rng.normal(1.0, 0.3, 20), n_sigma=2.0).agrees for _ in range(1000)]
    rate = np.mean(agreements)
    assert abs(rate - 0.940) < 4 * math.sqrt(0.94 * 0.06 / 1000)


def test_the_student_band_is_t_at_the_normal_bands_level_and_holds_its_coverage_with_five_samples():
    """student_band(dof): Student's t quantile at 1 − 0.0027/2, against the closed forms of the t distribution for one
    and two degrees of freedom, tan(π(p − ½)) and (2p − 1)/√(2p(1 − p)); it tends to 3. Its use: five samples of a
    normal whose mean is the theory, compared with their own standard error: the normal ±3 rejected about 4% of
    them (P(|t₄| > 3) = 0.040), the Student band 0.27% (20000 experiments; binomial errors 0.14% and 0.04%)."""
    p = 1 - 0.0027 / 2
    assert student_band(1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert student_band(2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)
    assert student_band(10**6) == pytest.approx(3.0, abs=1e-3)
    rng = np.random.default_rng(11)
    experiments = rng.normal(1.0, 0.3, (20000, 5))
    z = (experiments.mean(axis=1) - 1.0) / (experiments.std(axis=1, ddof=1) / math.sqrt(5))
    normal_rate, student_rate = np.mean(np.abs(z) > 3.0), np.mean(np.abs(z) > student_band(4))
    assert abs(normal_rate - 0.0400) < 4 * math.sqrt(0.04 * 0.96 / 20000)
    assert abs(student_rate - 0.0027) < 4 * math.sqrt(0.0027 * 0.9973 / 20000)


def test_shifted_simulation_disagrees():
    rng = np.random.default_rng(3)
    samples = rng.normal(0.0, 1.0, 400) + 1.0  # shifted by 20 standard errors
    record = compare("x", 0.0, samples)
    assert record.agrees is False and record.z > 10


def test_single_sample_is_undecided():
    record = compare("x", 0.0, [0.1])
    assert record.agrees is None and record.z is None


@pytest.mark.parametrize("bad", [[], [float("nan")], [1.0, float("inf")]])
def test_bad_samples_are_rejected(bad):
    with pytest.raises(ParameterError, match="samples"):
        compare("x", 0.0, bad)


def test_the_verdict_of_several_comparisons_is_never_agreement_while_one_has_none():
    """One rejection decides; agreement needs every quantity to agree; a quantity without a verdict (one sample, or
    withheld by a model) leaves it open; no comparison gives none."""
    agrees = compare("a", 0.0, [-1.0, 1.0, 0.5, -0.5])
    rejects = compare("b", 10.0, [-1.0, 1.0, 0.5, -0.5])
    undecided = compare("c", 0.0, [0.3])  # one sample: no spread, no verdict
    assert (agrees.agrees, rejects.agrees, undecided.agrees) == (True, False, None)
    assert verdict_of([agrees, agrees]) is True
    assert verdict_of([agrees, rejects, undecided]) is False
    assert verdict_of([agrees, undecided]) is None
    assert verdict_of([]) is None


def measured(name, mean, sem, theory, theory_error=0.0, n_sigma=3.0, withheld=False):
    """A Comparison as `compare` makes it from a mean and its error (n = 4 draws), its verdict withheld on request."""
    scale = math.hypot(sem, theory_error)
    z = (mean - theory) / scale if scale > 0 else None
    agrees = None if withheld else abs(z) <= n_sigma if z is not None else mean == theory
    return Comparison(name, theory, theory_error, mean, 2 * sem, sem, 4, z, agrees, n_sigma)


def test_the_verdict_message_states_the_shared_band_once_and_groups_the_quantities_without_a_verdict():
    """Rejections with their numbers (the theory's error where it has one) and z, agreements with z (none where the
    bar and the theory's error are both 0), then the quantities without a verdict grouped by reason, with z where
    it exists; a quantity with two reasons is under each (its z the first time), one not in no_verdict is listed
    without a reason."""
    comparisons = [measured("c_copy", 0.574514, 0.0028, 0.603332),
                   measured("test_error", 0.003, 4.1e-5, 0.00235, 2e-5),
                   measured("test_loss", 0.0834, 0.00094, 0.0830),
                   measured("c_uniform", 1.0, 0.0, 1.0),
                   measured("rho", 0.2, 0.01, 0.1, withheld=True),
                   measured("q", 0.05, float("nan"), 0.06, withheld=True),
                   measured("abs_m", 0.3, 0.01, 0.29, withheld=True),
                   measured("theta", 0.1, 0.01, 0.1, withheld=True)]
    no_verdict = {"rho": ("not resolved: R-hat 1.200 > 1.05", "two training sets"), "q": ("one trial: no spread",),
                  "abs_m": ("two training sets",)}
    assert [c.agrees for c in comparisons[:4]] == [False, False, True, True]
    assert verdict_message(comparisons, no_verdict, band_reason="never said at ±3") == (
        "with the band ±3, the theory is rejected by c_copy: 0.574514 ± 0.0028 against 0.603332 (z = -10.3), "
        "test_error: 0.003 ± 4.1e-05 against 0.00235 ± 2e-05 (z = 14.2); it agrees with test_loss (z = 0.426), "
        "c_uniform; no verdict on rho (z = 10) (not resolved: R-hat 1.200 > 1.05); no verdict on rho, "
        "abs_m (z = 1) (two training sets); no verdict on q (one trial: no spread); no verdict on theta (z = 0)")


def test_a_widened_band_is_said_with_its_reason_and_bands_that_differ_are_said_per_quantity():
    """Four training sets: the 99.73% Student-t band with 3 degrees of freedom, ±9.2187, leads the account with the
    reason the caller gives (without one, the band alone); comparisons on different bands each state their own; with
    no verdict at all no band is said."""
    student = 9.2187
    loss = measured("test_loss", 0.0834, 0.00094, 0.0834 - 1.352 * 0.00094, n_sigma=student)
    copy = measured("c_copy", 0.60, 0.001, 0.5, n_sigma=student)
    reason = "the 99.73% Student-t band of 4 training sets"
    assert verdict_message([loss], {}, band_reason=reason) == (
        "with the band ±9.22, the 99.73% Student-t band of 4 training sets, the theory agrees with test_loss "
        "(z = 1.35)")
    assert verdict_message([copy, loss], {}) == (
        "with the band ±9.22, the theory is rejected by c_copy: 0.6 ± 0.001 against 0.5 (z = 100); it agrees with "
        "test_loss (z = 1.35)")
    normal = measured("rho", 0.1, 0.01, 0.1)
    assert verdict_message([loss, normal], {}, band_reason=reason) == (
        "the theory agrees with test_loss (z = 1.35, band ±9.22, the 99.73% Student-t band of 4 training sets), rho "
        "(z = 0, band ±3)")
    assert verdict_message([measured("q", 0.2, 0.01, 0.1, withheld=True)], {"q": ("the run has not settled",)},
                           band_reason=reason) == "no verdict on q (z = 10) (the run has not settled)"


def _ar1_batch_error_exact(phi: float, n: int, k: int) -> float:
    """E[SE²] of the 10-batch error of a stationary AR(1) chain (unit innovations), from its covariance
    φ^|i−j| / (1 − φ²): the batch means B = Wx have covariance C = WΣWᵀ and E[Σ(B_i − B̄)²] = tr C − ΣC/k."""
    idx = np.arange(n)
    cov = phi ** np.abs(idx[:, None] - idx[None, :]) / (1 - phi**2)
    size = n // k
    weights = np.kron(np.eye(k), np.full((1, size), 1.0 / size))
    batch_cov = weights @ cov[:k * size, :k * size] @ weights.T
    return float((np.trace(batch_cov) - batch_cov.sum() / k) / (k - 1) / k)


def test_batch_means_error_has_the_exact_expectation_on_ar1_chains():
    """The squared error of 10 batch means, averaged over 4000 independent stationary AR(1) chains (φ = 0.5, 400
    draws), against its exact expectation from the chain's covariance, within 4 standard errors of that average;
    the mean is the chain's (400 = 10·40 draws: none left out). The exact expectation is below the true variance of
    the mean by the batches' leading bias 2Σ_k k·γ_k / (b·σ²_∞) = (16/3) / (40·4) = 1/30 (γ_k = φ^k/(1 − φ²), the
    long-run variance σ²_∞ = 1/(1 − φ)² = 4, batch length b = 40), to 1e-3 (the next orders are O(1/b²) and φ^b)."""
    phi, n, chains = 0.5, 400, 4000
    rng = np.random.default_rng(11)
    x = np.empty((chains, n))
    x[:, 0] = rng.standard_normal(chains) / math.sqrt(1 - phi**2)  # stationary start
    noise = rng.standard_normal((chains, n))
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    results = [batch_means_error(chain) for chain in x]
    assert all(mean == pytest.approx(chain.mean(), abs=1e-12) for (mean, _), chain in zip(results, x))
    squared = np.array([error**2 for _, error in results])
    expected = _ar1_batch_error_exact(phi, n, 10)
    assert abs(squared.mean() - expected) < 4 * squared.std(ddof=1) / math.sqrt(chains)
    idx = np.arange(n)
    true_variance = float((phi ** np.abs(idx[:, None] - idx[None, :])).sum() / (1 - phi**2)) / n**2
    assert expected / true_variance == pytest.approx(1 - 1 / 30, abs=1e-3)


def test_batch_means_error_pools_chains_and_gives_zero_for_one_batch():
    """Two chains of 20 samples: 10 batch means of 2 samples each per chain, pooled (20 values): the error is their
    sample standard deviation over √20. One sample: one batch, no spread: error 0."""
    x = np.arange(40.0).reshape(2, 20) ** 2
    batches = x.reshape(2, 10, 2).mean(-1).ravel()
    mean, error = batch_means_error(x)
    assert mean == pytest.approx(batches.mean(), rel=1e-15)
    assert error == pytest.approx(math.sqrt(((batches - batches.mean()) ** 2).sum() / 19 / 20), rel=1e-14)
    assert batch_means_error(np.array([3.0])) == (3.0, 0.0)

