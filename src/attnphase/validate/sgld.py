"""Finite-size validation of the copy-heads theory: the real one-layer, one-head network, sampled with
Langevin dynamics at the Bayesian temperature or trained with Adam.

Network (positional attention, since tokens are i.i.d.): scores A = QᵀK/√d from query/key weights
Q, K ∈ R^{d×L} acting on one-hot positions (or A itself when `qk_width` is None, the wide limit),
G = rowsoftmax(A) or G = κ(A + b11ᵀ), read-out f_l = W Σ_m G_lm x_m with W ∈ R^{V×V}.
Posterior (the potential U the samplers use):

    U = (β/2) Σ_targets ‖y_l − f_l‖² + ‖W‖²/(2τ) + score prior + b²/(2 s₁),

with Gaussian priors on Q, K entries (variance √σ², so that A_lm has variance σ² as d → ∞), or on A
(variance σ²). The squared error is evaluated from sufficient statistics C[m, m'] = Σ_μ x_m x_m'ᵀ
(L×L×V×V), so one gradient costs O(L²V²) whatever the number of samples.

Sampler: Metropolis-adjusted Langevin (MALA) with a per-block diagonal preconditioner and per-chain step
sizes adapted during burn-in only, so the chains target the exact posterior. ("SGLD" in the spec; the
full batch and the Metropolis step remove both the gradient noise and the step-size bias.)
All chains run as one batched tensor computation on the chosen device, seeded by `validate.seeds`.

Adam: minimises U (joint MAP of all weights) from many seeds; filtering rule: keep the runs whose final
U is within max(1, 1e-3|U_best|) of the best run (converged to the global minimum found).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from attnphase.params import check_choice, check_int, check_positive
from attnphase.validate.device import select_device, single_cpu_thread
from attnphase.validate import seeds


@dataclass(frozen=True)
class CopyTaskConfig:
    """Sizes and priors of the network (the conventions of models.copy_heads).

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

    def __post_init__(self):
        check_int("L", self.L, 2, None)
        check_int("V", self.V, 2, None)
        check_choice("attention", self.attention, ("softmax", "linear"))
        for name in ("beta", "tau", "sigma2", "s1"):
            check_positive(name, getattr(self, name))
        if self.qk_width is not None:
            check_int("qk_width", self.qk_width, 1, None)
        check_choice("boundary", self.boundary, BOUNDARIES)
        if self.boundary != "periodic" and self.L < 3:
            check_int("L", self.L, 3, None)

    @property
    def scale(self) -> float:
        return 1.0 / self.L if self.kappa is None else self.kappa


BOUNDARIES = ("periodic", "drop-first", "causal")


# -- data ------------------------------------------------------------------------------------------
def sample_tokens(n_sequences: int, cfg: CopyTaskConfig, gen: torch.Generator, device) -> torch.Tensor:
    return seeds.randint(0, cfg.V, (n_sequences, cfg.L), gen, device)


@dataclass
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
    check_choice("boundary", boundary, BOUNDARIES)
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
        check_choice("start", s, ("uniform", "copy", "prior"))
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


# -- samplers ----------------------------------------------------------------------------------------
def _grad(params, cfg, st):
    leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
    U = potential(leaves, cfg, st)
    grads = torch.autograd.grad(U.sum(), list(leaves.values()))
    return U.detach(), dict(zip(leaves.keys(), grads))


def _block_sum(d: dict, K: int) -> torch.Tensor:
    return sum(v.reshape(K, -1).sum(1) for v in d.values())


@dataclass
class ChainSamples:
    """Samples of one sampler run: per chain (K) and retained sample (S)."""

    G: np.ndarray  # (K, S, L, L)
    train_loss: np.ndarray  # (K, S) squared error per target token of the sampled network
    test_loss: np.ndarray  # (K, S) on held-out data
    acceptance: np.ndarray  # (K,)
    starts: list
    steps: int
    status: str
    message: str
    kept: np.ndarray = field(default_factory=lambda: np.empty(0, bool))  # Adam filter
    objective: np.ndarray = field(default_factory=lambda: np.empty(0))  # Adam: final U per run
    c_trace: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))  # (K, S) copy strength of each sample
    G_mean: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 0)))  # (K, L, L) mean over the samples


def _preconditioner(params, cfg, st):
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


