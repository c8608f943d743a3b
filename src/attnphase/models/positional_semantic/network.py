"""The finite-d network: tied low-rank dot-product attention trained on the model's data, batched over trials.

Tokens x_ℓ ~ N(0, σ² I_d), positional encodings p_ℓ = ±1_d/√d (alternating signs, the default Gram
matrix), a tied rank-one student f_Q(x) = softmax((x+p) Q Qᵀ (x+p)ᵀ/d)(x+p) and the teacher
y = [(1−ω) softmax(x Q* Q*ᵀ xᵀ/d) + ω A] x with Q* ~ N(0, I_d) (the paper's teacher and protocol). Training minimises
R(Q) = Σ_μ ‖y^μ − f_Q(x^μ)‖²/(2d) + λ‖Q‖²/2 over n = round(αd) samples by full-batch GD (or Adam,
validate.training), all K trials in one tensor computation: every tensor carries a leading trial axis,
each trial with its own data, teacher and initialisation.

Measured per trial: |m| = |p_1ᵀQ|/√d, |θ| = σ² |Q*ᵀQ|/d (the theory's θ), q = σ²‖Q‖²/d,
ε_t = R(Q̂)/d and ε_g = E (1/(2d))‖y − f‖² on fresh samples, with the Monte-Carlo standard error of
each trial's ε_g estimate (from the spread of the per-sample losses).

Cost: each step is two matrix-vector products with the K·n·L·d training tokens (forward x·Q and its
adjoint); at d = 1000 a 5-trial step takes ≈ 45 ms per unit of α on one CPU core in float64. float32
measured no faster on CPU (the products are memory- and call-overhead bound), so float64 is the default.

`SIMULATORS` are the device-agreement fixtures of this model (validate.agreement), named in the model
registry.
"""

from __future__ import annotations

import dataclasses

import math

import numpy as np
import torch

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import Parameters, Simulation
from attnphase.models.positional_semantic.results import GDResult
from attnphase.params import check_choice, check_int
from attnphase.results import Status
from attnphase.validate.device import choose_threads, select_device, using_threads
from attnphase.validate.seeds import RNG_SOURCES, generator, randn
from attnphase.validate.training import divergence, train_full_batch

__all__ = ["MAX_TRAINING_NUMBERS", "DTYPES", "AttentionProblem", "simulate", "SIMULATORS"]

# The training tokens of all trials are held at once (K·n·L·d numbers, n = round(αd)); beyond this many
# the allocation fails (α = 1e300 asked for ~1e300 numbers) or swaps, so such runs are refused up front.
MAX_TRAINING_NUMBERS = 1 << 28
# The floating-point types a run may use, by name (`simulate` takes the torch dtype or its name).
DTYPES = {"float64": torch.float64, "float32": torch.float32}
# The most torch CPU threads a run may ask for (the CLI's --threads has the same bound).
MAX_THREADS = 4096
#: A run is settled (status converged) when, for every trial, over the last tenth of its steps (the window) the
#: training loss moved by at most SETTLED_LOSS_CHANGE of itself and each order parameter it reports (m, θ, q) by at
#: most SETTLED_ORDER_CHANGE of its scale (`settling`). The paper's protocol (5000 steps, d = 300, α = 1.5, ω = 0.3)
#: moves the loss by 2e-5 to 6e-4; one step moves it by far more. The loss alone was not enough: at σ = 100 it is a
#: noise floor (≈ 4100) that one GD step moves by 4e-9 of itself while q falls by 0.3 % a step (and GD at the default
#: rate later blows up there). Near a minimum the loss moves quadratically in the distance to it and the order
#: parameters linearly, so the bound on them that matches the loss's is about its square root: runs the loss settles
#: moved them by up to 1.2e-2 (the finite-size scan's d = 100 semantic init, the loss by 6.5e-4), 1.7e-3 (the page's
#: d = 200 example) and 1.8e-3 (σ = 0.5, ω = 1, d = 20, positional init), while σ = 100 moves q by 0.3 in 100 steps.
SETTLED_LOSS_CHANGE = 1e-3
SETTLED_ORDER_CHANGE = 3e-2
#: The fewest steps a window is judged over: a shorter one (a run of fewer than ten times as many steps) is judged by
#: its rate, its change times SETTLE_STEPS / its steps, so that a run of one step is not settled by moving little in
#: that one step, unless it would move as little in SETTLE_STEPS.
SETTLE_STEPS = 100


