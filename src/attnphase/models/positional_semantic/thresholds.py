"""α_c (the free energies of the positional and semantic branches cross) and α_l (the semantic test error
crosses the linear baseline), each to a requested absolute tolerance, on the one ladder of rules.

1. Bracket, on the tensor rule: both branches are followed in α from their anchors (tensor_following.follow) over a
   scan of [alpha_min, alpha_max] (extended upwards while the crossing lies beyond it; a scan point where the
   tensor rule lacks a branch's fixed point, a hole, is moved up by HOLE_NUDGE); the first sign
   change of Δ_c = Φ_sem − Φ_pos and of Δ_l = ε_g,sem − ε_g^lin gives a start.
2. Newton on the first rung of the ladder (split-line, 8 outer nodes for L = 2): the branches carried there
   from the tensor rule, then re-solved at each Newton point from their previous fixed points. The slope of
   Δ_c is exact, dΔ_c/dα = E[M]_pos − E[M]_sem (dΦ/dα = −E[M] along a branch); that of Δ_l the secant
   of the rung's own values (the tensor bracket's at the first step).
3. The climb (numeric.convergence.climb): at the last Newton point α_0 the branches are carried up the
   ladder, and each rung's threshold is one Newton step from α_0 on that rung, α^(k) = α_0 − Δ^(k)/Δ'^(k).
   The reported value is the highest rung's, its error the spread of α^(k) over the last three rungs (with
   the tail of a one-way drift, numeric.convergence) plus the linearisation bound ½|Δ''| (α^(k) − α_0)² / |Δ'|;
   the climb stops when that is ≤ tol (status converged), or at the top rung (status limited, with the numbers).
   For L = 2 the ladder goes on from split-line 16 to the count-split rules 8 … 16 (rules) where the split-line
   rungs do not meet the tolerance (with the conjugates averaged by parts they meet 1e-3 for α_l at ω = 0 … 0.45).
   α_l's slope is the first rung's secant, so from the top rung's one-step value the secant on that rung itself
   is iterated (Δ_l evaluated again at each new value) until its step is below a tenth of the tolerance (or below
   the room the climb's error leaves under the tolerance, down to a hundredth of it); the last step is added to
   the error. Where split-line rungs meet the tolerance, α_l is checked against the first count-split rung's
   one-step value, and the step between the two joins the error (numeric.convergence, families: at ω = 0 the
   split-line 12 … 16 values spread by less than 6e-4 while the count-split roots lie up to 6.6e-4 above the
   top one).
   The same secant on the last split-line rung, before the count-split rungs,
   moves their centre from α_0 to its last point, with its slope: at ω = 0 α_0 lies 0.012 below the count-split
   roots, whose slopes differ from split-line 8's and from each other by 2-6 %, so one-step values from α_0
   scatter by 1.5e-3 where the rules' roots scatter by 1e-3 (docs/research, "α_l(0) on the count-split family").
4. α_c on a split-line ladder (L = 2): Φ of both branches on three outer-split rules (free_energy_check; then
   rules finer in χ_2, one at a time, while the error is above the tolerance), at
   the states of the first two rungs solved at α_0 (the climb of step 3 stops there: the error comes from this
   check). The split-line rules' Φ can be biased by more than their spread (α_c(0.1): 0.7513 ± 0.0002 on
   split-line 12-16, 0.75073 on the outer-split rules). The reported α_c is one Newton step from α_0 on the
   finest outer-split rule, its error the branches' Φ errors on the last three rules (spread plus drift tail plus
   the lines' own error, added) plus the state effect (Φ between the two rungs' states), over the slope, plus the
   linearisation bound; the split-line value stays in the message and the rungs.

Measured spreads (docs/models/positional_semantic.md): at ω = 0.3 the split-line rules 10-14 put Φ within
~2e-7 of the converged value, i.e. α_c within ~5e-4; at ω = 0 the plain rules oscillate by ±3.5e-7 in Φ
up to 16 outer nodes, so their α_c(0) is good to ~2e-3 only (the check of step 4, on rules up to
36 × 18, bounds it to 8e-4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from attnphase import progress
from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.accurate import AccurateState, on_rule
from attnphase.models.positional_semantic.tensor_following import follow
from attnphase.models.positional_semantic.free_energy_check import checked_alpha_c
from attnphase.models.positional_semantic.parameters import Parameters, ThresholdSearch, check_names
from attnphase.models.positional_semantic.point import linear_baseline
from attnphase.models.positional_semantic.results import RungThreshold, Thresholds, combined_status
from attnphase.models.positional_semantic.rules import SPREAD_RUNGS, below_window_floor, count_line_probes, resolve_rules
from attnphase.numeric.blas_threads import one_blas_thread
from attnphase.numeric.convergence import Rung, Tolerance, climb
from attnphase.numeric.threshold import noisy_threshold, root_steps
from attnphase.params import check_bool
from attnphase.results import Status
from attnphase.resume import computed_once, kept_directory

__all__ = ["SYMMETRIC_A", "THRESHOLD_TOL", "MEANING", "SCAN_STEP", "ALPHA_CEILING", "BRANCHES_OF", "Bracket", "bracket",
           "tensor_start", "refine", "threshold"]

# What the threshold searches require of A (Parameters.swap_symmetric; the branches need nothing).
SYMMETRIC_A = "a token-reversal symmetric A (thresholds are computed in the spec's symmetric setting)"
MEANING = {"alpha_c": {-1: "the positional branch has the lower training loss (Φ_pos > Φ_sem)",
                       1: "the semantic branch has the lower training loss (Φ_sem > Φ_pos)"},
           "alpha_l": {-1: "the semantic branch beats the linear baseline",
                       1: "the semantic branch does not beat the linear baseline"}}
# The tensor scan: spacing in α, and how far the range is extended (doubling) when the crossing lies above it.
SCAN_STEP = 0.25
ALPHA_CEILING = 8.0
# Where a scan point is a hole of the tensor rule (numeric.branches.FollowedBranch: no fixed point there, the branch
# solved on both sides), the scan takes the point this much above it instead.
HOLE_NUDGE = 0.1 * SCAN_STEP
# Newton on the first rung: stop when the step is below this fraction of the tolerance (or after the cap).
NEWTON_STEP_FRACTION = 0.1
# α_l's secant on the top rung adds its last step to the error: where the climb's error leaves less room than
# NEWTON_STEP_FRACTION · tol under the tolerance, the secant goes on to that room, down to this fraction.
SECANT_STEP_FLOOR = 0.01
NEWTON_MAX_STEPS = 6
# A root step whose end has no fixed point of a branch is halved back towards the last point up to this often
# (numeric.threshold.root_steps): at ω = 0.1 the tensor bracket's root, 0.622, lies 0.13 below α_c, and Newton with
# split-line 8's exact slope there steps to 0.915, where the semantic branch carried from 0.622 does not converge.
ROOT_STEP_HALVINGS = 3
NEWTON_RUNGS = 3
BRANCHES_OF = {"alpha_c": ("semantic", "positional"), "alpha_l": ("semantic",)}
# The default absolute tolerance of α_c and α_l (`--tol` of `threshold`; finer ones climb denser count-split rungs).
THRESHOLD_TOL = ThresholdSearch().tol


@dataclass(frozen=True)
class Bracket:
    """A sign change of a crossing function on the tensor scan: the α on either side, the values there, the
    branch solutions at both ends (by branch), and the linear interpolation of the root."""

    low: float
    high: float
    value_low: float
    value_high: float
    solutions: dict

    @property
    def root(self) -> float:
        return self.low - self.value_low * (self.high - self.low) / (self.value_high - self.value_low)

    @property
    def slope(self) -> float:
        return (self.value_high - self.value_low) / (self.high - self.low)


def _crossing(kind: str, solutions: dict, baseline: float) -> float:
    """Δ_c = Φ_sem − Φ_pos or Δ_l = ε_g,sem − ε_g^lin from branch solutions (NaN where one is missing)."""
    if any(solutions.get(b) is None for b in BRANCHES_OF[kind]):
        return math.nan
    if kind == "alpha_c":
        return solutions["semantic"].free_energy - solutions["positional"].free_energy
    return solutions["semantic"].test_error - baseline


def bracket(kind: str, paths: dict, baseline: float, alpha_min: float, alpha_max: float):
    """The first sign change of the crossing function `kind` on the tensor scan of [alpha_min, alpha_max]
    (extended upwards to ALPHA_CEILING while the function keeps the sign it has below the crossing);
    returns a Bracket, or the not_found / failed Threshold that explains why there is none."""
    branches = BRANCHES_OF[kind]
    for b in branches:  # a branch that exists at no α (numeric.branches.FollowedBranch `absent`): nothing to scan
        loss = paths[b].loss(alpha_min)
        if loss is not None and loss.criterion == "absent":
            return noisy_threshold(math.nan, math.nan, Status.NOT_FOUND, f"{b}: {loss.message}")
    below = -1 if kind == "alpha_c" else 1  # the sign of the crossing function below the threshold
    grid = list(np.arange(alpha_min, alpha_max, SCAN_STEP)) + [alpha_max]
    values, alphas, seen = [], [], {}
    k = 0
    while True:
        if k == len(grid):
            last = values[-1] if values else math.nan
            if not (np.isfinite(last) and np.sign(last) == below and grid[-1] < ALPHA_CEILING):
                break
            top = grid[-1]
            grid += [float(a) for a in np.arange(top + SCAN_STEP, min(2 * top, ALPHA_CEILING) + 1e-9, SCAN_STEP)]
        a = float(grid[k])
        k += 1
        if any(paths[b].at(a) is None and a in paths[b].holes for b in branches):
            a += HOLE_NUDGE  # the tensor rule lacks a branch's fixed point at this α alone: scan just past it
        solutions = {b: paths[b].at(a) for b in branches}
        seen[a] = solutions
        alphas.append(a)
        values.append(_crossing(kind, solutions, baseline))
        if len(values) >= 2 and np.isfinite(values[-1]) and np.isfinite(values[-2]) and \
                np.sign(values[-1]) != np.sign(values[-2]):
            return Bracket(alphas[-2], alphas[-1], values[-2], values[-1], {"low": seen[alphas[-2]], "high": solutions})
    finite = [(a, v) for a, v in zip(alphas, values) if np.isfinite(v)]
    missing = [a for a, v in zip(alphas, values) if not np.isfinite(v)]
    where = "; ".join(f"{b}: {paths[b].loss(missing[0]).message}" for b in branches
                      if missing and paths[b].loss(missing[0]) is not None)
    if not finite:
        return noisy_threshold(math.nan, math.nan, Status.FAILED, f"no scan point with every branch ({where})")
    signs = {int(np.sign(v)) for _, v in finite}
    closest = min(finite, key=lambda p: abs(p[1]))
    text = (f"{MEANING[kind].get(signs.pop() if len(signs) == 1 else 0, 'sign changes only across missing points')} "
            f"at every scanned α in [{finite[0][0]:g}, {finite[-1][0]:g}] where the branches exist; closest approach "
            f"{closest[1]:.3g} at α = {closest[0]:.4g}")
    if where:
        text += f"; {where}"
    return noisy_threshold(math.nan, math.nan, Status.NOT_FOUND, text)


def _carry(states: dict, params: Parameters, rule, alpha: float) -> dict | str:
    """Every branch of `states` (AccurateStates) at α on `rule`, each from its own state; a failure's text."""
    out = {}
    for b, state in states.items():
        moved = replace(state, solution=replace(state.solution, alpha=alpha))
        out[b] = on_rule(moved, params, rule)
        if not out[b].success:
            return f"{b} branch at α = {alpha:.5f} on {rule.label}: {out[b].solution.status} ({out[b].message})"
    return out


