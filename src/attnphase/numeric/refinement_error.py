"""The error of the latest rule in a refinement sequence of quadrature rules, from the differences between
successive rules, and the node sequence the adaptive Gauss-Hermite mode refines through (`numeric.gauss`).

The estimate must be a promise on integrands the rules converge on erratically (a kink or a jump, where two or
three rules can agree by chance on a wrong value) as on smooth ones, where the differences collapse
exponentially and the last one bounds the error.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["next_nodes", "tail_estimate"]


def next_nodes(n: int) -> int:
    """Refinement sequence: grow by ~1.5, odd counts. Every rule then has a node at 0 (an integrand's value
    at 0 enters every rule), and no two rules share the symmetric gap around 0 that even rules have: with
    even counts a jump 1(z > a) for 0 < a < the smallest node of every rule so far is 1/2 on all of them, an
    exact agreement on a wrong value (Q(0.3) = 0.382 "converged" at 0.5 with 8 and 12 nodes); on odd rules
    it is (1 - w_0) / 2, w_0 the weight at 0, which differs from rule to rule."""
    m = int(math.ceil(1.5 * n))
    return m | 1


# The error estimate of a refinement sequence (`tail_estimate`). Fast convergence: each of the last three
# differences at most _FAST_RATIO times the one before (algebraic order > 5.7 on the x1.5 sequence: in
# practice exponential convergence), or, with only four rules, each of the two at most _FAST_RATIO_SHORT.
_FAST_RATIO = 0.1
_FAST_RATIO_SHORT = 0.02
# Otherwise the error is _SAFETY times the largest of the last _WINDOW differences.
_SAFETY = 3.0
_WINDOW = 4
# Converged needs an estimate from at least this many differences (four rules), or three rules that agree
# to rounding.
_MIN_DIFFERENCES = 3


def tail_estimate(diffs: list, roundoff) -> tuple[np.ndarray, np.ndarray]:
    """Error of the latest rule from the differences between successive rules, and whether it may be called
    converged: (estimate, trusted), arrays of the integrand's shape (one estimate per component).

    With d_k = |Q_k - Q_{k-1}|:

    * the last two differences are at the rounding level (three rules agree): the error is d_k;
    * fast, the last three ratios d_j / d_{j-1} all <= 1/10 (a smooth integrand), or the only two <= 1/50:
      the error is d_k, at least nine times the geometric tail d_k q / (1 - q);
    * otherwise (a kink or a jump, converging algebraically and erratically, or too short a history): the
      error is _SAFETY times the largest of the last _WINDOW differences.

    On a kink the error of a rule depends on where the kink falls between its nodes, so successive rules
    can agree by chance and d_k alone says little: relu(z - 0.1) on 81, 123 and 185 nodes differs by
    8.0e-5 and 1.4e-4 while each is 8e-4 to 1e-3 off; over five rules the differences do not all collapse.
    Kinks also shrink their differences fast for a few rules: relu(z - 1.4875) on 9, 15, 23 and 35 nodes by
    4.2e-3, 3.4e-4, 3.3e-5 while 2.0e-4 off (hence 1/50 for two ratios); relu(z + 0.15)^5 on 9 ... 53 nodes
    by ratios 0.12, 0.14, 0.003 while it stalls 5.7e-6 off (hence 1/10 for three). Measured on
    relu(z - a)^k, a from -2.5 to 2.5, the node caps 36, 40, 48, 52, 60, 64, 80, 96, 100, 120, 128, 150, 180,
    192, 220 and 256: the true error is at most 0.80 of the estimate for the jump 1(z > a) (k = 0) and
    the kink (k = 1; a in steps of 0.00625), at most 0.29 for k = 2 ... 6 (steps of 0.025), and none is
    called converged beyond its error; k = 8 is up to 1.7 times above. (The estimate before, the last
    difference enlarged to twice its geometric tail on even rules, was up to 570 times too small on the
    kink, and called 2272 of the 12816 jumps converged at wrong values.) What no estimate from differences
    sees is an error that every rule shares: a feature narrower than the node spacing (a bump
    exp(-(z - 0.37)^2 / 2s^2) of width s = 0.01, E = 0.0093, falls between the nodes of the 9- to 35-node
    rules, which give 2e-298, 2e-298, 9e-170 and 3e-55 on 9, 15, 23 and 35 nodes: all but nothing, the
    estimate from their differences as small, converged, wrong).

    trusted: at least _MIN_DIFFERENCES differences, or three rules agreeing to rounding. From three rules
    a kink cannot be told from fast convergence.
    """
    ro = np.asarray(roundoff, dtype=float)
    d = np.asarray(diffs[-_WINDOW:], dtype=float)  # (m,) + the integrand's shape
    d_k = d[-1]
    if d.shape[0] < 2:
        return _SAFETY * d_k + ro, np.zeros(d_k.shape, dtype=bool)
    noise = d <= 4 * ro  # differences at the rounding level carry no rate information
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(noise[1:], 0.0, np.where(noise[:-1], np.inf, d[1:] / d[:-1]))[-3:]
    agree = noise[-1] & noise[-2]
    if ratios.shape[0] >= 3:
        fast = np.all(ratios <= _FAST_RATIO, axis=0)
    elif ratios.shape[0] == 2:
        fast = np.all(ratios <= _FAST_RATIO_SHORT, axis=0)
    else:
        fast = np.zeros(d_k.shape, dtype=bool)
    estimate = np.where(agree | fast, d_k, _SAFETY * np.max(d, axis=0)) + ro
    trusted = agree | (len(diffs) >= _MIN_DIFFERENCES)
    return estimate, trusted
