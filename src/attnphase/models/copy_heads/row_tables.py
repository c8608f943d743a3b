"""One row of softmax attention, tabulated: the density of its previous-position logit and its (a, q).

The homogeneous reduced action T·I(x) + S_data puts every target row at the same previous-position logit x (a
Laplace approximation per row). The data term couples the rows only through the averages m = (1/T) Σ_l a_l and
q = (1/T) Σ_l q_l (q_l = ‖g_l‖²), and the rows are independent under the prior, so for many rows the density of
(m, q) is exp(−T Λ*(m, q)) (Cramér), with Λ* the Legendre transform of the cumulant function of one row,

    Λ(h, g) = ln ∫ dx p(x) exp(h a(x) + g q(x)),   a = 1/(1 + e^{−x}),  q(x) = a² + k(1 − a)²/(L − 1),

(p the row-logit density, exact or the large-L shortcut; k the participation of the other weights as in the
homogeneous action). Row density "joint" keeps the participation Y = Σ_{m≠prev} w_m² of the other weights
(w their own softmax) as a random variable, q = a² + (1 − a)² Y with (x, Y) from their exact joint density:

    Λ(h, g) = ln ∫ dx dY p(x, Y) exp(h a(x) + g [a² + (1 − a)² Y]).

On the copy branch the tilt g = −S_q/T is large and negative (−24 to −80 at L = 32, V = 4, P = 640…1920): rows
whose other weights are spread evenly (small Y) are favoured, which the prior mean k/(L − 1) misses. The mean
participation makes q too large and Λ too small there, and the copy minimum comes out 0.01–0.02 too high in c
(L = 32; MALA of the scores under the self-averaged data term agrees with "joint" to ≤ 0.001, see docs).
This module tabulates p and (a, q) per row and evaluates the row-averaged Λ̄ and its derivatives
(`numeric.tilting`); `row_mean_field` minimises F = T Λ̄* + S_data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import expit

from attnphase.errors import ParameterError
from attnphase.models.copy_heads import exact
from attnphase.models.copy_heads.convention import Convention
from attnphase.numeric.tilting import Tilted, tilt
from attnphase.params import check_choice, check_int

__all__ = ["ROW_DENSITIES", "ROW_SET_DENSITIES", "JOINT_PARTICIPATION_BINS", "HYBRID_EXACT_MAX", "MAX_ROW_LENGTH",
           "CAUSAL_SOFTMAX_MAX_L", "check_row_set_size", "RowTable", "row_table", "RowSet", "row_set", "tilted_rows",
           "tilted_row_moments", "tilted_row_covariance"]

ROW_DENSITIES = ("exact", "shortcut", "joint")
# "joint": bins of the participation Y per logit x (equal prior mass each); 8 and 32 bins give the same L = 32 copy
# minima to 2e-4 in c, the binning error (the spread of Y within a bin) falls with the bin width squared
JOINT_PARTICIPATION_BINS = 16
# row sets may mix them: "hybrid" uses the exact density for rows attending to at most HYBRID_EXACT_MAX positions and
# the shortcut beyond (causal mask at large L, where L − 1 exact densities are too costly)
ROW_SET_DENSITIES = ROW_DENSITIES + ("hybrid",)
HYBRID_EXACT_MAX = 64
# Most positions one row may attend to: its exact table is a Sobol average over the L − 1 other scores.
MAX_ROW_LENGTH = 2**16
# Largest L of a row set under the causal mask: one table per row length, L − 1 of them (about 3 min of tables and
# grid at L = 256; at L = 300 a solve ran for minutes).
CAUSAL_SOFTMAX_MAX_L = 256


def check_row_set_size(L: int, boundary: str) -> int:
    """L of a softmax row set (`row_set`), or a ParameterError naming L before any table is made: at most
    MAX_ROW_LENGTH, and CAUSAL_SOFTMAX_MAX_L under the causal mask."""
    if boundary == "causal":
        L = check_int("L", L, 2, None)
        if L > CAUSAL_SOFTMAX_MAX_L:
            raise ParameterError("L", L, f"at most {CAUSAL_SOFTMAX_MAX_L} for softmax with boundary 'causal' (a row "
                                         "mean field with L − 1 distinct rows)")
        return L
    return check_int("L", L, 2, MAX_ROW_LENGTH)


@dataclass(frozen=True)
class RowTable:
    """One row of softmax attention on a grid of its previous-position logit x.

    log_weight: ln p(x) + ln(grid spacing) (trapezoid quadrature of ∫ dx p(x) ·); relative_error: the
    Sobol standard error of p(x) over p(x) (0 for the closed-form shortcut density).
    """

    x: np.ndarray
    log_weight: np.ndarray
    a: np.ndarray
    q: np.ndarray
    relative_error: np.ndarray
    participation: float
    # "joint" only: Σ_{m≠m'} w_m² w_m'² of the other weights (mean within each atom), for the finite-data correction
    pair_participation: np.ndarray | None = None


@lru_cache(maxsize=1024)
def row_table(L: int, sigma2: float, row_density: str = "exact", n_x: int = 600, n_points: int = 2**12,
              replicates: int = 4) -> RowTable:
    """Tabulate the row-logit density p(x) (exact: Sobol over the L − 1 other scores; shortcut: the
    Gaussian N(−ln(L−1) − σ²/2, σ²)) and the row's (a, q) on a grid of x.

    "joint": the joint density of x and the participation Y of the other weights (`_joint_row_table`); the arrays
    then run over the atoms (x_j, bin k of Y), n_x · JOINT_PARTICIPATION_BINS of them (x repeated), so every
    tilted average over the table is the same sum over atoms."""
    from attnphase.numeric.sobol import sobol_expectation

    L = check_int("L", L, 2, MAX_ROW_LENGTH)  # positions the row attends to (2 and up under the causal mask)
    row_density = check_choice("row_density", row_density, ROW_DENSITIES)
    sigma = math.sqrt(sigma2)
    centre = -math.log(L - 1) - sigma2 / 2
    # a = 1/(1 + e^{−x}) is flat beyond x ≈ 12 and the prior weight below centre − 8σ is < e^{−32}
    x = np.linspace(centre - 8 * sigma, max(12.0, centre + 8 * sigma), n_x)
    if row_density == "joint":
        return _joint_row_table(L, sigma2, x, n_points, replicates)
    if row_density == "shortcut":
        log_p = -((x - centre) ** 2) / (2 * sigma2) - 0.5 * math.log(2 * math.pi * sigma2)
        rel = np.zeros_like(x)
        k = L - 1.0 if sigma2 >= math.log(L - 1.0) else math.exp(sigma2)
    else:
        mean, cov = np.zeros(L - 1), np.eye(L - 1) * sigma2
        dens = sobol_expectation(exact.row_logit_density_integrand(x, sigma2), mean, cov, n_points=n_points,
                                 replicates=replicates)
        value = np.asarray(dens.value, float)
        # far in the right tail the Sobol estimate can underflow to 0: those points carry no weight
        log_p = np.log(np.where(value > 0, value, np.finfo(float).tiny))
        rel = np.where(value > 0, np.asarray(dens.error, float) / np.where(value > 0, value, 1.0), 1.0)
        k = float(sobol_expectation(exact.row_participation_integrand, mean, cov, n_points=n_points,
                                    replicates=replicates).value)
    a = expit(x)
    return RowTable(x, log_p + math.log(x[1] - x[0]), a, a * a + k * (1 - a) ** 2 / (L - 1), rel, k)


def _joint_row_table(L: int, sigma2: float, x: np.ndarray, n_points: int, replicates: int,
                     n_bins: int = JOINT_PARTICIPATION_BINS) -> RowTable:
    """Row table over atoms (x_j, Y-bin k): weight p(x_j, k)·Δx and q = a_j² + (1 − a_j)² Ȳ_jk with Ȳ_jk the mean
    participation within bin k given x_j (`exact.row_joint_density_integrand`, Sobol over the L − 1 other
    scores, the same points for every x). Bin edges: prior quantiles of Y from 4096 pseudo-random rows; any edges
    give a consistent table, quantiles put equal prior mass in each bin."""
    from attnphase.numeric.sobol import sobol_expectation

    rng = np.random.default_rng(0)
    z = math.sqrt(sigma2) * rng.standard_normal((4096, L - 1))
    w = np.exp(z - np.logaddexp.reduce(z, axis=1)[:, None])
    edges = np.quantile((w**2).sum(axis=1), np.linspace(0.0, 1.0, n_bins + 1))
    edges[0], edges[-1] = 0.0, 1.0 + 1e-12  # Y ∈ [1/(L − 1), 1]
    mean, cov = np.zeros(L - 1), np.eye(L - 1) * sigma2
    mass, moment, pair_moment, err = (np.empty((len(x), n_bins)) for _ in range(4))
    chunk = 16  # x values per Sobol call: the integrand holds N × 3 × chunk × n_bins numbers
    for i in range(0, len(x), chunk):
        sl = slice(i, i + chunk)
        res = sobol_expectation(exact.row_joint_density_integrand(x[sl], sigma2, edges), mean, cov, n_points=n_points,
                                replicates=replicates)
        mass[sl], moment[sl], pair_moment[sl] = np.asarray(res.value, float).reshape(3, -1, n_bins)
        err[sl] = np.asarray(res.error, float).reshape(3, -1, n_bins)[0]
    positive = mass > 0
    safe_mass = np.where(positive, mass, 1.0)
    Y = np.where(positive, moment / safe_mass, 0.0)
    pairs = np.where(positive, pair_moment / safe_mass, 0.0)
    a = np.repeat(expit(x)[:, None], n_bins, axis=1)
    log_w = np.log(np.where(positive, mass, np.finfo(float).tiny)) + math.log(x[1] - x[0])
    rel = np.where(positive, err / np.where(positive, mass, 1.0), 1.0)
    k = float(sobol_expectation(exact.row_participation_integrand, mean, cov, n_points=n_points,
                                replicates=replicates).value)
    return RowTable(np.repeat(x[:, None], n_bins, axis=1).ravel(), log_w.ravel(), a.ravel(),
                    (a * a + (1 - a) ** 2 * Y).ravel(), rel.ravel(), k, pairs.ravel())


@dataclass(frozen=True)
class RowSet:
    """The distinct target rows of one boundary convention, each with its multiplicity (periodic and
    drop-first: one row table, T times; causal mask: the rows l = 2..L, once each). Arrays are (R, n_x)."""

    x: np.ndarray
    log_weight: np.ndarray
    a: np.ndarray
    q: np.ndarray
    relative_error: np.ndarray
    multiplicity: np.ndarray
    positions: np.ndarray  # positions each row attends to
    participation: np.ndarray
    pair_participation: np.ndarray | None = None  # "joint" tables only (RowTable.pair_participation)

    @property
    def targets(self) -> float:
        return float(self.multiplicity.sum())

    @property
    def row_weights(self) -> np.ndarray:
        """Each row's share of the targets (multiplicity/T): the weights of a row average."""
        return self.multiplicity / self.targets

    def average(self, per_row: np.ndarray) -> np.ndarray:
        """(1/T) Σ_l of a per-row quantity (..., R)."""
        return (per_row * self.row_weights).sum(-1)

    @property
    def uniform_overlap(self) -> float:
        """m of the uniform pattern (every row at its prior mean 1/l): H/T."""
        return float((self.multiplicity / self.positions).sum() / self.targets)

    def copy_strength(self, m_):
        """c of the plane projection with every row sum 1: (T m − H)/(T − H) (= (Lm − 1)/(L − 1) for equal rows)."""
        H, T_ = self.uniform_overlap * self.targets, self.targets
        return (T_ * np.asarray(m_) - H) / (T_ - H)


