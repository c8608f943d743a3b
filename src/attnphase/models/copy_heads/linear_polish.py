"""What the mpmath descent of the linear reduced action's minima needs from the model (`homogeneous._linear_minima`).

The float64 multistart minimiser (`homogeneous.linear_minima`) only proposes where to start. It is not trusted
with the minimum itself: next to the second-order P* the landscape is quartic and so flat that its gradient drops
below the minimiser's tolerance far from the minimum (L = 4096, P − P* = 5e-11: it stopped at t = 1.5e-5, 7.7e-5
and 8.5e-5, the minimum is at t = 8.5e-7), and at n ≳ 1e14 the float64 action (of size n) stops it wherever
its rounding does. So every proposal, every start it stopped short of and the symmetric point t = c = 0 are taken
downhill by `numeric.mp_descent` (a damped Newton descent in mpmath, whose error is the geometric tail of its observed
contraction) at `working_digits`, on the action's mpmath kernels (`bound_descent`); the losses there are computed in
mpmath too (`loss_kernel_mp`).
"""

from __future__ import annotations

import math

from attnphase.models.copy_heads import kernels
from attnphase.models.copy_heads.instance import CopyHeadsInstance

__all__ = ["working_digits", "bound_descent", "loss_kernel_mp"]


def working_digits(inst: CopyHeadsInstance, n_: float) -> int:
    """Digits of the mpmath descent: 50, plus what the gradient's cancellation loses: the terms are of size n (or the
    prior precisions λ_t, λ_c, 1/τ) and cancel to the smallest curvature (3 log10 L digits lost between the copy and
    the uniform curvature). Linear attention takes those lost digits twice: its Hessian's eigenvalues differ by the
    same factor (along t = c about 1e4 against 3n at L = 16), and the descent floors the smaller one at 10^(−dps/2)
    of the larger, so with the digits taken once Newton's steps along t = c came out too short by that floor from
    n ~ 1e62 on, and every descent stopped after its 400 steps (the solve failed at P = 1e70, L = 16)."""
    values = inst.values()
    spread = sum(abs(math.log10(float(values[name]))) for name in ("lam_t", "lam_c", "tau") if name in values
                 and float(values[name]) > 0)
    data_digits = max(0.0, math.log10(n_)) if n_ > 0 else 0.0  # n = βP underflows to 0 at β = P = 1e-200
    lost = data_digits + 3 * math.log10(inst.L) + spread
    return 50 + math.ceil(2 * lost if inst.attention == "linear" else lost)


def bound_descent(action, n_) -> tuple:
    """The mpmath action, gradient and Hessian of the bound reduced action at n, as `numeric.mp_descent` takes them."""
    return (lambda p: action.action_mp(*p, n_), lambda p: action.gradient_mp(*p, n_),
            lambda p: action.hessian_mp(*p, n_))


def loss_kernel_mp(inst: CopyHeadsInstance):
    """(mean-predictor, Gibbs) loss at (m, q, t, n) in mpmath: in float64 the mean-predictor loss at n ≳ 1e16 is
    the cancellation 1 − w(2 − w) with w → 1, and came out negative (−1.7e-16 at L = 16, n = 1e16)."""
    kernel = kernels.loss_kernel_mp(inst.convention.centred)
    return kernels.bind(kernel, inst.values(exact=True))
