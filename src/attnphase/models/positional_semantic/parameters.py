"""The model's parameters and the settings of its commands, declared once: the Python API, the CLI
options and the simulator use the same declarations (ranges, defaults, help, option names).

`Parameters.validated(omega=..., ...)` checks every value against its declared range, then the
constraints between them (A an L×L row-stochastic matrix, the Gram matrix of the encodings L×L
symmetric positive semi-definite), and returns a frozen object that everything downstream trusts.
`Accuracy`, `ThresholdSearch` and `Simulation` declare what `solve` and the threshold searches are asked
for (a tolerance) and the settings of the simulator the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import IntRange, OneOf, ParameterSet, RealListRange, RealRange, check_choice, parameter

__all__ = ["DEFAULT_A", "MAX_ALPHA", "SIGMA_RANGE", "LAM_RANGE", "INITS", "Parameters", "Accuracy", "ThresholdSearch",
           "Simulation", "default_gram", "check_parameter", "check_names"]

DEFAULT_A = (0.6, 0.4, 0.4, 0.6)
# σ and λ ranges where the solver's starting point and the baseline stay representable: below σ = 1e-3
# (or above λ = 1e6) the ridge guess V = σ²/(λ + σ²) underflows towards 0, outside its domain; above
# σ = 100 the prefactor ½(1−ω)²σ² of the baseline and the teacher scores σ²ξ² leave the range where the
# quadrature means anything (σ = 1e300 overflowed).
SIGMA_RANGE = RealRange(1e-3, 100.0)
LAM_RANGE = RealRange(0.0, 1e6, low_open=True)
POSITIVE = RealRange(0.0, None, low_open=True)
# Every branch is followed in α from where it is known to exist (0.3 and 3), so a solve's time grows with α: about
# 40 s at α = 100 on 2 cores, and more than 10 minutes at α = 1000.
MAX_ALPHA = 100.0
ALPHAS = RealRange(0.0, MAX_ALPHA, low_open=True)
INITS = ("semantic", "positional", "random")


def default_gram(L: int) -> tuple[float, ...]:
    """Gram matrix of the paper's positional encodings generalised to L tokens: unit vectors ±1/√d alternating. L is
    checked against the model's range (`Parameters`' L) first: L = 2**70 was an endless loop, NaN a TypeError."""
    L = Parameters.declarations()["L"].metadata["allowed"].check("L", L)
    signs = np.array([(-1.0) ** i for i in range(L)])
    return tuple(float(v) for v in np.outer(signs, signs).ravel())


@dataclass(frozen=True)
class Parameters(ParameterSet):
    """Validated model parameters. A: the teacher's positional part, row-stochastic L×L (row-major; default
    DEFAULT_A for L = 2, required otherwise); gram: G_p of the positional encodings (row-major; default
    `default_gram(L)`)."""

    omega: float = parameter(RealRange(0.0, 1.0), help="Positional weight ω of the teacher")
    sigma: float = parameter(SIGMA_RANGE, 0.5, help="Token standard deviation σ")
    lam: float = parameter(LAM_RANGE, 0.01, help="Weight decay λ")
    A: tuple[float, ...] | None = parameter(
        RealListRange(None, 0.0, 1.0), None, option="--A",
        help="Row-stochastic L×L positional part of the teacher, row-major (default 0.6,0.4,0.4,0.6 for L = 2)")
    L: int = parameter(IntRange(2, 6), 2, option="--L", help="Number of tokens")
    gram: tuple[float, ...] | None = parameter(RealListRange(), None,
                                               help="Gram matrix of the positional encodings, row-major")

    def __post_init__(self):
        # the defaults that depend on L (A only for L = 2: check_joint requires it otherwise)
        if self.A is None and self.L == 2:
            object.__setattr__(self, "A", DEFAULT_A)
        if self.gram is None:
            object.__setattr__(self, "gram", default_gram(self.L))

    def check_joint(self) -> None:
        L = self.L
        if self.A is None:
            raise ParameterError("A", self.A, f"required for L = {L}: a row-stochastic {L}x{L} matrix, row-major")
        if len(self.A) != L * L:
            raise ParameterError("A", self.A, f"a list of exactly {L * L} numbers")
        if not np.allclose(self.A_matrix.sum(axis=1), 1.0, atol=1e-12):
            raise ParameterError("A", self.A, "a row-stochastic matrix (entries in [0, 1], each row summing to 1)")
        if len(self.gram) != L * L:
            raise ParameterError("gram", self.gram, f"a list of exactly {L * L} numbers")
        G = self.gram_matrix
        if not np.allclose(G, G.T) or np.linalg.eigvalsh(G).min() < -1e-12:
            raise ParameterError("gram", self.gram, "a symmetric positive semi-definite Gram matrix")

    @property
    def rho(self) -> float:
        """Teacher self-overlap Q*ᵀΣQ*/d for ‖Q*‖² = d."""
        return self.sigma**2

    @property
    def A_matrix(self) -> np.ndarray:
        return np.array(self.A, dtype=float).reshape(self.L, self.L)

    @property
    def gram_matrix(self) -> np.ndarray:
        return np.array(self.gram, dtype=float).reshape(self.L, self.L)

    @property
    def swap_symmetric(self) -> bool:
        """Whether A and G_p are invariant under reversing the token order (the spec's setting, to which
        the threshold searches are restricted).

        Not needed for the branches themselves: m = 0 and θ = 0 are invariant sets for EVERY A and G_p.
        The loss depends on h and on h* only through the even maps h_ℓh_κ and h*_ℓh*_κ, so
        prox(−ω, −h*) = −prox(ω, h*); at m = 0 the fields (ω, h*) are odd in (ξ, η), hence g is odd and
        m̂ = αE[g] = 0, m = G_p m̂/D = 0 (tested for asymmetric A at L = 2 and L = 3). θ = 0 likewise
        by the symmetry η → −η."""
        P = np.eye(self.L)[::-1]
        A, G = self.A_matrix, self.gram_matrix
        return bool(np.allclose(P @ A @ P, A, atol=0) and np.allclose(P @ G @ P, G, atol=0))


@dataclass(frozen=True)
class Accuracy(ParameterSet):
    """What `solve` is asked for: the relative tolerance of every field of a branch (q, |m|, |θ|, V, ε_g,
    ε_t, Φ), met when the spread of the field over the last three rules of the ladder is within it."""

    tol: float = parameter(RealRange(1e-6, 0.5), 3e-3, option="--tol",
                           help="Relative tolerance of every reported field, verified on finer rules")


@dataclass(frozen=True)
class ThresholdSearch(ParameterSet):
    """How a threshold is searched for: the absolute tolerance in α asked of α_c and α_l, and the range of α
    scanned for their first crossing (extended upwards while the crossing lies above it)."""

    tol: float = parameter(RealRange(1e-5, 1.0), 1e-3, option="--tol",
                           help="Absolute tolerance of α_c and α_l, verified on finer rules")
    alpha_min: float = parameter(ALPHAS, 0.3, help="Lower end of the scanned α")
    alpha_max: float = parameter(ALPHAS, 3.0, help="Upper end of the scanned α (extended while a crossing "
                                                       "lies above it)")

    def check_joint(self) -> None:
        if not self.alpha_max > self.alpha_min:
            raise ParameterError("alpha_max", self.alpha_max, f"a real number in ({self.alpha_min:g}, {MAX_ALPHA:g}]")


@dataclass(frozen=True)
class Simulation(ParameterSet):
    """A finite-d training run (network.simulate): the sample ratio, size, initialisation and optimiser
    budget, and the test set. lr None: 0.15 for GD, 0.01 for Adam (--init random)."""

    alpha: float = parameter(ALPHAS, help="Samples per dimension α = n/d")
    d: int = parameter(IntRange(2, 100_000), 1000, option="--d", help="Embedding dimension")
    init: str = parameter(OneOf(INITS), "semantic", help="Initialisation: Q* (semantic), 1/√d (positional) or "
                                                         "0.1·N(0, 1) trained by Adam (random)")
    trials: int = parameter(IntRange(1, 10_000), 5, help="Independent runs, each with its own data, teacher and "
                                                         "initialisation (batched)")
    seed: int = parameter(IntRange(0, 2**63 - 1), 0, help="Base seed")
    steps: int = parameter(IntRange(1, 10**7), 5000, help="Optimiser steps")
    lr: float | None = parameter(POSITIVE, None, help="Learning rate (default 0.15 for GD, 0.01 for Adam with --init random)")
    test_samples: int = parameter(IntRange(2, 10**7), 10_000,
                                  help="Fresh samples for the test error (at least two: their spread gives its "
                                       "standard error)")
    device: str = parameter(OneOf(("auto", "cpu", "cuda")), "auto", help="Where the runs are computed.")


def check_parameter(name: str, value):
    """One parameter checked against its declaration alone (for entry points that need only some, e.g.
    the linear baseline, which depends on ω, σ and L but not on A)."""
    return Parameters.declarations()[name].metadata["allowed"].check(name, value)


def check_names(name: str, values, choices: tuple[str, ...], element: str) -> list[str]:
    """The names in `values` (a tuple, a list, ...), each checked against `choices` and named `element` in its error.
    Anything else is a ParameterError naming `name`: None or a number holds no names, and a single name given as a
    string would be read letter by letter."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ParameterError(name, values, "a sequence of names from " + ", ".join(repr(c) for c in choices))
    return [check_choice(element, value, choices) for value in values]
