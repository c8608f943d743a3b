"""Projected SGA throughput for signal recovery (trial-steps per second) and peak memory.

Rows (d = 1000, L = 10 500, R = 500 by default), each measured in every round, side by side in this one
process, and reported as the median over rounds with the spread (min–max) of the per-round ratio:

* numpy loop, float64 — the baseline the issue names: one trial at a time, dense float64 tokens from
  numpy's default generator (PCG64 + ziggurat), the gradient 2β Cov_a(x) f by four mat-vecs and the
  projected step; numpy/BLAS use whatever threads they are given;
* numpy loop, float32 — the same loop with float32 tokens (`standard_normal(dtype=float32)`) and
  float32 mat-vecs, for a same-dtype comparison;
* torch dense — all trials batched in one tensor computation, float32 tokens in slices under a 1 GiB
  budget, the gradient by batched mat-vecs; the noise from torch's `normal_` (Mersenne Twister + Box–
  Muller) or from the package's vectorised ziggurat (`attnphase.validate.ziggurat`, the default on the
  CPU); with all torch/numba threads and with one;
* torch projected — the exact O(L + d) sampler (same gradient law, 2L + 2d numbers per sequence).

On a shared machine the absolute rates move with the load; the ratios within a round are fair because
every row of a round runs under about the same load.

Peak memory: the 30-trial headline configuration with the dense sampler, measured as the resident set
of a child process (CPU) and by torch's allocator (CUDA). A CUDA section runs when a GPU is visible.

    .venv/bin/python benchmarks/bench_sga.py [--quick] [--rounds N]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

import numba
import numpy as np
import torch

from attnphase.models.signal_recovery.parameters import Parameters, SimulationSettings
from attnphase.models.signal_recovery.simulate import run_sga

D, L, R, THETA_D, BETA = 1000, 10_500, 500, 0.25 * 1000**0.5, 1.0
PARAMETERS = Parameters.validated(d=D, L=L, R=R, theta=0.25, theta_scaling="sqrt-d", score_scale=BETA)


def numpy_loop(trials: int, steps: int, seed: int = 0, dtype=np.float64) -> tuple[float, float]:
    """Straightforward per-trial loop; returns trial-steps per wall-clock second and per CPU second."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((trials, D))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    start, cpu_start = time.perf_counter(), time.process_time()
    for k in range(steps):
        eta = 0.05 / (k + 50)
        for i in range(trials):
            X = rng.standard_normal((L, D), dtype=dtype)
            X[:R, 0] += THETA_D
            qi = q[i].astype(dtype)
            scores = BETA * (X @ qi)
            a = np.exp(scores - scores.max())
            a /= a.sum()
            f = a @ X
            grad = (2 * BETA * ((a * (X @ f)) @ X - (f @ f) * f)).astype(np.float64)
            grad -= (grad @ q[i]) * q[i]
            q[i] += eta * grad
            q[i] /= np.linalg.norm(q[i])
    return trials * steps / (time.perf_counter() - start), trials * steps / (time.process_time() - cpu_start)


def torch_run(trials: int, steps: int, sampler: str, device: torch.device, seed: int = 0,
              normal_source: str = "auto") -> tuple[float, float]:
    """Batched SGA; returns trial-steps per wall-clock second and per CPU second (all threads). Dense rows
    run with the current torch thread count, projected ones with the simulation's own choice (one thread
    at this size). The schedule is given (no planning) and no prediction is made: only the SGA loop is timed."""
    def settings(n_steps):
        return SimulationSettings.validated(trials=trials, steps=n_steps, eta0=0.05, k0=50.0, gamma=1.0, seed=seed,
                                            sampler=sampler, normal_source=normal_source, record_every=n_steps)

    threads = torch.get_num_threads() if sampler == "dense" else None
    run_sga(PARAMETERS, settings(1), device.type, threads=threads, predict=False)  # warm-up (numba compilation)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start, cpu_start = time.perf_counter(), time.process_time()
    run_sga(PARAMETERS, settings(steps), device.type, threads=threads, predict=False)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return trials * steps / (time.perf_counter() - start), trials * steps / (time.process_time() - cpu_start)


def with_threads(n: int, call):
    """call() with torch and numba limited to n threads (restored afterwards)."""
    torch_threads, numba_threads = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(n)
    numba.set_num_threads(n)
    try:
        return call()
    finally:
        torch.set_num_threads(torch_threads)
        numba.set_num_threads(numba_threads)


