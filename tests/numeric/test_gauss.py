"""Gaussian expectations against closed forms evaluated in high precision.

For z ~ N(mu, Sigma) and a fixed vector a, s = a.z is N(a.mu, a^T Sigma a), so
  E[(a.z)^k] are the Gaussian moments of s, E[exp(a.z)] = exp(a.mu + a^T Sigma a / 2),
  E[Phi(c + b.z)] = Phi((c + b.mu) / sqrt(1 + b^T Sigma b))
(the last because Phi(c + b.z) = P(g <= c + b.z) for an independent standard normal g).
The test asserts the reported error estimate bounds the true error, and that a converged result
meets the requested tolerance.
"""

from __future__ import annotations

import math

import subprocess
import sys

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr

from attnphase.errors import ParameterError
from attnphase.numeric.expectation import covariance_factor
from attnphase.numeric.gauss import (
    GaussHermiteRule,
    default_min_nodes_per_dim,
    gaussian_expectation,
    pruned_tensor_rule,
    tensor_rule,
)
from attnphase.numeric.sobol import sobol_expectation


def correlated_case(dim: int, seed: int):
    """A random mean, a random correlated covariance and two random direction vectors."""
    rng = np.random.default_rng(1000 * dim + seed)
    A = rng.normal(size=(dim, dim)) * 0.6
    cov = A @ A.T + 0.2 * np.eye(dim)
    mu = rng.normal(size=dim) * 0.5
    a = rng.normal(size=dim) * 0.5
    b = rng.normal(size=dim) * 0.8
    return mu, cov, a, b


def mp(x):
    return mpmath.mpf(float(x))


def moments_closed_form(m: float, s2: float) -> list[float]:
    """E[s], E[s^2], E[s^3], E[s^4] for s ~ N(m, s2), in 30-digit arithmetic."""
    with mpmath.workdps(30):
        m, s2 = mp(m), mp(s2)
        return [float(v) for v in (m, m**2 + s2, m**3 + 3 * m * s2, m**4 + 6 * m**2 * s2 + 3 * s2**2)]


CASES = [(dim, seed) for dim in (1, 2, 3, 4) for seed in (0, 1)]


@pytest.mark.parametrize("dim,seed", CASES)
def test_moments_vector_valued(dim, seed):
    mu, cov, a, _ = correlated_case(dim, seed)
    exact = np.array(moments_closed_form(a @ mu, a @ cov @ a))

    def f(z):
        s = z @ a
        return np.stack([s, s**2, s**3, s**4], axis=-1)

    res = gaussian_expectation(f, mu, cov, tol=1e-10)
    assert res.converged and res.method == "hermite"
    assert res.value.shape == (4,) and res.error.shape == (4,)
    assert np.all(np.abs(res.value - exact) <= res.error)
    assert np.all(res.error <= 1e-10)


@pytest.mark.parametrize("dim,seed", CASES)
def test_exponential_moment(dim, seed):
    mu, cov, a, _ = correlated_case(dim, seed)
    with mpmath.workdps(30):
        exact = float(mpmath.exp(mp(a @ mu) + mp(a @ cov @ a) / 2))
    res = gaussian_expectation(lambda z: np.exp(z @ a), mu, cov, tol=1e-11)
    assert res.converged
    assert abs(res.value - exact) <= res.error <= 1e-11
    assert not res.slow_convergence


@pytest.mark.parametrize("dim,seed", CASES)
def test_probit_expectation(dim, seed):
    mu, cov, _, b = correlated_case(dim, seed)
    b = 0.6 * b  # keeps b^T Sigma b <= ~5, so the 4-D rules stay below ~10^6 points
    c = 0.3
    with mpmath.workdps(30):
        exact = float(mpmath.ncdf((mp(c) + mp(b @ mu)) / mpmath.sqrt(1 + mp(b @ cov @ b))))
    res = gaussian_expectation(lambda z: ndtr(c + z @ b), mu, cov, tol=1e-11)
    assert res.converged
    assert abs(res.value - exact) <= res.error <= 1e-11


@pytest.mark.parametrize("n", [4, 6, 8, 10])
def test_fixed_rule_error_estimate_bounds_true_error(n):
    """A coarse fixed rule is inaccurate; its error estimate (against a finer rule) must cover that."""
    mu, cov, a, b = correlated_case(2, 0)
    exact = math.exp(a @ mu + 0.5 * a @ cov @ a)
    res = gaussian_expectation(lambda z: np.exp(z @ a) * np.cos(0.0 * z[:, 0]), mu, cov, nodes_per_dim=n)
    assert res.nodes_per_dim == n and res.n_points == n**2
    true_error = abs(res.value - exact)
    assert true_error <= res.error
    # ...without being absurdly pessimistic (within a factor 1e3 of the truth when visible).
    if true_error > 1e-13:
        assert res.error <= 1e3 * true_error


