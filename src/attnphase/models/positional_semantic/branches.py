"""The model's branches: their invariant sets, starting points, the fixed-point solve of one branch, and
the criteria that say whether a solution is (still) the branch it was started on.

positional: θ = 0, m ≠ 0; semantic: m = 0, θ ≠ 0; trivial: m = θ = 0; mixed: both non-zero. θ = 0 and
m = 0 are exact invariant sets of the map (for every A and G_p, see Parameters.swap_symmetric), so each
pure branch is solved inside its set, in reduced coordinates (`BranchCoordinates`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution
from attnphase.models.positional_semantic.state_evolution import SaddlePointEquations, state_vector
from attnphase.numeric.basins import frozen_basin_rounds
from attnphase.numeric.branches import Continuation
from attnphase.numeric.fixedpoint import Anderson, Chain, Hybr, Identity, Interval, Positive, solve_fixed_point
from attnphase.numeric.jacobian import map_jacobian
from attnphase.params import check_choice
from attnphase.results import Status

__all__ = ["BRANCHES", "COLLAPSE_LEVEL", "ANCHOR_ALPHA", "TRIVIAL_ANCHOR_ALPHA", "carry", "path_from_defaults",
           "continuous_end_on_path",
           "BranchCoordinates", "initial_guess", "solve_branch", "unsolved",
           "full_map_stability", "distinct", "genuine", "branch_loss", "follow", "absence"]

BRANCHES = ("positional", "semantic", "trivial", "mixed")
COLLAPSE_LEVEL = 1e-6  # |θ| (semantic) or |m| (positional) below this: collapsed onto the trivial set
# A continuation step that moves any reduced coordinate by more than this fraction of its size
# (|c|, |m| measured against 0.1) from the linear prediction is a jump onto another fixed point, not
# the branch: at ω = 0.3 the semantic branch's loss moved c from 0.72 to 0.57 and V by 14% in one
# 0.02 step, while genuine steps of 0.1 move the prediction error by < 1%.
JUMP_FRACTION = 0.1


@dataclass(frozen=True)
class BranchCoordinates:
    """Reduced coordinates of a branch inside its invariant set, and the map restricted to it.

    positional: (q, V, m_1..m_L) with θ = 0;  semantic: (q, V, c) with m = 0 and θ = c √(ρ q);
    trivial: (q, V) with m = θ = 0;  mixed: (q, V, c, m_1..m_L). The normalised overlap c = θ/√(ρq)
    lives in (−1, 1) (V* > 0), iterated through an atanh-type transform; q, V through log.
    """

    branch: str
    params: Parameters
    has_c: bool = field(init=False)
    has_m: bool = field(init=False)
    transforms: tuple = field(init=False, repr=False)

    def __post_init__(self):
        check_choice("branch", self.branch, BRANCHES)
        has_c, has_m = self.branch in ("semantic", "mixed"), self.branch in ("positional", "mixed")
        object.__setattr__(self, "has_c", has_c)
        object.__setattr__(self, "has_m", has_m)
        object.__setattr__(self, "transforms", (Positive(), Positive()) + ((Interval(-1.0, 1.0),) if has_c else ())
                           + ((Identity(),) * self.params.L if has_m else ()))

    def to_state(self, y) -> np.ndarray:
        y = np.asarray(y, float)
        L, rho = self.params.L, self.params.rho
        q, V = y[0], y[1]
        c = y[2] if self.has_c else 0.0
        m = y[2 + self.has_c:2 + self.has_c + L] if self.has_m else np.zeros(L)
        return state_vector(q, V, c * math.sqrt(rho * q), m)

    def from_state(self, x) -> np.ndarray:
        L, rho = self.params.L, self.params.rho
        q, V, theta, m = x[0], x[1], x[2], x[3:3 + L]
        c = theta / math.sqrt(rho * q) if q > 0 else math.nan  # a state past q = 0 lies outside every branch
        out = [q, V] + ([c] if self.has_c else []) + (list(m) if self.has_m else [])
        return np.array(out, float)

    def contains(self, y) -> bool:
        """Whether reduced coordinates y lie in the branch's domain (q, V > 0, |c| < 1, all finite)."""
        return all(t.contains(v) for t, v in zip(self.transforms, y))

    def restricted_map(self, next_state):
        """y -> F(y) in reduced coordinates, for next_state: x -> F(x) (e.g. `equations`, or
        `lambda x: equations.evaluate(x, basins).next`); NaN where the map leaves q > 0, |c| < 1."""
        def F(y):
            try:
                return self.from_state(next_state(self.to_state(y)))
            except ParameterError:  # the map left q > 0, |c| < 1: report it as a divergence
                return np.full(len(y), np.nan)
        return F


