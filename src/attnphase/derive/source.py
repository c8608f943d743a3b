"""Kernel source: a flat list of (already stabilised) SymPy expressions -> the Python source of one kernel module.

`generate_source` eliminates common subexpressions (`sympy.cse`) and prints straight-line code with one printer
per backend (the backends and their measured costs: derive.codegen, which compiles, caches and loads the source):
a loop body over points for numba, in which each pair sigmoid(u), sigmoid(−u) shares one exponential; vectorised
numpy / scipy.special calls; torch calls; `mpmath.mp` calls with exact constants built at call time. The printers
know + * ** and the functions named in `_SUPPORTED`; anything else is a ParameterError naming the expression's class.
"""

from __future__ import annotations

import math

import sympy

from attnphase.derive import rewrite as _rewrite
from attnphase.errors import ParameterError

__all__ = ["generate_source"]

# -- printers --------------------------------------------------------------------------------------

_SUPPORTED = (
    "exp log sqrt erf erfc Abs sign tanh atanh sinh cosh asinh acosh sin cos tan atan atan2 "
    "log1p expm1 logaddexp sigmoid loggamma Max Min Piecewise"
)


class _Printer:
    """Prints a SymPy expression as a Python expression for one backend.

    Subclasses give the function table (`functions`: SymPy class name -> format string with {0}, {1}
    for the printed arguments) and the way numbers are written.
    """

    functions: dict[str, str] = {}
    logical_and = " and "
    logical_or = " or "

    def __init__(self, names: dict):
        self.names = names  # Symbol / CSE symbol -> identifier

    def doprint(self, e) -> str:
        if e in self.names:
            return self.names[e]
        if isinstance(e, sympy.Symbol):
            raise ParameterError("args", str(e), "a list containing every free symbol of the expressions")
        if e.is_Number or isinstance(e, sympy.NumberSymbol) or (isinstance(e, sympy.Expr) and e.is_number
                                                                and not e.has(sympy.Piecewise)):
            return self.constant(e)
        if e.is_Add:
            return "(" + " + ".join(self.doprint(a) for a in e.args) + ")"
        if e.is_Mul:
            return self.mul(e)
        if e.is_Pow:
            return self.power(e.base, e.exp)
        if isinstance(e, sympy.UnevaluatedExpr):  # e.g. from rewrite.SMALL_POWERS
            return f"({self.doprint(e.args[0])})"
        if isinstance(e, sympy.Piecewise):
            return self.piecewise(e)
        if isinstance(e, (sympy.Max, sympy.Min)):
            return self.minmax(e)
        if e.is_Relational:
            return f"({self.doprint(e.lhs)} {e.rel_op} {self.doprint(e.rhs)})"
        if isinstance(e, sympy.And):
            return "(" + self.logical_and.join(self.doprint(a) for a in e.args) + ")"
        if isinstance(e, sympy.Or):
            return "(" + self.logical_or.join(self.doprint(a) for a in e.args) + ")"
        if e is sympy.true:
            return "True"
        if e is sympy.false:
            return "False"
        name = type(e).__name__
        if isinstance(e, sympy.Function) and name in self.functions:
            return self.functions[name].format(*(self.doprint(a) for a in e.args))
        raise ParameterError("exprs", name, f"expressions built from + * ** and {_SUPPORTED}")

    def mul(self, e) -> str:
        factors = sympy.Mul.make_args(e)
        if not e.free_symbols:  # a numeric product; reached only by printers that print constants exactly
            return "(" + "*".join(self.doprint(f) for f in factors) + ")"
        numeric = sympy.Mul(*(f for f in factors if not f.free_symbols))
        negative = numeric.is_negative is True
        if negative:
            numeric = -numeric
        numer, denom = [], []
        for f in factors:
            if not f.free_symbols:
                continue
            if f.is_Pow and f.exp.is_Number and f.exp.is_negative:
                denom.append(self.power(f.base, -f.exp))
            else:
                numer.append(self.doprint(f))
        if numeric != 1:
            numer.insert(0, self.constant(numeric))
        text = "*".join(numer) if numer else self.constant(sympy.S.One)
        if denom:
            text = f"{text}/({'*'.join(denom)})"
        return f"(-{text})" if negative else f"({text})"

    fold_numeric_powers = True  # float backends: a numeric power is one rounded constant

    def power(self, base, exponent) -> str:
        if self.fold_numeric_powers and not base.free_symbols and not exponent.free_symbols:
            return _Printer.constant(self, sympy.Pow(base, exponent))
        b = self.doprint(base)
        if exponent == 1:
            return b
        if exponent == sympy.S.Half:
            return self.functions["sqrt"].format(b)
        if exponent == -sympy.S.Half:
            return f"({self.constant(sympy.S.One)}/{self.functions['sqrt'].format(b)})"
        if exponent.is_Integer:
            if exponent == -1:
                return f"({self.constant(sympy.S.One)}/{b})"
            if exponent < 0:
                return f"({self.constant(sympy.S.One)}/{b}**{-int(exponent)})"
            return f"{b}**{int(exponent)}"
        return f"{b}**{self.doprint(exponent)}"

    # Max and Min of two printed arguments, nested for more; Piecewise as nested selections (`select`)
    maximum, minimum = "max", "min"

    def pair(self, function: str, a: str, b: str) -> str:
        return f"{function}({a}, {b})"

    def select(self, condition: str, value: str, otherwise: str) -> str:
        return f"({value} if {condition} else {otherwise})"

    def minmax(self, e) -> str:
        function = self.maximum if isinstance(e, sympy.Max) else self.minimum
        args = [self.doprint(a) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = self.pair(function, out, a)
        return out

    def piecewise(self, e) -> str:
        out = self.nan()
        for expr, cond in reversed(e.args):
            out = self.doprint(expr) if cond is sympy.true else self.select(self.doprint(cond), self.doprint(expr), out)
        return out

    def nan(self) -> str:
        return "math.nan"

    def constant(self, e) -> str:
        value = float(sympy.N(e, 20))
        if math.isnan(value):
            return "math.nan"
        if math.isinf(value):
            return "math.inf" if value > 0 else "(-math.inf)"
        return repr(value)


_MATH_FUNCTIONS = {
    name: f"math.{name}({{0}})"
    for name in ("exp", "log", "sqrt", "erf", "erfc", "tanh", "atanh", "sinh", "cosh", "asinh", "acosh",
                 "sin", "cos", "tan", "atan", "log1p", "expm1")
}


class _NumbaPrinter(_Printer):
    functions = {
        **_MATH_FUNCTIONS,
        "Abs": "abs({0})",
        "sign": "_sign({0})",
        "atan2": "math.atan2({0}, {1})",
        "loggamma": "math.lgamma({0})",
        "logaddexp": "_logaddexp({0}, {1})",
        "sigmoid": "_sigmoid({0})",
    }


class _NumpyPrinter(_Printer):
    """Vectorised numpy (no compilation): every operation acts on whole arrays."""

    functions = {
        **{name: f"np.{name}({{0}})" for name in ("exp", "log", "sqrt", "tanh", "sinh", "cosh", "sin", "cos", "tan",
                                                  "log1p", "expm1", "sign")},
        "atanh": "np.arctanh({0})",
        "asinh": "np.arcsinh({0})",
        "acosh": "np.arccosh({0})",
        "atan": "np.arctan({0})",
        "atan2": "np.arctan2({0}, {1})",
        "erf": "scipy.special.erf({0})",
        "erfc": "scipy.special.erfc({0})",
        "loggamma": "scipy.special.gammaln({0})",
        "Abs": "np.abs({0})",
        "logaddexp": "np.logaddexp({0}, {1})",
        "sigmoid": "scipy.special.expit({0})",
    }
    logical_and = " & "
    logical_or = " | "
    maximum, minimum = "np.maximum", "np.minimum"

    def select(self, condition: str, value: str, otherwise: str) -> str:
        return f"np.where({condition}, {value}, {otherwise})"


class _TorchPrinter(_Printer):
    functions = {
        **{name: f"torch.{name}({{0}})" for name in ("exp", "log", "sqrt", "tanh", "atanh", "sinh", "cosh",
                                                     "asinh", "acosh", "sin", "cos", "tan", "atan",
                                                     "log1p", "expm1")},
        "erf": "torch.special.erf({0})",
        "erfc": "torch.special.erfc({0})",
        "Abs": "torch.abs({0})",
        "sign": "torch.sign({0})",
        "loggamma": "torch.lgamma({0})",
        "atan2": "torch.atan2(_tensor({0}, _like), _tensor({1}, _like))",
        "logaddexp": "torch.logaddexp(_tensor({0}, _like), _tensor({1}, _like))",
        "sigmoid": "_sigmoid({0})",
    }
    logical_and = " & "
    logical_or = " | "
    maximum, minimum = "torch.maximum", "torch.minimum"

    # torch's binary functions want tensors on both sides: a Python number becomes one like the first input
    def pair(self, function: str, a: str, b: str) -> str:
        return f"{function}(_tensor({a}, _like), _tensor({b}, _like))"

    def select(self, condition: str, value: str, otherwise: str) -> str:
        return (f"torch.where(_tensor({condition}, _like, torch.bool), _tensor({value}, _like), "
                f"_tensor({otherwise}, _like))")


class _MpmathPrinter(_Printer):
    functions = {
        **{name: f"mp.{name}({{0}})" for name in ("exp", "log", "sqrt", "erf", "erfc", "tanh", "atanh", "sinh",
                                                  "cosh", "asinh", "acosh", "sin", "cos", "tan", "atan",
                                                  "log1p", "expm1", "loggamma", "sign")},
        "Abs": "abs({0})",
        "atan2": "mp.atan2({0}, {1})",
        "logaddexp": "_logaddexp({0}, {1})",
        "sigmoid": "_sigmoid({0})",
    }

    fold_numeric_powers = False  # constants are rebuilt at call time, at the working precision

    def nan(self) -> str:
        return "mp.nan"

    def constant(self, e) -> str:
        """Exact at any precision: integers and rationals are built at call time, floats bit-exactly."""
        if e.is_Integer:
            return f"mpf({int(e)})"
        if e.is_Rational:
            return f"(mpf({int(e.p)})/{int(e.q)})"
        if e.is_Float:
            sign, man, exp, _ = e._mpf_
            return f"mp.ldexp(mpf({-man if sign else man}), {exp})"
        constants = {sympy.pi: "mp.pi", sympy.E: "mp.e", sympy.EulerGamma: "mp.euler", sympy.Catalan: "mp.catalan",
                     sympy.oo: "mp.inf", -sympy.oo: "(-mp.inf)", sympy.nan: "mp.nan"}
        if e in constants:
            return f"(+{constants[e]})"
        if e.is_Add:
            return "(" + " + ".join(self.doprint(a) for a in e.args) + ")"
        if e.is_Mul:
            return self.mul(e)
        if e.is_Pow:
            return self.power(e.base, e.exp)
        name = type(e).__name__
        if isinstance(e, sympy.Function) and name in self.functions:
            return self.functions[name].format(*(self.constant(a) for a in e.args))
        raise ParameterError("exprs", str(e), "constants built from numbers, pi, E and supported functions")


# -- module templates ------------------------------------------------------------------------------

_NUMBA_HEADER = '''import math

import numba

_JIT = dict(cache={cache}, error_model="numpy")


@numba.njit(**_JIT)
def _logaddexp(a, b):
    """log(e^a + e^b) = max + log1p(e^-|a-b|); a == b (including both infinite) handled exactly."""
    if a == b:
        return a + 0.6931471805599453
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


@numba.njit(**_JIT)
def _sigmoid(u):
    """1/(1 + e^-u) without overflow for either sign of u."""
    if u >= 0.0:
        return 1.0 / (1.0 + math.exp(-u))
    e = math.exp(u)
    return e / (1.0 + e)


@numba.njit(**_JIT)
def _sigmoid_pair(u):
    """(sigmoid(u), sigmoid(-u)) from one exponential, each the same operations as its own `_sigmoid` call."""
    e = math.exp(-abs(u))
    if u >= 0.0:
        return 1.0 / (1.0 + e), e / (1.0 + e)
    return e / (1.0 + e), 1.0 / (1.0 + e)


@numba.njit(**_JIT)
def _sign(u):
    return 1.0 if u > 0.0 else (-1.0 if u < 0.0 else 0.0 * u)


@numba.njit(**_JIT)
def evaluate_points(inputs, out):
    """inputs: (n_args, n_points) float64; out: (n_points, n_outputs) float64."""
    for _i in range(inputs.shape[1]):
'''

_NUMPY_HEADER = '''import math

import numpy as np
import scipy.special


def evaluate({args}):
    """Returns the list of outputs (arrays, or Python numbers for constant outputs)."""
'''

_TORCH_HEADER = '''import math

import torch


def _tensor(value, like, dtype=None):
    """`value` as a tensor on the device of `like` (dtype of `like` unless given); tensors pass through."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.as_tensor(value, dtype=like.dtype if dtype is None else dtype, device=like.device)


def _sigmoid(u):
    """1/(1 + e^-u) from e = exp(-|u|) <= 1: no overflow in either branch of `where`, and the backward
    pass e/(1 + e)^2 has no cancellation (torch.sigmoid's backward s(1 - s) loses digits as s -> 1)."""
    e = torch.exp(torch.where(u >= 0, -u, u))
    return torch.where(u >= 0, 1 / (1 + e), e / (1 + e))


def evaluate({args}):
    """Returns the list of outputs (tensors, or Python numbers for constant outputs)."""
'''

_MPMATH_HEADER = '''import math

from mpmath import mp, mpf


def _logaddexp(a, b):
    return max(a, b) + mp.log1p(mp.exp(-abs(a - b)))


def _sigmoid(u):
    return 1 / (1 + mp.exp(-u))


def evaluate({args}):
    """Returns the list of outputs at the current mp precision."""
'''


# Placeholders for the two members of a pair sigmoid(u), sigmoid(-u) in the numba kernels (`_marked_sigmoid_pairs`).
_PAIR_FIRST, _PAIR_SECOND = sympy.Function("sigmoid_pair_first"), sympy.Function("sigmoid_pair_second")


def _marked_sigmoid_pairs(exprs) -> list:
    """exprs with each pair sigmoid(u), sigmoid(-u) among them written as first(u), second(u) (one u per pair).

    The stabilised derivatives are full of such pairs (sigmoid' = sigmoid(u) sigmoid(-u)), and in the numba
    kernels one exponential serves both (`_sigmoid_pair`: each member the same operations as its own `_sigmoid`
    call): the positional-semantic prox Hessian has six pairs among its twelve sigmoids. Arguments are compared
    expanded, so sigmoid(x(x - y)), sigmoid(-x(y - x)) and sigmoid(x(y - x)) make one pair; a member written
    differently from the pair's u then differs from its own call by the rounding of its argument. A sigmoid
    nested inside a marked argument keeps its own call."""
    found = set().union(*(e.atoms(_rewrite.sigmoid) for e in exprs)) if exprs else set()
    classes: dict = {}  # expanded argument -> the sigmoids with that argument
    for s in sorted(found, key=sympy.default_sort_key):
        classes.setdefault(sympy.expand(s.args[0]), []).append(s)
    marks = {}
    for u, members in classes.items():
        partners = classes.get(-u)
        if partners is None or u == -u or members[0] in marks:
            continue
        representative = members[0].args[0]
        marks.update({s: _PAIR_FIRST(representative) for s in members})
        marks.update({s: _PAIR_SECOND(representative) for s in partners})
    return [e.xreplace(marks) for e in exprs] if marks else list(exprs)


def _sigmoid_pair_lines(e, names: dict, printer, indent: str) -> list[str]:
    """The `_sigmoid_pair` assignments that expression e needs before it is printed (first those its marked
    arguments need); each pair is assigned once, its two names entered in `names`."""
    lines = []
    for call in sorted(e.atoms(_PAIR_FIRST, _PAIR_SECOND), key=sympy.default_sort_key):
        if call in names:
            continue
        u = call.args[0]
        lines += _sigmoid_pair_lines(u, names, printer, indent)
        k = sum(isinstance(known, _PAIR_FIRST) for known in names)
        lines.append(f"{indent}p{k}, n{k} = _sigmoid_pair({printer.doprint(u)})")
        names[_PAIR_FIRST(u)], names[_PAIR_SECOND(u)] = f"p{k}", f"n{k}"
    return lines


def generate_source(flat_exprs, args, backend: str, *, cse: bool = True, numba_cache: bool = True,
                    compiler: str = "numba") -> str:
    """Python source of the kernel module for a flat list of (already stabilised) expressions."""
    names = {a: f"a{i}" for i, a in enumerate(args)}
    vectorised_numpy = backend == "numpy" and compiler == "none"
    if backend == "numpy" and not vectorised_numpy:
        flat_exprs = _marked_sigmoid_pairs(flat_exprs)
    if cse:
        replacements, reduced = sympy.cse(flat_exprs, symbols=sympy.numbered_symbols("_cse", cls=sympy.Dummy),
                                          order="none")
        # A numeric common subexpression (exp(1/2)) is substituted back, so that every expression it
        # enters stays numeric and the printers fold it into one constant.
        numeric: dict = {}
        kept = []
        for sym, e in replacements:
            e = e.xreplace(numeric)
            if e.free_symbols:
                kept.append((sym, e))
            else:
                numeric[sym] = e
        replacements, reduced = kept, [e.xreplace(numeric) for e in reduced]
    else:
        replacements, reduced = [], list(flat_exprs)
    for i, (sym, _) in enumerate(replacements):
        names[sym] = f"x{i}"
    printer_class = _NumpyPrinter if vectorised_numpy else {
        "numpy": _NumbaPrinter, "torch": _TorchPrinter, "mpmath": _MpmathPrinter}[backend]
    printer = printer_class(names)
    if backend == "numpy" and not vectorised_numpy:
        lines = [_NUMBA_HEADER.format(cache=bool(numba_cache))]
        indent = " " * 8
        lines += [f"{indent}a{i} = inputs[{i}, _i]" for i in range(len(args))]
        for sym, e in replacements:
            lines += _sigmoid_pair_lines(e, names, printer, indent)
            lines.append(f"{indent}{names[sym]} = {printer.doprint(e)}")
        for j, e in enumerate(reduced):
            lines += _sigmoid_pair_lines(e, names, printer, indent)
            lines.append(f"{indent}out[_i, {j}] = {printer.doprint(e)}")
    else:
        header = {"numpy": _NUMPY_HEADER, "torch": _TORCH_HEADER, "mpmath": _MPMATH_HEADER}[backend]
        lines = [header.format(args=", ".join(names[a] for a in args))]
        indent = " " * 4
        if backend == "torch":
            lines.append(f"{indent}_like = {names[args[0]] if args else 'None'}")
        lines += [f"{indent}{names[sym]} = {printer.doprint(e)}" for sym, e in replacements]
        lines.append(f"{indent}return [")
        lines += [f"{indent}    {printer.doprint(e)}," for e in reduced]
        lines.append(f"{indent}]")
    return "\n".join(lines) + "\n"
