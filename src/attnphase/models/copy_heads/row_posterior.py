"""Beyond the row mean field's minima: means over each well of its posterior, and one finite data set's
correction (quenched disorder, to second order).

One finite data set. The row mean field uses the self-averaged data term. A data set of N_s sequences adds, to
first order (`symbolic.finite_data_field_coefficients`), δS = −Σ_l η_l Σ_{m≠l−1} G_lm ζ_{m,l−1} + (pairs of non-copy
weights), with η_l = η_B − 2κ a_l (the copy weight a_l enters through the M-term pairs (l−1, m)) and the pair counts
ζ (mean 0, variance N_s ε/V, uncorrelated). The rows are independent at fixed tilts, so the posterior of (m, q) for
one data set, averaged over data sets, gains −½ E_ζ Var(δS | m, q) (its mean E_ζ⟨δS⟩ vanishes; the term linear in ζ
only spreads c from data set to data set). Row l attends to l positions; its l − 1 non-copy weights are exchangeable:
    ΔF(m, q) = −½ (N_s ε/V) Σ_l { E_l(η_l² (q_l − a_l²)) − (E_l[η_l (1 − a_l)])² / (l − 1)
                                  + 2κ² [E_l((1 − a_l)⁴ W_l) − (E_l[(1 − a_l)² − (q_l − a_l²)])² / ((l − 1)(l − 2))] },
E_l the tilted row average at the (h, g) of (m, q), q_l − a_l² = (1 − a_l)² Y_l the non-copy weights' squares and
W_l = Σ_{m≠m'} w_m² w_m'² (the second line: the pairs of two non-copy weights, κ G_lm G_lm' ζ_mm'; 20–40% of ΔF at
L = 32…128 because κ ≫ η_l). The network fits the pair-count noise with its non-copy weights; the gain falls with
the copy weight a, so ΔF pulls c down. Dropped: orders ζ³ and beyond, and the O(V) terms of second order in (dM, dB)
that do not grow with T.
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.copy_heads import kernels
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.parameters import DataSize
from attnphase.models.copy_heads.row_mean_field_results import CorrectedWell, FiniteDataCorrection, RowPosteriorMeans, Well
from attnphase.models.copy_heads.row_mean_field import row_mean_field, softmax_instance
from attnphase.models.copy_heads.row_tables import ROW_SET_DENSITIES, row_set, tilted_row_covariance, tilted_rows
from attnphase.numeric.landscape import central_hessian_2d, laplace_box_average
from attnphase.params import check_choice, check_int, check_real
from attnphase.results import Status

__all__ = ["softmax_row_posterior_means", "softmax_finite_data_correction"]


def softmax_row_posterior_means(L: int, V: int, P: float, convention: Convention = DEFAULT, row_density: str = "joint",
                                span: float = 10.0, n_points: int = 81) -> RowPosteriorMeans:
    """Means of c, q over the posterior of the row averages (m, q) instead of their values at the minimum of F.

    The average of T independent rows has the saddle-point (Daniels) density
        p(m, q) ≈ (T/2π) det(∇²Λ̄)^{−1/2} exp(−T Λ̄*(m, q))     (relative error O(1/T)),
    so the posterior is ∝ det(∇²Λ̄)^{−1/2} exp(−F(m, q)); on the dual plane (dm dq = det ∇²Λ̄ dh dg) it is
    ∝ det(∇²Λ̄(h, g))^{1/2} exp(−F̃(h, g)). Averaged on an n_points² box of ±span standard deviations along the
    principal axes of F̃'s Hessian at each minimum (finite differences; `numeric.landscape.laplace_box_average`),
    cut at the c of the neighbouring saddles so that each well is averaged alone (what a chain that stays in one
    well measures). The prefactor moves the mean at the same order O(1/T) as the skewness of F, so both are kept;
    the error of the Daniels density moves the mean at O(1/T²)."""
    inst = softmax_instance(L, V, convention)
    P = DataSize.validated(P=P).P
    row_density = check_choice("row_density", row_density, ROW_SET_DENSITIES)
    span = check_real("span", span, 2.0, 20.0)
    n_points = check_int("n_points", n_points, 11, 1001)
    mf = row_mean_field(inst, P, row_density)
    table = row_set(inst.L, inst.convention, row_density)
    T_, n_ = inst.T, inst.n_of_P(P)
    data = kernels.bind(kernels.softmax_data_kernel(), inst.values())

    def weight_terms(h, g):
        # in slices of the box: the tilted averages hold (points × rows × atoms) numbers
        if np.ndim(h) == 2 and h.shape[0] > 1:
            parts = [weight_terms(h[i:i + 1], g[i:i + 1]) for i in range(h.shape[0])]
            return tuple(np.concatenate(v) for v in zip(*parts))
        lam, m_, q_, det = tilted_row_covariance(table, h, g)
        S = np.asarray(data(m_, q_, n_))[..., 0]
        return T_ * (h * m_ + g * q_ - lam) + S, m_, q_, det

    def F(a, b):
        return float(weight_terms(np.array([a]), np.array([b]))[0][0])

    row_sums = (1.0, 1.0) if inst.causal else (1.0,)  # softmax rows sum to one (t, or t1 and t2 under the mask)

    def gibbs_loss(m_, q_):
        return np.asarray(inst.losses(m_, q_, *row_sums, n_), float)[..., 1]

    cuts = [-math.inf] + [mx.c for mx in mf.maxima] + [math.inf]
    wells = []
    for i, mn in enumerate(mf.minima):
        h0, g0 = mn.h, mn.g
        f0 = F(h0, g0)
        hessian = central_hessian_2d(F, h0, g0, 1e-3 * max(1.0, abs(h0)), 1e-3 * max(1.0, abs(g0)), f0)
        if np.linalg.eigvalsh(hessian)[0] <= 0:  # the finite-difference Hessian does not see a minimum: no box
            wells.append(Well(mn.c, math.nan, math.nan, mn.q, math.nan, math.nan, math.nan, math.nan,
                              float(mn.free_energy), math.nan, math.nan))
            continue

        def weights_and_values(points, lower=cuts[i], upper=cuts[i + 1]):
            free_energy, m_, q_, det = weight_terms(points[..., 0], points[..., 1])
            c_ = table.copy_strength(m_)
            log_weight = -(free_energy - f0) + 0.5 * np.log(det)
            values = {"c": c_, "q": q_, "m": m_, "loss_gibbs": gibbs_loss(m_, q_)}
            return np.where((c_ > lower) & (c_ < upper), log_weight, -np.inf), values

        box, coarse = (laplace_box_average(weights_and_values, (h0, g0), hessian, span=span, n_points=n)
                       for n in (n_points, n_points // 2 + 1))
        # the mass beyond the box can move a mean by at most that mass times the range of the quantity over the box
        edge, loss_edge = (box.edge_mass * box.ranges[name] for name in ("c", "loss_gibbs"))
        c_mean, loss_mean = box.means["c"], box.means["loss_gibbs"]
        wells.append(Well(mn.c, c_mean, math.sqrt(max(0.0, box.variances["c"])), mn.q, box.means["q"], box.means["m"],
                          abs(c_mean - coarse.means["c"]) + edge, edge, float(mn.free_energy), loss_mean,
                          abs(loss_mean - coarse.means["loss_gibbs"]) + loss_edge))
    not_convex = any(math.isnan(w.c_mean) for w in wells)
    too_small = any(w.edge_weight > 1e-2 * w.c_sd for w in wells)
    status = Status.NOT_CONVEX if not_convex else Status.LIMITED if too_small else mf.status
    return RowPosteriorMeans(inst.L, inst.V, float(P), row_density, tuple(wells), status,
                             f"Daniels posterior over each of {len(wells)} well(s), {n_points}² box of ±{span} standard "
                             f"deviations" + ("; the box is too small for a well" if too_small else "")
                             + f"; mean field: {mf.message}")


def softmax_finite_data_correction(L: int, V: int, P: float, convention: Convention = DEFAULT,
                                   row_density: str = "joint") -> FiniteDataCorrection:
    """The row mean field with one finite data set's second-order (quenched) correction: every minimum of F(m, q)
    continued to the minimum of F + ΔF nearby (ΔF in the module docstring), on the dual plane (Nelder–Mead
    from the mean-field minimum's tilts). One-hot tokens only (the pair counts are those of one-hot inputs)."""
    from scipy.optimize import minimize

    inst = softmax_instance(L, V, convention)
    P = DataSize.validated(P=P).P
    if inst.convention.centred:
        raise ParameterError("tokens", inst.convention.tokens,
                             "'one-hot' (the pair-count fluctuations are those of one-hot inputs)")
    row_density = check_choice("row_density", row_density, ("joint",))  # needs each row's non-copy pair weights
    mf = row_mean_field(inst, P, row_density)
    table = row_set(inst.L, inst.convention, row_density)
    others = table.positions - 1
    off_pairs = np.maximum(others * (others - 1), 1.0)  # ordered pairs of non-copy weights (none for l = 2)
    T_, n_ = inst.T, inst.n_of_P(P)
    beta_ = inst.convention.beta_per_target(inst.L)
    sequences = n_ / beta_ / T_
    eps = 1 - 1 / V
    data = kernels.bind(kernels.softmax_data_kernel(), inst.values())
    fields = kernels.bind(kernels.finite_data_kernel(), {**inst.values(), "beta_t": beta_})
    rest, squares = (1 - table.a) ** 2, table.q - table.a**2

    def total(v):
        h, g = v
        tilted = tilted_rows(table, h, g)
        lam = float(table.average(tilted.log_partition))
        m_ = float(table.average(tilted.mean(table.a)))
        q_ = float(table.average(tilted.mean(table.q)))
        S = float(np.asarray(data(m_, q_, n_))[0])
        eta_B, kappa = (float(value) for value in np.asarray(fields(m_, q_, n_), float))
        eta = eta_B - 2 * kappa * table.a
        copy_pairs = tilted.mean(eta**2 * squares) - tilted.mean(eta * (1 - table.a)) ** 2 / others
        other_pairs = tilted.mean(rest**2 * table.pair_participation) - tilted.mean(rest - squares) ** 2 / off_pairs
        delta_F = -0.5 * sequences * eps / V * T_ * float(table.average(copy_pairs + 2 * kappa**2 * other_pairs))
        return T_ * (h * m_ + g * q_ - lam) + S, delta_F, m_

    wells = []
    for mn in mf.minima:
        res = minimize(lambda v: sum(total(v)[:2]), [mn.h, mn.g], method="Nelder-Mead",
                       options={"xatol": 1e-7 * max(1.0, abs(mn.h)), "fatol": 1e-10, "maxiter": 4000})
        _, delta_F, m_ = total(res.x)
        c_ = float(table.copy_strength(m_))
        wells.append(CorrectedWell(mn.c, c_, c_ - mn.c, delta_F, float(res.x[0]), float(res.x[1]), bool(res.success)))
    ok = all(w.converged for w in wells) and mf.status == Status.CONVERGED
    return FiniteDataCorrection(inst.L, inst.V, float(P), sequences, row_density, tuple(wells),
                                Status.CONVERGED if ok else Status.FAILED,
                                f"second-order finite-data correction of {len(wells)} minimum/minima ({row_density} rows, "
                                f"{sequences:.4g} sequences); mean field: {mf.message}")
