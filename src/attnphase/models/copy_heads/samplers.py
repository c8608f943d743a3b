"""Runs of the copy-task network (`network`) on the batched drivers of `validate.mala`.

* `run_langevin`: MALA chains at the Bayesian temperature (the full posterior over scores, read-out and bias),
  each chain on its own data set; samples after burn-in, every `thin` steps. ("SGLD" in the paper's protocol: the full batch
  and the Metropolis step remove both the gradient noise and the step-size bias.)
* `run_row_model`: MALA over the attention weights alone under the self-averaged data term (no data set).
* `run_adam`: Adam on U (joint MAP of all weights) from prior draws, each run's lowest-U iterate; filter: keep the
  runs whose U is within max(1, 1e-3|U_best|) of the best run (converged to the global minimum found); the state
  after half the steps is kept too, for the change over the second half.
* `SIMULATORS`: short fixed runs for the device agreement check (`validate.agreement`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from attnphase.models.copy_heads import network as net
from attnphase.params import check_choice, check_int
from attnphase.results import Status
from attnphase.validate import seeds
from attnphase.validate.seeds import seed_after
from attnphase.validate.device import choose_threads, select_device, using_threads
from attnphase.validate.mala import adaptive_mala, autograd_potential
from attnphase.validate.training import adam_minimise

__all__ = ["ChainSamples", "step_work", "run_langevin", "RowModelSamples", "run_row_model", "run_adam", "SIMULATORS"]


@dataclass(frozen=True)
class ChainSamples:
    """Samples of one sampler run: per chain (K) and retained sample (S)."""

    G: np.ndarray  # (K, S, L, L)
    train_loss: np.ndarray  # (K, S) squared error per target token of the sampled network
    test_loss: np.ndarray  # (K, S) on held-out data
    acceptance: np.ndarray  # (K,)
    starts: list
    steps: int
    status: Status
    message: str
    kept: np.ndarray = field(default_factory=lambda: np.empty(0, bool))  # Adam filter
    objective: np.ndarray = field(default_factory=lambda: np.empty(0))  # Adam: final U per run
    c_trace: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))  # (K, S) copy strength of each sample
    G_mean: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 0)))  # (K, L, L) mean over the samples
    data_term: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))  # MALA (K, S): β/2 · squared error, nats
    # Adam: the state it would have returned after half its steps (attention matrix, losses, U), per run
    G_half: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 0, 0)))  # (K, 1, L, L)
    train_loss_half: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))  # (K, 1)
    test_loss_half: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))  # (K, 1)
    objective_half: np.ndarray = field(default_factory=lambda: np.empty(0))  # (K,)
    # network.loss_moments on the test set's target rows, per chain: MALA their means over the samples, Adam at the
    # returned state; (K, L, L, V, V) each
    loss_moments: tuple = ()


def step_work(cfg: net.CopyTaskConfig, runs: int) -> float:
    """Floating-point operations of the largest tensor operation of one step (the data term's contraction of the
    L²V² statistics with G, for every run): what `validate.device.choose_threads` weighs."""
    return 2.0 * runs * cfg.L**3 * cfg.V**2


def _threads(cfg: net.CopyTaskConfig, runs: int, threads: int | None, device) -> int:
    return choose_threads(threads, work=step_work(cfg, runs), device=device)


def _mixing(acceptance: np.ndarray) -> Status:
    return Status.CONVERGED if np.all(acceptance > 0.2) else Status.POOR_MIXING


def run_langevin(cfg: net.CopyTaskConfig, train: net.Statistics, test: net.Statistics, starts: list[str], *,
                 steps: int = 4000, burn_in: int | None = None, thin: int = 10, seed: int = 0, device: str = "auto",
                 target_acceptance: float = 0.57, record_matrices: bool = True, rng: str = "device",
                 read_out_start: str = "small", threads: int | None = None) -> ChainSamples:
    """MALA chains (chain i starts from starts[i] and sees data set i of `train`) at the Bayesian
    temperature; samples after burn-in, every `thin` steps; status poor_mixing when a chain accepts ≤ 20%.

    record_matrices=False keeps only the copy strength of every sample (`c_trace`) and the mean attention
    matrix (`G_mean`), not every sampled G (K·S·L² numbers, gigabytes for long chains at L ≥ 128), nor the test
    loss's moments (`loss_moments`).
    rng: "device" or "cpu", where the random numbers are drawn (`attnphase.validate.seeds`).
    read_out_start: "small" (W a prior draw scaled by 0.1) or "conditional" (W at its posterior mean given the start's
    attention matrix, βBᵀ(τ⁻¹I + βM)⁻¹; the same random numbers are drawn either way). With a small read-out the data
    term does not hold a copy start at first: at L = 128, V = 4, P = 4096 its copy strength falls to ≈ 0.10 within
    ~1000 steps and climbs back to ≈ 0.17 over the next ~2000, so a copy start approaches equilibrium from below.
    threads: torch CPU threads (None: `validate.device.choose_threads` on `step_work`)."""
    dev = select_device(device)
    read_out_start = check_choice("read_out_start", read_out_start, ("small", "conditional"))
    K = len(starts)
    with using_threads(_threads(cfg, K, threads, dev)):
        train, test = net.match_data_sets(train, K), net.match_data_sets(test, K)
        gen = seeds.generator(seed, dev, rng)
        burn_in = steps // 2 if burn_in is None else burn_in
        params = net.initial_params(cfg, starts, gen, dev)
        if read_out_start == "conditional":
            params["W"] = net.conditional_read_out(params, cfg, train)
        h = torch.full((K,), 0.5, dtype=torch.float64, device=dev)  # step multiplier per chain
        Gs, tr, te, cs, dt = [], [], [], [], []
        G_sum = torch.zeros(K, cfg.L, cfg.L, dtype=torch.float64, device=dev)
        moment_sums = [0.0, 0.0]

        def record(params):
            nonlocal G_sum
            G = net.attention_matrix(params, cfg)
            if record_matrices:  # not for the long large-L runs that keep c alone (K·L²V² numbers, twice)
                Gs.append(G.cpu().numpy())
                for i, moment in enumerate(net.loss_moments(G, params["W"], test.row_mask[0])):
                    moment_sums[i] = moment_sums[i] + moment
            G_sum += G
            cs.append(net.copy_strength(G, cfg.boundary).cpu().numpy())
            error = net.squared_error(G, params["W"], train)
            tr.append((error / train.n_targets).cpu().numpy())
            dt.append((cfg.beta / 2 * error).cpu().numpy())
            te.append((net.squared_error(G, params["W"], test) / test.n_targets).cpu().numpy())

        acceptance = adaptive_mala(params, autograd_potential(lambda p: net.potential(p, cfg, train)),
                                   net.preconditioner(params, cfg, train), h, gen, dev, steps=steps, burn_in=burn_in,
                                   thin=thin, target_acceptance=target_acceptance, record=record,
                                   refresh_preconditioner=lambda p: net.preconditioner(p, cfg, train))
    G_all = np.stack(Gs, 1) if record_matrices else np.empty((K, 0, cfg.L, cfg.L))
    return ChainSamples(G_all, np.stack(tr, 1), np.stack(te, 1), acceptance, list(starts), steps, _mixing(acceptance),
                        f"MALA, {steps} steps, burn-in {burn_in}, acceptance {np.round(acceptance, 2).tolist()}",
                        c_trace=np.stack(cs, 1), G_mean=(G_sum / len(cs)).cpu().numpy(), data_term=np.stack(dt, 1),
                        loss_moments=tuple((total / len(cs)).cpu().numpy() for total in moment_sums)
                        if record_matrices else ())


@dataclass(frozen=True)
class RowModelSamples:
    """Samples of `run_row_model`, per chain (K) and retained sample (S): the order parameters of G over the target
    rows (c copy strength as `network.copy_strength`, m mean previous-position weight, q mean ‖g_l‖², t mean row sum)."""

    c: np.ndarray  # (K, S)
    m: np.ndarray
    q: np.ndarray
    t: np.ndarray
    acceptance: np.ndarray  # (K,)
    starts: list
    steps: int
    status: Status
    message: str


def run_row_model(cfg: net.CopyTaskConfig, data_term, starts: list[str], *, steps: int = 3000, burn_in: int | None = None,
                  thin: int = 5, seed: int = 0, device: str = "auto", target_acceptance: float = 0.57,
                  rng: str = "device", threads: int | None = None) -> RowModelSamples:
    """MALA over the attention weights alone with a self-averaged data term instead of a data set:

        U = data_term(m, q, t1, t2) + score prior (+ bias prior),   (m, q, t1, t2) = `network.row_averages`(G)

    data_term: a torch callable (the large-P data term with W integrated out, e.g. `symbolic.data_action_rows`
    compiled for torch at fixed n, V, τ). This is the model the row mean field solves (rows independent under the
    prior, coupled only through the row averages) without its Cramér/saddle-point steps, so it isolates those from the
    finite data set of `run_langevin`. Chains start "uniform", "copy" or "prior" as in `network.initial_params`; step
    sizes adapt during burn-in only (preconditioner: the score prior variance)."""
    dev = select_device(device)
    with using_threads(_threads(cfg, len(starts), threads, dev)):
        gen = seeds.generator(seed, dev, rng)
        burn_in = steps // 2 if burn_in is None else check_int("burn_in", burn_in, 0, steps - 1)
        params = net.initial_params(cfg, starts, gen, dev)
        del params["W"]
        K = len(starts)

        def potential(p):
            G = net.attention_matrix(p, cfg)
            return data_term(*net.row_averages(G, cfg.boundary)) + net.attention_prior_energy(p, cfg)

        prior_variance = {"A": cfg.sigma2, "Q": math.sqrt(cfg.sigma2), "K": math.sqrt(cfg.sigma2), "b": cfg.s1}
        preconditioner = {k: torch.full((K,) + (1,) * (v.dim() - 1), prior_variance[k], dtype=v.dtype, device=dev)
                          for k, v in params.items()}
        h = torch.full((K,), 0.3, dtype=torch.float64, device=dev)
        samples = []

        def record(params):
            G = net.attention_matrix(params, cfg)
            m, q, t, _ = net.row_averages(G, cfg.boundary)
            samples.append(torch.stack([net.copy_strength(G, cfg.boundary), m, q, t]).cpu().numpy())

        acceptance = adaptive_mala(params, autograd_potential(potential), preconditioner, h, gen, dev, steps=steps,
                                   burn_in=burn_in, thin=thin, target_acceptance=target_acceptance, record=record)
    c, m, q, t = np.stack(samples, -1)
    return RowModelSamples(c, m, q, t, acceptance, list(starts), steps, _mixing(acceptance),
                           f"MALA of the row model, {steps} steps, burn-in {burn_in}, acceptance "
                           f"{np.round(acceptance, 2).tolist()}")


def run_adam(cfg: net.CopyTaskConfig, train: net.Statistics, test: net.Statistics, n_seeds: int, *, steps: int = 3000,
             lr: float = 0.05, seed: int = 0, device: str = "auto", rng: str = "device",
             threads: int | None = None, per_data_set: int | None = None, keep_best: bool = True) -> ChainSamples:
    """Adam on U from `n_seeds` prior draws (batched; seed i on data set i of `train`, or all on one); filter, per
    block of `per_data_set` consecutive seeds sharing a data set (None: all seeds share one): U within
    max(1, 1e-3|U_best|) of the best of its block. rng: "device" or "cpu" (`attnphase.validate.seeds`).

    keep_best (`validate.training.adam_minimise`): each run returns its iterate of lowest U, not its last one (at
    lr = 0.05 Adam reaches the minimum of softmax L = V = 4, P = 200 to 1e-9 within 1000 steps, then leaves it again:
    after 8000 steps U is up to 4e-3 higher and c has moved by up to 7e-4). The state the run would have returned after
    steps // 2 steps is kept too (`G_half`, ...), so that the change over the second half can be reported."""
    dev = select_device(device)
    per = n_seeds if per_data_set is None else check_int("per_data_set", per_data_set, 1, n_seeds)
    half = {}

    def keep_half(step, state):
        half.update(state)

    with using_threads(_threads(cfg, n_seeds, threads, dev)):
        train, test = net.match_data_sets(train, n_seeds), net.match_data_sets(test, n_seeds)
        gen = seeds.generator(seed, dev, rng)
        params = adam_minimise(lambda p: net.potential(p, cfg, train), net.initial_params(cfg, ["prior"] * n_seeds, gen, dev),
                               steps=steps, lr=lr, keep_best=keep_best, record=keep_half,
                               record_at=(max(1, steps // 2),))

        def evaluate(p):
            with torch.no_grad():
                U = net.potential(p, cfg, train).cpu().numpy()
                G = net.attention_matrix(p, cfg)
                tr = (net.squared_error(G, p["W"], train) / train.n_targets).cpu().numpy()
                te = (net.squared_error(G, p["W"], test) / test.n_targets).cpu().numpy()
            return U, G.detach().cpu().numpy()[:, None], tr[:, None], te[:, None]

        U, G, tr, te = evaluate(params)
        U_half, G_half, tr_half, te_half = evaluate(half)
        with torch.no_grad():
            moments = net.loss_moments(net.attention_matrix(params, cfg), params["W"], test.row_mask[0])
    best = np.repeat(U.reshape(-1, per).min(axis=1), per)
    kept = U <= best + np.maximum(1.0, 1e-3 * np.abs(best))
    return ChainSamples(G, tr, te, np.ones(n_seeds), ["prior"] * n_seeds, steps, Status.CONVERGED,
                        f"Adam lr={lr}, {steps} steps{', lowest-U iterate of each run' if keep_best else ''}; kept "
                        f"{int(kept.sum())}/{n_seeds} runs within max(1, 1e-3|U_best|) of the best objective on their "
                        "data set", kept, U, G_half=G_half, train_loss_half=tr_half, test_loss_half=te_half,
                        objective_half=U_half, loss_moments=tuple(m.cpu().numpy() for m in moments))


def _agreement_run(device: torch.device, attention: str, algorithm: str, seed: int) -> dict[str, np.ndarray]:
    """A short fixed run (L = 8, V = 4, loss averaged: β = 1/8) with CPU random numbers, for the device check."""
    cfg = net.CopyTaskConfig(L=8, V=4, attention=attention, beta=1.0 / 8)
    gen = seeds.generator(seed, device, "cpu")
    data_sets = 2 if algorithm == "mala" else 1  # MALA: one per chain; Adam: all seeds on one data set
    train = net.statistics([net.sample_tokens(25, cfg, gen, device) for _ in range(data_sets)], cfg.V)
    test = net.statistics([net.sample_tokens(200, cfg, gen, device) for _ in range(data_sets)], cfg.V)
    if algorithm == "mala":
        run = run_langevin(cfg, train, test, ["uniform", "copy"], steps=400, seed=seed_after(seed), device=str(device),
                           rng="cpu")
    else:
        run = run_adam(cfg, train, test, 3, steps=300, seed=seed_after(seed), device=str(device), rng="cpu")
    return {"G": run.G, "train_loss": run.train_loss, "test_loss": run.test_loss}


SIMULATORS = {
    "copy-heads MALA softmax": lambda dev, seed: _agreement_run(dev, "softmax", "mala", seed),
    "copy-heads MALA linear": lambda dev, seed: _agreement_run(dev, "linear", "mala", seed),
    "copy-heads Adam softmax": lambda dev, seed: _agreement_run(dev, "softmax", "adam", seed),
}
