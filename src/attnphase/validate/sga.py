"""Projected stochastic gradient ascent of a softmax-pooling objective on the unit sphere, in torch.

Task: sequences of L tokens in d dimensions, R informative ones x_i = θ_d s_i ξ + z_i and L − R noise
tokens x_i = z_i, z_i ~ N(0, σ² I_d) (`PlantedTokens`; signs s_i per sign model A / B / C). The query q
is trained to maximise J(q) = E‖f_q(X)‖², f_q = Σ a_i x_i, a = softmax(β X q). The per-sequence gradient
is (`pooling_gradient`)

    ∇_q ‖f‖² = 2β (Σ_i a_i ⟨x_i, f⟩ x_i − ‖f‖² f) = 2β Cov_a(x) f,

because ∂a_i/∂q = β a_i (x_i − f). One step of projected SGA with a mini-batch of B sequences:

    G_k = mean over the batch of ∇‖f‖²,   q ← q + η_k (I − q qᵀ) G_k,   q ← q / ‖q‖,

with the Robbins–Monro schedule η_k = η₀ / (k + k₀)^γ (`StepSchedule`). By rotational invariance the
planted direction is taken as the first basis vector, ξ = e₁, so the alignment is ρ = q₁.

All trials are one tensor computation. A step needs B·T sequences of L·d Gaussian numbers; they are
generated on the fly, in slices of sequences whose size is set by a memory budget, so the peak memory
is bounded whatever the number of trials. Randomness comes from one `torch.Generator`: the same seed,
device, dtype and memory budget give the same numbers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from attnphase.errors import ParameterError
from attnphase.params import check_choice, check_int, check_positive, check_real
from attnphase.validate import seeds
from attnphase.validate.device import single_cpu_thread
from attnphase.validate.ziggurat import fill_normal

SIGN_MODELS = ("A", "B", "C")


@dataclass(frozen=True)
class StepSchedule:
    """Robbins–Monro steps η_k = η₀ / (k + k₀)^γ, k = 0, 1, ...; Σ η_k = ∞ and Σ η_k² < ∞ for ½ < γ ≤ 1."""

    eta0: float
    k0: float = 1.0
    gamma: float = 0.6

    def __post_init__(self):
        check_positive("eta0", self.eta0)
        check_real("k0", self.k0, 0.0, None)
        check_real("gamma", self.gamma, 0.0, 1.0)
        if self.k0 == 0 and self.gamma > 0:
            check_positive("k0", self.k0)

    def eta(self, steps: int) -> np.ndarray:
        """η_0, ..., η_{steps−1}."""
        k = np.arange(steps, dtype=float)
        return self.eta0 / (k + self.k0) ** self.gamma

    def times(self, steps: int) -> np.ndarray:
        """t_k = Σ_{j<k} η_j for k = 0, ..., steps (the ODE time after k steps)."""
        return np.concatenate([[0.0], np.cumsum(self.eta(steps))])

    def steps_to_reach(self, t_final: float) -> int:
        """Smallest number of steps with Σ η_k ≥ t_final."""
        t_final = check_positive("t_final", t_final)
        steps = 1
        while self.times(steps)[-1] < t_final:
            steps *= 2
        lo, hi = steps // 2, steps
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.times(mid)[-1] < t_final else (lo, mid)
        return hi


@dataclass(frozen=True)
class PlantedTokens:
    """Token distribution: R informative tokens θ_d s_i e₁ + z_i, L − R noise tokens z_i, z ~ N(0, σ²I)."""

    d: int
    L: int
    R: int
    theta_d: float
    sigma: float = 1.0
    sign_model: str = "A"

    def __post_init__(self):
        check_int("d", self.d, 2)
        check_int("L", self.L, 2)  # one token: the softmax weight is 1 whatever q, no gradient
        check_int("R", self.R, 1, self.L)
        check_real("theta_d", self.theta_d, 0.0)
        check_positive("sigma", self.sigma)
        check_choice("sign_model", self.sign_model, SIGN_MODELS)

    def signal(self, n: int, generator: torch.Generator, device, dtype) -> torch.Tensor:
        """(n, R) signal coefficients θ_d s_i of the informative tokens of n fresh sequences."""
        if self.sign_model == "A":
            return torch.full((n, self.R), self.theta_d, device=device, dtype=dtype)
        shape = (n, 1) if self.sign_model == "B" else (n, self.R)
        signs = seeds.randint(0, 2, shape, generator, device).to(dtype) * 2 - 1
        return (self.theta_d * signs).expand(n, self.R)

    def fill(self, out: torch.Tensor, generator: torch.Generator, normal_source: str = "auto") -> torch.Tensor:
        """Overwrite `out` (n, L, d) with n independent sequences; informative tokens come first.

        The noise comes from `normal_fill` (`normal_source`: "ziggurat" on the CPU, "torch" anywhere;
        "auto" picks the ziggurat on the CPU).
        """
        n = out.shape[0]
        normal_fill(out, self.sigma, generator, normal_source)
        out[:, : self.R, 0] += self.signal(n, generator, out.device, out.dtype)
        return out


NORMAL_SOURCES = ("auto", "ziggurat", "torch")


def normal_fill(out: torch.Tensor, sigma: float, generator: torch.Generator, source: str = "auto") -> torch.Tensor:
    """Overwrite the contiguous tensor `out` with i.i.d. N(0, σ²) numbers.

    "torch": `Tensor.normal_` (Mersenne Twister + Box–Muller on the CPU, Philox on CUDA). "ziggurat"
    (CPU only): `attnphase.validate.ziggurat.fill_normal`, keyed by a 62-bit number drawn from
    `generator` — vectorised and multi-threaded, ≈ 1.6× less CPU time per number than torch's and
    reproducible for a given seed whatever the thread count. "auto": the ziggurat on the CPU.
    """
    source = check_choice("normal_source", source, NORMAL_SOURCES)
    if source == "auto":
        source = "ziggurat" if out.device.type == "cpu" else "torch"
    if source == "torch":
        return seeds.normal_(out, sigma, generator)
    if out.device.type != "cpu" or out.dtype not in (torch.float32, torch.float64) or not out.is_contiguous():
        raise ParameterError("normal_source", source, "'torch' unless the tensor is a contiguous float32/float64 CPU tensor")
    key = int(torch.randint(0, 2**62, (), generator=generator, device=out.device))
    fill_normal(out.detach().numpy(), key, sigma)
    return out


def pooling_gradient(q: torch.Tensor, X: torch.Tensor, beta: float, n_informative: int):
    """Per-sequence ‖f‖², ∇_q‖f‖² = 2β Cov_a(x) f and the attention mass on the noise tokens.

    q: (n, d) queries (one per sequence), X: (n, L, d). Returns (f_sq (n,), grad (n, d), nuisance (n,)).
    The softmax is torch's max-subtracted one.
    """
    # Row-vector products (1×d)·(d×L) and (1×L)·(L×d): much faster on CPU than batched mat-vec.
    Xt = X.transpose(1, 2)
    a = torch.softmax(beta * torch.bmm(q.unsqueeze(1), Xt).squeeze(1), dim=1)
    f = torch.bmm(a.unsqueeze(1), X).squeeze(1)
    projections = torch.bmm(f.unsqueeze(1), Xt).squeeze(1)  # ⟨x_i, f⟩
    weighted = torch.bmm((a * projections).unsqueeze(1), X).squeeze(1)  # Σ a_i ⟨x_i, f⟩ x_i
    f_sq = (f * f).sum(dim=1)
    grad = 2.0 * beta * (weighted - f_sq.unsqueeze(1) * f)
    nuisance = a[:, n_informative:].sum(dim=1)
    return f_sq, grad, nuisance


def _dot(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (u * v).sum(dim=1, keepdim=True)


def projected_pooling_gradient(q: torch.Tensor, tokens: PlantedTokens, beta: float, generator: torch.Generator):
    """Same outputs as `pooling_gradient` on fresh sequences, drawn exactly with O(L + d) numbers each.

    The tokens are X = M + Z with M the planted means (rows θ_d s_i e₁ on I) and Z an L×d matrix of
    i.i.d. N(0, σ²). The gradient queries Z only through four products, each chosen from the previous
    answers: Zq, Zᵀa, Zf and Zᵀb with b = a ⊙ ⟨x, f⟩. Given the answers so far, with U the span of the
    left vectors and V that of the right vectors already used, Z = (blocks fixed by the answers) +
    P_U⊥ Z̃ P_V⊥ with Z̃ a fresh Gaussian matrix. So a new product Zv is the part of v in V, answered
    from stored products, plus the part of Z v⊥ in U (stored rows), plus a fresh N(0, σ²‖v⊥‖² P_U⊥)
    vector; likewise for Zᵀu. The law of the step is exactly that of `pooling_gradient` on dense
    tokens, at the cost of 2L + 2d Gaussian numbers per sequence instead of L·d.

    q: (n, d) unit queries, one per fresh sequence. Returns (f_sq (n,), grad (n, d), nuisance (n,)).
    """
    n, d = q.shape
    L, R, sigma = tokens.L, tokens.R, tokens.sigma
    device, dtype = q.device, q.dtype
    signal = tokens.signal(n, generator, device, dtype)  # (n, R): rows of M are signal_i e₁

    def mean_times(v):  # M v
        out = torch.zeros(n, L, device=device, dtype=dtype)
        out[:, :R] = signal * v[:, :1]
        return out

    def mean_transposed_times(u):  # Mᵀ u
        out = torch.zeros(n, d, device=device, dtype=dtype)
        out[:, 0] = (signal * u[:, :R]).sum(dim=1)
        return out

    def fresh(size):
        return sigma * seeds.randn((n, size), generator, device, dtype)

    # 1. Zq: nothing known yet.
    Zq = fresh(L)
    a = torch.softmax(beta * (mean_times(q) + Zq), dim=1)
    # 2. Zᵀa = ‖a‖ Zᵀu₁: known part along q, fresh part orthogonal to q.
    a_norm = a.norm(dim=1, keepdim=True)
    u1 = a / a_norm
    e = fresh(d)
    Zt_u1 = q * _dot(Zq, u1) + (e - _dot(e, q) * q)
    f = mean_transposed_times(a) + a_norm * Zt_u1
    # 3. Zf = c Zq + ‖f⊥‖ Z v₂ with v₂ ⟂ q: known part along u₁, fresh part orthogonal to u₁.
    c = _dot(q, f)
    f_perp = f - c * q
    f_perp_norm = f_perp.norm(dim=1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)
    v2 = f_perp / f_perp_norm
    e = fresh(L)
    Z_v2 = u1 * _dot(Zt_u1, v2) + (e - _dot(e, u1) * u1)
    projections = mean_times(f) + c * Zq + f_perp_norm * Z_v2  # ⟨x_i, f⟩
    # 4. Zᵀb = (u₁·b) Zᵀu₁ + ‖b⊥‖ Zᵀu₂ with u₂ ⟂ u₁: known part in span(q, v₂), fresh part outside.
    b = a * projections
    cb = _dot(u1, b)
    b_perp = b - cb * u1
    b_perp_norm = b_perp.norm(dim=1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)
    u2 = b_perp / b_perp_norm
    e = fresh(d)
    e = e - _dot(e, q) * q
    e = e - _dot(e, v2) * v2
    Zt_u2 = q * _dot(Zq, u2) + v2 * _dot(Z_v2, u2) + e
    weighted = mean_transposed_times(b) + cb * Zt_u1 + b_perp_norm * Zt_u2  # Σ a_i ⟨x_i, f⟩ x_i
    f_sq = (f * f).sum(dim=1)
    grad = 2.0 * beta * (weighted - f_sq.unsqueeze(1) * f)
    nuisance = a[:, R:].sum(dim=1)
    return f_sq, grad, nuisance


SAMPLERS = ("dense", "projected")


@dataclass(frozen=True)
class SGAResult:
    """Recorded trajectory of a batch of trials.

    `steps[j]` is a step count k and `times[j]` = Σ_{i<k} η_i; `rho[j, trial]` is ⟨q_k, ξ⟩ there.
    `objective` and `nuisance` are, per trial, the averages of ‖f‖² and of the noise-token attention
    mass over the steps since the previous record (the first record, at k = 0, has none: NaN).
    """

    steps: np.ndarray
    times: np.ndarray
    rho: np.ndarray
    objective: np.ndarray
    nuisance: np.ndarray
    final_rho: np.ndarray
    device: str
    seconds: float
    sequences_per_slice: int
    status: str
    message: str


def initial_queries(n_trials: int, d: int, generator: torch.Generator, device, rho0: float | None = None):
    """Uniform random unit queries (float64), or with alignment exactly ρ₀ and a random orthogonal part."""
    q = seeds.randn((n_trials, d), generator, device)
    if rho0 is None:
        return q / q.norm(dim=1, keepdim=True)
    rho0 = check_real("rho0", rho0, -1.0, 1.0)
    q[:, 0] = 0.0
    q = q / q.norm(dim=1, keepdim=True) * math.sqrt(1.0 - rho0**2)
    q[:, 0] = rho0
    return q


def sequences_per_slice(tokens: PlantedTokens, dtype: torch.dtype, memory_budget_bytes: int) -> int:
    """How many token sequences one slice holds under the memory budget (at least one)."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    return max(1, int(memory_budget_bytes) // (tokens.L * tokens.d * itemsize))


