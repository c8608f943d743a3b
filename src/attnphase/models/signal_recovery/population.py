"""The population objective J(ρ) = E‖f_q(X)‖², its slope, the drift and the noise-token mass at finite (d, L, R).

* `finite_reduction`: the exact finite-(d, L, R) reduction, a Gaussian expectation over L scalar scores g_i only —
  not L·d numbers — because the components of the tokens orthogonal to q are independent of the softmax weights and
  average out in closed form. The same samples serve every ρ (common random numbers), so differences across ρ are
  far more precise than the values. J′ is the pathwise derivative of the same samples, through the generated partial
  derivatives of the integrand (`symbolic`).
* `curve` gives it, or the large-L closed form (`closed_form`), over an array of ρ as a labelled `Curve`; `solve` is
  the curve at one ρ. `solve` by default (reduction "auto") evaluates the exact reduction wherever it fits in memory
  (L ≤ MAX_FINITE_L) and the closed form beyond; `curve` by default evaluates the closed form (a landscape over many
  ρ), with its error bound or status limited.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.signal_recovery import symbolic
from attnphase.models.signal_recovery.parameters import (
    MAX_FINITE_L, MAX_FINITE_SAMPLES, MIN_TOKENS, Parameters, SolveSettings, as_parameters, make_parameters,
)
from attnphase.models.signal_recovery.closed_form import (
    checked_rhos, large_L, large_L_accuracy, large_L_precise,
)
from attnphase.models.signal_recovery.reduction_range import check_large_L_finite
from attnphase.models.signal_recovery.results import Curve, SolveResult
from attnphase.params import check_bool, check_choice, check_int, check_real
from attnphase.results import Status

__all__ = ["reduction_samples", "control_kurtosis", "reliable_controls", "finite_reduction", "curve", "solve",
           "resolve_reduction", "CONTROL_VARIANCE_ACCURACY", "REDUCTIONS", "SWITCHING_DRAWS",
           "ROUNDING_ULPS"]

# Sequences per vectorised block of the reduction (fixed: the random stream does not depend on it).
SAMPLE_CHUNK = 256
# A control variate is used only where the draws estimate its variance to this relative accuracy. The regression
# estimator's coefficients and standard error rest on the controls' sample covariance, whose relative error is about
# √((κ − 1)/n) for a control of kurtosis κ; e^{βy} is log-normal, of kurtosis ~ e^{4β²σ²} per token. At β = 3, σ = 1,
# L = 64 (κ of the token average ~ 1e13) the corrected means of 4096 draws missed by more than three of their standard
# errors in a third of the seeds, the plain means of the same draws did not (research notes).
CONTROL_VARIANCE_ACCURACY = 0.3
#: How J, J′, the drift and the noise mass are evaluated: "finite" (the exact reduction, Monte Carlo), "large-L" (the
#: closed form) or "auto" (the reduction where it fits in memory, L ≤ MAX_FINITE_L, else the closed form).
REDUCTIONS = ("auto", "finite", "large-L")
#: Ulps of the magnitude of its terms (`_samples_at`) that bound the rounding of a pathwise J′ sample, besides
#: ⌈log₂L⌉ for its sums over the L tokens (numpy's pairwise summation rounds a sum by at most that many ulps of the sum
#: of its absolute terms) and ⌈log₂n⌉ for the mean over n draws: about ten products and differences of the chain rule.
ROUNDING_ULPS = 10
#: Effective draws in which the softmax splits its attention between an informative and a noise token (the sum over
#: the draws of 4·Var_a(c)/θ_d², `_samples_at`) below which the pathwise J′ is not reported. Its β-proportional terms
#: live on draws whose score gap is O(1/β), about n/β of n: at d = 16, L = 64, R = 8, θ = 1, ρ = 0.3 the error bar of
#: J′ covered a central difference on 2^20 draws at β = 1000 with 8.8 such draws (20 seeds: z spread 0.97), not at
#: β = 10^4 with 0.9 (z spread 2.7, up to 11) and β = 10^5 (biased by 9 errors); where the softmax saturates in
#: float64 (β = 1e300) there are none and J′ came out 0.95 ± 0.03 against 1.30.
SWITCHING_DRAWS = 5.0


def _samples_at(params: Parameters, rho: float, g: np.ndarray, signs: np.ndarray | None):
    """Per-sample integrand, pathwise dJ/dρ, noise mass, zero-mean controls, switching weight and the magnitude of
    the terms J′ is summed from, model A (signs None) or C. The switching weight, Var_a(c)/θ_d² under the softmax
    weights a (4 × it is 1 where the attention is split evenly between an informative and a noise token, 0 where it
    sits on one class), is what the pathwise J′'s β-proportional terms are made of (`SWITCHING_DRAWS`). The
    magnitude (`ROUNDING_ULPS`) is the sum of the absolute values of the chain rule's terms, each with its inner
    sums taken in absolute value: the slope's rounding is a few ulps of it, whatever cancels in between."""
    R, beta, sigma, theta_d = params.R, params.score_scale, params.sigma, params.theta_d
    n = g.shape[0]
    # Signal shift per token along q, c_i = θ_d s_i 1[i∈I], so y_i = ρ c_i + σ g_i.
    c = np.zeros((n, params.L))
    c[:, :R] = theta_d if signs is None else theta_d * signs
    y = rho * c + sigma * g
    z = beta * y
    z -= z.max(axis=1, keepdims=True)
    a = np.exp(z)
    a /= a.sum(axis=1, keepdims=True)
    s_inf = 1.0 if signs is None else signs
    S1 = (a * y).sum(axis=1)
    S2 = (a[:, :R] * s_inf).sum(axis=1)
    S3 = (a * a).sum(axis=1)
    # ∂a_i/∂ρ = β a_i (c_i − c̄) with c̄ = Σ a c = θ_d S₂.
    c_bar = theta_d * S2
    dS1 = beta * ((a * c * y).sum(axis=1) - c_bar * S1) + c_bar
    dS2 = beta * theta_d * (a[:, :R].sum(axis=1) - S2**2)
    dS3 = 2 * beta * ((a * a * c).sum(axis=1) - c_bar * S3)
    # Var_a(c)/θ_d² from the signs alone (c/θ_d is 0 or ±1): θ_d² itself may overflow
    switching = (a[:, :R].sum(axis=1) - S2**2) if theta_d > 0 else np.zeros(n)
    out = np.asarray(symbolic.reduction_kernel().call(S_1=S1, S_2=S2, S_3=S3, rho=rho, theta_d=theta_d, sigma=sigma,
                                                      d=float(params.d)))
    value = out[:, 0]
    slope = out[:, 1] * dS1 + out[:, 2] * dS2 + out[:, 3] * dS3 + out[:, 4]
    # |c| is θ_d on the informative tokens and 0 elsewhere, |c̄| at most θ_d Σ_I a
    informative_mass = a[:, :R].sum(axis=1)
    c_bar_abs = theta_d * informative_mass
    y_abs = np.abs(y)
    Sy = (a * y_abs).sum(axis=1)
    informative_ay = theta_d * (a[:, :R] * y_abs[:, :R]).sum(axis=1)
    magnitude = ((np.abs(out[:, 1]) + 2 * Sy) * (beta * (informative_ay + c_bar_abs * Sy) + c_bar_abs)
                 + np.abs(out[:, 2]) * beta * theta_d * (informative_mass + S2**2)
                 + np.abs(out[:, 3]) * 2 * beta * (theta_d * (a[:, :R] ** 2).sum(axis=1) + c_bar_abs * S3)
                 + np.abs(out[:, 4]))
    nuisance = a[:, R:].sum(axis=1)
    # Control variates: token averages of e^{βy}, y e^{βy} minus their exact means given the token's shift, over the
    # noise tokens and over the informative ones (model C: also signed), each with mean zero; shifts take three values
    # only: +θ_dρ, −θ_dρ (informative) and 0 (noise). The two groups are apart so that each one's kurtosis is judged
    # (`reliable_controls`): as all tokens' average beside the informative one, the regression used their difference,
    # the noise tokens' average, whose kurtosis e^{4β²σ²}/(L − R) was not checked (one noise token at βσ = 1.5: the
    # noise mass 3.8 of its errors off).
    e1 = np.exp(beta * y)
    raw = np.stack([e1, y * e1, e1 * e1], axis=-1)
    m_plus, m_minus, m_noise = np.asarray(symbolic.token_moment_kernel().call(
        mu=np.array([theta_d * rho, -theta_d * rho, 0.0]), beta=beta, sigma=sigma))
    raw[:, R:] -= m_noise
    if signs is None:
        raw[:, :R] -= m_plus
    else:
        raw[:, :R] -= np.where(signs[:, :, None] > 0, m_plus, m_minus)
    groups = [raw[:, R:, :2].sum(axis=1), raw[:, :R, :2].sum(axis=1)]  # noise, informative
    if signs is not None:
        groups.append((raw[:, :R, :2] * signs[:, :, None]).sum(axis=1))
    controls = np.concatenate(groups, axis=1) / params.L
    return value, slope, nuisance, controls, switching, magnitude


