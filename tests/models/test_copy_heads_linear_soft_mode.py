"""The linear threshold's soft direction and quartic Landau coefficient at the first instability, against a reference
written here from the spec's Convention-A action (§2b, periodic, σ² = s₁ = τ = β = 1) in mpmath: n* the first root
of det H(0, 0), the soft vector the null vector of H there, a₄ the fourth derivative of S along it over 4!."""

from __future__ import annotations

import mpmath
import pytest

from attnphase.api import copy_heads as api

DPS = 60


def _spec_action(t, c, n, L, V):
    lam_t, lam_c = mpmath.mpf(L) ** 2 / (L**2 + 1), mpmath.mpf(L) ** 2 * (L - 1)
    m, q = (t + (L - 1) * c) / L, (t * t + (L - 1) * c * c) / L
    u, u1 = n * q / V, n * t * t / V
    return (lam_t * t * t / 2 + lam_c * c * c / 2 + V * (V - 1) / mpmath.mpf(2) * mpmath.log1p(u)
            - (1 - mpmath.mpf(1) / V) * n * n * m * m / (2 * V * (1 + u)) + V / mpmath.mpf(2) * mpmath.log1p(u1)
            - n * n * t * t / (2 * V * V * (1 + u1)))


def _hessian_at_origin(n, L, V):
    """The spec action's Hessian at t = c = 0 by mpmath's numerical differentiation (at DPS digits)."""
    def action(t, c):
        return _spec_action(t, c, n, L, V)

    h_tc = mpmath.diff(action, (0, 0), (1, 1))
    return mpmath.matrix([[mpmath.diff(action, (0, 0), (2, 0)), h_tc], [h_tc, mpmath.diff(action, (0, 0), (0, 2))]])


@pytest.mark.parametrize("L, V", [(64, 64), (16, 4), (8, 4)])
def test_soft_vector_and_quartic_coefficient_are_right_to_their_last_printed_digit(L, V):
    """At V = L the two curvatures at n* are comparable, and the soft vector, taken at n*(1 + 1e-9) in float64, was
    off by 5e-9, a₄ (409161.55158200185 printed) by 1.5e-8 relative (audit ch10). Reference: n* bisected on
    det H(0, 0) to 50 digits (positive on n from 1e-3 up to it, negative just above), the unit null vector of
    H(n*) (mpmath's eigsy), a₄ = (d⁴/dφ⁴) S(φv)/24 at φ = 0 by mpmath's numerical differentiation; n* agrees within
    the reported error, each printed component of the vector and a₄ within the rounding of the float printed (one
    unit in the last place: 2⁻⁵² relative), the vector up to its sign. L = 16 and 8, V = 4 (well conditioned) as
    well: at L = 8 the shifted vector moved a₄ by 2.4e-12 relative (48.48256264674166, the CLI record's value,
    against 48.482562646624594)."""
    result = api.threshold("linear", L, V, digits=30)
    assert result.order == "second" and result.status == "converged", result.message
    with mpmath.workdps(DPS):
        def det(n):
            return mpmath.det(_hessian_at_origin(n, L, V))

        reported, width = mpmath.mpf(result.n_star), mpmath.mpf(10) ** -6
        lo, hi = reported * (1 - width), reported * (1 + width)
        # the first root: det H > 0 from n = 1e-3 (a geometric grid of 400 points) up to the bracket, < 0 beyond
        assert all(det(lo * (mpmath.mpf(10) ** -3 / lo) ** (mpmath.mpf(k) / 400)) > 0 for k in range(401))
        assert det(hi) < 0
        while hi - lo > mpmath.mpf(10) ** -50 * hi:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if det(mid) > 0 else (lo, mid)
        n_star = (lo + hi) / 2
        assert abs(mpmath.mpf(result.n_star) - n_star) <= result.error
        values, vectors = mpmath.eigsy(_hessian_at_origin(n_star, L, V))
        k = 0 if abs(values[0]) <= abs(values[1]) else 1
        soft = [vectors[0, k], vectors[1, k]]
        sign = 1 if soft[0] * result.soft_vector[0] > 0 else -1
        for printed, reference in zip(result.soft_vector, soft):
            assert abs(mpmath.mpf(printed) - sign * reference) <= 2**-52 * abs(reference)
        a4 = mpmath.diff(lambda phi: _spec_action(phi * soft[0], phi * soft[1], n_star, L, V), 0, 4) / 24
        assert abs(mpmath.mpf(result.landau_a4) - a4) <= 2**-52 * abs(a4)


