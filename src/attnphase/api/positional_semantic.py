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
import os
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from attnphase.derive.codegen import compile_kernel
from attnphase.errors import ParameterError
from attnphase.models import positional_semantic as model
from attnphase.numeric.fixedpoint import Identity, Interval, Positive, map_jacobian, solve_fixed_point
from attnphase.numeric.gauss import GaussHermiteRule, gaussian_expectation
from attnphase.numeric.minimize import MultiStartMinimum
from attnphase.numeric.split_line import CountSplit, OuterSplit, SplitLineRule, split_line_expectation
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
# What the threshold searches require of A (ModelParameters.swap_symmetric; the branches need nothing).
_SYMMETRIC_A = "a token-reversal symmetric A (thresholds are computed in the spec's symmetric setting)"


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
        """Whether A and G_p are invariant under reversing the token order (the spec's setting, to which
        the threshold searches are restricted).

        Not needed for the branches themselves: m = 0 and θ = 0 are invariant sets for EVERY A and G_p.
        The loss depends on h and on h* only through the even maps h_ℓh_κ and h*_ℓh*_κ, so
        prox(−ω, −h*) = −prox(ω, h*); at m = 0 the fields (ω, h*) are odd in (ξ, η), hence g is odd and
        m̂ = αE[g] = 0, m = G_p m̂/D = 0 (tested for asymmetric A at L = 2 and L = 3). θ = 0 likewise
        by the symmetry η → −η."""
        L = self.L
        A = np.array(self.A).reshape(L, L)
        G = np.array(self.gram).reshape(L, L)
        P = np.eye(L)[::-1]
        return bool(np.allclose(P @ A @ P, A, atol=0) and np.allclose(P @ G @ P, G, atol=0))


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
    value_gradient_hessian: object
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
    # objective, gradient and Hessian in one kernel (shared subexpressions): one call per Newton step
    value_grad_hess = [model.moreau_objective(L), *model.moreau_gradient(L), *model.moreau_hessian(L)]
    ridge = model.ridge_equations(L)
    hats = model.hat_integrands(L)
    return _Kernels(
        objective=compile_kernel(model.moreau_objective(L), args),
        value_gradient_hessian=compile_kernel(value_grad_hess, args),
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
# The multi-start saddle-free Newton iteration of numeric.minimize.minimize_multistart_newton, step for
# step (same eigenvalue floor, step cap, Armijo rule with rounding allowance, stopping rule, tie-break),
# but compiled as ONE numba loop over nodes and starts that calls the generated point kernels directly.
# Why: the vectorised version spends ~75% of a map evaluation in Python overhead (~80 kernel calls
# per evaluation, each re-broadcasting 13 arguments), not in arithmetic. Fused (and with objective,
# gradient and Hessian from one kernel, so an accepted Newton step costs one call), a 6-node map
# evaluation takes 0.017 s instead of 0.165 s, a frozen-basin one 0.0011 s instead of 0.010 s (loaded
# machine). Minimisers agree with the vectorised version to 1e-14 (tested); the objective values from
# the joint kernel differ by an ulp, so a tie between starts that reach the SAME minimum may resolve to
# another start index. The loop is generated as a module
# next to the kernel cache because numba caches compiled code only for functions whose callees are
# module globals (a kernel passed as an argument would be recompiled, ~3 s, in every process).
_FUSED_NEWTON_TEMPLATE = """# generated by attnphase.api.positional_semantic (fused multi-start Newton prox)
import math
import sys

import numba
import numpy as np

_objective = sys.modules[{objective!r}].evaluate_points
_value_gradient_hessian = sys.modules[{value_gradient_hessian!r}].evaluate_points


@numba.njit(cache={cache})
def symmetric_eigen(hess, eigval, eigvec, work):
    '''Cyclic Jacobi rotations: hess = eigvec diag(eigval) eigvecᵀ (hess untouched, `work` scratch).
    For the small L > 2 matrices here this is several times cheaper than LAPACK through numba
    (no allocation, no workspace query) and accurate to rounding relative to the largest eigenvalue.'''
    L = hess.shape[0]
    norm2 = 0.0
    for a in range(L):
        for b in range(L):
            work[a, b] = hess[a, b]
            eigvec[a, b] = 1.0 if a == b else 0.0
            norm2 += hess[a, b] * hess[a, b]
    for sweep in range(60):
        off = 0.0
        for a in range(L):
            for b in range(a + 1, L):
                off += work[a, b] * work[a, b]
        if off <= 1e-34 * norm2:  # off-diagonal mass below (1e-17 ‖H‖)²: diagonal to rounding
            break
        for p in range(L - 1):
            for r in range(p + 1, L):
                apr = work[p, r]
                if apr == 0.0:
                    continue
                tau = (work[r, r] - work[p, p]) / (2.0 * apr)
                t = (1.0 if tau >= 0.0 else -1.0) / (abs(tau) + math.sqrt(1.0 + tau * tau))
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = t * c
                for k in range(L):  # work <- work J, eigvec <- eigvec J
                    akp, akr = work[k, p], work[k, r]
                    work[k, p], work[k, r] = c * akp - s * akr, s * akp + c * akr
                    vkp, vkr = eigvec[k, p], eigvec[k, r]
                    eigvec[k, p], eigvec[k, r] = c * vkp - s * vkr, s * vkp + c * vkr
                for k in range(L):  # work <- Jᵀ work
                    apk, ark = work[p, k], work[r, k]
                    work[p, k], work[r, k] = c * apk - s * ark, s * apk + c * ark
    for a in range(L):
        eigval[a] = work[a, a]


@numba.njit(cache={cache})
def newton_step(grad, hess, step, eigval, eigvec, work):
    '''Saddle-free Newton step -V diag(1/max(|λ|, 1e-8 max|λ|)) Vᵀ grad (2×2 in closed form, larger
    by Jacobi rotations; eigval, eigvec, work: scratch of shape (L,), (L, L), (L, L)).'''
    L = grad.shape[0]
    if L == 2:
        a, b, c = hess[0, 0], hess[0, 1], hess[1, 1]
        mean, radius = 0.5 * (a + c), math.hypot(0.5 * (a - c), b)
        phi = 0.5 * math.atan2(2 * b, a - c)
        cs, sn = math.cos(phi), math.sin(phi)
        e0, e1 = mean + radius, mean - radius
        scale = max(max(abs(e0), abs(e1)), 1e-300)
        c0 = (cs * grad[0] + sn * grad[1]) / max(abs(e0), 1e-8 * scale)
        c1 = (-sn * grad[0] + cs * grad[1]) / max(abs(e1), 1e-8 * scale)
        step[0] = -(cs * c0 + (-sn) * c1)
        step[1] = -(sn * c0 + cs * c1)
        return
    symmetric_eigen(hess, eigval, eigvec, work)
    scale = 1e-300
    for a in range(L):
        scale = max(scale, abs(eigval[a]))
    step[:] = 0.0
    for b in range(L):
        projection = 0.0
        for a in range(L):
            projection += eigvec[a, b] * grad[a]
        projection /= max(abs(eigval[b]), 1e-8 * scale)
        for a in range(L):
            step[a] -= eigvec[a, b] * projection


@numba.njit(cache={cache})
def multistart_newton(fixed, w, hs, starts, tol, max_iter, max_step, ends, end_values, end_converged):
    '''Every start k at every node i: ends[k, i], end_values[k, i], end_converged[k, i]; returns the
    largest iteration count. Kernel argument order: h (L), w (L), h* (L), then `fixed`.'''
    K, N, L = starts.shape
    inputs = np.empty((3 * L + fixed.shape[0], 1))
    for j in range(fixed.shape[0]):
        inputs[3 * L + j, 0] = fixed[j]
    out_f = np.empty((1, 1))
    out_fgh = np.empty((1, 1 + L + L * L))
    x, trial, grad, step = np.empty(L), np.empty(L), np.empty(L), np.empty(L)
    hess = np.empty((L, L))
    eigval, eigvec, work = np.empty(L), np.empty((L, L)), np.empty((L, L))
    slowest = 0
    for i in range(N):
        for l in range(L):
            inputs[L + l, 0] = w[i, l]
            inputs[2 * L + l, 0] = hs[i, l]
        for k in range(K):
            for l in range(L):
                x[l] = starts[k, i, l]
                inputs[l, 0] = x[l]
            _value_gradient_hessian(inputs, out_fgh)  # f, ∇f, ∇²f at x: out_fgh holds them for x
            f = out_fgh[0, 0]
            converged = False
            iteration = 0
            for iteration in range(1, max_iter + 1):
                for a in range(L):
                    grad[a] = out_fgh[0, 1 + a]
                    for b in range(L):
                        hess[a, b] = out_fgh[0, 1 + L + a * L + b]
                newton_step(grad, hess, step, eigval, eigvec, work)
                length = 0.0
                for l in range(L):
                    length += step[l] * step[l]
                cap = min(1.0, max_step / max(math.sqrt(length), 1e-300))
                slope = 0.0
                for l in range(L):
                    step[l] *= cap
                    slope += grad[l] * step[l]
                # Armijo backtracking with a rounding allowance; the full step (usually accepted) is
                # evaluated with derivatives, so the next iteration needs no further kernel call
                t, accepted, f_trial, fresh = 1.0, False, f, True
                for _ in range(40):
                    for l in range(L):
                        trial[l] = x[l] + t * step[l]
                        inputs[l, 0] = trial[l]
                    if t == 1.0:
                        _value_gradient_hessian(inputs, out_fgh)
                        f_trial = out_fgh[0, 0]
                    else:
                        _objective(inputs, out_f)
                        f_trial = out_f[0, 0]
                        fresh = False
                    if math.isfinite(f_trial) and f_trial <= f + 1e-4 * t * slope + 8 * 2.220446049250313e-16 * abs(f):
                        accepted = True
                        break
                    t *= 0.5
                moved, size = 0.0, 0.0
                for l in range(L):
                    moved = max(moved, abs(t * step[l]))
                    size = max(size, abs(x[l]))
                if accepted:
                    for l in range(L):
                        x[l] = trial[l]
                    f = f_trial
                # converged: a step below tol, or no decrease possible within rounding (stalled)
                if not accepted or moved <= tol * (1.0 + size):
                    converged = True
                    break
                if not fresh:  # derivatives at the accepted (backtracked) point
                    for l in range(L):
                        inputs[l, 0] = x[l]
                    _value_gradient_hessian(inputs, out_fgh)
            slowest = max(slowest, iteration)
            for l in range(L):
                ends[k, i, l] = x[l]
            end_values[k, i] = f
            end_converged[k, i] = converged
    return slowest
"""


@lru_cache(maxsize=None)
def _fused_newton(L: int):
    """The compiled fused prox loop for L tokens (module generated next to the kernel cache)."""
    import hashlib
    import importlib.util
    import sys
    import types

    from attnphase.derive.codegen import cache_dir

    K = kernels(L)
    modules = {"objective": K.objective.module_name, "value_gradient_hessian": K.value_gradient_hessian.module_name}
    on_disk = K.objective.path is not None and K.value_gradient_hessian.path is not None
    source = _FUSED_NEWTON_TEMPLATE.format(cache=on_disk, **modules)
    name = "attnphase_fused_newton_" + hashlib.sha256(source.encode()).hexdigest()[:32]
    if not on_disk:  # kernels kept in memory only: compile in every process
        module = types.ModuleType(name)
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
        return module.multistart_newton
    path = cache_dir() / f"{name}.py"
    if not path.exists() or path.read_text() != source:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(source)
        os.replace(temporary, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache locator needs an importable module
    spec.loader.exec_module(module)
    return module.multistart_newton


# Newton settings of the prox (those of numeric.minimize.minimize_multistart_newton).
_PROX_TOL, _PROX_MAX_ITER, _PROX_MAX_STEP = 1e-13, 80, 2.0


def proximal_map(w, hs, V, params: ModelParameters, extra_starts=(), starts=None) -> MultiStartMinimum:
    """Global minimiser of Σ(h−ω)²/(2V) + ℓ(h, h*) at every row of w, hs (shape (N, L)).

    Starts: 0, ω, the token-reversed ω, the teacher-side points ±h* (the student reproducing the
    teacher's softmax part), plus `extra_starts` (each (N, L)). With `starts` given (a sequence of
    (N, L) arrays) only those are used: one start gives the LOCAL minimiser reached from it. Each start
    runs the saddle-free Newton iteration of numeric.minimize (fused loop, see above); per node the
    end point with the lowest objective wins (the first start on a tie).
    """
    L = params.L
    w = np.ascontiguousarray(w, dtype=float)
    hs = np.ascontiguousarray(hs, dtype=float)
    if starts is None:
        starts = [np.zeros_like(w), w, w[:, ::-1], hs, -hs, *extra_starts]
    starts = np.ascontiguousarray(np.stack([np.asarray(s, float) for s in starts]))
    K, N = starts.shape[:2]
    fixed = np.array([V, params.sigma, params.omega, *params.A], dtype=float)
    ends, values = np.empty((K, N, L)), np.empty((K, N))
    converged = np.zeros((K, N), dtype=bool)
    iterations = _fused_newton(L)(fixed, w, hs, starts, _PROX_TOL, _PROX_MAX_ITER, _PROX_MAX_STEP, ends, values,
                                  converged)
    best = np.argmin(values, axis=0)  # first occurrence on ties
    rows = np.arange(N)
    return MultiStartMinimum(x=ends[best, rows], value=values[best, rows], start_index=best,
                             converged=converged[best, rows], iterations=int(iterations), local_minima=ends,
                             local_values=values)


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

    Quadrature: the pruned tensor Gauss-Hermite rule with `nodes_per_dim` nodes per dimension, or, when
    `split_rule` is given, the split-line rule (numeric.split_line): Gauss-Hermite in (ξ_2, .., η_L),
    and along ξ_1 Gauss-Kronrod pieces cut where the global proximal minimiser switches basin. The
    test error (a smooth integrand, no prox) always uses the tensor rule.

    outer_split_nodes (with split_rule): the outer-split rule instead (numeric.split_line.OuterSplit):
    coordinates u = (χ, ζ) rotated per token so that h* = √ρ ζ; lines along χ_1; adaptive Gauss-Kronrod
    along ζ_1 cut where the pitchfork indicator (`pitchfork_indicator`) changes sign; Gauss-Hermite
    with these node counts in (χ_2..χ_L, ζ_2..ζ_L). Removes the ~1e-7 oscillation of E[M] in the outer
    Gauss-Hermite rule at ω = 0.3 (not at ω = 0, where χ_2 still converges slowly).

    count_split (with outer_split_nodes): χ_2 integrated adaptively too (numeric.split_line.CountSplit,
    cut where the number of switches on a χ_1 line changes; its axis must be 1, χ_2); outer_split_nodes
    then counts (χ_3..χ_L, ζ_2..ζ_L) only. For ω = 0, where the switching set inside the (χ_1, χ_2) plane
    has segments with cusp ends; ~10× the cost of the outer-split rule (see ENVELOPE_COUNT_SPLIT_NODES).
    """

    params: ModelParameters
    alpha: float
    nodes_per_dim: int = 10
    split_rule: SplitLineRule | None = None
    frozen_basins: bool = False
    outer_split_nodes: tuple[int, ...] | None = None
    count_split: CountSplit | None = None

    def __post_init__(self):
        # With frozen_basins (tensor rule only) the prox at each node is the LOCAL minimiser continued
        # from the previous evaluation's minimiser there (the first evaluation is global): a smooth map
        # without basin switches, ~5× cheaper. `freeze_at` resets the basins to the global ones.
        self.basin_starts = None
        self._last_evaluation = None  # (x, evaluation) of the last split-line evaluation, see `evaluate`
        self.nodes, self.weights = quadrature_rule(2 * self.params.L, self.nodes_per_dim)
        L = self.params.L
        self.xi, self.eta = self.nodes[:, :L], self.nodes[:, L:]

    def fields(self, x, xi=None, eta=None):
        """ω (N, L), h* (N, L) and V* at state x (on the tensor rule unless ξ, η are given)."""
        L = self.params.L
        xi = self.xi if xi is None else xi
        eta = self.eta if eta is None else eta
        q, theta, m = x[0], x[2], x[3:3 + L]
        vstar2 = self.params.rho - theta**2 / q
        if not (q > 0 and vstar2 > 0):
            raise ParameterError("state", x, "q > 0 and θ² < ρ q")
        vstar = math.sqrt(vstar2)
        w = m + math.sqrt(q) * xi
        hs = (theta / math.sqrt(q)) * xi + vstar * eta
        return w, hs, vstar

    def _integrands(self, x, z, prox, envelope):
        """Columns: the 4L hat integrands (m̂, q̂, θ̂, V̂ per token, before ×α) and M, at points z = (ξ, η)."""
        L, p = self.params.L, self.params
        w, _, _ = self.fields(x, z[:, :L], z[:, L:])
        g = (prox - w) / x[1]
        hats = kernels(L).hat_integrands(*(g[:, i] for i in range(L)), *(z[:, i] for i in range(2 * L)),
                                         x[0], x[2], p.rho)
        return np.column_stack([hats, envelope])

    def averages(self, x) -> tuple[np.ndarray, float, int]:
        """(E of the 4L hat integrands, E[M], minimisations used) at state x on this object's rule."""
        p, L, V = self.params, self.params.L, x[1]
        if self.split_rule is None:
            w, hs, _ = self.fields(x)
            if self.frozen_basins and self.basin_starts is not None:
                prox = proximal_map(w, hs, V, p, starts=(self.basin_starts,))
            else:
                prox = proximal_map(w, hs, V, p)
            if self.frozen_basins:
                self.basin_starts = prox.x
            values = self._integrands(x, self.nodes, prox.x, prox.value)
            mean = self.weights @ values
            return mean[:-1], float(mean[-1]), len(self.weights)

        result = self._split_line_average(x, lambda z, h, v: self._integrands(x, z, h, v))
        return result.value[:-1], float(result.value[-1]), result.n_points

    def envelope_average(self, x) -> float:
        """E[M] alone at state x on this object's split-line / outer-split rule (for Φ(q, V, θ, m))."""
        return float(self._split_line_average(x, lambda z, h, v: v[:, None]).value[0])

    def _split_line_average(self, x, integrand):
        """E[integrand(z, prox, envelope)] at state x on the split-line rule (outer-split when set)."""
        p, L, V = self.params, self.params.L, x[1]

        def at(z):
            return self.fields(x, z[:, :L], z[:, L:])[:2]

        def global_minimum(z):
            prox = proximal_map(*at(z), V, p)
            return prox.x, prox.value

        def local_minimum(z, start):
            prox = proximal_map(*at(z), V, p, starts=(start,))
            return prox.x, prox.value

        extra = {}
        if self.outer_split_nodes is not None:
            extra = dict(rotation=zeta_rotation(x, p),
                         outer_split=OuterSplit(L, pitchfork_indicator(x, p), 48, 1e-9, tuple(self.outer_split_nodes)),
                         count_split=self.count_split)
        elif self.count_split is not None:
            raise ParameterError("count_split", self.count_split, "None unless outer_split_nodes is set")
        return split_line_expectation(global_minimum, local_minimum, integrand, 2 * L, 0, self.split_rule, **extra)

    def freeze_at(self, x) -> bool:
        """Set the frozen basins to the GLOBAL minimisers at state x; returns whether they were already
        those (every node's continued minimiser equals the global one), i.e. whether the frozen map
        and the global map agree at x. `basin_change` is then the total weight of the nodes whose basin
        was reset (1 on the first call)."""
        w, hs, _ = self.fields(np.asarray(x, float))
        glob = proximal_map(w, hs, x[1], self.params)
        same, self.basin_change = False, 1.0
        if self.basin_starts is not None:
            continued = proximal_map(w, hs, x[1], self.params, starts=(self.basin_starts,))
            moved = np.any(np.abs(glob.x - continued.x) > 1e-7 * (1 + np.abs(glob.x)), axis=1)
            same, self.basin_change = not moved.any(), float(self.weights[moved].sum())
        self.basin_starts = glob.x
        return same

    def evaluate(self, x) -> dict:
        """Conjugates, E[M] and the next state F(x).

        On the split-line rule the map is a deterministic function of x and the last evaluation is
        kept: a solver's final F(x) and the free energy at that x then cost one evaluation, not two.
        (With frozen basins the result depends on the basins too, so nothing is kept.)"""
        x = np.asarray(x, float)
        last = self._last_evaluation
        if self.split_rule is not None and last is not None and np.array_equal(last[0], x):
            return last[1]
        result = self._evaluate(x)
        if self.split_rule is not None:
            self._last_evaluation = (x.copy(), result)
        return result

    def _evaluate(self, x) -> dict:
        p, L, a = self.params, self.params.L, self.alpha
        q, theta = x[0], x[2]
        hat_means, envelope, n_points = self.averages(x)
        averages = a * hat_means
        mhat, qhat, thetahat, Vhat = (averages[k * L:(k + 1) * L] for k in range(4))
        K = kernels(L)
        Vhat = Vhat + np.asarray(K.hat_correction(q, theta, *thetahat), float)
        G = np.array(p.gram).reshape(L, L)
        ridge_args = (*mhat, *qhat, *thetahat, *Vhat, *G[np.triu_indices(L)], p.sigma, p.lam, p.rho)
        new = np.asarray(K.ridge(*ridge_args), float)
        return {"mhat": mhat, "qhat": qhat, "thetahat": thetahat, "Vhat": Vhat, "envelope": envelope,
                "next": new, "ridge_args": ridge_args, "n_points": n_points}

    def __call__(self, x):
        return self.evaluate(x)["next"]

    def free_energy(self, x, evaluation=None) -> float:
        """Φ at state x (meaningful at a fixed point, where it is stationary)."""
        ev = evaluation or self.evaluate(x)
        L = self.params.L
        rest = kernels(L).phi_rest(x[0], x[1], x[2], *x[3:3 + L], *ev["ridge_args"])
        return float(rest) - self.alpha * ev["envelope"]

    def free_energy_of_state(self, x, envelope=None) -> float:
        """Φ as a function of the order parameters alone, the conjugates eliminated in closed form.

        The conjugates enter Φ only through the entropic/ridge part, so their stationarity conditions
        solve explicitly (D = λ + σ² ΣV̂ = σ²/V, m = G_p m̂/D, θ̂ = Σ_ℓθ̂_ℓ = θ/(ρV), Σq̂ from the V̂
        condition), which leaves

            Φ(q, V, θ, m) = (q − σ² mᵀ G_p⁺ m − θ²/ρ)/(2V) − λ q/(2σ²) − α E[M(m + √q ξ, h*; V)]

        (G_p⁺ the pseudo-inverse; for the default L = 2 encodings mᵀG_p⁺m = m_1² with m_1 = −m_2).
        Its stationary points are the fixed points of the state-evolution map, and there it equals
        `free_energy` (tested). `envelope` = E[M] if already computed on this rule.
        """
        p, L = self.params, self.params.L
        x = np.asarray(x, float)
        q, V, theta, m = x[0], x[1], x[2], x[3:3 + L]
        if envelope is None:
            envelope = self.averages(x)[1]
        G_pinv = np.linalg.pinv(np.array(p.gram).reshape(L, L))
        return float((q - p.sigma**2 * (m @ G_pinv @ m) - theta**2 / p.rho) / (2 * V) - p.lam * q / (2 * p.sigma**2)
                     - self.alpha * envelope)

    def free_energy_gradient(self, x, evaluation=None) -> np.ndarray:
        """∇Φ of `free_energy_of_state` with respect to x = (q, V, θ, m_1..m_L), from one map evaluation.

        The conjugates the map computes at x are the derivatives of the envelope term (they make the
        full Φ(x, x̂) stationary in x): α∂E[M]/∂q = ½ΣV̂_ℓ, α∂E[M]/∂V = −½Σq̂_ℓ, α∂E[M]/∂θ = −Σθ̂_ℓ,
        α∂E[M]/∂m_ℓ = −m̂_ℓ. Hence

            ∂Φ/∂q = 1/(2V) − λ/(2σ²) − ½ΣV̂,   ∂Φ/∂V = −(q − σ² mᵀG_p⁺m − θ²/ρ)/(2V²) + ½Σq̂,
            ∂Φ/∂θ = −θ/(ρV) + Σθ̂,              ∂Φ/∂m = −σ² G_p⁺m / V + m̂,

        all zero at a fixed point (tested against finite differences of Φ on a frozen-basin rule).
        With the map's residual it gives the second-order effect of an unconverged state on Φ.
        """
        p, L = self.params, self.params.L
        x = np.asarray(x, float)
        ev = evaluation or self.evaluate(x)
        q, V, theta, m = x[0], x[1], x[2], x[3:3 + L]
        G_pinv = np.linalg.pinv(np.array(p.gram).reshape(L, L))
        quadratic = q - p.sigma**2 * (m @ G_pinv @ m) - theta**2 / p.rho
        return np.array([1 / (2 * V) - p.lam / (2 * p.sigma**2) - 0.5 * np.sum(ev["Vhat"]),
                         -quadratic / (2 * V**2) + 0.5 * np.sum(ev["qhat"]),
                         -theta / (p.rho * V) + np.sum(ev["thetahat"]),
                         *(-p.sigma**2 * (G_pinv @ m) / V + ev["mhat"])])

    def test_error(self, x) -> float:
        """ε_g = E ℓ(m + √q ξ, h*) (no prox)."""
        p, L = self.params, self.params.L
        _, hs, _ = self.fields(x)
        h = x[3:3 + L] + math.sqrt(x[0]) * self.xi
        loss = kernels(L).loss(*(h[:, i] for i in range(L)), *(hs[:, i] for i in range(L)), p.sigma, p.omega, *p.A)
        return float(self.weights @ loss)


def zeta_rotation(x, params: ModelParameters) -> np.ndarray:
    """Orthogonal R with (ξ, η) = R (χ, ζ): per token ξ = s χ + c ζ, η = −c χ + s ζ, c = θ/√(ρq),
    s = √(1 − c²), so that h*_ℓ = (θ/√q) ξ_ℓ + V* η_ℓ = √ρ ζ_ℓ depends on ζ alone."""
    L = params.L
    c = x[2] / math.sqrt(params.rho * x[0])
    s = math.sqrt(1.0 - c * c)
    R = np.zeros((2 * L, 2 * L))
    for token in range(L):
        R[token, token], R[token, L + token] = s, c
        R[L + token, token], R[L + token, L + token] = -c, s
    return R


def pitchfork_indicator(x, params: ModelParameters):
    """z -> smallest eigenvalue of the Moreau Hessian at h = 0, ω = 0 for the teacher fields h*(z).

    The loss depends on h only through softmax(h_ℓ h_κ), even in h, so h = 0 is critical at ω = 0 and
    loses stability (a pitchfork) where this eigenvalue crosses zero; the switching set of the prox is
    born there and the split-line integrals are not smooth across it (numeric.split_line.OuterSplit)."""
    L = params.L
    K = kernels(L)
    equations = SaddlePointEquations(params, 1.0, 4)

    def indicator(z):
        _, hs, _ = equations.fields(x, z[:, :L], z[:, L:])
        zero = np.zeros(len(z))
        out = K.value_gradient_hessian(*([zero] * (2 * L)), *(hs[:, i] for i in range(L)), x[1], params.sigma,
                                       params.omega, *params.A)
        return np.linalg.eigvalsh(out[:, 1 + L:].reshape(-1, L, L))[:, 0]
    return indicator


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
    # E[M] at the fixed point on the rule it was solved on: dΦ/dα = −E[M] along the branch
    envelope: float = math.nan
    # Quadrature error estimates (`solve` with a check rule): |value − value on the check rule| for
    # q, m, theta, V, test_error, train_loss, free_energy; NaN where the check solve failed.
    errors: dict = field(default_factory=dict, repr=False)
    check_nodes_per_dim: int | None = None

    def as_dict(self) -> dict:
        out = {"branch": self.branch, "q": self.q, "m": self.m, "theta": self.theta, "V": self.V,
               "test_error": self.test_error, "train_loss": self.train_loss, "free_energy": self.free_energy,
               "stable": self.stable, "spectral_radius": self.spectral_radius, "status": self.status}
        if self.check_nodes_per_dim is not None:
            out.update({f"{name}_error": value for name, value in self.errors.items()},
                       nodes_per_dim=self.nodes_per_dim, check_nodes_per_dim=self.check_nodes_per_dim)
        return out


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


# Rounds of (frozen-basin fixed point, global check); measured: one or two suffice near the branches
# for L = 2. For L = 3 (6-D rules, many more nodes near a basin switch) the rounds converge linearly
# (reset weight 1.5e-3, 1.1e-3, 4e-4, 6e-6, 6e-12, 0 on 6 nodes at ω = 0.3, α = 1.25, V moving 18.8 → 19.7
# from the default start): rounds beyond `_BASIN_ROUNDS` continue while the reset weight at least halves per round,
# up to `_MAX_BASIN_ROUNDS`; a stalled assignment (a node on a switch) goes to the global-prox map.
_BASIN_ROUNDS = 4
_MAX_BASIN_ROUNDS = 16


def _solve_restricted(F, y0, coords, tol):
    """Anderson first; MINPACK hybr from the best point when Anderson stalls. The better residual wins."""
    result = solve_fixed_point(F, y0, transforms=coords.transforms, method="anderson", damping=0.5,
                               tol=tol, max_iter=80, spectrum=False)
    inside = all(t.contains(v) for t, v in zip(coords.transforms, np.atleast_1d(result.value)))
    if not result.success and result.status != "diverged" and inside:
        refined = solve_fixed_point(F, result.value, transforms=coords.transforms, method="hybr", tol=tol,
                                    max_iter=20 * (len(y0) + 1), spectrum=False)
        if refined.residual < result.residual:
            result = refined
    return result


def solve_branch(branch: str, alpha: float, params: ModelParameters, *, nodes_per_dim: int = 12,
                 guess=None, tol: float = 1e-10, accept: float = 1e-8, stability: bool = True) -> BranchSolution:
    """Fixed point of the state-evolution map inside the branch's invariant set, with its stability.

    The solver (numeric.fixedpoint: Anderson, then MINPACK hybr, in unconstrained coordinates) runs on
    the restricted map to `tol` with FROZEN BASINS: each node's prox is continued from its previous
    minimiser, which makes the map smooth and each evaluation ~5× cheaper; at the fixed point the global
    prox is recomputed, and if any node's global minimiser lies in another basin the basins are reset
    and the solve repeated (`_BASIN_ROUNDS` times, more while the reset weight keeps halving; then the
    global-prox map is solved directly).
    A residual up to `accept` is accepted (the global-prox map is piecewise smooth on a fixed rule, so
    its noise floor can exceed `tol`), anything larger is reported as not converged; the stability is
    the spectral radius of the Jacobian of the FULL
    map (all of q, V, θ, m), so an instability transverse to the invariant set (e.g. a semantic
    fixed point unstable towards m ≠ 0) is seen. `stable` means attracting for a suitably damped
    iteration (all eigenvalues of dF with real part < 1); `spectral_radius` is reported as well.
    """
    alpha = check_positive("alpha", alpha)
    coords = BranchCoordinates(branch, params)
    equations = SaddlePointEquations(params, alpha, nodes_per_dim, frozen_basins=True)
    F = coords.restricted_map(equations)
    y = initial_guess(branch, params) if guess is None else np.asarray(guess, float)
    # Frozen basins: the fixed point of the map whose prox follows each node's basin (smooth, cheap),
    # then one global prox at that point; if some node's global minimiser lies in another basin, the
    # basins are reset there and the solve repeated. The accepted point is a fixed point of the
    # global-prox map (the two maps agree there).
    evaluations = 1
    equations.freeze_at(coords.to_state(y))
    stalled = True
    for round_ in range(_MAX_BASIN_ROUNDS):
        result = _solve_restricted(F, y, coords, tol)
        evaluations += result.evaluations + 1
        y = result.value
        previous_change = equations.basin_change
        if not (np.all(np.isfinite(y)) and result.residual <= accept) or equations.freeze_at(coords.to_state(y)):
            stalled = False  # failed (reported below) or settled: a fixed point of the global-prox map
            break
        if round_ + 1 >= _BASIN_ROUNDS and equations.basin_change > 0.5 * previous_change:
            break
    if stalled:
        # The assignment keeps changing (a node sits on a basin switch at the fixed point): solve the
        # global-prox map itself from the last point, as without frozen basins.
        equations.frozen_basins = False
        result = _solve_restricted(F, y, coords, tol)
        evaluations += result.evaluations
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
                          spectral_radius=radius, evaluations=evaluations, envelope=evaluation["envelope"], **common)


# ==================================================================================================
# Accurate branches: split-line quadrature, defect correction, convergence study
# ==================================================================================================
# Split-line rules (outer Gauss-Hermite nodes per dimension / uniform probes along ξ_1 / Gauss-Kronrod
# panel tolerance). The state is solved on STATE_RULES (coarse, fine); the envelope average E[M] at the
# fine state on ENVELOPE_RULES. Measured at ω = 0.3, α = 1.25 (fixed state): E[M] on outer 8/10/12/14
# moves by 3.3e-7, 1.5e-7, 7e-8 (semantic, geometric) and −8e-7, −8e-8, +1.3e-7 (positional, oscillating).
STATE_RULES = (SplitLineRule(8, 32, 1e-10), SplitLineRule(10, 32, 1e-10))
ENVELOPE_RULES = (SplitLineRule(10, 32, 1e-10), SplitLineRule(12, 32, 1e-10), SplitLineRule(14, 32, 1e-10))
# Outer-split envelope rules (Gauss-Hermite nodes in χ_2, ζ_2; see SaddlePointEquations.outer_split_nodes).
# Measured at ω = 0.3, α = 1.25 (fixed converged states): E[M] on (χ_2, ζ_2) = (16, 14) -> (20, 18) or
# (16, 18) changes by ~2e-9 (positional) and 1.1e-8 (semantic); (24, 18) and (16, 22) move the finer
# one by 8e-10 and 1.2e-9. Only E[M] is averaged on these rules (`envelope_average`): with the hat
# integrands (jumps) the adaptive panels refine ~3× more.
ENVELOPE_OUTER_SPLIT_NODES = ((16, 14), (20, 18))
# Outer split plus a count split along χ_2 (Gauss-Hermite in ζ_2 only, 64 probes per line), for ω = 0
# (`convergence_study(..., envelope_count_split=True)`). Measured at ω = 0, α = 0.615 (positional branch,
# fixed converged state; 8-20 CPU-minutes per evaluation): E[M] on ζ_2 = 12 -> 16 -> 20 moves by −3.9e-8,
# +1.5e-9; count tolerance 1e-9 -> 1e-10 by 1.2e-10; 32 -> 64 probes per line by −1.2e-8 (64 -> 128 on
# planes: 4e-10).
ENVELOPE_COUNT_SPLIT_NODES = ((12,), (16,))
ENVELOPE_COUNT_SPLIT = CountSplit(1, 48, 1e-9)
ENVELOPE_COUNT_SPLIT_PROBES = 64
TEST_ERROR_NODES = 16


def _accurate_jacobian(F, y, f0, relative_step=1e-2):
    """Forward finite-difference Jacobian of the split-line map F (reduced coordinates) at y, f0 = F(y).

    The split-line map is continuous in the state (basin switches are located and integrated along
    each line), so a 1% step is accurate to O(1%), far above its quadrature noise (~1e-6 relative in
    the conjugates); the Broyden updates of the defect correction remove the rest. The step is at
    least 1e-3 absolute (relative_step × 0.1) in every coordinate, since c and m can be small."""
    n = len(y)
    J = np.empty((n, n))
    for j in range(n):
        h = relative_step * max(abs(y[j]), 0.1)
        up = y.copy()
        up[j] += h
        J[:, j] = (F(up) - f0) / h
    return J


# Largest move of one defect-correction step, per coordinate, as a fraction of max(|y_j|, 0.05): a
# Newton step from a poor Jacobian must not leave the branch's basin of attraction (at ω = 0 a full
# step from the tensor-rule Jacobian sent m from 0.06 to 0.5).
_MAX_STEP_FRACTION = 0.25
_REFINE_MAX_ITER = 16
_ANDERSON_MAX_ITER = 40


def _defect_correction(solution: BranchSolution, params: ModelParameters, rule: SplitLineRule, tol: float,
                       max_iter: int, inverse=None, anderson: bool = True):
    """Fixed point of the split-line map from `solution`; returns (BranchSolution, inverse Jacobian of
    G(y) = F_s(y) − y at the end, reusable as the start of a finer rule)."""
    coords = BranchCoordinates(solution.branch, params)
    accurate = SaddlePointEquations(params, solution.alpha, TEST_ERROR_NODES, split_rule=rule)
    restricted = coords.restricted_map(accurate)

    def inside(y):
        return bool(np.all(np.isfinite(y)) and y[0] > 0 and y[1] > 0 and (not coords.has_c or abs(y[2]) < 1))

    def F(y):
        return restricted(y) if inside(y) else np.full(len(y), np.nan)

    def collapsed(y):
        """On the trivial set (or, for the mixed branch, on a pure one): m = 0 and θ = 0 are invariant, so
        a solver can converge there from a start on the branch (seen: Anderson at ω = 0.05, α = 0.68,
        positional m 0.17 -> 0)."""
        x = coords.to_state(y)
        sizes = ([abs(x[2])] if coords.has_c else []) + ([float(np.abs(x[3:]).max())] if coords.has_m else [])
        return bool(sizes) and min(sizes) < _COLLAPSE_LEVEL

    y = coords.from_state(solution.state)
    # 1. Anderson mixing on the split-line map itself (globally more robust than Newton here: at ω = 0
    #    it climbs from the tensor start m = 0.07 to the fixed point m = 0.152 in 16 evaluations)
    evaluations = 0
    if anderson:
        mixed = solve_fixed_point(F, y, transforms=coords.transforms, method="anderson", damping=0.5, tol=tol,
                                  max_iter=_ANDERSON_MAX_ITER, spectrum=False)
        evaluations += mixed.evaluations
        if inside(mixed.value) and not collapsed(np.asarray(mixed.value, float)):
            y = np.asarray(mixed.value, float)  # else Broyden from the start
    f = F(y)
    evaluations += 1
    # 2. Broyden from the Jacobian of the split-line map, until the relative defect is below tol
    status, residual = "max_iter", math.inf
    for _ in range(max_iter):
        defect = f - y
        residual = float(np.max(np.abs(defect) / np.maximum(np.abs(y), 1e-3)))
        if not np.isfinite(residual):
            status = "diverged"
            break
        if residual <= tol:
            status = "converged"
            break
        if inverse is None:
            J = _accurate_jacobian(F, y, f)
            evaluations += len(y)
            inverse = np.linalg.inv(J - np.eye(len(y)))
        step = -inverse @ defect
        cap = _MAX_STEP_FRACTION * np.maximum(np.abs(y), 0.05)
        step *= min(1.0, float(np.min(cap / np.maximum(np.abs(step), 1e-300))))
        for _halving in range(5):  # backtrack out of the domain (q, V > 0, |c| < 1)
            if inside(y + step):
                break
            step *= 0.5
        y_new = y + step
        f_new = F(y_new)
        evaluations += 1
        if not np.all(np.isfinite(f_new)):
            status = "diverged"
            break
        # Broyden's ("good") update of the inverse Jacobian of G: superlinear convergence
        dy, dg = y_new - y, (f_new - y_new) - defect
        v = dy @ inverse
        if abs(v @ dg) > 0:
            inverse = inverse + np.outer(dy - inverse @ dg, v) / (v @ dg)
        y, f = y_new, f_new
    if status == "converged" and collapsed(y):
        status = "collapsed"
    x = coords.to_state(y)
    converged = status == "converged"
    envelope = math.nan
    if converged:
        evaluation = accurate.evaluate(x)  # the last map evaluation, at this x (kept by `evaluate`)
        phi = accurate.free_energy(x, evaluation)
        envelope = evaluation["envelope"]
    else:
        phi = math.nan
    refined = BranchSolution(
        branch=solution.branch, alpha=solution.alpha, q=float(x[0]), m=float(x[3]), theta=float(x[2]), V=float(x[1]),
        free_energy=phi, train_loss=-phi, test_error=accurate.test_error(x) if converged else math.nan,
        stable=solution.stable, spectral_radius=solution.spectral_radius, status=status,
        message=f"defect correction on the split-line rule {rule.label()}: residual {residual:.2g}",
        evaluations=evaluations, residual=residual, nodes_per_dim=solution.nodes_per_dim, state=x, envelope=envelope)
    return refined, inverse


def refine_branch(solution: BranchSolution, params: ModelParameters, rule: SplitLineRule, *, tol: float = 1e-8,
                  max_iter: int = _REFINE_MAX_ITER, anderson: bool = True) -> BranchSolution:
    """The branch's fixed point on the split-line rule, by defect correction from a tensor-rule solution.

    Solves G(y) = F_s(y) − y = 0 (F_s the map on the split-line rule, reduced coordinates): Anderson
    mixing on F_s first (numeric.fixedpoint, damping 0.5, ≤ _ANDERSON_MAX_ITER evaluations), then
    Broyden's method from wherever that ended, started from the inverse of J_s − I with J_s = dF_s/dy
    by forward differences on the split-line map itself (n extra evaluations, only if needed), each
    step capped at _MAX_STEP_FRACTION of each coordinate and kept inside the domain (q, V > 0, |c| < 1).

    Why the Jacobian of the accurate map: at small ω the tensor rules get the m-dependence of the
    positional branch qualitatively wrong. At ω = 0, α = 0.6 (q, V fixed) ∂F_m/∂m is −1.25 on the
    10-node tensor rule but +0.9 on the split-line rule: the drive of m (m̂ comes from which prox
    basin wins, i.e. from the switching surface the tensor rule does not resolve) is weak, the map is
    nearly neutral along m, and the tensor fixed point sits at m ≈ 0.07 while the converged one is
    at m ≈ 0.15. A defect correction preconditioned by the tensor Jacobian diverges there.

    The state matters for Φ at second order only (Φ is stationary), but at ω = 0.3, α = 1.25 the
    tensor rules already leave V wrong by several percent (positional: 14.61 on 10 nodes, 15.32 on 14,
    14.90 converged), which moves Φ by ~5e-7. Status "converged" when
    max_j |F_s(y) − y|_j / max(|y_j|, 1e-3) ≤ tol; "diverged" when the iteration leaves the domain;
    "collapsed" when it converged onto the trivial set (|θ| or |m| < _COLLAPSE_LEVEL; for the mixed
    branch onto a pure one), which is never reported as the branch.

    anderson=False skips the Anderson stage: Broyden alone converges to the fixed point near the start
    whatever its stability, which is how unstable (saddle) fixed points such as the mixed state are
    found; Anderson mixing tends to slide off them onto a stable branch. `stable` and
    `spectral_radius` are copied from `solution` (not recomputed on the split-line rule).
    """
    if solution.status != "converged":
        return solution
    return _defect_correction_with_retry(solution, params, rule, tol, max_iter, None, anderson)[0]


# When the defect correction collapses onto the trivial set, it is retried once from the start with
# the branch's order parameter (|m| positional, c semantic) scaled by this factor: at small ω the
# tensor rules put the positional |m| at about half its converged value (ω = 0: 0.07 vs 0.152; ω =
# 0.05, α = 0.68: 0.076 vs 0.170), and from there both Anderson and Broyden fall to m = 0.
_RETRY_ORDER_SCALE = 2.0


def _defect_correction_with_retry(solution, params, rule, tol, max_iter, inverse=None, anderson=True):
    refined, inverse_out = _defect_correction(solution, params, rule, tol, max_iter, inverse, anderson)
    if refined.status not in ("collapsed", "max_iter", "diverged") or solution.branch not in ("positional", "semantic"):
        return refined, inverse_out
    x = np.array(solution.state, float)
    if solution.branch == "positional":
        x[3:] *= _RETRY_ORDER_SCALE
    else:
        x[2] *= min(_RETRY_ORDER_SCALE, 0.9 * math.sqrt(params.rho * x[0]) / max(abs(x[2]), 1e-300))
    retried, retried_inverse = _defect_correction(replace(solution, state=x), params, rule, tol, max_iter, None,
                                                  anderson)
    if retried.status == "converged":
        return replace(retried, message=retried.message + f" (after a retry with the order parameter ×{_RETRY_ORDER_SCALE:g}: "
                                                          f"first attempt {refined.status})"), retried_inverse
    return refined, inverse_out


@dataclass(frozen=True)
class ConvergenceStudy:
    """Φ, ε_t, ε_g of one branch at one α with error estimates from a convergence study.

    state_rows: the defect-corrected fixed point on each of the state rules (coarse, fine): q, V, m,
        θ, ε_g, residual. envelope_rows: Φ at the fine state with E[M] on each envelope rule.
    free_energy: Φ on the finest envelope rule at the fine state. Its error adds (i) the spread
        (max − min) of Φ over the envelope rules (the outer Gauss-Hermite rule converges geometrically
        for the semantic branch but oscillates at the 1e-7 level for the positional one, so the spread,
        not a geometric tail, is the honest bound), (ii) |Φ(coarse state) − Φ(fine state)| on the
        finest envelope rule: the state enters Φ at second order, so this bounds the fine state's
        contribution by that of the coarse one, which is larger.
    test_error: ε_g at the fine state (tensor rule, smooth integrand); it depends on the state at first
        order, so its error is |ε_g(fine) − ε_g(coarse)|.
    status: "converged" when every defect correction converged, else "failed".
    """

    branch: str
    alpha: float
    state_rows: tuple[dict, ...]
    envelope_rows: tuple[dict, ...]
    free_energy: float
    free_energy_error: float
    test_error: float
    test_error_error: float
    status: str
    message: str
    # E[M] at the fine state on the finest envelope rule: dΦ/dα = −E[M] along the branch (Φ is
    # stationary, α enters explicitly only through −α E[M]), the exact slope for threshold refinement
    envelope: float = math.nan
    state: np.ndarray | None = field(default=None, repr=False)  # the fine state (q, V, θ, m_1..m_L)

    @property
    def train_loss(self) -> float:
        return -self.free_energy

    def as_dict(self) -> dict:
        return {"branch": self.branch, "alpha": self.alpha, "free_energy": self.free_energy,
                "free_energy_error": self.free_energy_error, "train_loss": self.train_loss,
                "train_loss_error": self.free_energy_error, "test_error": self.test_error,
                "test_error_error": self.test_error_error, "status": self.status, "message": self.message,
                "envelope": self.envelope, "state_rows": [dict(r) for r in self.state_rows], "envelope_rows": [dict(r) for r in self.envelope_rows]}


def convergence_study(branch: str, alpha, params: ModelParameters, *, state_rules=STATE_RULES,
                      envelope_rules=ENVELOPE_RULES, nodes_per_dim: int = 10,
                      start: BranchSolution | None = None, envelope_outer_nodes=None,
                      envelope_count_split: bool = False) -> ConvergenceStudy:
    """Solve `branch` at α by defect correction on each state rule (each started from the previous),
    evaluate Φ at the finest state on each envelope rule, and estimate the errors (see ConvergenceStudy).

    envelope_outer_nodes: outer-split envelope rules instead of envelope_rules (one tuple of Gauss-Hermite
    counts each, see SaddlePointEquations.outer_split_nodes); with envelope_count_split also a count split
    along χ_2 (ENVELOPE_COUNT_SPLIT, 64 probes per line), and each tuple counts (χ_3..χ_L, ζ_2..ζ_L) only
    (e.g. ENVELOPE_COUNT_SPLIT_NODES)."""
    alpha = check_positive("alpha", alpha)
    if len(state_rules) < 2 or len(envelope_rules) < 2:
        raise ParameterError("rules", (state_rules, envelope_rules), "at least two state rules and two envelope rules")
    if envelope_count_split and envelope_outer_nodes is None:
        raise ParameterError("envelope_count_split", envelope_count_split, "False unless envelope_outer_nodes is given")
    if start is None:
        start = solve_branch(branch, alpha, params, nodes_per_dim=nodes_per_dim, stability=False)
    if start.status != "converged":
        return ConvergenceStudy(branch, alpha, (), (), math.nan, math.nan, math.nan, math.nan, "failed",
                                f"no converged tensor-rule start: {start.status} ({start.message[:80]})")
    states, current, inverse = [], start, None
    for rule in state_rules:
        # each finer rule starts from the previous rule's fixed point and inverse Jacobian
        refined, inverse = _defect_correction_with_retry(current, params, rule, 1e-8, _REFINE_MAX_ITER, inverse)
        states.append(refined)
        if refined.status != "converged":
            rows = tuple({"rule": r.label(), "status": st.status, "residual": st.residual}
                         for r, st in zip(state_rules, states))
            return ConvergenceStudy(branch, alpha, rows, (), math.nan, math.nan, math.nan, math.nan, "failed",
                                    f"defect correction on {rule.label()}: {refined.message}")
        current = replace(refined, nodes_per_dim=start.nodes_per_dim)
    state_rows = tuple({"rule": r.label(), "q": st.q, "V": st.V, "m": st.m, "theta": st.theta,
                        "test_error": st.test_error, "free_energy": st.free_energy, "residual": st.residual}
                       for r, st in zip(state_rules, states))
    coarse, fine = states[-2].state, states[-1].state
    envelope_rows, phis = [], []
    # envelope_outer_nodes: outer-split rules (one tuple of Gauss-Hermite counts each) replace envelope_rules
    count_split = ENVELOPE_COUNT_SPLIT if envelope_count_split else None
    probes, kind = (ENVELOPE_COUNT_SPLIT_PROBES, "outer+count-split ") if envelope_count_split else (32, "outer-split ")
    variants = ([(rule, None, rule.label()) for rule in envelope_rules] if envelope_outer_nodes is None else
                [(SplitLineRule(max(nodes), probes, 1e-10), tuple(nodes), kind + "x".join(map(str, nodes)))
                 for nodes in envelope_outer_nodes])
    for rule, outer_nodes, label in variants:
        equations = SaddlePointEquations(params, alpha, TEST_ERROR_NODES, split_rule=rule, outer_split_nodes=outer_nodes,
                                         count_split=count_split if outer_nodes is not None else None)
        if outer_nodes is None:
            evaluation = equations.evaluate(fine)
            phi = equations.free_energy(fine, evaluation)
            envelope = evaluation["envelope"]
        else:  # Φ(q, V, θ, m) needs E[M] only; it equals the saddle-point Φ at the fixed point
            envelope = equations.envelope_average(fine)
            phi = equations.free_energy_of_state(fine, envelope)
        phis.append(phi)
        envelope_rows.append({"rule": label, "free_energy": phi})
    # the state's effect on Φ on one envelope rule (the rule's own error cancels in the difference): the
    # finest plain rule as before, the cheaper outer-split rule
    k = -1 if envelope_outer_nodes is None else 0
    coarse_equations = SaddlePointEquations(params, alpha, TEST_ERROR_NODES, split_rule=variants[k][0],
                                            outer_split_nodes=variants[k][1], count_split=count_split)
    phi_coarse_state = (coarse_equations.free_energy(coarse) if variants[k][1] is None else
                        coarse_equations.free_energy_of_state(coarse, coarse_equations.envelope_average(coarse)))
    spread = max(phis) - min(phis)
    state_effect = abs(phi_coarse_state - phis[k])
    test_error_error = abs(states[-1].test_error - states[-2].test_error)
    message = (f"Φ spread over {len(phis)} envelope rules {spread:.2g}, state effect {state_effect:.2g}; "
               f"finest {variants[-1][2]}")
    return ConvergenceStudy(branch, alpha, state_rows, tuple(envelope_rows), phis[-1], spread + state_effect,
                            states[-1].test_error, test_error_error, "converged", message,
                            float(envelope), fine)


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


# Default rules of `solve` by L. The tensor rule has (nodes per dimension)^(2L) points: 10^4 for L = 2,
# but 6^6 = 46 656 for L = 3 (one branch ~40 s on two cores, 8^6: several minutes) and 4^8 = 65 536 for
# L = 4. For L ≥ 3 `solve` also re-solves every branch on a check rule two nodes coarser and reports the
# difference as the quadrature error (the L = 2 rules have their own convergence study, see the docs).
DEFAULT_NODES_PER_DIM = {2: 10, 3: 6}
_ERROR_FIELDS = ("q", "m", "theta", "V", "test_error", "train_loss", "free_energy")


def default_nodes_per_dim(L: int) -> int:
    """Gauss-Hermite nodes per dimension `solve` uses by default for L tokens."""
    return DEFAULT_NODES_PER_DIM.get(check_int("L", L, 2, 6), 4)


def default_check_nodes_per_dim(L: int, nodes_per_dim: int) -> int | None:
    """The check rule `solve` uses by default: none for L = 2, two nodes coarser (or finer at 4) for L ≥ 3."""
    if L == 2:
        return None
    return nodes_per_dim - 2 if nodes_per_dim >= 6 else nodes_per_dim + 2


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == "auto"


def _with_check(solution: BranchSolution, params: ModelParameters, check_nodes_per_dim: int) -> BranchSolution:
    """The solution with quadrature errors: the same branch re-solved on the check rule from its state."""
    coords = BranchCoordinates(solution.branch, params)
    check = solve_branch(solution.branch, solution.alpha, params, nodes_per_dim=check_nodes_per_dim,
                         guess=coords.from_state(solution.state), stability=False)
    same_branch = _distinct(check, ())
    errors = {name: abs(getattr(solution, name) - getattr(check, name)) if same_branch else math.nan
              for name in _ERROR_FIELDS}
    return replace(solution, errors=errors, check_nodes_per_dim=check_nodes_per_dim)


def solve(omega, alpha, sigma=0.5, lam=0.01, A=None, L=2, *, nodes_per_dim="auto", branches=BRANCHES,
          stability=True, check_nodes_per_dim="auto") -> SolveResult:
    """Every branch at (ω, α), its stability and energies, the global minimum and the linear baseline.

    Branches are started inside their invariant sets (θ = 0, m = 0, both) and the mixed one from a
    generic point; a branch that does not converge, or collapses onto another, is not reported. A trivial
    branch that fails from its default start (at L = 3 the map leaves V > 0 from V = σ²/(λ+σ²)) is retried
    from the (q, V) of a branch already found.

    nodes_per_dim: tensor Gauss-Hermite nodes per dimension ("auto": `default_nodes_per_dim(L)`).
    check_nodes_per_dim: a second rule on which every reported branch is re-solved (warm-started) to give
    `<field>_error` = |difference| for q, m, θ, V, ε_g, ε_t, Φ; "auto" = `default_check_nodes_per_dim`
    (none for L = 2), None = no check. On these piecewise-smooth integrands (basin switches of the prox)
    the difference is an error indicator, not a bound (docs: the rule sequence 4/6/8 at L = 3).
    """
    params = model_parameters(omega, sigma, lam, A, L)
    alpha = check_positive("alpha", alpha)
    if _is_auto(nodes_per_dim):
        nodes_per_dim = default_nodes_per_dim(params.L)
    nodes_per_dim = check_int("nodes_per_dim", nodes_per_dim, 4, 40)
    if _is_auto(check_nodes_per_dim):
        check_nodes_per_dim = default_check_nodes_per_dim(params.L, nodes_per_dim)
    elif check_nodes_per_dim is not None:
        check_nodes_per_dim = check_int("check_nodes_per_dim", check_nodes_per_dim, 4, 40)
        if check_nodes_per_dim == nodes_per_dim:
            raise ParameterError("check_nodes_per_dim", check_nodes_per_dim, f"a rule other than nodes_per_dim = {nodes_per_dim}")
    branches = [check_choice("branch", name, BRANCHES) for name in branches]  # all of them, before any work
    found: list[BranchSolution] = []
    notes = []
    for name in branches:
        solution = solve_branch(name, alpha, params, nodes_per_dim=nodes_per_dim, stability=stability)
        if name == "trivial" and solution.status != "converged" and found:
            solution = solve_branch(name, alpha, params, nodes_per_dim=nodes_per_dim, stability=stability,
                                    guess=[found[0].q, found[0].V])
        if _distinct(solution, found):
            found.append(solution)
        else:
            notes.append(f"{name}: {solution.status} ({solution.message[:80]}); not reported")
    if check_nodes_per_dim is not None:
        found = [_with_check(solution, params, check_nodes_per_dim) for solution in found]
    best = max(found, key=lambda b: b.free_energy).branch if found else None
    if check_nodes_per_dim is not None and len(found) >= 2:
        first, second = sorted(found, key=lambda b: -b.free_energy)[:2]
        gap = first.free_energy - second.free_energy
        if not gap > first.errors["free_energy"] + second.errors["free_energy"]:
            notes.append(f"global branch uncertain: Φ gap {gap:.2g} to {second.branch} within the quadrature errors")
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
        coords = BranchCoordinates(branch, self.params)
        usable = sorted((a for a, s in known.items() if s.status == "converged"), key=lambda a: abs(a - alpha))
        guess = None
        if len(usable) >= 2 and abs(usable[0] - usable[1]) > 1e-9:
            # linear extrapolation in α of the two nearest solutions: a closer start saves iterations
            a0, a1 = usable[0], usable[1]
            y0, y1 = coords.from_state(known[a0].state), coords.from_state(known[a1].state)
            guess = y0 + (y0 - y1) * (alpha - a0) / (a0 - a1)
            if not (guess[0] > 0 and guess[1] > 0 and (not coords.has_c or abs(guess[2]) < 1)):
                guess = y0
        elif usable:
            guess = coords.from_state(known[usable[0]].state)
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
    slope: float = math.nan


@dataclass(frozen=True)
class ThresholdResult:
    """α_c (free-energy crossing of the positional and semantic branches) and α_l (semantic ε_g
    crossing the linear baseline) at one ω."""

    alpha_c: Threshold
    alpha_l: Threshold
    linear_baseline_error: float
    nodes_per_dim: int
    check_nodes_per_dim: int
    refined: dict = field(default_factory=dict)
    studies: tuple = ()

    def as_dict(self) -> dict:
        out = {"alpha_c": self.alpha_c.value, "alpha_c_error": self.alpha_c.error,
               "alpha_c_status": self.alpha_c.status, "alpha_l": self.alpha_l.value,
               "alpha_l_error": self.alpha_l.error, "alpha_l_status": self.alpha_l.status,
               "linear_baseline_error": self.linear_baseline_error, "nodes_per_dim": self.nodes_per_dim,
               "check_nodes_per_dim": self.check_nodes_per_dim,
               "message": f"alpha_c: {self.alpha_c.message}; alpha_l: {self.alpha_l.message}"}
        tensor_rule = f"tensor Gauss-Hermite {self.nodes_per_dim} nodes (check {self.check_nodes_per_dim})"
        for name, coarse in (("alpha_c", self.alpha_c), ("alpha_l", self.alpha_l)):
            out.update({f"{name}_tensor": coarse.value, f"{name}_tensor_error": coarse.error, f"{name}_method": tensor_rule})
        for name, value in self.refined.items():  # "alpha_c" -> alpha_c_refined, alpha_c_refined_error, ...
            out.update({f"{name}_refined": value.value, f"{name}_refined_error": value.error,
                        f"{name}_refined_status": value.status, f"{name}_refined_message": value.message})
            if value.status == "converged":  # the best estimate is the refined one
                out.update({name: value.value, f"{name}_error": value.error, f"{name}_status": value.status,
                            f"{name}_method": "split-line refined (Newton on convergence studies)"})
        if self.studies:
            out["studies"] = [study.as_dict() for study in self.studies]
        return out


def _no_crossing(alphas, values, meaning, why=None) -> Threshold:
    """Status and diagnostics when the scan shows no sign change of the crossing function.

    "no_crossing" only when every scan point was solved (both branches converged and distinct) and
    the sign never changes: the message says what that means (`meaning[sign]`), the closest approach,
    and where the secant through the last two points would cross. With unsolved points the sign
    could change in between: status "failed", naming them (a branch that does not exist there, or a
    solve that failed), never a number."""
    alphas = np.asarray(alphas, float)
    finite = np.isfinite(values)
    missing = ", ".join(f"{a:.4g}" + (f" ({why(a)})" if why else "") for a in alphas[~finite])
    if not finite.any():
        return Threshold(math.nan, math.nan, "failed", f"no branch pair solved at any scan point ({missing})", None)
    a_f, v_f = alphas[finite], values[finite]
    if len(set(np.sign(v_f))) > 1:
        return Threshold(math.nan, math.nan, "failed",
                         f"sign change across unsolved scan points (α = {missing}): a branch is lost there", None)
    closest = int(np.argmin(np.abs(v_f)))
    text = (f"{meaning.get(int(np.sign(v_f[0])), '')} at all {len(v_f)} solved scan points in "
            f"[{alphas[0]:g}, {alphas[-1]:g}]; closest approach {v_f[closest]:.3g} at α = {a_f[closest]:.4g}")
    if len(v_f) >= 2 and v_f[-1] != v_f[-2]:
        extrapolated = a_f[-1] - v_f[-1] * (a_f[-1] - a_f[-2]) / (v_f[-1] - v_f[-2])
        text += f"; the secant through the last two points crosses at α ≈ {extrapolated:.3g}"
    if missing:
        return Threshold(math.nan, math.nan, "failed", f"{text}; unsolved at α = {missing}", None)
    return Threshold(math.nan, math.nan, "no_crossing", text, None)


MEANING_C = {-1: "positional is the global minimum (Φ_sem < Φ_pos)", 1: "semantic is the global minimum (Φ_sem > Φ_pos)"}
MEANING_L = {-1: "the semantic branch beats the linear baseline", 1: "the semantic branch does not beat the linear baseline"}


def _crossing(f, alphas, values, f_check, rtol, meaning=None, why=None) -> Threshold:
    """First sign change of f on the scanned grid, refined by numeric.threshold.find_crossing; the
    error adds the quadrature shift f_check(α*) − f(α*) divided by the slope."""
    from attnphase.numeric.threshold import find_crossing

    values = np.asarray(values, float)
    signs = np.sign(values)
    change = [i for i in range(len(alphas) - 1) if np.isfinite(values[i]) and np.isfinite(values[i + 1])
              and signs[i] != signs[i + 1]]
    if not change:
        return _no_crossing(alphas, values, meaning or {}, why)
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
                     f"sign change in [{lo:g}, {hi:g}], slope {slope:.3g}, quadrature shift {shift:.2g}", (lo, hi), float(shift),
                     float(slope))


