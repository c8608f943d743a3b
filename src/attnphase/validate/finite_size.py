"""Finite-size statistics: how far batched finite-d simulations sit from the d → ∞ theory.

Three questions a validation asks of K independent seeds at each size d:

* gap: the seed values x_k of an observable against the theory value t (with its own error). Two
  measures, because they scale differently. The bias |x̄ − t| is the systematic finite-d shift of the
  mean (typically O(1/d) for a smooth observable at a minimiser), resolved only when it exceeds the
  standard error of x̄. The rms deviation r = √(mean_k (x_k − t)² − mean_k s_k²) is the typical
  distance of ONE run from the theory: bias and seed-to-seed fluctuation together (the fluctuation of a
  self-averaging quantity is O(d^(−1/2))); s_k is the Monte-Carlo error of x_k itself (e.g. a test
  error estimated on finitely many fresh samples), removed because it does not shrink with d.
* rate: a power law gap ≈ A d^β fitted by numeric.scaling.fit_power_law, weighted by the gap errors,
  with a confidence band on β.
* basin: which of two competing minima each run reached, and the fraction with a binomial
  (Wilson score) confidence interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from attnphase.errors import ParameterError
from attnphase.numeric.scaling import ScalingFit, fit_power_law
from attnphase.params import check_int, check_real, check_real_list

__all__ = ["Gap", "gap_at_size", "fit_gap_rate", "classify_minimum", "binomial_interval", "MINIMA"]


@dataclass(frozen=True)
class Gap:
    """Distance of K seeds of one observable from its theory value at size d.

    bias = x̄ − t with bias_error = √(sem² + theory_error²); rms = the per-run rms deviation with the
    Monte-Carlo part removed (see the module docstring) and rms_error its standard error (delta method
    over the seeds, plus the theory error's effect). rms is NaN when the Monte-Carlo part exceeds the
    measured mean square (the finite-d deviation is not resolved).
    """

    d: int
    n_seeds: int
    theory: float
    theory_error: float
    mean: float
    bias: float
    bias_error: float
    rms: float
    rms_error: float

    def as_dict(self) -> dict:
        return {"d": self.d, "seeds": self.n_seeds, "theory": self.theory, "theory_error": self.theory_error,
                "mean": self.mean, "bias": self.bias, "bias_error": self.bias_error, "rms": self.rms,
                "rms_error": self.rms_error}


def gap_at_size(d, samples, theory, *, theory_error=0.0, measurement_sem=None) -> Gap:
    """Bias and rms deviation of the seed values `samples` from `theory` at size d (≥ 2 seeds)."""
    d = check_int("d", d, 1, None)
    theory = check_real("theory", theory)
    theory_error = check_real("theory_error", theory_error, 0.0)
    x = np.asarray(check_real_list("samples", samples), float)
    if x.size < 2:
        raise ParameterError("samples", samples, "at least 2 seeds (the spread is needed)")
    mc = np.zeros_like(x) if measurement_sem is None else np.asarray(
        check_real_list("measurement_sem", measurement_sem, length=x.size, low=0.0), float)
    K = x.size
    deviation = x - theory
    sem = float(x.std(ddof=1) / math.sqrt(K))
    bias = float(deviation.mean())
    squares = deviation**2 - mc**2  # unbiased for the squared distance without the Monte-Carlo part
    mean_square = float(squares.mean())
    if mean_square <= 0:
        rms, rms_error = math.nan, math.nan
    else:
        rms = math.sqrt(mean_square)
        # δ(r²): spread of the per-seed squares over √K, and ∂r²/∂t = −2·bias times the theory error.
        square_error = math.hypot(float(squares.std(ddof=1)) / math.sqrt(K), 2 * abs(bias) * theory_error)
        rms_error = square_error / (2 * rms)
    return Gap(d, K, theory, theory_error, float(x.mean()), bias, math.hypot(sem, theory_error), rms, rms_error)


def fit_gap_rate(gaps, measure: str = "rms", confidence: float = 0.95) -> ScalingFit:
    """Power law gap ≈ A d^β over the sizes of `gaps` (Gap list), weighted by the gap errors.

    measure: "rms" (per-run deviation) or "bias" (|x̄ − t|; meaningful only where it exceeds its error).
    Points with an unresolved (NaN) gap are left out; at least 3 sizes must remain.
    """
    if measure not in ("rms", "bias"):
        raise ParameterError("measure", measure, "'rms' or 'bias'")
    ds, ys, errs = [], [], []
    for g in gaps:
        value = g.rms if measure == "rms" else abs(g.bias)
        error = g.rms_error if measure == "rms" else g.bias_error
        if math.isfinite(value) and value > 0 and math.isfinite(error) and error > 0:
            ds.append(g.d)
            ys.append(value)
            errs.append(error)
    if len(ds) < 3:
        raise ParameterError("gaps", f"{len(ds)} resolved sizes", "at least 3 sizes with a resolved gap")
    return fit_power_law(ds, ys, y_error=errs, confidence=confidence)


MINIMA = ("positional", "semantic", "other")


def classify_minimum(m, theta, positional_m, semantic_theta, *, fraction: float = 0.5) -> np.ndarray:
    """Label each run by the minimum it reached, from its overlaps |m| and |θ|.

    With u = |m|/|m_pos| and v = |θ|/|θ_sem| (each overlap in units of its value on the theory branch
    that has it): "positional" when u ≥ fraction, else "semantic" when v ≥ fraction, else "other"
    (near neither branch: trivial-like). |m| decides first because it separates the minima with a
    large contrast at every α (exactly 0 on the semantic branch, O(0.2) on the positional one), whereas
    θ_sem can be small (near the semantic branch's spinodal θ_sem ≈ 0.01 at α = 0.5, ω = 0.3), where
    the O(d^(-1/2)) finite-d fluctuation of θ exceeds it. A mixed-like run (both overlaps large)
    therefore counts as positional. fraction = ½ puts the boundary halfway between each branch and
    the invariant set of the other. A branch that does not exist at this α (the theory value None) is
    never assigned.
    """
    fraction = check_real("fraction", fraction, 0.0, 1.0, low_open=True, high_open=True)
    try:
        np.broadcast_shapes(np.shape(m), np.shape(theta))
    except ValueError:
        raise ParameterError("theta", f"shape {np.shape(theta)}", f"the shape of m, {np.shape(m)} (one value per run)"
                             ) from None
    u = np.zeros(np.shape(m)) if positional_m is None else (
        np.abs(np.asarray(m, float)) / check_real("positional_m", abs(positional_m), 0.0, None, low_open=True))
    v = np.zeros(np.shape(theta)) if semantic_theta is None else (
        np.abs(np.asarray(theta, float)) / check_real("semantic_theta", abs(semantic_theta), 0.0, None, low_open=True))
    return np.where(u >= fraction, "positional", np.where(v >= fraction, "semantic", "other")).astype(object)


def binomial_interval(successes, trials, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (stays inside [0, 1], sensible at 0 or all)."""
    trials = check_int("trials", trials, 1, None)
    successes = check_int("successes", successes, 0, trials)
    confidence = check_real("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    z = float(stats.norm.ppf(0.5 * (1 + confidence)))
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)