def _draw(params: Parameters, rng: np.random.Generator, n: int):
    """n draws of the L scalar scores g (and, for model C, of the informative tokens' signs)."""
    g = rng.standard_normal((n, params.L))
    signs = rng.integers(0, 2, size=(n, params.R)) * 2.0 - 1.0 if params.sign_model == "C" else None
    return g, signs


def _samples(params: Parameters, rho: float, g: np.ndarray, signs: np.ndarray | None):
    """`_samples_at` for every sign model: B averages model A at ρ and −ρ on the same draws (exactly even; at ρ = 0
    its two halves are the same numbers, and its slope is exactly 0, without rounding)."""
    value, slope, nuisance, controls, switching, magnitude = _samples_at(params, rho, g, signs)
    if params.sign_model == "B":
        v2, s2, n2, c2, w2, m2 = _samples_at(params, -rho, g, None)
        value, slope, nuisance = (value + v2) / 2, (slope - s2) / 2, (nuisance + n2) / 2
        # at −ρ only the informative tokens' controls are new (the noise tokens' are the same draws)
        controls, switching = np.concatenate([controls, c2[:, 2:]], axis=1), (switching + w2) / 2
        magnitude = (magnitude + m2) / 2 if rho != 0 else np.zeros_like(magnitude)
    return value, slope, nuisance, controls, switching, magnitude