def test_relative_tolerance_for_large_values():
    mu, cov = np.array([2.0, 1.0]), np.array([[1.0, 0.6], [0.6, 1.5]])
    a = np.array([1.0, 1.0])
    exact = math.exp(a @ mu + 0.5 * a @ cov @ a)  # ~ 1.5e3: absolute 1e-10 is out of reach
    res = gaussian_expectation(lambda z: np.exp(z @ a), mu, cov, tol=1e-300, rtol=1e-12)
    assert res.converged
    assert abs(res.value - exact) <= res.error <= 1e-12 * exact


def test_singular_covariance():
    """Rank-one covariance (z2 = 2 z1): the eigendecomposition factor still gives exact moments."""
    mu = np.array([0.1, -0.3])
    cov = np.array([[1.0, 2.0], [2.0, 4.0]])
    a = np.array([0.5, -0.2])
    exact = math.exp(a @ mu + 0.5 * a @ cov @ a)
    res = gaussian_expectation(lambda z: np.exp(z @ a), mu, cov)
    assert res.converged and abs(res.value - exact) <= res.error
    _, L = covariance_factor(mu, cov)
    np.testing.assert_allclose(L @ L.T, cov, atol=1e-14)


@pytest.mark.parametrize(
    "mean,cov",
    [
        ([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]]),  # indefinite
        ([0.0, 0.0], [[1.0, 0.5], [0.4, 1.0]]),  # not symmetric
        ([0.0, 0.0], [[1.0, np.nan], [np.nan, 1.0]]),
        ([0.0, np.inf], np.eye(2)),
        ([0.0, 0.0], np.eye(3)),  # shape mismatch
    ],
)
def test_bad_covariances_rejected(mean, cov):
    with pytest.raises(ParameterError):
        gaussian_expectation(lambda z: z[:, 0], mean, cov)


def test_bad_options_rejected():
    with pytest.raises(ParameterError):
        gaussian_expectation(lambda z: z[:, 0], [0.0], [[1.0]], method="trapezoid")
    with pytest.raises(ParameterError):
        gaussian_expectation(lambda z: z[:, 0], [0.0], [[1.0]], tol=-1.0)
    with pytest.raises(ParameterError):
        sobol_expectation(lambda z: z[:, 0], [0.0], [[1.0]], n_points=1000)
    with pytest.raises(ParameterError):  # integrand returning the wrong shape
        gaussian_expectation(lambda z: np.ones(3), [0.0], [[1.0]])


def test_rule_reproduces_mean_and_covariance():
    mu, cov, _, _ = correlated_case(3, 1)
    rule = GaussHermiteRule(3, 5)
    z = rule.points(mu, cov)
    w = rule.weights
    assert z.shape == (125, 3) and w.shape == (125,)
    assert math.isclose(w.sum(), 1.0, rel_tol=1e-14)
    np.testing.assert_allclose(w @ z, mu, atol=1e-14)
    centered = z - mu
    np.testing.assert_allclose((centered * w[:, None]).T @ centered, cov, atol=1e-13)
    # The rule is cached: the same arrays come back.
    assert GaussHermiteRule(3, 5).weights is w


@pytest.mark.parametrize("n", [20, 64, 200])
def test_high_order_rule_moments(n):
    """roots_hermitenorm stays accurate at high order: the n-node rule integrates z^(2k) exactly
    for 2k <= 2n - 1, E z^(2k) = (2k - 1)!!, to rounding (relative 1e-13)."""
    rule = GaussHermiteRule(1, n)
    z = rule.standard_nodes[:, 0]
    for k in range(0, min(n, 12)):
        exact = float(mpmath.fac2(2 * k - 1)) if k else 1.0
        assert abs(rule.weights @ z ** (2 * k) - exact) <= 1e-13 * exact


def test_kink_is_reported_as_slow():
    """E|z| = sqrt(2/pi): the kink at 0 makes Gauss-Hermite converge like 1/n, not exponentially."""
    exact = math.sqrt(2 / math.pi)
    res = gaussian_expectation(lambda z: np.abs(z[:, 0]), [0.0], [[1.0]], tol=1e-10, max_nodes_per_dim=128)
    assert not res.converged and res.slow_convergence
    assert 0.5 <= res.observed_order <= 2.0
    assert len(res.history) >= 4 and "slow" in res.message
    assert abs(res.value - exact) <= res.error
    smooth = gaussian_expectation(lambda z: np.cos(z[:, 0]), [0.0], [[1.0]])
    assert smooth.converged and not smooth.slow_convergence


