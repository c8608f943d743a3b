"""Linear attention with one row sum per target row: the causal mask (and `row_sums="per-row"`).

`symbolic.causal_linear_action` depends on the row sums t_l (rows l = 2..L) through Q_t = Σ t_l²/l, M_t = Σ t_l/l,
T1 = Σ t_l, T2 = Σ t_l² and on the shared copy strength c; its kernels give S, the gradient and the Hessian in
these collective variables, and the chain rule maps them to (t_2..t_L, c). At the symmetric point the Hessian
reduces exactly to a 3×3 stability matrix K (`symbolic.causal_stability_matrix`) built from three sums over the
rows (`gram_sums`): its smallest normalised eigenvalue crosses zero at the transition, its null vector gives the
soft row profile, and K_cc = 0 is the crossover.
"""

from __future__ import annotations

import math
from functools import lru_cache

import mpmath
import numpy as np

from attnphase.derive.codegen import compile_kernel
from attnphase.errors import ParameterError
from attnphase.models.copy_heads import kernels, symbolic
from attnphase.models.copy_heads.homogeneous import solve_result
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.linear_polish import working_digits
from attnphase.models.copy_heads.linear_transition import classify_landau, instability_transition, n_range
from attnphase.models.copy_heads.results import CausalLinearTransition, Minimum, SolveResult
from attnphase.models.copy_heads.row_tables import check_row_set_size
from attnphase.numeric.minimize import multistart_local_minima
from attnphase.numeric.precision import (
    DERIVED_ROUNDING, larger_quadratic_root, larger_quadratic_root_mp, normalised_min_eigenvalue,
    normalised_min_eigenvalue_mp, working_dps,
)
from attnphase.numeric.threshold import log_crossing
from attnphase.results import Status

__all__ = ["MAX_ROW_RESOLVED_L", "row_lengths", "remainder_at_origin", "gram_sums", "origin_values",
           "stability_matrix", "soft_row_profile", "causal_linear_transition", "row_resolved_action",
           "row_resolved_minima", "causal_solve"]

MAX_ROW_RESOLVED_L = 1024
"""Largest L for minimising over every row sum (a dense L × L Hessian per Newton step)."""


def row_lengths(inst: CopyHeadsInstance) -> np.ndarray:
    """Positions each target row attends to: l = 2..L under the causal mask, L for each of the T rows otherwise."""
    if inst.causal:
        return np.arange(2, inst.L + 1, dtype=float)
    return np.full(inst.T, float(inst.L))




def remainder_at_origin(inst: CopyHeadsInstance, n_, mp: bool = False):
    """ρ₀(n): the remainder at the symmetric point (remainder "entropy"), the positive root of the quadratic
    `symbolic.causal_remainder_quadratic` (a₂ > 0 > a₀), cancellation-free; n may be an array (float64)."""
    quadratic, quadratic_mp = kernels.causal_remainder_quadratic_kernels()
    values = {**inst.row_resolved_values(exact=mp), "n": n_}
    if mp:
        return larger_quadratic_root_mp(*kernels.bind(quadratic_mp, values)())
    a2, a1, a0 = np.moveaxis(np.asarray(kernels.bind(quadratic, values)(), float), -1, 0)
    return larger_quadratic_root(a2, a1, a0)


