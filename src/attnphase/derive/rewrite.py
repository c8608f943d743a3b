"""Numerical-stability rewrites, as values applied before code generation.

Each rule is a `sympy.codegen.rewriting.ReplaceOptim` (query, value), applied by sympy's `optimize`
in order of priority, so rule sets are plain tuples that can be combined, reordered or extended:

    ================  ==========================================  ===========================================
    rule              rewrites                                    why
    ================  ==========================================  ===========================================
    SOFTPLUS          log(1 + exp(u))       -> logaddexp(0, u)    exp(u) overflows for u > 709
    LOGSUMEXP         log(exp(a) + exp(b) + ...) -> logaddexp(.)  same, for any number of exp terms
    SIGMOID_RATIO     e^u (1 + e^u)^-n      -> s(u) s(-u)^(n-1)   inf/inf for large u (s = sigmoid)
    SIGMOID           (1 + e^u)^-n          -> s(-u)^n            a bare power, after SIGMOID_RATIO
    SIGMOID_COMPLEMENT 1 - s(u)             -> s(-u)              1 - s(u) cancels to 0 for u >~ 37
    LOG1P             log(1 + u)            -> log1p(u)           log(1 + u) loses digits for |u| << 1
    EXPM1             exp(u) - 1            -> expm1(u)           cancellation for |u| << 1 (also 1 - exp(u))
    SMALL_POWERS      x**n, |n| <= 4        -> x*x*...            repeated multiplication, no pow call
    ================  ==========================================  ===========================================

`logaddexp` and `sigmoid` are SymPy functions defined here with exact derivatives (d logaddexp(a, b)
/ da = sigmoid(a - b), sigmoid' = sigmoid(u) sigmoid(-u)), so derivatives of stabilised expressions
stay stable, and with arbitrary-precision `evalf`. `log1p`/`expm1` are sympy.codegen.cfunctions'.
(sympy's own log1p_opt/expm1_opt factor every log argument / count operations of every sum, which
takes minutes on a 4x4 log-det Hessian; these rules look only at the node they rewrite.)
`unstabilize` rewrites every one of them back to exp/log, which is how the rules are tested.
"""

from __future__ import annotations

import sympy
from sympy.core.logic import fuzzy_and
from sympy.codegen.cfunctions import expm1, log1p
from sympy.codegen.rewriting import ReplaceOptim, create_expand_pow_optimization, optimize

__all__ = [
    "logaddexp",
    "sigmoid",
    "log1p",
    "expm1",
    "SOFTPLUS",
    "LOGSUMEXP",
    "SIGMOID_RATIO",
    "SIGMOID",
    "SIGMOID_COMPLEMENT",
    "LOG1P",
    "EXPM1",
    "SMALL_POWERS",
    "STABILITY_RULES",
    "stabilize",
    "unstabilize",
]


class logaddexp(sympy.Function):
    """log(exp(a) + exp(b)), evaluated as max(a, b) + log1p(exp(-|a - b|)) by the generated kernels."""

    nargs = 2

    @classmethod
    def eval(cls, a, b):
        if a is sympy.S.NegativeInfinity:
            return b
        if b is sympy.S.NegativeInfinity:
            return a
        return None

    def fdiff(self, argindex=1):
        a, b = self.args
        if argindex == 1:
            return sigmoid(a - b)
        if argindex == 2:
            return sigmoid(b - a)
        raise sympy.ArgumentIndexError(self, argindex)

    def _eval_rewrite_as_exp(self, a, b, **kwargs):
        return sympy.log(sympy.exp(a) + sympy.exp(b))

    _eval_rewrite_as_log = _eval_rewrite_as_exp

    def _eval_evalf(self, prec):
        if not all(arg.is_number for arg in self.args):
            return None
        return self.rewrite(sympy.exp)._eval_evalf(prec)

    def _eval_is_real(self):
        return fuzzy_and(arg.is_real for arg in self.args)

    def _latex(self, printer):
        a, b = (printer._print(arg) for arg in self.args)
        return rf"\operatorname{{logaddexp}}\left({a}, {b}\right)"


class sigmoid(sympy.Function):
    """The logistic function 1 / (1 + exp(-u)), evaluated without overflow by the generated kernels."""

    nargs = 1

    @classmethod
    def eval(cls, u):
        if u.is_zero:
            return sympy.S.Half
        if u is sympy.oo:
            return sympy.S.One
        if u is sympy.S.NegativeInfinity:
            return sympy.S.Zero
        return None

    def fdiff(self, argindex=1):
        if argindex != 1:
            raise sympy.ArgumentIndexError(self, argindex)
        u = self.args[0]
        return sigmoid(u) * sigmoid(-u)

    def _eval_rewrite_as_exp(self, u, **kwargs):
        return 1 / (1 + sympy.exp(-u))

    def _eval_evalf(self, prec):
        if not self.args[0].is_number:
            return None
        return self.rewrite(sympy.exp)._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real

    def _eval_is_positive(self):
        return self.args[0].is_real

    def _latex(self, printer):
        return rf"\sigma\left({printer._print(self.args[0])}\right)"


