"""A branch carried up the ladder of rules: its fixed point on each rung, and the verified errors.

The rules (models.positional_semantic.rules) are climbed with numeric.convergence.climb: the fixed point on
each rung is started from the rung below (its state and the inverse Jacobian its Broyden solve ended
with), so a finer rung costs a few map evaluations; every reported quantity is the top rung's value
with the spread over the last three rungs as its error.

Fixed points on a split-line rung are found by defect correction: Anderson mixing on the rung's map,
then Broyden's method preconditioned by a forward-difference Jacobian of the SAME map (at small ω the
tensor rules get ∂F_m/∂m wrong in sign: −1.25 on 10 nodes at ω = 0, α = 0.6 where the split-line map
has +0.9, so a tensor-preconditioned Newton heads for m = 0). A solve that collapses onto the invariant
set m = 0 or θ = 0 is retried once with the order parameter doubled, and never reported as the branch.

Where the branch is followed on the first split-line rule, and where it ends there: models.positional_semantic.following.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.branch_solve import solve_branch
from attnphase.models.positional_semantic.branches import COLLAPSE_LEVEL
from attnphase.models.positional_semantic.coordinates import BranchCoordinates
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution
from attnphase.models.positional_semantic.rules import SPREAD_RUNGS, Rule, window_bias
from attnphase.models.positional_semantic.state_evolution import SaddlePointEquations
from attnphase.numeric.convergence import LadderResult, Rung, Tolerance, climb
from attnphase.numeric.fixedpoint import Anderson, Broyden, Chain, LastEvaluation, solve_fixed_point
from attnphase.numeric.jacobian import forward_difference_jacobian, map_jacobian
from attnphase.results import Result, Status

__all__ = ["FIELDS", "RUNG_TOL", "RUNG_STEP_TOL", "AccurateState", "defect_correction", "tensor_inverse", "on_rule",
           "with_fresh_inverse", "climb_branch", "with_count_split_energy"]

# The quantities of a branch that carry a verified error.
FIELDS = ("q", "m", "theta", "V", "test_error", "train_loss", "free_energy")
# The fields whose error, where the split-line rungs meet the tolerance, includes the step to the first count-split
# rung (numeric.convergence, families), and the only ones the count-split rungs measure: Φ and ε_t keep the values
# and errors of the split-line rungs. The split-line family converges to the state from one side with an
# oscillation on top: at ω = 0.3, α = 1.25 the semantic V on split-line 8 … 16 is 18.3168, 18.3129, 18.3139, 18.3162,
# 18.3180 against 18.3212 ± 0.0002 on count-split 12 … 16, so the spread over 8, 10, 12 (0.0039) is half the error of
# split-line 12 (0.0073); count-split 8 gives 18.3206. Φ (and ε_t = −Φ) is stationary in the state and depends on the
# rule through E[M], which the count-split rules do not integrate to Φ's accuracy (their panels are set for the
# hats: the positional Φ on count-split 8 is 1.2e-6 from the reference, on split-line 16 1.8e-9; on count-split 12,
# 14, 16 the positional Φ at ω = 0.3, α = 2.5 still drifts one way, with no bound). The state moves from the
# split-line to the count-split rungs by ~1e-3 relative, which moves Φ only at second order.
FAMILY_CHECKED = ("q", "m", "theta", "V", "test_error")
# Relative residual of a rung's fixed point: the fields need ~1e-4 relative (their tolerance is 3e-3,
# the rung differences ~1e-3), Φ enters at second order.
RUNG_TOL = 1e-6
# ... or converged when the next Broyden step is at most this, relative: the state is then within about this of the
# rung's fixed point, at most 5 % of the smallest relative error a default solve reports (6e-4, the semantic V) and 1 %
# of the field tolerance. The residual criterion alone took a third evaluation on most rungs: after one step from the
# rung below the residual is 1e-6 … 7e-5 with a predicted step of 2e-6 … 1.2e-4 (ω = 0.3, α = 1.25).
RUNG_STEP_TOL = 3e-5
RUNG_MAX_ITER = 10
ANDERSON_MAX_ITER = 40
# When a defect correction collapses onto the trivial set (or stalls or diverges) it is retried once with
# the order parameter (|m| positional, c semantic) scaled by this factor: at small ω the tensor rules put
# the positional |m| at about half its converged value (ω = 0: 0.07 vs 0.152; ω = 0.05, α = 0.68: 0.076 vs
# 0.170), and from there both Anderson and Broyden can fall to m = 0.
RETRY_ORDER_SCALE = 2.0


@dataclass(frozen=True)
class AccurateState(Result):
    """A branch's fixed point on one rule, and the inverse Jacobian of F − I (reduced coordinates) its
    Broyden solve ended with: the warm start of the next rung or the next control. Status and message
    are the solution's."""

    solution: BranchSolution
    inverse: np.ndarray | None = field(default=None, repr=False)
    rule: str = ""

    @property
    def status(self) -> Status:
        return self.solution.status

    @property
    def message(self) -> str:
        return self.solution.message


