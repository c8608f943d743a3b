"""Expectations over correlated Gaussian vectors.

We need E[f(z)] for z ~ N(mu, Sigma) in a handful of dimensions, many times over (inside fixed-point
maps), to near machine precision, with tensor Gauss-Hermite rules (for integrands with kinks or jumps,
where they converge only algebraically: scrambled Sobol points, `numeric.sobol`; the result type and the
integrand's calling convention: `numeric.expectation`).

The one-dimensional rule with n nodes x_i and weights w_i for the weight
exp(-x^2/2)/sqrt(2 pi) (probabilists' Hermite polynomials, `scipy.special.roots_hermitenorm`, which
stays accurate at high order) integrates polynomials of degree <= 2n-1 exactly. Its tensor
product integrates over N(0, I_d); the affine map z = mu + L x with L L^T = Sigma carries it to
N(mu, Sigma). The adaptive mode refines through odd node counts (9, 15, 23, 35, ...: x1.5) and
estimates the error from the differences between successive rules. For smooth (analytic) integrands
the error falls exponentially in n, the differences collapse and the estimate is the last difference.
On a kink or a jump the error of a rule depends on where the kink falls between its nodes, so two or
three rules can agree by chance on a wrong value; there the estimate is three times the largest of the
last four differences, a converged result needs four rules (or three agreeing to rounding), and the
error bar covered the exact value on every shifted kink and jump it was measured on
(`numeric.refinement_error.tail_estimate`), at the price of bars typically 10 to 20 times the true error on them,
and up to thousands of times on smooth integrands that converge slowly and stop at the cap (E[1/(1 + 4z^2)]:
8.2e-3 for 1.7e-6).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from scipy import special

from attnphase.errors import ParameterError
from attnphase.numeric.expectation import (
    ROUNDOFF_FACTOR, Expectation, RefinementStep, as_output, covariance_factor, evaluate_integrand, nonfinite_message,
)
from attnphase.numeric.refinement_error import next_nodes, tail_estimate
from attnphase.numeric.sobol import adaptive_sobol
from attnphase.params import check_choice, check_int, check_positive, check_real

__all__ = [
    "GaussHermiteRule",
    "gaussian_expectation",
    "default_max_nodes_per_dim",
    "default_min_nodes_per_dim",
    "tensor_rule",
    "pruned_tensor_rule",
]


# The largest tensor rule the adaptive mode builds by default (points, not nodes per dimension):
# 2**22 points of dimension 4 are ~130 MB of float64 coordinates.
_MAX_POINTS = 2**22


@functools.lru_cache(maxsize=256)
def tensor_rule(dim: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (n^dim, dim) and weights (n^dim,) of the tensor rule for N(0, I_dim); read-only. dim in [1, 32] (numpy's
    dimensions), n ≥ 1, at most 2^26 nodes in all."""
    dim = check_int("dim", dim, 1, 32)
    n = check_int("n", n, 1, None)
    if n**dim > 2**26:
        raise ParameterError("n", n, f"at most {int((2**26) ** (1 / dim) + 1e-9)} in {dim} dimensions (2^26 nodes)")
    x, w = special.roots_hermitenorm(n)
    w = w / math.sqrt(2.0 * math.pi)  # roots_hermitenorm weights integrate exp(-x^2/2), not the pdf
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=-1)
    wgrids = np.meshgrid(*([w] * dim), indexing="ij")
    weights = functools.reduce(np.multiply, (g.ravel() for g in wgrids))
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@functools.lru_cache(maxsize=16)
def pruned_tensor_rule(dim: int, nodes_per_dim: int, weight_floor: float = 1e-13) -> tuple[np.ndarray, np.ndarray]:
    """The tensor rule for N(0, I_dim) without its nodes of weight ≤ weight_floor: (nodes (N, dim), weights (N,)).

    Far out in the tails the tensor product has many nodes of negligible weight; dropping them costs at
    most (their number) × weight_floor × max |f|, e.g. < 1e-9 of the total weight for 10-14 nodes per
    dimension in 4 dimensions at the default floor, while an expensive integrand (a minimisation per
    node) is evaluated at far fewer points. Read-only, cached (the pruned rule only: the full tensor, up to 2^26 nodes,
    is built for it and dropped)."""
    check_int("dim", dim, 1, 16)
    check_int("nodes_per_dim", nodes_per_dim, 1, 4096)
    if nodes_per_dim**dim > 2**26:
        raise ParameterError("nodes_per_dim", nodes_per_dim, f"at most {int((2**26) ** (1 / dim))} in {dim} dimensions")
    all_nodes, all_weights = tensor_rule.__wrapped__(dim, nodes_per_dim)
    keep = all_weights > weight_floor
    nodes, weights = all_nodes[keep], all_weights[keep]
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