def row_set(L: int, conv: Convention, row_density: str = "exact") -> RowSet:
    """The target rows of the convention with their densities (`row_table`).

    row_density "hybrid": exact for rows attending to l ≤ HYBRID_EXACT_MAX positions, the shortcut beyond (its rate
    error, v(s² + sσ² − σ²)/(2σ⁴) with v = (e^{σ²} − 1)/(l − 1), shrinks as 1/l; at l = 64 the periodic P* it gives
    is 5.5% high, at 128 2.7%)."""
    if not isinstance(conv, Convention):
        raise ParameterError("conv", conv, "an attnphase.models.copy_heads.Convention")
    L = check_row_set_size(L, conv.boundary)
    row_density = check_choice("row_density", row_density, ROW_SET_DENSITIES)
    lengths, counts = np.unique(exact.visible_positions(L, conv.boundary), return_counts=True)

    def density(l_):
        if row_density == "hybrid":
            return "exact" if l_ <= HYBRID_EXACT_MAX else "shortcut"
        return row_density

    tables = [row_table(int(l_), conv.sigma2, density(int(l_))) for l_ in lengths]
    stack = lambda name: np.stack([getattr(tb, name) for tb in tables])  # noqa: E731
    pairs = stack("pair_participation") if all(tb.pair_participation is not None for tb in tables) else None
    return RowSet(stack("x"), stack("log_weight"), stack("a"), stack("q"), stack("relative_error"), counts.astype(float),
                  lengths.astype(float), np.array([tb.participation for tb in tables]), pairs)


