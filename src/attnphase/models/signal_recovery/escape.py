"""When the ODE's prediction describes a simulation: the escape region of unstable fixed points, and the verdict.

The retraction-corrected ODE (`schedules.predicted_alignment`) follows the mean drift from each trial's start and
leaves out SGA's noise. Near an unstable fixed point ρ_u of the limiting drift v(ρ) = (1 − ρ²)J′(ρ) (ρ = 0 of sign
models B and C; the separatrix of model A where −ξ is stable; ±ξ where J′ points away) that noise decides how soon,
and to which side, a trial leaves: linearised there, x = ρ − ρ_u obeys x_{k+1} = x_k(1 + λη_k − ½η_k²N) + η_k ε_k,
λ = v′(ρ_u) > 0 and ε_k the fluctuation of ⟨G_⊥, ξ⟩ (the batch mean of `batch` sequences), so that after the run

    x_K = e^{g_K} (x_0 + Σ_k e^{−g_{k+1}} η_k ε_k),   Var of the sum  s² = (V/batch) Σ_k η_k² e^{−2g_{k+1}},

with g_k = Σ_{j<k} (λη_j − ½η_j²N) (the drift's slope and the retraction's), V = E⟨G_⊥, ξ⟩² per sequence
(`TangentNoise.along`; at ρ_u the drift, ⟨G_⊥, ξ⟩'s mean, vanishes; `escape_scale`). The noise moves
the trial's effective start by about s: a start with |ρ₀ − ρ_u| < ESCAPE_SIGMAS·s is carried across ρ_u with a
probability above Φ(−3) ≈ 0.1%, and the ODE from ρ₀ describes neither the side nor the time of its escape
(`escape_starts`). s comes from the model's own noise and the schedule that ran, nothing is fitted: at d = 32,
L = 128, R = 16, θ = 1, model B, η_k = 0.75/(k + 17), s = 0.19 around ρ = 0, and the ODE from ρ₀ = 0.001 had
predicted 0.0033 ± 0.00005 where SGA reached 0.385 ± 0.039. Started at ρ_u itself (d = 32, L = 128), the spread of
1024 trials after 40 small steps is e^{g_K}s within two of its sampling errors (2% each; at η₀ = 0.75 the step's own
normalisation, O(η²N), makes it 10% less). The region is looked for only where the linearisation holds: next to ρ_u
(nearer to it than to any other fixed point, the drift within LINEAR_TOLERANCE of λ(ρ₀ − ρ_u)).

`agreement` is the verdict on a made prediction: the z-score of the run's mean final |ρ| against it, both errors
combined, agreeing where |z| ≤ AGREEMENT_SIGMAS (as for copy-heads' `theory_agrees`: `status` is the run's own).
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.models.signal_recovery.parameters import Parameters
from attnphase.models.signal_recovery.results import TangentNoise
from attnphase.numeric.ode import FixedPoint, fixed_points_1d

__all__ = ["AGREEMENT_SIGMAS", "ESCAPE_SIGMAS", "LINEAR_TOLERANCE", "drift_fixed_points", "escape_scale",
           "escape_starts", "agreement"]

#: |z| of the run's mean final |ρ| against the prediction (errors combined) beyond which they do not agree.
AGREEMENT_SIGMAS = 3.0
#: A start closer to an unstable fixed point than this many noise scales s is within its escape region.
ESCAPE_SIGMAS = 3.0


def drift_fixed_points(params: Parameters, reduction=None) -> list[FixedPoint]:
    """The fixed points of the drift the prediction follows (`numeric.ode.FixedPoint`: x = ρ*, the slope v′(ρ*),
    stable where it is negative), in increasing ρ: of the exact finite-L drift where `reduction` (its `Curve` on a ρ
    grid from −1 to 1) is given, J′ linear between its grid points (`_drift`; ρ = ±1 included, where v vanishes);
    else of the large-L drift (`dynamics.fixed_points`; none where it fails: θ_d = 0, or model B with R = L, where
    every ρ is one)."""
    if reduction is None:
        from attnphase.models.signal_recovery.dynamics import fixed_points

        found = fixed_points(params)
        return [FixedPoint(r, s, st) for r, s, st in zip(found.rho, found.slope, found.stable)] if found.success else []
    rho, slope = np.asarray(reduction.rho, float), np.asarray(reduction.dJ, float)
    if not (np.all(np.isfinite(slope)) and rho[0] == -1.0 and rho[-1] == 1.0):
        return []
    return fixed_points_1d(_drift(params, reduction), -1.0, 1.0)


def escape_scale(noise: TangentNoise, point: FixedPoint, rho0: float, etas: np.ndarray, batch: int) -> float:
    """The noise scale s of the module's docstring for a start ρ₀ and the steps η_k that ran. Each step multiplies
    x by 1 + λη_k − ½η_k²N(ρ_u): the drift's slope and the retraction's, as in the corrected ODE the prediction
    follows (with N ≈ 30 and η = 0.044 the retraction alone outweighs λ = 0.4 at ρ = 0 of model B in the first
    steps); so s² = (V/batch) Σ_k η_k² e^{−2g_{k+1}}, g_k = Σ_{j<k} (λη_j − ½η_j²N). V is E⟨G_⊥, ξ⟩² at ρ_u, or at
    ρ₀ where that is larger: at ρ_u = ±1 the tangent part of ξ, and so V, vanishes, and the trial's own noise on its
    way out is the scale. Infinite where the noise's weight overflows (a long contraction first)."""
    etas = np.asarray(etas, float)
    variance = max(float(noise.along_at(point.x)), float(noise.along_at(rho0)))
    with np.errstate(all="ignore"):
        growth = np.cumsum(point.slope * etas - 0.5 * etas**2 * float(noise.at(point.x)))
        return math.sqrt(variance / batch * float(np.sum(etas**2 * np.exp(-2.0 * growth))))


