"""Result types of the copy-heads simulations (frozen dataclasses on `attnphase.results.Result`): the real network
against the theory, one batch over P, the hysteresis runs and the row model. Fields are numbers, strings and
arrays (and the theory's `results.SolveResult`), so that a finished run can be stored and read back whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from attnphase.models.copy_heads.results import PosteriorMeans, SolveResult
from attnphase.models.copy_heads.row_mean_field_results import RowPosteriorMeans
from attnphase.results import Result, Status
from attnphase.validate.compare import Comparison, verdict_of

__all__ = ["Coverage", "RunSummary", "ChainDiagnostics", "SimulationResult", "SweepResult", "HysteresisChain",
           "StartMean", "HysteresisPoint", "HysteresisResult", "RowModelResult"]


@dataclass(frozen=True)
class Coverage:
    """Fraction of the sampled attention matrices' variance captured by the two order-parameter directions
    (about the pooled mean), the top-2 principal components' fraction for comparison, and the fraction of the
    second moment (‖P G‖²/‖G‖²)."""

    variance_fraction: float
    pca_top2_fraction: float
    second_moment_fraction: float


@dataclass(frozen=True)
class RunSummary:
    """One chain (MALA) or seed (Adam): time means after burn-in (MALA) or the final state (Adam)."""

    start: str
    kept: bool
    c_uniform: float
    c_copy: float
    c_copy_std: float
    rho: float
    train_loss: float
    test_loss: float
    acceptance: float


@dataclass(frozen=True)
class ChainDiagnostics:
    """Convergence of one compared quantity over the sampled chains (`numeric.mcmc.summarize_chains` on the chains
    of each training set that are not left out as trapped): the largest split R-hat over the training sets, bulk, tail
    and mean effective sample sizes (summed over the training sets) and the Monte Carlo standard error of the mean;
    status poor_mixing when R-hat > `rhat_max` (1.05) or the ESS of the mean is below `ess_min` (100), the message
    says which. Fewer than 4 draws per chain, or a chain that never changed the quantity (it did not move): none can
    be computed (NaN), poor_mixing, and the message says so."""

    name: str
    rhat: float
    ess_bulk: float
    ess_tail: float
    mcse: float
    chains: int
    draws_per_chain: int
    status: Status
    message: str
    ess_mean: float = math.nan


@dataclass(frozen=True)
class SimulationResult(Result):
    """The real network at P against the theory (`simulate`): every run (`chains`), the theory at the P the data
    realise (`P_used`, from `sequences` training sequences each in `data_sets` independent training sets), one
    comparison per measured quantity, the coverage of the sampled matrices by the order-parameter plane, (linear,
    fluctuations) the posterior means, the convergence diagnostics of each compared quantity (MALA) and the torch
    threads used.

    Error bars (`comparisons`): the simulation's own statistics. MALA, one training set: the Monte Carlo standard error
    of the mean from the effective sample size over its chains; several: the standard error of the training sets' means
    (their spread holds the finite-P fluctuation of one data set as well), and the agreement band is the Student-t
    quantile for that many sets (chains left out as trapped count in none of them). Adam: the spread of the kept runs
    (one set) or of the sets' means, with the largest change of a run over the second half of its steps added in
    quadrature. test_loss's bar also holds the test set's own sampling error (`test_set_error`, added in quadrature;
    `chain_statistics.test_set_error`). A comparison without a verdict (agrees None) has its reason in words (a tuple)
    under its name in `no_verdict` (`chain_statistics.verdict_withheld`): diagnostics that fail ("not resolved"), two
    training sets, trapped chains kept, one chain on the only training set. The theory is the P → ∞ self-averaged one;
    no finite-P term is added to it (theory_error: with `fluctuations`, the Monte Carlo error of the linear posterior
    means or the quadrature error of the softmax ones; else 0). posterior_means: with `fluctuations`, the linear
    posterior means (`PosteriorMeans`) or the softmax row mean field's (`RowPosteriorMeans`), else None."""

    algorithm: str
    P_used: float
    sequences: int
    n: float
    chains: tuple
    theory: SolveResult
    comparisons: tuple
    coverage: Coverage
    status: Status
    message: str
    posterior_means: PosteriorMeans | RowPosteriorMeans | None = None
    data_sets: int = 1
    diagnostics: tuple = ()
    threads: int = 1
    test_set_error: float = field(default=math.nan, metadata={"unit": "standard error of test_loss from the test "
                                                                      "set's own sampling, in its bar"})
    no_verdict: dict = field(default_factory=dict)

    def comparison(self, name: str) -> Comparison:
        return next(c for c in self.comparisons if c.name == name)

    @property
    def theory_agrees(self) -> bool | None:
        """The comparisons' verdict on the theory: False when any compared quantity rejects it, True when every one
        agrees, None otherwise (no verdict on some, `no_verdict` says why, and no rejection): never True while a
        compared quantity is not resolved. `status` says whether the run itself can be trusted (mixed, settled), as
        for every model's `simulate`; this says whether the theory matches it."""
        return verdict_of(self.comparisons)

    def compared_with(self, name: str, theory: float, theory_error: float = 0.0) -> Comparison:
        """The measured quantity `name` against another theory value, with the same error bars and band (e.g. a
        different reduction, or a theory shifted on purpose to show that the comparison can fail); no verdict where
        the measured comparison gives none (`no_verdict` says why: not resolved, two training sets, ...)."""
        measured = self.comparison(name)
        scale = math.hypot(measured.sem, theory_error)
        z = (measured.mean - theory) / scale if scale > 0 else None
        agrees = abs(z) <= measured.n_sigma if z is not None else measured.mean == theory
        if measured.agrees is None:
            agrees = None
        return Comparison(name, float(theory), float(theory_error), measured.mean, measured.std, measured.sem,
                          measured.n, z, agrees, measured.n_sigma)

    def as_dict(self) -> dict:
        out = super().as_dict()
        out["theory"] = {"minima": out["theory"]["minima"], "global": self.theory.as_dict()["global"]}
        if self.posterior_means is None:
            del out["posterior_means"]
        out["theory_agrees"] = self.theory_agrees
        return out