def _crossing_and_slope(kind: str, states: dict, baseline: float, slope: float | None) -> tuple[float, float]:
    solutions = {b: s.solution for b, s in states.items()}
    value = _crossing(kind, solutions, baseline)
    if kind == "alpha_c":
        return value, solutions["positional"].envelope - solutions["semantic"].envelope
    return value, slope


def _root_steps(kind: str, states: dict, alpha: float, rule, params: Parameters, baseline: float, slope: float | None,
                step_tol: float, known: tuple = ()) -> tuple[list, dict, str | None]:
    """numeric.threshold.root_steps on `rule` from α, the branches carried to each new α from the last states: Newton
    for α_c (its slope is exact), a secant for α_l. Returns its points and failure, and the branch states at the last
    point solved (`states` when none was)."""
    def evaluate(a):
        nonlocal states
        carried = _carry(states, params, rule, a)
        if isinstance(carried, str):
            return carried
        states = carried
        return _crossing_and_slope(kind, states, baseline, None)

    points, failure = root_steps(evaluate, alpha, step_tol, slope=slope, known=known, max_steps=NEWTON_MAX_STEPS,
                                 halvings=ROOT_STEP_HALVINGS)
    return points, states, failure


def tensor_start(kind: str, start: Bracket) -> tuple[dict, float, float | None]:
    """(AccurateStates of the branches at the bracket end nearer its root, the root, the slope hint) for `refine`."""
    states = {b: AccurateState(min((start.solutions["low"][b], start.solutions["high"][b]),
                                   key=lambda s: abs(s.alpha - start.root))) for b in BRANCHES_OF[kind]}
    return states, start.root, start.slope if kind == "alpha_l" else None


