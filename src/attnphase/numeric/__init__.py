"""Numeric layer: Gaussian expectations, fixed points with stability (solvers as values), frozen basins,
branch following, thresholds (polished in high precision, or on noisy crossing functions), the
convergence ladder, drift ODEs and scaling-law fits.

It receives plain callables (generated kernels) and never imports the symbolic layer. Every solver
returns a result object with values, an error estimate, a status and a message.
"""

from attnphase.numeric.basins import FrozenBasins, frozen_basin_rounds
from attnphase.numeric.branches import BranchLoss, WarmStarts, extrapolate, follow_until_lost
from attnphase.numeric.convergence import LadderResult, Rung, Tolerance, climb
from attnphase.numeric.fixedpoint import (
    Anderson,
    Broyden,
    Chain,
    Damped,
    FixedPointResult,
    Hybr,
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
from attnphase.numeric.threshold import (
    Threshold,
    bisect_increasing,
    branch_crossing,
    find_crossing,
    noisy_newton_root,
    scan_crossing,
    secant_root,
)

__all__ = [
    "bisect_increasing",
    "FrozenBasins",
    "frozen_basin_rounds",
    "BranchLoss",
    "WarmStarts",
    "extrapolate",
    "follow_until_lost",
    "LadderResult",
    "Rung",
    "Tolerance",
    "climb",
    "Anderson",
    "Broyden",
    "Chain",
    "Damped",
    "Hybr",
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
    "noisy_newton_root",
    "scan_crossing",
    "secant_root",
]
