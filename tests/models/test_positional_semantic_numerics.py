"""Positional-vs-semantic numerics: the closed-form free energy of the order parameters, the
split-line quadrature of the Moreau envelope, the defect-corrected (accurate) branches and the
convergence study behind the threshold errors."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import sympy

from attnphase.api import positional_semantic as api
from attnphase.errors import ParameterError
from attnphase.models.positional_semantic import state_evolution
from attnphase.models.positional_semantic.state_evolution import tokens
from attnphase.numeric.minimize import minimize_multistart_newton
from attnphase.numeric.split_line import SplitLineRule

STANDARD = api.Parameters.validated(omega=0.3)
# The benchmark's reference fields at (ω, α) = (0.3, 1.25) (benchmarks/positional_semantic_references.py).
REFERENCE_FIELDS = json.loads((Path(__file__).parents[2] / "benchmarks" / "positional_semantic_reference.json")
                              .read_text())["fields(0.3,1.25)"]


@pytest.fixture(scope="module")
def positional_6():
    solution = api.solve_branch("positional", 1.25, STANDARD, nodes_per_dim=6, stability=False)
    assert solution.status == "converged"
    return solution


@pytest.fixture(scope="module")
def state_6(positional_6):
    """The 6-node fixed point at ω = 0.3, α = 1.25 of each pure branch (the positional one is positional_6's), solved
    once for the module's tests of the rules' symmetries."""
    def solved(branch):
        if branch == "positional":
            return positional_6.state
        solution = api.solve_branch(branch, 1.25, STANDARD, nodes_per_dim=6, stability=False)
        assert solution.status == "converged", solution.message
        return solution.state

    return functools.cache(solved)


def test_free_energy_of_the_order_parameters_equals_the_saddle_point_value(positional_6):
    """Eliminating the conjugates in closed form leaves Φ(q, V, θ, m); at a fixed point it equals the
    full saddle-point expression (the conjugates there solve the same stationarity conditions)."""
    equations = api.SaddlePointEquations(STANDARD, 1.25, 6)
    x = positional_6.state
    evaluation = equations.evaluate(x)
    full = equations.free_energy(x, evaluation)
    closed = equations.free_energy_of_state(x, evaluation.envelope)
    # The fixed point is converged to a residual ~1e-10 relative; Φ is stationary, so the two
    # expressions differ at second order in it.
    assert abs(full - closed) < 1e-12
    # away from the fixed point the two differ (the conjugates of the map are not the stationary ones)
    moved = x * np.array([1.2, 1.0, 1.0, 1.0, 1.0])
    ev_moved = equations.evaluate(moved)
    assert abs(equations.free_energy(moved, ev_moved) - equations.free_energy_of_state(moved, ev_moved.envelope)) > 1e-8


def test_split_line_envelope_equals_dense_line_integrals(positional_6):
    """The split-line rule on a 2-node outer rule (8 lines along ξ_1) against composite Simpson sums of
    the same lines on 2001 and 4001 points: the envelope M is continuous with kinks at the basin
    switches, so Simpson converges as h² there; the reference error is bounded by the change between
    the two resolutions."""
    x = positional_6.state
    rule = SplitLineRule(2, 32, 1e-11)
    split = api.SaddlePointEquations(STANDARD, 1.25, 6, split_rule=rule).averages(x)[1]
    outer_t, outer_w = np.polynomial.hermite_e.hermegauss(2)
    outer_w = outer_w / outer_w.sum()
    equations = api.SaddlePointEquations(STANDARD, 1.25, 6)

    def dense(n):
        t = np.linspace(-7.5, 7.5, n)
        simpson = np.ones(n)
        simpson[1:-1:2], simpson[2:-1:2] = 4, 2
        line_w = simpson * (t[1] - t[0]) / 3 * np.exp(-t**2 / 2) / math.sqrt(2 * math.pi)
        total = 0.0
        for i, a in enumerate(outer_t):
            for j, b in enumerate(outer_t):
                for k, c in enumerate(outer_t):
                    z = np.column_stack([t, np.full(n, a), np.full(n, b), np.full(n, c)])
                    w, hs, _ = equations.fields(x, z[:, :2], z[:, 2:])
                    prox = api.proximal_map(w, hs, x[1], STANDARD)
                    total += outer_w[i] * outer_w[j] * outer_w[k] * (line_w @ prox.value)
        return total

    coarse, fine = dense(2001), dense(4001)
    assert abs(split - fine) <= 4 * abs(fine - coarse) + 1e-12
    assert abs(fine - coarse) < 1e-8


@pytest.mark.parametrize("L", [2, 3])
def test_the_loss_is_even_in_h_and_separately_in_h_star(L):
    """The premise of the reflections of the split-line rules (SaddlePointEquations.reflections): ℓ(h, h*) =
    ℓ(−h, h*) = ℓ(h, −h*), symbolically, for every ω, σ, A."""
    from attnphase.models.positional_semantic import symbolic

    loss = symbolic.per_sample_loss(L)
    symbols = symbolic.token_symbols(L)
    for stem in ("h", "hs"):
        flipped = loss.xreplace({s: -s for s in symbols[stem]})
        assert sympy.expand(flipped - loss) == 0
    # and not trivially: flipping one field alone changes it (the cross scores h_1 h_2 change sign)
    one = loss.xreplace({symbols["h"][0]: -symbols["h"][0]})
    point = {s: v for s, v in zip(symbols["h"] + symbols["hs"], np.linspace(0.3, 1.1, 2 * L))}
    point.update({symbolic.omega: 0.3, symbolic.sigma: 0.5,
                  **{a: 1.0 / L for a in symbolic.mixing_matrix(L)}})
    assert abs(float((one - loss).subs(point))) > 1e-6


def test_the_loss_is_unchanged_when_the_tokens_are_exchanged_with_a_reversal_symmetric_A():
    """The premise of the token exchange on count-split planes (SaddlePointEquations.reflections): for L = 2,
    ℓ(P h, P h*) = ℓ(h, h*) with P the exchange of the two tokens when A_11 = A_22 and A_12 = A_21 (symbolically),
    and not for an A without that symmetry."""
    from attnphase.models.positional_semantic import symbolic

    loss = symbolic.per_sample_loss(2)
    symbols = symbolic.token_symbols(2)
    exchange = {}
    for stem in ("h", "hs"):
        first, second = symbols[stem]
        exchange.update({first: second, second: first})
    A = symbolic.mixing_matrix(2)
    a, b = sympy.symbols("a b", positive=True)
    symmetric = {A[0, 0]: a, A[1, 1]: a, A[0, 1]: b, A[1, 0]: b}
    exchanged = loss.xreplace(exchange)
    assert sympy.simplify((exchanged - loss).xreplace(symmetric)) == 0
    point = {s: v for s, v in zip(symbols["h"] + symbols["hs"], (0.3, 1.1, -0.4, 0.7))}
    point.update({symbolic.omega: 0.3, symbolic.sigma: 0.5, A[0, 0]: 0.9, A[0, 1]: 0.1, A[1, 0]: 0.4, A[1, 1]: 0.6})
    assert abs(float((exchanged - loss).subs(point))) > 1e-6


@pytest.mark.parametrize("branch", ["positional", "semantic"])
def test_the_token_exchange_makes_the_count_split_rule_symmetric_at_a_quarter_of_the_planes(branch, state_6):
    """On count-split planes (ξ_1, ξ_2) the exchange of the tokens joins the sign flip of the branch's set
    (reflections): the map is then exactly symmetric in the tokens (m̂_1 = ∓m̂_2, q̂_1 = q̂_2, ...; the rule that
    integrates every plane along ξ_1 is not, by its quadrature error), and it agrees with that rule within the
    count-split rules' own change from 4 to 6 outer nodes, at under half its minimisations."""
    x = state_6(branch)
    equations = api.Rule.count_split(4).equations(STANDARD, 1.25)
    assert [r.permutation for r in equations.reflections(x)] == [None, (1, 0, 3, 2)]
    folded = equations.evaluate(x)
    full = dataclasses.replace(equations, use_reflection=False).evaluate(x)
    finer = dataclasses.replace(api.Rule.count_split(6).equations(STANDARD, 1.25), use_reflection=False).evaluate(x)
    sign = -1.0 if branch == "positional" else 1.0
    for hat in (folded.qhat, folded.thetahat, folded.Vhat):
        assert hat[0] == pytest.approx(hat[1], rel=1e-13, abs=1e-300)
    assert folded.mhat[0] == pytest.approx(sign * folded.mhat[1], rel=1e-13, abs=1e-300)
    assert abs(full.qhat[0] - full.qhat[1]) > 1e-12 * abs(full.qhat[0])
    assert np.all(np.abs(folded.next - full.next) <= np.abs(finer.next - full.next) + 1e-15)
    assert folded.n_points < 0.5 * full.n_points
    # the sign flips alone on the split-line rules, where the exchange would map lines onto other lines
    assert [r.permutation for r in api.Rule.split_line(8).equations(STANDARD, 1.25).reflections(x)] == [None]


@pytest.mark.parametrize("branch", ["positional", "semantic"])
def test_a_reflected_split_line_rule_equals_the_full_rule_at_half_the_minimisations(branch, state_6):
    """On the invariant sets (θ = 0: η → −η; m = 0: z → −z) the line through the mirror node is the mirror
    image of the line integrated, so the reflected rule is the same rule: the map agrees with the one that
    integrates every line to rounding (the quadrature decisions are the same, mirrored), with exactly half the
    minimisations (8 outer nodes per dimension: no node is its own mirror)."""
    x = state_6(branch)
    equations = api.SaddlePointEquations(STANDARD, 1.25, 6, split_rule=SplitLineRule(8, 32, 1e-9))
    assert len(equations.reflections(x)) == 1
    reflected = equations.evaluate(x)
    full = dataclasses.replace(equations, use_reflection=False).evaluate(x)
    # the coordinates that vanish by symmetry (F_m on m = 0, F_θ on θ = 0) are exactly 0 on the reflected rule and
    # sums of ~1e5 terms of O(1) that cancel to rounding (~1e-13) on the full one
    np.testing.assert_allclose(reflected.next, full.next, rtol=1e-10, atol=1e-11)
    assert abs(reflected.envelope - full.envelope) <= 1e-12 * abs(full.envelope)
    assert 2 * reflected.n_points == full.n_points
    # off the invariant sets (m ≠ 0 and θ ≠ 0) there is no reflection
    assert equations.reflections(x + np.array([0.0, 0.0, 0.01, 0.02, -0.02])) == ()


# -- fused proximal map ---------------------------------------------------------------------------
def _teacher_arguments(params) -> dict:
    """The prox kernels' teacher arguments (σ, ω, A) by name."""
    L = params.L
    return {"sigma": params.sigma, "omega": params.omega,
            **{f"A_{i + 1}_{j + 1}": params.A[i * L + j] for i in range(L) for j in range(L)}}


def _vectorised_proximal_map(w, hs, V, params, extra_starts=(), starts=None):
    """The prox as computed before the fused loop: numeric.minimize's vectorised multi-start Newton on
    the generated kernels (an independent implementation of the same iteration)."""
    L = params.L
    K = api.kernels(L)
    teacher = _teacher_arguments(params)

    def arguments(x, rows):
        return {**tokens("h", x), **tokens("w", w[rows]), **tokens("hs", hs[rows]), "V": V, **teacher}

    def objective(x, rows):
        return K.objective.call(**arguments(x, rows))

    def gradient_hessian(x, rows):
        out = K.value_gradient_hessian.call(**arguments(x, rows))
        return out[:, 1:1 + L], out[:, 1 + L:].reshape(-1, L, L)

    if starts is None:
        starts = [np.zeros_like(w), w, w[:, ::-1], hs, -hs, *extra_starts]
    return minimize_multistart_newton(objective, gradient_hessian, np.stack(starts))


def _stall_radius(x, w, hs, V, params):
    """How far from the exact minimum near x (N, L) a run of the iteration may stop: the Armijo test keeps a
    rounding allowance of 8 eps |f|, so a run stalls once the step's decrease, ½ gᵀH⁻¹g, is below it, at a
    gradient up to sqrt(16 eps |f| λ_min) and a distance up to sqrt(16 eps |f| / λ_min) (λ_min: the Hessian's
    smallest eigenvalue there)."""
    L = params.L
    out = api.kernels(L).value_gradient_hessian.call(**tokens("h", x), **tokens("w", w), **tokens("hs", hs), V=V,
                                                     **_teacher_arguments(params))
    smallest = np.linalg.eigvalsh(out[:, 1 + L:].reshape(-1, L, L))[:, 0]
    return np.sqrt(16 * np.finfo(float).eps * np.abs(out[:, 0]) / smallest)


@pytest.mark.parametrize("theta", [0.0, 0.2])
def test_the_hats_by_parts_equal_the_direct_hats_for_a_smooth_envelope(theta):
    """symbolic.hat_integrands_by_parts against symbolic.hat_integrands: Gaussian integration by parts makes them the
    same averages for any envelope M(ω, h*) with g = −∂M/∂ω. With a smooth M, coupling the tokens and the fields, the
    25-node tensor Gauss-Hermite rule is exact to ~1e-13 for both, so the averages agree to that; θ ≠ 0 checks the
    part of each by-parts integrand that comes from h*'s dependence on ξ."""
    L, q, rho = 2, 0.3, 0.25
    m = np.array([0.1, -0.1])
    vstar = math.sqrt(rho - theta**2 / q)
    x, w = np.polynomial.hermite_e.hermegauss(25)
    w = w / w.sum()
    grid = np.stack(np.meshgrid(x, x, x, x, indexing="ij"), -1).reshape(-1, 4)
    weights = np.prod(np.stack(np.meshgrid(w, w, w, w, indexing="ij"), -1).reshape(-1, 4), axis=1)
    xi, eta = grid[:, :L], grid[:, L:]
    om, hs = m + math.sqrt(q) * xi, (theta / math.sqrt(q)) * xi + vstar * eta
    envelope = (np.sum(0.3 * om**2 + 0.5 * om * hs + np.sin(om) * np.cos(hs), axis=1) + 0.4 * om[:, 0] * om[:, 1] * hs[:, 1])
    dM = 0.6 * om + 0.5 * hs + np.cos(om) * np.cos(hs)  # ∂M/∂ω_ℓ, then the coupling term's share
    dM[:, 0] += 0.4 * om[:, 1] * hs[:, 1]
    dM[:, 1] += 0.4 * om[:, 0] * hs[:, 1]
    arguments = tokens("g", -dM) | tokens("xi", xi) | tokens("eta", eta)
    kernels = state_evolution.kernels(L)
    direct = weights @ np.asarray(kernels.hat_integrands.call(**arguments, q=q, theta=theta, rho=rho))
    by_parts = weights @ np.asarray(kernels.hat_integrands_by_parts.call(**arguments, M=envelope, q=q, theta=theta,
                                                                          rho=rho))
    assert np.allclose(by_parts, direct, rtol=0, atol=1e-11), (direct, by_parts)
    assert np.abs(direct).max() > 0.05  # the averages compared are not all zero


def test_fused_prox_equals_the_vectorised_multistart_newton():
    """Same iteration, two implementations (the same steps, in a different order of operations; the fused prox stops
    at steps below PROX_STEP_TOL = 1e-10, the vectorised one at 1e-13, each taking that last step, after which the
    quadratic iteration is exact to ~(1e-10)²): every start's end point agrees to 1e-12 plus
    twice the distance at which rounding stalls a run (`_stall_radius`: measured up to 5e-12 at V = 15, a weakly
    curved minimum), and the minimum value to rounding; small V (convex), large V (several local minima), one
    start (local continuation) and five. The minimiser is compared through the start each implementation picked:
    two starts can reach one minimum with values equal to rounding, and a rounding-level difference picks either."""
    rng = np.random.default_rng(11)
    N = 400
    rows = np.arange(N)
    w = rng.normal(size=(N, 2)) * 0.5 + np.array([0.25, -0.25])
    hs = rng.normal(size=(N, 2)) * 0.5
    for V in (1.0, 15.0, 30.0):
        fused = api.proximal_map(w, hs, V, STANDARD)
        reference = _vectorised_proximal_map(w, hs, V, STANDARD)
        assert fused.converged.all() and reference.converged.all()
        for k in range(len(reference.local_minima)):
            allowed = 1e-12 + 2 * _stall_radius(reference.local_minima[k], w, hs, V, STANDARD)
            assert np.all(np.abs(fused.local_minima[k] - reference.local_minima[k]).max(axis=1) <= allowed)
        picked = reference.local_minima[fused.start_index, rows]
        allowed = 1e-12 + 2 * _stall_radius(picked, w, hs, V, STANDARD)
        assert np.all(np.abs(fused.x - picked).max(axis=1) <= allowed)
        assert np.abs(fused.value - reference.value).max() <= 1e-15
        local = api.proximal_map(w, hs, V, STANDARD, starts=(w,))
        local_reference = _vectorised_proximal_map(w, hs, V, STANDARD, starts=(w,))
        allowed = 1e-12 + 2 * _stall_radius(local_reference.x, w, hs, V, STANDARD)
        assert np.all(np.abs(local.x - local_reference.x).max(axis=1) <= allowed)


def test_fused_prox_equals_the_vectorised_one_for_three_tokens():
    """L = 3 takes the general path (eigen-decomposition by cyclic Jacobi rotations inside the loop, the
    reference uses LAPACK; measured agreement 1.2e-12, so 1e-11 allows for the different eigenvector
    rounding)."""
    params = api.Parameters.validated(omega=0.3, A=[0.5, 0.3, 0.2, 0.3, 0.4, 0.3, 0.2, 0.3, 0.5], L=3)
    rng = np.random.default_rng(1)
    w, hs = rng.normal(size=(200, 3)) * 0.5, rng.normal(size=(200, 3)) * 0.5
    fused = api.proximal_map(w, hs, 15.0, params)
    reference = _vectorised_proximal_map(w, hs, 15.0, params)
    assert fused.converged.all()
    assert np.abs(fused.x - reference.x).max() <= 1e-11
    assert np.abs(fused.value - reference.value).max() <= 1e-15


def test_fused_prox_gives_the_same_fixed_point_as_the_vectorised_one(monkeypatch, positional_6):
    """The faster map changes no result: the 6-node positional fixed point (frozen basins, Anderson,
    global check) with the vectorised prox equals the fused one to 1e-12 (the maps agree to rounding,
    amplified by the solver's 1/(1 − ρ)), Φ to 1e-15."""
    monkeypatch.setattr(state_evolution, "proximal_map", _vectorised_proximal_map)
    reference = api.solve_branch("positional", 1.25, STANDARD, nodes_per_dim=6, stability=False)
    assert reference.status == "converged"
    assert np.abs(reference.state - positional_6.state).max() <= 1e-12
    assert abs(reference.free_energy - positional_6.free_energy) <= 1e-15


def test_free_energy_gradient_matches_finite_differences_in_V_and_m(positional_6):
    """∂Φ/∂V = −(q − σ²mᵀG⁺m − θ²/ρ)/(2V²) + ½Σq̂ and ∂Φ/∂m = −σ²G⁺m/V + m̂ hold node by node
    (∂M/∂V = −|g|²/2, ∂M/∂ω = −g exactly), so on a frozen-basin rule (Φ smooth) they equal central
    differences of free_energy_of_state to the differences' O(h²) error. Away from the fixed point,
    where the gradient is not zero."""
    equations = api.SaddlePointEquations(STANDARD, 1.25, 6)
    basins = equations.new_basins()
    x = positional_6.state * np.array([1.1, 0.9, 1.0, 1.0, 1.0]) + np.array([0.0, 0.0, 0.01, 0.02, -0.01])
    equations.reset_basins(basins, x)
    gradient = equations.free_energy_gradient(x, equations.evaluate(x, basins))
    for j in (1, 3, 4):
        h = 1e-5 * max(abs(x[j]), 0.01)
        e = np.zeros(len(x))
        e[j] = h
        central = (equations.free_energy_of_state(x + e, basins=basins)
                   - equations.free_energy_of_state(x - e, basins=basins)) / (2 * h)
        assert abs(central - gradient[j]) <= 1e-8 * max(abs(gradient[j]), 1e-3)


@pytest.mark.parametrize("kwargs", [{"omegas": []}, {"omegas": [0.1, 0.1]}, {"omegas": [1.5]}, {"omegas": [0.3], "tol": 0.0},
                                    {"omegas": [0.3], "which": ("alpha_x",)},
                                    {"omegas": [0.3], "A": [0.3, 0.7, 0.8, 0.2]},
                                    {"omegas": [0.3], "outer_split_check": "no"}])
def test_phase_curve_rejects_bad_input(kwargs):
    with pytest.raises(ParameterError):
        api.phase_curve(**kwargs)


def test_phase_curve_rejects_a_checkpoint_dir_that_is_a_file(tmp_path):
    (tmp_path / "taken").write_text("")
    with pytest.raises(ParameterError, match="checkpoint_dir"):
        api.phase_curve([0.4], rules=(6,), checkpoint_dir=tmp_path / "taken")


def test_an_interrupted_phase_curve_goes_on_from_its_last_finished_omega(tmp_path, monkeypatch):
    """With checkpoint_dir, the ω finished before an interruption are read back, not recomputed, and the curve
    continues from their stored branch states: every value equals that of an uninterrupted call."""
    from attnphase.jsonio import to_jsonable
    from attnphase.models.positional_semantic import curve as curve_module

    settings = dict(which=("alpha_c",), rules=(4, 6), tol=0.05)  # cheap rules: the values are not the point
    uninterrupted = api.phase_curve([0.4, 0.45], **settings)

    def interrupted(*args, **kwargs):  # the continuation from ω = 0.45 to 0.4
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(curve_module, "refine", interrupted)
        with pytest.raises(KeyboardInterrupt):
            api.phase_curve([0.4, 0.45], checkpoint_dir=tmp_path, **settings)
    fresh_searches = []
    real_threshold = curve_module.threshold
    monkeypatch.setattr(curve_module, "threshold", lambda *a, **k: fresh_searches.append(a[0]) or real_threshold(*a, **k))
    resumed = api.phase_curve([0.4, 0.45], checkpoint_dir=tmp_path, **settings)
    assert fresh_searches == []  # ω = 0.45 (a fresh search) was read back; 0.4 continued from its states
    assert "1 read back from" in resumed.message and resumed.as_dict()["read_back"] == [0.45]
    assert to_jsonable(resumed.rows()) == to_jsonable(uninterrupted.rows())
    other = api.phase_curve([0.45], checkpoint_dir=tmp_path, **{**settings, "tol": 0.04})
    assert fresh_searches == [0.45] and "read back" not in other.message  # other arguments: nothing reused


def test_an_interrupted_threshold_keeps_the_one_it_finished(tmp_path, monkeypatch):
    """With checkpoint_dir, α_c finished before an interruption during α_l is read back by the same call (named in
    `read_back`, the value that of a call without checkpoint_dir), and only α_l is searched again."""
    from attnphase.models.positional_semantic import thresholds as thresholds_module

    settings = dict(rules=(4, 6), tol=0.05)  # cheap rules: the values are not the point
    only_alpha_c = api.threshold(0.4, which=("alpha_c",), **settings)
    plain = only_alpha_c.alpha_c
    # the threshold not asked for was never searched: not_requested, not the not_found of a search (audit ps15)
    assert only_alpha_c.alpha_l.status == "not_requested" and only_alpha_c.alpha_l.message == "not requested"
    real_refine, refined = thresholds_module.refine, []

    def refine(name, *args, **kwargs):
        refined.append(name)
        if name == "alpha_l" and refined.count("alpha_l") == 1:
            raise KeyboardInterrupt
        return real_refine(name, *args, **kwargs)

    monkeypatch.setattr(thresholds_module, "refine", refine)
    with pytest.raises(KeyboardInterrupt):
        api.threshold(0.4, checkpoint_dir=tmp_path, **settings)
    resumed = api.threshold(0.4, checkpoint_dir=tmp_path, **settings)
    assert refined == ["alpha_c", "alpha_l", "alpha_l"]
    assert resumed.read_back == ("alpha_c",) and resumed.as_dict()["read_back"] == ["alpha_c"]
    assert "alpha_c read back from" in resumed.message  # the JSON's message says so too, not only stderr
    assert (resumed.alpha_c.value, resumed.alpha_c.error) == (plain.value, plain.error)
    assert resumed.alpha_l.status in ("converged", "limited") and math.isfinite(resumed.alpha_l.value)


def test_threshold_rejects_an_outer_split_check_that_is_not_a_bool():
    with pytest.raises(ParameterError, match="outer_split_check"):
        api.threshold(0.3, outer_split_check=1)


@pytest.mark.slow
def test_defect_correction_reaches_the_split_line_fixed_point(positional_6):
    """A fixed point on a split-line rung (Broyden from the tensor solution, preconditioned by the tensor
    map's Jacobian) lies within 2 RUNG_STEP_TOL (relative, floor 1e-3) of that rung's fixed point found again from
    it to a residual of 1e-11: Broyden stops where its predicted step is below RUNG_STEP_TOL, and that prediction
    is within a factor 2 of the distance while its inverse is within 50 % of (J − I)⁻¹. There the closed-form
    Φ(q, V, θ, m) equals the saddle-point Φ."""
    from attnphase.models.positional_semantic.accurate import RUNG_STEP_TOL

    rule = api.Rule.split_line(6)
    refined = api.on_rule(api.AccurateState(positional_6), STANDARD, rule)
    assert refined.solution.status == "converged"
    exact = api.defect_correction(refined.solution, STANDARD, rule, tol=1e-11, step_tol=None, inverse=refined.inverse,
                                  max_iter=30).solution
    assert exact.status == "converged" and exact.residual <= 1e-11
    x, x_exact = refined.solution.state, exact.state
    assert np.max(np.abs(x - x_exact) / np.maximum(np.abs(x_exact), 1e-3)) <= 2 * RUNG_STEP_TOL
    equations = rule.equations(STANDARD, 1.25)
    evaluation = equations.evaluate(x)
    assert abs(equations.free_energy_of_state(x, evaluation.envelope) - refined.solution.free_energy) < 1e-11


def test_an_outer_split_rule_is_named_by_its_node_counts_and_rejects_counts_and_floors_out_of_range():
    assert api.Rule.outer_split((20, 18)).label == "outer-split 20×18"
    with pytest.raises(ParameterError, match="nodes"):
        api.Rule.outer_split((20, 1))
    with pytest.raises(ParameterError, match="weight_floor"):
        api.Rule.outer_split((20, 18), weight_floor=1e-3)


@pytest.mark.slow
def test_outer_split_rule_gives_phi_to_1e8_where_the_plain_rules_oscillate_by_1e7():
    """ω = 0.3, α = 1.25, positional branch at its split-line-10 fixed point: E[M] on the outer-split rules
    (χ_2, ζ_2) = (16, 14) and (24, 18) (the reference rules of benchmarks/positional_semantic_references.py)
    agrees to 1e-8 in Φ, while the plain split-line rules 10, 12, 14 spread over ≥ 5e-8 (measured 1.85e-7:
    the outer Gauss-Hermite rule oscillates). (The outer split's convergence to an independent closed form
    is tests/numeric/test_split_line.py.) About 5 minutes."""
    start = api.solve_branch("positional", 1.25, STANDARD, nodes_per_dim=10, stability=False)
    state = api.AccurateState(start)
    for n in (8, 10):
        state = api.on_rule(state, STANDARD, api.Rule.split_line(n))
    x = state.solution.state
    plain = [api.Rule.split_line(n).equations(STANDARD, 1.25) for n in (10, 12, 14)]
    phis = [eq.free_energy_of_state(x, eq.envelope_average(x)) for eq in plain]
    split = []
    for nodes in ((16, 14), (24, 18)):
        eq = api.Rule.outer_split(nodes).equations(STANDARD, 1.25)
        split.append(eq.free_energy_of_state(x, eq.envelope_average(x)))
    assert abs(split[0] - split[1]) < 1e-8
    assert max(phis) - min(phis) > 5e-8
    assert abs(split[1] - phis[-1]) <= max(phis) - min(phis)  # the ladder's error bounds the top rung's


@pytest.mark.slow
def test_the_check_lines_accuracy_covers_panels_a_hundred_times_finer_and_every_node():
    """CHECK_PHI_ACCURACY against a recomputation: Φ of both branches at the reference states at ω = 0.3, α = 1.25 on
    the check rule (16, 14) as the check computes it and with its lines' panels to 1e-10 and the nodes below
    CHECK_WEIGHT_FLOOR kept (measured: ≤ 1e-10 apart here, 1.2e-9 at the worst of six ω of the default curve). About
    9 s."""
    from attnphase.models.positional_semantic.free_energy_check import (CHECK_LINE_PANEL_TOL, CHECK_PHI_ACCURACY,
                                                                         CHECK_WEIGHT_FLOOR, outer_split_free_energies)
    from attnphase.numeric.split_line import OUTER_WEIGHT_FLOOR
    fields = REFERENCE_FIELDS
    states = {"positional": api.state_vector(fields["positional"]["q"], fields["positional"]["V"], 0.0,
                                             [fields["positional"]["m"], -fields["positional"]["m"]]),
              "semantic": api.state_vector(fields["semantic"]["q"], fields["semantic"]["V"],
                                           fields["semantic"]["theta"], [0.0, 0.0])}
    assert CHECK_LINE_PANEL_TOL >= 100 * 1e-10 and CHECK_WEIGHT_FLOOR > OUTER_WEIGHT_FLOOR
    coarse = outer_split_free_energies(states, STANDARD, 1.25, (16, 14))
    fine = outer_split_free_energies(states, STANDARD, 1.25, (16, 14), line_panel_tol=1e-10,
                                     weight_floor=OUTER_WEIGHT_FLOOR)
    for branch in ("semantic", "positional"):
        assert abs(coarse.phi[branch] - fine.phi[branch]) <= CHECK_PHI_ACCURACY


def test_a_count_split_rule_with_more_probes_is_named_by_them_and_rejects_counts_out_of_range():
    assert api.Rule.count_split(10).label == "count-split 10"
    assert api.Rule.count_split(10, 128).label == "count-split 10 (128 probes)"
    with pytest.raises(ParameterError, match="probes"):
        api.Rule.count_split(10, 401)


@pytest.mark.slow
def test_the_ladders_count_split_lines_miss_windows_that_move_the_map_by_under_a_tenth_of_the_tolerance():
    """ω = 0.3, α = 1.25, semantic branch at the benchmark's reference state: the count-split-10 map with the ladder's
    32 probes per line against 128 probes. Windows of the other basin narrower than the probe spacing are integrated
    on the wrong basin with 32 probes, and the count split puts many lines just where they are (next to the cut where
    a pair of switches is born); the rungs' spread need not show it. Measured 2.6e-4 relative in V (the largest
    field), under FIELD_TOL / 10 = 3e-4, so the default solve's errors stand; a finer tolerance climbs 128-probe
    rungs, which narrow it without bounding it (docs/research, "Missed windows on the count-split lines"). About
    20 s."""
    fields = REFERENCE_FIELDS["semantic"]
    state = state_evolution.state_vector(fields["q"], fields["V"], fields["theta"], [0.0, 0.0])
    ladder = api.Rule.count_split(10).equations(STANDARD, 1.25).evaluate(state).next
    finer = api.Rule.count_split(10, 128).equations(STANDARD, 1.25).evaluate(state).next
    relative = np.abs(ladder[:3] - finer[:3]) / np.abs(finer[:3])
    assert np.all(relative < api.FIELD_TOL / 10), relative


def _independent_test_error(sigma: float, omega: float, q: float, theta: float, m: float, nodes: int) -> float:
    """ε_g = σ² E Σ_ℓ (t_ℓ − s_ℓ)² (spec §3, L = 2, the standard A) on a tensor Gauss-Hermite rule written here
    (numpy's hermegauss), in chunks of ξ₁."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / math.sqrt(2 * math.pi)
    sigmoid = lambda z: 0.5 * (1 + np.tanh(z / 2))  # noqa: E731
    rho = sigma**2
    vstar = math.sqrt(rho - theta**2 / q)
    xi2, eta1, eta2 = np.meshgrid(x, x, x, indexing="ij")
    weights = np.einsum("i,j,k->ijk", w, w, w)
    total = 0.0
    for x1, w1 in zip(x, w):
        h1, h2 = m + math.sqrt(q) * x1, -m + math.sqrt(q) * xi2
        hs1, hs2 = theta / math.sqrt(q) * x1 + vstar * eta1, theta / math.sqrt(q) * xi2 + vstar * eta2
        s1, s2 = sigmoid(h1 * (h1 - h2)), sigmoid(h2 * (h1 - h2))
        t1 = (1 - omega) * sigmoid(hs1 * (hs1 - hs2)) + omega * 0.6
        t2 = (1 - omega) * sigmoid(hs2 * (hs1 - hs2)) + omega * 0.4
        total += w1 * np.sum(weights * sigma**2 * ((t1 - s1) ** 2 + (t2 - s2) ** 2))
    return total


@pytest.mark.parametrize("sigma, state", [
    (1.0, (0.5431678670021469, 5.801717027958075, 0.7210551620384529, 0.0)),  # semantic, ω = 0.3, α = 1.25
    (0.5, (0.047091, 14.9009, 0.0, 0.252434)),  # positional
])
def test_the_test_error_and_its_quadrature_error_against_an_independent_rule(sigma, state):
    """At σ = 1 the fixed 16-node rule put ε_g 2.0e-6 (2.6e-4 relative) above its value, 23 times the error reported
    (an audit found the printed ε_g inconsistent with the printed state). Now ε_g climbs its own rules: against a
    tensor rule of 64 nodes written here (its error: its difference from 56 nodes), within the two errors, and the
    16-node value is outside them."""
    q, V, theta, m = state
    equations = state_evolution.SaddlePointEquations(api.Parameters(omega=0.3, sigma=sigma), 1.25, 8)
    value, error = equations.test_error_estimate(np.array([q, V, theta, m, -m]))
    reference = _independent_test_error(sigma, 0.3, q, theta, m, 64)
    reference_error = abs(reference - _independent_test_error(sigma, 0.3, q, theta, m, 56))
    assert abs(value - reference) <= error + reference_error, (value, reference, error, reference_error)
    assert error <= 1e-5 * value  # far below the fields' default tolerance, 0.3 %
    if sigma == 1.0:
        old = _independent_test_error(sigma, 0.3, q, theta, m, 16)
        assert abs(old - reference) > 10 * (error + reference_error)


@pytest.mark.parametrize("branch, guess", [("positional", [-0.01, 8.0, 0.2, -0.2]), ("semantic", [0.02, 15.0, 1.2])])
def test_a_start_outside_the_branchs_domain_is_a_failed_solve_not_an_exception(branch, guess):
    """A start extrapolated or carried from other parameters past q = 0 or |θ| = √(ρq) (λ = 0.1 and σ = 0.001 at
    ω = 0.3 had ended `solve` in a math domain error and in a refusal of a "state" the user never gave): the solve
    fails with the reason, so that a continuation halves its step or reports the branch missing."""
    solution = api.solve_branch(branch, 1.25, STANDARD, nodes_per_dim=6, guess=guess, stability=False)
    assert solution.status == "failed" and "outside the branch's domain" in solution.message
    assert solution.evaluations == 0 and math.isnan(solution.q)


def _carried(ts, order_parameters, lost_at, branch="positional"):
    """A stand-in for a carry (`branches.carry`) lost between the last of `ts` and `lost_at`: its path's solutions
    have the given |m| (positional) or θ (semantic)."""
    from types import SimpleNamespace

    from attnphase.numeric.branches import BranchLoss
    from attnphase.results import Status

    def solution(size):
        state = np.array([0.01, 5.0, 0.0, size, -size] if branch == "positional" else [0.01, 5.0, size])
        return SimpleNamespace(state=state, theta=state[2])

    scale = 1 / math.sqrt(2) if branch == "positional" else 1.0  # |m| is the norm of (m, −m)
    path = {t: solution(scale * size) for t, size in zip(ts, order_parameters)}
    loss = BranchLoss(0.5 * (ts[-1] + lost_at), 0.5 * (lost_at - ts[-1]), Status.CONVERGED, "lost", (ts[-1], lost_at),
                      "jumped")
    return SimpleNamespace(path=path, loss=lambda t: loss)


@pytest.mark.parametrize("branch", ["positional", "semantic"])
def test_a_carry_whose_order_parameter_falls_like_a_square_root_ends_continuously_where_it_extrapolates_to_zero(branch):
    """m² = c (t_e − t) along the path: the end is the zero of the line through the last two points, exactly; with a
    small m⁴ term the two lines' zeros differ by the error. The positional branch's measured carry at ω = 0.3,
    α = 0.3 towards σ = 0.3, λ = 0.1 (m = 0.042789, 0.035717, 0.028223 at t = 0.31965, 0.32382, 0.32773) ends at
    0.3342 ± 0.0008 (the zeros through those pairs by hand: 0.33340 and 0.33423)."""
    from attnphase.models.positional_semantic.tensor_following import continuous_end_on_path

    ts = [0.2, 0.25, 0.28]
    end, error = continuous_end_on_path(_carried(ts, [math.sqrt(0.5 * (0.3 - t)) for t in ts], 0.29, branch), branch)
    assert end == pytest.approx(0.3, abs=1e-12) and error < 1e-12
    sizes = [math.sqrt((0.3 - t) + (0.3 - t) ** 2) for t in ts]
    end, error = continuous_end_on_path(_carried(ts, sizes, 0.29, branch), branch)
    assert abs(end - 0.3) <= error
    measured = _carried([0.31965, 0.32382, 0.32773], [0.042789, 0.035717, 0.028223], 0.33163, branch)
    end, error = continuous_end_on_path(measured, branch)
    assert end == pytest.approx(0.33423, abs=2e-5) and error == pytest.approx(0.33423 - 0.33340, abs=4e-5)


@pytest.mark.parametrize("sizes, why", [
    ([0.3, 0.29, 0.2], "falls ever faster (a fold ahead): the two zeros disagree"),
    ([0.181, 0.18, 0.179], "barely falls: its zero lies far beyond the last step (σ = 1's carry, m ≈ 0.18)"),
    ([0.1, 0.12, 0.05], "rises, then falls: no square-root law"),
])
def test_a_carry_lost_without_a_square_root_fall_is_not_a_continuous_end(sizes, why):
    from attnphase.models.positional_semantic.tensor_following import continuous_end_on_path

    assert continuous_end_on_path(_carried([0.2, 0.25, 0.28], sizes, 0.29), "positional") is None, why