def _entropy_action(t, c, rho, n, L, V):
    """The spec action with the remainder's entropy kept (periodic, κ = 1/L, σ² = s₁ = τ = 1): q = q̄ + ρ, and the
    remainder's prior λ_ρρ/2 − D_R ln ρ with λ_ρ = T/(κ²σ²) = L³, D_R = (dim R − 2)/2 = (L(L − 1) − 3)/2."""
    L = mpmath.mpf(L)
    lam_t, lam_c, lam_r, dim_r = L**2 / (L**2 + 1), L**2 * (L - 1), L**3, (L * (L - 1) - 3) / 2
    m, q = (t + (L - 1) * c) / L, (t * t + (L - 1) * c * c) / L + rho
    u, u1 = n * q / V, n * t * t / V
    prior = lam_t * t * t / 2 + lam_c * c * c / 2 + lam_r * rho / 2 - dim_r * mpmath.log(rho)
    eps = 1 - mpmath.mpf(1) / V
    copy_data = V * (V - 1) / mpmath.mpf(2) * mpmath.log1p(u) - eps * n * n * m * m / (2 * V * (1 + u))
    ones_data = V / mpmath.mpf(2) * mpmath.log1p(u1) - n * n * t * t / (2 * V * V * (1 + u1))
    return prior + copy_data + ones_data


def _relaxed_remainder(t, c, n, L, V, start):
    """ρ at the minimum of the entropy action over ρ at fixed (t, c) (its one stationary point: S is convex in ρ)."""
    return mpmath.findroot(lambda rho: mpmath.diff(lambda r: _entropy_action(t, c, r, n, L, V), rho),
                           (start * (1 - mpmath.mpf(10) ** -3), start * (1 + mpmath.mpf(10) ** -3)))


@pytest.mark.parametrize("L, auditor_value", [(8, 38.0831), (16, 30.99943)])
def test_the_entropy_quartic_is_the_effective_one_with_the_remainder_relaxed(L, auditor_value):
    """`--remainder entropy`: along the soft direction the remainder relaxes (S depends on ρ through q, so there is a
    b φ² δρ term), and the quartic that decides the order is min over ρ of S(φv, ρ), not S at ρ frozen (the printed
    a₄ was the frozen one: 38.0919 at L = 8, audit d12). Reference: n* the root of det H(0, 0) near the reported one
    (ρ at its own minimum ρ₀(n)), v its null vector, f(φ) = (min_ρ S(φv, ρ) − S(0, ρ₀))/φ⁴ = a₄ + a₆'φ² + O(φ⁴) at
    φ = 2e-3, 1e-3, 5e-4, Richardson-extrapolated in pairs (error O(φ⁴)); the two extrapolations differ by 15 times
    the error of the finer one, so their difference bounds it. The printed float is within that bound plus one unit
    in its last place, and the frozen-ρ quartic lies far outside it."""
    V = 4
    result = api.threshold("linear", L, V, digits=30, convention=api.DEFAULT.with_(remainder="entropy"))
    assert result.order == "second" and result.status == "converged", result.message
    with mpmath.workdps(DPS):
        def hessian(n):
            rho = _relaxed_remainder(0, 0, n, L, V, mpmath.mpf(1) / L)

            def action(t, c):
                return _entropy_action(t, c, rho, n, L, V)

            h_tc = mpmath.diff(action, (0, 0), (1, 1))
            return mpmath.matrix([[mpmath.diff(action, (0, 0), (2, 0)), h_tc],
                                  [h_tc, mpmath.diff(action, (0, 0), (0, 2))]]), rho

        reported = mpmath.mpf(result.n_star)
        n_star = mpmath.findroot(lambda n: mpmath.det(hessian(n)[0]), (reported * (1 - mpmath.mpf(10) ** -6),
                                                                        reported * (1 + mpmath.mpf(10) ** -6)))
        assert abs(n_star - reported) <= result.error
        h, rho0 = hessian(n_star)
        values, vectors = mpmath.eigsy(h)
        k = 0 if abs(values[0]) <= abs(values[1]) else 1
        v = [vectors[0, k], vectors[1, k]]
        base = _entropy_action(0, 0, rho0, n_star, L, V)

        def quartic(phi, relaxed=True):
            t, c = phi * v[0], phi * v[1]
            rho = _relaxed_remainder(t, c, n_star, L, V, rho0) if relaxed else rho0
            return (_entropy_action(t, c, rho, n_star, L, V) - base) / phi**4

        f = [quartic(mpmath.mpf(2) ** -k * mpmath.mpf("2e-3")) for k in range(3)]
        coarse, fine = (4 * f[1] - f[0]) / 3, (4 * f[2] - f[1]) / 3
        bound = abs(fine - coarse) + 2**-52 * abs(fine)
        assert abs(mpmath.mpf(result.landau_a4) - fine) <= bound, (result.landau_a4, fine, bound)
        assert abs(quartic(mpmath.mpf("5e-4"), relaxed=False) - fine) > 1e3 * bound  # the frozen one is not it
    # the audit's values were read at φ = 5e-4 without extrapolation: a₆'φ² off, ~6e-5 at L = 8
    assert abs(result.landau_a4 - auditor_value) < 1e-4