def _checked_dtype(dtype) -> torch.dtype:
    """`dtype` (torch.float64, "float64", "torch.float32", ...) as one of DTYPES, or a ParameterError."""
    name = str(dtype).removeprefix("torch.") if isinstance(dtype, (str, torch.dtype)) else None
    if name not in DTYPES:
        raise ParameterError("dtype", dtype, "torch.float64 or torch.float32 (or the name, e.g. 'float64')")
    return DTYPES[name]


def _attention(fields: torch.Tensor) -> torch.Tensor:
    """Row-softmax of the rank-one scores h_ℓ h_κ: fields (..., L) -> (..., L, L)."""
    return torch.softmax(fields.unsqueeze(-1) * fields.unsqueeze(-2), dim=-1)


class AttentionProblem:
    """Data, teacher and encodings of K independent trials (leading axis K).

    The loss needs x only through its token Gram matrices, which are fixed during training:
    ‖(T − S) x − S p‖² = tr(D Gₓ Dᵀ) − 2 tr(D Gₓₚ Sᵀ) + tr(S Gₚ Sᵀ) with D = T − S, Gₓ = x xᵀ,
    Gₓₚ = x pᵀ, Gₚ = p pᵀ (all L × L per sample). One step then costs two matrix-vector products
    x·Q (forward and backward) instead of L × L × d work per sample.
    """

    def __init__(self, K, n, d, params: Parameters, gen, device, dtype):
        L = params.L
        self.K, self.n, self.d, self.L = K, n, d, L
        self.omega, self.sigma = params.omega, params.sigma
        self.A = torch.tensor(params.A, dtype=dtype, device=device).reshape(L, L)
        signs = torch.tensor([(-1.0) ** i for i in range(L)], dtype=dtype, device=device)
        self.p = signs[:, None] * torch.ones(d, dtype=dtype, device=device) / math.sqrt(d)  # (L, d)
        self.gram_p = self.p @ self.p.T
        self.teacher = randn((K, d), gen, device, dtype)  # Q*
        self.gen, self.device, self.dtype = gen, device, dtype
        self.train = self.batch(n)

    def batch(self, n) -> dict:
        """n fresh samples per trial, reduced to what the loss needs."""
        x = self.sigma * randn((self.K, n, self.L, self.d), self.gen, self.device, self.dtype)
        h_star = torch.einsum("knld,kd->knl", x, self.teacher) / math.sqrt(self.d)
        T = (1 - self.omega) * _attention(h_star) + self.omega * self.A
        return {"x": x, "T": T, "gram_x": x @ x.transpose(-1, -2), "gram_xp": x @ self.p.T}

    def loss_sum(self, Q, data) -> torch.Tensor:
        """Σ_μ ‖y − f‖²/(2d) per trial: (K,)."""
        return self.per_sample_loss(Q, data).sum(dim=1)

    def per_sample_loss(self, Q, data) -> torch.Tensor:
        """‖y^μ − f(x^μ)‖²/(2d) per trial and sample: (K, n)."""
        h = (torch.einsum("knld,kd->knl", data["x"], Q) + (self.p @ Q.T).T[:, None, :]) / math.sqrt(self.d)
        S = _attention(h)
        D = data["T"] - S
        sq = ((D @ data["gram_x"]) * D).sum(dim=(-1, -2)) - 2 * ((D @ data["gram_xp"]) * S).sum(dim=(-1, -2)) \
            + ((S @ self.gram_p) * S).sum(dim=(-1, -2))
        return sq / (2 * self.d)


