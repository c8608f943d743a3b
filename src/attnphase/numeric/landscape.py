"""Searches of a two-dimensional landscape tabulated on a grid: its local minima, the mountain pass between
two of them, curvatures by central differences, and averages over one well (a Laplace box).

A landscape with several minima (a free energy with coexisting phases) is searched on a grid first, so
that no minimum is missed, then each grid minimum is polished by a local method the caller supplies; the
grid also gives the barrier between two minima, as the lowest level at which their sublevel sets join.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnphase.params import check_positive, check_real

__all__ = ["grid_local_minima", "polish_and_merge", "mountain_pass", "central_hessian_2d", "BoxAverage",
           "laplace_box_average"]


def grid_local_minima(F: np.ndarray) -> np.ndarray:
    """Cells (k, 2) of a 2-d grid whose value is below all 8 neighbours (cells outside the grid count as +inf)."""
    rows, cols = F.shape
    padded = np.pad(F, 1, constant_values=np.inf)
    lower = np.ones_like(F, bool)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                lower &= F < padded[1 + di:rows + 1 + di, 1 + dj:cols + 1 + dj]
    return np.argwhere(lower)


def polish_and_merge(F: np.ndarray, polish: Callable, coordinate: Callable, separation: float) -> list:
    """Every grid minimum of F polished, minima closer than `separation` merged.

    polish(cell) -> a point (any object) for the grid minimum at `cell`; coordinate(point) -> the float that
    tells minima apart. Returns [(point, cell)]: the first point polished of each group, with the cell of the
    group's lowest grid value (where a barrier search between two minima should start).
    """
    found: list[list] = []
    for i, j in grid_local_minima(F):
        cell = (int(i), int(j))
        point = polish(cell)
        same = next((entry for entry in found if abs(coordinate(point) - coordinate(entry[0])) < separation), None)
        if same is None:
            found.append([point, cell])
        elif F[cell] < F[same[1]]:
            same[1] = cell
    return [(point, cell) for point, cell in found]


def mountain_pass(F: np.ndarray, cell_a, cell_b) -> tuple:
    """Grid cell of the lowest pass between two cells of F: the smallest level λ at which the sublevel set
    {F ≤ λ} (8-connected) joins them, by bisection over the sorted values of F (scipy.ndimage.label per step)."""
    from scipy import ndimage

    order = np.sort(F.ravel())
    structure = np.ones((3, 3), bool)
    i_lo, i_hi = int(np.searchsorted(order, max(F[cell_a], F[cell_b]))), len(order) - 1
    while i_lo < i_hi:  # invariant: level order[i_hi] joins them
        mid = (i_lo + i_hi) // 2
        labels, _ = ndimage.label(F <= order[mid], structure)
        if labels[cell_a] and labels[cell_a] == labels[cell_b]:
            i_hi = mid
        else:
            i_lo = mid + 1
    return np.unravel_index(int(np.argmin(np.abs(F - order[i_lo]))), F.shape)


def central_hessian_2d(f: Callable, x: float, y: float, dx: float, dy: float, f0: float | None = None) -> np.ndarray:
    """2×2 Hessian of f(x, y) by central differences with steps dx, dy (error O(step²) times the fourth
    derivatives; the step must stay above the rounding of f divided by the curvature). x, y finite, dx, dy > 0."""
    check_real("x", x)
    check_real("y", y)
    check_positive("dx", dx)
    check_positive("dy", dy)
    f0 = f(x, y) if f0 is None else f0
    fxx = (f(x + dx, y) - 2 * f0 + f(x - dx, y)) / dx**2
    fyy = (f(x, y + dy) - 2 * f0 + f(x, y - dy)) / dy**2
    fxy = (f(x + dx, y + dy) - f(x + dx, y - dy) - f(x - dx, y + dy) + f(x - dx, y - dy)) / (4 * dx * dy)
    return np.array([[fxx, fxy], [fxy, fyy]])


@dataclass(frozen=True)
class BoxAverage:
    """Result of `laplace_box_average`: means and variances of each observable (by name); edge_mass: the
    largest share of the weight on one outer row or column of the box (the mass beyond the box is of that
    order, so a box that holds the well has a small one); ranges: each observable's range over the points
    that carry weight (edge_mass times it bounds how far the mass beyond the box can move the mean)."""

    means: dict
    variances: dict
    edge_mass: float
    ranges: dict


def laplace_box_average(weights_and_values: Callable, centre, hessian, *, span: float, n_points: int) -> BoxAverage:
    """Averages of observables over one well of a two-dimensional density, on an n_points² box.

    The box spans ±span standard deviations along the principal axes of `hessian` (positive definite: the
    curvature of −log density at `centre`), so it adapts to a narrow or tilted well. weights_and_values(points)
    takes points (n, n, 2) and returns (log weight (n, n), {name: values (n, n)}); a log weight of −inf
    cuts a point out (e.g. beyond a saddle, to average one well alone). Equal-weight sums over the box
    (the integrand vanishes at its edges, so the rule converges fast; compare two n to estimate the error).
    """
    curvatures, axes = np.linalg.eigh(hessian)
    u = np.linspace(-span, span, n_points)
    U1, U2 = np.meshgrid(u, u, indexing="ij")
    offset = np.stack([U1, U2], -1) / np.sqrt(curvatures) @ axes.T
    log_weight, values = weights_and_values(np.asarray(centre, float) + offset)
    w = np.exp(log_weight - log_weight.max())
    w /= w.sum()
    means = {name: float((w * v).sum()) for name, v in values.items()}
    variances = {name: float((w * v**2).sum()) - means[name] ** 2 for name, v in values.items()}
    edge = max(w[0].sum(), w[-1].sum(), w[:, 0].sum(), w[:, -1].sum())
    inside = np.isfinite(log_weight)
    ranges = {name: float(np.ptp(v[inside])) for name, v in values.items()}
    return BoxAverage(means, variances, float(edge), ranges)
