"""The real network on the copy task: one layer, one head, positional attention (tokens are i.i.d.).

Scores A = QᵀK/√d from query/key weights Q, K ∈ R^{d×L} acting on one-hot positions (or A itself when `qk_width` is
None, the wide limit), G = rowsoftmax(A) or G = κ(A + b11ᵀ), read-out f_l = W Σ_m G_lm x_m with W ∈ R^{V×V}.
Posterior (the potential U the samplers use):

    U = (β/2) Σ_targets ‖y_l − f_l‖² + ‖W‖²/(2τ) + score prior + b²/(2 s₁),

with Gaussian priors on Q, K entries (variance √σ², so that A_lm has variance σ² as d → ∞), or on A
(variance σ²). The squared error is evaluated from sufficient statistics C[m, m'] = Σ_μ x_m x_m'ᵀ
(L×L×V×V), so one gradient costs O(L²V²) whatever the number of samples. Every quantity carries a leading
chain axis: K chains (or Adam runs) advance as one batched computation (`samplers`, on `validate.mala`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.validate import seeds

__all__ = ["CopyTaskConfig", "sample_tokens", "Statistics", "statistics", "scores", "causal_mask", "attention_matrix",
           "squared_error", "attention_prior_energy", "potential", "initial_params", "preconditioner",
           "conditional_read_out", "match_data_sets", "copy_strength", "row_averages", "plane_basis", "coverage"]


@dataclass(frozen=True)
class CopyTaskConfig:
    """Sizes and priors of the network, in the conventions of the model (`CopyTaskConfig.of` a validated instance;
    no check of its own).

    boundary: "periodic" (y_1 = x_L, T = L targets), "drop-first" (no target at position 1, T = L − 1) or
    "causal" (T = L − 1 and row l attends to positions m ≤ l only: masked scores are −∞ before the
    softmax, masked entries of linear attention are 0).
    """

    L: int
    V: int
    attention: str
    beta: float = 1.0
    tau: float = 1.0
    sigma2: float = 1.0
    s1: float = 1.0
    kappa: float | None = None  # linear scale, default 1/L
    bias: bool = True
    qk_width: int | None = None  # None: scores sampled directly (wide query-key limit)
    boundary: str = "periodic"

    @classmethod
    def of(cls, inst: CopyHeadsInstance, qk_width: int | None = None) -> CopyTaskConfig:
        """The network of a model instance (one-hot tokens only: the simulation implements one-hot inputs)."""
        conv, L = inst.convention, inst.L
        if conv.centred:
            raise ParameterError("tokens", conv.tokens, "'one-hot' (the simulation implements one-hot inputs)")
        return cls(L=L, V=inst.V, attention=inst.attention, beta=conv.beta_per_target(L), tau=conv.tau(inst.V),
                   sigma2=conv.sigma2, s1=conv.s1, kappa=conv.kappa(L), bias=conv.bias, qk_width=qk_width or None,
                   boundary=conv.boundary)

    @property
    def scale(self) -> float:
        return 1.0 / self.L if self.kappa is None else self.kappa


# -- data ------------------------------------------------------------------------------------------
def sample_tokens(n_sequences: int, cfg: CopyTaskConfig, gen: torch.Generator, device) -> torch.Tensor:
    return seeds.randint(0, cfg.V, (n_sequences, cfg.L), gen, device)


@dataclass(frozen=True)
class Statistics:
    """Sufficient statistics of one data set per chain for the copy task.

    Chains may see different data sets (e.g. one per P), so every field has a leading chain axis.
    """

    C: torch.Tensor  # (K, L, L, V, V): Σ_μ x_m x_m'ᵀ
    D: torch.Tensor  # (K, L, L, V, V): D[l, m] = Σ_μ x_m x_{l−1}ᵀ over target rows l (0 elsewhere)
    yy: torch.Tensor  # (K,) Σ ‖y‖²
    n_targets: torch.Tensor  # (K,) number of target tokens
    row_mask: torch.Tensor  # (K, L): 1 on target rows (all rows when periodic; not row 1 otherwise)

    def repeat(self, k: int) -> Statistics:
        """Each data set repeated for k consecutive chains."""
        return Statistics(*(v.repeat_interleave(k, dim=0) for v in (self.C, self.D, self.yy, self.n_targets, self.row_mask)))


def statistics(tokens_list: list[torch.Tensor], V: int, dtype=torch.float64, boundary: str = "periodic") -> Statistics:
    """Statistics of several token sets (P_i, L), stacked along the chain axis. boundary periodic: every
    row is a target (y_1 = x_L); drop-first / causal: row 1 has no target."""
    Cs, Ds, yy, nt, masks = [], [], [], [], []
    for tokens in tokens_list:
        X = torch.nn.functional.one_hot(tokens, V).to(dtype)  # (P, L, V)
        Y = torch.roll(X, 1, dims=1)  # y_l = x_{l-1}
        mask = torch.ones(tokens.shape[1], dtype=dtype, device=tokens.device)
        if boundary != "periodic":
            mask[0] = 0.0
        Y = Y * mask[None, :, None]
        Cs.append(torch.einsum("pmv,pnw->mnvw", X, X))
        Ds.append(torch.einsum("pmv,plw->lmvw", X, Y))
        n_t = float(tokens.shape[0] * mask.sum().item())
        yy.append(n_t)
        nt.append(n_t)
        masks.append(mask)
    dev = tokens_list[0].device
    return Statistics(torch.stack(Cs), torch.stack(Ds), torch.tensor(yy, dtype=dtype, device=dev),
                      torch.tensor(nt, dtype=dtype, device=dev), torch.stack(masks))


# -- network -----------------------------------------------------------------------------------------
def scores(params: dict, cfg: CopyTaskConfig) -> torch.Tensor:
    if cfg.qk_width is None:
        return params["A"]
    return params["Q"].transpose(-1, -2) @ params["K"] / math.sqrt(cfg.qk_width)


def causal_mask(L: int, device) -> torch.Tensor:
    """True where row l may attend to position m (m ≤ l)."""
    return torch.ones(L, L, dtype=torch.bool, device=device).tril()


def attention_matrix(params: dict, cfg: CopyTaskConfig) -> torch.Tensor:
    A = scores(params, cfg)
    mask = causal_mask(cfg.L, A.device) if cfg.boundary == "causal" else None
    if cfg.attention == "softmax":
        return torch.softmax(A if mask is None else A.masked_fill(~mask, -math.inf), dim=-1)
    G = cfg.scale * A
    if cfg.bias:
        G = G + cfg.scale * params["b"][..., None, None]
    return G if mask is None else G * mask


def squared_error(G: torch.Tensor, W: torch.Tensor, st: Statistics) -> torch.Tensor:
    """Σ_targets ‖y − W h‖² = tr(W M Wᵀ) − 2 tr(W B) + Σ‖y‖², M = Σ GᵀG-weighted C, B from D (rows that
    carry no target are masked out)."""
    G = G * st.row_mask[..., :, None]
    GG = G.transpose(-1, -2) @ G  # (K, L, L)
    M = torch.einsum("kmn,kmnvw->kvw", GG, st.C)
    B = torch.einsum("klm,klmvw->kvw", G, st.D)  # Σ h yᵀ
    return torch.einsum("kcv,kvw,kcw->k", W, M, W) - 2 * torch.einsum("kcv,kvc->k", W, B) + st.yy


def loss_moments(G: torch.Tensor, W: torch.Tensor, row_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(GᵀG ⊗ WᵀW, G ⊗ W) per chain, (K, L, L, V, V) each: the squared error on any data set is linear in them
    (`squared_error_of_moments`), so their means over a chain's draws give its Gibbs loss on every part of a test set
    without the draws. row_mask: the target rows, as in `squared_error`."""
    G = G * row_mask[:, None]
    return (torch.einsum("kmn,kcv,kcw->kmnvw", G.transpose(-1, -2) @ G, W, W),
            torch.einsum("klm,kcv->klmvc", G, W))


