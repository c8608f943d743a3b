"""Where the exact finite-L reduction can be computed: the largest θ (or σ, or score scale) at which its samples of J
and of the noise mass stay finite.

J's samples grow as θ_d² (the integrand's θ_d²(1 − ρ²)S₂² and S₁² ≤ (θ_d|ρ| + σ|g|)²) and as σ²: beyond
θ_d ≈ 1.34e154 = √(float64 max) at σ = 1 they overflow and nothing is computed (their standard errors are computed
from the samples scaled by a power of two, so they overflow only with the samples). J′'s samples grow faster (up to
βθ_d³) and are withheld alone where they overflow (`population.finite_reduction`). `overflow_error` finds the bound on
the reduction itself, as `check_large_L_finite` (below) does on the closed form: the largest value at which the
same draws (seed, number, alignments) give a finite J and noise mass, by bisection in log θ (about 40 reductions:
about 1.5 s at L = 64, 4096 draws; in proportion to L·draws beyond). `largest_finite_value` is that search; the
large-L check uses it too, to the float64 spacing.
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.closed_form import checked_rhos, large_L, large_L_overflow
from attnphase.models.signal_recovery.parameters import MAX_FINITE_L, Parameters, make_parameters
from attnphase.results import Status

__all__ = ["overflow_error", "largest_finite_value", "check_large_L_finite"]

#: Relative width (in the value) at which the bisection stops: the bound is then rounded down to 6 significant digits.
BISECTION_WIDTH = 1e-7


def largest_finite_value(finite_at, given: float, *, rtol: float = BISECTION_WIDTH,
                         smallest: float = 1e-300) -> float | None:
    """The largest x ≤ `given` (to 6 significant digits, rounded down) at which finite_at(x) holds, where
    finite_at(given) does not and the overflow sets in once: a finite value is found below `given` by steps of
    2⁻⁶⁴ (down to `smallest`; None if there is none), then bisected in log x to a relative width of `rtol`
    (BISECTION_WIDTH: each call of finite_at may be a whole reduction). rtol = 0 bisects to the float64 spacing,
    the last steps at the arithmetic midpoint (for a cheap finite_at, such as the large-L form's)."""
    high, low = given, given
    while True:
        low = low * 2.0**-64
        if low < smallest or low == 0.0:
            return None
        if finite_at(low):
            break
        high = low
    while high > low * (1 + rtol):  # in log x: the bound may be decades below `given`
        middle = math.exp(0.5 * (math.log(low) + math.log(high)))
        if not low < middle < high:
            break
        low, high = (middle, high) if finite_at(middle) else (low, middle)
    while high > low * (1 + rtol):  # rtol = 0 only: the floats the geometric midpoint rounds past
        middle = (low + high) / 2
        if not low < middle < high:
            break
        low, high = (middle, high) if finite_at(middle) else (low, middle)
    rounded = float(f"{low:.6g}")
    return rounded if rounded <= low else float(f"{low * (1 - 1e-6):.6g}")


def overflow_error(params: Parameters, rhos: np.ndarray, n_samples: int, seed: int) -> ParameterError:
    """The ParameterError for a finite-L reduction whose J or noise mass overflows float64 (status failed):
    theta with the largest θ at which the same draws stay finite, where θ = 0 is finite; otherwise score_scale where
    the reduction at θ = 0 is finite with a score scale of at most 1 (β alone beyond float range, or βσg), else sigma
    (the noise alone overflows: σ²(d − 1) or (σg)²), each with its largest value at θ = 0."""
    from attnphase.models.signal_recovery.population import _reduction

    given = dict(d=params.d, L=params.L, R=params.R, theta=params.theta, theta_scaling=params.theta_scaling,
                 sigma=params.sigma, score_scale=params.score_scale, sign_model=params.sign_model)

    def finite_at(**changed) -> bool:
        try:
            changed_params = make_parameters(**{**given, **changed})
        except ParameterError:  # θ√d beyond float range
            return False
        return _reduction(changed_params, rhos, n_samples, seed).status != Status.FAILED

    where = (f"at d = {params.d}, L = {params.L}, R = {params.R}, sigma = {params.sigma:g}, score_scale = "
             f"{params.score_scale:g}, rho up to {np.max(np.abs(rhos)):g}")
    why = (f"with the finite-L reduction ({n_samples} samples, seed {seed}): beyond, its samples of J overflow "
           "float64")
    if params.theta > 0 and finite_at(theta=0.0):
        bound = largest_finite_value(lambda t: finite_at(theta=t), params.theta)
        if bound is not None:
            scaled = " (theta_d = theta·√d)" if params.theta_scaling == "sqrt-d" else ""
            return ParameterError("theta", params.theta, f"a real number in [0, {bound:g}]{scaled} {where} {why}")
    small_scale = min(params.score_scale, 1.0)
    if params.score_scale > 1.0 and finite_at(theta=0.0, score_scale=small_scale):
        name, value = "score_scale", params.score_scale
        bound = largest_finite_value(lambda b: finite_at(theta=0.0, score_scale=b), params.score_scale)
    else:
        name, value = "sigma", params.sigma
        bound = largest_finite_value(lambda s: finite_at(theta=0.0, sigma=s, score_scale=small_scale), params.sigma)
    allowed = f"a real number in (0, {bound:g}]" if bound is not None else "a smaller value"
    at = (" (that at theta = 0: the scores overflow without the signal)" if name == "score_scale" else
          " (that at theta = 0" + (", score_scale at most 1" if params.score_scale > 1 else "")
          + ": the noise overflows without the signal)")
    return ParameterError(name, value, f"{allowed}{at} {where} {why}")


def _large_L_finite(params: Parameters, rhos: np.ndarray) -> bool:
    with np.errstate(all="ignore"):
        return bool(np.all(np.isfinite(large_L(params, rhos)[:, [0, 1, 2, 4]])))


def check_large_L_finite(params: Parameters, rhos) -> None:
    """Refuse (ParameterError) parameters at which the large-L form overflows float64 at some ρ of `rhos`, naming the
    parameter whose exponential overflows and the largest value it may take with the others as given (found on the
    form itself: for ρ > 0 its largest exponentials are e^{3βθ_dρ} and e^{3β²σ²}, so that βθ_dρ must stay below
    ln(float64 max)/3 = 236.59): theta where the signal shift e^{βθ_dρ} overflows (alone or with the noise's tilt),
    sigma where the tilt e^{β²σ²} overflows at θ = 0 already. Nothing is computed by this form there."""
    rhos = checked_rhos(rhos)
    if _large_L_finite(params, rhos):
        return
    given = dict(d=params.d, L=params.L, R=params.R, theta=params.theta, theta_scaling=params.theta_scaling,
                 sigma=params.sigma, score_scale=params.score_scale, sign_model=params.sign_model)
    cause = large_L_overflow(params, rhos)
    where = (f"at d = {params.d}, L = {params.L}, R = {params.R}, theta = {params.theta:g}, sigma = {params.sigma:g}, "
             f"score_scale = {params.score_scale:g}, rho up to {np.max(np.abs(rhos)):g}")
    finite = "" if params.L > MAX_FINITE_L else "; the exact finite-L reduction (reduction='finite') does not use it"

    def make(**changed) -> Parameters:
        return make_parameters(**{**given, **changed})

    def largest(finite_at, value: float) -> float:  # to the float64 spacing (the form is cheap); 0 if none
        return largest_finite_value(finite_at, value, rtol=0.0, smallest=math.ulp(0.0)) or 0.0

    if _large_L_finite(make(theta=0.0), rhos):
        bound = largest(lambda t: _large_L_finite(make(theta=t), rhos), params.theta)
        raise ParameterError("theta", params.theta, f"a real number in [0, {bound:g}] {where} with the large-L "
                                                    f"reduction: beyond, its value overflows float64 ({cause}){finite}")
    # the noise's tilt overflows at θ = 0 already: σ's bound at the θ given, or at θ = 0 where the shift overflows too
    theta = params.theta if _large_L_finite(make(sigma=1e-300), rhos) else 0.0
    bound = largest(lambda s: s > 0 and _large_L_finite(make(theta=theta, sigma=s), rhos), params.sigma)
    at = "" if theta == params.theta else " (that at theta = 0: at the theta given the signal shift overflows too)"
    raise ParameterError("sigma", params.sigma, f"a real number in (0, {bound:g}]{at} {where} with the large-L "
                                                f"reduction: beyond, its value overflows float64 ({cause}){finite}")