class GaussHermiteRule:
    """Tensor Gauss-Hermite rule with `nodes_per_dim` nodes per axis for N(0, I_dim), cached.

    `points(mean, cov)` returns the nodes carried to N(mean, cov) by z = mean + L x (L L^T = cov);
    `weights` sum to one; `integrate(f, mean, cov)` returns sum_i w_i f(z_i) as a float or (k,) array.
    """

    def __init__(self, dim: int, nodes_per_dim: int):
        self.dim = check_int("dim", dim, 1, 16)
        self.nodes_per_dim = check_int("nodes_per_dim", nodes_per_dim, 1, 4096)
        if self.nodes_per_dim**self.dim > 2**26:
            raise ParameterError(
                "nodes_per_dim", nodes_per_dim, f"at most {int((2**26) ** (1 / self.dim))} in {self.dim} dimensions"
            )
        self._nodes, self._weights = tensor_rule(self.dim, self.nodes_per_dim)

    @property
    def n_points(self) -> int:
        return self._weights.shape[0]

    @property
    def weights(self) -> np.ndarray:
        return self._weights

    @property
    def standard_nodes(self) -> np.ndarray:
        """Nodes for N(0, I): shape (N, dim)."""
        return self._nodes

    def points(self, mean, cov) -> np.ndarray:
        mu, factor = covariance_factor(mean, cov)
        if mu.shape[0] != self.dim:
            raise ParameterError("mean", mean, f"a vector of length {self.dim}")
        return mu + self._nodes @ factor.T

    def integrate(self, f, mean, cov):
        """sum_i w_i f(z_i): a float for a scalar integrand, an array (k,) for a vector one."""
        return _weighted_sum(f, self.points(mean, cov), self._weights)[0]


def _weighted_sum(f, z: np.ndarray, w: np.ndarray):
    """(value, roundoff bound); value a float or an (k,) array; non-finite values pass through."""
    values = evaluate_integrand(f, z)
    total = np.tensordot(w, values, axes=(0, 0))
    roundoff = ROUNDOFF_FACTOR * np.finfo(float).eps * np.tensordot(w, np.abs(values), axes=(0, 0))
    if values.ndim == 1:
        return float(total), float(roundoff)
    return total, roundoff


def default_max_nodes_per_dim(dim: int) -> int:
    """The largest nodes-per-dimension the adaptive mode tries: at most 2**22 points, 256 per axis."""
    return int(min(256, math.floor(_MAX_POINTS ** (1.0 / dim) + 1e-9)))


def default_min_nodes_per_dim(dim: int, cap: int | None = None) -> int:
    """The first rule of the adaptive mode: 9 nodes per dimension, or 7 where that fits more of the five
    rules the error estimate looks at under the cap (default `default_max_nodes_per_dim(dim)`; 4 dimensions:
    7, 11, 17, 27, 41 under 45, where 9 gives 9, 15, 23, 35). Not fewer: rules of 3 or 5 nodes are so far
    from converged that their differences shrink fast on a kink too."""
    cap = default_max_nodes_per_dim(dim) if cap is None else cap

    def rules(start):
        n, count = start, 1
        while next_nodes(n) <= cap and count < 5:
            n, count = next_nodes(n), count + 1
        return count

    return min(7 if rules(7) > rules(9) else 9, cap)


