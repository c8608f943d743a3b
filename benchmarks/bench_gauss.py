"""Benchmark (b): a 3-D Gaussian expectation to 1e-10, attnphase vs scipy.integrate.nquad.

Integrands (z ~ N(mu, Sigma), Sigma correlated), both with closed forms:
  probit:  E[Phi(c + b.z)]            = Phi((c + b.mu) / sqrt(1 + b^T Sigma b))
  osc:     E[exp(a.z) cos(b.z)]       = exp(a.mu + (a^T S a - b^T S b)/2) cos(b.mu + a^T S b)

attnphase: `gaussian_expectation(f, mu, Sigma, tol=1e-10)` (adaptive tensor Gauss-Hermite, nodes
cached after the first call, integrand vectorised over nodes); timed as the median of repeated calls
(warm) and separately for the very first call (cold: includes building the nodes).
nquad: the same integrand as a scalar Python function times the N(mu, Sigma) density, over the box
mu_i +- 7 sigma_i (the Gaussian mass outside is < 3e-11, below the target), epsabs = 1e-10,
epsrel = 0; one run, in a subprocess killed after --timeout seconds (then the ratio is a lower bound).

Run: .venv/bin/python benchmarks/bench_gauss.py [--quick] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import statistics
import time

import numpy as np
from scipy import integrate
from scipy.special import ndtr

from attnphase.numeric.gauss import gaussian_expectation, tensor_rule

TOL = 1e-10
MU = np.array([0.2, -0.1, 0.3])
COV = np.array([[1.0, 0.5, 0.2], [0.5, 1.5, -0.3], [0.2, -0.3, 0.8]])
A = np.array([0.3, -0.2, 0.25])
B = np.array([0.6, -0.4, 0.5])
C = 0.3
BOX_SIGMAS = 7.0


def closed_form(name: str) -> float:
    if name == "probit":
        return float(ndtr((C + B @ MU) / math.sqrt(1 + B @ COV @ B)))
    return math.exp(A @ MU + 0.5 * (A @ COV @ A - B @ COV @ B)) * math.cos(B @ MU + A @ COV @ B)


def vectorised(name: str):
    if name == "probit":
        return lambda z: ndtr(C + z @ B)
    return lambda z: np.exp(z @ A) * np.cos(z @ B)


def _nquad_worker(name: str, queue) -> None:
    P = np.linalg.inv(COV).tolist()
    norm = 1.0 / math.sqrt((2 * math.pi) ** 3 * np.linalg.det(COV))
    m, a, b = MU.tolist(), A.tolist(), B.tolist()
    sqrt2 = math.sqrt(2.0)

    def density(x, y, z):
        dx, dy, dz = x - m[0], y - m[1], z - m[2]
        q = (P[0][0] * dx * dx + P[1][1] * dy * dy + P[2][2] * dz * dz
             + 2 * (P[0][1] * dx * dy + P[0][2] * dx * dz + P[1][2] * dy * dz))
        return norm * math.exp(-0.5 * q)

    if name == "probit":
        def f(x, y, z):
            return density(x, y, z) * 0.5 * math.erfc(-(C + b[0] * x + b[1] * y + b[2] * z) / sqrt2)
    else:
        def f(x, y, z):
            return (density(x, y, z) * math.exp(a[0] * x + a[1] * y + a[2] * z)
                    * math.cos(b[0] * x + b[1] * y + b[2] * z))

    sd = np.sqrt(np.diag(COV))
    ranges = [(MU[i] - BOX_SIGMAS * sd[i], MU[i] + BOX_SIGMAS * sd[i]) for i in range(3)]
    start = time.perf_counter()
    value, error = integrate.nquad(f, ranges, opts={"epsabs": TOL, "epsrel": 0.0, "limit": 200})
    queue.put((time.perf_counter() - start, value, error))


def run_nquad(name: str, timeout: float):
    queue = mp.Queue()
    proc = mp.Process(target=_nquad_worker, args=(name, queue))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return None
    return queue.get()


def run_attnphase(name: str, repeats: int):
    f = vectorised(name)
    tensor_rule.cache_clear()
    start = time.perf_counter()
    res = gaussian_expectation(f, MU, COV, tol=TOL)
    cold = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        res = gaussian_expectation(f, MU, COV, tol=TOL)
        times.append(time.perf_counter() - start)
    return cold, statistics.median(times), res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="probit integrand only, 30 s nquad limit")
    parser.add_argument("--timeout", type=float, default=None, help="nquad time limit per integrand (s)")
    args = parser.parse_args()
    names = ["probit"] if args.quick else ["probit", "osc"]
    timeout = args.timeout if args.timeout is not None else (30.0 if args.quick else 300.0)
    repeats = 20 if args.quick else 100

    print(f"3-D Gaussian expectation, target abs error {TOL:g}; nquad box mu +- {BOX_SIGMAS:g} sigma")
    header = (f"{'integrand':<9} {'method':<30} {'time [s]':>11} {'abs error':>10} {'est. error':>10} "
              f"{'ratio':>9}")
    print(header)
    print("-" * len(header))
    for name in names:
        exact = closed_form(name)
        cold, warm, res = run_attnphase(name, repeats)
        nq = run_nquad(name, timeout)
        label = f"attnphase GH ({res.nodes_per_dim}^3 nodes, warm)"
        print(f"{name:<9} {label:<30} {warm:>11.3e} {abs(res.value - exact):>10.1e} {res.error:>10.1e} {'1':>9}")
        print(f"{name:<9} {'attnphase GH (cold, 1st call)':<30} {cold:>11.3e} {'':>10} {'':>10} {'':>9}")
        if nq is None:
            print(f"{name:<9} {'scipy nquad':<30} {'>' + format(timeout, '.0f'):>11} {'timeout':>10} {'':>10} "
                  f"{'>' + format(timeout / warm, '.0f'):>9}")
        else:
            seconds, value, est = nq
            print(f"{name:<9} {'scipy nquad':<30} {seconds:>11.3e} {abs(value - exact):>10.1e} {est:>10.1e} "
                  f"{seconds / warm:>9.0f}")
            print(f"{name:<9} {'  ratio vs attnphase cold':<30} {'':>11} {'':>10} {'':>10} {seconds / cold:>9.0f}")
    print("ratio = nquad time / attnphase time (target >= 1000 against the warm time)")


if __name__ == "__main__":
    main()
