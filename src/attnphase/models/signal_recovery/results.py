"""Result types of the signal-recovery model (every one a `results.Result` with a `Status`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from attnphase.jsonio import to_jsonable
from attnphase.results import Result, Status

__all__ = ["SolveResult", "Curve", "LargeLAccuracy", "FixedPointsResult", "TangentNoise", "ScheduleChoice",
           "SimulationResult", "PredictedTrajectories"]


@dataclass(frozen=True)
class SolveResult(Result):
    """J, J′, the drift (1 − ρ²)J′ and the noise-token attention mass at one ρ.

    method "finite-L": errors are Monte Carlo standard errors of the exact reduction. method "large-L": errors bound
    the closed form's O(1/L) truncation (`closed_form.large_L_accuracy`) where its expansion holds (status converged),
    None where it does not (status limited; the message gives the size of the left-out terms)."""

    J: float
    dJ: float
    drift: float
    nuisance_mass: float
    J_error: float | None
    dJ_error: float | None
    drift_error: float | None
    nuisance_mass_error: float | None
    rho: float
    theta_d: float
    method: str
    samples: int
    status: Status
    message: str


@dataclass(frozen=True)
class Curve(Result):
    """J, J′, the drift and the noise-token mass over an array of ρ, with their errors.

    method "large-L" (closed form; errors bound its O(1/L) truncation, NaN where its expansion fails, which makes the
    status limited) or "finite-L" (the exact reduction by Monte Carlo with common random numbers across ρ: `samples`
    draws from `seed`; errors are standard errors, and differences across ρ are far more precise than the values).
    `rows()` gives one row per ρ (a NaN error is None there).
    """

    rho: np.ndarray
    J: np.ndarray
    dJ: np.ndarray
    drift: np.ndarray
    nuisance_mass: np.ndarray
    J_error: np.ndarray | None
    dJ_error: np.ndarray | None
    drift_error: np.ndarray | None
    nuisance_mass_error: np.ndarray | None
    theta_d: float
    method: str
    samples: int
    seed: int | None
    status: Status
    message: str

    COLUMNS = ("J", "dJ", "drift", "nuisance_mass")

    def rows(self):
        out = []
        for i, rho in enumerate(self.rho):
            row = {"rho": float(rho)}
            for name in self.COLUMNS:
                row[name] = to_jsonable(getattr(self, name)[i])
                errors = getattr(self, name + "_error")
                row[name + "_error"] = None if errors is None else to_jsonable(errors[i])
            out.append(row)
        return out

    def at(self, index: int, rho: float) -> SolveResult:
        """The `index`-th point as a `SolveResult` (at the alignment `rho` that was asked for)."""
        def error(name):
            errors = getattr(self, name + "_error")
            return None if errors is None or not np.isfinite(errors[index]) else float(errors[index])

        return SolveResult(
            float(self.J[index]), float(self.dJ[index]), float(self.drift[index]), float(self.nuisance_mass[index]),
            error("J"), error("dJ"), error("drift"), error("nuisance_mass"), rho, self.theta_d, self.method,
            self.samples, self.status, self.message,
        )


@dataclass(frozen=True)
class LargeLAccuracy(Result):
    """How far the large-L closed form is from the exact finite-(d, L, R) values at each ρ (`large_L_accuracy`).

    The closed form is the reduction's integrand at the means of five token averages; the O(1/L) terms it leaves out
    are ½ Σ ∂²f · Cov / L (second-order delta method): `J_correction`, `dJ_correction`, `nuisance_correction` (add
    them to the closed form for the next order). `expansion_ratio` q = (those terms of J summed in absolute value) /
    |J_∞| measures the expansion; `normaliser_fluctuation` δ is the relative standard deviation of Σ_i e^{βy_i}/L,
    √((E e^{2βy}/(E e^{βy})² − 1)/L) over the token mixture. Where q ≤ `limit` (`accurate`) the errors
    2|correction| + (next order, ~ q × the terms) bound |closed form − exact value|; elsewhere they are NaN.
    """

    rho: np.ndarray
    J_correction: np.ndarray
    dJ_correction: np.ndarray
    nuisance_correction: np.ndarray
    J_error: np.ndarray
    dJ_error: np.ndarray
    drift_error: np.ndarray
    nuisance_mass_error: np.ndarray
    expansion_ratio: np.ndarray
    normaliser_fluctuation: np.ndarray
    accurate: np.ndarray
    limit: float
    status: Status
    message: str

    def rows(self):
        names = ("J_correction", "dJ_correction", "nuisance_correction", "J_error", "dJ_error", "drift_error",
                 "nuisance_mass_error", "expansion_ratio", "normaliser_fluctuation", "accurate")
        return [{"rho": float(r), **{n: to_jsonable(getattr(self, n)[i]) for n in names}}
                for i, r in enumerate(self.rho)]


@dataclass(frozen=True)
class FixedPointsResult(Result):
    """Fixed points ρ* of the large-L drift in [−1, 1], the drift's slope there and the stability verdicts.

    They are the large-L drift's own (roots to float64); `rho_error` and `slope_error` say how far they may lie from
    the exact finite-(d, L, R) drift's, by the large-L form's error bound (`large_L_accuracy`): a root's error is the
    drift's bound there over |slope|, 0 at ρ = ±1 (the drift (1 − ρ²)J′ vanishes there for every J); the slope's
    error is 2× the bound on J′ at ρ = ±1 (the slope there is ∓2J′) and NaN at a root inside, whose slope needs J″,
    which the bound does not cover. NaN where the bound does not hold (`large_L_accuracy`: expansion ratio above its
    limit)."""

    rho: list[float]
    slope: list[float]
    stable: list[bool]
    status: Status
    message: str
    rho_error: list[float] = field(default_factory=list)
    slope_error: list[float] = field(default_factory=list)

    def rows(self):
        return [{"rho": r, "rho_error": re, "slope": s, "slope_error": se, "stable": st}
                for r, re, s, se, st in zip(self.rho, self.rho_error, self.slope, self.slope_error, self.stable)]


@dataclass(frozen=True)
class TangentNoise(Result):
    """N(ρ) = E‖(I − qqᵀ)∇_q‖f‖²‖² per sequence at alignments ρ: the mean over `pilot` sequences of the
    exact projected sampler (the law of dense tokens) and its standard error. N sets the retraction
    loss ½η²N of a projected SGA step; between the alignments it is interpolated linearly (`at`). `along`:
    E⟨G_⊥, ξ⟩² per sequence at the same alignments (the part of N that moves ρ: its variance sets how far SGA's
    noise carries ρ, `escape`), None where not measured; `along_mean`: the mean of ⟨G_⊥, ξ⟩ over the same sequences
    (the drift (1 − ρ²)J′, for `of_batch_mean`). `batch`: the sequences whose mean gradient N is of (1: one)."""

    rho: np.ndarray
    noise: np.ndarray
    noise_error: np.ndarray
    pilot: int
    seed: int
    status: Status
    message: str
    along: np.ndarray | None = None
    along_mean: np.ndarray | None = None
    batch: int = 1

    def of_batch_mean(self, batch: int) -> TangentNoise:
        """N for the mean of `batch` independent sequences' tangent gradients, what one step of batch SGA moves q by:
        E‖mean G_⊥‖² = ‖E G_⊥‖² + (N − ‖E G_⊥‖²)/batch. The population gradient is J′ξ, so ‖E G_⊥‖² = (1 − ρ²)J′² =
        m²/(1 − ρ²) with m = E⟨G_⊥, ξ⟩, estimated from the pilot's mean without its bias (E m̂² = m² + (along −
        m²)/pilot). `along` stays per sequence: the escape check divides it by the batch itself."""
        if batch == 1:
            return self
        n, rho = self.pilot, self.rho
        with np.errstate(all="ignore"):
            squared_mean = np.clip((n * np.square(self.along_mean) - self.along) / (n - 1), 0.0, None)
            mean_part = np.where(np.abs(rho) < 1, squared_mean / (1 - np.square(rho)), 0.0)
        return replace(self, noise=mean_part + (self.noise - mean_part) / batch, noise_error=self.noise_error / batch,
                       batch=batch, message=f"{self.message}; for the mean of {batch} sequences' gradients")

    def at(self, rho, shift: float = 0.0) -> np.ndarray:
        """N at `rho` (linear interpolation), optionally shifted by `shift` standard errors."""
        return np.interp(rho, self.rho, self.noise + shift * self.noise_error)

    def along_at(self, rho) -> np.ndarray:
        """E⟨G_⊥, ξ⟩² per sequence at `rho` (linear interpolation)."""
        return np.interp(rho, self.rho, self.along)

    def rows(self):
        along = self.along if self.along is not None else [None] * len(self.rho)
        return [{"rho": float(r), "noise": float(n), "noise_error": float(e),
                 "along": None if a is None else float(a)}
                for r, n, e, a in zip(self.rho, self.noise, self.noise_error, along)]


@dataclass(frozen=True)
class ScheduleChoice(Result):
    """A step schedule η_k = η₀/(k + k₀) chosen from theory (see `schedules.choose_schedule`).

    status converged when the retraction-corrected ODE reaches the target |ρ| within the step budget,
    limited when it does not (`budget_limited`)."""

    eta0: float
    k0: float
    gamma: float
    steps: int
    t_final: float = field(metadata={"unit": "t = sum of eta_k"})
    t_target: float = field(metadata={"unit": "plain ODE time from rho0 to the target"})
    eta_final: float
    eta_first: float
    noise: float = field(metadata={"unit": "E|G_tangent|^2 per sequence at rho = 1"})
    target: float = field(metadata={"unit": "|rho| = 1 - 2 deficit"})
    rho0: float = field(metadata={"unit": "planned start, -1/sqrt(d) or +1/sqrt(d)"})
    predicted_final: float = field(metadata={"unit": "|rho|, retraction-corrected ODE from rho0"})
    budget_limited: bool
    status: Status
    message: str


@dataclass(frozen=True)
class SimulationResult(Result):
    """Final alignments |ρ| of the trials of projected SGA, the schedule that ran, the theory's prediction.

    alignment_error: standard error of alignment_mean over the independent trials; positive_fraction:
    share of trials that ended on the +ξ side (None when a trial diverged); nuisance_mass_mean: the
    noise-token attention mass over the last recording window, averaged over trials (None when a trial diverged),
    nuisance_mass_error its standard error over the trials (None for one trial); t_final = Σ η_k. status (the run's
    own, as for every model's `simulate`): converged when every trial stayed finite, the schedule that ran — planned
    or manual — reaches the planner's target |ρ| by the retraction-corrected ODE from the slower random start ±1/√d
    (`schedules.choose_schedule`, `schedules.schedule_reach`) and the prediction asked for was made; limited when
    the run finished without one of those (the message says which); diverged.
    schedule: "auto" (η₀, k₀ planned by `schedules.choose_schedule` for exactly this step count; `plan`
    is its record) or "manual" (as given, or the manual default where no schedule could be planned: `plan` says
    why). predicted_alignment: mean over the trials of |ρ| at the last
    step from the retraction-corrected ODE (`schedules.retraction_corrected_rho`; the exact finite-L drift up to
    L = `dynamics.FINITE_DRIFT_MAX_L`, the large-L one beyond) started at each trial's own ρ₀ under the schedule that
    ran; predicted_alignment_error: its error from the Monte Carlo errors of the tangent noise N and of the finite-L
    drift (beyond FINITE_DRIFT_MAX_L the large-L drift's O(1/L), and the mean-field equation's O(η) terms, are not
    in it), None where a trial starts within the noise-driven escape region of an unstable fixed point, which the
    ODE leaves out (`escape`). prediction_agrees: whether the theory agrees with the run, |prediction_z| ≤ 3 with
    prediction_z = (alignment_mean − predicted_alignment)/√(alignment_error² + predicted_alignment_error²); None
    where either side has no error. sequences_per_slice: dense token sequences held at once.
    """

    alignment: np.ndarray
    alignment_mean: float = field(metadata={"unit": "|rho| = |<q, xi>|, mean over trials"})
    alignment_std: float
    alignment_error: float = field(metadata={"unit": "standard error of the mean"})
    final_rho: np.ndarray
    positive_fraction: float | None
    nuisance_mass_mean: float | None = field(metadata={"unit": "attention mass on the L - R noise tokens"})
    nuisance_mass_error: float | None
    theta_d: float
    t_final: float = field(metadata={"unit": "t = sum of eta_k"})
    schedule: str = field(metadata={"unit": "eta_k = eta0/(k + k0)^gamma"})
    eta0: float
    k0: float
    gamma: float
    plan: ScheduleChoice | None
    predicted_alignment: float | None = field(metadata={"unit": "mean |rho|, retraction-corrected ODE"})
    predicted_alignment_error: float | None = field(
        metadata={"unit": "Monte Carlo error of N and J'; SGA's own fluctuations not in it"})
    prediction_agrees: bool | None
    prediction_z: float | None = field(metadata={"unit": "standard errors, both combined; agrees where |z| <= 3"})
    device: str
    threads: int
    seconds: float
    sequences_per_slice: int
    status: Status
    message: str
    trajectory: object = field(repr=False)  # attnphase.validate.sphere_sga.SGAResult
    params: object = field(repr=False)  # the model's Parameters
    noise: TangentNoise | None = field(repr=False, default=None)

    def rows(self):
        return [{"trial": i, "final_rho": float(r), "alignment": float(a)}
                for i, (r, a) in enumerate(zip(self.final_rho, self.alignment))]


@dataclass(frozen=True)
class PredictedTrajectories(Result):
    """The ODE's ρ(t) for every trial of a simulation, at its recorded steps (`schedules.predicted_trajectories`).

    kind: "retraction-corrected" (dρ/dt = (1 − ρ²)J′ − ½η(t)ρN under the schedule that ran) or "plain"
    (dρ/dt = (1 − ρ²)J′); rho[j, trial] from that trial's own ρ₀, at steps[j] (times[j] = Σ_{i<k} η_i).
    """

    steps: np.ndarray
    times: np.ndarray
    rho: np.ndarray
    kind: str
    status: Status
    message: str

    def rows(self):
        return [{"step": int(k), "t": float(t), "trial": i, "rho": float(r)}
                for k, t, row in zip(self.steps, self.times, self.rho) for i, r in enumerate(row)]
