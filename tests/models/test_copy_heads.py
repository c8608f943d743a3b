"""Copy-heads model: exact action identities, priors against Monte Carlo, reduced against exact action,
transition order found by the classifier, threshold precision and scaling laws."""

from __future__ import annotations

import math
import re
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy
from scipy import special

from attnphase.api import copy_heads as api
from attnphase.errors import ParameterError
from attnphase.models.copy_heads import derivation, exact
from attnphase.models.copy_heads import symbolic as model
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from model_pages import page_table_after


# -- exact finite-P action ----------------------------------------------------------------------------
@pytest.mark.parametrize("boundary", ["periodic", "drop-first"])
@pytest.mark.parametrize("beta, tau", [(1.0, 1.0), (0.3, 2.5), (4.0, 0.2)])
def test_weight_space_equals_function_space(boundary, beta, tau):
    rng = np.random.default_rng(11)
    L, V, P = 6, 3, 9
    tokens = rng.integers(0, V, (P, L))
    for _ in range(3):
        G = rng.normal(size=(L, L))
        ws = exact.weight_space_action(G, tokens, V, beta, tau, boundary)
        fs = exact.function_space_action(G, tokens, V, beta, tau, boundary)
        assert abs(ws - fs) <= 1e-10 * max(1.0, abs(fs))


def test_reduced_action_matches_exact_at_large_P():
    """Differences of the action between two points of the (t, c) plane: the self-averaged reduced
    action against the exact finite-P action. Sample fluctuations of an empirical mean over N target
    tokens are O(1/sqrt(N)) relative, so the relative discrepancy is bounded by 5/sqrt(N)."""
    L, V, P = 8, 4, 16000
    rng = np.random.default_rng(5)
    pts = [(0.5, 0.0), (0.2, 0.3), (0.0, 0.8)]
    N = P * L
    reduced = [float(model.data_action(*model.copy_plane(t, c), t).subs({model.n: N, model.L: L, model.V: V, model.tau: 1.0, model.ld: 1}))
               for t, c in pts]
    rel = []
    for _ in range(2):
        tokens = rng.integers(0, V, (P, L))
        values = [exact.weight_space_action(exact.copy_plane_matrix(L, t, c), tokens, V, 1.0, 1.0) for t, c in pts]
        for i in (1, 2):
            d_exact, d_red = values[i] - values[0], reduced[i] - reduced[0]
            rel.append(abs(d_exact - d_red) / abs(d_red))
    assert max(rel) < 5 / math.sqrt(N)


def test_order_parameters_of_plane_matrix_roundtrip():
    L = 7
    op = exact.order_parameters_of(exact.copy_plane_matrix(L, 0.3, -0.4))
    assert op["t"] == pytest.approx(0.3, abs=1e-14)
    assert op["c"] == pytest.approx(-0.4, abs=1e-14)
    assert op["rho"] == pytest.approx(0.0, abs=1e-14)


def test_mean_predictor_loss_matches_ridge_regression():
    """The loss predicted from (m, q, t) against the posterior-mean read-out fitted on P sequences and
    tested on fresh ones; MC error of the test average from its sample standard deviation."""
    L, V, P, beta, tau = 8, 4, 3000, 1.0, 1.0
    rng = np.random.default_rng(3)
    t_, c_ = 0.4, 0.35
    G = exact.copy_plane_matrix(L, t_, c_)
    Phi, Y = exact.features_and_targets(G, rng.integers(0, V, (P, L)), V)
    W = np.linalg.solve(np.eye(V) / tau + beta * Phi.T @ Phi, beta * Phi.T @ Y).T
    Phi_t, Y_t = exact.features_and_targets(G, rng.integers(0, V, (4000, L)), V)
    per_pos = ((Y_t - Phi_t @ W.T) ** 2).sum(axis=1)
    m_, q_ = model.copy_plane(t_, c_)
    n_ = beta * P * L
    predicted = float(model.mean_predictor_loss(m_, q_, t_).subs({model.n: n_, model.V: V, model.tau: tau, model.L: L}))
    # finite-P estimation error of W adds O(V^2/n) on top of the self-averaged prediction
    assert abs(per_pos.mean() - predicted) < 4 * per_pos.std() / math.sqrt(per_pos.size) + 2 * V * V / n_


# -- priors -------------------------------------------------------------------------------------------
def test_logistic_normal_density_against_monte_carlo():
    """Box probabilities of softmax(N(0, σ²I_3)) rows: density integrated by quadrature vs MC counts."""
    sigma2 = 1.5
    rng = np.random.default_rng(7)
    N = 400_000
    z = rng.normal(scale=math.sqrt(sigma2), size=(N, 3))
    g = special.softmax(z, axis=1)

    def box_probability(a1, b1, a2, b2, nodes=64):
        x, w = np.polynomial.legendre.leggauss(nodes)
        g1 = (b1 - a1) / 2 * x + (a1 + b1) / 2
        g2 = (b2 - a2) / 2 * x + (a2 + b2) / 2
        G1, G2 = np.meshgrid(g1, g2, indexing="ij")
        G3 = 1 - G1 - G2
        inside = G3 > 0
        gg = np.stack([G1, G2, np.where(inside, G3, 0.5)], axis=-1)
        d = np.where(inside, np.exp(exact.logistic_normal_logpdf(gg, sigma2)), 0.0)
        return float((b1 - a1) * (b2 - a2) / 4 * w @ d @ w)

    # normalisation over the simplex, g1 = u, g2 = (1 − u)v (Jacobian 1 − u)
    x, w = np.polynomial.legendre.leggauss(400)
    u = (x + 1) / 2
    U, Vv = np.meshgrid(u, u, indexing="ij")
    gg = np.stack([U, (1 - U) * Vv, (1 - U) * (1 - Vv)], axis=-1)
    total = float(w @ (np.exp(exact.logistic_normal_logpdf(gg, sigma2)) * (1 - U)) @ w / 4)
    assert total == pytest.approx(1.0, abs=1e-6)
    for (a1, b1), (a2, b2) in [((0.1, 0.3), (0.2, 0.5)), ((0.5, 0.7), (0.05, 0.2)), ((0.01, 0.1), (0.01, 0.1))]:
        p = box_probability(a1, b1, a2, b2)
        hits = np.mean((g[:, 0] > a1) & (g[:, 0] < b1) & (g[:, 1] > a2) & (g[:, 1] < b2))
        assert abs(hits - p) < 4 * math.sqrt(p * (1 - p) / N)


