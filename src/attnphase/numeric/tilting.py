"""Exponential tilting of tabulated densities: log-partition (cumulant) functions and tilted means.

A density tabulated on atoms x (log weights ln p(x) + ln Δx, one table per row r) tilted by fields
θ_k times features φ_k(x) has the log-partition function Λ(θ) = ln Σ_x exp(ln p(x) + Σ_k θ_k φ_k(x)) and
the tilted means E_θ[v] = Σ_x v(x) e^{...}/e^{Λ}. These are the building blocks of Cramér (large-deviation)
rate functions: Λ* is the Legendre transform of Λ, and ∇Λ = E_θ[φ].

`tilt` evaluates one exponential pass over a (tilts, rows, atoms) array, vectorised over any leading shape
of the fields, with the log-sum-exp taken by hand so that the same pass serves the normaliser and every
tilted mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Tilted", "tilt"]


@dataclass(frozen=True)
class Tilted:
    """Tilted densities of `tilt`: log_partition (..., R), Λ per row; `mean(values)` the tilted mean per row.

    weights (..., R, X) are exp(exponent − max) (unnormalised), normaliser (..., R) their sums.
    """

    log_partition: np.ndarray
    weights: np.ndarray
    normaliser: np.ndarray

    def mean(self, values: np.ndarray) -> np.ndarray:
        """E_θ[values] per row; values (R, X) (one per atom) -> (..., R)."""
        return np.einsum("...rx,rx->...r", self.weights, values) / self.normaliser


def tilt(log_weight: np.ndarray, *terms) -> Tilted:
    """The densities exp(log_weight) (R, X) tilted by Σ_k field_k φ_k for terms = (field_1, φ_1, field_2, φ_2, ...):
    fields of any common shape (...) (one tilt each), features (R, X). The exponent is summed in the order
    given; the exponential overwrites the exponent array in place (this is the inner loop of a row mean
    field, where scipy's logsumexp would cost three passes over the array)."""
    exponent = log_weight
    for field, feature in zip(terms[::2], terms[1::2]):
        exponent = exponent + np.asarray(field, float)[..., None, None] * feature
    if exponent is log_weight:  # no tilt: work on a copy, never on the caller's table
        exponent = np.array(log_weight, float)
    top = exponent.max(axis=-1, keepdims=True)
    np.subtract(exponent, top, out=exponent)
    np.exp(exponent, out=exponent)
    normaliser = exponent.sum(-1)
    return Tilted(top[..., 0] + np.log(normaliser), exponent, normaliser)
