"""Stationary branches of an action S(x; c) followed in a control parameter c, with their folds and
branch points located as roots.

A classifier that counts minima on a grid of c misses every coexistence window narrower than the
grid step. Here every stationary branch (∇_x S = 0) through the given starting points is followed by
pseudo-arclength continuation, through its folds; folds and branch points are located as roots, not
read off a grid; `numeric.transition.classify_transition` reads the order of the transition off the
followed branches.

Continuation (Keller 1977; Allgower & Georg, Numerical Continuation Methods, ch. 2), in the scaled
coordinates u = (x, c/c_scale). At an accepted point u_k with unit tangent t_k — the null vector of
the n × (n+1) Jacobian A = [∇²S, c_scale ∂_c∇S], oriented so that t_k·t_{k−1} > 0 — the predictor is
u_k + h t_k and the corrector is Newton's method on (∇S(u) = 0, t_k·(u − u_k) = h). A step is accepted
only if
* the corrector converges within `max_newton` steps, each at most `contraction` times the previous
  one (or no longer halving at a size below √tolerance and STALL_FRACTION·h: the rounding noise of ∇S),
  and lands within `max_distance`·h of the prediction (a prediction outside the corrector's basin
  is how a step jumps to another branch);
* successive tangents turn by at most `max_angle`;
* every test function — the c-component t_c of the tangent, which changes sign exactly at folds, and
  each eigenvalue of the Hessian — is predicted by linear extrapolation from the two previous points
  to within `nonlinearity` times its size, plus `test_floor`. Inside one step two folds make t_c dip
  through zero and come back, a deviation from the linear prediction of the size of the dip, which this
  rule rejects; the step is halved until a point lands inside the pair. A fold pair whose dip in t_c is
  below `test_floor` is below the asked resolution (there it is indistinguishable from a cusp).
Rejected steps are halved; easy steps grow by `growth` up to `max_step`.

Folds and branch points. With the bordered determinant D = det[[A], [tᵀ]] (nonzero at a regular point
of a branch), t_c = ±det ∇²S / D: at a fold t_c and det ∇²S change sign together. Where D changes sign
the branch meets another one (a branch point: transcritical or pitchfork), and t_c or the Hessian
index changes alone. Both are located between the two followed points where the signs change, then
polished in mpmath as roots of regular extended systems: folds of (∇S, det ∇²S)
(`singular_points.fold_threshold`), branch points of Moore's system (`singular_points.branch_point_threshold`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import mpmath
import numpy as np
from scipy import optimize

from attnphase.errors import ParameterError
from attnphase.numeric.precision import equilibrated_determinant_sign, equilibrated_null_vector, equilibrated_solve
from attnphase.numeric.stationary_systems import ActionSystem, FunctionSystem, StationarySystem
from attnphase.numeric.singular_points import branch_point_threshold, fold_threshold, solve_branch_point, solve_fold
from attnphase.numeric.threshold import Threshold, threshold_from_error
from attnphase.params import check_int, check_real
from attnphase.results import Result, Status

# the systems are defined in numeric.stationary_systems and re-exported here, where the continuation's users look
__all__ = ["StationarySystem", "ActionSystem", "FunctionSystem", "ContinuationSettings", "Singularity", "StationaryBranch",
           "stationary_point", "continue_in_control", "follow_branch", "follow_branches"]


@dataclass(frozen=True)
class ContinuationSettings:
    """Step control of `follow_branch` (see the module docstring); steps are arclengths in u = (x, c/c_scale)."""

    initial_step: float = 0.02
    min_step: float = 1e-12
    singular_step: float = 1e-9
    max_step: float = 0.1
    max_angle: float = 0.35
    max_newton: int = 8
    contraction: float = 0.5
    max_distance: float = 0.5
    nonlinearity: float = 0.5
    test_floor: float = 1e-9
    growth: float = 1.5
    max_points: int = 20_000
    tolerance: float = 1e-12


@dataclass(frozen=True)
class Singularity(Result):
    """A fold or a branch point on a followed branch, between its points `between` (i, i + 1).

    kind: "fold" or "branch_point"; control: where it is, with its error (a `Threshold`); state: x there
    (float64); index_before / index_after: the Hessian index (number of negative eigenvalues) on either
    side, in the branch's direction.
    """

    kind: str
    control: Threshold
    state: np.ndarray
    between: tuple[int, int]
    index_before: int
    index_after: int
    status: Status
    message: str


@dataclass(frozen=True)
class StationaryBranch(Result):
    """A followed branch of stationary points, in order along its arclength.

    control (k,), state (k, n), tangent (k, n + 1) in u = (x, c/c_scale), eigenvalues (k, n) of the
    Hessian (ascending), index (k,) the number of negative ones (0: a minimum, n: a maximum), action
    (k,); singularities: its folds and branch points; ends: what stopped it at either end ("range",
    "lost", "closed", "max_points"). status converged when both ends reached the range or closed.
    """

    control: np.ndarray
    state: np.ndarray
    tangent: np.ndarray
    eigenvalues: np.ndarray
    index: np.ndarray
    action: np.ndarray
    singularities: tuple[Singularity, ...]
    ends: tuple[str, str]
    control_scale: float
    status: Status
    message: str

    def rows(self):
        return [{"control": float(c), **{f"x{j}": float(v) for j, v in enumerate(x)}, "index": int(i), "action": float(s)}
                for c, x, i, s in zip(self.control, self.state, self.index, self.action)]


# A corrector whose Newton steps stall (no longer halve) below this fraction of the arclength step, and below
# √tolerance, has converged as far as the rounding of ∇S allows.
STALL_FRACTION = 1e-3


def _stalled(size: float, previous: float, ceiling: float) -> bool:
    """Whether a Newton step of `size` after one of `previous` no longer halves while below `ceiling`: ∇S is a
    small difference of large terms whose rounding noise over the curvature sets the last steps (the noise
    floor reached), not a diverging iteration."""
    return math.isfinite(size) and previous / 2 <= size <= ceiling


def _at_rounding_floor(g: np.ndarray, H: np.ndarray, x: np.ndarray) -> bool:
    """Whether |g_i| ≤ 8ε (1 + |H_ii| max(1, |x|) + Σ_{j≠i} |H_ij x_j|) for all i: g_i's change when x_i moves by
    its resolution, plus its couplings' rounding. Row by row, couplings at their size: with curvatures decades apart
    (σ² → 0 makes one ~1e300) a floor set by the largest would hide the others' gradients (any point would pass)."""
    rounding = 8 * np.finfo(float).eps * np.abs(H)  # ε first: the products below stay finite
    diagonal, size = np.diagonal(rounding), np.abs(x)
    floor = 8 * np.finfo(float).eps + diagonal * max(1.0, float(np.max(size))) + rounding @ size - diagonal * size
    return bool(np.all(np.abs(g) <= floor))


