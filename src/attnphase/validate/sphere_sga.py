"""Projected stochastic gradient ascent on the unit sphere, batched over independent trials, in torch.

Given a gradient sampler — a callable that takes n unit vectors q (one per fresh sample) and returns,
per sample, the objective, its gradient in R^d and one further observable — one step with a mini-batch
of B samples per trial is

    G_k = mean over the batch of the sampled gradients,   q ← q + η_k (I − q qᵀ) G_k,   q ← q / ‖q‖,

with the Robbins–Monro schedule η_k = η₀ / (k + k₀)^γ (`StepSchedule`); t_k = Σ_{j<k} η_j is the time
of the limiting ODE. All trials are one tensor computation: the sampler is called once per step with
the T·B queries (each trial's query repeated B times). The queries are kept and updated in float64;
the sampler computes in `dtype`.

Convention: the problem's distinguished direction (a planted signal) is the first basis vector, so the
recorded alignment of a trial is ρ = q₁. Randomness comes from one `torch.Generator`, shared with the
sampler: the same seed, device and dtype give the same numbers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import torch

from attnphase import progress
from attnphase.params import check_int, check_positive, check_real
from attnphase.results import Result, Status
from attnphase.validate import seeds
from attnphase.validate.device import using_threads

__all__ = ["StepSchedule", "SGAResult", "GradientSampler", "initial_queries", "sphere_sga"]

#: q (n, d) -> (objective (n,), gradient (n, d), observable (n,)), one fresh sample per row of q.
GradientSampler = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


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
        with np.errstate(over="ignore", divide="ignore"):  # an infinite step: the run reports it diverged
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
class SGAResult(Result):
    """Recorded trajectories of a batch of trials.

    `steps[j]` is a step count k and `times[j]` = Σ_{i<k} η_i; `rho[j, trial]` is the alignment q₁ there.
    `objective` and `observable` are, per trial, the averages of the sampler's objective and observable
    over the steps since the previous record (the first record, at k = 0, has none: NaN). Status
    converged when every step ran, diverged when a query left the finite numbers.
    """

    steps: np.ndarray
    times: np.ndarray
    rho: np.ndarray
    objective: np.ndarray
    observable: np.ndarray
    final_rho: np.ndarray
    device: str
    seconds: float
    status: Status
    message: str

    def rows(self):
        """One row per recorded step and trial: step, t, trial, rho, objective, observable."""
        return [{"step": int(k), "t": float(t), "trial": i, "rho": float(r), "objective": float(o), "observable": float(v)}
                for k, t, rhos, objs, obss in zip(self.steps, self.times, self.rho, self.objective, self.observable)
                for i, (r, o, v) in enumerate(zip(rhos, objs, obss))]


def _unit_rows(q: torch.Tensor) -> torch.Tensor:
    """Each row of q scaled to unit length, by its largest entry first: with a large step (η₀ = 1e300) the row's
    squared norm overflows, and q / ‖q‖ would be 0 (a query that then stays at ρ = 0) instead of the step's
    direction. A row that is infinite or zero gives NaN, which the caller reports as divergence."""
    largest = q.abs().amax(dim=1, keepdim=True)
    q = q / largest
    return q / q.norm(dim=1, keepdim=True)


def initial_queries(n_trials: int, d: int, generator: torch.Generator, device, rho0: float | None = None):
    """Uniform random unit queries (float64), or with alignment q₁ exactly ρ₀ and a random orthogonal part."""
    q = seeds.randn((n_trials, d), generator, device)
    if rho0 is None:
        return q / q.norm(dim=1, keepdim=True)
    rho0 = check_real("rho0", rho0, -1.0, 1.0)
    q[:, 0] = 0.0
    q = q / q.norm(dim=1, keepdim=True) * math.sqrt(1.0 - rho0**2)
    q[:, 0] = rho0
    return q


def sphere_sga(
    sampler: GradientSampler,
    *,
    d: int,
    schedule: StepSchedule,
    steps: int,
    trials: int,
    batch: int = 1,
    generator: torch.Generator,
    device: torch.device,
    rho0: float | None = None,
    record_every: int = 1,
    dtype: torch.dtype = torch.float32,
    threads: int | None = None,
) -> SGAResult:
    """Run `trials` independent projected-SGA trajectories of `steps` steps as one batched computation.

    The queries start uniform on the sphere (or at alignment ρ₀, `initial_queries`); every
    `record_every` steps the alignments and the window averages of the objective and the observable
    are recorded. `threads`: torch intra-op threads for the loop on the CPU (None: leave the current
    count; `attnphase.validate.device.choose_threads` gives the rule: for small tensors the thread pool
    costs more than it saves, and under contention for the cores it made steps several times slower).
    The progress bar (`attnphase.progress`, silent unless shown) notes the mean |ρ| at each record.
    """
    d = check_int("d", d, 1)
    steps = check_int("steps", steps, 1)
    trials = check_int("trials", trials, 1)
    batch = check_int("batch", batch, 1)
    record_every = check_int("record_every", record_every, 1)
    start = time.perf_counter()
    q = initial_queries(trials, d, generator, device, rho0)
    etas = schedule.eta(steps)
    times = schedule.times(steps)

    recorded_steps = [0]
    rho_rec = [q[:, 0].cpu().numpy().copy()]
    obj_rec = [np.full(trials, np.nan)]
    obs_rec = [np.full(trials, np.nan)]
    obj_acc = torch.zeros(trials, dtype=torch.float64, device=device)
    obs_acc = torch.zeros(trials, dtype=torch.float64, device=device)
    status, message = Status.CONVERGED, f"{steps} steps of {trials} trials"
    threads_block = using_threads(threads) if threads is not None and torch.device(device).type == "cpu" else nullcontext()
    with threads_block, progress.task("projected SGA", total=steps) as bar:
        for k in range(steps):
            objective, grads, observable = sampler(q.to(dtype).repeat_interleave(batch, dim=0))
            G = grads.to(torch.float64).view(trials, batch, d).mean(dim=1)
            G_tangent = G - (G * q).sum(dim=1, keepdim=True) * q
            q = _unit_rows(q + etas[k] * G_tangent)
            obj_acc += objective.to(torch.float64).view(trials, batch).mean(dim=1)
            obs_acc += observable.to(torch.float64).view(trials, batch).mean(dim=1)
            if (k + 1) % record_every == 0 or k + 1 == steps:
                window = (k + 1) - recorded_steps[-1]
                recorded_steps.append(k + 1)
                rho_rec.append(q[:, 0].cpu().numpy().copy())
                obj_rec.append((obj_acc / window).cpu().numpy())
                obs_rec.append((obs_acc / window).cpu().numpy())
                obj_acc.zero_()
                obs_acc.zero_()
                bar.advance(f"mean |rho| {np.abs(rho_rec[-1]).mean():.4f}")
            else:
                bar.advance()
            if not torch.isfinite(q).all():
                status, message = Status.DIVERGED, f"non-finite query at step {k}"
                break
    recorded = np.asarray(recorded_steps)
    return SGAResult(
        steps=recorded,
        times=times[recorded],
        rho=np.asarray(rho_rec),
        objective=np.asarray(obj_rec),
        observable=np.asarray(obs_rec),
        final_rho=rho_rec[-1],
        device=str(device),
        seconds=time.perf_counter() - start,
        status=status,
        message=message,
    )
