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