def refine(kind: str, states: dict, alpha: float, slope_hint: float | None, params: Parameters, baseline: float,
           ladder, tolerance: float, bracket: tuple[float, float] | None = None, outer_split_check: bool = True):
    """Steps 2-4 of the module docstring from branch states near the threshold (on any rule, e.g. the
    tensor bracket's, or the previous ω's first rung): (the Threshold, the per-rung rows, the branch states
    at the threshold on the reported rung, the first-rung states at the last Newton point).

    A failed Newton on the first rung (no fixed point found there: the split-line maps jump where a basin
    switch appears, and a coarse rule can lack a fixed point its neighbours have) is redone from the same
    start with the next rung as the first, up to the NEWTON_RUNGS-th, while SPREAD_RUNGS rungs remain; a
    failed rung in the climb is skipped (numeric.convergence.climb skip_failed). Both are named in the
    message."""
    failures = []
    # Newton runs on one of the first NEWTON_RUNGS rungs (split-line rules: a count-split rung costs 4-6×)
    for first in range(max(1, min(NEWTON_RUNGS, len(ladder) - SPREAD_RUNGS + 1))):
        found = _refine_on(kind, states, alpha, slope_hint, params, baseline, ladder[first:], tolerance, bracket,
                           outer_split_check)
        if found[0].status != Status.FAILED or found[1]:
            break
        failures.append(found[0].message)
    if failures and found[0].status != Status.FAILED:
        note = "; Newton first failed on " + "; ".join(failures)
        found = (replace(found[0], message=found[0].message + note), *found[1:])
    return found