def gaussian_expectation(
    f,
    mean,
    cov,
    *,
    nodes_per_dim: int | None = None,
    tol: float = 1e-10,
    rtol: float = 0.0,
    max_nodes_per_dim: int | None = None,
    min_nodes_per_dim: int | None = None,
    method: str = "hermite",
    seed: int = 0,
) -> Expectation:
    """E[f(z)] for z ~ N(mean, cov), with an error estimate from node-count refinement.

    hermite, fixed `nodes_per_dim` = n: the value is the n-node tensor rule; its error is |Q0 - Q2| plus
    the estimate for Q2 from the next two rules of the refinement sequence, Q1 and Q2 (about 1.5 n and
    2.25 n nodes, odd): three times the larger of the two differences, unless all three agree to rounding.
    Three rules cannot tell a kink from a smooth integrand; for a non-smooth one use the adaptive mode.
    hermite, adaptive (`nodes_per_dim=None`): rules with `min_nodes_per_dim` (default
    `default_min_nodes_per_dim(dim, cap)`: 9, or 7 where the cap leaves room for more rules from 7), then
    x1.5 rounded up to odd counts, until the estimated error is <= max(tol, rtol |value|) with at least
    four rules, or three that agree to rounding (converged), or `max_nodes_per_dim` is reached (not
    converged; the message says how fast it was converging).
    sobol: `sobol_expectation` (8 replicates, seed `seed`) with 2^10, 2^12, ... points per replicate
    until the standard error is within tolerance or 2^18 points.

    The error estimate of a refinement step (`numeric.refinement_error.tail_estimate`) is the last difference
    |Q_k - Q_{k-1}| when the differences collapse (the last three each at most 1/10 of the one before, or two at most
    1/50, or rounding-level agreement), otherwise three times the largest of the last four differences; plus a bound
    on the rounding error of the weighted sum.
    """
    method = check_choice("method", method, ("hermite", "sobol"))
    tol = check_positive("tol", tol)
    rtol = check_real("rtol", rtol, 0.0, 1.0)
    seed = check_int("seed", seed, 0, None)
    mu, factor = covariance_factor(mean, cov)
    dim = mu.shape[0]
    if method == "sobol":
        return adaptive_sobol(f, mu, factor, tol, rtol, seed)

    cap = default_max_nodes_per_dim(dim) if max_nodes_per_dim is None else check_int(
        "max_nodes_per_dim", max_nodes_per_dim, 2, 4096
    )
    history: list[RefinementStep] = []

    def rule_value(n):
        nodes, weights = tensor_rule(dim, n)
        return _weighted_sum(f, mu + nodes @ factor.T, weights)

    if nodes_per_dim is not None:
        # The requested rule Q0 against the next two of the refinement sequence, Q1 and Q2:
        # error(Q0) <= |Q0 - Q2| + error(Q2), the latter from the tail estimate of (Q0, Q1, Q2).
        n = check_int("nodes_per_dim", nodes_per_dim, 1, 4096)
        n1 = next_nodes(n)
        n2 = next_nodes(n1)
        if n2**dim > 2**26:
            raise ParameterError("nodes_per_dim", nodes_per_dim, f"small enough that {n2}^{dim} <= 2^26")
        values = [rule_value(m) for m in (n, n1, n2)]
        q0, q1, q2 = (np.asarray(v[0]) for v in values)
        roundoff = sum(np.asarray(v[1]) for v in values)
        error2, _ = tail_estimate([np.abs(q1 - q0), np.abs(q2 - q1)], roundoff)
        error = np.abs(q2 - q0) + error2
        history = [
            RefinementStep(n, n**dim, values[0][0], as_output(error)),
            RefinementStep(n1, n1**dim, values[1][0], math.inf),
            RefinementStep(n2, n2**dim, values[2][0], as_output(error2)),
        ]
        bad = nonfinite_message(q0, q1, q2)
        converged = bad is None and bool(np.all(error <= np.maximum(tol, rtol * np.abs(q0))))
        message = bad or (
            f"{n} nodes per dimension; error estimated against {n1} and {n2} nodes"
            + ("" if converged else f" exceeds tol {tol:g}")
        )
        if bad:
            error = np.full_like(q0, np.inf)
        return Expectation(as_output(q0), as_output(error), n, n**dim, converged, "hermite", tuple(history), message)

    if min_nodes_per_dim is None:
        n = default_min_nodes_per_dim(dim, cap)
    else:
        n = check_int("min_nodes_per_dim", min_nodes_per_dim, 1, cap)
    value, roundoff = rule_value(n)
    history.append(RefinementStep(n, n**dim, value, math.inf))
    diffs: list = []
    while True:
        n_next = next_nodes(n)
        if n_next > cap:
            break
        new, new_roundoff = rule_value(n_next)
        diffs.append(np.abs(np.asarray(new) - np.asarray(value)))
        error, trusted = tail_estimate(diffs, np.asarray(roundoff) + np.asarray(new_roundoff))
        n, value, roundoff = n_next, new, new_roundoff
        history.append(RefinementStep(n, n**dim, value, as_output(error)))
        bad = nonfinite_message(value)
        if bad is not None:
            return Expectation(as_output(value), math.inf, n, n**dim, False, "hermite", tuple(history), bad)
        if np.all(trusted) and np.all(error <= np.maximum(tol, rtol * np.abs(value))):
            return Expectation(
                as_output(value), as_output(error), n, n**dim, True, "hermite", tuple(history),
                f"converged with {n} nodes per dimension ({n**dim} points)",
            )
    if len(history) < 2:
        return Expectation(
            as_output(value), math.inf, n, n**dim, False, "hermite", tuple(history),
            f"max_nodes_per_dim={cap} leaves no room to refine {n} nodes; no error estimate",
        )
    unconverged = Expectation(as_output(value), history[-1].error, n, n**dim, False, "hermite", tuple(history))
    p = unconverged.observed_order
    rate = f"; observed order n^-{p:.2g}" if math.isfinite(p) else ""
    hint = " (slow: the integrand is probably not smooth; split it or use method='sobol')" if (
        math.isfinite(p) and p < 4
    ) else ""
    if np.all(history[-1].error <= np.maximum(tol, rtol * np.abs(value))):  # within tol, but not trusted
        message = (
            f"not converged: {len(history)} rules up to the {n}-node cap, too few to trust the error "
            f"estimate {np.max(history[-1].error):.3g} (four are needed, or three that agree to rounding)"
        )
    else:
        message = (
            f"not converged: error estimate {np.max(history[-1].error):.3g} > tol {tol:g} at the "
            f"{n}-node cap{rate}{hint}"
        )
    return dataclasses.replace(unconverged, message=message)