# Newton steps (one convergence study per branch each) of the threshold refinement.
_REFINE_STEPS = 3


def _tensor_curvature(crossing, alpha, h=0.05) -> float:
    """|Δ''| of a crossing function on the working tensor rule near α: the larger of the central second
    differences with steps h and 2h (their difference is the noise of the tensor rule's fixed points).
    It bounds the interpolation error of the last Newton step of `_refine_threshold`."""
    values = {k: crossing(alpha + k * h) for k in (-2, -1, 0, 1, 2)}
    second = [(values[k] - 2 * values[0] + values[-k]) / (k * h) ** 2 for k in (1, 2)]
    return float(max(abs(v) for v in second))


def _refine_threshold(kind: str, coarse: Threshold, tracker: "BranchTracker", params: ModelParameters,
                      baseline: LinearBaseline, state_rules, envelope_rules) -> tuple[Threshold, tuple]:
    """Root of the ACCURATELY computed crossing function, by Newton's method from the tensor-rule root.

    Crossing functions: Δ_c = Φ_sem − Φ_pos and Δ_l = ε_g,sem − ε_g^lin, each evaluated by
    `convergence_study` (split-line rules, with its error). Slopes: dΔ_c/dα = E[M]_pos − E[M]_sem
    exactly (dΦ/dα = −E[M] along a branch), taken from the studies; dΔ_l/dα from the secant of the
    accurate values once there are two, the working rule's bracket secant before. Each step is one
    study per branch, started from the previous study's state; it stops as soon as the linearisation
    error of the next Newton step is below the error of Δ (or after _REFINE_STEPS steps), and returns
    that Newton iterate α* = α_k − Δ_k/Δ'_k without evaluating it.

    Error (in α): [err(Δ_k) + ½|Δ''| (Δ_k/Δ')² + |Δ_k| s] / |Δ'|: the studies' quadrature errors, the
    linearisation over the last step (|Δ''| from the accurate slopes of two steps for α_c, else the
    larger of the working rule's second differences with steps 0.05 and 0.1), and for α_l the relative
    slope uncertainty s (secant against the working rule's local slope). The tensor rule enters only
    as the start and through |Δ''|.

    Why not one linear correction from the tensor root: at small ω the tensor rules misplace the
    positional branch (ω = 0, α = 0.6: m = 0.072 on 10 nodes against 0.152 converged, Φ too low by
    6.5e-6), so the tensor root can be far off (ω = 0.1: 0.701 on 8 nodes against 0.7515 converged) and
    its slope is not that of the accurate Δ_c.
    """
    if coarse.status != "converged":  # keep what the scan found (no_crossing / failed) and why
        return Threshold(math.nan, math.nan, coarse.status, f"not refined: {coarse.message}", coarse.bracket), ()
    branches = ("semantic", "positional") if kind == "alpha_c" else ("semantic",)
    if kind == "alpha_c":
        def crossing(a):
            return tracker.at("semantic", a).free_energy - tracker.at("positional", a).free_energy
    else:
        def crossing(a):
            return tracker.at("semantic", a).test_error - baseline.value
    alpha = coarse.value
    # working-rule curvature and local slope near the tensor root (cheap tensor solves)
    tensor_curvature = _tensor_curvature(crossing, alpha)
    h = 0.02
    tensor_local_slope = (crossing(alpha + h) - crossing(alpha - h)) / (2 * h)
    starts = {b: tracker.at(b, alpha) for b in branches}
    all_studies, points = [], []  # points: (α, Δ, error of Δ, slope)

    def linearisation(points):
        """(error of the last Newton step's linearisation in Δ units, |Δ''| used, its source, relative slope error)."""
        alpha_k, delta, _, slope = points[-1]
        if kind == "alpha_c" and len(points) >= 2:
            curvature, source = abs(points[-1][3] - points[-2][3]) / abs(points[-1][0] - points[-2][0]), "accurate slopes"
        else:
            curvature, source = tensor_curvature, "working-rule second difference"
        # α_c: exact slope (E[M] difference, to the studies' 1e-7); α_l: secant against the local slope
        slope_error = 0.0 if kind == "alpha_c" else abs(tensor_local_slope - slope) / abs(slope)
        step = delta / abs(slope)
        return 0.5 * curvature * step**2 + abs(step) * slope_error * abs(slope), curvature, source, slope_error

    for step_index in range(_REFINE_STEPS):
        studies = tuple(convergence_study(b, alpha, params, state_rules=state_rules, envelope_rules=envelope_rules,
                                          start=starts[b]) for b in branches)
        all_studies += studies
        if any(s.status != "converged" for s in studies):
            return Threshold(math.nan, math.nan, "failed", f"split-line study at α = {alpha:.5f} failed: " +
                             "; ".join(s.message for s in studies), coarse.bracket), tuple(all_studies)
        if kind == "alpha_c":
            delta = studies[0].free_energy - studies[1].free_energy
            delta_error = studies[0].free_energy_error + studies[1].free_energy_error
            slope = studies[1].envelope - studies[0].envelope
        else:
            delta = studies[0].test_error - baseline.value
            delta_error = studies[0].test_error_error + baseline.error
            slope = (delta - points[-1][1]) / (alpha - points[-1][0]) if points else coarse.slope
        points.append((alpha, delta, delta_error, slope))
        newton_step = -delta / slope
        # Stop once the linearisation over the Newton step is less uncertain than Δ itself.
        if linearisation(points)[0] <= delta_error:
            break
        starts = {b: replace(starts[b], alpha=alpha + newton_step, state=st.state) for b, st in zip(branches, studies)}
        alpha += newton_step
    alpha_k, delta, delta_error, slope = points[-1]
    newton_step = -delta / slope
    root = alpha_k + newton_step
    linear_error, curvature, curvature_source, _ = linearisation(points)
    error = (delta_error + linear_error) / abs(slope)
    path = ", ".join(f"{a:.5f}" for a, *_ in points)
    message = (f"Newton on split-line studies from the tensor root {coarse.value:.5f} through α = {path}: "
               f"crossing function {delta:.3g} ± {delta_error:.2g}, slope {slope:.3g}, last step {newton_step:+.2e}, "
               f"|Δ''| ≤ {curvature:.2g} ({curvature_source})")
    return (Threshold(float(root), float(error), "converged", message, coarse.bracket, float(delta), float(slope)),
            tuple(all_studies))