def stationary_point(system: StationarySystem, x, c: float, tolerance: float = 1e-12, max_iter: int = 60):
    """Newton's method on ∇S(x, c) = 0 at fixed c from x (halving steps that leave the finite numbers);
    None if it does not converge. It stops at the rounding floor of ∇S, where a nearly singular Hessian
    (close to a branch point) would keep the steps above the tolerance, and where the steps stop
    shrinking below √tolerance (∇S a small difference of large terms: its rounding noise over the
    curvature sets the last steps)."""
    x = np.array(np.atleast_1d(x), dtype=float)
    previous = math.inf
    g = system.gradient(x, c)
    for _ in range(max_iter):
        if not np.all(np.isfinite(g)):
            return None
        H = system.hessian(x, c)
        if _at_rounding_floor(g, H, x):
            return x
        try:
            step = equilibrated_solve(H, -g)
        except np.linalg.LinAlgError:  # singular Hessian (a branch point): the least-squares step
            step = np.linalg.lstsq(H, -g, rcond=None)[0]
        for _ in range(40):
            trial = x + step
            g = system.gradient(trial, c)  # the next iteration's gradient, if finite
            if np.all(np.isfinite(g)):
                break
            step = step / 2
        else:
            return None
        x = trial
        size, scale = float(np.max(np.abs(step))), max(1.0, float(np.max(np.abs(x))))
        if size <= tolerance * scale or _stalled(size, previous, math.sqrt(tolerance) * scale):
            return x
        previous = size
    return None