def _collapsed(coords: BranchCoordinates, y) -> bool:
    """On the trivial set (or, for the mixed branch, on a pure one): m = 0 and θ = 0 are invariant, so a
    solver can converge there from a start on the branch (seen: Anderson at ω = 0.05, α = 0.68, positional
    m 0.17 -> 0)."""
    x = coords.to_state(y)
    sizes = ([abs(x[2])] if coords.has_c else []) + ([float(np.abs(x[3:]).max())] if coords.has_m else [])
    return bool(sizes) and min(sizes) < COLLAPSE_LEVEL


def defect_correction(solution: BranchSolution, params: Parameters, rule: Rule, *, tol: float = RUNG_TOL,
                      step_tol: float | None = RUNG_STEP_TOL, max_iter: int = RUNG_MAX_ITER, inverse=None,
                      anderson: bool = True) -> AccurateState:
    """The fixed point of the map on the split-line `rule` near `solution` (any rule's), at solution.alpha.

    Solves G(y) = F(y) − y = 0 in the branch's reduced coordinates: Anderson mixing first (damping 0.5,
    ≤ ANDERSON_MAX_ITER evaluations; skipped when `inverse` is given, i.e. from a neighbouring solution on
    the same or the previous rung, or with anderson=False), then Broyden's method (numeric.fixedpoint.Broyden:
    the inverse of J − I from `inverse` or from forward differences of this map, steps capped at a quarter
    of each coordinate and kept inside q, V > 0, |c| < 1). Converged when max_j |F_j − y_j| / max(|y_j|,
    1e-3) ≤ tol, or when Broyden's next predicted step is ≤ step_tol in that measure (None: the residual alone);
    lost when it converged onto the trivial set. anderson=False also finds unstable fixed points (Broyden
    converges to the fixed point near its start whatever its stability).
    """
    coords = BranchCoordinates(solution.branch, params)
    equations = rule.equations(params, solution.alpha)
    evaluate = LastEvaluation(equations.evaluate)  # the solver's last F(x) and Φ there share one evaluation
    broyden = Broyden(max_iter=max_iter, step_tol=step_tol,
                      inverse=None if inverse is None else np.array(inverse, float))
    solver = broyden
    if anderson and inverse is None:
        solver = Chain(Anderson(damping=0.5, max_iter=ANDERSON_MAX_ITER), broyden, polish=True,
                       usable=lambda y: not _collapsed(coords, y))
    result = solve_fixed_point(coords.restricted_map(lambda x: evaluate(x).next), coords.from_state(solution.state),
                               solver, transforms=coords.transforms, tol=tol, spectrum=False)
    y = np.asarray(result.value, float)
    status, note = result.status, ""
    if status == Status.CONVERGED and _collapsed(coords, y):
        status, note = Status.LOST, "; collapsed onto the trivial set"
    x = coords.to_state(y)
    converged = status == Status.CONVERGED
    envelope = phi = test_error = math.nan
    if converged:
        evaluation = evaluate(x)  # the last map evaluation, at this x
        phi, envelope, test_error = equations.free_energy(x, evaluation), evaluation.envelope, equations.test_error(x)
    L = params.L
    refined = replace(
        solution, q=float(x[0]), m=float(x[3]) if L == 2 else float(np.linalg.norm(x[3:3 + L]) / math.sqrt(L)),
        theta=float(x[2]), V=float(x[1]), free_energy=phi, train_loss=-phi, test_error=test_error, status=status,
        message=f"fixed point on {rule.label}: residual {result.residual:.2g}{note}", evaluations=result.evaluations,
        residual=result.residual, state=x, envelope=envelope)
    return AccurateState(refined, result.inverse_jacobian, rule.label)