def test_exact_row_logit_density_against_monte_carlo():
    """The exact row density of x = z_prev − ln Σ e^{z_other} (Sobol over the denominator) integrated
    over intervals against the MC fraction of sampled rows."""
    from attnphase.numeric.sobol import sobol_expectation

    L, sigma2 = 8, 1.0
    rng = np.random.default_rng(9)
    N = 400_000
    z = rng.normal(scale=1.0, size=(N, L))
    xs_mc = z[:, 0] - special.logsumexp(z[:, 1:], axis=1)
    nodes, weights = np.polynomial.legendre.leggauss(24)
    for a, b in [(-4.0, -2.5), (-2.5, -1.5), (-1.0, 0.5)]:
        xq = (b - a) / 2 * nodes + (a + b) / 2
        ex = sobol_expectation(exact.row_logit_density_integrand(xq, sigma2), np.zeros(L - 1), np.eye(L - 1) * sigma2,
                               n_points=2**13, replicates=8)
        p = float((b - a) / 2 * weights @ np.asarray(ex.value))
        p_err = float((b - a) / 2 * np.abs(weights) @ np.asarray(ex.error))
        hits = np.mean((xs_mc > a) & (xs_mc < b))
        assert abs(hits - p) < 4 * math.sqrt(p * (1 - p) / N) + 4 * p_err


def test_row_rate_shortcut_becomes_exact_at_large_L():
    """−ln p(x) exact (Sobol over the other L−1 scores) minus the large-L shortcut at the copy branch
    s = ½ ln L. With ln Σe^z = ln((L−1)e^{σ²/2}) + δ, E δ = −v/2, Var δ = v = (e^{σ²}−1)/(L−1), the
    cumulant expansion gives the gap −v(s² + sσ² − σ²)/(2σ⁴) + O(v² s⁴): the shortcut's validity."""
    from attnphase.numeric.sobol import sobol_expectation

    import sympy

    sigma2 = 1.0
    shortcut = sympy.lambdify([model.x, model.L, model.sigma2], model.softmax_shortcut_prior())
    gaps = []
    for L in (64, 256):
        s = 0.5 * math.log(L)
        xv = s - math.log(L - 1) - sigma2 / 2
        ex = sobol_expectation(exact.row_logit_density_integrand([xv], sigma2), np.zeros(L - 1), np.eye(L - 1) * sigma2,
                               n_points=2**11, replicates=8)
        gap = -math.log(float(ex.value[0])) - shortcut(xv, L, sigma2)
        v = (math.exp(sigma2) - 1) / (L - 1)
        predicted = -v * (s * s + s * sigma2 - sigma2) / (2 * sigma2**2)
        assert abs(gap - predicted) < abs(predicted) * 3 * v * s * s + 4 * float(ex.error[0] / ex.value[0])
        gaps.append(abs(gap))
    assert gaps[1] < gaps[0] / 2


# -- transitions -------------------------------------------------------------------------------------
def test_softmax_first_order_found_by_classifier():
    tr = api.threshold("softmax", 32, 4, digits=20)
    assert tr.order == "first"
    lo, hi = tr.spinodals
    assert lo < tr.P_star < hi
    sol = api.solve("softmax", 32, 4, tr.P_star)
    stable = [mn for mn in sol.minima if mn.stable]
    assert len(stable) == 2  # coexisting minima at P*
    assert stable[0].action == pytest.approx(stable[1].action, abs=1e-6 * abs(stable[0].action) + 1e-8)
    assert abs(stable[1].a_copy - stable[0].a_copy) == pytest.approx(tr.jump, rel=1e-6)
    assert tr.jump > 0.1
    # loss drops discontinuously at P*
    assert stable[1].loss_mean_predictor < stable[0].loss_mean_predictor - 0.1


def test_linear_second_order_found_by_classifier_with_mean_field_exponent():
    L, V = 32, 4
    tr = api.threshold("linear", L, V, digits=20)
    assert tr.order == "second"
    assert tr.exponent == pytest.approx(0.5)
    assert tr.soft_mode == "uniform"
    # independent check: t at the minimum grows like (P - P*)^(1/2) just above P*
    dps = np.array([1e-5, 1e-4, 1e-3])
    ts = []
    for d in dps:
        sol = api.solve("linear", L, V, tr.P_star * (1 + d))
        ts.append(abs(sol.global_minimum.c_uniform))
    slope = np.polyfit(np.log(dps), np.log(ts), 1)[0]
    assert slope == pytest.approx(0.5, abs=0.02)
    below = api.solve("linear", L, V, tr.P_star * (1 - 1e-3)).global_minimum
    assert abs(below.c_uniform) < 1e-6 and abs(below.c_copy) < 1e-6


@pytest.mark.parametrize("attention, L, V, P", [("linear", 16, 4, 19.6), ("linear", 16, 4, 19.58071),
                                                 ("linear", 64, 8, 900.0), ("softmax", 16, 4, 300.0),
                                                 ("softmax", 16, 4, 259.03)])
def test_solve_error_covers_the_stationary_point_found_in_mpmath(attention, L, V, P):
    """Every minimum's error covers the distance of its c_uniform, c_copy from the stationary point found at 50 digits
    by mpmath's own root finder from the reported point, on the mpmath kernels of the same action (next to P* the
    curvature is small and the float64 minimiser stops ~1e-10 away, which an error of 0 did not cover)."""
    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V)
    result = api.solve(attention, L, V, P)
    n_ = inst.n_of_P(P)
    assert result.error == result.global_minimum.error
    for minimum in result.minima:
        with mpmath.workdps(50):
            if attention == "linear":
                root = mpmath.findroot(lambda t, c: list(inst.reduced.gradient_mp(t, c, n_)),
                                       (mpmath.mpf(minimum.c_uniform), mpmath.mpf(minimum.c_copy)))
                reference = (root[0], root[1])
            else:
                logit = mpmath.log(minimum.a_copy / (1 - mpmath.mpf(minimum.a_copy)))
                x = mpmath.findroot(lambda x: inst.reduced.gradient_mp(x, n_)[0], logit)
                reference = (1, (L / (1 + mpmath.exp(-x)) - 1) / (L - 1))
            for value, exact_value in zip((minimum.c_uniform, minimum.c_copy), reference):
                assert abs(mpmath.mpf(value) - exact_value) <= minimum.error
        # polished: far below the float64 minimiser's 1e-10 (next to P* the curvature is ~1e-6)
        assert minimum.error <= 1e-12


