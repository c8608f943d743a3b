"""The local minima of the linear reduced action (one shared row sum), found and polished in mpmath for `solve`.

The float64 multistart minimiser (`homogeneous.linear_minima`) only proposes where to start. It is not trusted
with the minimum itself: next to the second-order P* the landscape is quartic and so flat that its gradient drops
below the minimiser's tolerance far from the minimum (L = 4096, P − P* = 5e-11: it stopped at t = 1.5e-5, 7.7e-5
and 8.5e-5, the minimum is at t = 8.5e-7), and at n ≳ 1e14 the float64 action (of size n) stops it wherever
its rounding does. From every proposal, from every start it stopped short of, and from the symmetric point t = c = 0,
`descend` runs a damped Newton method in mpmath (the Hessian's eigenvalues taken by absolute value where it is not
positive definite, so that it goes downhill; an Armijo backtracking on the mpmath action) until the step falls below
`STEP_TOLERANCE`, or for at most `MAX_STEPS` steps. In the flat quartic well Newton's method contracts each step
only by about 2/3 until it reaches the quadratic region, so the error of a coordinate is the last step divided by
one minus the observed contraction (the geometric tail), not the last step alone (which missed by a factor 2).

A point is reported as a minimum distinct from the symmetric point only where its action lies below the symmetric
point's by more than its error (`action_error`); the others are the symmetric point reached slowly (below P*
every start ends there) and are dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import numpy as np

from attnphase.models.copy_heads import kernels
from attnphase.models.copy_heads.instance import CopyHeadsInstance

__all__ = ["MAX_STEPS", "STEP_TOLERANCE", "Descent", "working_digits", "descend", "action_error", "loss_kernel_mp"]

MAX_STEPS = 400
"""Newton steps from one start. From t = 1e-4 a contraction of 2/3 reaches t = 1e-9 in 28 steps; the symmetric point
at the floor below (10^(−dps/2)) is reached in about 30 more (quadratic, then cubic)."""

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


def working_digits(inst: CopyHeadsInstance, n_: float) -> int:
    """Digits of the mpmath descent: 50, plus what the gradient's cancellation loses: the terms are of size n (or the
    prior precisions λ_t, λ_c, 1/τ) and cancel to the smallest curvature (3 log10 L digits lost between the copy and
    the uniform curvature)."""
    values = inst.values()
    spread = sum(abs(math.log10(float(values[name]))) for name in ("lam_t", "lam_c", "tau") if name in values
                 and float(values[name]) > 0)
    return 50 + math.ceil(max(0.0, math.log10(n_)) + 3 * math.log10(inst.L) + spread)


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


def _values(action, p, n_):
    g = list(np.ravel(action.gradient_mp(*p, n_)))
    H = mpmath.matrix(np.atleast_2d(action.hessian_mp(*p, n_)).tolist())
    return g, H


def descend(action, start, n_, dps: int) -> Descent:
    """A damped Newton method in mpmath at `dps` digits from `start` on the bound action's mpmath kernels."""
    with mpmath.workdps(dps):
        p = [mpmath.mpf(float(x)) for x in start]
        S = action.action_mp(*p, n_)
        floor = mpmath.mpf(10) ** (-dps // 2)
        previous = None
        for step in range(1, MAX_STEPS + 1):
            g, H = _values(action, p, n_)
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
                S_trial = action.action_mp(*trial, n_)
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


def action_error(action, descent: Descent, n_, dps: int):
    """(the action at the descent's point, a bound on its distance from the action at the true stationary point):
    Σ|g_i|δ_i + ½Σ|H_ij|δ_iδ_j from the coordinates' errors δ, plus the rounding of the evaluation (the difference of
    the action at dps and dps + 20 digits). Entry by entry, not ‖H‖(Σδ)²: at σ² = 1e-100 the copy curvature is 1e100
    times the others, and the largest entry times the t error squared had dropped the stable minimum."""
    with mpmath.workdps(dps + 20):
        exact = action.action_mp(*descent.point, n_)
    with mpmath.workdps(dps):
        value = action.action_mp(*descent.point, n_)
        g, H = _values(action, descent.point, n_)
        delta, size = descent.errors, len(g)
        curvature = sum(abs(H[i, j]) * delta[i] * delta[j] for i in range(size) for j in range(size))
        bound = sum(abs(gi) * di for gi, di in zip(g, delta)) + curvature / 2 + abs(value - exact)
    return exact, bound


def loss_kernel_mp(inst: CopyHeadsInstance):
    """(mean-predictor, Gibbs) loss at (m, q, t, n) in mpmath: in float64 the mean-predictor loss at n ≳ 1e16 is
    the cancellation 1 − w(2 − w) with w → 1, and came out negative (−1.7e-16 at L = 16, n = 1e16)."""
    kernel = kernels.loss_kernel_mp(inst.convention.centred)
    return kernels.bind(kernel, inst.values(exact=True))