def relu_closed_form(a: float) -> float:
    """E[max(z - a, 0)] = phi(a) - a Q(a) for z ~ N(0, 1), Q(a) = P(z > a)."""
    with mpmath.workdps(30):
        a = mp(a)
        return float(mpmath.npdf(a) - a * mpmath.ncdf(-a))


def upper_tail(a: float) -> float:
    """Q(a) = P(z > a) = E[1(z > a)] for z ~ N(0, 1)."""
    with mpmath.workdps(30):
        return float(mpmath.ncdf(-mp(a)))


CAPS = (36, 64, 96, 128, 192, None)  # None: the default cap, 256 nodes in one dimension


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("a", [0.1, 0.3, 0.7])
def test_error_bar_covers_a_shifted_kink(a, cap):
    """relu(z - a): the error of each rule depends on where a falls between its nodes, so successive rules can
    agree by chance (the estimate from the last difference and its geometric tail missed relu(z - 0.3) at a cap
    of 128 nodes: 1.39e-3 reported, 1.54e-3 off). The bar must cover the closed form, and a kink never converges
    to the default tolerance."""
    res = gaussian_expectation(lambda z: np.maximum(z[:, 0] - a, 0.0), [0.0], [[1.0]], max_nodes_per_dim=cap)
    assert abs(res.value - relu_closed_form(a)) <= res.error
    assert not res.converged and res.slow_convergence
    assert len(res.history) >= 4


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("a", [0.1, 0.3, 0.7, -0.3])
def test_an_off_centre_jump_is_not_converged_at_a_wrong_value(a, cap):
    """1(z > a): with even node counts no node of the 8- and 12-node rules lies in (0, 0.3], both gave 1/2 exactly
    and the result was 'converged' at 0.5 with error 1.4e-14 (Q(0.3) = 0.382). The bar must cover Q(a), and
    the jump must not be called converged."""
    res = gaussian_expectation(lambda z: (z[:, 0] > a).astype(float), [0.0], [[1.0]], max_nodes_per_dim=cap)
    assert abs(res.value - upper_tail(a)) <= res.error
    assert not res.converged and "not converged" in res.message


@pytest.mark.parametrize("tol", [1e-2, 3e-3, 1e-3])
@pytest.mark.parametrize("a", [0.1, 0.3, 0.7])
def test_a_kink_at_a_loose_tolerance_converges_only_within_its_error(a, tol):
    """Three rules can agree on a kink well within a loose tolerance (relu(z - 0.3) on 9, 15 and 23 nodes: three
    times the larger difference is 4.1e-3, the 23-node value is 6.7e-3 off): converged needs four rules."""
    res = gaussian_expectation(lambda z: np.maximum(z[:, 0] - a, 0.0), [0.0], [[1.0]], tol=tol)
    assert abs(res.value - relu_closed_form(a)) <= res.error
    if res.converged:
        assert res.error <= tol and len(res.history) >= 4


@pytest.mark.parametrize("power", [1, 5])
@pytest.mark.parametrize("cap", [36, 60, 128])
@pytest.mark.parametrize("a", [-0.15, 1.4875])
def test_a_kink_whose_differences_shrink_fast_for_a_while_is_not_taken_for_a_smooth_integrand(a, cap, power):
    """relu(z - 1.4875) on 9, 15, 23 and 35 nodes differs by 4.2e-3, 3.4e-4, 3.3e-5 while 2.0e-4 off; relu(z + 0.15)^5
    on 9 ... 53 nodes by ratios 0.12, 0.14, 0.003 while 5.7e-6 off. Taken for exponential convergence, the last
    difference would be the error."""
    exact = relu_closed_form(a) if power == 1 else float(mpmath.quad(
        lambda t: mpmath.npdf(t) * (t - a) ** power, [a, mpmath.inf]))
    res = gaussian_expectation(lambda z: np.maximum(z[:, 0] - a, 0.0) ** power, [0.0], [[1.0]],
                               max_nodes_per_dim=cap)
    assert abs(res.value - exact) <= res.error


