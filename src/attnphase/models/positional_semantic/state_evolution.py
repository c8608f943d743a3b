"""The state-evolution (saddle-point) map of the model, its free energy and test error.

The state of the fixed-point iteration is x = (q, V, θ, m_1..m_L). One evaluation of the map: the
Gaussian fields ω_ℓ = m_ℓ + √q ξ_ℓ, h*_ℓ = (θ/√q) ξ_ℓ + V* η_ℓ on a fixed quadrature rule in the 2L
standard normals (ξ, η); the proximal map (the GLOBAL minimiser of the Moreau objective, by the fused
multi-start Newton loop over all nodes); the conjugates as weighted sums; the ridge part. Every
expression comes from the symbolic source through kernels compiled once per L (`kernels(L)`, built
when a `SaddlePointEquations` is made) and called by the names of their SymPy arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from attnphase.derive.codegen import Kernel, compile_kernel
from attnphase.derive.fused import MultiStartNewton
from attnphase.errors import ParameterError
from attnphase.models.positional_semantic import symbolic
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.numeric.basins import FrozenBasins
from attnphase.numeric.gauss import pruned_tensor_rule
from attnphase.numeric.minimize import MultiStartMinimum
from attnphase.numeric.reflections import Reflection
from attnphase.numeric.basin_planes import CountSplit
from attnphase.numeric.split_line import OUTER_WEIGHT_FLOOR, OuterSplit, SplitLineRule, split_line_expectation

__all__ = ["HAT_ORDER", "Kernels", "kernels", "tokens", "proximal_map", "state_vector", "Evaluation",
           "SaddlePointEquations", "zeta_rotation", "pitchfork_indicator"]

HAT_ORDER = ("mhat", "qhat", "thetahat", "Vhat")
# Nodes of the tensor rule whose weight is below this are dropped: their total weight is < 1e-9 for
# the rules used here and every integrand is bounded by O(1), far below the 1e-7 target on Φ.
NODE_WEIGHT_FLOOR = 1e-13
# ε_g has no prox, so its integrand is smooth, and it is integrated on tensor Gauss-Hermite rules of growing size
# (`test_error_node_counts`) until two agree to this, relative. Its sigmoids of products of fields sharpen as σ grows:
# the fixed 16 nodes it had used put ε_g 2.6e-4 (relative) high at σ = 1 (ω = 0.3, α = 1.25, semantic branch), 23
# times the error reported; at σ = 0.5 they were within 2e-7.
TEST_ERROR_AGREEMENT = 1e-8
# Nodes per dimension of those rules: those whose full tensor has 2^12 to 2^22 nodes (L = 2: 8 … 40; L = 6: 2, 3).
_TEST_ERROR_NODE_CHOICES = (2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 40)
# The outer-split rule's panel tolerance along ζ_1, relative to its lines' (each outer node is a whole line integral,
# known to the lines' tolerance; 1e-9 on lines of 1e-10 for the references).
OUTER_TO_LINE_PANEL_TOL = 10.0
# The prox's Newton iteration stops once a step is below this times (1 + |h|), and takes that step: near a minimum the
# steps shrink quadratically, so the minimiser is then exact to ~(1e-10)², as with 1e-13 (one Newton step more). At
# ω = 0.3, α = 1.25 the solve's fields agree to 10 digits with those at 1e-13, α_c(0.3) and α_l(0.3) to 1e-10, and the
# solve and threshold take 6 % less time (research notes).
PROX_STEP_TOL = 1e-10


@dataclass(frozen=True)
class Kernels:
    """The model's compiled kernels for L tokens (numpy backend, numba loops), and the fused prox."""

    L: int
    objective: Kernel
    value_gradient_hessian: Kernel
    loss: Kernel
    attention: Kernel
    ridge: Kernel
    phi_rest: Kernel
    hat_integrands: Kernel
    hat_integrands_by_parts: Kernel
    hat_correction: Kernel
    prox: MultiStartNewton


