"""α_c checked on the outer-split rules: Φ there, at the branch states of the split-line ladder.

Why: at some ω the split-line rules' Φ carries a bias that their spread does not show. At ω = 0.1 the
rungs 12, 14, 16 put α_c at 0.75108, 0.75122, 0.75127 (spread 2e-4) where the converged value is
0.75073 ± 1.3e-4 (docs/research/positional_semantic.md). The outer-split rule (numeric.split_line.OuterSplit:
lines along χ_1, adaptive along ζ_1 cut where the pitchfork indicator changes sign, Gauss-Hermite in
(χ_2, ζ_2)) removes the outer rule's oscillation in E[M] at ω ≳ 0.2; at ω = 0 it converges slowly in χ_2
(the positional E[M] rises monotonically with the χ_2 nodes).

How: Φ is stationary in the state at a fixed point, so Φ on the outer-split rule at the split-line state
differs from its value at the outer-split fixed point only at second order in the state difference; no
fixed point on the (15-30× dearer) outer-split rule is needed, only E[M] at each branch's state, on the
three rules CHECK_RULES. At the ladder's last Newton point α_0:

    α_c = α_0 − ΔΦ / ΔΦ',  ΔΦ = Φ_sem − Φ_pos on the finest rule, ΔΦ' = E[M]_pos − E[M]_sem there;
    error = (err Φ_pos + err Φ_sem + state effect) / |ΔΦ'| + the linearisation bound of the caller,

each branch's error being the spread of its Φ over the three rules plus the tail of a one-way drift
(numeric.convergence.drift_tail) plus the lines' own error (CHECK_PHI_ACCURACY, below), per branch: the two
branches' errors are added, never allowed to cancel in ΔΦ. (At ω = 0 the difference of ΔΦ between (12, 10) and
(16, 14) was 1.4e-8, while ΔΦ on both was off by 5.8e-7: α_c 0.61642 against 0.61490 ± 0.00011.) The state
effect is, per branch, the change of Φ on the upper of two split-line rules between its state and the lower
rule's state (the second-order effect of a state error of that size). Measured at ω = 0.3, α = 1.25 (the solve's states): ΔΦ on (8, 6), (10, 8), (12, 10),
(16, 14) nodes in (χ_2, ζ_2): 3.2e-6, −5.5e-7, −1.235e-6, −1.266e-6; Φ_pos moved by 9.0e-8 and Φ_sem by
5.9e-8 from (12, 10) to (16, 14) (E[M] per branch and rule: 16-35 s on one core).

At ω = 0 the positional Φ still drifts in χ_2 on the three CHECK_RULES (no bound), so while α_c's error is above
the tolerance the rules of FURTHER_CHECK_RULES are added one at a time, the errors then taken over the last three.
Measured at the default threshold's states (α_0 = 0.61409): α_c = 0.61673, 0.61650, 0.61560, 0.61544, 0.61514,
0.61481, 0.61465 on χ_2 = 12, 16, 20, 24, 28, 32, 36; the converged value is 0.61490 ± 0.00011 (the count split inside
the outer split, research notes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import RungThreshold
from attnphase.models.positional_semantic.rules import Rule
from attnphase.numeric.convergence import drift_tail

__all__ = ["CHECK_RULES", "FURTHER_CHECK_RULES", "CHECK_WINDOW", "CHECK_WEIGHT_FLOOR", "CHECK_PHI_ACCURACY", "BRANCHES",
           "FreeEnergies", "CheckedGap", "outer_split_free_energies", "checked_gap", "state_effect", "checked_alpha_c"]

# Gauss-Hermite nodes in (χ_2, ζ_2) of the three outer-split rules, coarse to fine (see the module docstring).
CHECK_RULES = ((12, 10), (16, 14), (20, 18))
# Finer in χ_2 alone, climbed one at a time while α_c's error is above the tolerance (the errors then over the last
# three rules): at ω = 0 the positional Φ drifts in χ_2 (see the module docstring). At the states of the default
# threshold (α_0 = 0.61409) the semantic Φ's steps on χ_2 = 24, 28, 32 grow (α_c 0.61544, 0.61514, 0.61481: no bound);
# χ_2 = 36 gives 0.61465, a smaller step, and α_c(0) = 0.61465 ± 0.0008 against the reference 0.61490 ± 0.00011.
FURTHER_CHECK_RULES = ((24, 18), (28, 18), (32, 18), (36, 18), (40, 18))
CHECK_WINDOW = 3
# Panel tolerance of the check rules' lines (their outer panels: 10× it), coarser than the references' 1e-10: at the
# states of the default α_c(0.3), rule (12, 10), both branches, 1e-8 took 5.9 s against 10.5 s and moved Φ by ≤ 1.9e-9,
# α_c by 2e-6 (research notes, "Where the default solve's time goes"), 60× below α_c's window floor.
CHECK_LINE_PANEL_TOL = 1e-8
# Where the check rules' lines are cut before their first panels: at (−3, 0, 3), as the outer panels
# (numeric.split_line), fewer cuts than the state rules' lines (numeric.basin_lines.LINE_CUTS): E[M] alone at
# CHECK_LINE_PANEL_TOL needs fewer halvings than the hats at 1e-9. At the states of the default α_c(0.3) the three
# CHECK_RULES took 10.4 s against 12.9 s (E[M] moved by ≤ 1.0e-10); at ω = 0 with two FURTHER_CHECK_RULES 23.9 s against
# 28.9 s (≤ 9.3e-10, α_c by ≤ 1.5e-6).
CHECK_LINE_CUTS = (-3.0, 0.0, 3.0)
# The check rules' (χ_2, ζ_2) Gauss-Hermite nodes of weight at or below this are left out: each costs a whole plane of
# lines, and on (20, 18) 80 of the 300 nodes weigh under 1e-10 (on (16, 14) 44 of 212). What they carry is at most
# 80 · 1e-10 · max|E[M] on a plane| · α ≈ 7e-10 in Φ (at the states of the α_c(0.31) check the planes' E[M] ≤ 0.04);
# measured at the states of the default curve's checks at ω = 0.45, 0.31, 0.17, 0: ≤ 3.8e-11 in Φ, and (16, 14),
# (20, 18) 20-30 % faster.
CHECK_WEIGHT_FLOOR = 1e-10
# What the lines' adaptive quadrature (CHECK_LINE_PANEL_TOL, CHECK_LINE_CUTS) and CHECK_WEIGHT_FLOOR leave in Φ: 4× the
# largest change measured against panels to 1e-10 (at the states of the default α_c curve's checks at ω = 0.45, 0.33,
# 0.21, 0.12, 0.095, 0, rules (12, 10) and (20, 18), both branches: 1.2e-9 at ω = 0.12, semantic, (12, 10); ≤ 2.6e-10
# elsewhere), the floor's effect being 30 times smaller.
# A move of Φ between two rules by at most twice this has no known sign, so it is not read as a drift (before, a
# first move of 4.6e-11 followed by one of 1.3e-8 was a drift without a bound, and the check climbed a fourth rule);
# the spread can understate the lines' exact values by twice this, and the reported Φ carries it once more.
CHECK_PHI_ACCURACY = 5e-9
BRANCHES = ("semantic", "positional")


@dataclass(frozen=True)
class FreeEnergies:
    """Φ and E[M] of each branch (by name) at fixed states on one outer-split rule."""

    nodes: tuple[int, ...]
    phi: dict
    envelope: dict

    @property
    def gap(self) -> float:
        """ΔΦ = Φ_sem − Φ_pos."""
        return self.phi["semantic"] - self.phi["positional"]

    @property
    def slope(self) -> float:
        """dΔΦ/dα at fixed states: E[M]_pos − E[M]_sem (Φ = ... − α E[M])."""
        return self.envelope["positional"] - self.envelope["semantic"]


@dataclass(frozen=True)
class CheckedGap:
    """ΔΦ and its slope on the finest rule, each branch's Φ error (spread with drift tail; `branch_errors`),
    the error of ΔΦ (their sum), and every rule's values (`rules`)."""

    gap: float
    slope: float
    branch_errors: dict
    rules: tuple[FreeEnergies, ...]

    @property
    def error(self) -> float:
        return sum(self.branch_errors.values())


