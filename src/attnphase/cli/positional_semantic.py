"""`attnphase solve|threshold|simulate positional-semantic`: the positional-vs-semantic attention model.

Each command mirrors a function of `attnphase.api.positional_semantic` (solve, threshold,
alpha_c_curve_split_line, simulate) and prints one JSON object with `--json`. The model's options
(--omega, --sigma, --lam, --A, --L) come from the declarations of its `Parameters`; the model package is
imported inside the commands only, to keep CLI start-up fast.
"""

from __future__ import annotations

import click

from attnphase.cli.common import RenamedOptionsCommand, as_option_error, emit, json_option, options_from, rng_option
from attnphase.cli.groups import simulate, solve, threshold
from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import (Parameters, Simulation, SolveRules, ThresholdSearch,
                                                             check_parameter)

MODEL = "positional-semantic"
omega_option = options_from(Parameters, ["omega"], required=["omega"])
alpha_option = options_from(Simulation, ["alpha"], required=["alpha"])
model_options = options_from(Parameters, ["sigma", "lam", "A", "L"])


def named_by_option(settings, call, *args, **kwargs):
    """call(...), a ParameterError about a model parameter or one of `settings` (a ParameterSet class) named
    by its option: the API names its arguments, the user typed options."""
    return as_option_error(Parameters, as_option_error, settings, call, *args, **kwargs)


@solve.command(MODEL)
@omega_option
@alpha_option
@model_options
@options_from(SolveRules, defaults={"nodes_per_dim": None})
@click.option("--branches", default="positional,semantic,trivial,mixed", show_default=True,
              help="Comma-separated branches to solve for.")
@json_option
def solve_command(omega, alpha, sigma, lam, A, L, nodes_per_dim, check_nodes_per_dim, branches, as_json):
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
    nodes = default_nodes_per_dim(L) if nodes_per_dim is None else nodes_per_dim
    check_nodes = default_check_nodes_per_dim(L, nodes) if check_nodes_per_dim is None else check_nodes_per_dim
    result = named_by_option(SolveRules, solve_point, omega, alpha, sigma, lam, A, L, nodes_per_dim=nodes,
                             branches=names, check_nodes_per_dim=check_nodes)
    parameters = {"omega": omega, "alpha": alpha, "sigma": sigma, "lam": lam, "A": A, "L": L, "nodes": nodes,
                  "check_nodes": check_nodes, "branches": list(names)}
    emit("solve", MODEL, parameters, result.as_dict(), as_json)


@threshold.command(MODEL)
@options_from(Parameters, ["omega"], defaults={"omega": None})
@click.option("--omega-grid", default=None, metavar="START:STOP:NUM",
              help="Instead of --omega: the α_c(ω) curve at NUM evenly spaced ω in [START, STOP] ⊂ [0, 1] (or a "
                   "list V1,V2,...) from split-line free energies, with error bars that hold when the quadrature is "
                   "refined (api.alpha_c_curve_split_line; 22 ω in [0, 0.45] take about 1.5 minutes on two cores). "
                   "Gives α_c only; --nodes sets the tensor rule of the first (largest) ω's scan.")
@model_options
@options_from(ThresholdSearch, ["nodes_per_dim", "check_nodes_per_dim", "alpha_min", "alpha_max", "n_scan"],
              defaults={"nodes_per_dim": None})
@click.option("--refine", type=click.Choice(["none", "alpha_c", "alpha_l", "both"]), default="none", show_default=True,
              help="Move these thresholds to the root of the split-line (accurate) crossing function by Newton "
                   "steps on convergence studies; alpha_c/alpha_l then carry the refined value and error "
                   "(alpha_c_method says which), the tensor ones stay as alpha_c_tensor. The tensor-rule error "
                   "bars are optimistic at small ω (ω = 0: 0.618 ± 0.012 on 8/10 nodes, refined 0.615 ± 0.0015); "
                   "about 1.5 minutes per branch study on two cores, 3-7 minutes per threshold.")
@json_option
def threshold_command(omega, omega_grid, sigma, lam, A, L, nodes_per_dim, check_nodes_per_dim, alpha_min, alpha_max,
                      n_scan, refine, as_json):
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
    nodes = (10 if L == 2 else 4) if nodes_per_dim is None else nodes_per_dim
    check_nodes = (14 if L == 2 else nodes + 2) if check_nodes_per_dim is None else check_nodes_per_dim
    if omega_grid is not None:
        from attnphase.sweep import parse_grid

        try:
            omegas = [check_parameter("omega", w) for w in parse_grid(f"omega={omega_grid}").values]
        except ParameterError as exc:
            raise ParameterError("--omega-grid", omega_grid, exc.allowed) from None
        result = named_by_option(ThresholdSearch, alpha_c_curve_split_line, omegas, sigma, lam, A, L,
                                 nodes_per_dim=nodes, alpha_min=alpha_min, alpha_max=alpha_max, n_scan=n_scan)
        parameters = {"omega_grid": omega_grid, "sigma": sigma, "lam": lam, "A": A, "L": L, "nodes": nodes,
                      "alpha_min": alpha_min, "alpha_max": alpha_max, "scan": n_scan}
        emit("threshold", MODEL, parameters, result.as_dict(), as_json)
        return

    names = {"none": (), "alpha_c": ("alpha_c",), "alpha_l": ("alpha_l",), "both": ("alpha_c", "alpha_l")}[refine]
    result = named_by_option(ThresholdSearch, find_thresholds, omega, sigma, lam, A, L, nodes_per_dim=nodes,
                             check_nodes_per_dim=check_nodes, alpha_min=alpha_min, alpha_max=alpha_max, n_scan=n_scan,
                             refine=names)
    parameters = {"omega": omega, "sigma": sigma, "lam": lam, "A": A, "L": L, "nodes": nodes,
                  "check_nodes": check_nodes, "alpha_min": alpha_min, "alpha_max": alpha_max, "scan": n_scan,
                  "refine": refine}
    emit("threshold", MODEL, parameters, result.as_dict(), as_json)


@simulate.command(MODEL, cls=RenamedOptionsCommand, renamed_options={"--seeds": "--trials"})
@omega_option
@options_from(Simulation, required=["alpha"])
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

    result = named_by_option(Simulation, simulate_network, omega=omega, alpha=alpha, d=d, init=init, trials=trials,
                             seed=seed, steps=steps, lr=lr, test_samples=test_samples, device=device, sigma=sigma,
                             lam=lam, A=A, L=L, rng=rng)
    parameters = {"omega": omega, "alpha": alpha, "d": d, "init": init, "trials": trials, "seed": seed,
                  "steps": steps, "lr": result.lr, "test_samples": test_samples, "device": result.device, "rng": rng,
                  "sigma": sigma, "lam": lam, "A": A, "L": L}
    emit("simulate", MODEL, parameters, result.as_dict(), as_json)
    if result.status == "diverged":  # printed with its message (non-finite values are null); exit 1 says it too
        raise SystemExit(1)