def threshold(omega, sigma=0.5, lam=0.01, A=None, L=2, *, nodes_per_dim=10, check_nodes_per_dim=14,
              alpha_min=0.5, alpha_max=3.0, n_scan=6, rtol=1e-4, refine=(), state_rules=STATE_RULES,
              envelope_rules=ENVELOPE_RULES) -> ThresholdResult:
    """α_c(ω) and α_l(ω) with error estimates.

    Both branches are followed over a scan of α (warm-started); the first sign change of
    Δ_c = Φ_semantic − Φ_positional (semantic becomes the global minimum) and of
    Δ_l = ε_g,semantic − ε_g^lin is refined by a bracketing root finder to `rtol`, and the crossing
    function is re-evaluated at the root on a finer rule (`check_nodes_per_dim`) to estimate the
    quadrature error of the threshold.

    refine: names among ("alpha_c", "alpha_l") to move to the root of the accurately computed crossing
    function (`_refine_threshold`, split-line convergence studies at the tensor-rule root; about two
    minutes per branch study on two cores); reported as `<name>_refined` with its error.
    """
    params = model_parameters(omega, sigma, lam, A, L)
    nodes_per_dim = check_int("nodes_per_dim", nodes_per_dim, 4, 40)
    check_nodes_per_dim = check_int("check_nodes_per_dim", check_nodes_per_dim, nodes_per_dim + 1, 48)
    alpha_min = check_positive("alpha_min", alpha_min)
    alpha_max = check_real("alpha_max", alpha_max, alpha_min, None, low_open=True)
    n_scan = check_int("n_scan", n_scan, 2, 200)
    rtol = check_real("rtol", rtol, 1e-12, 0.1)
    if not params.swap_symmetric:
        raise ParameterError("A", params.A, _SYMMETRIC_A)
    refine = tuple(check_choice("refine", name, ("alpha_c", "alpha_l")) for name in refine)
    baseline_result = linear_baseline_error(params.omega, params.sigma, params.L)
    baseline = baseline_result.value
    work = BranchTracker(params, nodes_per_dim)
    check = BranchTracker(params, check_nodes_per_dim, seed=work)

    # A solve that failed or slid onto another branch gives NaN (`_genuine`), never a crossing.
    def delta_c(tracker):
        return lambda a: (_genuine(tracker.at("semantic", a), "free_energy")
                          - _genuine(tracker.at("positional", a), "free_energy"))

    def delta_l(tracker):
        return lambda a: _genuine(tracker.at("semantic", a), "test_error") - baseline

    alphas = np.linspace(alpha_min, alpha_max, n_scan)
    dc = [delta_c(work)(a) for a in alphas]
    dl = [delta_l(work)(a) for a in alphas]
    def why(branches):
        """Which branch solve is missing at α, and why (for the diagnostics of an unsolved scan point)."""
        def explain(a):
            lost = [f"{b} {work.at(b, a).status}" + (" but collapsed" if work.at(b, a).status == "converged" else "")
                    for b in branches if not _distinct(work.at(b, a), ())]
            return ", ".join(lost)
        return explain

    alpha_c = _crossing(delta_c(work), alphas, dc, delta_c(check), rtol, MEANING_C, why(("semantic", "positional")))
    alpha_l = _crossing(delta_l(work), alphas, dl, delta_l(check), rtol, MEANING_L, why(("semantic",)))
    refined, studies = {}, ()
    for name, coarse in (("alpha_c", alpha_c), ("alpha_l", alpha_l)):
        if name in refine:
            refined[name], new = _refine_threshold(name, coarse, work, params, baseline_result, state_rules,
                                                   envelope_rules)
            studies += new
    return ThresholdResult(alpha_c, alpha_l, baseline, nodes_per_dim, check_nodes_per_dim, refined, studies)


