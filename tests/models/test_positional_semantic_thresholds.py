"""Thresholds of the positional-semantic model at small ω: why the tensor rules fail there, the
split-line refinement that replaces them, and the statuses for thresholds that do not exist.

Root cause (docs/models/positional_semantic.md, "Small ω"): at ω = 0 the positional branch's overlap m
is driven only by which proximal basin wins near the switching surface; the accurate (split-line) map
is nearly neutral along m, and the tensor rules misplace its fixed point (m ≈ 0.07 instead of 0.15).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from attnphase.api import positional_semantic as api
from attnphase.numeric.fixedpoint import forward_difference_jacobian
from attnphase.numeric.split_line import SplitLineRule
from attnphase.numeric.threshold import noisy_threshold
from attnphase.results import Status

OMEGA_ZERO = api.Parameters.validated(omega=0.0)


# -- statuses and diagnostics (no solves; the scan itself is numeric.threshold.scan_crossing, tested there) --
def test_refined_threshold_becomes_the_reported_value():
    """With a converged refinement, alpha_c / alpha_c_error in the JSON are the refined ones and the
    tensor values are kept beside them; without one they stay the tensor values."""
    coarse = noisy_threshold(0.618, 0.012, Status.CONVERGED, "tensor", (0.6, 0.7), 4e-4)
    refined = noisy_threshold(0.615, 0.0015, Status.CONVERGED, "refined", (0.6, 0.7), 4e-4)
    none = noisy_threshold(math.nan, math.nan, Status.NOT_FOUND, "none")
    result = api.Thresholds(coarse, none, 0.004, 8, 10, Status.NOT_FOUND, "", {"alpha_c": refined})
    out = result.as_dict()
    assert (out["alpha_c"], out["alpha_c_error"], out["alpha_c_tensor"]) == (0.615, 0.0015, 0.618)
    assert out["alpha_c_method"].startswith("split-line") and result.best("alpha_c") is refined
    assert out["alpha_l_status"] == "not_found" and out["alpha_l_method"].startswith("tensor")


# -- root cause at ω = 0 ---------------------------------------------------------------------------
def test_tensor_rule_positional_fixed_point_at_omega_zero_is_not_a_fixed_point_of_the_accurate_map():
    """At ω = 0, α = 0.6 the 10-node tensor fixed point of the positional branch (m ≈ 0.07) is far from a
    fixed point of the split-line map: F_m − m is about +0.009 and +0.011 on outer rules 8 and 10 (the
    outer-6 rule is too coarse: +0.001), the refinement changing it by less than half of itself, and it
    pushes m up towards the converged value 0.152; along m the accurate map is
    nearly neutral (∂F_m/∂m ≈ 0.9 at fixed q, V), so the tensor rules' errors in m̂ move m a lot."""
    tensor = api.solve_branch("positional", 0.6, OMEGA_ZERO, nodes_per_dim=10, stability=False)
    assert tensor.status == "converged" and 0.05 < tensor.m < 0.09
    coords = api.BranchCoordinates("positional", OMEGA_ZERO)
    y = coords.from_state(tensor.state)
    pushes = []
    for outer in (8, 10):
        equations = api.SaddlePointEquations(OMEGA_ZERO, 0.6, 16, split_rule=SplitLineRule(outer, 32, 1e-10))
        pushes.append(coords.from_state(equations(tensor.state))[2] - y[2])
    assert min(pushes) > 0.005
    assert abs(pushes[0] - pushes[1]) < 0.5 * min(pushes)
    # on the tensor rule itself the point is a fixed point (residual at the solver's tolerance)
    assert abs(tensor.residual) < 1e-8


