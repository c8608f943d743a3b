"""Benchmark: the positional-semantic saddle point against the field's usual numerical method.

Same point (ω = 0.3, α = 1.25), both branches (positional θ = 0, semantic m = 0), one table:

* baseline ("usual method"): nested fixed-degree 2-D cubature of degree 7 (4 × 4 Gauss-Hermite nodes
  in (ξ₁, ξ₂) outside, 4 × 4 in (η₁, η₂) inside: 256 points), the proximal map by
  `scipy.optimize.minimize` (BFGS) started from h = 0 at every node, damped iteration
  x ← 0.8 x + 0.2 F(x) until max |F(x) − x| < 1e-4;
* attnphase: `api.solve_branch` from the default start (cold), pruned tensor Gauss-Hermite rule with
  6 / 8 / 10 nodes per dimension, the fused multi-start Newton prox (derive.fused), frozen basins,
  Anderson then hybr to 1e-10; and the split-line fixed point (`api.refine_branch` on outer rule 8 from
  the 8-node solve).

Accuracy of every row against a converged reference: the split-line convergence study
(`api.convergence_study`: Φ to ~1e-7, ε_g to ~1e-6..1e-5), cached in
benchmarks/positional_semantic_reference.json (recomputed with --recompute-reference, ~1-2 minutes per
branch). `--quick`: semantic branch only. `--curve`: time `api.alpha_c_curve_split_line` on 22 values of
ω in [0, 0.45] (0, 0.02, ..., 0.40, 0.45) and compare it with the refined thresholds of the docs.
Run: `.venv/bin/python benchmarks/bench_positional_semantic.py [--quick] [--curve] [--recompute-reference]`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import optimize
from scipy.special import roots_hermitenorm

from attnphase.api import positional_semantic as api
from attnphase.models.positional_semantic.state_evolution import tokens

OMEGA, ALPHA = 0.3, 1.25
REFERENCE_FILE = Path(__file__).with_name("positional_semantic_reference.json")
# Refined thresholds (docs/models/positional_semantic.md, "Small ω": Newton on split-line convergence
# studies, 3-12 minutes per ω): independent references for the curve.
REFINED_ALPHA_C = {0.0: (0.6152, 0.0015), 0.1: (0.7515, 0.0008), 0.2: (0.9484, 0.0012), 0.3: (1.2517, 0.0006),
                   0.4: (1.7716, 0.0004)}
CURVE_OMEGAS = [round(0.02 * k, 2) for k in range(21)] + [0.45]


def baseline_solve(branch: str, params, x0, damping=0.8, tol=1e-4, max_iter=400):
    """The usual method: nested degree-7 cubature, local prox from 0, damped iteration."""
    nodes, weights = roots_hermitenorm(4)
    weights = weights / weights.sum()
    K = api.kernels(2)
    teacher = {"sigma": params.sigma, "omega": params.omega,
               **{f"A_{i + 1}_{j + 1}": params.A[2 * i + j] for i in range(2) for j in range(2)}}
    ridge_constants = {"sigma": params.sigma, "lam": params.lam, "rho": params.rho,
                       **{f"G_{i + 1}_{j + 1}": params.gram[2 * i + j] for i in range(2) for j in range(i, 2)}}
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
                        objective = K.objective.bind(**tokens("w", w), **tokens("hs", hs), V=V, **teacher)
                        res = optimize.minimize(lambda h: float(objective(h[0], h[1])), np.zeros(2), method="BFGS")
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
        conjugates = {**tokens("mhat", mhat), **tokens("qhat", qhat), **tokens("thetahat", thetahat),
                      **tokens("Vhat", Vhat), **ridge_constants}
        new = np.asarray(K.ridge.call(**conjugates), float)
        return new, conjugates, acc["M"]

    y = np.asarray(x0, float)
    evaluations = 0
    for _ in range(max_iter):
        x = coords.to_state(y)
        new, _, M = F(x)
        evaluations += 1
        y_new = coords.from_state(new)
        if np.max(np.abs(y_new - y)) < tol:
            y = y_new
            break
        y = damping * y + (1 - damping) * y_new
    x = coords.to_state(y)
    new, conjugates, M = F(x)
    phi = float(K.phi_rest.call(q=x[0], V=x[1], theta=x[2], **tokens("m", x[3:5]), **conjugates)) - ALPHA * M
    eq = api.SaddlePointEquations(params, ALPHA, api.TEST_ERROR_NODES)
    return {"free_energy": phi, "test_error": eq.test_error(x), "evaluations": evaluations + 1}


def reference(params, recompute: bool) -> dict:
    """{branch: study values} from the cache file, or recomputed by `api.convergence_study` and cached."""
    if REFERENCE_FILE.exists() and not recompute:
        return json.loads(REFERENCE_FILE.read_text())
    out = {"omega": OMEGA, "alpha": ALPHA, "method": "api.convergence_study (split-line; default rules)"}
    for branch in ("positional", "semantic"):
        t0 = time.perf_counter()
        study = api.convergence_study(branch, ALPHA, params)
        out[branch] = {"free_energy": study.free_energy, "free_energy_error": study.free_energy_error,
                       "test_error": study.test_error, "test_error_error": study.test_error_error,
                       "status": study.status, "message": study.message, "seconds": time.perf_counter() - t0}
        print(f"reference {branch}: Φ = {study.free_energy:.10f} ± {study.free_energy_error:.1e}, "
              f"ε_g = {study.test_error:.7f} ± {study.test_error_error:.1e} ({out[branch]['seconds']:.0f} s)")
    REFERENCE_FILE.write_text(json.dumps(out, indent=1) + "\n")
    return out


def ours(branch: str, params) -> list[tuple[str, float, float, float]]:
    """(method, seconds, Φ, ε_g) of attnphase's solves, each cold (default start)."""
    rows = []
    for nodes in (6, 8, 10):
        t0 = time.perf_counter()
        solution = api.solve_branch(branch, ALPHA, params, nodes_per_dim=nodes, stability=False)
        rows.append((f"tensor {nodes} nodes", time.perf_counter() - t0, solution.free_energy, solution.test_error))
        if nodes == 8:
            t0 = time.perf_counter()
            refined = api.refine_branch(solution, params, api.STATE_RULES[0])
            seconds = time.perf_counter() - t0 + rows[-1][1]
            rows.append((f"split-line {api.STATE_RULES[0].label()}", seconds, refined.free_energy, refined.test_error))
    return rows