# ==================================================================================================
# The α_c(ω), α_l(ω) curve by continuation in ω
# ==================================================================================================
@dataclass(frozen=True)
class CurveResult:
    """α_c(ω) and α_l(ω) along a list of ω (one Threshold each), the rules and the wall time."""

    omegas: tuple[float, ...]
    alpha_c: tuple[Threshold, ...]
    alpha_l: tuple[Threshold, ...]
    nodes_per_dim: int
    check_nodes_per_dim: int
    wall_time: float
    solves: int

    def as_dict(self) -> dict:
        return {"omega": list(self.omegas),
                "alpha_c": [t.value for t in self.alpha_c], "alpha_c_error": [t.error for t in self.alpha_c],
                "alpha_c_status": [t.status for t in self.alpha_c],
                "alpha_l": [t.value for t in self.alpha_l], "alpha_l_error": [t.error for t in self.alpha_l],
                "alpha_l_status": [t.status for t in self.alpha_l],
                "nodes_per_dim": self.nodes_per_dim, "check_nodes_per_dim": self.check_nodes_per_dim,
                "wall_time": self.wall_time, "solves": self.solves}


def _secant_threshold(f, guess, f_check, rtol, bounds, step=0.01, max_iter=12) -> Threshold:
    """Root of the crossing function f near `guess` (from continuation, so no bracket is needed).

    f is evaluated at guess ± step; the secant root is accepted as soon as it falls within one step of
    the two points it was computed from (f is smooth in α: at ω = 0.3 its curvature, 1.4e-3 against a
    slope of 8.3e-4, makes the interpolation error over such a bracket ~1e-4, below rtol α for
    rtol = 1e-3), otherwise the secant method continues from it. Error = |f_check − f| / |slope| at the
    evaluated point nearest the root (the quadrature shift, as in `_crossing`) + rtol α*. A step out
    of `bounds` (the scan range) fails: as α → 0 both branches tend to the trivial fixed point and
    Φ_sem − Φ_pos → 0, a spurious root the secant method would otherwise find.
    """
    a0, a1 = guess - step, guess + step
    f0, f1 = f(a0), f(a1)
    for _ in range(max_iter):
        if not (np.isfinite(f0) and np.isfinite(f1)) or f1 == f0:
            return Threshold(math.nan, math.nan, "failed", f"crossing function not finite or flat near α = {a1:.4g}", None)
        slope = (f1 - f0) / (a1 - a0)
        a2 = a1 - f1 / slope
        a2 = min(max(a2, a1 - 0.5), a1 + 0.5)  # a wild secant step means the guess was poor: move by ≤ 0.5
        if not bounds[0] <= a2 <= bounds[1]:
            return Threshold(math.nan, math.nan, "failed", f"secant left [{bounds[0]:g}, {bounds[1]:g}] at {a2:.4g}", None)
        if min(a0, a1) - step <= a2 <= max(a0, a1) + step:
            nearest, f_nearest = (a0, f0) if abs(a0 - a2) < abs(a1 - a2) else (a1, f1)
            shift = f_check(nearest) - f_nearest
            return Threshold(float(a2), float(abs(shift / slope) + rtol * abs(a2)), "converged",
                             f"secant from {guess:.4g}, slope {slope:.3g}, quadrature shift {shift:.2g} at {nearest:.4g}",
                             (min(a0, a1), max(a0, a1)), float(shift), float(slope))
        if abs(a0 - a2) < abs(a1 - a2):  # keep the point nearer to the new estimate
            a0, f0, a1, f1 = a1, f1, a0, f0
        a0, f0, a1, f1 = a1, f1, a2, f(a2)
    return Threshold(math.nan, math.nan, "max_iter", f"secant did not converge from {guess:.4g}", None)