def projected_sga(
    tokens: PlantedTokens,
    *,
    beta: float,
    schedule: StepSchedule,
    steps: int,
    trials: int,
    batch: int = 1,
    generator: torch.Generator,
    device: torch.device,
    rho0: float | None = None,
    record_every: int = 1,
    dtype: torch.dtype = torch.float32,
    memory_budget_bytes: int = 1 << 30,
    sampler: str = "dense",
    normal_source: str = "auto",
    progress: bool = False,
) -> SGAResult:
    """Run `trials` independent projected-SGA trajectories of `steps` steps as one batched computation.

    `sampler="dense"` materialises the L×d tokens of every sequence (in slices under the memory
    budget); `"projected"` draws the same gradient law from 2L + 2d numbers per sequence
    (`projected_pooling_gradient`). Dense tokens draw their noise through `normal_fill`
    (`normal_source`). Tokens and gradients are computed in `dtype`; the queries are kept and updated
    in float64.
    """
    beta = check_positive("beta", beta)
    steps = check_int("steps", steps, 1)
    trials = check_int("trials", trials, 1)
    batch = check_int("batch", batch, 1)
    record_every = check_int("record_every", record_every, 1)
    sampler = check_choice("sampler", sampler, SAMPLERS)
    normal_source = check_choice("normal_source", normal_source, NORMAL_SOURCES)
    start = time.perf_counter()
    q = initial_queries(trials, tokens.d, generator, device, rho0)
    n_seq = trials * batch
    if sampler == "dense":
        per_slice = min(n_seq, sequences_per_slice(tokens, dtype, memory_budget_bytes))
        buffer = torch.empty(per_slice, tokens.L, tokens.d, dtype=dtype, device=device)
    else:  # O(L + d) per sequence: all sequences of a step at once
        per_slice = n_seq
    etas = schedule.eta(steps)
    times = schedule.times(steps)

    recorded_steps = [0]
    rho_rec = [q[:, 0].cpu().numpy().copy()]
    obj_rec = [np.full(trials, np.nan)]
    nuis_rec = [np.full(trials, np.nan)]
    obj_acc = torch.zeros(trials, dtype=torch.float64, device=device)
    nuis_acc = torch.zeros(trials, dtype=torch.float64, device=device)
    grads = torch.empty(n_seq, tokens.d, dtype=torch.float64, device=device)
    f_sq = torch.empty(n_seq, dtype=torch.float64, device=device)
    nuis = torch.empty(n_seq, dtype=torch.float64, device=device)

    iterator = range(steps)
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, desc="SGA", unit="step", leave=False)
    status, message = "completed", f"{steps} steps of {trials} trials"
    # The projected sampler works on (trials × L) tensors: on a CPU the intra-op thread pool costs more
    # than it saves there, and under contention for the cores it made steps several times slower.
    with single_cpu_thread(device, enabled=sampler == "projected"):
        for k in iterator:
            if sampler == "projected":
                q_seq = q.to(dtype).repeat_interleave(batch, dim=0)
                fs, g, nu = projected_pooling_gradient(q_seq, tokens, beta, generator)
                grads[:], f_sq[:], nuis[:] = g, fs, nu
            else:
                q_seq = q.to(dtype).repeat_interleave(batch, dim=0)
                for lo in range(0, n_seq, per_slice):
                    hi = min(n_seq, lo + per_slice)
                    X = tokens.fill(buffer[: hi - lo], generator, normal_source)
                    fs, g, nu = pooling_gradient(q_seq[lo:hi], X, beta, tokens.R)
                    grads[lo:hi], f_sq[lo:hi], nuis[lo:hi] = g, fs, nu
            G = grads.view(trials, batch, tokens.d).mean(dim=1)
            G_tangent = G - (G * q).sum(dim=1, keepdim=True) * q
            q = q + etas[k] * G_tangent
            q = q / q.norm(dim=1, keepdim=True)
            obj_acc += f_sq.view(trials, batch).mean(dim=1)
            nuis_acc += nuis.view(trials, batch).mean(dim=1)
            if (k + 1) % record_every == 0 or k + 1 == steps:
                window = (k + 1) - recorded_steps[-1]
                recorded_steps.append(k + 1)
                rho_rec.append(q[:, 0].cpu().numpy().copy())
                obj_rec.append((obj_acc / window).cpu().numpy())
                nuis_rec.append((nuis_acc / window).cpu().numpy())
                obj_acc.zero_()
                nuis_acc.zero_()
            if not torch.isfinite(q).all():
                status, message = "diverged", f"non-finite query at step {k}"
                break
    recorded = np.asarray(recorded_steps)
    return SGAResult(
        steps=recorded,
        times=times[recorded],
        rho=np.asarray(rho_rec),
        objective=np.asarray(obj_rec),
        nuisance=np.asarray(nuis_rec),
        final_rho=rho_rec[-1],
        device=str(device),
        seconds=time.perf_counter() - start,
        sequences_per_slice=per_slice,
        status=status,
        message=message,
    )