def gram_sums(lam, mu, L: int, H, mp: bool = False):
    """Σ_a = Σ 1/(l(λ + μl)), Σ_b = Σ 1/(λ + μl), Σ_c = Σ l/(λ + μl) over l = 2..L.

    Direct sums in float64 up to L = 4096; beyond, digamma differences Σ_b = (ψ(L + 1 + z) − ψ(2 + z))/μ,
    z = λ/μ, in mpmath: at the threshold z ~ L³ ≫ L, so the difference and Σ_c = (T − λΣ_b)/μ cancel about
    2·log10(z) digits, which the working precision is raised by (float64 would return noise)."""
    T_ = L - 1
    if mp:
        if mu == 0:
            return H / lam, T_ / lam, (mpmath.mpf(L) * (L + 1) / 2 - 1) / lam
        extra = 2 * int(abs(mpmath.log10(lam / mu))) + 10
        with mpmath.workdps(mpmath.mp.dps + extra):
            z = lam / mu  # at the raised precision: its rounding error is amplified z-fold in Σ_c
            Sb = (mpmath.digamma(L + 1 + z) - mpmath.digamma(2 + z)) / mu
            out = ((H - mu * Sb) / lam, Sb, (T_ - lam * Sb) / mu)
        return tuple(+v for v in out)  # rounded back to the working precision
    lam, mu = np.asarray(lam, float), np.asarray(mu, float)
    if L <= 4096:
        ls = np.arange(2, L + 1, dtype=float)
        den = lam[..., None] + mu[..., None] * ls
        return (1 / (ls * den)).sum(-1), (1 / den).sum(-1), (ls / den).sum(-1)
    out = np.empty((3,) + lam.shape)
    with mpmath.workdps(20):
        for idx in np.ndindex(lam.shape):
            out[(slice(None),) + idx] = [float(v) for v in gram_sums(mpmath.mpf(float(lam[idx])), mpmath.mpf(float(mu[idx])),
                                                                     L, mpmath.mpf(float(H)), mp=True)]
    return out[0], out[1], out[2]


def origin_values(inst: CopyHeadsInstance, n_, mp: bool = False) -> dict:
    """Parameters of the stability and Landau kernels at n: the row-resolved values, n, and ρ₀(n) for the
    remainder-entropy convention."""
    values = {**inst.row_resolved_values(exact=mp), "n": n_}
    if inst.entropy:
        values["rho"] = remainder_at_origin(inst, n_, mp)
    return values


def stability_matrix(inst: CopyHeadsInstance, n_, mp: bool = False):
    """The stability matrix K (`symbolic.causal_stability_matrix`) at n: an array (..., 3, 3) in float64 (n may be
    an array), an object array of mpmath numbers in mpmath."""
    lam_mu, lam_mu_mp, K, K_mp = kernels.causal_stability_kernels(inst.convention.centred, inst.entropy)
    values = origin_values(inst, n_, mp)
    if mp:
        lam, mu = kernels.bind(lam_mu_mp, values)()
        return kernels.bind(K_mp, values)(*gram_sums(lam, mu, inst.L, values["H_T"], mp=True))
    curvatures = np.asarray(kernels.bind(lam_mu, values)(), float)
    gram = gram_sums(curvatures[..., 0], curvatures[..., 1], inst.L, values["H_T"])
    return np.asarray(kernels.bind(K, values)(*gram), float)


def soft_row_profile(inst: CopyHeadsInstance, y, n_) -> np.ndarray:
    """Row sums t_l (l = 2..L) that realise the collective soft vector y = (M_t, T1) at least cost:
    t_l = (α/l + β)/d_l, (α, β) = Σ⁻¹ y, d_l = λ/l + μ (see `symbolic.causal_stability_matrix`)."""
    lam_mu = kernels.causal_stability_kernels(inst.convention.centred, inst.entropy)[0]
    lam, mu = (float(v) for v in np.asarray(kernels.bind(lam_mu, origin_values(inst, n_))(), float))
    ls = np.arange(2, inst.L + 1, dtype=float)
    d = lam / ls + mu
    A = np.stack([1 / ls, np.ones_like(ls)])
    alpha, beta = np.linalg.solve((A / d) @ A.T, np.asarray(y[:2], float))
    return (alpha / ls + beta) / d