def _genuine(solution: BranchSolution, quantity: str) -> float:
    """solution.<quantity> if the solution converged on its own branch, else NaN: a warm start that
    slid onto another branch (e.g. the semantic solve collapsing to the trivial fixed point, where
    Φ_sem − Φ_pos can vanish) must never pass for a crossing."""
    return float(getattr(solution, quantity)) if _distinct(solution, ()) else math.nan


def _scan_guess(f, alphas):
    """Linear interpolation of the first sign change of f on the scan (None without one)."""
    values = [f(a) for a in alphas]
    for a0, a1, f0, f1 in zip(alphas[:-1], alphas[1:], values[:-1], values[1:]):
        if np.isfinite(f0) and np.isfinite(f1) and np.sign(f0) != np.sign(f1):
            return float(a0 - f0 * (a1 - a0) / (f1 - f0))
    return None


def alpha_c_curve(omegas, sigma=0.5, lam=0.01, A=None, L=2, *, nodes_per_dim=6, check_nodes_per_dim=8,
                  alpha_min=0.4, alpha_max=3.0, n_scan=6, rtol=1e-3) -> CurveResult:
    """α_c(ω) and α_l(ω) for every ω in `omegas` (sorted ascending), by continuation in ω.

    The first ω is bracketed on a scan of [alpha_min, alpha_max] (n_scan points); every later ω starts
    the secant method (`_secant_threshold`) from the previous thresholds extrapolated linearly in ω,
    and every branch solve is warm-started from the previous ω's solutions (BranchTracker seeds, linear
    extrapolation in α). Errors: the shift of the crossing function on the check rule at the root, over
    the slope (as in `threshold`), plus rtol·α.
    """
    import time

    omegas = sorted(check_real_list("omegas", omegas, None, 0.0, 1.0))
    if not omegas:
        raise ParameterError("omegas", omegas, "at least one ω in [0, 1]")
    nodes_per_dim = check_int("nodes_per_dim", nodes_per_dim, 4, 40)
    check_nodes_per_dim = check_int("check_nodes_per_dim", check_nodes_per_dim, nodes_per_dim + 1, 48)
    started = time.perf_counter()
    alpha_c, alpha_l, previous, solves = [], [], None, 0
    alpha_min = check_positive("alpha_min", alpha_min)
    alpha_max = check_real("alpha_max", alpha_max, alpha_min, None, low_open=True)
    n_scan = check_int("n_scan", n_scan, 2, 200)
    rtol = check_real("rtol", rtol, 1e-12, 0.1)
    for k, omega in enumerate(omegas):
        params = model_parameters(omega, sigma, lam, A, L)
        work = BranchTracker(params, nodes_per_dim, seed=previous)
        check = BranchTracker(params, check_nodes_per_dim, seed=work)
        baseline = linear_baseline_error(omega, sigma, L).value

        def predict(history):
            good = [(w, t.value) for w, t in zip(omegas[:k], history) if t.status == "converged"]
            if not good:
                return None
            if len(good) == 1:
                return good[-1][1]
            (w0, a0), (w1, a1) = good[-2], good[-1]
            return a1 + (a1 - a0) * (omega - w1) / (w1 - w0)

        def delta_c(tracker):
            return lambda a: (_genuine(tracker.at("semantic", a), "free_energy")
                              - _genuine(tracker.at("positional", a), "free_energy"))

        def delta_l(tracker):
            return lambda a: _genuine(tracker.at("semantic", a), "test_error") - baseline

        results = []
        for history, f in ((alpha_c, delta_c), (alpha_l, delta_l)):
            guess = predict(history)
            if guess is not None and not (alpha_min <= guess <= alpha_max):
                guess = None  # the extrapolation left the scan range: bracket afresh
            if guess is None:  # first ω (or no converged one yet): bracket on a scan, guess by interpolation
                guess = _scan_guess(f(work), np.linspace(alpha_min, alpha_max, n_scan))
            if guess is None:
                results.append(Threshold(math.nan, math.nan, "no_crossing",
                                         f"no sign change on [{alpha_min:g}, {alpha_max:g}]", None))
                continue
            results.append(_secant_threshold(f(work), guess, f(check), rtol, (alpha_min, alpha_max)))
        alpha_c.append(results[0])
        alpha_l.append(results[1])
        solves += sum(len(v) for v in work.solved.values()) + sum(len(v) for v in check.solved.values())
        previous = work
    return CurveResult(tuple(omegas), tuple(alpha_c), tuple(alpha_l), nodes_per_dim, check_nodes_per_dim,
                       time.perf_counter() - started, solves)