def simulate(*, omega, alpha, d=1000, init="semantic", trials=5, seed=0, steps=5000, lr=None, test_samples=10_000,
             device="auto", sigma=0.5, lam=0.01, A=None, L=2, dtype=torch.float64, test_chunk=2000, num_threads=None,
             rng="device") -> GDResult:
    """Train K = `trials` independent students by full-batch GD (semantic / positional init) or Adam
    (random init, Q₀ = 0.1·N(0, 1)) and measure the overlaps and errors at the end (the paper's protocol). The model's
    values are checked against `Parameters`, the run's against `Simulation` (one declaration each, shared
    with the CLI).

    num_threads: torch CPU threads for this call (an integer in [1, 4096], restored afterwards); None:
    `validate.device.choose_threads` from the work of one step (the batched products over the K·n·L·d training
    numbers): one thread unless that is large enough to gain from the idle cores (on a shared machine extra threads
    slow these small tensor operations down several-fold). The count used is reported as `threads`.
    rng: "device" or "cpu", where the random numbers are drawn (`attnphase.validate.seeds`).
    device: "auto", "cpu" or "cuda" (`validate.device.select_device`). dtype: torch.float64 or torch.float32 (or
    its name). test_chunk: test samples per trial evaluated at once (a positive integer; it bounds the memory of
    the test error, not its value). The result carries α and the model's parameters, for
    `comparison.compare_with_theory` (the run against the theory, which `attnphase simulate` prints).
    """
    params = Parameters.validated(omega=omega, sigma=sigma, lam=lam, A=A, L=L)
    run = Simulation.validated(alpha=alpha, d=d, init=init, trials=trials, seed=seed, steps=steps, lr=lr,
                               test_samples=test_samples, device=device)
    # the settings the declarations do not cover, checked before any work (a test_chunk of 0 never finished); a
    # declared device the machine lacks (cuda without a GPU) is refused here under its declared name
    device = select_device(run.device)
    dtype = _checked_dtype(dtype)
    rng = check_choice("rng", rng, RNG_SOURCES)
    test_chunk = check_int("test_chunk", test_chunk, 1)
    if num_threads is not None:  # None asks for the count chosen from the work (0 would be read the same way)
        num_threads = check_int("num_threads", num_threads, 1, MAX_THREADS)
    alpha, d, init, K, steps, test_samples = run.alpha, run.d, run.init, run.trials, run.steps, run.test_samples
    if K * alpha * d * L * d > MAX_TRAINING_NUMBERS:
        raise ParameterError("alpha", alpha, f"at most {MAX_TRAINING_NUMBERS / (K * d * L * d):.3g} for trials = {K}, "
                                             f"d = {d}, L = {L} (trials·αd·L·d ≤ {MAX_TRAINING_NUMBERS} training numbers)")
    if K * min(test_chunk, test_samples) * L * d > MAX_TRAINING_NUMBERS:
        raise ParameterError("trials", K, f"at most trials·min({test_chunk}, test_samples)·L·d = {MAX_TRAINING_NUMBERS} "
                                          f"test numbers held at once (d = {d}, L = {L})")
    if round(alpha * d) < 1:  # n = round(αd) training samples: none would be a run at another α
        raise ParameterError("alpha", alpha, f"above {0.5 / d:.3g} for d = {d} (n = round(α·d) >= 1 training "
                                             "samples)")
    optimizer = "adam" if init == "random" else "gd"
    lr = (0.01 if init == "random" else 0.15) if run.lr is None else run.lr
    if optimizer == "gd" and lr * params.lam >= 2.0:
        # The weight decay alone multiplies Q by (1 − lr·λ) per step: |1 − lr·λ| ≥ 1 grows without bound.
        allowed = f"a real number in (0, {2.0 / params.lam:g}) (GD needs lr·lam < 2; lam = {params.lam:g})"
        if run.lr is None:  # the caller gave none: say that this is the default, and what to give instead
            allowed += (f"; the default lr {lr:g} (for init '{init}') was used, as none was given: pass one in that "
                        "range")
        raise ParameterError("lr", lr, allowed)
    threads = choose_threads(num_threads, work=2.0 * K * round(alpha * d) * L * d, device=device)
    with using_threads(threads):
        result = _train_and_measure(params, alpha, d, init, K, run.seed, steps, lr, optimizer, test_samples, device,
                                    dtype, test_chunk, rng)
    return dataclasses.replace(result, threads=threads, alpha=alpha, params=params)


