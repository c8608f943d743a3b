"""Benchmark: the positional-semantic commands against the field's usual numerical method, as whole processes.

Three ratios, each measured in this one run (so under the same machine load), start-up included:

1. two-branch solve at (ω, α) = (0.3, 1.25): `attnphase solve positional-semantic --branches
   positional,semantic --json` (default tolerance, 0.3 % on every field) against the usual method (below),
   with every field's deviation from the converged reference; target ≥ 50× faster at ≤ 0.3 %.
2. `attnphase threshold positional-semantic --omega W --json` (α_c and α_l to 1e-3): its time against the
   15 s target.
3. `attnphase threshold positional-semantic --omega-grid 0:0.45:20 --which alpha_c --json`: its time against
   the 120 s target.

Plus the start-up: `attnphase --version`, `attnphase solve positional-semantic --help`, and whether the solve
path imports torch, matplotlib or dask.

The usual method (a clean-room copy, run with `--usual`): nested fixed-degree 2-D cubature of degree 7 (4 × 4
Gauss-Hermite nodes in (ξ₁, ξ₂) outside, 4 × 4 in (η₁, η₂) inside: 256 points), the proximal map by
`scipy.optimize.minimize` (BFGS) started from h = 0 at every node, damped iteration x ← 0.8 x + 0.2 F(x)
until max |F(x) − x| < 1e-4, both branches from the default starts.

References (positional_semantic_reference.json): Φ and ε_g from the split-line convergence study at
(0.3, 1.25); the states ("fields(0.3,1.25)") and the thresholds ("references") from
benchmarks/positional_semantic_references.py (count-split and outer-split rules).
Run: `.venv/bin/python benchmarks/bench_positional_semantic.py [--parts solve,threshold,curve,startup]
[--curve-timeout SECONDS] [--quick]` (a stopped curve is reported as a lower bound on its time; `--quick`, as
`make bench` runs it, leaves out the curve, the part that takes minutes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

OMEGA, ALPHA = 0.3, 1.25
THRESHOLD_OMEGA = 0.3
CURVE_GRID = "0:0.45:20"
TARGETS = {"solve_ratio": 50.0, "threshold_seconds": 15.0, "curve_seconds": 120.0}
REFERENCE_FILE = Path(__file__).with_name("positional_semantic_reference.json")
ATTNPHASE = [str(Path(sys.executable).with_name("attnphase"))]


def usual_method(branch: str, damping=0.8, tol=1e-4, max_iter=400) -> dict:
    """The usual method at (OMEGA, ALPHA): nested degree-7 cubature, BFGS prox from 0, damped iteration."""
    from scipy import optimize
    from scipy.special import roots_hermitenorm

    from attnphase.api import positional_semantic as api
    from attnphase.models.positional_semantic.state_evolution import tokens

    params = api.Parameters.validated(omega=OMEGA)
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
        return np.asarray(K.ridge.call(**conjugates), float), conjugates, acc["M"]

    y = np.asarray(api.initial_guess(branch, params), float)
    for _ in range(max_iter):
        new, _, _ = F(coords.to_state(y))
        y_new = coords.from_state(new)
        if np.max(np.abs(y_new - y)) < tol:
            y = y_new
            break
        y = damping * y + (1 - damping) * y_new
    x = coords.to_state(y)
    _, conjugates, M = F(x)
    phi = float(K.phi_rest.call(q=x[0], V=x[1], theta=x[2], **tokens("m", x[3:5]), **conjugates)) - ALPHA * M
    eq = api.SaddlePointEquations(params, ALPHA, 16)
    return {"branch": branch, "q": float(x[0]), "V": float(x[1]), "theta": abs(float(x[2])), "m": abs(float(x[3])),
            "free_energy": phi, "test_error": eq.test_error(x)}


def timed(command: list[str], timeout: float | None = None) -> tuple[float, str | None]:
    """(wall seconds, stdout) of a whole process; stdout None when it was stopped at `timeout` seconds."""
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - started, None
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds, done.stdout


def deviations(values: dict, reference: dict) -> dict:
    """Relative deviation of every field with a reference value."""
    return {k: abs(values[k] - reference[k]) / abs(reference[k]) for k in reference if k in values and reference[k]}


def solve_reference(stored: dict) -> dict:
    """branch -> field -> reference value at (OMEGA, ALPHA): the count-split states ("fields(0.3,1.25)") where
    they have been computed, else Φ and ε_g of the split-line convergence study alone."""
    if "fields(0.3,1.25)" in stored:
        return stored["fields(0.3,1.25)"]
    print("(no count-split states in the reference file: Φ and ε_g of the split-line study only)")
    return {b: {k: stored[b][k] for k in ("free_energy", "test_error")} for b in ("positional", "semantic")}


def bench_solve(reference: dict) -> dict:
    ours_s, ours_out = timed(ATTNPHASE + ["solve", "positional-semantic", "--omega", str(OMEGA), "--alpha", str(ALPHA),
                                          "--branches", "positional,semantic", "--json"])
    usual_s, usual_out = timed([sys.executable, __file__, "--usual"])
    ours = {b["branch"]: b for b in json.loads(ours_out)["branches"]}
    usual = {b["branch"]: b for b in json.loads(usual_out)}
    print(f"\n1. two-branch solve at ω = {OMEGA}, α = {ALPHA} (whole processes): attnphase {ours_s:.1f} s, usual method "
          f"{usual_s:.1f} s: {usual_s / ours_s:.1f}× (target ≥ {TARGETS['solve_ratio']:g}×)")
    print(f"   {'branch':<11} {'field':<11} {'reference':>12} {'attnphase':>12} {'± error':>9} {'dev.':>8} "
          f"{'usual':>12} {'dev.':>8}")
    fields = {}
    for branch in ("positional", "semantic"):
        ref = reference.get(branch, {})
        for name in ("q", "V", "m" if branch == "positional" else "theta", "test_error", "free_energy"):
            if name not in ref:
                continue
            mine = abs(ours[branch][name]) if name in ("m", "theta") else ours[branch][name]
            theirs = usual[branch][name]
            fields[f"{branch}.{name}"] = (abs(mine / ref[name] - 1), abs(theirs / ref[name] - 1))
            error = ours[branch][name + "_error"]
            print(f"   {branch:<11} {name:<11} {ref[name]:12.7g} {mine:12.7g} "
                  f"{'no bound' if error is None else format(error, '.2g'):>9} "
                  f"{abs(mine / ref[name] - 1):8.2%} {theirs:12.7g} {abs(theirs / ref[name] - 1):8.2%}")
    return {"attnphase_s": ours_s, "usual_s": usual_s, "ratio": usual_s / ours_s, "deviations": fields}


def bench_threshold(references: dict) -> dict:
    # a fresh checkpoint directory (as for the curve below): the default one would hand a repeated run its answer
    with tempfile.TemporaryDirectory() as fresh:
        seconds, out = timed(ATTNPHASE + ["threshold", "positional-semantic", "--omega", str(THRESHOLD_OMEGA),
                                          "--checkpoint-dir", fresh, "--json"])
    result = json.loads(out)
    print(f"\n2. threshold --omega {THRESHOLD_OMEGA} (α_c and α_l to 1e-3): {seconds:.1f} s, "
          f"{seconds / TARGETS['threshold_seconds']:.1f}× the {TARGETS['threshold_seconds']:g} s target")
    for name in ("alpha_c", "alpha_l"):
        ref = references.get(f"{name}({THRESHOLD_OMEGA})")
        error = result[name + "_error"]  # null: no error bound
        text = (f"   {name} = {result[name]:.5f} {'(no bound)' if error is None else f'± {error:.5f}'} "
                f"({result[name + '_status']})")
        if ref:
            diff = abs(result[name] - ref["value"])
            covered = error is not None and diff <= error + ref["error"]
            text += (f"; reference {ref['value']:.5f} ± {ref['error']:.1g}: |diff| {diff:.5f} "
                     f"{'within' if covered else 'OUTSIDE'} the errors")
        print(text)
    return {"seconds": seconds, "ratio_to_target": seconds / TARGETS["threshold_seconds"]}


def bench_curve(timeout: float | None) -> dict:
    # a fresh checkpoint directory: the default one would hand a repeated run the ω an earlier run finished
    with tempfile.TemporaryDirectory() as fresh:
        seconds, out = timed(ATTNPHASE + ["threshold", "positional-semantic", "--omega-grid", CURVE_GRID, "--which",
                                          "alpha_c", "--checkpoint-dir", fresh, "--json"], timeout)
    if out is None:
        print(f"\n3. α_c(ω) at 20 ω in [0, 0.45] to 1e-3: stopped after {seconds:.0f} s (--curve-timeout), at least "
              f"{seconds / TARGETS['curve_seconds']:.1f}× the {TARGETS['curve_seconds']:g} s target")
        return {"seconds": seconds, "ratio_to_target": seconds / TARGETS["curve_seconds"], "stopped": True}
    result = json.loads(out)
    met = sum(s == "converged" for s in result["alpha_c_status"])
    print(f"\n3. α_c(ω) at 20 ω in [0, 0.45] to 1e-3: {seconds:.1f} s, {seconds / TARGETS['curve_seconds']:.1f}× the "
          f"{TARGETS['curve_seconds']:g} s target; {met} of {len(result['omega'])} met the tolerance")
    return {"seconds": seconds, "ratio_to_target": seconds / TARGETS["curve_seconds"], "converged": met}


def bench_startup() -> dict:
    version, _ = timed(ATTNPHASE + ["--version"])
    helped, _ = timed(ATTNPHASE + ["solve", "positional-semantic", "--help"])
    probe = ("import sys; from click.testing import CliRunner; from attnphase.cli import main; "
             "CliRunner().invoke(main, ['solve', 'positional-semantic', '--help']); "
             "import attnphase.models.positional_semantic.point; "
             "print([m for m in ('torch', 'matplotlib', 'dask') if m in sys.modules])")
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()
    print(f"\nstart-up: attnphase --version {version:.2f} s, solve positional-semantic --help {helped:.2f} s; "
          f"heavy modules imported by the solve path: {imported}")
    return {"version_s": version, "help_s": helped, "heavy_imports": imported}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", default=None, help="default: startup,solve,threshold,curve")
    parser.add_argument("--quick", action="store_true", help="without the curve (about 2 minutes instead of 7)")
    parser.add_argument("--usual", action="store_true", help="run the usual method (both branches), print JSON")
    parser.add_argument("--curve-timeout", type=float, default=None,
                        help="stop the α_c(ω) command after this many seconds and report a lower bound on its time")
    args = parser.parse_args()
    if args.usual:
        print(json.dumps([usual_method(b) for b in ("positional", "semantic")]))
        return
    stored = json.loads(REFERENCE_FILE.read_text())
    load = subprocess.run(["cat", "/proc/loadavg"], capture_output=True, text=True).stdout.split()[:3]
    print(f"load average at the start: {' '.join(load)} (2-core machine: every time here includes the other load)")
    parts = (args.parts or ("startup,solve,threshold" if args.quick else "startup,solve,threshold,curve")).split(",")
    summary = {}
    if "startup" in parts:
        summary["startup"] = bench_startup()
    if "solve" in parts:
        summary["solve"] = bench_solve(solve_reference(stored))
    if "threshold" in parts:
        summary["threshold"] = bench_threshold(stored.get("references", {}))
    if "curve" in parts:
        summary["curve"] = bench_curve(args.curve_timeout)
    print("\n" + json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
