"""Fixed points, their stability, solvers as values (chains, Broyden), and branch following.

The main test problem is the state evolution of the Z2 spiked Wigner model,
    m = F(m) = E_z tanh(lam m + sqrt(lam m) z),  z ~ N(0, 1).
Expanding g(h) = E tanh(h + sqrt(h) z) with tanh x = x - x^3/3 + 2x^5/15 - ... and the Gaussian
moments E(h + sqrt(h) z)^3 = h^3 + 3h^2, E(h + sqrt(h) z)^5 = h^5 + 10h^4 + 15h^3 gives
    g(h) = h - h^2 + (5/3) h^3 + O(h^4),   F(m) = g(lam m).
Hence F'(0) = lam: m = 0 is stable for lam < 1 and unstable for lam > 1. For lam = 1 + eps the
informative fixed point solves lam^2 m - (5/3) lam^3 m^2 = eps + O(m^3), so
    m* = (eps / lam^2) (1 + (5/3) eps / lam + O(eps^2)),   F'(m*) = 1 - eps + O(eps^2),
the onset exponent is beta = 1, and ln m* = ln eps - eps/3 + O(eps^2) (the first correction).
Carried two orders further (g(h) = h - h^2 + 5h^3/3 - 13h^4/3 + ..., from the x^7 term of tanh), with
delta = 1 - 1/lam the fixed point h = lam m* solves h - 5h^2/3 + 13h^3/3 = delta + O(h^4):
    h = delta + (5/3) delta^2 + (11/9) delta^3 + (293/135) delta^4 + O(delta^5).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.numeric.branches import BEYOND_STEPS, FollowedBranch, WarmStarts, extrapolate, follow_until_lost
from attnphase.numeric.fixedpoint import (Anderson, Broyden, Chain, Damped, Hybr, Identity, Interval, LastEvaluation,
                                          Positive, solve_fixed_point)
from attnphase.numeric.jacobian import forward_difference_jacobian, map_jacobian
from attnphase.numeric.gauss import GaussHermiteRule
from attnphase.numeric.scaling import fit_power_law

_RULE = GaussHermiteRule(1, 150)
_Z = _RULE.standard_nodes[:, 0]
_W = _RULE.weights
# Quadrature error of the 150-node map, checked against mpmath below.
MAP_ERROR = 1e-13


def z2_map(m, lam):
    return float(_W @ np.tanh(lam * m + np.sqrt(lam * m) * _Z))


def z2_map_mp(m, lam):
    h = mpmath.mpf(lam) * m
    return mpmath.quad(lambda z: mpmath.tanh(h + mpmath.sqrt(h) * z) * mpmath.npdf(z), [-mpmath.inf, 0, mpmath.inf])


def test_map_quadrature_against_mpmath():
    with mpmath.workdps(20):
        for lam, m in [(2.0, 0.9), (1.5, 0.4), (1.01, 0.01)]:
            assert abs(z2_map(m, lam) - float(z2_map_mp(mpmath.mpf(m), lam))) <= MAP_ERROR


@pytest.fixture(scope="module")
def z2_reference_at_1_5():
    with mpmath.workdps(18):
        return float(mpmath.findroot(lambda m: z2_map_mp(m, 1.5) - m, mpmath.mpf("0.394")))


@pytest.mark.parametrize("solver", [Hybr(), Anderson(damping=0.0), Damped(damping=0.3)], ids=lambda s: s.name)
def test_z2_solvers_agree_with_high_precision_reference(solver, z2_reference_at_1_5):
    res = solve_fixed_point(lambda m: z2_map(m, 1.5), 0.8, solver, transforms=[Interval(0.0, 1.0)], tol=1e-13,
                            map_error=MAP_ERROR)
    assert res.success and res.status == "converged"
    assert res.residual <= 1e-13
    # The solver's error estimate includes the map's quadrature error propagated through 1/(1 - F').
    assert res.error >= MAP_ERROR / (1 - res.spectral_radius)
    assert abs(res.value - z2_reference_at_1_5) <= res.error
    assert res.stable and 0 < res.spectral_radius < 1
    assert isinstance(res.value, float)


@pytest.mark.parametrize("lam", [0.5, 0.9, 1.1, 2.0])
def test_z2_trivial_fixed_point_stability(lam):
    """At m = 0 the map's derivative is lam (sqrt(m) makes F undefined for m < 0: one-sided FD)."""
    res = solve_fixed_point(lambda m: z2_map(m, lam), 0.0)
    assert res.success and res.value == 0.0
    assert res.jacobian_eigenvalues.shape == (1,)
    assert abs(res.jacobian_eigenvalues[0].real - lam) <= 1e-7
    assert res.stable == (lam < 1)