def _train_and_measure(params: Parameters, alpha, d, init, K, seed, steps, lr, optimizer, test_samples,
                       device: torch.device, dtype, test_chunk, rng) -> GDResult:
    n = round(alpha * d)
    gen = generator(seed, device, rng)
    problem = AttentionProblem(K, n, d, params, gen, device, dtype)
    if init == "semantic":
        Q0 = problem.teacher.clone()
    elif init == "positional":
        Q0 = torch.ones(K, d, device=device, dtype=dtype) / math.sqrt(d)
    else:
        Q0 = 0.1 * randn((K, d), gen, device, dtype)

    def objective(Q):
        return problem.loss_sum(Q, problem.train) + 0.5 * params.lam * (Q**2).sum(dim=1)

    training = train_full_batch(objective, Q0, optimizer=optimizer, lr=lr, steps=steps)
    Q = training.parameters
    sigma = params.sigma
    with torch.no_grad():
        train = (objective(Q) / d).cpu().numpy()
        m, theta, q = _order_parameters(problem, sigma, Q)
        total = torch.zeros(K, dtype=dtype, device=device)
        total_squares = torch.zeros(K, dtype=dtype, device=device)
        remaining = test_samples
        while remaining > 0:
            chunk = min(test_chunk, remaining)
            losses = problem.per_sample_loss(Q, problem.batch(chunk))
            total += losses.sum(dim=1)
            total_squares += (losses**2).sum(dim=1)
            remaining -= chunk
        test_mean = total / test_samples
        test = test_mean.cpu().numpy()
        spread = (total_squares / test_samples - test_mean**2).clamp(min=0.0)
        sample_variance = spread * test_samples / (test_samples - 1)
        test_sem = (sample_variance / test_samples).sqrt().cpu().numpy()
    measured = [m.cpu().numpy(), theta.cpu().numpy(), q.cpu().numpy(), test, train]
    status, bad = divergence(measured)
    message = (f"{bad} of {K} seeds ended with non-finite overlaps or errors ({optimizer}, lr = {lr:g}): lower the "
               f"learning rate") if bad else f"{steps} {optimizer} steps of {K} seeds"
    if status == Status.CONVERGED:
        status, message = _settled(problem, sigma, training, optimizer, status, message)
    return GDResult(*measured, init, optimizer, d, n, steps, float(lr), str(device), test_samples, status, message,
                    test_sem)