def initial_guess(branch: str, params: Parameters) -> np.ndarray:
    """A starting state inside the branch's invariant set (reduced coordinates)."""
    m = 0.3 * params.gram_matrix[0]  # along the first encoding's Gram row
    V = params.sigma**2 / (params.lam + params.sigma**2)
    guesses = {
        "positional": [0.05, V, *m],
        "semantic": [0.2, V, 0.8],
        "trivial": [0.01, V],
        "mixed": [0.1, V, 0.5, *m],
    }
    return np.array(guesses[branch], float)


# Rounds of (frozen-basin fixed point, global check); measured: one or two suffice near the branches
# for L = 2. For L = 3 (6-D rules, many more nodes near a basin switch) the rounds converge linearly
# (reset weight 1.5e-3, 1.1e-3, 4e-4, 6e-6, 6e-12, 0 on 6 nodes at ω = 0.3, α = 1.25, V moving 18.8 → 19.7
# from the default start): rounds beyond BASIN_ROUNDS continue while the reset weight at least halves per
# round, up to MAX_BASIN_ROUNDS; a stalled assignment (a node on a switch) goes to the global-prox map.
BASIN_ROUNDS = 4
MAX_BASIN_ROUNDS = 16
# The global-prox map after a stalled assignment is solved by Anderson alone, up to this many iterations. Where it
# has a fixed point next to the frozen one, Anderson reaches it about as fast as on the frozen map (12 evaluations in
# both such cases of the two standard-grid tests); where the switching node's jump straddles the fixed point it has
# none, and 80 Anderson iterations then MINPACK hybr (whose forward differences straddle the jump) took 119-133
# evaluations, 4-5 s, and never converged (the other 12 cases; three of them are 8 s of `threshold --omega 0.45`).
# The branch then has a hole at that α on the tensor rule (numeric.branches.Continuation), which the callers handle.
GLOBAL_MAP_MAX_ITER = 40


def _branch_solver(n: int) -> Chain:
    """Anderson first (globally robust here); MINPACK hybr from its end point where it stalls."""
    return Chain(Anderson(damping=0.5, max_iter=80), Hybr(max_evaluations=20 * (n + 1)))


