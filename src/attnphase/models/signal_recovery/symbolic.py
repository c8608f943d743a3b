"""Signal subspace recovery by a learned softmax-attention query: the symbolic source.

Data: L tokens in d dimensions; R of them are informative, x_i = θ_d s_i ξ + z_i, the other L − R are
pure noise, x_i = z_i, with z_i ~ N(0, σ² I_d) and ξ a unit vector. Pooling: f_q(X) = Σ_i a_i x_i with
a = softmax_i(β⟨q, x_i⟩). Objective: J(q) = E‖f_q(X)‖² over q on the unit sphere; ρ = ⟨q, ξ⟩.

Modelling choices kept as parameters:

* sign model: A (s_i = +1), B (one random sign s per sequence), C (one random sign ε_i per
  informative token);
* the signal strength θ_d given directly (θ_d = θ) or per-token-SNR fixed (θ_d = θ√d);
* the score scale β and the noise level σ.

Derivation (what this module builds symbolically, in this order):

1. Exact reduction. In the orthonormal basis e₁ = q, e₂ = (ξ − ρq)/√(1 − ρ²) plus d − 2 further
   directions, ⟨e₁, x_i⟩ = y_i = θ_d ρ s_i 1[i∈I] + σ g_i, ⟨e₂, x_i⟩ = θ_d √(1−ρ²) s_i 1[i∈I] + σ h_i
   and the remaining coordinates are σ u_i; a depends on y only, so h and u are independent of a and
   average out: J = E[S₁²] + θ_d²(1 − ρ²) E[S₂²] + σ²(d − 1) E[S₃] with S₁ = Σ a_i y_i,
   S₂ = Σ_{i∈I} a_i s_i, S₃ = Σ a_i² (`reduction_integrand`).
2. Large L (L → ∞, R/L → π): every token type c (probability p_c, score shift μ_c, sign s_c) enters
   through the tilted Gaussian moments E[y^k e^{λβy}], obtained here from the Gaussian moment
   generating function (integrated by SymPy). S₁ → M₁/M₀, S₂ → Σ_inf p_c s_c E e^{βy}/M₀ and
   L·S₃ → M₀(2β)/M₀(β)², with M_k = Σ_c p_c E[y^k e^{βy_c}]; the fluctuations are O(1/L), so the
   expectation of the integrand tends to the integrand at these limits (`large_L_objective`).
3. Sign model B shares one sign per sequence, which maps ρ to sρ everywhere, so J_B(ρ) = ½[J_A(ρ) +
   J_A(−ρ)], exactly at every L.
4. ODE on the sphere: dq/dt = (I − qqᵀ)∇J gives dρ/dt = (1 − ρ²) J′(ρ) with t = Σ η_k; fixed points are
   ρ = ±1 and the zeros of J′; a fixed point is stable where the drift's derivative is negative.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from attnphase.derive.symbols import Domain, order_parameter, parameter

__all__ = [
    "NAME", "TITLE", "rho", "beta", "sigma", "theta", "theta_d", "pi_inf", "pi_noise", "d", "L", "S1", "S2", "S3",
    "shift",
    "THETA_D", "KERNEL_ARGS", "LARGE_L_OUTPUTS", "reduction_integrand", "gaussian_mgf", "tilted_moment", "TokenType",
    "token_types", "LargeLLimits", "large_L_limits", "large_L_objective", "nuisance_mass", "objective_slope", "drift",
    "drift_slope", "large_L_expressions", "large_L_kernel", "reduction_gradient", "reduction_kernel",
    "token_moment_kernel", "control_moment_kernel", "token_averages", "LARGE_L_ACCURACY_OUTPUTS",
    "token_average_moments", "large_L_accuracy", "large_L_accuracy_kernel",
]

NAME = "signal-recovery"
TITLE = "Signal subspace recovery by a learned softmax-attention query"

# ---- symbols ---------------------------------------------------------------------------------------
rho = order_parameter("rho", Domain.interval(-1, 1), latex=r"\rho", description="alignment <q, xi>")
beta = parameter("beta", Domain.positive(), latex=r"\beta", description="score scale (scores beta<q, x_i>)")
sigma = parameter("sigma", Domain.positive(), latex=r"\sigma", description="noise standard deviation")
theta = parameter("theta", Domain.nonnegative(), latex=r"\theta", description="signal strength as given")
theta_d = parameter("theta_d", Domain.nonnegative(), latex=r"\theta_d", description="signal strength on a token")
pi_inf = parameter("pi_I", Domain.interval(0, 1, low_open=True), latex=r"\pi",
                   description="fraction R/L of informative tokens")
# The noise fraction is a symbol of its own, not 1 − π: a mixture moment π e^{βθ_dρ} + (1 − π) written with 1 − π is
# simplified to π e^{βθ_dρ} − π + 1, which cancels to nothing in float64 where π = 1 and e^{βθ_dρ} is small
# (J = 76.0 for 399.73 at L = R, θ_d = 20, β = 3, ρ = −0.9). With two symbols every moment stays a sum of
# positive terms.
pi_noise = parameter("pi_N", Domain.interval(0, 1, high_open=True), latex=r"\pi_N",
                     description="fraction (L − R)/L of noise tokens, 1 − π")
d = parameter("d", Domain.interval(2, float("inf")), latex="d", description="dimension")
L = parameter("L", Domain.interval(2, float("inf")), latex="L", description="number of tokens (all of them; a softmax needs two)")
# Per-sequence statistics of the softmax weights (exact reduction).
S1 = sp.Symbol("S_1", real=True)
S2 = sp.Symbol("S_2", real=True)
S3 = sp.Symbol("S_3", positive=True)
# Auxiliary symbols of the derivation.
_g = sp.Symbol("g", real=True)
_t = sp.Symbol("t", real=True)

#: θ_d as a function of the given θ under each scaling convention.
THETA_D = {"direct": theta, "sqrt-d": theta * sp.sqrt(d)}

#: ⟨e₁,f⟩² + E_h⟨e₂,f⟩² + E_u Σ_{k≥3}⟨e_k,f⟩² given the scores: the exact per-sequence integrand of J.
reduction_integrand = S1**2 + theta_d**2 * (1 - rho**2) * S2**2 + sigma**2 * (d - 1) * S3


@lru_cache(maxsize=None)
def gaussian_mgf() -> sp.Expr:
    """E[e^{t g}] for g ~ N(0, 1), integrated (not typed in): e^{t²/2}."""
    density = sp.exp(-_g**2 / 2) / sp.sqrt(2 * sp.pi)
    return sp.simplify(sp.integrate(sp.exp(_t * _g) * density, (_g, -sp.oo, sp.oo)))


@lru_cache(maxsize=None)
def tilted_moment(shift: sp.Expr, power: int, scale: sp.Expr) -> sp.Expr:
    """E[y^power e^{scale·y}] for y = shift + σg: derivatives of the Gaussian MGF in the tilt (cached: the accuracy
    terms ask for the same moments many times)."""
    # E[y^k e^{λy}] = ∂_λ^k E[e^{λy}] and E[e^{λy}] = e^{λ·shift} MGF(λσ).
    lam = sp.Symbol("lambda_", real=True)
    generating = sp.exp(lam * shift) * gaussian_mgf().subs(_t, lam * sigma)
    return sp.simplify(sp.diff(generating, lam, power).subs(lam, scale))


@dataclass(frozen=True)
class TokenType:
    """A class of tokens in the large-L mixture: probability, score shift along q, signal sign."""

    probability: sp.Expr
    shift: sp.Expr
    sign: int  # +1 / −1 for informative tokens, 0 for noise


def token_types(sign_model: str) -> tuple[TokenType, ...]:
    """Token mixture seen by the scores ⟨q, x_i⟩ for sign models A and C (B is a mixture of A)."""
    noise = TokenType(pi_noise, sp.Integer(0), 0)
    if sign_model == "A":
        return (TokenType(pi_inf, theta_d * rho, +1), noise)
    if sign_model == "C":
        half = pi_inf / 2
        return (TokenType(half, theta_d * rho, +1), TokenType(half, -theta_d * rho, -1), noise)
    raise ValueError(f"token_types: sign model {sign_model!r} has no per-token mixture")


@dataclass(frozen=True)
class LargeLLimits:
    """Large-L limits of the softmax statistics for one sign model."""

    S1: sp.Expr  # Σ a_i y_i
    S2: sp.Expr  # Σ_I a_i s_i (signed informative mass)
    L_S3: sp.Expr  # L Σ a_i²
    noise_mass: sp.Expr  # Σ over the noise tokens of a_i


@lru_cache(maxsize=None)
def large_L_limits(sign_model: str) -> LargeLLimits:
    """Limits of S₁, S₂, L·S₃ and the noise mass from the tilted moments of the token mixture."""
    types = token_types(sign_model)

    def moment(power: int, scale: sp.Expr) -> sp.Expr:
        return sum(c.probability * tilted_moment(c.shift, power, scale) for c in types)

    M0 = moment(0, beta)
    M1 = moment(1, beta)
    informative = [c for c in types if c.sign != 0]
    signed = sum(c.probability * c.sign * tilted_moment(c.shift, 0, beta) for c in informative)
    noise = sum(c.probability * tilted_moment(c.shift, 0, beta) for c in types if c.sign == 0)
    return LargeLLimits(
        S1=sp.simplify(M1 / M0),
        S2=sp.simplify(signed / M0),
        L_S3=sp.simplify(moment(0, 2 * beta) / M0**2),
        noise_mass=sp.simplify(noise / M0),
    )


@lru_cache(maxsize=None)
def large_L_objective(sign_model: str) -> sp.Expr:
    """J_∞(ρ): the reduction integrand at the large-L limits (model B: the ±ρ average of model A)."""
    if sign_model == "B":
        J_A = large_L_objective("A")
        return (J_A + J_A.subs(rho, -rho)) / 2
    lim = large_L_limits(sign_model)
    return reduction_integrand.subs({S1: lim.S1, S2: lim.S2, S3: lim.L_S3 / L})


@lru_cache(maxsize=None)
def nuisance_mass(sign_model: str) -> sp.Expr:
    """Large-L attention mass on the L − R noise tokens (model B: averaged over the sequence sign)."""
    if sign_model == "B":
        n_A = nuisance_mass("A")
        return (n_A + n_A.subs(rho, -rho)) / 2
    return large_L_limits(sign_model).noise_mass


@lru_cache(maxsize=None)
def objective_slope(sign_model: str) -> sp.Expr:
    """J′_∞(ρ)."""
    return sp.diff(large_L_objective(sign_model), rho)


@lru_cache(maxsize=None)
def drift(sign_model: str) -> sp.Expr:
    """dρ/dt = (1 − ρ²) J′(ρ): the ξ-component of the tangent-projected gradient flow."""
    return (1 - rho**2) * objective_slope(sign_model)


@lru_cache(maxsize=None)
def drift_slope(sign_model: str) -> sp.Expr:
    """d(drift)/dρ: a fixed point is stable where it is negative."""
    return sp.diff(drift(sign_model), rho)


#: Arguments of every generated large-L kernel (callers bind them by name: `Kernel.call(rho=..., ...)`).
KERNEL_ARGS = (rho, beta, sigma, theta_d, pi_inf, pi_noise, d, L)
#: Names of the outputs of `large_L_kernel`, in order (the last axis of its value).
LARGE_L_OUTPUTS = ("J", "dJ", "drift", "drift_slope", "nuisance_mass")


def large_L_expressions(sign_model: str) -> list[sp.Expr]:
    """[J, J′, drift, drift′, nuisance mass] of the large-L form, the outputs of `large_L_kernel`."""
    return [
        large_L_objective(sign_model),
        objective_slope(sign_model),
        drift(sign_model),
        drift_slope(sign_model),
        nuisance_mass(sign_model),
    ]


@lru_cache(maxsize=None)
def large_L_kernel(sign_model: str, backend: str = "numpy"):
    """Generated kernel (rho, beta, sigma, theta_d, pi, pi_N, d, L) -> (..., 5) = [J, J′, drift, drift′, nuisance]."""
    from attnphase.derive.codegen import compile_kernel

    return compile_kernel(large_L_expressions(sign_model), list(KERNEL_ARGS), backend=backend)


@lru_cache(maxsize=None)
def reduction_gradient() -> tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr]:
    """Partial derivatives of the integrand in (S₁, S₂, S₃, ρ): the chain rule of the pathwise J′."""
    return tuple(sp.diff(reduction_integrand, v) for v in (S1, S2, S3, rho))


@lru_cache(maxsize=None)
def reduction_kernel(backend: str = "numpy"):
    """Generated kernel (S1, S2, S3, rho, theta_d, sigma, d) -> (..., 5) = [integrand, ∂S1, ∂S2, ∂S3, ∂ρ]."""
    from attnphase.derive.codegen import compile_kernel

    return compile_kernel(
        [reduction_integrand, *reduction_gradient()], [S1, S2, S3, rho, theta_d, sigma, d], backend=backend
    )


#: Score shift of one token along q (θ_d ρ s_i), the argument of `token_moment_kernel`.
shift = sp.Symbol("mu", real=True)


@lru_cache(maxsize=None)
def token_moment_kernel(backend: str = "numpy"):
    """Generated kernel (mu, beta, sigma) -> (..., 3) = [E e^{βy}, E y e^{βy}, E e^{2βy}] for y = mu + σg.

    Exact per-token means: the finite-L reduction uses them as control variates.
    """
    from attnphase.derive.codegen import compile_kernel

    moments = [tilted_moment(shift, 0, beta), tilted_moment(shift, 1, beta), tilted_moment(shift, 0, 2 * beta)]
    return compile_kernel(moments, [shift, beta, sigma], backend=backend)


@lru_cache(maxsize=None)
def control_moment_kernel(backend: str = "mpmath"):
    """Generated kernel (mu, beta, sigma) -> (..., 8) = [E X^j for j = 1 … 4 with X = e^{βy}, then with X = y e^{βy}]
    for y = mu + σg: the raw moments of one token's two control variates, from which the finite-L reduction judges
    whether its draws can estimate the controls' covariance (population.reliable_controls)."""
    from attnphase.derive.codegen import compile_kernel

    moments = ([tilted_moment(shift, 0, j * beta) for j in range(1, 5)]
               + [tilted_moment(shift, j, j * beta) for j in range(1, 5)])
    return compile_kernel(moments, [shift, beta, sigma], backend=backend)


