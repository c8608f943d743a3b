"""Result types of the signal-recovery model (every one a `results.Result` with a `Status`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnphase.jsonio import to_jsonable
from attnphase.results import Result, Status

__all__ = ["SolveResult", "Curve", "FixedPointsResult", "ScheduleChoice", "SimulationResult"]


@dataclass(frozen=True)
class SolveResult(Result):
    """J, J′, the drift (1 − ρ²)J′ and the noise-token attention mass at one ρ; errors are Monte Carlo
    standard errors (finite-L reduction) or None (large-L form, whose O(1/L) truncation is not estimated)."""

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

    method "large-L" (closed form; errors None) or "finite-L" (the exact reduction by Monte Carlo with
    common random numbers across ρ: `samples` draws from `seed`; errors are standard errors, and
    differences across ρ are far more precise than the values). `rows()` gives one row per ρ.
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
            return None if errors is None else float(errors[index])

        return SolveResult(
            float(self.J[index]), float(self.dJ[index]), float(self.drift[index]), float(self.nuisance_mass[index]),
            error("J"), error("dJ"), error("drift"), error("nuisance_mass"), rho, self.theta_d, self.method,
            self.samples, self.status, self.message,
        )


@dataclass(frozen=True)
class FixedPointsResult(Result):
    """Fixed points ρ* of the drift in [−1, 1], the drift's slope there and the stability verdicts."""

    rho: list[float]
    slope: list[float]
    stable: list[bool]
    status: Status
    message: str

    def rows(self):
        return [{"rho": r, "slope": s, "stable": st} for r, s, st in zip(self.rho, self.slope, self.stable)]


@dataclass(frozen=True)
class ScheduleChoice(Result):
    """A step schedule η_k = η₀/(k + k₀) chosen from theory (see `dynamics.choose_schedule`).

    status converged when the retraction-corrected ODE reaches the target |ρ| within the step budget,
    limited when the budget is too short (`budget_limited`)."""

    eta0: float
    k0: float
    gamma: float
    steps: int
    t_final: float
    t_target: float  # time the plain ODE needs from ρ₀ to the target |ρ| (no retraction loss)
    eta_final: float
    eta_first: float
    noise: float  # E‖(I − qqᵀ)G‖² per sequence at ρ = 1
    target: float  # |ρ| the schedule aims for: 1 − 2·deficit
    rho0: float  # the start it plans for: ±1/√d, whichever the plain ODE needs longer from
    predicted_final: float  # |ρ| at the last step from the retraction-corrected ODE
    budget_limited: bool
    status: Status
    message: str


@dataclass(frozen=True)
class SimulationResult(Result):
    """Final alignments |ρ| of the trials of projected SGA and the recorded trajectories.

    positive_fraction: share of trials that ended on the +ξ side (None when a trial diverged);
    nuisance_mass_mean: the noise-token attention mass over the last recording window, averaged over
    trials; t_final = Σ η_k over the run; sequences_per_slice: dense token sequences held at once.
    """

    alignment: np.ndarray
    alignment_mean: float
    alignment_std: float
    final_rho: np.ndarray
    positive_fraction: float | None
    nuisance_mass_mean: float
    theta_d: float
    t_final: float
    device: str
    seconds: float
    sequences_per_slice: int
    status: Status
    message: str
    trajectory: object = field(repr=False)  # attnphase.validate.sphere_sga.SGAResult

    def rows(self):
        return [{"trial": i, "final_rho": float(r), "alignment": float(a)}
                for i, (r, a) in enumerate(zip(self.final_rho, self.alignment))]
