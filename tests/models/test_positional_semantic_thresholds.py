"""Thresholds of the positional-semantic model at small ω: why the tensor rules fail there, the
split-line refinement that replaces them, and the statuses for thresholds that do not exist.

Root cause (docs/models/positional_semantic.md, "Small ω"): at ω = 0 the positional branch's overlap m
is driven only by which proximal basin wins near the switching surface; the accurate (split-line) map
is nearly neutral along m, and the tensor rules misplace its fixed point (m ≈ 0.07 instead of 0.15).
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from attnphase.api import positional_semantic as api
from attnphase.models.positional_semantic import thresholds
from attnphase.numeric.branches import BranchLoss
from attnphase.numeric.jacobian import forward_difference_jacobian
from attnphase.numeric.split_line import SplitLineRule
from attnphase.results import Status

OMEGA_ZERO = api.Parameters.validated(omega=0.0)


# -- the tensor bracket (no solves: synthetic branch paths with known crossing functions) --------------------
class _Path:
    """A followed branch whose solutions have the free energy and test error of given functions of α, and
    which ends (None) outside [low, high] and has no solution at the controls in `holes`."""

    def __init__(self, phi, eps, low=0.0, high=np.inf, holes=()):
        self.phi, self.eps, self.low, self.high = phi, eps, low, high
        self.holes = {a: BranchLoss(math.nan, math.nan, Status.FAILED, "a hole", None, "not_converged") for a in holes}

    def at(self, alpha):
        if not self.low <= alpha <= self.high or alpha in self.holes:
            return None
        return SimpleNamespace(alpha=alpha, free_energy=self.phi(alpha), test_error=self.eps(alpha))

    def loss(self, alpha):
        if alpha in self.holes:
            return self.holes[alpha]
        if self.low <= alpha <= self.high:
            return None
        return BranchLoss(math.nan, math.nan, Status.CONVERGED, f"lost at {self.high:g}", None, "not_converged")


def test_bracket_finds_the_first_sign_change_and_extends_the_scan_upwards():
    """Δ_c = Φ_sem − Φ_pos = 0.01 (α − 1.3): the bracket [1.05, 1.3] holds its root; Δ_l = ε_sem − baseline =
    0.01 (4.1 − α) lies above alpha_max = 3, so the scan is extended (doubling) until it changes sign."""
    paths = {"positional": _Path(lambda a: 0.0, lambda a: 1.0),
             "semantic": _Path(lambda a: 0.01 * (a - 1.3), lambda a: 0.01 * (4.1 - a))}
    c = thresholds.bracket("alpha_c", paths, 0.0, 0.3, 3.0)
    assert isinstance(c, thresholds.Bracket) and c.low <= 1.3 <= c.high and abs(c.root - 1.3) < 1e-12
    l = thresholds.bracket("alpha_l", paths, 0.0, 0.3, 3.0)
    assert isinstance(l, thresholds.Bracket) and l.low <= 4.1 <= l.high and l.high > 3.0


def test_bracket_scans_past_a_hole_of_the_tensor_rule():
    """Δ_c = α − 1.05 with the semantic branch's fixed point missing at the scan point α = 1 alone (a hole): the scan
    takes α = 1 + HOLE_NUDGE instead and brackets the root there, where a missing point would have left no two
    neighbouring scan values to compare."""
    paths = {"positional": _Path(lambda a: 0.0, lambda a: 1.0),
             "semantic": _Path(lambda a: a - 1.05, lambda a: 1.0, holes=(1.0,))}
    c = thresholds.bracket("alpha_c", paths, 0.0, 0.5, 3.0)
    assert isinstance(c, thresholds.Bracket), c
    assert c.low == pytest.approx(1.0 + thresholds.HOLE_NUDGE) and c.high == 1.25 and c.root == pytest.approx(1.05)


def test_bracket_without_a_crossing_says_which_side_wins_and_where_a_branch_ended():
    """The semantic branch ends below α = 1 and never wins above it: not_found, with the meaning of the sign,
    the closest approach and the branch's loss; with no point where both exist: failed."""
    paths = {"positional": _Path(lambda a: 0.0, lambda a: 1.0),
             "semantic": _Path(lambda a: -0.01 - 0.001 * a, lambda a: 1.0, low=1.0)}
    result = thresholds.bracket("alpha_c", paths, 0.0, 0.3, 3.0)
    assert result.status == "not_found" and "positional branch has the lower training loss" in result.message
    assert "closest approach" in result.message and "lost at" in result.message
    nowhere = {"positional": _Path(lambda a: 0.0, lambda a: 1.0, high=0.5),
               "semantic": _Path(lambda a: 0.0, lambda a: 1.0, low=1.0)}
    assert thresholds.bracket("alpha_c", nowhere, 0.0, 0.3, 3.0).status == "failed"