def _refine_on(kind: str, states: dict, alpha: float, slope_hint: float | None, params: Parameters, baseline: float,
               ladder, tolerance: float, bracket: tuple[float, float] | None, outer_split_check: bool):
    """`refine` on one ladder (its first rung the Newton rung)."""
    first_rule = ladder[0]
    points, states, failure = _root_steps(kind, states, alpha, first_rule, params, baseline, slope_hint,
                                          NEWTON_STEP_FRACTION * tolerance)
    if failure is not None:
        return noisy_threshold(math.nan, math.nan, Status.FAILED, failure), (), None, None
    alpha_0, value_0, slope_0 = points[-1]
    if len(ladder) == 1:  # one rule: its Newton root, without a verified error
        return (noisy_threshold(float(alpha_0 - value_0 / slope_0), math.nan, Status.LIMITED,
                                f"{first_rule.label} only: no finer rule, no verified error", bracket, float(slope_0)),
                (RungThreshold(first_rule.label, float(alpha_0 - value_0 / slope_0), value_0, slope_0),), states, states)
    curvature = (abs(points[-1][2] - points[-2][2]) / abs(points[-1][0] - points[-2][0])
                 if len(points) >= 2 and kind == "alpha_c" else 0.0)

    # α_l: where the count-split rungs follow the split-line ones, a secant on the last split-line rung moves the
    # centre of the one-step values next to the roots (module docstring, step 3); by that rung's label
    recentred: dict[str, _Secant] = {}

    def on(rule, previous):
        below = previous.states if isinstance(previous, _RungAnswer) else previous
        centre, slope_hint = (previous.centre, previous.slope) if isinstance(previous, _RungAnswer) else (alpha_0, slope_0)
        if kind == "alpha_l" and rule.count and isinstance(previous, _RungAnswer) and previous.rule.startswith("split"):
            if previous.rule not in recentred:
                below_rule = next(r for r in ladder if r.label == previous.rule)
                recentred[previous.rule] = _secant_on_rung(previous, below_rule, params, baseline,
                                                               NEWTON_STEP_FRACTION * tolerance)
            found = recentred[previous.rule]
            if found.rows is not None:
                below, centre, slope_hint = found.states, found.solved_alpha, found.rows[-1].slope
        moved = below if rule is first_rule else _carry(below, params, rule, centre)
        if isinstance(moved, str):
            return _Failed(moved)
        value, slope = _crossing_and_slope(kind, moved, baseline, slope_hint)
        return _RungAnswer(moved, rule.label, centre - value / slope, value, slope, centre)

    # With the outer-split check (step 4) the error comes from the check, and the climb only has to provide the
    # states of two rungs (the second-order state effect is measured between them): any spread is accepted.
    check = outer_split_check and kind == "alpha_c" and params.L == 2 and all(r.split is not None for r in ladder)
    window = 2 if check else min(SPREAD_RUNGS, len(ladder))
    result = climb(on, [Rung(rule, rule.label, rule.family) for rule in ladder],
                   lambda answer: {"alpha": answer.alpha, "linearisation": 0.5 * curvature * (answer.alpha - answer.centre) ** 2
                                   / abs(answer.slope)},
                   tolerance={"alpha": Tolerance(atol=ALPHA_CEILING if check else tolerance)}, start=states,
                   report="refined", error="spread", window=window, skip_failed=True,
                   family_checked=() if check else ("alpha",))
    rows = tuple(RungThreshold(a.rule, a.alpha, a.value, a.slope) for a in result.answers if isinstance(a, _RungAnswer))
    rows += tuple(row for found in recentred.values() for row in (found.rows or ()))
    if not result.values:
        return noisy_threshold(math.nan, math.nan, result.status, result.message), rows, None, states
    value, error = result.values["alpha"], result.errors["alpha"] + result.values["linearisation"]
    status, slope = result.status, result.answer.slope
    newton = ", ".join(f"{a:.5f}" for a, _, _ in points)
    message = f"Newton on {first_rule.label} through α = {newton}; {result.message}"
    for label, found in recentred.items():
        message += (f"; the count-split rungs' one-step values from α = {found.solved_alpha:.5f}, the last point of a "
                    f"secant on {label}" if found.rows is not None else f"; {found.note}")
    top_rule = next(rule for rule in ladder if rule.label == result.answer.rule)
    if check:
        top = result.answer.states
        below = [a.states for a in result.answers[:-1] if isinstance(a, _RungAnswer)][-1:]
        value, error, slope, checked, note = checked_alpha_c(top, below, params, alpha_0, curvature, top_rule,
                                                             tolerance)
        rows += checked
        message = (f"Newton on {first_rule.label} through α = {newton}; on {result.rung} (states checked on "
                   f"{result.check}) α = {result.values['alpha']:.5f} ± {result.errors['alpha']:.2g}; reported: {note}")
    elif kind == "alpha_l" and abs(result.answer.alpha - result.answer.centre) > NEWTON_STEP_FRACTION * tolerance:
        room = tolerance - error
        step_tol = (max(room, SECANT_STEP_FLOOR * tolerance) if 0.0 <= room < NEWTON_STEP_FRACTION * tolerance
                    else NEWTON_STEP_FRACTION * tolerance)
        # the same secant as the count-split check's recentring on this rung, where that one ran to this step
        reused = recentred.get(top_rule.label) if step_tol == NEWTON_STEP_FRACTION * tolerance else None
        found = reused or _secant_on_rung(result.answer, top_rule, params, baseline, step_tol)
        value = found.value
        error += found.added
        message += f"; {found.note}"
        if found.rows is None:
            status = Status.LIMITED
        else:
            # a tighter secant after the recentring one repeats its first points (ω = 0.1: one row twice)
            rows += tuple(row for row in found.rows if row not in rows)
            slope = found.rows[-1].slope
    if kind == "alpha_l":  # ε_g's own quadrature error, which the rungs share, carried to α by the slope
        semantic = result.answer.states["semantic"].solution
        _, quadrature = top_rule.equations(params, semantic.alpha).test_error_estimate(semantic.state)
        error += quadrature / abs(slope)
    if status == Status.CONVERGED and error > tolerance:
        status = Status.LIMITED
    elif (status == Status.CONVERGED and any(rule.split is not None for rule in ladder)
          and (unverified := below_window_floor(kind, tolerance)) is not None):
        status, message = Status.LIMITED, f"{message}; {unverified}"
    if bracket is not None:
        message = f"tensor bracket [{bracket[0]:g}, {bracket[1]:g}]; {message}"
    return (noisy_threshold(float(value), float(error), status, message, bracket, float(slope)), rows,
            result.answer.states, states)


