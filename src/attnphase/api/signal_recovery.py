"""Signal recovery by a learned softmax-attention query: the public Python entry points.

* `solve` — J(ρ), J′(ρ), the drift (1 − ρ²)J′ and the noise-token attention mass at one alignment,
  from the large-L closed form (`finite=False`) or from the exact finite-L reduction (`finite=True`,
  an L-dimensional Gaussian expectation with error bars);
* `finite_reduction` — the exact reduction on a grid of ρ with common random numbers;
* `fixed_points`, `ode_trajectory` — fixed points (with stability) and trajectories of the drift;
* `simulate` — projected SGA in d dimensions (`attnphase.validate.sga`), batched over trials;
* `sweep_point` — one point of a parameter sweep (theory and simulation), picklable.

Conventions (as the CLI): scores β⟨q, x_i⟩; x_i = θ_d s_i ξ + z_i on the R informative tokens, z_i ~
N(0, σ² I_d); θ_d = θ (`theta_scaling="direct"`) or θ√d (`"sqrt-d"`); L counts all tokens.

The finite-L reduction needs, per Monte Carlo sample, only L scalar Gaussians g_i (the scores along q)
— not L·d — because the components of the tokens orthogonal to q are independent of the softmax
weights and average out in closed form (see `attnphase.models.signal_recovery`). The same samples are
used at every ρ (common random numbers), so differences across ρ are far more precise than the values.
J′ is the pathwise derivative of the same samples, through the generated partial derivatives of the
integrand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models import signal_recovery as model
from attnphase.params import check_choice, check_int, check_positive, check_real

__all__ = [
    "Parameters",
    "SolveResult",
    "ReductionResult",
    "FixedPointsResult",
    "SimulationResult",
    "make_parameters",
    "solve",
    "large_L",
    "finite_reduction",
    "reduction_samples",
    "interpolated_finite_drift",
    "fixed_points",
    "ode_trajectory",
    "ode_limit_point",
    "ode_time_to_reach",
    "choose_schedule",
    "tangent_noise",
    "retraction_corrected_rho",
    "ScheduleChoice",
    "simulate",
    "sweep_point",
]

_SAMPLE_CHUNK = 256  # sequences per vectorised block of the reduction (fixed: the stream does not depend on it)
# Sizes beyond these are refused where they enter: d and L are used as floats (10**400 overflowed), and a
# block of the finite-L reduction holds ~10 arrays of _SAMPLE_CHUNK × L floats (L = 1e9 asked for 119 GiB).
MAX_SIZE = 10**12
# L counts all tokens. With one token the softmax weight is 1 whatever q, so J is flat and the drift
# vanishes: L ≥ 2. R = L (no nuisance tokens, π = 1) is allowed; the nuisance mass is then 0.
MIN_TOKENS = 2
MAX_FINITE_L = 1 << 16
# simulate: the step-size schedule is one array of `steps` floats, and everything held at once must fit
# (10**12 trials or 10**15 steps were allocation errors); float32 tokens need a representable θ_d.
MAX_STEPS = 10**8
MAX_SIMULATION_NUMBERS = 1 << 28
_MAX_TOKEN_SHIFT = 1e30


@dataclass(frozen=True)
class Parameters:
    """Validated model parameters; `theta_d` is the signal strength after the scaling convention."""

    d: int
    L: int
    R: int
    theta: float
    theta_scaling: str = "direct"
    sigma: float = 1.0
    beta: float = 1.0
    sign_model: str = "A"
    theta_d: float = field(init=False)

    def __post_init__(self):
        # θ_d from the model's scaling convention (θ or θ√d), evaluated once.
        expr = model.THETA_D[self.theta_scaling]
        object.__setattr__(self, "theta_d", float(expr.subs({model.theta: self.theta, model.d: self.d})))

    @property
    def informative_fraction(self) -> float:
        return self.R / self.L

    def as_dict(self) -> dict:
        return {
            "d": self.d, "L": self.L, "R": self.R, "theta": self.theta, "theta_scaling": self.theta_scaling,
            "theta_d": self.theta_d, "sigma": self.sigma, "beta": self.beta, "sign_model": self.sign_model,
        }


def make_parameters(d, L, R, theta, theta_scaling="direct", sigma=1.0, beta=1.0, sign_model="A") -> Parameters:
    """Validate and bundle the model parameters (raises ParameterError naming a bad one)."""
    d = check_int("d", d, 2, MAX_SIZE)
    L = check_int("L", L, MIN_TOKENS, MAX_SIZE)
    R = check_int("R", R, 1, L)
    theta = check_real("theta", theta, 0.0)
    theta_scaling = check_choice("theta_scaling", theta_scaling, model.THETA_SCALINGS)
    sigma = check_positive("sigma", sigma)
    beta = check_positive("beta", beta)
    sign_model = check_choice("sign_model", sign_model, model.SIGN_MODELS)
    params = Parameters(d, L, R, theta, theta_scaling, sigma, beta, sign_model)
    if not math.isfinite(params.theta_d):
        raise ParameterError("theta", theta, f"a finite real number >= 0 with theta_d = theta·√d finite (d = {d})")
    return params


def _check_parameters(params) -> Parameters:
    if not isinstance(params, Parameters):
        raise ParameterError("params", params, "a Parameters object from make_parameters")
    return params


@dataclass(frozen=True)
class SolveResult:
    """J, J′, drift and noise-token attention mass at one ρ; errors are Monte Carlo standard errors
    (finite-L reduction) or None (large-L form, whose O(1/L) truncation is not estimated)."""

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
    n_samples: int
    status: str
    message: str


@dataclass(frozen=True)
class ReductionResult:
    """Exact finite-L reduction on a grid of ρ (common random numbers): means and standard errors."""

    rho: np.ndarray
    J: np.ndarray
    J_error: np.ndarray
    dJ: np.ndarray
    dJ_error: np.ndarray
    nuisance_mass: np.ndarray
    nuisance_mass_error: np.ndarray
    n_samples: int
    seed: int

    @property
    def drift(self) -> np.ndarray:
        return (1 - self.rho**2) * self.dJ

    @property
    def drift_error(self) -> np.ndarray:
        return (1 - self.rho**2) * self.dJ_error


def _check_rho(rho) -> float:
    return check_real("rho", rho, -1.0, 1.0)


def large_L(params: Parameters, rho) -> np.ndarray:
    """Generated large-L kernel at ρ (array): (..., 5) = [J, J′, drift, drift′, nuisance mass]."""
    kernel = model.large_L_kernel(params.sign_model)
    rho = np.asarray(rho, dtype=float)
    return np.asarray(
        kernel(rho, params.beta, params.sigma, params.theta_d, params.informative_fraction, float(params.d),
               float(params.L)),
        dtype=float,
    )


def _reduction_samples(params: Parameters, rho: float, g: np.ndarray, signs: np.ndarray | None, kernel,
                       moment_kernel):
    """Per-sample integrand, pathwise dJ/dρ, noise mass and zero-mean controls, model A (signs None) or C."""
    R, beta, sigma, theta_d = params.R, params.beta, params.sigma, params.theta_d
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
    out = np.asarray(kernel(S1, S2, S3, rho, theta_d, sigma, float(params.d)))
    value = out[:, 0]
    slope = out[:, 1] * dS1 + out[:, 2] * dS2 + out[:, 3] * dS3 + out[:, 4]
    nuisance = a[:, R:].sum(axis=1)
    # Control variates: token averages of e^{βy}, y e^{βy}, e^{2βy} (all tokens, and signed over I)
    # minus their exact means given the token's shift; each has mean zero.
    e1 = np.exp(beta * y)
    raw = np.stack([e1, y * e1, e1 * e1], axis=-1)
    # Shifts take three values only: +θ_dρ, −θ_dρ (informative) and 0 (noise).
    m_plus, m_minus, m_noise = np.asarray(moment_kernel(np.array([theta_d * rho, -theta_d * rho, 0.0]), beta, sigma))
    raw[:, R:] -= m_noise
    if signs is None:
        raw[:, :R] -= m_plus
    else:
        raw[:, :R] -= np.where(signs[:, :, None] > 0, m_plus, m_minus)
    s_weights = np.zeros((n, params.L))
    s_weights[:, :R] = s_inf
    controls = np.concatenate(
        [raw[:, :, :2].mean(axis=1), (raw[:, :, :2] * s_weights[:, :, None]).mean(axis=1)], axis=1
    )
    return value, slope, nuisance, controls


def reduction_samples(params: Parameters, rho: float, *, n_samples: int = 256, seed: int = 0):
    """Raw per-sample (integrand, pathwise J′, noise mass) of the reduction at ρ, no control variates.

    The building block of `finite_reduction`, exposed for identity checks (a finite difference of the
    integrand on the same draws equals the pathwise derivative sample by sample).
    """
    rho = _check_rho(rho)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    n = check_int("samples", n_samples, 1)
    g = rng.standard_normal((n, params.L))
    signs = rng.integers(0, 2, size=(n, params.R)) * 2.0 - 1.0 if params.sign_model == "C" else None
    kernels = model.reduction_kernel(), model.token_moment_kernel()
    value, slope, nuisance, _ = _reduction_samples(params, rho, g, signs, *kernels)
    if params.sign_model == "B":
        v2, s2, n2, _ = _reduction_samples(params, -rho, g, None, *kernels)
        value, slope, nuisance = (value + v2) / 2, (slope - s2) / 2, (nuisance + n2) / 2
    return value, slope, nuisance


def _control_variate_mean(samples: np.ndarray, controls: np.ndarray) -> tuple[float, float]:
    """Mean of `samples` corrected by regression on zero-mean `controls`, and its standard error."""
    n, k = controls.shape
    if not (np.all(np.isfinite(samples)) and np.all(np.isfinite(controls))):
        return math.nan, math.nan  # overflow of e^{βy}: not computed (the caller reports the failure)
    design = np.column_stack([np.ones(n), controls])
    coef, *_ = np.linalg.lstsq(design, samples, rcond=None)
    residual = samples - design @ coef
    return float(coef[0]), float(np.sqrt(residual @ residual / (n - k - 1) / n))


def finite_reduction(params: Parameters, rhos, *, n_samples: int = 4096, seed: int = 0) -> ReductionResult:
    """Exact finite-(d, L, R) J, J′ and noise mass as Gaussian expectations over L scalar scores.

    The same `n_samples` draws of g ∈ R^L (and, for model C, of the token signs) serve every ρ.
    Model B averages model A at ρ and −ρ on the same draws, which makes it exactly even. The sample
    means are corrected with control variates — token averages of e^{βy}, y e^{βy} whose exact means
    are known (regression estimator; its O(1/n) bias is far below the standard error) — which cuts the
    standard error several-fold at large L.
    """
    params = _check_parameters(params)
    if params.L > MAX_FINITE_L:
        raise ParameterError("L", params.L, f"an integer in [{MIN_TOKENS}, {MAX_FINITE_L}] for the finite-L reduction (memory)")
    rhos = np.atleast_1d(np.asarray([_check_rho(r) for r in np.atleast_1d(rhos)], dtype=float))
    n_samples = check_int("samples", n_samples, 16)
    seed = check_int("seed", seed, 0)
    kernel = model.reduction_kernel()
    moment_kernel = model.token_moment_kernel()
    rng = np.random.default_rng(seed)
    per_rho: list[list[list[np.ndarray]]] = [[[], [], [], []] for _ in rhos]
    done = 0
    while done < n_samples:
        n = min(_SAMPLE_CHUNK, n_samples - done)
        g = rng.standard_normal((n, params.L))
        signs = None
        if params.sign_model == "C":
            signs = rng.integers(0, 2, size=(n, params.R)) * 2.0 - 1.0
        for j, r in enumerate(rhos):
            value, slope, nuisance, controls = _reduction_samples(params, r, g, signs, kernel, moment_kernel)
            if params.sign_model == "B":
                v2, s2, n2, c2 = _reduction_samples(params, -r, g, None, kernel, moment_kernel)
                value, slope, nuisance = (value + v2) / 2, (slope - s2) / 2, (nuisance + n2) / 2
                controls = np.concatenate([controls, c2], axis=1)
            for store, samples in zip(per_rho[j], (value, slope, nuisance, controls)):
                store.append(samples)
        done += n
    mean = np.zeros((3, rhos.size))
    err = np.zeros((3, rhos.size))
    for j, stores in enumerate(per_rho):
        controls = np.concatenate(stores[3])
        for i in range(3):
            mean[i, j], err[i, j] = _control_variate_mean(np.concatenate(stores[i]), controls)
    return ReductionResult(rhos, mean[0], err[0], mean[1], err[1], mean[2], err[2], n_samples, seed)


def solve(
    d, L, R, theta, rho, theta_scaling="direct", sigma=1.0, beta=1.0, sign_model="A", finite=False,
    *, samples: int = 4096, seed: int = 0,
) -> SolveResult:
    """J, J′, the drift (1 − ρ²)J′ and the noise-token attention mass at alignment ρ.

    `finite=False`: large-L closed form (exact as L → ∞ at fixed R/L, keeping the σ²(d−1)/L term).
    `finite=True`: exact finite-L reduction by Monte Carlo with `samples` draws (standard errors).
    """
    params = make_parameters(d, L, R, theta, theta_scaling, sigma, beta, sign_model)
    rho = _check_rho(rho)
    if not isinstance(finite, (bool, np.bool_)):
        raise ParameterError("finite", finite, "True or False")
    if not finite:
        J, dJ, drift, _, nuisance = (float(v) for v in large_L(params, rho))
        nuisance += 0.0  # R = L gives (1 − π)·(...) = −0.0; the mass is printed as 0
        values = np.array([J, dJ, drift, nuisance])
        if not np.all(np.isfinite(values)):
            return SolveResult(*(math.nan,) * 4, None, None, None, None, rho, params.theta_d, "large-L", 0,
                               "failed", "non-finite value of the large-L form (overflow of e^{βθ_dρ})")
        return SolveResult(J, dJ, drift, nuisance, None, None, None, None, rho, params.theta_d, "large-L", 0,
                           "ok", "large-L closed form; O(1/L) corrections not included")
    with np.errstate(all="ignore"):  # overflow of e^{βy} shows up as non-finite samples, reported below
        red = finite_reduction(params, [rho], n_samples=samples, seed=seed)
    if not np.isfinite([red.J[0], red.dJ[0], red.nuisance_mass[0]]).all():
        return SolveResult(*(math.nan,) * 4, None, None, None, None, rho, params.theta_d, "finite-L", red.n_samples,
                           "failed", "non-finite Monte Carlo samples of the finite-L reduction (overflow of e^{βy})")
    return SolveResult(
        float(red.J[0]), float(red.dJ[0]), float(red.drift[0]), float(red.nuisance_mass[0]),
        float(red.J_error[0]), float(red.dJ_error[0]), float(red.drift_error[0]),
        float(red.nuisance_mass_error[0]), rho, params.theta_d, "finite-L", red.n_samples, "ok",
        f"exact finite-L reduction, {red.n_samples} Monte Carlo samples (seed {seed}); errors are standard errors",
    )


@dataclass(frozen=True)
class FixedPointsResult:
    """Fixed points ρ* of the drift in [−1, 1], the drift's slope there and the stability verdicts."""

    rho: list[float]
    slope: list[float]
    stable: list[bool]
    status: str
    message: str


