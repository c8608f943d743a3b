"""Leading asymptotics, including a threshold defined implicitly, against closed forms and numerics.

The implicit test: P(L) is the large root of P = c L (log P - log log P)^2 (c = 1/2). Bootstrapping
gives P ~ c L log^2 L. Numerically, y(L) = P / (L log^2 L) is not exactly constant on L in [2^4, 2^20]:
the log corrections give it an apparent log-log slope. The size of that slope is predicted from the
derived form itself: one more bootstrap step, P_2 = c L (log P_lead - log log P_lead)^2 with
P_lead = c L log^2 L, fitted over the same L gives the apparent exponent e_2 of P_2 / P_lead (a
systematic band, about 0.015), to which the t-distribution 95% band of the least-squares slope of y
is added: the fitted exponent of y must lie within |e_2| + band of 0. Dividing by L log L or
L log^3 L instead (exponents about +0.15 and -0.12) must fall outside, so the check discriminates the
power of the logarithm.
"""

import mpmath
import numpy as np
import pytest
import sympy
from scipy import stats

from attnphase.derive.asymptotics import implicit_leading_asymptotic, leading_asymptotic
from attnphase.errors import ParameterError

L = sympy.Symbol("L", positive=True)
P = sympy.Symbol("P", positive=True)
c = sympy.Symbol("c", positive=True)


def same(x, y) -> bool:
    return sympy.simplify(x - y) == 0


def test_leading_terms_of_explicit_expressions():
    assert same(leading_asymptotic(3 * L * sympy.log(L) ** 2 + L * sympy.log(L) * sympy.log(sympy.log(L)) + 7 * L, L),
                3 * L * sympy.log(L) ** 2)
    assert same(leading_asymptotic(sympy.log(5 * L**2 * sympy.log(L)), L), 2 * sympy.log(L))
    assert same(leading_asymptotic((L + sympy.sqrt(L)) ** 2 / sympy.log(L + 1), L), L**2 / sympy.log(L))
    assert same(leading_asymptotic(c * L / (1 + 1 / L), L), c * L)
    assert same(leading_asymptotic(sympy.exp(-1 / L) * L ** sympy.Rational(3, 2), L), L ** sympy.Rational(3, 2))


def test_cancelling_leading_terms_are_refused():
    with pytest.raises(ParameterError):
        leading_asymptotic(sympy.sqrt(L + 1) - sympy.sqrt(L), L)


def test_implicit_threshold_leading_form_is_c_L_log_squared_L():
    equation = sympy.Eq(P, c * L * (sympy.log(P) - sympy.log(sympy.log(P))) ** 2)
    assert same(implicit_leading_asymptotic(equation, P, L), c * L * sympy.log(L) ** 2)
    # Another implicit root with a different power: P^2 = c L^3 log P  ->  P ~ sqrt(3c/2) L^(3/2) sqrt(log L).
    assert same(implicit_leading_asymptotic(P**2 - c * L**3 * sympy.log(P), P, L),
                sympy.sqrt(3 * c / 2) * L ** sympy.Rational(3, 2) * sympy.sqrt(sympy.log(L)))


def _slope_with_band(x, y, confidence=0.95):
    """Least-squares slope of log y on log x and its t-distribution half-width."""
    lx, ly = np.log(x), np.log(y)
    design = np.vstack([lx, np.ones_like(lx)]).T
    coef, *_ = np.linalg.lstsq(design, ly, rcond=None)
    residual = ly - design @ coef
    dof = len(x) - 2
    stderr = np.sqrt(residual @ residual / dof / np.sum((lx - lx.mean()) ** 2))
    return coef[0], stats.t.ppf(0.5 + confidence / 2, dof) * stderr


def test_implicit_threshold_agrees_with_numerical_roots_over_L_from_2_4_to_2_20():
    c_value = sympy.Rational(1, 2)
    equation = sympy.Eq(P, c_value * L * (sympy.log(P) - sympy.log(sympy.log(P))) ** 2)
    leading = implicit_leading_asymptotic(equation, P, L)
    assert same(leading, L * sympy.log(L) ** 2 / 2)

    Ls = np.array([2.0**k for k in range(4, 21)])
    residual = sympy.lambdify([P, L], equation.lhs - equation.rhs, "mpmath")
    with mpmath.workdps(30):
        # On [L, L^3] the residual changes sign once for L >= 16 (negative at L, positive at L^3).
        roots = np.array([float(mpmath.findroot(lambda p: residual(p, mpmath.mpf(l)), (l, l**3), solver="anderson"))
                          for l in Ls])
    assert np.all(np.abs([float(residual(p, l)) for p, l in zip(roots, Ls)]) <= 1e-9 * roots)

    # Systematic band: local exponent of one more bootstrap step relative to the leading form.
    P_lead = leading
    P_2 = c_value * L * (sympy.log(P_lead) - sympy.log(sympy.log(P_lead))) ** 2
    correction = sympy.lambdify(L, P_2 / P_lead, "numpy")
    systematic = abs(_slope_with_band(Ls, correction(Ls))[0])
    assert systematic < 0.05  # the corrections are logarithmically small on this range

    slope, band = _slope_with_band(Ls, roots / (Ls * np.log(Ls) ** 2))
    print(f"exponent of P/(L log^2 L): {slope:.4f} +- {band:.4f} (95%); predicted drift {systematic:.4f}")
    assert abs(slope) <= band + systematic, (slope, band, systematic)
    for wrong_power in (1, 3):
        wrong, wrong_band = _slope_with_band(Ls, roots / (Ls * np.log(Ls) ** wrong_power))
        assert abs(wrong) > wrong_band + systematic, (wrong_power, wrong, systematic)