@dataclass(frozen=True)
class _Secant:
    """What `_secant_on_rung` found: the root and the error it adds, the rows of the secant points (None where a
    fixed point was not found), the last α solved on the rung with the branch states there, and the message."""

    value: float
    added: float
    rows: tuple | None
    solved_alpha: float
    states: dict
    note: str


def _secant_on_rung(answer: _RungAnswer, rule, params: Parameters, baseline: float, step_tol: float) -> _Secant:
    """α_l by secant steps on the rung of `answer` itself, from its centre and its one-step value; where a fixed point
    is not found, the one-step value with its whole move from the centre as the error (and rows None).

    The rungs' one-step values use a slope from another point or rung, which can be off by several per cent (ω = 0:
    the count-split one-step value 0.74760 moved to 0.74669 on the top rung's own secant), so Δ_l is evaluated
    again on the rung at each new value and the secant through its last two points gives the next, until
    the step is ≤ step_tol (at most NEWTON_MAX_STEPS); the last step is added to the error."""
    points, states, failure = _root_steps("alpha_l", answer.states, answer.alpha, rule, params, baseline, answer.slope,
                                          step_tol, known=((answer.centre, answer.value, answer.slope),))
    if failure is not None:
        # the one-step value stays; its slope error is unknown, so its whole move from the centre joins the error
        return _Secant(answer.alpha, abs(answer.alpha - answer.centre), None, points[-1][0], states,
                       f"no secant on {rule.label} ({failure}): the one-step value, its move from its centre added "
                       "to the error")
    rows = tuple(RungThreshold(f"{rule.label} (secant)", a - value / slope, value, slope)
                 for a, value, slope in points[1:])
    alpha, value, slope = points[-1]
    step = -value / slope
    through = ", ".join(f"{a:.5f}" for a, _, _ in points)
    return _Secant(alpha + step, abs(step), rows, alpha, states,
                   f"secant on {rule.label} through α = {through}: α = {alpha + step:.5f} (last step {step:.2g}, added "
                   f"to the error; the one-step value was {answer.alpha:.5f})")