def run_langevin(cfg: CopyTaskConfig, train: Statistics, test: Statistics, starts: list[str], *, steps: int = 4000,
                 burn_in: int | None = None, thin: int = 10, seed: int = 0, device: str = "auto",
                 target_acceptance: float = 0.57, record_matrices: bool = True, rng: str = "device",
                 read_out_start: str = "small") -> ChainSamples:
    """MALA chains (chain i starts from starts[i] and sees data set i of `train`) at the Bayesian
    temperature; samples after burn-in, every `thin` steps.

    record_matrices=False keeps only the copy strength of every sample (`c_trace`) and the mean attention
    matrix (`G_mean`), not every sampled G (K·S·L² numbers, gigabytes for long chains at L ≥ 128).
    rng: "device" or "cpu", where the random numbers are drawn (`attnphase.validate.seeds`).
    read_out_start: "small" (W a prior draw scaled by 0.1) or "conditional" (W at its posterior mean given the start's
    attention matrix, βBᵀ(τ⁻¹I + βM)⁻¹; the same random numbers are drawn either way). With a small read-out the data
    term does not hold a copy start at first: at L = 128, V = 4, P = 4096 its copy strength falls to ≈ 0.10 within
    ~1000 steps and climbs back to ≈ 0.17 over the next ~2000, so a copy start approaches equilibrium from below."""
    dev = select_device(device)
    read_out_start = check_choice("read_out_start", read_out_start, ("small", "conditional"))
    with single_cpu_thread(dev):
        return _run_langevin(cfg, train, test, starts, steps, burn_in, thin, seed, dev, target_acceptance, record_matrices,
                             rng, read_out_start)


def conditional_read_out(params: dict, cfg: CopyTaskConfig, st: Statistics) -> torch.Tensor:
    """Posterior mean of W given the attention weights: argmin of (β/2)Σ‖y − Wh‖² + ‖W‖²/(2τ), W = βBᵀ(τ⁻¹I + βM)⁻¹."""
    G = attention_matrix(params, cfg).detach() * st.row_mask[..., :, None]
    M = torch.einsum("kmn,kmnvw->kvw", G.transpose(-1, -2) @ G, st.C)
    B = torch.einsum("klm,klmvw->kvw", G, st.D)
    A = torch.eye(cfg.V, dtype=M.dtype, device=M.device) / cfg.tau + cfg.beta * M
    return cfg.beta * torch.linalg.solve(A, B).transpose(-1, -2)  # A symmetric: (A⁻¹B)ᵀ = BᵀA⁻¹


def _match(st: Statistics, K: int) -> Statistics:
    """One data set shared by K chains, or K data sets already."""
    if st.C.shape[0] == K:
        return st
    if st.C.shape[0] == 1:
        return st.repeat(K)
    raise ValueError(f"statistics for {st.C.shape[0]} data sets given to {K} chains")


def copy_strength(G: torch.Tensor, boundary: str = "periodic") -> torch.Tensor:
    """c of the plane projection G ≈ tU + c(S − U) over the target rows: c = Σ_l (g_l − t_l/l)/Σ_l (1 − 1/l), g_l
    the weight on the previous position, t_l the row sum and l the positions row l attends to (L, or l under
    the causal mask); periodic: c = (L m − t)/(L − 1) (models.copy_heads.order_parameters_of)."""
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


def _mala_step(params, U, g, h, pre, grad, gen, dev):
    """One Metropolis-adjusted Langevin step of K chains, in place on params and g (dicts of (K, ...) blocks):
    proposal θ' = θ − η∇U + √(2η)ξ with η = h·pre per chain and block, accepted with the Metropolis–Hastings
    ratio of the preconditioned Langevin proposal. grad(params) -> (U (K,), gradients). Returns (U, accepted)."""
    K = U.shape[0]
    eta = {k: h.reshape((K,) + (1,) * (v.dim() - 1)) * pre[k] for k, v in params.items()}
    noise = {k: seeds.randn(v.shape, gen, dev, v.dtype) for k, v in params.items()}
    prop = {k: params[k] - eta[k] * g[k] + torch.sqrt(2 * eta[k]) * noise[k] for k in params}
    U_p, g_p = grad(prop)
    # log q(θ | θ') − log q(θ' | θ) for the preconditioned Langevin proposal
    fwd = _block_sum({k: noise[k] ** 2 / 2 for k in params}, K)
    back = _block_sum({k: (params[k] - prop[k] + eta[k] * g_p[k]) ** 2 / (4 * eta[k]) for k in params}, K)
    log_alpha = U - U_p - back + fwd
    acc = torch.log(seeds.rand(K, gen, dev)) < log_alpha
    for k in params:
        mask = acc.reshape((K,) + (1,) * (params[k].dim() - 1))
        params[k] = torch.where(mask, prop[k].detach(), params[k])
        g[k] = torch.where(mask, g_p[k], g[k])
    return torch.where(acc, U_p, U), acc