@lru_cache(maxsize=None)
def kernels(L: int) -> Kernels:
    """Every kernel of the model for L tokens, compiled (or loaded from the disk cache) once per process."""
    s = symbolic
    args = s.prox_arguments(L)
    # objective, gradient and Hessian in one kernel (shared subexpressions): one call per Newton step
    value_grad_hess = [s.moreau_objective(L), *s.moreau_gradient(L), *s.moreau_hessian(L)]
    ridge = s.ridge_equations(L)
    hats = s.hat_integrands(L)
    by_parts = s.hat_integrands_by_parts(L)
    objective = compile_kernel(s.moreau_objective(L), args)
    joint = compile_kernel(value_grad_hess, args)
    return Kernels(
        L=L,
        objective=objective,
        value_gradient_hessian=joint,
        loss=compile_kernel(s.per_sample_loss(L), s.loss_arguments(L)),
        attention=compile_kernel(s.linear_baseline_integrand(L), s.teacher_attention_arguments(L)),
        ridge=compile_kernel([ridge["q"], ridge["V"], ridge["theta"], *ridge["m"]], s.ridge_arguments(L)),
        phi_rest=compile_kernel(s.free_energy_without_envelope(L), s.free_energy_arguments(L)),
        hat_integrands=compile_kernel([e for key in HAT_ORDER for e in hats[key]], s.hat_arguments(L)),
        hat_integrands_by_parts=compile_kernel([e for key in HAT_ORDER for e in by_parts[key]],
                                               s.hat_by_parts_arguments(L)),
        hat_correction=compile_kernel(s.Vhat_correction(L), [s.q, s.theta, *s.token_symbols(L)["thetahat"]]),
        prox=MultiStartNewton(objective, joint, [str(h) for h in s.token_symbols(L)["h"]], tol=PROX_STEP_TOL),
    )


def tokens(stem: str, values) -> dict[str, object]:
    """Kernel arguments stem_1..stem_L by name from the last axis of `values` ((L,) or (N, L))."""
    values = np.asarray(values)
    return {f"{stem}_{i + 1}": values[..., i] for i in range(values.shape[-1])}


def _teacher(params: Parameters) -> dict[str, float]:
    """σ, ω and the entries A_ℓ_κ of the teacher, by kernel argument name."""
    L = params.L
    return {"sigma": params.sigma, "omega": params.omega,
            **{f"A_{i + 1}_{j + 1}": params.A[i * L + j] for i in range(L) for j in range(L)}}


def _ridge_constants(params: Parameters) -> dict[str, float]:
    """σ, λ, ρ and the upper triangle G_ℓ_κ of the Gram matrix, by kernel argument name."""
    G = params.gram_matrix
    L = params.L
    return {"sigma": params.sigma, "lam": params.lam, "rho": params.rho,
            **{f"G_{i + 1}_{j + 1}": G[i, j] for i in range(L) for j in range(i, L)}}


# Newton settings of the prox (numeric.minimize.minimize_multistart_newton's but the tolerance): see derive.fused.
def proximal_map(w, hs, V, params: Parameters, extra_starts=(), starts=None) -> MultiStartMinimum:
    """Global minimiser of Σ(h−ω)²/(2V) + ℓ(h, h*) at every row of w, hs (shape (N, L)).

    Starts: 0, ω, the token-reversed ω, the teacher-side points ±h* (the student reproducing the
    teacher's softmax part), plus `extra_starts` (each (N, L)). With `starts` given (a sequence of
    (N, L) arrays) only those are used: one start gives the LOCAL minimiser reached from it. Each start
    runs the saddle-free Newton iteration of derive.fused; per node the end point with the lowest
    objective wins (the first start on a tie).
    """
    w = np.ascontiguousarray(w, dtype=float)
    hs = np.ascontiguousarray(hs, dtype=float)
    if starts is None:
        starts = [np.zeros_like(w), w, w[:, ::-1], hs, -hs, *extra_starts]
    starts = np.stack([np.asarray(s, float) for s in starts])
    return kernels(params.L).prox.minimise(starts, {**tokens("w", w), **tokens("hs", hs)},
                                           {"V": V, **_teacher(params)})


