"""Local and global minimisation from several starts, and roots of a derivative on sign-change brackets.

* `minimize_multistart_newton`: the numpy reference of the state-evolution solver. Inside a state-evolution map
  the same non-convex minimisation (a proximal map) is solved at every quadrature node, and the GLOBAL minimiser
  is required: a safeguarded Newton iteration from several starts for all problems at once (numpy over the
  stacked points), keeping per problem the end point with the lowest objective. The maps themselves run
  `derive.fused.MultiStartNewton`, the same iteration step for step in one compiled loop (about 10 times
  faster); this version is what it is tested against (tests/derive/test_derive_fused.py,
  tests/models/test_positional_semantic_numerics.py).
* `multistart_local_minima`: EVERY local minimum of one smooth function of a few variables (a reduced
  action with coexisting phases), from a list of starts, folded by the function's symmetry and deduplicated.
* `bracketed_roots`: the roots of f on many sign-change brackets at once (safeguarded Newton: bisection when
  a Newton step leaves its bracket), e.g. the stationary points of a one-dimensional action from a scan.
* `log_pattern_search`: a local maximum of an expensive function of two positive variables, refined from a
  point (a grid's best) by a pattern search in their logarithms, each round's 3 × 3 neighbours evaluated in one
  batch (e.g. one integration of several ODEs at once).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from attnphase.results import Result, Status

__all__ = ["MultiStartMinimum", "minimize_multistart_newton", "first_lowest", "symmetric_eigen", "LocalMinima",
           "multistart_local_minima", "sign_change_brackets", "DIP_REFINEMENTS", "MAX_DIPS", "refined_at_dips",
           "bracketed_roots", "log_pattern_search"]


@dataclass(frozen=True)
class MultiStartMinimum:
    """Result of `minimize_multistart_newton`.

    x: (N, n) global minimiser found at each of the N problems; value: (N,) objective there;
    start_index: (N,) which start reached it; converged: (N,) whether that start converged;
    iterations: Newton iterations of the slowest start; local_minima: (K, N, n) every start's end point.
    """

    x: np.ndarray
    value: np.ndarray
    start_index: np.ndarray
    converged: np.ndarray
    iterations: int
    local_minima: np.ndarray = field(repr=False)
    local_values: np.ndarray = field(repr=False)


def minimize_multistart_newton(objective, gradient_hessian, starts, *, tol=1e-13, max_iter=80, max_step=2.0):
    """Minimise N independent smooth functions of n variables from K starts each; keep the best.

    objective(x, rows) -> (M,) and gradient_hessian(x, rows) -> ((M, n), (M, n, n)) are evaluated on
    stacked points x of shape (M, n), `rows` (M,) giving the problem each point belongs to; the k-th
    start of problem i is starts[k, i]. Every start runs a
    saddle-free Newton iteration (the Hessian's eigenvalues replaced by max(|λ|, floor), so every step
    is a descent direction even where the objective is not convex), with the step length capped at
    `max_step` and Armijo backtracking. Only unconverged points are evaluated. The global minimiser of
    problem i is the end point with the lowest objective among its K starts (the first start wins a
    tie, see `first_lowest`, so the result is a deterministic function of the start list).
    """
    starts = np.asarray(starts, dtype=float)
    K, N, n = starts.shape
    x = starts.reshape(K * N, n).copy()
    problem = np.tile(np.arange(N), K)
    f = objective(x, problem)
    active = np.arange(K * N)
    converged = np.zeros(K * N, dtype=bool)
    iterations = 0
    for iterations in range(1, max_iter + 1):
        if active.size == 0:
            break
        xa, fa = x[active], f[active]
        grad, hess = gradient_hessian(xa, problem[active])
        eigval, eigvec = symmetric_eigen(hess)
        scale = np.maximum(np.abs(eigval).max(axis=1, keepdims=True), 1e-300)
        modified = np.maximum(np.abs(eigval), 1e-8 * scale)
        step = -np.einsum("mij,mj->mi", eigvec, np.einsum("mji,mj->mi", eigvec, grad) / modified)
        length = np.sqrt((step**2).sum(axis=1))
        step *= np.minimum(1.0, max_step / np.maximum(length, 1e-300))[:, None]
        slope = (grad * step).sum(axis=1)
        # a step below tol ends the iteration without an evaluation at its end (f changes below its rounding)
        small = np.abs(step).max(axis=1) <= tol * (1.0 + np.abs(xa).max(axis=1))
        x[active[small]] += step[small]
        converged[active[small]] = True
        active, xa, fa, grad, step, slope = (active[~small], xa[~small], fa[~small], grad[~small], step[~small],
                                             slope[~small])
        if active.size == 0:
            break
        t = np.ones(active.size)
        accepted = np.zeros(active.size, dtype=bool)
        x_new, f_new = xa.copy(), fa.copy()
        pending = np.arange(active.size)
        for _ in range(40):
            trial = xa[pending] + t[pending, None] * step[pending]
            f_trial = objective(trial, problem[active[pending]])
            # Armijo, with a rounding allowance so that the last quadratic-convergence steps are kept.
            ok = np.isfinite(f_trial) & (
                f_trial <= fa[pending] + 1e-4 * t[pending] * slope[pending] + 8 * np.finfo(float).eps * np.abs(fa[pending])
            )
            done = pending[ok]
            x_new[done], f_new[done], accepted[done] = trial[ok], f_trial[ok], True
            pending = pending[~ok]
            if pending.size == 0:
                break
            t[pending] *= 0.5
        x[active], f[active] = x_new, f_new
        moved = np.abs(t[:, None] * step).max(axis=1)
        finished = (moved <= tol * (1.0 + np.abs(xa).max(axis=1))) & accepted
        stalled = ~accepted  # no decrease possible within rounding: a minimum to machine precision
        converged[active[finished | stalled]] = True
        active = active[~(finished | stalled)]
    values = f.reshape(K, N)
    minima = x.reshape(K, N, n)
    best = first_lowest(values)
    idx = np.arange(N)
    return MultiStartMinimum(
        x=minima[best, idx], value=values[best, idx], start_index=best,
        converged=converged.reshape(K, N)[best, idx], iterations=iterations,
        local_minima=minima, local_values=values,
    )


# Values this many units in the last place of the lowest apart are a tie (see first_lowest).
TIE_ULPS = 64


def first_lowest(values: np.ndarray) -> np.ndarray:
    """Per column of values (K starts × N problems), the first start whose end value ties the lowest.

    A tie is a value within TIE_ULPS units in the last place of the lowest, not bitwise equality: at a node on a
    symmetry of the problem two starts end on mirror-image minima of the same value, and which of the two rounds
    lower depends on the order of the floating-point operations. With argmin the choice (and the map's integrand
    there) flipped with changes at the level of rounding; the first start is the same choice every time. A NaN end
    (a start where the objective is not finite) never wins over a number."""
    values = np.asarray(values, dtype=float)
    lowest = np.fmin.reduce(values, axis=0)
    return np.argmax(values <= lowest + TIE_ULPS * np.finfo(float).eps * np.abs(lowest), axis=0)


def _norm(u, v):
    """√(u² + v²), with hypot only where the squares leave the normal range: derive.fused's formula, so that the
    two implementations take the same steps to rounding."""
    with np.errstate(over="ignore", under="ignore"):
        squares = u * u + v * v
        return np.where((squares > 1e-290) & (squares < 1e290), np.sqrt(squares), np.hypot(u, v))


def symmetric_eigen(H):
    """Eigenvalues (M, n) and eigenvectors (M, n, n) of a stack of symmetric matrices.

    2×2 in closed form (batched LAPACK is much slower for tiny blocks): the larger eigenvalue's unit eigenvector
    from the better-conditioned row of H − λ I, as in derive.fused's Newton step.
    """
    if H.shape[-1] != 2:
        return np.linalg.eigh(H)
    a, b, c = H[:, 0, 0], H[:, 0, 1], H[:, 1, 1]
    mean, radius = 0.5 * (a + c), _norm(0.5 * (a - c), b)
    cos = np.where(a >= c, 0.5 * (a - c) + radius, b)
    sin = np.where(a >= c, b, 0.5 * (c - a) + radius)
    length = _norm(cos, sin)
    flat = length == 0.0  # a multiple of the identity: any basis
    cos, sin = np.where(flat, 1.0, cos / np.where(flat, 1.0, length)), np.where(flat, 0.0, sin / np.where(flat, 1.0, length))
    eigval = np.stack([mean + radius, mean - radius], axis=1)
    eigvec = np.empty_like(H)
    eigvec[:, 0, 0], eigvec[:, 1, 0] = cos, sin
    eigvec[:, 0, 1], eigvec[:, 1, 1] = -sin, cos
    return eigval, eigvec


@dataclass(frozen=True)
class LocalMinima(Result):
    """Result of `multistart_local_minima`: points, the distinct local minima found (each in the canonical
    form of the symmetry); iterations, the minimiser's iterations summed over the starts; status converged
    (at least one minimum) or not_found (every start failed or ran out of the finite numbers); stopped, the
    finite end points of the starts that stopped short of a minimum (canonical form, distinct): not minima,
    but candidates for a caller that polishes its own (e.g. Newton on the stationarity conditions)."""

    points: tuple
    iterations: int
    status: Status
    message: str
    stopped: tuple = ()


# Steps of the rescaled retry of `multistart_local_minima` (the badly scaled copy-heads actions converge in 1-2
# steps once rescaled; a retry that runs on is a start far from any minimum, 0.2 s per 500 steps).
RESCALED_MAX_ITER = 50


def multistart_local_minima(objective: Callable, gradient: Callable, hessian: Callable, starts: Sequence, *,
                            canonical: Callable | None = None, gtol: float = 1e-10, max_iter: int = 500,
                            rtol: float = 1e-6, atol: float = 1e-6) -> LocalMinima:
    """Every local minimum reached from `starts` by a trust-region Newton method (scipy "trust-exact").

    objective(x) -> float, gradient(x) -> (n,), hessian(x) -> (n, n); canonical(x) maps an end point onto the
    representative of its symmetry class (e.g. (t, c) -> (-t, -c) folded onto t >= 0); end points within
    `rtol`/`atol` of one found before are the same minimum. A start whose path leaves the finite numbers
    (the objective overflows float64 at extreme parameters) is skipped: scipy raises from inside the
    subproblem then (UnboundLocalError when the trust-exact Hessian turns non-finite), or ends non-finite.

    An end point where the gradient did not reach `gtol` counts only when it is settled (`_settled`): a
    positive definite Hessian and a remaining Newton step within the tolerance that tells minima apart.
    That keeps the minima where rounding stopped the iteration (an action of 1e8-1e9, whose gradient cannot
    reach an absolute 1e-10, ends with "a bad approximation caused failure to predict improvement" about
    1e-9 from its minimum) and drops a start stopped by `max_iter` on its way, or on a ridge. A start that
    ends unsettled before `max_iter` is run once more, for at most RESCALED_MAX_ITER steps, in coordinates
    scaled by the square roots of its Hessian's diagonal: curvatures of very different sizes (1 and 4e303 at a
    prior variance of 1e-300 in the copy-heads actions) stop trust-exact at its first step, where the scaled
    problem is well conditioned. The end points that still stop short are returned in `stopped`.
    """
    def add(x, points):
        point = x if canonical is None else canonical(x)
        if not any(np.allclose(point, other, atol=atol, rtol=rtol) for other in points):
            points.append(point)

    found, stopped, iterations, unsettled = [], [], 0, 0
    for start in starts:
        start = np.asarray(start, float)
        end = _trust_exact(objective, gradient, hessian, start, np.ones_like(start), gtol, max_iter)
        if end is not None and not _settled(end, gradient, hessian, atol, rtol):
            iterations += end.iterations
            # retried only where trust-exact gave up early (a step it could not predict), not after max_iter steps,
            # and for at most RESCALED_MAX_ITER steps: where the scaling cures the conditioning it converges in a few
            scaled = (None if end.iterations >= max_iter else
                      _trust_exact(objective, gradient, hessian, start, _diagonal_scale(hessian, start), gtol,
                                   min(max_iter, RESCALED_MAX_ITER)))
            if scaled is None or not _settled(scaled, gradient, hessian, atol, rtol):
                unsettled += 1
                add((end if scaled is None else scaled).x, stopped)
                continue
            end = scaled
        if end is None:
            continue
        iterations += end.iterations
        add(end.x, found)
    note = f"; {unsettled} start(s) stopped short of a minimum" if unsettled else ""
    if found:
        return LocalMinima(tuple(found), iterations, Status.CONVERGED, f"{len(found)} local minimum/minima{note}",
                           tuple(stopped))
    return LocalMinima((), iterations, Status.NOT_FOUND, f"no start of {len(starts)} reached a finite minimum{note}",
                       tuple(stopped))


@dataclass(frozen=True)
class _EndPoint:
    """Where one trust-exact run ended: x, whether its gradient reached gtol, and the iterations it took."""

    x: np.ndarray
    converged: bool
    iterations: int


def _trust_exact(objective: Callable, gradient: Callable, hessian: Callable, start: np.ndarray, scale: np.ndarray,
                 gtol: float, max_iter: int) -> _EndPoint | None:
    """scipy's trust-exact from `start` in the coordinates y = scale·x (scale 1: the plain problem, bit for bit);
    None where the path leaves the finite numbers (scipy raises from inside the subproblem then, UnboundLocalError
    when the Hessian turns non-finite, or it ends non-finite)."""
    from scipy.optimize import minimize

    try:
        with np.errstate(all="ignore"):
            res = minimize(lambda y: objective(y / scale), start * scale, jac=lambda y: gradient(y / scale) / scale,
                           hess=lambda y: hessian(y / scale) / np.outer(scale, scale), method="trust-exact",
                           options={"gtol": gtol, "maxiter": max_iter})
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, UnboundLocalError):
        return None
    x = res.x / scale
    if not (np.all(np.isfinite(x)) and np.isfinite(res.fun)):
        return None
    return _EndPoint(x, bool(res.success), int(res.nit))


def _diagonal_scale(hessian: Callable, start: np.ndarray) -> np.ndarray:
    """√|H_ii| at the start (1 where that is zero or not finite): the scaled Hessian has a unit diagonal there."""
    with np.errstate(all="ignore"):
        diagonal = np.sqrt(np.abs(np.diag(np.asarray(hessian(start), float))))
    return np.where(np.isfinite(diagonal) & (diagonal > 0), diagonal, 1.0)


def _settled(end: _EndPoint, gradient: Callable, hessian: Callable, atol: float, rtol: float) -> bool:
    """Whether the end point is a local minimum: its gradient reached gtol, or, to within the tolerance of
    `np.allclose(·, atol, rtol)`, the Hessian there is positive definite and the Newton step to the stationary
    point is within atol + rtol |x| in every coordinate. Both are computed on the Hessian scaled to a unit
    diagonal (D^-1/2 H D^-1/2, the same definiteness): with curvatures 4 and 4e303 an LU solve of H itself
    returns a zero step along the soft direction where the true one is 1.7."""
    if end.converged:
        return True
    x = end.x
    with np.errstate(all="ignore"):
        g = np.asarray(gradient(x), float)
        H = np.asarray(hessian(x), float)
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(H))):
            return False
        d = np.sqrt(np.abs(np.diag(H)))
        if not np.all(d > 0):  # a zero curvature: not positive definite
            return False
        scaled = H / np.outer(d, d)
        if np.linalg.eigvalsh(0.5 * (scaled + scaled.T))[0] <= 0:
            return False
        try:
            step = np.linalg.solve(scaled, g / d) / d
        except np.linalg.LinAlgError:  # positive definite to rounding only
            return False
    return bool(np.all(np.abs(step) <= atol + rtol * np.abs(x)))


def sign_change_brackets(values: np.ndarray) -> np.ndarray:
    """Indices i with sign(values[i]) != sign(values[i + 1]): the grid cells that bracket a root."""
    return np.nonzero(np.sign(values[:-1]) != np.sign(values[1:]))[0]


# Refinements of a grid around the dips of |f| that keep their sign (`refined_at_dips`), and the dips refined per level
# (the deepest): where f is rounding noise (a copy-heads action at extreme parameters) every other point is a dip, and
# refining them all grew the grid without bound.
DIP_REFINEMENTS = 8
MAX_DIPS = 16


def refined_at_dips(f: Callable, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, f(x)) on the increasing grid `xs`, with 31 points added inside the two cells around every local minimum of
    |f| where f keeps its sign (two roots of f may lie in one cell there, which `sign_change_brackets` cannot see),
    the deepest MAX_DIPS of them (|f| smallest against its neighbours), repeated up to DIP_REFINEMENTS times (each
    level narrows the cells 16-fold). f takes and returns arrays."""
    g = f(xs)
    for _ in range(DIP_REFINEMENTS):
        inner = np.arange(1, len(xs) - 1)
        same = (np.sign(g[inner - 1]) == np.sign(g[inner])) & (np.sign(g[inner + 1]) == np.sign(g[inner]))
        dip = inner[same & (np.abs(g[inner]) < np.abs(g[inner - 1])) & (np.abs(g[inner]) < np.abs(g[inner + 1]))]
        if len(dip) == 0:
            break
        depth = np.abs(g[dip]) / np.maximum(np.abs(g[dip - 1]), np.abs(g[dip + 1]))
        dip = dip[np.argsort(depth, kind="stable")[:MAX_DIPS]]
        xs = np.union1d(xs, np.concatenate([np.linspace(xs[i - 1], xs[i + 1], 33)[1:-1] for i in dip]))
        g = f(xs)
    return xs, g


