"""Every local minimum of the linear reduced action that `solve` reports, and none it misses, against a reference
written here: the spec's Convention-A action (§2b, periodic, G = (A + b11ᵀ)/L, T = L targets) scanned on a fine grid
in numpy and each grid minimum polished by Newton's method in mpmath."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from scipy.optimize import minimize

from attnphase.api import copy_heads as api

DPS = 40
GRID = 1201


def _spec_action(t, c, n, L, V, sigma2, s1, tau, log1p):
    """S(t, c) of the spec at n (β·P), in numpy (log1p=np.log1p) or mpmath: the row sum t has variance
    (L² s₁ + σ²)/L², the copy strength c precision L²(L − 1)/σ², τ is the read-out prior's variance."""
    lam_t, lam_c = L * L / (L * L * s1 + sigma2), L * L * (L - 1) / sigma2
    m, q = (t + (L - 1) * c) / L, (t * t + (L - 1) * c * c) / L
    u, u1 = tau * n * q / V, tau * n * t * t / V
    return (lam_t * t * t / 2 + lam_c * c * c / 2 + V * (V - 1) / 2 * log1p(u)
            - (1 - 1 / V) * tau * n * n * m * m / (2 * V * (1 + u)) + V / 2 * log1p(u1)
            - tau * n * n * t * t / (2 * V * V * (1 + u1)))


def _grid_minima(n, L, V, sigma2, s1, tau):
    """(t, c) of the local minima of the action on a GRID × GRID grid over twice the box in which the action
    can lie below the symmetric point's (λ_t t² + λ_c c² ≤ n: the data term is at least −n/2), cubic in the
    coordinates so that the minima near t = c = 0 are resolved; each taken downhill in float64 (Nelder–Mead: the
    grid puts several minima along the narrow valley t ≈ c that all end at one) and folded onto t ≥ 0 by the
    symmetry (t, c) ↦ (−t, −c)."""
    lam_t, lam_c = L * L / (L * L * s1 + sigma2), L * L * (L - 1) / sigma2
    axis = np.linspace(-1.0, 1.0, GRID) ** 3
    t, c = 2 * np.sqrt(n / lam_t) * axis[:, None], 2 * np.sqrt(n / lam_c) * axis[None, :]
    S = _spec_action(t, c, n, L, V, sigma2, s1, tau, np.log1p)
    inner = S[1:-1, 1:-1]
    lowest = np.ones_like(inner, bool)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                lowest &= inner <= S[1 + di:GRID - 1 + di, 1 + dj:GRID - 1 + dj]
    ends = []
    for i, j in np.argwhere(lowest) + 1:
        # the first simplex spans the grid cell the minimum was found in
        simplex = [[t[i, 0], c[0, j]], [t[i + 1, 0], c[0, j]], [t[i, 0], c[0, j + 1]]]
        end = minimize(lambda v: _spec_action(v[0], v[1], n, L, V, sigma2, s1, tau, np.log1p), simplex[0],
                       method="Nelder-Mead",
                       options={"xatol": 1e-10, "fatol": 0, "initial_simplex": simplex, "maxiter": 20000}).x
        end = end if end[0] > 0 or (end[0] == 0 and end[1] >= 0) else -end
        if not any(np.allclose(end, other, rtol=1e-5, atol=1e-7) for other in ends):
            ends.append(end)
    return ends


def _derivatives(f, point):
    """Gradient and Hessian of f(t, c) at point, by mpmath's numerical differentiation (at DPS digits)."""
    gradient = mpmath.matrix([mpmath.diff(f, point, order) for order in ((1, 0), (0, 1))])
    hessian = mpmath.matrix([[mpmath.diff(f, point, (2, 0)), mpmath.diff(f, point, (1, 1))],
                             [mpmath.diff(f, point, (1, 1)), mpmath.diff(f, point, (0, 2))]])
    return gradient, hessian


def _reference_minima(n, L, V, sigma2=1.0, s1=1.0, tau=1.0):
    """[(t, c, S)]: every grid minimum polished by Newton's method on the mpmath action (its
    gradient below 1e-30 of its curvature: converged) and kept where its Hessian is positive definite."""
    found = []
    with mpmath.workdps(DPS):
        args = [mpmath.mpf(v) for v in (n, L, V, sigma2, s1, tau)]

        def action(t, c):
            return _spec_action(t, c, *args, mpmath.log1p)

        for start in _grid_minima(n, L, V, sigma2, s1, tau):
            point = [mpmath.mpf(v) for v in start]
            for _ in range(40):
                gradient, hessian = _derivatives(action, point)
                step = mpmath.lu_solve(hessian, gradient)
                point = [point[0] - step[0], point[1] - step[1]]
                if mpmath.norm(step) <= mpmath.mpf(10) ** (8 - DPS) * (1 + mpmath.norm(mpmath.matrix(point))):
                    break
            gradient, hessian = _derivatives(action, point)
            assert mpmath.norm(gradient) <= mpmath.mpf(10) ** -30 * mpmath.mnorm(hessian, 1), (start, point)
            if min(mpmath.eigsy(hessian)[0]) > 0:
                found.append((point[0], point[1], action(*point)))
    return found