@pytest.mark.parametrize("attention", ["softmax", "linear"])
@pytest.mark.parametrize("L", [16, 2**20])
def test_threshold_digits_are_stable_across_precision(attention, L):
    """30 requested digits agree with a 40-digit run to 1e-29 (the working precision grows with L
    because the curvatures / actions span powers of L)."""
    # the digits of P* do not depend on the classification (linear: Landau and the followed branches), so skip it
    a = api.threshold(attention, L, 4, digits=30, classify=attention == "softmax")
    b = api.threshold(attention, L, 4, digits=40, classify=attention == "softmax")
    with mpmath.workdps(50):
        ra, rb = mpmath.mpf(a.P_star_digits), mpmath.mpf(b.P_star_digits)
        assert abs(ra - rb) / abs(rb) < mpmath.mpf(10) ** -29
        # the float within its error, which is the float's rounding
        assert abs(mpmath.mpf(a.P_star) - rb) <= a.error <= 2**-52 * a.P_star


def test_the_pages_30_digit_softmax_thresholds_are_what_threshold_computes():
    """The model page's table of P* to 30 digits (V = 4, L = 16 … 2²⁰) equals threshold's digit strings (whose
    30 digits test_threshold_digits_are_stable_across_precision holds against a 40-digit run)."""
    superscripts = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
    rows = page_table_after("copy_heads.md", "P* (coexistence, target tokens), V = 4, 30 digits")
    assert len(rows) == 5
    for size, digits in rows:
        power = size[1:].translate(superscripts)  # "2⁸" -> "8"; "16" stays a plain number
        L = 2 ** int(power) if power != size[1:] else int(size)
        assert api.threshold("softmax", L, 4, digits=30, classify=False).P_star_digits == digits, size


def test_the_first_attempt_fails_from_L_2_43_and_says_why():
    """The model page's range table: the first-attempt reduction (V = 4) converges at L = 2⁴² and fails at every
    power of 2 from 2⁴³ to 2⁶⁴; the failed result's message gives the reason (its root's mpmath polish) before the
    classification at the float64 estimate (it used to give only "continuous transition; a_4 > 0")."""
    assert api.threshold("linear", 2**42, 4, reduction="first-attempt").status == "converged"
    for power in range(43, 65):
        result = api.threshold("linear", 2**power, 4, reduction="first-attempt")
        assert result.status == "failed", power
        assert result.message.startswith("first attempt (m and q only): P* not located: mpmath polish failed")
        assert "at the float64 estimate of P*: continuous transition" in result.message
    rows = page_table_after("copy_heads.md", "## Ranges")
    assert "fails at every power of 2 from 2⁴³ to 2⁶⁴" in dict((r[0], r[2]) for r in rows)["L, linear"]


def _check_the_pages_softmax_onset_table(none_from):
    """The model page's onset table (V = 2 … 32): for each V the order is "none" at every L from none_from(onset) to
    the onset − 1 (the last column) and "first" at the onset, with P* there to the 9 digits printed and the window
    (the spinodals) to the 4 decimals printed."""
    rows = page_table_after("copy_heads.md", "The smallest L with a first-order transition of the homogeneous action")
    assert [int(row[0]) for row in rows] == [2, 4, 8, 16, 32]
    for V, onset, P_star, window, last_none in rows:
        V, onset = int(V), int(onset)
        assert int(last_none) == onset - 1
        for L in range(none_from(onset), onset):
            assert api.threshold("softmax", L, V, digits=9).order == "none", (V, L)
        result = api.threshold("softmax", onset, V, digits=9)
        assert (result.order, result.P_star_digits) == ("first", P_star), V
        assert " – ".join(f"{s:.4f}" for s in result.spinodals) == window, V


@pytest.mark.slow
def test_the_pages_softmax_onset_table_is_what_threshold_computes():
    """Every cell of the page's onset table, "none" at every L from 2 to the onset − 1 (about 7 s: 63 thresholds,
    those below the onset following their branch over the whole range of P)."""
    _check_the_pages_softmax_onset_table(lambda onset: 2)


def test_the_pages_softmax_onset_table_at_the_onset_and_the_L_below_it():
    """The onset table's cells at the onset (order first, P* and window as printed) and the largest L with order
    "none" (the last column), about 1.5 s; `test_the_pages_softmax_onset_table_is_what_threshold_computes` (slow)
    checks "none" at every L from 2 up as well."""
    _check_the_pages_softmax_onset_table(lambda onset: onset - 1)


def test_linear_threshold_digits_are_those_of_the_symmetric_state_hessian_in_mpmath():
    """P* of Convention A (V = 4, L = 2²⁰) to 30 digits is the first n where the 2×2 Hessian of S(t, c) at t = c = 0
    turns singular, and P_crossover where its copy entry vanishes; written out here from spec §2b in mpmath, every
    parameter exact (λ_t = 1/(s₁ + σ²/L²) is 1/(1 + 2⁻⁴⁰), which float64 rounds)."""
    tr = api.threshold("linear", 2**20, 4, digits=30, classify=False)
    with mpmath.workdps(50):
        L, V, tau = mpmath.mpf(2**20), mpmath.mpf(4), mpmath.mpf(1)
        eps, var_t, s_g = 1 - 1 / V, 1 + 1 / L**2, 1 / L**2

        def hessian(n):
            h_tt = 1 / var_t + tau * n * (1 + (V - 1) / L) - tau * n**2 * (1 / V**2 + eps / (V * L**2))
            h_cc = (L - 1) * (1 / s_g + tau * n * (V - 1) / L - eps * tau * n**2 * (L - 1) / (V * L**2))
            h_tc = -eps * tau * n**2 * (L - 1) / (V * L**2)
            return h_tt, h_cc, h_tc

        P_star = mpmath.findroot(lambda n: hessian(n)[0] * hessian(n)[1] - hessian(n)[2] ** 2, mpmath.mpf(tr.P_star))
        P_crossover = mpmath.findroot(lambda n: hessian(n)[1], mpmath.mpf(tr.P_crossover))
        for digits, root in ((tr.P_star_digits, P_star), (tr.P_crossover_digits, P_crossover)):
            assert abs(mpmath.mpf(digits) - root) <= mpmath.mpf(10) ** -29 * root, (digits, root)
        assert abs(mpmath.mpf(tr.P_star) - P_star) <= tr.error