def solve_branch(branch: str, alpha: float, params: Parameters, *, nodes_per_dim: int = 12, guess=None,
                 tol: float = 1e-10, accept: float = 1e-8, stability: bool = True) -> BranchSolution:
    """Fixed point of the state-evolution map inside the branch's invariant set, with its stability.

    α is trusted (validated by the entry point). The solver (numeric.fixedpoint: Anderson, then MINPACK
    hybr, in unconstrained coordinates) runs on the restricted map to `tol` with FROZEN BASINS
    (numeric.basins): each node's prox is continued from its previous minimiser, which makes the map
    smooth and each evaluation ~5× cheaper; at the fixed point the global prox is recomputed, and if any
    node's global minimiser lies in another basin the basins are reset and the solve repeated
    (BASIN_ROUNDS times, more while the reset weight keeps halving; then the global-prox map is solved
    directly, by GLOBAL_MAP_MAX_ITER Anderson iterations at most). A residual up to `accept` is accepted (the
    global-prox map is piecewise smooth on a fixed rule, so its noise floor can exceed `tol`), anything larger is
    reported as not converged; the stability is the spectral radius of the Jacobian of the FULL map (all of q, V,
    θ, m), so an instability transverse to the invariant set (e.g. a semantic fixed point unstable towards m ≠ 0)
    is seen. `stable` means attracting for a suitably damped iteration (all eigenvalues of dF with real part < 1);
    `spectral_radius` is reported as well.
    """
    coords = BranchCoordinates(branch, params)
    equations = SaddlePointEquations(params, alpha, nodes_per_dim)
    basins = equations.new_basins()
    y0 = initial_guess(branch, params) if guess is None else np.asarray(guess, float)
    if not coords.contains(y0):  # a guess extrapolated, or carried from other parameters, past q = 0 or |c| = 1
        return unsolved(branch, alpha, params, nodes_per_dim,
                        "the start lies outside the branch's domain (q, V > 0, |θ| < √(ρq))")
    solver = _branch_solver(len(y0))
    frozen = coords.restricted_map(lambda x: equations.evaluate(x, basins).next)

    def solve(F, y, with_solver=solver):
        return solve_fixed_point(F, y, with_solver, transforms=coords.transforms, tol=tol, spectrum=False)

    global_solver = Anderson(damping=0.5, max_iter=GLOBAL_MAP_MAX_ITER)
    rounds = frozen_basin_rounds(lambda y: solve(frozen, y),
                                 lambda y: solve(coords.restricted_map(equations), y, global_solver),
                                 lambda y: equations.reset_basins(basins, coords.to_state(y)), basins, y0,
                                 accept=accept, rounds=BASIN_ROUNDS, max_rounds=MAX_BASIN_ROUNDS)
    result, evaluations = rounds.result, rounds.evaluations
    # the map the solution belongs to: frozen basins unless the assignment stalled (then the global map)
    in_use = None if rounds.stalled else basins
    converged = bool(np.isfinite(result.residual) and result.residual <= accept)
    status = Status.CONVERGED if converged else result.status
    message = result.message if result.success or not converged else (
        f"{result.message}; accepted: residual {result.residual:.2g} <= {accept:g}")
    x = coords.to_state(result.value)
    L = params.L
    m_rep = float(x[3]) if L == 2 else float(np.linalg.norm(x[3:3 + L]) / math.sqrt(L))
    common = dict(branch=branch, alpha=alpha, q=float(x[0]), m=m_rep, theta=float(x[2]), V=float(x[1]),
                  status=status, message=message, residual=float(result.residual),
                  nodes_per_dim=nodes_per_dim, state=x)
    if not converged:
        return BranchSolution(free_energy=math.nan, train_loss=math.nan, test_error=math.nan, stable=False,
                              spectral_radius=math.nan, evaluations=evaluations, **common)
    radius, stable = math.nan, False
    if stability:
        stable, radius, n_eval = full_map_stability(lambda x: equations.evaluate(x, in_use).next, x, params)
        evaluations += n_eval
    evaluation = equations.evaluate(x, in_use)
    phi = equations.free_energy(x, evaluation)
    return BranchSolution(free_energy=phi, train_loss=-phi, test_error=equations.test_error(x), stable=stable,
                          spectral_radius=radius, evaluations=evaluations, envelope=evaluation.envelope, **common)


def unsolved(branch: str, alpha: float, params: Parameters, nodes_per_dim: int, why: str) -> BranchSolution:
    """A failed solve of the branch at α that never started (no evaluation; every number NaN), saying why."""
    nan = math.nan
    return BranchSolution(branch, alpha, nan, nan, nan, nan, nan, nan, nan, False, nan, Status.FAILED, why, 0, nan,
                          nodes_per_dim, np.full(3 + params.L, nan))


def full_map_stability(F, state, params: Parameters) -> tuple[bool, float, int]:
    """(stable, spectral radius, evaluations) of the FULL map F (all of q, V, θ, m) at a fixed point `state`, from
    its Jacobian by central differences. Stable = attracting for the damped iteration x <- (1 − η) x + η F(x) at
    some η in (0, 1]: every eigenvalue of dF has real part < 1. An eigenvalue below −1 (radius > 1) only means the
    undamped iteration overshoots; an eigenvalue with real part > 1 is a genuine saddle direction."""
    full = BranchCoordinates("mixed", params)
    J, evaluations = map_jacobian(full.restricted_map(F), full.from_state(state), transforms=full.transforms)
    eigenvalues = np.linalg.eigvals(J)
    return bool(eigenvalues.real.max() < 1.0), float(np.abs(eigenvalues).max()), evaluations


def distinct(solution: BranchSolution, others=()) -> bool:
    """A branch solution is reported only if it converged and did not collapse onto another branch."""
    if not solution.success:
        return False
    if solution.branch == "positional" and abs(solution.m) < COLLAPSE_LEVEL:
        return False  # collapsed onto the trivial fixed point
    if solution.branch == "semantic" and abs(solution.theta) < COLLAPSE_LEVEL:
        return False
    if solution.branch == "mixed":
        for o in others:
            if np.allclose(o.state, solution.state, atol=1e-6):
                return False
        if abs(solution.m) < COLLAPSE_LEVEL or abs(solution.theta) < COLLAPSE_LEVEL:
            return False
    return True