def outer_split_free_energies(states: dict, params: Parameters, alpha: float, nodes: tuple[int, ...],
                               line_panel_tol: float = CHECK_LINE_PANEL_TOL,
                               weight_floor: float = CHECK_WEIGHT_FLOOR) -> FreeEnergies:
    """Φ and E[M] at α on the outer-split rule `nodes` at `states` (branch -> state vector
    x = (q, V, θ, m_1..m_L), for both BRANCHES), its lines' panels to `line_panel_tol`, its nodes of weight at or
    below `weight_floor` left out."""
    equations = Rule.outer_split(nodes, line_panel_tol, CHECK_LINE_CUTS, weight_floor).equations(params, alpha)
    envelope = {b: equations.envelope_average(np.asarray(states[b], float)) for b in BRANCHES}
    phi = {b: equations.free_energy_of_state(np.asarray(states[b], float), envelope[b]) for b in BRANCHES}
    return FreeEnergies(tuple(nodes), phi, envelope)


def checked_gap(values) -> CheckedGap:
    """ΔΦ on the last of `values` (FreeEnergies on rules from coarse to fine), with its error: per branch the
    spread of Φ over the last CHECK_WINDOW rules plus the tail of a one-way drift (moves of at most twice
    CHECK_PHI_ACCURACY are not a drift) plus three times CHECK_PHI_ACCURACY (twice for the spread, once for the
    reported value), the branches' errors added."""
    values = tuple(values)
    errors = {}
    for b in BRANCHES:
        phi = [v.phi[b] for v in values[-CHECK_WINDOW:]]
        errors[b] = max(phi) - min(phi) + drift_tail(phi, 2 * CHECK_PHI_ACCURACY) + 3 * CHECK_PHI_ACCURACY
    return CheckedGap(values[-1].gap, values[-1].slope, errors, values)


