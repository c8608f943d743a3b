"""The continuous end of the positional branch on a split-line rule (`following.continuous_end`, and the follow that uses
it), against an independent characterisation of the same point: a branch that leaves the trivial state (m = θ = 0)
continuously does so where the trivial state's multiplier in the m direction, ∂F_m/∂m at m = 0, crosses 1 (a
pitchfork). The end is extrapolated from solves at fixed |m|; the pitchfork is a root in α of a property of the trivial
state alone."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from attnphase.api import positional_semantic as api
from attnphase.models.positional_semantic.accurate import defect_correction
from attnphase.models.positional_semantic.following import continuous_end
from attnphase.models.positional_semantic.state_evolution import state_vector

SPLIT_LINE_8 = api.state_ladder(2)[0]
# The m of the central differences of the multiplier: F_m = λ m − b m³ gives λ − b δ², which moves the crossing by
# about c δ² ≈ 6e-8 (c ≈ 6 from α ≈ α_e − c m² at ω = 0), far below the ends' errors (1e-4).
MULTIPLIER_STEP = 1e-4
PITCHFORK_REFERENCE_ERROR = 1e-6


def _trivial_multiplier(alpha: float, params, rule, near) -> float:
    """∂F_m1/∂m1 along m = (δ, −δ) at the trivial fixed point on `rule` at α (solved from `near` = (q, V))."""
    tensor = api.solve_branch("trivial", alpha, params, nodes_per_dim=10, stability=False, guess=list(near))
    trivial = defect_correction(tensor, params, rule, tol=1e-10, step_tol=None, anderson=False)
    assert trivial.success, trivial.message
    q, V = trivial.solution.q, trivial.solution.V
    equations = rule.equations(params, alpha)

    def F_m(m):
        return equations.evaluate(state_vector(q, V, 0.0, np.array([m, -m]))).next[3]

    return (F_m(MULTIPLIER_STEP) - F_m(-MULTIPLIER_STEP)) / (2 * MULTIPLIER_STEP)


def _pitchfork(params, rule, low: float, high: float, near) -> float:
    """The α in [low, high] where the trivial state's multiplier in m crosses 1 (secant steps down to 1e-9)."""
    a, b = low, high
    fa, fb = (_trivial_multiplier(x, params, rule, near) - 1 for x in (a, b))
    assert fa * fb < 0, (fa, fb)
    for _ in range(10):
        a, b, fa = b, b - fb * (b - a) / (fb - fa), fb
        fb = _trivial_multiplier(b, params, rule, near) - 1
        if abs(b - a) <= 1e-9:
            return b
    raise AssertionError(f"the multiplier's secant did not settle: last step {b - a:.2g}")


def test_the_positional_branch_at_omega_zero_ends_where_the_trivial_state_loses_stability_in_m():
    """ω = 0, split-line 8: from the branch's fixed point at α = 0.8874 (|m| ≈ 0.049), solved at |m|/2, /4, /8 for α
    and extrapolated in m², the end is α_e = 0.90158; it lies within its error of the pitchfork of the trivial state.
    A law linear in |m| instead of m² would put it 1.5e-3 lower."""
    params = api.Parameters.validated(omega=0.0)
    alpha = 0.8874
    tensor = api.solve_branch("positional", alpha, params, nodes_per_dim=10, stability=False)
    near_the_branch = replace(tensor, state=state_vector(0.0726, 26.07, 0.0, np.array([0.0488, -0.0488])))
    alive = defect_correction(near_the_branch, params, SPLIT_LINE_8, anderson=False)
    assert alive.success and abs(alive.solution.m) > 0.04, alive.message
    end = continuous_end(alive, params, SPLIT_LINE_8)
    assert end is not None
    alphas = [alpha] + [point.alpha for point in end.points]
    assert np.all(np.diff(alphas) > 0) and alphas[-1] < end.alpha  # α rises as |m| falls towards the end
    reference = _pitchfork(params, SPLIT_LINE_8, 0.895, 0.905, (alive.solution.q, alive.solution.V))
    assert abs(end.alpha - reference) <= end.error + PITCHFORK_REFERENCE_ERROR, (end.describe(), reference)
    assert end.error < 1e-3


@pytest.mark.slow
def test_the_positional_branch_at_omega_0_15_is_followed_to_its_continuous_end():
    """ω = 0.15, split-line 8: the positional branch reaches m = 0 continuously near α = 1.4743. Followed from α = 0.3,
    the follow must bracket the trivial state's pitchfork (alive below, lost above, lost "continuous_end"), name an end
    that covers it within its error, and reach α = 1.4735 (|m| ≈ 0.018) through the order parameter: the solves at
    fixed α fail there, and the follow without the order parameter ended "alive at 1.4601, lost at 1.4701
    (not_converged)", reporting the branch missing where it exists. About a minute."""
    params = api.Parameters.validated(omega=0.15)
    path = api.follow("positional", params, 10, low=0.3, high=2.7)
    accurate = api.follow_on_rule(path, "positional", params, SPLIT_LINE_8)
    assert accurate.at(2.7) is None
    loss = accurate.loss(2.7)
    alive, lost = loss.bracket
    assert loss.status == "converged" and loss.criterion == "continuous_end", loss.message
    last = accurate.at(alive).solution
    reference = _pitchfork(params, SPLIT_LINE_8, 1.47, 1.478, (last.q, last.V))
    assert alive < reference < lost, (loss.message, reference)
    end = accurate.end
    assert abs(end.alpha - reference) <= end.error + PITCHFORK_REFERENCE_ERROR, (end.describe(), reference)
    near = accurate.at(1.4735)
    assert near is not None and near.success, accurate.loss(1.4735)
    # on the branch: |m| falls along it towards the end, below its value at the end's first point (at a lower α)
    first = end.points[0]
    assert first.alpha < 1.4735 and 0 < abs(near.solution.m) < abs(first.state[3]), (near.solution.m, first.state)


@pytest.mark.slow
def test_solve_next_to_the_end_reports_the_branch_failed_with_its_end_not_missing():
    """ω = 0, α = 0.9: split-line 8 reaches the positional branch only through |m| (|m| ≈ 0.017, 0.0016 before its end
    at 0.90158), and split-line 10's fixed point at α is not found from there. `solve` must report the branch failed (it
    exists at α), name the end, and stop the climb at that first failed rung (all nine failed at ω = 0.15, α = 1.472,
    in 286 s). About 30 seconds."""
    result = api.solve(0.0, 0.9, branches=("positional",), stability=False)
    assert not result.branches
    (missing,) = result.missing
    assert missing.status == "failed", missing.message
    assert "through |m|" in missing.message and "reaches m = 0 continuously at α = 0.9015" in missing.message
    assert missing.message.startswith("positional: split-line 10:"), missing.message  # the climb's first finer rung