def causal_linear_transition(inst: CopyHeadsInstance, digits: int = 30, classify: bool = True) -> CausalLinearTransition:
    """Masked linear attention: first n where the symmetric point t_l = c = 0 loses stability (the smallest
    eigenvalue of the normalised stability matrix K crosses zero; mpmath polish), the soft row profile, the Landau
    classification along it (derive.landau) and the crossover where the other mode's own curvature vanishes
    (K_cc, or the t-block's smallest eigenvalue when the copy mode goes soft first)."""
    L, V = inst.L, inst.V
    dps = working_dps(digits, 3 * math.log10(L))
    lo, hi = n_range(inst)

    def values(ln_n):
        return normalised_min_eigenvalue(stability_matrix(inst, np.exp(ln_n)))

    with mpmath.workdps(dps):
        res = log_crossing(lambda n_: float(values(np.array([math.log(n_)]))[0]),
                           lambda n_: normalised_min_eigenvalue_mp(stability_matrix(inst, n_, mp=True)), lo, hi,
                           digits=digits, values=values)
    if not math.isfinite(res.value):
        return CausalLinearTransition("linear", L, V, "none", math.nan, "", math.nan, math.nan, Status.NOT_FOUND,
                                      res.message)
    n_star = math.exp(res.value)
    K = stability_matrix(inst, np.array([n_star * (1 + 1e-9)]))[0]
    d = np.sqrt(np.abs(np.diag(K)))
    y = np.linalg.eigh(K / np.outer(d, d))[1][:, 0] / d
    t_rows = soft_row_profile(inst, y, n_star)
    ls = np.arange(2, L + 1, dtype=float)
    spread = (L - 1) - float(inst.row_resolved_values()["H_T"])
    rho_star = float(origin_values(inst, n_star)["rho"]) if inst.entropy else 0.0
    uniform_norm2, copy_norm2 = float((t_rows**2 / ls).sum()), y[2] ** 2 * spread
    soft_mode = "uniform" if uniform_norm2 >= copy_norm2 else "copy"

    def curvature(K_):  # the other mode's own curvature: K_cc (copy) or the t-block's smallest eigenvalue
        if soft_mode == "uniform":
            return K_[..., 2, 2]
        return np.linalg.eigvalsh(K_[..., :2, :2])[..., 0]

    def curvature_mp(n_):
        K_ = stability_matrix(inst, n_, mp=True)
        if soft_mode == "uniform":
            return K_[2, 2]
        return min(mpmath.eigsy(mpmath.matrix([[K_[0, 0], K_[0, 1]], [K_[1, 0], K_[1, 1]]]))[0])

    def curvature_grid(ln_n):
        return curvature(stability_matrix(inst, np.exp(ln_n)))

    with mpmath.workdps(dps):
        cross = log_crossing(lambda n_: float(curvature_grid(np.array([math.log(n_)]))[0]), curvature_mp, lo, hi,
                             digits=digits, values=curvature_grid)
    land = {"order": "not classified", "message": ""}
    if classify:
        direction = [uniform_norm2, float((t_rows / ls).sum()), float(t_rows.sum()), float((t_rows**2).sum()), float(y[2])]
        landau = kernels.bind(kernels.causal_landau_kernel(inst.convention.centred, inst.entropy),
                              origin_values(inst, n_star))
        a2_slope, _, a4, a6 = (float(v) for v in landau(*direction))
        order, exponent, message = classify_landau(a2_slope, a4, a6)
        land = {"order": order, "exponent": exponent, "a4": a4, "message": message}
    return instability_transition(CausalLinearTransition, inst, res, cross, digits, dps, land,
                                  f"causal mask: symmetric point loses stability along the {soft_mode} mode; ",
                                  soft_mode=soft_mode, soft_vector=(float(y[0]), float(y[1]), float(y[2])),
                                  soft_row_sums_first_last=(float(t_rows[0]), float(t_rows[-1])), rho_at_P_star=rho_star)


def _collective(t_rows, ls):
    return np.array([(t_rows**2 / ls).sum(), (t_rows / ls).sum(), t_rows.sum(), (t_rows**2).sum()])


def row_resolved_action(inst: CopyHeadsInstance, t_rows, c_, n_, r_=None) -> tuple[float, np.ndarray, np.ndarray]:
    """Action, gradient and Hessian of the row-resolved linear action in (t_2..t_L, c) (chain rule from the
    collective kernels: ∂Q_t/∂t_l = 2t_l/l, ∂M_t/∂t_l = 1/l, ∂T1/∂t_l = 1, ∂T2/∂t_l = 2t_l); for the
    remainder-entropy convention in (t_2..t_L, c, r), ρ = e^r (r_ required). Under the causal mask, or with
    `row_sums="per-row"` (every row of length L: `row_lengths`)."""
    action = inst.rows
    ls = row_lengths(inst)
    z = list(_collective(t_rows, ls)) + [c_] + ([r_] if inst.entropy else [])
    S = float(action.action(*z, n_))
    gz = np.asarray(action.gradient(*z, n_), float)
    hz = np.asarray(action.hessian(*z, n_), float)
    T_ = len(ls)
    k = len(z) - 5  # 0 or 1 extra variable (r), mapped to itself
    J = np.zeros((5 + k, T_ + 1 + k))
    J[0, :T_], J[1, :T_], J[2, :T_], J[3, :T_], J[4, T_] = 2 * t_rows / ls, 1 / ls, 1.0, 2 * t_rows, 1.0
    if k:
        J[5, T_ + 1] = 1.0
    grad = J.T @ gz
    hess = J.T @ hz @ J
    hess[np.arange(T_), np.arange(T_)] += 2 * gz[0] / ls + 2 * gz[3]
    return S, grad, hess