# ==================================================================================================
# The α_c(ω) curve on split-line rules (accurate, with honest errors)
# ==================================================================================================
# Rules of `alpha_c_curve_split_line`. The states (and the Newton iteration in α) are solved on the cheap
# CURVE_STATE_RULE; Φ is then evaluated at those states on the two CURVE_ENVELOPE_RULES (the finer one is
# reported, the difference is its error). Measured at ω = 0.3, α = 1.25 (8-node tensor state): panel
# tolerance 1e-8 instead of 1e-10 moves E[M] by < 6e-9; the outer rule is what matters (E[M] on outer
# 6/8/10/12: 2.25949, 2.25796, 2.25706, 2.25700 e-3 positional, 1.42675, 1.42587, 1.42554, 1.42540 e-3
# semantic). 32 probes, not 16: at ω = 0.26, α = 1.114 16 probes miss a basin switch, the semantic map
# jumps there and has no fixed point (residual stuck at 5e-4); 24 and 32 probes converge, at ~15% more
# cost per evaluation. The envelope rules need no fixed point and keep 16 probes (E[M] within 6e-9 of
# 32 probes at ω = 0.3).
CURVE_STATE_RULE = SplitLineRule(6, 32, 1e-8)
CURVE_ENVELOPE_RULES = (SplitLineRule(8, 16, 1e-8), SplitLineRule(10, 16, 1e-8))
_CURVE_NEWTON_STEPS = 3
# Relative residual of the state-rule fixed points: the state enters Φ at second order (and the state
# term of `_accurate_free_energy` accounts for what is left), E[M] (the slope) at first order, where a
# relative 1e-4 moves α_c by ~1e-4 × the last Newton step, far below the quadrature error.
_CURVE_STATE_TOL = 1e-4


@dataclass(frozen=True)
class SplitLineCurve:
    """α_c(ω) from split-line free energies, with per-ω diagnostics (`alpha_c_curve_split_line`).

    alpha_c: one Threshold per ω (ascending ω); rows: per ω a dict with the Newton points on the state
    rule, Φ of both branches on the envelope rules, the error terms and the evaluation count;
    wall_time in seconds; evaluations: split-line map evaluations in all.
    """

    omegas: tuple[float, ...]
    alpha_c: tuple[Threshold, ...]
    rows: tuple[dict, ...]
    state_rule: str
    envelope_rules: tuple[str, ...]
    wall_time: float
    evaluations: int

    def as_dict(self) -> dict:
        return {"omega": list(self.omegas), "alpha_c": [t.value for t in self.alpha_c],
                "alpha_c_error": [t.error for t in self.alpha_c], "alpha_c_status": [t.status for t in self.alpha_c],
                "alpha_c_message": [t.message for t in self.alpha_c], "state_rule": self.state_rule,
                "envelope_rules": list(self.envelope_rules), "wall_time": self.wall_time,
                "evaluations": self.evaluations, "rows": [dict(r) for r in self.rows]}


def _accurate_free_energy(solution: BranchSolution, inverse, params: ModelParameters, rules) -> dict:
    """Φ of a state-rule fixed point on the envelope rules, with an error that includes the state's own.

    Φ is stationary at the fixed point, so evaluating it on a finer rule at the state-rule fixed point x
    errs only at second order in the distance δ to the finer rule's fixed point. That term is estimated,
    δ ≈ −(J − I)⁻¹ (F_fine(x) − x) (the state rule's Broyden inverse, reduced coordinates) and
    Φ(x + δ) − Φ(x) ≈ ½ ∇Φ(x)·δ (`free_energy_gradient`, from the same evaluation), and counted as an
    error, not added: it is an estimate of the right size but not of the right sign (outer 3 → 6 at
    ω = 0.3, α = 1.25, semantic: estimated +7.1e-6, actual −2.9e-6; tested). Error: the difference
    between the two envelope rules (the coarser rule's error bounds the finer one's for an outer rule
    that converges, as measured: outer 8 → 10 moves Φ by 7e-7, 10 → 12, 14 by ≤ 2.5e-7 at ω = 0,
    α = 0.6) plus the size of the second-order term.
    """
    coords = BranchCoordinates(solution.branch, params)
    x, y = solution.state, coords.from_state(solution.state)
    values, envelopes = [], []
    for rule in rules:
        equations = SaddlePointEquations(params, solution.alpha, TEST_ERROR_NODES, split_rule=rule)
        evaluation = equations.evaluate(x)
        values.append(equations.free_energy_of_state(x, evaluation["envelope"]))
        envelopes.append(evaluation["envelope"])
    move = -inverse @ (coords.from_state(evaluation["next"]) - y)
    delta = coords.to_state(y + move) - x
    state_term = 0.5 * float(equations.free_energy_gradient(x, evaluation) @ delta)
    return {"free_energy": values[-1], "error": abs(values[-1] - values[-2]) + abs(state_term),
            "envelope": envelopes[-1], "rule_values": values, "state_term": state_term}


# A state-rule solve that stalls (Broyden's max_iter) with a relative residual below this is accepted on
# the curve: at small ω the semantic map on outer rule 6 has small jumps near its fixed point (seen at
# ω = 0.04-0.06, α ≈ 0.67-0.70: residual stuck at 2-4e-3 from every start, with 32, 48 or 64 probes), so no
# exact fixed point exists on that rule. Φ is stationary, so such a state moves Φ only at second order;
# that term, ½ ∇Φ·δ with δ = −(J − I)⁻¹(F(x) − x), is computed and counted as an error.
_CURVE_STATE_ACCEPT = 1e-2
_CURVE_MAX_ITER = 10


def _order_parameter(solution: BranchSolution) -> float:
    return abs(solution.m) if solution.branch == "positional" else abs(solution.theta)


