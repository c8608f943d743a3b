"""The copy-heads model in numbers: the exact finite-P action, the plane of order parameters, the priors.

The exact action (W integrated out) is evaluated by V×V linear algebra, and by the N×N kernel form as an
independent reference for small P; `order_parameters_of` projects attention matrices (the sampled network's)
on the plane of the reduced theory; the row integrands give the exact softmax row densities by Sobol
expectation over the other scores (`numeric.sobol.sobol_expectation`).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.convention import BOUNDARIES
from attnphase.params import check_bool, check_choice, check_int, check_real, check_real_list

__all__ = ["one_hot", "target_rows", "visible_positions", "causal_mask", "causal_plane_matrix", "shift_matrix",
           "features_and_targets", "weight_space_action", "function_space_action", "copy_plane_matrix",
           "order_parameters_of", "logistic_normal_logpdf", "row_logit_density_integrand",
           "row_joint_density_integrand", "row_participation_integrand"]


# Largest L of the dense L × L matrices the public helpers build (2^13: half a GiB of float64).
MAX_DENSE_L = 2**13


def _checked_matrix(G) -> np.ndarray:
    """G as a finite square float array (L × L, 2 <= L <= MAX_DENSE_L), or a ParameterError."""
    allowed = f"a finite square matrix (L × L, L in [2, {MAX_DENSE_L}])"
    try:
        matrix = np.asarray(G, float)
    except (TypeError, ValueError):
        raise ParameterError("G", G, allowed) from None
    if (matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or not 2 <= matrix.shape[0] <= MAX_DENSE_L
            or not np.all(np.isfinite(matrix))):
        raise ParameterError("G", f"array of shape {matrix.shape}", allowed)
    return matrix


def _checked_tokens(tokens, L_: int, V_: int) -> np.ndarray:
    """Tokens as an integer array (P, L) with entries in [0, V), or a ParameterError."""
    allowed = f"an integer array (P >= 1 sequences, L = {L_}) of tokens in [0, {V_ - 1}]"
    try:
        array = np.asarray(tokens)
    except (TypeError, ValueError):
        raise ParameterError("tokens", tokens, allowed) from None
    if (array.ndim != 2 or array.shape[0] == 0 or array.shape[1] != L_ or not np.issubdtype(array.dtype, np.integer)
            or array.min() < 0 or array.max() >= V_):
        raise ParameterError("tokens", f"array of shape {array.shape}, dtype {array.dtype}", allowed)
    return array


def _checked_size(L_) -> int:
    return check_int("L", L_, 2, MAX_DENSE_L)


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
    L_ = _checked_size(L_)
    if isinstance(t_rows, numbers.Real):
        t_rows = np.full(L_ - 1, check_real("t_rows", t_rows))
    else:
        t_rows = np.array(check_real_list("t_rows", t_rows, L_ - 1))
    c_ = check_real("c", c_)
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
    V_ = check_int("V", V_, 2, 2**12)  # one_hot indexes a V × V identity matrix
    boundary = check_choice("boundary", boundary, BOUNDARIES)
    centred = check_bool("centred", centred)
    G = _checked_matrix(G)
    tokens = _checked_tokens(tokens, G.shape[0], V_)
    X = one_hot(tokens, V_)
    rows = target_rows(G.shape[0], boundary)
    H = np.einsum("lm,pmv->plv", G[rows], X - 1.0 / V_ if centred else X)
    Y = X[:, (rows - 1) % G.shape[0], :]
    return H.reshape(-1, V_), Y.reshape(-1, V_)


def weight_space_action(G, tokens, V_: int, beta_: float, tau_: float, boundary: str = "periodic", centred: bool = False) -> float:
    """Exact −log p(Y | G) with W integrated out, by V×V linear algebra (never the N×N kernel)."""
    beta_, tau_ = check_real("beta", beta_, 0.0, None, low_open=True), check_real("tau", tau_, 0.0, None, low_open=True)
    Phi, Y = features_and_targets(G, tokens, V_, boundary, centred)
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
    beta_, tau_ = check_real("beta", beta_, 0.0, None, low_open=True), check_real("tau", tau_, 0.0, None, low_open=True)
    Phi, Y = features_and_targets(G, tokens, V_, boundary, centred)
    N = Phi.shape[0]
    K = tau_ * Phi @ Phi.T + np.eye(N) / beta_
    sign, logdet = np.linalg.slogdet(2 * math.pi * K)
    alpha_ = np.linalg.solve(K, Y)
    return float(V_ / 2 * logdet + 0.5 * np.sum(Y * alpha_))


def copy_plane_matrix(L_: int, t_: float, c_: float) -> np.ndarray:
    """G = tU + c(S − U)."""
    L_, t_, c_ = _checked_size(L_), check_real("t", t_), check_real("c", c_)
    U = np.full((L_, L_), 1.0 / L_)
    return t_ * U + c_ * (shift_matrix(L_) - U)


def order_parameters_of(G: np.ndarray, boundary: str = "periodic") -> dict[str, np.ndarray]:
    """Projections of G (..., L, L) on the plane: t (mean row sum), m, c, a (= m), ρ (remainder).

    Causal mask: c is the projection on the row-dependent copy direction δ_{l−1} − U_l (shared by all
    rows), t the mean row sum, t2 the mean squared row sum (what the data term's all-ones part sees)."""
    boundary = check_choice("boundary", boundary, BOUNDARIES)
    allowed = "an array of square matrices (..., L, L), L >= 2"
    try:
        G = np.asarray(G, float)
    except (TypeError, ValueError):
        raise ParameterError("G", G, allowed) from None
    if G.ndim < 2 or G.shape[-1] != G.shape[-2] or G.shape[-1] < 2:
        raise ParameterError("G", f"array of shape {G.shape}", allowed)
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
        bin_of = np.clip(np.searchsorted(edges, Y, side="right") - 1, 0, n_bins - 1)
        s = xs[None, :] + lse[:, None]
        phi = np.exp(-(s**2) / (2 * sigma2_)) / math.sqrt(2 * math.pi * sigma2_)  # (N, n_x)
        # each point fills its own bin only: written there directly (no products with a one-hot array)
        out = np.zeros((len(Y), 3, len(xs), n_bins))
        out[np.arange(len(Y)), :, :, bin_of] = np.stack([phi, phi * Y[:, None], phi * pairs[:, None]], axis=1)
        return out.reshape(len(Y), -1)

    return f


def row_participation_integrand(z: np.ndarray) -> np.ndarray:
    """(L−1)·Σ_m w_m² for the softmax weights w of each row of L−1 scores z (N, L−1): k of `softmax_action` as the
    expectation of this over Gaussian scores; their variance enters only through the covariance the caller
    integrates with."""
    w = np.exp(z - np.logaddexp.reduce(z, axis=1)[:, None])
    return (w**2).sum(axis=1) * z.shape[1]
