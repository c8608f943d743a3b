"""Finite-d full-batch gradient descent for tied low-rank dot-product attention, batched over seeds.

The positional-vs-semantic model (spec `positional_semantic.md` §1, §6): tokens x_ℓ ~ N(0, σ² I_d),
positional encodings p_ℓ = ±1_d/√d (alternating signs), a tied rank-one student
f_Q(x) = softmax((x+p) Q Qᵀ (x+p)ᵀ/d)(x+p) and the teacher y = [(1−ω) softmax(x Q* Q*ᵀ xᵀ/d) + ω A] x
with Q* ~ N(0, I_d). Training minimises R(Q) = Σ_μ ‖y^μ − f_Q(x^μ)‖²/(2d) + λ‖Q‖²/2 over n = round(αd)
samples by full-batch GD (or Adam), all K seeds in one tensor computation: every tensor carries a
leading seed axis, each seed with its own data, teacher and initialisation.

Measured per seed: |m| = |p_1ᵀQ|/√d, |θ| = σ² |Q*ᵀQ|/d (the theory's θ), q = σ²‖Q‖²/d,
ε_t = R(Q̂)/d and ε_g = E (1/(2d))‖y − f‖² on fresh samples, with the Monte-Carlo standard error of
each seed's ε_g estimate (from the spread of the per-sample losses).

Cost: each step is two matrix-vector products with the K·n·L·d training tokens (forward x·Q and its
adjoint); at d = 1000 a 5-seed step takes ≈ 45 ms per unit of α on one CPU core in float64. float32
measured no faster on CPU (the products are memory- and call-overhead bound), so float64 is the default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attnphase.errors import ParameterError
from attnphase.params import check_choice, check_int, check_positive, check_real, check_real_list
from attnphase.validate.device import select_device
from attnphase.validate.seeds import RNG_SOURCES, generator, randn

INITS = ("semantic", "positional", "random")
# The training tokens of all seeds are held at once (K·n·L·d numbers, n = round(αd)); beyond this many
# the allocation fails (α = 1e300 asked for ~1e300 numbers) or swaps, so such runs are refused up front.
MAX_TRAINING_NUMBERS = 1 << 28


@dataclass(frozen=True)
class GDResult:
    """Per-seed end-of-training measurements (arrays of length `seeds`) and the run's settings."""

    m: np.ndarray
    theta: np.ndarray
    q: np.ndarray
    test_error: np.ndarray
    train_loss: np.ndarray
    init: str
    optimizer: str
    d: int
    n: int
    steps: int
    lr: float
    device: str
    test_samples: int
    status: str = "completed"  # "diverged" when a measurement of some seed is not finite (e.g. a huge lr)
    message: str = ""
    # Standard error of each seed's ε_g estimate from the finite test set (per-sample loss spread / √N):
    # the Monte-Carlo part of the seed-to-seed spread of `test_error`, which finite-size gaps subtract.
    test_error_sem: np.ndarray | None = None

    def as_dict(self) -> dict:
        out = {"init": self.init, "optimizer": self.optimizer, "d": self.d, "n": self.n, "steps": self.steps,
               "status": self.status, "message": self.message}
        for key in ("m", "theta", "q", "test_error", "train_loss"):
            values = getattr(self, key)
            out[key] = values
            out[key + "_mean"] = float(values.mean())
            out[key + "_std"] = float(values.std(ddof=1)) if values.size > 1 else 0.0
        if self.test_error_sem is not None:
            out["test_error_mc_sem"] = self.test_error_sem
        return out


def _attention(fields: torch.Tensor) -> torch.Tensor:
    """Row-softmax of the rank-one scores h_ℓ h_κ: fields (..., L) -> (..., L, L)."""
    return torch.softmax(fields.unsqueeze(-1) * fields.unsqueeze(-2), dim=-1)