@pytest.mark.slow
def test_a_threshold_not_found_near_omega_one_says_the_tensor_rules_semantic_fixed_point_is_not_the_branch():
    """At ω = 0.9 the tensor scan has semantic fixed points over [0.3, 8] and no crossing; split-line 8 has no
    semantic fixed point at its anchor α = 3, and both thresholds (not found) say so, so that the scan's closest
    approach is not read as the branch's (~50 s)."""
    result = api.threshold(0.9)
    for found in (result.alpha_c, result.alpha_l):
        assert found.status == "not_found", found.message
        assert "at its anchor α = 3 is not found on split-line 8" in found.message, found.message


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
    to |m| ≈ 0.15, twice the tensor value, and its Φ is higher than the tensor
    rule's by more than the split-line rules' oscillation (3.5e-7 at ω = 0): the positional branch is the
    better one at α = 0.6 (about 40 s). m → −m is a symmetry of the map, and a retry from the doubled start can
    end on the mirror image, so |m| is compared."""
    tensor = api.solve_branch("positional", 0.6, OMEGA_ZERO, nodes_per_dim=10, stability=False)
    refined = api.on_rule(api.AccurateState(tensor), OMEGA_ZERO, api.Rule.split_line(8)).solution
    assert refined.status == "converged"
    assert 0.14 < abs(refined.m) < 0.16 and abs(refined.m) > 1.8 * abs(tensor.m)
    assert refined.free_energy - tensor.free_energy > 4e-6


@pytest.mark.slow
def test_mixed_fixed_point_at_omega_zero_is_a_saddle_below_both_branches():
    """At ω = 0, α = 0.618 (≈ α_c) the split-line map (outer 8) has a mixed fixed point with both
    m ≠ 0 and θ ≠ 0, found by Broyden from the midpoint of the two converged pure branches. It is
    unstable (an eigenvalue of the full map's Jacobian with real part > 1) and its Φ lies BELOW both
    branches by ~1e-5, i.e. far beyond the rules' Φ errors (≤ 5e-7): a saddle between the positional
    and semantic minima of ε_t = −Φ, not a mixed phase. Measured: θ = 0.021, m = 0.069, eigenvalue
    1.20, Φ = −0.0018461 (outer 10: θ = 0.025, m = 0.069, 1.27, −0.0018478). About 1.5 minutes."""
    alpha, rule = 0.618, api.Rule.split_line(8)
    pure = {b: api.on_rule(api.AccurateState(api.solve_branch(b, alpha, OMEGA_ZERO, nodes_per_dim=10, stability=False)),
                           OMEGA_ZERO, rule).solution for b in ("semantic", "positional")}
    assert all(s.status == "converged" for s in pure.values())
    full = api.BranchCoordinates("mixed", OMEGA_ZERO)

    def reduced(solution):
        m = abs(solution.m)
        return full.from_state(api.state_vector(solution.q, solution.V, abs(solution.theta), [m, -m]))

    middle = 0.5 * (reduced(pure["semantic"]) + reduced(pure["positional"]))
    start = replace(pure["positional"], branch="mixed", state=full.to_state(middle))
    # Broyden alone (it converges onto an unstable fixed point too), with more steps than a rung's budget of 10: from
    # this start it needs 17 evaluations to 1e-8 (stopped at 10 steps its residual is 7e-8)
    mixed = api.defect_correction(start, OMEGA_ZERO, rule, tol=1e-8, step_tol=None, anderson=False,
                                  max_iter=30).solution
    assert mixed.status == "converged" and mixed.residual <= 1e-8
    assert abs(mixed.theta) > 0.01 and abs(mixed.m) > 0.03  # neither invariant set
    assert mixed.free_energy < min(s.free_energy for s in pure.values()) - 5e-6
    equations = rule.equations(OMEGA_ZERO, alpha)
    F = full.restricted_map(equations)
    y = full.from_state(mixed.state)
    eigenvalues = np.linalg.eigvals(forward_difference_jacobian(F, y, F(y)))
    assert eigenvalues.real.max() > 1.1


# -- the outer-split check of α_c: its error (no solves: the measured free energies of the research notes) --
def test_the_outer_split_check_adds_the_branches_errors_and_gives_no_credit_for_their_cancelling():
    """At ω = 0, α = 0.615 the positional Φ on the outer-split rules with χ₂ = 16, 20, 24 nodes is
    −1.8284190, −1.8286281, −1.8287867 e-3 (a one-way drift; the count-split value is −1.82884548e-3 ± 3.3e-8).
    With a semantic Φ that drifts in step (ΔΦ the same on every rule) the difference of ΔΦ between rules
    is zero, the error `checked_gap` reports is not: the spread plus the drift tail of each branch, added, and
    it covers the converged positional value."""
    from attnphase.models.positional_semantic.free_energy_check import CHECK_PHI_ACCURACY, FreeEnergies, checked_gap
    from attnphase.numeric.convergence import drift_tail

    positional = [-1.8284190e-3, -1.8286281e-3, -1.8287867e-3]
    rules = [FreeEnergies((n, 12), {"positional": p, "semantic": p + 3.8e-8}, {"positional": 2.86e-3, "semantic": 2.47e-3})
             for n, p in zip((16, 20, 24), positional)]
    checked = checked_gap(rules)
    assert checked.gap == pytest.approx(3.8e-8) and checked.slope == pytest.approx(2.86e-3 - 2.47e-3)
    per_branch = max(positional) - min(positional) + drift_tail(positional) + 3 * CHECK_PHI_ACCURACY
    assert checked.error == pytest.approx(2 * per_branch)
    assert per_branch > 3.68e-7  # more than the spread: the drift has not stopped
    assert abs(positional[-1] - (-1.82884548e-3)) <= per_branch
    # an oscillation is covered by its spread alone (with the lines' own error); converged rules give a small error
    flat = [FreeEnergies((n, 12), {"positional": -1e-3 + e, "semantic": -1e-3}, {"positional": 1.0, "semantic": 0.0})
            for n, e in zip((12, 16, 20), (2e-9, -1e-9, 1e-9))]
    assert checked_gap(flat).error == pytest.approx(3e-9 + 6 * CHECK_PHI_ACCURACY)
    # with a fourth, finer rule the errors are over the last three: the coarsest rule's offset no longer counts
    finer = [FreeEnergies((12, 10), {"positional": -1e-3 + 5e-7, "semantic": -1e-3}, {"positional": 1.0, "semantic": 0.0}),
             *flat]
    assert checked_gap(finer).error == pytest.approx(checked_gap(flat).error) and len(checked_gap(finer).rules) == 4


# -- α_l's error: ε_g's quadrature error carried to α (no solves: a constructed linear crossing) ----------------
class _LinearRule:
    """A rule on which the semantic ε_g is baseline + slope·(α − root) exactly, with a quadrature error of its own."""

    family, count, split = "constructed", None, None

    def __init__(self, label: str, root: float, quadrature: float):
        self.label, self.root, self.quadrature = label, root, quadrature

    def equations(self, params, alpha):
        return SimpleNamespace(test_error_estimate=lambda state: (math.nan, self.quadrature))


def test_alpha_l_carries_the_test_errors_quadrature_error_to_alpha_through_the_slope(monkeypatch):
    """α_l is the root of Δ_l(α) = ε_g(α) − ε_g^lin; an error δ in ε_g (its quadrature's, shared by every rung) moves
    that root by δ / |dε_g/dα|, first-order error propagation. Constructed crossing: ε_g linear in α with slope
    −0.025, root 0.70000 on the first rule and 0.70002 on the second (the rung spread 2e-5, within a tenth of the
    tolerance 1e-3: no secant step), quadrature error 1e-6 on the top rule. Known answer: α_l = 0.70002 with error
    2e-5 + 1e-6 / 0.025 = 6e-5; the error without the quadrature term is 2e-5 (the difference 4e-5, not 1e-6)."""
    baseline, slope = 0.25, -0.025

    def carry(states, params, rule, alpha):
        solution = SimpleNamespace(alpha=alpha, state=None, test_error=baseline + slope * (alpha - rule.root))
        return {"semantic": SimpleNamespace(success=True, message="", solution=solution)}

    monkeypatch.setattr(thresholds, "_carry", carry)
    found = {}
    for quadrature in (0.0, 1e-6):
        ladder = (_LinearRule("first", 0.70000, quadrature), _LinearRule("second", 0.70002, quadrature))
        found[quadrature], *_ = thresholds.refine("alpha_l", {"semantic": None}, 0.69, slope, OMEGA_ZERO, baseline,
                                                  ladder, 1e-3)
    for quadrature, t in found.items():
        assert t.status == Status.CONVERGED and t.value == pytest.approx(0.70002, abs=1e-12), t.message
        assert t.error == pytest.approx(2e-5 + quadrature / abs(slope), rel=1e-9), (quadrature, t.error)
    assert found[1e-6].error - found[0.0].error == pytest.approx(1e-6 / 0.025, rel=1e-9)


def test_a_move_of_phi_within_the_lines_accuracy_is_not_read_as_a_drift():
    """Φ on the check rules (12, 10), (16, 14), (20, 18) at the states of the default curve's α_c at ω = 0.355: the
    semantic Φ moves by 4.6e-11, then by 1.3e-8, in one direction. The first move is below the lines' own error
    (2 × CHECK_PHI_ACCURACY: its sign is unknown), so this is not a drift without a bound (which made the check
    climb a fourth rule); the errors are finite and cover Φ on the next rule, (24, 18), for both branches."""
    from attnphase.models.positional_semantic.free_energy_check import CHECK_PHI_ACCURACY, FreeEnergies, checked_gap
    from attnphase.numeric.convergence import drift_tail

    semantic = [-3.097739309023e-3, -3.097739263118e-3, -3.097726110971e-3]
    positional = [-3.097722755768e-3, -3.097676749254e-3, -3.097679679881e-3]
    next_rule = {"semantic": -3.097726174808e-3, "positional": -3.097681421173e-3}
    assert math.isinf(drift_tail(semantic))
    assert drift_tail(semantic, 2 * CHECK_PHI_ACCURACY) == 0.0
    rules = [FreeEnergies(nodes, {"semantic": s, "positional": p}, {"semantic": 0.0, "positional": 8.5e-4})
             for nodes, s, p in zip(((12, 10), (16, 14), (20, 18)), semantic, positional)]
    checked = checked_gap(rules)
    assert math.isfinite(checked.error)
    for branch, value in next_rule.items():
        assert abs(value - rules[-1].phi[branch]) <= checked.branch_errors[branch]



def test_the_phase_diagram_draws_a_band_only_where_the_error_is_bounded():
    """`plot_phase_diagram` on rows as `PhaseCurve.rows()` gives them: the α_c band spans value ± error where
    the error is finite; a row without a bound (error inf, or None once stored) leaves a gap in the band, its
    point still drawn (open marker: limited)."""
    import matplotlib

    matplotlib.use("Agg")
    rows = [{"omega": w, "alpha_c": a, "alpha_c_error": e, "alpha_c_status": s, "alpha_l": math.nan,
             "alpha_l_error": math.nan, "alpha_l_status": "not_found"}
            for w, a, e, s in ((0.0, 0.62, 0.01, "limited"), (0.1, 0.75, math.inf, "limited"), (0.2, 0.95, None, "limited"),
                               (0.3, 1.25, 0.0002, "converged"))]
    fig = api.plot_phase_diagram(rows)
    ax = fig.axes[0]
    band = ax.collections[0].get_paths()
    xs = np.concatenate([p.vertices[:, 0] for p in band])
    ys = np.concatenate([p.vertices[:, 1] for p in band])
    assert np.all(np.isfinite(xs)) and xs.min() == pytest.approx(0.61) and xs.max() == pytest.approx(1.2502)
    assert not np.any(np.isclose(ys, 0.1)) and not np.any(np.isclose(ys, 0.2))
    open_marker = [line for line in ax.get_lines() if line.get_markerfacecolor() == "none"][0]
    assert list(open_marker.get_ydata()) == [0.0, 0.1, 0.2]
