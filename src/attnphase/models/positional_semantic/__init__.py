"""Positional vs semantic learning in tied low-rank dot-product attention (Cui, Behrens, Krzakala,
Zdeborová 2024).

The package, by idea:
* `symbolic`: the symbolic source (expressions of the loss, Moreau objective, conjugates, ridge part,
  free energy, baseline); `derivation`: their rendering, derivations/positional_semantic.md;
* `parameters`: `Parameters`, the model's ranges declared once;
* `state_evolution`: the compiled kernels, the proximal map and `SaddlePointEquations` (the map, Φ, ε_g);
* `rules`: the quadrature rules as one ladder (tensor, split-line), `Rule`;
* `coordinates`: the branches' invariant sets, `BranchCoordinates`, starting points; `branch_solve`: `solve_branch`
  (one fixed point on a tensor rule) and its stability; `branches`: the criteria that say whether a solution is
  (still) the branch; `tensor_following`: `follow` (continuation in α from each branch's anchor) and `carry` (along
  a path of parameters);
* `accurate`: a branch's fixed point on each rule of the ladder, and the climb with verified errors;
* `following`: a branch followed on the first split-line rule, and where the positional branch ends there;
  `order_parameter`: the positional branch at fixed |m|, and its ends (where m reaches 0, or a fold), located at
  fixed |m|; `branch_end`: next to that end, the branch decided on the top rungs of the ladder (where the
  end lies on each);
* `point`: `solve` (every branch to a tolerance; `solve_along`: at several α on shared paths),
  `linear_baseline_error`, `sweep_point`, the transverse free-energy curvature;
* `thresholds`, `curve`, `spinodal`: α_c, α_l (to a tolerance) at one ω and along ω, and the spinodals;
  `free_energy_check`: Φ of both branches on the outer-split rules, the check of α_c;
* `results`: the result types; `plots`: the phase diagram and the order parameters as matplotlib figures;
* `network`: the finite-d simulator and its device-agreement fixtures; `comparison`: its runs held against the
  branches of `solve` (the branch a run is compared with, z and the verdict per quantity).

Names are imported from their module on first use, so that `parameters` (all the CLI needs to build its
options) comes without SymPy, numba or torch.
"""

from attnphase.lazy_exports import lazy_exports

_MODULES = {
    "symbolic": ("NAME", "TITLE"),
    "derivation": ("derivation_markdown",),
    "parameters": ("DEFAULT_A", "MAX_ALPHA", "Parameters", "Accuracy", "ThresholdSearch", "Simulation", "default_gram"),
    "state_evolution": ("kernels", "proximal_map", "state_vector", "Evaluation", "SaddlePointEquations",
                        "zeta_rotation", "pitchfork_indicator"),
    "rules": ("FIELD_TOL", "Rule", "count_line_probes", "state_ladder", "resolve_rules"),
    "coordinates": ("BRANCHES", "BranchCoordinates", "initial_guess"),
    "branch_solve": ("solve_branch",),
    "branches": ("distinct", "branch_loss"),
    "tensor_following": ("ANCHOR_ALPHA", "follow"),
    "accurate": ("FIELDS", "AccurateState", "defect_correction", "on_rule", "climb_branch"),
    "following": ("follow_on_rule",),
    "order_parameter": ("continuous_end", "fold_end"),
    "branch_end": ("top_ends", "next_to_end"),
    "point": ("DEFAULT_BRANCHES", "linear_baseline", "linear_baseline_error", "solve", "solve_along",
              "check_sweep_point", "sweep_point", "transverse_free_energy_curvature"),
    "thresholds": ("THRESHOLD_TOL", "MEANING", "threshold"),
    "free_energy_check": ("CHECK_RULES", "FURTHER_CHECK_RULES", "FreeEnergies", "CheckedGap", "outer_split_free_energies", "checked_gap"),
    "curve": ("phase_curve",),
    "plots": ("plot_phase_diagram", "plot_order_parameters"),
    "spinodal": ("SPINODAL_DIRECTIONS", "spinodals"),
    "results": ("BranchSolution", "LinearBaseline", "MissingBranch", "SolveResult", "RungThreshold", "Thresholds",
                "PhaseCurve", "Spinodal", "SpinodalResult", "TransverseCurvature", "GDResult"),
    "network": ("AttentionProblem", "simulate"),
    "comparison": ("compare_with_theory",),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)