def continue_in_control(system: StationarySystem, x, c_from: float, c_to: float, substeps: int = 1):
    """The stationary point at c_to on the branch through the stationary point x at c_from, by natural
    continuation in `substeps` steps, each predicted along dx/dc = −(∇²S)⁻¹ ∂_c∇S (None if it fails)."""
    x = np.array(np.atleast_1d(x), dtype=float)
    controls = np.linspace(c_from, c_to, substeps + 1)
    for c0, c1 in zip(controls[:-1], controls[1:]):
        try:
            slope = equilibrated_solve(system.hessian(x, c0), -system.control_gradient(x, c0))
        except np.linalg.LinAlgError:
            slope = np.zeros_like(x)
        x = stationary_point(system, x + slope * (c1 - c0), c1)
        if x is None:
            return None
    return x


@dataclass
class _Point:
    u: np.ndarray  # (x, c / scale)
    tangent: np.ndarray
    eigenvalues: np.ndarray
    bordered_sign: float
    newton_steps: int = 0

    @property
    def tests(self) -> np.ndarray:
        return np.concatenate([[self.tangent[-1]], self.eigenvalues])


class _Follower:
    """The continuation of one branch (see the module docstring)."""

    def __init__(self, system: StationarySystem, lo: float, hi: float, scale: float, settings: ContinuationSettings):
        self.system, self.lo, self.hi, self.scale, self.settings = system, lo, hi, scale, settings

    def split(self, u):
        return u[:-1], u[-1] * self.scale

    def jacobian(self, u):
        x, c = self.split(u)
        return np.column_stack([self.system.hessian(x, c), self.scale * self.system.control_gradient(x, c)])

    def point(self, u, orientation, newton_steps=0) -> _Point:
        A = self.jacobian(u)
        t = equilibrated_null_vector(A)
        t = t if float(t @ orientation) >= 0 else -t
        x, c = self.split(u)
        eigenvalues = np.linalg.eigvalsh(self.system.hessian(x, c))
        return _Point(u, t, eigenvalues, equilibrated_determinant_sign(np.vstack([A, t])), newton_steps)

    def correct_at_control(self, x, c):
        return stationary_point(self.system, x, c, self.settings.tolerance)

    def correct(self, u_pred, anchor: _Point, h: float, strict: bool = True):
        """Pseudo-arclength Newton: (∇S = 0, t·(u − u_anchor) = h); None unless it converges, contracting
        and close to the prediction when `strict` (a continuation step), within 4 max_newton steps
        otherwise (a root search between two accepted points, possibly at a singular point)."""
        u, previous = u_pred.copy(), math.inf
        s = self.settings
        for iteration in range(1, (1 if strict else 4) * s.max_newton + 1):
            x, c = self.split(u)
            g = self.system.gradient(x, c)
            if not np.all(np.isfinite(g)):
                return None
            if (not strict or iteration > 1) and _at_rounding_floor(g, self.system.hessian(x, c), x):
                # at the rounding floor of ∇S: a singular point stalls the steps, and so does a Hessian whose
                # soft direction (eigenvalues far apart) turns the rounding noise of ∇S into Newton steps
                return u, iteration
            M = np.vstack([self.jacobian(u), anchor.tangent])
            r = np.append(g, anchor.tangent @ (u - anchor.u) - h)
            try:
                delta = equilibrated_solve(M, -r)
            except np.linalg.LinAlgError:
                return None
            size = float(np.linalg.norm(delta))
            scale = max(1.0, float(np.linalg.norm(u)))
            if iteration > 1 and _stalled(size, previous, min(math.sqrt(s.tolerance) * scale, STALL_FRACTION * abs(h))):
                # far below the step h (σ² → 0 in a model's prior makes the terms of ∇S ~1e7); _at_rounding_floor,
                # which sees only the curvatures, cannot know it. Converged one step ago (the count decides whether
                # the next step grows).
                return u, iteration - 1
            if not math.isfinite(size) or (strict and iteration > 1 and size > s.contraction * previous):
                return None
            u, previous = u + delta, size
            if np.linalg.norm(u - u_pred) > (s.max_distance if strict else 2.0) * abs(h) + s.tolerance:
                return None  # left the prediction's neighbourhood: another branch, or far along a flat one
            if size <= s.tolerance * scale:
                return u, iteration
        return None

    def acceptable(self, history: list[_Point], new: _Point, h: float) -> bool:
        s = self.settings
        last = history[-1]
        if float(np.clip(last.tangent @ new.tangent, -1.0, 1.0)) < math.cos(s.max_angle):
            return False
        tests_new, tests_last = new.tests, last.tests
        if len(history) >= 2:
            before = history[-2]
            run = float(np.linalg.norm(last.u - before.u))
            predicted = tests_last + (tests_last - before.tests) / run * h if run > 0 else tests_last
        else:
            predicted = tests_last
        spectral = max(1.0, float(np.max(np.abs(new.eigenvalues))))
        floor = np.concatenate([[s.test_floor], np.full(len(new.eigenvalues), s.test_floor * spectral)])
        allowed = s.nonlinearity * np.maximum(np.abs(tests_last), np.abs(tests_new)) + floor
        return bool(np.all(np.abs(tests_new - predicted) <= allowed))

    def follow(self, start: _Point) -> tuple[list[_Point], str]:
        """Points from `start` along its tangent until the branch leaves [lo, hi], closes, or is lost."""
        s = self.settings
        points, h = [start], s.initial_step
        while len(points) < s.max_points:
            last = points[-1]
            corrected = self.correct(last.u + h * last.tangent, last, h)
            new = None
            if corrected is not None:
                new = self.point(corrected[0], last.tangent, corrected[1])
                if not (np.all(np.isfinite(new.eigenvalues)) and self.acceptable(points, new, h)):
                    new = None
            if new is None and h < s.singular_step:
                new = self.jump(last)
            if new is None:
                h /= 2
                if h < s.min_step:
                    return points, "lost"
                continue
            c_new = new.u[-1] * self.scale
            if not self.lo <= c_new <= self.hi:
                return points + self.at_boundary(last, new), "range"
            points.append(new)
            if len(points) > 3 and np.linalg.norm(new.u - start.u) < 0.5 * h and new.tangent @ start.tangent > 0:
                return points, "closed"
            if new.newton_steps <= 3:
                h = min(h * s.growth, s.max_step)
        return points, "max_points"

    def jump(self, last: _Point) -> _Point | None:
        """A step over a singular point. Steps shrink to `singular_step` where the test functions are
        rounding noise (near a branch point the tangent is ill-defined) or the corrector is singular;
        then steps of 10³, 10⁴, ... times `singular_step` are tried with the corrector's checks and an
        aligned tangent only. A fold pair hidden in such a jump would be below the rounding noise."""
        s = self.settings
        for factor in (1e3, 1e4, 1e5, 1e6):
            h = factor * s.singular_step
            corrected = self.correct(last.u + h * last.tangent, last, h)
            if corrected is not None:
                new = self.point(corrected[0], last.tangent, corrected[1])
                if np.all(np.isfinite(new.eigenvalues)) and last.tangent @ new.tangent > math.cos(s.max_angle):
                    return new
        return None

    def at_boundary(self, inside: _Point, outside: _Point) -> list[_Point]:
        """The point of the branch at the range end between `inside` and `outside` (none if not found)."""
        bound = self.hi if outside.u[-1] * self.scale > self.hi else self.lo
        c_in, c_out = inside.u[-1] * self.scale, outside.u[-1] * self.scale
        w = (bound - c_in) / (c_out - c_in)
        guess = inside.u[:-1] + w * (outside.u[:-1] - inside.u[:-1])
        x = self.correct_at_control(guess, bound)
        if x is None:
            return []
        return [self.point(np.append(x, bound / self.scale), inside.tangent)]


