"""Drift fields with known trajectories, fixed points and stabilities."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import expm

from attnphase.errors import ParameterError
from attnphase.numeric.ode import fixed_points_1d, integrate_drift, linear_stability


def test_logistic_trajectory_against_closed_form():
    """dx/dt = r x (1 - x): x(t) = 1 / (1 + (1/x0 - 1) e^{-r t})."""
    r, x0 = 1.3, 0.05
    t = np.linspace(0.0, 12.0, 25)
    traj = integrate_drift(lambda x: r * x * (1 - x), x0, (0.0, 12.0), t_eval=t)
    assert traj.status == "converged" and traj.success
    exact = 1 / (1 + (1 / x0 - 1) * np.exp(-r * t))
    # rtol 1e-10 per step; the logistic flow is contracting near x = 1, so the global error stays at
    # the level of the local tolerance times the integration time.
    assert np.max(np.abs(traj.x - exact)) <= 1e-10 * 12.0
    assert traj.x.shape == (25,)


@pytest.mark.parametrize("method", ["DOP853", "LSODA"])
def test_linear_system_against_matrix_exponential(method):
    A = np.array([[-0.5, 2.0], [-2.0, -0.5]])  # damped rotation, eigenvalues -0.5 +- 2i
    x0 = np.array([1.0, -0.3])
    t = np.linspace(0.0, 5.0, 11)
    traj = integrate_drift(lambda x: A @ x, x0, (0.0, 5.0), t_eval=t, method=method)
    exact = np.array([expm(A * s) @ x0 for s in t])
    assert traj.x.shape == (11, 2)
    assert np.max(np.abs(traj.x - exact)) <= 1e-7
    eigenvalues, stable = linear_stability(A)
    assert stable and np.allclose(np.sort_complex(eigenvalues), [-0.5 - 2j, -0.5 + 2j])


@pytest.mark.parametrize("method", ["DOP853", "LSODA"])
@pytest.mark.parametrize("span", [1e-300, 1e-200, 1e-13])
def test_a_span_too_short_to_move_x_returns_its_start(method, span):
    """Over (0, span) the logistic flow moves x by r x (1 − x) span, below rtol |x|: the start at every time asked
    (LSODA alone does not return from spans near 1e-200), the same as the flow's closed form to rounding."""
    r, x0 = 1.3, np.array([0.05, 0.5])
    t = np.array([0.0, span / 2, span])
    traj = integrate_drift(lambda x: r * x * (1 - x), x0, (0.0, span), t_eval=t, method=method, rtol=1e-10)
    exact = np.array([1 / (1 + (1 / x0 - 1) * np.exp(-r * s)) for s in t])
    assert traj.status == "converged" and traj.x.shape == (3, 2)
    assert np.all(np.abs(traj.x - exact) <= 1e-10 * np.abs(exact))


def test_an_integration_stops_when_its_evaluation_budget_is_spent():
    """A rotation integrated over 100 periods to 1e-10 needs thousands of drift calls: a budget of 200 stops it
    with status failed and the count; a budget it fits in leaves the result the matrix exponential's."""
    A = np.array([[0.0, 1.0], [-1.0, 0.0]])
    x0 = np.array([1.0, 0.0])
    stopped = integrate_drift(lambda x: A @ x, x0, (0.0, 200 * math.pi), max_evaluations=200)
    assert stopped.status == "failed" and "200 drift evaluations" in stopped.message and stopped.evaluations == 201
    fits = integrate_drift(lambda x: A @ x, x0, (0.0, 2.0), t_eval=[2.0], max_evaluations=2000)
    assert fits.status == "converged" and np.max(np.abs(fits.x[-1] - expm(2.0 * A) @ x0)) <= 1e-9


