"""The linear order parameters averaged over exp(−S) of the reduced action: their own fluctuations."""

from __future__ import annotations

import math

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.causal import MAX_ROW_RESOLVED_L, row_lengths, row_resolved_action, row_resolved_minima
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.homogeneous import linear_minima
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.parameters import DataSize
from attnphase.models.copy_heads.results import LinearObservables, PosteriorMeans
from attnphase.numeric.metropolis import metropolis_means
from attnphase.params import check_int
from attnphase.results import Status

__all__ = ["linear_posterior_means", "posterior_means_instance", "sign_folded"]


def sign_folded(t, c, axis: int | None = None):
    """(t, c) with t ≥ 0: linear attention's symmetry (G, W) -> (−G, −W) leaves its data term, prior and posterior
    unchanged and maps the order parameters (t, c) to (−t, −c), so the two images are one state, reported with t ≥ 0
    (|t|, c·sign t) before any mean over states, else the images cancel. axis None: each entry by its own t (samples of
    the reduced action, `linear_posterior_means`); an axis: each run by the sign of its t averaged over that axis (a
    network run's draws, `simulate` and `simulate_sweep`: a chain stays in one image)."""
    t, c = np.asarray(t), np.asarray(c)
    sign = np.where((t if axis is None else np.mean(t, axis=axis, keepdims=True)) < 0, -1.0, 1.0)
    return t * sign, c * sign


def _row_resolved_model(inst: CopyHeadsInstance, n_):
    """(local minima, local(v) -> (S, ∇S, ∇²S), observables(X) -> (t, c, ρ, Gibbs loss, S)) in (t_l, c[, r])."""
    T_, L = inst.T, inst.L
    ls = row_lengths(inst)
    # the sampled network's periodic/drop-first ρ is measured from the shared plane t̄U + cS_⊥ (`order_parameters_of`),
    # so it also holds the row-sum spread (⟨t_l²⟩ − t̄²)/L; the causal ρ is measured from the row-resolved plane
    spread_in_rho = 0.0 if inst.causal else 1.0 / L
    spread = T_ - float(inst.row_resolved_values()["H_T"])
    action, losses = inst.rows, inst.row_losses

    def observables(X):
        t_rows, c_ = X[..., :T_], X[..., T_]
        r_ = X[..., T_ + 1] if inst.entropy else None
        Qt, Mt, T1, T2 = ((t_rows**2 / ls).sum(-1), (t_rows / ls).sum(-1), t_rows.sum(-1), (t_rows**2).sum(-1))
        rho_ = np.exp(r_) if inst.entropy else np.zeros_like(c_)
        S = np.asarray(action.action(Qt, Mt, T1, T2, c_, *([r_] if inst.entropy else []), n_), float)
        m_, q_ = (Mt + c_ * spread) / T_, (Qt + c_**2 * spread) / T_ + rho_
        loss = np.asarray(losses(m_, q_, T1 / T_, T2 / T_, n_), float)[..., 1]
        return T1 / T_, c_, rho_ + spread_in_rho * (T2 / T_ - (T1 / T_) ** 2), loss, S

    return (row_resolved_minima(inst, n_).points, lambda v: row_resolved_action(inst, v[:T_], v[T_], n_, *v[T_ + 1:]),
            observables)


def _shared_model(inst: CopyHeadsInstance, n_):
    """The same in the shared plane (t, c[, r])."""
    action, L = inst.reduced, inst.L

    def local(v):
        return (float(action.action(*v, n_)), np.asarray(action.gradient(*v, n_), float),
                np.asarray(action.hessian(*v, n_), float))

    def observables(X):
        t_, c_ = X[..., 0], X[..., 1]
        r_ = X[..., 2] if inst.entropy else None
        rho_ = np.exp(r_) if inst.entropy else np.zeros_like(c_)
        S = np.asarray(action.action(t_, c_, *([r_] if inst.entropy else []), n_), float)
        m_, q_ = (t_ + (L - 1) * c_) / L, (t_**2 + (L - 1) * c_**2) / L + rho_
        loss = np.asarray(inst.losses(m_, q_, t_, n_), float)[..., 1]
        return t_, c_, rho_, loss, S

    return linear_minima(inst, n_).points, local, observables