def squared_error_of_moments(quadratic: torch.Tensor, linear: torch.Tensor, st: Statistics) -> torch.Tensor:
    """`squared_error` of one data set `st` from the moments of `loss_moments` (or their means over draws), per
    chain: Σ GᵀG C · WᵀW − 2 Σ G D W + Σ‖y‖²."""
    return (torch.einsum("kmnvw,mnvw->k", quadratic, st.C[0]) - 2 * torch.einsum("klmvc,lmvc->k", linear, st.D[0])
            + st.yy[0])


def attention_prior_energy(params: dict, cfg: CopyTaskConfig) -> torch.Tensor:
    """−log prior of the attention weights (scores, or Q and K; the bias of linear attention), per chain."""
    if cfg.qk_width is None:
        U = (params["A"] ** 2).sum((-1, -2)) / (2 * cfg.sigma2)
    else:
        var_qk = math.sqrt(cfg.sigma2)
        U = ((params["Q"] ** 2).sum((-1, -2)) + (params["K"] ** 2).sum((-1, -2))) / (2 * var_qk)
    if cfg.attention == "linear" and cfg.bias:
        U = U + params["b"] ** 2 / (2 * cfg.s1)
    return U


def potential(params: dict, cfg: CopyTaskConfig, st: Statistics) -> torch.Tensor:
    G = attention_matrix(params, cfg)
    U = cfg.beta / 2 * squared_error(G, params["W"], st) + (params["W"] ** 2).sum((-1, -2)) / (2 * cfg.tau)
    return U + attention_prior_energy(params, cfg)


