"""Following a branch of solutions in a control parameter c: warm starts, and where the branch is lost.

A branch is a family of solutions x*(c) (fixed points, minimisers, ...) produced by a `solve(c, guess)`
callable; this module decides where each solve starts and when the branch has ended. It knows nothing
about how a solution is computed.

* `extrapolate(controls, states, target)`: the predictor, the polynomial through known states
  evaluated at a new control (linear through two, quadratic through three).
* `WarmStarts`: solutions at arbitrary controls, each solved from the prediction of the two solved
  controls nearest to it (a cache: the same control is solved once); optionally seeded by another
  family (e.g. the same branch on a coarser rule, or at a neighbouring value of another parameter).
* `follow_until_lost`: continuation from a start control towards a stop control in fixed steps; at
  the first control where a caller-supplied criterion says the branch is lost (not converged,
  collapsed, jumped onto another solution, unstable, ...), the loss is bracketed and bisected to a
  tolerance. Returns a `BranchLoss` with the bracket, its midpoint and the criterion that fired.
* `FollowedBranch`: a branch as the set of solutions reachable from an anchor control, extended on demand
  in adaptive steps (halved where the criterion fires, down to a minimum step, where the loss is
  recorded): `at(c)` is the branch at c, or None with `loss(c)` saying where and why it was lost on the
  way from the anchor. A solution at a control is never taken from a cold start there, so another
  solution of the same equations cannot pass for the branch. It is a mutable cache: the path solved so far
  is kept and extended by later requests.

Natural-parameter following only: a branch that turns back in c (a fold) is lost there. Pseudo-arclength
continuation, which follows a branch through its folds, is `numeric.continuation`.

A converged solve can land on another branch when two branches come close: the prediction is handed to
the loss criterion, which can compare the solution with it (a "jump").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import check_positive, check_real
from attnphase.results import Result, Status

__all__ = ["BEYOND_STEPS", "extrapolate", "WarmStarts", "BranchLoss", "follow_until_lost", "FollowedBranch"]

# How far past a requested control that has no solution `FollowedBranch.at` looks (in minimum steps, and never
# further than the step that failed): a short step, so that the extrapolation still judges a jump.
BEYOND_STEPS = 4


def extrapolate(controls: Sequence[float], states: Sequence, target: float):
    """The polynomial through (controls[k], states[k]) at `target`, in Newton's form about controls[0].

    p(t) = s_0 + Σ_k (f[c_0..c_{k−1}] − f[c_1..c_k]) Π_{j<k}(t − c_j) / (c_0 − c_k) with the divided
    differences f[...]; with two points s_0 + (s_0 − s_1)(t − c_0)/(c_0 − c_1). Put the nearest known
    control first: the expansion is then exact at it and its rounding smallest near it. States may be
    numbers or arrays (extrapolated elementwise); the controls must be distinct.
    """
    c = [float(v) for v in controls]
    if not c or len(c) != len(states) or len(set(c)) != len(c):
        raise ParameterError("controls", controls, "distinct controls, one per state")
    values = [np.asarray(s, dtype=float) for s in states]
    if len(c) == 1:
        return values[0].copy()
    result = values[0].copy()
    # differences[i] = f[c_i .. c_{i+k-1}] for the order k reached so far
    differences = values
    product = 1.0
    for k in range(1, len(c)):
        numerators = [differences[i] - differences[i + 1] for i in range(len(differences) - 1)]
        product = product * (target - c[k - 1])
        result = result + numerators[0] * product / (c[0] - c[k])
        differences = [numerators[i] / (c[i] - c[i + k]) for i in range(len(numerators))]
    return result


class WarmStarts:
    """Solutions of one branch at any control, each started from a prediction out of solved neighbours.

    solve(control, guess) -> solution (guess None: the solver's own start); state(solution) -> the
    array a guess is made of; usable(solution) -> whether it may seed others (e.g. converged);
    contains(guess) -> whether an extrapolated guess lies in the solver's domain (else the nearest
    solved state is used as it is); seed: another WarmStarts whose solutions are used while this one
    has none of its own (e.g. the same branch on a coarser quadrature rule).

    `at(c)` solves at c once (the solutions are kept in `solved`, by control), started from the linear
    extrapolation of the two usable solved controls nearest to c, or from the nearest one alone.
    """

    def __init__(self, solve: Callable[[float, Any], Any], state: Callable[[Any], np.ndarray],
                 usable: Callable[[Any], bool], *, contains: Callable[[np.ndarray], bool] | None = None,
                 seed: WarmStarts | None = None):
        self.solve, self.state, self.usable, self.contains, self.seed = solve, state, usable, contains, seed
        self.solved: dict[float, Any] = {}

    def guess(self, control: float):
        """The start `at(control)` would use (None without a usable solved control)."""
        known = self.solved
        if not known and self.seed is not None:
            known = self.seed.solved
        usable = sorted((c for c, s in known.items() if self.usable(s)), key=lambda c: abs(c - control))
        if len(usable) >= 2 and abs(usable[0] - usable[1]) > 1e-9:
            # a closer start saves iterations
            guess = extrapolate(usable[:2], [self.state(known[c]) for c in usable[:2]], control)
            if self.contains is None or self.contains(guess):
                return guess
            return self.state(known[usable[0]])
        if usable:
            return self.state(known[usable[0]])
        return None

    def at(self, control: float):
        """The solution at `control` (solved on the first request)."""
        if control not in self.solved:
            self.solved[control] = self.solve(control, self.guess(control))
        return self.solved[control]


@dataclass(frozen=True)
class BranchLoss(Result):
    """Where a followed branch is lost (`follow_until_lost`).

    value: the midpoint of the final bracket; error: half its width; bracket: (last control where the
    branch was alive, first control where it was lost); criterion: what the loss criterion returned
    there; status: converged (the loss located) | not_found (alive over the whole range; value NaN,
    bracket = the range) | failed (no solution at the start, or at a hole inside a FollowedBranch's path: the
    bracket is then the hole's solved neighbours); last_state: the state at the alive end (a warm start for a
    repeat on another rule). A `FollowedBranch` reports the same: converged where the branch was lost (or is
    absent altogether), failed where no solution was found at its anchor or at a hole.
    """

    value: float
    error: float
    status: Status
    message: str
    bracket: tuple[float, float] | None
    criterion: str | None
    last_state: np.ndarray | None = field(default=None, repr=False)


def follow_until_lost(solve: Callable[[float, Any], Any], lost: Callable[[Any, Any], str | None],
                      state: Callable[[Any], np.ndarray], start: float, stop: float, step: float, tol: float, *,
                      start_guess=None, contains: Callable[[np.ndarray], bool] | None = None,
                      name: str = "c") -> BranchLoss:
    """Continue a branch from `start` towards `stop` in steps of `step`, then bisect the first loss to `tol`.

    solve(control, guess) -> solution; lost(solution, prediction) -> None while the solution is still
    the branch, else a word saying why not (prediction: the extrapolated state, None until two points
    are known, as a single point says nothing about the branch's slope); state(solution) -> its state
    array. Each solve starts from the linear extrapolation of the last two alive states (the last one
    alone when the extrapolation leaves `contains`, `start_guess` at the start). Bisection keeps the
    bracket (alive, lost) and halves it until its width is ≤ tol, each new point started from the
    alive end's extrapolation. `name` is the control's name in the messages.
    """
    start, stop = check_real("start", start), check_real("stop", stop)
    step, tol = check_positive("step", step), check_positive("tol", tol)
    direction = 1.0 if stop > start else -1.0
    alive: list[tuple[float, np.ndarray]] = []  # (control, state), in the order reached

    def predict(control):
        if not alive:
            return None if start_guess is None else np.asarray(start_guess, float)
        if len(alive) == 1:
            return alive[-1][1]
        (c0, y0), (c1, y1) = alive[-2], alive[-1]
        guess = extrapolate([c1, c0], [y1, y0], control)
        return guess if contains is None or contains(guess) else y1

    def attempt(control):
        prediction = predict(control)
        solution = solve(control, prediction)
        return solution, lost(solution, prediction if len(alive) >= 2 else None)

    solution, reason = attempt(start)
    if reason is not None:
        message = getattr(solution, "message", "")
        return BranchLoss(math.nan, math.nan, Status.FAILED, f"no solution at the start {name} = {start:g}: {reason}"
                          + (f" ({message})" if message else ""), None, reason)
    alive.append((start, state(solution)))
    control, loss = start, None
    while loss is None and direction * (stop - control) > 1e-12:
        control = start + direction * min(abs(stop - start), abs(control - start) + step)
        solution, reason = attempt(control)
        if reason is None:
            alive.append((control, state(solution)))
        else:
            loss = (control, reason)
    low, high = min(start, stop), max(start, stop)
    if loss is None:
        return BranchLoss(math.nan, math.nan, Status.NOT_FOUND,
                          f"alive over {name} in [{low:g}, {high:g}] in steps of {step:g}", (low, high), None,
                          alive[-1][1])
    lost_at, criterion = loss
    while abs(lost_at - alive[-1][0]) > tol:
        middle = 0.5 * (lost_at + alive[-1][0])
        solution, reason = attempt(middle)
        if reason is None:
            alive.append((middle, state(solution)))
        else:
            lost_at, criterion = middle, reason
    last_alive = alive[-1][0]
    return BranchLoss(0.5 * (last_alive + lost_at), abs(lost_at - last_alive) / 2, Status.CONVERGED,
                      f"alive at {name} = {last_alive:.5g}, lost at {lost_at:.5g} ({criterion})",
                      (last_alive, lost_at), criterion, alive[-1][1])


class FollowedBranch:
    """A branch followed from an anchor: every solution is reached by steps from the anchor's.

    Unlike the layer's solvers (small immutable values), a FollowedBranch is a mutable cache that extends on
    demand: `at(c)` adds the solutions on the way to c to `path`, and records where the branch ended (`losses`),
    its holes (`holes`) and the solves spent (`solves`). A scan over controls, or a later rule seeded from the
    path, then reuses what earlier requests solved instead of following the branch from the anchor again;
    an immutable value would have to hand back a new path with every answer, and each caller thread it through.

    solve(control, guess, previous) -> solution: a solve at `control` started from `guess` (the
    extrapolation of the two nearest solutions on the path, or the nearest alone; `anchor_guess` at the
    anchor), `previous` being the path's solution nearest to it (e.g. to carry an inverse Jacobian);
    lost(solution, prediction) -> None while the solution is the branch, else a word saying why not
    (prediction: the extrapolated state, None when fewer than two points are known); state(solution) ->
    its state array; contains(guess) -> whether an extrapolated guess lies in the solver's domain.

    `at(c)` extends the path from the anchor towards c: each step at most `max_step`, grown by half after a
    success and halved after a loss; a loss with a step below `min_step` ends the branch on that side
    (`loss(c)`: a BranchLoss whose bracket is (last control alive, first control lost)). A control inside
    the path already reached is solved from its neighbours on the path (their extrapolation, then the nearer
    one's state); where both fail it is a hole, not the branch's end: the path goes on beyond it, so only that
    control has no solution (`loss(c)`: status failed, bracket = its neighbours). A quadrature rule whose map
    jumps where a node's minimiser switches basins can lack the branch's fixed point at a single control
    (tensor 10, ω = 0.45: at α = 1.3, not at 1.28 or 1.35); stepping towards it from one side cost minutes
    there and ended the branch at the hole. The requested control itself can be such a hole: where the step
    onto it first fails, one short step beyond it (BEYOND_STEPS minimum steps) is tried, and when the branch is
    there the control is treated as inside the path; a failed solve at the control is not repeated from the same path
    points while the halved steps still reach it. Solutions are kept (`path`), so a scan over controls
    costs one solve per new control plus the steps between.

    absent: why the branch cannot exist for this problem at all (an exact property, e.g. an order parameter
    whose conjugate vanishes identically); then nothing is solved and `loss(c)` at every control is that reason
    (status converged: the loss is established, criterion "absent", no bracket). A failed anchor solve, by
    contrast, is status failed: it proves nothing either way, unless `lost` judges its solution "absent" at every
    anchor tried (evidence of absence the caller has, e.g. the branch carried there from where it exists ended on
    the way): the loss is then established too.

    fallback_anchors: controls tried in turn (from `anchor_guess`) when the solve at `anchor` fails; the first
    that succeeds becomes the anchor (`anchor` then names it). E.g. an anchor moved to the end of a requested
    range, with the usual anchor as the fallback where a cold start at the range's end finds nothing.
    """

    def __init__(self, solve: Callable[[float, Any, Any], Any], lost: Callable[[Any, Any], str | None],
                 state: Callable[[Any], np.ndarray], anchor: float, *, max_step: float, min_step: float,
                 anchor_guess=None, contains: Callable[[np.ndarray], bool] | None = None, name: str = "c",
                 absent: str | None = None, fallback_anchors: Sequence[float] = ()):
        self.solve, self.lost, self.state, self.contains = solve, lost, state, contains
        self.anchor = check_real("anchor", anchor)
        self.fallback_anchors = [check_real("fallback_anchors", c) for c in fallback_anchors if c != self.anchor]
        self.max_step = check_positive("max_step", max_step)
        self.min_step = check_real("min_step", min_step, 0.0, self.max_step, low_open=True)
        self.anchor_guess, self.name = anchor_guess, name
        self.path: dict[float, Any] = {}
        self.losses: dict[int, BranchLoss] = {}  # side (+1 / -1) -> where the branch ended
        self.holes: dict[float, BranchLoss] = {}  # controls inside the path without a solution
        self.solves = 0
        self._lost_everywhere: BranchLoss | None = None  # no solution at the anchor, or an absent branch
        if absent is not None:
            self._lost_everywhere = BranchLoss(math.nan, math.nan, Status.CONVERGED, f"no such branch: {absent}", None,
                                               "absent")

    def _attempt(self, control: float, known: list[float], start_at: float | None = None):
        """Solve at `control` from the extrapolation of the two nearest known controls (or from the solution
        at the known control `start_at`, the extrapolation still judging a jump); (solution, reason)."""
        nearest = sorted(known, key=lambda c: abs(c - control))[:2]
        prediction = None
        if len(nearest) == 2:
            guess = extrapolate(nearest, [self.state(self.path[c]) for c in nearest], control)
            if self.contains is None or self.contains(guess):
                prediction = guess
        source = start_at if start_at is not None else (nearest[0] if nearest else None)
        if source is None:
            start = self.anchor_guess
        else:
            start = prediction if prediction is not None and start_at is None else self.state(self.path[source])
        solution = self.solve(control, start, None if source is None else self.path[source])
        self.solves += 1
        return solution, self.lost(solution, prediction)

    def _anchor(self) -> bool:
        if self.path or self._lost_everywhere is not None:
            return self._lost_everywhere is None
        failures = []
        for anchor in [self.anchor, *self.fallback_anchors]:
            solution, reason = self._attempt(anchor, [])
            if reason is None:
                self.anchor = anchor
                self.path[anchor] = solution
                return True
            message = getattr(solution, "message", "")
            failures.append((f"{self.name} = {anchor:g}: {reason}" + (f" ({message})" if message else ""), reason))
        # an anchor whose solution is evidence of absence (criterion "absent", e.g. the branch carried there from
        # where it exists collapsed on the way) locates the loss; any other failure leaves the branch undecided
        absent = all(reason == "absent" for _, reason in failures)
        self._lost_everywhere = BranchLoss(
            math.nan, math.nan, Status.CONVERGED if absent else Status.FAILED,
            f"no solution on the branch at the anchor {failures[0][0]}"
            + "".join(f"; nor at the fallback anchor {text}" for text, _ in failures[1:]), None, failures[-1][1])
        return False

    def loss(self, control: float) -> BranchLoss | None:
        """Why the branch has no solution at `control` (None if it has one or was not followed there)."""
        if self._lost_everywhere is not None:
            return self._lost_everywhere
        if control in self.holes:
            return self.holes[control]
        side = 1 if control > self.anchor else -1
        loss = self.losses.get(side)
        if loss is not None and side * (control - loss.bracket[1]) >= -1e-12:
            return loss
        return None

    def _inside(self, control: float):
        """The solution at a control between two solved ones: from their extrapolation, then from the nearer
        one's state; else a hole (see the class docstring)."""
        below = max(c for c in self.path if c < control)
        above = min(c for c in self.path if c > control)
        solution, reason = self._attempt(control, [below, above])
        if reason is None:
            self.path[control] = solution
            return solution
        nearer = min((below, above), key=lambda c: abs(c - control))
        solution, reason = self._attempt(control, [below, above], start_at=nearer)
        if reason is None:
            self.path[control] = solution
            return solution
        self.holes[control] = BranchLoss(
            math.nan, math.nan, Status.FAILED,
            f"no solution at {self.name} = {control:g} ({reason}), inside the followed path (solved at {below:.5g} "
            f"and {above:.5g}): the rule lacks the branch's fixed point there, or the solver missed it",
            (below, above), reason)
        return None

    def at(self, control: float):
        """The branch's solution at `control`, or None when it was lost between the anchor and `control`."""
        control = float(control)
        if not self._anchor():
            return None
        if control in self.path:
            return self.path[control]
        if self.loss(control) is not None:
            return None
        side = 1 if control > self.anchor else -1
        on_side = sorted((c for c in self.path if side * (c - self.anchor) >= 0), key=lambda c: side * (c - self.anchor))
        reach = on_side[-1]
        if side * (control - reach) < 0:  # inside the path: from its neighbours
            return self._inside(control)
        step = self.max_step
        looked_beyond = False
        control_failed = None  # why the solve at `control` failed from the path as it is now
        while True:
            here = control if abs(control - reach) <= step else reach + side * step
            if here == control and control_failed is not None:
                # a halved step that still reaches `control` would repeat that solve from the same path points (the
                # same guess, the same failure: 26 map evaluations on split-line 8 at ω = 0, α = 1); only a step
                # short of it is new
                reason = control_failed
            else:
                known = [c for c in self.path if side * (c - self.anchor) >= 0 and side * (c - here) < 0]
                solution, reason = self._attempt(here, known)
                if reason is None:
                    self.path[here] = solution
                    reach = here
                    control_failed = None
                    if here == control:
                        return solution
                    step = min(1.5 * step, self.max_step)
                    continue
                if here == control:
                    control_failed = reason
            if here == control and not looked_beyond:
                # The first failure at the requested control itself: one step over it tells a hole (the branch
                # goes on beyond, so only `control` lacks a solution) from the branch's end, before the steps
                # towards it are halved down to min_step (at a hole each halving is a failed solve).
                looked_beyond = True
                beyond = control + side * min(abs(control - reach), BEYOND_STEPS * self.min_step)
                solution, reason = self._attempt(beyond, known)
                if reason is None:
                    self.path[beyond] = solution
                    return self._inside(control)
            if step <= self.min_step:
                self.losses[side] = BranchLoss(
                    0.5 * (reach + here), abs(here - reach) / 2, Status.CONVERGED,
                    f"followed from {self.name} = {self.anchor:g}: alive at {reach:.5g}, lost at {here:.5g} ({reason})",
                    (reach, here), reason, self.state(self.path[reach]))
                return None
            step = max(step / 2, self.min_step)