def fixed_points(params: Parameters, *, n_grid: int = 2001) -> FixedPointsResult:
    """Zeros of the large-L drift on [−1, 1] (ρ = ±1 included) with stability from the drift's slope."""
    from attnphase.numeric.ode import fixed_points_1d

    params = _check_parameters(params)
    if params.theta_d == 0.0:
        return FixedPointsResult([], [], [], "degenerate",
                                 "theta_d = 0: the drift vanishes identically, every rho is a fixed point")

    def drift(r):
        return large_L(params, r)[..., 2]

    def slope(r):
        return float(large_L(params, r)[..., 3])

    with np.errstate(all="ignore"):
        finite_drift = np.all(np.isfinite(large_L(params, np.linspace(-1.0, 1.0, 101))[..., 2:4]))
    if not finite_drift:
        return FixedPointsResult([], [], [], "failed",
                                 "non-finite large-L drift on [-1, 1] (overflow of e^{βθ_dρ}): fixed points not computed")
    points = fixed_points_1d(drift, -1.0, 1.0, derivative=slope, n_grid=n_grid)
    found = sorted(points, key=lambda p: p.x)
    return FixedPointsResult(
        rho=[float(p.x) for p in found], slope=[float(p.slope) for p in found],
        stable=[bool(p.stable) for p in found], status="ok", message=f"{len(found)} fixed points",
    )


