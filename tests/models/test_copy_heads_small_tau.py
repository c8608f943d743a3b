"""`threshold` and `scaling` at a small read-out prior variance τ, where the thresholds grow like τ^{−1/2} beyond
the range of n that was fixed in L, V and σ² (audit ch10: "no first-order transition" at softmax τ = 1e-9, "f does not
change sign" at linear τ = 1e-16). References written here from the spec's actions (§2 softmax shortcut, §2b linear
Convention A; L = 16, V = 4, σ² = s₁ = β = 1, periodic, T = L targets) in mpmath."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from attnphase.api import copy_heads as api
from attnphase.cli import main

DPS = 60
L, V = 16, 4


def _softmax_action(x, n, tau, log, exp, pi):
    """S(x; n) of the homogeneous softmax action (shortcut row rate, k = e^{σ²} = e), numpy or mpmath."""
    eps, k = 1 - 1 / V, exp(1)
    s, a = x + log(L - 1) + 0.5, 1 / (1 + exp(-x))
    u, u1 = tau * n * (a * a + k * (1 - a) ** 2 / (L - 1)) / V, tau * n / V
    row_rate = L * (s * s / 2 + log(2 * pi) / 2)
    copy_data = V * (V - 1) / 2 * log(1 + u) - eps * tau * n * n * a * a / (2 * V * (1 + u))
    return row_rate + copy_data + V / 2 * log(1 + u1) - tau * n * n / (2 * V * V * (1 + u1))


def _softmax_minima(n, tau):
    """[(x, S)] of the minima at n: the sign changes of a central-difference S′ on x in [−12, 12] (step 1e-3; the
    two minima here lie 4 apart in x) polished by mpmath's root finder on S′ at DPS digits."""
    xs = np.arange(-12.0, 12.0, 1e-3)
    slope = (_softmax_action(xs + 1e-6, float(n), tau, np.log, np.exp, np.pi)
             - _softmax_action(xs - 1e-6, float(n), tau, np.log, np.exp, np.pi)) / 2e-6
    minima = []
    for i in np.nonzero((slope[:-1] < 0) & (slope[1:] > 0))[0]:
        def action(x):
            return _softmax_action(x, n, mpmath.mpf(tau), mpmath.log, mpmath.exp, mpmath.pi)

        x = mpmath.findroot(lambda y: mpmath.diff(action, y), (mpmath.mpf(xs[i]), mpmath.mpf(xs[i + 1])),
                            solver="anderson")
        minima.append((x, action(x)))
    return minima


@pytest.mark.parametrize("tau", [1e-9, 1e-10])
def test_softmax_threshold_at_small_tau_is_the_coexistence_of_two_minima(tau):
    """τ = 1e-9 and 1e-10 printed order "none" ("one minimum at every n") over n ≤ 1.39e6; the audit's own action
    had two minima at n = 5e6 and 1e7 (τ = 1e-10), the global one changing between them. The reference P* is the n
    at which the two minima of the action written here have equal action (secant root of their difference, DPS
    digits; each minimum's S is stationary in x, so the difference is smooth in n); the float P* must lie within its
    error of it, and on either side, 0.1% away, both minima exist, the global one the uniform minimum below and the
    copy minimum above."""
    result = api.threshold("softmax", L, V, convention=api.DEFAULT.with_(tau0=tau))
    assert result.order == "first" and result.status == "converged", result.message
    with mpmath.workdps(DPS):
        def gap(n):
            (x_uniform, S_uniform), (x_copy, S_copy) = _softmax_minima(n, tau)
            return S_copy - S_uniform

        reference = mpmath.findroot(gap, (mpmath.mpf(result.P_star) * (1 - mpmath.mpf(10) ** -6),
                                          mpmath.mpf(result.P_star) * (1 + mpmath.mpf(10) ** -6)), solver="secant",
                                    tol=mpmath.mpf(10) ** (-2 * DPS + 20))
        assert abs(mpmath.mpf(result.P_star) - reference) <= result.error
        for side in (-1, 1):
            assert gap(reference * (1 + side * mpmath.mpf("1e-3"))) * side < 0


