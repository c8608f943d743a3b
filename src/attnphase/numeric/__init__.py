"""Numeric layer: Gaussian expectations, fixed points with stability (solvers as values), frozen basins,
branch following and continuation in a control parameter, the classification of transitions, thresholds
(polished in high precision, on noisy crossing functions, counts, windows and folds) and the digits their
errors support, the convergence ladder, landscapes and mountain passes, tilted (Legendre) ensembles, MCMC
diagnostics, drift ODEs and scaling-law fits.

It receives plain callables (generated kernels) and never imports the symbolic layer. Every solver a model
calls as an entry point returns a result object with values, an error estimate, a status and a message; the
steps inside solvers (a Newton correction, a stability check, a pattern search's maximum) return plain values
to the solver that called them.

Every public name of the modules below is available here (`from attnphase.numeric import climb`); each
is imported from its module on first use, so `import attnphase.numeric` costs nothing and a program that
uses one solver does not load SciPy's integrators, mpmath or the others.
"""

from __future__ import annotations

from attnphase.lazy_exports import lazy_exports

_MODULES = {
    "basins": ("FrozenBasins", "BasinRounds", "frozen_basin_rounds"),
    "branches": ("BEYOND_STEPS", "extrapolate", "WarmStarts", "BranchLoss", "follow_until_lost", "FollowedBranch"),
    # the stationary systems are defined in `stationary_systems` (continuation re-exports them)
    "stationary_systems": ("StationarySystem", "ActionSystem", "FunctionSystem"),
    "continuation": ("ContinuationSettings", "Singularity", "StationaryBranch", "stationary_point",
                     "continue_in_control", "follow_branch", "follow_branches"),
    "points_on_branches": ("stationary_points_at",),
    "convergence": ("Rung", "Tolerance", "LadderResult", "climb", "drift_tail"),
    # the coordinate transforms are defined in `transforms` (fixedpoint re-exports them)
    "transforms": ("Identity", "Positive", "Interval"),
    # the solvers are defined in `fixedpoint_solvers` (fixedpoint re-exports them)
    "fixedpoint_solvers": ("Damped", "Anderson", "Hybr", "Broyden", "Chain", "run_solver"),
    "fixedpoint": ("FixedPointResult", "LastEvaluation", "solve_fixed_point"),
    "jacobian": ("central_difference_steps", "map_jacobian", "forward_difference_jacobian", "spectral_radius_error"),
    "wrapped_map": ("SolverStop", "WrappedMap"),
    "refinement_error": ("next_nodes", "tail_estimate"),
    "expectation": ("Expectation", "RefinementStep", "covariance_factor"),
    "gauss": ("GaussHermiteRule", "gaussian_expectation", "default_min_nodes_per_dim", "default_max_nodes_per_dim",
              "tensor_rule", "pruned_tensor_rule"),
    "sobol": ("sobol_expectation",),
    "split_line": ("SplitLineRule", "OuterSplit", "SplitLineExpectation", "split_line_expectation",
                   "OUTER_WEIGHT_FLOOR"),
    "basin_lines": ("LineIntegrals", "line_integrals", "integrals_in_blocks", "detect_switches", "normal_density",
                    "FOLD_GAP", "LINE_CUTS"),
    "basin_planes": ("CountSplit", "plane_integrals"),
    "concurrent": ("map_side_by_side",),
    "blas_threads": ("one_blas_thread",),
    "reflections": ("Reflection", "ReflectionGroup", "orbit_rule", "fold_orbits"),
    "landscape": ("grid_local_minima", "polish_and_merge", "mountain_pass", "central_hessian_2d", "BoxAverage",
                  "laplace_box_average"),
    "heavy_tails": ("heavy_tailed_mean",),
    "mcmc": ("ChainSummary", "RHAT_MAX", "ESS_MIN_PER_CHAIN", "as_chains", "split_chains", "rank_normalize",
             "autocovariance", "split_rhat", "effective_sample_size", "integrated_autocorrelation_time", "mcse_mean",
             "batch_means_sem", "summarize_chains"),
    "metropolis": ("MetropolisMeans", "metropolis_means"),
    "minimize": ("MultiStartMinimum", "minimize_multistart_newton", "first_lowest", "symmetric_eigen", "LocalMinima",
                 "multistart_local_minima", "sign_change_brackets", "bracketed_roots", "DIP_REFINEMENTS", "MAX_DIPS",
                 "refined_at_dips", "log_pattern_search"),
    "ode": ("Trajectory", "FixedPoint", "integrate_drift", "fixed_points_1d", "linear_stability"),
    "mp_descent": ("MAX_STEPS", "STEP_TOLERANCE", "Descent", "descend", "action_error"),
    "precision": ("GUARD_DIGITS", "DERIVED_ROUNDING", "working_dps", "to_mp", "agreed_evaluation", "newton_steps_mp",
                  "polished_stationary_point", "scaled_lowest_curvature_2x2",
                  "normalised_min_eigenvalue",
                  "normalised_min_eigenvalue_mp", "larger_quadratic_root", "larger_quadratic_root_mp", "equilibration",
                  "equilibrated_solve", "equilibrated_null_vector", "equilibrated_determinant_sign",
                  "propagated_errors", "float_error", "as_float_with_error", "float_at_least"),
    "scaling": ("ScalingFit", "fit_power_law", "EXPONENT_RESOLUTION", "exponent_verdict", "LawFit", "law_fit",
                "asymptotic_count", "remaining_drift"),
    "digits": ("FLOAT64_DIGITS", "supported_digits", "digits_text", "digit_string", "error_rounded_up",
               "error_significant_up", "beyond_float64"),
    "threshold": ("Threshold", "find_crossing", "branch_crossing", "rounded_error", "noisy_threshold",
                  "root_steps", "illinois", "threshold_from_error", "log_crossing", "bisect_geometric",
                  "window_and_coexistence"),
    "singular_points": ("solve_fold", "fold_threshold", "solve_branch_point", "branch_point_threshold"),
    "tilting": ("Tilted", "tilt"),
    "transition": ("SCAN_INTERVALS", "MinimumSegment", "Transition", "minimum_segments", "classify_transition"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)
