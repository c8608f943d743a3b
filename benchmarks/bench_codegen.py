"""Benchmark (a) of the foundation issue: gradient + Hessian of a 4x4 matrix action over 10^5 points.

    S(A) = 1/2 tr A^2 - log det(I + beta A) + sum_ij log(1 + exp(c A_ij)),   A general 4x4 (16 variables)

Generated kernel (`compile_kernel`, numpy backend: stabilised, CSE'd, numba-compiled loop) against the
baseline `sympy.lambdify(..., "numpy")` without CSE, on the same 16 + 256 outputs. Times are wall
times of one evaluation over all points (best of `--repeat`), after a warm-up call that pays the
compilation; the one-off costs (derivation, code generation + compilation) are printed separately.

    .venv/bin/python benchmarks/bench_codegen.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import sympy

from attnphase.derive import calculus
from attnphase.derive.codegen import clear_memory_cache, compile_kernel
from attnphase.derive.symbols import parameter, symbol_matrix


def matrix_action(n: int):
    A = symbol_matrix("A", n, n)
    beta = parameter("beta")
    c = parameter("c")
    action = (sympy.Rational(1, 2) * (A * A).trace() - calculus.logdet(sympy.eye(n) + beta * A)
              + sum(sympy.log(1 + sympy.exp(c * a)) for a in A))
    return action, A, beta, c


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^4 points, one repeat")
    parser.add_argument("--points", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    n_points = opts.points or (10_000 if opts.quick else 100_000)
    repeat = 1 if opts.quick else opts.repeat
    # A fresh cache directory, so the one-off cost of generation and compilation is really measured.
    os.environ["ATTNPHASE_CACHE_DIR"] = tempfile.mkdtemp(prefix="attnphase-bench-")

    t0 = time.perf_counter()
    action, A, beta, c = matrix_action(4)
    variables = calculus.flatten_variables(A)
    outputs = list(calculus.gradient(action, variables)) + list(calculus.hessian(action, variables))
    t_derive = time.perf_counter() - t0
    args = variables + [beta, c]

    rng = np.random.default_rng(0)
    # Entries small enough that I + beta A stays well inside the positive-determinant region.
    values = [rng.uniform(-0.3, 0.3, n_points) for _ in variables] + [np.full(n_points, 0.7), np.full(n_points, 1.3)]

    t0 = time.perf_counter()
    kernel = compile_kernel(outputs, args, backend="numpy")
    generated = kernel(*values)  # first call compiles
    t_generate = time.perf_counter() - t0
    t_kernel = best_time(lambda: kernel(*values), repeat)
    # A fresh in-memory cache: the kernel comes back from the disk cache (source + numba's cache).
    clear_memory_cache()
    t0 = time.perf_counter()
    compile_kernel(outputs, args, backend="numpy")(*values)
    t_reload = time.perf_counter() - t0

    t0 = time.perf_counter()
    baseline_fn = sympy.lambdify(args, outputs, modules="numpy", cse=False)
    t_lambdify = time.perf_counter() - t0
    baseline = np.stack(np.broadcast_arrays(*baseline_fn(*values)), axis=-1)
    t_baseline = best_time(lambda: baseline_fn(*values), repeat)

    scale = np.maximum(np.abs(baseline), 1.0)
    max_diff = float(np.max(np.abs(generated - baseline) / scale))
    print(f"gradient + Hessian of the 4x4 matrix action: {len(outputs)} outputs, {n_points} points")
    print(f"one-off: derivation {t_derive:.2f} s, kernel generation+compilation {t_generate:.2f} s, "
          f"reload from the disk cache + first call {t_reload:.2f} s, lambdify {t_lambdify:.2f} s")
    print(f"{'method':<40}{'wall time [s]':>15}{'ratio':>10}")
    print(f"{'sympy.lambdify numpy, no CSE (baseline)':<40}{t_baseline:>15.4f}{1.0:>10.1f}")
    print(f"{'compile_kernel numpy (numba, CSE)':<40}{t_kernel:>15.4f}{t_baseline / t_kernel:>10.1f}")
    print(f"max |difference| / max(|value|, 1) = {max_diff:.2e}  (target ratio >= 20)")


if __name__ == "__main__":
    main()
