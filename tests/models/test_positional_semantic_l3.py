"""Positional-vs-semantic attention at L = 3 tokens (6-D Gaussian averages): invariant sets for any A,
the global prox against a brute-force grid, and the free-energy identities at an L = 3 fixed point.

The L = 3 setting of the docs: A = 0.6 on the diagonal and 0.2 elsewhere (the L = 2 default's "0.6 to
itself, the rest shared"), encodings ±1/√d alternating (the default Gram matrix, as in the GD code).
All solves here use the 4-node rule (4^6 = 4096 points), the cheapest one that is meaningful.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from attnphase.api import positional_semantic as api
from attnphase.models.positional_semantic.state_evolution import tokens

A3 = [0.6, 0.2, 0.2, 0.2, 0.6, 0.2, 0.2, 0.2, 0.6]
THREE = api.Parameters.validated(omega=0.3, A=A3, L=3)
# Not token-reversal symmetric, to show that the invariant sets do not need any symmetry of A.
ASYMMETRIC = {2: api.Parameters.validated(omega=0.3, A=[0.3, 0.7, 0.8, 0.2]),
              3: api.Parameters.validated(omega=0.3, A=[0.5, 0.3, 0.2, 0.1, 0.6, 0.3, 0.2, 0.2, 0.6], L=3)}


@pytest.fixture(scope="module")
def positional_3():
    solution = api.solve_branch("positional", 1.25, THREE, nodes_per_dim=4, stability=False)
    assert solution.status == "converged"
    return solution


@pytest.mark.parametrize("L", [2, 3])
def test_m_zero_and_theta_zero_are_invariant_for_an_asymmetric_A(L):
    """m = 0 (semantic set) and θ = 0 (positional set) map to themselves to rounding for an A without any
    token symmetry: the loss is even in h and in h*, so g is odd in (ξ, η) at m = 0 and even in η at
    θ = 0, and the Gauss-Hermite rule is symmetric (ParameterSet.swap_symmetric is not needed)."""
    params = ASYMMETRIC[L]
    equations = api.SaddlePointEquations(params, 1.2, 8 if L == 2 else 4)
    rng = np.random.default_rng(5)
    for _ in range(2):
        q, V = rng.uniform(0.02, 0.3), rng.uniform(2, 30)
        theta = rng.uniform(-0.9, 0.9) * math.sqrt(params.rho * q)
        new = equations(api.state_vector(q, V, theta, np.zeros(L)))
        assert np.abs(new[3:]).max() <= 1e-14 * max(1.0, abs(new[0]))
        m = rng.uniform(-0.4, 0.4) * np.array(params.gram[:L])
        new = equations(api.state_vector(q, V, 0.0, m))
        assert abs(new[2]) <= 1e-14 * max(1.0, abs(new[0]))
        assert abs(new[3]) > 1e-4  # m itself is not trivially zero there


def test_prox_is_the_global_minimiser_for_three_tokens_against_a_brute_force_grid():
    """At random nodes with a large V (several local minima) the fused prox's minimum is at or below the
    minimum of the objective on a 61³ grid over [−4, 4]³, each polished by Nelder-Mead."""
    rng = np.random.default_rng(7)
    N, V = 6, 18.0
    w = rng.normal(size=(N, 3)) * 0.4 + 0.25 * np.array([1.0, -1.0, 1.0])
    hs = rng.normal(size=(N, 3)) * 0.5
    prox = api.proximal_map(w, hs, V, THREE)
    assert prox.converged.all()
    K = api.kernels(3)
    grid = np.linspace(-4, 4, 61)
    H = np.meshgrid(grid, grid, grid, indexing="ij")
    teacher = {"sigma": THREE.sigma, "omega": THREE.omega,
               **{f"A_{a + 1}_{b + 1}": THREE.A[3 * a + b] for a in range(3) for b in range(3)}}
    for i in range(N):
        fixed = K.objective.bind(**tokens("w", w[i]), **tokens("hs", hs[i]), V=V, **teacher)
        values = fixed(*H)
        j = np.unravel_index(np.argmin(values), values.shape)
        polished = optimize.minimize(lambda h: float(fixed(*h)), [g[j] for g in H],
                                     method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-15})
        assert prox.value[i] <= polished.fun + 1e-13
        assert prox.value[i] <= values.min() + 1e-13


def test_free_energy_of_the_order_parameters_equals_the_saddle_point_value_at_three_tokens(positional_3):
    """Φ(q, V, θ, m) with the conjugates eliminated (G_p⁺ of the rank-one alternating Gram matrix)
    equals the full saddle-point Φ at the L = 3 fixed point, to second order in its residual."""
    equations = api.SaddlePointEquations(THREE, 1.25, 4)
    x = positional_3.state
    evaluation = equations.evaluate(x)
    assert abs(equations.free_energy(x, evaluation) - equations.free_energy_of_state(x, evaluation.envelope)) < 1e-12
    # m lies along the encodings' Gram row (G_p has rank one): m = μ (1, −1, 1)
    assert np.allclose(x[3:], x[3] * np.array([1.0, -1.0, 1.0]), atol=1e-14)


def test_free_energy_alpha_derivative_equals_minus_envelope_at_three_tokens(positional_3):
    """dΦ/dα = −E[M] at an L = 3 fixed point, by central differences of solves at α ± h (the spread of
    the one-sided differences bounds the O(h²) error, as in the L = 2 test)."""
    alpha, h = 1.25, 0.05
    guess = api.BranchCoordinates("positional", THREE).from_state(positional_3.state)

    def phi(a):
        s = api.solve_branch("positional", a, THREE, nodes_per_dim=4, guess=guess, stability=False)
        assert s.status == "converged"
        return s.free_energy

    plus, minus = phi(alpha + h), phi(alpha - h)
    central = (plus - minus) / (2 * h)
    spread = abs((plus - positional_3.free_energy) / h - (positional_3.free_energy - minus) / h)
    assert abs(central + positional_3.envelope) <= spread / 2 + 1e-9 / h
    assert abs(central + positional_3.envelope) < 1e-2 * abs(positional_3.envelope)