@dataclass(frozen=True)
class SweepResult(Result):
    """Runs of the real network at several P in one batch (`simulate_sweep`), one entry per run in every array, in the
    order P, training set, run on that set: P, chain (index within its P, over its training sets), start, kept (MALA:
    not trapped; Adam: the filter), c_uniform, c_copy, c_copy_sem (batch means of the chain's own draws), train_loss,
    test_loss, G_mean (mean attention matrix, (runs, L, L)) and data_set (index of the run's training set within its
    P; the sets are independent, each P's drawn after the previous P's)."""

    algorithm: str
    P: np.ndarray
    chain: np.ndarray
    start: tuple
    kept: np.ndarray
    c_uniform: np.ndarray
    c_copy: np.ndarray
    c_copy_sem: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    G_mean: np.ndarray = field(repr=False)
    status: Status = Status.CONVERGED
    message: str = ""
    data_set: np.ndarray | None = None

    def __post_init__(self):
        if self.data_set is None:  # one training set per P
            object.__setattr__(self, "data_set", np.zeros(len(self.P), int))
        super().__post_init__()  # the arrays held read-only (`Result`)

    def rows(self):
        return [{"P": float(self.P[i]), "chain": int(self.chain[i]), "data_set": int(self.data_set[i]),
                 "start": self.start[i], "kept": bool(self.kept[i]), "c_uniform": float(self.c_uniform[i]),
                 "c_copy": float(self.c_copy[i]), "c_copy_sem": float(self.c_copy_sem[i]),
                 "train_loss": float(self.train_loss[i]), "test_loss": float(self.test_loss[i])}
                for i in range(len(self.P))]


@dataclass(frozen=True)
class HysteresisChain:
    """One chain of a hysteresis run: its data set, start, time-mean c with its batch-means error, acceptance
    and the copy strength of every recorded sample (`c_trace`, every 10 steps after burn-in)."""

    data_set: int
    start: str
    c: float
    c_sem: float
    acceptance: float
    c_trace: np.ndarray


@dataclass(frozen=True)
class StartMean:
    """Mean c of one start over data sets, with its standard error over data sets (batch means for one)."""

    c: float
    c_err: float


@dataclass(frozen=True)
class HysteresisPoint:
    P: float
    sequences: int
    uniform_start: StartMean
    copy_start: StartMean
    delta_c: float
    delta_c_err: float
    chains: tuple


@dataclass(frozen=True)
class HysteresisResult(Result):
    """Uniform- and copy-start MALA chains on shared data sets across P (`simulate_hysteresis`)."""

    L: int
    V: int
    steps: int
    data_sets: int
    points: tuple
    status: Status
    message: str


@dataclass(frozen=True)
class RowModelResult(Result):
    """MALA of the row model (`simulate_row_model`): time means of c and q over the chains after burn-in, with
    batch-means errors; per-chain means of c; acceptance per chain."""

    P: float
    n: float
    c: float
    c_err: float
    q: float
    q_err: float
    per_chain_c: tuple
    acceptance: tuple
    status: Status
    message: str
