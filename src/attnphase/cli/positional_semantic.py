"""`attnphase solve|threshold|simulate positional-semantic`: the positional-vs-semantic attention model.

Each command mirrors a function of `attnphase.api.positional_semantic` (solve, threshold,
alpha_c_curve_split_line, simulate) and prints one JSON object with `--json`. The model's options
(--omega, --sigma, --lam, --A, --L) come from the declarations of its `Parameters`; the model package is
imported inside the commands only, to keep CLI start-up fast.
"""

from __future__ import annotations

import click

from attnphase.cli.common import (Int, Real, RenamedOptionsCommand, as_option_error, emit, json_option, options_from,
                                  rng_option)
from attnphase.cli.groups import simulate, solve, threshold
from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import Parameters

MODEL = "positional-semantic"
omega_option = options_from(Parameters, ["omega"], required=["omega"])
model_options = options_from(Parameters, ["sigma", "lam", "A", "L"])


@solve.command(MODEL)
@omega_option
@click.option("--alpha", type=Real(0.0, None, low_open=True), required=True, help="Samples per dimension α = n/d (> 0).")
@model_options
@click.option("--nodes", type=Int(4, 40), default=None,
              help="Gauss-Hermite nodes per dimension of the 2L-dimensional average (default 10 for L = 2, "
                   "6 for L = 3, 4 for L ≥ 4: the rule has nodes^(2L) points).")
@click.option("--check-nodes", type=Int(4, 40), default=None,
              help="Re-solve every branch on this rule too and report <field>_error = |difference| (default: "
                   "none for L = 2, nodes − 2 for L ≥ 3).")
@click.option("--branches", default="positional,semantic,trivial,mixed", show_default=True,
              help="Comma-separated branches to solve for.")
@json_option
def solve_command(omega, alpha, sigma, lam, A, L, nodes, check_nodes, branches, as_json):
    """Every branch (positional, semantic, trivial, mixed) of the saddle point at (ω, α).

    \b
    Examples:
      attnphase solve positional-semantic --omega 0.3 --alpha 1.25 --json
      attnphase solve positional-semantic --omega 0.3 --alpha 1.25 --L 3 \\
          --A 0.6,0.2,0.2,0.2,0.6,0.2,0.2,0.2,0.6 --json       (6 nodes, check 4: about 2 minutes)
    """
    from attnphase.api.positional_semantic import BRANCHES, default_check_nodes_per_dim, default_nodes_per_dim
    from attnphase.api.positional_semantic import solve as solve_point
    from attnphase.params import check_choice

    names = tuple(check_choice("--branches", b.strip(), BRANCHES) for b in branches.split(",") if b.strip())
    nodes = default_nodes_per_dim(L) if nodes is None else nodes
    check_nodes = default_check_nodes_per_dim(L, nodes) if check_nodes is None else check_nodes
    result = as_option_error(Parameters, solve_point, omega, alpha, sigma, lam, A, L, nodes_per_dim=nodes,
                             branches=names, check_nodes_per_dim=check_nodes)
    parameters = {"omega": omega, "alpha": alpha, "sigma": sigma, "lam": lam, "A": A, "L": L, "nodes": nodes,
                  "check_nodes": check_nodes, "branches": list(names)}
    emit("solve", MODEL, parameters, result.as_dict(), as_json)


def _check_nodes_error(call, *args, **kwargs):
    """call(...), with a ParameterError about a rule renamed to its option (the API's name is nodes_per_dim)."""
    renamed = {"nodes_per_dim": "--nodes", "check_nodes_per_dim": "--check-nodes", "n_scan": "--scan",
               "omegas": "--omega-grid", "alpha_min": "--alpha-min", "alpha_max": "--alpha-max"}
    try:
        return as_option_error(Parameters, call, *args, **kwargs)
    except ParameterError as exc:
        if exc.name not in renamed:
            raise
        raise ParameterError(renamed[exc.name], exc.value, exc.allowed) from None


@threshold.command(MODEL)
@click.option("--omega", type=Real(0.0, 1.0), default=None, help="Positional weight ω of the teacher, in [0, 1].")
@click.option("--omega-grid", default=None, metavar="START:STOP:NUM",
              help="Instead of --omega: the α_c(ω) curve at NUM evenly spaced ω in [START, STOP] ⊂ [0, 1] (or a "
                   "list V1,V2,...) from split-line free energies, with error bars that hold when the quadrature is "
                   "refined (api.alpha_c_curve_split_line; 22 ω in [0, 0.45] take about 1.5 minutes on two cores). "
                   "Gives α_c only; --nodes sets the tensor rule of the first (largest) ω's scan.")
@model_options
@click.option("--nodes", type=Int(4, 40), default=None,
              help="Working Gauss-Hermite nodes per dimension (default 10 for L = 2, 4 for L ≥ 3: the tensor rule "
                   "has nodes^(2L) points; L = 3 on 4 nodes, check 6, 3 scan points: about 70 s).")
@click.option("--check-nodes", type=Int(5, 48), default=None,
              help="Finer rule used for the quadrature error estimate (default 14 for L = 2, nodes + 2 for L ≥ 3).")