# ---- accuracy of the large-L form -------------------------------------------------------------------
# The large-L form is the integrand at the means of five token averages X̄ = (1/L) Σ_i u_i with
# u = (e^{βy}, y e^{βy}, s 1[i∈I] e^{βy}, e^{2βy}, 1[i∈I] e^{βy}): J_∞ = f(E X̄), the noise mass 1 − E X̄₅/E X̄₁.
# Tokens are independent, R of them informative, so Cov X̄ = C/L with C = π Cov_I(u) + (1 − π) Cov_noise(u),
# the covariances within each class (model C: over the class's mixture of signs). The second-order delta
# method gives E f(X̄) = f(E X̄) + ½ Σ_jk ∂_j∂_k f · C_jk / L + O(1/L²): the O(1/L) correction the large-L form
# leaves out. Its terms are bounded one by one (no cancellation assumed) for the error estimate.
token_averages = sp.symbols("X_1:6", positive=True)
#: Names of the outputs of `large_L_accuracy_kernel`, in order.
LARGE_L_ACCURACY_OUTPUTS = ("J_correction", "dJ_correction", "J_bound", "dJ_bound", "nuisance_correction",
                            "nuisance_bound", "normaliser_variance")


def _token_vector_moment(c: TokenType, j: int, k: int | None = None) -> sp.Expr:
    """E_c[u_j] (k None) or E_c[u_j u_k] for one token type c (indices 0-4 into u)."""
    # u_j = y^{a_j} · weight_j · e^{λ_j β y}: (power of y, factor from sign/class, tilt)
    informative = 1 if c.sign != 0 else 0
    parts = [(0, 1, 1), (1, 1, 1), (0, c.sign, 1), (0, 1, 2), (0, informative, 1)]
    a, w, lam = parts[j]
    if k is not None:
        a2, w2, lam2 = parts[k]
        a, w, lam = a + a2, w * w2, lam + lam2
    return w * tilted_moment(c.shift, a, lam * beta) if w != 0 else sp.Integer(0)