class AttentionProblem:
    """Data, teacher and encodings of K independent runs (leading axis K).

    The loss needs x only through its token Gram matrices, which are fixed during training:
    ‖(T − S) x − S p‖² = tr(D Gₓ Dᵀ) − 2 tr(D Gₓₚ Sᵀ) + tr(S Gₚ Sᵀ) with D = T − S, Gₓ = x xᵀ,
    Gₓₚ = x pᵀ, Gₚ = p pᵀ (all L × L per sample). One step then costs two matrix-vector products
    x·Q (forward and backward) instead of L × L × d work per sample.
    """

    def __init__(self, K, n, d, L, omega, sigma, A, gen, device, dtype):
        self.K, self.n, self.d, self.L = K, n, d, L
        self.omega, self.sigma = omega, sigma
        self.A = torch.tensor(A, dtype=dtype, device=device).reshape(L, L)
        signs = torch.tensor([(-1.0) ** i for i in range(L)], dtype=dtype, device=device)
        self.p = signs[:, None] * torch.ones(d, dtype=dtype, device=device) / math.sqrt(d)  # (L, d)
        self.gram_p = self.p @ self.p.T
        self.teacher = randn((K, d), gen, device, dtype)  # Q*
        self.gen, self.device, self.dtype = gen, device, dtype
        self.train = self.batch(n)

    def batch(self, n) -> dict:
        """n fresh samples per seed, reduced to what the loss needs."""
        x = self.sigma * randn((self.K, n, self.L, self.d), self.gen, self.device, self.dtype)
        h_star = torch.einsum("knld,kd->knl", x, self.teacher) / math.sqrt(self.d)
        T = (1 - self.omega) * _attention(h_star) + self.omega * self.A
        return {"x": x, "T": T, "gram_x": x @ x.transpose(-1, -2), "gram_xp": x @ self.p.T}

    def loss_sum(self, Q, data) -> torch.Tensor:
        """Σ_μ ‖y − f‖²/(2d) per seed: (K,)."""
        return self.per_sample_loss(Q, data).sum(dim=1)

    def per_sample_loss(self, Q, data) -> torch.Tensor:
        """‖y^μ − f(x^μ)‖²/(2d) per seed and sample: (K, n)."""
        h = (torch.einsum("knld,kd->knl", data["x"], Q) + (self.p @ Q.T).T[:, None, :]) / math.sqrt(self.d)
        S = _attention(h)
        D = data["T"] - S
        sq = ((D @ data["gram_x"]) * D).sum(dim=(-1, -2)) - 2 * ((D @ data["gram_xp"]) * S).sum(dim=(-1, -2)) \
            + ((S @ self.gram_p) * S).sum(dim=(-1, -2))
        return sq / (2 * self.d)


def simulate_positional_semantic(*, omega, alpha, d=1000, init="semantic", seeds=5, seed=0, steps=5000, lr=None,
                                 test_samples=10_000, device="auto", sigma=0.5, lam=0.01, A=None, L=2,
                                 dtype=torch.float64, test_chunk=2000, num_threads=None, rng="device") -> GDResult:
    """Train K = `seeds` independent students by full-batch GD (semantic / positional init) or Adam
    (random init, Q₀ = 0.1·N(0, 1)) and measure the overlaps and errors at the end (spec §6).

    num_threads: torch CPU threads for this call (restored afterwards); on a shared machine one thread
    avoids oversubscription, which slows these small tensor operations down several-fold.
    rng: "device" or "cpu", where the random numbers are drawn (`attnphase.validate.seeds`).
    """
    previous_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(check_int("num_threads", num_threads, 1, None))
    try:
        return _simulate(omega=omega, alpha=alpha, d=d, init=init, seeds=seeds, seed=seed, steps=steps, lr=lr,
                         test_samples=test_samples, device=device, sigma=sigma, lam=lam, A=A, L=L, dtype=dtype,
                         test_chunk=test_chunk, rng=rng)
    finally:
        torch.set_num_threads(previous_threads)


