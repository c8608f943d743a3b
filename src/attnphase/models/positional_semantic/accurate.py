"""Accurate branches: split-line quadrature, defect correction, and the convergence study.

The tensor Gauss-Hermite rules converge slowly on the prox's basin switches; the split-line rules
(numeric.split_line) integrate across them. A branch is carried from a tensor-rule solution to the
split-line rules by defect correction (Anderson, then Broyden from the Jacobian of the split-line map
itself), and the convergence study climbs the rules (numeric.convergence.climb) to put an error on
Φ, ε_t and ε_g.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.branches import COLLAPSE_LEVEL, BranchCoordinates, solve_branch
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution, ConvergenceStudy, EnvelopeRow, StateRow
from attnphase.models.positional_semantic.state_evolution import SaddlePointEquations
from attnphase.numeric.convergence import Rung, climb
from attnphase.numeric.fixedpoint import Anderson, Broyden, Chain, LastEvaluation, solve_fixed_point
from attnphase.numeric.split_line import CountSplit, SplitLineRule
from attnphase.results import Result, Status

__all__ = ["STATE_RULES", "ENVELOPE_RULES", "ENVELOPE_OUTER_SPLIT_NODES", "ENVELOPE_COUNT_SPLIT_NODES",
           "ENVELOPE_COUNT_SPLIT", "ENVELOPE_COUNT_SPLIT_PROBES", "TEST_ERROR_NODES", "REFINE_MAX_ITER",
           "AccurateState", "defect_correction", "refine_branch", "convergence_study"]

# Split-line rules (outer Gauss-Hermite nodes per dimension / uniform probes along ξ_1 / Gauss-Kronrod
# panel tolerance). The state is solved on STATE_RULES (coarse, fine); the envelope average E[M] at the
# fine state on ENVELOPE_RULES. Measured at ω = 0.3, α = 1.25 (fixed state): E[M] on outer 8/10/12/14
# moves by 3.3e-7, 1.5e-7, 7e-8 (semantic, geometric) and −8e-7, −8e-8, +1.3e-7 (positional, oscillating).
STATE_RULES = (SplitLineRule(8, 32, 1e-10), SplitLineRule(10, 32, 1e-10))
ENVELOPE_RULES = (SplitLineRule(10, 32, 1e-10), SplitLineRule(12, 32, 1e-10), SplitLineRule(14, 32, 1e-10))
# Outer-split envelope rules (Gauss-Hermite nodes in χ_2, ζ_2; see SaddlePointEquations.outer_split_nodes).
# Measured at ω = 0.3, α = 1.25 (fixed converged states): E[M] on (χ_2, ζ_2) = (16, 14) -> (20, 18) or
# (16, 18) changes by ~2e-9 (positional) and 1.1e-8 (semantic); (24, 18) and (16, 22) move the finer
# one by 8e-10 and 1.2e-9. Only E[M] is averaged on these rules (`envelope_average`): with the hat
# integrands (jumps) the adaptive panels refine ~3× more.
ENVELOPE_OUTER_SPLIT_NODES = ((16, 14), (20, 18))
# Outer split plus a count split along χ_2 (Gauss-Hermite in ζ_2 only, 64 probes per line), for ω = 0
# (`convergence_study(..., envelope_count_split=True)`). Measured at ω = 0, α = 0.615 (positional branch,
# fixed converged state; 8-20 CPU-minutes per evaluation): E[M] on ζ_2 = 12 -> 16 -> 20 moves by −3.9e-8,
# +1.5e-9; count tolerance 1e-9 -> 1e-10 by 1.2e-10; 32 -> 64 probes per line by −1.2e-8 (64 -> 128 on
# planes: 4e-10).
ENVELOPE_COUNT_SPLIT_NODES = ((12,), (16,))
ENVELOPE_COUNT_SPLIT = CountSplit(1, 48, 1e-9)
ENVELOPE_COUNT_SPLIT_PROBES = 64
TEST_ERROR_NODES = 16
REFINE_MAX_ITER = 16
ANDERSON_MAX_ITER = 40
# When the defect correction collapses onto the trivial set, it is retried once from the start with
# the branch's order parameter (|m| positional, c semantic) scaled by this factor: at small ω the
# tensor rules put the positional |m| at about half its converged value (ω = 0: 0.07 vs 0.152; ω =
# 0.05, α = 0.68: 0.076 vs 0.170), and from there both Anderson and Broyden fall to m = 0.
RETRY_ORDER_SCALE = 2.0


@dataclass(frozen=True)
class AccurateState(Result):
    """A branch solution on a split-line rule and the inverse Jacobian of F − I its Broyden solve ended
    with (reduced coordinates): a warm start for the next, finer rule or the next control. Status and
    message are the solution's."""

    solution: BranchSolution
    inverse: np.ndarray | None = field(default=None, repr=False)

    @property
    def status(self) -> Status:
        return self.solution.status

    @property
    def message(self) -> str:
        return self.solution.message