def genuine(solution: BranchSolution, quantity: str) -> float:
    """solution.<quantity> if the solution converged on its own branch, else NaN: a warm start that
    slid onto another branch (e.g. the semantic solve collapsing to the trivial fixed point, where
    Φ_sem − Φ_pos can vanish) must never pass for a crossing."""
    return float(getattr(solution, quantity)) if distinct(solution) else math.nan


def branch_loss(solution: BranchSolution, prediction, coords: BranchCoordinates) -> str | None:
    """Why `solution` is no longer the continued branch (None if it still is).

    Checked in order: not converged; collapsed onto the trivial set; jumped (some reduced coordinate
    differs from the continuation's `prediction` by more than JUMP_FRACTION of its size; skipped
    without a prediction); unstable (`solution.stable` False: an eigenvalue of dF with real part ≥ 1).
    """
    if not solution.success:
        return "not_converged"
    order = abs(solution.theta) if solution.branch == "semantic" else abs(solution.m)
    if order < COLLAPSE_LEVEL:
        return "collapsed"
    if prediction is not None:
        y = coords.from_state(solution.state)
        size = np.abs(prediction)
        if coords.has_c or coords.has_m:
            size[2:] = np.maximum(size[2:], 0.1)
        if np.any(np.abs(y - prediction) > JUMP_FRACTION * size):
            return "jumped"
    if not solution.stable:
        return "unstable"
    return None


# Where each branch is anchored, and the continuation steps that reach any α from there: the positional
# branch leaves the trivial state continuously at a small α (ω = 0.3: m = 0.0742, 0.0370 at α = 0.1, 0.07 on
# split-line 12 and count-split 12 alike, m² linear in α, 0 near α = 0.06; below it the followed path is lost,
# "not_converged" or "collapsed") and ends at large α only for small ω (split-line rules: α ≈ 0.90 at ω = 0, where
# m → 0); the semantic branch exists at large α and ends at a spinodal below α_c (ω = 0.3: α ≈ 0.64). A cold start
# elsewhere can land on another fixed point of the same invariant set: at ω = 0.3, α = 2 the default start of the
# positional branch converges on 10 nodes to m = 0.101, q = 0.097, V = 22.0 (unstable) where the branch followed
# from small α has m = 0.258, q = 0.0511, V = 11.37 (stable).
ANCHOR_ALPHA = {"positional": 0.3, "semantic": 3.0}
# The trivial state (m = θ = 0) is the whole solution as α → 0 (q → 0); where its cold start fails at α (ω = 0.3,
# α = 1.25: the map leaves the domain), it is carried there from this α.
TRIVIAL_ANCHOR_ALPHA = 0.01
FOLLOW_MAX_STEP = 0.5
FOLLOW_MIN_STEP = 0.01
# What ends a followed branch: no converged fixed point, a collapse onto the trivial set, or a jump to
# another fixed point (an instability does not: the branch still exists, `stable` says the rest).
ENDS_A_BRANCH = ("not_converged", "collapsed", "jumped")