def _retry_start(solution: BranchSolution, params: Parameters) -> BranchSolution:
    x = np.array(solution.state, float)
    if solution.branch == "positional":
        x[3:] *= RETRY_ORDER_SCALE
    else:
        x[2] *= min(RETRY_ORDER_SCALE, 0.9 * math.sqrt(params.rho * x[0]) / max(abs(x[2]), 1e-300))
    return replace(solution, state=x)


def tensor_inverse(solution: BranchSolution, params: Parameters) -> np.ndarray | None:
    """(J − I)⁻¹ of the branch's map on the tensor rule it was solved on, at its fixed point (reduced
    coordinates, central differences of the global map): a cheap first preconditioner for the split-line
    rules, right where the tensor rule is (ω ≳ 0.2); at small ω its m-derivative has the wrong sign, the
    Broyden solve then collapses or stalls, and `on_rule` falls back to Anderson."""
    coords = BranchCoordinates(solution.branch, params)
    equations = SaddlePointEquations(params, solution.alpha, solution.nodes_per_dim)
    try:
        J, _ = map_jacobian(coords.restricted_map(equations), coords.from_state(solution.state))
        return np.linalg.inv(J - np.eye(len(J)))
    except (np.linalg.LinAlgError, ParameterError):
        return None


def on_rule(previous: AccurateState, params: Parameters, rule: Rule, *, tol: float = RUNG_TOL,
            step_tol: float | None = RUNG_STEP_TOL, anderson: bool = True) -> AccurateState:
    """The branch of `previous` (a fixed point on another rule, or at another α or ω) on `rule`.

    Split-line rules, in order until one converges on the branch: Broyden from previous's state with its
    inverse Jacobian (or, from a tensor-rule solution, the tensor map's: `tensor_inverse`); Broyden with a
    fresh forward-difference Jacobian of this rule's map; from a tensor-rule solution only (where the start
    can be far: the positional m at small ω), Anderson then Broyden (`anderson`), and that again with the
    order parameter scaled by RETRY_ORDER_SCALE. Tensor rules (the L ≥ 3 ladder): `solve_branch` from
    previous's state. tol, step_tol: `defect_correction`'s.
    """
    solution = previous.solution
    if rule.split is None:
        coords = BranchCoordinates(solution.branch, params)
        solved = solve_branch(solution.branch, solution.alpha, params, nodes_per_dim=rule.nodes,
                              guess=coords.from_state(solution.state), stability=False)
        return AccurateState(solved, None, rule.label)
    from_tensor = previous.inverse is None
    inverse = tensor_inverse(solution, params) if from_tensor else previous.inverse
    attempts = ([dict(inverse=inverse, anderson=False)] if inverse is not None else []) + [dict(anderson=False)]
    if from_tensor and anderson:
        attempts += [dict(anderson=True)] + (
            [dict(anderson=True, retry=True)] if solution.branch in ("positional", "semantic") else [])
    first = None
    for attempt in attempts:
        start = _retry_start(solution, params) if attempt.pop("retry", False) else solution
        state = defect_correction(start, params, rule, tol=tol, step_tol=step_tol, max_iter=RUNG_MAX_ITER, **attempt)
        if state.success:
            if first is not None:
                note = f" (after a retry: first attempt {first.solution.status})"
                state = replace(state, solution=replace(state.solution, message=state.solution.message + note))
            return state
        first = first or state
    return first