def _start_point(follower: _Follower, x0, c0) -> _Point | None:
    x = follower.correct_at_control(np.atleast_1d(np.asarray(x0, dtype=float)), c0)
    if x is None:
        return None
    u = np.append(x, c0 / follower.scale)
    orientation = np.zeros(len(u))
    orientation[-1] = 1.0
    return follower.point(u, orientation)


def follow_branch(system: StationarySystem, x0, c0: float, control_range: tuple[float, float], *,
                  settings: ContinuationSettings = ContinuationSettings(), digits: int = 15) -> StationaryBranch:
    """The branch of stationary points through the solution of ∇S(x, c0) = 0 nearest x0, followed in both
    directions until it leaves `control_range` (or closes, or is lost), with its folds and branch points
    located to `digits` significant digits (mpmath-polished)."""
    lo, hi = (check_real("control_range", v) for v in control_range)
    if not hi > lo:
        raise ParameterError("control_range", control_range, "(low, high) with high > low")
    c0 = check_real("c0", c0, lo, hi)
    digits = check_int("digits", digits, 1, 1000)
    # u = (x, c/scale) with c/scale of order one over the range: offsets matter for a logarithm, sizes otherwise
    scale = (hi - lo) if system.log_control else max(abs(lo), abs(hi), hi - lo)
    follower = _Follower(system, lo, hi, scale, settings)
    start = _start_point(follower, x0, c0)
    if start is None:
        raise ParameterError("x0", x0, f"a guess from which Newton's method reaches a stationary point at c = {c0:g}")
    forward, forward_end = (([start], "range") if c0 >= hi else follower.follow(start))
    backward_start = _Point(start.u, -start.tangent, start.eigenvalues, start.bordered_sign)
    backward, backward_end = (([backward_start], "range") if c0 <= lo else follower.follow(backward_start))
    for p in backward:  # one orientation along the whole branch
        p.tangent = -p.tangent
    points = backward[::-1][:-1] + forward
    ends = (backward_end, forward_end)
    singularities = tuple(_singularities(follower, points, digits))
    U = np.array([p.u for p in points])
    x, c = U[:, :-1], U[:, -1] * scale
    eigenvalues = np.array([p.eigenvalues for p in points])
    action = np.array([system.value(xi, ci) for xi, ci in zip(x, c)])
    complete = all(end in ("range", "closed") for end in ends)
    status = Status.CONVERGED if complete else (Status.LOST if "lost" in ends else Status.MAX_ITER)
    message = (f"{len(points)} points over c in [{c.min():.12g}, {c.max():.12g}]; ends: {ends[0]}, {ends[1]}; "
               f"{sum(s.kind == 'fold' for s in singularities)} folds, "
               f"{sum(s.kind == 'branch_point' for s in singularities)} branch points")
    return StationaryBranch(c, x, np.array([p.tangent for p in points]), eigenvalues,
                            np.sum(eigenvalues < 0, axis=1), action, singularities, ends, scale, status, message)