def row_resolved_minima(inst: CopyHeadsInstance, n_):
    """Local minima of the row-resolved action in (t_2..t_L, c[, r]) from 16 uniform starts
    (`numeric.minimize.LocalMinima`); (t, c) ↦ (−t, −c) folded onto a non-negative mean row sum. The
    remainder-entropy convention starts r at ln ρ₀(n), the remainder's minimum at the symmetric point."""
    T_ = inst.T
    r0 = [math.log(float(remainder_at_origin(inst, n_)))] if inst.entropy else []
    starts = [np.r_[np.full(T_, t0), c0, r0] for t0 in (0.0, 0.5, 1.0, 2.0) for c0 in (0.0, 0.1, 0.5, 1.0)]

    def local(v):
        return row_resolved_action(inst, v[:T_], v[T_], n_, *v[T_ + 1:])

    def canonical(v):
        v = v.copy()
        if v[:T_].mean() < 0:  # (t, c) ↦ (−t, −c) symmetry (r unchanged)
            v[:T_ + 1] *= -1
        return v

    return multistart_local_minima(lambda v: local(v)[0], lambda v: local(v)[1], lambda v: local(v)[2], starts,
                                   canonical=canonical)


@lru_cache(maxsize=None)
def _row_loss_kernel_mp(centred: bool):
    """`kernels.row_loss_kernel` in mpmath: the reference its float64 losses' rounding is measured against."""
    variables = (symbolic.m, symbolic.q, symbolic.t, symbolic.t2)
    exprs = [symbolic.mean_predictor_loss_rows(*variables, centred), symbolic.gibbs_loss_rows(*variables, centred)]
    return compile_kernel(exprs, list(variables) + kernels.parameters_of(exprs, variables), backend="mpmath")


