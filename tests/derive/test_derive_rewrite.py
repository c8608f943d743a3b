"""Stability rewrites: each rule fires on its pattern, and rewriting back / evaluating at random points
at 30 digits gives the original expression (relative 1e-25: both sides are evaluated to 30 digits)."""

import mpmath
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from attnphase.derive import rewrite as R
from attnphase.derive.codegen import compile_kernel
from attnphase.derive.rewrite import expm1, log1p, logaddexp, sigmoid, stabilize, unstabilize

x, y, z = sympy.symbols("x y z", real=True)
p = sympy.Symbol("p", positive=True)

# (rule, expression containing the pattern, expected result)
CASES = [
    (R.SOFTPLUS, 2 * sympy.log(1 + sympy.exp(3 * x)) + y, 2 * logaddexp(0, 3 * x) + y),
    (R.LOGSUMEXP, sympy.log(sympy.exp(x) + sympy.exp(y) + sympy.exp(z)), logaddexp(logaddexp(x, y), z)),
    (R.SIGMOID_RATIO, 3 * sympy.exp(2 * x) / (1 + sympy.exp(x)) ** 3, 3 * sigmoid(x) ** 2 * sigmoid(-x)),
    (R.SIGMOID, y / (1 + sympy.exp(-x)), y * sigmoid(x)),
    (R.SIGMOID_COMPLEMENT, (1 - sigmoid(x)) * y, y * sigmoid(-x)),
    (R.LOG1P, sympy.log(1 + x**2) - sympy.log(1 + p), log1p(x**2) - log1p(p)),
    (R.EXPM1, (sympy.exp(x * y) - 1) / x + 1 - sympy.exp(z), expm1(x * y) / x - expm1(z)),
]


def numerically_equal(a, b, point) -> bool:
    with mpmath.workdps(40):
        va = mpmath.mpf(sympy.N(a.xreplace(point), 30)._mpf_)
        vb = mpmath.mpf(sympy.N(b.xreplace(point), 30)._mpf_)
        return abs(va - vb) <= 1e-25 * max(abs(va), abs(vb), mpmath.mpf(1e-300))


coordinates = st.floats(-5, 5).filter(lambda v: abs(v) > 1e-3)


@pytest.mark.parametrize("rule, expr, expected", CASES, ids=[str(i) for i in range(len(CASES))])
def test_rule_fires_and_rewrites_back_to_the_original(rule, expr, expected):
    out = stabilize(expr, (rule,))
    assert out == expected
    assert sympy.simplify(sympy.expand(unstabilize(out) - expr)) == 0 or numerically_equal(
        unstabilize(out), expr, {x: sympy.Rational(3, 7), y: sympy.Rational(-5, 4), z: sympy.Rational(1, 3), p: 2})


# each example rewrites and evaluates every rule in exact arithmetic (about 0.1 s): a fifth of the profile
@settings(max_examples=max(1, settings.default.max_examples // 5))
@given(coordinates, coordinates, coordinates, st.floats(0.01, 5))
def test_all_rules_preserve_values_at_random_points(xv, yv, zv, pv):
    point = {x: sympy.Rational(xv), y: sympy.Rational(yv), z: sympy.Rational(zv), p: sympy.Rational(pv)}
    for _, expr, _ in CASES:
        assert numerically_equal(stabilize(expr), expr, point), expr


def test_default_rules_on_the_derivatives_of_softplus():
    softplus = sympy.log(1 + sympy.exp(x))
    assert stabilize(softplus) == logaddexp(0, x)
    assert stabilize(sympy.diff(softplus, x)) == sigmoid(x)
    assert stabilize(sympy.diff(softplus, x, 2)) == sigmoid(x) * sigmoid(-x)


def test_small_integer_powers_become_products_and_keep_their_value():
    original = x**3 + p**-2 + (x + y) ** 5
    out = stabilize(original, (R.SMALL_POWERS,))
    assert not any(isinstance(a, sympy.Pow) and a.base == x and a.exp == 3 for a in sympy.preorder_traversal(out))
    # The products are unevaluated SymPy objects; without CSE (which rebuilds, hence re-evaluates,
    # expressions) the generated mpmath kernel prints them as written.
    kernel = compile_kernel(out, [x, y, p], "mpmath", cse=False, stabilize=False, cache=False)
    assert "a0*a0*a0" in kernel.source
    with mpmath.workdps(40):
        value = kernel(mpmath.mpf(7) / 3, 1, mpmath.mpf(1) / 3)
        exact = mpmath.mpf(sympy.N(original.subs({x: sympy.Rational(7, 3), y: 1, p: sympy.Rational(1, 3)}), 35)._mpf_)
        assert abs(value - exact) <= 1e-35 * abs(exact)


def test_derivatives_of_the_stable_functions_are_exact():
    a, b = sympy.symbols("a b", real=True)
    point = {a: sympy.Rational(2, 3), b: sympy.Rational(-7, 5)}
    assert numerically_equal(sympy.diff(logaddexp(a, b), a), sympy.diff(sympy.log(sympy.exp(a) + sympy.exp(b)), a), point)
    assert numerically_equal(sympy.diff(logaddexp(a, b), b), sympy.diff(sympy.log(sympy.exp(a) + sympy.exp(b)), b), point)
    assert numerically_equal(sympy.diff(sigmoid(a), a), sympy.diff(1 / (1 + sympy.exp(-a)), a), point)
    assert logaddexp(-sympy.oo, a) == a and sigmoid(0) == sympy.Rational(1, 2)