def test_cubic_drift_fixed_points_and_stability():
    """v = (1 - x^2)(x - a): zeros -1, a, 1 with v'(-1) = -2(1 + a), v'(a) = 1 - a^2, v'(1) = -2(1 - a)."""
    a = 0.3
    drift = lambda x: (1 - x**2) * (x - a)  # noqa: E731
    found = fixed_points_1d(drift, -2.0, 2.0, n_grid=400)
    assert [round(p.x, 12) for p in found] == [-1.0, 0.3, 1.0]
    exact_slopes = [-2 * (1 + a), 1 - a * a, -2 * (1 - a)]
    for p, slope in zip(found, exact_slopes):
        assert abs(p.slope - slope) <= 1e-8
    assert [p.stable for p in found] == [True, False, True]
    with_derivative = fixed_points_1d(drift, -2.0, 2.0, derivative=lambda x: -2 * x * (x - a) + 1 - x * x)
    assert [p.slope for p in with_derivative] == pytest.approx(exact_slopes, abs=1e-12)
    # A trajectory started between a and 1 flows to the stable point 1.
    traj = integrate_drift(drift, 0.35, (0.0, 60.0))
    assert abs(traj.x[-1] - 1.0) <= 1e-8


def test_fixed_points_at_interval_ends():
    """v = (1 - r^2) r (r - 0.5) on [-1, 1], undefined outside: zeros -1, 0, 0.5, 1 with
    v' = -2r * r(r - 0.5) + (1 - r^2)(2r - 0.5): v'(-1) = 3, v'(0) = -0.5, v'(0.5) = 0.375, v'(1) = -1."""

    def drift(r):
        if abs(r) > 1:
            raise ValueError("outside [-1, 1]")
        return (1 - r * r) * r * (r - 0.5)

    found = fixed_points_1d(drift, -1.0, 1.0, n_grid=201)
    assert [p.x for p in found] == pytest.approx([-1.0, 0.0, 0.5, 1.0], abs=1e-15)
    assert [p.slope for p in found] == pytest.approx([3.0, -0.5, 0.375, -1.0], abs=1e-8)
    assert [p.stable for p in found] == [False, True, False, True]


def test_scalar_drift_not_vectorised():
    found = fixed_points_1d(lambda x: math.sin(x), 1.0, 7.0)  # math.sin rejects arrays: pointwise scan
    assert [p.x for p in found] == pytest.approx([math.pi, 2 * math.pi], abs=1e-14)
    assert [p.stable for p in found] == [True, False]


def test_leaving_the_domain_stops_with_status():
    """dx/dt = x^2 from 1 is x = 1 / (1 - t): it reaches 10 at t = 0.9 exactly."""
    traj = integrate_drift(lambda x: x * x, 1.0, (0.0, 2.0), bounds=[(None, 10.0)])
    assert traj.status == "lost" and not traj.success and "reached its bound" in traj.message
    assert abs(traj.exit_time - 0.9) <= 1e-9


def test_failures_and_bad_input():
    traj = integrate_drift(lambda x: np.array([np.nan]), np.array([1.0]), (0.0, 1.0))
    assert traj.status == "failed" and "non-finite" in traj.message
    traj = integrate_drift(lambda x: math.log(x - 2), 1.0, (0.0, 1.0))
    assert traj.status == "failed" and "ValueError" in traj.message
    with pytest.raises(ParameterError):
        integrate_drift(lambda x: -x, 1.0, (0.0, 0.0))
    with pytest.raises(ParameterError):
        integrate_drift(lambda x: -x, 1.0, (0.0, 1.0), method="Euler")
    with pytest.raises(ParameterError):
        integrate_drift(lambda x: -x, 20.0, (0.0, 1.0), bounds=[(None, 10.0)])
    with pytest.raises(ParameterError):
        linear_stability([[1.0, 2.0]])


def test_map_stability_convention():
    eigenvalues, stable = linear_stability([[0.5, 0.2], [0.0, -0.9]], discrete=True)
    assert stable and np.allclose(sorted(eigenvalues.real), [-0.9, 0.5])
    _, stable = linear_stability([[0.5, 0.2], [0.0, -1.1]], discrete=True)
    assert not stable