def state_effect(top_state, other_states, params: Parameters, alpha: float, rule: Rule) -> float:
    """max over `other_states` of |Φ(x) − Φ(top_state)| on the split-line `rule` (Φ(q, V, θ, m) with the
    conjugates eliminated): how much a state error of the size of the rung-to-rung differences moves Φ."""
    equations = rule.equations(params, alpha)
    top = equations.free_energy_of_state(np.asarray(top_state, float))
    return max((abs(equations.free_energy_of_state(np.asarray(x, float)) - top) for x in other_states), default=0.0)


def checked_alpha_c(top: dict, below: list, params: Parameters, alpha_0: float, curvature: float, top_rule: Rule,
                    tolerance: float):
    """(α_c, its error, the slope, the outer-split rows, what the message says of them) at α_0 from the branch states
    of the ladder's top rung `top` (branch -> AccurateState) and of the rung below (`below`: a list of zero or one
    such dict): the CHECK_RULES, then FURTHER_CHECK_RULES one at a time while the error is above `tolerance`.
    curvature: |dΔΦ'/dα| for the linearisation bound of the Newton step from α_0."""
    states = {b: top[b].solution.state for b in top}
    moved = sum(state_effect(top[b].solution.state, [s[b].solution.state for s in below], params, alpha_0, top_rule)
                for b in top)

    def checked_alpha(checked):
        alpha = alpha_0 - checked.gap / checked.slope
        return alpha, ((checked.error + moved) / abs(checked.slope)
                       + 0.5 * curvature * (alpha - alpha_0) ** 2 / abs(checked.slope))

    values = [outer_split_free_energies(states, params, alpha_0, nodes) for nodes in CHECK_RULES]
    checked = checked_gap(values)
    alpha, error = checked_alpha(checked)
    for nodes in FURTHER_CHECK_RULES:
        if error <= tolerance:
            break
        values.append(outer_split_free_energies(states, params, alpha_0, nodes))
        checked = checked_gap(values)
        alpha, error = checked_alpha(checked)
    rows = tuple(RungThreshold(f"outer-split {v.nodes}", alpha_0 - v.gap / v.slope, v.gap, v.slope)
                 for v in checked.rules)
    rules = ", ".join(str(v.nodes) for v in checked.rules)
    drifting = [b for b, e in checked.branch_errors.items() if math.isinf(e)]
    errors = ", ".join(f"Φ_{b[:3]} {e:.2g}" for b, e in checked.branch_errors.items())
    over = f" (errors over the last {CHECK_WINDOW})" if len(checked.rules) > CHECK_WINDOW else ""
    note = (f"Φ on the outer-split rules {rules}{over} at those states (errors {errors}, state effect {moved:.2g}, "
            f"slope {checked.slope:.4g})")
    if drifting:
        note += f"; Φ of the {' and '.join(drifting)} branch still drifts in one direction on them: no error bound"
    return alpha, error, checked.slope, rows, note
