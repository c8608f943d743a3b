"""The split-line rule on a minimisation with a known basin switch (closed-form references)."""

from __future__ import annotations


import numpy as np
import pytest
from scipy import special
from scipy.stats import norm

from attnphase.errors import ParameterError
from attnphase.numeric.split_line import SplitLineRule, split_line_expectation


def _shift(z):
    """c(z_1, z_2): basin A (minimiser 1 + 0.1 z_0, value z_0 + c) is global where z_0 < −c."""
    return 0.3 * np.sin(z[:, 1]) + 0.2 * z[:, 2]


def _basins(z, in_a):
    x = np.where(in_a, 1.0 + 0.1 * z[:, 0], -1.0)
    value = np.where(in_a, z[:, 0] + _shift(z), 0.0)
    return x[:, None], value


def global_minimum(z):
    return _basins(z, z[:, 0] + _shift(z) < 0)


def local_minimum(z, start):
    """Each start stays in its own basin (A: positive minimiser, B: negative), as a local solver would."""
    return _basins(z, start[:, 0] > 0)


def integrand(z, x, value):
    return np.column_stack([x[:, 0], value])


def reference():
    """E[x*] = E[2Φ(−c) − 1 − 0.1 φ(c)], E[min] = E[c Φ(−c) − φ(c)] over (z_1, z_2): smooth, 60² nodes."""
    t, w = special.roots_hermitenorm(60)
    w = w / w.sum()
    Z1, Z2 = np.meshgrid(t, t, indexing="ij")
    W = np.outer(w, w)
    c = 0.3 * np.sin(Z1) + 0.2 * Z2
    return np.array([np.sum(W * (2 * norm.cdf(-c) - 1 - 0.1 * norm.pdf(c))),
                     np.sum(W * (c * norm.cdf(-c) - norm.pdf(c)))])


def test_split_line_matches_closed_form_where_tensor_rule_does_not():
    exact = reference()
    result = split_line_expectation(global_minimum, local_minimum, integrand, 3, 0, SplitLineRule(24, 24, 1e-12))
    coarser = split_line_expectation(global_minimum, local_minimum, integrand, 3, 0, SplitLineRule(20, 24, 1e-12))
    # Each piece is smooth (linear times the normal density) and its end is located to 2⁻⁴⁰, so only
    # the outer Gauss-Hermite rule is left; its error is estimated by the change from 20 to 24 nodes.
    estimate = np.abs(result.value - coarser.value).max()
    assert estimate < 1e-9
    assert np.abs(result.value - exact).max() <= estimate
    assert result.n_split_lines == result.n_lines  # every line crosses the switching surface once
    assert result.unresolved_panels == 0
    # the same points on a tensor Gauss-Hermite rule: the jump in x* and the kink in the minimum
    t, w = special.roots_hermitenorm(24)
    w = w / w.sum()
    grid = np.stack(np.meshgrid(t, t, t, indexing="ij"), -1).reshape(-1, 3)
    weights = np.einsum("i,j,k->ijk", w, w, w).ravel()
    x, value = global_minimum(grid)
    tensor = weights @ integrand(grid, x, value)
    assert np.abs(tensor - exact).max() > 1e3 * np.abs(result.value - exact).max()


def test_bad_rule_raises():
    with pytest.raises(ParameterError):
        SplitLineRule(1, 16, 1e-10)
    with pytest.raises(ParameterError):
        SplitLineRule(8, 16, 0.0)