def _curve_branch_state(start: BranchSolution, inverse, fallback: BranchSolution | None, params: ModelParameters,
                        rule: SplitLineRule):
    """A branch's fixed point on the curve's state rule: (solution, inverse Jacobian of F − I, evaluations,
    second-order Φ error of an accepted unconverged state).

    Tried in order until one converges or stalls below _CURVE_STATE_ACCEPT, on the same branch (order
    parameter within a factor 3 of the start's: a continuation step moves it by a few percent, the
    first ω's tensor start at small ω is low by a factor ~2, while a solve sliding towards the invariant
    set m = 0 or θ = 0, which can also stall or converge, is not the branch): (1) Broyden from `start`
    (extrapolated along the curve) with the carried inverse Jacobian, a few evaluations; (2) Broyden from
    `start` with a fresh finite-difference Jacobian (a carried inverse can be spoiled by Broyden
    updates); (3) `refine_branch`'s Anderson + Broyden with the retry, from `fallback` (the previous ω's
    converged state), or from `start` when there is none.
    """
    used, accepted = 0, None
    attempts = ([(start, inverse, False)] if inverse is not None else []) + [(start, None, False),
                                                                             (fallback or start, None, True)]
    for first, carried, anderson in attempts:
        if anderson:
            solution, new_inverse = _defect_correction_with_retry(first, params, rule, _CURVE_STATE_TOL, _CURVE_MAX_ITER)
        else:
            solution, new_inverse = _defect_correction(first, params, rule, _CURVE_STATE_TOL, _CURVE_MAX_ITER,
                                                       None if carried is None else carried.copy(), anderson=False)
        used += solution.evaluations
        ratio = _order_parameter(solution) / max(_order_parameter(start), 1e-300)
        same_branch = 1 / 3 <= ratio <= 3
        if same_branch and (solution.status == "converged" or (solution.status == "max_iter"
                                                               and solution.residual <= _CURVE_STATE_ACCEPT)):
            accepted = solution
            break
    if accepted is None:
        return solution, None, used, math.nan
    coords = BranchCoordinates(start.branch, params)
    y = coords.from_state(accepted.state)
    equations = SaddlePointEquations(params, start.alpha, TEST_ERROR_NODES, split_rule=rule)
    F = coords.restricted_map(equations)
    if new_inverse is None:  # converged by Anderson alone: the Jacobian is needed for the next ω
        new_inverse = np.linalg.inv(_accurate_jacobian(F, y, F(y)) - np.eye(len(y)))
        used += len(y)
    state_term = 0.0
    if accepted.status != "converged":  # stalled at the rule's jump floor: Φ, E[M] and the state term there
        evaluation = equations.evaluate(accepted.state)
        used += 1
        phi = equations.free_energy(accepted.state, evaluation)
        delta = coords.to_state(y - new_inverse @ (coords.from_state(evaluation["next"]) - y)) - accepted.state
        state_term = 0.5 * float(equations.free_energy_gradient(accepted.state, evaluation) @ delta)
        accepted = replace(accepted, free_energy=phi, train_loss=-phi, envelope=evaluation["envelope"],
                           message=f"{accepted.message}; accepted unconverged (Φ state term {state_term:.2g})")
    return accepted, new_inverse, used, state_term


def alpha_c_curve_split_line(omegas, sigma=0.5, lam=0.01, A=None, L=2, *, state_rule=CURVE_STATE_RULE,
                             envelope_rules=CURVE_ENVELOPE_RULES, nodes_per_dim=6, alpha_min=0.4, alpha_max=3.0,
                             n_scan=6, step_tol=0.015, envelope_every=3) -> SplitLineCurve:
    """α_c(ω) at every ω in `omegas` from split-line free energies, with errors that cover the converged values.

    Continuation from the LARGEST ω downwards (where the tensor rules place both branches correctly; at
    small ω the tensor positional state has half the converged m and falls onto m = 0):
    1. first ω: the crossing of the `nodes_per_dim` tensor rule on a scan of [alpha_min, alpha_max]
       (n_scan points, linear interpolation) and the tensor solutions there, carried to the split-line
       `state_rule` (`_curve_branch_state`);
    2. every ω: both branches on the state rule at the predicted α (the state-rule roots of the last
       three ω extrapolated in ω; states the same way, Broyden from the previous ω's inverse Jacobian),
       then Newton's method on Δ_c = Φ_sem − Φ_pos with the exact slope dΔ_c/dα = E[M]_pos − E[M]_sem
       (≤ _CURVE_NEWTON_STEPS solves, until the step is below step_tol);
    3. at the first ω, every `envelope_every`-th ω after it and the last: Φ and E[M] of both branches
       on `envelope_rules` at the state-rule fixed points (`_accurate_free_energy`, variational: the
       state enters at second order); their correction c to Δ_c (and to the slope) is interpolated
       linearly in ω in between (`_corrected_threshold`), and α_c = α_k − (Δ_k + c)/(Δ'_k + c').
    Error: [err Φ_sem + err Φ_pos + ½|Δ''| step²] / |Δ_c'| (Φ errors: envelope-rule difference and the
    second-order state terms; at interpolated ω the larger neighbour's plus half their difference);
    |Δ''| from the slopes of two Newton points at one ω, carried on (the tensor rule's at the first ω).
    Each ω's status is "converged" or "failed" (a branch solve failed or left its branch; the message
    says which), never a guess. Measured: 22 ω in [0, 0.45] in 85-116 s on the shared 2-core machine
    (load 2-5), the error bars (0.001-0.007) covering the five refined thresholds of the docs.
    """
    import time

    omegas = sorted(check_real_list("omegas", omegas, None, 0.0, 1.0), reverse=True)
    if not omegas or len(set(omegas)) != len(omegas):
        raise ParameterError("omegas", omegas, "at least one ω in [0, 1], no repeats")
    if len(envelope_rules) < 2:
        raise ParameterError("envelope_rules", envelope_rules, "two split-line rules (coarse, fine)")
    nodes_per_dim = check_int("nodes_per_dim", nodes_per_dim, 4, 40)
    alpha_min = check_positive("alpha_min", alpha_min)
    alpha_max = check_real("alpha_max", alpha_max, alpha_min, None, low_open=True)
    n_scan = check_int("n_scan", n_scan, 2, 200)
    step_tol = check_real("step_tol", step_tol, 0.0, 1.0, low_open=True)
    envelope_every = check_int("envelope_every", envelope_every, 1, 1000)
    branches = ("semantic", "positional")
    started = time.perf_counter()
    history = []  # (ω, state-rule root, {branch: (solution at α_k, inverse Jacobian)}) per converged ω
    results, rows, evaluations, curvature = {}, {}, 0, math.nan
    for omega in omegas:
        params = model_parameters(omega, sigma, lam, A, L)
        if not params.swap_symmetric:
            raise ParameterError("A", params.A, _SYMMETRIC_A)
        row = {"omega": omega, "newton": []}
        omega_started, evaluations_before = time.perf_counter(), evaluations
        if not history:
            tracker = BranchTracker(params, nodes_per_dim)

            def crossing(a):
                return (_genuine(tracker.at("semantic", a), "free_energy")
                        - _genuine(tracker.at("positional", a), "free_energy"))

            alpha = _scan_guess(crossing, np.linspace(alpha_min, alpha_max, n_scan))
            if alpha is None:
                results[omega] = Threshold(math.nan, math.nan, "failed",
                                           f"no tensor-rule crossing on [{alpha_min:g}, {alpha_max:g}] to start from", None)
                rows[omega] = row
                continue
            starts = {b: (tracker.at(b, alpha), None) for b in branches}
        else:
            # Lagrange extrapolation in ω through the last (up to) three converged ω: α_c(ω) is strongly
            # curved (1.63, 1.79, 1.98, 2.20 at ω = 0.379 ... 0.45), a linear prediction misses by ~0.04
            recent = history[-3:]
            weights = [math.prod((omega - wj) / (wi - wj) for j, (wj, *_) in enumerate(recent) if j != i)
                       for i, (wi, *_) in enumerate(recent)]
            alpha = sum(c * a for c, (_, a, _) in zip(weights, recent))
            guesses = {b: sum(c * s[b][0].state for c, (_, _, s) in zip(weights, recent)) for b in branches}
            starts = {b: (replace(history[-1][2][b][0], alpha=alpha, state=guesses[b]), history[-1][2][b][1])
                      for b in branches}
        failure, solved, state_terms = None, {}, {}
        for step_index in range(_CURVE_NEWTON_STEPS):
            for b in branches:
                start, inverse = starts[b]
                fallback = replace(history[-1][2][b][0], alpha=alpha) if history else None
                solution, new_inverse, used, state_term = _curve_branch_state(replace(start, alpha=alpha), inverse,
                                                                              fallback, params, state_rule)
                evaluations += used
                if not np.isfinite(state_term):
                    failure = f"{b} branch at α = {alpha:.5f} on {state_rule.label()}: {solution.status} ({solution.message[:80]})"
                    break
                solved[b] = (solution, new_inverse)
                state_terms[b] = state_term
            if failure:
                break
            delta = solved["semantic"][0].free_energy - solved["positional"][0].free_energy
            slope = solved["positional"][0].envelope - solved["semantic"][0].envelope
            row["newton"].append({"alpha": alpha, "delta": delta, "slope": slope})
            if len(row["newton"]) >= 2:
                (p0, p1) = row["newton"][-2:]
                curvature = abs(p1["slope"] - p0["slope"]) / abs(p1["alpha"] - p0["alpha"])
            step = -delta / slope
            if abs(step) <= step_tol or step_index == _CURVE_NEWTON_STEPS - 1:
                break
            alpha += step
            starts = solved
        if failure:
            results[omega] = Threshold(math.nan, math.nan, "failed", failure, None)
            rows[omega] = row
            continue
        if not np.isfinite(curvature):  # first ω with a single Newton point: the tensor rule's curvature
            curvature = _tensor_curvature(lambda a: (_genuine(tracker.at("semantic", a), "free_energy")
                                                     - _genuine(tracker.at("positional", a), "free_energy")), alpha)
        last = row["newton"][-1]
        row.update({"alpha_k": last["alpha"], "delta_state_rule": last["delta"], "slope_state_rule": last["slope"],
                    "alpha_state_rule": last["alpha"] - last["delta"] / last["slope"], "curvature": curvature,
                    "positional_m": abs(solved["positional"][0].m), "semantic_theta": abs(solved["semantic"][0].theta),
                    "state_rule_term": abs(state_terms["semantic"]) + abs(state_terms["positional"]),
                    "state_rule_residual": max(solved[b][0].residual for b in branches)})
        if len(history) % envelope_every == 0 or omega == omegas[-1]:
            accurate = {b: _accurate_free_energy(solved[b][0], solved[b][1], params, envelope_rules) for b in branches}
            # the envelope rules' correction to the state rule's Δ_c and slope at α_k, and its error
            row.update({"correction": accurate["semantic"]["free_energy"] - accurate["positional"]["free_energy"]
                        - last["delta"],
                        "slope_correction": accurate["positional"]["envelope"] - accurate["semantic"]["envelope"]
                        - last["slope"],
                        "correction_error": accurate["semantic"]["error"] + accurate["positional"]["error"],
                        **{f"{b}_{k}": accurate[b][k] for b in branches for k in ("free_energy", "error", "state_term")}})
        row.update({"seconds": time.perf_counter() - omega_started, "evaluations": evaluations - evaluations_before})
        rows[omega] = row
        # the state-rule root predicts the next α (α_k lags it by up to step_tol, which a quadratic
        # extrapolation would amplify); the states, solved at α_k, only start the next solves
        history.append((omega, row["alpha_state_rule"], solved))
    for omega, row in rows.items():
        if omega not in results:
            results[omega] = _corrected_threshold(omega, row, rows, state_rule, envelope_rules)
    ascending = sorted(omegas)
    return SplitLineCurve(tuple(ascending), tuple(results[w] for w in ascending), tuple(rows[w] for w in ascending),
                          state_rule.label(), tuple(r.label() for r in envelope_rules), time.perf_counter() - started,
                          evaluations)


def _corrected_threshold(omega, row, rows, state_rule, envelope_rules) -> Threshold:
    """α_c at one ω of `alpha_c_curve_split_line` from its Newton point and the envelope-rule correction.

    Where the envelope rules were evaluated the correction is this ω's own; elsewhere it is interpolated
    linearly in ω between the nearest evaluated ω on either side, and its error is the larger of theirs
    plus half their difference (the correction is not assumed smooth beyond that). Then
    α_c = α_k − (Δ_k + c)/(Δ'_k + c'), error [err(c) + ½|Δ''|(step)²] / |Δ'|.
    """
    if "correction" in row:
        correction, slope_correction, error = row["correction"], row["slope_correction"], row["correction_error"]
        source = f"Φ on {envelope_rules[-1].label()} (check {envelope_rules[-2].label()})"
    else:
        evaluated = sorted(w for w, r in rows.items() if "correction" in r)
        below, above = [w for w in evaluated if w < omega], [w for w in evaluated if w > omega]
        if not below or not above:
            return Threshold(math.nan, math.nan, "failed", "no envelope-rule correction on both sides of this ω", None)
        a, b = rows[below[-1]], rows[above[0]]
        t = (omega - below[-1]) / (above[0] - below[-1])
        correction = (1 - t) * a["correction"] + t * b["correction"]
        slope_correction = (1 - t) * a["slope_correction"] + t * b["slope_correction"]
        error = max(a["correction_error"], b["correction_error"]) + 0.5 * abs(a["correction"] - b["correction"])
        source = f"correction interpolated between ω = {below[-1]:.4g} and {above[0]:.4g}"
    if "correction" not in row:  # Δ_k of an unconverged state-rule solve errs by its state terms
        error += row["state_rule_term"]
    delta = row["delta_state_rule"] + correction
    slope = row["slope_state_rule"] + slope_correction
    step = -delta / slope
    linear = 0.5 * row["curvature"] * step**2
    value, total = row["alpha_k"] + step, (error + linear) / abs(slope)
    row.update({"alpha_c": value, "alpha_c_error": total, "delta": delta, "slope": slope, "linearisation_error": linear,
                "quadrature_error": error})
    return Threshold(float(value), float(total), "converged",
                     f"Newton on split-line Φ: state rule {state_rule.label()} through α = "
                     + ", ".join(f"{p['alpha']:.5f}" for p in row["newton"])
                     + f"; {source}: Δ_c = {delta:.3g} ± {error:.2g}, slope {slope:.3g}, |Δ''| ≤ {row['curvature']:.2g}",
                     None, float(delta), float(slope))


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


# ==================================================================================================
# Spinodals: where a branch ceases to exist or becomes unstable
# ==================================================================================================
# The side on which each branch is lost, found by continuation at ω = 0.3 (6-node rule): the semantic
# branch becomes unstable as α DECREASES (towards m ≠ 0 / a saddle direction at α ≈ 0.94, then folds
# near 0.9); the positional branch continues stably towards LARGE α (still stable at α = 3.65) and
# tends continuously to the trivial fixed point (m → 0) only as α → 0.
SPINODAL_DIRECTIONS = {"semantic": -1, "positional": +1}
# A continuation step that moves any reduced coordinate by more than this fraction of its size
# (|c|, |m| measured against 0.1) from the linear prediction is a jump onto another fixed point, not
# the branch: at ω = 0.3 the semantic branch's loss moved c from 0.72 to 0.57 and V by 14% in one
# 0.02 step, while genuine steps of 0.1 move the prediction error by < 1%.
_JUMP_FRACTION = 0.1
_COLLAPSE_LEVEL = 1e-6  # |θ| (semantic) or |m| (positional) below this: collapsed onto the trivial set
# Loss criteria by what they mean: the first three all say the branch ceased to exist (a fold is seen
# as a failed solve on one rule and as a jump onto another fixed point on the next), the last that it
# exists but is a saddle. A check rule must see the same kind of loss as the working rule.
_LOSS_KIND = {"not_converged": "ceases_to_exist", "collapsed": "ceases_to_exist", "jumped": "ceases_to_exist",
              "unstable": "unstable"}


