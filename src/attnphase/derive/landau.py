"""Landau theory: Taylor expansion of a free energy in an order parameter, and the transition it implies.

For a free energy F(m; T) with a disordered state m = 0, expanded as

    F = F_0 + a_2(T) m^2 + a_4(T) m^4 + a_6(T) m^6 + ...      (even in m)

the stationary points m != 0 solve Q(u) = dF/dm / m = 2 a_2 + 4 a_4 u + 6 a_6 u^2 + ... = 0 with u = m^2.

* The disordered minimum m = 0 loses stability where a_2(T) = 0 (call it T_*).
* If a_4(T_*) > 0 the ordered minimum grows continuously from m = 0: a second-order transition at
  T_c = T_*; the exponent beta of m*(T) ~ A |T - T_c|^beta is derived from the minimiser itself as
  beta = lim log m* / log |T - T_c| (and A = lim m* / |T - T_c|^beta), on the side where a_2 < 0.
  (With a_4(T_*) = 0 and a_6 > 0 the same computation gives the tricritical beta = 1/4.)
* If a_4(T_*) < 0 (and a_6 > 0) the ordered minimum appears discontinuously: a first-order transition.
  - coexistence: an ordered minimum as deep as the disordered one, i.e. F(m) = F(0) and F'(m) = 0
    with m != 0: in u, R(u) = (F(m) - F(0))/m^2 = 0 and Q(u) = 0;
  - spinodal of the disordered phase: a_2(T) = 0 (T_*);
  - spinodal of the ordered phase: the ordered minimum merges with the maximum, F' = F'' = 0 at m != 0,
    i.e. Q(u) = 0 and dQ/du = 0.

Everything is solved symbolically with `sympy.solve`; signs are decided from the SymPy assumptions of
the symbols (declare coefficients positive with `symbols.parameter(..., Domain.positive())`). When a
sign cannot be decided the classification says so (`order="undetermined"`) instead of guessing.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import sympy

from attnphase.errors import ParameterError

__all__ = ["LandauExpansion", "TransitionClassification", "landau_expansion", "classify_transition"]


@dataclass(frozen=True)
class LandauExpansion:
    """Taylor polynomial of F around `around` in `variables`, up to total degree `order`.

    `coefficients` maps the power k (one variable) or the exponent tuple (several variables) to the
    coefficient (1/k!) d^k F / dm^k at the expansion point; `polynomial` is the truncated series in
    the variables themselves (shifted by `around`).
    """

    variables: tuple
    around: tuple
    order: int
    coefficients: dict
    polynomial: sympy.Expr

    def coefficient(self, k) -> sympy.Expr:
        """Coefficient of m^k (0 if absent)."""
        return self.coefficients.get(k, sympy.S.Zero)


def landau_expansion(F, order_parameter, around=0, order: int = 6) -> LandauExpansion:
    """Taylor/Landau expansion of F in one order parameter (or a list of them) to total degree `order`."""
    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise ParameterError("order", order, "a non-negative integer")
    F = sympy.sympify(F)
    single = isinstance(order_parameter, sympy.Symbol)
    variables = (order_parameter,) if single else tuple(order_parameter)
    if not variables or not all(isinstance(v, sympy.Symbol) for v in variables):
        raise ParameterError("order_parameter", order_parameter, "a Symbol or a list of Symbols")
    points = (sympy.sympify(around),) * len(variables) if not isinstance(around, (list, tuple)) else tuple(
        sympy.sympify(a) for a in around)
    if len(points) != len(variables):
        raise ParameterError("around", around, f"a point with {len(variables)} coordinates")
    at = dict(zip(variables, points))
    coefficients: dict = {}
    polynomial = sympy.S.Zero
    derivatives = {(0,) * len(variables): F}
    for total in range(order + 1):
        for alpha in _multi_indices(len(variables), total):
            if total:
                # Differentiate a stored lower derivative once more (each derivative computed once).
                i = next(k for k, a in enumerate(alpha) if a)
                lower = tuple(a - (k == i) for k, a in enumerate(alpha))
                derivatives[alpha] = sympy.diff(derivatives[lower], variables[i])
            c = derivatives[alpha].subs(at) / math.prod(math.factorial(a) for a in alpha)
            # Expand polynomial coefficients into a canonical form; leave others as they come (no
            # simplify: model free energies can be large).
            c = sympy.expand(c) if c.is_polynomial() else c
            if c != 0:
                coefficients[alpha[0] if single else alpha] = c
                polynomial += c * sympy.Mul(*((v - p) ** a for v, p, a in zip(variables, points, alpha)))
    return LandauExpansion(variables, points, order, coefficients, polynomial)


def _multi_indices(n: int, total: int):
    """Exponent tuples of length n summing to `total`, in lexicographic order (deterministic)."""
    for combo in itertools.combinations_with_replacement(range(n), total):
        alpha = [0] * n
        for i in combo:
            alpha[i] += 1
        yield tuple(alpha)


@dataclass(frozen=True)
class TransitionClassification:
    """Outcome of `classify_transition`.

    order: "first", "second", "none" or "undetermined". For "second": `critical_point`, `exponent`
    (beta), `amplitude` (A in m* ~ A |T - T_c|^beta) and `ordered_side` ("below"/"above" T_c). For
    "first": `coexistence`, `spinodal_disordered` (m = 0 turns unstable), `spinodal_ordered` (the
    ordered minimum disappears), `spinodals` (both, in that order) and `jump` (m* at coexistence);
    `critical_point` is the coexistence point.
    """

    order: str
    control: sympy.Symbol
    expansion: LandauExpansion
    critical_point: sympy.Expr | None = None
    exponent: sympy.Expr | None = None
    amplitude: sympy.Expr | None = None
    ordered_side: str | None = None
    coexistence: sympy.Expr | None = None
    spinodal_disordered: sympy.Expr | None = None
    spinodal_ordered: sympy.Expr | None = None
    spinodals: tuple = field(default_factory=tuple)
    jump: sympy.Expr | None = None
    message: str = ""


def classify_transition(F, order_parameter: sympy.Symbol, control: sympy.Symbol, *, order: int = 6
                        ) -> TransitionClassification:
    """Classify the transition of F(m; control) out of the disordered state m = 0 (see module doc).

    F is replaced by its Landau polynomial to degree `order` (exact when F is a polynomial of that
    degree). Only even free energies (F(m) = F(-m)) are supported.
    """
    if not isinstance(order_parameter, sympy.Symbol) or not isinstance(control, sympy.Symbol):
        raise ParameterError("order_parameter/control", (order_parameter, control), "SymPy symbols")
    expansion = landau_expansion(F, order_parameter, 0, order)
    odd = [k for k in expansion.coefficients if k % 2 == 1]
    if odd:
        raise ParameterError("F", f"terms m^{odd}", "a free energy even in the order parameter")
    u = sympy.Dummy("u", positive=True)
    a = {k: expansion.coefficient(k) for k in range(0, order + 1, 2)}
    # Q(u) = F'(m)/m,  R(u) = (F(m) - F(0))/m^2, both as polynomials in u = m^2.
    Q = sum(k * a[k] * u ** (k // 2 - 1) for k in range(2, order + 1, 2))
    R = sum(a[k] * u ** (k // 2 - 1) for k in range(2, order + 1, 2))

    def result(kind, message, **kw):
        return TransitionClassification(kind, control, expansion, message=message, **kw)

    instability = [t for t in sympy.solve(a[2], control) if t.is_real is not False]
    if len(instability) != 1:
        return result("none" if not instability else "undetermined",
                      f"a_2({control}) = {a[2]} has {len(instability)} real roots; expected exactly one")
    t_star = instability[0]
    slope = sympy.simplify(sympy.diff(a[2], control).subs(control, t_star))
    if slope.is_positive:
        ordered_side, sign = "below", -1  # a_2 < 0 for T < T_*
    elif slope.is_negative:
        ordered_side, sign = "above", 1
    else:
        return result("undetermined", f"sign of da_2/d{control} = {slope} at {t_star} is undecidable")
    quartic = sympy.simplify(a[4].subs(control, t_star))

    if quartic.is_nonnegative:
        eps = sympy.Dummy("epsilon", positive=True)
        for root in sympy.solve(Q, u):
            near = sympy.simplify(root.subs(control, t_star + sign * eps))
            if sympy.limit(near, eps, 0, "+") != 0:
                continue
            m_star = sympy.sqrt(near)
            beta = sympy.simplify(sympy.limit(sympy.log(m_star) / sympy.log(eps), eps, 0, "+"))
            amplitude = sympy.simplify(sympy.limit(m_star / eps ** beta, eps, 0, "+"))
            if not (beta.is_positive and amplitude.is_positive):
                continue
            note = "tricritical point (a_4 = 0)" if quartic.is_zero else "a_4 > 0 at the critical point"
            return result("second", f"continuous transition; {note}", critical_point=t_star, exponent=beta,
                          amplitude=amplitude, ordered_side=ordered_side)
        return result("undetermined", "no ordered minimiser vanishing at the critical point was found")

    if not quartic.is_negative:
        return result("undetermined", f"sign of a_4 = {quartic} at {control} = {t_star} is undecidable")
    # First order: coexistence (R = Q = 0) and the ordered spinodal (Q = dQ/du = 0), with u > 0.
    coexist = _positive_u_solutions([R, Q], u, control)
    spinodal = _positive_u_solutions([Q, sympy.diff(Q, u)], u, control)
    if len(coexist) != 1 or len(spinodal) != 1:
        return result("undetermined", f"found {len(coexist)} coexistence and {len(spinodal)} spinodal "
                      "solutions with m != 0; expected one each")
    (t_coexist, u_coexist), (t_spinodal, _) = coexist[0], spinodal[0]
    return result("first", "discontinuous transition; a_4 < 0 where m = 0 turns unstable",
                  critical_point=t_coexist, coexistence=t_coexist, spinodal_disordered=t_star,
                  spinodal_ordered=t_spinodal, spinodals=(t_star, t_spinodal), jump=sympy.sqrt(u_coexist))


def _positive_u_solutions(equations, u, control):
    """Solutions (control, u) of the polynomial system with u = m^2 provably positive (from the
    assumptions on the symbols)."""
    out = []
    for sol in sympy.solve(equations, [u, control], dict=True):
        if u not in sol or control not in sol:
            continue
        uu = sympy.simplify(sol[u])
        if uu.is_positive:
            out.append((sympy.simplify(sol[control]), uu))
    return out
