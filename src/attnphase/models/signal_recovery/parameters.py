"""The signal-recovery model's parameters, declared once for the Python API, the CLI and the simulator.

`Parameters` is the model (d, L, R, θ, its scaling, σ, the score scale β, the sign model); `SolveSettings`
and `SimulationSettings` are what `solve` and `simulate` need besides the model. Each range is declared
here and nowhere else: `cli.common.options_from` builds the CLI options (and their help) from these
declarations, and the API validates through `ParameterSet.validated`, so both reject the same values
with the same message. Everything downstream trusts a validated object.

This module imports no SymPy, torch or solver code (the CLI imports it at start-up).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

from attnphase.errors import ParameterError
from attnphase.params import IntRange, OneOf, ParameterSet, RealRange, parameter

__all__ = [
    "SIGN_MODELS", "THETA_SCALINGS", "SAMPLERS", "SCHEDULES", "MANUAL_SCHEDULE", "NORMAL_SOURCES", "MAX_SIZE", "MIN_TOKENS", "MAX_FINITE_L",
    "MAX_STEPS", "MAX_FINITE_SAMPLES", "MAX_SIMULATION_NUMBERS", "MAX_PROJECTED_NUMBERS", "FLOAT32_MAX",
    "max_simulated_token_norm", "noise_token_norm", "MAX_SEED", "Parameters", "SolveSettings",
    "SimulationSettings", "make_parameters", "as_parameters",
]

SIGN_MODELS = ("A", "B", "C")
THETA_SCALINGS = ("direct", "sqrt-d")
SAMPLERS = ("dense", "projected")
SCHEDULES = ("auto", "manual")
#: η₀, k₀, γ of a manual schedule that leaves some of them out: η_k = 0.05/(k + 50), the Robbins–Monro
#: schedule (γ = 1) that recovers ξ at the paper's headline size under θ_d = θ√d.
MANUAL_SCHEDULE = {"eta0": 0.05, "k0": 50.0, "gamma": 1.0}
NORMAL_SOURCES = ("auto", "ziggurat", "torch")

# d and L are used as floats (10**400 overflowed): sizes beyond MAX_SIZE are refused where they enter.
MAX_SIZE = 10**12
# L counts all tokens. With one token the softmax weight is 1 whatever q, so J is flat and the drift
# vanishes: L ≥ 2. R = L (no nuisance tokens, π = 1) is allowed; the nuisance mass is then 0.
MIN_TOKENS = 2
# A block of the finite-L reduction holds ~10 arrays of 256 × L floats (L = 1e9 asked for 119 GiB).
MAX_FINITE_L = 1 << 16
# The reduction keeps about a dozen floats per sample and ρ until the end (samples = 1e300 looped for ever, filling the
# memory): samples × (number of ρ) is at most this, about 1.6 GB.
MAX_FINITE_SAMPLES = 1 << 24
# The step-size schedule is one array of `steps` floats, and everything a simulation holds at once must
# fit (10**12 trials or 10**15 steps were allocation errors).
MAX_STEPS = 10**8
MAX_SIMULATION_NUMBERS = 1 << 28
# The projected sampler holds about ten (sequences × (L + d)) arrays per step.
MAX_PROJECTED_NUMBERS = 1 << 24
MAX_SEED = 2**63 - 1
FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32


def max_simulated_token_norm(score_scale: float) -> float:
    """The largest token norm B whose gradients float32 holds in the simulation (network.pooling_gradient): both terms
    of the gradient 2β(Σ a_i ⟨x_i, f⟩ x_i − ‖f‖² f) are at most B³ in norm, so the gradient is at most 4βB³, kept here
    16 times below float32's largest number. (θ_d = 1e13 overflowed at β = 1, d = 16.)"""
    return (FLOAT32_MAX / (64.0 * score_scale)) ** (1.0 / 3.0)


def noise_token_norm(d: int, sigma: float) -> float:
    """σ(√d + 10): a bound on the norm of a token's noise σz (a chi variable with d degrees of freedom exceeds √d + 10
    with probability below e^-50)."""
    return sigma * (math.sqrt(d) + 10.0)


