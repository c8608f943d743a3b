"""Frozen basins (numeric.basins) on a family of double wells with a known switching point.

At each node z the objective f(x) = (x² − 1)² + s x, s = z + y, has two local minima near ±1; the global
one is near −sign(s), so a node's global minimiser jumps when s changes sign. A map built on the global
minimisers is discontinuous there; built on continued (frozen) minimisers it is smooth.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from attnphase.numeric.basins import FrozenBasins, frozen_basin_rounds
from attnphase.numeric.fixedpoint import Hybr, solve_fixed_point

Z = np.array([-1.0, -0.5, 0.5, 1.0])
W = np.array([0.1, 0.4, 0.4, 0.1])


def local_minimum(shift, starts):
    """Newton from `starts` on f = (x² − 1)² + shift·x (converged to rounding in 40 steps near the wells)."""
    x = np.array(starts, float).ravel()
    for _ in range(40):
        x = x - (4 * x * (x * x - 1) + shift) / (12 * x * x - 4)
    return SimpleNamespace(x=x[:, None])


def global_minimum(shift):
    candidates = [local_minimum(shift, np.full(len(shift), s)).x[:, 0] for s in (-1.2, 1.2)]
    values = [(c * c - 1) ** 2 + shift * c for c in candidates]
    return SimpleNamespace(x=np.where(values[0] <= values[1], candidates[0], candidates[1])[:, None])


def minimisers_at(y):
    shift = Z + y
    return (lambda: global_minimum(shift)), (lambda starts: local_minimum(shift, starts))


def test_continued_minimisers_stay_in_their_basin_and_reset_reports_the_moved_weight():
    basins = FrozenBasins(W)
    first = basins.minimise(*minimisers_at(0.0))  # global the first time: x ≈ −sign(z)
    np.testing.assert_array_equal(np.sign(first.x[:, 0]), -np.sign(Z))
    continued = basins.minimise(*minimisers_at(0.7))  # z = −0.5 now has s = 0.2 > 0, but stays near +1
    assert continued.x[1, 0] > 0.9 and global_minimum(Z + 0.7).x[1, 0] < -0.9
    assert basins.reset(*minimisers_at(0.7)) is False
    assert basins.change == W[1]  # the one node whose global minimum moved basin
    assert basins.reset(*minimisers_at(0.7)) is True and basins.change == 0.0


def test_rounds_end_at_a_fixed_point_of_the_global_map():
    """y = F(y) = 0.3 − 0.6 E[x*(z + y)] from y = −1.2, where every node sits in the well near +1: the
    frozen-basin solve, reset at its solution until the basins agree (two nodes change well on the way),
    ends at a fixed point of the map on GLOBAL minimisers (checked without any basins)."""
    basins = FrozenBasins(W)

    def mean_minimiser(result):
        return float(W @ result.x[:, 0])

    def frozen(y):
        return 0.3 - 0.6 * mean_minimiser(basins.minimise(*minimisers_at(y)))

    def global_map(y):
        return 0.3 - 0.6 * mean_minimiser(global_minimum(Z + y))

    rounds = frozen_basin_rounds(lambda y: solve_fixed_point(frozen, y, Hybr(), spectrum=False),
                                 lambda y: solve_fixed_point(global_map, y, Hybr(), spectrum=False),
                                 lambda y: basins.reset(*minimisers_at(y)), basins, -1.2, accept=1e-10)
    y = rounds.result.value
    assert rounds.result.success and not rounds.stalled and rounds.rounds >= 2  # the start's basins were wrong
    assert abs(global_map(y) - y) <= 1e-10
    assert basins.reset(*minimisers_at(y)) is True
