"""A Gaussian expectation with its error estimate: what the rules of `numeric.gauss` (tensor Gauss-Hermite) and
`numeric.sobol` (scrambled Sobol points) return, and what they share.

Both compute E[f(z)] for z ~ N(mu, Sigma) by carrying a rule for N(0, I_d) through the affine map z = mu + L x,
L L^T = Sigma (`covariance_factor`). The integrand `f` receives all points at once as an array of shape (N, dim)
and returns (N,) or (N, k); everything is vectorised over points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from attnphase.errors import ParameterError

__all__ = ["Expectation", "RefinementStep", "covariance_factor"]

# Relative size of the rounding error of a weighted sum of N terms, in units of eps * sum w |f|.
# Pairwise summation gives O(log N) eps; the points themselves carry a few eps of rounding from
# mu + L x, which moves f by a few eps relative. 64 is a safe bound measured on polynomial moments.
ROUNDOFF_FACTOR = 64.0


@dataclass(frozen=True)
class RefinementStep:
    """One rule of a refinement sequence: its size, its value and the error estimated for it."""

    nodes_per_dim: int | None
    n_points: int
    value: float | np.ndarray
    error: float | np.ndarray


@dataclass(frozen=True)
class Expectation:
    """A Gaussian expectation with its error estimate.

    value, error: float for a scalar integrand, arrays of shape (k,) for a vector one.
    nodes_per_dim: Gauss-Hermite nodes per dimension of the reported value (None for Sobol).
    n_points: points of the rule behind the reported value (Sobol: per replicate times replicates).
    converged: the estimated error is within the requested tolerance (adaptive mode: estimated from at
        least four rules, or from three that agree to rounding).
    method: "hermite" or "sobol".
    history: every rule evaluated, coarse to fine; the error estimates along it show how fast the
        rule converges (exponentially for smooth integrands, algebraically for kinks).
    message: what happened, in words.
    """

    value: float | np.ndarray
    error: float | np.ndarray
    nodes_per_dim: int | None
    n_points: int
    converged: bool
    method: str
    history: tuple[RefinementStep, ...] = field(default=(), repr=False)
    message: str = ""

    @property
    def observed_order(self) -> float:
        """Algebraic convergence order p (error ~ n^-p, n the nodes per dimension or points) seen in
        the last two refinements; large (or inf) for exponential convergence, nan if unknown.

        A small order (p below ~4 for Gauss-Hermite) signals a non-smooth integrand: split the
        domain or use Sobol points.
        """
        steps = list(self.history)
        if len(steps) < 3:
            return math.nan
        # Use the raw differences between successive values, not the error estimates: those are
        # what decay at the rate of the rule.
        d1 = float(np.max(np.abs(np.asarray(steps[-2].value) - np.asarray(steps[-3].value))))
        d2 = float(np.max(np.abs(np.asarray(steps[-1].value) - np.asarray(steps[-2].value))))
        size = [s.nodes_per_dim or s.n_points for s in steps[-3:]]
        # A last difference at the rounding level of the value: converged as far as it can be seen.
        rounding = ROUNDOFF_FACTOR * np.finfo(float).eps * float(np.max(np.abs(np.asarray(steps[-1].value))))
        if d2 <= rounding:
            return math.inf
        if d1 == 0.0:
            return math.nan
        return math.log(d1 / d2) / math.log(size[2] / size[1])

    @property
    def slow_convergence(self) -> bool:
        """True when the refinement history shows algebraic (slow) rather than exponential
        convergence, or when the rule did not converge at all."""
        if not self.converged:
            return True
        p = self.observed_order
        return self.method == "hermite" and math.isfinite(p) and p < 4.0


def covariance_factor(mean, cov) -> tuple[np.ndarray, np.ndarray]:
    """Validate (mean, cov) and return (mu of shape (d,), L of shape (d, d)) with L L^T = cov.

    `mean` may be a scalar or a vector; `cov` a scalar (variance, d = 1, or times the identity), a
    vector (a diagonal) or a symmetric positive semi-definite matrix. Singular covariances are
    allowed: the factor then comes from the eigendecomposition with the (tiny, rounding-level)
    negative eigenvalues set to zero. A covariance that is not symmetric, has a clearly negative
    eigenvalue or non-finite entries raises ParameterError.
    """
    mu = np.atleast_1d(np.asarray(mean, dtype=float))
    if mu.ndim != 1 or not np.all(np.isfinite(mu)):
        raise ParameterError("mean", mean, "a finite scalar or vector")
    d = mu.shape[0]
    c = np.asarray(cov, dtype=float)
    if not np.all(np.isfinite(c)):
        raise ParameterError("cov", cov, "a finite symmetric positive semi-definite matrix")
    if c.ndim == 0:
        c = np.eye(d) * float(c)
    elif c.ndim == 1:
        if c.shape[0] != d:
            raise ParameterError("cov", cov, f"a diagonal of length {d} (the length of mean)")
        c = np.diag(c)
    if c.shape != (d, d):
        raise ParameterError("cov", cov, f"a {d}x{d} matrix (the length of mean is {d})")
    scale = float(np.max(np.abs(c))) if c.size else 0.0
    if not np.allclose(c, c.T, rtol=1e-12, atol=1e-14 * scale):
        raise ParameterError("cov", cov, "a symmetric matrix")
    c = 0.5 * (c + c.T)
    try:
        return mu, np.linalg.cholesky(c)
    except np.linalg.LinAlgError:
        pass
    eigenvalues, vectors = np.linalg.eigh(c)
    # Rounding in a rank-deficient covariance makes zero eigenvalues slightly negative; anything
    # beyond a few hundred eps of the largest one is a genuinely indefinite matrix.
    if eigenvalues.min() < -256 * np.finfo(float).eps * max(scale, 1e-300) * d:
        raise ParameterError(
            "cov", cov, f"a positive semi-definite matrix (smallest eigenvalue {eigenvalues.min():.3g})"
        )
    return mu, vectors * np.sqrt(np.clip(eigenvalues, 0.0, None))


def evaluate_integrand(f, z: np.ndarray) -> np.ndarray:
    """f at the points z (N, dim), checked to be of shape (N,) or (N, k)."""
    values = np.asarray(f(z), dtype=float)
    n = z.shape[0]
    if values.ndim == 0 or values.shape[0] != n or values.ndim > 2:
        raise ParameterError("f", f, f"a function returning shape ({n},) or ({n}, k) for points ({n}, dim)")
    return values


def as_output(x):
    """A float for a scalar, else the array."""
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def nonfinite_message(*values) -> str | None:
    """The message for a rule whose values are not all finite, else None."""
    for v in values:
        if not np.all(np.isfinite(v)):
            return "the integrand returned non-finite values (NaN or inf) at some nodes"
    return None