def state_vector(q, V, theta, m) -> np.ndarray:
    """x = (q, V, θ, m_1..m_L)."""
    return np.array([q, V, theta, *np.atleast_1d(m)], dtype=float)


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of the map at a state x: the conjugates (per token, with α), E[M] (the Moreau
    envelope's average), the next state F(x) and the number of minimisations the quadrature used."""

    mhat: np.ndarray
    qhat: np.ndarray
    thetahat: np.ndarray
    Vhat: np.ndarray
    envelope: float
    next: np.ndarray
    n_points: int


@dataclass(frozen=True)
class SaddlePointEquations:
    """The state-evolution map x -> F(x) at fixed (α, parameters) on a fixed quadrature rule.

    `evaluate(x)` returns the conjugates, the Moreau envelope average and F(x). The proximal map is
    recomputed from the same fixed starts at every evaluation, so F is a deterministic function of x;
    `evaluate(x, basins)` instead continues every node's minimiser from `basins` (numeric.basins, tensor
    rule only): a smooth map, ~5× cheaper, equal to the global one where no node changed basin.

    Quadrature: the pruned tensor Gauss-Hermite rule with `nodes_per_dim` nodes per dimension, or, when
    `split_rule` is given, the split-line rule (numeric.split_line): Gauss-Hermite in (ξ_2, .., η_L),
    and along ξ_1 Gauss-Kronrod pieces cut where the global proximal minimiser switches basin. The
    test error (a smooth integrand, no prox) has tensor rules of its own (`test_error_estimate`).

    outer_split_nodes (with split_rule): the outer-split rule instead (numeric.split_line.OuterSplit):
    coordinates u = (χ, ζ) rotated per token so that h* = √ρ ζ; lines along χ_1; adaptive Gauss-Kronrod
    along ζ_1 cut where the pitchfork indicator (`pitchfork_indicator`) changes sign; Gauss-Hermite
    with these node counts in (χ_2..χ_L, ζ_2..ζ_L). Removes the ~1e-7 oscillation of E[M] in the outer
    Gauss-Hermite rule at ω = 0.3 (not at ω = 0, where χ_2 still converges slowly). outer_weight_floor: those
    Gauss-Hermite nodes of weight at or below it are left out (numeric.split_line.OuterSplit.weight_floor).

    count_split (with outer_split_nodes): χ_2 integrated adaptively too (numeric.basin_planes.CountSplit,
    cut where the number of switches on a χ_1 line changes; its axis must be 1, χ_2); outer_split_nodes
    then counts (χ_3..χ_L, ζ_2..ζ_L) only. For ω = 0, where the switching set inside the (χ_1, χ_2) plane
    has segments with cusp ends; ~10× the cost of the outer-split rule.
    count_split without outer_split_nodes: planes (ξ_1, ξ_2) in the original coordinates, ξ_2 cut where the
    number of switches on a ξ_1 line changes (where a line is tangent to the switching set, which makes the
    line integrals of the JUMPING hat integrands behave like a square root: the plain rule converges slowly
    there), Gauss-Hermite with split_rule.outer_nodes_per_dim in the other 2L − 2 coordinates. The reference
    rule for the state (at ω = 0.3, α = 1.25 the semantic map agrees with the outer-split rule (12, 12) to
    2e-5 relative on 8 nodes, where the plain rules oscillate by ±6e-4 up to 24 nodes); 4-6× a plain
    evaluation of as many nodes (0.7-0.9 s on 8 nodes, 1.2 s on 10, at that state) with the token exchange of
    `reflections`.

    use_reflection (every split rule): on the invariant sets the problem has reflection symmetries
    (`reflections`), and the rule integrates one line (plane) of each orbit of its outer nodes
    (numeric.reflections): half the work per reflection. The sign flips leave the rule the same; the exchange of
    the tokens on count-split planes makes it symmetric in the tokens (each plane's transposed image is integrated
    with lines along the other token's ξ). False integrates every line (to check the symmetries).
    """

    params: Parameters
    alpha: float
    nodes_per_dim: int = 10
    split_rule: SplitLineRule | None = None
    outer_split_nodes: tuple[int, ...] | None = None
    outer_weight_floor: float = OUTER_WEIGHT_FLOOR
    count_split: CountSplit | None = None
    use_reflection: bool = True
    kernels: Kernels = field(init=False, repr=False, compare=False)
    nodes: np.ndarray = field(init=False, repr=False, compare=False)
    weights: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        L = self.params.L
        object.__setattr__(self, "kernels", kernels(L))
        nodes, weights = pruned_tensor_rule(2 * L, self.nodes_per_dim, NODE_WEIGHT_FLOOR)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "weights", weights)

    @property
    def xi(self) -> np.ndarray:
        return self.nodes[:, :self.params.L]

    @property
    def eta(self) -> np.ndarray:
        return self.nodes[:, self.params.L:]

    def new_basins(self) -> FrozenBasins:
        """Frozen basins for this object's tensor rule (empty: the first evaluation is global)."""
        return FrozenBasins(self.weights)

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

    def reset_basins(self, basins: FrozenBasins, x) -> bool:
        """`basins.reset` at state x on the tensor rule: True when the continued minimisers there are
        already the global ones (the frozen and the global map agree at x)."""
        w, hs, _ = self.fields(np.asarray(x, float))
        return basins.reset(lambda: proximal_map(w, hs, x[1], self.params),
                            lambda starts: proximal_map(w, hs, x[1], self.params, starts=(starts,)))

    def _integrands(self, x, z, prox, envelope):
        """Columns: the 4L hat integrands (m̂, q̂, θ̂, V̂ per token, before ×α) and M, at points z = (ξ, η).

        On the split-line rules m̂, θ̂ and V̂ average the continuous envelope against polynomials
        (symbolic.hat_integrands_by_parts), not the jumping g: at the semantic reference state at ω = 0.3,
        α = 1.25 the map's V on split-line 8, 10, 12 is off by 5e-4, 1e-5, 5e-5 relative instead of 4e-3, 2e-3,
        1e-3 (research notes). The tensor rule, on which branches are followed, keeps the g integrands."""
        L = self.params.L
        w, _, _ = self.fields(x, z[:, :L], z[:, L:])
        g = (prox - w) / x[1]
        averaged = tokens("g", g) | tokens("xi", z[:, :L]) | tokens("eta", z[:, L:])
        if self.split_rule is None:
            hats = self.kernels.hat_integrands.call(**averaged, q=x[0], theta=x[2], rho=self.params.rho)
        else:
            hats = self.kernels.hat_integrands_by_parts.call(**averaged, M=envelope, q=x[0], theta=x[2],
                                                             rho=self.params.rho)
        return np.column_stack([hats, envelope])

    def averages(self, x, basins: FrozenBasins | None = None) -> tuple[np.ndarray, float, int]:
        """(E of the 4L hat integrands, E[M], minimisations used) at state x on this object's rule."""
        p, V = self.params, x[1]
        if self.split_rule is None:
            w, hs, _ = self.fields(x)
            if basins is None:
                prox = proximal_map(w, hs, V, p)
            else:
                prox = basins.minimise(lambda: proximal_map(w, hs, V, p),
                                       lambda starts: proximal_map(w, hs, V, p, starts=(starts,)))
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

        # the reflection holds in the rotated coordinates of the outer split too: −I commutes with the rotation, and
        # on θ = 0 the rotation is the identity
        reflections = self.reflections(x) if self.use_reflection else ()
        extra = {"count_split": self.count_split, "reflection": reflections or None}
        if self.outer_split_nodes is not None:
            extra.update(rotation=zeta_rotation(x, p),
                         outer_split=OuterSplit(L, pitchfork_indicator(x, p), 48,
                                                OUTER_TO_LINE_PANEL_TOL * self.split_rule.panel_tol,
                                                tuple(self.outer_split_nodes), self.outer_weight_floor))
        return split_line_expectation(global_minimum, local_minimum, integrand, 2 * L, 0, self.split_rule, **extra)

    def reflections(self, x) -> tuple[Reflection, ...]:
        """The commuting reflections z = (ξ, η) → S z under which the proximal problem at state x is symmetric, as
        far as this object's rule can use them (numeric.reflections).

        The loss sees h and h* only through the rank-one scores h_ℓ h_κ (symbolic.attention), so it is even in
        h and, separately, in h*. With m = 0 (semantic and trivial sets) ω = √q ξ and h* are odd in z, so
        z → −z maps the minimiser to −h at the same value; with θ = 0 (positional set) h* = V* η alone, so
        η → −η flips h*, which the loss does not see, and leaves the minimiser unchanged.
        On the count-split planes (ξ_1, ξ_2) of L = 2, with a token-reversal symmetric A the loss is unchanged
        when both tokens' h and h* are exchanged (P), so when P m = ±m the exchange of the tokens' coordinates
        with that sign, z → ±P z, maps ω to ±P ω and h* to ±P h* (whose sign the loss does not see), hence the
        minimiser to ±P h: the plane through the outer node (η_2, η_1) is the transposed image of the one through
        (η_1, η_2) (lines along ξ_2 where the rule's run along ξ_1).
        """
        L = self.params.L
        m = x[3:3 + L]
        found = []
        if not np.any(m):
            found.append(Reflection((-1.0,) * (2 * L), (-1.0,) * L))
        elif x[2] == 0.0:
            found.append(Reflection((1.0,) * L + (-1.0,) * L, (1.0,) * L))
        planes = self.split_rule is not None and self.count_split is not None and self.outer_split_nodes is None
        if planes and L == 2 and self.params.swap_symmetric and self.count_split.axis == 1:
            for sign in (1.0, -1.0):
                if np.array_equal(m[::-1], sign * m):
                    found.append(Reflection((sign,) * (2 * L), (sign,) * L, (1, 0, 3, 2), (1, 0)))
                    break
        return tuple(found)

    def evaluate(self, x, basins: FrozenBasins | None = None) -> Evaluation:
        """Conjugates, E[M] and the next state F(x) (frozen basins when given, tensor rule only)."""
        x = np.asarray(x, float)
        p, L, a = self.params, self.params.L, self.alpha
        q, theta = x[0], x[2]
        hat_means, envelope, n_points = self.averages(x, basins)
        averages = a * hat_means
        mhat, qhat, thetahat, Vhat = (averages[k * L:(k + 1) * L] for k in range(4))
        Vhat = Vhat + np.asarray(self.kernels.hat_correction.call(q=q, theta=theta, **tokens("thetahat", thetahat)), float)
        new = np.asarray(self.kernels.ridge.call(**tokens("mhat", mhat), **tokens("qhat", qhat), **tokens("thetahat", thetahat),
                                            **tokens("Vhat", Vhat), **_ridge_constants(p)), float)
        return Evaluation(mhat, qhat, thetahat, Vhat, envelope, new, n_points)

    def __call__(self, x) -> np.ndarray:
        """F(x) (global proximal map)."""
        return self.evaluate(x).next

    def free_energy(self, x, evaluation: Evaluation | None = None) -> float:
        """Φ at state x (meaningful at a fixed point, where it is stationary)."""
        ev = evaluation or self.evaluate(x)
        rest = self.kernels.phi_rest.call(q=x[0], V=x[1], theta=x[2], **tokens("m", x[3:3 + self.params.L]),
                                     **tokens("mhat", ev.mhat), **tokens("qhat", ev.qhat),
                                     **tokens("thetahat", ev.thetahat), **tokens("Vhat", ev.Vhat),
                                     **_ridge_constants(self.params))
        return float(rest) - self.alpha * ev.envelope

    def _quadratic(self, x) -> float:
        """q − σ² mᵀ G_p⁺ m − θ²/ρ (the closed-form part of Φ(q, V, θ, m))."""
        p, L = self.params, self.params.L
        m = x[3:3 + L]
        return x[0] - p.sigma**2 * (m @ np.linalg.pinv(p.gram_matrix) @ m) - x[2] ** 2 / p.rho

    def free_energy_of_state(self, x, envelope=None, basins: FrozenBasins | None = None) -> float:
        """Φ as a function of the order parameters alone, the conjugates eliminated in closed form.

        The conjugates enter Φ only through the entropic/ridge part, so their stationarity conditions
        solve explicitly (D = λ + σ² ΣV̂ = σ²/V, m = G_p m̂/D, θ̂ = Σ_ℓθ̂_ℓ = θ/(ρV), Σq̂ from the V̂
        condition), which leaves

            Φ(q, V, θ, m) = (q − σ² mᵀ G_p⁺ m − θ²/ρ)/(2V) − λ q/(2σ²) − α E[M(m + √q ξ, h*; V)]

        (G_p⁺ the pseudo-inverse; for the default L = 2 encodings mᵀG_p⁺m = m_1² with m_1 = −m_2).
        Its stationary points are the fixed points of the state-evolution map, and there it equals
        `free_energy` (tested). `envelope` = E[M] if already computed on this rule.
        """
        p = self.params
        x = np.asarray(x, float)
        if envelope is None:
            envelope = self.averages(x, basins)[1]
        return float(self._quadratic(x) / (2 * x[1]) - p.lam * x[0] / (2 * p.sigma**2) - self.alpha * envelope)

    def free_energy_gradient(self, x, evaluation: Evaluation | None = None) -> np.ndarray:
        """∇Φ of `free_energy_of_state` with respect to x = (q, V, θ, m_1..m_L), from one map evaluation.

        The conjugates the map computes at x are the derivatives of the envelope term (they make the
        full Φ(x, x̂) stationary in x): α∂E[M]/∂q = ½ΣV̂_ℓ, α∂E[M]/∂V = −½Σq̂_ℓ, α∂E[M]/∂θ = −Σθ̂_ℓ,
        α∂E[M]/∂m_ℓ = −m̂_ℓ. Hence

            ∂Φ/∂q = 1/(2V) − λ/(2σ²) − ½ΣV̂,   ∂Φ/∂V = −(q − σ² mᵀG_p⁺m − θ²/ρ)/(2V²) + ½Σq̂,
            ∂Φ/∂θ = −θ/(ρV) + Σθ̂,              ∂Φ/∂m = −σ² G_p⁺m / V + m̂,

        all zero at a fixed point (tested against finite differences of Φ on a frozen-basin rule).
        No solver uses it; a test holds it to central differences of Φ away from the fixed point.
        """
        p, L = self.params, self.params.L
        x = np.asarray(x, float)
        ev = evaluation or self.evaluate(x)
        V, theta, m = x[1], x[2], x[3:3 + L]
        return np.array([1 / (2 * V) - p.lam / (2 * p.sigma**2) - 0.5 * np.sum(ev.Vhat),
                         -self._quadratic(x) / (2 * V**2) + 0.5 * np.sum(ev.qhat),
                         -theta / (p.rho * V) + np.sum(ev.thetahat),
                         *(-p.sigma**2 * (np.linalg.pinv(p.gram_matrix) @ m) / V + ev.mhat)])

    def test_error(self, x) -> float:
        """ε_g = E ℓ(m + √q ξ, h*) (no prox), to TEST_ERROR_AGREEMENT where its rules reach it
        (`test_error_estimate`)."""
        return self.test_error_estimate(x)[0]

    def test_error_estimate(self, x) -> tuple[float, float]:
        """ε_g and the error of its quadrature: on the tensor rules of `test_error_node_counts` until two successive
        pairs agree to TEST_ERROR_AGREEMENT (relative; one pair could agree by chance), or on the largest. The error
        is the last difference times n/(n' − n), n and n' the last two rules' nodes per dimension: the error of the
        finer one where it converges no slower than 1/n' (exponentially where the nodes resolve the sigmoids, about
        as 1/n' before: at σ = 2 the rules of 32 and 40 nodes still differ by 2e-4 of ε_g)."""
        L, x = self.params.L, np.asarray(x, float)
        counts, values, differences = test_error_node_counts(L), [], []
        for n in counts:
            nodes, weights = pruned_tensor_rule(2 * L, n, NODE_WEIGHT_FLOOR)
            _, hs, _ = self.fields(x, nodes[:, :L], nodes[:, L:])
            h = x[3:3 + L] + math.sqrt(x[0]) * nodes[:, :L]
            values.append(float(weights @ self.kernels.loss.call(**tokens("h", h), **tokens("hs", hs),
                                                                 **_teacher(self.params))))
            if len(values) >= 2:
                differences.append(abs(values[-1] - values[-2]))
                if len(differences) >= 2 and max(differences[-2:]) <= TEST_ERROR_AGREEMENT * abs(values[-1]):
                    break
        finer, coarser = counts[len(values) - 1], counts[len(values) - 2]
        return values[-1], differences[-1] * coarser / (finer - coarser)


