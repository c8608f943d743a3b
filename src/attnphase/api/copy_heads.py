"""Public entry points of the copy-heads model (`attnphase solve|threshold|scaling|simulate copy-heads`).

A facade: everything lives in the package `attnphase.models.copy_heads` (its module docstring lists the modules),
so that `from attnphase.api import copy_heads` keeps working. P convention (default): P counts target tokens and
the loss is summed, so n = β·P (β = 1); other conventions are `Convention` fields.
"""

from __future__ import annotations

from attnphase.models.copy_heads import (  # noqa: F401  (re-exported)
    ALGORITHMS, ATTENTIONS, BOUNDARIES, CAUSAL_SOFTMAX_MAX_L, CLAIMED_LAWS, CausalLinearTransition, ClaimedLawFit,
    Convention, ConventionTable, CopyHeadsInstance, DEFAULT, DataSize, DualMeanField, ExactRowRateThreshold,
    FiniteDataCorrection, HYBRID_EXACT_MAX, HysteresisResult, JOINT_PARTICIPATION_BINS, LINEAR_SCALES,
    LOSS_REDUCTIONS, LinearTransition, MAX_SIMULATION_ENTRIES, MeanFieldWindow, Minimum, NAMED_CONVENTIONS, P_COUNTS,
    PosteriorMeans, READ_OUTS, REDUCTIONS, REMAINDERS, ROW_DENSITIES, ROW_SET_DENSITIES, ROW_SUMS, RowMeanFieldResult,
    RowMeanFieldTransition, RowModelResult, RowPosteriorMeans, ScalingRange, ScalingResult, SimulationResult,
    SimulationSettings, SoftmaxTransition, SolveResult, SweepResult, TAU_SCALES, TOKENS, ThresholdSettings,
    Transition, causal_plane_matrix, convention_table, copy_plane_matrix, default_L_values, features_and_targets,
    function_space_action, linear_posterior_means, order_parameters_of, plot_landscape, plot_order_parameters,
    plot_scaling, row_set, row_table, scaling, scaling_in_V,
    simulate, simulate_hysteresis, simulate_row_model, simulate_sweep, softmax_dual_mean_field,
    softmax_exact_prior_threshold, softmax_finite_data_correction, softmax_large_L_correction,
    softmax_mean_field_window, softmax_ratio_extrapolation, softmax_row_mean_field, softmax_row_posterior_means,
    solve, sweep_point, threshold, weight_space_action,
)

__all__ = [
    "ALGORITHMS", "ATTENTIONS", "BOUNDARIES", "CAUSAL_SOFTMAX_MAX_L", "CLAIMED_LAWS", "CausalLinearTransition",
    "ClaimedLawFit", "Convention", "ConventionTable", "CopyHeadsInstance", "DEFAULT", "DataSize", "DualMeanField",
    "ExactRowRateThreshold", "FiniteDataCorrection", "HYBRID_EXACT_MAX", "HysteresisResult",
    "JOINT_PARTICIPATION_BINS", "LINEAR_SCALES", "LOSS_REDUCTIONS", "LinearTransition", "MAX_SIMULATION_ENTRIES",
    "MeanFieldWindow", "Minimum", "NAMED_CONVENTIONS", "P_COUNTS", "PosteriorMeans", "READ_OUTS", "REDUCTIONS",
    "REMAINDERS", "ROW_DENSITIES", "ROW_SET_DENSITIES", "ROW_SUMS", "RowMeanFieldResult", "RowMeanFieldTransition",
    "RowModelResult", "RowPosteriorMeans", "ScalingRange", "ScalingResult", "SimulationResult", "SimulationSettings",
    "SoftmaxTransition", "SolveResult", "SweepResult", "TAU_SCALES", "TOKENS", "ThresholdSettings", "Transition",
    "causal_plane_matrix", "convention_table", "copy_plane_matrix", "default_L_values", "features_and_targets",
    "function_space_action", "linear_posterior_means", "order_parameters_of", "plot_landscape", "plot_order_parameters",
    "plot_scaling", "row_set", "row_table", "scaling",
    "scaling_in_V", "simulate", "simulate_hysteresis", "simulate_row_model", "simulate_sweep",
    "softmax_dual_mean_field", "softmax_exact_prior_threshold", "softmax_finite_data_correction",
    "softmax_large_L_correction", "softmax_mean_field_window", "softmax_ratio_extrapolation",
    "softmax_row_mean_field", "softmax_row_posterior_means", "solve", "sweep_point",
    "threshold", "weight_space_action",
]