def initial_params(cfg: CopyTaskConfig, starts: list[str], gen: torch.Generator, device, copy_score: float | None = None) -> dict:
    """One chain per entry of `starts`: "uniform" (scores 0: G = U for softmax, G = 0 for linear),
    "copy" (scores s·S with s = 2 ln L for softmax, G = S for linear) or "prior" (a prior draw)."""
    K, L, V = len(starts), cfg.L, cfg.V
    dt = torch.float64
    S = torch.roll(torch.eye(L, dtype=dt, device=device), -1, dims=1)
    A = torch.zeros(K, L, L, dtype=dt, device=device)
    for i, s in enumerate(starts):
        if s not in ("uniform", "copy", "prior"):
            raise ParameterError("start", s, "one of 'uniform', 'copy', 'prior'")
        if s == "copy":
            A[i] = (copy_score or 2 * math.log(L)) * S if cfg.attention == "softmax" else S / cfg.scale
        elif s == "prior":
            A[i] = math.sqrt(cfg.sigma2) * seeds.randn((L, L), gen, device, dt)
    p = {"W": math.sqrt(cfg.tau) * seeds.randn((K, V, V), gen, device, dt) * 0.1}
    if cfg.qk_width is None:
        p["A"] = A
    else:
        d = cfg.qk_width
        if d < L:
            raise ValueError("qk_width must be >= L to start from a prescribed score matrix")
        E = torch.zeros(d, L, dtype=dt, device=device)
        E[:L, :L] = torch.eye(L, dtype=dt, device=device)
        # QᵀK/√d = A with Q = α E, K = E A / (α / √d)... choose Q = E·√(√d), K = E A / √(√d)
        r = d**0.25
        p["Q"] = (r * E).expand(K, d, L).clone()
        p["K"] = torch.einsum("dl,klm->kdm", E, A) / r
    if cfg.attention == "linear" and cfg.bias:
        p["b"] = torch.zeros(K, dtype=dt, device=device)
    return p


def preconditioner(params: dict, cfg: CopyTaskConfig, st: Statistics) -> dict:
    """Per-block variance scale: inverse of (prior precision + data curvature bound)."""
    K = params["W"].shape[0]
    G = attention_matrix(params, cfg).detach() * st.row_mask[..., :, None]
    M = torch.einsum("kmn,kmnvw->kvw", G.transpose(-1, -2) @ G, st.C)
    lam = torch.linalg.eigvalsh(M)[:, -1]
    pre = {"W": (1.0 / (1 / cfg.tau + cfg.beta * lam)).reshape(K, 1, 1)}
    # score block: data curvature ~ β·(targets per position)·‖W‖²·(scale)² per entry
    wn = (params["W"] ** 2).sum((-1, -2)).detach() / cfg.V
    per_pos = st.n_targets / cfg.L  # (K,)
    g_scale = 1.0 if cfg.attention == "softmax" else cfg.scale**2
    curv = cfg.beta * per_pos * (wn + 1e-3) * g_scale / cfg.V
    for name in ("A", "Q", "K"):
        if name in params:
            prior_prec = 1 / cfg.sigma2 if name == "A" else 1 / math.sqrt(cfg.sigma2)
            pre[name] = (1.0 / (prior_prec + curv)).reshape(K, 1, 1)
    if "b" in params:
        pre["b"] = 1.0 / (1 / cfg.s1 + cfg.beta * st.n_targets * cfg.scale**2 * cfg.L**2 * (wn + 1e-3) / cfg.V)
    return pre


def conditional_read_out(params: dict, cfg: CopyTaskConfig, st: Statistics) -> torch.Tensor:
    """Posterior mean of W given the attention weights: argmin of (β/2)Σ‖y − Wh‖² + ‖W‖²/(2τ), W = βBᵀ(τ⁻¹I + βM)⁻¹."""
    G = attention_matrix(params, cfg).detach() * st.row_mask[..., :, None]
    M = torch.einsum("kmn,kmnvw->kvw", G.transpose(-1, -2) @ G, st.C)
    B = torch.einsum("klm,klmvw->kvw", G, st.D)
    A = torch.eye(cfg.V, dtype=M.dtype, device=M.device) / cfg.tau + cfg.beta * M
    return cfg.beta * torch.linalg.solve(A, B).transpose(-1, -2)  # A symmetric: (A⁻¹B)ᵀ = BᵀA⁻¹