def reduction_samples(params: Parameters, rho: float, *, n_samples: int = 256, seed: int = 0):
    """Raw per-sample (integrand, pathwise J′, noise mass) of the reduction at ρ, no control variates.

    The building block of `finite_reduction`, exposed for identity checks (a finite difference of the
    integrand on the same draws equals the pathwise derivative sample by sample).
    """
    rho = check_real("rho", rho, -1.0, 1.0)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    g, signs = _draw(params, rng, check_int("samples", n_samples, 1))
    value, slope, nuisance, _, _, _ = _samples(params, rho, g, signs)
    return value, slope, nuisance


def _token_control_moments(params: Parameters, shift: float) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    """(variance, fourth cumulant) of one token's controls e^{βy} and y e^{βy}, y = shift + σg, in mpmath (the
    cumulant cancels to O(β⁴σ⁴) of the moments at small βσ)."""
    with mpmath.workdps(60):
        raw = symbolic.control_moment_kernel().call(mu=mpmath.mpf(shift), beta=mpmath.mpf(params.score_scale),
                                                    sigma=mpmath.mpf(params.sigma))
        out = []
        for e1, e2, e3, e4 in (raw[:4], raw[4:]):
            variance = e2 - e1**2
            fourth = e4 - 4 * e3 * e1 + 6 * e2 * e1**2 - 3 * e1**4
            out.append((variance, fourth - 3 * variance**2))
        return out


