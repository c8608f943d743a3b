"""Signal recovery by a learned softmax-attention query: the public Python entry points.

* `solve` — J(ρ), J′(ρ), the drift (1 − ρ²)J′ and the noise-token attention mass at one alignment, with errors:
  by default (`reduction="auto"`) from the exact finite-L reduction (an L-dimensional Gaussian expectation by Monte
  Carlo, standard errors) wherever it fits in memory (L ≤ MAX_FINITE_L), else from the large-L closed form;
  `reduction="finite"` or `"large-L"` picks one (`finite=True`/`False` is the old spelling); `curve` — the same over
  an array of ρ (default: the large-L form); `large_L_accuracy` — the O(1/L) terms the closed form leaves out and
  its error bound, where its expansion holds (elsewhere the closed form's status is limited);
* `finite_reduction` — the exact reduction on a grid of ρ with common random numbers;
* `fixed_points`, `ode_trajectory`, `choose_schedule`, ... — the limiting ODE and step schedules;
* `simulate` — projected SGA in d dimensions, batched over trials, by default under a schedule planned
  for its step count, with the ODE's prediction of the final alignment; `predicted_trajectories` — the
  ODE along a simulation's own starts and schedule;
* `plot_objective`, `plot_trajectories` — the model's figures (matplotlib Figures);
* `sweep_point` — one point of a parameter sweep (theory and simulation), picklable.

Every result is a `attnphase.results.Result`: `as_dict()` for JSON, `to_pandas()` for a table.

Conventions (as the CLI): scores β⟨q, x_i⟩ with β = `score_scale`; x_i = θ_d s_i ξ + z_i on the R
informative tokens, z_i ~ N(0, σ² I_d); θ_d = θ (`theta_scaling="direct"`) or θ√d (`"sqrt-d"`); L counts
all tokens. The implementation lives in `attnphase.models.signal_recovery`.
"""

from attnphase.models.signal_recovery.dynamics import (
    finite_drift,
    fixed_points,
    interpolated_finite_drift,
    large_L_drift,
    ode_limit_point,
    ode_time_to_reach,
    ode_trajectory,
)
from attnphase.models.signal_recovery.schedules import (
    NOISE_GRID,
    choose_schedule,
    predicted_alignment,
    predicted_trajectories,
    retraction_corrected_rho,
    tangent_noise,
)
from attnphase.models.signal_recovery.parameters import (
    MANUAL_SCHEDULE,
    MAX_FINITE_L,
    MAX_SIZE,
    MAX_STEPS,
    MIN_TOKENS,
    Parameters,
    SimulationSettings,
    SCHEDULES,
    SolveSettings,
    make_parameters,
)
from attnphase.models.signal_recovery.closed_form import (
    LARGE_L_EXPANSION_LIMIT,
    LARGE_L_OUTPUTS,
    large_L,
    large_L_accuracy,
)
from attnphase.models.signal_recovery.population import (
    REDUCTIONS,
    curve,
    finite_reduction,
    reduction_samples,
    solve,
)
from attnphase.models.signal_recovery.plots import plot_objective, plot_trajectories
from attnphase.models.signal_recovery.results import (
    Curve,
    FixedPointsResult,
    LargeLAccuracy,
    PredictedTrajectories,
    ScheduleChoice,
    SimulationResult,
    SolveResult,
    TangentNoise,
)
from attnphase.models.signal_recovery.simulate import run_sga, simulate, sweep_point

__all__ = [
    "Parameters", "SolveSettings", "SimulationSettings", "make_parameters", "MAX_SIZE", "MIN_TOKENS", "MAX_FINITE_L",
    "MAX_STEPS", "SCHEDULES", "MANUAL_SCHEDULE", "NOISE_GRID", "SolveResult", "Curve", "FixedPointsResult",
    "TangentNoise", "ScheduleChoice", "SimulationResult", "PredictedTrajectories", "LargeLAccuracy", "LARGE_L_OUTPUTS",
    "REDUCTIONS", "LARGE_L_EXPANSION_LIMIT", "large_L", "large_L_accuracy",
    "large_L_drift", "curve", "solve", "finite_reduction", "finite_drift", "reduction_samples", "fixed_points",
    "ode_limit_point", "ode_trajectory",
    "interpolated_finite_drift", "ode_time_to_reach", "tangent_noise", "retraction_corrected_rho", "choose_schedule",
    "predicted_trajectories", "predicted_alignment", "run_sga", "simulate", "sweep_point", "plot_objective",
    "plot_trajectories",
]
