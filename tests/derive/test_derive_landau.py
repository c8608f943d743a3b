"""Landau expansion and the classification of transitions, against the closed forms of mean-field theory.

phi^4:  F = a (T - T_c) m^2 + b m^4, b > 0: second order at T_c, m* = sqrt(a (T_c - T) / 2b), beta = 1/2.
phi^6:  F = a (T - T_0) m^2 - b m^4 + c m^6, b, c > 0: first order, coexistence at T_0 + b^2/(4ac) with
        m*^2 = b/(2c); spinodals T_0 (m = 0 turns unstable) and T_0 + b^2/(3ac) (ordered minimum disappears).
The comparisons are symbolic: the difference with the closed form simplifies to zero.
"""

import pytest
import sympy

from attnphase.derive.landau import classify_transition, landau_expansion
from attnphase.derive.symbols import Domain, order_parameter, parameter
from attnphase.errors import ParameterError

a = parameter("a_landau", Domain.positive())
b = parameter("b_landau", Domain.positive())
c = parameter("c_landau", Domain.positive())
T = parameter("T_landau", Domain.positive())
Tc = parameter("Tc_landau", Domain.positive())
m = order_parameter("m_landau")


def same(x, y) -> bool:
    return sympy.simplify(x - y) == 0


def test_phi4_second_order_at_the_exact_critical_point_with_beta_one_half():
    result = classify_transition(a * (T - Tc) * m**2 + b * m**4, m, T)
    assert result.order == "second"
    assert same(result.critical_point, Tc)
    assert result.exponent == sympy.Rational(1, 2)
    assert same(result.amplitude, sympy.sqrt(a / (2 * b)))  # m* = sqrt(a/2b) (T_c - T)^(1/2)
    assert result.ordered_side == "below"


def test_phi4_with_reversed_control_orders_above_the_critical_point():
    result = classify_transition(a * (Tc - T) * m**2 + b * m**4, m, T)
    assert result.order == "second" and result.ordered_side == "above" and same(result.critical_point, Tc)


def test_phi6_first_order_coexistence_and_both_spinodals_in_closed_form():
    result = classify_transition(a * (T - Tc) * m**2 - b * m**4 + c * m**6, m, T)
    assert result.order == "first"
    assert same(result.coexistence, Tc + b**2 / (4 * a * c))
    assert same(result.spinodal_disordered, Tc)
    assert same(result.spinodal_ordered, Tc + b**2 / (3 * a * c))
    assert same(result.jump, sympy.sqrt(b / (2 * c)))
    # Independent check of the defining conditions at the returned points.
    F = a * (T - Tc) * m**2 - b * m**4 + c * m**6
    at_coexistence = {T: result.coexistence, m: result.jump}
    assert same(F.subs(at_coexistence), 0)  # as deep as the disordered minimum F(0) = 0
    assert same(sympy.diff(F, m).subs(at_coexistence), 0)
    m2 = sympy.Symbol("m2", positive=True)
    F_u = F.subs(m, sympy.sqrt(m2)).subs(T, result.spinodal_ordered)
    double_root = sympy.solve(sympy.diff(F_u, m2), m2)
    assert len(double_root) == 1  # dF/dm^2 has a double root: the minimum and the maximum merge


def test_tricritical_phi6_gives_beta_one_quarter():
    result = classify_transition(a * (T - Tc) * m**2 + c * m**6, m, T)
    assert result.order == "second" and result.exponent == sympy.Rational(1, 4)


def test_landau_expansion_of_a_non_polynomial_free_energy():
    """Mean-field Ising in the form f(m) = T m^2/2 - log cosh(m): T_c = 1, coefficients of log cosh."""
    f = T * m**2 / 2 - sympy.log(sympy.cosh(m))
    e = landau_expansion(f, m, order=6)
    assert same(e.coefficient(2), (T - 1) / 2)
    assert e.coefficient(4) == sympy.Rational(1, 12)
    assert e.coefficient(6) == -sympy.Rational(1, 45)
    assert e.coefficient(1) == 0 and e.coefficient(3) == 0
    result = classify_transition(f, m, T)
    assert result.order == "second" and result.critical_point == 1 and result.exponent == sympy.Rational(1, 2)


def test_multivariate_expansion_and_shifted_point():
    x, y = sympy.symbols("x y", real=True)
    e = landau_expansion(sympy.exp(x) * sympy.cos(y), [x, y], around=0, order=3)
    assert e.coefficients[(1, 2)] == -sympy.Rational(1, 2) and e.coefficients[(3, 0)] == sympy.Rational(1, 6)
    shifted = landau_expansion(sympy.log(x), x, around=1, order=3)
    assert shifted.coefficients == {1: 1, 2: -sympy.Rational(1, 2), 3: sympy.Rational(1, 3)}
    assert sympy.expand(shifted.polynomial - ((x - 1) - (x - 1) ** 2 / 2 + (x - 1) ** 3 / 3)) == 0


def test_bad_input():
    with pytest.raises(ParameterError):
        landau_expansion(m**2, m, order=-1)
    with pytest.raises(ParameterError):
        classify_transition(a * (T - Tc) * m**2 + m**3 + b * m**4, m, T)  # odd term: not supported
