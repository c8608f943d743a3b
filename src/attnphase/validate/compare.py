"""Theory against simulation: one record per compared quantity.

Agreement means |mean − theory| ≤ n_sigma · sqrt(sem² + theory_error²), where sem is the standard
error of the simulation mean over independent trials. With a single trial there is no spread to
compare against, so the record says it cannot decide (`agrees` is None) rather than guessing.

A Markov chain's samples are correlated; `batch_means` turns a chain into the means of consecutive
batches, which are nearly independent when the batches are long compared with the autocorrelation time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import check_positive, check_real

__all__ = ["Comparison", "compare", "verdict_of", "batch_means"]


@dataclass(frozen=True)
class Comparison:
    name: str
    theory: float
    theory_error: float
    mean: float
    std: float
    sem: float
    n: int
    z: float | None
    agrees: bool | None
    n_sigma: float

    def summary(self) -> str:
        verdict = {True: "agrees", False: "DISAGREES", None: "undecided"}[self.agrees]
        return (
            f"{self.name}: theory {self.theory:.6g} ± {self.theory_error:.2g}, simulation "
            f"{self.mean:.6g} ± {self.sem:.2g} (std {self.std:.2g}, n={self.n}) -> {verdict}"
        )


def verdict_of(comparisons) -> bool | None:
    """The verdict of several comparisons on one theory: False when any rejects it, True when every one agrees, None
    otherwise (no comparison, or no verdict on some and no rejection: never True while a quantity is unresolved)."""
    verdicts = [c.agrees for c in comparisons]
    if any(v is False for v in verdicts):
        return False
    return True if verdicts and all(v is True for v in verdicts) else None


def compare(
    name: str, theory: float, samples, *, theory_error: float = 0.0, n_sigma: float = 3.0
) -> Comparison:
    """Compare a theory value (with its own error) with independent simulation samples."""
    theory = check_real(f"{name} theory", theory)
    theory_error = check_real(f"{name} theory_error", theory_error, 0.0)
    n_sigma = check_positive("n_sigma", n_sigma)
    values = np.asarray(samples, dtype=float).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ParameterError(f"{name} samples", samples, "a non-empty array of finite numbers")
    n = int(values.size)
    mean = float(values.mean())
    std = float(values.std(ddof=1)) if n > 1 else 0.0
    sem = std / math.sqrt(n) if n > 1 else 0.0
    scale = math.hypot(sem, theory_error)
    if n < 2:
        z, agrees = None, None
    elif scale == 0.0:
        z, agrees = None, mean == theory
    else:
        z = (mean - theory) / scale
        agrees = abs(z) <= n_sigma
    return Comparison(name, theory, theory_error, mean, std, sem, n, z, agrees, n_sigma)


def batch_means(x: np.ndarray, n_batches: int = 10) -> np.ndarray:
    """Means of `n_batches` consecutive batches along the last axis of a chain (..., S) (fewer when S is
    smaller; the last S mod n_batches samples are left out so that every batch has the same length)."""
    S = x.shape[-1]
    nb = max(1, min(n_batches, S))
    usable = (S // nb) * nb
    return x[..., :usable].reshape(x.shape[:-1] + (nb, usable // nb)).mean(-1)