def defect_correction(solution: BranchSolution, params: Parameters, rule: SplitLineRule, tol: float, max_iter: int,
                      inverse=None, anderson: bool = True) -> AccurateState:
    """The fixed point of the split-line map from `solution` (see `refine_branch`), with the inverse
    Jacobian of G(y) = F_s(y) − y at the end, reusable as the start of a finer rule."""
    coords = BranchCoordinates(solution.branch, params)
    accurate = SaddlePointEquations(params, solution.alpha, TEST_ERROR_NODES, split_rule=rule)
    # the solver's last F(x) and the free energy at that x share one (expensive) evaluation
    evaluate = LastEvaluation(accurate.evaluate)

    def collapsed(y):
        """On the trivial set (or, for the mixed branch, on a pure one): m = 0 and θ = 0 are invariant, so
        a solver can converge there from a start on the branch (seen: Anderson at ω = 0.05, α = 0.68,
        positional m 0.17 -> 0)."""
        x = coords.to_state(y)
        sizes = ([abs(x[2])] if coords.has_c else []) + ([float(np.abs(x[3:]).max())] if coords.has_m else [])
        return bool(sizes) and min(sizes) < COLLAPSE_LEVEL

    broyden = Broyden(max_iter=max_iter, inverse=inverse)
    # Anderson mixing on the split-line map first (globally more robust than Newton here: at ω = 0 it
    # climbs from the tensor start m = 0.07 to the fixed point m = 0.152 in 16 evaluations); Broyden
    # from wherever it ended (from the start if Anderson left the domain or collapsed)
    solver = Chain(Anderson(damping=0.5, max_iter=ANDERSON_MAX_ITER), broyden, polish=True,
                   usable=lambda y: not collapsed(y)) if anderson else broyden
    result = solve_fixed_point(coords.restricted_map(lambda x: evaluate(x).next), coords.from_state(solution.state),
                               solver, transforms=coords.transforms, tol=tol, spectrum=False)
    y = np.asarray(result.value, float)
    status, note = result.status, ""
    if status == Status.CONVERGED and collapsed(y):
        status, note = Status.LOST, "; collapsed onto the trivial set"
    x = coords.to_state(y)
    converged = status == Status.CONVERGED
    envelope, phi = math.nan, math.nan
    if converged:
        evaluation = evaluate(x)  # the last map evaluation, at this x
        phi = accurate.free_energy(x, evaluation)
        envelope = evaluation.envelope
    refined = BranchSolution(
        branch=solution.branch, alpha=solution.alpha, q=float(x[0]), m=float(x[3]), theta=float(x[2]), V=float(x[1]),
        free_energy=phi, train_loss=-phi, test_error=accurate.test_error(x) if converged else math.nan,
        stable=solution.stable, spectral_radius=solution.spectral_radius, status=status,
        message=f"defect correction on the split-line rule {rule.label()}: residual {result.residual:.2g}{note}",
        evaluations=result.evaluations, residual=result.residual, nodes_per_dim=solution.nodes_per_dim, state=x,
        envelope=envelope)
    return AccurateState(refined, result.inverse_jacobian)