@pytest.fixture(scope="module")
def z2_branch():
    """The informative branch followed towards its onset at lam = 1 by warm starts (WarmStarts: each
    solve starts from the extrapolation of the two nearest solved controls)."""
    eps = np.geomspace(1e-2, 1e-4, 9)
    controls = np.concatenate([[2.0, 1.5, 1.2, 1.1, 1.05], 1 + eps])
    branch = WarmStarts(lambda lam, guess: solve_fixed_point(lambda m: z2_map(m, lam), 0.9 if guess is None else float(guess),
                                                             transforms=[Interval(0.0, 1.0)], tol=1e-15),
                        lambda result: result.value, lambda result: result.success,
                        contains=lambda guess: 0.0 < float(guess) < 1.0)
    return eps, controls, [branch.at(c) for c in controls]


def test_z2_branch_followed_to_onset(z2_branch):
    eps, controls, results = z2_branch
    assert all(r.success and r.stable for r in results)
    values = np.array([r.value for r in results])
    for e, m, res in zip(eps, values[5:], results[5:]):
        lam = 1 + e
        delta = 1 - 1 / lam
        # h = lam m* = delta + (5/3) delta^2 + (11/9) delta^3 + (293/135) delta^4 + ... (module doc);
        # the remainder after delta^3 is bounded by twice its leading term.
        series = (delta + 5 / 3 * delta**2 + 11 / 9 * delta**3) / lam
        assert abs(m - series) <= 2 * (293 / 135) * delta**4 / lam + res.error + MAP_ERROR / e
        # F'(m*) = lam g'(h), g'(h) = 1 - 2h + 5h^2 - (52/3) h^3 + ...; FD Jacobian error ~1e-8.
        h = lam * m
        assert abs(res.spectral_radius - lam * (1 - 2 * h + 5 * h**2)) <= 2 * lam * (52 / 3) * h**3 + 1e-7
    # Branch values decrease towards the onset.
    assert np.all(np.diff(values) < 0)


def test_z2_onset_exponent(z2_branch):
    """beta = 1 from the expansion; the fit with the analytic corrections ln m = ln eps - eps/3 + ...
    must contain it, and the first correction must come out as -1/3."""
    eps, _, results = z2_branch
    m = np.array([r.value for r in results[5:]])
    fit = fit_power_law(eps, m, corrections=(1, 2))
    assert fit.contains(1.0)
    assert fit.exponent_high - fit.exponent_low < 1e-4
    assert fit.prefactor_low <= 1.0 <= fit.prefactor_high  # m / eps -> 1 as lam -> 1
    assert abs(fit.corrections[0] + 1 / 3) <= 1e-3
    # Without corrections the local slope 1 - eps/3 + O(eps^2) bounds the bias of a plain fit.
    plain = fit_power_law(eps[4:], m[4:])
    assert 1 - 1.1 * eps[4] / 3 <= plain.exponent <= 1.0


def test_z2_evaluation_counts():
    """Efficiency regression guard at lam = 1.01, where F'(m*) = 0.99: damped iteration needs
    ~ln(1e-10)/ln(0.99) ~ 2000 steps, Anderson and hybr tens of evaluations."""
    counts = {}
    for solver in (Hybr(), Anderson(damping=0.0), Damped(damping=0.0)):
        res = solve_fixed_point(lambda m: z2_map(m, 1.01), 0.5, solver, transforms=[Interval(0.0, 1.0)], tol=1e-10)
        assert res.success
        counts[solver.name] = res.evaluations
    assert counts["hybr"] <= 60 and counts["anderson"] <= 60
    assert counts["damped"] >= 20 * max(counts["hybr"], counts["anderson"])


def test_two_dimensional_map_with_positive_coordinate():
    """q = 1 / (1 + v), v = q / 2: v solves 2 v^2 + 2 v - 1 = 0, v = (sqrt(3) - 1) / 2; the Jacobian
    [[0, -1/(1+v)^2], [1/2, 0]] has eigenvalues +- i / (sqrt(2) (1 + v))."""
    F = lambda x: np.array([1 / (1 + x[1]), x[0] / 2])  # noqa: E731
    v = (math.sqrt(3) - 1) / 2
    expected = np.array([1 / (1 + v), v])
    for solver in (Hybr(), Anderson(), Damped()):
        res = solve_fixed_point(F, np.array([1.0, 1.0]), solver, transforms=[Positive(), Positive()])
        assert res.success, res.message
        assert np.max(np.abs(res.value - expected)) <= res.error + 1e-15
        omega = 1 / (math.sqrt(2) * (1 + v))
        assert np.allclose(np.sort(res.jacobian_eigenvalues.imag), [-omega, omega], atol=1e-8)
        assert np.allclose(res.jacobian_eigenvalues.real, 0.0, atol=1e-8)
        assert res.stable