def test_softmax_threshold_digits_are_those_of_the_homogeneous_action_in_mpmath():
    """P* of softmax attention (V = 4, L = 2⁸) to 30 digits is where the two minima of the homogeneous action are
    equally deep. The action, written out here from the spec in mpmath with k = e^{σ²} exact: S(x; n) =
    T[s²/(2σ²) + ln(2πσ²)/2] + V(V−1)/2 ln(1 + u) − ετn²a²/(2V(1 + u)) + V/2 ln(1 + u₁) − τn²/(2V²(1 + u₁)), with
    s = x + ln(L − 1) + σ²/2, a = 1/(1 + e^{−x}), q = a² + k(1 − a)²/(L − 1), u = τnq/V, u₁ = τn/V, T = L."""
    from attnphase.models.copy_heads.homogeneous import softmax_stationary_points

    tr = api.threshold("softmax", 256, 4, digits=30, classify=False)
    inst = api.CopyHeadsInstance.validated(attention="softmax", L=256, V=4, convention=api.DEFAULT)
    minima = softmax_stationary_points(inst, inst.n_of_P(tr.P_star))[0]  # float64: the starts only
    x_uniform, x_copy = minima[0], minima[-1]
    with mpmath.workdps(60):
        L, V, sigma2, tau = mpmath.mpf(256), mpmath.mpf(4), mpmath.mpf(1), mpmath.mpf(1)
        eps, k = 1 - 1 / V, mpmath.exp(sigma2)

        def action(x, n):
            s, a = x + mpmath.log(L - 1) + sigma2 / 2, 1 / (1 + mpmath.exp(-x))
            u, u1 = tau * n * (a**2 + k * (1 - a) ** 2 / (L - 1)) / V, tau * n / V
            row_rate = L * (s**2 / (2 * sigma2) + mpmath.log(2 * mpmath.pi * sigma2) / 2)
            copy_data = V * (V - 1) / 2 * mpmath.log(1 + u) - eps * tau * n**2 * a**2 / (2 * V * (1 + u))
            mean_data = V / 2 * mpmath.log(1 + u1) - tau * n**2 / (2 * V**2 * (1 + u1))
            return row_rate + copy_data + mean_data

        def slope(x, n):
            return mpmath.diff(lambda y: action(y, n), x)

        _, _, n_star = mpmath.findroot(lambda x1, x2, n: (slope(x1, n), slope(x2, n), action(x1, n) - action(x2, n)),
                                       (mpmath.mpf(x_uniform), mpmath.mpf(x_copy), mpmath.mpf(tr.n_star)))
        assert abs(mpmath.mpf(tr.P_star_digits) - n_star) <= mpmath.mpf(10) ** -29 * n_star  # P = n here
        assert abs(mpmath.mpf(tr.P_star) - n_star) <= tr.error


def test_linear_thresholds_follow_closed_forms():
    """Convention A in closed form (spec §2b, with λ_t = 1/(s₁ + s_g)): the copy curvature vanishes at
    the positive root of ετ(L−1)/(VL²) n² − τ(V−1)/L n − λ_c/(L−1) = 0."""
    tr = api.threshold("linear", 64, 8, digits=30)
    with mpmath.workdps(40):
        L, V = mpmath.mpf(64), mpmath.mpf(8)
        lam_c = L * (L - 1) * L  # T(L − 1)/(κ²Lσ²) with T = L, κ = 1/L, σ² = 1
        eps = 1 - 1 / V
        a, b, c0 = eps * (L - 1) / (V * L * L), -(V - 1) / L, -lam_c / (L - 1)
        root = (-b + mpmath.sqrt(b * b - 4 * a * c0)) / (2 * a)
        assert abs(mpmath.mpf(tr.P_crossover_digits) - root) / root < mpmath.mpf(10) ** -25
        assert abs(mpmath.mpf(tr.P_crossover) - root) <= tr.P_crossover_error <= 2**-52 * tr.P_crossover


# -- scaling laws --------------------------------------------------------------------------------------
def test_softmax_threshold_over_L_ln2_L_tends_to_constant():
    """P*/(L ln²L) tends to 1/(4εσ²) (periodic, P in target tokens, β = 1).

    * the local log-log slope of P*/(L ln²L) against L shrinks monotonically in magnitude;
    * divided by the large-L form C(ℓ) = 1 + (2 ln ℓ + 4σ² + 2 − 2 ln 2)/ℓ (api docstring), the ratio
      tends to 1 with a remainder that is O(ln²ℓ/ℓ²): remainder/(ln²ℓ/ℓ²) stays within a factor 2
      over ℓ from 5.5 to 177, and the log-log slope of the corrected ratio over the upper points is
      less than a quarter of the one over the lower points (it tends to 0).
    """
    from attnphase.numeric.scaling import fit_power_law

    Ls = [2**k for k in (8, 16, 20, 32, 64, 128, 256)]
    res = api.scaling("softmax", 4, Ls[0], Ls[-1], digits=12, L_values=Ls)
    assert {p.order for p in res.points} == {"first"}
    P = np.array([p.P_star for p in res.points])
    lnL = np.log(np.array(Ls, float))
    ratio = P / (np.array(Ls, float) * lnL**2)
    slopes = np.diff(np.log(ratio)) / np.diff(lnL)
    assert np.all(np.diff(np.abs(slopes)) < 0)
    ex = res.extrapolation
    rem = np.array(ex.remainder_over_ln2ell_over_ell2)
    assert np.all(rem > 0) and rem.max() / rem.min() < 2
    corrected = np.array(ex.corrected_ratio)
    assert np.all(np.diff(np.abs(corrected - 1)) < 0)
    low = fit_power_law(np.array(Ls[:4], float), corrected[:4])
    high = fit_power_law(np.array(Ls[3:], float), corrected[3:])
    assert abs(high.exponent) < abs(low.exponent) / 4


def test_softmax_threshold_at_large_L_scales_as_one_over_epsilon():
    """The leading large-L form n* ≈ T ln²L/(4εσ²) with the correction factor C(ln L) independent of ε = 1 − 1/V:
    at L = 2²⁵⁶ the thresholds for V = 2 and V = 4 stand in the ratio ε(4)/ε(2) = 3/2, up to the remainder
    ≈ 2.5 ln²ln L/ln²L ≈ 0.002 of each (within 1%). A check of the thresholds, independent of the formula the
    extrapolation prints."""
    L = 2**256
    ratio = api.threshold("softmax", L, 2, digits=12).P_star / api.threshold("softmax", L, 4, digits=12).P_star
    assert ratio == pytest.approx(1.5, rel=0.01)