def _linear_hessian_at_origin(n, tau):
    """(H_tt, H_tc, H_cc) of the spec's Convention-A action at t = c = 0, by hand from
    m = (t + (L−1)c)/L, q = (t² + (L−1)c²)/L: the log-dets give τn(V−1)/L·(1, 0, L−1) and τn along t (the
    all-ones term), the fits −ετn²/(VL²)·(1, L−1, (L−1)²) and −τn²/V² along t."""
    eps = 1 - mpmath.mpf(1) / V
    lam_t, lam_c = mpmath.mpf(L) ** 2 / (L**2 + 1), mpmath.mpf(L) ** 2 * (L - 1)
    fit = eps * tau * n * n / (V * L**2)
    return (lam_t + (V - 1) * tau * n / L + tau * n - fit - tau * n * n / V**2, -(L - 1) * fit,
            lam_c + (V - 1) * tau * n * (L - 1) / L - (L - 1) ** 2 * fit)


def _spec_linear_action(t, c, n, tau):
    m, q = (t + (L - 1) * c) / L, (t * t + (L - 1) * c * c) / L
    u, u1 = tau * n * q / V, tau * n * t * t / V
    return (mpmath.mpf(L) ** 2 / (L**2 + 1) * t * t / 2 + mpmath.mpf(L) ** 2 * (L - 1) * c * c / 2
            + V * (V - 1) / mpmath.mpf(2) * mpmath.log1p(u) - (1 - mpmath.mpf(1) / V) * tau * n * n * m * m
            / (2 * V * (1 + u)) + V / mpmath.mpf(2) * mpmath.log1p(u1) - tau * n * n * t * t / (2 * V * V * (1 + u1)))


def _first_root(f, lo, hi):
    """The first sign change of f on a geometric grid of 2001 points in [lo, hi], polished by bisection to DPS − 5
    digits."""
    grid = [lo * (hi / lo) ** (mpmath.mpf(k) / 2000) for k in range(2001)]
    values = [f(n) for n in grid]
    k = next(k for k in range(2000) if values[k] > 0 >= values[k + 1])
    a, b = grid[k], grid[k + 1]
    while b - a > mpmath.mpf(10) ** (5 - DPS) * b:
        mid = (a + b) / 2
        a, b = (mid, b) if f(mid) > 0 else (a, mid)
    return (a + b) / 2


def test_linear_threshold_at_tau_1e_16_is_the_first_root_of_the_hessian_determinant():
    """τ = 1e-16 printed order "none" ("f does not change sign on a 4-interval scan"): P* = 3.969e8 lies beyond the
    fixed range's 2.1e8. Reference: the first root of det H(0, 0) (closed form, checked here against mpmath's numerical
    Hessian of the action), no earlier sign change on n from 1e-3 up, at the binary value of τ; P_crossover: the root
    of H_cc. Both within their errors, and the digit strings to their last digit; the followed branches now classify
    the transition too (they were followed in (t, c)/τ^{−1/4}: at n = 2e16 the minimum is t ≈ c ≈ 1800)."""
    tau = 1e-16
    result = api.threshold("linear", L, V, digits=30, convention=api.DEFAULT.with_(tau0=tau))
    assert result.order == "second" and result.status == "converged", result.message
    assert result.soft_mode == "uniform" and result.crossover_order == "smooth"
    with mpmath.workdps(DPS):
        tau_mp = mpmath.mpf(tau)
        n_check = mpmath.mpf(4e8)
        closed = _linear_hessian_at_origin(n_check, tau_mp)
        numerical = [mpmath.diff(lambda t, c: _spec_linear_action(t, c, n_check, tau_mp), (0, 0), order)
                     for order in ((2, 0), (1, 1), (0, 2))]
        for a, b in zip(closed, numerical):  # mpmath's differences at DPS digits keep about 2/3 of them
            assert abs(a - b) <= mpmath.mpf(10) ** -30 * abs(a)

        def det(n):
            h_tt, h_tc, h_cc = _linear_hessian_at_origin(n, tau_mp)
            return h_tt * h_cc - h_tc * h_tc

        P_star = _first_root(det, mpmath.mpf("1e-3"), mpmath.mpf("1e12"))
        P_crossover = _first_root(lambda n: _linear_hessian_at_origin(n, tau_mp)[2], mpmath.mpf("1e-3"),
                                  mpmath.mpf("1e14"))
        assert abs(mpmath.mpf(result.P_star) - P_star) <= result.error
        assert abs(mpmath.mpf(result.P_crossover) - P_crossover) <= result.P_crossover_error
        # the digit strings: 30 significant digits, off by at most half a unit in the last
        for digits, reference in ((result.P_star_digits, P_star), (result.P_crossover_digits, P_crossover)):
            last = mpmath.mpf(10) ** (math.floor(mpmath.log10(reference)) - 29)
            assert abs(mpmath.mpf(digits) - reference) <= last / 2 + mpmath.mpf(10) ** (5 - DPS) * reference


