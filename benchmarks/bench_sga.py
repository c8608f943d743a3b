"""Projected SGA throughput for signal recovery (trial-steps per second) and peak memory.

Rows (d = 1000, L = 10 500, R = 500 by default):

* numpy loop — the baseline: one trial at a time, dense float64 tokens from numpy's generator, the
  same gradient 2β Cov_a(x) f and projected step;
* torch dense — all trials batched in one tensor computation (float32 tokens, slices under a 1 GiB
  memory budget);
* torch projected — the exact O(L + d) sampler (same gradient law, 2L + 2d numbers per sequence).

Peak memory: the 30-trial headline configuration with the dense sampler, measured as the resident set
of a child process (CPU) and by torch's allocator (CUDA). A CUDA section runs when a GPU is visible.

    .venv/bin/python benchmarks/bench_sga.py [--quick]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

import numpy as np
import torch

from attnphase.validate.seeds import generator
from attnphase.validate.sga import PlantedTokens, StepSchedule, projected_sga

D, L, R, THETA_D, BETA = 1000, 10_500, 500, 0.25 * 1000**0.5, 1.0


def numpy_loop(trials: int, steps: int, seed: int = 0) -> float:
    """Straightforward per-trial loop; returns trial-steps per second."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((trials, D))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    start = time.perf_counter()
    for k in range(steps):
        eta = 0.05 / (k + 50)
        for i in range(trials):
            X = rng.standard_normal((L, D))
            X[:R, 0] += THETA_D
            scores = BETA * (X @ q[i])
            a = np.exp(scores - scores.max())
            a /= a.sum()
            f = a @ X
            grad = 2 * BETA * ((a * (X @ f)) @ X - (f @ f) * f)
            grad -= (grad @ q[i]) * q[i]
            q[i] += eta * grad
            q[i] /= np.linalg.norm(q[i])
    return trials * steps / (time.perf_counter() - start)


def torch_run(trials: int, steps: int, sampler: str, device: torch.device, seed: int = 0) -> float:
    tokens = PlantedTokens(D, L, R, THETA_D)
    gen = generator(seed, device)
    schedule = StepSchedule(0.05, 50.0, 1.0)
    projected_sga(tokens, beta=BETA, schedule=schedule, steps=1, trials=trials, generator=gen, device=device,
                  sampler=sampler)  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    projected_sga(tokens, beta=BETA, schedule=schedule, steps=steps, trials=trials, generator=gen, device=device,
                  sampler=sampler, record_every=steps)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return trials * steps / (time.perf_counter() - start)


PEAK_CHILD = """
import resource, torch
from attnphase.validate.seeds import generator
from attnphase.validate.sga import PlantedTokens, StepSchedule, projected_sga
tokens = PlantedTokens({D}, {L}, {R}, {T})
projected_sga(tokens, beta=1.0, schedule=StepSchedule(0.05, 50.0, 1.0), steps={steps}, trials=30,
              generator=generator(0, "cpu"), device=torch.device("cpu"), sampler="{sampler}",
              memory_budget_bytes={budget})
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss_gib(sampler: str, budget: int, steps: int) -> float:
    code = PEAK_CHILD.format(D=D, L=L, R=R, T=THETA_D, steps=steps, sampler=sampler, budget=budget)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 2**20  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials and steps")
    args = parser.parse_args()
    trials, steps = (4, 2) if args.quick else (8, 4)
    cpu = torch.device("cpu")
    print(f"d = {D}, L = {L}, R = {R}, torch threads = {torch.get_num_threads()}")
    baseline = numpy_loop(trials, steps)
    rows = [("numpy per-trial loop (float64)", baseline)]
    rows.append((f"torch batched dense (float32, {torch.get_num_threads()} thr)", torch_run(trials, steps, "dense", cpu)))
    threads = torch.get_num_threads()
    if threads > 1:  # on a shared machine one thread can beat two
        torch.set_num_threads(1)
        rows.append(("torch batched dense (float32, 1 thr)", torch_run(trials, steps, "dense", cpu)))
        torch.set_num_threads(threads)
    rows.append(("torch batched projected (float32)", torch_run(30, 20 if args.quick else 100, "projected", cpu)))
    print(f"\n{'CPU':40s} {'trial-steps/s':>14s} {'vs numpy':>9s}")
    for name, rate in rows:
        print(f"{name:40s} {rate:14.2f} {rate / baseline:8.1f}x")

    print("\nPeak memory, 30-trial headline configuration (CPU, resident set of a child process):")
    for sampler, budget in (("dense", 1 << 30), ("dense", 1 << 32), ("projected", 1 << 30)):
        gib = peak_rss_gib(sampler, budget, steps=1)
        print(f"  {sampler:9s} memory budget {budget / 2**30:4.0f} GiB: peak {gib:6.2f} GiB "
              f"({'fits' if gib < 24 else 'EXCEEDS'} 24 GiB)")

    if torch.cuda.is_available():
        cuda = torch.device("cuda")
        print(f"\nCUDA: {torch.cuda.get_device_name(0)}")
        torch.cuda.reset_peak_memory_stats()
        dense = torch_run(30, 5 if args.quick else 20, "dense", cuda)
        peak = torch.cuda.max_memory_allocated() / 2**30
        projected = torch_run(30, 50 if args.quick else 500, "projected", cuda)
        print(f"{'torch batched dense (float32)':40s} {dense:14.2f} {dense / baseline:8.1f}x  peak {peak:.2f} GiB")
        print(f"{'torch batched projected (float32)':40s} {projected:14.2f} {projected / baseline:8.1f}x")
    else:
        print("\nCUDA: not available on this machine (section skipped).")
    print(f"\n(max RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB)")


if __name__ == "__main__":
    main()