def test_unstable_fixed_point_reported():
    """x = 2x - 1 has the repelling fixed point 1: hybr finds it, the spectrum says unstable;
    damped iteration runs away."""
    res = solve_fixed_point(lambda x: 2 * x - 1, 0.3, Hybr())
    assert res.success and abs(res.value - 1) <= 1e-12
    assert not res.stable and abs(res.spectral_radius - 2) <= 1e-8
    diverging = solve_fixed_point(lambda x: 2 * x - 1, 0.3, Damped(damping=0.0, max_iter=5000))
    assert diverging.status == "diverged" and not diverging.success


@pytest.mark.parametrize("seed", range(6))
def test_spectral_radius_error_covers_the_exact_radius(seed):
    """x = A x + b with A = S diag(λ) S⁻¹ (non-normal, known eigenvalues, fixed point up to ~1e3): the
    finite-difference radius lies within its reported error of max |λ|; scaling λ to radius exactly 1 (the
    largest eigenvalue −1: a neutral direction that keeps I − A invertible) is reported marginal, not stable."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    eigenvalues = rng.uniform(-0.95, 0.95, size=3)
    eigenvalues[np.argmax(np.abs(eigenvalues))] *= -np.sign(eigenvalues[np.argmax(np.abs(eigenvalues))])
    for scale, stable in ((1.0, True), (1 / np.abs(eigenvalues).max(), False)):
        A = S @ np.diag(scale * eigenvalues) @ np.linalg.inv(S)
        b = rng.normal(scale=10.0, size=3)
        F = lambda x: A @ x + b  # noqa: E731
        res = solve_fixed_point(F, np.zeros(3), Hybr(), tol=1e-9)
        exact = float(np.abs(scale * eigenvalues).max())
        assert res.success and 0 < res.spectral_radius_error < 1e-6
        assert abs(res.spectral_radius - exact) <= res.spectral_radius_error
        assert res.stable == stable
        assert ("marginal" in res.message) == (not stable)


@pytest.mark.parametrize("eigenvalue, stable", [(0.5, True), (-1.0, False)])
def test_spectral_radius_error_of_a_jordan_block(eigenvalue, stable):
    """A defective dF (a 2 × 2 Jordan block: eigenvectors parallel, Bauer-Fike's bound infinite): the error falls
    back on Elsner's, ~ the square root of the noise, which still separates 0.5 from 1 and calls −1 marginal."""
    A = np.array([[eigenvalue, 1.0], [0.0, eigenvalue]])
    b = np.array([0.3, -0.7])
    res = solve_fixed_point(lambda x: A @ x + b, np.zeros(2), Hybr(), tol=1e-12)
    assert res.success and res.spectral_radius_error < 1e-3
    assert abs(res.spectral_radius - abs(eigenvalue)) <= res.spectral_radius_error
    assert res.stable == stable and ("marginal" in res.message) == (not stable)


def test_user_jacobian_used():
    res = solve_fixed_point(lambda x: np.cos(x), np.array([0.5]), jacobian=lambda x: np.array([[-np.sin(x[0])]]))
    assert res.success and res.jacobian_evaluations == 0
    assert abs(res.jacobian_eigenvalues[0].real + math.sin(0.7390851332151607)) <= 1e-9


def test_finite_difference_jacobian_against_analytic():
    F = lambda x: np.array([np.sin(x[0]) * x[1], np.exp(x[0] - x[1])])  # noqa: E731
    x = np.array([0.3, 0.7])
    J, evaluations = map_jacobian(F, x)
    exact = np.array([[math.cos(0.3) * 0.7, math.sin(0.3)], [math.exp(-0.4), -math.exp(-0.4)]])
    assert np.max(np.abs(J - exact)) <= 1e-9
    assert evaluations == 5


def test_failures_are_statuses():
    nan_map = solve_fixed_point(lambda x: np.array([np.nan, 1.0]), np.array([0.0, 1.0]))
    assert nan_map.status == "diverged" and "non-finite" in nan_map.message
    leaves = solve_fixed_point(lambda x: -1.0, 0.5, transforms=[Positive()])
    assert leaves.status == "failed" and "left the domain" in leaves.message
    raises = solve_fixed_point(lambda x: math.log(x), 0.5, Anderson())
    assert raises.status == "failed" and "ValueError" in raises.message
    slow = solve_fixed_point(lambda x: 0.999 * x + 0.001, 0.0, Damped(damping=0.0, max_iter=50))
    assert slow.status == "max_iter" and not slow.success and math.isnan(slow.spectral_radius)
    wrong_shape = solve_fixed_point(lambda x: np.ones(3), np.zeros(2))
    assert wrong_shape.status == "failed"


def test_bad_input_rejected():
    with pytest.raises(ParameterError):
        solve_fixed_point(lambda x: x, 0.0, "newton")
    with pytest.raises(ParameterError):
        solve_fixed_point(lambda x: x, -1.0, transforms=[Positive()])
    with pytest.raises(ParameterError):
        solve_fixed_point(lambda x: x, np.nan)
    with pytest.raises(ParameterError):
        Damped(damping=1.0)
    with pytest.raises(ParameterError):
        Anderson(memory=0)
    with pytest.raises(ParameterError):
        Chain(Anderson())
    with pytest.raises(ParameterError):
        Interval(1.0, 0.0)


@pytest.mark.parametrize("transform,x", [(Identity(), -3.2), (Positive(), 1e-3), (Interval(-2.0, 5.0), 4.99)])
def test_transforms_round_trip(transform, x):
    u = transform.to_unconstrained(x)
    assert np.isfinite(u)
    assert abs(transform.from_unconstrained(u) - x) <= 1e-13 * max(1.0, abs(x))


def test_chain_runs_hybr_only_where_anderson_stalls():
    """Chain(Anderson, Hybr): Anderson alone stops at its budget on a slowly contracting map; the chain
    hands its end point to MINPACK, which converges, and reports the stage that produced the value; a
    chain whose first stage converges never runs the second (the evaluation count is Anderson's)."""
    F = lambda x: np.array([0.999 * x[0] + 0.001, np.cos(x[1])])  # noqa: E731
    alone = solve_fixed_point(F, np.array([0.0, 0.5]), Anderson(damping=0.9, max_iter=5, memory=1))
    assert alone.status == "max_iter"
    chained = solve_fixed_point(F, np.array([0.0, 0.5]), Chain(Anderson(damping=0.9, max_iter=5, memory=1), Hybr()))
    assert chained.success and chained.method == "hybr"
    assert np.max(np.abs(chained.value - [1.0, 0.7390851332151607])) <= chained.error + 1e-15
    direct = solve_fixed_point(F, np.array([0.0, 0.5]), Anderson(), spectrum=False)
    via_chain = solve_fixed_point(F, np.array([0.0, 0.5]), Chain(Anderson(), Hybr()), spectrum=False)
    assert via_chain.method == "anderson" and via_chain.evaluations == direct.evaluations
    np.testing.assert_array_equal(via_chain.value, direct.value)


def test_broyden_converges_superlinearly_and_carries_its_inverse_jacobian():
    """x = F(x) with F(x) = x − A(x − x*) + 0.1 (x − x*)² (componentwise): the fixed point x* is found by
    Broyden from a finite-difference Jacobian to the relative tolerance; started again from the returned
    inverse Jacobian it needs no new finite differences and fewer evaluations."""
    target = np.array([0.3, -0.2, 1.5])
    A = np.array([[0.5, 0.1, 0.0], [0.0, 0.4, 0.1], [0.1, 0.0, 0.6]])

    def F(x):
        d = x - target
        return x - A @ d + 0.1 * d**2

    cold = solve_fixed_point(F, target + 0.2, Broyden(max_iter=30), tol=1e-12, spectrum=False)
    assert cold.success and np.max(np.abs(cold.value - target)) <= 1e-11 * 10
    assert cold.inverse_jacobian is not None
    warm = solve_fixed_point(F, target + 0.1, Broyden(max_iter=30, inverse=cold.inverse_jacobian), tol=1e-12,
                             spectrum=False)
    assert warm.success and warm.evaluations < cold.evaluations - 3  # no n = 3 finite differences, fewer steps
    # A step onto points where F is not finite ends the solve as "diverged", at the last finite point
    diverged = solve_fixed_point(lambda x: np.full(2, np.nan) if x[0] > 0.6 else 0.5 * x + 0.5, np.array([0.5, 0.5]),
                                 Broyden(), transforms=[Positive(), Positive()], spectrum=False)
    assert diverged.status == "diverged"
    np.testing.assert_array_equal(diverged.value, [0.5, 0.5])


@pytest.mark.parametrize("step_tol", [1e-4, 1e-6, 1e-8])
def test_broyden_step_tolerance_bounds_the_distance_to_the_fixed_point(step_tol):
    """Broyden(step_tol=...) stops when the next predicted step is below step_tol (relative): the point is then
    within step_tol of x*, where a residual tolerance of the same size is not, since dF − I has an eigenvalue
    −0.02 and the residual understates the distance up to 50-fold. The map is that of the test above with a
    slow direction; started from the exact inverse at x*, the predicted step is the Newton step, whose error
    relative to the distance is ~0.1 |x − x*| / 0.02 (< 5 % once within 1e-2 of x*)."""
    target = np.array([0.3, -0.2, 1.5])
    A = np.array([[0.02, 0.01, 0.0], [0.0, 0.4, 0.1], [0.0, 0.0, 0.6]])

    def F(x):
        d = x - target
        return x - A @ d + 0.1 * d**2

    def distance(x):  # Broyden's relative measure
        return float(np.max(np.abs(x - target) / np.maximum(np.abs(target), 1e-3)))

    start, inverse = target + 0.01, -np.linalg.inv(A)
    by_step = solve_fixed_point(F, start, Broyden(max_iter=30, step_tol=step_tol, inverse=inverse), tol=1e-15,
                                spectrum=False)
    assert by_step.success and "predicted step" in by_step.message
    assert distance(by_step.value) <= step_tol
    by_residual = solve_fixed_point(F, start, Broyden(max_iter=30, inverse=inverse), tol=step_tol, spectrum=False)
    assert by_residual.success and distance(by_residual.value) > step_tol
    with pytest.raises(ParameterError, match="step_tol"):
        Broyden(step_tol=0.0)


def test_polish_chain_restarts_from_x0_when_the_first_stage_ends_unusable():
    """Chain(first, Broyden(), polish=True, usable=...): Broyden always runs, from the first stage's end
    point when `usable` accepts it, else from x0 (each run identical, step for step, to Broyden alone
    from that point)."""
    F = np.cos  # the fixed point 0.739085...
    first = Damped(damping=0.0, max_iter=3)
    end_of_first = solve_fixed_point(F, np.array([0.2]), first, spectrum=False).value
    alone = {name: solve_fixed_point(F, start, Broyden(), tol=1e-13, spectrum=False)
             for name, start in (("x0", np.array([0.2])), ("end", end_of_first))}
    assert alone["x0"].iterations != alone["end"].iterations
    for usable, start in ((lambda x: False, "x0"), (lambda x: True, "end")):
        chained = solve_fixed_point(F, np.array([0.2]), Chain(first, Broyden(), polish=True, usable=usable), tol=1e-13,
                                    spectrum=False)
        assert chained.success and chained.method == "broyden"
        assert chained.iterations == alone[start].iterations and chained.residual == alone[start].residual
        assert abs(chained.value[0] - 0.7390851332151607) <= 1e-13


def test_forward_difference_jacobian_and_last_evaluation():
    F = lambda x: np.array([np.sin(x[0]) * x[1], np.exp(x[0] - x[1])])  # noqa: E731
    x = np.array([0.3, 0.7])
    J = forward_difference_jacobian(F, x, F(x), relative_step=1e-6)
    exact = np.array([[math.cos(0.3) * 0.7, math.sin(0.3)], [math.exp(-0.4), -math.exp(-0.4)]])
    # forward differences: error ~ h |F''| / 2 with h = 1e-6 max(|x_j|, 0.1)
    assert np.max(np.abs(J - exact)) <= 1e-6
    calls = []
    remembered = LastEvaluation(lambda y: calls.append(y.copy()) or F(y))
    first, again = remembered(x), remembered(x.copy())
    assert first is again and len(calls) == 1
    remembered(x + 1e-16 * 0 + np.array([0.0, 1e-9]))
    assert len(calls) == 2


# -- following a branch ----------------------------------------------------------------------------
def _fixed_point_family(F, x0):
    """solve(c, guess): the fixed point of F(., c) from the guess (x0 without one), spectrum included."""
    return lambda c, guess: solve_fixed_point(lambda x: F(x, c), x0 if guess is None else float(np.ravel(guess)[0]))


def test_extrapolate_reproduces_polynomials_of_its_degree():
    """Two points: linear, exactly in the form nearest + (nearest − other)(t − c_0)/(c_0 − c_1); three:
    a quadratic through them is reproduced to rounding; arrays elementwise."""
    assert extrapolate([1.0, 0.5], [3.0, 2.0], 2.0) == 3.0 + (3.0 - 2.0) * (2.0 - 1.0) / (1.0 - 0.5)
    c = [0.9, 0.7, 0.4]
    values = [np.array([t * t - t, 2 * t]) for t in c]
    np.testing.assert_allclose(extrapolate(c, values, 1.3), [1.3**2 - 1.3, 2.6], rtol=1e-14)
    with pytest.raises(ParameterError):
        extrapolate([1.0, 1.0], [0.0, 1.0], 2.0)


def test_branch_lost_at_fold():
    """x -> x + 0.3 (c - x^2) has the branch x = sqrt(c), which ends at c = 0 (a fold): followed from
    c = 1 downwards, the loss (no converged positive fixed point) is bracketed to the tolerance at 0."""
    loss = follow_until_lost(_fixed_point_family(lambda x, c: x + 0.3 * (c - x * x), 1.0),
                             lambda r, prediction: None if r.success and r.value > 0 else "not_converged",
                             lambda r: np.array([r.value]), 1.0, -0.5, 0.1, 1e-4, name="c")
    assert loss.status == "converged" and loss.criterion == "not_converged"
    alive, lost = loss.bracket
    assert lost < alive and alive - lost <= 1e-4 and lost <= 0.0 <= alive + 1e-4
    assert abs(loss.value) <= loss.error + 1e-4


def test_branch_stability_change():
    """x -> x + 0.5 (c x - x^2): the branch x = 0 has F' = 1 + c/2, stable for c < 0 only. Along it the
    warm-started solves report that spectrum, and followed until unstable it is lost at c = 0."""
    F = lambda x, c: x + 0.5 * (c * x - x * x)  # noqa: E731
    branch = WarmStarts(_fixed_point_family(F, 0.0), lambda r: np.array([r.value]), lambda r: r.success)
    controls = np.linspace(-1.0, 1.0, 8)  # avoids the marginal point c = 0
    results = [branch.at(c) for c in controls]
    assert np.allclose([r.spectral_radius for r in results], np.abs(1 + controls / 2), atol=1e-8)
    assert [r.stable for r in results] == [True] * 4 + [False] * 4
    loss = follow_until_lost(_fixed_point_family(F, 0.0), lambda r, p: None if r.success and r.stable else "unstable",
                             lambda r: np.array([r.value]), -1.0, 1.0, 0.25, 1e-6)
    assert loss.criterion == "unstable" and abs(loss.value) <= loss.error and loss.error <= 1e-6


def test_branch_jump_is_a_loss():
    """The fixed point r(c) of x -> (x + r(c)) / 2 jumps from 1 to 3 at c = 0.5: a solve that converges
    far from the continuation's prediction is another branch, and the jump is bracketed there."""

    def F(x, c):
        return 0.5 * (x + (1.0 if c < 0.5 else 3.0))

    def jumped(r, prediction):
        return "jumped" if prediction is not None and abs(r.value - prediction[0]) > 0.5 else None

    loss = follow_until_lost(_fixed_point_family(F, 1.0), jumped, lambda r: np.array([r.value]), 0.0, 1.0, 0.1,
                             0.1 / 2**10)
    assert loss.status == "converged" and loss.criterion == "jumped"
    assert loss.bracket[0] < 0.5 <= loss.bracket[1] and loss.bracket[1] - loss.bracket[0] <= 0.1 / 2**10
    np.testing.assert_allclose(loss.last_state, 1.0)
    alive = follow_until_lost(_fixed_point_family(F, 1.0), jumped, lambda r: np.array([r.value]), 0.0, 0.4, 0.1, 0.01)
    assert alive.status == "not_found" and alive.bracket == (0.0, 0.4) and math.isnan(alive.value)


def test_continuation_reaches_the_branch_a_cold_start_misses():
    """F(x, c) = x + 0.1 (c − x²)(x + 3) has the branch x = +√c (followed from the anchor c = 1), and −√c
    and −3. A cold start at x = −1.5 converges to one of the others; the continuation reaches +√c at every
    c it is asked for, and ends at the fold c = 0, where the loss is bracketed to the minimum step."""
    F = lambda x, c: x + 0.1 * (c - x * x) * (x + 3)  # noqa: E731
    family = _fixed_point_family(F, -1.5)
    cold = family(4.0, None)
    assert cold.success and cold.value < 0  # the cold start: another fixed point

    def lost(r, prediction):
        if not r.success:
            return "not_converged"
        if prediction is not None and abs(r.value - prediction[0]) > 0.1 * max(abs(prediction[0]), 0.1):
            return "jumped"
        return None

    branch = FollowedBranch(lambda c, guess, previous: family(c, guess), lost, lambda r: np.array([r.value]), 1.0,
                          max_step=0.5, min_step=1e-3, anchor_guess=1.0, name="c")
    for c in (4.0, 2.5, 0.3, 0.05):
        np.testing.assert_allclose(branch.at(c).value, math.sqrt(c), rtol=1e-8)
    assert branch.at(-0.2) is None
    loss = branch.loss(-0.2)
    assert loss.status == "converged" and loss.bracket[1] < loss.bracket[0]
    assert loss.bracket[1] <= 0.0 <= loss.bracket[0] + 1e-12 and loss.bracket[0] - loss.bracket[1] <= 1e-3 + 1e-12
    assert branch.loss(0.5) is None and branch.loss(-1.0) is loss  # alive on one side, lost beyond the fold
    solves = branch.solves
    assert branch.at(2.5).value == branch.path[2.5].value and branch.solves == solves  # kept, not solved again


def test_a_control_without_a_solution_inside_the_path_is_a_hole_not_the_branch_end():
    """x -> x + 0.5 (c − x) has the fixed point x = c, except at c = 0.5 exactly, where x -> x + 0.01 has none
    (as a quadrature rule whose map jumps can lack the fixed point at one control). Followed from c = 0 to
    c = 1, the path steps over 0.5; asked for 0.5 afterwards, the continuation tries the neighbours'
    interpolation and the nearer neighbour's state, then reports a hole there (status failed, bracketed by the
    neighbours) and the branch stays alive on both sides of it."""
    F = lambda x, c: x + 0.01 if c == 0.5 else x + 0.5 * (c - x)  # noqa: E731
    family = _fixed_point_family(F, 0.0)
    branch = FollowedBranch(lambda c, guess, previous: family(c, guess),
                          lambda r, p: None if r.success else "not_converged", lambda r: np.array([r.value]), 0.0,
                          max_step=0.25, min_step=0.01, anchor_guess=0.0, name="c")
    np.testing.assert_allclose(branch.at(1.0).value, 1.0, rtol=1e-8)
    assert 0.5 not in branch.path
    solves = branch.solves
    assert branch.at(0.5) is None and branch.solves == solves + 2
    hole = branch.loss(0.5)
    assert hole.status == "failed" and hole.bracket[0] < 0.5 < hole.bracket[1] and "inside the followed path" in hole.message
    for c in (0.45, 0.55, 0.9):  # alive on both sides of the hole, at controls not solved before
        np.testing.assert_allclose(branch.at(c).value, c, rtol=1e-8)
        assert branch.loss(c) is None
    assert branch.losses == {}  # no end of the branch was recorded


def test_a_requested_control_without_a_solution_is_a_hole_when_the_branch_goes_on_beyond_it():
    """The family of the test above, asked for c = 0.5 straight away (the path from the anchor ends there): the
    step onto 0.5 fails, one short step beyond it (BEYOND_STEPS minimum steps) succeeds, so 0.5 is a hole inside
    the path, found in a handful of solves rather than by halving the step down to min_step."""
    F = lambda x, c: x + 0.01 if c == 0.5 else x + 0.5 * (c - x)  # noqa: E731
    family = _fixed_point_family(F, 0.0)
    branch = FollowedBranch(lambda c, guess, previous: family(c, guess),
                          lambda r, p: None if r.success else "not_converged", lambda r: np.array([r.value]), 0.0,
                          max_step=0.25, min_step=0.01, anchor_guess=0.0, name="c")
    assert branch.at(0.5) is None
    hole = branch.loss(0.5)
    assert hole.status == "failed" and "inside the followed path" in hole.message
    assert hole.bracket[1] == pytest.approx(0.5 + BEYOND_STEPS * 0.01)
    # anchor, 0.25, the failed step onto 0.5, the step beyond, the two tries from the neighbours
    assert branch.solves == 6
    np.testing.assert_allclose(branch.at(0.52).value, 0.52, rtol=1e-8)
    assert branch.losses == {}


def test_a_branch_that_ends_before_the_requested_control_still_ends_there():
    """x -> x + 0.5 (c − x) for c < 0.5 and no fixed point from there on (x -> x + 0.01): the look beyond the
    requested c = 0.7 fails too, so the steps are halved down to min_step and the branch ends in [0.49, 0.5]."""
    F = lambda x, c: x + 0.01 if c >= 0.5 else x + 0.5 * (c - x)  # noqa: E731
    family = _fixed_point_family(F, 0.0)
    branch = FollowedBranch(lambda c, guess, previous: family(c, guess),
                          lambda r, p: None if r.success else "not_converged", lambda r: np.array([r.value]), 0.0,
                          max_step=0.25, min_step=0.01, anchor_guess=0.0, name="c")
    assert branch.at(0.7) is None
    end = branch.losses[1]
    assert end.status == "converged" and 0.49 <= end.bracket[0] < 0.5 <= end.bracket[1] <= 0.51
    assert branch.holes == {}


def test_a_requested_control_that_fails_is_not_solved_again_from_the_same_path():
    """The family of the test above (no fixed point from c = 0.5 on), followed to 0.45 and then asked for 0.6, within
    the maximum step: the step onto 0.6 fails, and so does the look beyond it; a halved step that still reaches 0.6
    would repeat that solve from the same path points, so 0.6 is solved once, and the branch ends in [0.49, 0.5] as
    before. Every solve is from a path point set not tried before at that control."""
    F = lambda x, c: x + 0.01 if c >= 0.5 else x + 0.5 * (c - x)  # noqa: E731
    family = _fixed_point_family(F, 0.0)
    tried = []

    def solve(c, guess, previous):
        tried.append((c, tuple(sorted(branch.path))))
        return family(c, guess)

    branch = FollowedBranch(solve, lambda r, p: None if r.success else "not_converged", lambda r: np.array([r.value]),
                          0.0, max_step=0.5, min_step=0.01, anchor_guess=0.0, name="c")
    np.testing.assert_allclose(branch.at(0.45).value, 0.45, rtol=1e-8)
    assert branch.at(0.6) is None
    assert [c for c, _ in tried].count(0.6) == 1
    assert len(set(tried)) == len(tried)
    end = branch.losses[1]
    assert end.status == "converged" and 0.49 <= end.bracket[0] < 0.5 <= end.bracket[1] <= 0.51


def test_continuation_without_a_solution_at_the_anchor_fails_everywhere():
    family = _fixed_point_family(lambda x, c: x + 0.3 * (c - x * x), 1.0)
    branch = FollowedBranch(lambda c, guess, previous: family(c, guess),
                          lambda r, p: None if r.success and r.value > 0 else "not_converged",
                          lambda r: np.array([r.value]), -1.0, max_step=0.5, min_step=0.01, anchor_guess=1.0)
    assert branch.at(2.0) is None and branch.loss(2.0).status == "failed" and "anchor" in branch.loss(2.0).message


def test_a_failed_anchor_falls_back_to_the_next_anchor_and_the_branch_is_followed_from_there():
    """x -> x + 0.3 (c − x²) has the fixed point √c for c > 0 only. Anchored at c = −1 with the fallback c = 1, the
    branch is anchored at 1 and followed to 4 and 0.25 (√c each); with the fallback c = −0.5 as well, both are named
    in the loss, which stays status failed (a failed start proves nothing)."""
    family = _fixed_point_family(lambda x, c: x + 0.3 * (c - x * x), 1.0)

    def branch(fallbacks):
        return FollowedBranch(lambda c, guess, previous: family(c, guess),
                            lambda r, p: None if r.success and r.value > 0 else "not_converged",
                            lambda r: np.array([r.value]), -1.0, max_step=0.5, min_step=0.01, anchor_guess=1.0,
                            fallback_anchors=fallbacks)

    rescued = branch([1.0])
    for c in (4.0, 0.25):
        np.testing.assert_allclose(rescued.at(c).value, math.sqrt(c), rtol=1e-8)
    assert rescued.anchor == 1.0 and rescued.loss(4.0) is None
    lost = branch([-0.5])
    assert lost.at(2.0) is None
    loss = lost.loss(2.0)
    assert loss.status == "failed" and "c = -1" in loss.message and "fallback anchor c = -0.5" in loss.message


def test_an_anchor_judged_absent_establishes_the_loss_and_one_undecided_anchor_does_not():
    """x -> x + 0.3 (c − x²) at c = −1 has no fixed point. Where the caller's criterion calls the failed solution
    "absent" at every anchor tried (its own evidence, e.g. the branch carried there collapsed), the loss is
    established (status converged, criterion "absent"); where one anchor only failed, it stays status failed."""
    family = _fixed_point_family(lambda x, c: x + 0.3 * (c - x * x), 1.0)

    def branch(verdict, fallbacks):
        return FollowedBranch(lambda c, guess, previous: family(c, guess),
                            lambda r, p: None if r.success and r.value > 0 else verdict(r),
                            lambda r: np.array([r.value]), -1.0, max_step=0.5, min_step=0.01, anchor_guess=1.0,
                            fallback_anchors=fallbacks)

    established = branch(lambda r: "absent", [-0.5])
    assert established.at(2.0) is None
    loss = established.loss(2.0)
    assert loss.status == "converged" and loss.criterion == "absent"
    verdicts = iter(["absent", "not_converged"])  # the anchor judged absent, the fallback only failed
    undecided = branch(lambda r: next(verdicts), [-0.5])
    assert undecided.at(2.0) is None and undecided.loss(2.0).status == "failed"


def test_an_absent_branch_is_not_found_everywhere_without_a_solve():
    """A branch known not to exist (`absent`, e.g. an order parameter without a source) is reported lost at
    every control with that reason (status converged: the loss is established, not a solver failure), and no
    solve is attempted, not even at the anchor."""
    def solve(c, guess, previous):
        raise AssertionError("an absent branch must not be solved")

    branch = FollowedBranch(solve, lambda r, p: None, lambda r: np.array([r.value]), 1.0, max_step=0.5, min_step=0.01,
                          anchor_guess=1.0, absent="the conjugate of x vanishes identically")
    for c in (0.0, 1.0, 3.0):
        assert branch.at(c) is None
        loss = branch.loss(c)
        assert loss.status == "converged" and loss.criterion == "absent" and loss.bracket is None
        assert "vanishes identically" in loss.message
    assert branch.solves == 0 and branch.path == {}