def curve_timing() -> None:
    """The α_c(ω) curve on split-line free energies: wall time and the refined thresholds it must cover."""
    t0 = time.perf_counter()
    curve = api.alpha_c_curve_split_line(CURVE_OMEGAS)
    wall = time.perf_counter() - t0
    print(f"\nα_c(ω) curve (api.alpha_c_curve_split_line): {len(CURVE_OMEGAS)} values of ω in [0, 0.45], "
          f"state rule {curve.state_rule}, envelope rules {', '.join(curve.envelope_rules)}, {curve.evaluations} "
          f"split-line evaluations")
    print(f"{'ω':>5} {'α_c':>8} {'± err':>7} {'status':>9} {'refined (docs)':>17} {'|diff|':>7} {'covered':>8}")
    for w, c in zip(curve.omegas, curve.alpha_c):
        ref = REFINED_ALPHA_C.get(round(w, 4))
        cells = ""
        if ref is not None:
            diff = abs(c.value - ref[0])
            cells = f"{ref[0]:.4f} ± {ref[1]:.4f} {diff:7.4f} {'yes' if diff <= c.error else 'NO':>8}"
        print(f"{w:5.2f} {c.value:8.4f} {c.error:7.4f} {c.status:>9} {cells}")
    print(f"wall time {wall:.1f} s; target ≤ 120 s on 2 cores: {'met' if wall <= 120 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="semantic branch only")
    parser.add_argument("--curve", action="store_true", help="time the α_c(ω) curve instead of the saddle point")
    parser.add_argument("--recompute-reference", action="store_true", help="recompute and cache the reference")
    args = parser.parse_args()
    if args.curve:
        curve_timing()
        return
    params = api.Parameters.validated(omega=OMEGA)
    api.solve_branch("semantic", ALPHA, params, nodes_per_dim=4, stability=False)  # compile/load kernels: not timed
    ref = reference(params, args.recompute_reference)
    branches = ("semantic",) if args.quick else ("positional", "semantic")
    table = []
    for branch in branches:
        t0 = time.perf_counter()
        base = baseline_solve(branch, params, api.initial_guess(branch, params))
        t_base = time.perf_counter() - t0
        table.append((branch, "baseline (degree 7, scipy prox)", t_base, base["free_energy"], base["test_error"]))
        table += [(branch, *row) for row in ours(branch, params)]
    print(f"\npositional-semantic saddle point, ω = {OMEGA}, α = {ALPHA}; reference {ref['method']}:")
    for branch in branches:
        r = ref[branch]
        print(f"  {branch}: Φ = {r['free_energy']:.10f} ± {r['free_energy_error']:.1e}, "
              f"ε_g = {r['test_error']:.7f} ± {r['test_error_error']:.1e}")
    print(f"{'branch':<11} {'method':<32} {'time s':>8} {'speed-up':>9} {'|ΔΦ|':>9} {'|Δε_g|':>9} {'vs baseline':>12}")
    for branch in branches:
        rows = [row for row in table if row[0] == branch]
        t_base, phi_base, eg_base = rows[0][2], rows[0][3], rows[0][4]
        r = ref[branch]
        err_phi_base, err_eg_base = abs(phi_base - r["free_energy"]), abs(eg_base - r["test_error"])
        for _, method, seconds, phi, eg in rows:
            err_phi, err_eg = abs(phi - r["free_energy"]), abs(eg - r["test_error"])
            verdict = "" if method.startswith("baseline") else (
                "as accurate" if err_phi <= err_phi_base and err_eg <= err_eg_base else "LESS accurate")
            print(f"{branch:<11} {method:<32} {seconds:8.2f} {t_base / seconds:8.0f}× {err_phi:9.1e} {err_eg:9.1e} "
                  f"{verdict:>12}")


if __name__ == "__main__":
    main()
