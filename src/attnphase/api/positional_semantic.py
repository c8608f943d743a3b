"""Public entry points for the positional-vs-semantic attention model (mirrors `attnphase ... positional-semantic`).

* `solve(omega, alpha, ...)`: every branch (positional θ = 0, semantic m = 0, trivial m = θ = 0, mixed)
  of the state-evolution fixed point, with its stability, free energy Φ, training loss ε_t = −Φ and test
  error ε_g, the global minimum (largest Φ) and the linear baseline.
* `threshold(omega, ...)`: α_c (free energies of the positional and semantic branches cross) and α_l
  (semantic ε_g crosses the linear baseline), each with an error estimate from a quadrature study.
* `linear_baseline_error(omega, sigma, L)`: ε_g^lin (spec §5).
* `simulate(...)`: finite-d full-batch GD (attnphase.validate.gd).

The state of the fixed-point iteration is x = (q, V, θ, m_1..m_L). One evaluation of the map:
the Gaussian fields ω_ℓ = m_ℓ + √q ξ_ℓ, h*_ℓ = (θ/√q) ξ_ℓ + V* η_ℓ on a fixed tensor Gauss-Hermite rule
in the 2L standard normals (ξ, η); the proximal map (global minimiser of the Moreau objective, by a
vectorised multi-start Newton solve over all nodes); the conjugates as weighted sums; the ridge part.
All expressions come from `attnphase.models.positional_semantic` through generated kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from attnphase.derive.codegen import compile_kernel
from attnphase.errors import ParameterError
from attnphase.models import positional_semantic as model
from attnphase.numeric.fixedpoint import Identity, Interval, Positive, map_jacobian, solve_fixed_point
from attnphase.numeric.gauss import GaussHermiteRule, gaussian_expectation
from attnphase.numeric.minimize import MultiStartMinimum, minimize_multistart_newton
from attnphase.params import check_choice, check_int, check_positive, check_real, check_real_list

DEFAULT_A = (0.6, 0.4, 0.4, 0.6)
# σ and λ ranges where the solver's starting point and the baseline stay representable: below σ = 1e-3
# (or above λ = 1e6) the ridge guess V = σ²/(λ + σ²) underflows towards 0, outside its domain; above
# σ = 100 the prefactor ½(1−ω)²σ² of the baseline and the teacher scores σ²ξ² leave the range where the
# quadrature means anything (σ = 1e300 overflowed).
SIGMA_RANGE = (1e-3, 100.0)
LAM_MAX = 1e6
BRANCHES = ("positional", "semantic", "trivial", "mixed")
HAT_ORDER = ("mhat", "qhat", "thetahat", "Vhat")


# ==================================================================================================
# Parameters and kernels
# ==================================================================================================
@dataclass(frozen=True)
class ModelParameters:
    """Validated model parameters. A: row-stochastic L×L (row-major); gram: G_p (row-major)."""

    omega: float
    sigma: float
    lam: float
    A: tuple[float, ...]
    L: int
    gram: tuple[float, ...]

    @property
    def rho(self) -> float:
        """Teacher self-overlap Q*ᵀΣQ*/d for ‖Q*‖² = d."""
        return self.sigma**2

    @property
    def swap_symmetric(self) -> bool:
        """Whether m = 0 is an invariant set: A and G_p invariant under reversing the token order."""
        L = self.L
        A = np.array(self.A).reshape(L, L)
        G = np.array(self.gram).reshape(L, L)
        P = np.eye(L)[::-1]
        return bool(np.allclose(P @ A @ P, A, atol=0) and np.allclose(P @ G @ P, G, atol=0) and np.allclose(G.sum(1), 0))


def default_gram(L: int) -> tuple[float, ...]:
    """Gram matrix of the spec's encodings generalised to L tokens: unit vectors ±1/√d alternating."""
    signs = np.array([(-1.0) ** i for i in range(L)])
    return tuple(np.outer(signs, signs).ravel())


