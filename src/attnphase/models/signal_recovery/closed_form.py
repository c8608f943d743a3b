"""The large-L closed form of the population objective: J, J′, the drift, its slope and the noise-token mass as
L → ∞ at fixed R/L (keeping the σ²(d−1)/L term), all generated from `symbolic`.

* `large_L`: the generated float64 kernel (what the ODEs integrate);
* `large_L_precise`: the same in mpmath, to an agreement of PRECISE_AGREEMENT (what `population.curve` reports, and
  where `dynamics.fixed_points` looks for zeros: the float64 J′ is a difference of terms of size J·(βθ_d + β²σ²));
* `large_L_accuracy`: how far it is from the exact finite-(d, L, R) values, the O(1/L) terms it leaves out from the
  second-order delta method in the token averages it is built on, and an error bound where that expansion holds;
* `large_L_overflow`: which exponential overflows float64, in words.
"""

from __future__ import annotations

import math
import sys

import mpmath
import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.signal_recovery import symbolic
from attnphase.models.signal_recovery.parameters import Parameters, as_parameters, make_parameters
from attnphase.models.signal_recovery.results import LargeLAccuracy
from attnphase.numeric.precision import agreed_evaluation
from attnphase.params import check_real
from attnphase.results import Status

__all__ = ["LARGE_L_OUTPUTS", "LARGE_L_EXPANSION_LIMIT", "PRECISE_AGREEMENT", "large_L", "large_L_precise",
           "large_L_accuracy", "large_L_overflow", "checked_rhos"]

LARGE_L_OUTPUTS = symbolic.LARGE_L_OUTPUTS
#: The large-L form's error bound is given where the O(1/L) terms it leaves out, summed in absolute value, are at most
#: this fraction of J (the expansion ratio q). Over 600 checked (d, L, R, θ, β, σ, ρ, sign model) points against the
#: exact reduction the bound held at every q up to 5; the limit leaves room for the points not checked.
LARGE_L_EXPANSION_LIMIT = 0.25
# Rounding of the generated closed forms (relative to the values; absolute for the noise mass, a probability).
_ROUNDING = 1e-12


def checked_rhos(rhos, name: str = "rhos") -> np.ndarray:
    """The alignments as a non-empty float array, each a real number in [−1, 1] (a numeric string is read as the CLI
    reads one; a bool is not a number here), else a ParameterError naming `name`, the argument the caller passed."""
    allowed = "a non-empty list of real numbers in [-1, 1]"
    try:
        items = list(np.atleast_1d(np.asarray(rhos, dtype=object)))
        values = [check_real(name, r, -1.0, 1.0) for r in items]
    except (TypeError, ValueError):  # a ragged nesting, or an entry that is not such a number (ParameterError)
        raise ParameterError(name, rhos, allowed) from None
    if not values:
        raise ParameterError(name, rhos, allowed)
    return np.asarray(values, dtype=float)


