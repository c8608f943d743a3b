"""Bayesian copy-head emergence in one attention layer (symbolic source).

Task: sequences of L i.i.d. uniform one-hot tokens x_1..x_L over V symbols; the
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

This module holds the expressions, and the forms of them the solvers compile (a positive variable
written as an exponential, the Landau coefficients along a soft direction, the remainder's stationarity as
a quadratic); `kernels` compiles them, `exact` holds the exact finite-P action in numpy, `derivation`
renders this module.
"""

from __future__ import annotations


from __future__ import annotations

import sympy

from attnphase.derive.asymptotics import leading_asymptotic
from attnphase.derive.calculus import hessian
from attnphase.derive.landau import landau_expansion
from attnphase.derive.symbols import Domain, order_parameter, parameter

__all__ = [
    "NAME", "TITLE", "n", "L", "V", "T", "tau", "sigma2", "lam_t", "lam_c", "lam_r", "dim_r", "ld", "k_rest", "t", "c",
    "rho", "x", "m", "q", "t2", "eps", "beta_t", "sum_t2_l", "sum_t_l", "sum_t", "sum_t2", "harmonic", "lam_a", "w_b",
    "l_row", "causal_gram", "r", "phi", "v_t", "v_c", "r0", "causal_direction",
    "data_action_rows", "data_action", "finite_data_field_coefficients", "copy_plane", "linear_action",
    "linear_action_map", "symmetric_point_hessian", "copy_onset_leading_form", "first_attempt_action", "softmax_weight",
    "softmax_shortcut_prior", "softmax_action", "causal_linear_action", "causal_remainder_dimension",
    "causal_remainder_stationarity", "causal_row_curvatures", "causal_stability_matrix", "causal_row_uniform_weight",
    "mean_predictor_loss", "gibbs_loss", "mean_predictor_loss_rows", "gibbs_loss_rows", "linear_action_log_remainder",
    "first_attempt_action_log_gap", "causal_linear_action_log_remainder", "linear_landau_coefficients",
    "first_attempt_landau_coefficients", "causal_landau_coefficients", "causal_remainder_quadratic",
    "softmax_data_terms",
]

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


# -- linear attention, Convention A --------------------------------------------------------------------
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

# -- linear attention, first attempt: only (m, q), i.i.d. G with its full entropy ------------------------
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


def softmax_action(row_prior: sympy.Expr | None = None, centred: bool = False) -> sympy.Expr:
    """Reduced softmax action S(x) = T·I_row(x) + S_data(m = a, q = a² + k(1−a)²/(L−1), t = 1).

    k = (L−1)·E Σ w_m² of the non-copy weights (1 for equal weights, e^{σ²} for lognormal weights at
    large L). With one-hot tokens the all-ones terms are constant (t = 1) and kept so the action is comparable
    with the exact one; with centred tokens they are not part of the model (`data_action`).
    """
    prior = softmax_shortcut_prior() if row_prior is None else row_prior
    a = softmax_weight(x)
    q_e = a**2 + k_rest * (1 - a) ** 2 / (L - 1)
    return T * prior + data_action(a, q_e, 1, centred)


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



# -- the forms the solvers compile ---------------------------------------------------------------------
# A positive variable is written as an exponential, so that an unconstrained minimiser cannot leave its
# domain: ρ = e^r (the remainder), q − m² = e^r (the first attempt's norm beyond the overlap).
r = sympy.Symbol("r", real=True)
phi = sympy.Symbol("phi", real=True)  # amplitude along a soft direction (Landau expansions)
v_t, v_c = sympy.symbols("v_t v_c", real=True)  # a soft direction in the (t, c) plane
r0 = sympy.Symbol("r0", real=True)  # ln q at the first attempt's symmetric point
# a direction in the causal collective variables (Q_t, M_t, T1, T2, c): their values along φ·(t_l, c)
causal_direction = sympy.symbols("Q_v M_v T1_v T2_v c_v", real=True)


def linear_action_log_remainder(centred: bool = False) -> sympy.Expr:
    """`linear_action` in (t, c, r) with ρ = e^r."""
    return linear_action(centred).subs(rho, sympy.exp(r))


def first_attempt_action_log_gap() -> sympy.Expr:
    """`first_attempt_action` in (m, r) with q = m² + e^r (keeps q > m²)."""
    return first_attempt_action().subs(q, m**2 + sympy.exp(r))


def causal_linear_action_log_remainder(centred: bool = False) -> sympy.Expr:
    """`causal_linear_action(remainder=True)` in (Q_t, M_t, T1, T2, c, r) with ρ = e^r."""
    return causal_linear_action(centred, remainder=True).subs(rho, sympy.exp(r))