def model_parameters(omega, sigma=0.5, lam=0.01, A=None, L=2, gram=None) -> ModelParameters:
    """Validate and bundle the model parameters (raises ParameterError naming the bad one)."""
    L = check_int("L", L, 2, 6)
    omega = check_real("omega", omega, 0.0, 1.0)
    sigma = check_real("sigma", sigma, *SIGMA_RANGE)
    lam = check_real("lam", lam, 0.0, LAM_MAX, low_open=True)
    if A is None:
        if L != 2:
            raise ParameterError("A", A, f"required for L = {L}: a row-stochastic {L}x{L} matrix, row-major")
        A = DEFAULT_A
    A = check_real_list("A", A, L * L, 0.0, 1.0)
    rows = np.array(A).reshape(L, L).sum(axis=1)
    if not np.allclose(rows, 1.0, atol=1e-12):
        raise ParameterError("A", A, "a row-stochastic matrix (entries in [0, 1], each row summing to 1)")
    gram = default_gram(L) if gram is None else tuple(check_real_list("gram", gram, L * L))
    G = np.array(gram).reshape(L, L)
    if not np.allclose(G, G.T) or np.linalg.eigvalsh(G).min() < -1e-12:
        raise ParameterError("gram", gram, "a symmetric positive semi-definite Gram matrix")
    return ModelParameters(omega, sigma, lam, tuple(A), L, tuple(float(v) for v in gram))


@dataclass
class _Kernels:
    objective: object
    gradient_hessian: object
    loss: object
    attention: object
    ridge: object
    phi_rest: object
    hat_integrands: object
    hat_correction: object


@lru_cache(maxsize=None)
def kernels(L: int) -> _Kernels:
    """Compiled kernels of the model's expressions for L tokens (cached)."""
    args = model.prox_arguments(L)
    grad_hess = list(model.moreau_gradient(L)) + list(model.moreau_hessian(L))
    ridge = model.ridge_equations(L)
    hats = model.hat_integrands(L)
    return _Kernels(
        objective=compile_kernel(model.moreau_objective(L), args),
        gradient_hessian=compile_kernel(grad_hess, args),
        loss=compile_kernel(model.per_sample_loss(L), model.loss_arguments(L)),
        attention=compile_kernel(model.linear_baseline_integrand(L), model.teacher_attention_arguments(L)),
        ridge=compile_kernel([ridge["q"], ridge["V"], ridge["theta"], *ridge["m"]], model.ridge_arguments(L)),
        phi_rest=compile_kernel(model.free_energy_without_envelope(L), model.free_energy_arguments(L)),
        hat_integrands=compile_kernel([e for key in HAT_ORDER for e in hats[key]], model.hat_arguments(L)),
        hat_correction=compile_kernel(model.Vhat_correction(L), [model.q, model.theta, *model.token_symbols(L)["thetahat"]]),
    )


# ==================================================================================================
# Proximal map
# ==================================================================================================
def proximal_map(w, hs, V, params: ModelParameters, extra_starts=()) -> MultiStartMinimum:
    """Global minimiser of Σ(h−ω)²/(2V) + ℓ(h, h*) at every row of w, hs (shape (N, L)).

    Starts: 0, ω, the token-reversed ω, the teacher-side points ±h* (the student reproducing the
    teacher's softmax part), plus `extra_starts` (each (N, L)).
    """
    L = params.L
    K = kernels(L)
    w = np.asarray(w, float)
    hs = np.asarray(hs, float)
    fixed = (V, params.sigma, params.omega, *params.A)

    def columns(x, rows):
        return [*(x[:, i] for i in range(L)), *(w[rows, i] for i in range(L)), *(hs[rows, i] for i in range(L)), *fixed]

    def objective(x, rows):
        return K.objective(*columns(x, rows))

    def gradient_hessian(x, rows):
        out = K.gradient_hessian(*columns(x, rows))
        return out[:, :L], out[:, L:].reshape(-1, L, L)

    starts = np.stack([np.zeros_like(w), w, w[:, ::-1], hs, -hs, *extra_starts])
    return minimize_multistart_newton(objective, gradient_hessian, starts)