def defect_correction_with_retry(solution: BranchSolution, params: Parameters, rule: SplitLineRule, tol: float,
                                 max_iter: int, inverse=None, anderson: bool = True) -> AccurateState:
    """`defect_correction`, retried once with the order parameter scaled by RETRY_ORDER_SCALE when it
    collapsed, stalled or diverged (pure branches only)."""
    first = defect_correction(solution, params, rule, tol, max_iter, inverse, anderson)
    retry = (Status.LOST, Status.MAX_ITER, Status.DIVERGED)
    if first.solution.status not in retry or solution.branch not in ("positional", "semantic"):
        return first
    x = np.array(solution.state, float)
    if solution.branch == "positional":
        x[3:] *= RETRY_ORDER_SCALE
    else:
        x[2] *= min(RETRY_ORDER_SCALE, 0.9 * math.sqrt(params.rho * x[0]) / max(abs(x[2]), 1e-300))
    retried = defect_correction(replace(solution, state=x), params, rule, tol, max_iter, None, anderson)
    if retried.success:
        note = f" (after a retry with the order parameter ×{RETRY_ORDER_SCALE:g}: first attempt {first.solution.status})"
        return replace(retried, solution=replace(retried.solution, message=retried.solution.message + note))
    return first


def refine_branch(solution: BranchSolution, params: Parameters, rule: SplitLineRule, *, tol: float = 1e-8,
                  max_iter: int = REFINE_MAX_ITER, anderson: bool = True) -> BranchSolution:
    """The branch's fixed point on the split-line rule, by defect correction from a tensor-rule solution.

    Solves G(y) = F_s(y) − y = 0 (F_s the map on the split-line rule, reduced coordinates): Anderson
    mixing on F_s first (damping 0.5, ≤ ANDERSON_MAX_ITER evaluations), then Broyden's method from
    wherever that ended (numeric.fixedpoint.Broyden: the inverse of J_s − I with J_s = dF_s/dy by
    forward differences on the split-line map itself, each step capped at a quarter of each coordinate
    and kept inside the domain q, V > 0, |c| < 1).

    Why the Jacobian of the accurate map: at small ω the tensor rules get the m-dependence of the
    positional branch qualitatively wrong. At ω = 0, α = 0.6 (q, V fixed) ∂F_m/∂m is −1.25 on the
    10-node tensor rule but +0.9 on the split-line rule: the drive of m (m̂ comes from which prox
    basin wins, i.e. from the switching surface the tensor rule does not resolve) is weak, the map is
    nearly neutral along m, and the tensor fixed point sits at m ≈ 0.07 while the converged one is
    at m ≈ 0.15. A defect correction preconditioned by the tensor Jacobian diverges there.

    The state matters for Φ at second order only (Φ is stationary), but at ω = 0.3, α = 1.25 the
    tensor rules already leave V wrong by several percent (positional: 14.61 on 10 nodes, 15.32 on 14,
    14.90 converged), which moves Φ by ~5e-7. Status converged when
    max_j |F_s(y) − y|_j / max(|y_j|, 1e-3) ≤ tol; diverged when the iteration leaves the domain;
    lost when it converged onto the trivial set (|θ| or |m| < COLLAPSE_LEVEL; for the mixed branch
    onto a pure one), which is never reported as the branch.

    anderson=False skips the Anderson stage: Broyden alone converges to the fixed point near the start
    whatever its stability, which is how unstable (saddle) fixed points such as the mixed state are
    found; Anderson mixing tends to slide off them onto a stable branch. `stable` and
    `spectral_radius` are copied from `solution` (not recomputed on the split-line rule).
    """
    if not solution.success:
        return solution
    return defect_correction_with_retry(solution, params, rule, tol, max_iter, None, anderson).solution


def _envelope_variants(envelope_rules, envelope_outer_nodes, envelope_count_split):
    """(split-line rule, outer-split node counts or None, label) of each envelope rule of a study."""
    if envelope_outer_nodes is None:
        return [(rule, None, rule.label()) for rule in envelope_rules]
    probes, kind = (ENVELOPE_COUNT_SPLIT_PROBES, "outer+count-split ") if envelope_count_split else (32, "outer-split ")
    return [(SplitLineRule(max(nodes), probes, 1e-10), tuple(nodes), kind + "x".join(map(str, nodes)))
            for nodes in envelope_outer_nodes]