def test_error_bar_covers_jumps_and_kinks_wherever_they_are():
    """Coverage over positions: 1(z > a) and relu(z - a), a from -2.5 to 2.5 in steps of 1/16, node caps from 36 to
    256. The estimate is three times the largest of the last four differences; twice would leave the jump at 0
    (cap 36: 0.80 of the estimate) uncovered."""
    worst = 0.0
    for a in np.arange(-2.5, 2.5 + 1e-9, 0.0625):
        for f, exact in ((lambda z: (z[:, 0] > a).astype(float), upper_tail(a)),
                         (lambda z: np.maximum(z[:, 0] - a, 0.0), relu_closed_form(a))):
            for cap in (36, 48, 64, 96, 128, 192, 256):
                res = gaussian_expectation(f, [0.0], [[1.0]], max_nodes_per_dim=cap)
                assert abs(res.value - exact) <= res.error, (a, cap, res.value, exact, res.error)
                assert not res.converged or res.error <= 1e-10
                worst = max(worst, abs(res.value - exact) / res.error)
    assert worst > 0.5  # the scan does reach the cases that set the factor


def test_smooth_integrands_stay_cheap():
    """Exponential convergence is recognised after four or five rules: E[exp(a.z)] converges to 1e-11 by 35 nodes
    per dimension in 1 to 3 dimensions, and by the 41-node rule, the fifth under the 45-node cap, in 4."""
    for dim, seed in CASES:
        mu, cov, a, _ = correlated_case(dim, seed)
        res = gaussian_expectation(lambda z: np.exp(z @ a), mu, cov, tol=1e-11)
        assert res.converged and res.nodes_per_dim <= (35 if dim < 4 else 41)
        assert not res.slow_convergence
        # A polynomial is exact on every rule: three rules that agree to rounding suffice.
        poly = gaussian_expectation(lambda z: (z @ a) ** 4, mu, cov, tol=1e-11, rtol=1e-13)
        assert poly.converged and len(poly.history) == 3


def test_the_refinement_sequence():
    """Odd node counts growing by ~1.5 (every rule has a node at 0); the first rule is 9, or 7 where that leaves
    room for more of the five rules the estimate looks at."""
    steps = gaussian_expectation(lambda z: np.maximum(z[:, 0], 0.0), [0.0], [[1.0]]).history
    assert [s.nodes_per_dim for s in steps] == [9, 15, 23, 35, 53, 81, 123, 185]
    assert default_min_nodes_per_dim(4) == 7  # 7, 11, 17, 27, 41 under the 45-node cap; 9 gives 9, 15, 23, 35
    assert default_min_nodes_per_dim(1, 40) == 9 and default_min_nodes_per_dim(1, 45) == 7


def test_nonfinite_integrand_is_a_status():
    res = gaussian_expectation(lambda z: 1.0 / z[:, 0] ** 0, [0.0], [[1.0]])
    assert res.converged  # sanity: a constant is fine
    with np.errstate(invalid="ignore", divide="ignore"):  # log of negative nodes, and of the node at 0
        bad = gaussian_expectation(lambda z: np.log(z[:, 0]), [0.0], [[1.0]])
    assert not bad.converged and "non-finite" in bad.message


def test_sobol_within_standard_errors_and_fixed():
    mu, cov, _, b = correlated_case(3, 0)
    c = -0.2
    exact = float(ndtr((c + b @ mu) / math.sqrt(1 + b @ cov @ b)))
    f = lambda z: ndtr(c + z @ b)  # noqa: E731
    first = sobol_expectation(f, mu, cov, n_points=2**12, replicates=8, seed=3)
    again = sobol_expectation(f, mu, cov, n_points=2**12, replicates=8, seed=3)
    other = sobol_expectation(f, mu, cov, n_points=2**12, replicates=8, seed=4)
    assert first.method == "sobol" and first.n_points == 8 * 2**12
    assert 0 < first.error < 1e-3
    # One realisation each: (value − exact)/error is Student t with 7 degrees of freedom (8 replicates), beyond 4 with
    # probability 0.5%. This checks the value; test_sobol_error_bar_is_calibrated_over_independent_scrambles checks
    # the bar.
    assert abs(first.value - exact) <= 4 * first.error
    assert abs(other.value - exact) <= 4 * other.error
    assert first.value == again.value and first.error == again.error  # points fixed across calls
    assert first.value != other.value


def test_sobol_on_kink_and_adaptive_mode():
    exact = math.sqrt(2 / math.pi)
    res = gaussian_expectation(lambda z: np.abs(z[:, 0]), [0.0], [[1.0]], method="sobol", tol=1e-5)
    assert res.converged and res.error <= 1e-5
    assert abs(res.value - exact) <= 4 * res.error  # 8 replicates: t with 7 degrees of freedom, beyond 4 at 0.5%
    assert len(res.history) >= 1