@dataclass(frozen=True)
class Spinodal:
    """The spinodal α_s of one branch at one ω.

    value: α_s on the working rule (midpoint of the final bisection bracket); error: half the bracket
    width + |α_s(check rule) − α_s(working rule)|; bracket: (last α where the branch was alive, first α
    where it was lost) on the working rule; criterion: what fired at the lost end — "not_converged",
    "collapsed" (semantic |θ| or positional |m| < 1e-6), "jumped" (the solve left the continued branch
    for another fixed point), or "unstable" (an eigenvalue of the full map's Jacobian with real part
    ≥ 1); check_value: α_s on the check rule. status: "converged" | "not_found_in_range" (alive over
    the whole range; value NaN, bracket = the range) | "failed" (e.g. no start on the branch).
    """

    branch: str
    value: float
    error: float
    status: str
    message: str
    bracket: tuple[float, float] | None
    criterion: str | None
    nodes_per_dim: int
    check_nodes_per_dim: int
    check_value: float = math.nan

    def as_dict(self) -> dict:
        return {"value": self.value, "error": self.error, "status": self.status, "message": self.message,
                "bracket": None if self.bracket is None else list(self.bracket), "criterion": self.criterion,
                "check_value": self.check_value}


@dataclass(frozen=True)
class SpinodalResult:
    """Spinodals of the positional and semantic branches at one ω (see `spinodals`)."""

    omega: float
    positional: Spinodal
    semantic: Spinodal
    alpha_range: tuple[float, float]
    nodes_per_dim: int
    check_nodes_per_dim: int

    def as_dict(self) -> dict:
        out = {"omega": self.omega, "alpha_range": list(self.alpha_range), "nodes_per_dim": self.nodes_per_dim,
               "check_nodes_per_dim": self.check_nodes_per_dim}
        for s in (self.positional, self.semantic):
            out.update({f"spinodal_{s.branch}": s.value, f"spinodal_{s.branch}_error": s.error,
                        f"spinodal_{s.branch}_status": s.status, f"spinodal_{s.branch}_criterion": s.criterion,
                        f"spinodal_{s.branch}_bracket": None if s.bracket is None else list(s.bracket),
                        f"spinodal_{s.branch}_message": s.message})
        return out


def branch_loss(solution: BranchSolution, prediction, coords: BranchCoordinates) -> str | None:
    """Why `solution` is no longer the continued branch (None if it still is).

    Checked in order: not converged; collapsed onto the trivial set; jumped (some reduced coordinate
    differs from the continuation's `prediction` by more than _JUMP_FRACTION of its size; skipped
    without a prediction); unstable (`solution.stable` False: an eigenvalue of dF with real part ≥ 1).
    """
    if solution.status != "converged":
        return "not_converged"
    order = abs(solution.theta) if solution.branch == "semantic" else abs(solution.m)
    if order < _COLLAPSE_LEVEL:
        return "collapsed"
    if prediction is not None:
        y = coords.from_state(solution.state)
        size = np.abs(prediction)
        if coords.has_c or coords.has_m:
            size[2:] = np.maximum(size[2:], 0.1)
        if np.any(np.abs(y - prediction) > _JUMP_FRACTION * size):
            return "jumped"
    if not solution.stable:
        return "unstable"
    return None


def _follow_to_loss(branch: str, params: ModelParameters, nodes_per_dim: int, start: float, stop: float,
                    step: float, tol: float, start_guess=None) -> tuple[Spinodal, np.ndarray | None]:
    """Continue `branch` from α = start towards α = stop in steps of `step`, then bisect the first loss.

    Each solve is warm-started from the linear extrapolation of the two nearest alive solutions (the
    prediction that `branch_loss` checks for jumps). Bisection keeps the bracket (alive, lost) and
    halves it until its width is ≤ tol; every new point is started from the alive end's extrapolation.
    Returns the Spinodal (check fields unset) and the reduced state at the alive end (a warm start for
    a check rule).
    """
    coords = BranchCoordinates(branch, params)
    direction = 1.0 if stop > start else -1.0
    alive: list[tuple[float, np.ndarray]] = []  # (α, reduced state), in the order reached

    def predict(alpha):
        if not alive:
            return None if start_guess is None else np.asarray(start_guess, float)
        if len(alive) == 1:
            return alive[-1][1]
        (a0, y0), (a1, y1) = alive[-2], alive[-1]
        guess = y1 + (y1 - y0) * (alpha - a1) / (a1 - a0)
        if not (guess[0] > 0 and guess[1] > 0 and (not coords.has_c or abs(guess[2]) < 1)):
            return y1
        return guess

    def attempt(alpha):
        prediction = predict(alpha)
        solution = solve_branch(branch, alpha, params, nodes_per_dim=nodes_per_dim, guess=prediction,
                                stability=True)
        # a jump is judged against a linear extrapolation only: from a single point the branch's own
        # slope is unknown
        return solution, branch_loss(solution, prediction if len(alive) >= 2 else None, coords)

    solution, reason = attempt(start)
    if reason is not None:
        return Spinodal(branch, math.nan, math.nan, "failed", f"no {branch} solution at the start α = {start:g}: "
                        f"{reason} ({solution.message[:80]})", None, reason, nodes_per_dim, 0), None
    alive.append((start, coords.from_state(solution.state)))
    alpha, lost = start, None
    while lost is None and direction * (stop - alpha) > 1e-12:
        alpha = start + direction * min(abs(stop - start), abs(alpha - start) + step)
        solution, reason = attempt(alpha)
        if reason is None:
            alive.append((alpha, coords.from_state(solution.state)))
        else:
            lost = (alpha, reason)
    if lost is None:
        return Spinodal(branch, math.nan, math.nan, "not_found_in_range",
                        f"{branch} branch alive (converged, distinct, stable) over α in [{min(start, stop):g}, "
                        f"{max(start, stop):g}] in steps of {step:g}", (min(start, stop), max(start, stop)), None,
                        nodes_per_dim, 0), alive[-1][1]
    lost_alpha, criterion = lost
    while abs(lost_alpha - alive[-1][0]) > tol:
        middle = 0.5 * (lost_alpha + alive[-1][0])
        solution, reason = attempt(middle)
        if reason is None:
            alive.append((middle, coords.from_state(solution.state)))
        else:
            lost_alpha, criterion = middle, reason
    last_alive = alive[-1][0]
    value = 0.5 * (last_alive + lost_alpha)
    return Spinodal(branch, value, abs(lost_alpha - last_alive) / 2, "converged",
                    f"alive at α = {last_alive:.5g}, lost at {lost_alpha:.5g} ({criterion})", (last_alive, lost_alpha),
                    criterion, nodes_per_dim, 0), alive[-1][1]


def spinodals(omega, sigma=0.5, lam=0.01, A=None, L=2, *, alpha_range=(0.5, 3.0), nodes_per_dim=10,
              check_nodes_per_dim=12, step=0.1, tol=1e-3, branches=("positional", "semantic")) -> SpinodalResult:
    """Spinodals of the positional (θ = 0) and semantic (m = 0) branches at ω, with error estimates.

    A branch is followed by warm-started continuation in α (solve_branch, frozen basins, full-map
    stability) towards the side where it is lost (SPINODAL_DIRECTIONS: the semantic branch from
    alpha_range[1] downwards, the positional one from alpha_range[0] upwards). It counts as lost at
    the first α where the solve does not converge, collapses onto the trivial set, jumps to another
    fixed point, or is unstable (an eigenvalue of the Jacobian of the full map x -> F(x), transverse
    directions included, with real part ≥ 1); the loss is bisected to `tol`.

    Error estimate: half the final bracket + |α_s(check rule) − α_s(working rule)|, the check rule
    (`check_nodes_per_dim`) re-bracketing from two steps on the alive side of the working spinodal
    (warm-started from the working rule's last alive state). A loss the check rule does not see, or
    sees as another kind (ceases to exist / unstable), is status "failed" ("not quadrature-robust").
    Branches not in `branches` get status "failed" with the message "not requested".

    Rules: the defaults (10 nodes, 12-node check) are the coarsest that resolve the semantic branch:
    at ω = 0.3 the 6- and 8-node rules lose it at α ≈ 0.94 and 0.84-0.88 (basin-switch artefacts),
    while on 10 and 12 nodes it continues, stable, down to α ≈ 0.6. The positional instability at
    ω = 0 is seen on every rule (α_s = 0.775, 0.868, 0.861, 0.826 on 6, 8, 10, 12 nodes), so a 6/8
    pair suffices there. Cost: about two seconds per solve on 10 nodes, 20-40 solves per branch.
    """
    params = model_parameters(omega, sigma, lam, A, L)
    lo, hi = check_real_list("alpha_range", alpha_range, 2, 0.0, None)
    if not 0 < lo < hi:
        raise ParameterError("alpha_range", alpha_range, "two values 0 < low < high")
    nodes_per_dim = check_int("nodes_per_dim", nodes_per_dim, 4, 40)
    check_nodes_per_dim = check_int("check_nodes_per_dim", check_nodes_per_dim, nodes_per_dim + 1, 48)
    step = check_real("step", step, 0.0, hi - lo, low_open=True)
    tol = check_real("tol", tol, 1e-6, step)
    branches = tuple(check_choice("branch", b, ("positional", "semantic")) for b in branches)
    if "semantic" in branches and not params.swap_symmetric:
        raise ParameterError("A", params.A, _SYMMETRIC_A)
    found = {}
    for branch in ("positional", "semantic"):
        if branch not in branches:
            found[branch] = Spinodal(branch, math.nan, math.nan, "failed", "not requested", None, None,
                                     nodes_per_dim, check_nodes_per_dim)
            continue
        direction = SPINODAL_DIRECTIONS[branch]
        start, stop = (lo, hi) if direction > 0 else (hi, lo)
        work, alive_state = _follow_to_loss(branch, params, nodes_per_dim, start, stop, step, tol)
        if work.status != "converged":
            found[branch] = replace(work, check_nodes_per_dim=check_nodes_per_dim)
            continue
        check_start = work.bracket[0] - direction * 2 * step
        if direction * (check_start - start) < 0:
            check_start = start
        check, _ = _follow_to_loss(branch, params, check_nodes_per_dim, check_start, stop, step, tol,
                                   start_guess=alive_state)
        if check.status != "converged" or _LOSS_KIND[check.criterion] != _LOSS_KIND[work.criterion]:
            # The finer rule does not see the same kind of loss: on coarse tensor rules a node switching basin
            # moves the fixed point discontinuously, which passes for a fold or an instability (at
            # ω = 0.3 the semantic branch is "lost" at α ≈ 0.94 on 6 nodes, 0.84 on 8, not at all in
            # [0.5, 1] on 10 or 12). Such a loss is not reported as a spinodal.
            seen = check.message if check.status != "converged" else f"lost at {check.value:.5g} ({check.criterion})"
            found[branch] = replace(work, check_nodes_per_dim=check_nodes_per_dim, check_value=check.value,
                                    error=math.nan, status="failed",
                                    message=f"not quadrature-robust: {work.message}; on the {check_nodes_per_dim}-node "
                                            f"check rule: {seen}")
            continue
        shift = check.value - work.value
        found[branch] = replace(work, check_nodes_per_dim=check_nodes_per_dim, check_value=check.value,
                                error=work.error + abs(shift),
                                message=f"{work.message}; {check_nodes_per_dim}-node rule: {check.value:.5g}, "
                                        f"shift {shift:+.2g}")
    return SpinodalResult(params.omega, found["positional"], found["semantic"], (lo, hi), nodes_per_dim,
                          check_nodes_per_dim)


# ==================================================================================================
# Transverse free-energy curvature: stability from Φ(q, V, θ, m)
# ==================================================================================================
@dataclass(frozen=True)
class TransverseCurvature:
    """∂²Φ/∂u² at a branch's fixed point along the direction u leaving its invariant set.

    value: the curvature (negative: stable against leaving the invariant set, see
    `transverse_free_energy_curvature`); error: Richardson estimate |D(h) − D(2h)|/3 of the
    central second difference; status: "converged" | "failed" (the branch solution had not converged).
    """

    branch: str
    alpha: float
    value: float
    error: float
    status: str
    message: str


def transverse_free_energy_curvature(solution: BranchSolution, params: ModelParameters, *, step: float = 1e-3
                                     ) -> TransverseCurvature:
    """Curvature of Φ(q, V, θ, m) (`free_energy_of_state`, the conjugates eliminated) at the branch's
    fixed point, along the direction out of its invariant set: θ = u for the positional branch,
    m = u × (first row of G_p), i.e. m = (u, −u) for the default encodings, for the semantic one.

    Sign convention (replica saddle): ε_t = −Φ, and the physical state MAXIMISES Φ over the overlaps
    that break the branch's symmetry, while in (q, V) the replica-symmetric Φ is a saddle (at ω = 0.3,
    α = 1.25 its (q, V, θ, m) Hessian is indefinite on both branches, both being stable fixed points),
    so only this transverse curvature has a definite sign: ∂²Φ/∂u² < 0 is stable, > 0 means the
    branch is a saddle that lowers ε_t by leaving its invariant set. Measured at ω = 0 (6 nodes) on
    the positional branch: −0.009 at α = 0.7, +0.012 at α = 0.9, bracketing the map-Jacobian spinodal
    α_s = 0.775; at ω = 0.3, α = 1.25 (8 nodes): −0.198 (positional, θ) and −0.026 (semantic, m), stable
    by the map Jacobian too. The prox basins are frozen at the global minimisers of the fixed point,
    so Φ is smooth on the fixed rule; the difference uses `step` and 2·step (absolute, in u).
    """
    if solution.status != "converged" or solution.branch not in ("positional", "semantic"):
        return TransverseCurvature(solution.branch, solution.alpha, math.nan, math.nan, "failed",
                                   f"needs a converged positional or semantic solution ({solution.status})")
    step = check_real("step", step, 1e-8, 0.1, low_open=True)
    L = params.L
    equations = SaddlePointEquations(params, solution.alpha, solution.nodes_per_dim, frozen_basins=True)
    equations.freeze_at(solution.state)
    direction = np.zeros(3 + L)
    if solution.branch == "positional":
        direction[2] = 1.0
    else:
        direction[3:] = np.array(params.gram).reshape(L, L)[0]

    def second_difference(h):
        phi = [equations.free_energy_of_state(solution.state + k * h * direction) for k in (-1, 0, 1)]
        return (phi[0] - 2 * phi[1] + phi[2]) / h**2

    fine, coarse = second_difference(step), second_difference(2 * step)
    return TransverseCurvature(solution.branch, solution.alpha, float(fine), float(abs(fine - coarse) / 3), "converged",
                               f"central second difference, steps {step:g} and {2 * step:g}")