def bracketed_roots(f: Callable, df: Callable, lo: np.ndarray, hi: np.ndarray, f_lo: np.ndarray, *,
                    max_iter: int = 60, rtol: float = 1e-13) -> np.ndarray:
    """Roots of f in every bracket [lo_i, hi_i] at once (f(lo_i) = f_lo_i and f(hi_i) of opposite signs).

    f and df take and return arrays shaped like lo. Each iteration takes the Newton step where it stays
    inside its (shrinking) bracket and bisects where it does not, so every root stays bracketed; the
    iteration stops when no point moves by more than rtol·max(1, |x|).
    """
    lo, hi, f_lo = np.array(lo, float), np.array(hi, float), np.array(f_lo, float)
    x = 0.5 * (lo + hi)
    for _ in range(max_iter):
        fx, dfx = f(x), df(x)
        left = np.sign(fx) == np.sign(f_lo)
        lo, hi = np.where(left, x, lo), np.where(left, hi, x)
        f_lo = np.where(left, fx, f_lo)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - fx / dfx
        inside = np.isfinite(newton) & (newton > lo) & (newton < hi)
        x_new = np.where(inside, newton, 0.5 * (lo + hi))
        done = np.all(np.abs(x_new - x) <= rtol * np.maximum(1.0, np.abs(x)))
        x = x_new
        if done:
            break
    return x


