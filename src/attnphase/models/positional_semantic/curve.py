"""The α_c(ω) curve from split-line free energies, with errors that cover the converged values.

Continuation in ω on a cheap split-line state rule (Broyden solves carried from ω to ω with their
inverse Jacobians), Newton's method on Δ_c = Φ_sem − Φ_pos with its exact slope at each ω, and a
correction of Δ_c from finer envelope rules at every few ω, interpolated in between.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.accurate import TEST_ERROR_NODES, defect_correction, defect_correction_with_retry
from attnphase.models.positional_semantic.branches import BranchCoordinates, BranchTracker
from attnphase.models.positional_semantic.parameters import Parameters, ThresholdSearch
from attnphase.models.positional_semantic.results import BranchSolution, CurveRow, NewtonPoint, SplitLineCurve, combined_status
from attnphase.models.positional_semantic.state_evolution import SaddlePointEquations
from attnphase.models.positional_semantic.thresholds import SYMMETRIC_A, crossing_functions
from attnphase.numeric.branches import extrapolate
from attnphase.numeric.fixedpoint import LastEvaluation, forward_difference_jacobian
from attnphase.numeric.split_line import SplitLineRule
from attnphase.numeric.threshold import Threshold, first_sign_change, noisy_threshold, second_difference_bound
from attnphase.params import check_int, check_real, check_real_list
from attnphase.results import Result, Status

__all__ = ["CURVE_STATE_RULE", "CURVE_ENVELOPE_RULES", "AccurateFreeEnergy", "accurate_free_energy", "CurveBranchState",
           "curve_branch_state", "corrected_threshold", "alpha_c_curve_split_line"]

# Rules of `alpha_c_curve_split_line`. The states (and the Newton iteration in α) are solved on the cheap
# CURVE_STATE_RULE; Φ is then evaluated at those states on the two CURVE_ENVELOPE_RULES (the finer one is
# reported, the difference is its error). Measured at ω = 0.3, α = 1.25 (8-node tensor state): panel
# tolerance 1e-8 instead of 1e-10 moves E[M] by < 6e-9; the outer rule is what matters (E[M] on outer
# 6/8/10/12: 2.25949, 2.25796, 2.25706, 2.25700 e-3 positional, 1.42675, 1.42587, 1.42554, 1.42540 e-3
# semantic). 32 probes, not 16: at ω = 0.26, α = 1.114 16 probes miss a basin switch, the semantic map
# jumps there and has no fixed point (residual stuck at 5e-4); 24 and 32 probes converge, at ~15% more
# cost per evaluation. The envelope rules need no fixed point and keep 16 probes (E[M] within 6e-9 of
# 32 probes at ω = 0.3).
CURVE_STATE_RULE = SplitLineRule(6, 32, 1e-8)
CURVE_ENVELOPE_RULES = (SplitLineRule(8, 16, 1e-8), SplitLineRule(10, 16, 1e-8))
CURVE_NEWTON_STEPS = 3
# Relative residual of the state-rule fixed points: the state enters Φ at second order (and the state
# term of `accurate_free_energy` accounts for what is left), E[M] (the slope) at first order, where a
# relative 1e-4 moves α_c by ~1e-4 × the last Newton step, far below the quadrature error.
CURVE_STATE_TOL = 1e-4
# A state-rule solve that stalls (Broyden's max_iter) with a relative residual below this is accepted on
# the curve: at small ω the semantic map on outer rule 6 has small jumps near its fixed point (seen at
# ω = 0.04-0.06, α ≈ 0.67-0.70: residual stuck at 2-4e-3 from every start, with 32, 48 or 64 probes), so no
# exact fixed point exists on that rule. Φ is stationary, so such a state moves Φ only at second order;
# that term, ½ ∇Φ·δ with δ = −(J − I)⁻¹(F(x) − x), is computed and counted as an error.
CURVE_STATE_ACCEPT = 1e-2
CURVE_MAX_ITER = 10
BRANCHES = ("semantic", "positional")


def _state_term(equations: SaddlePointEquations, coords: BranchCoordinates, x, evaluation, inverse) -> float:
    """½ ∇Φ(x)·δ with δ ≈ −(J − I)⁻¹ (F(x) − x): the second-order effect on Φ of the distance from x to
    the fixed point of the map on `equations`' rule (Φ is stationary there)."""
    y = coords.from_state(x)
    delta = coords.to_state(y - inverse @ (coords.from_state(evaluation.next) - y)) - x
    return 0.5 * float(equations.free_energy_gradient(x, evaluation) @ delta)