def match_data_sets(st: Statistics, K: int) -> Statistics:
    """One data set shared by K chains, or K data sets already."""
    if st.C.shape[0] == K:
        return st
    if st.C.shape[0] == 1:
        return st.repeat(K)
    raise ValueError(f"statistics for {st.C.shape[0]} data sets given to {K} chains")


def copy_strength(G: torch.Tensor, boundary: str = "periodic") -> torch.Tensor:
    """c of the plane projection G ≈ tU + c(S − U) over the target rows: c = Σ_l (g_l − t_l/l)/Σ_l (1 − 1/l), g_l
    the weight on the previous position, t_l the row sum and l the positions row l attends to (L, or l under
    the causal mask); periodic: c = (L m − t)/(L − 1) (`exact.order_parameters_of`)."""
    L = G.shape[-1]
    g = torch.diagonal(torch.roll(G, 1, dims=-1), dim1=-2, dim2=-1)
    t = G.sum(-1)
    if boundary == "periodic":
        return (L * g.mean(-1) - t.mean(-1)) / (L - 1)
    g, t = g[..., 1:], t[..., 1:]
    if boundary == "causal":
        positions = torch.arange(2, L + 1, dtype=G.dtype, device=G.device)
    else:
        positions = torch.full((L - 1,), float(L), dtype=G.dtype, device=G.device)
    return (g - t / positions).sum(-1) / (1 - 1 / positions).sum()


def row_averages(G: torch.Tensor, boundary: str = "periodic") -> tuple:
    """(m, q, t1, t2) of G (K, L, L) over its target rows: mean weight on the previous position, mean ‖g_l‖², mean row
    sum and mean squared row sum (what the self-averaged data term sees; `symbolic.data_action_rows`)."""
    g = torch.diagonal(torch.roll(G, 1, dims=-1), dim1=-2, dim2=-1)
    q, t = (G * G).sum(-1), G.sum(-1)
    if boundary != "periodic":
        g, q, t = g[..., 1:], q[..., 1:], t[..., 1:]
    return g.mean(-1), q.mean(-1), t.mean(-1), (t * t).mean(-1)


# -- measurements ------------------------------------------------------------------------------------
def plane_basis(L: int, boundary: str = "periodic") -> np.ndarray:
    """Orthonormal basis (2, L, L) of span{U, S − U} (causal: U with rows 1_{m≤l}/l; non-periodic: target
    rows only)."""
    if boundary == "causal":
        U = np.tril(np.ones((L, L))) / np.arange(1, L + 1)[:, None]
    else:
        U = np.full((L, L), 1.0 / L)
    S = np.roll(np.eye(L), -1, axis=1)
    Sp = S - U
    if boundary != "periodic":
        U[0], Sp[0] = 0.0, 0.0
    return np.stack([U / np.linalg.norm(U), Sp / np.linalg.norm(Sp)])


def coverage(G_samples: np.ndarray, boundary: str = "periodic"):
    """Fraction of the sampled attention matrices' variance captured by the two order-parameter
    directions (about the pooled mean), with the top-2 principal components for comparison, and the
    fraction of the second moment (‖P G‖²/‖G‖²)."""
    L = G_samples.shape[-1]
    if boundary != "periodic":  # row 1 carries no target and lies outside the plane
        G_samples = np.concatenate([np.zeros_like(G_samples[..., :1, :]), G_samples[..., 1:, :]], axis=-2)
    flat = G_samples.reshape(-1, L * L)
    basis = plane_basis(L, boundary).reshape(2, -1)
    centred = flat - flat.mean(0)
    total = float((centred**2).sum())
    captured = float(((centred @ basis.T) ** 2).sum())
    sv = np.linalg.svd(centred, compute_uv=False)
    from attnphase.models.copy_heads.simulation_results import Coverage

    second_moment = float((flat**2).sum())  # 0 where every sample is the zero matrix (a chain that never moved)
    return Coverage(captured / total if total > 0 else math.nan,
                    float((sv[:2] ** 2).sum() / (sv**2).sum()) if total > 0 else math.nan,
                    float(((flat @ basis.T) ** 2).sum()) / second_moment if second_moment > 0 else math.nan)