def with_fresh_inverse(state: AccurateState, params: Parameters, rule: Rule) -> AccurateState:
    """`state` (a fixed point on `rule`) with the inverse of J − I from forward differences of that rule's map at
    it (numeric.jacobian.forward_difference_jacobian, n + 1 evaluations): the inverse a Broyden solve ends
    with after steps in α is the path's, and the rungs above started from it took one more evaluation each
    (at ω = 0.3, α = 1.25: 4 instead of 3 on count-split 8 and 10, 11 s each at 10); kept when the
    differences fail."""
    coords = BranchCoordinates(state.solution.branch, params)
    F = coords.restricted_map(rule.equations(params, state.solution.alpha))
    y = coords.from_state(state.solution.state)
    try:
        J = forward_difference_jacobian(F, y, F(y))
        inverse = np.linalg.inv(J - np.eye(len(y)))
    except (np.linalg.LinAlgError, ParameterError):
        return state
    return replace(state, inverse=inverse) if np.all(np.isfinite(inverse)) else state


def climb_branch(start: AccurateState | None, params: Parameters, rules: tuple[Rule, ...],
                 tolerance: Tolerance | dict | None, *, anderson: bool = True,
                 first: AccurateState | None = None, carry=None) -> LadderResult:
    """The branch of `start` carried up `rules` until every field of FIELDS meets `tolerance`.

    Each rung starts from the rung below: `on_rule`, or carry(rule, previous) -> AccurateState where given (previous
    None on the first rung; e.g. through |m| next to the positional branch's end, branch_end.next_to_end). The values
    reported are the highest rung's, each with the spread over the last SPREAD_RUNGS rungs as its error
    (numeric.convergence.climb, report "refined", error "spread"; a rung below the top on which the fixed point is not
    found is skipped and named), or, where the top rung leaves the tolerance unmet (limited), over every rung of its
    family (`widen_limited`: the count-split rules scatter without a trend, and count-split 20 and 24 lay outside
    the window's spread of 12, 14, 16); where split-line rungs meet the tolerance, the errors of FAMILY_CHECKED include the
    step to the first count-split rung, and Φ and ε_t are the split-line rungs' (count-split rungs measure
    FAMILY_CHECKED alone). Status converged, limited (the top rung does not meet the tolerance, or the top rung failed
    above a checked triple: the last checked values are reported) or failed. first: the branch already solved on
    rules[0] (e.g. followed there), which is then not solved again.
    """
    families = {rule.label: rule.family for rule in rules}

    def measure(state: AccurateState) -> dict[str, float]:
        names = FAMILY_CHECKED if families.get(state.rule) == "count-split" else FIELDS
        return {name: abs(getattr(state.solution, name)) if name in ("m", "theta") else getattr(state.solution, name)
                for name in names}

    if carry is None:
        def carry(rule, previous):
            return on_rule(previous, params, rule, anderson=anderson)

    if len(rules) == 1:  # one rule: its values, without a verified error
        state = first or carry(rules[0], start)
        if not state.success:
            return LadderResult({}, {}, Status.FAILED, f"{rules[0].label}: {state.message}", rules[0].label, None,
                                state, (state,))
        return LadderResult(measure(state), {name: math.nan for name in FIELDS}, Status.LIMITED,
                            f"{rules[0].label} only: no finer rule, no verified error", rules[0].label, "", state,
                            (state,))
    ladder = climb(carry, [Rung(rule, rule.label, rule.family) for rule in rules], measure, tolerance=tolerance,
                   start=start, first=first, report="refined", error="spread", window=min(SPREAD_RUNGS, len(rules)),
                   skip_failed=True, family_checked=FAMILY_CHECKED, widen_limited=True)
    ladder = with_test_error_quadrature(ladder, params, rules, tolerance)
    return with_window_bias(with_count_split_energy(ladder, rules), rules, tolerance)


