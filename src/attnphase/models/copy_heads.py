"""Bayesian copy-head emergence in one attention layer (symbolic source).

Task (spec `copy_heads.md`): sequences of L i.i.d. uniform one-hot tokens x_1..x_L over V symbols; the
target at position l is the previous token, y_l = x_{l-1}. Network: one head, positional attention
matrix G (L×L), read-out W (V×V), f_l = W Σ_m G_lm x_m; prior W_cd ~ N(0, τ); Gaussian likelihood
exp(−β/2 Σ ‖y_l − f_l‖²) over the target positions.

Exact finite-P action (W integrated out, V×V linear algebra). With H_μ = X_μ Gᵀ restricted to target
columns, M = Σ_μ H_μ H_μᵀ, B = Σ_μ H_μ Y_μᵀ, N = P·T targets (T per sequence):

    S(G) = (V/2) log det(I + τβM) − (β²/2) tr[Bᵀ (τ⁻¹I + βM)⁻¹ B] + (NV/2) log(2π/β) + (β/2)‖Y‖²,

which equals the function-space −log marginal likelihood Σ_c [½ log det 2π(β⁻¹I + τΦΦᵀ) +
½ y_cᵀ(β⁻¹I + τΦΦᵀ)⁻¹y_c] (matrix-determinant lemma and Woodbury); the kernel form is kept here only
as the independent reference for small P.

Large-P reduction. M and B self-average: with q = ‖G‖²/T per target row, m = ⟨G, S⟩/T (weight on the
previous position) and t the row sum, M → (n/β)[q(I − 11ᵀ/V)/V + t² 11ᵀ/V²] and B → (n/β)[m(I − 11ᵀ/V)/V
+ t 11ᵀ/V²] with n = β·(number of target tokens). In the (V−1)-dimensional centred subspace and the
all-ones direction everything is diagonal, giving (u = τnq/V, u₁ = τnt²/V, ε = 1 − 1/V)

    S_data = [V(V−1)/2] ln(1+u) − ε τ n² m² / (2V(1+u)) + (V/2) ln(1+u₁) − τ n² t² / (2V²(1+u₁)).

(The copy fit term is written with m² rather than (m²/q)·u so that it stays analytic at G = 0.)

Order parameters: G = t·U + c·S_⊥ + R, U = 11ᵀ/L, S_⊥ = S − U (per target row), R the remainder
(zero row sums, orthogonal to S) with ρ = ‖R‖²/T; then m = (t + (L−1)c)/L, q = (t² + (L−1)c²)/L + ρ.
Softmax rows sum to one (t = 1); the order parameter is the previous-position logit x = logit(a), a
the weight on the previous position, and the other L−1 weights are integrated out (their participation
ratio enters ρ).

Causal mask (boundary "causal"): row l attends to positions ≤ l, so the rows differ; the row-resolved
reductions are in the section "causal mask" below.

This module holds the expressions and the exact action; `attnphase.api.copy_heads` compiles and solves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import sympy

from attnphase.derive.asymptotics import leading_asymptotic
from attnphase.derive.calculus import hessian
from attnphase.derive.symbols import Domain, order_parameter, parameter
from attnphase.params import check_choice, check_int, check_positive, check_real

NAME = "copy-heads"
TITLE = "Bayesian theory of copy-head emergence: softmax vs linear attention"

# -- parameters ------------------------------------------------------------------------------------
n = parameter("n", Domain.positive(), latex="n", description="beta times the number of target tokens")
L = parameter("L", Domain.positive(), latex="L", description="sequence length")
V = parameter("V", Domain.positive(), latex="V", description="vocabulary size")
T = parameter("T", Domain.positive(), latex="T", description="target positions per sequence")
tau = parameter("tau", Domain.positive(), latex=r"\tau", description="prior variance of the read-out weights")
sigma2 = parameter("sigma2", Domain.positive(), latex=r"\sigma^2", description="prior variance of one attention score")
lam_t = parameter("lam_t", Domain.positive(), latex=r"\lambda_t", description="prior precision of the uniform mode t")
lam_c = parameter("lam_c", Domain.positive(), latex=r"\lambda_c", description="prior precision of the copy mode c")
lam_r = parameter("lam_r", Domain.positive(), latex=r"\lambda_\rho", description="prior precision of the remainder (per unit of rho)")
dim_r = parameter("D_r", Domain.nonnegative(), latex="D_R", description="entropy weight (D_R - 2)/2 of the remainder; 0 for the MAP convention")
ld = parameter("ld", Domain.interval(0, 1), latex=r"\ell_W", description="1: read-out integrated out (marginal, log-det terms kept); 0: joint MAP over the read-out")
k_rest = parameter("k_rest", Domain.positive(), latex=r"k", description="(L-1) x participation sum of the non-copy softmax weights")

# -- order parameters ------------------------------------------------------------------------------
t = order_parameter("t", Domain.real(), latex="t", description="uniform pooling strength c_1 (row sum)")
c = order_parameter("c", Domain.real(), latex="c", description="copy strength c_G (coefficient of S - U)")
rho = order_parameter("rho", Domain.positive(), latex=r"\rho", description="remainder norm per target row")
x = order_parameter("x", Domain.real(), latex="x", description="softmax previous-position logit, a = 1/(1+e^{-x})")
m = order_parameter("m", Domain.real(), latex="m", description="overlap with the copy pattern <G,S>/T")
q = order_parameter("q", Domain.positive(), latex="q", description="norm per target row ||G||^2/T")
t2 = order_parameter("t2", Domain.nonnegative(), latex="t_2", description="mean squared row sum over the target rows (causal mask)")

eps = 1 - 1 / V


# -- data term -------------------------------------------------------------------------------------
def data_action_rows(m_expr, q_expr, t1_expr, t2_expr, centred: bool = False) -> sympy.Expr:
    """Self-averaged data term when the target rows differ (causal mask): m, q, t1 = mean row sum and
    t2 = mean squared row sum, all averaged over the T target rows.

    Per target row l, E[h_l h_lᵀ] = q_l(I − 11ᵀ/V)/V + t_l² 11ᵀ/V² and E[h_l y_lᵀ] = g_l(I − 11ᵀ/V)/V +
    t_l 11ᵀ/V² (g_l = G_{l,l−1}); M and B are sums over rows, so they see the rows only through the
    averages m = ⟨g_l⟩, q = ⟨q_l⟩ and, along the all-ones direction, t2 = ⟨t_l²⟩ (in M) and t1 = ⟨t_l⟩
    (in B). With equal rows t2 = t1² and this is `data_action`.
    """
    u = tau * n * q_expr / V
    u1 = tau * n * t2_expr / V
    centred_part = ld * V * (V - 1) / 2 * sympy.log(1 + u) - eps * tau * n**2 * m_expr**2 / (2 * V * (1 + u))
    if centred:
        return centred_part
    return centred_part + ld * V / 2 * sympy.log(1 + u1) - tau * n**2 * t1_expr**2 / (2 * V**2 * (1 + u1))


def data_action(m_expr, q_expr, t_expr, centred: bool = False) -> sympy.Expr:
    """Self-averaged −log marginal likelihood (G-dependent part) at overlap m, norm q, row sum t.

    With ld = 0 the log-det (Occam) terms are dropped: min over W of the joint objective instead of the
    integral over W (what a joint MAP, e.g. Adam on all weights, minimises).

    centred: the inputs are x − 1/V (targets stay one-hot). Then E[h hᵀ] = q(I − 11ᵀ/V)/V and
    E[h yᵀ] = m(I − 11ᵀ/V)/V per target, with no all-ones component: the read-out can no longer output
    the mean 1/V through uniform pooling, and the last two (all-ones) terms drop out.
    """
    return data_action_rows(m_expr, q_expr, t_expr, t_expr**2, centred)


beta_t = parameter("beta_t", Domain.positive(), latex=r"\beta", description="inverse temperature per target token")


def finite_data_field_coefficients(m_expr, q_expr) -> tuple[sympy.Expr, sympy.Expr]:
    """(η_B, κ): how one finite data set moves the exact action away from the self-averaged one, to first order.

    S(M, B) = (V/2) ln det(I + τβM) − (β²/2) tr[Bᵀ A⁻¹ B], A = τ⁻¹I + βM, has dS = tr[Ξ_M dM] + tr[Ξ_B dB] with
    Ξ_M = (Vβ/2)A⁻¹ + (β³/2)A⁻¹BBᵀA⁻¹ and Ξ_B = −β²A⁻¹B. At the self-averaged M, B (one-hot tokens, softmax rows)
    both are multiples of the centred projector Π = I − 11ᵀ/V (their all-ones parts meet no fluctuation: for one-hot
    x, 1ᵀx = 1), Ξ_B = −η_B Π and Ξ_M = κ Π with u = τnq/V,

        η_B = βτnm/(V(1 + u)),   κ = β[ℓ_W Vτ/(2(1 + u)) + (τnm/(V(1 + u)))²/2].

    The fluctuations of a data set of N_s sequences enter only through the pair counts
    ζ_ij = Σ_μ ([x_i^μ = x_j^μ] − 1/V) (i ≠ j; mean 0, variance N_s ε/V, uncorrelated between pairs), as
    tr[Π dB] = Σ_l Σ_{m≠l−1} G_lm ζ_{m,l−1} and tr[Π dM] = Σ_l Σ_{m≠m'} G_lm G_lm' ζ_mm'.
    """
    u = tau * n * q_expr / V
    eta_B = beta_t * tau * n * m_expr / (V * (1 + u))
    kappa = beta_t * (ld * V * tau / (2 * (1 + u)) + (tau * n * m_expr / (V * (1 + u))) ** 2 / 2)
    return eta_B, kappa


def copy_plane(t_expr, c_expr, rho_expr=0):
    """(m, q) of G = tU + c(S − U) + R per target row."""
    return (t_expr + (L - 1) * c_expr) / L, (t_expr**2 + (L - 1) * c_expr**2) / L + rho_expr


# -- linear attention, Convention A (spec §2b) -------------------------------------------------------
def linear_action(centred: bool = False) -> sympy.Expr:
    """Reduced action S(t, c, ρ) for G = κ(A + b11ᵀ), A_lm ~ N(0, σ²), b ~ N(0, s₁).

    Prior: λ_t t²/2 + λ_c c²/2 + λ_ρ ρ/2 − D_r ln ρ (D_r = 0: saddle point over G with no entropy,
    the remainder then sits at ρ = 0 and is dropped by setting rho = 0; D_r = (dim R − 2)/2: the
    remainder's volume is kept).
    """
    m_e, q_e = copy_plane(t, c, rho)
    prior = lam_t * t**2 / 2 + lam_c * c**2 / 2 + lam_r * rho / 2 - dim_r * sympy.log(rho)
    return prior + data_action(m_e, q_e, t, centred)


def linear_action_map(centred: bool = False) -> sympy.Expr:
    """Convention A proper: the remainder at its minimum ρ = 0 (no entropy)."""
    m_e, q_e = copy_plane(t, c)
    return lam_t * t**2 / 2 + lam_c * c**2 / 2 + data_action(m_e, q_e, t, centred)



def symmetric_point_hessian(centred: bool = False) -> sympy.Matrix:
    """Hessian of the Convention-A linear action in (t, c) at the symmetric point t = c = 0.

    H_tt = 0 is the uniform onset, H_cc = 0 the copy onset; H_tc ≠ 0 means a nonzero t drives c
    linearly, which is why the copy onset is a crossover and not a transition.
    """
    return hessian(linear_action_map(centred), [t, c]).subs({t: 0, c: 0}).applyfunc(sympy.simplify)


def copy_onset_leading_form() -> sympy.Expr:
    """Leading large-L form of the copy onset n_c (root of H_cc = 0) under the default convention:
    W integrated out and λ_c = L²(L−1)/σ² (G = (A + b11ᵀ)/L, T = L targets)."""
    h_cc = symmetric_point_hessian()[1, 1].subs({lam_c: L**2 * (L - 1) / sigma2, ld: 1})
    sample = {L: 64, V: 4, sigma2: 1, tau: 1}
    (positive_root,) = [r for r in sympy.solve(sympy.Eq(h_cc, 0), n) if r.subs(sample) > 0]
    return leading_asymptotic(positive_root, L)

# -- linear attention, first attempt (spec §2): only (m, q), i.i.d. G with its full entropy ----------
def first_attempt_action() -> sympy.Expr:
    """S(m, q) = Lq/(2s_g)·(T/L) − ((TL − 2)/2) ln(q − m²) + copy data term; no all-ones mode.

    Written with lam_r = T/s_g (prior precision per unit of q) and dim_r = (TL − 2)/2.
    """
    u = tau * n * q / V
    return lam_r * q / 2 - dim_r * sympy.log(q - m**2) + ld * V * (V - 1) / 2 * sympy.log(1 + u) - eps * tau * n**2 * m**2 / (2 * V * (1 + u))


# -- softmax attention -----------------------------------------------------------------------------
def softmax_weight(x_expr):
    return 1 / (1 + sympy.exp(-x_expr))


def softmax_shortcut_prior(positions=None) -> sympy.Expr:
    """Large-L (law of large numbers) row rate in the logit x = z_prev − ln Σ_{m≠prev} e^{z_m}.

    The softmax denominator of the other L−1 scores is replaced by its mean (L−1)e^{σ²/2}; the row's
    previous-position score is then s = x + ln(L−1) + σ²/2 and costs s²/(2σ²). Valid when the relative
    spread of the denominator, (e^{σ²} − 1)/(L − 1), times (s/σ²)² is small.
    """
    positions = L if positions is None else positions  # causal mask: row l attends to `positions` = l
    s = x + sympy.log(positions - 1) + sigma2 / 2
    return s**2 / (2 * sigma2) + sympy.log(2 * sympy.pi * sigma2) / 2


def softmax_action(row_prior: sympy.Expr | None = None) -> sympy.Expr:
    """Reduced softmax action S(x) = T·I_row(x) + S_data(m = a, q = a² + k(1−a)²/(L−1), t = 1).

    k = (L−1)·E Σ w_m² of the non-copy weights (1 for equal weights, e^{σ²} for lognormal weights at
    large L). The all-ones terms are constant (t = 1) and kept so the action is comparable with the
    exact one.
    """
    prior = softmax_shortcut_prior() if row_prior is None else row_prior
    a = softmax_weight(x)
    q_e = a**2 + k_rest * (1 - a) ** 2 / (L - 1)
    return T * prior + data_action(a, q_e, 1)


# -- causal mask -----------------------------------------------------------------------------------
# Row l (counted from 1) attends to the l positions m ≤ l; targets are rows l = 2..L (T = L − 1; row 1 has
# no previous token). The task has no translation symmetry any more, so the rows differ:
#   * uniform pooling is row dependent, U_l = 1_{m≤l}/l (the prior mean of a softmax row over l scores),
#   * the copy direction of row l is δ_{m,l−1} − U_l (orthogonal to U_l, norm² 1 − 1/l),
#   * the data term sees the rows only through the row averages m, q, t1 = ⟨t_l⟩, t2 = ⟨t_l²⟩
#     (`data_action_rows`).
# Row l of G = t_l U_l + c_l (δ_{l−1} − U_l) + R_l: g_l = G_{l,l−1} = t_l/l + c_l(1 − 1/l),
# q_l = t_l²/l + c_l²(1 − 1/l) + ‖R_l‖².
#
# Linear attention (Convention A, saddle point over G): G = κ(A + b)·mask, A_lm ~ N(0, σ²) on the mask.
# The prior of G's target rows, at the MAP of the row-1 entry and of the bias b, is
#     (λ_a/2) [Σ_l q_l − w_b (Σ_l t_l)²],  λ_a = 1/(κ²σ²),  w_b = 1/(Σ_l l + σ²/s1)  (0 without bias),
# since ‖A_l‖² = q_l/κ² − 2b t_l/κ + l b² is minimised over b in closed form. The remainder R_l costs
# prior and data alike, so it vanishes at the saddle point; c_l enters only through Σ(1 − 1/l)c_l and
# Σ(1 − 1/l)c_l², so by Jensen all rows share one copy strength c at the minimum; the row sums t_l stay
# free (T of them). The action then depends on the row profile t only through four sums,
#     Q_t = Σ t_l²/l,  M_t = Σ t_l/l,  T1 = Σ t_l,  T2 = Σ t_l²,
# with m = (M_t + c(T − H))/T, q = (Q_t + c²(T − H))/T, t1 = T1/T, t2 = T2/T and H = Σ_l 1/l.
sum_t2_l = order_parameter("Q_t", Domain.nonnegative(), latex="Q_t", description="sum over target rows of t_l^2/l")
sum_t_l = order_parameter("M_t", Domain.real(), latex="M_t", description="sum over target rows of t_l/l")
sum_t = order_parameter("T_1", Domain.real(), latex="T_1", description="sum over target rows of t_l")
sum_t2 = order_parameter("T_2", Domain.nonnegative(), latex="T_2", description="sum over target rows of t_l^2")
harmonic = parameter("H_T", Domain.positive(), latex="H", description="sum over target rows of 1/l (l positions visible)")
lam_a = parameter("lam_a", Domain.positive(), latex=r"\lambda_a", description="prior precision 1/(kappa^2 sigma^2) of one entry of G")
w_b = parameter("w_b", Domain.nonnegative(), latex="w_b", description="bias weight 1/(sum_l l + sigma^2/s1); 0 without bias")
l_row = parameter("l", Domain.positive(), latex="l", description="number of positions a row attends to")


def causal_linear_action(centred: bool = False, remainder: bool = False) -> sympy.Expr:
    """Row-resolved action of masked linear attention in (Q_t, M_t, T1, T2, c) (see above).

    remainder=False: Convention A (the remainder at its saddle point ρ = 0). remainder=True: the remainder
    R (zero row sums, orthogonal to the shared copy direction; D = Σ_l (l − 1) − 1 = L(L−1)/2 − 1
    dimensions) keeps its volume. Its prior is isotropic, λ_a‖R‖²/2 (R ⊥ the all-ones vector, so the bias
    does not reach it), and the data term sees it only through q = ... + ρ, ρ = ‖R‖²/T; so the integral over
    R at fixed ρ is exactly a radial one, ∝ ρ^{D/2 − 1}: the action gains λ_a T ρ/2 − D_r ln ρ with
    D_r = (D − 2)/2 (`causal_remainder_dimension`). The rows' remainders R_l (dimension l − 1, the row's
    copy deviation c_l − c included) pool into one radius because the prior and the data weigh them alike.
    """
    spread = T - harmonic  # Σ_l (1 − 1/l)
    prior = lam_a / 2 * (sum_t2_l - w_b * sum_t**2) + lam_a / 2 * c**2 * spread
    q_expr = (sum_t2_l + c**2 * spread) / T
    if remainder:
        prior = prior + lam_a * T * rho / 2 - dim_r * sympy.log(rho)
        q_expr = q_expr + rho
    return prior + data_action_rows((sum_t_l + c * spread) / T, q_expr, sum_t / T, sum_t2 / T, centred)


def causal_remainder_dimension(L_: int) -> int:
    """D = Σ_{l=2}^{L} (l − 1) − 1 = L(L−1)/2 − 1: the target-row directions of masked G with zero row sums,
    less the shared copy direction (periodic analogue: T(L − 1) − 1)."""
    return L_ * (L_ - 1) // 2 - 1


def causal_remainder_stationarity() -> sympy.Expr:
    """∂S/∂ρ of the remainder-entropy causal action at the symmetric point t_l = c = 0:
    λ_a T/2 − D_r/ρ + ℓ_W (V−1)τn/(2(1 + τnρ/V)); its positive root ρ₀(n) is where the remainder sits
    while the symmetric point is stable (a quadratic in ρ with one positive root)."""
    return sympy.diff(causal_linear_action(remainder=True), rho).subs(_ORIGIN)


_ORIGIN = {sum_t2_l: 0, sum_t_l: 0, sum_t: 0, sum_t2: 0, c: 0}
causal_gram = sympy.symbols("Sigma_a Sigma_b Sigma_c", positive=True)


def causal_row_curvatures(centred: bool = False, remainder: bool = False) -> tuple[sympy.Expr, sympy.Expr]:
    """(λ, μ) of the diagonal curvature d_l = λ/l + μ of the row sum t_l at the symmetric point:
    λ = 2∂S/∂Q_t, μ = 2∂S/∂T2 (the linear functionals M_t, T1 add a rank-2 part). remainder=True: at the
    remainder's value ρ (a parameter here; ρ₀(n) at the symmetric point)."""
    S = causal_linear_action(centred, remainder)
    return (sympy.simplify(2 * sympy.diff(S, sum_t2_l).subs(_ORIGIN)), sympy.simplify(2 * sympy.diff(S, sum_t2).subs(_ORIGIN)))


def causal_stability_matrix(centred: bool = False, remainder: bool = False) -> sympy.Matrix:
    """3×3 matrix K whose positivity is the stability of the symmetric point t_l = c = 0.

    The Hessian in (t_2..t_L, c) is diag(d_l) on t plus Bᵀ H₃ B, B the rows (1/l; 0), (1; 0), (0; 1) that
    make (M_t, T1, c), H₃ the Hessian of S in (M_t, T1, c). Minimising the diagonal part over t at fixed
    (M_t, T1) leaves ½ yᵀ Σ⁻¹ y with the Gram matrix Σ = [[Σ_a, Σ_b], [Σ_b, Σ_c]], Σ_a = Σ_l 1/(l(λ + μl)),
    Σ_b = Σ_l 1/(λ + μl), Σ_c = Σ_l l/(λ + μl); so the Hessian is positive iff K = Σ⁻¹ ⊕ 0 + H₃ is, and its
    null vector y* = (M_t, T1, c) gives the soft row profile t_l = (y₁/l + y₂)/d_l·(Σ⁻¹ applied) (api).

    remainder=True: at the symmetric point ∂²S/∂ρ∂(t_l, c) = 0 (S depends on ρ through q and q is even in
    (t, c)), so ρ decouples and K is the same matrix with every u = τnq/V at q = ρ₀ (ρ a parameter).
    """
    S = causal_linear_action(centred, remainder)
    H3 = hessian(S, [sum_t_l, sum_t, c]).subs(_ORIGIN)
    Sa, Sb, Sc = causal_gram
    gram_inverse = sympy.Matrix([[Sa, Sb], [Sb, Sc]]).inv()
    K = H3.copy()
    for i in range(2):
        for j in range(2):
            K[i, j] += gram_inverse[i, j]
    return K


def causal_row_uniform_weight(L_: int) -> float:
    """H = Σ_{l=2}^{L} 1/l: with every row uniform (G_l = U_l) the overlap is m = H/T."""
    return float(sum(1.0 / l for l in range(2, L_ + 1)))


# -- losses ----------------------------------------------------------------------------------------
def mean_predictor_loss(m_expr, q_expr, t_expr, centred: bool = False) -> sympy.Expr:
    """Test loss per target position of the posterior-mean read-out: ε[1 − (m²/q)w(2−w)] + (1−w₁)²/V.

    Centred inputs carry no all-ones component, so the target's mean 1/V is never fitted: w₁ = 0.
    """
    u = tau * n * q_expr / V
    u1 = tau * n * t_expr**2 / V
    w = u / (1 + u)
    w1 = 0 if centred else u1 / (1 + u1)
    return eps * (1 - m_expr**2 / q_expr * w * (2 - w)) + (1 - w1) ** 2 / V


def gibbs_loss(m_expr, q_expr, t_expr, centred: bool = False) -> sympy.Expr:
    """Test loss per position of a read-out sampled from the posterior (adds its variance; centred inputs
    have no all-ones component, so the read-out's variance along it does not reach the output)."""
    u = tau * n * q_expr / V
    u1 = tau * n * t_expr**2 / V
    ones_variance = 0 if centred else tau * t_expr**2 / (1 + u1)
    return mean_predictor_loss(m_expr, q_expr, t_expr, centred) + (V - 1) * tau * q_expr / (1 + u) + ones_variance


def mean_predictor_loss_rows(m_expr, q_expr, t1_expr, t2_expr, centred: bool = False) -> sympy.Expr:
    """`mean_predictor_loss` when the rows differ (causal mask): along the all-ones direction the
    read-out is w = τn t1/(V(1 + u₁)), u₁ = τn t2/V, and the loss there is (1 − 2w t1 + w² t2)/V
    (= (1 − w₁)²/V when t2 = t1²)."""
    u = tau * n * q_expr / V
    w = u / (1 + u)
    copy_part = eps * (1 - m_expr**2 / q_expr * w * (2 - w))
    if centred:
        return copy_part + 1 / V
    w_ones = tau * n * t1_expr / (V * (1 + tau * n * t2_expr / V))
    return copy_part + (1 - 2 * w_ones * t1_expr + w_ones**2 * t2_expr) / V


def gibbs_loss_rows(m_expr, q_expr, t1_expr, t2_expr, centred: bool = False) -> sympy.Expr:
    """`gibbs_loss` when the rows differ: the read-out's posterior variance seen through ⟨h hᵀ⟩."""
    u = tau * n * q_expr / V
    ones_variance = 0 if centred else tau * t2_expr / (1 + tau * n * t2_expr / V)
    return mean_predictor_loss_rows(m_expr, q_expr, t1_expr, t2_expr, centred) + (V - 1) * tau * q_expr / (1 + u) + ones_variance


# -- conventions -----------------------------------------------------------------------------------
BOUNDARIES = ("periodic", "drop-first", "causal")
P_COUNTS = ("sequences", "tokens")
LOSS_REDUCTIONS = ("summed", "averaged")
TAU_SCALES = ("one", "inverse-V")
LINEAR_SCALES = ("1/L", "1/sqrt(L)", "1")
REMAINDERS = ("map", "entropy")
TOKENS = ("one-hot", "centred")
READ_OUTS = ("integrated", "map")
ROW_SUMS = ("shared", "per-row")


@dataclass(frozen=True)
class Convention:
    """Choices that move thresholds by powers of L and V (spec §2).

    boundary: periodic (y_1 = x_L, T = L targets), drop-first (T = L − 1) or causal (T = L − 1 and row l
    attends to positions ≤ l only: see the causal-mask section).
    P_counts: what P counts, sequences or target tokens.
    loss: the squared error summed over positions, or averaged (β → β/T per sequence).
    tau_scale: value-prior variance τ = tau0 ("one") or tau0/V.
    linear_scale: κ in G = κ(A + b11ᵀ).
    bias: the score bias b on the uniform mode (variance s1) is present.
    remainder: "map" (saddle point over G, no entropy: Convention A) or "entropy" (the remainder's
    volume is kept, a free energy over G).
    read_out: "integrated" (W integrated out: the Bayesian marginal) or "map" (joint MAP over W, what
    Adam on all weights minimises; the log-det terms drop).
    tokens: inputs "one-hot" or "centred" (x − 1/V; targets stay one-hot): the all-ones terms of the data
    action drop (`data_action`). Softmax rows sum to 1, so centring shifts every feature by the constant
    vector 1/V and changes the softmax action by a constant only.
    row_sums (linear attention, periodic and drop-first): "shared" (one global row sum t, the plane t U + c S_⊥) or
    "per-row" (one row sum t_l per target row, the row-resolved plane of the causal section with every row of length
    L). The saddle point has equal row sums, so only the order parameters' fluctuations (`api.linear_posterior_means`)
    see the difference: the T − 1 row-sum spreads that posterior sampling of the network integrates over. The causal
    mask is always row-resolved.
    """

    boundary: str = "periodic"
    P_counts: str = "tokens"
    loss: str = "summed"
    tau_scale: str = "one"
    linear_scale: str = "1/L"
    bias: bool = True
    remainder: str = "map"
    read_out: str = "integrated"
    tokens: str = "one-hot"
    row_sums: str = "shared"
    beta: float = 1.0
    tau0: float = 1.0
    sigma2: float = 1.0
    s1: float = 1.0

    def __post_init__(self):
        check_choice("boundary", self.boundary, BOUNDARIES)
        check_choice("P_counts", self.P_counts, P_COUNTS)
        check_choice("loss", self.loss, LOSS_REDUCTIONS)
        check_choice("tau_scale", self.tau_scale, TAU_SCALES)
        check_choice("linear_scale", self.linear_scale, LINEAR_SCALES)
        check_choice("remainder", self.remainder, REMAINDERS)
        check_choice("read_out", self.read_out, READ_OUTS)
        check_choice("tokens", self.tokens, TOKENS)
        check_choice("row_sums", self.row_sums, ROW_SUMS)
        for name in ("beta", "tau0", "sigma2", "s1"):
            check_positive(name, getattr(self, name))

    @property
    def centred(self) -> bool:
        return self.tokens == "centred"

    @property
    def log_det_weight(self) -> float:
        return 1.0 if self.read_out == "integrated" else 0.0

    def with_(self, **changes) -> Convention:
        return replace(self, **changes)

    def targets(self, L_: int) -> int:
        return L_ if self.boundary == "periodic" else L_ - 1

    def tau(self, V_: int) -> float:
        return self.tau0 if self.tau_scale == "one" else self.tau0 / V_

    def kappa(self, L_: int) -> float:
        return {"1/L": 1.0 / L_, "1/sqrt(L)": 1.0 / math.sqrt(L_), "1": 1.0}[self.linear_scale]

    def beta_per_target(self, L_: int) -> float:
        """Inverse temperature multiplying each target's squared error."""
        return self.beta if self.loss == "summed" else self.beta / self.targets(L_)

    def n_of_P(self, P, L_: int):
        """n = β_eff × number of target tokens for P samples (P sequences or P target tokens)."""
        tokens = P * self.targets(L_) if self.P_counts == "sequences" else P
        return self.beta_per_target(L_) * tokens

    def P_of_n(self, n_, L_: int):
        tokens = n_ / self.beta_per_target(L_)
        return tokens / self.targets(L_) if self.P_counts == "sequences" else tokens

    def linear_precisions(self, L_: int) -> dict[str, float]:
        """Prior precisions of t, c and ρ for G = κ(A + b11ᵀ) restricted to the T target rows.

        t = κL b + (mean score)κ: variance κ²(L² s1 + Lσ²/T) (no bias: κ²Lσ²/T); the copy direction
        c(S − U) needs A = (c/κ)(e_prev − 1/L) per row: precision T(L−1)/(κ²Lσ²); the remainder
        ρ = ‖R‖²/T: precision T/(κ²σ²).
        """
        k, T_ = self.kappa(L_), self.targets(L_)
        var_t = k**2 * ((L_**2 * self.s1 if self.bias else 0.0) + L_ * self.sigma2 / T_)
        return {
            "lam_t": 1.0 / var_t,
            "lam_c": T_ * (L_ - 1) / (k**2 * L_ * self.sigma2),
            "lam_r": T_ / (k**2 * self.sigma2),
            # zero-row-sum remainder orthogonal to the copy direction: T(L−1) − 1 dimensions
            "D_r": (T_ * (L_ - 1) - 1 - 2) / 2 if self.remainder == "entropy" else 0.0,
        }


DEFAULT = Convention()


# -- exact finite-P action (numpy; V×V linear algebra) ------------------------------------------------
def one_hot(tokens: np.ndarray, V_: int) -> np.ndarray:
    """(P, L) integer tokens -> (P, L, V) one-hot."""
    return np.eye(V_)[tokens]


def target_rows(L_: int, boundary: str) -> np.ndarray:
    return np.arange(L_) if boundary == "periodic" else np.arange(1, L_)


def visible_positions(L_: int, boundary: str) -> np.ndarray:
    """Number of positions each target row attends to: L, or l for row l (1-based) under the causal mask."""
    rows = target_rows(L_, boundary)
    return rows + 1 if boundary == "causal" else np.full(len(rows), L_)


def causal_mask(L_: int) -> np.ndarray:
    """mask_lm = 1 for m ≤ l (row l attends to the current and earlier positions)."""
    return np.tril(np.ones((L_, L_)))


def causal_plane_matrix(L_: int, t_rows, c_: float) -> np.ndarray:
    """Masked G with target rows t_l U_l + c(δ_{l−1} − U_l) (U_l = 1_{m≤l}/l) and row 1 zero; t_rows has
    L − 1 entries (one per target row) or is a scalar."""
    t_rows = np.broadcast_to(np.asarray(t_rows, float), (L_ - 1,))
    G = np.zeros((L_, L_))
    for i in range(1, L_):
        l_ = i + 1
        G[i, :l_] = t_rows[i - 1] / l_ - c_ / l_
        G[i, i - 1] += c_
    return G


def shift_matrix(L_: int) -> np.ndarray:
    """S_lm = δ_{m, l−1} (periodic: row 0 points at L−1)."""
    return np.roll(np.eye(L_), -1, axis=1)


def features_and_targets(G: np.ndarray, tokens: np.ndarray, V_: int, boundary: str = "periodic", centred: bool = False):
    """Φ (N×V) rows h_l = Σ_m G_lm x_m and Y (N×V) rows y_l = x_{l−1}, over target positions
    (centred: the inputs x_m − 1/V, the targets one-hot)."""
    X = one_hot(tokens, V_)
    rows = target_rows(G.shape[0], boundary)
    H = np.einsum("lm,pmv->plv", G[rows], X - 1.0 / V_ if centred else X)
    Y = X[:, (rows - 1) % G.shape[0], :]
    return H.reshape(-1, V_), Y.reshape(-1, V_)


def weight_space_action(G, tokens, V_: int, beta_: float, tau_: float, boundary: str = "periodic", centred: bool = False) -> float:
    """Exact −log p(Y | G) with W integrated out, by V×V linear algebra (never the N×N kernel)."""
    Phi, Y = features_and_targets(np.asarray(G, float), tokens, V_, boundary, centred)
    N = Phi.shape[0]
    M = Phi.T @ Phi
    B = Phi.T @ Y
    A = np.eye(V_) / tau_ + beta_ * M
    sign, logdet = np.linalg.slogdet(np.eye(V_) + tau_ * beta_ * M)
    cho = np.linalg.cholesky(A)
    Z = np.linalg.solve(cho, B)
    return float(
        V_ / 2 * logdet - beta_**2 / 2 * np.sum(Z * Z) + N * V_ / 2 * math.log(2 * math.pi / beta_) + beta_ / 2 * np.sum(Y * Y)
    )


def function_space_action(G, tokens, V_: int, beta_: float, tau_: float, boundary: str = "periodic", centred: bool = False) -> float:
    """Reference: the same −log marginal likelihood from the N×N kernel K = τΦΦᵀ + β⁻¹I (small N only)."""
    Phi, Y = features_and_targets(np.asarray(G, float), tokens, V_, boundary, centred)
    N = Phi.shape[0]
    K = tau_ * Phi @ Phi.T + np.eye(N) / beta_
    sign, logdet = np.linalg.slogdet(2 * math.pi * K)
    alpha_ = np.linalg.solve(K, Y)
    return float(V_ / 2 * logdet + 0.5 * np.sum(Y * alpha_))


def copy_plane_matrix(L_: int, t_: float, c_: float) -> np.ndarray:
    """G = tU + c(S − U)."""
    U = np.full((L_, L_), 1.0 / L_)
    return t_ * U + c_ * (shift_matrix(L_) - U)


def softmax_symmetric_matrix(L_: int, a: float) -> np.ndarray:
    """Row-stochastic G with weight a on the previous position and (1−a)/(L−1) elsewhere."""
    S = shift_matrix(L_)
    return a * S + (1 - a) / (L_ - 1) * (1 - S)


def order_parameters_of(G: np.ndarray, boundary: str = "periodic") -> dict[str, np.ndarray]:
    """Projections of G (..., L, L) on the plane: t (mean row sum), m, c, a (= m), ρ (remainder).

    Causal mask: c is the projection on the row-dependent copy direction δ_{l−1} − U_l (shared by all
    rows), t the mean row sum, t2 the mean squared row sum (what the data term's all-ones part sees)."""
    G = np.asarray(G, float)
    L_ = G.shape[-1]
    rows = target_rows(L_, boundary)
    Gt = G[..., rows, :]
    T_ = len(rows)
    if boundary == "causal":
        # row-resolved plane: c = Σ_l (g_l − t_l/l) / Σ_l (1 − 1/l) is the projection on the copy direction
        # S − U_causal; ρ the remainder of q beyond Σ_l [t_l²/l + c²(1 − 1/l)]/T
        l_ = visible_positions(L_, boundary).astype(float)
        t_rows = Gt.sum(axis=-1)
        g_rows = Gt[..., np.arange(T_), rows - 1]
        spread = float(np.sum(1 - 1 / l_))
        c_ = (g_rows - t_rows / l_).sum(axis=-1) / spread
        q_ = (Gt**2).sum(axis=(-1, -2)) / T_
        rho_ = q_ - ((t_rows**2 / l_).sum(axis=-1) + c_**2 * spread) / T_
        return {"t": t_rows.mean(axis=-1), "c": c_, "m": g_rows.mean(axis=-1), "q": q_, "rho": rho_,
                "t2": (t_rows**2).mean(axis=-1)}
    t_ = Gt.sum(axis=(-1, -2)) / T_
    m_ = Gt[..., np.arange(T_), (rows - 1) % L_].sum(axis=-1) / T_
    c_ = (m_ - t_ / L_) * L_ / (L_ - 1)
    q_ = (Gt**2).sum(axis=(-1, -2)) / T_
    rho_ = q_ - (t_**2 + (L_ - 1) * c_**2) / L_
    return {"t": t_, "c": c_, "m": m_, "q": q_, "rho": rho_}


# -- priors ----------------------------------------------------------------------------------------
def logistic_normal_logpdf(g: np.ndarray, sigma2_: float) -> np.ndarray:
    """log density of g = softmax(z), z ~ N(0, σ²I_L), w.r.t. Lebesgue measure on (g_1..g_{L−1}).

    −log p(g) = Σ_m log g_m + ‖log g − mean(log g)‖²/(2σ²) + ((L−1)/2) log(2πσ²) + ½ log L
    (additive logistic-normal density with covariance σ²(I + 11ᵀ) of log(g_m/g_L)).
    """
    g = np.asarray(g, float)
    L_ = g.shape[-1]
    lg = np.log(g)
    centred = lg - lg.mean(axis=-1, keepdims=True)
    return -(lg.sum(axis=-1) + (centred**2).sum(axis=-1) / (2 * sigma2_) + (L_ - 1) / 2 * math.log(2 * math.pi * sigma2_) + 0.5 * math.log(L_))


def row_logit_density_integrand(x_values: np.ndarray, sigma2_: float):
    """Integrand of the exact row density of x = z_prev − ln Σ_{m≠prev} e^{z_m}:

    p(x) = E_{z ∈ R^{L−1}}[φ_σ(x + ln Σ_m e^{z_m})],   z ~ N(0, σ²I).
    Returns f(z) -> (N, len(x)) for a Gaussian-expectation routine.
    """
    xs = np.atleast_1d(np.asarray(x_values, float))

    def f(z):
        lse = np.logaddexp.reduce(z, axis=1)[:, None]
        s = xs[None, :] + lse
        return np.exp(-(s**2) / (2 * sigma2_)) / math.sqrt(2 * math.pi * sigma2_)

    return f


def row_joint_density_integrand(x_values: np.ndarray, sigma2_: float, edges: np.ndarray):
    """Integrand of the joint density of a row's previous-position logit x and the participation Y = Σ_m w_m²
    of its other weights (w = softmax of the L−1 other scores, so the row's q = a² + (1 − a)² Y, a = 1/(1 + e^{−x})):

        p(x, Y ∈ bin k) = E_z[φ_σ(x + ln Σ_m e^{z_m}) 1_k(Y(z))],

    with the same expectation times Y and times Σ_{m≠m'} w_m² w_m'² = Y² − Σ_m w_m⁴ (what the finite-data correction
    needs), bins k between consecutive `edges`. Returns f(z) -> (N, 3·len(x)·n_bins), flattened from (3, len(x),
    n_bins): the ratios to the first are the conditional means within the bin given x. Y and the softmax denominator
    are both functions of the other scores, so Y is correlated with x; `row_participation_integrand` keeps only its
    prior mean.
    """
    xs = np.atleast_1d(np.asarray(x_values, float))
    edges = np.asarray(edges, float)
    n_bins = len(edges) - 1

    def f(z):
        lse = np.logaddexp.reduce(z, axis=1)
        w2 = np.exp(2 * (z - lse[:, None]))
        Y = w2.sum(axis=1)
        pairs = Y * Y - (w2 * w2).sum(axis=1)
        onehot = np.zeros((len(Y), n_bins))
        onehot[np.arange(len(Y)), np.clip(np.searchsorted(edges, Y, side="right") - 1, 0, n_bins - 1)] = 1.0
        s = xs[None, :] + lse[:, None]
        phi = np.exp(-(s**2) / (2 * sigma2_)) / math.sqrt(2 * math.pi * sigma2_)  # (N, n_x)
        joint = phi[:, :, None] * onehot[:, None, :]
        return np.stack([joint, joint * Y[:, None, None], joint * pairs[:, None, None]], axis=1).reshape(len(Y), -1)

    return f


def row_participation_integrand(sigma2_: float):
    """(L−1)·Σ_m w_m² for the softmax weights w of L−1 Gaussian scores: k of `softmax_action`."""

    def f(z):
        w = np.exp(z - np.logaddexp.reduce(z, axis=1)[:, None])
        return (w**2).sum(axis=1) * z.shape[1]

    return f


def check_sizes(L_, V_) -> tuple[int, int]:
    return check_int("L", L_, 2, None), check_int("V", V_, 2, None)


def check_P(P_) -> float:
    return check_real("P", P_, 0.0, None, low_open=True)


# -- rendered derivation ---------------------------------------------------------------------------
def derivation_markdown() -> str:
    """The equations of this module, rendered (deterministic)."""
    from attnphase.derive.render import MarkdownDocument

    doc = MarkdownDocument()
    doc.heading(TITLE, 1)
    doc.paragraph(
        "Copy task: L i.i.d. one-hot tokens over V symbols, target y_l = x_{l-1}. One attention head "
        "with positional attention G and read-out W ~ N(0, tau). W is integrated out exactly; n is beta "
        "times the number of target tokens. All expressions below are the ones the solvers compile."
    )
    doc.heading("Exact finite-P action (W integrated out)", 2)
    doc.paragraph(
        "With H = X G^T over the target columns, M = sum_mu H H^T and B = sum_mu H Y^T (V x V), "
        "S(G) = (V/2) log det(I + tau beta M) - (beta^2/2) tr[B^T (I/tau + beta M)^{-1} B] + (NV/2) log(2 pi/beta) "
        "+ (beta/2)||Y||^2, equal to the kernel form sum_c [1/2 log det 2 pi K + 1/2 y_c^T K^{-1} y_c], "
        "K = tau Phi Phi^T + I/beta (matrix-determinant lemma and Woodbury)."
    )
    doc.heading("Self-averaged data term", 2)
    doc.equation(sympy.Symbol("S_data"), data_action(m, q, t), label="data")
    doc.heading("Linear attention, Convention A (saddle point over G)", 2)
    doc.paragraph("G = tU + c(S - U); lam_t, lam_c are the prior precisions of the two modes.")
    doc.equation(sympy.Symbol("S_lin"), linear_action_map(), label="linear")
    doc.heading("Linear attention with the remainder rho (entropy weight D_r)", 2)
    doc.equation(sympy.Symbol("S_lin_rho"), linear_action(), label="linear-rho")
    doc.heading("First attempt: overlap m and norm q only", 2)
    doc.equation(sympy.Symbol("S_first"), first_attempt_action(), label="first")
    doc.heading("Softmax attention: previous-position logit x, large-L row rate", 2)
    doc.equation(sympy.Symbol("I_row"), softmax_shortcut_prior(), label="row-rate")
    doc.equation(sympy.Symbol("S_soft"), softmax_action(), label="softmax")
    doc.paragraph(
        "Large L (u >> 1): on the copy branch a^2 >> k/L, the fit gain is (eps n/2) rho with rho = 1/(1 + e^{-2y}), "
        "s = ln(L)/2 + sigma^2 + y; stationarity gives e^{-2y} = 2/ln L and coexistence "
        "n* = T ln^2 L/(4 eps sigma^2) (1 + (2 ln ln L + 4 sigma^2 + 2 - 2 ln 2)/ln L + ...)."
    )
    doc.heading("Derived: curvature of the linear action at the symmetric point", 2)
    doc.paragraph(
        "Hessian of S_lin in (t, c) at t = c = 0 (derive.calculus). H_tt = 0 gives the uniform onset n_U, "
        "H_cc = 0 the copy onset n_c; the off-diagonal entry couples them, so a nonzero t drives c linearly "
        "(a crossover)."
    )
    hessian_at_origin = symmetric_point_hessian()
    doc.equation(sympy.Symbol("H_tt"), hessian_at_origin[0, 0], label="H-tt")
    doc.equation(sympy.Symbol("H_tc"), hessian_at_origin[0, 1], label="H-tc")
    doc.equation(sympy.Symbol("H_cc"), hessian_at_origin[1, 1], label="H-cc")
    doc.paragraph(
        "Leading large-L form of the copy onset (derive.asymptotics), default convention "
        "(lam_c = L^2 (L-1)/sigma^2, W integrated out):"
    )
    doc.equation(sympy.Symbol("n_c"), copy_onset_leading_form(), label="copy-onset", relation="\\sim")
    doc.heading("Centred input tokens", 2)
    doc.paragraph(
        "Inputs x - 1/V (targets one-hot): the features have no all-ones component, the two all-ones terms "
        "of S_data drop and only H_tt changes at the symmetric point (the uniform mode loses its own data gain):"
    )
    doc.equation(sympy.Symbol("H_tt^centred"), symmetric_point_hessian(centred=True)[0, 0], label="H-tt-centred")
    doc.heading("Softmax: row mean field (finite-L sampling)", 2)
    doc.paragraph(
        "The data term couples the T rows only through m (mean previous-position weight) and q (mean row norm); "
        "the rows are independent under the prior, so the free energy is F(m, q) = T Lambda*(m, q) + S_data(m, q), "
        "Lambda* the Legendre transform of the row cumulant function Lambda(h, g) = ln E exp(h a + g q_row) under "
        "the exact row-logit density. The homogeneous action T I_row(x) + S_data is its limit when each row's "
        "tilted density concentrates; at L ~ 32 it does not (api.softmax_row_mean_field)."
    )
    doc.paragraph(
        "Dual plane: (h, g) -> (m, q) = grad Lambda(h, g) is a bijection (Lambda strictly convex), so F is also the function "
        "F~(h, g) = T(h m + g q - Lambda) + S_data(m, q) of the tilts, with the same stationary points of the same type "
        "(grad F~ = Hess Lambda . grad F) and the same mountain-pass barriers; Lambda does not depend on P, so one table "
        "of it serves a whole scan (api.softmax_dual_mean_field). Every minimum and barrier of the row mean field is "
        "searched on this plane (api.softmax_row_mean_field): following one root g(h) of the q-condition instead can "
        "miss minima, because that condition has several roots on the copy branch."
    )
    doc.heading("Causal mask", 2)
    doc.paragraph(
        "Row l (counted from 1) attends to the l positions m <= l; the targets are rows l = 2..L (T = L - 1). "
        "The uniform pattern is row dependent, U_l = 1_{m<=l}/l (the prior mean of a softmax row over l scores), "
        "and the copy direction of row l is delta_{m,l-1} - U_l (orthogonal to U_l, squared norm 1 - 1/l). The data "
        "term sums over rows, so it sees them only through row averages: m = <g_l>, q = <q_l> and, along the "
        "all-ones direction, t2 = <t_l^2> in M and t1 = <t_l> in B:"
    )
    doc.equation(sympy.Symbol("S_data^rows"), data_action_rows(m, q, t, t2), label="data-rows")
    doc.paragraph(
        "Linear attention G = kappa (A + b) mask, Convention A. With b at its minimum the prior of the target rows is "
        "(lam_a/2)[sum_l q_l - w_b (sum_l t_l)^2], lam_a = 1/(kappa^2 sigma^2), w_b = 1/(sum_l l + sigma^2/s1). The remainder "
        "of each row vanishes at the saddle point, all rows share one copy strength c (Jensen), and the T row sums "
        "t_l stay free; the action depends on them through Q_t = sum t_l^2/l, M_t = sum t_l/l, T_1 = sum t_l, "
        "T_2 = sum t_l^2 (H = sum_l 1/l):"
    )
    doc.equation(sympy.Symbol("S_lin^causal"), causal_linear_action(), label="linear-causal")
    lam_row, mu_row = causal_row_curvatures()
    doc.paragraph(
        "At the symmetric point the Hessian in (t_2..t_L, c) is diag(lambda/l + mu) on t plus a rank-3 part through "
        "(M_t, T_1, c), with"
    )
    doc.equation(sympy.Symbol("lambda"), lam_row, label="row-curvature-lambda")
    doc.equation(sympy.Symbol("mu"), mu_row, label="row-curvature-mu")
    doc.paragraph(
        "Minimising the diagonal part at fixed (M_t, T_1) leaves the inverse Gram matrix of (1/l, 1) weighted by "
        "1/(lambda/l + mu): Sigma_a = sum 1/(l(lambda + mu l)), Sigma_b = sum 1/(lambda + mu l), Sigma_c = sum l/(lambda + mu l) "
        "(digamma differences). The symmetric point is stable iff K is positive definite; the uniform onset is where its "
        "smallest eigenvalue vanishes, with the soft row profile t_l proportional to (alpha/l + beta)/(lambda/l + mu); "
        "the Landau expansion along that profile classifies the transition, and K_cc = 0 is the copy crossover."
    )
    doc.equation(sympy.Symbol("K"), causal_stability_matrix(), label="causal-stability")
    doc.paragraph("Softmax: row l is the softmax of l Gaussian scores; its large-l rate in the previous-position logit is")
    doc.equation(sympy.Symbol("I_l"), softmax_shortcut_prior(l_row), label="row-rate-l")
    doc.paragraph(
        "and its exact logit density is E[phi_sigma(x + ln sum_{m <= l, m != l-1} e^{z_m})] over the other l - 1 scores. "
        "The rows are independent under the prior and meet the data term through m and q, so the row mean field is "
        "F(m, q) = sup_{h,g} [T(h m + g q) - sum_l Lambda_l(h, g)] + S_data(m, q), each row with its own cumulant "
        "function Lambda_l(h, g) = ln E_l exp(h a + g q_l); without data its minimum is the causal uniform pattern "
        "m = H/T (c = 0). The copy strength is c = (T m - H)/(T - H)."
    )
    doc.heading("Causal mask with the remainder's entropy", 2)
    doc.paragraph(
        "What the sampled network realises (the sampler integrates over every score). Write each target row as "
        "t_l U_l + c (delta_{l-1} - U_l) + R_l with R_l orthogonal to both (dimension l - 2), and pool the rows' copy "
        "deviations c_l - c into R: the remainder R has zero row sums and is orthogonal to the shared copy direction, "
        "D = sum_l (l - 1) - 1 = L(L-1)/2 - 1 dimensions (periodic: T(L-1) - 1). R is orthogonal to the all-ones "
        "vector, so the bias does not reach it and its prior is isotropic, lam_a ||R||^2/2, with no coupling to (t_l, c); "
        "the data term sees it only through q = ... + rho, rho = ||R||^2/T. The integral over R at fixed rho is therefore "
        "exactly radial, proportional to rho^{D/2 - 1}: the rows' remainders (row-dependent dimensions l - 2, plus the "
        "copy deviations) enter only through their pooled dimension D, and the action gains lam_a T rho/2 - D_r ln rho "
        "with D_r = (D - 2)/2:"
    )
    doc.equation(sympy.Symbol("S_lin^causal,rho"), causal_linear_action(remainder=True), label="linear-causal-rho")
    doc.paragraph(
        "At the symmetric point t_l = c = 0 the remainder sits at the positive root rho_0(n) of (a quadratic in rho)"
    )
    doc.equation(sympy.Symbol("dS/drho"), causal_remainder_stationarity(), label="causal-rho-stationarity")
    doc.paragraph(
        "and, since S depends on rho through q, which is even in (t, c), rho decouples from (t_l, c) there: the stability "
        "matrix K is the one above with every u = tau n q/V at q = rho_0 (causal_stability_matrix(remainder=True)). Along "
        "the soft direction phi the remainder relaxes, S = S_0 + a_2 phi^2 + a_4 phi^4 + b phi^2 delta rho + S_rr delta rho^2/2 "
        "with b = da_2/drho, so the Landau quartic is a_4 - b^2/(2 S_rr) (it stays positive: second order, exponent 1/2). "
        "Crossover (K_cc = 0): K_cc/(T - H) = lam_a + l_W (V-1) tau n/(T(1 + u_0)) - eps tau n^2 (T - H)/(T^2 V (1 + u_0)), "
        "u_0 = tau n rho_0/V. With lam_a = L^2/sigma^2 (kappa = 1/L) and n ~ L^2, rho_0 -> 2 D_r/(lam_a T) -> sigma^2/(2L), "
        "so lam_a u_0 -> tau n L/(2V) dominates the left side and eps tau n^2/(L V) is the right side: "
        "n_X -> L^2/(2 eps) = V L^2/(2(V - 1)), independent of sigma^2 and tau, with O((ln L + V)/L) corrections. The "
        "remainder's volume grows like L^2/4 in ln rho and keeps rho_0 ~ 1/L, whose noise in the pooled features "
        "(u_0 ~ n/L) replaces Convention A's lam_a by lam_a u_0: the crossover moves from L^{3/2} V^{1/2} to L^2, as with "
        "the periodic boundary. The uniform onset is unchanged to leading order (u_0 ~ 1/L at n ~ V^2): P* ~ V^2."
    )
    doc.paragraph(
        "Fluctuations of the order parameters (api.linear_posterior_means): at large n the likelihood is invariant under "
        "G -> lambda G, W -> W/lambda, so the overall scale of G is held only by the prior and the O(V^2 + D) logarithms, "
        "and its relative width is ~ (V^2 + D)^{-1/2}; at L = 8 the means of t and rho over exp(-S) (Lebesgue measure in "
        "(t_l, c), d rho = rho d ln rho) lie 5-25% above the saddle point. These means, not the saddle values, are what "
        "the sampled network is compared with."
    )
    doc.heading("Test loss per position", 2)
    doc.equation(sympy.Symbol("E_mean"), mean_predictor_loss(m, q, t), label="loss-mean")
    doc.equation(sympy.Symbol("E_Gibbs"), gibbs_loss(m, q, t), label="loss-gibbs")
    return doc.text()