def _adaptive_mala(params, grad, pre, h, gen, dev, *, steps, burn_in, thin, target_acceptance, record,
                   refresh_preconditioner=None) -> np.ndarray:
    """`steps` MALA steps of K chains (`_mala_step`), in place on params. During burn-in the step multipliers h adapt
    towards `target_acceptance` (and, if given, `refresh_preconditioner(params)` replaces the preconditioner every 100
    steps); afterwards `record(params)` is called every `thin` steps (without gradients). Returns the acceptance rate
    per chain after burn-in."""
    U, g = grad(params)
    accepted = torch.zeros(h.shape[0], dtype=torch.float64, device=dev)
    for step in range(steps):
        if refresh_preconditioner is not None and step < burn_in and step % 100 == 0:
            pre = refresh_preconditioner(params)
            U, g = grad(params)
        U, acc = _mala_step(params, U, g, h, pre, grad, gen, dev)
        if step < burn_in:
            h = h * torch.exp(0.05 * (acc.double() - target_acceptance))
        else:
            accepted += acc.double()
            if (step - burn_in) % thin == 0:
                with torch.no_grad():
                    record(params)
    return (accepted / max(1, steps - burn_in)).cpu().numpy()


def _run_langevin(cfg, train, test, starts, steps, burn_in, thin, seed, dev, target_acceptance, record_matrices, rng,
                  read_out_start="small"):
    train, test = _match(train, len(starts)), _match(test, len(starts))
    gen = seeds.generator(seed, dev, rng)
    burn_in = steps // 2 if burn_in is None else burn_in
    params = initial_params(cfg, starts, gen, dev)
    if read_out_start == "conditional":
        params["W"] = conditional_read_out(params, cfg, train)
    K = len(starts)
    h = torch.full((K,), 0.5, dtype=torch.float64, device=dev)  # step multiplier per chain
    Gs, tr, te, cs = [], [], [], []
    G_sum = torch.zeros(K, cfg.L, cfg.L, dtype=torch.float64, device=dev)

    def record(params):
        nonlocal G_sum
        G = attention_matrix(params, cfg)
        if record_matrices:
            Gs.append(G.cpu().numpy())
        G_sum += G
        cs.append(copy_strength(G, cfg.boundary).cpu().numpy())
        tr.append((squared_error(G, params["W"], train) / train.n_targets).cpu().numpy())
        te.append((squared_error(G, params["W"], test) / test.n_targets).cpu().numpy())

    acc_rate = _adaptive_mala(params, lambda p: _grad(p, cfg, train), _preconditioner(params, cfg, train), h, gen, dev,
                              steps=steps, burn_in=burn_in, thin=thin, target_acceptance=target_acceptance,
                              record=record, refresh_preconditioner=lambda p: _preconditioner(p, cfg, train))
    status = "converged" if np.all(acc_rate > 0.2) else "low_acceptance"
    G_all = np.stack(Gs, 1) if record_matrices else np.empty((K, 0, cfg.L, cfg.L))
    return ChainSamples(G_all, np.stack(tr, 1), np.stack(te, 1), acc_rate, list(starts), steps, status,
                        f"MALA, {steps} steps, burn-in {burn_in}, acceptance {np.round(acc_rate, 2).tolist()}",
                        c_trace=np.stack(cs, 1), G_mean=(G_sum / len(cs)).cpu().numpy())


@dataclass
class RowModelSamples:
    """Samples of `run_row_model`, per chain (K) and retained sample (S): the order parameters of G over the target
    rows (c copy strength as `copy_strength`, m mean previous-position weight, q mean ‖g_l‖², t mean row sum)."""

    c: np.ndarray  # (K, S)
    m: np.ndarray
    q: np.ndarray
    t: np.ndarray
    acceptance: np.ndarray  # (K,)
    starts: list
    steps: int
    status: str
    message: str


def row_averages(G: torch.Tensor, boundary: str = "periodic") -> tuple:
    """(m, q, t1, t2) of G (K, L, L) over its target rows: mean weight on the previous position, mean ‖g_l‖², mean row
    sum and mean squared row sum (what the self-averaged data term sees; models.copy_heads.data_action_rows)."""
    L = G.shape[-1]
    g = torch.diagonal(torch.roll(G, 1, dims=-1), dim1=-2, dim2=-1)
    q, t = (G * G).sum(-1), G.sum(-1)
    if boundary != "periodic":
        g, q, t = g[..., 1:], q[..., 1:], t[..., 1:]
    return g.mean(-1), q.mean(-1), t.mean(-1), (t * t).mean(-1)