@click.option("--alpha-min", type=Real(0.0, None, low_open=True), default=0.5, show_default=True)
@click.option("--alpha-max", type=Real(0.0, None, low_open=True), default=3.0, show_default=True)
@click.option("--scan", type=Int(2, 200), default=6, show_default=True, help="Scan points in α before refinement.")
@click.option("--refine", type=click.Choice(["none", "alpha_c", "alpha_l", "both"]), default="none", show_default=True,
              help="Move these thresholds to the root of the split-line (accurate) crossing function by Newton "
                   "steps on convergence studies; alpha_c/alpha_l then carry the refined value and error "
                   "(alpha_c_method says which), the tensor ones stay as alpha_c_tensor. The tensor-rule error "
                   "bars are optimistic at small ω (ω = 0: 0.618 ± 0.012 on 8/10 nodes, refined 0.615 ± 0.0015); "
                   "about 1.5 minutes per branch study on two cores, 3-7 minutes per threshold.")
@json_option
def threshold_command(omega, omega_grid, sigma, lam, A, L, nodes, check_nodes, alpha_min, alpha_max, scan, refine,
                      as_json):
    """α_c (free-energy crossing) and α_l (semantic test error = linear baseline) at ω, with errors;
    or, with --omega-grid, the α_c(ω) curve.

    Status per threshold: converged, not_found (every scan point solved, no sign change; the message
    says which side wins and where the secant would cross) or failed (a branch lost at a scan point).

    \b
    Examples:
      attnphase threshold positional-semantic --omega 0.3 --json
      attnphase threshold positional-semantic --omega-grid 0:0.45:22 --json
    """
    from attnphase.api.positional_semantic import alpha_c_curve_split_line
    from attnphase.api.positional_semantic import threshold as find_thresholds

    if (omega is None) == (omega_grid is None):
        raise ParameterError("--omega", omega, "exactly one of --omega and --omega-grid")
    nodes = (10 if L == 2 else 4) if nodes is None else nodes
    check_nodes = (14 if L == 2 else nodes + 2) if check_nodes is None else check_nodes
    if omega_grid is not None:
        from attnphase.sweep import parse_grid

        try:
            omegas = parse_grid(f"omega={omega_grid}").values
        except ParameterError as exc:
            raise ParameterError("--omega-grid", omega_grid, exc.allowed) from None
        result = _check_nodes_error(alpha_c_curve_split_line, omegas, sigma, lam, A, L, nodes_per_dim=nodes,
                                    alpha_min=alpha_min, alpha_max=alpha_max, n_scan=scan)
        parameters = {"omega_grid": omega_grid, "sigma": sigma, "lam": lam, "A": A, "L": L, "nodes": nodes,
                      "alpha_min": alpha_min, "alpha_max": alpha_max, "scan": scan}
        emit("threshold", MODEL, parameters, result.as_dict(), as_json)
        return

    names = {"none": (), "alpha_c": ("alpha_c",), "alpha_l": ("alpha_l",), "both": ("alpha_c", "alpha_l")}[refine]
    result = _check_nodes_error(find_thresholds, omega, sigma, lam, A, L, nodes_per_dim=nodes,
                                check_nodes_per_dim=check_nodes, alpha_min=alpha_min, alpha_max=alpha_max, n_scan=scan,
                                refine=names)
    parameters = {"omega": omega, "sigma": sigma, "lam": lam, "A": A, "L": L, "nodes": nodes,
                  "check_nodes": check_nodes, "alpha_min": alpha_min, "alpha_max": alpha_max, "scan": scan,
                  "refine": refine}
    emit("threshold", MODEL, parameters, result.as_dict(), as_json)


@simulate.command(MODEL, cls=RenamedOptionsCommand, renamed_options={"--seeds": "--trials"})
@omega_option
@click.option("--alpha", type=Real(0.0, None, low_open=True), required=True, help="Samples per dimension α = n/d (> 0).")
@click.option("--d", "d", type=Int(2, 100_000), default=1000, show_default=True, help="Embedding dimension.")
@click.option("--init", type=click.Choice(["semantic", "positional", "random"]), default="semantic", show_default=True)
@click.option("--trials", type=Int(1, 10_000), default=5, show_default=True,
              help="Independent runs, each with its own data, teacher and initialisation (batched).")
@click.option("--seed", type=Int(0, 2**63 - 1), default=0, show_default=True, help="Base seed.")
@click.option("--steps", type=Int(1, 10**7), default=5000, show_default=True)
@click.option("--lr", type=Real(0.0, None, low_open=True), default=None,
              help="Learning rate (default 0.15 for GD, 0.01 for Adam with --init random).")
@click.option("--test-samples", type=Int(1, 10**7), default=10_000, show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@rng_option
@model_options
@json_option
def simulate_command(omega, alpha, d, init, trials, seed, steps, lr, test_samples, device, rng, sigma, lam, A, L, as_json):
    """Full-batch GD (Adam for --init random) at finite d, batched over trials.

    \b
    Example:
      attnphase simulate positional-semantic --omega 0.3 --alpha 1.5 --d 1000 --init semantic --trials 5 --json
    """
    from attnphase.api.positional_semantic import simulate as simulate_network

    result = as_option_error(Parameters, simulate_network, omega=omega, alpha=alpha, d=d, init=init, trials=trials,
                             seed=seed, steps=steps, lr=lr, test_samples=test_samples, device=device, sigma=sigma,
                             lam=lam, A=A, L=L, rng=rng)
    parameters = {"omega": omega, "alpha": alpha, "d": d, "init": init, "trials": trials, "seed": seed,
                  "steps": steps, "lr": result.lr, "test_samples": test_samples, "device": result.device, "rng": rng,
                  "sigma": sigma, "lam": lam, "A": A, "L": L}
    emit("simulate", MODEL, parameters, result.as_dict(), as_json)
    if result.status == "diverged":  # printed with its message (non-finite values are null); exit 1 says it too
        raise SystemExit(1)