def test_the_linear_crossover_is_a_first_order_jump_at_L_1024_and_smooth_at_256():
    """The model page's crossover table (V = 4, Convention A): smooth at L = 256; at L = 1024 the global minimum jumps
    at P_crossover_jump inside the window where two minima coexist. Checked by `solve` on its own: two stable minima
    just inside each end of the window and one just outside, and across the jump the global minimum changes to the
    other one, by the reported jump of √(t² + c²)."""
    assert api.threshold("linear", 256, 4, digits=12).crossover_order == "smooth"
    t = api.threshold("linear", 1024, 4, digits=12)
    lo, hi = t.crossover_window
    assert t.crossover_order == "first" and lo < t.P_crossover_jump < hi

    def stable(P):
        return [m for m in api.solve("linear", 1024, 4, P).minima if m.stable]

    assert [len(stable(P)) for P in (lo * 0.999, lo * 1.001, hi * 0.999, hi * 1.001)] == [1, 2, 2, 1]
    below, above = (api.solve("linear", 1024, 4, t.P_crossover_jump * f).global_minimum for f in (1 - 1e-7, 1 + 1e-7))
    size = [math.hypot(m.c_uniform, m.c_copy) for m in (below, above)]
    assert size[0] - size[1] == pytest.approx(t.crossover_jump, abs=1e-4)


def test_a_crossover_the_followed_branches_cannot_classify_is_not_called_smooth():
    """At L = 2^24 (V = 4) `solve` finds the uniform-pooling minimum and the copy minimum side by side 5% above
    P_crossover, the copy one lower, while just below P_crossover only the uniform-pooling one exists: the global
    minimum jumps. The float64 branches followed by `threshold` lose the uniform-pooling minimum there, so the
    crossover is "not classified" (status limited, the message says which change of the global minimum), never
    "smooth"."""
    L = 2**24
    t = api.threshold("linear", L, 4, digits=12)
    assert t.crossover_order == "not classified" and t.status == "limited" and "crossover" in t.message
    # the change is placed in the followed control, ln n (it was called c, the copy strength's name)
    where = re.search(r"leaves its branch at ln n = (\S+) ", t.message)
    assert where and " at c = " not in t.message, t.message
    assert abs(math.exp(float(where.group(1))) / t.n_crossover - 1) < 0.05
    stable = {f: sorted((m for m in api.solve("linear", L, 4, f * t.P_crossover).minima if m.stable),
                        key=lambda m: m.action) for f in (0.98, 1.05)}
    assert len(stable[0.98]) == 1 and stable[0.98][0].c_uniform > 0.2
    copy, uniform = stable[1.05][0], stable[1.05][-1]
    assert abs(copy.c_uniform) < 0.01 < 0.2 < uniform.c_uniform


def test_linear_transition_scales_as_V_squared_and_crossover_as_L_three_halves():
    """Each claimed exponent inside its fit's band widened by the slope's drift, and neither neighbouring law (V^1.9,
    V^2.1; L^1.45, L^1.55) inside the same band: the verdict "yes" (which also needs the band to exclude the
    exponents 0.5 away), `holds` True with it."""
    fitV = api.scaling_in_V("linear", 4096, [8, 16, 32, 64, 128], digits=12).fit
    fitL = api.scaling("linear", 4, 256, 2**16, digits=12).fit
    for fit, claimed, neighbours in ((fitV["P_star"], 2.0, (1.9, 2.1)), (fitL["P_crossover"], 1.5, (1.45, 1.55))):
        assert fit.claimed_exponent == claimed and fit.verdict == "yes" and fit.holds is True, fit
        band = (fit.exponent_low, fit.exponent_high)  # the statistical band widened by the drift of the local slope
        assert not any(band[0] <= other <= band[1] for other in neighbours), (band, neighbours)
    assert fitL["P_star"].verdict == "yes" and fitL["P_star"].holds is True


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_P_star_scales_as_one_over_beta(attention):
    """β multiplies the data term, which P multiplies: P*(β) β is one number at β = 1e-6, 1 and 1e6, to the digits
    asked."""
    scaled = [api.threshold(attention, 16, 4, digits=12, convention=api.DEFAULT.with_(beta=beta)).P_star * beta
              for beta in (1e-6, 1.0, 1e6)]
    assert scaled == pytest.approx([scaled[1]] * 3, rel=1e-10)


def test_a_softmax_action_with_no_minimum_to_start_from_fails_with_the_reason():
    """σ² = 1e300 leaves no minimum on the action's grid at the lowest n: status failed, saying so (it raised an
    IndexError)."""
    result = api.threshold("softmax", 16, 4, digits=6, convention=api.DEFAULT.with_(sigma2=1e300))
    assert result.status == "failed" and "no minimum of the softmax action" in result.message


def test_scaling_leaves_out_the_sizes_without_a_transition():
    """Softmax at V = 4 has no first-order transition below L = 8: those sizes are reported with P* missing and left
    out of the fits, and with fewer than 3 sizes left the status says a fit needs 3."""
    too_few = api.scaling("softmax", 4, 2, 8, digits=6)
    assert too_few.status == "not_found" and "needs 3" in too_few.message and too_few.fit == {}
    assert [math.isnan(p.P_star) for p in too_few.points] == [True, True, False]
    fitted = api.scaling("softmax", 4, 4, 64, digits=6)
    assert fitted.status == "converged" and "no P* at L = 4" in fitted.message
    assert fitted.fit["P_star"].n == 4 and len(fitted.extrapolation.ratio) == 4  # L = 8, 16, 32, 64


def test_bad_parameters_raise_parameter_error():
    with pytest.raises(ParameterError):
        api.threshold("softmax", 1, 4)
    with pytest.raises(ParameterError):
        api.threshold("relu", 8, 4)
    with pytest.raises(ParameterError):
        api.solve("linear", 8, 1, 10.0)
    with pytest.raises(ParameterError):
        api.solve("linear", 8, 4, 0.0)
    with pytest.raises(ParameterError):
        api.threshold("linear", 8, 4, digits=0)