def _index(p: _Point) -> int:
    return int(np.sum(p.eigenvalues < 0))


def _singularities(follower: _Follower, points: list[_Point], digits: int):
    for i in range(len(points) - 1):
        a, b = points[i], points[i + 1]
        fold = a.tangent[-1] * b.tangent[-1] < 0
        branch = a.bordered_sign != b.bordered_sign or (_index(a) != _index(b) and not fold)
        if branch and _index(a) != _index(b) and not fold:
            yield _branch_point(follower, a, b, (i, i + 1), digits, turning=False)
        elif branch and fold:
            yield _branch_point(follower, a, b, (i, i + 1), digits, turning=True)
        elif fold:
            yield _fold(follower, a, b, (i, i + 1), digits)


def _mp_of(system: StationarySystem) -> dict:
    """The mpmath evaluations the singular-point polish takes (none when the system has none)."""
    return {"gradient_mp": system.gradient_mp, "hessian_mp": system.hessian_mp} if system.mp else {}


def _fold(follower: _Follower, a: _Point, b: _Point, between, digits) -> Singularity:
    system, scale = follower.system, follower.scale
    w = a.tangent[-1] / (a.tangent[-1] - b.tangent[-1])
    guess = a.u + w * (b.u - a.u)
    x0, c0 = follower.split(guess)
    bracket = (float(a.u[-1] * scale), float(b.u[-1] * scale))
    threshold = fold_threshold(system.gradient, system.hessian, x0, c0, digits=digits, bracket=bracket, **_mp_of(system))
    try:
        state = np.asarray(solve_fold(system.gradient, system.hessian, x0, c0)[0], dtype=float)
    except (ArithmeticError, np.linalg.LinAlgError):
        state = np.asarray(x0, dtype=float)
    return Singularity("fold", threshold, state, between, _index(a), _index(b), threshold.status,
                       f"fold: {threshold.message}")