CASES = [  # (L, V, P, convention): the audit's (ch10) misses, then the one the fixed starts missed after they were
    # mirrored into c < 0 (found from the grid's minima)
    (16, 4, 400.0, {}), (16, 4, 600.0, {}), (16, 4, 1000.0, {}), (8, 4, 300.0, {}),
    (32, 16, 5000.0, {"sigma2": 2.0, "s1": 0.5}), (16, 4, 300.0, {"beta": 2.0, "tau0": 0.5}),
    (8, 16, 144839.0, {}),
]


@pytest.mark.parametrize("L, V, P, changes", CASES)
def test_solve_reports_exactly_the_local_minima_of_a_grid_scan(L, V, P, changes):
    """The audit (ch10) found stable minima with t > 0, c < 0 that the 16 starts (all with c ≥ 0) never reached:
    at L = 16, V = 4, P = 400 (0.14648158, −0.12819849) beside the global (0.26832069, 0.12728369). Each reference
    minimum is reported, within the reported error, and each reported stable point is one of them (the unstable
    symmetric point is listed first); each reported point is stationary (the mpmath gradient there at most what the
    reported error allows, |∂S| ≤ Σ|H|·error) with a positive definite Hessian."""
    beta, tau = changes.get("beta", 1.0), changes.get("tau0", 1.0)
    sigma2, s1 = changes.get("sigma2", 1.0), changes.get("s1", 1.0)
    n = beta * P
    reference = _reference_minima(n, L, V, sigma2, s1, tau)
    assert len(reference) >= 2  # the global minimum and a metastable one, in every case here
    result = api.solve("linear", L, V, P, convention=api.DEFAULT.with_(**changes))
    assert result.status == "converged", result.message
    # listed first, the symmetric point: a saddle here (the page), never the global minimum
    symmetric = result.minima[0]
    assert (symmetric.c_uniform, symmetric.c_copy, symmetric.stable) == (0.0, 0.0, False) and result.global_index != 0
    assert min(symmetric.hessian_eigenvalues) < 0
    stable = [m for m in result.minima if m.stable]
    assert len(stable) == len(reference), (stable, reference)
    with mpmath.workdps(DPS):
        args = [mpmath.mpf(v) for v in (n, L, V, sigma2, s1, tau)]

        def action(t, c):
            return _spec_action(t, c, *args, mpmath.log1p)

        for t, c, S in reference:
            (match,) = [m for m in stable if abs(mpmath.mpf(m.c_uniform) - t) <= m.error
                        and abs(mpmath.mpf(m.c_copy) - c) <= m.error]
            # the action is quadratic in the point's error: its own float rounding bounds the difference
            assert abs(mpmath.mpf(match.action) - S) <= 4 * 2**-53 * abs(S)
        for m in stable:
            gradient, hessian = _derivatives(action, [mpmath.mpf(m.c_uniform), mpmath.mpf(m.c_copy)])
            for i in range(2):
                assert abs(gradient[i]) <= (abs(hessian[i, 0]) + abs(hessian[i, 1])) * m.error
            assert min(mpmath.eigsy(hessian)[0]) > 0