def _row_resolved_minimum(inst: CopyHeadsInstance, v: np.ndarray, n_) -> Minimum:
    """The Minimum at a float64 stationary point v = (t_2..t_L, c[, r]) of the row-resolved action. `error` is the
    float64 Newton step left there; the other fields' errors take the distance δ from the true stationary point
    coordinate by coordinate as twice that step (a Newton step from inside its quadratic region overshoots the
    distance left by less than itself) plus the step's own noise (the gradient's rounding over the smallest |Hessian
    eigenvalue|). δ is propagated to first order through the collective variables z = (Q_t, M_t, T1, T2, c[, r])
    (|Δz| ≤ Σ|∂z/∂v|δ; the action, stationary: |g|·δ + ½|λ|max·|δ|²), plus each float64 evaluation's rounding,
    measured against the mpmath kernels at the same float64 point (the collective sums taken exactly there). The
    Hessian's eigenvalues (Weyl): the Frobenius norm of the Hessian's change over δ (the kernel Hessian's change over
    Δz, by differences in mpmath, and the chain rule's, through |J|) and of its rounding (the kernels' measured against
    mpmath, the products' and eigvalsh's a few ulps of ‖H‖ per dimension)."""
    L, T_, eps = inst.L, inst.T, float(np.finfo(float).eps)
    ls = np.arange(2, L + 1, dtype=float)
    spread = T_ - symbolic.causal_row_uniform_weight(L)
    t_rows, c_ = v[:T_], float(v[T_])
    r_ = list(v[T_ + 1:])
    S, gradient, hess = row_resolved_action(inst, t_rows, c_, n_, *r_)
    eig = np.linalg.eigvalsh(hess)
    step = np.abs(np.linalg.lstsq(hess, gradient, rcond=None)[0])  # what is left to the stationary point
    collective = _collective(t_rows, ls)
    Qt, Mt, T1, T2 = collective
    rho_ = math.exp(r_[0]) if r_ else 0.0
    m_, q_ = (Mt + c_ * spread) / T_, (Qt + c_**2 * spread) / T_ + rho_
    losses = [float(x) for x in np.ravel(inst.losses(m_, q_, T1 / T_, T2 / T_, n_))]
    error = float(step[:T_ + 1].max()) + (rho_ * float(step[T_ + 1]) if r_ else 0.0)

    action = inst.rows
    z64 = [float(x) for x in collective] + [c_] + r_
    gz64 = np.ravel(np.asarray(action.gradient(*z64, n_), float))
    hz64 = np.atleast_2d(np.asarray(action.hessian(*z64, n_), float))
    J = np.zeros((len(z64), len(v)))
    J[0, :T_], J[1, :T_], J[2, :T_], J[3, :T_], J[4, T_] = 2 * t_rows / ls, 1 / ls, 1.0, 2 * t_rows, 1.0
    if r_:
        J[5, T_ + 1] = 1.0
    absJ, abs_hz = np.abs(J), np.abs(hz64)
    dps = working_digits(inst, n_)
    loss_mp = kernels.bind(_row_loss_kernel_mp(inst.convention.centred), inst.values(exact=True))
    with mpmath.workdps(dps):
        t_mp, l_mp = [mpmath.mpf(float(x)) for x in t_rows], [mpmath.mpf(int(x)) for x in ls]
        z = [mpmath.fsum(x * x / l for x, l in zip(t_mp, l_mp)), mpmath.fsum(x / l for x, l in zip(t_mp, l_mp)),
             mpmath.fsum(t_mp), mpmath.fsum(x * x for x in t_mp), mpmath.mpf(c_)] + [mpmath.mpf(x) for x in r_]
        spread_mp = T_ - inst.row_resolved_values(exact=True)["H_T"]
        rho_mp = mpmath.exp(z[5]) if r_ else mpmath.mpf(0)
        y = [(z[1] + z[4] * spread_mp) / T_, (z[0] + z[4] ** 2 * spread_mp) / T_ + rho_mp, z[2] / T_, z[3] / T_]
        loss_ref = list(np.ravel(loss_mp(*y, n_)))
        hz_mp = np.atleast_2d(action.hessian_mp(*z, n_))
        action_rounding = float(abs(mpmath.mpf(S) - action.action_mp(*z, n_)))
        gz_rounding = np.array([float(abs(mpmath.mpf(float(a)) - b)) for a, b in
                                zip(gz64, np.ravel(action.gradient_mp(*z, n_)))])
        hz_rounding = np.array([[float(abs(mpmath.mpf(float(a)) - b)) for a, b in zip(ra, rb)]
                                for ra, rb in zip(hz64, hz_mp.tolist())])
        noise = (float(np.linalg.norm(absJ.T @ gz_rounding))
                 + len(v) * 4 * eps * float(np.linalg.norm(absJ.T @ np.abs(gz64))))
        delta = 2 * step + noise / float(np.min(np.abs(eig)))
        # how far δ moves the collective variables, and through them m, q, t1 = T1/T, t2 = T2/T
        dt, dc = delta[:T_], float(delta[T_])
        dz = [float((2 * np.abs(t_rows) * dt / ls).sum()), float((dt / ls).sum()), float(dt.sum()),
              float((2 * np.abs(t_rows) * dt).sum()), dc] + [float(x) for x in delta[T_ + 1:]]
        dm = (dz[1] + dc * spread) / T_
        dq = (dz[0] + 2 * abs(c_) * dc * spread) / T_ + (rho_ * dz[5] if r_ else 0.0)
        # the kernel Hessian's change as each collective variable moves by its bound (differences in mpmath)
        moved = [np.atleast_2d(action.hessian_mp(*[zi + (dz[j] if i == j else 0) for i, zi in enumerate(z)], n_))
                 for j in range(len(z))]
        dhz = np.array([[float(x) for x in row] for row in sum(abs(h - hz_mp) for h in moved)])
        # the losses' change as each of (m, q, t1, t2) moves by its bound
        dy = [dm, dq, dz[2] / T_, dz[3] / T_]
        loss_moved = [[np.ravel(loss_mp(*[yi + sign * dy[j] * (i == j) for i, yi in enumerate(y)], n_))
                       for sign in (1, -1)] for j in range(4)]
        loss_errors = [float(abs(mpmath.mpf(x) - ref) + sum(max(abs(up[k] - ref), abs(down[k] - ref))
                                                             for up, down in loss_moved))
                       for k, (x, ref) in enumerate(zip(losses, loss_ref))]
        a_copy_error = float(abs(mpmath.mpf(float(m_)) - y[0])) + dm
    dJ = np.zeros_like(J)
    dJ[0, :T_], dJ[3, :T_] = 2 * dt / ls, 2 * dt
    dgz = abs_hz @ np.asarray(dz)  # the gradient's change over Δz (first order)
    hess_change = (np.linalg.norm(absJ.T @ dhz @ absJ) + 2 * np.linalg.norm(dJ.T @ abs_hz @ absJ)
                   + float(np.max(2 * dgz[0] / ls + 2 * dgz[3], initial=0.0)))
    hess_rounding = (np.linalg.norm(absJ.T @ hz_rounding @ absJ)
                     + float(np.max(2 * gz_rounding[0] / ls + 2 * gz_rounding[3], initial=0.0))
                     + len(v) * 4 * eps * np.linalg.norm(absJ.T @ abs_hz @ absJ) + len(v) * eps * np.linalg.norm(hess))
    eig_error = float(hess_change + hess_rounding)
    action_error_ = (float(np.abs(gradient) @ delta) + 0.5 * float(np.max(np.abs(eig))) * float(delta @ delta)
                     + action_rounding + 4 * eps * abs(S))

    def up(value, err):  # the error plus a few ulps of the value, for the float64 arithmetic of the bound itself
        return err + 4 * eps * abs(value)

    return Minimum(float(T1 / T_), c_, S, bool(eig[0] > 0), float(m_), rho_, tuple(eig[:3].tolist()), losses[0],
                   losses[1], error + DERIVED_ROUNDING * max(abs(c_), 1.0), up(S, action_error_),
                   up(m_, a_copy_error), tuple(up(e, eig_error) for e in eig[:3].tolist()),
                   up(losses[0], loss_errors[0]), up(losses[1], loss_errors[1]))


