"""The mean of a nonnegative quantity whose upper tail may be a power law with an infinite variance, with an error
that holds there: the sample mean and its naive standard error fall short (the rare large values that carry the
mean are missing from most samples). First met as the tangent noise of signal recovery (`models.signal_recovery.
schedules.tangent_noise`).
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import check_real

__all__ = ["heavy_tailed_mean"]


def heavy_tailed_mean(values) -> tuple[float, float]:
    """Mean and standard error of nonnegative i.i.d. `values` whose upper tail may be as heavy as a power law with an
    infinite variance (‖G_⊥‖² at d = 1000, L = 10 500, R = 500, θ√d = 7.9, ρ = 1: Hill tail index 1.5-1.7).

    There the sample mean is mostly below the mean (the rare large values that carry it are missing from most
    samples) and its naive standard error understates its spread: 1250 sequences gave N(1) = 15537 ± 798 where 80 000
    give 17566 ± 251 (this estimate), and over 256 pilots of 1250 drawn from those 80 000 the naive error held 17 500
    within one error in 63 % of them, within two in 88 %. So the k = √n largest values are replaced by a
    Pareto tail above the (n − k)-th, u (Peng 2001): mean = mean of min(x, u) + (k/n)·u/(α − 1), α the Hill estimate
    from those k; the error adds to the trimmed mean's standard error the tail's, from α's (relative α/((α − 1)√k))
    and u's (1/(α√k)). On 200 such pilots: within one error 88 %, two 95 % (on exact Pareto samples of index 1.5,
    n = 1250: 77 % and 90 %, the naive error's 49 % and 78 %). For a light tail (large α) the tail term
    vanishes and this is the sample mean. Where α is within its error α/√k of 1 (the tail term 1/(α − 1) unbounded:
    from 128 values at d = 16, L = 64 it gave N(1) = 139 where 131 072 give 44.7): the sample mean, its error at least
    what its k largest values carry of it (their sum over n). Below 100 values: the sample mean and its naive error.
    At least 2 values, each finite and ≥ 0; else ParameterError."""
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n < 2:
        raise ParameterError("values", values, "at least 2 values (the standard error needs two)")
    bad = ~(np.isfinite(x) & (x >= 0))
    if np.any(bad):
        check_real("values", float(x[bad].flat[0]), 0.0)
    k = int(round(math.sqrt(n)))
    naive = (float(x.mean()), float(x.std(ddof=1) / math.sqrt(n)))
    if n < 100:  # too few values to fit a tail to: the sample mean
        return naive
    u = x[n - k - 1]
    if not u > 0:
        return naive
    log_excess = float(np.mean(np.log(x[n - k:] / u)))
    if log_excess <= 0:  # the top k values all equal u: no tail
        return naive
    alpha = 1.0 / log_excess
    if alpha - 1.0 <= alpha / math.sqrt(k):  # α within its error of 1, where the tail's mean is unbounded: the sample
        # mean, uncertain by all that its k largest values carry
        return naive[0], max(naive[1], float(x[n - k:].sum()) / n)
    lower = np.minimum(x, u)
    tail = (k / n) * u / (alpha - 1.0)
    tail_error = tail * math.sqrt((alpha / (alpha - 1.0)) ** 2 + alpha**-2) / math.sqrt(k)
    return float(lower.mean() + tail), math.hypot(float(lower.std(ddof=1) / math.sqrt(n)), tail_error)