# ==================================================================================================
# State evolution
# ==================================================================================================
# Nodes of the tensor rule whose weight is below this are dropped: their total weight is < 1e-9 for
# the rules used here and every integrand is bounded by O(1), far below the 1e-7 target on Φ.
_NODE_WEIGHT_FLOOR = 1e-13


@lru_cache(maxsize=16)
def quadrature_rule(dim: int, nodes_per_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Pruned tensor Gauss-Hermite rule for N(0, I_dim): (nodes (N, dim), weights (N,))."""
    rule = GaussHermiteRule(dim, nodes_per_dim)
    keep = rule.weights > _NODE_WEIGHT_FLOOR
    return rule.standard_nodes[keep], rule.weights[keep]


def state_vector(q, V, theta, m) -> np.ndarray:
    """x = (q, V, θ, m_1..m_L)."""
    return np.array([q, V, theta, *np.atleast_1d(m)], dtype=float)


@dataclass
class SaddlePointEquations:
    """The state-evolution map x -> F(x) at fixed (α, parameters) on a fixed quadrature rule.

    `evaluate(x)` returns the conjugates, the Moreau envelope average and F(x). The proximal map is
    recomputed from the same fixed starts at every evaluation, so F is a deterministic function of x.
    """

    params: ModelParameters
    alpha: float
    nodes_per_dim: int = 10

    def __post_init__(self):
        self.nodes, self.weights = quadrature_rule(2 * self.params.L, self.nodes_per_dim)
        L = self.params.L
        self.xi, self.eta = self.nodes[:, :L], self.nodes[:, L:]

    def fields(self, x):
        """ω (N, L), h* (N, L) and V* at state x."""
        L = self.params.L
        q, theta, m = x[0], x[2], x[3:3 + L]
        vstar2 = self.params.rho - theta**2 / q
        if not (q > 0 and vstar2 > 0):
            raise ParameterError("state", x, "q > 0 and θ² < ρ q")
        vstar = math.sqrt(vstar2)
        w = m + math.sqrt(q) * self.xi
        hs = (theta / math.sqrt(q)) * self.xi + vstar * self.eta
        return w, hs, vstar

    def evaluate(self, x) -> dict:
        """Conjugates, E[M] and the next state F(x)."""
        x = np.asarray(x, float)
        p, L, a = self.params, self.params.L, self.alpha
        q, V, theta = x[0], x[1], x[2]
        w, hs, _ = self.fields(x)
        prox = proximal_map(w, hs, V, p)
        g = (prox.x - w) / V
        K = kernels(L)
        integrands = K.hat_integrands(*(g[:, i] for i in range(L)), *(self.xi[:, i] for i in range(L)),
                                      *(self.eta[:, i] for i in range(L)), q, theta, p.rho)
        averages = a * (self.weights @ integrands)
        mhat, qhat, thetahat, Vhat = (averages[k * L:(k + 1) * L] for k in range(4))
        Vhat = Vhat + np.asarray(K.hat_correction(q, theta, *thetahat), float)
        envelope = float(self.weights @ prox.value)
        G = np.array(p.gram).reshape(L, L)
        ridge_args = (*mhat, *qhat, *thetahat, *Vhat, *G[np.triu_indices(L)], p.sigma, p.lam, p.rho)
        new = np.asarray(kernels(L).ridge(*ridge_args), float)
        return {"mhat": mhat, "qhat": qhat, "thetahat": thetahat, "Vhat": Vhat, "envelope": envelope,
                "next": new, "ridge_args": ridge_args, "prox_converged": float(prox.converged.mean())}

    def __call__(self, x):
        return self.evaluate(x)["next"]

    def free_energy(self, x, evaluation=None) -> float:
        """Φ at state x (meaningful at a fixed point, where it is stationary)."""
        ev = evaluation or self.evaluate(x)
        L = self.params.L
        rest = kernels(L).phi_rest(x[0], x[1], x[2], *x[3:3 + L], *ev["ridge_args"])
        return float(rest) - self.alpha * ev["envelope"]

    def test_error(self, x) -> float:
        """ε_g = E ℓ(m + √q ξ, h*) (no prox)."""
        p, L = self.params, self.params.L
        _, hs, _ = self.fields(x)
        h = x[3:3 + L] + math.sqrt(x[0]) * self.xi
        loss = kernels(L).loss(*(h[:, i] for i in range(L)), *(hs[:, i] for i in range(L)), p.sigma, p.omega, *p.A)
        return float(self.weights @ loss)


# ==================================================================================================
# Branches
# ==================================================================================================
class BranchCoordinates:
    """Reduced coordinates of a branch inside its invariant set, and the map restricted to it.

    positional: (q, V, m_1..m_L) with θ = 0;  semantic: (q, V, c) with m = 0 and θ = c √(ρ q);
    trivial: (q, V) with m = θ = 0;  mixed: (q, V, c, m_1..m_L). The normalised overlap c = θ/√(ρq)
    lives in (−1, 1) (V* > 0), iterated through an atanh-type transform; q, V through log.
    """

    def __init__(self, branch: str, params: ModelParameters):
        self.branch = check_choice("branch", branch, BRANCHES)
        self.params = params
        L = params.L
        self.has_c = branch in ("semantic", "mixed")
        self.has_m = branch in ("positional", "mixed")
        self.transforms = [Positive(), Positive()] + ([Interval(-1.0, 1.0)] if self.has_c else []) + (
            [Identity()] * L if self.has_m else [])

    def to_state(self, y) -> np.ndarray:
        y = np.asarray(y, float)
        L, rho = self.params.L, self.params.rho
        q, V = y[0], y[1]
        c = y[2] if self.has_c else 0.0
        m = y[2 + self.has_c:2 + self.has_c + L] if self.has_m else np.zeros(L)
        return state_vector(q, V, c * math.sqrt(rho * q), m)

    def from_state(self, x) -> np.ndarray:
        L, rho = self.params.L, self.params.rho
        q, V, theta, m = x[0], x[1], x[2], x[3:3 + L]
        out = [q, V] + ([theta / math.sqrt(rho * q)] if self.has_c else []) + (list(m) if self.has_m else [])
        return np.array(out, float)

    def restricted_map(self, equations: SaddlePointEquations):
        def F(y):
            x = self.to_state(y)
            try:
                return self.from_state(equations(x))
            except ParameterError:  # the map left q > 0, |c| < 1: report it as a divergence
                return np.full(len(y), np.nan)
        return F


@dataclass(frozen=True)
class BranchSolution:
    """One branch at one (α, parameters): order parameters, energies, stability and solver record."""

    branch: str
    alpha: float
    q: float
    m: float
    theta: float
    V: float
    free_energy: float
    train_loss: float
    test_error: float
    stable: bool
    spectral_radius: float
    status: str
    message: str
    evaluations: int
    residual: float
    nodes_per_dim: int
    state: np.ndarray = field(repr=False)

    def as_dict(self) -> dict:
        return {"branch": self.branch, "q": self.q, "m": self.m, "theta": self.theta, "V": self.V,
                "test_error": self.test_error, "train_loss": self.train_loss, "free_energy": self.free_energy,
                "stable": self.stable, "spectral_radius": self.spectral_radius, "status": self.status}


def initial_guess(branch: str, params: ModelParameters) -> np.ndarray:
    """A starting state inside the branch's invariant set (reduced coordinates)."""
    L = params.L
    m = 0.3 * np.array(params.gram).reshape(L, L)[0]  # along the first encoding's Gram row
    V = params.sigma**2 / (params.lam + params.sigma**2)
    guesses = {
        "positional": [0.05, V, *m],
        "semantic": [0.2, V, 0.8],
        "trivial": [0.01, V],
        "mixed": [0.1, V, 0.5, *m],
    }
    return np.array(guesses[branch], float)


def solve_branch(branch: str, alpha: float, params: ModelParameters, *, nodes_per_dim: int = 12,
                 guess=None, tol: float = 1e-10, accept: float = 1e-8, stability: bool = True) -> BranchSolution:
    """Fixed point of the state-evolution map inside the branch's invariant set, with its stability.

    The solver (numeric.fixedpoint: Anderson, then MINPACK hybr, in unconstrained coordinates) runs on
    the restricted map to `tol`; a residual up to `accept` is accepted (the map is piecewise smooth on a
    fixed rule, so its noise floor can exceed `tol`), anything larger is reported as not converged; the stability is the spectral radius of the Jacobian of the FULL
    map (all of q, V, θ, m), so an instability transverse to the invariant set (e.g. a semantic
    fixed point unstable towards m ≠ 0) is seen. `stable` means attracting for a suitably damped
    iteration (all eigenvalues of dF with real part < 1); `spectral_radius` is reported as well.
    """
    alpha = check_positive("alpha", alpha)
    coords = BranchCoordinates(branch, params)
    equations = SaddlePointEquations(params, alpha, nodes_per_dim)
    F = coords.restricted_map(equations)
    y0 = initial_guess(branch, params) if guess is None else np.asarray(guess, float)
    # Anderson first (robust to the small jumps of the map where a node's global minimiser switches
    # basin); MINPACK hybr from the best point when Anderson stalls. The better residual wins.
    result = solve_fixed_point(F, y0, transforms=coords.transforms, method="anderson", damping=0.5,
                               tol=tol, max_iter=80, spectrum=False)
    if not result.success and result.status != "diverged" and np.all(np.isfinite(result.value)):
        refined = solve_fixed_point(F, result.value, transforms=coords.transforms, method="hybr", tol=tol,
                                    max_iter=20 * (len(y0) + 1), spectrum=False)
        if refined.residual < result.residual:
            result = refined
    evaluations = result.evaluations
    converged = bool(np.isfinite(result.residual) and result.residual <= accept)
    status = "converged" if converged else result.status
    message = result.message if result.success or not converged else (
        f"{result.message}; accepted: residual {result.residual:.2g} <= {accept:g}")
    x = coords.to_state(result.value)
    L = params.L
    m_rep = float(x[3]) if L == 2 else float(np.linalg.norm(x[3:3 + L]) / math.sqrt(L))
    common = dict(branch=branch, alpha=alpha, q=float(x[0]), m=m_rep, theta=float(x[2]), V=float(x[1]),
                  status=status, message=message, residual=float(result.residual),
                  nodes_per_dim=nodes_per_dim, state=x)
    if not converged:
        return BranchSolution(free_energy=math.nan, train_loss=math.nan, test_error=math.nan, stable=False,
                              spectral_radius=math.nan, evaluations=evaluations, **common)
    radius, stable = math.nan, False
    if stability:
        full = BranchCoordinates("mixed", params)
        J, n_eval = map_jacobian(full.restricted_map(equations), full.from_state(x), transforms=full.transforms)
        eigenvalues = np.linalg.eigvals(J)
        radius = float(np.abs(eigenvalues).max())
        # Stable = attracting for the damped iteration x <- (1 - η) x + η F(x) at some η in (0, 1]: every
        # eigenvalue of dF has real part < 1. An eigenvalue below −1 (radius > 1) only means the
        # undamped iteration overshoots; an eigenvalue with real part > 1 is a genuine saddle direction.
        stable = bool(eigenvalues.real.max() < 1.0)
        evaluations += n_eval
    evaluation = equations.evaluate(x)
    phi = equations.free_energy(x, evaluation)
    return BranchSolution(free_energy=phi, train_loss=-phi, test_error=equations.test_error(x), stable=stable,
                          spectral_radius=radius, evaluations=evaluations, **common)


# ==================================================================================================
# Linear baseline
# ==================================================================================================
@dataclass(frozen=True)
class LinearBaseline:
    """ε_g^lin = ½ (1−ω)² σ² Σ_ℓκ Var[softmax(h* h*ᵀ)_ℓκ], h* ~ N(0, σ² I_L) (spec §5).

    variance_sum: Σ_ℓκ Var[...]; error: absolute error estimate of `value` (quadrature refinement).
    """

    value: float
    error: float
    variance_sum: float
    converged: bool
    nodes_per_dim: int


def linear_baseline_error(omega, sigma=0.5, L=2, *, tol=1e-13) -> LinearBaseline:
    """The asymptotic test error of the best linear positional predictor B x (independent of α and A)."""
    omega = check_real("omega", omega, 0.0, 1.0)
    sigma = check_real("sigma", sigma, *SIGMA_RANGE)
    L = check_int("L", L, 2, 6)
    K = kernels(L).attention
    mean, cov = np.zeros(L), sigma**2 * np.eye(L)

    def attention(z):
        return K(*(z[:, i] for i in range(L)))

    first = gaussian_expectation(attention, mean, cov, tol=tol)
    centre = np.asarray(first.value, float)
    second = gaussian_expectation(lambda z: (attention(z) - centre) ** 2, mean, cov, tol=tol)
    variance_sum = float(np.sum(second.value))
    prefactor = 0.5 * (1 - omega) ** 2 * sigma**2
    # E[(S − c)²] is stationary in c at c = E[S], so the error of the centre enters only at second order.
    error = prefactor * float(np.sum(second.error))
    return LinearBaseline(prefactor * variance_sum, error, variance_sum, bool(first.converged and second.converged),
                          int(second.nodes_per_dim))


# ==================================================================================================
# Solve at one point
# ==================================================================================================
@dataclass(frozen=True)
class SolveResult:
    """All branches at one (ω, α): `branches` (BranchSolution list), `global_branch` (largest Φ among
    converged branches), `linear_baseline_error`."""

    branches: tuple[BranchSolution, ...]
    global_branch: str | None
    linear_baseline_error: float
    nodes_per_dim: int
    message: str

    def as_dict(self) -> dict:
        return {"branches": [b.as_dict() for b in self.branches], "global_branch": self.global_branch,
                "linear_baseline_error": self.linear_baseline_error, "nodes_per_dim": self.nodes_per_dim,
                "message": self.message}


def _distinct(solution: BranchSolution, others) -> bool:
    """A branch solution is reported only if it converged and did not collapse onto another branch."""
    if solution.status != "converged":
        return False
    if solution.branch == "positional" and abs(solution.m) < 1e-6:
        return False  # collapsed onto the trivial fixed point
    if solution.branch == "semantic" and abs(solution.theta) < 1e-6:
        return False
    if solution.branch == "mixed":
        for o in others:
            if np.allclose(o.state, solution.state, atol=1e-6):
                return False
        if abs(solution.m) < 1e-6 or abs(solution.theta) < 1e-6:
            return False
    return True


def solve(omega, alpha, sigma=0.5, lam=0.01, A=None, L=2, *, nodes_per_dim=10, branches=BRANCHES,
          stability=True) -> SolveResult:
    """Every branch at (ω, α), its stability and energies, the global minimum and the linear baseline.

    Branches are started inside their invariant sets (θ = 0, m = 0, both) and the mixed one from a
    generic point; a branch that does not converge, or collapses onto another, is not reported.
    """
    params = model_parameters(omega, sigma, lam, A, L)
    alpha = check_positive("alpha", alpha)
    nodes_per_dim = check_int("nodes_per_dim", nodes_per_dim, 4, 40)
    branches = [check_choice("branch", name, BRANCHES) for name in branches]  # all of them, before any work
    found: list[BranchSolution] = []
    notes = []
    for name in branches:
        if name == "semantic" and not params.swap_symmetric:
            notes.append("semantic: m = 0 is not invariant for this A / encodings; see the mixed branch")
            continue
        solution = solve_branch(name, alpha, params, nodes_per_dim=nodes_per_dim, stability=stability)
        if _distinct(solution, found):
            found.append(solution)
        else:
            notes.append(f"{name}: {solution.status} ({solution.message[:80]}); not reported")
    best = max(found, key=lambda b: b.free_energy).branch if found else None
    baseline = linear_baseline_error(params.omega, params.sigma, params.L).value
    return SolveResult(tuple(found), best, baseline, nodes_per_dim, "; ".join(notes) or "ok")


# ==================================================================================================
# Thresholds
# ==================================================================================================
class BranchTracker:
    """Solutions of several branches at arbitrary α, each started from the nearest α already solved
    on the same branch (warm continuation), on one quadrature rule."""

    def __init__(self, params: ModelParameters, nodes_per_dim: int, branches=("positional", "semantic"), seed=None):
        self.params, self.nodes_per_dim, self.seed = params, nodes_per_dim, seed
        self.solved: dict[str, dict[float, BranchSolution]] = {b: {} for b in branches}

    def at(self, branch: str, alpha: float) -> BranchSolution:
        """The branch at α (solved on first request). A tracker with a `seed` tracker (e.g. a coarser
        rule) starts from the seed's nearest solution when it has none of its own."""
        known = self.solved[branch]
        if alpha in known:
            return known[alpha]
        if not known and self.seed is not None:
            known = self.seed.solved[branch]
        guess = None
        if known:
            nearest = min(known, key=lambda a: abs(a - alpha))
            if known[nearest].status == "converged":
                guess = BranchCoordinates(branch, self.params).from_state(known[nearest].state)
        solution = solve_branch(branch, alpha, self.params, nodes_per_dim=self.nodes_per_dim, guess=guess,
                                stability=False)
        self.solved[branch][alpha] = solution
        return solution


@dataclass(frozen=True)
class Threshold:
    """A threshold α* with its error estimate.

    value: α* on the working rule; error: |slope|⁻¹ × (difference of the crossing function between the
    working and the check rule at α*) + root-finding tolerance; status: "converged" | "no_crossing" |
    "failed"; bracket: the scan interval with the sign change; quadrature_shift: that difference.
    """

    value: float
    error: float
    status: str
    message: str
    bracket: tuple[float, float] | None
    quadrature_shift: float = math.nan


@dataclass(frozen=True)
class ThresholdResult:
    """α_c (free-energy crossing of the positional and semantic branches) and α_l (semantic ε_g
    crossing the linear baseline) at one ω."""

    alpha_c: Threshold
    alpha_l: Threshold
    linear_baseline_error: float
    nodes_per_dim: int
    check_nodes_per_dim: int

    def as_dict(self) -> dict:
        return {"alpha_c": self.alpha_c.value, "alpha_c_error": self.alpha_c.error,
                "alpha_c_status": self.alpha_c.status, "alpha_l": self.alpha_l.value,
                "alpha_l_error": self.alpha_l.error, "alpha_l_status": self.alpha_l.status,
                "linear_baseline_error": self.linear_baseline_error, "nodes_per_dim": self.nodes_per_dim,
                "check_nodes_per_dim": self.check_nodes_per_dim,
                "message": f"alpha_c: {self.alpha_c.message}; alpha_l: {self.alpha_l.message}"}


def _crossing(f, alphas, values, f_check, rtol) -> Threshold:
    """First sign change of f on the scanned grid, refined by numeric.threshold.find_crossing; the
    error adds the quadrature shift f_check(α*) − f(α*) divided by the slope."""
    from attnphase.numeric.threshold import find_crossing

    values = np.asarray(values, float)
    signs = np.sign(values)
    change = [i for i in range(len(alphas) - 1) if np.isfinite(values[i]) and np.isfinite(values[i + 1])
              and signs[i] != signs[i + 1]]
    if not change:
        return Threshold(math.nan, math.nan, "no_crossing", f"no sign change on [{alphas[0]:g}, {alphas[-1]:g}]", None)
    i = change[0]
    lo, hi = float(alphas[i]), float(alphas[i + 1])
    root = find_crossing(f, lo, hi, digits=int(-math.log10(rtol)) + 1, n_scan=1)
    if root.status not in ("converged", "limited"):
        return Threshold(math.nan, math.nan, "failed", root.message, (lo, hi))
    # The secant over the scan bracket: the root finder's own slope comes from the last, very narrow
    # bracket, where the fixed-point noise of the crossing function can dominate the difference.
    slope = (values[i + 1] - values[i]) / (hi - lo)
    shift = f_check(root.value) - f(root.value)
    error = abs(shift / slope) + rtol * abs(root.value)
    return Threshold(float(root.value), float(error), "converged",
                     f"sign change in [{lo:g}, {hi:g}], slope {slope:.3g}, quadrature shift {shift:.2g}", (lo, hi), float(shift))


def threshold(omega, sigma=0.5, lam=0.01, A=None, L=2, *, nodes_per_dim=10, check_nodes_per_dim=14,
              alpha_min=0.5, alpha_max=3.0, n_scan=6, rtol=1e-4) -> ThresholdResult:
    """α_c(ω) and α_l(ω) with error estimates.

    Both branches are followed over a scan of α (warm-started); the first sign change of
    Δ_c = Φ_semantic − Φ_positional (semantic becomes the global minimum) and of
    Δ_l = ε_g,semantic − ε_g^lin is refined by a bracketing root finder to `rtol`, and the crossing
    function is re-evaluated at the root on a finer rule (`check_nodes_per_dim`) to estimate the
    quadrature error of the threshold.
    """
    params = model_parameters(omega, sigma, lam, A, L)
    nodes_per_dim = check_int("nodes_per_dim", nodes_per_dim, 4, 40)
    check_nodes_per_dim = check_int("check_nodes_per_dim", check_nodes_per_dim, nodes_per_dim + 1, 48)
    alpha_min = check_positive("alpha_min", alpha_min)
    alpha_max = check_real("alpha_max", alpha_max, alpha_min, None, low_open=True)
    n_scan = check_int("n_scan", n_scan, 2, 200)
    rtol = check_real("rtol", rtol, 1e-12, 0.1)
    if not params.swap_symmetric:
        raise ParameterError("A", params.A, "a token-swap symmetric A (the semantic branch m = 0 must be invariant)")
    baseline = linear_baseline_error(params.omega, params.sigma, params.L).value
    work = BranchTracker(params, nodes_per_dim)
    check = BranchTracker(params, check_nodes_per_dim, seed=work)

    def delta_c(tracker):
        return lambda a: tracker.at("semantic", a).free_energy - tracker.at("positional", a).free_energy

    def delta_l(tracker):
        return lambda a: tracker.at("semantic", a).test_error - baseline

    alphas = np.linspace(alpha_min, alpha_max, n_scan)
    dc = [delta_c(work)(a) for a in alphas]
    dl = [delta_l(work)(a) for a in alphas]
    alpha_c = _crossing(delta_c(work), alphas, dc, delta_c(check), rtol)
    alpha_l = _crossing(delta_l(work), alphas, dl, delta_l(check), rtol)
    return ThresholdResult(alpha_c, alpha_l, baseline, nodes_per_dim, check_nodes_per_dim)


def sweep_point(omega, alpha, sigma=0.5, lam=0.01, L=2, nodes_per_dim=8) -> dict[str, float]:
    """One point of a parameter sweep (picklable, top level): the positional and semantic branches at
    (ω, α), their energies and overlaps, whether the semantic one is global, and the linear baseline."""
    result = solve(omega, alpha, sigma, lam, None, L, nodes_per_dim=nodes_per_dim,
                   branches=("positional", "semantic"), stability=False)
    point = {
        "linear_baseline_error": result.linear_baseline_error,
        "semantic_is_global": math.nan if result.global_branch is None else float(result.global_branch == "semantic"),
    }
    for branch in result.branches:
        for key in ("free_energy", "train_loss", "test_error", "q", "m", "theta"):
            point[f"{branch.branch}_{key}"] = float(getattr(branch, key))
    return point