@dataclass(frozen=True)
class AccurateFreeEnergy(Result):
    """Φ of a state-rule fixed point on finer envelope rules: free_energy and E[M] (envelope) on the
    finest, rule_values on each, state_term the estimated second-order effect of the state, error the
    difference of the last two rules plus |state_term| (status converged: there is no failure mode, a
    state outside the domain raises)."""

    free_energy: float
    error: float
    envelope: float
    rule_values: tuple[float, ...]
    state_term: float
    status: Status
    message: str


def accurate_free_energy(solution: BranchSolution, inverse, params: Parameters, rules) -> AccurateFreeEnergy:
    """Φ of a state-rule fixed point on the envelope rules, with an error that includes the state's own.

    Φ is stationary at the fixed point, so evaluating it on a finer rule at the state-rule fixed point x
    errs only at second order in the distance δ to the finer rule's fixed point. That term is estimated,
    δ ≈ −(J − I)⁻¹ (F_fine(x) − x) (the state rule's Broyden inverse, reduced coordinates) and
    Φ(x + δ) − Φ(x) ≈ ½ ∇Φ(x)·δ (`free_energy_gradient`, from the same evaluation), and counted as an
    error, not added: it is an estimate of the right size but not of the right sign (outer 3 → 6 at
    ω = 0.3, α = 1.25, semantic: estimated +7.1e-6, actual −2.9e-6; tested). Error: the difference
    between the two envelope rules (the coarser rule's error bounds the finer one's for an outer rule
    that converges, as measured: outer 8 → 10 moves Φ by 7e-7, 10 → 12, 14 by ≤ 2.5e-7 at ω = 0,
    α = 0.6) plus the size of the second-order term.
    """
    coords = BranchCoordinates(solution.branch, params)
    x = solution.state
    values, envelopes = [], []
    for rule in rules:
        equations = SaddlePointEquations(params, solution.alpha, TEST_ERROR_NODES, split_rule=rule)
        evaluation = equations.evaluate(x)
        values.append(equations.free_energy_of_state(x, evaluation.envelope))
        envelopes.append(evaluation.envelope)
    state_term = _state_term(equations, coords, x, evaluation, inverse)
    return AccurateFreeEnergy(values[-1], abs(values[-1] - values[-2]) + abs(state_term), envelopes[-1], tuple(values),
                              state_term, Status.CONVERGED,
                              f"Φ on {rules[-1].label()} (check {rules[-2].label()}) at the state of {solution.message[:60]}")


@dataclass(frozen=True)
class CurveBranchState(Result):
    """A branch on the curve's state rule (`curve_branch_state`): the solution (converged, or stalled
    below CURVE_STATE_ACCEPT, or the last failed attempt), the inverse Jacobian of F − I there (None on
    failure), the map evaluations used, and the second-order Φ error of an accepted unconverged state
    (NaN on failure). Status: converged when a state was accepted (the solution's own status says whether
    it stalled), else the last attempt's."""

    solution: BranchSolution
    inverse: np.ndarray | None = field(repr=False)
    evaluations: int
    state_term: float

    @property
    def status(self) -> Status:
        return Status.CONVERGED if np.isfinite(self.state_term) else self.solution.status

    @property
    def message(self) -> str:
        return self.solution.message


def _order_parameter(solution: BranchSolution) -> float:
    return abs(solution.m) if solution.branch == "positional" else abs(solution.theta)


