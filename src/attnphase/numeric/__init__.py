"""Numeric layer: Gaussian expectations, fixed points with stability, branch continuation,
thresholds polished in high precision, drift ODEs and scaling-law fits.

It receives plain callables (generated kernels) and never imports the symbolic layer. Every solver
returns a result object with values, an error estimate, a status and a message.
"""

from attnphase.numeric.branches import Branch, continue_branch
from attnphase.numeric.fixedpoint import (
    FixedPointResult,
    Identity,
    Interval,
    Positive,
    map_jacobian,
    solve_fixed_point,
)
from attnphase.numeric.gauss import (
    Expectation,
    GaussHermiteRule,
    RefinementStep,
    covariance_factor,
    gaussian_expectation,
    sobol_expectation,
)
from attnphase.numeric.minimize import MultiStartMinimum, minimize_multistart_newton
from attnphase.numeric.ode import FixedPoint, Trajectory, fixed_points_1d, integrate_drift, linear_stability
from attnphase.numeric.scaling import ScalingFit, fit_power_law
from attnphase.numeric.threshold import Threshold, bisect_increasing, branch_crossing, find_crossing

__all__ = [
    "bisect_increasing",
    "Branch",
    "continue_branch",
    "FixedPointResult",
    "Identity",
    "Interval",
    "Positive",
    "map_jacobian",
    "solve_fixed_point",
    "Expectation",
    "GaussHermiteRule",
    "RefinementStep",
    "MultiStartMinimum",
    "minimize_multistart_newton",
    "covariance_factor",
    "gaussian_expectation",
    "sobol_expectation",
    "FixedPoint",
    "Trajectory",
    "fixed_points_1d",
    "integrate_drift",
    "linear_stability",
    "ScalingFit",
    "fit_power_law",
    "Threshold",
    "branch_crossing",
    "find_crossing",
]