def test_scaling_at_small_tau_finds_P_star_at_every_size():
    """`scaling --tau 1e-10` found P* at none of L = 16, 32, 64 and advised "raise --L-min"; each P* is now the
    threshold's at that L."""
    conv = api.DEFAULT.with_(tau0=1e-10)
    result = api.scaling("softmax", V, 16, 64, convention=conv)
    assert result.status == "converged", result.message
    assert [p.L for p in result.points] == [16, 32, 64]
    assert result.points[0].P_star == api.threshold("softmax", L, V, digits=15, convention=conv).P_star


def test_where_the_range_cannot_be_computed_the_message_names_tau():
    """τ = 1e-300 puts the thresholds where the float64 actions fail (linear: the Hessian overflows at the top of the
    range, n ~ 1e158, and under the causal mask the stability matrix, which raised LinAlgError; softmax: S′ changes
    sign where there is no stationary point, n ~ 1e156). Each says so and names --tau; `scaling` quotes that reason
    instead of advising a larger --L-min, which it still advises where only the small sizes lie below the onset of the
    transition (softmax, V = 4: none below L = 8)."""
    runner = CliRunner()
    for attention, boundary in (("linear", "periodic"), ("linear", "causal"), ("softmax", "periodic")):
        out = runner.invoke(main, ["threshold", "copy-heads", "--attention", attention, "--L", "16", "--V", "4",
                                   "--boundary", boundary, "--tau", "1e-300", "--json"])
        assert out.exit_code == 0, out.output
        assert '"status": "failed"' in out.output and "--tau = 1e-300" in out.output
    scan = api.scaling("softmax", V, 16, 64, convention=api.DEFAULT.with_(tau0=1e-300))
    # from Python the parameter is named as the call names it, not by the CLI's option
    assert scan.status == "failed" and "tau0 = 1e-300" in scan.message and "--tau" not in scan.message
    assert "--L-min" not in scan.message
    onset = api.scaling("softmax", V, 2, 8)
    assert onset.status == "not_found" and "raise --L-min" in onset.message


def test_a_threshold_whose_P_lies_beyond_float64_keeps_n_and_the_digits_of_P():
    """Audit b17 H1: at β = 1e-306 the softmax P* = n*/β = 2.59e308 overflows float64; the threshold said converged
    with n* = inf and its spinodals "below the range" and "beyond the range" while naming the folds inside it. n* is
    β's own (n = βP): the same as at β = 1; P* is the digit string n*/β, computed beyond float64."""
    reference = api.threshold("softmax", 16, 4, digits=5)
    tiny = api.threshold("softmax", 16, 4, digits=5, convention=api.DEFAULT.with_(beta=1e-306))
    assert tiny.status == "converged" and math.isinf(tiny.P_star)
    assert tiny.n_star == pytest.approx(reference.n_star, rel=1e-13)
    assert tiny.n_spinodals == pytest.approx(reference.n_spinodals, rel=1e-13)
    with mpmath.workdps(30):
        assert tiny.P_star_digits == mpmath.nstr(mpmath.mpf(reference.P_star_digits) * mpmath.mpf("1e306"), 5)
    assert f"n in ({tiny.n_spinodals[0]:.6g}, {tiny.n_spinodals[1]:.6g})" in tiny.message
    assert "P_star = 2.5903e+308 lies beyond float64's range" in tiny.message and "beyond" not in reference.message
    # the other floats the overflow leaves null are named, so a reader of the JSON knows why they are null
    assert math.isinf(tiny.error) and all(math.isinf(P) for P in tiny.spinodals)
    assert "; error, spinodals (spinodals_digits holds their digits) are null for the same reason" in tiny.message
    linear = api.threshold("linear", 16, 4, digits=5, convention=api.DEFAULT.with_(beta=1e-308))
    linear_reference = api.threshold("linear", 16, 4, digits=5)
    assert linear.n_star == pytest.approx(linear_reference.n_star, rel=1e-13) and math.isinf(linear.P_crossover)
    assert "P_star = 1.9581e+309 lies beyond" in linear.message and "P_crossover = 1.6142e+310" in linear.message
    assert math.isinf(linear.error) and math.isinf(linear.P_crossover_error)
    assert "holds its digits; error is null for the same reason" in linear.message
    assert linear.message.endswith("P_crossover_digits holds its digits; P_crossover_error is null for the same reason")