def curve_branch_state(start: BranchSolution, inverse, fallback: BranchSolution | None, params: Parameters,
                       rule: SplitLineRule) -> CurveBranchState:
    """A branch's fixed point on the curve's state rule.

    Tried in order until one converges or stalls below CURVE_STATE_ACCEPT, on the same branch (order
    parameter within a factor 3 of the start's: a continuation step moves it by a few percent, the
    first ω's tensor start at small ω is low by a factor ~2, while a solve sliding towards the invariant
    set m = 0 or θ = 0, which can also stall or converge, is not the branch): (1) Broyden from `start`
    (extrapolated along the curve) with the carried inverse Jacobian, a few evaluations; (2) Broyden from
    `start` with a fresh finite-difference Jacobian (a carried inverse can be spoiled by Broyden
    updates); (3) `refine_branch`'s Anderson + Broyden with the retry, from `fallback` (the previous ω's
    converged state), or from `start` when there is none.
    """
    used, accepted = 0, None
    attempts = ([(start, inverse, False)] if inverse is not None else []) + [(start, None, False),
                                                                             (fallback or start, None, True)]
    for first, carried, anderson in attempts:
        if anderson:
            state = defect_correction_with_retry(first, params, rule, CURVE_STATE_TOL, CURVE_MAX_ITER)
        else:
            state = defect_correction(first, params, rule, CURVE_STATE_TOL, CURVE_MAX_ITER,
                                      None if carried is None else carried.copy(), anderson=False)
        solution = state.solution
        used += solution.evaluations
        ratio = _order_parameter(solution) / max(_order_parameter(start), 1e-300)
        stalled_close = solution.status == Status.MAX_ITER and solution.residual <= CURVE_STATE_ACCEPT
        if 1 / 3 <= ratio <= 3 and (solution.success or stalled_close):
            accepted = state
            break
    if accepted is None:
        return CurveBranchState(solution, None, used, math.nan)
    solution, new_inverse = accepted.solution, accepted.inverse
    coords = BranchCoordinates(start.branch, params)
    y = coords.from_state(solution.state)
    equations = SaddlePointEquations(params, start.alpha, TEST_ERROR_NODES, split_rule=rule)
    evaluate = LastEvaluation(equations.evaluate)
    F = coords.restricted_map(lambda x: evaluate(x).next)
    if new_inverse is None:  # converged by Anderson alone: the Jacobian is needed for the next ω
        new_inverse = np.linalg.inv(forward_difference_jacobian(F, y, F(y)) - np.eye(len(y)))
        used += len(y)
    state_term = 0.0
    if not solution.success:  # stalled at the rule's jump floor: Φ, E[M] and the state term there
        evaluation = evaluate(solution.state)
        used += 1
        phi = equations.free_energy(solution.state, evaluation)
        state_term = _state_term(equations, coords, solution.state, evaluation, new_inverse)
        solution = replace(solution, free_energy=phi, train_loss=-phi, envelope=evaluation.envelope,
                           message=f"{solution.message}; accepted unconverged (Φ state term {state_term:.2g})")
    return CurveBranchState(solution, new_inverse, used, state_term)


def corrected_threshold(row: CurveRow, rows: dict[float, CurveRow], state_rule: SplitLineRule,
                        envelope_rules) -> tuple[Threshold, CurveRow]:
    """α_c at one ω of `alpha_c_curve_split_line` from its Newton point and the envelope-rule correction,
    and the row completed with it.

    Where the envelope rules were evaluated the correction is this ω's own; elsewhere it is interpolated
    linearly in ω between the nearest evaluated ω on either side, and its error is the larger of theirs
    plus half their difference (the correction is not assumed smooth beyond that). Then
    α_c = α_k − (Δ_k + c)/(Δ'_k + c'), error [err(c) + ½|Δ''|(step)²] / |Δ'|.
    """
    omega = row.omega
    if row.correction is not None:
        correction, slope_correction, error = row.correction, row.slope_correction, row.correction_error
        source = f"Φ on {envelope_rules[-1].label()} (check {envelope_rules[-2].label()})"
    else:
        evaluated = sorted(w for w, r in rows.items() if r.correction is not None)
        below, above = [w for w in evaluated if w < omega], [w for w in evaluated if w > omega]
        if not below or not above:
            return noisy_threshold(math.nan, math.nan, Status.FAILED,
                                   "no envelope-rule correction on both sides of this ω"), row
        a, b = rows[below[-1]], rows[above[0]]
        t = (omega - below[-1]) / (above[0] - below[-1])
        correction = (1 - t) * a.correction + t * b.correction
        slope_correction = (1 - t) * a.slope_correction + t * b.slope_correction
        error = max(a.correction_error, b.correction_error) + 0.5 * abs(a.correction - b.correction)
        source = f"correction interpolated between ω = {below[-1]:.4g} and {above[0]:.4g}"
        error += row.state_rule_term  # Δ_k of an unconverged state-rule solve errs by its state terms
    delta = row.delta_state_rule + correction
    slope = row.slope_state_rule + slope_correction
    step = -delta / slope
    linear = 0.5 * row.curvature * step**2
    value, total = row.alpha_k + step, (error + linear) / abs(slope)
    completed = replace(row, alpha_c=value, alpha_c_error=total, delta=delta, slope=slope, linearisation_error=linear,
                        quadrature_error=error)
    message = (f"Newton on split-line Φ: state rule {state_rule.label()} through α = "
               + ", ".join(f"{p.alpha:.5f}" for p in row.newton)
               + f"; {source}: Δ_c = {delta:.3g} ± {error:.2g}, slope {slope:.3g}, |Δ''| ≤ {row.curvature:.2g}")
    return noisy_threshold(float(value), float(total), Status.CONVERGED, message, None, float(slope)), completed