def run_row_model(cfg: CopyTaskConfig, data_term, starts: list[str], *, steps: int = 3000, burn_in: int | None = None,
                  thin: int = 5, seed: int = 0, device: str = "auto", target_acceptance: float = 0.57,
                  rng: str = "device") -> RowModelSamples:
    """MALA over the attention weights alone with a self-averaged data term instead of a data set:

        U = data_term(m, q, t1, t2) + score prior (+ bias prior),   (m, q, t1, t2) = `row_averages`(G)

    data_term: a torch callable (the large-P data term with W integrated out, e.g. models.copy_heads.data_action_rows
    compiled for torch at fixed n, V, τ). This is the model the row mean field solves (rows independent under the
    prior, coupled only through the row averages) without its Cramér/saddle-point steps, so it isolates those from the
    finite data set of `run_langevin`. Chains start "uniform", "copy" or "prior" as in `initial_params`; step sizes adapt
    during burn-in only (preconditioner: the score prior variance)."""
    dev = select_device(device)
    with single_cpu_thread(dev):
        gen = seeds.generator(seed, dev, rng)
        burn_in = steps // 2 if burn_in is None else check_int("burn_in", burn_in, 0, steps - 1)
        params = initial_params(cfg, starts, gen, dev)
        del params["W"]
        K = len(starts)

        def grad(p):
            leaves = {k: v.detach().requires_grad_(True) for k, v in p.items()}
            U = data_term(*row_averages(attention_matrix(leaves, cfg), cfg.boundary)) + attention_prior_energy(leaves, cfg)
            grads = torch.autograd.grad(U.sum(), list(leaves.values()))
            return U.detach(), dict(zip(leaves.keys(), grads))

        prior_variance = {"A": cfg.sigma2, "Q": math.sqrt(cfg.sigma2), "K": math.sqrt(cfg.sigma2), "b": cfg.s1}
        pre = {k: torch.full((K,) + (1,) * (v.dim() - 1), prior_variance[k], dtype=v.dtype, device=dev)
               for k, v in params.items()}
        h = torch.full((K,), 0.3, dtype=torch.float64, device=dev)
        samples = []

        def record(params):
            G = attention_matrix(params, cfg)
            m, q, t, _ = row_averages(G, cfg.boundary)
            samples.append(torch.stack([copy_strength(G, cfg.boundary), m, q, t]).cpu().numpy())

        acc_rate = _adaptive_mala(params, grad, pre, h, gen, dev, steps=steps, burn_in=burn_in, thin=thin,
                                  target_acceptance=target_acceptance, record=record)
    c, m, q, t = np.stack(samples, -1)
    status = "converged" if np.all(acc_rate > 0.2) else "low_acceptance"
    return RowModelSamples(c, m, q, t, acc_rate, list(starts), steps, status,
                           f"MALA of the row model, {steps} steps, burn-in {burn_in}, acceptance {np.round(acc_rate, 2).tolist()}")


def run_adam(cfg: CopyTaskConfig, train: Statistics, test: Statistics, n_seeds: int, *, steps: int = 3000, lr: float = 0.05,
             seed: int = 0, device: str = "auto", rng: str = "device") -> ChainSamples:
    """Adam on U from `n_seeds` prior draws (batched, all on data set 0 of `train`); filter: U within
    max(1, 1e-3|U_best|) of the best. rng: "device" or "cpu" (`attnphase.validate.seeds`)."""
    dev = select_device(device)
    with single_cpu_thread(dev):
        return _run_adam(cfg, train, test, n_seeds, steps, lr, seed, dev, rng)


def _run_adam(cfg, train, test, n_seeds, steps, lr, seed, dev, rng):
    train, test = _match(train, n_seeds), _match(test, n_seeds)
    gen = seeds.generator(seed, dev, rng)
    params = initial_params(cfg, ["prior"] * n_seeds, gen, dev)
    leaves = [v.requires_grad_(True) for v in params.values()]
    opt = torch.optim.Adam(leaves, lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        U = potential(params, cfg, train)
        U.sum().backward()
        opt.step()
    with torch.no_grad():
        U = potential(params, cfg, train).cpu().numpy()
        G = attention_matrix(params, cfg)
        tr = (squared_error(G, params["W"], train) / train.n_targets).cpu().numpy()
        te = (squared_error(G, params["W"], test) / test.n_targets).cpu().numpy()
    best = U.min()
    kept = U <= best + max(1.0, 1e-3 * abs(best))
    return ChainSamples(G.detach().cpu().numpy()[:, None], tr[:, None], te[:, None], np.ones(n_seeds), ["prior"] * n_seeds,
                        steps, "converged", f"Adam lr={lr}, {steps} steps; kept {int(kept.sum())}/{n_seeds} runs within "
                        f"max(1, 1e-3|U_best|) of the best objective", kept, U)


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


def coverage(G_samples: np.ndarray, boundary: str = "periodic") -> dict:
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
    return {"variance_fraction": captured / total if total > 0 else math.nan,
            "pca_top2_fraction": float((sv[:2] ** 2).sum() / (sv**2).sum()) if total > 0 else math.nan,
            "second_moment_fraction": float(((flat @ basis.T) ** 2).sum() / (flat**2).sum())}
