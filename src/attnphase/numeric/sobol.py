"""Gaussian expectations from scrambled Sobol points mapped through the normal inverse CDF, for integrands with kinks
or jumps where Gauss-Hermite (`numeric.gauss`) converges only algebraically.

The points are fixed across calls (cached by dimension, size and seed), so a fixed-point map built on them is a
deterministic, smooth-in-the-parameters function; the error is the standard error over independently scrambled
replicates. `gaussian_expectation(..., method="sobol")` refines through 2^10, 2^12, ... points per replicate
(`adaptive_sobol`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from attnphase.errors import ParameterError
from attnphase.numeric.expectation import (
    Expectation, RefinementStep, as_output, covariance_factor, evaluate_integrand, nonfinite_message,
)
from attnphase.params import check_int

__all__ = ["sobol_expectation"]


@functools.lru_cache(maxsize=8)  # a few point sets: 2^18 points x 8 replicates x 4 dims is 64 MB
def _sobol_normal_points(dim: int, m: int, replicates: int, seed: int) -> np.ndarray:
    """(replicates, 2^m, dim) standard normal points from independently scrambled Sobol sequences.

    Cached, so repeated calls (e.g. every iteration of a fixed-point map) see the same points.
    """
    from scipy.stats import qmc  # here, not at import: scipy.stats costs half a second of every command's start-up

    seeds = np.random.SeedSequence(seed).spawn(replicates)
    out = np.empty((replicates, 2**m, dim))
    tiny = np.finfo(float).eps / 2  # scrambled points never hit 0 or 1 in practice; guard anyway
    for r, s in enumerate(seeds):
        u = qmc.Sobol(d=dim, scramble=True, seed=np.random.default_rng(s)).random_base2(m)
        out[r] = special.ndtri(np.clip(u, tiny, 1.0 - tiny))
    out.setflags(write=False)
    return out


def sobol_expectation(
    f, mean, cov, *, n_points: int = 2**14, replicates: int = 8, seed: int = 0, tol: float | None = None
) -> Expectation:
    """E[f(z)] from `replicates` independently scrambled Sobol sets of `n_points` (a power of two)
    normal points each; value = mean over replicates, error = their standard error.

    The points depend only on (dim, n_points, replicates, seed): the same call gives the same number.
    `converged` is True when the standard error is within `tol` (always True without a tol).
    """
    n_points = check_int("n_points", n_points, 2, 2**20)
    if n_points & (n_points - 1):
        raise ParameterError("n_points", n_points, "a power of two (Sobol balance properties)")
    replicates = check_int("replicates", replicates, 2, 1024)
    seed = check_int("seed", seed, 0, None)
    mu, factor = covariance_factor(mean, cov)
    return _sobol(f, mu, factor, int(math.log2(n_points)), replicates, seed, tol)


def _sobol(f, mu, factor, m, replicates, seed, tol, history=()):
    """One Sobol estimate with 2^m points per replicate, appended to `history`."""
    base = _sobol_normal_points(mu.shape[0], m, replicates, seed)
    n = 2**m
    z = mu + base.reshape(-1, mu.shape[0]) @ factor.T
    values = evaluate_integrand(f, z)
    per_replicate = values.reshape((replicates, n) + values.shape[1:]).mean(axis=1)
    value = per_replicate.mean(axis=0)
    error = per_replicate.std(axis=0, ddof=1) / math.sqrt(replicates)
    step = RefinementStep(None, n * replicates, as_output(value), as_output(error))
    bad = nonfinite_message(value)
    if bad is not None:
        return Expectation(as_output(value), math.inf, None, n * replicates, False, "sobol", history + (step,), bad)
    converged = tol is None or bool(np.all(error <= tol))
    message = f"{replicates} scrambled Sobol replicates of {n} points; error = standard error"
    if not converged:
        message += f" exceeds tol {tol:g}"
    return Expectation(as_output(value), as_output(error), None, n * replicates, converged, "sobol",
                       history + (step,), message)


def adaptive_sobol(f, mu, factor, tol, rtol, seed, replicates=8, m_min=10, m_max=18):
    """Sobol estimates with 2^m_min, 2^(m_min + 2), ... points per replicate until the standard error is within
    max(tol, rtol |value|) (converged) or 2^m_max is reached (not converged)."""
    history: tuple = ()
    for m in range(m_min, m_max + 1, 2):
        result = _sobol(f, mu, factor, m, replicates, seed, None, history)
        history = result.history
        if not np.all(np.isfinite(result.error)):
            return result
        if np.all(np.asarray(result.error) <= np.maximum(tol, rtol * np.abs(result.value))):
            return Expectation(result.value, result.error, None, result.n_points, True, "sobol", history,
                               result.message)
    return Expectation(result.value, result.error, None, result.n_points, False, "sobol", history,
                       f"not converged: standard error {np.max(result.error):.3g} > tol {tol:g} with "
                       f"2^{m_max} points per replicate")