def follow(branch: str, params: Parameters, nodes_per_dim: int, *, low: float | None = None,
           high: float | None = None) -> Continuation:
    """The positional or semantic branch as a continuation in α on the tensor rule with `nodes_per_dim`
    nodes (frozen-basin solves), from its anchor (ANCHOR_ALPHA; the semantic one's moved to `high` when the wanted
    range extends beyond it, with ANCHOR_ALPHA as the fallback, and for other than the default σ, λ and A the range's
    far end, reached by `carry`; for one α there, also where the path from the anchor does not reach α): `at(α)` is
    the branch's solution or None, `loss(α)` where and why it ended."""
    coords = BranchCoordinates(check_choice("branch", branch, ("positional", "semantic")), params)
    anchor = ANCHOR_ALPHA[branch]
    # The positional branch is followed down from its anchor, never started cold below it: below α ≈ 0.06 (ω = 0.3) it
    # has reached the trivial state, and a cold start at α = 1e-4 landed near it and passed for the branch (its path
    # up then jumped at α = 0.11, leaving the branch unsolved at every α).
    if branch == "semantic" and high is not None:
        anchor = max(anchor, high)
    # Where the moved anchor's cold start finds nothing (ω = 0.9, α = 6: the map leaves the domain), the branch is
    # followed there from its usual anchor, so that its loss is the path's evidence, not a failed start.
    fallback = [ANCHOR_ALPHA[branch]]
    path = path_from_defaults(params)
    # Away from the default parameters a branch can be absent at its usual anchor and present in the wanted range:
    # at ω = 0.3, λ = 0.06 the positional branch carried from λ = 0.01 at α = 0.3 ends continuously near λ = 0.046,
    # while at α = 1.25 it exists (m = 0.186 on 10 nodes). The far end of the range is then an anchor too, reached
    # without a cold start (one there can land on another fixed point): the default parameters' branch, followed
    # there in α from its own anchor, is carried to these parameters.
    carried_anchor = None if path is None else (high if branch == "positional" else low)
    if carried_anchor is not None:
        fallback.append(carried_anchor)

    def solve(alpha, guess, previous):
        if previous is None and alpha == carried_anchor and alpha not in (anchor, ANCHOR_ALPHA[branch]):
            return carried_from_defaults(alpha, None)
        solution = solve_branch(branch, alpha, params, nodes_per_dim=nodes_per_dim, guess=guess, stability=False)
        # a cold start at an anchor that finds no fixed point of the branch (none, or one on the trivial set): the
        # branch carried there from the default parameters
        if previous is None and path is not None and branch_loss(solution, None, coords) in ("not_converged",
                                                                                             "collapsed"):
            return carried_from_defaults(alpha, solution)
        return solution

    def carried_from_defaults(alpha, cold: BranchSolution | None) -> BranchSolution:
        """The branch at α carried from the default parameters (`carry` along `path` at fixed α), started from a cold
        start there where `cold` is the failed cold start at these parameters, else from the default parameters'
        branch followed to α."""
        start = None
        if cold is None:
            defaults = path(0.0)
            reached = follow(branch, defaults, nodes_per_dim, low=alpha, high=alpha)
            start = reached.at(alpha)
            if start is None:
                why = reached.loss(alpha).message
                return unsolved(branch, alpha, params, nodes_per_dim, "the branch at the default σ, λ and A, from "
                                f"which it would be carried, does not reach α = {alpha:g}: {why}")
        carried = carry(branch, lambda t: (path(t), alpha), nodes_per_dim,
                        start=None if start is None else start.state)
        return _carried_or_why_not(cold, carried, path, branch, alpha, nodes_per_dim)

    def lost(solution, prediction):
        if solution.status == Status.LOST:  # carried from where it exists, it met the trivial set on the way: evidence
            return "absent"
        reason = branch_loss(solution, prediction, coords)
        return reason if reason in ENDS_A_BRANCH else None

    def followed_from(start: float, fallback_anchors) -> Continuation:
        return Continuation(solve, lost, lambda solution: coords.from_state(solution.state), start,
                            max_step=FOLLOW_MAX_STEP, min_step=FOLLOW_MIN_STEP,
                            anchor_guess=initial_guess(branch, params), contains=coords.contains, name="α",
                            absent=absence(branch, params), fallback_anchors=fallback_anchors)

    near = followed_from(anchor, fallback)
    if carried_anchor is None or low != high or carried_anchor == anchor:
        return near
    # One α away from the default σ, λ and A: the branch can exist at the usual anchor and at α on two sheets that
    # do not meet in α (ω = 0.3, λ = 0.05: followed from α = 0.3 it ends at a fold near α = 0.34, while at α = 1.25 it
    # exists, m = 0.2036, continuous in λ with the default branch). Where the path from the usual anchor does not
    # reach α, the branch carried to α from the default parameters is it; where that fails too, the path's end
    # stays the evidence.
    if near.at(carried_anchor) is not None or carried_anchor in near.holes or near.loss(carried_anchor) is None:
        return near
    far = followed_from(carried_anchor, ())
    return far if far.at(carried_anchor) is not None else near