def ode_limit_point(params: Parameters, points: FixedPointsResult, rho0: float) -> float:
    """The fixed point the ODE reaches from ρ₀ (t → ∞): the next fixed point in the drift's direction."""
    rho0 = _check_rho(rho0)
    direction = float(large_L(params, rho0)[..., 2])
    rhos = np.asarray(points.rho)
    if direction > 0:
        return float(rhos[rhos > rho0].min())
    if direction < 0:
        return float(rhos[rhos < rho0].max())
    return rho0


def ode_trajectory(params: Parameters, rho0: float, times, *, drift=None):
    """ρ(t) of dρ/dt = drift(ρ) from ρ₀ at `times` (default drift: the large-L one). Returns (t, ρ(t))."""
    from attnphase.numeric.ode import integrate_drift

    rho0 = _check_rho(rho0)
    times = np.asarray(times, dtype=float)
    field_ = drift or (lambda r: large_L(params, np.clip(r, -1.0, 1.0))[..., 2])
    traj = integrate_drift(field_, rho0, (0.0, float(times[-1])), t_eval=times)
    return np.asarray(traj.t), np.asarray(traj.x).reshape(len(traj.t))


def interpolated_finite_drift(params: Parameters, *, n_grid: int = 41, n_samples: int = 2048, seed: int = 0):
    """The finite-L drift (1 − ρ²)J′ as a cubic spline through the reduction on a ρ grid (common samples)."""
    from scipy.interpolate import CubicSpline

    grid = np.linspace(-1.0, 1.0, n_grid)
    red = finite_reduction(params, grid, n_samples=n_samples, seed=seed)
    spline = CubicSpline(grid, red.dJ)
    return lambda r: (1 - np.clip(r, -1, 1) ** 2) * spline(np.clip(r, -1, 1)), red


