"""Scaling-law fits: y ~ A x^beta (ln x)^k, with a confidence band on the exponent.

Model, linear in the unknowns, fitted by ordinary least squares:

    ln( y / (ln x)^k ) = ln A + beta ln x + sum_j c_j x^(omega_j)

k = `log_power` is a known logarithmic factor divided out (e.g. P* ~ L ln^2 L: fit with k = 2 and
expect beta = 1). The optional correction exponents omega_j model the leading corrections to scaling
(omega = -1 for 1/x corrections at large x, omega = +1 for analytic corrections near a critical point
at small x); without them a curved log-log plot biases beta.

The band is the Student-t interval beta +- t_{(1+confidence)/2, n-p} s.e.(beta), with the standard
error from the residual variance (s^2 (X^T X)^-1). With corrections, the band is widened by the
truncation error of the correction series, |beta - beta'| where beta' is the fit without the last
correction: deterministic data (fixed points, high-precision thresholds) have no random scatter,
and the residual-based band alone would only reflect the omitted higher-order terms, which bias beta
by a comparable amount. It is honest when the residuals are independent
scatter; the Durbin-Watson statistic of the residuals ordered by x tests that: values near 2 are
consistent with independence, values well below 2 mean the residuals are smooth in x, i.e. the model
misses a systematic correction and the band is too narrow.

With known errors of the data (`y_error`), the fit is weighted by 1/sigma_i with sigma_i = y_error_i
/ y_i (the error of ln y), and the covariance is (X^T W X)^-1 scaled by max(1, chi^2 / dof) (the
Birge ratio): the band reflects the data errors, widened when the misfit shows they are not the
whole story. `chi2` reports the misfit.

`law_fit` tests a claimed exponent against a threshold computed over a range of sizes: the fit over the
upper half of the sizes (the asymptotic part), its band widened by how much the local slope still drifts there and by
how far it will still move beyond the last size (the geometric tail of its changes, `remaining_drift`).
That widened band is the one it reports as the exponent's band: thresholds are deterministic, and their
residual-based band measures only how straight the log-log plot is over the sizes fitted, not how far the
exponent still has to move (linear crossover over L = 256…4096: 1.49909 with the residual band [1.49836,
1.49981], while the fit up to L = 2^20 gives 1.499981 and the exact exponent is 3/2). The tail is exact where the
corrections are powers of x (the slope then settles geometrically in ln x: linear copy heads at κ = 1, whose
crossover exponent 0.442 over L = 256…4096 tends to ½, which the drift alone left outside the band); logarithmic
corrections settle more slowly than any geometric tail, and there the band bounds the effective exponent over the
sizes fitted and the next windows, not the limit (softmax copy heads, P*/ln²L: [0.911, 0.991] over L = 2^12…2^20 holds
the fit over 2^20…2^28, 0.975, not the limit 1). Where the slope's changes do not shrink at all (the sizes leave the
law's regime) nothing is extrapolated and `LawFit.settles` says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from attnphase.errors import ParameterError
from attnphase.params import check_real, check_real_list

__all__ = ["ScalingFit", "fit_power_law", "EXPONENT_RESOLUTION", "exponent_verdict", "LawFit", "law_fit",
           "asymptotic_count", "remaining_drift"]

EXPONENT_RESOLUTION = 0.5
"""The default resolution of a verdict on a claimed exponent (`exponent_verdict`): "yes" needs the band to exclude
the exponents this far from the claim. The claimed exponents of the copy-heads laws and the laws the docs name against
them (L², V L^{3/2}, 1/L, L^{1/2}, V^0, ...) lie half a power apart."""

_HOLDS = {"yes": True, "no": False, "undecided": None, "": None}


@dataclass(frozen=True)
class ScalingFit:
    """exponent (beta) with its band [exponent_low, exponent_high] at `confidence`; prefactor A with
    its band; stderr of beta; n points; dof = n - parameters; corrections: fitted c_j; residuals (log
    space, in input order); residual_rms; durbin_watson (about 2 for independent residuals); chi2:
    weighted misfit sum ((residual / sigma)^2) when y_error is given (about dof for a good model);
    corrections_stderr: standard errors of the correction coefficients; exponent_systematic: the
    truncation part of the band (see the module docstring), included in exponent_low/high."""

    exponent: float
    exponent_low: float
    exponent_high: float
    prefactor: float
    stderr: float
    n: int
    prefactor_low: float = math.nan
    prefactor_high: float = math.nan
    confidence: float = 0.95
    log_power: float = 0.0
    dof: int = 0
    corrections: tuple[float, ...] = ()
    residuals: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    residual_rms: float = math.nan
    durbin_watson: float = math.nan
    chi2: float = math.nan
    corrections_stderr: tuple[float, ...] = ()
    exponent_systematic: float = 0.0

    def contains(self, exponent: float) -> bool:
        """True when `exponent` lies inside the confidence band."""
        return self.exponent_low <= exponent <= self.exponent_high


def fit_power_law(
    x, y, *, log_power: float = 0.0, confidence: float = 0.95, corrections=(), y_error=None
) -> ScalingFit:
    """Fit y = A x^beta (ln x)^log_power (1 + corrections); see the module docstring."""
    xs = np.asarray(check_real_list("x", x), dtype=float)
    ys = np.asarray(check_real_list("y", y), dtype=float)
    if xs.size != ys.size:
        raise ParameterError("y", f"{ys.size} values", f"as many values as x ({xs.size})")
    log_power = check_real("log_power", log_power)
    confidence = check_real("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    omegas = [check_real("corrections", w) for w in corrections]
    if np.any(xs <= 0):
        raise ParameterError("x", x, "positive values")
    if log_power != 0.0 and np.any(xs <= 1):
        raise ParameterError("x", x, "values > 1 (ln x must be positive to divide out (ln x)^log_power)")
    if np.any(ys <= 0):
        raise ParameterError("y", y, "positive values")
    n_params = 2 + len(omegas)
    if xs.size < n_params + 1:
        raise ParameterError("x", f"{xs.size} points", f"at least {n_params + 1} points for {n_params} parameters")
    if np.unique(xs).size < n_params:
        raise ParameterError("x", x, f"at least {n_params} distinct values")

    if y_error is not None:
        errs = np.asarray(check_real_list("y_error", y_error, length=xs.size, low=0.0), dtype=float)
        if np.any(errs <= 0):
            raise ParameterError("y_error", y_error, "positive values")
        sigma = errs / ys  # error of ln y
    else:
        sigma = np.ones_like(xs)

    lx = np.log(xs)
    target = np.log(ys) - log_power * np.log(lx) if log_power else np.log(ys)
    design = np.column_stack([np.ones_like(lx), lx] + [xs**w for w in omegas])
    coef, *_ = np.linalg.lstsq(design / sigma[:, None], target / sigma, rcond=None)
    # Truncation of the correction series: the change of the estimates when the last correction is
    # dropped (a conservative measure of what the next, omitted, correction would change).
    systematic = np.zeros(2)
    if omegas:
        lower, *_ = np.linalg.lstsq(design[:, :-1] / sigma[:, None], target / sigma, rcond=None)
        systematic = np.abs(coef[:2] - lower[:2])
    residuals = target - design @ coef
    dof = xs.size - n_params
    chi2 = float(np.sum((residuals / sigma) ** 2))
    # Unweighted: s^2 from the residuals. Weighted: the data errors, inflated by the Birge ratio.
    scale = chi2 / dof if y_error is None else max(1.0, chi2 / dof)
    cov = scale * np.linalg.inv((design / sigma[:, None]).T @ (design / sigma[:, None]))
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    t = float(stats.t.ppf(0.5 * (1.0 + confidence), dof))
    beta, ln_a = float(coef[1]), float(coef[0])
    order = np.argsort(xs)
    r_sorted = residuals[order]
    ss = float(r_sorted @ r_sorted)
    dw = float(np.sum(np.diff(r_sorted) ** 2) / ss) if ss > 0 else math.nan
    return ScalingFit(
        exponent=beta,
        exponent_low=beta - t * float(se[1]) - float(systematic[1]),
        exponent_high=beta + t * float(se[1]) + float(systematic[1]),
        prefactor=math.exp(ln_a),
        stderr=float(se[1]),
        n=int(xs.size),
        prefactor_low=math.exp(ln_a - t * float(se[0]) - float(systematic[0])),
        prefactor_high=math.exp(ln_a + t * float(se[0]) + float(systematic[0])),
        confidence=confidence,
        log_power=log_power,
        dof=dof,
        corrections=tuple(float(c) for c in coef[2:]),
        residuals=residuals,
        residual_rms=math.sqrt(float(residuals @ residuals) / xs.size),
        durbin_watson=dw,
        chi2=chi2 if y_error is not None else math.nan,
        corrections_stderr=tuple(float(v) for v in se[2:]),
        exponent_systematic=float(systematic[1]),
    )


@dataclass(frozen=True)
class LawFit:
    """A claimed exponent against data (`law_fit`).

    exponent: least-squares log-log slope of y/(ln x)^log_power over the upper half of the points (at least 4);
    local_slope: the slope between the last two points; remaining_drift: how far the local slope still moves beyond
    the last point, extrapolated from its last three values (`remaining_drift`); settles: whether those values settle
    (their changes shrink or alternate); where they do not (the sizes leave the law's regime, e.g. V growing towards
    L), nothing is extrapolated and the band is that of the sizes fitted only; systematic: |exponent - local_slope| +
    remaining_drift; [exponent_low, exponent_high]: the exponent's band, the 95% statistical band widened by
    `systematic` on each side; verdict: on the claimed exponent, "yes", "no" or "undecided" by `exponent_verdict`
    at `resolution` ("" when no exponent is claimed); a caller that judges the claim by another criterion replaces
    the verdict and sets resolution to NaN (copy-heads softmax P*: the corrected ratio, `law_verdicts`); holds: the
    verdict as a flag, True for "yes", False for "no", None for "undecided" or no claim (checked on construction:
    the two cannot disagree);
    [statistical_low, statistical_high]: the 95% Student-t band from the residuals alone (too narrow where the
    slope still drifts: it leaves out what the omitted corrections move); durbin_watson < ~1 flags smooth
    residuals (curvature); n: points in the fit.
    """

    claimed_exponent: float | None
    log_power: float
    exponent: float
    exponent_low: float
    exponent_high: float
    statistical_low: float
    statistical_high: float
    systematic: float
    local_slope: float
    durbin_watson: float
    n: int
    holds: bool | None
    remaining_drift: float = 0.0
    settles: bool = True
    verdict: str = ""
    resolution: float = EXPONENT_RESOLUTION

    def __post_init__(self):
        if self.verdict not in _HOLDS or self.holds is not _HOLDS[self.verdict]:
            raise ValueError(f"LawFit: verdict {self.verdict!r} with holds {self.holds!r} (verdict must be 'yes', "
                             f"'no', 'undecided' or '', and holds {_HOLDS.get(self.verdict)!r} with it)")


def exponent_verdict(claimed: float | None, low: float, high: float, resolution: float = EXPONENT_RESOLUTION) -> str:
    """The verdict on a claimed exponent against the band [low, high] (the module docstring): "no" when `claimed`
    lies outside it; "yes" when inside and the band excludes claimed ± `resolution`; "undecided" otherwise,
    including a band that is not finite; "" when no exponent is claimed (None)."""
    if claimed is None:
        return ""
    resolution = check_real("resolution", resolution, 0.0, low_open=True)
    if not (math.isfinite(low) and math.isfinite(high)):
        return "undecided"
    if not low <= claimed <= high:
        return "no"
    if low <= claimed - resolution or high >= claimed + resolution:
        return "undecided"
    return "yes"


def asymptotic_count(n: int) -> int:
    """How many of n increasing sizes count as the asymptotic part: the upper half, at least 4 (all of them where
    there are fewer). `law_fit` fits them; a verdict beside a fit judges the same points."""
    return min(n, max(4, (n + 1) // 2))


def law_fit(x, y, claimed_exponent: float | None, *, log_power: float = 0.0,
            resolution: float = EXPONENT_RESOLUTION) -> LawFit:
    """Fit y ~ x^beta (ln x)^log_power over the upper half of increasing x and test `claimed_exponent`: its verdict
    (`exponent_verdict` on the widened band) is "yes" only where the band also excludes the exponents `resolution`
    away from the claim (default EXPONENT_RESOLUTION = 1/2).

    Points whose y is not finite and positive (a threshold not found at that size) are left out first.
    """
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(ys) & (ys > 0)
    xs, ys = xs[ok], ys[ok]
    half = asymptotic_count(len(xs))
    fit = fit_power_law(xs[-half:], ys[-half:], log_power=log_power)
    lx = np.log(xs[-half:])
    ly = np.log(ys[-half:] / np.log(xs[-half:]) ** log_power) if log_power else np.log(ys[-half:])
    slopes = np.diff(ly) / np.diff(lx)
    local = float(slopes[-1])
    remaining = remaining_drift(slopes)
    settles = math.isfinite(remaining)
    systematic = abs(local - fit.exponent) + (remaining if settles else 0.0)
    low, high = fit.exponent_low - systematic, fit.exponent_high + systematic
    verdict = exponent_verdict(claimed_exponent, low, high, resolution)
    return LawFit(claimed_exponent, log_power, fit.exponent, low, high, fit.exponent_low, fit.exponent_high,
                  systematic, local, fit.durbin_watson, int(fit.n), _HOLDS[verdict],
                  remaining if settles else math.nan, settles, verdict, float(resolution))


def remaining_drift(slopes) -> float:
    """How far a sequence of local slopes (between successive sizes, equally spaced in ln x) still moves beyond its
    last value: their last two changes d₁ (latest) and d₂ give the ratio r = d₁/d₂, and for 0 ≤ r < 1 the geometric
    tail |d₁| r/(1 − r) (Aitken's extrapolation; exact for corrections x^(−ω), whose slope changes shrink by the same
    factor at each step); for r < 0 (alternating changes) at most |d₁|; inf for r ≥ 1, where the changes do not
    shrink and no limit can be read off (`LawFit.settles` false); 0 with fewer than three slopes or no change. With
    corrections x^(−1/2) (linear copy heads at κ = 1, P_crossover over L = 256…4096) the drift of the local slope
    alone left the exponent's limit ½ outside the band; logarithmic corrections (softmax P*/ln²L) settle more slowly
    than any geometric tail, and there the band bounds the fitted window's exponent only."""
    slopes = np.asarray(slopes, float)
    if slopes.size < 3:
        return 0.0
    latest, before = float(slopes[-1] - slopes[-2]), float(slopes[-2] - slopes[-3])
    if latest == 0.0:
        return 0.0
    if before == 0.0:
        return math.inf
    ratio = latest / before
    if ratio < 0:
        return abs(latest)
    if ratio >= 1:
        return math.inf
    return abs(latest) * ratio / (1 - ratio)
