"""Benchmark: copy-heads thresholds against the issue's targets.

* P* to 30 digits for one (L, V) (softmax: the stationary branches followed in ln n, folds and the coexistence
  polished in mpmath; linear: det Hessian = 0 and the crossover, the Landau classification and the order checked on
  the followed branches), after warm-up: target <= 1 s.
* The scaling sweep over 17 values of L (2^4 .. 2^20, V = 4, 15 digits): target <= 60 s.
* The softmax row mean-field free energy F(m) at one P (L = 128, V = 4, row table cached), our target
  <= 1 s (no issue target; the window scan calls it ~70 times).
Times are medians of repeats (warm: kernels compiled and cached); ratio = time / target.

Run: .venv/bin/python benchmarks/bench_copy_heads.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

from attnphase.api import copy_heads as api


def timed(fn, repeats):
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats and a 9-point sweep")
    args = ap.parse_args()
    repeats = 2 if args.quick else 5
    rows = []
    for attention in ("softmax", "linear"):
        api.threshold(attention, 64, 8, digits=30)  # warm-up: compile / load kernels
        t, r = timed(lambda: api.threshold(attention, 64, 8, digits=30), repeats)
        rows.append((f"P* 30 digits, {attention}, L=64, V=8", t, 1.0, r.P_star_digits))
    Ls = [2**k for k in (range(4, 21, 2) if args.quick else range(4, 21))]
    for attention in ("softmax", "linear"):
        t0 = time.perf_counter()
        res = api.scaling(attention, 4, Ls[0], Ls[-1], digits=15, L_values=Ls)
        t = time.perf_counter() - t0
        f = res.fit["P_star"]
        rows.append((f"scaling sweep {len(Ls)} L, {attention}", t, 60.0,
                     f"exponent {f.exponent:.4f} [{f.exponent_low:.4f}, {f.exponent_high:.4f}]"))
    api.softmax_row_mean_field(128, 4, 4000.0)  # warm-up: Sobol table of the row density
    t, r = timed(lambda: api.softmax_row_mean_field(128, 4, 4000.0), repeats)
    rows.append(("row mean field F(m), L=128, V=4, P=4000", t, 1.0,
                 f"{len(r.minima)} minima, c = " + ", ".join(f"{mn.c:.4f}" for mn in r.minima)))
    print(f"{'task':<40} {'time [s]':>10} {'target [s]':>11} {'ratio':>7}  result")
    for name, t, target, result in rows:
        print(f"{name:<40} {t:>10.3f} {target:>11.1f} {t / target:>7.2f}  {result}")


if __name__ == "__main__":
    main()
