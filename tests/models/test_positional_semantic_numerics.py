"""Positional-vs-semantic numerics: the closed-form free energy of the order parameters, the
split-line quadrature of the Moreau envelope, the defect-corrected (accurate) branches and the
convergence study behind the threshold errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnphase.api import positional_semantic as api
from attnphase.numeric.split_line import SplitLineRule

STANDARD = api.model_parameters(0.3)


@pytest.fixture(scope="module")
def positional_6():
    solution = api.solve_branch("positional", 1.25, STANDARD, nodes_per_dim=6, stability=False)
    assert solution.status == "converged"
    return solution


def test_free_energy_of_the_order_parameters_equals_the_saddle_point_value(positional_6):
    """Eliminating the conjugates in closed form leaves Φ(q, V, θ, m); at a fixed point it equals the
    full saddle-point expression (the conjugates there solve the same stationarity conditions)."""
    equations = api.SaddlePointEquations(STANDARD, 1.25, 6)
    x = positional_6.state
    evaluation = equations.evaluate(x)
    full = equations.free_energy(x, evaluation)
    closed = equations.free_energy_of_state(x, evaluation["envelope"])
    # The fixed point is converged to a residual ~1e-10 relative; Φ is stationary, so the two
    # expressions differ at second order in it.
    assert abs(full - closed) < 1e-12
    # away from the fixed point the two differ (the conjugates of the map are not the stationary ones)
    moved = x * np.array([1.2, 1.0, 1.0, 1.0, 1.0])
    ev_moved = equations.evaluate(moved)
    assert abs(equations.free_energy(moved, ev_moved) - equations.free_energy_of_state(moved, ev_moved["envelope"])) > 1e-8


def test_split_line_envelope_equals_dense_line_integrals(positional_6):
    """The split-line rule on a 2-node outer rule (8 lines along ξ_1) against composite Simpson sums of
    the same lines on 2001 and 4001 points: the envelope M is continuous with kinks at the basin
    switches, so Simpson converges as h² there; the reference error is bounded by the change between
    the two resolutions."""
    x = positional_6.state
    rule = SplitLineRule(2, 32, 1e-11)
    split = api.SaddlePointEquations(STANDARD, 1.25, 6, split_rule=rule).averages(x)[1]
    outer_t, outer_w = np.polynomial.hermite_e.hermegauss(2)
    outer_w = outer_w / outer_w.sum()
    equations = api.SaddlePointEquations(STANDARD, 1.25, 6)

    def dense(n):
        t = np.linspace(-7.5, 7.5, n)
        simpson = np.ones(n)
        simpson[1:-1:2], simpson[2:-1:2] = 4, 2
        line_w = simpson * (t[1] - t[0]) / 3 * np.exp(-t**2 / 2) / math.sqrt(2 * math.pi)
        total = 0.0
        for i, a in enumerate(outer_t):
            for j, b in enumerate(outer_t):
                for k, c in enumerate(outer_t):
                    z = np.column_stack([t, np.full(n, a), np.full(n, b), np.full(n, c)])
                    w, hs, _ = equations.fields(x, z[:, :2], z[:, 2:])
                    prox = api.proximal_map(w, hs, x[1], STANDARD)
                    total += outer_w[i] * outer_w[j] * outer_w[k] * (line_w @ prox.value)
        return total

    coarse, fine = dense(2001), dense(4001)
    assert abs(split - fine) <= 4 * abs(fine - coarse) + 1e-12
    assert abs(fine - coarse) < 1e-8


@pytest.mark.slow
def test_defect_correction_reaches_the_split_line_fixed_point(positional_6):
    """refine_branch converges to a fixed point of the split-line map (residual below its tolerance),
    and there the closed-form Φ(q, V, θ, m) equals the saddle-point Φ."""
    rule = SplitLineRule(6, 24, 1e-9)
    refined = api.refine_branch(positional_6, STANDARD, rule)
    assert refined.status == "converged" and refined.residual <= 1e-8
    equations = api.SaddlePointEquations(STANDARD, 1.25, api.TEST_ERROR_NODES, split_rule=rule)
    evaluation = equations.evaluate(refined.state)
    new = evaluation["next"]
    assert np.abs(new[:2] - refined.state[:2]).max() <= 1e-7 * np.abs(refined.state[:2]).max()
    assert abs(equations.free_energy_of_state(refined.state, evaluation["envelope"]) - refined.free_energy) < 1e-11


@pytest.mark.slow
def test_convergence_study_error_covers_a_finer_rule():
    """The study's error estimate of Φ covers the value on a finer outer rule (16 nodes) at the same
    state (semantic branch, ω = 0.3, α = 1.25; ~2.5 minutes)."""
    study = api.convergence_study("semantic", 1.25, STANDARD)
    assert study.status == "converged"
    assert study.free_energy_error < 1e-6
    fine_state = api.refine_branch(
        api.solve_branch("semantic", 1.25, STANDARD, nodes_per_dim=10, stability=False), STANDARD,
        api.STATE_RULES[-1])
    finer = api.SaddlePointEquations(STANDARD, 1.25, api.TEST_ERROR_NODES, split_rule=SplitLineRule(16, 32, 1e-10))
    assert abs(finer.free_energy(fine_state.state) - study.free_energy) <= study.free_energy_error


@pytest.mark.slow
def test_refined_alpha_c_is_within_the_tensor_rule_error_bars():
    """Refining the quadrature (tensor 8/10-node rule -> split-line study) moves α_c at ω = 0.3 by less
    than the two reported errors together, and the refined error is the smaller (~6 minutes)."""
    result = api.threshold(0.3, nodes_per_dim=8, check_nodes_per_dim=10, alpha_min=1.2, alpha_max=1.3, n_scan=2,
                           rtol=1e-3, refine=("alpha_c",))
    coarse, refined = result.alpha_c, result.refined["alpha_c"]
    assert coarse.status == "converged" and refined.status == "converged"
    assert abs(refined.value - coarse.value) <= coarse.error + refined.error
    assert refined.error < coarse.error
    assert 1.2 < refined.value < 1.3