def posterior_means_instance(inst: CopyHeadsInstance, P: float, *, walkers: int = 256, steps: int = 6000,
                             seed: int = 0) -> PosteriorMeans:
    """`linear_posterior_means` for a validated linear instance and P."""
    n_ = inst.n_of_P(P)
    if inst.row_resolved:
        if inst.L > MAX_ROW_RESOLVED_L:
            raise ParameterError("L", inst.L, f"at most {MAX_ROW_RESOLVED_L} with one row sum per row (boundary "
                                              "'causal' or row_sums 'per-row')")
        found, local, observables = _row_resolved_model(inst, n_)
    else:
        found, local, observables = _shared_model(inst, n_)
    stable = [v for v in found if np.linalg.eigvalsh(local(v)[2])[0] > 0]
    if not stable:
        nan = LinearObservables(math.nan, math.nan, math.nan, math.nan)
        return PosteriorMeans(inst.L, inst.V, P, n_, nan, nan, nan, math.nan, walkers, steps, Status.FAILED,
                              "no stable minimum of the reduced action to start from")
    best = min(stable, key=lambda v: local(v)[0])
    r_index = len(best) - 1 if inst.entropy else None

    def log_density(X):
        return -observables(X)[4] + (X[..., r_index] if inst.entropy else 0.0)  # dρ = ρ dr

    def folded(X):  # each sample with t ≥ 0 (`sign_folded`)
        t_, c_, rho_, loss, _ = observables(X)
        return np.stack([*sign_folded(t_, c_), rho_, loss], axis=-1)

    sampled = metropolis_means(log_density, folded, best, local(best)[2], walkers=walkers, steps=steps, seed=seed)
    saddle = LinearObservables(*(float(v) for v in observables(best)[:4]))
    return PosteriorMeans(inst.L, inst.V, P, n_, LinearObservables(*sampled.means.tolist()),
                          LinearObservables(*sampled.errors.tolist()), saddle, sampled.acceptance, walkers, steps,
                          sampled.status, "random-walk Metropolis on the reduced action (numeric.metropolis), acceptance "
                                          f"{sampled.acceptance:.2f}")


def linear_posterior_means(L: int, V: int, P: float, convention: Convention = DEFAULT, *, walkers: int = 256,
                           steps: int = 6000, seed: int = 0) -> PosteriorMeans:
    """Means of (t, c, ρ, Gibbs loss) over exp(−S(order parameters)) instead of their values at the minimum of S.

    The reduced action S is the self-averaged −log posterior of G with W integrated out and, for
    `remainder="entropy"`, the remainder R integrated radially; its variables are coordinates of G along
    fixed directions (t U + c S_⊥, or per row t_l U_l + c(δ_{l−1} − U_l) under the causal mask and with
    `row_sums="per-row"`), so the posterior of the order parameters is exp(−S) with Lebesgue measure in (t[_l], c)
    and dρ = ρ dr in r = ln ρ. The saddle point drops the order parameters' own fluctuations; these are not small
    at L ~ 8 because the likelihood is invariant under G → λG, W → W/λ at large n, so the overall scale of G is
    held only by the prior and the O(V² + D) log terms (relative width ~ (V² + D)^{−1/2}), and the mean of a skewed
    scale distribution lies above its mode. Random-walk Metropolis (`numeric.metropolis`), `walkers` independent
    walkers started near the minimum with the proposal covariance (2.38²/d)·H⁻¹ (H the Hessian there); the first
    third is burn-in. The sign symmetry (t, c) ↦ (−t, −c) is folded (each sample reported with t ≥ 0).
    """
    inst = CopyHeadsInstance.validated(attention="linear", L=L, V=V, convention=convention)
    P = DataSize.validated(P=P).P
    walkers = check_int("walkers", walkers, 2, 10**6)
    steps = check_int("steps", steps, 30, 10**8)
    return posterior_means_instance(inst, P, walkers=walkers, steps=steps, seed=seed)