@dataclass(frozen=True)
class ScheduleChoice:
    """A step schedule η_k = η₀/(k + k₀) chosen from theory (see `choose_schedule`)."""

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


def ode_time_to_reach(params: Parameters, rho0: float, level: float = 0.99, t_max: float = 1e6) -> float:
    """First t with |ρ(t)| ≥ level on the large-L ODE from ρ₀ (inf if not reached by t_max)."""
    from attnphase.numeric.ode import integrate_drift

    drift = lambda r: large_L(params, np.clip(r, -1.0, 1.0))[..., 2]  # noqa: E731
    times = np.concatenate([[0.0], np.geomspace(1e-4, t_max, 400)])
    traj = integrate_drift(drift, _check_rho(rho0), (0.0, t_max), t_eval=times, rtol=1e-8, atol=1e-12)
    reached = np.nonzero(np.abs(traj.x) >= level)[0]
    return float(traj.t[reached[0]]) if reached.size else math.inf


def tangent_noise(params: Parameters, rhos, *, pilot: int = 128, seed: int = 0) -> np.ndarray:
    """E‖(I − qqᵀ)∇‖f‖²‖² per sequence at each alignment in `rhos` (mean over `pilot` sequences of the
    exact projected sampler, whose law is that of dense tokens)."""
    from attnphase.validate.seeds import generator
    from attnphase.validate.sga import PlantedTokens, initial_queries, projected_pooling_gradient

    tokens = PlantedTokens(params.d, params.L, params.R, params.theta_d, params.sigma, params.sign_model)
    gen = generator(seed, "cpu")
    noise = []
    for rho in np.atleast_1d(rhos):
        q = initial_queries(pilot, params.d, gen, "cpu", rho0=float(rho))
        _, grad, _ = projected_pooling_gradient(q, tokens, params.beta, gen)
        grad_tangent = grad - (grad * q).sum(dim=1, keepdim=True) * q
        noise.append(float((grad_tangent**2).sum(dim=1).mean()))
    return np.asarray(noise)


