"""numeric.tilting: log-partition functions and tilted means against the closed forms of a tilted Gaussian."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnphase.numeric.tilting import tilt


def test_tilted_gaussian_table_gives_the_closed_form_cumulants():
    """Two rows, N(μ_r, σ_r²) tabulated on a fine grid (log weight ln p + ln Δx): tilting by h·x gives
    Λ(h) = hμ + σ²h²/2 and E_h[x] = μ + σ²h, E_h[x²] − E_h[x]² = σ², to the trapezoid error of a smooth
    integrand (exponentially small here), vectorised over a (2, 3) array of tilts."""
    x = np.linspace(-30, 30, 6001)
    mu, s2 = np.array([0.5, -1.0]), np.array([1.0, 2.5])
    log_weight = -((x - mu[:, None]) ** 2) / (2 * s2[:, None]) - 0.5 * np.log(2 * math.pi * s2[:, None]) + math.log(x[1] - x[0])
    features = np.broadcast_to(x, log_weight.shape)
    table = log_weight.copy()
    h = np.array([[-1.0, 0.0, 0.7], [1.5, -0.2, 2.0]])
    tilted = tilt(table, h, features)
    assert np.array_equal(table, log_weight)  # the caller's table is not overwritten
    assert tilted.log_partition.shape == (2, 3, 2)
    expected = h[..., None] * mu + s2 * h[..., None] ** 2 / 2
    assert np.allclose(tilted.log_partition, expected, atol=1e-12)
    mean = tilted.mean(features)
    assert np.allclose(mean, mu + s2 * h[..., None], atol=1e-10)
    assert np.allclose(tilted.mean(features**2) - mean**2, s2, atol=1e-9)


def test_two_fields_and_no_field():
    """Tilting by h·a + g·q equals tilting by the single feature h·a + g·q; with no field the log partition is the
    total mass (ln 1 = 0 for a normalised table) and the table is copied, not overwritten."""
    rng = np.random.default_rng(0)
    log_weight = np.log(rng.dirichlet(np.ones(50), size=3))
    a, q = rng.random((3, 50)), rng.random((3, 50))
    two = tilt(log_weight, 1.3, a, -0.4, q)
    one = tilt(log_weight, 1.0, 1.3 * a - 0.4 * q)
    assert np.allclose(two.log_partition, one.log_partition, atol=1e-14)
    assert np.allclose(two.mean(a), one.mean(a), atol=1e-14)
    untilted = tilt(log_weight)
    assert np.allclose(untilted.log_partition, 0.0, atol=1e-14)
    assert untilted.mean(a) == pytest.approx(np.sum(np.exp(log_weight) * a, axis=-1), abs=1e-14)