PEAK_CHILD = """
import resource
from attnphase.models.signal_recovery.parameters import Parameters, SimulationSettings
from attnphase.models.signal_recovery.simulate import run_sga
params = Parameters.validated(d={D}, L={L}, R={R}, theta=0.25, theta_scaling="sqrt-d")
settings = SimulationSettings.validated(trials=30, steps={steps}, eta0=0.05, k0=50.0, gamma=1.0, sampler="{sampler}")
run_sga(params, settings, "cpu", memory_budget_bytes={budget}, predict=False)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss_gib(sampler: str, budget: int, steps: int) -> float:
    code = PEAK_CHILD.format(D=D, L=L, R=R, steps=steps, sampler=sampler, budget=budget)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 2**20  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials and steps")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of side-by-side measurements")
    args = parser.parse_args()
    trials, steps = (4, 2) if args.quick else (8, 4)
    cpu = torch.device("cpu")
    threads = torch.get_num_threads()
    print(f"d = {D}, L = {L}, R = {R}; {trials} trials x {steps} steps per dense row; torch threads = {threads}, "
          f"numba threads = {numba.get_num_threads()}; {args.rounds} rounds")
    rows = {
        "numpy loop (float64) [baseline]": lambda: numpy_loop(trials, steps),
        "numpy loop (float32)": lambda: numpy_loop(trials, steps, dtype=np.float32),
        f"torch dense, torch normal_ ({threads} thr)": lambda: torch_run(trials, steps, "dense", cpu,
                                                                          normal_source="torch"),
        f"torch dense, ziggurat ({threads} thr)": lambda: torch_run(trials, steps, "dense", cpu,
                                                                     normal_source="ziggurat"),
    }
    if threads > 1:  # on a shared machine one thread can beat two
        rows["torch dense, torch normal_ (1 thr)"] = lambda: with_threads(
            1, lambda: torch_run(trials, steps, "dense", cpu, normal_source="torch"))
        rows["torch dense, ziggurat (1 thr)"] = lambda: with_threads(
            1, lambda: torch_run(trials, steps, "dense", cpu, normal_source="ziggurat"))
    rows["torch projected (float32)"] = lambda: torch_run(30, 20 if args.quick else 100, "projected", cpu)
    rates = {name: [] for name in rows}
    for _ in range(args.rounds):
        for name, call in rows.items():
            rates[name].append(call())
    baseline = np.asarray(rates["numpy loop (float64) [baseline]"])
    print("\nWall clock: trial-steps per second, and the ratio to the numpy float64 loop of the same round.")
    print("CPU: trial-steps per CPU-second of the process (all its threads; spinning threads count), a")
    print("measure less sensitive to other users' load than the wall clock.")
    print(f"\n{'CPU':40s} {'wall /s':>9s} {'ratio median':>13s} {'[min, max]':>15s} {'per CPU-s':>10s} {'ratio':>7s}")
    for name, values in rates.items():
        values = np.asarray(values)
        wall_ratio = values[:, 0] / baseline[:, 0]
        cpu_ratio = np.median(values[:, 1]) / np.median(baseline[:, 1])
        print(f"{name:40s} {np.median(values[:, 0]):9.2f} {np.median(wall_ratio):12.2f}x "
              f"[{wall_ratio.min():5.2f}, {wall_ratio.max():5.2f}] {np.median(values[:, 1]):10.2f} {cpu_ratio:6.2f}x")

    print("\nPeak memory, 30-trial headline configuration (CPU, resident set of a child process):")
    for sampler, budget in (("dense", 1 << 30), ("dense", 1 << 32), ("projected", 1 << 30)):
        gib = peak_rss_gib(sampler, budget, steps=1)
        print(f"  {sampler:9s} memory budget {budget / 2**30:4.0f} GiB: peak {gib:6.2f} GiB "
              f"({'fits' if gib < 24 else 'EXCEEDS'} 24 GiB)")

    if torch.cuda.is_available():
        cuda = torch.device("cuda")
        print(f"\nCUDA: {torch.cuda.get_device_name(0)}")
        torch.cuda.reset_peak_memory_stats()
        dense = torch_run(30, 5 if args.quick else 20, "dense", cuda)[0]
        peak = torch.cuda.max_memory_allocated() / 2**30
        projected = torch_run(30, 50 if args.quick else 500, "projected", cuda)[0]
        base = float(np.median(baseline[:, 0]))
        print(f"{'torch batched dense (float32)':40s} {dense:14.2f} {dense / base:8.1f}x  peak {peak:.2f} GiB")
        print(f"{'torch batched projected (float32)':40s} {projected:14.2f} {projected / base:8.1f}x")
    else:
        print("\nCUDA: not available on this machine (section skipped).")
    print(f"\n(max RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB)")


if __name__ == "__main__":
    main()