def control_kurtosis(params: Parameters, rho: float) -> np.ndarray:
    """The exact kurtosis of each column of `_samples`' controls at ρ: the noise tokens' e^{βy}, y e^{βy}, the
    informative tokens' e^{βy}, y e^{βy}, for model C the informative tokens' signed ones, and for model B the
    informative tokens' at −ρ. A control is a token average, so its excess kurtosis is Σ κ₄ / (Σ var)² over the tokens
    averaged; for model C each informative token is the even mixture of the shifts ±θ_dρ, each centred on its own
    mean (its sign, ±1, leaves the even moments as they are)."""
    R, noise_tokens = params.R, params.L - params.R

    def kurtosis(count, moments):
        """The two columns (e^{βy}, y e^{βy}) of an average over `count` tokens whose (variance, fourth cumulant) per
        token are `moments`; a control without variance (no such token, or σ → 0) carries nothing: infinite."""
        out = []
        for k in range(2):
            variance, cumulant = count * moments[k][0], count * moments[k][1]
            out.append(float(3 + cumulant / variance**2) if variance > 0 else math.inf)
        return out

    def informative(rho_, signs):
        with mpmath.workdps(60):
            shifted = [_token_control_moments(params, s * params.theta_d * rho_) for s in signs]
            mixture = []
            for k in range(2):
                variance = sum(m[k][0] for m in shifted) / len(signs)
                mixture.append((variance, sum(m[k][1] + 3 * m[k][0] ** 2 for m in shifted) / len(signs)
                                - 3 * variance**2))
            return kurtosis(R, mixture)

    with mpmath.workdps(60):
        columns = kurtosis(noise_tokens, _token_control_moments(params, 0.0))
    if params.sign_model == "C":
        columns += 2 * informative(rho, (1.0, -1.0))  # unsigned and signed: the same even moments
    else:
        columns += informative(rho, (1.0,))
    if params.sign_model == "B":
        columns += informative(-rho, (1.0,))
    return np.array(columns)


def reliable_controls(params: Parameters, rho: float, n_samples: int) -> np.ndarray:
    """Which columns of `_samples`' controls at ρ `n_samples` draws can use: those whose sample variance is accurate to
    CONTROL_VARIANCE_ACCURACY, (κ − 1)/n ≤ CONTROL_VARIANCE_ACCURACY² (κ from `control_kurtosis`)."""
    return (control_kurtosis(params, rho) - 1) / n_samples <= CONTROL_VARIANCE_ACCURACY**2


def _control_variate_mean(samples: np.ndarray, controls: np.ndarray) -> tuple[float, float]:
    """Mean of `samples` corrected by regression on zero-mean `controls`, and its standard error."""
    n, k = controls.shape
    if not (np.all(np.isfinite(samples)) and np.all(np.isfinite(controls))):
        return math.nan, math.nan  # overflow of the integrand: not computed (the caller reports the failure)
    # Each control scaled to unit spread: e^{βy} of a shifted token reaches 1e26 and more, and lstsq's cut-off of
    # small singular values (relative to the largest) then dropped the intercept column, the estimate itself (J came
    # out as 1e-23 ± 6.5 for a value of 416: d = 100, L = 1024, R = 512, θ_d = 20, β = 3, σ = 0.5, ρ = 0.5).
    # Scaling a regressor leaves the least-squares fit, the intercept and the residual unchanged.
    scale = controls.std(axis=0)
    controls = controls[:, scale > 0] / scale[scale > 0]
    k = controls.shape[1]
    design = np.column_stack([np.ones(n), controls])
    # The samples scaled by a power of two to at most 1 (exact: every result is the same, scaled back), so that their
    # squares stay finite wherever the samples are: J of order θ_d² had overflowed in its squared residuals from
    # θ_d ≈ 1e77 on, erratically (by their rounding), and no θ bound could be stated.
    largest = float(np.max(np.abs(samples)))
    power = math.frexp(largest)[1] if largest > 0 else 0
    coef, *_ = np.linalg.lstsq(design, np.ldexp(samples, -power), rcond=None)
    residual = np.ldexp(samples, -power) - design @ coef
    return math.ldexp(float(coef[0]), power), math.ldexp(float(np.sqrt(residual @ residual / (n - k - 1) / n)), power)