@lru_cache(maxsize=None)
def token_average_moments(sign_model: str) -> tuple[tuple[sp.Expr, ...], tuple[tuple[sp.Expr, ...], ...]]:
    """(E X̄, L·Cov X̄) of the five token averages for sign model A or C: the means and the within-class covariance
    C = Σ_class p_class Cov_class(u) (R informative tokens exactly, so no between-class term)."""
    types = token_types(sign_model)
    mean = tuple(sum(c.probability * _token_vector_moment(c, j) for c in types) for j in range(5))
    classes = [[c for c in types if c.sign != 0], [c for c in types if c.sign == 0]]
    cov = [[sp.Integer(0)] * 5 for _ in range(5)]
    for members in classes:
        p_class = sum(c.probability for c in members)
        first = [sum(c.probability * _token_vector_moment(c, j) for c in members) / p_class for j in range(5)]
        for j in range(5):
            for k in range(j, 5):
                second = sum(c.probability * _token_vector_moment(c, j, k) for c in members) / p_class
                cov[j][k] += p_class * (second - first[j] * first[k])
                cov[k][j] = cov[j][k]
    return mean, tuple(tuple(row) for row in cov)


@lru_cache(maxsize=None)
def large_L_accuracy(sign_model: str) -> list[sp.Expr]:
    """[O(1/L) correction of J, its ρ-derivative, the termwise bounds of both, the correction of the noise mass and its
    termwise bound, the normaliser's relative variance Var(X̄₁)/(E X̄₁)²] for sign model A or C
    (`LARGE_L_ACCURACY_OUTPUTS`; B is the ±ρ average of A, done numerically)."""
    X1, X2, X3, X4, X5 = token_averages
    integrand = reduction_integrand.subs({S1: X2 / X1, S2: X3 / X1, S3: X4 / (L * X1**2)})
    mass = 1 - X5 / X1
    mean, cov = token_average_moments(sign_model)
    at_mean = dict(zip(token_averages, mean))

    def terms(f):
        out = []
        for j in range(5):
            for k in range(j, 5):
                if cov[j][k] == 0:
                    continue
                h = sp.diff(f, token_averages[j], token_averages[k])
                if h == 0:
                    continue
                out.append((1 if j == k else 2) * h.subs(at_mean) * cov[j][k] / (2 * L))
        return out

    J_terms, n_terms = terms(integrand), terms(mass)
    return [
        sum(J_terms), sum(sp.diff(t, rho) for t in J_terms), sum(sp.Abs(t) for t in J_terms),
        sum(sp.Abs(sp.diff(t, rho)) for t in J_terms),
        sum(n_terms), sum(sp.Abs(t) for t in n_terms), cov[0][0] / (L * mean[0] ** 2),
    ]


@lru_cache(maxsize=None)
def large_L_accuracy_kernel(sign_model: str, backend: str = "numpy"):
    """Generated kernel (rho, beta, sigma, theta_d, pi, pi_N, d, L) -> (..., 7): `LARGE_L_ACCURACY_OUTPUTS`."""
    from attnphase.derive.codegen import compile_kernel

    return compile_kernel(large_L_accuracy(sign_model), list(KERNEL_ARGS), backend=backend)