def test_sobol_error_bar_is_calibrated_over_independent_scrambles():
    """The Sobol error is the standard error over replicates: error² (with ddof 1) is an unbiased estimate of the
    variance of the value, so over independent scrambles E[error²] = E[(value − exact)²] (exact: relu_closed_form).
    With 2 replicates the replicate sd's ddof matters most (ddof 0 halves error²), so the check is made there.

    Independent estimates, cheaply: 64 one-dimensional integrands max(z_j − 0.3, 0) in one call, each of its own
    coordinate (identity covariance), times 32 scramble seeds: 2048 estimates. They are independent because each
    coordinate's 2^10 Sobol points are the grid i/2^10 before scrambling, and each coordinate has its own random
    scramble (matrix and shift). d = error² − (value − exact)² has mean 0; for Gaussian replicates its sd is 2V
    (V the variance of a value), so the standard error of its mean is 2V/√2048 = 0.044 V, and the check allows four
    (estimated from the spread of d). A bar with ddof 0 would move the mean to −V/2, 11 standard errors away."""
    a, dims, exact = 0.3, 64, relu_closed_form(0.3)
    squared_errors, squared_deviations = [], []
    for seed in range(32):
        res = sobol_expectation(lambda z: np.maximum(z - a, 0.0), np.zeros(dims), 1.0, n_points=2**10, replicates=2,
                                seed=seed)
        error, value = np.asarray(res.error), np.asarray(res.value)
        assert error.shape == value.shape == (dims,)
        squared_errors.append(error**2)
        squared_deviations.append((value - exact) ** 2)
    d = np.concatenate(squared_errors) - np.concatenate(squared_deviations)
    standard_error = d.std(ddof=1) / math.sqrt(len(d))
    assert abs(d.mean()) <= 4 * standard_error, (d.mean(), standard_error)
    assert np.mean(squared_deviations) / 2 > 8 * standard_error  # the design: a halved error² would be far out


@settings(max_examples=max(1, settings.default.max_examples * 3 // 10))  # each example refines a rule to 1e-12
@given(
    dim=st.integers(1, 3),
    entries=st.lists(st.floats(-0.6, 0.6), min_size=9, max_size=9),
    direction=st.lists(st.floats(-0.8, 0.8), min_size=3, max_size=3),
    shift=st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3),
)
def test_error_bound_on_random_covariances(dim, entries, direction, shift):
    """Property: for any correlated covariance (possibly singular), the estimate bounds the error."""
    A = np.array(entries).reshape(3, 3)[:dim, :dim]
    cov = A @ A.T
    mu, a = np.array(shift[:dim]), np.array(direction[:dim])
    with mpmath.workdps(30):
        exact = float(mpmath.exp(mp(a @ mu) + mp(a @ cov @ a) / 2))
    res = gaussian_expectation(lambda z: np.exp(z @ a), mu, cov, tol=1e-12)
    assert res.converged
    assert abs(res.value - exact) <= res.error <= 1e-12


def test_numeric_does_not_import_sympy():
    code = "import sys, attnphase.numeric; sys.exit('sympy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("dim, n", [(4, 10), (4, 14), (6, 6)])
def test_pruned_rule_drops_only_negligible_weight(dim, n):
    """The pruned rule keeps the nodes of weight > 1e-13: the dropped weight (1 − Σw) is below (dropped
    nodes) × 1e-13, and a polynomial moment the full rule integrates exactly, E[z_1² z_2²] = 1, moves by
    at most the dropped weight times max |z_1² z_2²| over the dropped nodes."""
    full_nodes, full_weights = tensor_rule(dim, n)
    nodes, weights = pruned_tensor_rule(dim, n, 1e-13)
    dropped = full_weights <= 1e-13
    assert len(weights) == len(full_weights) - dropped.sum() and len(weights) < len(full_weights)
    assert 0 <= full_weights[dropped].sum() <= dropped.sum() * 1e-13
    moment = lambda z: z[:, 0] ** 2 * z[:, 1] ** 2  # noqa: E731
    bound = full_weights[dropped].sum() * moment(full_nodes[dropped]).max() + 1e-13
    assert abs(weights @ moment(nodes) - 1.0) <= bound
    assert not nodes.flags.writeable and pruned_tensor_rule(dim, n, 1e-13)[0] is nodes  # cached, read-only