def _carried_or_why_not(cold: BranchSolution | None, carried: Continuation, path: Callable[[float], Parameters],
                        branch: str, alpha: float, nodes_per_dim: int) -> BranchSolution:
    """The branch carried to α from the default parameters along `path` where that succeeds; else the failed cold
    start `cold` (an unsolved one where there was none) with the carry's outcome, where it stopped given in the
    parameters: status lost where the carried branch collapsed onto the trivial set on the way or reached it
    continuously (`continuous_end_on_path`; the branch followed from where it exists ends there, as a loss in α
    does), its message added otherwise."""
    solution = carried.at(1.0)
    if solution is not None:
        return solution
    loss = carried.loss(1.0)
    where = ""
    if loss.bracket is not None and all(math.isfinite(t) for t in loss.bracket):
        alive, lost = (path(t) for t in loss.bracket)
        where = f" (alive at {_changed(alive, path(1.0))}, lost at {_changed(lost, path(1.0))})"
    what = (f"carried from the default σ, λ and A (t = 0) to the requested ones (t = 1) at α = {alpha:g} on a straight "
            f"path in log σ, log λ and A: {loss.message}{where}")
    if cold is None:  # reached only by the carry: its outcome is the whole message
        cold = unsolved(branch, alpha, path(1.0), nodes_per_dim, what)
    if loss.criterion == "collapsed":
        return replace(cold, status=Status.LOST, message=f"it collapses onto the trivial set: {what}")
    end = continuous_end_on_path(carried, branch)
    if end is not None:
        t_end, error = end
        order = "m" if branch == "positional" else "θ"
        return replace(cold, status=Status.LOST, message=(
            f"it reaches the trivial set continuously on the way, {order} = 0 at t = {t_end:.4f} ± {error:.1g} "
            f"({_changed(path(t_end), path(1.0))}; {order}² falls linearly in t over its last three points): {what}"))
    return cold if cold.message == what else replace(cold, message=f"{cold.message}; {what}")


# Where a carry stops on a point whose order parameter's square extrapolates linearly in t to 0 within this many of
# its last steps, the branch has met the trivial set continuously there (`continuous_end_on_path`).
END_LOOKAHEAD_STEPS = 2


def continuous_end_on_path(carried: Continuation, branch: str) -> tuple[float, float] | None:
    """(t_e, error) where the branch, carried along a path (`carry`) and lost after its last point alive, reaches the
    trivial set continuously (|m| for the positional branch, |θ| for the semantic one → 0 like √(t_e − t)); None
    where its last three points do not show that.

    Near such an end the solves at fixed parameters stop converging before it, as they do in α (`following`), so the
    end is extrapolated: the order parameter's square must fall along the last three points, t_e is the zero of the
    line through the last two, within END_LOOKAHEAD_STEPS of the last step beyond it, and its error, the difference
    from the zero through the two before, at most half that distance (a fold, where the square falls ever faster, or
    a path that only dips, fails these). At ω = 0.3, α = 0.3, on the path to σ = 0.3, λ = 0.1 the positional branch's
    m² falls 1.83e-3, 1.28e-3, 7.97e-4 at t = 0.3197, 0.3238, 0.3277: t_e = 0.3342 ± 0.0008, where q falls to 0 too."""
    loss = carried.loss(1.0)
    if loss is None or loss.bracket is None:
        return None
    alive = loss.bracket[0]
    ts = sorted(t for t in carried.path if t <= alive)[-3:]
    if len(ts) < 3:
        return None
    squares = [_order_parameter_size(carried.path[t], branch) ** 2 for t in ts]
    if not squares[0] > squares[1] > squares[2] > 0:
        return None
    zeros = [t1 + s1 * (t1 - t0) / (s0 - s1) for t0, t1, s0, s1 in zip(ts, ts[1:], squares, squares[1:])]
    ahead, error = zeros[-1] - alive, abs(zeros[-1] - zeros[-2])
    if not 0 < ahead <= END_LOOKAHEAD_STEPS * (alive - ts[1]) or error > 0.5 * ahead:
        return None
    return zeros[-1], error


def _order_parameter_size(solution: BranchSolution, branch: str) -> float:
    """|m| (positional) or |θ| (semantic): what vanishes on the trivial set."""
    return float(np.linalg.norm(solution.state[3:])) if branch == "positional" else abs(float(solution.theta))


def _changed(params: Parameters, target: Parameters) -> str:
    """σ, λ and A of `params`, as far as the path moves them (those that differ from their defaults at `target`)."""
    defaults = Parameters(omega=target.omega, L=target.L, gram=target.gram)
    parts = [f"σ = {params.sigma:.4g}" if target.sigma != defaults.sigma else "",
             f"λ = {params.lam:.4g}" if target.lam != defaults.lam else "",
             "A = (" + ", ".join(f"{a:.4g}" for a in params.A) + ")" if target.A != defaults.A else ""]
    return ", ".join(p for p in parts if p)