def _root_along(follower: _Follower, a: _Point, b: _Point, test) -> _Point:
    """The point between a and b where test(point) changes sign, by brentq on the pseudo-arclength σ of
    a's hyperplanes t_a·(u − u_a) = σ (a local parameter also where c turns back); float64."""
    reach = float(a.tangent @ (b.u - a.u))  # b's σ

    def point_at(sigma: float) -> _Point:
        if sigma == 0:
            return a
        corrected = follower.correct(a.u + sigma * a.tangent, a, sigma, strict=False)
        if corrected is None:
            raise ArithmeticError("the corrector failed near the singular point")
        return follower.point(corrected[0], a.tangent)

    sigma = optimize.brentq(lambda s: test(point_at(s)), 0.0, reach, xtol=1e-15 * max(reach, 1e-300))
    return point_at(sigma)


def _branch_point(follower: _Follower, a: _Point, b: _Point, between, digits, turning: bool) -> Singularity:
    """A branch point between a and b: where the crossing eigenvalue vanishes (the index changes while c
    keeps its direction) or where t_c does (the branch turns back in c: the tip of a pitchfork's side
    branch). Its float64 position along the arclength starts Moore's regularised system
    (`singular_points.branch_point_threshold`), polished in mpmath; if that fails, the float64 position is
    kept with √ε |c| as its error (the corrector is singular at a branch point)."""
    system, scale = follower.system, follower.scale
    k = min(_index(a), _index(b))
    bracket = (float(a.u[-1] * scale), float(b.u[-1] * scale))
    test = (lambda p: p.tangent[-1]) if turning else (lambda p: p.eigenvalues[k])
    try:
        u = _root_along(follower, a, b, test).u
        float_error = math.sqrt(np.finfo(float).eps) * abs(u[-1] * scale)
    except (ArithmeticError, ValueError, np.linalg.LinAlgError):
        u, float_error = (a.u if abs(test(a)) < abs(test(b)) else b.u), abs(bracket[1] - bracket[0])
    x_root, c_root = follower.split(u)
    threshold = branch_point_threshold(system.gradient, system.hessian, x_root, c_root, digits=digits, bracket=bracket,
                                       **_mp_of(system))
    state = np.asarray(x_root, dtype=float)
    if math.isfinite(threshold.error):
        try:
            state = np.asarray(solve_branch_point(system.gradient, system.hessian, x_root, c_root)[0], dtype=float)
        except (ArithmeticError, ValueError, np.linalg.LinAlgError):
            pass
    else:
        threshold = threshold_from_error(mpmath.mpf(float(c_root)), float_error, digits, bracket,
                                         f"branch point (float64 only: {threshold.message})")
    where = "where the branch turns back in c" if turning else f"(index {_index(a)} -> {_index(b)})"
    return Singularity("branch_point", threshold, state, between, _index(a), _index(b), threshold.status,
                       f"branch point {where}: {threshold.message}")


def follow_branches(system: StationarySystem, starts: Sequence[tuple], control_range: tuple[float, float], *,
                    settings: ContinuationSettings = ContinuationSettings(), digits: int = 15) -> list[StationaryBranch]:
    """Every branch through the starting points `starts` [(x0, c0), ...]; a start that lies on a branch
    already followed (its stationary point is one of that branch's points, to 1e-6) is skipped."""
    branches: list[StationaryBranch] = []
    for x0, c0 in starts:
        branch = follow_branch(system, x0, c0, control_range, settings=settings, digits=digits)
        start = np.append(branch.state[np.argmin(np.abs(branch.control - c0))], c0 / branch.control_scale)
        if any(_on_branch(start, other) for other in branches):
            continue
        branches.append(branch)
    return branches


def _on_branch(u, branch: StationaryBranch) -> bool:
    """Whether the point u = (x, c/scale) lies on the polyline of `branch` (distance ≤ 1e-6)."""
    points = np.column_stack([branch.state, branch.control / branch.control_scale])
    for p, q in zip(points[:-1], points[1:]):
        d = q - p
        w = np.clip(((u - p) @ d) / max(d @ d, 1e-300), 0.0, 1.0)
        if np.linalg.norm(p + w * d - u) <= 1e-6:
            return True
    return False