def with_count_split_energy(ladder: LadderResult, rules: tuple[Rule, ...]) -> LadderResult:
    """A limited ladder (a field's tolerance unmet on the top rung) with the distance between Φ on the split-line rungs
    (the value reported) and Φ at the top count-split rung's fixed point added to the errors of Φ and ε_t.

    Φ keeps the split-line rungs' value and spread (FAMILY_CHECKED), which covers it where the fields settle; where they
    have not, the split-line rules can share a bias in Φ that their spread does not show. Measured at ω = 0.07,
    α = 1.13, the positional branch next to its end (limited: m's error 0.021): Φ on split-line 16 is 1.1e-6 from an
    independent converged solve of the spec's equations (−0.0031067551 ± 3e-9, scrambled Sobol points; audit e14) with
    a spread of 6.4e-7, at its own fixed point and at the count-split one alike (so not through the state), while
    count-split 16 is 1.4e-7 from it. Where every field meets the tolerance the count-split Φ is the less accurate
    one (at ω = 0.3, α = 1.25 the positional Φ on count-split 8 is 1.2e-6 off, on split-line 16 1.8e-9), so the
    converged errors are left alone."""
    if ladder.status != Status.LIMITED or "free_energy" not in ladder.values:
        return ladder
    families = {rule.label: rule.family for rule in rules}
    count_split = [a for a in ladder.answers if families.get(a.rule) == "count-split" and a.success
                   and math.isfinite(a.solution.free_energy)]
    if not count_split:
        return ladder
    gap = abs(count_split[-1].solution.free_energy - ladder.values["free_energy"])
    errors = dict(ladder.errors, free_energy=ladder.errors["free_energy"] + gap,
                  train_loss=ladder.errors["train_loss"] + gap)
    message = (f"{ladder.message}; Φ at the {count_split[-1].rule} fixed point is {gap:.2g} from the split-line value, "
               "which joins the errors of Φ and ε_t")
    return replace(ladder, errors=errors, message=message)


def with_window_bias(ladder: LadderResult, rules: tuple[Rule, ...], tolerance: Tolerance | dict | None) -> LadderResult:
    """The ladder with the window bias of the reported rung (`rules.window_bias`, relative) added to the errors of
    FAMILY_CHECKED. Status limited where that takes an error above its tolerance."""
    if not ladder.values or ladder.rung is None:
        return ladder
    bias = window_bias(next(r for r in rules if r.label == ladder.rung))
    if bias == 0.0:
        return ladder
    errors = dict(ladder.errors)
    for name in FAMILY_CHECKED:
        if name in errors:
            errors[name] += bias * abs(ladder.values[name])
    broken = [name for name in FAMILY_CHECKED if name in errors and not _allowed(tolerance, name, errors[name],
                                                                                  ladder.values[name])]
    status, message = ladder.status, ladder.message
    if status == Status.CONVERGED and broken:
        status = Status.LIMITED
        message = (f"{message}; with the bias of windows the lines' probes miss ({bias:.2g} relative) the errors of "
                   f"{', '.join(broken)} are above their tolerance")
    return replace(ladder, errors=errors, status=status, message=message)


def _allowed(tolerance: Tolerance | dict | None, name: str, error: float, value: float) -> bool:
    bound = tolerance.get(name) if isinstance(tolerance, dict) else tolerance
    return bound is None or bound.allows(error, value)


def with_test_error_quadrature(ladder: LadderResult, params: Parameters, rules: tuple[Rule, ...],
                               tolerance: Tolerance | dict | None) -> LadderResult:
    """The ladder with the error of ε_g's own quadrature at the reported state added to ε_g's: the spread over the
    rungs does not see it, every rung integrating ε_g on the same tensor rules (`SaddlePointEquations.
    test_error_estimate`). Status limited where that takes ε_g's error above its tolerance."""
    if not ladder.values or "test_error" not in ladder.errors:
        return ladder
    solution = ladder.answer.solution
    rule = next(r for r in rules if r.label == ladder.rung)
    _, quadrature = rule.equations(params, solution.alpha).test_error_estimate(solution.state)
    errors = dict(ladder.errors, test_error=ladder.errors["test_error"] + quadrature)
    status, message = ladder.status, ladder.message
    if status == Status.CONVERGED and not _allowed(tolerance, "test_error", errors["test_error"],
                                                   ladder.values["test_error"]):
        status = Status.LIMITED
        message = f"{message}; the error of ε_g's quadrature, {quadrature:.2g}, is above its tolerance"
    return replace(ladder, errors=errors, status=status, message=message)
