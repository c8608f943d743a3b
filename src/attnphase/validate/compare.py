"""Theory against simulation: one record per compared quantity.

Agreement means |mean − theory| ≤ n_sigma · sqrt(sem² + theory_error²), where sem is the standard
error of the simulation mean over independent trials. With a single trial there is no spread to
compare against, so the record says it cannot decide (`agrees` is None) rather than guessing.

`verdict_message` says in words what several comparisons on one theory find (the models' `simulate` messages).

A Markov chain's samples are correlated; `batch_means` turns a chain into the means of consecutive
batches, which are nearly independent when the batches are long compared with the autocorrelation time, and
`batch_means_error` gives the mean and its standard error from them.

Why 10 batches here and about √N in `numeric.mcmc.batch_means_sem`: the chains compared here (the models'
MALA and Langevin runs, a few thousand steps each) are short and, near a transition, slow, with autocorrelation
times that may be tens of recorded samples. Few long batches keep each batch longer than that time, so that the
error is not biased low (the mean of a batch not much longer than it varies less than the long-run variance over
the batch's length says); the price is a noisy error (9 degrees of freedom per chain,
about 24 % relative). √N batches of √N draws (numeric.mcmc) give a consistent error with less noise when the chain
is long compared with its autocorrelation time, which `summarize_chains` checks alongside (ESS, R-hat), but they
are too short for a chain that is not. A stationary AR(1) chain with φ = 0.95 (integrated autocorrelation time 39)
and N = 3000 draws has a standard error of its mean of 0.364; the root mean square of the batch-means error is 0.352
with 10 batches of 300 and 0.298 with 54 batches of 55 (both exact, from the chain's covariance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import check_int, check_positive, check_real

__all__ = ["NORMAL_BAND", "student_band", "Comparison", "compare", "verdict_of", "verdict_message", "batch_means",
           "batch_means_error"]

NORMAL_BAND = 3.0  # |z| ≤ 3: the 99.73% band of a normal error; a wider band needs its reason said


def student_band(dof: int) -> float:
    """The band of NORMAL_BAND's two-sided level, 99.73%, for a mean whose standard error comes from dof + 1
    independent values (Student's t with dof degrees of freedom): 19.2 for dof = 2, 6.62 for 4, 3.0 as dof → ∞. With
    the normal band, a standard error from 5 values rejected a right theory in 4% of runs, not 0.27%."""
    from scipy.stats import t as student

    dof = check_int("dof", dof, 1)
    return float(student.ppf(1 - 0.0027 / 2, dof))


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


def verdict_message(comparisons, no_verdict, *, band_reason: str | None = None) -> str:
    """The comparisons' account in words, one format for every model: each rejection with its numbers (mean ± sem
    against theory, ± the theory's error where it has one) and z, then the agreements with their z, then the quantities
    without a verdict (agrees None) grouped by their reasons, with z where it exists. no_verdict: name -> tuple of
    reasons (a name with several is listed under each, with its z the first time; one missing from it is listed
    without a reason).

    The band |z| ≤ n_sigma leads the account once where every comparison with a verdict shares it, else each of them
    states its own; a band wider than ±3 is followed by `band_reason` (e.g. copy heads' "the 99.73% Student-t band
    of 4 training sets"), since "agrees" within ±9.2 is a weaker claim than within ±3."""
    def band(n_sigma: float) -> str:
        widened = band_reason is not None and n_sigma > NORMAL_BAND
        return f"band ±{n_sigma:.3g}" + (f", {band_reason}" if widened else "")

    decided = [c for c in comparisons if c.agrees is not None]
    bands = {c.n_sigma for c in decided}
    shared = bands.pop() if len(bands) == 1 else None

    def remarks(c: Comparison, with_band: bool) -> str:  # no z where the bar and the theory's error are both 0
        said = ([] if c.z is None else [f"z = {c.z:.3g}"]) + ([band(c.n_sigma)] if with_band else [])
        return f" ({', '.join(said)})" if said else ""

    rejected = [c for c in decided if c.agrees is False]
    agreeing = [c for c in decided if c.agrees is True]
    parts = []
    if rejected:
        parts.append("the theory is rejected by " + ", ".join(
            f"{c.name}: {c.mean:.6g} ± {c.sem:.2g} against {c.theory:.6g}"
            + (f" ± {c.theory_error:.2g}" if c.theory_error else "") + remarks(c, shared is None) for c in rejected))
    if agreeing:
        parts.append(f"{'it' if rejected else 'the theory'} agrees with "
                     + ", ".join(c.name + remarks(c, shared is None) for c in agreeing))
    if parts and shared is not None:
        parts[0] = f"with the {band(shared)}, {parts[0]}"
    by_reason: dict[str, list[Comparison]] = {}
    for c in comparisons:
        if c.agrees is None:
            for reason in no_verdict.get(c.name, ("",)):
                by_reason.setdefault(reason, []).append(c)
    listed = set()
    for reason, group in by_reason.items():
        names = [c.name + ("" if c.name in listed else remarks(c, False)) for c in group]
        listed.update(c.name for c in group)
        parts.append(f"no verdict on {', '.join(names)}" + (f" ({reason})" if reason else ""))
    return "; ".join(parts)


def compare(
    name: str, theory: float, samples, *, theory_error: float = 0.0, n_sigma: float = NORMAL_BAND
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
    smaller; the last S mod n_batches samples are left out so that every batch has the same length). x needs at least
    one sample, n_batches ≥ 1."""
    x = np.asanyarray(x)
    n_batches = check_int("n_batches", n_batches, 1, None)
    if x.ndim == 0 or x.shape[-1] < 1:
        raise ParameterError("x", x, "an array with at least one sample along its last axis")
    S = x.shape[-1]
    nb = max(1, min(n_batches, S))
    usable = (S // nb) * nb
    return x[..., :usable].reshape(x.shape[:-1] + (nb, usable // nb)).mean(-1)


def batch_means_error(x: np.ndarray, n_batches: int = 10) -> tuple[float, float]:
    """(mean, standard error of the mean) of the samples of one chain (S,) or several (..., S) by batch means:
    `batch_means` of each chain, all pooled; the error is their standard deviation (ddof 1) over the square root of
    their count, 0 for a single batch (no spread to estimate it from). Pooling treats the chains' batches as
    independent: chains in different modes make the error too small."""
    batches = batch_means(x, n_batches).reshape(-1)
    mean = float(batches.mean())
    if batches.size < 2:
        return mean, 0.0
    return mean, float(batches.std(ddof=1) / math.sqrt(batches.size))