# -- converged numerics (slow) ----------------------------------------------------------------------
@pytest.mark.slow
def test_defect_correction_finds_the_omega_zero_positional_branch():
    """Anderson + Broyden on the split-line map (outer 8) from the 10-node tensor solution converges
    (relative defect ≤ 1e-8) to m ≈ 0.15, twice the tensor value, and its Φ is higher than the tensor
    rules' by more than the split-line rules' spread: the positional branch is the better one at α = 0.6
    (about 40 s)."""
    tensor = api.solve_branch("positional", 0.6, OMEGA_ZERO, nodes_per_dim=10, stability=False)
    refined = api.refine_branch(tensor, OMEGA_ZERO, SplitLineRule(8, 32, 1e-10))
    assert refined.status == "converged" and refined.residual <= 1e-8
    assert 0.14 < refined.m < 0.16 and refined.m > 1.8 * tensor.m
    assert refined.free_energy - tensor.free_energy > 4e-6


@pytest.mark.slow
def test_refined_alpha_c_at_omega_zero_is_a_root_of_the_accurate_crossing_function():
    """The refined α_c(0) (8/10-node tensor start, one or more Newton steps on split-line studies) is
    checked by independent studies AT the reported root: |Φ_sem − Φ_pos| there must be within the
    reported error times the slope plus the studies' own error (about 9 minutes)."""
    result = api.threshold(0.0, nodes_per_dim=8, check_nodes_per_dim=10, alpha_min=0.5, alpha_max=1.0, n_scan=6,
                           rtol=1e-4, refine=("alpha_c",))
    refined = result.refined["alpha_c"]
    assert refined.status == "converged", refined.message
    assert 0.6 < refined.value < 0.63 and refined.error < 0.005
    studies = {b: api.convergence_study(b, refined.value, OMEGA_ZERO, nodes_per_dim=10) for b in ("semantic", "positional")}
    assert all(s.status == "converged" for s in studies.values())
    delta = studies["semantic"].free_energy - studies["positional"].free_energy
    delta_error = studies["semantic"].free_energy_error + studies["positional"].free_energy_error
    assert abs(delta) <= abs(refined.slope) * refined.error + delta_error


@pytest.mark.slow
def test_mixed_fixed_point_at_omega_zero_is_a_saddle_below_both_branches():
    """At ω = 0, α = 0.618 (≈ α_c) the split-line map (outer 8) has a mixed fixed point with both
    m ≠ 0 and θ ≠ 0, found by Broyden from the midpoint of the two converged pure branches. It is
    unstable (an eigenvalue of the full map's Jacobian with real part > 1) and its Φ lies BELOW both
    branches by ~1e-5, i.e. far beyond the studies' Φ errors (≤ 5e-7): a saddle between the positional
    and semantic minima of ε_t = −Φ, not a mixed phase. Measured: θ = 0.021, m = 0.069, eigenvalue
    1.20, Φ = −0.0018461 (outer 10: θ = 0.025, m = 0.069, 1.27, −0.0018478). About 1.5 minutes."""
    alpha, rule = 0.618, SplitLineRule(8, 32, 1e-10)
    pure = {b: api.refine_branch(api.solve_branch(b, alpha, OMEGA_ZERO, nodes_per_dim=10, stability=False),
                                 OMEGA_ZERO, rule) for b in ("semantic", "positional")}
    assert all(s.status == "converged" for s in pure.values())
    full = api.BranchCoordinates("mixed", OMEGA_ZERO)

    def reduced(solution):
        m = abs(solution.m)
        return full.from_state(api.state_vector(solution.q, solution.V, abs(solution.theta), [m, -m]))

    middle = 0.5 * (reduced(pure["semantic"]) + reduced(pure["positional"]))
    start = replace(pure["positional"], branch="mixed", state=full.to_state(middle))
    mixed = api.refine_branch(start, OMEGA_ZERO, rule, anderson=False)
    assert mixed.status == "converged" and mixed.residual <= 1e-8
    assert abs(mixed.theta) > 0.01 and abs(mixed.m) > 0.03  # neither invariant set
    assert mixed.free_energy < min(s.free_energy for s in pure.values()) - 5e-6
    equations = api.SaddlePointEquations(OMEGA_ZERO, alpha, api.TEST_ERROR_NODES, split_rule=rule)
    F = full.restricted_map(equations)
    y = full.from_state(mixed.state)
    eigenvalues = np.linalg.eigvals(forward_difference_jacobian(F, y, F(y)))
    assert eigenvalues.real.max() > 1.1