def causal_solve(inst: CopyHeadsInstance, P: float) -> SolveResult:
    """`solve` under the causal mask. Linear: minima of the row-resolved action over (t_2..t_L, c) (L ≤ 1024, a dense
    (L × L) Hessian per Newton step); c_uniform = mean row sum. Softmax: minima of the row mean-field free energy
    F(m) (each row its own Cramér function; `row_mean_field.softmax_row_mean_field`; L ≤ 256, as for `threshold`)."""
    n_ = inst.n_of_P(P)
    minima = []
    if inst.attention == "softmax":
        from attnphase.models.copy_heads.row_mean_field import row_mean_field

        check_row_set_size(inst.L, inst.convention.boundary)  # before the row tables: minutes at L = 300
        r = row_mean_field(inst, P)
        for mn in r.minima:
            losses = inst.losses(mn.m, mn.q, 1.0, 1.0, n_)
            # the row mean field carries no error of its point, so none of what follows from it is estimated
            minima.append(Minimum(1.0, mn.c, mn.free_energy, True, mn.m, 0.0, (), float(losses[0]), float(losses[1]),
                                  math.nan, math.nan, math.nan, (), math.nan, math.nan))
        iterations = r.n_grid**2  # grid evaluations of F̃
    else:
        if inst.L > MAX_ROW_RESOLVED_L:
            raise ParameterError("L", inst.L, f"at most {MAX_ROW_RESOLVED_L} for solve with boundary 'causal' "
                                              "(one row sum per row)")
        found = row_resolved_minima(inst, n_)
        iterations = found.iterations
        for v in found.points:
            minima.append(_row_resolved_minimum(inst, v, n_))
    return solve_result(inst, P, minima, iterations, "no stable minimum resolved", prefix="causal mask: ")
