"""Posterior means by random-walk Metropolis: E[f(x)] under a density exp(log_density(x)) in a few dimensions.

Used where a saddle point is not enough because the density is broad or skewed (e.g. the order parameters
of a reduced action at small size, whose mean lies away from its mode). Many independent walkers move in
parallel (one vectorised density call per step); the proposal is Gaussian with covariance
(2.38²/d)·H⁻¹, the asymptotically optimal scale for a near-Gaussian target with Hessian H at its mode.
The error of each mean is the standard error over walkers (each walker's time average after burn-in is
one sample, so the walkers must be run long enough to forget their starts; the first third is burn-in).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnphase.params import check_int
from attnphase.results import Result, Status

__all__ = ["MetropolisMeans", "metropolis_means"]


@dataclass(frozen=True)
class MetropolisMeans(Result):
    """means, errors (k,): E[f] and their standard errors over walkers; acceptance: mean acceptance rate;
    status converged when 0.05 < acceptance < 0.9 and every walker average is finite, else poor_mixing."""

    means: np.ndarray
    errors: np.ndarray
    acceptance: float
    walkers: int
    steps: int
    status: Status
    message: str


def metropolis_means(log_density, observables, mode, hessian, *, walkers: int = 256, steps: int = 6000,
                     seed: int = 0) -> MetropolisMeans:
    """Means of observables(X) -> (..., k) under exp(log_density(X)), X of shape (walkers, d).

    mode (d,) and hessian (d, d, positive definite): where the walkers start (spread by 0.3 proposal
    widths) and the proposal's shape.
    """
    walkers = check_int("walkers", walkers, 2, 10**6)
    steps = check_int("steps", steps, 30, 10**8)
    mode = np.asarray(mode, float)
    dim = len(mode)
    chol = np.linalg.cholesky(np.linalg.inv(np.asarray(hessian, float))) * (2.38 / math.sqrt(dim))
    rng = np.random.default_rng(seed)
    X = mode + 0.3 * rng.standard_normal((walkers, dim)) @ chol.T
    logp = log_density(X)
    burn = steps // 3
    sums = None
    accepted = 0.0
    for k in range(steps):
        Y = X + rng.standard_normal(X.shape) @ chol.T
        logq = log_density(Y)
        ok = np.log(rng.random(walkers)) < logq - logp
        X[ok], logp[ok] = Y[ok], logq[ok]
        accepted += ok.mean()
        if k >= burn:
            values = np.asarray(observables(X), float)
            sums = values if sums is None else sums + values
    per_walker = sums / (steps - burn)
    acceptance = accepted / steps
    mixing = 0.05 < acceptance < 0.9 and np.all(np.isfinite(per_walker))
    status = Status.CONVERGED if mixing else Status.POOR_MIXING
    message = (f"random-walk Metropolis, {walkers} walkers x {steps} steps (burn-in {burn}), acceptance "
               f"{acceptance:.2f}" + ("" if mixing else ": outside (0.05, 0.9) or a non-finite walker average"))
    return MetropolisMeans(per_walker.mean(0), per_walker.std(0, ddof=1) / math.sqrt(walkers), acceptance, walkers,
                           steps, status, message)
