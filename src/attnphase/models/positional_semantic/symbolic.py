"""Positional vs semantic learning in tied low-rank dot-product attention (symbolic source).

Model (spec `positional_semantic.md`, Cui, Behrens, Krzakala, Zdeborová 2024): tokens x_ℓ ~ N(0, σ² I_d),
ℓ = 1..L, fixed positional encodings p with Gram matrix G_p = p pᵀ, a tied rank-one student

    f_Q(x) = softmax_row((x+p) Q Qᵀ (x+p)ᵀ / d) (x+p),

a teacher y(x) = [(1−ω) softmax_row(x Q* Q*ᵀ xᵀ / d) + ω A] x, and the empirical risk
Σ_μ ‖y − f‖²/(2d) + λ‖Q‖²/2 with n = αd samples. In the limit d → ∞ the risk depends on Q only through
the token fields h_ℓ = (x_ℓ+p_ℓ)ᵀQ/√d and h*_ℓ = x_ℓᵀQ*/√d, and the replica free energy reduces to a
2L-dimensional Gaussian average of a Moreau envelope plus a ridge part.

This module holds the expressions only: the per-sample loss ℓ(h, h*), the Moreau (proximal)
objective with its gradient and Hessian in h, the integrands of the conjugate ("hat") equations, the
ridge part, the free energy, the test error and the linear baseline. `attnphase.api.positional_semantic`
compiles them (derive.codegen) and solves them (numeric).

Order parameters for r = t = 1 and isotropic tokens: q = σ²‖Q‖²/d, m_ℓ = p_ℓᵀQ/√d, θ = σ² Q·Q*/d,
V (the variance of the Moreau envelope), and their conjugates q̂_ℓ, m̂_ℓ, θ̂_ℓ, V̂_ℓ (one per token).
"""

from __future__ import annotations

from functools import lru_cache

import sympy

from attnphase.derive.calculus import gradient, hessian
from attnphase.derive.symbols import Domain, order_parameter, parameter

NAME = "positional-semantic"
TITLE = "Positional vs semantic learning in tied low-rank dot-product attention"

# -- parameters ------------------------------------------------------------------------------------
alpha = parameter("alpha", Domain.positive(), latex=r"\alpha", description="samples per dimension n/d")
omega = parameter("omega", Domain.unit_interval(), latex=r"\omega", description="weight of the positional part of the teacher")
sigma = parameter("sigma", Domain.positive(), latex=r"\sigma", description="token standard deviation")
lam = parameter("lam", Domain.nonnegative(), latex=r"\lambda", description="weight decay")
rho = parameter("rho", Domain.positive(), latex=r"\rho", description="teacher self-overlap Q*ᵀΣQ*/d (= σ² for ‖Q*‖² = d)")

# -- order parameters (r = t = 1, isotropic tokens: q, θ, V are the same for every token) -------------
q = order_parameter("q", Domain.positive(), latex="q", description="student self-overlap σ²‖Q‖²/d")
theta = order_parameter("theta", Domain.real(), latex=r"\theta", description="student-teacher overlap σ² Q·Q*/d")
V = order_parameter("V", Domain.positive(), latex="V", description="variance of the Moreau envelope")

# Gaussian integration variables and the proximal variable.
_GAUSS = Domain.real()


@lru_cache(maxsize=None)
def token_symbols(L: int) -> dict[str, tuple[sympy.Symbol, ...]]:
    """Per-token symbols for L tokens (1-based names).

    h (proximal variable), w (the Moreau argument ω_ℓ), hs (teacher field h*_ℓ), xi, eta (standard
    normals), m (positional overlaps m_ℓ), the conjugates mhat, qhat, thetahat, Vhat, and
    g_ℓ = (prox_ℓ − ω_ℓ)/V.
    """
    def row(stem, latex, domain=_GAUSS, order=False):
        make = order_parameter if order else parameter
        return tuple(make(f"{stem}_{i}", domain, latex=f"{latex}_{{{i}}}") for i in range(1, L + 1))

    return {
        "h": row("h", "h"),
        "w": row("w", r"\omega"),
        "hs": row("hs", "h^*"),
        "xi": row("xi", r"\xi"),
        "eta": row("eta", r"\eta"),
        "m": row("m", "m", order=True),
        "mhat": row("mhat", r"\hat m", order=True),
        "qhat": row("qhat", r"\hat q", Domain.nonnegative(), order=True),
        "thetahat": row("thetahat", r"\hat\theta", order=True),
        "Vhat": row("Vhat", r"\hat V", order=True),
        "g": row("g", "g"),
    }


