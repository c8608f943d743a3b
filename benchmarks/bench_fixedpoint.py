"""Benchmark (c): fixed-point solvers on the Z2 spiked-Wigner state evolution at lam = 1.01.

    m = F(m) = E_z tanh(lam m + sqrt(lam m) z),  z ~ N(0, 1)   (150-node Gauss-Hermite rule)

Near the transition F'(m*) = 1 - (lam - 1) + ... = 0.99, so damped / plain iteration contracts by
only 1% per step. Every solver starts at m = 0.5 in the unconstrained coordinate atanh(2m - 1) and
stops when the residual |F(m) - m| <= 1e-10 (the solvers' criterion). Counted: map evaluations by the
solver (not the Jacobian spectrum, computed afterwards), and wall time (median of repeats, spectrum
off). `error` is |m - m*| against a reference solved by Anderson from m = 0.2 to residual 1e-16
(its own error estimate is printed); it is ~ residual / (1 - F')
~ 100x the residual here, as the solver's own `error` field predicts.

Run: .venv/bin/python benchmarks/bench_fixedpoint.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from attnphase.numeric.fixedpoint import Anderson, Damped, Hybr, Interval, solve_fixed_point
from attnphase.numeric.gauss import GaussHermiteRule

LAM = 1.01
TOL = 1e-10
_RULE = GaussHermiteRule(1, 150)
_Z = _RULE.standard_nodes[:, 0]
_W = _RULE.weights


def z2_map(m: float) -> float:
    return float(_W @ np.tanh(LAM * m + np.sqrt(LAM * m) * _Z))


SOLVERS = [
    ("damped (damping 0: plain iteration)", Damped(damping=0.0)),
    ("damped (damping 0.5)", Damped(damping=0.5)),
    ("anderson (mixing 1)", Anderson(damping=0.0)),
    ("anderson (mixing 0.5)", Anderson(damping=0.5)),
    ("hybr (MINPACK)", Hybr()),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timing repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 15

    # Reference from a different solver and start than the hybr row below, at a 1e-15 residual.
    reference = solve_fixed_point(z2_map, 0.2, Anderson(damping=0.0), transforms=[Interval(0.0, 1.0)], tol=1e-16)
    if not reference.success:
        raise SystemExit(f"reference solve failed: {reference.message}")
    m_ref = reference.value
    print(f"Z2 state evolution at lam = {LAM}: m* = {m_ref:.15f} (+- {reference.error:.1e}), "
          f"F'(m*) = {reference.spectral_radius:.6f}")
    print(f"stop: residual |F(m) - m| <= {TOL:g}; start m = 0.5 (Interval(0, 1) coordinates)")
    header = (f"{'solver':<38} {'status':<10} {'evals':>7} {'time [s]':>10} {'error':>9} {'est.err':>9} "
              f"{'evals ratio':>11} {'time ratio':>10}")
    print(header)
    print("-" * len(header))
    rows = []
    for label, solver in SOLVERS:
        res = solve_fixed_point(z2_map, 0.5, solver, transforms=[Interval(0.0, 1.0)], tol=TOL)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            solve_fixed_point(z2_map, 0.5, solver, transforms=[Interval(0.0, 1.0)], tol=TOL, spectrum=False)
            times.append(time.perf_counter() - start)
        rows.append((label, res, statistics.median(times)))
    base_evals, base_time = rows[0][1].evaluations, rows[0][2]
    for label, res, seconds in rows:
        print(f"{label:<38} {res.status:<10} {res.evaluations:>7d} {seconds:>10.2e} {abs(res.value - m_ref):>9.1e} "
              f"{res.error:>9.1e} {base_evals / res.evaluations:>11.1f} {base_time / seconds:>10.1f}")
    print("ratios = plain damped iteration / solver (higher is better)")


if __name__ == "__main__":
    main()