def convergence_study(branch: str, alpha: float, params: Parameters, *, state_rules=STATE_RULES,
                      envelope_rules=ENVELOPE_RULES, nodes_per_dim: int = 10, start: BranchSolution | None = None,
                      envelope_outer_nodes=None, envelope_count_split: bool = False) -> ConvergenceStudy:
    """Solve `branch` at α by defect correction on each state rule (each started from the previous),
    evaluate Φ at the finest state on each envelope rule, and estimate the errors (see ConvergenceStudy):
    two climbs of numeric.convergence's ladder, the state rules with the difference of the last two as
    the error, the envelope rules with the spread over all of them.

    envelope_outer_nodes: outer-split envelope rules instead of envelope_rules (one tuple of Gauss-Hermite
    counts each, see SaddlePointEquations.outer_split_nodes); with envelope_count_split also a count split
    along χ_2 (ENVELOPE_COUNT_SPLIT, 64 probes per line), and each tuple counts (χ_3..χ_L, ζ_2..ζ_L) only
    (e.g. ENVELOPE_COUNT_SPLIT_NODES)."""
    if len(state_rules) < 2 or len(envelope_rules) < 2:
        raise ParameterError("rules", (state_rules, envelope_rules), "at least two state rules and two envelope rules")
    if envelope_count_split and envelope_outer_nodes is None:
        raise ParameterError("envelope_count_split", envelope_count_split, "False unless envelope_outer_nodes is given")
    if start is None:
        start = solve_branch(branch, alpha, params, nodes_per_dim=nodes_per_dim, stability=False)
    if not start.success:
        return ConvergenceStudy(branch, alpha, (), (), math.nan, math.nan, math.nan, math.nan, Status.FAILED,
                                f"no converged tensor-rule start: {start.status} ({start.message[:80]})")
    # each finer rule starts from the previous rule's fixed point and inverse Jacobian
    states = climb(lambda rule, previous: defect_correction_with_retry(previous.solution, params, rule, 1e-8,
                                                                       REFINE_MAX_ITER, previous.inverse),
                   [Rung(rule, rule.label()) for rule in state_rules],
                   lambda state: {"test_error": state.solution.test_error}, start=AccurateState(start))
    solved = [answer.solution for answer in states.answers]
    if not states.success:
        rows = tuple(StateRow(r.label(), st.status, st.residual) for r, st in zip(state_rules, solved))
        return ConvergenceStudy(branch, alpha, rows, (), math.nan, math.nan, math.nan, math.nan, Status.FAILED,
                                f"defect correction on {states.message}")
    state_rows = tuple(StateRow(r.label(), st.status, st.residual, st.q, st.V, st.m, st.theta, st.test_error,
                                st.free_energy) for r, st in zip(state_rules, solved))
    coarse, fine = solved[-2].state, solved[-1].state
    count_split = ENVELOPE_COUNT_SPLIT if envelope_count_split else None
    variants = _envelope_variants(envelope_rules, envelope_outer_nodes, envelope_count_split)

    def equations_for(variant):
        rule, outer_nodes, _ = variant
        return SaddlePointEquations(params, alpha, TEST_ERROR_NODES, split_rule=rule, outer_split_nodes=outer_nodes,
                                    count_split=count_split if outer_nodes is not None else None)

    def free_energy_at(variant, x):
        """(Φ, E[M]) at state x on one envelope rule: Φ(q, V, θ, m) needs E[M] only on the outer-split
        rules; it equals the saddle-point Φ at the fixed point."""
        equations = equations_for(variant)
        if variant[1] is None:
            evaluation = equations.evaluate(x)
            return equations.free_energy(x, evaluation), evaluation.envelope
        envelope = equations.envelope_average(x)
        return equations.free_energy_of_state(x, envelope), envelope

    envelopes = climb(lambda variant, _: free_energy_at(variant, fine), [Rung(v, v[2]) for v in variants],
                      lambda value: {"free_energy": value[0]}, error="spread")
    phis = [phi for phi, _ in envelopes.answers]
    # the state's effect on Φ on one envelope rule (the rule's own error cancels in the difference): the
    # finest plain rule, or the cheapest outer-split rule
    k = -1 if envelope_outer_nodes is None else 0
    phi_coarse_state, _ = free_energy_at(variants[k], coarse)
    spread = envelopes.errors["free_energy"]
    state_effect = abs(phi_coarse_state - phis[k])
    message = (f"Φ spread over {len(phis)} envelope rules {spread:.2g}, state effect {state_effect:.2g}; "
               f"finest {variants[-1][2]}")
    return ConvergenceStudy(branch, alpha, state_rows, tuple(EnvelopeRow(v[2], phi) for v, phi in zip(variants, phis)),
                            phis[-1], spread + state_effect, solved[-1].test_error, states.errors["test_error"],
                            Status.CONVERGED, message, float(envelopes.answer[1]), fine)