def log_pattern_search(values: Callable[[np.ndarray, np.ndarray], np.ndarray], x: float, y: float, value: float, *,
                       factor: float = math.sqrt(2.0), smallest: float = 2.0 ** (1 / 32),
                       feasible: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                       go_on: Callable[[], bool] = lambda: True) -> tuple[float, float, float]:
    """(x, y, value) at a local maximum of values over x, y > 0, from (x, y) whose value is `value`: a pattern search
    in (ln x, ln y) over the 3 × 3 neighbours at `factor`, square-rooted each time none is better than the centre,
    until it is at most `smallest` or go_on() says stop (a budget spent). values(xs, ys) -> the values of the (3, 3)
    arrays of candidates in one call, -inf (or NaN) where a candidate is not usable; feasible(xs, ys) -> ys moved onto
    the feasible set (e.g. a bound on y that depends on x), applied before the values. A start without a finite value
    is returned as it is."""
    while math.isfinite(value) and factor > smallest and go_on():
        scale = factor ** np.array([-1.0, 0.0, 1.0])
        xs = np.broadcast_to((x * scale)[:, None], (3, 3))
        ys = np.broadcast_to((y * scale)[None, :], (3, 3))
        if feasible is not None:
            ys = feasible(xs, ys)
        found = np.asarray(values(xs, ys), dtype=float)
        found = np.where(np.isfinite(found), found, -math.inf)
        i, j = np.unravel_index(int(np.argmax(found)), found.shape)
        if found[i, j] > value:
            x, y, value = float(xs[i, j]), float(ys[i, j]), float(found[i, j])
        else:
            factor = math.sqrt(factor)
    return x, y, value
