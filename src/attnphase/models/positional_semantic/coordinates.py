"""The model's branches and their invariant sets: the coordinates a branch is solved in, and its starting point.

positional: θ = 0, m ≠ 0; semantic: m = 0, θ ≠ 0; trivial: m = θ = 0; mixed: both non-zero. θ = 0 and
m = 0 are exact invariant sets of the map (for every A and G_p, see Parameters.swap_symmetric), so each
pure branch is solved inside its set, in reduced coordinates (`BranchCoordinates`), from `initial_guess` where
nothing better is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.state_evolution import state_vector
from attnphase.numeric.fixedpoint import Identity, Interval, Positive
from attnphase.params import check_choice

__all__ = ["BRANCHES", "BranchCoordinates", "initial_guess"]

BRANCHES = ("positional", "semantic", "trivial", "mixed")


@dataclass(frozen=True)
class BranchCoordinates:
    """Reduced coordinates of a branch inside its invariant set, and the map restricted to it.

    positional: (q, V, m_1..m_L) with θ = 0;  semantic: (q, V, c) with m = 0 and θ = c √(ρ q);
    trivial: (q, V) with m = θ = 0;  mixed: (q, V, c, m_1..m_L). The normalised overlap c = θ/√(ρq)
    lives in (−1, 1) (V* > 0), iterated through an atanh-type transform; q, V through log.
    """

    branch: str
    params: Parameters
    has_c: bool = field(init=False)
    has_m: bool = field(init=False)
    transforms: tuple = field(init=False, repr=False)

    def __post_init__(self):
        check_choice("branch", self.branch, BRANCHES)
        has_c, has_m = self.branch in ("semantic", "mixed"), self.branch in ("positional", "mixed")
        object.__setattr__(self, "has_c", has_c)
        object.__setattr__(self, "has_m", has_m)
        object.__setattr__(self, "transforms", (Positive(), Positive()) + ((Interval(-1.0, 1.0),) if has_c else ())
                           + ((Identity(),) * self.params.L if has_m else ()))

    def to_state(self, y) -> np.ndarray:
        y = np.asarray(y, float)
        L, rho = self.params.L, self.params.rho
        q, V = y[0], y[1]
        c = y[2] if self.has_c else 0.0
        m = y[2 + self.has_c:2 + self.has_c + L] if self.has_m else np.zeros(L)
        return state_vector(q, V, c * math.sqrt(rho * q), m)

    def from_state(self, x) -> np.ndarray:
        L, rho = self.params.L, self.params.rho
        q, V, theta, m = x[0], x[1], x[2], x[3:3 + L]
        c = theta / math.sqrt(rho * q) if q > 0 else math.nan  # a state past q = 0 lies outside every branch
        out = [q, V] + ([c] if self.has_c else []) + (list(m) if self.has_m else [])
        return np.array(out, float)

    def contains(self, y) -> bool:
        """Whether reduced coordinates y lie in the branch's domain (q, V > 0, |c| < 1, all finite)."""
        return all(t.contains(v) for t, v in zip(self.transforms, y))

    def restricted_map(self, next_state):
        """y -> F(y) in reduced coordinates, for next_state: x -> F(x) (e.g. `equations`, or
        `lambda x: equations.evaluate(x, basins).next`); NaN where the map leaves q > 0, |c| < 1."""
        def F(y):
            try:
                return self.from_state(next_state(self.to_state(y)))
            except ParameterError:  # the map left q > 0, |c| < 1: report it as a divergence
                return np.full(len(y), np.nan)
        return F


def initial_guess(branch: str, params: Parameters) -> np.ndarray:
    """A starting state inside the branch's invariant set (reduced coordinates)."""
    m = 0.3 * params.gram_matrix[0]  # along the first encoding's Gram row
    V = params.sigma**2 / (params.lam + params.sigma**2)
    guesses = {
        "positional": [0.05, V, *m],
        "semantic": [0.2, V, 0.8],
        "trivial": [0.01, V],
        "mixed": [0.1, V, 0.5, *m],
    }
    return np.array(guesses[branch], float)