def _rho_array(rho) -> np.ndarray:
    """`large_L`'s ρ: an array of any shape, not empty, of real numbers in [−1, 1] (no bools), as floats."""
    allowed = "real numbers in [-1, 1] (a number or a non-empty array of them)"
    try:
        # a list may hold a bool among numbers (np.asarray makes it 1.0); an array of numbers is taken as it is
        given = rho if isinstance(rho, np.ndarray) else np.asarray(rho, dtype=object)
        if given.dtype == bool or (given.dtype == object and any(isinstance(v, (bool, np.bool_)) for v in given.flat)):
            raise ParameterError("rho", rho, allowed)
        rho_array = np.asarray(rho, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("rho", rho, allowed) from None
    if rho_array.size == 0 or not np.all(np.abs(rho_array) <= 1.0):  # NaN fails the comparison too
        raise ParameterError("rho", rho, allowed)
    return rho_array


def _kernel_arguments(params: Parameters) -> dict:
    """The model's arguments of every generated large-L kernel (`symbolic.KERNEL_ARGS` but ρ), by name."""
    return dict(beta=params.score_scale, sigma=params.sigma, theta_d=params.theta_d,
                pi_I=params.informative_fraction, pi_N=params.noise_fraction, d=float(params.d), L=float(params.L))


def large_L(params: Parameters, rho) -> np.ndarray:
    """The generated large-L kernel at ρ (an array): shape (..., 5), the columns `LARGE_L_OUTPUTS`
    (J, J′, drift, drift′, nuisance mass). For labelled values use `curve`."""
    params = as_parameters(params)
    rho_array = _rho_array(rho)
    kernel = symbolic.large_L_kernel(params.sign_model)
    return np.asarray(kernel.call(rho=rho_array, **_kernel_arguments(params)), dtype=float)


#: Agreement of two mpmath evaluations of the large-L form (at d and 2d decimal places, from d = 30) that `curve`
#: reports: in float64 the derivatives are differences of terms of size J·(βθ_d + β²σ²), about 1e-11 of J′ at d = 16,
#: L = R = 4096, θ = 20, σ = 0.05, β = 3, and all of it where e^{β²σ²} is large (`dynamics.fixed_points`).
PRECISE_AGREEMENT = 1e-15
_PRECISE_MAX_DPS = 960


def large_L_precise(params: Parameters, rhos) -> np.ndarray:
    """`large_L` evaluated in mpmath, the places doubled from 30 until two evaluations agree to PRECISE_AGREEMENT
    (at most _PRECISE_MAX_DPS), then rounded to float64 (inf where beyond float range): shape (len(rhos), 5)."""
    params = as_parameters(params)
    rhos = checked_rhos(rhos)
    kernel = symbolic.large_L_kernel(params.sign_model, backend="mpmath")
    fixed = _kernel_arguments(params)
    out = np.empty((rhos.size, len(LARGE_L_OUTPUTS)))
    for i, r in enumerate(rhos):
        out[i] = _agreed_evaluation(kernel, fixed, float(r))
    return out


def _agreed_evaluation(kernel, fixed: dict, rho: float) -> list[float]:
    """An mpmath kernel at ρ, at places doubled until two evaluations agree to PRECISE_AGREEMENT
    (`numeric.precision.agreed_evaluation`, at most _PRECISE_MAX_DPS), rounded to float64 (inf beyond its range, NaN
    where not finite)."""
    current = agreed_evaluation(lambda: kernel.call(rho=rho, **fixed), PRECISE_AGREEMENT, _PRECISE_MAX_DPS)
    with np.errstate(over="ignore"):
        return [float(v) if mpmath.isfinite(v) else math.nan for v in current]


def _accuracy_terms(params: Parameters, rho: np.ndarray) -> np.ndarray:
    """`symbolic.LARGE_L_ACCURACY_OUTPUTS` at each ρ, shape (n, 7); model B as the ±ρ average of model A. Where the
    float64 kernel overflows on the way (βθ_dρ ≳ 142: its terms hold e^{5βθ_dρ}, and the corrections came out as
    inf − inf while J is 2.3e4), those ρ are evaluated in mpmath (`_agreed_evaluation`)."""
    fixed = _kernel_arguments(params)

    def at(sign_model, r):
        kernel = symbolic.large_L_accuracy_kernel(sign_model)
        with np.errstate(all="ignore"):
            out = np.asarray(kernel.call(rho=r, **fixed), dtype=float).reshape(-1, 7)
        overflowed = np.flatnonzero(~np.isfinite(out).all(axis=1))
        if overflowed.size:
            precise = symbolic.large_L_accuracy_kernel(sign_model, backend="mpmath")
            points = np.broadcast_to(np.asarray(r, float), (out.shape[0],))
            for i in overflowed:
                out[i] = _agreed_evaluation(precise, fixed, float(points[i]))
        return out

    if params.sign_model != "B":
        return at(params.sign_model, rho)
    plus, minus = at("A", rho), at("A", -rho)
    out = (plus + minus) / 2
    out[:, 1] = (plus[:, 1] - minus[:, 1]) / 2  # d/dρ of the average of f(ρ) and f(−ρ)
    out[:, 6] = np.maximum(plus[:, 6], minus[:, 6])
    return out


def large_L_accuracy(params: Parameters, rhos) -> LargeLAccuracy:
    """How far the large-L closed form is from the exact finite-(d, L, R) J, J′, drift and noise mass at each ρ.

    The closed form is the reduction's integrand f evaluated at the means of five token averages X̄ (of e^{βy},
    y e^{βy}, the signed and unsigned informative e^{βy}, and e^{2βy}); E f(X̄) = f(E X̄) + ½ Σ ∂²f Cov X̄ + O(1/L²)
    with Cov X̄ = O(1/L) from the tokens' tilted Gaussian moments (`symbolic.large_L_accuracy`). The errors are
    2|correction| plus the product of the termwise sum with the expansion ratio q (the size of the next order), where
    q ≤ LARGE_L_EXPANSION_LIMIT; NaN beyond, where the sum over tokens is dominated by a few of them (δ, the relative
    fluctuation of the softmax normaliser, is then of order 0.1 or more) and no order of the expansion is reliable.
    """
    params = as_parameters(params)
    rhos = checked_rhos(rhos)
    values = large_L(params, rhos)
    J, dJ = values[:, 0], values[:, 1]
    terms = _accuracy_terms(params, rhos)
    J_corr, dJ_corr, J_bound, dJ_bound, n_corr, n_bound, normaliser = terms.T
    with np.errstate(all="ignore"):
        ratio = J_bound / np.abs(J)
        J_err = 2 * np.abs(J_corr) + ratio * J_bound + _ROUNDING * np.abs(J)
        dJ_err = 2 * np.abs(dJ_corr) + ratio * dJ_bound + _ROUNDING * (np.abs(dJ) + np.abs(J))
        n_err = 2 * np.abs(n_corr) + n_bound**2 + _ROUNDING
        fluctuation = np.sqrt(normaliser)
        accurate = (np.isfinite(values[:, [0, 1, 4]]).all(axis=1) & np.isfinite(terms).all(axis=1)
                    & (ratio <= LARGE_L_EXPANSION_LIMIT))
    nan = np.where(accurate, 1.0, math.nan)
    J_err, dJ_err, n_err = J_err * nan, dJ_err * nan, n_err * nan
    status = Status.CONVERGED if accurate.all() else Status.LIMITED
    worst = int(np.argmax(np.where(np.isfinite(ratio), ratio, math.inf)))
    message = (f"expansion ratio q = {ratio[worst]:.3g} at ρ = {rhos[worst]:.4g} (the O(1/L) terms of J, termwise, "
               f"over J; the bound holds for q ≤ {LARGE_L_EXPANSION_LIMIT}); relative fluctuation of the softmax "
               f"normaliser δ = {fluctuation[worst]:.3g}")
    return LargeLAccuracy(rhos, J_corr, dJ_corr, n_corr, J_err, dJ_err, (1 - rhos**2) * dJ_err, n_err, ratio,
                          fluctuation, accurate, LARGE_L_EXPANSION_LIMIT, status, message)


_LOG_FLOAT_MAX = math.log(sys.float_info.max)  # 709.78: e^x overflows float64 beyond it


def large_L_overflow(params: Parameters, rhos) -> str:
    """Which exponential of the large-L form overflows float64 at these ρ, in words, found by evaluating the form with
    each removed: e^{β²σ²} (the Gaussian tilt of the token moments: overflows with the signal shift θ_d set to 0),
    e^{βθ_dρ} (the signal shift: overflows with σ set to 1e-300), or their product (neither alone), with both
    exponents. (Thresholds in the exponents alone are wrong: the form holds e^{3β²σ²}, e^{4βθ_dρ} and products.) Where
    the shift's overflow cannot be an exponential's (4βθ_d|ρ| below ln of float64's largest number, e.g. at ρ = 0) it
    is that of θ_d's powers (J′ ~ θ_d³), and the words say so."""
    params = as_parameters(params)
    rhos = checked_rhos(rhos)

    def overflows(p: Parameters) -> bool:
        with np.errstate(all="ignore"):
            return not np.all(np.isfinite(large_L(p, rhos)[:, [0, 1, 2, 4]]))

    def changed(**values) -> Parameters:
        given = dict(d=params.d, L=params.L, R=params.R, theta=params.theta, theta_scaling=params.theta_scaling,
                     sigma=params.sigma, score_scale=params.score_scale, sign_model=params.sign_model)
        return make_parameters(**{**given, **values})

    with np.errstate(all="ignore"):  # σ = 1e300: β²σ² is inf, said as such
        tilt = float(np.square(np.float64(params.score_scale) * params.sigma))
        shift = float(np.float64(params.score_scale) * params.theta_d * np.max(np.abs(rhos)))
    by_tilt, by_shift = overflows(changed(theta=0.0)), overflows(changed(sigma=1e-300))
    if by_tilt and not by_shift:
        return (f"overflow of e^{{β²σ²}}: β²σ² = {tilt:.4g} (it overflows without the signal shift; "
                f"βθ_d|ρ| = {shift:.4g})")
    if by_shift and not by_tilt and 4 * shift < _LOG_FLOAT_MAX:
        # no e^{βθ_dρ} of the form (up to e^{4βθ_dρ}) overflows at these ρ (at ρ = 0 none is there): θ_d's powers do
        return (f"overflow of the powers of θ_d (J ~ θ_d², J′ ~ θ_d³): θ_d = {params.theta_d:.4g} (βθ_d|ρ| = "
                f"{shift:.4g}, β²σ² = {tilt:.4g})")
    if by_shift and not by_tilt:
        return (f"overflow of e^{{βθ_dρ}}: βθ_d|ρ| = {shift:.4g} (it overflows without the noise's tilt; "
                f"β²σ² = {tilt:.4g})")
    if by_tilt:
        return f"overflow of e^{{β²σ²}} and of e^{{βθ_dρ}}, each alone: β²σ² = {tilt:.4g}, βθ_d|ρ| = {shift:.4g}"
    return (f"overflow of the product of e^{{β²σ²}} and e^{{βθ_dρ}}, neither alone: β²σ² = {tilt:.4g}, "
            f"βθ_d|ρ| = {shift:.4g}")