def test_sizes_beyond_the_float64_range_raise_parameter_error():
    """L and V have upper bounds (MAX_L = 2^256, linear 2^64, MAX_V = 2^64) where they enter: an int beyond them
    gave OverflowError ("int too large to convert to float") deep inside; the largest sizes the tests use stay valid."""
    from attnphase.models.copy_heads.parameters import MAX_L, MAX_LINEAR_L, MAX_V

    huge = 10**300
    calls = [lambda: api.threshold("linear", huge, 4, digits=10), lambda: api.threshold("softmax", 16, huge, digits=10),
             lambda: api.threshold("linear", 16, huge, digits=10),
             lambda: api.scaling("linear", huge, 16, 64, digits=5),
             lambda: api.scaling_in_V("linear", 16, [4, 8, huge], digits=5),
             lambda: api.threshold("softmax", MAX_L + 1, 4, digits=10),
             lambda: api.threshold("linear", MAX_LINEAR_L + 1, 4, digits=10),
             lambda: api.threshold("linear", 16, MAX_V + 1, digits=10)]
    for call in calls:
        with pytest.raises(ParameterError, match=r"invalid value for (L|V|V_values)"):
            call()
    assert api.threshold("linear", 16, MAX_V, digits=10, classify=False).success  # P* ≈ V² = 2^128
    CopyHeadsInstance.validated(attention="softmax", L=MAX_L, V=4)


def test_convention_keeps_the_converted_values_and_checks_its_flags():
    """Convention(beta="2") was validated but kept the string (TypeError in n_of_P); bias="no" was accepted and acted
    as bias=True (a silently wrong P*)."""
    assert api.Convention(beta="2").beta == 2.0 and isinstance(api.Convention(beta="2").beta, float)
    a = api.solve("softmax", 16, 4, 259.0, api.Convention(beta="2")).global_minimum
    b = api.solve("softmax", 16, 4, 259.0, api.Convention(beta=2.0)).global_minimum
    assert a.c_copy == b.c_copy
    for bad in ("no", 0, 1, None):
        with pytest.raises(ParameterError, match="bias"):
            api.Convention(bias=bad)
        with pytest.raises(ParameterError, match="bias"):
            api.DEFAULT.with_(bias=bad)
    assert api.Convention(bias=np.bool_(False)).bias is False


def test_flags_are_bools_not_truth_values():
    with pytest.raises(ParameterError, match="classify"):
        api.threshold("linear", 16, 4, digits=5, classify="no")
    with pytest.raises(ParameterError, match="fluctuations"):
        api.simulate("linear", 8, 4, 400.0, fluctuations="yes", steps=20)