@lru_cache(maxsize=None)
def mixing_matrix(L: int) -> sympy.Matrix:
    """The positional part A of the teacher (row-stochastic, entries as symbols A_ℓκ)."""
    return sympy.Matrix(L, L, lambda i, j: parameter(f"A_{i + 1}_{j + 1}", Domain.unit_interval(), latex=f"A_{{{i + 1}{j + 1}}}"))


@lru_cache(maxsize=None)
def gram_matrix(L: int) -> sympy.Matrix:
    """The Gram matrix G_p = p pᵀ of the positional encodings (symmetric, entries as symbols)."""
    def entry(i, j):
        a, b = min(i, j) + 1, max(i, j) + 1
        return parameter(f"G_{a}_{b}", Domain.real(), latex=f"G_{{{a}{b}}}")

    return sympy.Matrix(L, L, entry)


def attention(fields) -> sympy.Matrix:
    """Row-softmax of the rank-one score matrix h_ℓ h_κ.

    Written as S_ℓκ = 1 / Σ_j exp(h_ℓ (h_j − h_κ)) so that no exponential of a large positive score
    appears in a ratio of two overflowing terms.
    """
    L = len(fields)
    return sympy.Matrix(
        L, L, lambda l, k: 1 / (1 + sum(sympy.exp(fields[l] * (fields[j] - fields[k])) for j in range(L) if j != k))
    )


def teacher_attention(L: int) -> sympy.Matrix:
    """T(h*) = (1−ω) softmax(h* h*ᵀ) + ω A."""
    hs = token_symbols(L)["hs"]
    return (1 - omega) * attention(hs) + omega * mixing_matrix(L)


@lru_cache(maxsize=None)
def per_sample_loss(L: int) -> sympy.Expr:
    """ℓ(h, h*) = ½ Σ_{ℓ,κ} σ² [T_ℓκ(h*) − S_ℓκ(h)]² (isotropic tokens: s_κ = σ²)."""
    S = attention(token_symbols(L)["h"])
    T = teacher_attention(L)
    return sympy.Rational(1, 2) * sigma**2 * sum((T[i, j] - S[i, j]) ** 2 for i in range(L) for j in range(L))


@lru_cache(maxsize=None)
def moreau_objective(L: int) -> sympy.Expr:
    """Σ_ℓ (h_ℓ − ω_ℓ)²/(2V) + ℓ(h, h*); its minimum over h is the Moreau envelope M(ω, h*)."""
    s = token_symbols(L)
    return sum((h - w) ** 2 for h, w in zip(s["h"], s["w"])) / (2 * V) + per_sample_loss(L)


@lru_cache(maxsize=None)
def moreau_gradient(L: int) -> sympy.Matrix:
    """∇_h of the Moreau objective (L × 1)."""
    return gradient(moreau_objective(L), token_symbols(L)["h"])


@lru_cache(maxsize=None)
def moreau_hessian(L: int) -> sympy.Matrix:
    """∇²_h of the Moreau objective (L × L)."""
    return hessian(moreau_objective(L), token_symbols(L)["h"])


def prox_arguments(L: int) -> list[sympy.Symbol]:
    """Argument order of the generated prox kernels: h, ω, h*, V, σ, ω_teacher, A (row-major)."""
    s = token_symbols(L)
    return [*s["h"], *s["w"], *s["hs"], V, sigma, omega, *mixing_matrix(L)]


def loss_arguments(L: int) -> list[sympy.Symbol]:
    """Argument order of the per-sample loss kernel (test error): h, h*, σ, ω, A (row-major)."""
    s = token_symbols(L)
    return [*s["h"], *s["hs"], sigma, omega, *mixing_matrix(L)]


def teacher_attention_arguments(L: int) -> list[sympy.Symbol]:
    """Argument order of the softmax(h* h*ᵀ) kernel (linear baseline): h*."""
    return list(token_symbols(L)["hs"])


# -- Gaussian fields ------------------------------------------------------------------------------
def teacher_residual_std() -> sympy.Expr:
    """V* = √(ρ − θ²/q): the part of h*_ℓ independent of the student's field."""
    return sympy.sqrt(rho - theta**2 / q)


def fields(L: int) -> dict[str, list[sympy.Expr]]:
    """ω_ℓ = m_ℓ + √q ξ_ℓ and h*_ℓ = (θ/√q) ξ_ℓ + V* η_ℓ with ξ, η i.i.d. N(0, 1)."""
    s = token_symbols(L)
    vstar = teacher_residual_std()
    return {
        "w": [m + sympy.sqrt(q) * x for m, x in zip(s["m"], s["xi"])],
        "hs": [theta / sympy.sqrt(q) * x + vstar * e for x, e in zip(s["xi"], s["eta"])],
    }