def test_the_hessian_eigenvalues_are_in_the_coordinates_the_page_names():
    """`hessian_eigenvalues` are the reduced action's in (t, c) (the page and `Minimum`; audit ch15: a user reading them
    beside c_copy took them for curvatures in c). Linear, L = 16, V = 4, P = 400: the eigenvalues of the spec's action
    written here, differentiated by mpmath at the reported global minimum. With the entropy remainder (L = 8, V = 4,
    P = 1000) the third coordinate is ln ρ, not ρ: the Hessian of the model's own action in (t, c, ln ρ), by mpmath's
    numerical differentiation of its value alone, has the reported eigenvalues, and the one in (t, c, ρ) does not.
    Agreement to 1e-9 relative: the point's error is below 1e-15 relative, the differentiation at 40 digits exact to
    far more, the reported values rounded to float64."""
    result = api.solve("linear", 16, 4, 400.0)
    best = result.minima[result.global_index]
    with mpmath.workdps(DPS):
        args = [mpmath.mpf(v) for v in (400.0, 16, 4, 1.0, 1.0, 1.0)]
        _, hessian = _derivatives(lambda t, c: _spec_action(t, c, *args, mpmath.log1p),
                                  [mpmath.mpf(best.c_uniform), mpmath.mpf(best.c_copy)])
        assert sorted(float(e) for e in mpmath.eigsy(hessian)[0]) == pytest.approx(best.hessian_eigenvalues, rel=1e-9)

    from attnphase.models.copy_heads.instance import CopyHeadsInstance

    convention = api.DEFAULT.with_(remainder="entropy")
    result = api.solve("linear", 8, 4, 1000.0, convention=convention)
    best = result.minima[result.global_index]
    reduced = CopyHeadsInstance.validated(attention="linear", L=8, V=4, convention=convention).reduced
    n = mpmath.mpf(1000.0)
    with mpmath.workdps(DPS):
        point = [mpmath.mpf(best.c_uniform), mpmath.mpf(best.c_copy), mpmath.log(mpmath.mpf(best.rho))]

        def eigenvalues(in_rho: bool):
            def action(t, c, r):
                return reduced.action_mp(t, c, mpmath.log(r) if in_rho else r, n)

            at = point[:2] + [mpmath.exp(point[2]) if in_rho else point[2]]
            orders = [[tuple(int(k in (i, j)) + int(i == j == k) for k in range(3)) for j in range(3)] for i in range(3)]
            H = mpmath.matrix([[mpmath.diff(action, at, order) for order in row] for row in orders])
            return sorted(float(e) for e in mpmath.eigsy(H)[0])

        assert eigenvalues(in_rho=False) == pytest.approx(best.hessian_eigenvalues, rel=1e-9)
        assert eigenvalues(in_rho=True) != pytest.approx(best.hessian_eigenvalues, rel=1e-2)


def test_the_crossover_jump_and_its_location_are_covered_by_their_errors():
    """Linear attention at L = 1024, V = 4: past P* the global minimum jumps once more, from the uniform-pooling to the
    copy minimum. P_crossover_jump and crossover_jump are located on float64 branches (about 14 digits), printed to 17:
    each now has an `_error` (audit ch15). Reference: the spec's action written here; its two minima near the reported
    coexistence (grid scan, then Newton in mpmath at 40 digits) followed in n by the secant method on the difference
    of their actions until it vanishes to 1e-30; the jump of √(t² + c²) there."""
    L, V = 1024, 4
    result = api.threshold("linear", L, V, 15)
    assert result.crossover_order == "first"
    starts = _grid_minima(result.P_crossover_jump, L, V, 1.0, 1.0, 1.0)
    assert len(starts) == 2
    with mpmath.workdps(DPS):
        def minimum(n, start):
            """(t, c, S) of the spec's minimum at n reached by Newton's method from `start`."""
            action = lambda t, c: _spec_action(t, c, n, L, V, 1, 1, 1, mpmath.log1p)  # noqa: E731
            point = [mpmath.mpf(v) for v in start]
            for _ in range(60):
                gradient, hessian = _derivatives(action, point)
                step = mpmath.lu_solve(hessian, gradient)
                point = [point[0] - step[0], point[1] - step[1]]
                if mpmath.norm(step) < mpmath.mpf(10) ** -(DPS - 5) * (1 + mpmath.norm(mpmath.matrix(point))):
                    break
            return point[0], point[1], action(*point)

        def difference(n):
            return minimum(n, starts[0])[2] - minimum(n, starts[1])[2]

        n = mpmath.findroot(difference, (mpmath.mpf(result.P_crossover_jump) * (1 - 1e-9),
                                         mpmath.mpf(result.P_crossover_jump) * (1 + 1e-9)), solver="secant")
        sizes = [mpmath.sqrt(t * t + c * c) for t, c, _ in (minimum(n, start) for start in starts)]
        jump = abs(sizes[1] - sizes[0])
    assert abs(result.P_crossover_jump - n) <= result.P_crossover_jump_error
    assert abs(result.crossover_jump - jump) <= result.crossover_jump_error
    # the errors are those of a float64 location, not wider: at most 1e-12 relative
    assert result.P_crossover_jump_error <= 1e-12 * result.P_crossover_jump
    assert result.crossover_jump_error <= 1e-12 * result.crossover_jump
