"""Frozen basins: a smooth map out of a global minimisation at quadrature nodes.

A map whose evaluation needs the GLOBAL minimiser of a non-convex objective at every quadrature node
(a proximal map) is only piecewise smooth in its argument: where two local minima exchange the role of
the global one, a node's minimiser jumps. Fixed-point solvers stall on such maps. With frozen basins
each node's minimiser is instead CONTINUED from its previous value (a local minimisation started there):
the map is smooth (and a local minimisation is cheaper than a multi-start one), and it agrees with the
global map wherever every node's continued minimiser is still the global one.

* `FrozenBasins`: the per-node starts, explicit and owned by the caller (not hidden in the map).
  `minimise(global_minimum, local_minimum)` is the frozen-basin minimisation (global the first time);
  `reset(...)` compares the continued minimisers with the global ones, resets the basins to the global
  ones and reports whether they agreed and the weight of the nodes that moved.
* `frozen_basin_rounds(...)`: rounds of (solve the frozen-basin map, reset at its solution) until the
  basins agree at the solution (a fixed point of the global map), continued while the moved weight
  keeps halving; if the assignment keeps changing (a node on a basin switch), the global map itself
  is solved from the last point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FrozenBasins", "BasinRounds", "frozen_basin_rounds"]


class FrozenBasins:
    """Per-node minimisers carried from one evaluation of a map to the next.

    weights: the quadrature weights of the nodes (for `change`); starts: (N, n) the minimisers of the
    last evaluation (None before the first); change: weight of the nodes whose basin the last `reset`
    moved (1 before any comparison). `same_tol`: two minimisers are the same basin when they differ by
    at most same_tol (1 + |x|) in every coordinate.
    """

    def __init__(self, weights: np.ndarray, same_tol: float = 1e-7):
        self.weights = np.asarray(weights, dtype=float)
        self.same_tol = same_tol
        self.starts: np.ndarray | None = None
        self.change = 1.0

    def minimise(self, global_minimum: Callable[[], Any], local_minimum: Callable[[np.ndarray], Any]):
        """The minimisers at every node: continued from the stored starts (global the first time); the
        result (an object with `.x`, (N, n)) becomes the next starts."""
        result = global_minimum() if self.starts is None else local_minimum(self.starts)
        self.starts = result.x
        return result

    def reset(self, global_minimum: Callable[[], Any], local_minimum: Callable[[np.ndarray], Any]) -> bool:
        """Set the basins to the global minimisers; return whether they already were those (every node's
        continued minimiser equals the global one), i.e. whether the frozen and the global map agree here."""
        found = global_minimum()
        same, self.change = False, 1.0
        if self.starts is not None:
            continued = local_minimum(self.starts)
            moved = np.any(np.abs(found.x - continued.x) > self.same_tol * (1 + np.abs(found.x)), axis=1)
            same, self.change = not moved.any(), float(self.weights[moved].sum())
        self.starts = found.x
        return same


@dataclass(frozen=True)
class BasinRounds:
    """Outcome of `frozen_basin_rounds`: the last solve's result, the map evaluations of all rounds
    (one per reset included), the rounds made, and whether the global map had to be solved itself."""

    result: Any
    evaluations: int
    rounds: int
    stalled: bool


def frozen_basin_rounds(solve_frozen: Callable[[Any], Any], solve_global: Callable[[Any], Any],
                        reset: Callable[[Any], bool], basins: FrozenBasins, y0, *, accept: float, rounds: int = 4,
                        max_rounds: int = 16) -> BasinRounds:
    """Solve a map built on frozen basins, resetting them at each solution until they agree there.

    solve_frozen(y) / solve_global(y): a fixed-point solve (a result with `value`, `residual`,
    `evaluations`) from y on the frozen-basin map / on the global map; reset(y): `basins.reset` at the
    state y. The basins are first reset at y0. A round whose solve fails (residual above `accept` or a
    non-finite point) ends the rounds (the failure is the result). Beyond `rounds` rounds, rounds
    continue while the weight of the reset nodes at least halves per round, up to `max_rounds`; an
    assignment that stalls (a node sitting on a basin switch) goes to the global map.
    """
    evaluations = 1
    reset(y0)
    y, stalled, made, result = y0, True, 0, None
    for made in range(1, max_rounds + 1):
        result = solve_frozen(y)
        evaluations += result.evaluations + 1
        y = result.value
        previous_change = basins.change
        if not (np.all(np.isfinite(y)) and result.residual <= accept) or reset(y):
            stalled = False  # failed (the caller reports it) or settled: a fixed point of the global map
            break
        if made >= rounds and basins.change > 0.5 * previous_change:
            break
    if stalled:
        result = solve_global(y)
        evaluations += result.evaluations
    return BasinRounds(result, evaluations, made, stalled)
