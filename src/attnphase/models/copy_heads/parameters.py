"""The declared inputs of the copy-heads entry points: ranges written once for the Python API and the CLI.

Light on purpose (no SymPy, no torch): the CLI builds its options from these declarations when it loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.params import (
    IntRange, OneOf, ParameterSet, RealRange, check_bool, check_real, check_real_list, parameter,
)

__all__ = ["ATTENTIONS", "REDUCTIONS", "ALGORITHMS", "MAX_L", "MAX_LINEAR_L", "MAX_CAUSAL_LINEAR_L", "MAX_V",
           "MAX_SCALING_L", "reject_missing", "check_P_values", "InstanceParameters", "DataSize", "ThresholdSettings",
           "ScalingRange", "SimulationSettings"]

ATTENTIONS = ("softmax", "linear")
REDUCTIONS = ("convention-a", "first-attempt")
ALGORITHMS = ("mala", "adam")
# Largest sizes at which the float64 arithmetic of the reduced actions is known to work (docs/models/copy_heads.md,
# "Ranges"). Softmax: P* is computed at L = 2^256 (tests), and the action's derivatives overflow float64 beyond it.
# Linear: P* and the crossover are computed to L = 2^128, the first attempt fails (status) from L ~ 2^32 and raises
# from 2^128: 2^64 leaves room on both sides. Causal linear: arrays of one entry per row (L − 1 floats). V: linear P*
# ~ V² is computed to V = 2^100 (overflow of the action beyond ~2^128); softmax does not depend on V beyond ε.
MAX_L = 2**256
MAX_LINEAR_L = 2**64
MAX_CAUSAL_LINEAR_L = 2**24
MAX_V = 2**64
MAX_SCALING_L = 2**24


def reject_missing(parameters: ParameterSet) -> None:
    """A ParameterError for a declared value that is None where None is not its default (`ParameterSet.validated`
    passes None through as "absent")."""
    for name, declared in parameters.declarations().items():
        allowed = declared.metadata.get("allowed")
        if getattr(parameters, name) is None and declared.default is not None and allowed is not None:
            raise ParameterError(name, None, allowed.describe())


def check_P_values(name: str, values) -> list[float]:
    """A non-empty list of data sizes P > 0 (a comma-separated string is accepted), or a ParameterError naming
    `name`."""
    return [check_real(name, P, 0.0, None, low_open=True) for P in check_real_list(name, values)]


@dataclass(frozen=True)
class InstanceParameters(ParameterSet):
    """(attention, L, V, convention) of one model instance (`instance.CopyHeadsInstance` adds its kernels)."""

    attention: str = parameter(OneOf(ATTENTIONS), help="Attention activation.")
    L: int = parameter(IntRange(2, MAX_L),
                       help="Sequence length (at most 2^256; linear attention 2^64, 2^24 with the causal mask).")
    V: int = parameter(IntRange(2, MAX_V), help="Vocabulary size.")
    convention: Convention = parameter(None, DEFAULT)

    def check_joint(self) -> None:
        reject_missing(self)
        if not isinstance(self.convention, Convention):
            raise ParameterError("convention", self.convention, "an attnphase.models.copy_heads.Convention")
        self.convention.check_applies_to(self.attention)
        if self.convention.boundary in ("drop-first", "causal") and self.L < 3:
            raise ParameterError("L", self.L, f"an integer >= 3 with boundary '{self.convention.boundary}'")
        if self.attention == "linear" and self.convention.boundary == "causal" and self.L > MAX_CAUSAL_LINEAR_L:
            raise ParameterError("L", self.L, "an integer in [3, 2^24] for linear attention with boundary 'causal' "
                                              "(arrays of one entry per row)")
        if self.attention == "linear" and self.L > MAX_LINEAR_L:
            raise ParameterError("L", self.L, "an integer in [2, 2^64] for linear attention (the float64 action "
                                              "overflows from about 2^150)")


@dataclass(frozen=True)
class DataSize(ParameterSet):
    """P, the amount of data (see the P convention: target tokens by default)."""

    P: float = parameter(RealRange(0.0, None, low_open=True), help="Number of samples, see the P convention.")

    def check_joint(self) -> None:
        reject_missing(self)


@dataclass(frozen=True)
class ThresholdSettings(ParameterSet):
    digits: int = parameter(IntRange(1, 100), 30, help="Significant digits of P_star_digits.")
    reduction: str = parameter(OneOf(REDUCTIONS), "convention-a",
                               help="Linear: Convention A in (t, c), or the first attempt in (m, q) only.")
    row_rate: str = parameter(OneOf(("shortcut", "exact")), "shortcut",
                              help="Softmax: also compute P* with the exact row rate (Sobol over the other scores; "
                                   "float64; P_star_exact_row_rate_digits keeps only the digits its Sobol error "
                                   "supports).")

    def check_joint(self) -> None:
        reject_missing(self)


@dataclass(frozen=True)
class ScalingRange(ParameterSet):
    """The sizes of a scaling study: L_min, the powers of 2 in between and L_max (at least 3 values)."""

    L_min: int = parameter(IntRange(2, MAX_SCALING_L), help="Smallest L.")
    L_max: int = parameter(IntRange(2, MAX_SCALING_L), help="Largest L (>= L-min).")
    digits: int = parameter(IntRange(1, 100), 15, help="Significant digits of each P*.")

    def check_joint(self) -> None:
        reject_missing(self)
        if self.L_max < self.L_min:
            raise ParameterError("L_max", self.L_max, f"an integer >= the smallest L ({self.L_min})")
        values = self.L_values()
        if len(values) < 3:
            needed = 2 * 2 ** math.ceil(math.log2(values[0] + 1))  # twice the smallest power of 2 above L_min
            if needed > MAX_SCALING_L:  # no L_max within its range helps: L_min is too close to the cap
                # the largest L_min that leaves a power of 2 between it and the largest L allowed
                top = 2 ** ((MAX_SCALING_L - 1).bit_length() - 1) - 1
                raise ParameterError("L_min", self.L_min, f"an integer in [2, {top}]: the smallest L, the powers of 2 "
                                                          f"in between and the largest L (at most {MAX_SCALING_L}) "
                                                          "give at least 3 values of L (a fit has 2 parameters)")
            raise ParameterError("L_max", self.L_max, f"large enough that the smallest L, the powers of 2 in between and "
                                                      f"the largest L give at least 3 values of L (a fit has 2 "
                                                      f"parameters); smallest L = {self.L_min}, e.g. largest L >= "
                                                      f"{needed}")

    def L_values(self) -> list[int]:
        values = {self.L_min, self.L_max}
        k = 1
        while 2**k <= self.L_max:
            if 2**k > self.L_min:
                values.add(2**k)
            k += 1
        return sorted(values)


@dataclass(frozen=True)
class SimulationSettings(ParameterSet):
    """How the real network is run (`simulate`)."""

    algorithm: str = parameter(OneOf(ALGORITHMS), "mala",
                               help="mala: Metropolis-adjusted Langevin sampling of the posterior; adam: joint MAP "
                                    "from prior draws.")
    trials: int = parameter(IntRange(1, 4096), 2,
                            help="Independent runs: MALA chains (alternating uniform/copy starts) or Adam seeds.")
    steps: int = parameter(IntRange(10, 10**7), 4000, help="Sampler or optimiser steps.")
    seed: int = parameter(IntRange(0, 2**63 - 1), 0, help="Seed of the data and of the runs.")
    device: str = parameter(OneOf(("auto", "cpu", "cuda")), "auto", help="Where the runs are computed.")
    qk_width: int | None = parameter(IntRange(0, 10**5), None,
                                     help="Query/key width d (>= L) for scores Q^T K/sqrt(d); 0 samples the scores "
                                          "directly (wide limit).")
    n_test_sequences: int = parameter(IntRange(2, 10**6), 2000, help="Held-out sequences for the test loss.")
    rng: str = parameter(OneOf(("device", "cpu")), "device",
                         help="device: the simulation device's own generator (fastest); cpu: drawn on the CPU and "
                              "copied, so that the same seed gives the same numbers on every device.")
    fluctuations: bool = parameter(None, False,
                                   help="mala: compare with posterior means instead of the reduced action's minimum: "
                                        "linear, over exp(-S) of the reduced action (the order parameters' own "
                                        "fluctuations); softmax, over the joint row mean field (each row's "
                                        "fluctuations kept; L >= 3; under the causal mask its theory takes about "
                                        "1 min at L = 32 and 4 at L = 64 on 2 cores, more beyond).")
    data_sets: int = parameter(IntRange(1, 4096), 1,
                               help="Independent training sets, trials/data-sets runs on each; with more than one the "
                                    "error bars include the data-set-to-data-set spread (finite P).")
    threads: int | None = parameter(IntRange(1, 4096), None,
                                    help="CPU threads for torch (default: 1, or the idle cores when one step is large).")
    rhat_max: float = parameter(
        RealRange(1.0, None), 1.05,
        help="MALA: largest split R-hat of a compared quantity for status converged (2 chains of 200 draws at "
             "autocorrelation time 2.5 exceed 1.05 with probability 0.005).")
    ess_min: float = parameter(
        RealRange(1.0, None), 100.0,
        help="MALA: smallest effective sample size of a compared quantity's mean (over all chains) for status "
             "converged; the error bar's own relative error is about sqrt(3.5/ESS), 0.19 at 100.")
    trap_sds: float = parameter(
        RealRange(0.0, None, low_open=True), 5.0,
        help="MALA: a chain whose mean data term (beta/2 times its squared error, nats) lies more than this many "
             "within-chain standard deviations above the lowest chain's on its training set is trapped.")
    trapped: str = parameter(
        OneOf(("leave-out", "keep")), "leave-out",
        help="MALA: leave trapped chains out of the means (never the lowest chain), or keep them (then no agreement "
             "is claimed: agrees is None).")
    adam_tolerance: float = parameter(
        RealRange(0.0, None, low_open=True), 1e-6,
        help="Adam: largest change of a compared quantity over the second half of the steps (relative to max(1, "
             "|value|)) for status converged; the change is in the error bar either way.")

    def check_joint(self) -> None:
        reject_missing(self)
        check_bool("fluctuations", self.fluctuations)  # declared without a range: a flag, not a truth value
        if self.trials % self.data_sets:
            raise ParameterError("data_sets", self.data_sets, f"a divisor of trials ({self.trials}): every training "
                                                               "set gets the same number of runs")

    @classmethod
    def default(cls, name: str):
        """The declared default of one setting: the signatures that take it (`simulate`, `simulate_sweep`) read it
        here, so that each default is written once."""
        return cls.declarations()[name].default

    @property
    def wide(self) -> bool:
        """Scores sampled directly (no query/key weights)."""
        return not self.qk_width