def _order_parameters(problem: AttentionProblem, sigma, Q: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """|m| = |1ᵀQ|/d, |θ| = σ²|Q*ᵀQ|/d and q = σ²‖Q‖²/d of each trial's Q (K, d): three (K,) tensors."""
    d = problem.d
    m = (Q @ problem.p[0]).abs() / math.sqrt(d)
    theta = sigma**2 * (Q * problem.teacher).sum(dim=1).abs() / d
    q = sigma**2 * (Q**2).sum(dim=1) / d
    return m, theta, q


def settling(problem: AttentionProblem, sigma, training) -> dict[str, np.ndarray]:
    """How much each trial still moved over the window (the last tenth of the steps, `training.tail_steps`): the
    training loss relative to itself ("loss"), and each order parameter relative to its scale, the largest value
    ‖Q‖ allows it (Cauchy–Schwarz, ‖Q‖ the larger of its norms at both ends): ‖Q‖/√d for |m|, σ²‖Q*‖‖Q‖/d for |θ|,
    q itself for q. Scaled so, an overlap near 0 is not judged by its own size. (K,) arrays by name."""
    with torch.no_grad():
        before, final = training.parameters_before_tail, training.parameters.detach()
        norm = torch.maximum(before.norm(dim=1), final.norm(dim=1))
        d = problem.d
        scales = (norm / math.sqrt(d), sigma**2 * problem.teacher.norm(dim=1) * norm / d, None)
        changes = {"loss": training.tail_change()}
        for name, start, end, scale in zip(("m", "θ", "q"), _order_parameters(problem, sigma, before),
                                           _order_parameters(problem, sigma, final), scales):
            scale = torch.maximum(start, end) if scale is None else scale
            # a scale of 0 bounds both ends to 0: nothing moved
            changes[name] = torch.where(scale > 0, (end - start).abs() / scale, 0.0).cpu().numpy()
    return changes


def _settled(problem, sigma, training, optimizer: str, status: Status, message: str) -> tuple[Status, str]:
    """The run's status and message by SETTLED_LOSS_CHANGE, SETTLED_ORDER_CHANGE and SETTLE_STEPS (`settling`), with
    the remedy that fits an unsettled run: a lower learning rate where the training loss rose on a step (in the window,
    or for GD anywhere: a descent at a stable rate only lowers it), more steps where it only fell."""
    window = training.tail_steps
    with np.errstate(all="ignore"):
        moved = {name: float(np.max(change)) for name, change in settling(problem, sigma, training).items()}
    rate = max(1.0, SETTLE_STEPS / window)
    bounds = {"loss": SETTLED_LOSS_CHANGE, "m": SETTLED_ORDER_CHANGE, "θ": SETTLED_ORDER_CHANGE,
              "q": SETTLED_ORDER_CHANGE}
    unsettled = [name for name, change in moved.items() if not change * rate <= bounds[name]]
    if not unsettled:
        return status, message
    overlaps = [name for name in unsettled if name != "loss"]
    by = ", ".join(f"{name} by {moved[name]:.2g}" for name in overlaps)
    scale = "its scale" if len(overlaps) == 1 else "their scales"
    if "loss" in unsettled:
        what = f"the training loss still moved by {moved['loss']:.2g} (relative)" + (
            f" and {by} (of {scale})" if overlaps else "")
    else:
        what = f"{by} (of {scale}) still moved, the training loss by {moved['loss']:.2g} (relative),"
    if training.rose_in_tail:
        remedy = "the training loss rose on a step there, so the steps are too large for a descent: a lower --lr"
    elif optimizer == "gd" and training.rose_before_tail:
        remedy = ("the training loss rose on a step before it, which GD at a stable rate never does (the steps are "
                  "too large for the curvature it met): a lower --lr")
    else:
        remedy = "more steps"
    longer = f", at this rate over {SETTLE_STEPS} steps as the tenth is shorter" if rate > 1 else ""
    return Status.LIMITED, (f"{message}; not settled: {what} over the last tenth of the steps ({window} "
                            f"step{'s' if window > 1 else ''}; settled: the loss at most {SETTLED_LOSS_CHANGE:g}, "
                            f"m, θ and q at most {SETTLED_ORDER_CHANGE:g}{longer}): {remedy}")


def _agreement_run(device: torch.device, init: str, seed: int) -> dict[str, np.ndarray]:
    """A short fixed run for the device agreement check (CPU random numbers: identical draws on every device)."""
    r = simulate(omega=0.3, alpha=1.5, d=40, init=init, trials=2, seed=seed, steps=300, test_samples=500,
                 device=str(device), rng="cpu")
    return {"m": r.m, "theta": r.theta, "q": r.q, "test_error": r.test_error, "train_loss": r.train_loss}


SIMULATORS = {
    "positional-semantic GD": lambda dev, seed: _agreement_run(dev, "semantic", seed),
    "positional-semantic Adam": lambda dev, seed: _agreement_run(dev, "random", seed),
}
