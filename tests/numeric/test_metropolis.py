"""numeric.metropolis: posterior means against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.numeric.metropolis import metropolis_means


def test_means_of_a_correlated_gaussian_and_of_a_skewed_density():
    """Gaussian N(μ, C): E[x] = μ and E[x₀²] = C₀₀ + μ₀²; log-normal scale (density of r = ln ρ with ρ ~
    Gamma(k, 1)): E[ρ] = k while the density of ρ peaks at k − 1 — a mean away from the mode, the case
    the sampler is for. Each within
    5 of its standard errors over walkers."""
    mu = np.array([0.7, -1.2])
    C = np.array([[1.0, 0.6], [0.6, 2.0]])
    P = np.linalg.inv(C)
    gauss = metropolis_means(lambda X: -0.5 * np.einsum("wi,ij,wj->w", X - mu, P, X - mu),
                             lambda X: np.stack([X[:, 0], X[:, 1], X[:, 0] ** 2], axis=-1), mu, P,
                             walkers=200, steps=3000, seed=1)
    assert gauss.status == "converged"
    exact = np.array([mu[0], mu[1], C[0, 0] + mu[0] ** 2])
    assert np.all(np.abs(gauss.means - exact) < 5 * gauss.errors)

    k = 4.0  # ρ ~ Gamma(k): density of r = ln ρ ∝ exp(k r − e^r), mode at r = ln k, curvature k there
    skewed = metropolis_means(lambda X: k * X[:, 0] - np.exp(X[:, 0]), lambda X: np.exp(X[:, :1]),
                              np.array([np.log(k)]), np.array([[k]]), walkers=200, steps=3000, seed=2)
    assert abs(skewed.means[0] - k) < 5 * skewed.errors[0]


def test_bad_walkers_raise():
    with pytest.raises(ParameterError, match="walkers"):
        metropolis_means(lambda X: -X[:, 0] ** 2, lambda X: X, np.zeros(1), np.eye(1), walkers=1)
