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

eps = 1 - 1 / V


# -- data term -------------------------------------------------------------------------------------
def data_action(m_expr, q_expr, t_expr, centred: bool = False) -> sympy.Expr:
    """Self-averaged −log marginal likelihood (G-dependent part) at overlap m, norm q, row sum t.

    With ld = 0 the log-det (Occam) terms are dropped: min over W of the joint objective instead of the
    integral over W (what a joint MAP, e.g. Adam on all weights, minimises).

    centred: the inputs are x − 1/V (targets stay one-hot). Then E[h hᵀ] = q(I − 11ᵀ/V)/V and
    E[h yᵀ] = m(I − 11ᵀ/V)/V per target, with no all-ones component: the read-out can no longer output
    the mean 1/V through uniform pooling, and the last two (all-ones) terms drop out.
    """
    u = tau * n * q_expr / V
    u1 = tau * n * t_expr**2 / V
    centred_part = ld * V * (V - 1) / 2 * sympy.log(1 + u) - eps * tau * n**2 * m_expr**2 / (2 * V * (1 + u))
    if centred:
        return centred_part
    return centred_part + ld * V / 2 * sympy.log(1 + u1) - tau * n**2 * t_expr**2 / (2 * V**2 * (1 + u1))


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


def softmax_shortcut_prior() -> sympy.Expr:
    """Large-L (law of large numbers) row rate in the logit x = z_prev − ln Σ_{m≠prev} e^{z_m}.

    The softmax denominator of the other L−1 scores is replaced by its mean (L−1)e^{σ²/2}; the row's
    previous-position score is then s = x + ln(L−1) + σ²/2 and costs s²/(2σ²). Valid when the relative
    spread of the denominator, (e^{σ²} − 1)/(L − 1), times (s/σ²)² is small.
    """
    s = x + sympy.log(L - 1) + sigma2 / 2
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


# -- conventions -----------------------------------------------------------------------------------
BOUNDARIES = ("periodic", "drop-first")
P_COUNTS = ("sequences", "tokens")
LOSS_REDUCTIONS = ("summed", "averaged")
TAU_SCALES = ("one", "inverse-V")
LINEAR_SCALES = ("1/L", "1/sqrt(L)", "1")
REMAINDERS = ("map", "entropy")
TOKENS = ("one-hot", "centred")
READ_OUTS = ("integrated", "map")


@dataclass(frozen=True)
class Convention:
    """Choices that move thresholds by powers of L and V (spec §2).

    boundary: periodic (y_1 = x_L, T = L targets) or drop-first (T = L − 1).
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
    """Projections of G (..., L, L) on the plane: t (mean row sum), m, c, a (= m), ρ (remainder)."""
    G = np.asarray(G, float)
    L_ = G.shape[-1]
    rows = target_rows(L_, boundary)
    Gt = G[..., rows, :]
    T_ = len(rows)
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
    doc.heading("Test loss per position", 2)
    doc.equation(sympy.Symbol("E_mean"), mean_predictor_loss(m, q, t), label="loss-mean")
    doc.equation(sympy.Symbol("E_Gibbs"), gibbs_loss(m, q, t), label="loss-gibbs")
    return doc.text()
