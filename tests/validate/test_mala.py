"""validate.mala and validate.compare.batch_means: the batched drivers on potentials with closed-form answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.signal import lfilter

from attnphase.validate import seeds
from attnphase.validate.device import using_threads
from attnphase.validate.compare import batch_means
from attnphase.validate.mala import adaptive_mala, autograd_potential, mala_step

MU = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
SD_X, SD_Y = 0.3, torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)


def _gaussian(params):
    """−log density of independent normals: x ~ N(0, 0.3²) (2 components), y ~ N(μ, diag(1, 4, 0.25))."""
    return (params["x"] ** 2).sum(-1) / (2 * SD_X**2) + (((params["y"] - MU) / SD_Y) ** 2).sum(-1) / 2


def test_adaptive_mala_samples_a_gaussian():
    """64 chains, two blocks with different scales and a unit preconditioner: after burn-in the time means and
    variances match the closed form within 5 standard errors (spread of the per-chain time averages over chains,
    which holds the autocorrelation), and the adapted step sizes give an acceptance near the 0.57 target. The
    variance is each chain's time mean of (x − μ)² about the exact mean μ: unbiased for a stationary chain (a chain's
    variance about its own mean falls short by the variance of that mean, τ/S of it for S draws of autocorrelation
    time τ, which a round 5 % had stood for)."""
    K, dev = 64, torch.device("cpu")
    gen = seeds.generator(3, dev, "cpu")
    params = {"x": torch.zeros(K, 2, dtype=torch.float64), "y": torch.zeros(K, 3, dtype=torch.float64)}
    ones = {k: torch.ones(K, 1, dtype=torch.float64) for k in params}
    samples = []
    with using_threads(1, device=dev):  # tiny tensors: one thread, no contention
        acceptance = adaptive_mala(params, autograd_potential(_gaussian), ones, torch.full((K,), 0.5, dtype=torch.float64),
                                   gen, dev, steps=2000, burn_in=600, thin=5, target_acceptance=0.57,
                                   record=lambda p: samples.append(torch.cat([p["x"], p["y"]], -1).numpy().copy()))
    X = np.stack(samples, 1)  # (K, S, 5)
    exact_mean = np.r_[0.0, 0.0, MU.numpy()]
    exact_var = np.r_[SD_X**2, SD_X**2, SD_Y.numpy() ** 2]
    per_chain_mean, per_chain_var = X.mean(1), ((X - exact_mean) ** 2).mean(1)
    mean, sem = per_chain_mean.mean(0), per_chain_mean.std(0, ddof=1) / math.sqrt(K)
    var, var_sem = per_chain_var.mean(0), per_chain_var.std(0, ddof=1) / math.sqrt(K)
    assert np.all(np.abs(mean - exact_mean) < 5 * sem)
    assert np.all(np.abs(var - exact_var) < 5 * var_sem)
    assert abs(acceptance.mean() - 0.57) < 0.1


def test_mala_step_accepts_moves_that_lower_the_potential_more_often():
    """One step with a tiny step size is accepted almost surely (the Langevin proposal is then nearly reversible),
    and the gradients stored in place belong to the new state."""
    K, dev = 200, torch.device("cpu")
    gen = seeds.generator(1, dev, "cpu")
    params = {"x": torch.ones(K, 2, dtype=torch.float64), "y": torch.zeros(K, 3, dtype=torch.float64)}
    grad = autograd_potential(_gaussian)
    U, g = grad(params)
    ones = {k: torch.ones(K, 1, dtype=torch.float64) for k in params}
    U, accepted = mala_step(params, U, g, torch.full((K,), 1e-8, dtype=torch.float64), ones, grad, gen, dev)
    assert accepted.double().mean() > 0.99
    assert torch.allclose(g["x"], grad(params)[1]["x"]) and torch.allclose(U, _gaussian(params))


def test_batch_means_of_a_chain():
    """Consecutive batches of equal length; the last S mod n samples are left out; short chains give fewer batches.
    For an AR(1) chain the variance of the batch means is the long-run variance / batch length (within 20%)."""
    x = np.arange(23.0)[None, :]
    assert np.array_equal(batch_means(x, 5), [[1.5, 5.5, 9.5, 13.5, 17.5]])
    assert batch_means(np.arange(3.0), 10).shape == (3,)
    rng = np.random.default_rng(0)
    phi, n = 0.8, 200_000
    chain = lfilter([1.0], [1.0, -phi], rng.standard_normal(n))  # x_i = φ x_{i−1} + ξ_i
    means = batch_means(chain, 100)
    long_run = 1 / (1 - phi) ** 2  # σ² of the noise (1) over (1 − φ)²
    assert means.var(ddof=1) == pytest.approx(long_run / (n // 100), rel=0.2)