def tilted_rows(table: RowSet, h, g) -> Tilted:
    """Every row's density tilted by e^{h a + g q_l} (`numeric.tilting.tilt`), vectorised over the tilts (h, g)."""
    return tilt(table.log_weight, h, table.a, g, table.q)


def tilted_row_moments(table: RowSet, h, g):
    """Row averages (1/T) Σ_l of Λ_l(h, g), E_l[a], E_l[q] and E_l[relative error] under p_l(x) e^{h a + g q_l},
    vectorised over (h, g): every row its own cumulant function, all rows under the same fields."""
    tilted = tilted_rows(table, h, g)
    return (table.average(tilted.log_partition), table.average(tilted.mean(table.a)), table.average(tilted.mean(table.q)),
            table.average(tilted.mean(table.relative_error)))


def tilted_row_covariance(table: RowSet, h, g):
    """(Λ̄, m, q, det ∇²Λ̄) at tilts (h, g): ∇²Λ̄ is the row-averaged covariance of (a, q) under the tilted density."""
    tilted = tilted_rows(table, h, g)
    ma, mq = tilted.mean(table.a), tilted.mean(table.q)
    vaa, vqq = tilted.mean(table.a**2) - ma**2, tilted.mean(table.q**2) - mq**2
    vaq = tilted.mean(table.a * table.q) - ma * mq
    avg = table.average
    return avg(tilted.log_partition), avg(ma), avg(mq), avg(vaa) * avg(vqq) - avg(vaq) ** 2
