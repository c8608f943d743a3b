"""Coordinate transforms x = T⁻¹(u) from the whole real line onto a parameter's domain.

Fixed-point solvers and continuation iterate in unconstrained coordinates u, so that an iterate never
leaves the domain of a variance (`Positive`: x = exp u) or of a normalised overlap (`Interval(a, b)`:
an atanh-type map); `Identity` for quantities without bounds. `contains(x)` says whether x lies in the
domain (finite included), `describe()` gives the domain in words.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import check_real

__all__ = ["Identity", "Positive", "Interval"]


@dataclass(frozen=True)
class Identity:
    """x = u on the whole real line."""

    def to_unconstrained(self, x):
        return np.asarray(x, dtype=float)

    def from_unconstrained(self, u):
        return np.asarray(u, dtype=float)

    def contains(self, x) -> bool:
        return bool(np.isfinite(x))

    def describe(self) -> str:
        return "(-inf, inf)"


@dataclass(frozen=True)
class Positive:
    """x = exp(u) on (0, inf): for variances and other positive quantities."""

    def to_unconstrained(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(np.asarray(x, dtype=float))

    def from_unconstrained(self, u):
        with np.errstate(over="ignore"):
            return np.exp(np.asarray(u, dtype=float))

    def contains(self, x) -> bool:
        return bool(np.isfinite(x) and x > 0)

    def describe(self) -> str:
        return "(0, inf)"


@dataclass(frozen=True)
class Interval:
    """x = a + (b - a) (1 + tanh u) / 2 on the open interval (a, b): for overlaps and correlations."""

    low: float
    high: float

    def __post_init__(self):
        low = check_real("Interval.low", self.low)
        high = check_real("Interval.high", self.high)
        if not high > low:
            raise ParameterError("Interval.high", self.high, f"greater than low = {low}")

    def to_unconstrained(self, x):
        s = 2.0 * (np.asarray(x, dtype=float) - self.low) / (self.high - self.low) - 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.arctanh(s)

    def from_unconstrained(self, u):
        return self.low + (self.high - self.low) * 0.5 * (1.0 + np.tanh(np.asarray(u, dtype=float)))

    def contains(self, x) -> bool:
        return bool(np.isfinite(x) and self.low < x < self.high)

    def describe(self) -> str:
        return f"({self.low:g}, {self.high:g})"
