"""The planted-token problem in torch: tokens, the pooling gradient, its samplers, the device fixtures.

Sequences of L tokens in d dimensions: R informative ones x_i = θ_d s_i ξ + z_i and L − R noise tokens
x_i = z_i, z_i ~ N(0, σ² I_d) (`PlantedTokens`; signs s_i per sign model A / B / C), with the planted
direction ξ = e₁ (the convention of `attnphase.validate.sphere_sga`). The query q is trained to
maximise J(q) = E‖f_q(X)‖², f_q = Σ a_i x_i, a = softmax(β X q). The per-sequence gradient is

    ∇_q ‖f‖² = 2β (Σ_i a_i ⟨x_i, f⟩ x_i − ‖f‖² f) = 2β Cov_a(x) f,

because ∂a_i/∂q = β a_i (x_i − f) (`pooling_gradient`). Two gradient samplers for
`sphere_sga`, with the same law: `DenseSampler` materialises the L×d tokens of every sequence (in
slices under a memory budget, so the peak memory is bounded whatever the number of trials), and
`ProjectedSampler` draws the same gradient from 2L + 2d Gaussian numbers per sequence.

`SIMULATORS` are the model's fixtures for the device agreement check (`attnphase agreement`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.parameters import NORMAL_SOURCES, Parameters
from attnphase.params import check_choice
from attnphase.validate import seeds
from attnphase.validate.ziggurat import fill_normal

__all__ = ["PlantedTokens", "normal_fill", "pooling_gradient", "projected_pooling_gradient", "sequences_per_slice",
           "DenseSampler", "ProjectedSampler", "SIMULATORS"]


@dataclass(frozen=True)
class PlantedTokens:
    """The token distribution of a validated `Parameters`: informative tokens first, ξ = e₁."""

    params: Parameters

    @property
    def d(self) -> int:
        return self.params.d

    @property
    def L(self) -> int:
        return self.params.L

    @property
    def R(self) -> int:
        return self.params.R

    def signal(self, n: int, generator: torch.Generator, device, dtype) -> torch.Tensor:
        """(n, R) signal coefficients θ_d s_i of the informative tokens of n fresh sequences."""
        p = self.params
        if p.sign_model == "A":
            return torch.full((n, p.R), p.theta_d, device=device, dtype=dtype)
        shape = (n, 1) if p.sign_model == "B" else (n, p.R)
        signs = seeds.randint(0, 2, shape, generator, device).to(dtype) * 2 - 1
        return (p.theta_d * signs).expand(n, p.R)

    def fill(self, out: torch.Tensor, generator: torch.Generator, normal_source: str = "auto") -> torch.Tensor:
        """Overwrite `out` (n, L, d) with n independent sequences (noise from `normal_fill`)."""
        n = out.shape[0]
        normal_fill(out, self.params.sigma, generator, normal_source)
        out[:, : self.R, 0] += self.signal(n, generator, out.device, out.dtype)
        return out


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


def projected_pooling_gradient(q: torch.Tensor, tokens: PlantedTokens, generator: torch.Generator):
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
    L, R, sigma, beta = tokens.L, tokens.R, tokens.params.sigma, tokens.params.score_scale
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


def sequences_per_slice(tokens: PlantedTokens, dtype: torch.dtype, memory_budget_bytes: int) -> int:
    """How many token sequences one slice holds under the memory budget (at least one)."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    return max(1, int(memory_budget_bytes) // (tokens.L * tokens.d * itemsize))


class DenseSampler:
    """Gradient sampler of `sphere_sga` on dense tokens: slices of at most `per_slice` sequences, each
    filled in one buffer (allocated on the first call) and passed to `pooling_gradient`."""

    def __init__(self, tokens: PlantedTokens, generator: torch.Generator, *, dtype: torch.dtype = torch.float32,
                 normal_source: str = "auto", memory_budget_bytes: int = 1 << 30):
        self.tokens, self.generator, self.normal_source = tokens, generator, normal_source
        self.per_slice = sequences_per_slice(tokens, dtype, memory_budget_bytes)
        self.dtype = dtype
        self.buffer: torch.Tensor | None = None

    def __call__(self, q: torch.Tensor):
        n = q.shape[0]
        if self.buffer is None:
            self.per_slice = min(n, self.per_slice)
            self.buffer = torch.empty(self.per_slice, self.tokens.L, self.tokens.d, dtype=self.dtype, device=q.device)
        parts = []
        for lo in range(0, n, self.per_slice):
            hi = min(n, lo + self.per_slice)
            X = self.tokens.fill(self.buffer[: hi - lo], self.generator, self.normal_source)
            parts.append(pooling_gradient(q[lo:hi], X, self.tokens.params.score_scale, self.tokens.R))
        return tuple(torch.cat(column) for column in zip(*parts))


@dataclass(frozen=True)
class ProjectedSampler:
    """Gradient sampler of `sphere_sga` with the exact O(L + d) law (`projected_pooling_gradient`)."""

    tokens: PlantedTokens
    generator: torch.Generator

    def __call__(self, q: torch.Tensor):
        return projected_pooling_gradient(q, self.tokens, self.generator)


def _fixture(device: torch.device, sampler: str, seed: int) -> dict[str, np.ndarray]:
    """A short seeded SGA run in float64 with CPU-drawn numbers (identical streams on every device)."""
    from attnphase.validate.sphere_sga import StepSchedule, sphere_sga

    if sampler == "projected":
        params, trials, steps, batch = Parameters.validated(d=64, L=256, R=32, theta=1.0, sign_model="C"), 4, 300, 2
    else:
        params, trials, steps, batch = Parameters.validated(d=32, L=64, R=8, theta=1.0, sign_model="B"), 3, 100, 1
    tokens, generator = PlantedTokens(params), seeds.generator(seed, device, "cpu")
    draw = (ProjectedSampler(tokens, generator) if sampler == "projected"
            else DenseSampler(tokens, generator, dtype=torch.float64, normal_source="torch"))
    run = sphere_sga(draw, d=params.d, schedule=StepSchedule(0.5, 10.0, 0.6), steps=steps, trials=trials, batch=batch,
                     generator=generator, device=device, record_every=max(1, steps // 10), dtype=torch.float64,
                     threads=1 if sampler == "projected" else None)
    return {"rho": run.rho, "objective": run.objective[1:], "nuisance": run.observable[1:]}


#: Device agreement fixtures: name -> callable(device, seed) -> dict of arrays.
SIMULATORS = {
    "signal-recovery projected SGA": lambda device, seed: _fixture(device, "projected", seed),
    "signal-recovery dense SGA": lambda device, seed: _fixture(device, "dense", seed),
}
