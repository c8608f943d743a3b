"""Result types of the softmax row mean field (`row_mean_field`, `row_posterior`): its stationary points, barriers,
windows and wells, and the posterior means and finite-data corrections built on them (frozen dataclasses on
`attnphase.results.Result`, as in `results`)."""

from __future__ import annotations

from dataclasses import dataclass

from attnphase.results import Result, Status

__all__ = ["MeanFieldPoint", "Barrier", "RowMeanFieldResult", "MeanFieldMinima", "DualMeanField", "WindowScanPoint",
           "MeanFieldWindow", "Well", "RowPosteriorMeans", "CorrectedWell", "FiniteDataCorrection"]


@dataclass(frozen=True)
class MeanFieldPoint:
    """A stationary point of the row mean field: copy strength c, row averages m and q, the free energy F
    with the first-order error of its Sobol tables, the tilts (h, g) that realise it; at_grid_edge: polished onto
    the dual grid's far edge; cell: its dual-grid cell; resolved (saddles): solved exactly as a stationary point
    of F̃ with one negative curvature (else the grid's pass, an upper bound up to the grid error)."""

    c: float
    m: float
    q: float
    free_energy: float
    free_energy_error: float
    h: float
    g: float
    at_grid_edge: bool = False
    cell: tuple = ()
    resolved: bool = True


@dataclass(frozen=True)
class Barrier:
    """The rise of F from two neighbouring minima to the mountain-pass saddle between them (units of the Bayesian
    temperature), the saddle's m and c, and the error from the row densities' Sobol tables."""

    from_uniform_side: float
    from_copy_side: float
    saddle_m: float
    saddle_c: float
    resolved: bool
    error: float


@dataclass(frozen=True)
class RowMeanFieldResult(Result):
    """Stationary points of the row mean-field free energy F(m, q) = T Λ̄*(m, q) + S_data(m, q) at one P (softmax).

    minima: every local minimum (`MeanFieldPoint`), by increasing c; maxima: the mountain-pass saddle between each
    pair of neighbouring minima; barriers: for each neighbouring pair; outer_barrier: between the first and the
    last minimum (None with one minimum). n_grid, extent: the dual-plane grid searched (h ∈ [0, H], g ∈ [−G, 0]).
    """

    L: int
    V: int
    P: float
    n: float
    row_density: str
    n_grid: int
    extent: tuple
    minima: tuple
    maxima: tuple
    barriers: tuple
    outer_barrier: Barrier | None
    status: Status
    message: str


@dataclass(frozen=True)
class MeanFieldMinima:
    """Every minimum of the row mean field at one P of a dual-plane scan."""

    P: float
    n_minima: int
    c_global: float
    minima: tuple


@dataclass(frozen=True)
class DualMeanField(Result):
    """Minima of the row mean-field free energy found on one dual-plane grid, for several P (`points`)."""

    L: int
    V: int
    row_density: str
    extent: tuple
    n_grid: int
    points: tuple
    status: Status
    message: str


@dataclass(frozen=True)
class WindowScanPoint:
    P: float
    P_over_P_star_homogeneous: float
    n_minima: int
    c_minima: tuple
    barriers: tuple
    c_global: float


@dataclass(frozen=True)
class MeanFieldWindow(Result):
    """Where the row mean field has two minima, against the homogeneous action's window.

    order: "first" (a window of two minima) or "continuous"; window: its ends in P (None when continuous),
    window_resolution: relative resolution of the ends; P_coexistence: equal depths; barrier: there;
    steepest_P, steepest_jump_per_step: where the global c rises most (continuous onset).
    homogeneous_*: the homogeneous action's P*, spinodals and order."""

    L: int
    V: int
    row_density: str
    homogeneous_P_star: float
    homogeneous_spinodals: tuple | None
    homogeneous_order: str
    scan: tuple
    order: str
    window: tuple | None
    window_resolution: float | None
    P_coexistence: float | None
    barrier: Barrier | None
    steepest_P: float | None
    steepest_jump_per_step: float | None
    status: Status
    message: str


@dataclass(frozen=True)
class Well:
    """Means over one well of the row mean field's posterior (mode = the minimum of F, of free energy F there); error:
    quadrature error of c_mean (full against half the grid points) plus the mass beyond the box; edge_weight: that
    mass times the range of c over the box. loss_gibbs_mean: the posterior mean of the Gibbs test loss per position
    (the loss of a read-out drawn from its posterior at each (m, q)), with its error taken the same way."""

    c_mode: float
    c_mean: float
    c_sd: float
    q_mode: float
    q_mean: float
    m_mean: float
    error: float
    edge_weight: float
    free_energy: float
    loss_gibbs_mean: float
    loss_gibbs_error: float


@dataclass(frozen=True)
class RowPosteriorMeans(Result):
    """Means of the order parameters over each well of the row mean field's posterior, by increasing c. Means are
    NaN, and status not_convex, for a minimum where the finite-difference Hessian of F̃ is not positive."""

    L: int
    V: int
    P: float
    row_density: str
    wells: tuple
    status: Status
    message: str


@dataclass(frozen=True)
class CorrectedWell:
    """A minimum of F continued to the minimum of F + ΔF nearby (one finite data set to second order)."""

    c_mean_field: float
    c_corrected: float
    shift: float
    delta_F: float
    h: float
    g: float
    converged: bool


@dataclass(frozen=True)
class FiniteDataCorrection(Result):
    """Minima of F + ΔF, one per minimum of the row mean field F, by increasing c; sequences: N_s."""

    L: int
    V: int
    P: float
    sequences: float
    row_density: str
    wells: tuple
    status: Status
    message: str