def test_error_node_counts(L: int) -> tuple[int, ...]:
    """Nodes per dimension of the tensor rules ε_g climbs, coarsest first (at least two)."""
    return tuple(n for n in _TEST_ERROR_NODE_CHOICES if 2**12 <= n ** (2 * L) <= 2**22)


def zeta_rotation(x, params: Parameters) -> np.ndarray:
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


def pitchfork_indicator(x, params: Parameters):
    """z -> smallest eigenvalue of the Moreau Hessian at h = 0, ω = 0 for the teacher fields h*(z).

    The loss depends on h only through softmax(h_ℓ h_κ), even in h, so h = 0 is critical at ω = 0 and
    loses stability (a pitchfork) where this eigenvalue crosses zero; the switching set of the prox is
    born there and the split-line integrals are not smooth across it (numeric.split_line.OuterSplit)."""
    L = params.L
    equations = SaddlePointEquations(params, 1.0, 4)

    def indicator(z):
        _, hs, _ = equations.fields(x, z[:, :L], z[:, L:])
        zero = np.zeros((len(z), L))
        out = equations.kernels.value_gradient_hessian.call(**tokens("h", zero), **tokens("w", zero), **tokens("hs", hs),
                                                       V=x[1], **_teacher(params))
        return np.linalg.eigvalsh(out[:, 1 + L:].reshape(-1, L, L))[:, 0]
    return indicator