#: The linearisation around ρ_u that gives s holds where the drift at the start is within this fraction of its linear
#: value λ(ρ₀ − ρ_u): a start beyond is carried by the drift's own nonlinearity, not by the escape the noise decides.
LINEAR_TOLERANCE = 0.5


def _drift(params: Parameters, reduction):
    """ρ -> v(ρ) = (1 − ρ²)J′(ρ) of the drift the prediction follows: J′ linear between the reduction's grid points,
    or the large-L drift."""
    if reduction is None:
        from attnphase.models.signal_recovery.closed_form import large_L

        return lambda r: float(large_L(params, np.array([r]))[0, 2])
    return lambda r: float((1 - r**2) * np.interp(r, reduction.rho, reduction.dJ))


def escape_starts(params: Parameters, noise: TangentNoise, rho0, etas, batch: int, reduction=None):
    """(mask of the trials whose start lies within the escape region of an unstable fixed point ρ_u, the nearest such
    start's (distance / s, ρ_u, s, ρ₀) or None): |ρ₀ − ρ_u| < ESCAPE_SIGMAS·s (`escape_scale`), for a start nearer to
    ρ_u than to any other fixed point (`drift_fixed_points`) and within ρ_u's linear range (the drift at ρ₀ within
    LINEAR_TOLERANCE of λ(ρ₀ − ρ_u)): s rests on the linearisation, and a start beyond is carried by the drift itself
    (without these, a constant step whose retraction contracts every trial for 400 steps gave s = 1e31 about a
    separatrix 1.4 away from the starts, and the planned schedule at d = 16, L = 64 gave s = 0.66 about the separatrix
    ρ_u = −0.80 of starts at |ρ₀| < 0.5, where the drift is 3-6 times its linear value). None without unstable points
    or without `noise.along`."""
    rho0 = np.atleast_1d(np.asarray(rho0, float))
    inside = np.zeros(rho0.size, bool)
    if noise.along is None or not np.all(np.isfinite(noise.along)):
        return inside, None
    points, drift = drift_fixed_points(params, reduction), _drift(params, reduction)
    nearest = None
    for i, start in enumerate(map(float, rho0)):
        point = min(points, key=lambda p: abs(start - p.x), default=None)
        if point is None or point.stable or not point.slope > 0:
            continue
        linear = point.slope * (start - point.x)
        with np.errstate(all="ignore"):
            if start != point.x and not abs(drift(start) - linear) <= LINEAR_TOLERANCE * abs(linear):
                continue
        scale = escape_scale(noise, point, start, etas, batch)
        distance = abs(start - point.x)
        ratio = distance / scale if scale > 0 else (0.0 if distance == 0 else math.inf)
        inside[i] = ratio < ESCAPE_SIGMAS or distance == 0
        if nearest is None or ratio < nearest[0]:
            nearest = (ratio, point.x, scale, start)
    return inside, nearest


def agreement(mean: float, error: float | None, predicted: float | None,
              predicted_error: float | None) -> tuple[float | None, bool | None]:
    """(z, agrees): z = (mean − predicted)/√(error² + predicted_error²), agrees = |z| ≤ AGREEMENT_SIGMAS; (None, None)
    where either side has no error (one trial, no prediction or no error on it) or both errors are 0."""
    if predicted is None or predicted_error is None or error is None or not error > 0:
        return None, None
    z = (mean - predicted) / math.hypot(error, predicted_error)
    return float(z), bool(abs(z) <= AGREEMENT_SIGMAS)