def alpha_c_curve_split_line(omegas, sigma=0.5, lam=0.01, A=None, L=2, *, state_rule=CURVE_STATE_RULE,
                             envelope_rules=CURVE_ENVELOPE_RULES, nodes_per_dim=6, alpha_min=0.4, alpha_max=3.0,
                             n_scan=6, step_tol=0.015, envelope_every=3) -> SplitLineCurve:
    """α_c(ω) at every ω in `omegas` from split-line free energies, with errors that cover the converged values.

    Continuation from the LARGEST ω downwards (where the tensor rules place both branches correctly; at
    small ω the tensor positional state has half the converged m and falls onto m = 0):
    1. first ω: the crossing of the `nodes_per_dim` tensor rule on a scan of [alpha_min, alpha_max]
       (n_scan points, linear interpolation) and the tensor solutions there, carried to the split-line
       `state_rule` (`curve_branch_state`);
    2. every ω: both branches on the state rule at the predicted α (the state-rule roots of the last
       three ω extrapolated in ω (numeric.branches.extrapolate); states the same way, Broyden from the
       previous ω's inverse Jacobian), then Newton's method on Δ_c = Φ_sem − Φ_pos with the exact slope
       dΔ_c/dα = E[M]_pos − E[M]_sem (≤ CURVE_NEWTON_STEPS solves, until the step is below step_tol);
    3. at the first ω, every `envelope_every`-th ω after it and the last: Φ and E[M] of both branches
       on `envelope_rules` at the state-rule fixed points (`accurate_free_energy`, variational: the
       state enters at second order); their correction c to Δ_c (and to the slope) is interpolated
       linearly in ω in between (`corrected_threshold`), and α_c = α_k − (Δ_k + c)/(Δ'_k + c').
    Error: [err Φ_sem + err Φ_pos + ½|Δ''| step²] / |Δ_c'| (Φ errors: envelope-rule difference and the
    second-order state terms; at interpolated ω the larger neighbour's plus half their difference);
    |Δ''| from the slopes of two Newton points at one ω, carried on (the tensor rule's at the first ω).
    Each ω's status is converged or failed (a branch solve failed or left its branch; the message
    says which), never a guess. Measured: 22 ω in [0, 0.45] in 85-116 s on the shared 2-core machine
    (load 2-5), the error bars (0.001-0.007) covering the five refined thresholds of the docs.
    """
    omegas = sorted(check_real_list("omegas", omegas, None, 0.0, 1.0), reverse=True)
    if len(set(omegas)) != len(omegas):
        raise ParameterError("omegas", omegas, "at least one ω in [0, 1], no repeats")
    if len(envelope_rules) < 2:
        raise ParameterError("envelope_rules", envelope_rules, "two split-line rules (coarse, fine)")
    base = Parameters.validated(omega=omegas[0], sigma=sigma, lam=lam, A=A, L=L)
    if not base.swap_symmetric:
        raise ParameterError("A", base.A, SYMMETRIC_A)
    search = ThresholdSearch.validated(nodes_per_dim=nodes_per_dim, alpha_min=alpha_min, alpha_max=alpha_max,
                                       n_scan=n_scan)
    nodes_per_dim, alpha_min, alpha_max, n_scan = search.nodes_per_dim, search.alpha_min, search.alpha_max, search.n_scan
    step_tol = check_real("step_tol", step_tol, 0.0, 1.0, low_open=True)
    envelope_every = check_int("envelope_every", envelope_every, 1, 1000)
    started = time.perf_counter()
    history = []  # (ω, state-rule root, {branch: CurveBranchState at α_k}) per converged ω
    results, rows, evaluations, curvature, tracker = {}, {}, 0, math.nan, None
    for omega in omegas:
        params = dataclasses.replace(base, omega=omega)  # ω validated above, with the other parameters
        omega_started, evaluations_before = time.perf_counter(), evaluations
        if not history:
            tracker = BranchTracker(params, nodes_per_dim)
            alpha = first_sign_change(crossing_functions(tracker, math.nan)[0], np.linspace(alpha_min, alpha_max, n_scan))
            if alpha is None:
                results[omega] = noisy_threshold(math.nan, math.nan, Status.FAILED,
                                                 f"no tensor-rule crossing on [{alpha_min:g}, {alpha_max:g}] to start from")
                rows[omega] = CurveRow(omega)
                continue
            starts = {b: (tracker.at(b, alpha), None) for b in BRANCHES}
        else:
            # extrapolation in ω through the last (up to) three converged ω: α_c(ω) is strongly curved
            # (1.63, 1.79, 1.98, 2.20 at ω = 0.379 ... 0.45), a linear prediction misses by ~0.04
            recent = history[-3:][::-1]
            controls = [w for w, _, _ in recent]
            alpha = float(extrapolate(controls, [a for _, a, _ in recent], omega))
            starts = {b: (replace(history[-1][2][b].solution, alpha=alpha,
                                  state=extrapolate(controls, [s[b].solution.state for _, _, s in recent], omega)),
                          history[-1][2][b].inverse) for b in BRANCHES}
        failure, solved, newton = None, {}, []
        for step_index in range(CURVE_NEWTON_STEPS):
            for b in BRANCHES:
                start, inverse = starts[b]
                fallback = replace(history[-1][2][b].solution, alpha=alpha) if history else None
                state = curve_branch_state(replace(start, alpha=alpha), inverse, fallback, params, state_rule)
                evaluations += state.evaluations
                if not np.isfinite(state.state_term):
                    failure = (f"{b} branch at α = {alpha:.5f} on {state_rule.label()}: {state.solution.status} "
                               f"({state.solution.message[:80]})")
                    break
                solved[b] = state
            if failure:
                break
            semantic, positional = solved["semantic"].solution, solved["positional"].solution
            newton.append(NewtonPoint(alpha, semantic.free_energy - positional.free_energy,
                                      positional.envelope - semantic.envelope))
            if len(newton) >= 2:
                curvature = abs(newton[-1].slope - newton[-2].slope) / abs(newton[-1].alpha - newton[-2].alpha)
            step = -newton[-1].delta / newton[-1].slope
            if abs(step) <= step_tol or step_index == CURVE_NEWTON_STEPS - 1:
                break
            alpha += step
            starts = {b: (solved[b].solution, solved[b].inverse) for b in BRANCHES}
        if failure:
            results[omega] = noisy_threshold(math.nan, math.nan, Status.FAILED, failure)
            rows[omega] = CurveRow(omega, tuple(newton))
            continue
        if not np.isfinite(curvature):  # first ω with a single Newton point: the tensor rule's curvature
            curvature = second_difference_bound(crossing_functions(tracker, math.nan)[0], alpha)
        last = newton[-1]
        row = CurveRow(omega, tuple(newton), alpha_k=last.alpha, delta_state_rule=last.delta, slope_state_rule=last.slope,
                       alpha_state_rule=last.alpha - last.delta / last.slope, curvature=curvature,
                       positional_m=abs(solved["positional"].solution.m),
                       semantic_theta=abs(solved["semantic"].solution.theta),
                       state_rule_term=abs(solved["semantic"].state_term) + abs(solved["positional"].state_term),
                       state_rule_residual=max(solved[b].solution.residual for b in BRANCHES))
        if len(history) % envelope_every == 0 or omega == omegas[-1]:
            accurate = {b: accurate_free_energy(solved[b].solution, solved[b].inverse, params, envelope_rules)
                        for b in BRANCHES}
            # the envelope rules' correction to the state rule's Δ_c and slope at α_k, and its error
            row = replace(row, correction=accurate["semantic"].free_energy - accurate["positional"].free_energy - last.delta,
                          slope_correction=accurate["positional"].envelope - accurate["semantic"].envelope - last.slope,
                          correction_error=accurate["semantic"].error + accurate["positional"].error,
                          envelope_values={f"{b}_{k}": getattr(accurate[b], k) for b in BRANCHES
                                           for k in ("free_energy", "error", "state_term")})
        rows[omega] = replace(row, seconds=time.perf_counter() - omega_started, evaluations=evaluations - evaluations_before)
        # the state-rule root predicts the next α (α_k lags it by up to step_tol, which a quadratic
        # extrapolation would amplify); the states, solved at α_k, only start the next solves
        history.append((omega, row.alpha_state_rule, solved))
    for omega, row in list(rows.items()):
        if omega not in results:
            results[omega], rows[omega] = corrected_threshold(row, rows, state_rule, envelope_rules)
    ascending = sorted(omegas)
    statuses = [results[w].status for w in ascending]
    converged = sum(s == Status.CONVERGED for s in statuses)
    return SplitLineCurve(tuple(ascending), tuple(results[w] for w in ascending), tuple(rows[w] for w in ascending),
                          state_rule.label(), tuple(r.label() for r in envelope_rules), time.perf_counter() - started,
                          evaluations, combined_status(*statuses), f"{converged} of {len(statuses)} values of ω converged")