def _simulate(*, omega, alpha, d, init, seeds, seed, steps, lr, test_samples, device, sigma, lam, A, L, dtype,
              test_chunk, rng) -> GDResult:
    omega = check_real("omega", omega, 0.0, 1.0)
    alpha = check_positive("alpha", alpha)
    d = check_int("d", d, 2, None)
    init = check_choice("init", init, INITS)
    K = check_int("seeds", seeds, 1, None)
    steps = check_int("steps", steps, 1, None)
    test_samples = check_int("test_samples", test_samples, 1, None)
    sigma = check_real("sigma", sigma, 1e-3, 100.0)  # as attnphase.api.positional_semantic.SIGMA_RANGE
    lam = check_real("lam", lam, 0.0, 1e6, low_open=True)
    L = check_int("L", L, 2, 6)
    if K * alpha * d * L * d > MAX_TRAINING_NUMBERS:
        raise ParameterError("alpha", alpha, f"at most {MAX_TRAINING_NUMBERS / (K * d * L * d):.3g} for seeds = {K}, "
                                             f"d = {d}, L = {L} (seeds·αd·L·d ≤ {MAX_TRAINING_NUMBERS} training numbers)")
    if K * min(test_chunk, test_samples) * L * d > MAX_TRAINING_NUMBERS:
        raise ParameterError("seeds", K, f"at most seeds·min({test_chunk}, test_samples)·L·d = {MAX_TRAINING_NUMBERS} "
                                         f"test numbers held at once (d = {d}, L = {L})")
    if A is None:
        if L != 2:
            raise ParameterError("A", A, f"required for L = {L}")
        A = (0.6, 0.4, 0.4, 0.6)
    A = check_real_list("A", A, L * L, 0.0, 1.0)
    if not np.allclose(np.array(A).reshape(L, L).sum(1), 1.0, atol=1e-12):
        raise ParameterError("A", A, "a row-stochastic matrix")
    optimizer_name = "adam" if init == "random" else "gd"
    lr = (0.01 if init == "random" else 0.15) if lr is None else check_positive("lr", lr)
    if optimizer_name == "gd" and lr * lam >= 2.0:
        # The weight decay alone multiplies Q by (1 − lr·λ) per step: |1 − lr·λ| ≥ 1 grows without bound.
        raise ParameterError("lr", lr, f"a real number in (0, {2.0 / lam:g}) (GD needs lr·lam < 2; lam = {lam:g})")
    n = max(1, round(alpha * d))
    dev = select_device(device)
    gen = generator(seed, dev, rng)
    problem = AttentionProblem(K, n, d, L, omega, sigma, A, gen, dev, dtype)

    if init == "semantic":
        Q0 = problem.teacher.clone()
    elif init == "positional":
        Q0 = torch.ones(K, d, device=dev, dtype=dtype) / math.sqrt(d)
    else:
        Q0 = 0.1 * randn((K, d), gen, dev, dtype)
    Q = Q0.requires_grad_(True)

    def objective():
        return problem.loss_sum(Q, problem.train) + 0.5 * lam * (Q**2).sum(dim=1)

    if optimizer_name == "adam":
        opt = torch.optim.Adam([Q], lr=lr)
    else:
        opt = torch.optim.SGD([Q], lr=lr)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        # The seeds are independent: the gradient of the sum is each seed's own gradient.
        objective().sum().backward()
        opt.step()

    with torch.no_grad():
        train = (objective() / d).cpu().numpy()
        m = (Q @ problem.p[0]).abs() / math.sqrt(d)  # |1ᵀQ|/d
        theta = sigma**2 * (Q * problem.teacher).sum(dim=1).abs() / d
        q = sigma**2 * (Q**2).sum(dim=1) / d
        total = torch.zeros(K, dtype=dtype, device=dev)
        total_squares = torch.zeros(K, dtype=dtype, device=dev)
        remaining = test_samples
        while remaining > 0:
            chunk = min(test_chunk, remaining)
            losses = problem.per_sample_loss(Q, problem.batch(chunk))
            total += losses.sum(dim=1)
            total_squares += (losses**2).sum(dim=1)
            remaining -= chunk
        test_mean = total / test_samples
        test = test_mean.cpu().numpy()
        sample_variance = (total_squares / test_samples - test_mean**2).clamp(min=0.0) * test_samples / max(test_samples - 1, 1)
        test_sem = (sample_variance / test_samples).sqrt().cpu().numpy()
    measured = [m.cpu().numpy(), theta.cpu().numpy(), q.cpu().numpy(), test, train]
    bad_seeds = int(np.sum(~np.all(np.isfinite(np.stack(measured)), axis=0)))
    status, message = ("diverged", f"{bad_seeds} of {K} seeds ended with non-finite overlaps or errors "
                                   f"({optimizer_name}, lr = {lr:g}): lower the learning rate") if bad_seeds else (
        "completed", f"{steps} {optimizer_name} steps of {K} seeds")
    return GDResult(*measured, init, optimizer_name, d, n, steps, float(lr), str(dev), test_samples, status, message,
                    test_sem)
