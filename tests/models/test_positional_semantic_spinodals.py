"""Spinodals of the positional and semantic branches (spec positional_semantic.md §4): the α where a
branch ceases to exist or becomes unstable, found by continuation and bisection (api.spinodals), and
checked here by independent solves on either side of the reported bracket."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.api import positional_semantic as api
from attnphase.errors import ParameterError
from attnphase.numeric.jacobian import map_jacobian

# Each independent check solves this far outside the bisection bracket: far enough that the branch's
# state differs from the bracket's ends, well inside the 0.1 continuation step.
MARGIN = 0.02


def leading_eigenpair(branch_solution, params, nodes_per_dim):
    """Eigenvalue of the full map's Jacobian with the largest real part, and its eigenvector, in the
    reduced full coordinates (q, V, c, m_1, m_2), at a solved fixed point (basins frozen there)."""
    equations = api.SaddlePointEquations(params, branch_solution.alpha, nodes_per_dim)
    basins = equations.new_basins()
    equations.reset_basins(basins, branch_solution.state)
    full = api.BranchCoordinates("mixed", params)
    J, _ = map_jacobian(full.restricted_map(lambda x: equations.evaluate(x, basins).next),
                        full.from_state(branch_solution.state), transforms=full.transforms)
    values, vectors = np.linalg.eig(J)
    k = int(np.argmax(values.real))
    return values[k], vectors[:, k]


@pytest.fixture(scope="module")
def omega_zero_positional():
    """Positional spinodal at ω = 0 on the 6-node rule, 8-node check (about 15 s)."""
    return api.spinodals(0.0, alpha_range=(0.5, 1.3), branches=("positional",), nodes_per_dim=6,
                         check_nodes_per_dim=8, step=0.1, tol=2e-3)


def test_positional_spinodal_at_omega_zero_separates_stable_from_unstable(omega_zero_positional):
    """At ω = 0 (purely semantic teacher) the positional fixed point θ = 0 turns unstable as α grows.

    Independently of the bisection: a cold solve just below the bracket is converged, distinct and
    stable; a solve just above it (warm from the stable one) converges on the same branch but has an
    eigenvalue with real part > 1 whose eigenvector points along the semantic overlap c = θ/√(ρq),
    i.e. out of the invariant set θ = 0 towards the semantic branch.
    """
    result = omega_zero_positional
    spinodal = result.positional
    assert spinodal.status == "converged", spinodal.message
    assert spinodal.criterion == "unstable"
    alive_end, lost_end = spinodal.bracket
    assert alive_end < spinodal.value < lost_end and lost_end - alive_end <= 2e-3
    params = api.Parameters.validated(omega=0.0)
    below = api.solve_branch("positional", alive_end - MARGIN, params, nodes_per_dim=6)
    assert below.status == "converged" and below.stable and abs(below.m) > 1e-3
    coords = api.BranchCoordinates("positional", params)
    above = api.solve_branch("positional", lost_end + MARGIN, params, nodes_per_dim=6,
                             guess=coords.from_state(below.state))
    assert above.status == "converged" and abs(above.theta) == 0.0 and abs(above.m) > 1e-3
    assert not above.stable
    value_below, _ = leading_eigenpair(below, params, 6)
    value_above, vector = leading_eigenpair(above, params, 6)
    assert value_below.real < 1.0 < value_above.real
    direction = np.abs(vector) / np.linalg.norm(vector)
    assert direction[2] > 0.9  # the c (θ) component carries the unstable direction
    # The free energy agrees: ∂²Φ/∂θ² changes sign from negative (stable) to positive across the bracket.
    curvature_below = api.transverse_free_energy_curvature(below, params)
    curvature_above = api.transverse_free_energy_curvature(above, params)
    assert curvature_below.value + curvature_below.error < 0 < curvature_above.value - curvature_above.error


def test_spinodal_error_covers_the_check_rule_and_orders_against_alpha_c(omega_zero_positional):
    """The error estimate contains the 8-node value, and at the spinodal the semantic branch is
    already the global minimum (Φ_sem > Φ_pos, checked by independent 8-node solves): α_c(0) lies
    below the positional spinodal, inside the coexistence window."""
    spinodal = omega_zero_positional.positional
    assert np.isfinite(spinodal.error) and spinodal.error >= abs(spinodal.check_value - spinodal.value)
    params = api.Parameters.validated(omega=0.0)
    alpha = spinodal.bracket[0]
    phi = {b: api.solve_branch(b, alpha, params, nodes_per_dim=8, stability=False) for b in ("positional", "semantic")}
    assert all(s.status == "converged" for s in phi.values())
    assert phi["semantic"].free_energy > phi["positional"].free_energy


@pytest.mark.parametrize(
    "kwargs",
    [dict(alpha_range=(1.0, 0.5)), dict(alpha_range=(0.0, 1.0)), dict(alpha_range=(0.5,)),
     dict(step=0.0), dict(step=5.0), dict(tol=0.5), dict(branches=("trivial",)), dict(nodes_per_dim=3),
     dict(check_nodes_per_dim=6), dict(omega=1.5)],
)
def test_bad_spinodal_input_raises(kwargs):
    arguments = dict(omega=0.3, alpha_range=(0.5, 1.5)) | kwargs
    with pytest.raises(ParameterError):
        api.spinodals(**arguments)


@pytest.mark.slow
def test_semantic_spinodal_at_omega_0_3_lies_below_alpha_c():
    """At ω = 0.3 the semantic branch is lost (folds) well below α_c ≈ 1.2-1.3 (spec §7), so the
    coexistence window contains α_c; on the finer (12-node) rule, independent warm-started solves
    find the branch converged, distinct and stable from α_c down to just above the spinodal's error
    bar. (About two minutes: 10-node working rule, 12-node check.)"""
    result = api.spinodals(0.3, alpha_range=(0.5, 0.9), branches=("semantic",), nodes_per_dim=10,
                           check_nodes_per_dim=12, step=0.1, tol=2e-3)
    spinodal = result.semantic
    assert spinodal.status == "converged", spinodal.message
    assert spinodal.criterion in ("not_converged", "jumped", "collapsed")
    assert spinodal.value + spinodal.error < 1.2
    params = api.Parameters.validated(omega=0.3)
    coords = api.BranchCoordinates("semantic", params)
    guess = None
    for alpha in (1.25, 1.0, spinodal.value + spinodal.error + MARGIN):
        solution = api.solve_branch("semantic", alpha, params, nodes_per_dim=12, guess=guess)
        assert solution.status == "converged" and solution.stable and abs(solution.theta) > 1e-3
        guess = coords.from_state(solution.state)


def test_bad_curvature_step_raises():
    params = api.Parameters.validated(omega=0.3)
    solution = api.solve_branch("positional", 1.25, params, nodes_per_dim=6, stability=False)
    for step in (0.0, -1e-3, 1.0):
        with pytest.raises(ParameterError):
            api.transverse_free_energy_curvature(solution, params, step=step)