def test_deprecated_aliases_conflicting_with_the_new_name_raise():
    """sampler= and chains= silently overrode algorithm= and trials= given with other values. An old spelling alone,
    or given with the same value as the new one, warns and runs what the new spelling runs (the same seed: the same
    chains, number for number); the default's value given explicitly with a different old one also conflicts."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ParameterError, match="sampler.*algorithm='adam'"):
            api.simulate("softmax", 8, 4, 400.0, algorithm="adam", sampler="sgld", trials=2, steps=20)
        with pytest.raises(ParameterError, match="chains.*trials=4"):
            api.simulate("softmax", 8, 4, 400.0, trials=4, chains=2, steps=20)
        with pytest.raises(ParameterError, match="chains.*trials=4"):
            api.simulate_row_model(8, 4, 400.0, trials=4, chains=2, steps=20)

    def run(**kwargs):
        return api.simulate("softmax", 8, 4, 400.0, steps=20, device="cpu", **kwargs).as_dict()

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # neither old spelling given: no warning
        plain, six = run(), run(trials=6)
    assert plain["algorithm"] == "mala" and len(plain["chains"]) == 2 and len(six["chains"]) == 6
    with pytest.warns(DeprecationWarning, match="sampler"):
        assert run(algorithm="mala", sampler="sgld") == plain  # the same, given twice
    with pytest.warns(DeprecationWarning, match="chains"):
        assert run(chains=6) == six
    with pytest.warns(DeprecationWarning, match="chains"):
        with pytest.raises(ParameterError, match="chains"):
            run(trials=2, chains=6)


def test_entry_points_refuse_bad_input_with_parameter_error():
    """Each of these raised TypeError, IndexError, ZeroDivisionError, ValueError (math domain, max/min of an empty
    list) or AttributeError from inside, or returned a value (NaN, a result from lists of different lengths, a
    negative burn-in run; digits of a negative error: numeric.supported_digits, tests/numeric/test_digits.py)."""
    calls = {
        "V_values": lambda: api.scaling_in_V("linear", 16, 5),
        "P_values": lambda: api.simulate_sweep("softmax", 8, 4, 5.0, steps=20),
        "P_values ": lambda: api.simulate_hysteresis(8, 4, [], steps=20),
        "L": lambda: api.copy_plane_matrix(0, 0.1, 0.2),
        "P_values  ": lambda: api.softmax_dual_mean_field(16, 4, []),
        "factors": lambda: api.softmax_mean_field_window(16, 4, factors=[-1.0]),
        "L_values": lambda: api.convention_table(L_values=[], V_values=[4, 8, 16]),
        "L ": lambda: api.softmax_large_L_correction(1, 4),
        "L  ": lambda: api.softmax_large_L_correction(float("nan"), 4),
        "conv": lambda: api.row_set(16, None),
        "bogus": lambda: api.sweep_point(bogus=1),
        "conventions": lambda: api.convention_table(conventions=["A"]),
        "result": lambda: api.plot_scaling(None),
        "P_stars": lambda: api.softmax_ratio_extrapolation([16, 32], [1.0], 4),
        "burn_in": lambda: api.simulate_hysteresis(8, 4, [400.0], steps=20, burn_in=-1),
    }
    for name, call in calls.items():
        with pytest.raises(ParameterError, match=f"invalid value for {name.strip()}:"):
            call()


def test_exact_action_helpers_validate_their_input():
    """The public helpers of `exact` did no validation: an unknown boundary returned a tuple, β = NaN or τ < 0 a
    float, a token beyond V an IndexError."""
    G, tokens = exact.copy_plane_matrix(4, 0.3, 0.2), np.zeros((2, 4), int)
    calls = {
        "boundary": lambda: api.features_and_targets(G, tokens, 3, boundary="x"),
        "beta": lambda: api.function_space_action(G, tokens, 3, float("nan"), 1.0),
        "tau": lambda: api.function_space_action(G, tokens, 3, 1.0, -1),
        "tau ": lambda: api.weight_space_action(G, tokens, 3, 1.0, 0.0),
        "tokens": lambda: api.features_and_targets(G, np.full((2, 4), 3), 3),
        "tokens ": lambda: api.weight_space_action(G, np.zeros((2, 5), int), 3, 1.0, 1.0),
        "G": lambda: api.features_and_targets(np.ones((4, 3)), tokens, 3),
        "centred": lambda: api.features_and_targets(G, tokens, 3, centred="yes"),
        "t_rows": lambda: api.causal_plane_matrix(4, [0.1, 0.2], 0.3),
        "c": lambda: api.causal_plane_matrix(4, 0.1, float("inf")),
        "boundary  ": lambda: api.order_parameters_of(G, "mask"),
    }
    for name, call in calls.items():
        with pytest.raises(ParameterError, match=f"invalid value for {name.strip()}:"):
            call()
    valid = api.weight_space_action(G, tokens, 3, 1.0, 1.0)
    assert valid == pytest.approx(api.function_space_action(G, tokens, 3, 1.0, 1.0))


def test_derivation_markdown_is_deterministic_and_shows_the_actions():
    a, b = derivation.derivation_markdown(), derivation.derivation_markdown()
    assert a == b
    for label in ("data", "linear", "first", "softmax", "row-rate", "loss-gibbs"):
        assert f"\\tag{{{label}}}" in a


def test_cli_contract_and_bad_input():
    import json

    from click.testing import CliRunner

    import attnphase.cli.copy_heads  # noqa: F401  (registers the commands)
    from attnphase.cli import main

    runner = CliRunner()
    out = runner.invoke(main, ["threshold", "copy-heads", "--attention", "linear", "--L", "16", "--V", "4", "--digits", "20", "--json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert d["order"] == "second" and len(d["P_star_digits"].replace(".", "").lstrip("0")) == 20
    assert d["P_crossover"] > d["P_star"]
    out = runner.invoke(main, ["solve", "copy-heads", "--attention", "softmax", "--L", "16", "--V", "4", "--P", "300", "--json"])
    d = json.loads(out.output)
    assert {"c_uniform", "c_copy", "action", "stable"} <= set(d["minima"][0]) and "global" in d
    for bad in (["--L", "1", "--V", "4"], ["--L", "8", "--V", "1"], ["--L", "8", "--V", "4", "--digits", "0"]):
        out = runner.invoke(main, ["threshold", "copy-heads", "--attention", "softmax", *bad, "--json"])
        assert out.exit_code == 2
    out = runner.invoke(main, ["solve", "copy-heads", "--attention", "linear", "--L", "8", "--V", "4", "--P", "-3", "--json"])
    assert out.exit_code == 2
    out = runner.invoke(main, ["scaling", "copy-heads", "--attention", "linear", "--V", "4", "--L-min", "64", "--L-max", "16", "--json"])
    assert out.exit_code == 2


def test_renamed_options_are_still_accepted_with_a_deprecation_message():
    """--sigma2 (now --score-variance), and for simulate --sampler sgld and --chains (now --algorithm mala and
    --trials): the old spellings give the same JSON as the new ones, with one deprecation line per old spelling (and
    per old value) on stderr; the JSON names the options as they are now (tau, score_variance, algorithm, trials)."""
    import json

    from click.testing import CliRunner

    from attnphase.cli import main

    runner = CliRunner()
    cases = [(["threshold", "copy-heads", "--attention", "linear", "--L", "8", "--V", "4", "--digits", "6"],
              ["--sigma2", "0.5"], ["--score-variance", "0.5"], 1),
             (["simulate", "copy-heads", "--attention", "softmax", "--L", "4", "--V", "2", "--P", "8", "--steps", "20",
               "--device", "cpu", "--rng", "cpu"], ["--sampler", "sgld", "--chains", "2"], ["--algorithm", "mala", "--trials", "2"],
              3)]  # --sampler, its value sgld, --chains
    for command, old, new, messages in cases:
        outputs = []
        for spelling in (old, new):
            result = runner.invoke(main, [*command, *spelling, "--json"])
            assert result.exit_code == 0, result.output
            deprecations = [line for line in result.stderr.splitlines() if "deprecated" in line]
            assert len(deprecations) == (messages if spelling is old else 0)
            outputs.append({k: v for k, v in json.loads(result.stdout).items() if k != "version"})
        assert outputs[0] == outputs[1]
        convention = outputs[1]["parameters"]["convention"]
        assert convention["score_variance"] == (0.5 if command[0] == "threshold" else 1.0) and convention["tau"] == 1.0
    assert outputs[1]["parameters"]["algorithm"] == outputs[1]["algorithm"] == "mala"
    assert outputs[1]["parameters"]["trials"] == len(outputs[1]["chains"]) == 2


def test_softmax_shortcut_threshold_converges_to_exact_row_rate():
    """P* with the exact row rate (Sobol over the other scores) against the large-L shortcut: the
    shortcut overestimates P*, by a relative gap that shrinks with L (by more than a factor 3 from
    L = 32 to 128, beyond the Sobol error)."""
    gaps = []
    for L in (32, 128):
        r = api.softmax_exact_prior_threshold(L, 4)
        assert r.order == "first" and r.success
        gap = (r.P_star_shortcut - r.P_star_exact) / r.P_star_exact
        assert gap > 3 * r.error / r.P_star_exact
        gaps.append(gap)
    assert gaps[1] < gaps[0] / 3


# -- centred input tokens ------------------------------------------------------------------------------
def test_centred_tokens_weight_space_equals_function_space():
    rng = np.random.default_rng(11)
    L, V = 5, 3
    tokens = rng.integers(0, V, (7, L))
    G = rng.normal(size=(L, L))
    ws = exact.weight_space_action(G, tokens, V, 0.7, 1.3, centred=True)
    fs = exact.function_space_action(G, tokens, V, 0.7, 1.3, centred=True)
    assert ws == pytest.approx(fs, rel=1e-10, abs=1e-10)


def test_centred_reduced_action_matches_exact_at_large_P():
    """Differences of the centred data action between points of the (t, c) plane against the exact
    finite-P action with centred inputs (same O(1/sqrt(N)) bound as the one-hot test)."""
    L, V, P = 8, 4, 16000
    rng = np.random.default_rng(6)
    pts = [(0.5, 0.0), (0.2, 0.3), (0.0, 0.8)]
    N = P * L
    subs = {model.n: N, model.L: L, model.V: V, model.tau: 1.0, model.ld: 1}
    reduced = [float(model.data_action(*model.copy_plane(t, c), t, centred=True).subs(subs)) for t, c in pts]
    tokens = rng.integers(0, V, (P, L))
    values = [exact.weight_space_action(exact.copy_plane_matrix(L, t, c), tokens, V, 1.0, 1.0, centred=True) for t, c in pts]
    for i in (1, 2):
        d_exact, d_red = values[i] - values[0], reduced[i] - reduced[0]
        assert abs(d_exact - d_red) / abs(d_red) < 5 / math.sqrt(N)


def test_centred_tokens_remove_only_the_uniform_data_gain_from_the_hessian():
    """Hand derivation: at t = c = 0 the all-ones terms contribute τn·ld − τn²/V² to H_tt (from
    (V/2)ln(1 + τnt²/V) and −τn²t²/(2V²(1 + τnt²/V))) and nothing to H_tc, H_cc."""
    H1 = model.symmetric_point_hessian()
    H0 = model.symmetric_point_hessian(centred=True)
    ones = model.tau * model.n * model.ld - model.tau * model.n**2 / model.V**2
    assert sympy.simplify(H1[0, 0] - H0[0, 0] - ones) == 0
    assert sympy.simplify(H1[0, 1] - H0[0, 1]) == 0 and sympy.simplify(H1[1, 1] - H0[1, 1]) == 0
    # closed form of the centred uniform curvature: λ_t + τn(V−1)/L·ld − ετn²/(VL²)
    L_, V_ = model.L, model.V
    closed = model.lam_t + model.tau * model.n * (V_ - 1) / L_ * model.ld - (1 - 1 / V_) * model.tau * model.n**2 / (V_ * L_**2)
    assert sympy.simplify(H0[0, 0] - closed) == 0


def test_centred_tokens_threshold_and_softmax_blindness():
    """Centred inputs: the linear transition is no longer P* ~ V² with no L dependence (the uniform mode
    lost its own gain: its curvature vanishes at n ≈ V²L instead), while softmax is unchanged."""
    conv = api.DEFAULT.with_(tokens="centred")
    a = api.threshold("linear", 64, 4, digits=8, convention=conv).P_star
    b = api.threshold("linear", 256, 4, digits=8, convention=conv).P_star
    assert math.log(b / a) / math.log(4) > 0.5
    s0 = api.threshold("softmax", 32, 4, digits=12)
    s1 = api.threshold("softmax", 32, 4, digits=12, convention=conv)
    assert s1.P_star == pytest.approx(s0.P_star, rel=1e-10)


def test_a_sweep_point_is_the_global_minimum_with_the_solves_status():
    """The sweep point's numbers are `solve`'s global minimum, and the point stores the solve's status."""
    point = api.sweep_point("softmax", 16, 4, 608.0)
    solved = api.solve("softmax", 16, 4, 608.0)
    g = solved.global_minimum
    assert (point["c_copy"], point["loss_gibbs"], point["action"]) == (g.c_copy, g.loss_gibbs, g.action)
    assert point["status"] == solved.status == "converged"