@dataclass(frozen=True)
class Parameters(ParameterSet):
    """The model: R informative tokens x_i = θ_d s_i ξ + z_i and L − R noise tokens z_i ~ N(0, σ² I_d),
    scores β⟨q, x_i⟩ with β = `score_scale`. `theta_d` is θ after the scaling convention (θ or θ√d),
    evaluated from the symbolic source when the object is made."""

    d: int = parameter(IntRange(2, MAX_SIZE), help="Dimension.")
    L: int = parameter(IntRange(MIN_TOKENS, MAX_SIZE),
                       help="Number of tokens, all of them (one token would make the objective flat).")
    R: int = parameter(IntRange(1, MAX_SIZE), help="Number of informative tokens, at most L (R = L: no nuisance tokens).")
    theta: float = parameter(RealRange(0.0, None),
                             help="Signal strength. The large-L reduction refuses a theta at which its closed form "
                                  "overflows float64 (for rho > 0: score_scale*theta_d*rho above ln(float64 max)/3 = "
                                  "236.59) and names the largest it takes.")
    theta_scaling: str = parameter(OneOf(THETA_SCALINGS), "direct", help="theta_d = theta (direct) or theta*sqrt(d).")
    sigma: float = parameter(RealRange(0.0, None, low_open=True), 1.0,
                             help="Noise standard deviation. The large-L reduction refuses a sigma at which its "
                                  "closed form's e^(score_scale^2 sigma^2) overflows float64 and names the largest it "
                                  "takes.")
    score_scale: float = parameter(RealRange(0.0, None, low_open=True), 1.0,
                                   help="Score scale beta: the scores are beta*<q, x_i>.")
    sign_model: str = parameter(OneOf(SIGN_MODELS), "A",
                                help="A: +theta_d xi; B: one random sign per sequence; C: one random sign per "
                                     "informative token.")
    theta_d: float = field(init=False)

    def __post_init__(self):
        from attnphase.models.signal_recovery import symbolic

        expr = symbolic.THETA_D[self.theta_scaling]
        object.__setattr__(self, "theta_d", float(expr.subs({symbolic.theta: self.theta, symbolic.d: self.d})))

    def check_joint(self) -> None:
        if self.R > self.L:
            raise ParameterError("R", self.R, f"an integer in [1, {self.L}] (at most L)")
        if not math.isfinite(self.theta_d):
            raise ParameterError("theta", self.theta,
                                 f"a finite real number >= 0 with theta_d = theta·√d finite (d = {self.d})")

    @property
    def informative_fraction(self) -> float:
        return self.R / self.L

    @property
    def noise_fraction(self) -> float:
        """(L − R)/L, from the integers (not 1 − R/L, which is rounding where R is close to L)."""
        return (self.L - self.R) / self.L


@dataclass(frozen=True)
class SolveSettings(ParameterSet):
    """Where `solve` evaluates (the alignment ρ) and how the finite-L reduction samples."""

    rho: float = parameter(RealRange(-1.0, 1.0), help="Alignment <q, xi>.")
    samples: int = parameter(IntRange(16, MAX_FINITE_SAMPLES), 4096,
                             help="Monte Carlo samples of the finite-L reduction.")
    seed: int = parameter(IntRange(0, MAX_SEED), 0, help="Seed of the finite-L samples.")