def finite_reduction(params: Parameters, rhos, *, n_samples: int = 4096, seed: int = 0) -> Curve:
    """Exact finite-(d, L, R) J, J′ and noise mass as Gaussian expectations over L scalar scores.

    The same `n_samples` draws of g ∈ R^L (and, for model C, of the token signs) serve every ρ.
    Model B averages model A at ρ and −ρ on the same draws, which makes it exactly even. The sample
    means are corrected with control variates — token averages of e^{βy}, y e^{βy} whose exact means
    are known (regression estimator; its O(1/n) bias is far below the standard error) — which cuts the
    standard error several-fold at large L. A control whose covariance the draws cannot estimate (its kurtosis
    too large, `reliable_controls`) is left out, and so is one whose exact mean or draws overflow (e^{β²σ²/2} beyond
    float range: σ = 100, or β ≳ 37.7 at σ = 1); with none left the means are the plain sample means of the
    max-subtracted softmax, finite at any β and σ. J′'s error includes its rounding (`ROUNDING_ULPS`), in quadrature
    with the standard error; where J′'s samples overflow float64 (they grow up to βθ_d³) it is withheld, status
    limited. Where J's or the noise mass's overflow (θ_d or σ near √(float64 max)) the reduction is refused
    (ParameterError naming theta, or sigma or the score scale where θ = 0 overflows too, with the largest value at
    which these draws stay finite: `reduction_range.overflow_error`).
    """
    params = as_parameters(params)
    if params.L > MAX_FINITE_L:
        raise ParameterError("L", params.L, f"an integer in [{MIN_TOKENS}, {MAX_FINITE_L}] for the finite-L reduction (memory)")
    rhos = checked_rhos(rhos)
    n_samples = check_int("n_samples", n_samples, 16, max(16, MAX_FINITE_SAMPLES // rhos.size))
    seed = check_int("seed", seed, 0)
    result = _reduction(params, rhos, n_samples, seed)
    if result.status == Status.FAILED:
        from attnphase.models.signal_recovery.reduction_range import overflow_error

        raise overflow_error(params, rhos, n_samples, seed)
    return result


def _reduction(params: Parameters, rhos: np.ndarray, n_samples: int, seed: int) -> Curve:
    """`finite_reduction` of validated arguments: status failed (NaN values) where the samples of J or of the noise
    mass overflow float64."""
    rng = np.random.default_rng(seed)
    per_rho: list[list[list[np.ndarray]]] = [[[], [], [], [], [], []] for _ in rhos]
    done = 0
    with np.errstate(all="ignore"):  # overflow of e^{βy} shows up as non-finite samples, reported below
        while done < n_samples:
            g, signs = _draw(params, rng, min(SAMPLE_CHUNK, n_samples - done))
            for j, r in enumerate(rhos):
                for store, samples in zip(per_rho[j], _samples(params, r, g, signs)):
                    store.append(samples)
            done += g.shape[0]
    mean = np.zeros((3, rhos.size))
    err = np.zeros((3, rhos.size))
    unreliable = overflowed = total = 0
    switching = np.array([4 * np.concatenate(stores[4]).sum() for stores in per_rho])
    ulps = ROUNDING_ULPS + math.ceil(math.log2(params.L)) + math.ceil(math.log2(n_samples))
    with np.errstate(all="ignore"):
        rounding = ulps * np.finfo(float).eps / 2 * np.array([np.concatenate(stores[5]).mean() for stores in per_rho])
        for j, stores in enumerate(per_rho):
            controls = np.concatenate(stores[3])
            # A control whose exact mean (e^{β²σ²/2}, …) or one of whose draws (e^{βy}) overflows cannot be used: it is
            # left out, and the softmax itself (max-subtracted) stays finite. Such a control's kurtosis is far beyond
            # what the draws resolve anyway (σ = 100, or β = 38 at σ = 1: e^{β²σ²/2} > 1e308).
            finite_columns = np.all(np.isfinite(controls), axis=0)
            reliable = reliable_controls(params, float(rhos[j]), n_samples)
            usable = finite_columns & reliable
            total += usable.size
            overflowed += int((~finite_columns).sum())
            unreliable += int((finite_columns & ~reliable).sum())
            for i in range(3):
                mean[i, j], err[i, j] = _control_variate_mean(np.concatenate(stores[i]), controls[:, usable])
    slope_factor = 1 - rhos**2
    with np.errstate(all="ignore"):
        # J and the mass are reported or nothing is; J′ may overflow alone (its samples grow up to βθ_d³, by rounding
        # where the attention sits on one class), and is then withheld
        finite = bool(np.all(np.isfinite(mean[[0, 2]])) and np.all(np.isfinite(err[[0, 2]])))
        # the standard error does not see the rounding that all draws share: where J′ is 0 by a symmetry (model B
        # with R = L) its samples are rounding alone, and their mean (7e-17) had been 9 standard errors (8e-18)
        # from 0; the rounding bound, in quadrature, covers it and is negligible wherever the draws resolve J′
        err[1] = np.hypot(err[1], rounding)
    # J and the mass are not negative: a control-variate correction of draws that are all 0 (underflow) gave -0.0
    mean[[0, 2]] = np.maximum(mean[[0, 2]], 0.0) + 0.0
    status = Status.CONVERGED if finite else Status.FAILED
    # The β-proportional terms of J′ need tokens whose shifts c differ: none when θ_d = 0, or when every token is
    # informative with one sign (R = L, models A and B: c ≡ θ_d, and J′ has no switching term to miss).
    shifts_differ = params.theta_d > 0 and (params.R < params.L or params.sign_model == "C")
    unsampled = switching < SWITCHING_DRAWS if shifts_differ else np.zeros(rhos.size, bool)
    unbounded = ~(np.isfinite(mean[1]) & np.isfinite(err[1]))  # J′'s samples or the bound on their rounding overflow
    if finite and (unsampled | unbounded).any():  # J and the noise mass stand; J′ and the drift are not estimated
        mean[1, unsampled | unbounded] = err[1, unsampled | unbounded] = math.nan
        status = Status.LIMITED
    left_out = "".join(f"; {count} of {total} control variates left out ({why})" for count, why in (
        (unreliable, f"their kurtosis is too large for {n_samples} draws to estimate their variance to "
                     f"{CONTROL_VARIANCE_ACCURACY:.0%}"),
        (overflowed, "their exact means or draws overflow: e^{β²σ²/2} or e^{βy} beyond float range")) if count)
    if finite and unbounded.any():
        left_out += (f"; J′ and the drift not estimated at {int(unbounded.sum())} of {rhos.size} alignments: "
                     "its samples or the bound on their rounding overflow float64")
    if finite and unsampled.any():
        worst = int(np.argmin(switching))
        left_out += (f"; J′ and the drift not estimated at {int(unsampled.sum())} of {rhos.size} alignments: the "
                     f"softmax splits its attention between an informative and a noise token in only "
                     f"{switching[worst]:.3g} effective draws of {n_samples} (at ρ = {rhos[worst]:.4g}; at least "
                     f"{SWITCHING_DRAWS:g} are needed), so the pathwise derivative misses the switching between them "
                     f"({_switching_hint(params, float(rhos[worst]), float(switching[worst]), n_samples)})")
    message = (f"exact finite-L reduction, {n_samples} Monte Carlo samples (seed {seed}); errors are standard "
               f"errors{left_out}"
               if finite else "non-finite Monte Carlo samples or standard errors of J or the noise mass in the "
                              "finite-L reduction (overflow of the integrand)")
    if not finite:
        mean[:], err[:] = math.nan, math.nan
    # the drift (1 − ρ²)J′ is exactly 0 at ρ = ±1, also where J′ is withheld
    drift, drift_error = (np.where(slope_factor == 0, 0.0, slope_factor * v) if finite else slope_factor * v
                          for v in (mean[1], err[1]))
    return Curve(rhos, mean[0], mean[1], drift, mean[2], err[0], err[1], drift_error, err[2],
                 params.theta_d, "finite-L", n_samples, seed, status, message)


def _switching_hint(params: Parameters, rho: float, effective: float, n_samples: int) -> str:
    """What makes the softmax's split between an informative and a noise token rare at ρ, and the samples that would
    give SWITCHING_DRAWS effective draws at the fraction measured (n_samples × SWITCHING_DRAWS / effective).

    The split needs an informative and a noise token of about equal score β(θ_dρs + σg): it is rare where the
    softmax is sharp, βσ large (the draws fall about as 1/(βσ)), or where the signal's shift moves the informative
    tokens' scores away from the noise tokens', θ_d|ρ|/σ (= βθ_d|ρ|/(βσ), in the noise's score spreads) large (the
    draws fall as a Gaussian tail of it). The larger of the two is named."""
    beta, sigma = params.score_scale, params.sigma
    with np.errstate(all="ignore"):
        spread = float(np.float64(beta) * sigma)
        shift = float(np.float64(beta) * params.theta_d * abs(rho))
        separation = params.theta_d * abs(rho) / sigma if sigma > 0 else math.inf
    if separation >= spread:
        cause = (f"what limits them is the signal: its score shift βθ_d|ρ| = {shift:.3g} is {separation:.3g} noise "
                 f"spreads βσ = {spread:.3g} wide, so an informative and a noise token rarely score alike")
        remedy = ""
    else:
        cause = (f"what limits them is the score scale: βσ = {spread:.3g} makes the softmax pick one token in all but "
                 f"about 1/(βσ) of the draws (the signal's shift βθ_d|ρ| = {shift:.3g} is {separation:.3g} noise "
                 "spreads)")
        remedy = ", or a smaller score scale"
    if effective > 0:
        needed = n_samples * SWITCHING_DRAWS / effective
        rounded = float(f"{needed:.2g}")
        count = f"{rounded:,.0f}".replace(",", " ") if rounded < 1e15 else f"{rounded:.2g}"
        return (f"{cause}; {SWITCHING_DRAWS:g} effective draws need about {count} samples ({n_samples} × "
                f"{SWITCHING_DRAWS:g}/{effective:.3g}, at the fraction measured here){remedy}")
    return (f"{cause}; none of the {n_samples} draws split it, so the samples needed cannot be sized from them: more "
            f"than {n_samples * SWITCHING_DRAWS:g}{remedy}")


def resolve_reduction(reduction, finite, default: str) -> str:
    """The reduction asked for: `reduction` ("auto", "finite", "large-L"), or the old `finite` flag (True: "finite",
    False: "large-L"), or `default` when neither is given. Both given and disagreeing is refused (ParameterError)."""
    if reduction is not None:
        reduction = check_choice("reduction", reduction, REDUCTIONS)
    if finite is not None:
        finite = check_bool("finite", finite)
        implied = "finite" if finite else "large-L"
        if reduction is not None and reduction != implied:
            raise ParameterError("finite", finite, f"left out, or {implied == 'finite'} only with reduction "
                                                   f"{implied!r} (it is the old spelling of reduction={implied!r}; "
                                                   f"reduction={reduction!r} was given)")
        return implied
    return default if reduction is None else reduction


def curve(params: Parameters, rhos, *, reduction: str | None = None, finite: bool | None = None, samples: int = 4096,
          seed: int = 0) -> Curve:
    """J, J′, the drift (1 − ρ²)J′ and the noise-token mass at every ρ in `rhos`, labelled (`Curve`).

    reduction "large-L" (the default here): the closed form, with the error bound of `large_L_accuracy` where its
    expansion holds (status converged) and NaN errors and status limited where it does not; refused (ParameterError
    naming theta or sigma and the largest value the form takes, `check_large_L_finite`) where its exponentials
    overflow float64 at some ρ of `rhos`. `samples` and `seed` are checked whichever the
    reduction. "finite": the exact finite-L reduction
    with `samples` draws (`finite_reduction`). "auto": "finite" where L ≤ MAX_FINITE_L, else "large-L".
    `finite=True`/`False` is the old spelling of "finite"/"large-L" (a conflicting pair is refused).
    """
    params = as_parameters(params)
    method = resolve_reduction(reduction, finite, "large-L")
    rhos = checked_rhos(rhos)
    declared = SolveSettings.declarations()
    # checked whichever the reduction (the large-L form does not sample; a bad value is still refused, as by the CLI)
    samples = check_int("samples", samples, 16, max(16, MAX_FINITE_SAMPLES // rhos.size))
    seed = declared["seed"].metadata["allowed"].check("seed", seed)
    if method == "auto":
        method = "finite" if params.L <= MAX_FINITE_L else "large-L"
    if method == "finite":
        return finite_reduction(params, rhos, n_samples=samples, seed=seed)
    check_large_L_finite(params, rhos)
    with np.errstate(all="ignore"):
        values = large_L(params, rhos)
        if np.all(np.isfinite(values[:, [0, 1, 2, 4]])):  # the values reported: not float64's cancellations
            values = large_L_precise(params, rhos)
    # R = L gives (1 − π)·(...) = −0.0 for the nuisance mass; it is reported as 0.
    J, dJ, drift, nuisance = values[:, 0], values[:, 1], values[:, 2], values[:, 4] + 0.0
    finite_values = bool(np.all(np.isfinite(values[:, [0, 1, 2, 4]])))
    if not finite_values:  # the float64 form is finite (checked above), its mpmath evaluation is beyond float64
        nan = np.full(rhos.shape, math.nan)
        return Curve(rhos, nan, nan, nan, nan, None, None, None, None, params.theta_d, "large-L", 0, None,
                     Status.FAILED, "non-finite value of the large-L form in mpmath")
    accuracy = large_L_accuracy(params, rhos)
    beyond = "" if params.L <= MAX_FINITE_L else f" (L > {MAX_FINITE_L}: beyond the exact reduction's memory bound)"
    if accuracy.status == Status.CONVERGED:
        message = (f"large-L closed form{beyond}; errors bound its O(1/L) truncation (twice the delta-method "
                   f"correction plus the next order): {accuracy.message}")
    else:
        message = (f"large-L closed form{beyond}, NOT accurate at L = {params.L} where errors are null: the O(1/L) "
                   f"terms it leaves out are not small; {accuracy.message}. "
                   + ("The exact finite-L reduction (--reduction finite; reduction='finite' in Python) gives the value "
                      "with standard errors."
                      if params.L <= MAX_FINITE_L else "No exact evaluation is available at this L."))
    return Curve(rhos, J, dJ, drift, nuisance, accuracy.J_error, accuracy.dJ_error, accuracy.drift_error,
                 accuracy.nuisance_mass_error, params.theta_d, "large-L", 0, None, accuracy.status, message)


def solve(d, L, R, theta, rho, theta_scaling="direct", sigma=1.0, score_scale=1.0, sign_model="A", finite=None, *,
          reduction: str | None = None, samples: int = 4096, seed: int = 0, beta=None) -> SolveResult:
    """J, J′, the drift (1 − ρ²)J′ and the noise-token attention mass at alignment ρ: `curve` at one ρ.

    The model (docs/models/signal_recovery.md): a sequence of L tokens in dimension d, of which R are informative,
    x_i = θ_d s_i ξ + z_i, and the L − R others noise, x_i = z_i, with z_i ~ N(0, σ² I_d); the query q (unit norm,
    alignment ρ = ⟨q, ξ⟩ with the hidden direction ξ) scores each token by score_scale·⟨q, x_i⟩, and J is the
    expected squared norm of the softmax-weighted token average. θ_d = theta (theta_scaling "direct") or theta·√d
    ("sqrt-d"); sign_model: "A" s_i = +1, "B" one random sign per sequence, "C" one per informative token. Every
    parameter is checked (`make_parameters`): a ParameterError names a bad one and its range.

    reduction "auto" (the default): the exact finite-(d, L, R) reduction by Monte Carlo with `samples` draws
    (standard errors) wherever it fits in memory (L ≤ MAX_FINITE_L = 65536), else the large-L closed form;
    "finite": the reduction; "large-L": the closed form, with an error bound where its O(1/L) expansion holds and
    status limited (errors None, the size of the left-out terms in the message) where it does not.
    `finite=True`/`False` is the old spelling of reduction "finite"/"large-L" (a conflicting pair is refused).
    `beta` is the deprecated name of `score_scale`.
    """
    params = make_parameters(d, L, R, theta, theta_scaling, sigma, score_scale, sign_model, beta=beta)
    settings = SolveSettings.validated(rho=rho, samples=samples, seed=seed)
    method = resolve_reduction(reduction, finite, "auto")
    return curve(params, [settings.rho], reduction=method, samples=settings.samples, seed=settings.seed).at(
        0, settings.rho)
