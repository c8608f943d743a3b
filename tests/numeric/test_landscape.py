"""numeric.landscape: grid minima, polish and merge, the mountain pass, central-difference curvatures and well
averages, on landscapes whose minima, saddles and moments are known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnphase.numeric.landscape import (
    central_hessian_2d, grid_local_minima, laplace_box_average, mountain_pass, polish_and_merge,
)


def _double_well(x, y, tilt=0.0):
    """(x² − 1)² + 2y² + tilt·x: minima near (±1, 0), saddle at (x_s, 0) with 4x_s(x_s² − 1) + tilt = 0, x_s ≈ tilt/4."""
    return (x * x - 1) ** 2 + 2 * y * y + tilt * x


def test_grid_minima_and_the_pass_of_a_tilted_double_well():
    """Grid minima: the cells nearest (±1, 0) (a tilt of 0.3 moves them by ~0.04, less than the 0.05 spacing);
    the mountain pass between them is the cell nearest the saddle, whose value is the barrier F(x_s, 0)."""
    xs, ys = np.linspace(-2, 2, 81), np.linspace(-1.5, 1.5, 61)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    F = _double_well(X, Y, tilt=0.3)
    cells = [tuple(c) for c in grid_local_minima(F)]
    assert len(cells) == 2
    assert {round(xs[i], 2) for i, _ in cells} == {-1.05, 0.95} and {ys[j] for _, j in cells} == {0.0}
    i, j = mountain_pass(F, cells[0], cells[1])
    roots = np.roots([4, 0, -4, 0.3])
    x_saddle = float(roots[np.argmin(abs(roots))].real)
    assert abs(xs[i] - x_saddle) <= 0.025 and ys[j] == 0.0
    assert F[i, j] == pytest.approx(_double_well(x_saddle, 0.0, 0.3), abs=0.02)


def test_polish_and_merge_keeps_one_point_per_minimum_with_its_lowest_cell():
    """A flat-bottomed well sampled so that two neighbouring cells are both grid minima of a noisy F: they polish
    to the same point and merge, keeping the cell of the lower grid value."""
    F = np.full((5, 5), 10.0)
    F[1, 1], F[1, 3] = 1.0, 0.5  # two grid minima of one well (polished to the same point)
    F[3, 3] = 2.0  # a second well
    polished = {(1, 1): 0.20, (1, 3): 0.2001, (3, 3): 0.9}
    merged = polish_and_merge(F, lambda cell: polished[cell], lambda point: point, separation=1e-2)
    assert merged == [(0.20, (1, 3)), (0.9, (3, 3))]


def test_central_hessian_of_a_polynomial_has_a_second_order_error():
    """f = x⁴ + x²y + 3y² − xy³ at (0.7, −0.4): the exact Hessian; the error shrinks as h² (factor ~100 per decade)."""
    def f(x, y):
        return x**4 + x * x * y + 3 * y * y - x * y**3

    x, y = 0.7, -0.4
    exact = np.array([[12 * x * x + 2 * y, 2 * x - 3 * y * y], [2 * x - 3 * y * y, 6 - 6 * x * y]])
    errors = [np.abs(central_hessian_2d(f, x, y, h, h) - exact).max() for h in (1e-2, 1e-3)]
    assert errors[0] < 1e-3 and errors[1] < errors[0] / 50


def test_box_average_of_a_correlated_gaussian_and_of_one_well():
    """A Gaussian density with covariance C: the box on the principal axes of C⁻¹ gives the means and variances of
    x and y exactly up to the (tiny) quadrature error, with a negligible edge mass at ±8σ; cutting the plane at
    x = μ_x (log weight −inf beyond) averages one half, whose mean is μ_x − σ_x√(2/π)."""
    mu = np.array([0.3, -1.2])
    C = np.array([[2.0, 0.8], [0.8, 1.0]])
    P = np.linalg.inv(C)

    def weights(points, cut=None):
        d = points - mu
        log_w = -0.5 * np.einsum("...i,ij,...j->...", d, P, d)
        if cut is not None:
            log_w = np.where(points[..., 0] < cut, log_w, -np.inf)
        return log_w, {"x": points[..., 0], "y": points[..., 1]}

    box = laplace_box_average(weights, mu, P, span=8.0, n_points=161)
    assert box.means["x"] == pytest.approx(mu[0], abs=1e-10) and box.means["y"] == pytest.approx(mu[1], abs=1e-10)
    assert box.variances["x"] == pytest.approx(C[0, 0], rel=1e-6) and box.variances["y"] == pytest.approx(C[1, 1], rel=1e-6)
    assert box.edge_mass < 1e-12
    half = laplace_box_average(lambda p: weights(p, cut=mu[0]), mu, P, span=8.0, n_points=321)
    assert half.means["x"] == pytest.approx(mu[0] - math.sqrt(C[0, 0]) * math.sqrt(2 / math.pi), abs=2e-3)
    assert half.ranges["x"] < box.ranges["x"]