# -- rules ------------------------------------------------------------------------------------------

def _is_one_plus_exp(e) -> bool:
    """e == 1 + exp(u) (exactly two terms)."""
    return e.is_Add and len(e.args) == 2 and sympy.S.One in e.args and any(isinstance(t, sympy.exp) for t in e.args)


def _exp_argument_of_one_plus_exp(e):
    return next(t for t in e.args if isinstance(t, sympy.exp)).args[0]


SOFTPLUS = ReplaceOptim(
    lambda e: isinstance(e, sympy.log) and _is_one_plus_exp(e.args[0]),
    lambda e: logaddexp(sympy.S.Zero, _exp_argument_of_one_plus_exp(e.args[0])),
    priority=30,
)


def _fold_logaddexp(arguments):
    out = arguments[0]
    for a in arguments[1:]:
        out = logaddexp(out, a)
    return out


LOGSUMEXP = ReplaceOptim(
    lambda e: (isinstance(e, sympy.log) and e.args[0].is_Add and len(e.args[0].args) >= 2
               and all(isinstance(t, sympy.exp) for t in e.args[0].args)),
    lambda e: _fold_logaddexp([t.args[0] for t in e.args[0].args]),
    priority=30,
)


def _is_inverse_power_of_one_plus_exp(f) -> bool:
    return f.is_Pow and f.exp.is_Integer and f.exp < 0 and _is_one_plus_exp(f.base)


def _sigmoid_ratio_value(e):
    """exp(u)^k (1 + exp(u))^-n -> sigmoid(u)^m sigmoid(-u)^(n - m) exp(u)^(k - m), m = min(k, n).

    exp(k u) counts as exp(u)^k for a positive integer k (SymPy writes exp(u)^2 as exp(2 u)).
    """
    inverse_powers = [f for f in e.args if _is_inverse_power_of_one_plus_exp(f)]
    rest = [f for f in e.args if not _is_inverse_power_of_one_plus_exp(f)]
    out = []
    for f in inverse_powers:
        u = _exp_argument_of_one_plus_exp(f.base)
        n = -int(f.exp)
        m = 0
        for i, g in enumerate(rest):
            # SymPy's as_base_exp() writes exp(v) as (E, v), so unpack exp factors by hand.
            base, power = (g, sympy.S.One) if isinstance(g, sympy.exp) else (g.base, g.exp) if g.is_Pow else (g, sympy.S.Zero)
            if not (isinstance(base, sympy.exp) and power.is_Integer and power > 0):
                continue
            ratio = base.args[0] / u
            if ratio.is_Integer and ratio > 0:
                k = int(ratio) * int(power)
                m = min(k, n)
                rest[i] = sympy.exp(u) ** (k - m)
                break
        out.append(sigmoid(u) ** m * sigmoid(-u) ** (n - m))
    return sympy.Mul(*out, *rest)


SIGMOID_RATIO = ReplaceOptim(
    lambda e: e.is_Mul and any(_is_inverse_power_of_one_plus_exp(f) for f in e.args),
    _sigmoid_ratio_value,
    priority=21,
)

SIGMOID = ReplaceOptim(
    _is_inverse_power_of_one_plus_exp,
    lambda e: sigmoid(-_exp_argument_of_one_plus_exp(e.base)) ** (-int(e.exp)),
    priority=20,
)


def _is_minus_sigmoid(t) -> bool:
    return t.is_Mul and len(t.args) == 2 and t.args[0] is sympy.S.NegativeOne and isinstance(t.args[1], sigmoid)


def _first_minus_sigmoid(e):
    return next(t for t in e.args if _is_minus_sigmoid(t))


SIGMOID_COMPLEMENT = ReplaceOptim(
    lambda e: e.is_Add and sympy.S.One in e.args and any(_is_minus_sigmoid(t) for t in e.args),
    lambda e: sympy.Add(*(a for a in e.args if a is not sympy.S.One and a != _first_minus_sigmoid(e)),
                        sigmoid(-_first_minus_sigmoid(e).args[1].args[0])),
    priority=19,
)