def retraction_corrected_rho(params: Parameters, noise_grid, noise_values, rho0: float, eta0, k0, steps) -> np.ndarray:
    """ρ after `steps` steps of η_k = η₀/(k + k₀) from ρ₀, by the mean-field ODE

        dρ/dt = (1 − ρ²)J′(ρ) − ½ η(t) ρ N(ρ),   η(t) = (η₀/k₀) e^{−t/η₀},  t ∈ [0, η₀ ln(1 + K/k₀)],

    for every (η₀, k₀, K) of the broadcast arrays. The second term is the mean loss of the retraction
    q ← (q + ηG_⊥)/‖q + ηG_⊥‖: ρ' = (ρ + η⟨G_⊥, ξ⟩)(1 + η²‖G_⊥‖²)^{−1/2}, whose mean is
    ρ + η(1 − ρ²)J′ − ½η²ρN + O(η³) with N(ρ) = E‖G_⊥‖² (interpolated from `noise_values` on
    `noise_grid`). η(t) is the continuous form of the schedule (t ≈ Σ η_k, η(t_K) = η₀/(K + k₀)). Each
    case is integrated over its own horizon, rescaled to s = t/t_K ∈ [0, 1].
    """
    from attnphase.numeric.ode import integrate_drift

    eta0, k0, steps = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(eta0, k0, steps))
    shape = eta0.shape
    eta0, k0, steps = eta0.ravel(), k0.ravel(), steps.ravel()
    horizon = eta0 * np.log1p(steps / k0)

    def field(state):
        rho, s = np.clip(state[:-1], -1.0, 1.0), state[-1]
        eta = eta0 / k0 * np.exp(-s * horizon / eta0)
        drift = large_L(params, rho)[..., 2] - 0.5 * eta * rho * np.interp(rho, noise_grid, noise_values)
        return np.append(horizon * drift, 1.0)

    start = np.append(np.full(eta0.size, float(rho0)), 0.0)
    traj = integrate_drift(field, start, (0.0, 1.0), t_eval=[1.0], method="LSODA", rtol=1e-6, atol=1e-8)
    return np.clip(np.asarray(traj.x)[-1, :-1], -1.0, 1.0).reshape(shape)


