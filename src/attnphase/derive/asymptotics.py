"""Leading asymptotic forms as a parameter goes to infinity, keeping logarithmic factors.

`leading_asymptotic(expr, L)` returns the dominant term of `expr` as L -> oo, e.g.

    3 L log(L)^2 + L log(L) log(log(L)) + 7 L      ->   3 L log(L)^2
    log(5 L^2 log(L))                              ->   2 log(L)

It works recursively by dominant balance: the leading form of a product is the product of the leading
forms; of a power (constant exponent), the power of the leading form; of log(g), the dominant term of
the expanded log of the leading form of g; of a sum, the sum of the terms of maximal order, where term
j is dominated by term i when lim t_j / t_i (Gruntz's algorithm, `sympy.limit`) is finite. A sum whose
dominant terms cancel is refused rather than guessed.

`implicit_leading_asymptotic(equation, P, L)` finds the leading form of a root P(L) defined
implicitly, e.g. by P = c L (log P - log log P)^2, by bootstrapping: write the equation as
P = G(log P, L) (solve for P with log P frozen to a symbol Lambda), start from Lambda = log L and iterate

    Lambda_k = leading(log P_k),     P_{k+1} = leading(G(Lambda_k, L))

until the leading form stops changing. Logs vary slowly, so the iteration settles after a few steps
(here: P_0 = c L (log L - log log L)^2 -> c L log^2 L -> Lambda = log L -> c L log^2 L).
"""

from __future__ import annotations

import sympy

from attnphase.errors import ParameterError

__all__ = ["leading_asymptotic", "implicit_leading_asymptotic"]


def _limit_ratio(num, den, x):
    return sympy.limit(num / den, x, sympy.oo)


def _is_finite(value) -> bool:
    return value.is_finite is True


def _dominant_sum(terms, x):
    """Sum of the terms of maximal order among `terms` (already leading forms)."""
    terms = [t for t in terms if t != 0]
    if not terms:
        return sympy.S.Zero
    best = terms[0]
    for t in terms[1:]:
        ratio = _limit_ratio(t, best, x)
        if not _is_finite(ratio):
            best = t
    same_order = [t for t in terms if _limit_ratio(t, best, x) != 0]
    for t in terms:
        if not _is_finite(_limit_ratio(t, best, x)):
            raise ParameterError("expr", str(sympy.Add(*terms)), "terms of comparable growth (no dominant term found)")
    total = sympy.Add(*same_order)
    if total == 0 or sympy.simplify(total) == 0:
        raise ParameterError("expr", str(sympy.Add(*terms)), "a sum whose leading terms do not cancel")
    return total


def _leading(e, x):
    if not e.has(x):
        return e
    if e == x:
        return x
    if e.is_Add:
        return _dominant_sum([_leading(t, x) for t in e.args], x)
    if e.is_Mul:
        return sympy.Mul(*(_leading(f, x) for f in e.args))
    if e.is_Pow and not e.exp.has(x):
        return _leading(e.base, x) ** e.exp
    if isinstance(e, sympy.log):
        g = e.args[0]
        limit = sympy.limit(g, x, sympy.oo)
        if limit.is_finite and limit.is_positive and limit != 1:
            return sympy.log(limit)
        if limit == 1:
            return _leading(sympy.expand(g - 1), x)
        expanded = sympy.expand_log(sympy.log(_leading(g, x)), force=True)
        if not expanded.is_Add:  # log(x), log(log(x)), k log(x): already leading forms
            return expanded
        return _dominant_sum([_leading(t, x) for t in expanded.args], x)
    limit = sympy.limit(e, x, sympy.oo)
    if limit.is_finite and limit != 0:
        return limit
    return e  # exp(...) and other functions: already their own leading form


def leading_asymptotic(expr, var: sympy.Symbol):
    """Leading form of `expr` as `var` -> +oo (constant prefactor and log factors kept)."""
    if not isinstance(var, sympy.Symbol):
        raise ParameterError("var", var, "a SymPy Symbol")
    expr = sympy.sympify(expr)
    x = sympy.Dummy(var.name, positive=True)
    return sympy.simplify(_leading(expr.subs(var, x), x)).subs(x, var)


def implicit_leading_asymptotic(equation, unknown: sympy.Symbol, var: sympy.Symbol, *, max_iterations: int = 10):
    """Leading form of the root `unknown`(var) of `equation` (an Eq or an expression = 0) as var -> oo.

    The equation must be solvable for `unknown` once log(unknown) is frozen (P = G(log P, var)).
    """
    for name, s in (("unknown", unknown), ("var", var)):
        if not isinstance(s, sympy.Symbol):
            raise ParameterError(name, s, "a SymPy Symbol")
    eq = sympy.sympify(equation)
    if isinstance(eq, sympy.Equality):
        eq = eq.lhs - eq.rhs
    x = sympy.Dummy(var.name, positive=True)
    P = sympy.Dummy(unknown.name, positive=True)
    Lam = sympy.Dummy("Lambda", positive=True)
    eq = sympy.expand_log(eq.subs({var: x, unknown: P}), force=True)
    frozen = eq.replace(lambda e: isinstance(e, sympy.log) and e.args[0] == P, lambda e: Lam)
    if frozen.has(P) is False:
        raise ParameterError("equation", equation, f"an equation in which {unknown} appears outside logarithms")
    solutions = [s for s in sympy.solve(frozen, P) if s.has(x)]
    if len(solutions) != 1:
        raise ParameterError("equation", equation,
                             f"an equation with one solution for {unknown} at fixed log({unknown}); got {solutions}")
    G = solutions[0]
    current = _leading(G.subs(Lam, sympy.log(x)), x)
    for _ in range(max_iterations):
        log_form = _leading(sympy.log(current), x)
        following = sympy.simplify(_leading(G.subs(Lam, log_form), x))
        if sympy.simplify(following - current) == 0:
            return following.subs(x, var)
        current = following
    raise ParameterError("equation", equation, f"a root whose bootstrap converges in {max_iterations} iterations")