def test_convention_table_fits_softmax_without_the_linear_choices():
    """A convention that changes a linear-only field and a shared one: its softmax fits are those of the shared change
    alone (the softmax model refuses the linear-only field; the table drops it for softmax)."""
    L_values = [8, 16, 32]
    mixed = api.DEFAULT.with_(linear_scale="1", tau_scale="inverse-V")
    table = api.convention_table(L_values=L_values, V_values=[4, 8, 16], L_fixed=8, conventions={"mixed": mixed})
    shared_alone = api.scaling("softmax", 4, 8, 32, convention=api.DEFAULT.with_(tau_scale="inverse-V"),
                               L_values=L_values)
    assert table.conventions[0].softmax.fits == tuple(shared_alone.fit.values())


def test_the_pages_linear_priors_are_the_conventions():
    """Linear attention's prior precisions of t and c, from their definition: G = κ(A + b11ᵀ) on the T target rows
    (A's entries of variance σ², b of variance s₁); t and c are the least-squares coefficients of the uniform pattern
    U (each row 1/L) and of the copy direction S − U in G, linear in (A, b), so their variances are sums of squared
    weights. λ_t = 1/Var t and λ_c = 1/Var c for every boundary, scale and bias choice, and the model page's values
    at L = 16 (defaults) are these."""
    from attnphase.models.copy_heads.convention import Convention

    for convention in (Convention(), Convention(boundary="drop-first", linear_scale="1/sqrt(L)", sigma2=0.7, s1=2.5),
                       Convention(bias=False, linear_scale="1", sigma2=1.3)):
        for L in (5, 16):
            kappa, T = convention.kappa(L), convention.targets(L)
            uniform = np.full((T, L), 1.0 / L)
            copy = np.zeros((T, L))
            copy[np.arange(T), (np.arange(T) - 1) % L] = 1.0  # each target row's previous position
            basis = np.stack([uniform.ravel(), (copy - uniform).ravel()], axis=1)
            coefficients = np.linalg.pinv(basis)  # (t, c) = coefficients @ vec(G)
            # vec(G) = κ vec(A) + κ b vec(11ᵀ): the weights of A's entries and of b in t and c
            weight_A, weight_b = kappa * coefficients, kappa * coefficients.sum(axis=1)
            variance = convention.sigma2 * (weight_A**2).sum(axis=1) + (convention.s1 if convention.bias else 0.0) \
                * weight_b**2
            precisions = convention.linear_precisions(L)
            assert precisions["lam_t"] == pytest.approx(1 / variance[0], rel=1e-12), (convention, L)
            assert precisions["lam_c"] == pytest.approx(1 / variance[1], rel=1e-12), (convention, L)
            assert precisions["lam_r"] == pytest.approx(T / (kappa**2 * convention.sigma2), rel=1e-12)
    page = " ".join((Path(__file__).resolve().parents[2] / "docs/models/copy_heads.md").read_text().split())
    lam_t, lam_c, lam_r = re.search(r"at L = 16, λ_t = ([\d.]+), λ_c = (\d+), λ_ρ = (\d+)", page).groups()
    at_16 = Convention().linear_precisions(16)
    assert f"{at_16['lam_t']:.5f}" == lam_t and (at_16["lam_c"], at_16["lam_r"]) == (float(lam_c), float(lam_r))