# -- conjugate (hat) equations --------------------------------------------------------------------
def hat_integrands(L: int) -> dict[str, list[sympy.Expr]]:
    """Integrands whose Gaussian averages times α give the conjugates (before the θ correction).

    m̂_ℓ = α E[g_ℓ],  q̂_ℓ = α E[g_ℓ²],  θ̂_ℓ = α E[g_ℓ η_ℓ]/V*,  V̂_ℓ = −α E[g_ℓ ξ_ℓ]/√q + θ θ̂_ℓ/q,
    with g_ℓ = (prox_ℓ − ω_ℓ)/V. The averages are returned as integrands in (g, ξ, η); the
    correction θθ̂_ℓ/q is `Vhat_correction`.
    """
    s = token_symbols(L)
    g = s["g"]
    vstar = teacher_residual_std()
    return {
        "mhat": [g[i] for i in range(L)],
        "qhat": [g[i] ** 2 for i in range(L)],
        "thetahat": [g[i] * s["eta"][i] / vstar for i in range(L)],
        "Vhat": [-g[i] * s["xi"][i] / sympy.sqrt(q) for i in range(L)],
    }


# The Moreau envelope M(ω, h*) at one node (the minimum of `moreau_objective`), for integrands that use its value.
envelope = parameter("M", Domain.real(), latex="M", description="Moreau envelope at a node")


def hat_integrands_by_parts(L: int) -> dict[str, list[sympy.Expr]]:
    """The integrands of `hat_integrands` after Gaussian integration by parts: the same averages, with g_ℓ moved
    off the integrand wherever it enters linearly (m̂, θ̂, V̂), so that the envelope M, which is continuous where g
    jumps (the global minimiser switches basin), is averaged against polynomials in (ξ, η) instead.

    g_ℓ = −∂M/∂ω_ℓ and, from ω_ℓ = m_ℓ + √q ξ_ℓ, h*_ℓ = (θ/√q) ξ_ℓ + V* η_ℓ,
    g_ℓ = −(∂M/∂ξ_ℓ − c ∂M/∂η_ℓ)/√q with c = θ/(√q V*). Stein's lemma, E[∂f/∂z] = E[z f] and
    E[z ∂f/∂z] = E[(z² − 1) f] for a standard normal z (f continuous, as M is), then gives
    E[g_ℓ] = −E[(ξ_ℓ − c η_ℓ) M]/√q, E[g_ℓ η_ℓ] = −E[(ξ_ℓη_ℓ − c(η_ℓ² − 1)) M]/√q and
    −E[g_ℓ ξ_ℓ]/√q = E[((ξ_ℓ² − 1) − c ξ_ℓη_ℓ) M]/q. q̂ = α E[g_ℓ²] is quadratic in g and keeps its integrand.
    On a rule that integrates exactly these are the same averages; on the split-line rules, whose outer
    Gauss-Hermite nodes meet the jumps of g, the continuous integrands converge several times faster.
    """
    s = token_symbols(L)
    vstar = teacher_residual_std()
    c = theta / (sympy.sqrt(q) * vstar)
    xi, eta, g = s["xi"], s["eta"], s["g"]
    return {
        "mhat": [-(xi[i] - c * eta[i]) * envelope / sympy.sqrt(q) for i in range(L)],
        "qhat": [g[i] ** 2 for i in range(L)],
        "thetahat": [-(xi[i] * eta[i] - c * (eta[i] ** 2 - 1)) * envelope / (sympy.sqrt(q) * vstar) for i in range(L)],
        "Vhat": [((xi[i] ** 2 - 1) - c * xi[i] * eta[i]) * envelope / q for i in range(L)],
    }


def hat_by_parts_arguments(L: int) -> list[sympy.Symbol]:
    """Argument order of the by-parts hat-integrand kernel: g, ξ, η (per token), M, q, θ, ρ."""
    s = token_symbols(L)
    return [*s["g"], *s["xi"], *s["eta"], envelope, q, theta, rho]


def hat_arguments(L: int) -> list[sympy.Symbol]:
    """Argument order of the hat-integrand kernel: g, ξ, η (per token), q, θ, ρ."""
    s = token_symbols(L)
    return [*s["g"], *s["xi"], *s["eta"], q, theta, rho]


def Vhat_correction(L: int) -> list[sympy.Expr]:
    """θ θ̂_ℓ / q: Stein's lemma in ξ also differentiates h*, which depends on ξ through θ/√q."""
    return [theta * th / q for th in token_symbols(L)["thetahat"]]