def linear_landau_coefficients(remainder: str = "map", centred: bool = False) -> list[sympy.Expr]:
    """(da₂/dn, a₂, a₄, a₆) of S(φ v_t, φ v_c) = S₀ + a₂φ² + a₄φ⁴ + a₆φ⁶ + ... (derive.landau), for a soft
    direction (v_t, v_c) left symbolic.

    remainder "entropy" (ρ a parameter, at its minimum ρ₀(n) at φ = 0): S depends on ρ through q = q̄ + ρ, so along
    the soft direction S = S₀ + a₂φ² + a₄φ⁴ + b φ²δρ + ½S_ρρ δρ² + ..., b = ∂a₂/∂ρ; minimising over δρ gives the
    effective quartic a₄ − b²/(2S_ρρ), the one that decides the order (with ρ frozen it misses this negative term).
    da₂/dn is the total derivative along ρ₀(n), ∂a₂/∂n − b ∂²S/∂ρ∂n / S_ρρ; a₆ is the frozen-ρ one (it decides
    only when the effective a₄ vanishes). As `causal_landau_coefficients(remainder=True)`.
    """
    expr = linear_action_map(centred) if remainder == "map" else linear_action(centred)
    expansion = landau_expansion(expr.subs({t: phi * v_t, c: phi * v_c}), phi, 0, 6)
    a2, a4, a6 = expansion.coefficient(2), expansion.coefficient(4), expansion.coefficient(6)
    if remainder == "map":
        return [sympy.diff(a2, n), a2, a4, a6]
    S0 = expr.subs({t: 0, c: 0})
    s_rr, s_rn = sympy.diff(S0, rho, 2), sympy.diff(S0, rho, n)
    b = sympy.diff(a2, rho)
    return [sympy.diff(a2, n) - b * s_rn / s_rr, a2, a4 - b**2 / (2 * s_rr), a6]


def first_attempt_landau_coefficients() -> list[sympy.Expr]:
    """(da₂/dn, a₄, a₆) of the first-attempt action along m at fixed q − m² = e^{r0}."""
    expansion = landau_expansion(first_attempt_action().subs(q, m**2 + sympy.exp(r0)), m, 0, 6)
    return [sympy.diff(expansion.coefficient(2), n), expansion.coefficient(4), expansion.coefficient(6)]


def causal_landau_coefficients(centred: bool = False, remainder: bool = False) -> list[sympy.Expr]:
    """(da₂/dn, a₂, a₄, a₆) of the causal linear action along φ·(t_l, c), given the direction's collective sums
    `causal_direction` = (Q_v, M_v, T1_v, T2_v, c_v).

    remainder=True (ρ a parameter, at its minimum ρ₀(n) at φ = 0): the remainder relaxes along the soft
    direction, S = S₀ + a₂φ² + a₄φ⁴ + b φ²δρ + ½S_ρρ δρ² + ..., b = ∂a₂/∂ρ, so minimising over δρ gives the
    effective quartic a₄ − b²/(2S_ρρ) (freezing ρ would miss this negative, first-order-favouring term);
    da₂/dn is the total derivative along ρ₀(n), ∂a₂/∂n − b ∂²S/∂ρ∂n / S_ρρ. a₆ is the frozen-ρ one (it decides
    only when the effective a₄ vanishes).
    """
    Qv, Mv, T1v, T2v, cv = causal_direction
    S = causal_linear_action(centred, remainder)
    F = S.subs({sum_t2_l: phi**2 * Qv, sum_t_l: phi * Mv, sum_t: phi * T1v, sum_t2: phi**2 * T2v, c: phi * cv})
    expansion = landau_expansion(F, phi, 0, 6)
    a2, a4, a6 = expansion.coefficient(2), expansion.coefficient(4), expansion.coefficient(6)
    if not remainder:
        return [sympy.diff(a2, n), a2, a4, a6]
    S0 = S.subs(_ORIGIN)  # the symmetric point t_l = c = 0
    s_rr, s_rn = sympy.diff(S0, rho, 2), sympy.diff(S0, rho, n)
    b = sympy.diff(a2, rho)
    return [sympy.diff(a2, n) - b * s_rn / s_rr, a2, a4 - b**2 / (2 * s_rr), a6]


def causal_remainder_quadratic() -> list[sympy.Expr]:
    """Coefficients (a₂, a₁, a₀) of ρ(1 + τnρ/V)·∂S/∂ρ = a₂ρ² + a₁ρ + a₀ at the symmetric point
    (`causal_remainder_stationarity`; a₂ > 0 > a₀, so exactly one positive root ρ₀). Raises if the cleared
    stationarity condition is not exactly this quadratic."""
    expr = sympy.expand(causal_remainder_stationarity() * rho * (1 + tau * n * rho / V))
    expr = sympy.expand(sympy.cancel(expr))
    coefficients = [expr.coeff(rho, k) for k in (2, 1, 0)]
    if sympy.expand(expr - sum(cf * rho**k for cf, k in zip(coefficients, (2, 1, 0)))) != 0:
        raise ArithmeticError("the remainder's stationarity condition is not a quadratic in rho")
    return coefficients


def softmax_data_terms() -> list[sympy.Expr]:
    """(S_data, ∂S_data/∂m, ∂S_data/∂q) at row sum t = 1 (softmax rows): what the row mean field needs."""
    expr = data_action(m, q, 1)
    return [expr, sympy.diff(expr, m), sympy.diff(expr, q)]
