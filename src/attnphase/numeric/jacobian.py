"""Jacobians of a map by finite differences, and how far their noise moves the spectrum.

`map_jacobian` (central differences, one-sided at a domain boundary) gives the spectrum that decides a fixed
point's stability; `spectral_radius_error` bounds how far the noise of those differences can move it;
`forward_difference_jacobian` is the cheap start of Broyden's method for noisy maps.
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.numeric.transforms import Identity
from attnphase.numeric.wrapped_map import SolverStop, WrappedMap
from attnphase.results import Status

__all__ = ["central_difference_steps", "map_jacobian", "forward_difference_jacobian", "spectral_radius_error"]


def central_difference_steps(x) -> np.ndarray:
    """map_jacobian's step per coordinate, eps^(1/3) max(1, |x_j|): it balances the O(h²) truncation of the
    central difference against F's rounding over h."""
    return np.finfo(float).eps ** (1 / 3) * np.maximum(1.0, np.abs(np.asarray(x, dtype=float)))


def map_jacobian(F, x, *, transforms=None, step: float | None = None) -> tuple[np.ndarray, int]:
    """dF/dx at x by finite differences in the original coordinates; returns (J, evaluations).

    Central differences (error O(h^2), h = eps^(1/3) max(1, |x_j|)) where x_j +- h stay in the domain
    of the transforms and F is finite there; otherwise the second-order one-sided stencil
    (-3 F(x) + 4 F(x + h) - F(x + 2h)) / 2h towards the side that works (e.g. a fixed point on the
    boundary of a domain, like m = 0 of a map that contains sqrt(m)). Raises SolverStop if neither works.
    """
    x = np.asarray(x, dtype=float)
    shape = x.shape
    flat = x.ravel()
    n = flat.size
    transforms = transforms or [Identity()] * n
    problem = WrappedMap(F, shape, transforms)
    f0 = problem.call(flat)
    J = np.empty((n, n))
    steps = np.full(n, step, dtype=float) if step is not None else central_difference_steps(flat)
    for j in range(n):
        h = float(steps[j])

        def at(offset, j=j):
            xs = flat.copy()
            xs[j] += offset
            if not transforms[j].contains(xs[j]) and not isinstance(transforms[j], Identity):
                return None
            try:
                return problem.call(xs)
            except SolverStop:
                return None

        plus, minus = at(h), at(-h)
        if plus is not None and minus is not None:
            J[:, j] = (plus - minus) / (2 * h)
            continue
        for sign, first in ((1.0, plus), (-1.0, minus)):
            if first is None:
                continue
            second = at(2 * sign * h)
            if second is not None:
                J[:, j] = sign * (-3 * f0 + 4 * first - second) / (2 * h)
                break
        else:
            raise SolverStop(Status.FAILED, f"no finite-difference stencil for coordinate {j} stays where F is finite")
    return J, problem.evaluations


def forward_difference_jacobian(F, x, f0, relative_step: float = 1e-2, floor: float = 0.1) -> np.ndarray:
    """Forward differences (F(x + h_j e_j) − f0)/h_j with h_j = relative_step · max(|x_j|, floor).

    For maps with quadrature noise far below a 1% change (a central difference with the rounding-optimal
    eps^(1/3) step would differentiate the noise): accurate to O(relative_step), enough to start
    Broyden's method, whose updates remove the rest. f0 = F(x); the floor keeps the step finite for
    coordinates at or near zero.
    """
    x = np.asarray(x, dtype=float)
    n = len(x)
    J = np.empty((n, n))
    for j in range(n):
        h = relative_step * max(abs(x[j]), floor)
        up = x.copy()
        up[j] += h
        J[:, j] = (F(up) - f0) / h
    return J


# The rounding error assumed for one evaluation of F, in units of eps times its largest coordinate (a few
# operations per coordinate; a map computed with heavy cancellation should declare the rest as map_error).
F_ROUNDING_ULPS = 16.0
# The largest stencil coefficient sum over 2h of map_jacobian's difference rules (one-sided: (3 + 4 + 1) / 2).
STENCIL_GAIN = 4.0


def spectral_radius_error(J: np.ndarray, eigenvectors: np.ndarray, x: np.ndarray, residual: float, map_error: float,
                           finite_differences: bool) -> float:
    """How far the noise δJ in J can move its eigenvalues: the smaller of Bauer-Fike's cond(V) ‖δJ‖ (V: J's
    eigenvectors; huge for a nearly defective J) and Elsner's (2‖J‖ + ‖δJ‖)^(1 − 1/n) ‖δJ‖^(1/n) (any J; the
    square root of the noise for a 2 × 2 Jordan block), with ‖δJ‖ bounded through its largest entry.

    With finite differences (map_jacobian's step h_j, central_difference_steps) every entry of column j carries
    the noise of F at the stencil's points, F_ROUNDING_ULPS eps (max|x| + residual + ‖J‖ h_j) + map_error (F is x
    to the residual at the fixed point, and moves by ‖J‖ h_j over the stencil), times STENCIL_GAIN / h_j;
    the O(h²) truncation of the stencils is not included. A supplied Jacobian is taken to be exact to rounding."""
    eps, tiny = np.finfo(float).eps, np.finfo(float).smallest_subnormal  # (subnormal spacing: the floor of rounding)
    n = J.shape[0]
    largest = float(np.abs(J).max())
    if finite_differences:
        steps = central_difference_steps(x)
        noise = F_ROUNDING_ULPS * (eps * (float(np.max(np.abs(x))) + residual + largest * steps) + tiny) + map_error
        entry = float(np.max(STENCIL_GAIN * noise / steps))
    else:
        entry = F_ROUNDING_ULPS * (eps * largest + tiny)
    perturbation = n * entry  # ‖δJ‖₂ ≤ ‖δJ‖_F ≤ n max|δJ_ij| (no squares to underflow)
    norm = n * largest
    elsner = (2 * norm + perturbation) ** (1 - 1 / n) * perturbation ** (1 / n)
    with np.errstate(all="ignore"):
        condition = float(np.linalg.cond(eigenvectors))
    return min(condition * perturbation, elsner) if math.isfinite(condition) else elsner
