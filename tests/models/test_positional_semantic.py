"""Positional-vs-semantic attention: reference values, limits, invariant sets, the global prox and
free-energy identities (spec positional_semantic.md §5, §7)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import optimize

from attnphase.api import positional_semantic as api
from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.state_evolution import tokens
from attnphase.numeric.gauss import gaussian_expectation

STANDARD = api.Parameters.validated(omega=0.3)
TEACHER = {"sigma": 0.5, "omega": 0.3, "A_1_1": 0.6, "A_1_2": 0.4, "A_2_1": 0.4, "A_2_2": 0.6}


# -- linear baseline (spec §7: quoted to 6 significant digits) ---------------------------------------
@pytest.mark.parametrize(
    "sigma, reference, digits",
    [(0.5, 0.00402323, 6), (0.3, 0.00025430, 5), (0.7, 0.0188218, 6), (1.0, 0.0743482, 6)],
)
def test_linear_baseline_matches_reference(sigma, reference, digits):
    for omega in (0.0, 0.3):
        result = api.linear_baseline_error(omega, sigma)
        expected = reference * (1 - omega) ** 2
        # the reference is rounded to its last quoted digit: half a unit there is the tolerance
        half_unit = 0.5 * 10 ** (math.floor(math.log10(reference)) - digits + 1)
        assert abs(result.value - expected) <= half_unit * (1 - omega) ** 2 + result.error


def test_linear_baseline_variance_of_sigmoid():
    """Spec §7: Var[sigmoid(h1(h1 − h2))] = 0.00804647 at σ = 0.5 (relative accuracy ≤ 1e-5)."""
    result = api.linear_baseline_error(0.0, 0.5)
    variance = result.value / (2 * 0.5**2)
    assert abs(variance / 0.00804647 - 1) < 1e-5


@functools.lru_cache(maxsize=None)
def alpha_zero_limit():
    """ε_g of the student Q = 0 (uniform attention) at ω = 0.3, σ = 0.5: the test-error kernel at h = 0 averaged over
    the teacher fields h* ~ N(0, σ² I_2) (`gaussian_expectation` to 1e-14, with its error)."""
    K = api.kernels(2)
    zero = lambda z: K.loss.call(**tokens("h", 0 * z), **tokens("hs", z), **TEACHER)
    return gaussian_expectation(zero, np.zeros(2), 0.25 * np.eye(2), tol=1e-14)


def test_alpha_to_zero_limit():
    """A student with Q = 0 predicts uniform attention: ε_g → 0.0044145 (ω = 0.3, σ = 0.5, spec §7).

    Evaluated two ways: the test-error kernel at q → 0, and the closed form
    σ² Σ_ℓ [(1−ω)² Var s + (E t_ℓ − ½)²] with Gaussian averages of the attention kernel.
    """
    K = api.kernels(2)
    cov = 0.25 * np.eye(2)
    direct = alpha_zero_limit()
    s1 = lambda z: K.attention.call(**tokens("hs", z))[:, 0]
    mean = gaussian_expectation(s1, np.zeros(2), cov, tol=1e-14).value
    var = gaussian_expectation(lambda z: (s1(z) - mean) ** 2, np.zeros(2), cov, tol=1e-14).value
    t1, t2 = 0.7 * mean + 0.3 * 0.6, 0.7 * (1 - mean) + 0.3 * 0.4
    closed = 0.25 * (2 * 0.49 * var + (t1 - 0.5) ** 2 + (t2 - 0.5) ** 2)
    assert abs(direct.value - closed) < 1e-14
    # The spec quotes 0.0044145; the converged value 0.00441456 shows the quote is truncated, not
    # rounded, so the tolerance is one unit (not half a unit) of the last quoted digit.
    assert abs(direct.value - 0.0044145) <= 1e-7


def test_trivial_branch_approaches_the_alpha_zero_limit():
    """Along the trivial branch ε_g(α) → ε_g(0) linearly: two small α extrapolate to the limit. The limit is the test
    error's own rules evaluated at q → 0, which removes their error from the extrapolation; it lies within its error
    estimate and that of the Gaussian expectation at Q = 0 (`alpha_zero_limit`, checked against the closed form by
    `test_alpha_to_zero_limit`) of the true limit."""
    eq = api.SaddlePointEquations(STANDARD, 0.02, 6)
    rule_limit, rule_error = eq.test_error_estimate(np.array([1e-18, 25.0, 0.0, 0.0, 0.0]))
    limit = alpha_zero_limit()
    values = []
    for a in (0.01, 0.02):
        s = api.solve_branch("trivial", a, STANDARD, nodes_per_dim=6, stability=False)
        assert s.status == "converged"
        values.append(s.test_error)
    extrapolated = 2 * values[0] - values[1]
    curvature = abs(values[1] - 2 * values[0] + rule_limit)  # second difference: size of the O(α²) term
    assert abs(extrapolated - rule_limit) <= 3 * curvature + 1e-9
    assert abs(rule_limit - limit.value) <= rule_error + limit.error


# -- invariant sets -------------------------------------------------------------------------------
def test_positional_invariant_set_theta_zero():
    rng = np.random.default_rng(1)
    eq = api.SaddlePointEquations(STANDARD, 1.2, 8)
    for _ in range(2):
        q, V, m = rng.uniform(0.02, 0.3), rng.uniform(2, 30), rng.uniform(-0.5, 0.5)
        new = eq(api.state_vector(q, V, 0.0, [m, -m]))
        assert abs(new[2]) <= 1e-14 * max(1.0, abs(new[0]))


def test_semantic_invariant_set_m_zero():
    rng = np.random.default_rng(2)
    eq = api.SaddlePointEquations(STANDARD, 1.2, 8)
    for _ in range(2):
        q, V = rng.uniform(0.02, 0.3), rng.uniform(2, 30)
        theta = rng.uniform(-0.9, 0.9) * math.sqrt(STANDARD.rho * q)
        new = eq(api.state_vector(q, V, theta, [0.0, 0.0]))
        assert np.abs(new[3:]).max() <= 1e-14 * max(1.0, abs(new[0]))


def test_at_omega_one_the_map_removes_theta_and_the_semantic_branch_is_not_found():
    """At ω = 1 the teacher y = A x does not depend on Q*, so E[g η] = 0 and one step of the map sends any
    θ to 0 (checked on the tensor rule and on split-line 8, from states with |c| up to 0.9); `solve` and
    `threshold` report the semantic branch, α_c and α_l as not found with that reason (not as failures).
    On the tensor rule θ̂ averages g η over a rule symmetric in η: zero to rounding. On split-line 8 θ̂ is taken by
    parts, M against ξη and c(η² − 1), whose terms cancel between the lines through η and −η only as far as those
    lines' adaptive integrals agree, i.e. to their panel tolerance (rules.LINE_PANEL_TOL, 1e-9; measured 1.4e-10
    relative)."""
    from attnphase.models.positional_semantic.rules import LINE_PANEL_TOL
    params = api.Parameters.validated(omega=1.0)
    rng = np.random.default_rng(3)
    for equations, relative in ((api.SaddlePointEquations(params, 3.0, 10), 1e-12),
                                (api.Rule.split_line(8).equations(params, 3.0), LINE_PANEL_TOL)):
        for _ in range(2):
            q, V = rng.uniform(0.05, 0.3), rng.uniform(2, 30)
            theta = rng.uniform(0.3, 0.9) * math.sqrt(params.rho * q)
            new = equations(api.state_vector(q, V, theta, [0.0, 0.0]))
            assert abs(new[2]) <= relative * abs(theta)
    solved = api.solve(1.0, 2.0, branches=("semantic",))
    assert not solved.branches and [m.status for m in solved.missing] == ["not_found"]
    assert "does not depend on Q*" in solved.missing[0].message
    thresholds = api.threshold(1.0)
    for found in (thresholds.alpha_c, thresholds.alpha_l):
        assert found.status == "not_found" and "does not depend on Q*" in found.message


@pytest.mark.slow
def test_just_below_omega_one_the_semantic_branch_of_the_tensor_rule_is_not_solved_on_split_line_rules():
    """At ω = 0.9 the tensor rule has a semantic fixed point from α = 3 up to α = 6 and beyond, split-line 8 has none
    at α = 3. Asked for α = 3 and 6, the semantic anchor moves to 6, where the cold start leaves the domain, falls
    back to α = 3 and follows the tensor path from there: both α report that split-line 8 has no solution at that
    anchor, not a failed cold start at 6. The status is `failed`: a solve that does not converge is no evidence that
    the branch is absent (~35 s)."""
    for result in api.solve_along(0.9, (3.0, 6.0), branches=("semantic",)):
        assert not result.branches and [m.status for m in result.missing] == ["failed"]
        message = result.missing[0].message
        assert "split-line 8 does not" in message and "anchor α = 3" in message, message


# -- the proximal map is the global minimiser -----------------------------------------------------
def test_prox_is_global_minimiser_against_brute_force_grid():
    rng = np.random.default_rng(3)
    N = 40
    V = 15.0  # large V: the Moreau objective is far from convex, several local minima
    w = rng.normal(size=(N, 2)) * 0.4 + np.array([0.3, -0.3])
    hs = rng.normal(size=(N, 2)) * 0.5
    prox = api.proximal_map(w, hs, V, STANDARD)
    assert prox.converged.all()
    K = api.kernels(2)
    grid = np.linspace(-5, 5, 401)
    H1, H2 = np.meshgrid(grid, grid, indexing="ij")
    for i in range(N):
        fixed = K.objective.bind(**tokens("w", w[i]), **tokens("hs", hs[i]), V=V, **TEACHER)
        values = fixed(H1, H2)
        j = np.unravel_index(np.argmin(values), values.shape)
        polished = optimize.minimize(lambda h: float(fixed(h[0], h[1])), [H1[j], H2[j]],
                                     method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-15})
        assert prox.value[i] <= polished.fun + 1e-13
        assert prox.value[i] <= values.min() + 1e-13


# -- free-energy identity -------------------------------------------------------------------------
def test_free_energy_alpha_derivative_equals_minus_envelope():
    """dΦ/dα = ∂Φ/∂α = −E[M] at a fixed point (Φ is stationary in every order parameter)."""
    alpha, n = 1.25, 8
    base = api.solve_branch("positional", alpha, STANDARD, nodes_per_dim=n, stability=False)
    assert base.status == "converged"
    coords = api.BranchCoordinates("positional", STANDARD)
    guess = coords.from_state(base.state)

    def phi(a):
        s = api.solve_branch("positional", a, STANDARD, nodes_per_dim=n, guess=guess, stability=False)
        assert s.status == "converged"
        return s.free_energy

    envelope = api.SaddlePointEquations(STANDARD, alpha, n).evaluate(base.state).envelope
    h = 0.05
    plus, minus = phi(alpha + h), phi(alpha - h)
    central = (plus - minus) / (2 * h)
    # |forward - backward| = h |Phi''| + O(h^2) bounds the O(h^2 Phi''') error of the central
    # difference (with margin whenever h |Phi'''| < 3 |Phi''|); the fixed points are accurate to
    # 1e-8, which moves the stationary Phi at second order only.
    spread = abs((plus - base.free_energy) / h - (base.free_energy - minus) / h)
    assert abs(central + envelope) <= spread / 2 + 1e-9 / h
    assert abs(central + envelope) < 1e-2 * abs(envelope)


# -- parameter validation -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [dict(omega=1.5), dict(omega=-0.1), dict(omega=0.3, sigma=0.0), dict(omega=0.3, L=1),
     dict(omega=0.3, A=[0.5, 0.4, 0.4, 0.6]), dict(omega=0.3, A=[0.6, 0.4]), dict(omega=float("nan"))],
)
def test_bad_parameters_raise(kwargs):
    with pytest.raises(ParameterError):
        api.Parameters.validated(**kwargs)


def test_bad_alpha_raises():
    for alpha in (0.0, api.MAX_ALPHA * 1.01, 1e300):
        with pytest.raises(ParameterError) as info:
            api.solve(0.3, alpha)
        assert info.value.name == "alpha"


def test_the_branches_asked_are_each_named_once():
    for branches in ((), ("positional", "positional")):
        with pytest.raises(ParameterError) as info:
            api.solve(0.3, 1.0, branches=branches)
        assert info.value.name == "branches"


def test_solve_along_rejects_a_bad_alpha_at_the_call_before_any_work():
    """The α values are checked when solve_along is called, not when its results are first iterated."""
    with pytest.raises(ParameterError, match="alpha"):
        api.solve_along(0.3, [1.0, -0.5])
    with pytest.raises(ParameterError, match="alphas"):
        api.solve_along(0.3, [])
    with pytest.raises(ParameterError, match="alpha"):
        api.solve_along(0.3, "abc")


def test_solve_along_gives_each_alpha_what_solve_gives_it():
    """On a tensor-only ladder (cheap): the branches followed once across α = 1.0, 1.5, 2.0 are the fixed points
    `solve` finds at each α on its own (paths from the anchors to that α alone), to the fixed-point tolerance."""
    alphas = (1.0, 1.5, 2.0)
    along = list(api.solve_along(0.3, alphas, rules=(4, 6), stability=False))
    assert len(along) == len(alphas)
    for alpha, shared in zip(alphas, along):
        alone = api.solve(0.3, alpha, rules=(4, 6), stability=False)
        assert [b.branch for b in shared.branches] == [b.branch for b in alone.branches] == ["positional", "semantic"]
        for a, b in zip(shared.branches, alone.branches):
            assert a.alpha == b.alpha == alpha
            np.testing.assert_allclose(a.state, b.state, rtol=1e-6, atol=1e-9)
            assert a.errors["V"] == pytest.approx(b.errors["V"], rel=1e-3, abs=1e-9)


def test_public_helpers_check_their_arguments():
    """default_gram, count_line_probes and state_vector (in the documented API's __all__) gave bare TypeErrors (L =
    NaN, tol = None), silent empty or wrong results (L = -1 -> (), L = True -> (1.0,), tol = NaN -> 32 probes, q = NaN
    -> a NaN entry, m = [] -> 3 entries) and did not return at L = 2**70 (L is now checked before anything is built).
    In range they are what they were: the alternating Gram matrix, the probe counts, the concatenated state."""
    import time

    from attnphase.models.positional_semantic.rules import FINE_LINE_PROBES, LINE_PROBES

    calls = [(lambda L=L: api.default_gram(L=L), "L") for L in (math.nan, "x", None, [], -1, 0, 1, 7, True, 2**70)]
    calls += [(lambda t=t: api.count_line_probes(tol=t, default_tol=3e-3), "tol")
              for t in (math.nan, math.inf, -1.0, 0.0, None, True)]
    calls += [(lambda: api.count_line_probes(tol=1e-3, default_tol=math.nan), "default_tol")]
    calls += [(lambda: api.state_vector(q=math.nan, V=0.2, theta=0.1, m=[0.3, -0.3]), "q"),
              (lambda: api.state_vector(q=None, V=0.2, theta=0.1, m=[0.3, -0.3]), "q"),
              (lambda: api.state_vector(q=0.5, V=math.inf, theta=0.1, m=[0.3, -0.3]), "V"),
              (lambda: api.state_vector(q=0.5, V=0.2, theta=True, m=[0.3, -0.3]), "theta")]
    calls += [(lambda m=m: api.state_vector(q=0.5, V=0.2, theta=0.1, m=m), "m")
              for m in ([], 0.3, [0.1] * 7, [0.1, math.nan], [[0.1, 0.2], [0.3]], None)]
    start = time.monotonic()
    for call, name in calls:
        with pytest.raises(ParameterError) as info:
            call()
        assert info.value.name == name, (name, info.value)
    assert time.monotonic() - start < 5  # L = 2**70 is refused, not built
    assert api.default_gram(2) == (1.0, -1.0, -1.0, 1.0)
    assert api.default_gram(3) == (1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0)
    assert api.count_line_probes(1e-3, 3e-3) == FINE_LINE_PROBES and api.count_line_probes(3e-3, 3e-3) == LINE_PROBES
    assert api.state_vector(0.5, 0.2, 0.1, [0.3, -0.3]).tolist() == [0.5, 0.2, 0.1, 0.3, -0.3]
