"""A damped Newton descent in mpmath to a local minimum, with a bound on how far it stopped from it.

For minima that float64 cannot locate: a landscape so flat that the gradient drops below a float64 minimiser's
tolerance far from the minimum (quartic next to a second-order transition), or an objective so large that its rounding
stops the minimiser. `descend` runs Newton's method at `dps` digits from a start, the Hessian's eigenvalues taken by
absolute value where it is not positive definite (in coordinates scaled to a unit diagonal), so that every step goes
downhill, with an Armijo backtracking on the objective, until the step falls below `STEP_TOLERANCE` or for at most
`MAX_STEPS` steps. In a quartic well Newton's method contracts each step only by about 2/3 until it reaches the
quadratic region, so the error of a coordinate is the last step divided by one minus the observed contraction (the geometric
tail), not the last step alone (which missed by a factor 2 next to the copy-heads P*). `action_error` bounds the
objective's distance from its value at the minimum from those errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mpmath
import numpy as np

__all__ = ["MAX_STEPS", "STEP_TOLERANCE", "Descent", "descend", "action_error"]

MAX_STEPS = 400
"""Newton steps from one start. At a contraction of 2/3 per step (a quartic well) the distance falls 1e5-fold in 28
steps, and the quadratic region then needs a few more (next to the copy-heads P*: from t = 1e-4 to 1e-9 in 28 steps,
about 30 more to the floor 10^(−dps/2))."""

STEP_TOLERANCE = 1e-25
"""A coordinate has converged when the Newton step left on it is at most this times its value plus the absolute
floor 10^(−dps/2): nine orders below the float64 rounding of the value that is reported."""


@dataclass(frozen=True)
class Descent:
    """Where `descend` ended: the point and its coordinate errors (mpmath numbers), whether the Newton step fell
    below the tolerance (converged) and the steps taken."""

    point: list
    errors: list
    converged: bool
    steps: int


def _direction(g, H) -> list:
    """The Newton direction −H⁻¹g in coordinates scaled to a unit diagonal, the eigenvalues of the scaled Hessian taken
    by absolute value (a descent direction where H is indefinite)."""
    size = len(g)
    scale = [1 / mpmath.sqrt(abs(H[i, i])) if H[i, i] != 0 else mpmath.mpf(1) for i in range(size)]
    scaled = mpmath.matrix([[scale[i] * H[i, j] * scale[j] for j in range(size)] for i in range(size)])
    eigenvalues, vectors = mpmath.eigsy(scaled)
    floor = mpmath.mpf(10) ** (-mpmath.mp.dps // 2)
    direction = [mpmath.mpf(0)] * size
    for k in range(size):
        along = sum(vectors[i, k] * scale[i] * g[i] for i in range(size)) / max(abs(eigenvalues[k]), floor)
        for i in range(size):
            direction[i] -= scale[i] * vectors[i, k] * along
    return direction


def _values(gradient: Callable, hessian: Callable, p) -> tuple[list, mpmath.matrix]:
    return list(np.ravel(gradient(p))), mpmath.matrix(np.atleast_2d(hessian(p)).tolist())


def descend(action: Callable, gradient: Callable, hessian: Callable, start, dps: int) -> Descent:
    """A damped Newton descent in mpmath at `dps` digits from `start`: action(p) -> mpf, gradient(p) -> sequence,
    hessian(p) -> rows (p a list of mpf); see the module docstring."""
    with mpmath.workdps(dps):
        p = [mpmath.mpf(float(x)) for x in start]
        S = action(p)
        floor = mpmath.mpf(10) ** (-dps // 2)
        previous = None
        for step in range(1, MAX_STEPS + 1):
            g, H = _values(gradient, hessian, p)
            d = _direction(g, H)
            size = max(abs(x) for x in d)
            if all(abs(di) <= STEP_TOLERANCE * abs(pi) + floor for di, pi in zip(d, p)):
                ratio = size / previous if previous else mpmath.mpf(0)
                return Descent([pi + di for pi, di in zip(p, d)], _tail(d, ratio), True, step)
            slope = sum(gi * di for gi, di in zip(g, d))
            noise = floor * (1 + abs(S))
            alpha = mpmath.mpf(1)
            while True:
                trial = [pi + alpha * di for pi, di in zip(p, d)]
                S_trial = action(trial)
                if S_trial <= S + alpha * slope / 10**4 or (alpha == 1 and S_trial <= S + noise):
                    break
                alpha /= 2
                if alpha < mpmath.mpf(2) ** -80:  # no descent left at this precision: stop where it is
                    return Descent(p, [mpmath.inf] * len(p), False, step)
            previous = size if alpha == 1 else None  # a contraction is measured on full steps only
            p, S = trial, S_trial
        ratio = size / previous if previous else mpmath.mpf(1)
        return Descent(p, _tail(d, ratio), False, MAX_STEPS)


def _tail(d, ratio) -> list:
    """The distance left to the stationary point from the next step d and the observed contraction per step: the
    geometric tail |d|/(1 − ratio); infinite where the steps do not contract (0 for a coordinate that does not move)."""
    tail = 1 / (1 - ratio) if ratio < 1 else mpmath.inf
    return [abs(di) * tail if di != 0 else mpmath.mpf(0) for di in d]


def action_error(action: Callable, gradient: Callable, hessian: Callable, descent: Descent, dps: int):
    """(the action at the descent's point, a bound on its distance from the action at the true stationary point):
    Σ|g_i|δ_i + ½Σ|H_ij|δ_iδ_j from the coordinates' errors δ, plus the rounding of the evaluation (the difference of
    the action at dps and dps + 20 digits). Entry by entry, not ‖H‖(Σδ)²: at σ² = 1e-100 the copy curvature is 1e100
    times the others, and the largest entry times the t error squared had dropped the stable minimum."""
    with mpmath.workdps(dps + 20):
        exact = action(descent.point)
    with mpmath.workdps(dps):
        value = action(descent.point)
        g, H = _values(gradient, hessian, descent.point)
        delta, size = descent.errors, len(g)
        curvature = sum(abs(H[i, j]) * delta[i] * delta[j] for i in range(size) for j in range(size))
        bound = sum(abs(gi) * di for gi, di in zip(g, delta)) + curvature / 2 + abs(value - exact)
    return exact, bound