@dataclass(frozen=True)
class SimulationSettings(ParameterSet):
    """Projected SGA: trials, steps, the schedule η_k = η₀/(k + k₀)^γ, mini-batch, seed, sampler, start, recording.

    schedule "auto" (the default when none of η₀, k₀, γ is given): η₀ and k₀ (γ = 1) planned from the
    retraction-corrected ODE for exactly `steps` steps (`schedules.choose_schedule`); "manual" (implied by
    giving any of them): η₀, k₀, γ as given, the others from `MANUAL_SCHEDULE`.
    """

    trials: int = parameter(IntRange(1, None), help=f"Independent trials (batched); with the batch and d, at most "
                                                    f"trials·(1 + batch)·d = {MAX_SIMULATION_NUMBERS} numbers "
                                                    "(memory).")
    steps: int = parameter(IntRange(1, MAX_STEPS), help="SGA steps.")
    schedule: str | None = parameter(
        OneOf(SCHEDULES), None,
        help="auto: eta0 and k0 (gamma = 1) planned from the retraction-corrected ODE for this many steps; manual: "
             "eta0, k0, gamma as given (default: auto, or manual when any of them is given).")
    eta0: float | None = parameter(RealRange(0.0, None, low_open=True), None,
                                   help="Manual schedule: step size eta_k = eta0/(k + k0)^gamma (default 0.05).")
    k0: float | None = parameter(RealRange(0.0, None), None,
                                 help="Manual schedule: offset k0, > 0 when gamma > 0 (default 50).")
    gamma: float | None = parameter(RealRange(0.0, 1.0), None, help="Manual schedule: exponent gamma (default 1).")
    batch: int = parameter(IntRange(1, None), 1, help="Sequences per gradient (mini-batch); see --trials for the "
                                                      "bound on trials·(1 + batch)·d.")
    seed: int = parameter(IntRange(0, MAX_SEED), 0, help="Seed.")
    sampler: str = parameter(OneOf(SAMPLERS), "projected",
                             help="projected: the gradient's exact law from 2L + 2d numbers per sequence; dense: L x d "
                                  "tokens per sequence (the same law, for validation).")
    rho0: float | None = parameter(RealRange(-1.0, 1.0), None,
                                   help="Start every trial at this alignment (default: uniform on the sphere).")
    normal_source: str = parameter(OneOf(NORMAL_SOURCES), "auto",
                                   help="Dense sampler's Gaussian source: ziggurat (CPU only), torch, or auto "
                                        "(ziggurat on the CPU).")
    record_every: int | None = parameter(IntRange(1, None), None,
                                         help="Record the trajectory every this many steps (default: steps/50).")

    def check_joint(self) -> None:
        given = [name for name in MANUAL_SCHEDULE if getattr(self, name) is not None]
        if self.schedule == "auto" and given:
            raise ParameterError("schedule", self.schedule, f"'manual' (or left out) when {given[0]} is given")
        if self.schedule_kind == "manual":
            eta0, k0, gamma = self.manual_schedule
            if k0 == 0 and gamma > 0:
                raise ParameterError("k0", k0, "a real number > 0 when gamma > 0")

    @property
    def schedule_kind(self) -> str:
        """"auto" or "manual", after the rule of the class docstring."""
        if self.schedule is not None:
            return self.schedule
        return "manual" if any(getattr(self, name) is not None for name in MANUAL_SCHEDULE) else "auto"

    @property
    def manual_schedule(self) -> tuple[float, float, float]:
        """(η₀, k₀, γ) of a manual schedule: the given values, `MANUAL_SCHEDULE` for the others."""
        return tuple(MANUAL_SCHEDULE[name] if getattr(self, name) is None else getattr(self, name)
                     for name in ("eta0", "k0", "gamma"))

    @property
    def recording_interval(self) -> int:
        return self.record_every or max(1, self.steps // 50)


def make_parameters(d, L, R, theta, theta_scaling="direct", sigma=1.0, score_scale=1.0, sign_model="A", *,
                    beta=None) -> Parameters:
    """`Parameters.validated` with the model's parameters by position (raises ParameterError naming a bad
    one). `beta` is the old name of `score_scale`, accepted for one release with a DeprecationWarning; given together
    with a score_scale other than the default and beta, it is refused (which one was meant is unknown)."""
    if beta is not None and score_scale != 1.0 and score_scale != beta:
        raise ParameterError("beta", beta,
                             f"left out when score_scale is given (score_scale = {score_scale!r}; beta is its old name)")
    if beta is not None:
        warnings.warn("signal_recovery: beta is deprecated and will be removed in the next release; use score_scale",
                      DeprecationWarning, stacklevel=3)
        score_scale = beta
    return Parameters.validated(d=d, L=L, R=R, theta=theta, theta_scaling=theta_scaling, sigma=sigma,
                                score_scale=score_scale, sign_model=sign_model)


def as_parameters(params) -> Parameters:
    """`params` itself when it is a validated `Parameters`, else a ParameterError naming it."""
    if not isinstance(params, Parameters):
        raise ParameterError("params", params, "a signal_recovery Parameters object (Parameters.validated(...))")
    return params
