"""Convergence diagnostics for a batch of Markov chains: batch means, effective sample size, split R-hat.

Every function takes draws of one scalar quantity as an array of shape (chains, draws) (a 1-D array is
one chain). The estimators are those of Vehtari, Gelman, Simpson, Carpenter and Bürkner, "Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16
(2021) 667, as implemented by Stan, the R package posterior and ArviZ (the numbers agree with ArviZ):

* `split_rhat`: each chain is split in halves (the middle draw of an odd length is dropped), the draws
  are replaced by their normal scores (rank-normalised over all chains), and R-hat is the larger of
  the value for the draws (bulk) and for their distance from the median (folded, the tails).
  Above 1.01 the chains have not mixed.
* `effective_sample_size(kind="bulk" | "tail" | "mean")`: S / τ̂ with τ̂ the integrated autocorrelation
  time from the multi-chain autocorrelation estimate, summed over Geyer's initial positive and
  monotone sequence. "bulk": of the rank-normalised split chains (efficiency for the centre of the
  distribution); "tail": the smaller of the ESS of the 5% and 95% quantile indicators (0 when more than 5% of
  the draws tie at their largest value, where ArviZ gives NaN); "mean": of the
  split chains themselves, the ESS that sets the Monte Carlo standard error of the mean. Vehtari et
  al. ask for bulk and tail ESS of at least 100 per chain before trusting R-hat and the estimates.
* `mcse_mean`: the Monte Carlo standard error of the mean, sd / sqrt(ESS_mean).
* `batch_means_sem`: the standard error of the mean from non-overlapping batch means, a second estimate
  that needs no autocorrelation model (it is biased low when the batches are not much longer than τ,
  and when the chains have not mixed).
* `summarize_chains`: all of them in one `ChainSummary` with status `converged` or `poor_mixing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnphase.errors import ParameterError
from attnphase.results import Result, Status

__all__ = [
    "ChainSummary",
    "RHAT_MAX",
    "ESS_MIN_PER_CHAIN",
    "as_chains",
    "split_chains",
    "rank_normalize",
    "autocovariance",
    "split_rhat",
    "effective_sample_size",
    "integrated_autocorrelation_time",
    "mcse_mean",
    "batch_means_sem",
    "summarize_chains",
]

RHAT_MAX = 1.01
ESS_MIN_PER_CHAIN = 100
ESS_KINDS = ("bulk", "tail", "mean")
TAIL_PROBABILITIES = (0.05, 0.95)


def as_chains(draws, *, min_draws: int = 4) -> np.ndarray:
    """`draws` as a float64 array (chains, draws), checked: finite, at least `min_draws` per chain."""
    array = np.asarray(draws, dtype=float)
    if array.ndim == 1:
        array = array[np.newaxis, :]
    if array.ndim != 2 or array.shape[0] < 1:
        raise ParameterError("draws", f"array of shape {array.shape}", "an array of shape (chains, draws)")
    if array.shape[1] < min_draws:
        raise ParameterError("draws", f"{array.shape[1]} draws per chain", f"at least {min_draws} draws per chain")
    if not np.all(np.isfinite(array)):
        raise ParameterError("draws", "non-finite values", "finite numbers (a chain that diverged has no diagnostics)")
    return array


def _check_moving(chains: np.ndarray) -> np.ndarray:
    """`chains` unless all their draws are equal (zero variance): then ParameterError, as for non-finite draws."""
    if np.ptp(chains) == 0:
        raise ParameterError("draws", f"all {chains.size} draws equal to {chains.flat[0]:g}",
                             "draws that vary (chains that never moved, zero variance, have no diagnostics)")
    return chains


def split_chains(chains: np.ndarray) -> np.ndarray:
    """Each chain cut into its first and second half: (M, N) -> (2M, N // 2); an odd middle draw is dropped."""
    half = chains.shape[1] // 2
    return np.concatenate([chains[:, :half], chains[:, chains.shape[1] - half:]], axis=0)


def rank_normalize(chains: np.ndarray) -> np.ndarray:
    """Normal scores of the pooled ranks: Φ⁻¹((r − 3/8) / (S + 1/4)), ties sharing their average rank."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    ranks = rankdata(chains, method="average").reshape(chains.shape)
    return ndtri((ranks - 0.375) / (chains.size + 0.25))


def autocovariance(chains: np.ndarray) -> np.ndarray:
    """Per chain, the biased autocovariance at lags 0..N-1 (sum over N − t products divided by N), by FFT."""
    n = chains.shape[1]
    centred = chains - chains.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()  # zero padding: no wrap-around of the circular correlation
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(spectrum * np.conjugate(spectrum), n=size, axis=1)[:, :n] / n


def _rhat_of(chains: np.ndarray) -> float:
    """Potential scale reduction sqrt(var⁺ / W), var⁺ = (N−1)/N W + B/N (Gelman et al., BDA3 eq. 11.3)."""
    n = chains.shape[1]
    within = np.mean(np.var(chains, axis=1, ddof=1))
    between_over_n = np.var(np.mean(chains, axis=1), ddof=1)
    if within == 0.0:  # chains that are each constant: stuck apart (between > 0) is as unmixed as it gets
        return math.inf if between_over_n > 0 else math.nan
    return float(np.sqrt(((n - 1) / n * within + between_over_n) / within))


def split_rhat(draws, *, rank_normalized: bool = True) -> float:
    """Split R-hat: rank-normalised and folded (the maximum of bulk and tail R-hat) by default.

    `rank_normalized=False` gives the classic split R-hat of the draws themselves (BDA3), for
    comparison. Needs at least 2 chains after splitting, i.e. any chain of 4 or more draws.
    """
    chains = _check_moving(as_chains(draws))
    if not rank_normalized:
        return _rhat_of(split_chains(chains))
    bulk = _rhat_of(rank_normalize(split_chains(chains)))
    folded = np.abs(chains - np.median(chains))
    tail = _rhat_of(rank_normalize(split_chains(folded)))
    return float(max(bulk, tail))


def integrated_autocorrelation_time(chains: np.ndarray) -> float:
    """τ̂ = −1 + 2 Σ_t ρ̂_t of chains (M, N), as in Stan: multi-chain ρ̂_t, Geyer's initial positive and
    monotone sequences, at least 1/log10(M N) (so that the ESS never exceeds M N log10(M N)). Finite draws, at
    least 2 per chain, not all equal (else ParameterError)."""
    return _autocorrelation_time(_check_moving(as_chains(chains, min_draws=2)))


def _autocorrelation_time(chains: np.ndarray) -> float:
    """`integrated_autocorrelation_time` unchecked: NaN for draws of zero variance (e.g. a quantile indicator that
    no draw crosses)."""
    n_chains, n = chains.shape
    acov = autocovariance(chains)
    within = acov[:, 0].mean() * n / (n - 1)  # mean of the chains' unbiased variances
    var_plus = within * (n - 1) / n
    if n_chains > 1:
        var_plus += np.var(chains.mean(axis=1), ddof=1)
    if var_plus == 0.0:
        return math.nan
    rho = 1.0 - (within - acov.mean(axis=0)) / var_plus  # ρ̂_t for t = 0..N-1; ρ̂_0 = 1
    # Geyer's initial positive sequence: sums of pairs P_k = ρ̂_2k + ρ̂_2k+1, kept while positive.
    kept = np.zeros(n)
    kept[0], kept[1] = 1.0, rho[1]
    even, odd = 1.0, rho[1]
    t = 1
    while t < n - 3 and even + odd > 0.0:
        even, odd = rho[t + 1], rho[t + 2]
        if even + odd >= 0.0:
            kept[t + 1], kept[t + 2] = even, odd
        t += 2
    last = t - 2
    if even > 0.0:  # the first even term of the rejected pair still carries positive correlation
        kept[last + 1] = even
    # Geyer's initial monotone sequence: no pair sum larger than the one before it.
    t = 1
    while t <= last - 2:
        if kept[t + 1] + kept[t + 2] > kept[t - 1] + kept[t]:
            kept[t + 1] = kept[t + 2] = (kept[t - 1] + kept[t]) / 2.0
        t += 2
    tau = -1.0 + 2.0 * kept[: last + 1].sum() + kept[last + 1: last + 2].sum()
    return float(max(tau, 1.0 / math.log10(chains.size)))


def effective_sample_size(draws, kind: str = "bulk") -> float:
    """Effective sample size of the draws (chains, draws): "bulk", "tail" or "mean" (see the module notes)."""
    chains = as_chains(draws)
    if kind not in ESS_KINDS:
        raise ParameterError("kind", kind, "one of " + ", ".join(ESS_KINDS))
    _check_moving(chains)
    if kind == "tail":
        return min(_tail_ess(chains <= np.quantile(chains, p)) for p in TAIL_PROBABILITIES)
    split = split_chains(chains)
    if kind == "bulk":
        split = rank_normalize(split)
    return _ess(split)


def _tail_ess(indicator: np.ndarray) -> float:
    """ESS of the indicator x <= (a quantile). One that never changes (more than 5 % of the draws tied at their largest
    value, which is then the 95 % quantile) carries no information on the tail: 0 effective draws (ArviZ: NaN)."""
    split = split_chains(indicator.astype(float))
    tau = _autocorrelation_time(split)
    return 0.0 if math.isnan(tau) else split.size / tau


def _ess(chains: np.ndarray) -> float:
    tau = _autocorrelation_time(chains)
    return math.nan if math.isnan(tau) else chains.size / tau


def mcse_mean(draws) -> float:
    """Monte Carlo standard error of the mean: sd / sqrt(ESS_mean), with the pooled sd (ddof 1)."""
    chains = as_chains(draws)
    return float(np.std(chains, ddof=1) / math.sqrt(effective_sample_size(chains, "mean")))


def batch_means_sem(draws, n_batches: int | None = None) -> float:
    """Standard error of the overall mean from non-overlapping batch means.

    Each chain's last `n_batches * size` draws are cut into `n_batches` batches (default: about sqrt(N)
    batches of about sqrt(N) draws); the batch means of all chains are pooled, and the standard error
    is their standard deviation over sqrt(their count). It treats every batch as independent, which
    holds when the chains sample the same distribution: check R-hat first. Chains stuck in different
    modes make it too small (each chain's offset is counted as many times as it has batches), while
    `mcse_mean`, through the between-chain term of the ESS, grows with the spread of the chain means.
    `validate.compare.batch_means_error` uses 10 batches instead, for short slow chains (why: its module docstring).
    """
    chains = as_chains(draws)
    n = chains.shape[1]
    if n_batches is None:
        n_batches = max(2, math.isqrt(n))
    if not isinstance(n_batches, int) or n_batches < 2 or n_batches > n:
        raise ParameterError("n_batches", n_batches, f"an integer in [2, {n}] (the draws per chain)")
    if chains.shape[0] * n_batches < 2:
        raise ParameterError("n_batches", n_batches, "at least 2 batches in all")
    size = n // n_batches
    batches = chains[:, n - n_batches * size:].reshape(chains.shape[0], n_batches, size).mean(axis=2)
    return float(np.std(batches, ddof=1) / math.sqrt(batches.size))


@dataclass(frozen=True)
class ChainSummary(Result):
    """Diagnostics of one scalar over a batch of chains (all fields from `summarize_chains`)."""

    n_chains: int
    n_draws: int
    mean: float
    sd: float
    mcse_mean: float
    batch_means_sem: float
    ess_bulk: float
    ess_tail: float
    ess_mean: float
    rhat: float
    status: Status
    message: str


def summarize_chains(draws, *, rhat_max: float = RHAT_MAX, ess_min_per_chain: float = ESS_MIN_PER_CHAIN) -> ChainSummary:
    """Mean, standard errors, ESS and R-hat of draws (chains, draws).

    Status `converged` when R-hat <= rhat_max and both bulk and tail ESS reach ess_min_per_chain per
    chain (Vehtari et al.'s recommendation: 1.01 and 100); else `poor_mixing`, with the reasons. Chains that
    never moved (each constant) are `poor_mixing` with R-hat inf, no effective draw (ESS 0) and standard errors
    inf: they say nothing about the distribution.
    """
    chains = as_chains(draws)
    n_chains, n_draws = chains.shape
    if np.all(np.ptp(chains, axis=1) == 0):
        where = "all at one value" if np.ptp(chains) == 0 else "each at its own value"
        return ChainSummary(
            n_chains=n_chains, n_draws=n_draws, mean=float(chains.mean()), sd=float(np.std(chains, ddof=1)),
            mcse_mean=math.inf, batch_means_sem=math.inf, ess_bulk=0.0, ess_tail=0.0, ess_mean=0.0, rhat=math.inf,
            status=Status.POOR_MIXING, message=f"the chains did not move: every chain's {n_draws} draws are constant "
                                               f"({where}; zero within-chain variance), so they carry no diagnostics")
    rhat = split_rhat(chains)
    ess = {kind: effective_sample_size(chains, kind) for kind in ESS_KINDS}
    problems = []
    if not rhat <= rhat_max:
        problems.append(f"R-hat {rhat:.4f} > {rhat_max}")
    for kind in ("bulk", "tail"):
        if ess[kind] == 0.0:  # the tail's, where draws tie at the top (`_tail_ess`)
            problems.append(f"{kind} ESS 0: more than 5% of the draws tie at their largest value, so the 95% quantile "
                            "is that value and says nothing of the tail")
        elif not ess[kind] >= ess_min_per_chain * n_chains:
            problems.append(f"{kind} ESS {ess[kind]:.0f} < {ess_min_per_chain:g} per chain x {n_chains} chains")
    return ChainSummary(
        n_chains=n_chains, n_draws=n_draws, mean=float(chains.mean()), sd=float(np.std(chains, ddof=1)),
        mcse_mean=mcse_mean(chains), batch_means_sem=batch_means_sem(chains), ess_bulk=ess["bulk"],
        ess_tail=ess["tail"], ess_mean=ess["mean"], rhat=rhat,
        status=Status.POOR_MIXING if problems else Status.CONVERGED, message="; ".join(problems),
    )