def _log1p_query(e) -> bool:
    return isinstance(e, sympy.log) and e.args[0].is_Add and sympy.S.One in e.args[0].args


LOG1P = ReplaceOptim(_log1p_query, lambda e: log1p(e.args[0] - 1), priority=10)

def _expm1_query(e) -> bool:
    if not e.is_Add:
        return False
    if sympy.S.NegativeOne in e.args:
        return any(isinstance(t, sympy.exp) for t in e.args)
    if sympy.S.One in e.args:
        return any(t.is_Mul and t.args[0] is sympy.S.NegativeOne and len(t.args) == 2
                   and isinstance(t.args[1], sympy.exp) for t in e.args)
    return False


def _expm1_value(e):
    terms = list(e.args)
    if sympy.S.NegativeOne in terms:  # exp(u) - 1 + rest
        t = next(t for t in terms if isinstance(t, sympy.exp))
        terms.remove(sympy.S.NegativeOne)
        terms.remove(t)
        return sympy.Add(expm1(t.args[0]), *terms)
    t = next(t for t in terms if t.is_Mul and t.args[0] is sympy.S.NegativeOne and len(t.args) == 2
             and isinstance(t.args[1], sympy.exp))  # 1 - exp(u) + rest
    terms.remove(sympy.S.One)
    terms.remove(t)
    return sympy.Add(-expm1(t.args[1].args[0]), *terms)


EXPM1 = ReplaceOptim(_expm1_query, _expm1_value, priority=10)

SMALL_POWERS = create_expand_pow_optimization(4, base_req=lambda b: b.is_Symbol)
SMALL_POWERS.priority = 0  # last: after the function rewrites have seen canonical powers

STABILITY_RULES = (SOFTPLUS, LOGSUMEXP, SIGMOID_RATIO, SIGMOID, SIGMOID_COMPLEMENT, LOG1P, EXPM1)
"""Default rules for `stabilize` and code generation. SMALL_POWERS is opt-in: its products are
unevaluated SymPy objects that CSE rebuilds (re-evaluating them into powers), so it only shows with
`compile_kernel(..., cse=False)`; numba/LLVM turns small integer powers into multiplications anyway."""


def _replace_shared(exprs, query, value):
    """Bottom-up `Basic.replace(query, value)` over several expressions with one memo, so that a
    subtree shared by many expressions (Hessian entries share almost everything) is rewritten once."""
    memo: dict = {}

    def walk(e):
        done = memo.get(e)
        if done is not None:
            return done
        out = e
        if e.args and not e.is_Atom:
            args = [walk(a) for a in e.args]
            if any(a is not b for a, b in zip(args, e.args)):
                out = e.func(*args)
        if query(out):
            replaced = value(out)
            if replaced is not None:
                out = replaced
        memo[e] = out
        return out

    return [walk(e) for e in exprs]


def _apply_rules(exprs, rules):
    """sympy.codegen.rewriting.optimize over a list: rules by decreasing priority, each ReplaceOptim
    applied bottom-up to all expressions at once (other Optimization objects are called per expression,
    keeping their cost guard)."""
    for rule in sorted(rules, key=lambda r: r.priority, reverse=True):
        if isinstance(rule, ReplaceOptim) and rule.cost_function is None:
            exprs = _replace_shared(exprs, rule.query, rule.value)
        else:
            exprs = [optimize(e, (rule,)) for e in exprs]
    return exprs


def stabilize(expr, rules=STABILITY_RULES):
    """Apply the rules (highest priority first, as sympy.codegen.rewriting.optimize does) to an
    expression, a list or a Matrix."""
    if isinstance(expr, sympy.MatrixBase):
        return sympy.Matrix(expr.rows, expr.cols, _apply_rules([sympy.sympify(e) for e in expr], tuple(rules)))
    if isinstance(expr, (list, tuple)):
        return type(expr)(_apply_rules([sympy.sympify(e) for e in expr], tuple(rules)))
    return _apply_rules([sympy.sympify(expr)], tuple(rules))[0]


def unstabilize(expr):
    """Rewrite logaddexp, sigmoid, log1p and expm1 back to exp/log (the inverse of the rules)."""
    if isinstance(expr, sympy.MatrixBase):
        return expr.applyfunc(unstabilize)
    expr = sympy.sympify(expr)
    return expr.replace(
        lambda e: isinstance(e, (logaddexp, sigmoid)), lambda e: e.rewrite(sympy.exp)
    ).replace(
        lambda e: isinstance(e, log1p), lambda e: sympy.log(1 + e.args[0])
    ).replace(
        lambda e: isinstance(e, expm1), lambda e: sympy.exp(e.args[0]) - 1
    )