def choose_schedule(params: Parameters, *, deficit: float = 0.002, max_steps: int = 5000, max_first_step_noise=0.1,
                    pilot: int = 128, seed: int = 0) -> ScheduleChoice:
    """Robbins–Monro schedule η_k = η₀/(k + k₀) (γ = 1) from theory, not from trial runs.

    * Last step (noise floor): near ρ = 1 the retraction loses ½η²N per step and the drift restores
      2(1 − ρ)J′(1)η, so the stationary deficit is 1 − ρ ≈ ηN(1)/(4J′(1)); η_K is set so that this
      equals `deficit` (N = E‖G_⊥‖² from `pilot` sequences of the projected sampler at each of 5 alignments).
    * Early steps: the same retraction loss −½ηρN slows the whole approach, not just the end: when
      ½ηρN is comparable with the drift (1 − ρ²)J′, SGA stalls far from the ODE (at θ_d = 0.25, d = 1000,
      L = 10 500 a first step of 0.29 held |ρ| near ½ while the ODE was at 0.97). So the remaining two
      parameters — K steps and the offset k₀ (which sets the first step η₀/k₀ for a given last step) —
      are chosen with the retraction-corrected ODE (`retraction_corrected_rho`): the smallest K ≤
      `max_steps` for which some k₀ brings it to the target |ρ| = 1 − 2·deficit from ρ₀ = ±1/√d (the
      typical random start, on the side the plain ODE leaves more slowly), with
      the k₀ that gets there (or, when the budget is short, gets furthest); the first step is kept
      where that expansion holds, η₁²N ≤ `max_first_step_noise`.
    `t_target` is the time the plain ODE needs for the target (a lower bound on t_final).
    """
    deficit = check_real("deficit", deficit, 0.0, 0.25, low_open=True)
    max_steps = check_int("max_steps", max_steps, 1, MAX_STEPS)
    max_first_step_noise = check_positive("max_first_step_noise", max_first_step_noise)
    noise_grid = np.linspace(-1.0, 1.0, 5)
    noise_values = tangent_noise(params, noise_grid, pilot=check_int("pilot", pilot, 2), seed=seed)
    noise = float(noise_values[-1])
    slope_at_xi = float(large_L(params, 1.0)[1])
    eta_final = 4 * abs(slope_at_xi) * deficit / noise
    target = 1.0 - 2.0 * deficit
    # Random starts have ρ₀ ≈ ±1/√d; plan for the slower side (model A's −1/√d when J′(0) > 0).
    starts = (1 / math.sqrt(params.d), -1 / math.sqrt(params.d))
    start_times = [ode_time_to_reach(params, r, level=target) for r in starts]
    rho0 = starts[int(np.argmax(start_times))]
    # Offsets from a constant step (k₀ ≫ K) to a first step at the expansion limit η₁²N_max = bound.
    first_step_limit = math.sqrt(max_first_step_noise / float(noise_values.max()))

    def best_offset(K: int) -> tuple[float, float]:
        k0_min = max(1e-3, eta_final * K / max(first_step_limit - eta_final, 1e-300))
        k0s = np.geomspace(k0_min, max(100.0 * K, 10 * k0_min), 12)
        finals = np.abs(retraction_corrected_rho(params, noise_grid, noise_values, rho0, eta_final * (K + k0s), k0s, K))
        j = int(np.argmax(finals))
        return float(k0s[j]), float(finals[j])

    k0, predicted = best_offset(max_steps)
    steps = max_steps
    if predicted >= target:  # bisect on the step count: the fewest steps that still reach the target
        lo, hi = 0, max_steps
        while hi - lo > max(1, hi // 10):  # 10% in the step count
            mid = (lo + hi) // 2
            k0_mid, final_mid = best_offset(mid) if mid > 0 else (k0, 0.0)
            if final_mid >= target:
                hi, k0, predicted = mid, k0_mid, final_mid
            else:
                lo = mid
        steps = hi
    eta0 = eta_final * (steps + k0)
    t_final = eta0 * float(np.sum(1.0 / (np.arange(steps) + k0)))
    t_target = max(start_times)
    return ScheduleChoice(eta0, k0, 1.0, steps, t_final, t_target, eta_final, eta0 / k0, noise, target, rho0,
                          predicted, budget_limited=predicted < target)


@dataclass(frozen=True)
class SimulationResult:
    """Final alignments |ρ| of the trials and the recorded SGA trajectories."""

    alignment: np.ndarray
    alignment_mean: float
    alignment_std: float
    final_rho: np.ndarray
    nuisance_mass_mean: float
    theta_d: float
    trajectory: object = field(repr=False)  # attnphase.validate.sga.SGAResult
    status: str = "completed"
    message: str = ""


def simulate(
    d, L, R, theta, trials, steps, theta_scaling="direct", sigma=1.0, beta=1.0, sign_model="A",
    eta0=0.05, k0=10.0, gamma=0.6, batch=1, seed=0, device="auto", *, rho0=None, record_every=None,
    memory_budget_bytes: int = 1 << 30, sampler: str = "dense", progress: bool = False, normal_source: str = "auto",
    rng: str = "device",
) -> SimulationResult:
    """Projected SGA of `trials` independent queries from uniform random starts (or from alignment ρ₀).

    Steps η_k = η₀/(k + k₀)^γ; `batch` sequences per gradient. The final noise-token mass is averaged
    over the last recording window (the last `record_every` steps) and over trials. `sampler`:
    "dense" (L×d tokens per sequence) or "projected" (same gradient law from 2L + 2d numbers).
    `normal_source` is the dense sampler's Gaussian source (`attnphase.validate.sga.normal_fill`);
    rng: "device" or "cpu", where the random numbers are drawn (`attnphase.validate.seeds`; "cpu" with
    normal_source "torch" gives the same numbers on every device).
    """
    from attnphase.validate.device import select_device
    from attnphase.validate.seeds import generator
    from attnphase.validate.sga import PlantedTokens, StepSchedule, projected_sga

    params = make_parameters(d, L, R, theta, theta_scaling, sigma, beta, sign_model)
    if params.theta_d > _MAX_TOKEN_SHIFT:
        raise ParameterError("theta", theta, f"theta_d = {params.theta_d:g} at most {_MAX_TOKEN_SHIFT:g} "
                                             "(tokens are float32 in the simulation)")
    trials = check_int("trials", trials, 1)
    steps = check_int("steps", steps, 1, MAX_STEPS)
    batch = check_int("batch", batch, 1)
    schedule = StepSchedule(check_positive("eta0", eta0), check_real("k0", k0, 0.0), check_real("gamma", gamma, 0.0, 1.0))
    record_every = check_int("record_every", record_every or max(1, steps // 50), 1)
    # Memory that no slicing can avoid: queries and per-sequence gradients (float64, trials·(1 + batch)·d),
    # one dense token sequence (L·d) and the recorded trajectories (3 numbers per trial per record).
    if trials * (1 + batch) * params.d > MAX_SIMULATION_NUMBERS:
        raise ParameterError("trials", trials, f"trials·(1 + batch)·d at most {MAX_SIMULATION_NUMBERS} "
                                               f"(d = {params.d}, batch = {batch}; memory)")
    if sampler == "dense" and params.L * params.d > MAX_SIMULATION_NUMBERS:
        raise ParameterError("L", params.L, f"L·d at most {MAX_SIMULATION_NUMBERS} for the dense sampler (d = {params.d}; "
                                            "memory); the projected sampler needs O(L + d) per sequence")
    if 3 * (steps // record_every + 2) * trials > MAX_SIMULATION_NUMBERS:
        raise ParameterError("record_every", record_every, f"at least 3·(steps/record_every)·trials ≤ "
                                                           f"{MAX_SIMULATION_NUMBERS} recorded numbers (memory)")
    torch_device = select_device(device)
    tokens = PlantedTokens(params.d, params.L, params.R, params.theta_d, params.sigma, params.sign_model)
    run = projected_sga(
        tokens, beta=params.beta, schedule=schedule, steps=steps, trials=trials, batch=batch,
        generator=generator(seed, torch_device, rng), device=torch_device, rho0=rho0, record_every=record_every,
        memory_budget_bytes=memory_budget_bytes, sampler=sampler, progress=progress, normal_source=normal_source,
    )
    alignment = np.abs(run.final_rho)
    return SimulationResult(
        alignment=alignment,
        alignment_mean=float(alignment.mean()),
        alignment_std=float(alignment.std(ddof=1)) if trials > 1 else 0.0,
        final_rho=run.final_rho,
        nuisance_mass_mean=float(np.mean(run.nuisance[-1])),
        theta_d=params.theta_d,
        trajectory=run,
        status=run.status,
        message=run.message,
    )


def sweep_point(
    d, L, R, theta, theta_scaling="direct", sigma=1.0, beta=1.0, sign_model="A", trials=8, max_steps=2000,
    seed=0, device="cpu", deficit=0.01,
) -> dict[str, float]:
    """One sweep point: SGA from random starts under the theory-chosen schedule (`choose_schedule`)
    against the large-L ODE started from each trial's own ρ₀ and run to the same t = Σ η_k."""
    params = make_parameters(d, L, R, theta, theta_scaling, sigma, beta, sign_model)
    plan = choose_schedule(params, deficit=deficit, max_steps=check_int("max_steps", max_steps, 1), seed=seed)
    sim = simulate(d, L, R, theta, trials, plan.steps, theta_scaling, sigma, beta, sign_model, plan.eta0, plan.k0,
                   plan.gamma, 1, seed, device, sampler="projected", record_every=max(1, plan.steps // 20))
    run = sim.trajectory
    t_final = float(run.times[-1])
    ode_final = np.array([ode_trajectory(params, r0, [0.0, t_final])[1][-1] for r0 in run.rho[0]])
    fps = fixed_points(params)
    ode_limit = np.array([ode_limit_point(params, fps, r0) for r0 in run.rho[0]])
    return {
        "theta_d": params.theta_d,
        "eta0": plan.eta0,
        "steps": float(plan.steps),
        "t_final": t_final,
        "t_target": plan.t_target,
        "budget_limited": float(plan.budget_limited),
        "retraction_corrected_alignment": plan.predicted_final,  # from ρ₀ = ±1/√d (see choose_schedule)
        "alignment_mean": sim.alignment_mean,
        "alignment_std": sim.alignment_std,
        "positive_fraction": float(np.mean(sim.final_rho > 0)),
        "nuisance_mass_mean": sim.nuisance_mass_mean,
        "ode_alignment_mean": float(np.mean(np.abs(ode_final))),
        "ode_positive_fraction": float(np.mean(ode_final > 0)),
        "ode_nuisance_mass_mean": float(np.mean(large_L(params, ode_final)[..., 4])),
        "ode_limit_alignment_mean": float(np.mean(np.abs(ode_limit))),
        "ode_limit_positive_fraction": float(np.mean(ode_limit > 0)),
        "ode_limit_nuisance_mass_mean": float(np.mean(large_L(params, ode_limit)[..., 4])),
        "nuisance_mass_at_xi": float(large_L(params, 1.0)[..., 4]),
        "minus_xi_stable": float(any(s for r, s in zip(fps.rho, fps.stable) if r == -1.0)),
        "interior_fixed_points": float(sum(1 for r in fps.rho if abs(r) < 1)),
    }