@dataclass(frozen=True)
class _RungAnswer:
    """A rung's one-step value α = centre − value / slope, from Δ (`value`) at the branch `states` at `centre`."""

    states: dict
    rule: str
    alpha: float
    value: float
    slope: float
    centre: float
    success: bool = True


@dataclass(frozen=True)
class _Failed:
    message: str
    success: bool = False


@one_blas_thread()
def threshold(omega, sigma=0.5, lam=0.01, A=None, L=2, *, tol=1e-3, alpha_min=0.3, alpha_max=3.0,
              which=("alpha_c", "alpha_l"), rules="auto", outer_split_check=True, checkpoint_dir=None) -> Thresholds:
    """α_c(ω) and α_l(ω), each to the absolute tolerance `tol` in α (see the module docstring).

    which: the thresholds to compute. rules: "auto" (the model's ladder) or tensor node counts (a
    tensor-only ladder: its errors are not verified on a split-line rule, status limited for L = 2).
    outer_split_check: step 4 of the module docstring for α_c on a split-line ladder (L = 2); False reports
    the split-line value and spread (minutes faster per α_c on 2 cores, but see step 4).
    Status per threshold: converged (error ≤ tol), limited (the top rung's value, error above tol),
    not_found (no crossing where both branches exist in [alpha_min, ALPHA_CEILING]: the message says which
    side wins, the closest approach, where a branch ended, and a branch whose tensor fixed point at its anchor
    the first split-line rung lacks), failed.
    checkpoint_dir: where each threshold is kept as it is finished (resume.computed_once, under a directory named by
    the other arguments), so that after an interruption the same call reads it back (named in `read_back`); None
    keeps nothing.
    """
    params = Parameters.validated(omega=omega, sigma=sigma, lam=lam, A=A, L=L)
    search = ThresholdSearch.validated(tol=tol, alpha_min=alpha_min, alpha_max=alpha_max)
    which = tuple(check_names("which", which, ("alpha_c", "alpha_l"), "which"))
    if not which:
        raise ParameterError("which", which, "one or both of alpha_c, alpha_l")
    outer_split_check = check_bool("outer_split_check", outer_split_check)
    if not params.swap_symmetric:
        raise ParameterError("A", params.A, SYMMETRIC_A)
    ladder, nodes, verified = resolve_rules(params, rules, count_line_probes(search.tol, THRESHOLD_TOL))
    kept = None
    if checkpoint_dir is not None:  # everything a threshold's value depends on (each is kept on its own)
        kept = kept_directory(checkpoint_dir, "threshold", {
            "model": params, "tol": search.tol, "alpha_min": search.alpha_min, "alpha_max": search.alpha_max,
            "ladder": [rule.label for rule in ladder], "outer_split_check": outer_split_check})
    baseline = linear_baseline(params)
    paths = {b: follow(b, params, nodes, low=search.alpha_min, high=search.alpha_max) for b in ("positional", "semantic")}
    found, rows, states = {}, {}, {}
    searched = set()  # the thresholds this call computed (the others were read back from checkpoint_dir)
    absent_on_first_rung: dict[str, str | None] = {}  # branch -> why the first rung lacks it at its anchor

    def tensor_artefact(branch: str) -> str | None:
        """Why the first (split-line) rung has no fixed point of `branch` at its tensor anchor, None when it has one: a
        scan without a crossing then speaks of the tensor rule's fixed points, not of the branch (ω = 0.9: the tensor
        rule has a semantic fixed point at α = 3, split-line 8 has none)."""
        if branch not in absent_on_first_rung:
            path, why = paths[branch], None
            anchored = path.at(path.anchor)
            if anchored is not None and ladder[0].split is not None:
                carried = on_rule(AccurateState(anchored), params, ladder[0])
                if not carried.success:
                    why = (f"the {branch} fixed point of the tensor rule at its anchor α = {path.anchor:g} is not "
                           f"found on {ladder[0].label} ({carried.message})")
            absent_on_first_rung[branch] = why
        return absent_on_first_rung[branch]

    def search_for(name: str):
        """(the Threshold, its rungs, the branch states at it or None)."""
        searched.add(name)
        start = bracket(name, paths, baseline.value, search.alpha_min, search.alpha_max)
        if not isinstance(start, Bracket):
            if start.status == Status.NOT_FOUND:
                evidence = [why for b in BRANCHES_OF[name] if (why := tensor_artefact(b)) is not None]
                if evidence:
                    start = replace(start, message=f"{start.message}; " + "; ".join(evidence))
            return start, (), None
        value, rungs, at_value, _ = refine(name, *tensor_start(name, start), params, baseline.value, ladder,
                                           search.tol, (start.low, start.high), outer_split_check)
        if value.status in (Status.CONVERGED, Status.LIMITED) and not verified:
            value = replace(value, status=Status.LIMITED,
                            message=value.message + "; tensor rules only: not verified on a split-line rule")
        return value, rungs, at_value

    with progress.task(f"thresholds at ω = {params.omega:g}", total=len(which)) as bar:
        for name in which:
            if kept is None:
                found[name], rows[name], at_value = search_for(name)
            else:
                found[name], rows[name], at_value = computed_once(kept / f"{name}.json", lambda: search_for(name))
            if at_value is not None:
                states[name] = at_value
            bar.advance(name)
    missing = noisy_threshold(math.nan, math.nan, Status.NOT_REQUESTED, "not requested")
    alpha_c, alpha_l = found.get("alpha_c", missing), found.get("alpha_l", missing)
    status = combined_status(*(found[name].status for name in which))
    read_back = tuple(name for name in which if kept and name not in searched)
    message = "; ".join(f"{name}: {found[name].message}" for name in which)
    if read_back:
        message += f"; {', '.join(read_back)} read back from {kept} (finished by an earlier call with these arguments)"
    return Thresholds(alpha_c, alpha_l, baseline.value, search.tol, status, message, rows.get("alpha_c", ()),
                      rows.get("alpha_l", ()), states, read_back)
