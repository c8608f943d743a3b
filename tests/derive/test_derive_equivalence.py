"""derive.equivalence: equal expressions are confirmed (symbolically or at random points in high precision),
unequal ones are rejected, however small the difference, and declared domains are respected."""

import pytest
import sympy

from attnphase.derive.equivalence import check_document, equivalent, normalise_expectations
from attnphase.derive.render import Expectation, MarkdownDocument
from attnphase.derive.symbols import Domain, parameter

x, y = sympy.symbols("x y", real=True)
a, b = sympy.symbols("a b", positive=True)


def test_identical_expressions_need_no_work():
    result = equivalent(sympy.exp(x) + y, y + sympy.exp(x))
    assert result.success and result.method == "identical"


def test_small_identities_are_decided_by_simplify():
    result = equivalent(sympy.sin(x) ** 2 + sympy.cos(x) ** 2, 1)
    assert result.success and result.method == "symbolic"


def test_large_identities_are_confirmed_at_random_points():
    # (1 + e^{-x})^{-1} written two ways, summed over enough terms that simplify is not tried
    left = sum(1 / (1 + sympy.exp(-n * x * y)) * sympy.log(1 + a * n) for n in range(1, 9))
    right = sum(sympy.exp(n * x * y) / (sympy.exp(n * x * y) + 1) * sympy.log(1 + a * n) for n in range(1, 9))
    result = equivalent(left, right)
    assert result.success and result.method == "points" and result.points == 6
    assert result.max_relative_difference < 1e-40


@pytest.mark.parametrize("relative_change", [1e-3, 1e-12, 1e-25, 1e-29])
def test_a_tiny_change_is_rejected(relative_change):
    # 50 digits with 20 kept for cancellation: agreement is required to 1e-30 (1e-29: a factor 10 above that bar)
    expr = sum(sympy.exp(n * x) / (1 + a * n) for n in range(1, 9))
    result = equivalent(expr, expr * (1 + sympy.Float(relative_change, 60)))
    assert not result.success and result.method == "points" and "differ at" in result.message


def test_a_change_below_the_required_agreement_is_accepted():
    """The other side of the 1e-30 bar: a relative change of 1e-32 lies within the 20 digits left for cancellation, so
    the two sides are equal at the random points. The change is seen (it is not structurally the same expression, and
    the largest relative difference, at points where |expr| ≥ 1, is the change itself), and accepted."""
    expr = sum(sympy.exp(n * x) / (1 + a * n) for n in range(1, 9))
    result = equivalent(expr, expr * (1 + sympy.Float(1e-32, 60)))
    assert result.success and result.method == "points" and result.points == 6
    assert 0 < result.max_relative_difference <= 1e-32 * (1 + 1e-9)


def test_different_functions_are_rejected():
    assert not equivalent(sympy.exp(x), 1 + x + x**2 / 2).success


def test_an_identity_that_holds_only_for_positive_symbols_is_checked_on_the_real_line():
    u, v = sympy.symbols("u v", real=True)
    # sqrt(u) sqrt(v) = sqrt(uv) fails when u, v < 0 (both sides are then real and opposite)
    assert not equivalent(sympy.sqrt(u) * sympy.sqrt(v), sympy.sqrt(u * v), points=12).success
    assert equivalent(sympy.sqrt(a) * sympy.sqrt(b), sympy.sqrt(a * b)).success


def test_declared_domains_are_respected():
    fraction = parameter("fraction_equivalence", Domain.interval(0, 1, high_open=True))
    # floor(x) = 0 only on [0, 1): equal because every point is drawn inside the declared domain
    result = equivalent(sympy.floor(fraction) + sympy.exp(fraction), sympy.exp(fraction))
    assert result.success and result.method == "points"
    wider = parameter("wider_equivalence", Domain.interval(0, 3))
    assert not equivalent(sympy.floor(wider) + sympy.exp(wider), sympy.exp(wider)).success


def test_expectations_are_compared_linearly_and_only_linearly():
    g, xi = sympy.symbols("g xi", real=True)
    q = sympy.Symbol("q", positive=True)
    assert equivalent(-Expectation(g * xi, g, xi) / sympy.sqrt(q), Expectation(-g * xi / sympy.sqrt(q), g, xi)).success
    assert equivalent(Expectation(g + 2 * xi, g, xi), Expectation(g, g, xi) + 2 * Expectation(xi, g, xi)).success
    # E[g] E[xi] is not E[g xi], nor E[g^2] = E[g]^2
    assert not equivalent(Expectation(g, g, xi) * Expectation(xi, g, xi), Expectation(g * xi, g, xi)).success
    assert not equivalent(Expectation(g**2, g), Expectation(g, g) ** 2).success
    assert normalise_expectations(Expectation(3 * q * g, g)) == 3 * q * Expectation(g, g)
    # without random variables named, every symbol may be random: only numbers come out
    assert normalise_expectations(Expectation(3 * q * g)) == 3 * Expectation(q * g)
    assert not equivalent(Expectation(g**2) - Expectation(g) ** 2, 0).success
    # the same integrand written two ways is the same expectation
    assert equivalent(Expectation(1 / (1 + sympy.exp(-g))) ** 2, Expectation(sympy.exp(g) / (sympy.exp(g) + 1)) ** 2).success


def test_matrices_are_compared_entry_by_entry():
    assert equivalent(sympy.Matrix([[x, sympy.exp(x)]]), sympy.Matrix([[x, sympy.exp(x)]])).success
    assert not equivalent(sympy.Matrix([[x, y]]), sympy.Matrix([[x, y + 1e-25]])).success
    assert not equivalent(sympy.Matrix([[x, y]]), sympy.Matrix([[x], [y]])).success


def test_an_equation_that_drifts_from_its_reference_fails_at_the_index_where_it_does():
    L = sympy.Symbol("L", integer=True, positive=True)
    i = sympy.Symbol("i", integer=True, positive=True)
    entries = sympy.symbols("h_1:4", real=True)
    h = sympy.IndexedBase(sympy.Symbol("h"))
    doc = MarkdownDocument(sizes={L: 3}, arrays={sympy.Symbol("h"): lambda n: entries[n - 1]})
    compiled = [sympy.tanh(e) for e in entries[:2]] + [sympy.tanh(entries[2]) + entries[2] ** 3 * 1e-9]
    doc.equation("y_i", sympy.tanh(h[i]), reference=lambda n: compiled[n - 1], indices=((i, 1, L),))
    doc.equation("Y", sympy.Sum(sympy.tanh(h[i]), (i, 1, L)), reference=sum(sympy.tanh(e) for e in entries))
    first, second = check_document(doc)
    assert not first.success and "'i': 3" in first.message
    assert second.success
