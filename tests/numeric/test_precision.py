"""numeric.precision: the precision policy and the scale-free, cancellation-free helpers, against mpmath at high
precision and LAPACK."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from attnphase.numeric.precision import (
    GUARD_DIGITS, as_float_with_error, equilibrated_solve, equilibration, float_error, larger_quadratic_root,
    larger_quadratic_root_mp, normalised_min_eigenvalue, normalised_min_eigenvalue_mp, propagated_errors,
    scaled_lowest_curvature_2x2, to_mp, working_dps,
)


def test_working_precision_adds_the_guard_and_the_cancelled_digits():
    assert working_dps(30) == 30 + GUARD_DIGITS
    assert working_dps(30, 3 * np.log10(2**20)) == 30 + GUARD_DIGITS + 18  # 3 log10 L = 18.06 digits lost at L = 2^20
    assert to_mp([0.1, mpmath.mpf(2)]) == [mpmath.mpf(0.1), mpmath.mpf(2)]  # exact: mpf of a float is that float


def test_lowest_curvature_has_the_sign_of_the_smallest_eigenvalue_at_any_scale():
    """Random symmetric 2×2 matrices, scaled by 1e-300 … 1e300: the sign is that of LAPACK's smallest eigenvalue,
    the value equals λ_min/(|a| + |d|) of the matrix normalised by |a| + |b| + |d| (so it is scale-free), and a
    small curvature next to a huge one keeps its digits (the difference form λ̄ − √(...) would return 0)."""
    rng = np.random.default_rng(3)
    a, b, d = rng.normal(size=(3, 2000))
    for scale in (1e-300, 1.0, 1e300):
        value = scaled_lowest_curvature_2x2(a * scale, b * scale, d * scale)
        lam = np.linalg.eigvalsh(np.stack([np.stack([a, b], -1), np.stack([b, d], -1)], -2))[:, 0]
        assert np.all(np.sign(value) == np.sign(lam))
        size = np.abs(a) + np.abs(b) + np.abs(d)
        expected = lam / size / ((np.abs(a) + np.abs(d)) / size)
        assert np.allclose(value, expected, rtol=1e-12, atol=1e-15)
    small = scaled_lowest_curvature_2x2(1e-9, 0.0, 1e9)  # eigenvalues 1e-9 and 1e9
    assert small == pytest.approx(1e-9 / 1e9, rel=1e-12)
    with mpmath.workdps(40):
        mp_value = scaled_lowest_curvature_2x2(mpmath.mpf(2), mpmath.mpf(3), mpmath.mpf(1), sqrt=mpmath.sqrt)
        assert float(mp_value) == pytest.approx(float(scaled_lowest_curvature_2x2(2.0, 3.0, 1.0)), rel=1e-15)


def test_normalised_eigenvalue_keeps_the_inertia_in_float_and_mpmath():
    """Sylvester: D^{-1/2} K D^{-1/2} has the inertia of K. Random 3×3 symmetric matrices with diagonal entries
    spanning 1e-6 … 1e12 (the causal stability matrix's spread): the float64 sign equals the sign of the smallest
    eigenvalue of K computed in mpmath at 50 digits, and the mpmath value equals the float64 one to 1e-10."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        Q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        K = Q @ np.diag(rng.normal(size=3) * 10.0 ** rng.uniform(-3, 3, 3)) @ Q.T
        S = np.diag(10.0 ** rng.uniform(-3, 6, 3))
        K = S @ K @ S
        with mpmath.workdps(50):
            K_mp = mpmath.matrix(K.tolist())
            reference = min(mpmath.eigsy(K_mp)[0])
            value_mp = normalised_min_eigenvalue_mp(K_mp)
        value = float(normalised_min_eigenvalue(K))
        assert np.sign(value) == mpmath.sign(reference) == mpmath.sign(value_mp)
        assert float(value_mp) == pytest.approx(value, rel=1e-10, abs=1e-14)
    stack = np.stack([np.eye(3), -np.eye(3)])
    assert np.allclose(normalised_min_eigenvalue(stack), [1.0, -1.0])


@pytest.mark.parametrize("a2, a1, a0", [(1.0, 1e8, -1.0), (2.0, -3.0, -5.0), (1e-3, 1e5, -1e-7), (3.0, 0.0, -12.0)])
def test_larger_quadratic_root_is_accurate_without_cancellation(a2, a1, a0):
    """The larger root against the textbook formula at 150 digits (it cancels up to ~40 of them here) to 4 ulp, where
    in float64 the textbook (−b + √disc)/2 loses up to all digits (b = 1e8: it returns 7.45e-9 for 1e-8); the mpmath
    version to 1e-45 at 50 digits."""
    with mpmath.workdps(150):
        A2, A1, A0 = (mpmath.mpf(v) for v in (a2, a1, a0))
        exact = (-A1 + mpmath.sqrt(A1 * A1 - 4 * A2 * A0)) / (2 * A2)
    root = float(larger_quadratic_root(np.array(a2), np.array(a1), np.array(a0)))
    assert abs(root - float(exact)) <= 4 * np.spacing(abs(float(exact)))
    with mpmath.workdps(50):
        root_mp = larger_quadratic_root_mp(mpmath.mpf(a2), mpmath.mpf(a1), mpmath.mpf(a0))
        assert abs(root_mp - exact) / abs(exact) < mpmath.mpf(10) ** -45


def _determinant_3x3(m):
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


def test_equilibrated_solve_keeps_every_digit_next_to_a_curvature_of_1e303():
    """The bordered Newton system of the copy-heads continuation at σ² = 1e-300 (Hessian, control column and tangent
    row; the right-hand side is its residual): Cramer's rule in mpmath at 60 digits is the reference. LU with partial
    pivoting on the matrix itself returns rounding noise for the component of size 1e-7 (~1e256 or 0, depending on
    the BLAS kernel the CPU selects); the equilibrated solve is within 4 ulp in every component. Rows and columns
    of the scaled matrix end within a factor 4 of one, and a symmetric matrix gets equal row and column exponents."""
    M = np.array([[1.33968954e2, 1.24365014e8, -3.64594526e-3],
                  [1.24365014e8, 3.84e303, 0.0],
                  [-1.67609159e-5, -1.06971189e-21, -1.0]])
    b = np.array([-1.23754144e-5, 4.10769364e280, 3.46944695e-18])
    with mpmath.workdps(60):
        m = [[mpmath.mpf(v) for v in row] for row in M]
        determinant = _determinant_3x3(m)
        exact = [_determinant_3x3([[b[i] if j == k else m[i][j] for j in range(3)] for i in range(3)]) / determinant
                 for k in range(3)]
        solution = equilibrated_solve(M, b)
        assert all(abs(mpmath.mpf(v) / e - 1) <= 4 * np.finfo(float).eps for v, e in zip(solution, exact))
    rows, columns = equilibration(M)
    scaled = np.abs(np.ldexp(M, rows[:, None] + columns[None, :]))
    assert np.all((scaled.max(axis=1) >= 0.25) & (scaled.max(axis=1) <= 4))
    assert np.all((scaled.max(axis=0) >= 0.25) & (scaled.max(axis=0) <= 4))
    symmetric = M[:2, :2]
    assert np.array_equal(*equilibration(symmetric))
    assert np.array_equal(equilibration(np.zeros((2, 2)))[0], [0, 0])


def test_agreed_evaluation_doubles_the_places_until_a_cancellation_is_resolved():
    """(e^200 + 1) − e^200 = 1 exactly: at 30 and 60 places the 87-digit terms cancel to 0, two zeros that do not
    count as agreeing; the places double until two evaluations agree (120 and 240), and the value is 1. A true zero
    ends one doubling later. An evaluation that never agrees with itself (it returns the places it ran at) stops at
    max_dps."""
    from attnphase.numeric.precision import agreed_evaluation

    places = []

    def cancelling():
        places.append(mpmath.mp.dps)
        big = mpmath.exp(200)
        return [(big + 1) - big]

    (value,) = agreed_evaluation(cancelling, 1e-15, 960)
    assert value == 1 and places == [30, 60, 120, 240]
    places.clear()

    def true_zero():
        places.append(mpmath.mp.dps)
        return [mpmath.mpf(0)]

    (zero,) = agreed_evaluation(true_zero, 1e-15, 960)  # two zeros are confirmed once more: 30, 60 and 120 places
    assert zero == 0 and places == [30, 60, 120]
    (last,) = agreed_evaluation(lambda: [mpmath.mpf(mpmath.mp.dps)], 1e-15, 960)
    assert last == 960


def test_propagated_errors_cover_the_move_over_the_coordinates_errors_and_float_error_the_rounding():
    """f = x²y at (x, y) = (3, 2) known to (1e-10, 2e-10): the error is |∂f/∂x|δx + |∂f/∂y|δy = 12e-10 + 18e-10 to
    first order (the move along each coordinate, exact here up to the δ² terms); the float64 of an mpmath value is
    within `float_error` of it, which is its exact distance, rounded up."""
    with mpmath.workdps(40):
        point, errors = [mpmath.mpf(3), mpmath.mpf(2)], [mpmath.mpf("1e-10"), mpmath.mpf("2e-10")]
        ((value, error),) = propagated_errors(lambda p: [p[0] ** 2 * p[1]], point, errors, 30)
        assert value == 18 and abs(error - mpmath.mpf("3e-9")) <= mpmath.mpf("1e-18")
        third = mpmath.mpf(1) / 3
        bound = float_error(float(third), third, 0)
        assert abs(mpmath.mpf(float(third)) - third) <= bound <= abs(mpmath.mpf(float(third)) - third) * (1 + 1e-15)
        assert as_float_with_error(third, mpmath.mpf("1e-20")) == (float(third), float_error(float(third), third,
                                                                                             mpmath.mpf("1e-20")))
        assert math.isnan(float_error(math.inf, third, 0))
        ((_, unbounded),) = propagated_errors(lambda p: [p[0]], [mpmath.mpf(1)], [mpmath.inf], 30)
        assert unbounded == mpmath.inf


def test_propagated_errors_take_the_larger_side_and_the_value_at_the_higher_precision():
    """The move over a coordinate's error is the larger of the two sides (x² at −1 ± 0.5: 0.75 up, 1.25 down); the value
    is the one at dps + 20 digits, its error the evaluation's rounding at dps (x/3 at 15 digits: ~2e-17); an error
    given with the accurate value adds to the float's distance from it (audit t19)."""
    with mpmath.workdps(60):
        ((_, error),) = propagated_errors(lambda p: [p[0] ** 2], [mpmath.mpf(-1)], [mpmath.mpf("0.5")], 30)
        assert abs(error - mpmath.mpf("1.25")) < mpmath.mpf(10) ** -25
        ((value, error),) = propagated_errors(lambda p: [p[0] / 3], [mpmath.mpf(1)], [0], 15)
        assert abs(value - mpmath.mpf(1) / 3) < mpmath.mpf(10) ** -33
        assert mpmath.mpf(10) ** -18 < error < mpmath.mpf(10) ** -14
    assert float_error(0.5, mpmath.mpf("0.5"), mpmath.mpf("1e-3")) == pytest.approx(1e-3, rel=1e-15)
