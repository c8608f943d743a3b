"""numeric.minimize: the vectorised multi-start Newton (the global minimiser of many non-convex problems at once),
every local minimum of one function from several starts, and roots on many sign-change brackets at once."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from attnphase.numeric.minimize import (
    TIE_ULPS, bracketed_roots, first_lowest, minimize_multistart_newton, multistart_local_minima, sign_change_brackets,
    symmetric_eigen,
)


def tilted_double_well(tilts):
    """f_i(x) = (x² − 1)² + b_i x: two wells; the tilt b_i decides which one is global."""

    def objective(x, rows):
        return (x[:, 0] ** 2 - 1) ** 2 + tilts[rows] * x[:, 0]

    def gradient_hessian(x, rows):
        g = 4 * x[:, 0] * (x[:, 0] ** 2 - 1) + tilts[rows]
        h = 12 * x[:, 0] ** 2 - 4
        return g[:, None], h[:, None, None]

    return objective, gradient_hessian


def test_global_minimiser_of_tilted_double_wells_matches_a_bracketed_root():
    rng = np.random.default_rng(0)
    tilts = rng.uniform(-1.0, 1.0, 200)
    objective, gradient_hessian = tilted_double_well(tilts)
    # Starts at the barrier top and near both wells: a single start from 0 would often pick the wrong well.
    starts = np.stack([np.zeros((200, 1)), np.full((200, 1), 0.9), np.full((200, 1), -0.9)])
    result = minimize_multistart_newton(objective, gradient_hessian, starts)
    assert result.converged.all()
    for b, x in zip(tilts, result.x[:, 0]):
        # The global well lies on the side opposite to the tilt; its stationary point is bracketed.
        lo, hi = (-2.0, -0.58) if b > 0 else (0.58, 2.0)
        reference = brentq(lambda y: 4 * y * (y * y - 1) + b, lo, hi, xtol=1e-15)
        assert abs(x - reference) < 1e-12


def test_two_dimensional_nonconvex_problem_reaches_the_lower_basin():
    # f(x, y) = (x² − 1)² + (y − x²)² + 0.2 x: global minimum near x = −1, found on a fine grid.
    def objective(p, rows):
        x, y = p[:, 0], p[:, 1]
        return (x * x - 1) ** 2 + (y - x * x) ** 2 + 0.2 * x

    def gradient_hessian(p, rows):
        x, y = p[:, 0], p[:, 1]
        gx = 4 * x * (x * x - 1) - 4 * x * (y - x * x) + 0.2
        gy = 2 * (y - x * x)
        hxx = 12 * x * x - 4 - 4 * (y - x * x) + 8 * x * x
        hxy = -4 * x
        hyy = np.full_like(x, 2.0)
        return np.stack([gx, gy], 1), np.stack([np.stack([hxx, hxy], 1), np.stack([hxy, hyy], 1)], 1)

    starts = np.array([[[0.0, 0.0]], [[1.0, 1.0]], [[-1.0, 1.0]]])
    result = minimize_multistart_newton(objective, gradient_hessian, starts)
    grid = np.linspace(-2, 2, 2001)
    X, Y = np.meshgrid(grid, grid)
    values = objective(np.stack([X.ravel(), Y.ravel()], 1), None)
    best = np.argmin(values)
    # The grid minimum is within one grid step of the true one; Newton is far more accurate.
    assert abs(result.x[0, 0] - X.ravel()[best]) <= 2e-3 and abs(result.x[0, 1] - Y.ravel()[best]) <= 2e-3
    assert result.value[0] <= values[best] + 1e-12


def test_closed_form_2x2_eigen_decomposition_matches_lapack():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(500, 2, 2))
    sym = a + np.transpose(a, (0, 2, 1))
    values, vectors = symmetric_eigen(sym)
    reconstructed = np.einsum("mij,mj,mkj->mik", vectors, values, vectors)
    assert np.max(np.abs(reconstructed - sym)) < 1e-13 * np.max(np.abs(sym))
    assert np.allclose(np.sort(values, axis=1), np.linalg.eigvalsh(sym), rtol=0, atol=1e-13 * np.abs(sym).max())


def test_multistart_local_minima_finds_every_minimum_once_folded_by_the_symmetry():
    """f(x, y) = (x² − 1)² + (y − x/2)² + 0.1 x²y²: minima at ±(x*, x*/2) related by the sign symmetry; 9 starts
    reach both, the canonical map folds them onto x ≥ 0, so exactly one minimum is reported, at the point where
    the gradient vanishes (checked against brentq on the reduced one-dimensional condition)."""
    def f(v):
        x, y = v
        return (x * x - 1) ** 2 + (y - x / 2) ** 2 + 0.1 * x * x * y * y

    def grad(v):
        x, y = v
        return np.array([4 * x * (x * x - 1) - (y - x / 2) + 0.2 * x * y * y, 2 * (y - x / 2) + 0.2 * x * x * y])

    def hess(v):
        x, y = v
        return np.array([[12 * x * x - 4 + 0.5 + 0.2 * y * y, -1 + 0.4 * x * y], [-1 + 0.4 * x * y, 2 + 0.2 * x * x]])

    starts = [[a, b] for a in (-1.5, 0.2, 1.5) for b in (-1.0, 0.0, 1.0)]
    result = multistart_local_minima(f, grad, hess, starts, canonical=lambda v: v if v[0] >= 0 else -v)
    assert result.status == "converged" and len(result.points) == 1
    x, y = result.points[0]
    y_of = lambda x_: x_ / 2 / (1 + 0.1 * x_ * x_)  # noqa: E731  (∂f/∂y = 0)
    x_ref = brentq(lambda x_: grad([x_, y_of(x_)])[0], 0.5, 1.5, xtol=1e-15)
    assert x == pytest.approx(x_ref, abs=1e-9) and y == pytest.approx(y_of(x_ref), abs=1e-9)
    overflow = multistart_local_minima(lambda v: np.inf, lambda v: np.full(2, np.nan), lambda v: np.full((2, 2), np.nan),
                                       starts[:2])
    assert overflow.status == "not_found" and overflow.points == ()


def test_multistart_local_minima_keeps_rounding_limited_minima_and_drops_unfinished_starts():
    """The same function times 1e9, minus 3e8 (the size of the copy-heads actions): rounding stops trust-exact
    from every start before the gradient reaches 1e-10 ("a bad approximation ..."), about 1e-9 from the minimum;
    those end points are settled (Hessian positive definite, Newton step below the tolerance) and reported, at
    the brentq point. Stopped after two iterations, no start is near a minimum: none is reported as one."""
    scale = 1e9

    def f(v):
        x, y = v
        return scale * ((x * x - 1) ** 2 + (y - x / 2) ** 2 + 0.1 * x * x * y * y) - 3e8

    def grad(v):
        x, y = v
        return scale * np.array([4 * x * (x * x - 1) - (y - x / 2) + 0.2 * x * y * y, 2 * (y - x / 2) + 0.2 * x * x * y])

    def hess(v):
        x, y = v
        return scale * np.array([[12 * x * x - 4 + 0.5 + 0.2 * y * y, -1 + 0.4 * x * y],
                                 [-1 + 0.4 * x * y, 2 + 0.2 * x * x]])

    starts = [[a, b] for a in (-1.5, 0.2, 1.5) for b in (-1.0, 0.0, 1.0)]
    fold = lambda v: v if v[0] >= 0 else -v  # noqa: E731
    result = multistart_local_minima(f, grad, hess, starts, canonical=fold)
    assert result.status == "converged" and len(result.points) == 1 and "stopped short" not in result.message
    y_of = lambda x_: x_ / 2 / (1 + 0.1 * x_ * x_)  # noqa: E731
    x_ref = brentq(lambda x_: grad([x_, y_of(x_)])[0] / scale, 0.5, 1.5, xtol=1e-15)
    assert result.points[0] == pytest.approx([x_ref, y_of(x_ref)], abs=1e-8)
    unfinished = multistart_local_minima(f, grad, hess, starts, canonical=fold, max_iter=2)
    assert unfinished.status == "not_found" and unfinished.points == ()
    assert "9 start(s) stopped short of a minimum" in unfinished.message
    # what stopped is handed on as candidates (for a caller that polishes them), and none of them is stationary
    assert unfinished.stopped and all(np.abs(grad(p)).max() > 1e-3 * scale for p in unfinished.stopped)


def test_multistart_local_minima_rescales_a_start_where_the_curvatures_differ_by_300_decades():
    """f = (x² + 3.84e303 y²)/2 (the copy-heads curvatures at a prior variance of 1e-300): from (0.5, 0) scipy's
    trust-exact stops at its start point (it cannot predict an improvement); the retry in coordinates scaled by
    √|H_ii| reaches the minimum at the origin."""
    from scipy.optimize import minimize

    big = 3.84e303

    def f(v):
        return 0.5 * (v[0] ** 2 + big * v[1] ** 2)

    def grad(v):
        return np.array([v[0], big * v[1]])

    def hess(v):
        return np.diag([1.0, big])

    with np.errstate(over="ignore"):  # scipy's norm of the 1e303-sized model terms
        plain = minimize(f, np.array([0.5, 0.0]), jac=grad, hess=hess, method="trust-exact", options={"gtol": 1e-10})
    assert not plain.success and np.array_equal(plain.x, [0.5, 0.0])
    result = multistart_local_minima(f, grad, hess, [[0.5, 0.0]])
    assert result.status == "converged" and result.stopped == () and "stopped short" not in result.message
    assert len(result.points) == 1 and np.abs(result.points[0]).max() < 1e-12


def test_bracketed_roots_of_many_cubics_match_brentq():
    """p_i(x) = x³ − x + b_i on the sign-change brackets of a grid scan (`sign_change_brackets`): every root to
    1e-12, vectorised over all brackets of all 50 cubics at once, including brackets where Newton overshoots."""
    rng = np.random.default_rng(2)
    grid = np.linspace(-2.0, 2.0, 41)
    lo, hi, f_lo, offsets, reference = [], [], [], [], []
    for b in rng.uniform(-0.35, 0.35, 50):
        values = grid**3 - grid + b
        for i in sign_change_brackets(values):
            lo.append(grid[i]), hi.append(grid[i + 1]), f_lo.append(values[i]), offsets.append(b)
            reference.append(brentq(lambda x: x**3 - x + b, grid[i], grid[i + 1], xtol=1e-15))
    b = np.array(offsets)
    roots = bracketed_roots(lambda x: x**3 - x + b, lambda x: 3 * x * x - 1, lo, hi, f_lo)
    assert len(roots) >= 100 and np.max(np.abs(roots - np.array(reference))) < 1e-12


def test_a_point_off_the_minimum_along_a_soft_direction_coupled_to_a_stiff_one_is_not_settled():
    """f = 2(t − 1/4)² − 4.19 t c + 1.92e303 c² (curvatures 4 and 3.84e303, coupled): at (−0.79, 1.7e-18) the
    gradient along t is −4.2, a Newton step of 1.04 from the minimum at t ≈ 1/4, but an LU solve of the Hessian
    itself returns a zero step along t (the 3.84e303 entry swamps the elimination). The step is taken on the
    Hessian scaled to a unit diagonal, so that start is reported as stopped short, not as a minimum; from
    (0.79, 0) the minimum itself is found."""
    stiff, coupling = 3.84e303, -4.19

    def f(v):
        return 2 * (v[0] - 0.25) ** 2 + coupling * v[0] * v[1] + 0.5 * stiff * v[1] ** 2

    def grad(v):
        return np.array([4 * (v[0] - 0.25) + coupling * v[1], coupling * v[0] + stiff * v[1]])

    def hess(v):
        return np.array([[4.0, coupling], [coupling, stiff]])

    off = multistart_local_minima(f, grad, hess, [[-0.79, 1.7e-18]])
    assert off.status == "not_found" and off.points == () and len(off.stopped) == 1
    found = multistart_local_minima(f, grad, hess, [[0.79, 0.0]])
    t_min = 0.25 / (1 - coupling**2 / (4 * stiff))  # ∂f/∂c = 0 eliminated: c = −coupling·t/stiff
    assert len(found.points) == 1 and found.points[0][0] == pytest.approx(t_min, abs=1e-9)


def test_a_tie_within_rounding_goes_to_the_first_start():
    """Two starts ending on mirror-image minima of one value differ by rounding only; the first start wins whichever
    rounds lower, while a value lower by more than TIE_ULPS units in the last place wins from any position."""
    value = 0.028614921036236790
    ulp = np.spacing(value)
    values = np.array([[value + ulp, value, value],
                       [value, value + 2 * ulp, value - 2 * TIE_ULPS * ulp],
                       [value - ulp, value, value]])
    assert list(first_lowest(values)) == [0, 0, 1]
    # bitwise ties and a zero minimum, as argmin; a NaN end loses to any number
    assert list(first_lowest(np.array([[0.0, 1.0], [0.0, -1.0]]))) == [0, 1]
    assert list(first_lowest(np.array([[np.nan, 2.0], [1.0, np.nan], [0.5, 3.0]]))) == [2, 0]


def test_mirror_image_minima_go_to_the_first_start_however_their_ends_round():
    """f(x, y) = (x² − a)² + (y² − a)² + c (x − y)² + xy/10 is symmetric under x ↔ y: its minima near (1, −1) and
    (−1, 1) have one value, but the Newton ends from random starts round differently (at this seed the second start's
    value is the lower one at about a sixth of the problems, where argmin would take it): the first start wins."""
    a, c = 1.3, 0.37

    def objective(p, rows):
        x, y = p[:, 0], p[:, 1]
        return (x * x - a) ** 2 + (y * y - a) ** 2 + c * (x - y) ** 2 + 0.1 * x * y

    def gradient_hessian(p, rows):
        x, y = p[:, 0], p[:, 1]
        g = np.stack([4 * x * (x * x - a) + 2 * c * (x - y) + 0.1 * y, 4 * y * (y * y - a) - 2 * c * (x - y) + 0.1 * x], 1)
        off = np.full_like(x, 0.1 - 2 * c)
        return g, np.stack([np.stack([12 * x * x - 4 * a + 2 * c, off], 1), np.stack([off, 12 * y * y - 4 * a + 2 * c], 1)], 1)

    rng = np.random.default_rng(0)
    near_one = rng.normal(size=(200, 2)) * 0.2 + np.array([1.0, -1.0])
    near_other = rng.normal(size=(200, 2)) * 0.2 + np.array([-1.0, 1.0])
    for starts in (np.stack([near_one, near_other]), np.stack([near_other, near_one])):
        result = minimize_multistart_newton(objective, gradient_hessian, starts)
        assert (result.local_values[1] < result.local_values[0]).sum() >= 20  # the rounding that argmin would follow
        assert np.all(result.start_index == 0)
        assert np.all(np.sign(result.x[:, 0]) == np.sign(starts[0, :, 0]))


def test_refining_at_dips_finds_two_roots_inside_one_grid_cell():
    """f = (x − a)(x − a − ε) keeps its sign at every point of a grid of step 0.1 when both roots lie in one cell
    (ε = 1e-3): `sign_change_brackets` sees nothing there; refined at the dip of |f| the grid brackets both roots,
    and a monotone f (no dip) is left as it was."""
    from attnphase.numeric.minimize import refined_at_dips, sign_change_brackets

    a, eps = 0.4321, 1e-3
    grid = np.linspace(-1.0, 1.0, 21)
    xs, g = refined_at_dips(lambda x: (x - a) * (x - a - eps), grid)
    assert len(sign_change_brackets((grid - a) * (grid - a - eps))) == 0
    brackets = sign_change_brackets(g)
    assert len(brackets) == 2
    for i, root in zip(brackets, (a, a + eps)):
        assert xs[i] <= root <= xs[i + 1]
    same, values = refined_at_dips(lambda x: x + 2.0, grid)
    assert np.array_equal(same, grid) and np.array_equal(values, grid + 2.0)


def test_log_pattern_search_finds_a_maximum_in_the_logarithms_and_one_on_a_bound():
    """f = −(ln x − 1)² − 2(ln y + 1/2)², whose maximum is at (e, e^(−1/2)): from (1, 1) the search ends within its last
    factor 2^(1/32) of it in each variable, in one batch of nine candidates per round. With y held to y ≥ 2x the
    maximum lies on the bound, where the search moves along it, at x = 2^(−2/3) ≈ 0.63 (the closed form of the
    constrained maximum)."""
    from attnphase.numeric.minimize import log_pattern_search

    calls = []

    def f(xs, ys):
        calls.append(np.shape(xs))
        return -(np.log(xs) - 1) ** 2 - 2 * (np.log(ys) + 0.5) ** 2

    x, y, value = log_pattern_search(f, 1.0, 1.0, float(f(np.array(1.0), np.array(1.0))))
    step = math.log(2.0) / 32
    assert abs(math.log(x) - 1) <= step and abs(math.log(y) + 0.5) <= step
    assert len(calls) > 2 and all(shape == (3, 3) for shape in calls[1:])  # after the start's own value
    assert value == pytest.approx(float(f(np.array(x), np.array(y))))
    x, y, _ = log_pattern_search(f, 1.0, 2.0, float(f(np.array(1.0), np.array(2.0))),
                                 feasible=lambda xs, ys: np.maximum(ys, 2 * xs))
    # on y = 2x: d/du [−(u − 1)² − 2(u + ln 2 + 1/2)²] = 0 at u = ln x = −(2/3) ln 2
    assert y == pytest.approx(2 * x) and abs(math.log(x) + 2 / 3 * math.log(2.0)) <= 2 * step
    spent = []
    log_pattern_search(f, 1.0, 1.0, float(f(np.array(1.0), np.array(1.0))), go_on=lambda: not spent.append(1) and
                       len(spent) <= 2)
    assert len(spent) == 3  # stopped when the budget said so