# A branch is carried along a path of parameters (`carry`) in steps of at most CARRY_STEP of the path, halved on a
# failure down to CARRY_MIN_STEP.
CARRY_STEP = 1 / 8
CARRY_MIN_STEP = 1 / 256


def carry(branch: str, path, nodes_per_dim: int, *, start=None) -> Continuation:
    """The branch's fixed point carried along `path` (t in [0, 1] -> (Parameters, α)) from t = 0, where its solve from
    `start` (a full state; None: the cold start `initial_guess`) is to find it, as a `numeric.branches.Continuation`
    in t (steps of at most CARRY_STEP, halved down to CARRY_MIN_STEP where the solve fails, the branch collapses onto
    the trivial set or jumps): `at(1.0)` is the branch at the path's end, None where it is lost on the way
    (`loss(1.0)` says where and why) or not found at t = 0. The path is extrapolated in the full state (q, V, θ, m),
    whose reduced coordinates depend on the parameters along it."""
    # One set of reduced coordinates measures every jump: the same metric along the whole path.
    metric = BranchCoordinates(branch, path(0.0)[0])

    def solve(t, guess, previous):
        params, alpha = path(t)
        start = None if guess is None else BranchCoordinates(branch, params).from_state(guess)
        return solve_branch(branch, alpha, params, nodes_per_dim=nodes_per_dim, guess=start, stability=False)

    def lost(solution, prediction):
        predicted = None if prediction is None else metric.from_state(prediction)
        if branch != "trivial":
            reason = branch_loss(solution, predicted, metric)
            return reason if reason in ENDS_A_BRANCH else None
        # the trivial state's order parameters are 0 (branch_loss would call it collapsed): a failed solve or a jump
        if not solution.success:
            return "not_converged"
        if predicted is None:
            return None
        jumped = np.any(np.abs(metric.from_state(solution.state) - predicted) > JUMP_FRACTION * np.abs(predicted))
        return "jumped" if jumped else None

    return Continuation(solve, lost, lambda solution: solution.state, 0.0, max_step=CARRY_STEP,
                        min_step=CARRY_MIN_STEP, name="t", anchor_guess=start)


def path_from_defaults(params: Parameters) -> Callable[[float], Parameters] | None:
    """The straight path t in [0, 1] -> Parameters from the default σ, λ and A (at the same ω, L and encodings;
    t = 0) to `params` (t = 1), in log σ, log λ and A (the scales move geometrically; a row-stochastic A stays
    so): the path a branch is carried along (`carry`) where its cold start fails for other parameters (σ = 0.7,
    ω = 0.3: the semantic map leaves the domain from it at α = 3), from where it is known to exist. None where the
    parameters are the defaults."""
    defaults = Parameters(omega=params.omega, L=params.L, gram=params.gram)
    if defaults.A is None or (defaults.sigma, defaults.lam, defaults.A) == (params.sigma, params.lam, params.A):
        return None
    start_A, end_A = np.array(defaults.A), np.array(params.A)

    def path(t):
        return Parameters(omega=params.omega, sigma=defaults.sigma * (params.sigma / defaults.sigma) ** t,
                          lam=defaults.lam * (params.lam / defaults.lam) ** t,
                          A=tuple(float(a) for a in start_A + t * (end_A - start_A)), L=params.L, gram=params.gram)

    return path


def absence(branch: str, params: Parameters) -> str | None:
    """Why `branch` has no fixed point at any α for these parameters (None when it may have one).

    At ω = 1 the teacher y = A x does not depend on Q*: the prox depends on (ξ, η) through ξ alone, so
    E[g η] = 0 and θ̂ = α E[g η]/V* = 0 for every state, and θ = 0 after one step of the map. No fixed point
    has θ ≠ 0, on any rule. (Just below ω = 1 the tensor rule has semantic fixed points whose θ does not shrink
    with 1 − ω, |θ| = 0.021 at ω = 0.999, α = 3; split-line 8 has none at ω = 0.9 and 0.99, α = 3.)"""
    if branch == "semantic" and params.omega == 1.0:
        return "at ω = 1 the teacher (y = A x) does not depend on Q*, so θ̂ = α E[g η]/V* = 0 for every state"
    return None