# -- ridge part -----------------------------------------------------------------------------------
def ridge_denominator(L: int) -> sympy.Expr:
    """D = λ + σ² Σ_ℓ V̂_ℓ."""
    return lam + sigma**2 * sum(token_symbols(L)["Vhat"])


def ridge_equations(L: int) -> dict[str, sympy.Expr | list[sympy.Expr]]:
    """Overlaps of the ridge problem min_Q λ‖Q‖²/2 + (quadratic terms with the conjugates).

    V = σ²/D,  m = G_p m̂ / D,  θ = σ² ρ Σθ̂ / D,  q = σ² [σ² Σq̂ + m̂ᵀ G_p m̂ + σ² ρ (Σθ̂)²] / D².
    """
    s = token_symbols(L)
    D = ridge_denominator(L)
    mhat = sympy.Matrix(s["mhat"])
    G = gram_matrix(L)
    thetahat_sum = sum(s["thetahat"])
    quad = (mhat.T * G * mhat)[0, 0]
    return {
        "V": sigma**2 / D,
        "m": list(G * mhat / D),
        "theta": sigma**2 * rho * thetahat_sum / D,
        "q": sigma**2 * (sigma**2 * sum(s["qhat"]) + quad + sigma**2 * rho * thetahat_sum**2) / D**2,
    }


def gram_arguments(L: int) -> list[sympy.Symbol]:
    """The free entries of G_p: the upper triangle, row by row."""
    G = gram_matrix(L)
    return [G[i, j] for i in range(L) for j in range(i, L)]


def ridge_arguments(L: int) -> list[sympy.Symbol]:
    """Argument order of the ridge kernel: m̂, q̂, θ̂, V̂ (per token), G_p (upper triangle), σ, λ, ρ."""
    s = token_symbols(L)
    return [*s["mhat"], *s["qhat"], *s["thetahat"], *s["Vhat"], *gram_arguments(L), sigma, lam, rho]


def free_energy_without_envelope(L: int) -> sympy.Expr:
    """Φ + α E[M]: the entropic and ridge terms of the free energy.

    Φ = ½ Σ_ℓ (V̂_ℓ q − q̂_ℓ V) − Σ_ℓ m_ℓ m̂_ℓ − θ Σ_ℓ θ̂_ℓ
        + ½ [σ² Σq̂ + m̂ᵀ G_p m̂ + σ² ρ (Σθ̂)²] / D − α E[M(ω, h*)],
    stationary in every order parameter and conjugate; at the fixed point ε_t = −Φ.
    """
    s = token_symbols(L)
    mhat = sympy.Matrix(s["mhat"])
    thetahat_sum = sum(s["thetahat"])
    quad = (mhat.T * gram_matrix(L) * mhat)[0, 0]
    return (
        sympy.Rational(1, 2) * sum(vh * q - qh * V for vh, qh in zip(s["Vhat"], s["qhat"]))
        - sum(mm * mh for mm, mh in zip(s["m"], s["mhat"]))
        - theta * thetahat_sum
        + sympy.Rational(1, 2) * (sigma**2 * sum(s["qhat"]) + quad + sigma**2 * rho * thetahat_sum**2) / ridge_denominator(L)
    )


def free_energy_arguments(L: int) -> list[sympy.Symbol]:
    """Argument order of the free-energy kernel: q, V, θ, m (per token), then the ridge arguments."""
    return [q, V, theta, *token_symbols(L)["m"], *ridge_arguments(L)]


# -- linear baseline ------------------------------------------------------------------------------
def linear_baseline_integrand(L: int) -> list[sympy.Expr]:
    """Entries of softmax(h* h*ᵀ), h* ~ N(0, ρ I_L): B* = ωA + (1−ω) E[softmax], and
    ε_g^lin = ½ (1−ω)² σ² Σ_{ℓκ} Var[softmax(h* h*ᵀ)_ℓκ] (independent of α and of A)."""
    return list(attention(token_symbols(L)["hs"]))


def linear_baseline_error_expression(L: int) -> sympy.Expr:
    """ε_g^lin in terms of the per-entry variances v_ℓκ (symbols var_ℓ_κ)."""
    variances = [parameter(f"var_{i}_{j}", Domain.nonnegative(), latex=f"v_{{{i}{j}}}") for i in range(1, L + 1) for j in range(1, L + 1)]
    return sympy.Rational(1, 2) * (1 - omega) ** 2 * sigma**2 * sum(variances)
