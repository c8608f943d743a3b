"""Positional vs semantic learning in tied low-rank dot-product attention (Cui, Behrens, Krzakala,
Zdeborová 2024; spec positional_semantic.md).

The package, by idea:
* `symbolic`: the symbolic source (expressions of the loss, Moreau objective, conjugates, ridge part,
  free energy, baseline); `derivation`: their rendering, derivations/positional_semantic.md;
* `parameters`: `Parameters`, the model's ranges declared once;
* `state_evolution`: the compiled kernels, the proximal map and `SaddlePointEquations` (the map, Φ, ε_g);
* `branches`: invariant-set coordinates, `solve_branch`, the branch criteria and `BranchTracker`;
* `accurate`: split-line fixed points (`refine_branch`) and `convergence_study`;
* `point`: `solve`, `linear_baseline_error`, `sweep_point`, the transverse free-energy curvature;
* `thresholds`, `curve`, `spinodal`: α_c, α_l and the spinodals, at one ω and along ω;
* `results`: the result types; `network`: the finite-d simulator and its device-agreement fixtures.

Names are imported from their module on first use, so that `parameters` (all the CLI needs to build its
options) comes without SymPy, numba or torch.
"""

from importlib import import_module

_MODULES = {
    "symbolic": ("NAME", "TITLE"),
    "derivation": ("derivation_markdown",),
    "parameters": ("DEFAULT_A", "Parameters", "SolveRules", "ThresholdSearch", "Simulation", "default_gram"),
    "state_evolution": ("kernels", "proximal_map", "state_vector", "Evaluation", "SaddlePointEquations",
                        "zeta_rotation", "pitchfork_indicator"),
    "branches": ("BRANCHES", "BranchCoordinates", "BranchTracker", "initial_guess", "solve_branch", "distinct",
                 "genuine", "branch_loss"),
    "accurate": ("STATE_RULES", "ENVELOPE_RULES", "ENVELOPE_OUTER_SPLIT_NODES", "ENVELOPE_COUNT_SPLIT_NODES",
                 "ENVELOPE_COUNT_SPLIT", "ENVELOPE_COUNT_SPLIT_PROBES", "TEST_ERROR_NODES", "AccurateState",
                 "defect_correction", "refine_branch", "convergence_study"),
    "point": ("linear_baseline", "linear_baseline_error", "default_nodes_per_dim", "default_check_nodes_per_dim",
              "with_check", "solve", "sweep_point", "transverse_free_energy_curvature"),
    "thresholds": ("MEANING_C", "MEANING_L", "threshold", "alpha_c_curve"),
    "curve": ("CURVE_STATE_RULE", "CURVE_ENVELOPE_RULES", "AccurateFreeEnergy", "accurate_free_energy",
              "CurveBranchState", "curve_branch_state", "alpha_c_curve_split_line"),
    "spinodal": ("SPINODAL_DIRECTIONS", "spinodals"),
    "results": ("BranchSolution", "LinearBaseline", "SolveResult", "StateRow", "EnvelopeRow", "ConvergenceStudy",
                "Thresholds", "CurveResult", "CurveRow", "SplitLineCurve", "Spinodal", "SpinodalResult",
                "TransverseCurvature", "GDResult"),
    "network": ("AttentionProblem", "simulate"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [name for names in _MODULES.values() for name in names]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
