"""Masked linear attention with the remainder's entropy kept (Convention(boundary="causal", remainder="entropy")):
the remainder's geometry and prior, its minimum, the transition and crossover against hand-derived equations,
the fluctuation-averaged order parameters against quadrature, and the masked network (MALA) against both."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from scipy.optimize import brentq

from attnphase.api import copy_heads as api
from attnphase.errors import ParameterError
from attnphase.models.copy_heads import causal, homogeneous
from attnphase.models.copy_heads import symbolic as model

CAUSAL_ENTROPY = api.DEFAULT.with_(boundary="causal", remainder="entropy")


def _instance(L, V, convention):
    return api.CopyHeadsInstance.validated(attention="linear", L=L, V=V, convention=convention)


def _target_entries(L):
    """(row, column) of the masked target-row entries of G: rows l = 2..L (index 1..L−1), columns ≤ l."""
    return [(i, j) for i in range(1, L) for j in range(i + 1)]


def test_causal_remainder_is_isotropic_and_decoupled_with_the_counted_dimension():
    """The radial integral over R is exact only if the prior precision of vec(G) restricted to R is λ_a·I and
    does not couple R to the (t_l, c) directions. Reference: the covariance κ²(σ²I + s₁11ᵀ) of the masked
    target-row entries of G = κ(A + b)·mask, inverted numerically, projected on an orthonormal basis of
    {zero row sums, orthogonal to the copy direction} (null space by SVD); its size is the counted D."""
    L, sigma2, s1 = 7, 1.3, 0.6
    conv = CAUSAL_ENTROPY.with_(sigma2=sigma2, s1=s1)
    kappa = conv.kappa(L)
    entries = _target_entries(L)
    N = len(entries)
    precision = np.linalg.inv(kappa**2 * (sigma2 * np.eye(N) + s1 * np.ones((N, N))))
    row_sums = np.array([[1.0 if i == row else 0.0 for i, _ in entries] for row in range(1, L)])
    copy_direction = np.array([(1.0 if j == i - 1 else 0.0) - 1.0 / (i + 1) for i, j in entries])
    constraints = np.vstack([row_sums, copy_direction])
    _, sv, vt = np.linalg.svd(constraints)
    basis = vt[int(np.sum(sv > 1e-12)):].T  # orthonormal null space: the remainder
    assert basis.shape[1] == model.causal_remainder_dimension(L) == L * (L - 1) // 2 - 1
    lam_a = 1.0 / (kappa**2 * sigma2)
    assert np.allclose(basis.T @ precision @ basis, lam_a * np.eye(basis.shape[1]), rtol=1e-10, atol=1e-8 * lam_a)
    plane = np.vstack([row_sums, copy_direction]).T  # U_l directions (row-sum indicators) and the copy direction
    assert np.abs(basis.T @ precision @ plane).max() < 1e-8 * lam_a


@pytest.mark.parametrize("n_", [0.5, 30.0, 1e3, 1e8])
def test_causal_remainder_minimum_at_the_symmetric_point(n_):
    """ρ₀(n) (closed-form root, float64 and mpmath) against brentq on the hand-written stationarity
    λ_a T/2 − D_r/ρ + (V − 1)τn/(2(1 + τnρ/V)) = 0, D_r = (L(L−1)/2 − 3)/2."""
    L, V = 12, 5
    conv = CAUSAL_ENTROPY.with_(tau0=0.7, sigma2=1.4)
    T_, tau_ = L - 1, conv.tau(V)
    lam_a = 1.0 / (conv.kappa(L) ** 2 * conv.sigma2)
    D_r = (L * (L - 1) / 2 - 3) / 2

    def stationarity(log_rho):
        rho = math.exp(log_rho)
        return lam_a * T_ / 2 - D_r / rho + (V - 1) * tau_ * n_ / (2 * (1 + tau_ * n_ * rho / V))

    reference = math.exp(brentq(stationarity, -80, 20, xtol=1e-15, rtol=1e-15))
    inst = _instance(L, V, conv)
    assert float(causal.remainder_at_origin(inst, n_)) == pytest.approx(reference, rel=1e-12)
    with mpmath.workdps(40):
        rho_mp = causal.remainder_at_origin(inst, mpmath.mpf(n_), mp=True)
        # the parameters exact, as the mpmath kernels take them: λ_a = 1/(κ²σ²) = L²/σ², τ = τ₀ (τ_scale "one")
        lam_mp, tau_mp, n_mp = L**2 / mpmath.mpf(conv.sigma2), mpmath.mpf(conv.tau0), mpmath.mpf(n_)
        residual = lam_mp * T_ / 2 - D_r / rho_mp + (V - 1) * tau_mp * n_mp / (2 * (1 + tau_mp * n_mp * rho_mp / V))
        assert abs(residual) < mpmath.mpf(10) ** -30 * lam_a * T_


def _hand_crossover(L, V, conv):
    """n where K_cc = 0, derived by hand: with spread = T − H, u₀ = τnρ₀/V,
    K_cc/spread = λ_a + (V−1)τn/(T(1+u₀)) − ετn² spread/(T²V(1+u₀)), solved in ln n by brentq."""
    T_, tau_ = L - 1, conv.tau(V)
    H = sum(1.0 / l_ for l_ in range(2, L + 1))
    spread, eps = T_ - H, 1 - 1 / V
    lam_a = 1.0 / (conv.kappa(L) ** 2 * conv.sigma2)
    D_r = (L * (L - 1) / 2 - 3) / 2

    def k_cc(log_n):
        n_ = math.exp(log_n)
        rho0 = math.exp(brentq(lambda r: lam_a * T_ / 2 - D_r * math.exp(-r) + (V - 1) * tau_ * n_ / (2 * (1 + tau_ * n_ * math.exp(r) / V)),
                               -80, 20, xtol=1e-15, rtol=1e-15))
        u0 = tau_ * n_ * rho0 / V
        return lam_a + (V - 1) * tau_ * n_ / (T_ * (1 + u0)) - eps * tau_ * n_**2 * spread / (T_**2 * V * (1 + u0))

    return math.exp(brentq(k_cc, math.log(1.0), math.log(1e12), xtol=1e-14, rtol=1e-15))


def test_causal_entropy_transition_second_order_and_crossover():
    """L = 16, V = 4: the classifier (derive.landau along the soft row profile, the remainder relaxed) finds a
    second-order transition with exponent ½. Independently: the smallest eigenvalue of the full Hessian in
    (t_2..t_L, c, ln ρ) at the symmetric point (ρ at ρ₀) changes sign at n*; the minimiser's mean row sum
    grows as (P − P*)^{1/2}; the crossover equals the root of the hand-derived K_cc = 0 (L = 16 and 1024)."""
    L, V = 16, 4
    tr = api.threshold("linear", L, V, digits=20, convention=CAUSAL_ENTROPY)
    assert tr.order == "second" and tr.exponent == pytest.approx(0.5) and tr.soft_mode == "uniform"
    inst = _instance(L, V, CAUSAL_ENTROPY)
    for factor, sign in ((1 - 1e-6, 1), (1 + 1e-6, -1)):
        n_ = tr.n_star * factor
        r0 = math.log(float(causal.remainder_at_origin(inst, n_)))
        _, grad, hess = causal.row_resolved_action(inst, np.zeros(L - 1), 0.0, n_, r0)
        assert np.abs(grad).max() < 1e-10
        assert np.sign(np.linalg.eigvalsh(hess)[0]) == sign
    dps = np.array([1e-4, 1e-3, 1e-2])
    ts = [api.solve("linear", L, V, tr.P_star * (1 + d), CAUSAL_ENTROPY).global_minimum.c_uniform for d in dps]
    assert np.polyfit(np.log(dps), np.log(ts), 1)[0] == pytest.approx(0.5, abs=0.02)
    assert tr.P_crossover == pytest.approx(_hand_crossover(L, V, CAUSAL_ENTROPY), rel=1e-9)
    big = api.threshold("linear", 1024, V, digits=15, convention=CAUSAL_ENTROPY, classify=False)
    assert big.P_crossover == pytest.approx(_hand_crossover(1024, V, CAUSAL_ENTROPY), rel=1e-9)


def test_causal_entropy_crossover_tends_to_L_squared_over_two_epsilon():
    """Leading order of K_cc = 0 (hand derivation: ρ₀ → σ²/(2L), so λ_a u₀ → τnL/(2V) dominates the left side
    and ετn²/(LV) the right): n_X → L²/(2ε), independent of σ² and τ, no V^{1/2}. The corrections are
    O((ln L + V)/L) (H/T, T = L − 1, λ_a against λ_a u₀, (V−1)τn/T): the deviation at L = 2²⁰ is below
    10 ln L/L and at least 100 times smaller than at L = 4096 (L ratio 256)."""
    for V in (4, 16):
        eps = 1 - 1 / V
        deviations = []
        for L in (4096, 2**20):
            tr = api.threshold("linear", L, V, digits=20, convention=CAUSAL_ENTROPY, classify=False)
            deviations.append(abs(tr.P_crossover / (L * L / (2 * eps)) - 1))
        assert deviations[1] < 10 * math.log(2**20) / 2**20
        assert deviations[1] < deviations[0] / 100


def _quadrature_means(L, V, P, conv, box, points):
    """Means of (t, c, ρ) over exp(−S)·ρ (dρ = ρ dr) by a trapezoid grid in the Hessian eigen-coordinates of
    S around its minimum, ±box standard deviations, `points` per axis (independent of the Metropolis code)."""
    n_ = conv.n_of_P(P, L)
    inst = _instance(L, V, conv)
    if conv.boundary == "causal":
        T_ = L - 1
        ls = np.arange(2, L + 1, dtype=float)
        found = causal.row_resolved_minima(inst, n_).points
        local = lambda v: causal.row_resolved_action(inst, v[:T_], v[T_], n_, v[T_ + 1])  # noqa: E731
        ker = inst.rows

        def action(X):
            t_rows = X[:, :T_]
            S = ker.action((t_rows**2 / ls).sum(1), (t_rows / ls).sum(1), t_rows.sum(1), (t_rows**2).sum(1), X[:, T_],
                           X[:, T_ + 1], n_)
            return np.asarray(S, float), t_rows.mean(1), X[:, T_]
    else:
        found = homogeneous.linear_minima(inst, n_).points
        ker = inst.reduced
        local = lambda v: (float(ker.action(*v, n_)), None, np.asarray(ker.hessian(*v, n_), float))  # noqa: E731

        def action(X):
            return np.asarray(ker.action(*X.T, n_), float), X[:, 0], X[:, 1]

    best = min(found, key=lambda v: local(v)[0])
    S0, _, H = local(best)
    w, U = np.linalg.eigh(H)
    axis = np.linspace(-box, box, points)
    Z = np.array(list(itertools.product(axis, repeat=len(best))))
    X = best + (Z / np.sqrt(w)) @ U.T
    S, t_, c_ = action(X)
    log_weight = -(S - S0) + X[:, -1]
    weight = np.exp(log_weight - log_weight.max())
    total = weight.sum()
    return {"t": (weight * t_).sum() / total, "c": (weight * c_).sum() / total, "rho": (weight * np.exp(X[:, -1])).sum() / total}


@pytest.mark.parametrize("boundary, L, P, grids", [("periodic", 8, 200.0, ((7, 41), (9, 51))),
                                                   ("causal", 4, 1000.0, ((7, 11), (8, 13)))])
def test_posterior_means_of_the_reduced_action_against_quadrature(boundary, L, P, grids):
    """`linear_posterior_means` (random-walk Metropolis on exp(−S)) against direct quadrature of the same
    integral; tolerance 4 standard errors over walkers plus the quadrature error (two grids' difference).
    The saddle values of t and ρ lie outside it (the fluctuation shift is resolved)."""
    conv = api.DEFAULT.with_(boundary=boundary, remainder="entropy")
    fine, coarse = (_quadrature_means(L, 4, P, conv, box, pts) for box, pts in grids)
    r = api.linear_posterior_means(L, 4, P, conv, walkers=256, steps=3000, seed=1)
    assert r.status == "converged"
    for k in ("t", "c", "rho"):
        tolerance = 4 * r.errors[k] + abs(fine[k] - coarse[k])
        assert abs(r.means[k] - fine[k]) < tolerance, (k, r.means[k], fine[k], tolerance)
        if k != "c":  # the overall scale of G fluctuates: t and ρ shift by ~10%, the copy strength less
            assert abs(r.saddle[k] - fine[k]) > 3 * tolerance


def test_causal_entropy_bad_input():
    with pytest.raises(ParameterError):
        api.linear_posterior_means(8, 4, 100.0, CAUSAL_ENTROPY, walkers=1)
    with pytest.raises(ParameterError):
        api.linear_posterior_means(8, 4, -1.0, CAUSAL_ENTROPY)
    with pytest.raises(ParameterError):
        api.linear_posterior_means(2, 4, 100.0, CAUSAL_ENTROPY)
    with pytest.raises(ParameterError):
        api.DEFAULT.with_(row_sums="per-token")


# -- periodic / drop-first with one row sum per row (row_sums="per-row") ------------------------------------
def _per_row(boundary):
    return api.DEFAULT.with_(boundary=boundary, remainder="entropy", row_sums="per-row")


def _previous_column(L, boundary):
    """Target rows (0-based) and the column of each one's previous position (periodic: row 0 copies position L − 1)."""
    rows = np.arange(L) if boundary == "periodic" else np.arange(1, L)
    return rows, (rows - 1) % L


@pytest.mark.parametrize("boundary", ["periodic", "drop-first"])
def test_per_row_remainder_is_isotropic_and_prior_is_least_squares(boundary):
    """Reference for the row-resolved periodic/drop-first action (the causal kernels with every row of length L):
    (i) the prior precision of the target-row entries of G = κ(A + b11ᵀ) (covariance κ²(σ²I + s₁11ᵀ), inverted
    numerically) restricted to {zero row sums, ⊥ copy direction} is λ_a·I, uncoupled from the (t_l, c) directions,
    with dimension D = T(L − 1) − 1 (the action's entropy weight (D − 2)/2); (ii) the action's prior part at a G with
    unequal row sums equals the least ‖A‖²/(2σ²) + b²/(2s₁) over b (linear least squares)."""
    L, sigma2, s1 = 6, 1.3, 0.6
    conv = _per_row(boundary).with_(sigma2=sigma2, s1=s1)
    kappa, T_ = conv.kappa(L), conv.targets(L)
    rows, prev = _previous_column(L, boundary)
    N = T_ * L
    precision = np.linalg.inv(kappa**2 * (sigma2 * np.eye(N) + s1 * np.ones((N, N))))
    row_sums = np.kron(np.eye(T_), np.ones(L))
    copy_direction = np.zeros((T_, L))
    copy_direction[np.arange(T_), prev] = 1.0
    copy_direction = (copy_direction - 1.0 / L).ravel()
    _, sv, vt = np.linalg.svd(np.vstack([row_sums, copy_direction]))
    basis = vt[int(np.sum(sv > 1e-12)):].T
    p = _instance(L, 4, conv).row_resolved_values()
    assert basis.shape[1] == T_ * (L - 1) - 1 == 2 * p["D_r"] + 2
    lam_a = 1.0 / (kappa**2 * sigma2)
    assert np.allclose(basis.T @ precision @ basis, lam_a * np.eye(basis.shape[1]), rtol=1e-10, atol=1e-8 * lam_a)
    assert np.abs(basis.T @ precision @ np.vstack([row_sums, copy_direction]).T).max() < 1e-8 * lam_a
    t_rows, c_ = np.linspace(0.1, 0.8, T_), 0.35
    G = t_rows[:, None] / L + c_ * copy_direction.reshape(T_, L)
    target = (G / kappa).ravel()
    b = (target.sum() / sigma2) / (N / sigma2 + 1 / s1)
    least = ((target - b) ** 2).sum() / (2 * sigma2) + b * b / (2 * s1)
    ls = causal.row_lengths(_instance(L, 4, conv))
    values = {model.sum_t2_l: (t_rows**2 / ls).sum(), model.sum_t_l: (t_rows / ls).sum(), model.sum_t: t_rows.sum(),
              model.sum_t2: (t_rows**2).sum(), model.c: c_, model.T: p["T"], model.harmonic: p["H_T"],
              model.lam_a: p["lam_a"], model.w_b: p["w_b"]}
    assert float(model.causal_linear_action().subs(model.n, 0).subs(values)) == pytest.approx(least, rel=1e-12)


@pytest.mark.parametrize("boundary", ["periodic", "drop-first"])
def test_per_row_action_with_equal_row_sums_is_the_shared_action(boundary):
    """Two separate derivations: the row-resolved action (causal kernels, every row of length L) at t_l = t for every
    row equals the shared-t reduced action (Convention A, `linear_kernels`) at (t, c), at several n, to 1e-12; and the
    row-resolved minimiser finds equal row sums, at the shared minimum (Convention A at P = 1000: no row-sum spread at
    the saddle point)."""
    L, V = 8, 4
    shared = api.DEFAULT.with_(boundary=boundary)
    per_row = shared.with_(row_sums="per-row")
    ker = _instance(L, V, shared).reduced
    rows = _instance(L, V, per_row)
    T_ = shared.targets(L)
    for n_, t, c in ((30.0, 0.1, -0.3), (200.0, 0.3, 0.2), (1e4, 0.5, 0.4)):
        S_rows = causal.row_resolved_action(rows, np.full(T_, t), c, n_)[0]
        assert S_rows == pytest.approx(float(ker.action(t, c, n_)), rel=1e-12)
    found = causal.row_resolved_minima(rows, 1000.0).points
    best = min(found, key=lambda v: causal.row_resolved_action(rows, v[:T_], v[T_], 1000.0)[0])
    ref = api.solve("linear", L, V, 1000.0, shared).global_minimum
    assert np.ptp(best[:T_]) < 1e-6
    assert best[:T_].mean() == pytest.approx(ref.c_uniform, rel=1e-6) and best[T_] == pytest.approx(ref.c_copy, rel=1e-6)


def agrees_and_rejects_a_shift(result, name: str):
    """The comparison of `name` agrees with simulate's theory, and rejects it moved by twice the band it claims
    (n_sigma·√(sem² + theory_error²)) either way."""
    measured = result.comparison(name)
    assert measured.agrees, measured
    band = measured.n_sigma * math.hypot(measured.sem, measured.theory_error)
    for shift in (-2 * band, 2 * band):
        assert not result.compared_with(name, measured.theory + shift, measured.theory_error).agrees


@pytest.mark.slow
@pytest.mark.parametrize("P, rejected", [(1000.0, ("test_loss",)), (4000.0, None)])
def test_mala_of_the_periodic_linear_network_realises_the_per_row_entropy_convention(P, rejected):
    """MALA of the periodic linear network (L = 8, V = 4, 4 chains × 48000 steps; 6000 leave them unmixed, R-hat 1.17,
    and 24000 leave the ESS of t and c below 100) against the posterior means of the row-resolved remainder-entropy
    action (`row_sums="per-row"`; remainder norm measured from the shared plane, so it holds the row-sum spread). At
    P = 1000 mean row sum, copy strength and remainder norm agree within 3σ (the chains' Monte Carlo error ⊕ the
    posterior means' own; no finite-P term), the theory moved by twice that band is rejected, and the Gibbs test loss
    is rejected (z = 6.6, about 2% above), as sixteen training sets find (the next test). At P = 4000 the chains have
    not mixed in 48000 steps (R-hat 1.09; eight chains 1.13), and the quantities they cannot resolve get no verdict.
    (P = 200: see the test after next.)"""
    r = api.simulate("linear", 8, 4, P, algorithm="mala", trials=4, steps=48000, seed=3, device="cpu",
                     convention=_per_row("periodic"), fluctuations=True)
    if rejected is None:
        unresolved = [d.name for d in r.diagnostics if d.rhat >= 1.05]
        assert unresolved and r.theory_agrees is not True
        for name in unresolved:
            assert r.comparison(name).agrees is None, r.comparison(name)
        return
    assert max(d.rhat for d in r.diagnostics) < 1.05
    for name in ("c_uniform", "c_copy", "rho", "test_loss"):
        if name in rejected:
            measured = r.comparison(name)
            assert measured.agrees is False and measured.z > 3, measured
        else:
            agrees_and_rejects_a_shift(r, name)


@pytest.mark.slow
@pytest.mark.parametrize("P, boundary, loss_z_above", [(1000.0, "periodic", 6.0), (1000.0, "causal", 3.6),
                                                       (4000.0, "periodic", None)])
def test_sixteen_training_sets_resolve_the_finite_P_offset_of_the_gibbs_loss(P, boundary, loss_z_above):
    """The tests above hold the theory against one training set, whose Monte Carlo bar (4 chains) is about three
    times the spread of the training sets' means. Sixteen training sets (2 chains each, 24000 steps; the error the
    sets' standard error with a Student-t band, ⊕ the test set's own) resolve the P → ∞ theory's finite-P offset at
    P = 1000: the Gibbs loss lies 2.0% above it (periodic, z = 8.4) and 0.9% (causal, z = 4.6), rejected, while t and
    c agree; at P = 4000 every quantity agrees (the loss 0.45% above, z = 2.5). An audit's own sampler of the exact
    finite-P posterior (W integrated out, sixteen fresh data sets) found the same 1.7% at P = 1000, periodic. About
    35 s each."""
    convention = _per_row("periodic") if boundary == "periodic" else CAUSAL_ENTROPY
    r = api.simulate("linear", 8, 4, P, algorithm="mala", trials=32, data_sets=16, steps=24000, seed=3, device="cpu",
                     convention=convention, fluctuations=True)
    assert r.data_sets == 16 and 0 < r.test_set_error < r.comparison("test_loss").sem
    for name in ("c_uniform", "c_copy"):
        assert r.comparison(name).agrees, r.comparison(name)
    loss = r.comparison("test_loss")
    if loss_z_above is None:
        assert loss.agrees and r.comparison("rho").agrees, (loss, r.comparison("rho"))
    else:
        assert not loss.agrees and loss.z > loss_z_above, loss


@pytest.mark.slow
@pytest.mark.parametrize("boundary, steps, agreeing, off", [
    ("periodic", 3000, ("c_uniform", "rho"), {"c_copy": -1, "test_loss": 1}),
    ("causal", 12000, ("c_uniform",), {"c_copy": -1, "rho": 1, "test_loss": 1}),
])
def test_at_P_200_the_remainder_entropy_theory_misses_the_sampled_gibbs_loss(boundary, steps, agreeing, off):
    """Honest negative at P = 200 (L = 8, V = 4, 4 chains, mixed: R-hat < 1.05): the P → ∞ theory of the remainder-
    entropy convention (with the order parameters' fluctuations, no finite-P term) puts the Gibbs test loss 6% below
    the sampled one (measured z = +3.8 periodic, +6.2 causal), and it misses one order parameter more: the copy
    strength 4.5% too high (periodic, z = −5.1) or the remainder norm 6% too low (causal, z = +3.2); the others
    agree. At P = 1000 one training set (the tests above and below) and sixteen (the test above) find the Gibbs loss
    2% above the theory (periodic) and the order parameters in agreement. The causal run takes 12000 steps, where the
    ESS of every mean passes 100 (6000 left c unresolved)."""
    convention = _per_row("periodic") if boundary == "periodic" else CAUSAL_ENTROPY
    r = api.simulate("linear", 8, 4, 200.0, algorithm="mala", trials=4, steps=steps, seed=3, device="cpu",
                     convention=convention, fluctuations=True)
    assert max(d.rhat for d in r.diagnostics) < 1.05
    for name in agreeing:
        agrees_and_rejects_a_shift(r, name)
    for name, sign in off.items():
        measured = r.comparison(name)
        assert not measured.agrees and sign * measured.z > 3, measured


@pytest.mark.slow
def test_mala_of_the_masked_linear_network_realises_the_remainder_entropy_convention():
    """MALA of the masked linear network at P = 1000 (L = 8, V = 4, 4 chains × 48000 steps, where the ESS of every
    mean passes 100: 6000 leave R-hat at 1.18) against the remainder-entropy theory with the order parameters'
    fluctuations (`linear_posterior_means`): mean row sum, copy strength, remainder norm and Gibbs test loss agree
    within 3σ (the chains' Monte Carlo error ⊕
    the posterior means' own; no finite-P term), the theory moved by twice that band is rejected, and Convention A
    (the saddle point with ρ = 0) is excluded by the remainder norm."""
    r = api.simulate("linear", 8, 4, 1000.0, algorithm="mala", trials=4, steps=48000, seed=3, device="cpu",
                     convention=CAUSAL_ENTROPY, fluctuations=True)
    assert max(d.rhat for d in r.diagnostics) < 1.05
    for name in ("c_uniform", "c_copy", "rho", "test_loss"):
        agrees_and_rejects_a_shift(r, name)
    rho = r.comparison("rho")
    assert rho.mean > 10 * math.hypot(rho.sem, rho.theory_error)  # Convention A: ρ = 0
