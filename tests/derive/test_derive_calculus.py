"""Symbolic gradient and Hessian of the matrix action against finite differences and closed forms.

    S(A) = 1/2 tr A^2 - log det(I + beta A) + sum_ij log(1 + exp(c A_ij))

for a general 3x3 A (9 free entries) and a symmetric 3x3 A (6 free entries, each off-diagonal symbol
shared by two entries). Finite differences are central, D(h) = (f(a + h) - f(a - h)) / 2h, whose
error is C h^2 + O(h^4) plus rounding ~ u |f| / h. Comparing two steps h and h/2 estimates the
truncation error of D(h/2) as |D(h) - D(h/2)| / 3 (Richardson); the tolerance is twice that plus
the rounding bound 8 u max|f| / h.
"""


import numpy as np
import pytest
import sympy

from attnphase.derive import calculus
from attnphase.derive.codegen import compile_kernel
from attnphase.derive.symbols import symbol_matrix

U = 2.0**-53


def matrix_action(A, beta, c):
    n = A.rows
    return (sympy.Rational(1, 2) * (A * A).trace() - calculus.logdet(sympy.eye(n) + beta * A)
            + sum(sympy.log(1 + sympy.exp(c * a)) for a in A))


def central_difference(f, x, k, h):
    step = np.zeros_like(x)
    step[k] = h
    return (f(x + step) - f(x - step)) / (2 * h)


def assert_matches_finite_differences(exact, f, x, k, h=1e-3):
    """exact ~ d f / d x_k at x; f may be vector-valued (then exact is a vector)."""
    d1, d2 = central_difference(f, x, k, h), central_difference(f, x, k, h / 2)
    truncation = np.abs(d1 - d2) / 3
    rounding = 8 * U * np.max(np.abs(f(x))) / (h / 2)
    tolerance = 2 * truncation + rounding
    assert np.all(tolerance < 1e-5), "finite differences too inaccurate to test anything"
    assert np.all(np.abs(exact - d2) <= tolerance), (k, exact, d2, tolerance)


@pytest.mark.parametrize("symmetric", [False, True], ids=["general", "symmetric"])
def test_gradient_and_hessian_of_the_matrix_action_match_finite_differences(symmetric):
    A = symbol_matrix("Afd", 3, symmetric=symmetric)
    beta, c = sympy.symbols("beta c", positive=True)
    S = matrix_action(A, beta, c)
    variables = calculus.flatten_variables(A)
    assert len(variables) == (6 if symmetric else 9)
    g = calculus.gradient(S, variables)
    H = calculus.hessian(S, variables)
    assert H == H.T
    n = len(variables)
    # torch backend: float64 like numpy, and no compilation to pay for in a test of the calculus.
    kernel = compile_kernel([S] + list(g) + list(H), variables + [beta, c], "torch")

    def evaluate(x):
        return kernel(*(float(v) for v in x), 0.7, 1.3).numpy()

    rng = np.random.default_rng(1 if symmetric else 2)
    x0 = rng.uniform(-0.4, 0.4, n)
    values = evaluate(x0)
    grad, hess = values[1:1 + n], values[1 + n:].reshape(n, n)
    for k in range(n):
        assert_matches_finite_differences(grad[k], lambda x: evaluate(x)[0], x0, k)
        assert_matches_finite_differences(hess[:, k], lambda x: evaluate(x)[1:1 + n], x0, k)


def test_matrix_gradient_of_the_general_action_equals_its_closed_form():
    """dS/dA = A^T - beta (I + beta A)^{-T} + c sigmoid(c A) (elementwise) for a general A."""
    A = symbol_matrix("Acf", 3)
    beta, c = sympy.Rational(7, 10), sympy.Rational(13, 10)
    G = calculus.matrix_gradient(matrix_action(A, beta, c), A)
    assert G.shape == (3, 3)
    rng = np.random.default_rng(3)
    a0 = rng.uniform(-0.4, 0.4, (3, 3))
    at = {A[i, j]: a0[i, j] for i in range(3) for j in range(3)}
    numeric = np.array(G.subs(at).evalf(20), dtype=float)
    b, cc = 0.7, 1.3
    closed = a0.T - b * np.linalg.inv(np.eye(3) + b * a0).T + cc / (1 + np.exp(-cc * a0))
    np.testing.assert_allclose(numeric, closed, rtol=1e-13, atol=1e-13)


def test_symmetric_matrix_gradient_counts_both_entries():
    """For symmetric A with shared off-diagonal symbols, d tr(A^2)/2 / dA_ij = 2 A_ij off the diagonal."""
    A = symbol_matrix("Asy", 3, symmetric=True)
    G = calculus.matrix_gradient((A * A).trace() / 2, A)
    for i in range(3):
        for j in range(3):
            assert sympy.expand(G[i, j] - (1 if i == j else 2) * A[i, j]) == 0


def test_jacobian_of_a_gradient_is_the_hessian():
    x, y = sympy.symbols("x y", real=True)
    f = sympy.exp(x * y) + sympy.log(1 + x**2) * y
    assert sympy.simplify(calculus.jacobian(calculus.gradient(f, [x, y]), [x, y]) - calculus.hessian(f, [x, y])) == sympy.zeros(2, 2)
    J = calculus.jacobian([x * y, x + y, x**2], [x, y])
    assert J == sympy.Matrix([[y, x], [1, 1], [2 * x, 0]])
