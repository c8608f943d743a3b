"""The copy-heads model (docs/models/copy_heads.md): Bayesian theory of copy-head emergence, softmax against linear
attention, and the real one-head network that validates it.

Modules: `symbolic` (the expressions) and `derivation` (rendered), `kernels` (compiled, called by name),
`convention` and `parameters` (declared inputs), `instance` (one validated instance with its bound kernels),
`exact` (the exact finite-P action, order parameters, row integrands), `homogeneous` (minima, `solve`),
`softmax_transition`, `linear_transition` and `linear_branches` (its followed branches), `causal` (one row sum per
row), `thresholds` (`threshold`), `scaling_laws`, `law_verdicts` (the verdict on the softmax L ln²L claim),
`fluctuations`, `row_tables`,
`row_mean_field`, `row_posterior`, `network` and `samplers` (the real network on `validate.mala`), `simulation`,
`chain_statistics` (the draws' means, errors and diagnostics), `results`, `row_mean_field_results` and
`simulation_results`, `plots` (figures).

The public names below are imported on first use (module `__getattr__`), so that importing the package (the
CLI builds its options from `convention` and `parameters`) does not import SymPy or torch.
"""

from __future__ import annotations

import importlib

_MODULES = {
    "convention": ["BOUNDARIES", "P_COUNTS", "LOSS_REDUCTIONS", "TAU_SCALES", "LINEAR_SCALES", "REMAINDERS", "TOKENS",
                   "READ_OUTS", "ROW_SUMS", "Convention", "DEFAULT"],
    "parameters": ["ATTENTIONS", "REDUCTIONS", "ALGORITHMS", "DataSize", "ThresholdSettings", "ScalingRange",
                   "SimulationSettings"],
    "instance": ["CopyHeadsInstance"],
    "results": ["Minimum", "SolveResult", "Transition", "SoftmaxTransition", "LinearTransition",
                "CausalLinearTransition", "RowMeanFieldTransition", "ExactRowRateThreshold", "ClaimedLawFit",
                "ScalingResult", "ConventionTable", "PosteriorMeans"],
    "row_mean_field_results": ["RowMeanFieldResult", "DualMeanField", "MeanFieldWindow", "RowPosteriorMeans",
                               "FiniteDataCorrection"],
    "simulation_results": ["SimulationResult", "SweepResult", "HysteresisResult", "RowModelResult"],
    "exact": ["weight_space_action", "function_space_action", "order_parameters_of", "copy_plane_matrix",
              "causal_plane_matrix", "features_and_targets"],
    "homogeneous": ["solve"],
    "thresholds": ["threshold"],
    "softmax_transition": ["softmax_exact_prior_threshold"],
    "scaling_laws": ["CLAIMED_LAWS", "NAMED_CONVENTIONS", "scaling", "scaling_in_V", "convention_table", "default_L_values",
                "softmax_large_L_correction", "softmax_ratio_extrapolation"],
    "fluctuations": ["linear_posterior_means"],
    "row_tables": ["ROW_DENSITIES", "ROW_SET_DENSITIES", "JOINT_PARTICIPATION_BINS", "HYBRID_EXACT_MAX", "row_table",
                   "row_set"],
    "row_mean_field": ["CAUSAL_SOFTMAX_MAX_L", "softmax_row_mean_field", "softmax_mean_field_window",
                       "softmax_dual_mean_field"],
    "row_posterior": ["softmax_row_posterior_means", "softmax_finite_data_correction"],
    "plots": ["plot_landscape", "plot_order_parameters", "plot_scaling"],
    "simulation": ["MAX_SIMULATION_ENTRIES", "simulate", "simulate_row_model"],
    "batched_simulation": ["simulate_sweep", "simulate_hysteresis"],
    "sweep_points": ["check_sweep_point", "sweep_point"],
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
