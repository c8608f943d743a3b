"""Benchmark: the positional-semantic saddle point against the field's usual numerical method.

Same point (ω = 0.3, α = 1.25), both branches (positional θ = 0, semantic m = 0):

* baseline ("usual method"): nested fixed-degree 2-D cubature of degree 7 (4 × 4 Gauss-Hermite nodes
  in (ξ₁, ξ₂) outside, 4 × 4 in (η₁, η₂) inside: 256 points), the proximal map by
  `scipy.optimize.minimize` (BFGS) started from h = 0 at every node, damped iteration
  x ← 0.8 x + 0.2 F(x) until max |F(x) − x| < 1e-4;
* attnphase: pruned tensor Gauss-Hermite rule (8 and 10 nodes per dimension), the vectorised multi-start
  Newton prox over all nodes, Anderson / hybr fixed point to 1e-10.

Accuracy of both against a converged reference: the split-line convergence study
(`api.convergence_study`, Φ to ~1e-7, ε_g to ~1e-6..1e-5, printed with its own errors; ~2 minutes per
branch), or with --quick the 12-node tensor rule (whose own error, ~1e-6 on Φ, then limits the
comparison). `--curve N` also times `api.alpha_c_curve` on N values of ω in [0, 0.45] and prints
whether it stays within the 120 s target; `--thresholds 0,0.1,0.2,0.3,0.4` times the refined thresholds
(tensor and split-line values side by side) instead. Run:
`.venv/bin/python benchmarks/bench_positional_semantic.py [--quick] [--curve 20] [--thresholds W1,W2]`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import optimize
from scipy.special import roots_hermitenorm

from attnphase.api import positional_semantic as api

OMEGA, ALPHA = 0.3, 1.25


def baseline_solve(branch: str, params, x0, damping=0.8, tol=1e-4, max_iter=400):
    """The usual method: nested degree-7 cubature, local prox from 0, damped iteration."""
    nodes, weights = roots_hermitenorm(4)
    weights = weights / weights.sum()
    K = api.kernels(2)
    A = params.A
    coords = api.BranchCoordinates(branch, params)

    def F(x):
        q, V, theta, m = x[0], x[1], x[2], x[3:5]
        vstar = np.sqrt(params.rho - theta**2 / q)
        acc = {"g": np.zeros(2), "g2": np.zeros(2), "geta": np.zeros(2), "gxi": np.zeros(2), "M": 0.0}
        for i1, x1 in enumerate(nodes):  # outer 2-D rule in ξ
            for i2, x2 in enumerate(nodes):
                xi = np.array([x1, x2])
                w = m + np.sqrt(q) * xi
                for j1, e1 in enumerate(nodes):  # inner 2-D rule in η
                    for j2, e2 in enumerate(nodes):
                        eta = np.array([e1, e2])
                        hs = theta / np.sqrt(q) * xi + vstar * eta
                        args = (w[0], w[1], hs[0], hs[1], V, params.sigma, params.omega, *A)
                        res = optimize.minimize(lambda h: float(K.objective(h[0], h[1], *args)), np.zeros(2),
                                                method="BFGS")
                        g = (res.x - w) / V
                        wt = weights[i1] * weights[i2] * weights[j1] * weights[j2]
                        acc["g"] += wt * g
                        acc["g2"] += wt * g**2
                        acc["geta"] += wt * g * eta
                        acc["gxi"] += wt * g * xi
                        acc["M"] += wt * res.fun
        a = ALPHA
        mhat, qhat = a * acc["g"], a * acc["g2"]
        thetahat = a * acc["geta"] / vstar
        Vhat = -a * acc["gxi"] / np.sqrt(q) + theta * thetahat / q
        G = np.array(params.gram).reshape(2, 2)
        ridge_args = (*mhat, *qhat, *thetahat, *Vhat, *G[np.triu_indices(2)], params.sigma, params.lam, params.rho)
        new = np.asarray(K.ridge(*ridge_args), float)
        return new, ridge_args, acc["M"]

    y = np.asarray(x0, float)
    evaluations = 0
    for _ in range(max_iter):
        x = coords.to_state(y)
        new, ridge_args, M = F(x)
        evaluations += 1
        y_new = coords.from_state(new)
        if np.max(np.abs(y_new - y)) < tol:
            y = y_new
            break
        y = damping * y + (1 - damping) * y_new
    x = coords.to_state(y)
    new, ridge_args, M = F(x)
    phi = float(K.phi_rest(x[0], x[1], x[2], x[3], x[4], *ridge_args)) - ALPHA * M
    eq = api.SaddlePointEquations(params, ALPHA, 14)
    return {"free_energy": phi, "test_error": eq.test_error(x), "evaluations": evaluations + 1}


def reference_solution(branch, params, quick):
    """(Φ, ε_g, label) of the reference: the split-line study, or the 12-node tensor rule with --quick."""
    if quick:
        ref = api.solve_branch(branch, ALPHA, params, nodes_per_dim=12, stability=False)
        return ref.free_energy, ref.test_error, "12-node tensor rule"
    study = api.convergence_study(branch, ALPHA, params)
    return (study.free_energy, study.test_error,
            f"split-line study: Φ ± {study.free_energy_error:.1e}, ε_g ± {study.test_error_error:.1e}")


def curve_timing(n_omegas: int) -> None:
    omegas = np.linspace(0.0, 0.45, n_omegas)
    t0 = time.perf_counter()
    curve = api.alpha_c_curve(omegas)
    wall = time.perf_counter() - t0
    print(f"\nα_c(ω) curve: {n_omegas} values of ω in [0, 0.45], {curve.nodes_per_dim}-node rule "
          f"(check {curve.check_nodes_per_dim}), {curve.solves} branch solves")
    print(f"{'ω':>6} {'α_c':>8} {'± err':>8} {'status':>10} {'α_l':>8} {'± err':>8} {'status':>10}")
    for w, c, l in zip(curve.omegas, curve.alpha_c, curve.alpha_l):
        print(f"{w:6.3f} {c.value:8.4f} {c.error:8.4f} {c.status:>10} {l.value:8.4f} {l.error:8.4f} {l.status:>10}")
    print(f"wall time {wall:.1f} s; target ≤ 120 s: {'met' if wall <= 120 else 'NOT met'}")


# α scan ranges bracketing the tensor-rule thresholds (6 points, 5 at ω = 0.4) used for the note's table.
THRESHOLD_SCANS = {0.0: (0.5, 1.0, 6), 0.1: (0.6, 1.1, 6), 0.2: (0.8, 1.3, 6), 0.3: (1.1, 1.6, 6), 0.4: (1.6, 2.4, 5)}


def threshold_timing(omegas) -> None:
    """α_c and α_l at each ω: 8-node tensor rule (check 10) and split-line refined, with wall times
    (the table of docs/models/positional_semantic.md, "Small ω"; 3-12 minutes per ω on 2 cores)."""
    print(f"\n{'ω':>5} {'α_c tensor':>18} {'α_c refined':>18} {'α_l tensor':>18} {'α_l refined':>18} {'time s':>7}")
    for omega in omegas:
        lo, hi, n = THRESHOLD_SCANS.get(omega, (0.5, 3.0, 6))
        t0 = time.perf_counter()
        result = api.threshold(omega, nodes_per_dim=8, check_nodes_per_dim=10, alpha_min=lo, alpha_max=hi, n_scan=n,
                               rtol=1e-4, refine=("alpha_c", "alpha_l"))
        wall = time.perf_counter() - t0
        cells = []
        for coarse, name in ((result.alpha_c, "alpha_c"), (result.alpha_l, "alpha_l")):
            fine = result.refined[name]
            cells += [f"{coarse.value:.4f} ± {coarse.error:.4f}", f"{fine.value:.4f} ± {fine.error:.4f}"]
        print(f"{omega:5.2f} " + " ".join(f"{c:>18}" for c in cells) + f" {wall:7.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--curve", type=int, default=0, help="time alpha_c_curve on this many ω (0: skip)")
    parser.add_argument("--thresholds", type=str, default="",
                        help="comma-separated ω: time refined thresholds there (e.g. 0,0.1,0.2,0.3,0.4) and skip the rest")
    args = parser.parse_args()
    if args.thresholds:
        threshold_timing([float(w) for w in args.thresholds.split(",")])
        return
    params = api.model_parameters(OMEGA)
    branches = ("semantic",) if args.quick else ("positional", "semantic")
    rows, labels = [], []
    for branch in branches:
        ref_phi, ref_eg, label = reference_solution(branch, params, args.quick)
        labels.append(f"{branch}: {label}")
        t0 = time.perf_counter()
        base = baseline_solve(branch, params, api.initial_guess(branch, params))
        t_base = time.perf_counter() - t0
        for nodes in (6, 8, 10):
            t0 = time.perf_counter()
            ours = api.solve_branch(branch, ALPHA, params, nodes_per_dim=nodes, stability=False)
            t_ours = time.perf_counter() - t0
            rows.append((branch, nodes, t_base, t_ours, abs(base["free_energy"] - ref_phi),
                         abs(ours.free_energy - ref_phi), abs(base["test_error"] - ref_eg),
                         abs(ours.test_error - ref_eg)))
    print(f"positional-semantic saddle point, ω = {OMEGA}, α = {ALPHA}; references: " + "; ".join(labels))
    print(f"{'branch':<11} {'nodes':>5} {'baseline s':>10} {'attnphase s':>11} {'speed-up':>8} {'|ΔΦ| base':>10} "
          f"{'|ΔΦ| ours':>10} {'|Δε_g| base':>12} {'|Δε_g| ours':>12}")
    for branch, nodes, tb, to, pb, po, eb, eo in rows:
        print(f"{branch:<11} {nodes:5d} {tb:10.1f} {to:11.1f} {tb / to:8.1f} {pb:10.2e} {po:10.2e} {eb:12.2e} {eo:12.2e}")
    if args.curve:
        curve_timing(args.curve)

if __name__ == "__main__":
    main()
