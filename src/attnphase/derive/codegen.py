"""Code generation: one SymPy expression, list or Matrix -> numpy / torch / mpmath kernels.

    kernel = compile_kernel([grad, hess], [x, y, beta], backend="numpy")
    values = kernel(x_array, y_array, 0.5)          # arrays broadcast together

Pipeline (all backends): flatten the outputs, apply the numerical-stability rules of
`attnphase.derive.rewrite` (logaddexp, sigmoid, log1p, expm1), eliminate common subexpressions
(`sympy.cse`), print straight-line Python source with a backend-specific printer, and load it.

* ``numpy``: the CSE'd straight-line code becomes the body of a loop over points compiled with numba
  (`njit`, `error_model="numpy"`, so 1/0 gives inf and log(-1) NaN instead of an exception). Measured on
  the gradient + Hessian of the 4x4 matrix action (272 outputs, ~410 CSE temporaries, 10^5 points, on
  a shared 2-core machine): numba loop 0.06-0.19 s per call and 4-15 s to compile; SymEngine
  `Lambdify(backend="llvm", cse=True)` 0.8 s per call, 0.8 s to compile; vectorised numpy over the
  CSE'd code 0.9 s; `sympy.lambdify` without CSE 10-25 s. The numba loop is used because the runtime
  is what sweeps pay, and because it prints log1p/expm1/erfc/logaddexp directly where SymEngine would
  need them expanded. Compilation is paid once: numba's cache (`cache=True`) stores the machine code
  next to the generated source file, so another process loads it (about 1 s) without compiling.
  With `compiler="none"` the same CSE'd code is printed with vectorised numpy/scipy.special calls and
  runs without compiling (for one-off evaluations).
* ``torch``: straight-line code calling torch functions. Constants are Python floats, so every tensor
  keeps the dtype and device of the inputs; autograd flows through. Non-tensor inputs are converted to
  the dtype/device of the first tensor input (float64 on the CPU if there is none).
* ``mpmath``: straight-line code calling `mpmath.mp` functions; rational constants are built at call
  time (`mpf(p)/q`), so the kernel runs at whatever `mp.dps` is in force when it is called.

Output shapes: a scalar expression -> the broadcast shape `(...)` of the inputs; a list of k ->
`(..., k)`; an n x m Matrix -> `(..., n, m)`. The mpmath backend returns an `mpf` for a scalar output at
scalar inputs and numpy object arrays otherwise.

Caching: a kernel is keyed by a SHA-256 of (CODEGEN_VERSION, backend, options, srepr of the arguments,
and a Merkle hash of the srepr tree of each output, see `structural_digests`). The generated module is
written to `$ATTNPHASE_CACHE_DIR/kernels/` (default `~/.cache/attnphase/kernels/`) and kept in an
in-memory dict, so neither the rewrites, the CSE nor the compilation run twice. Kernels pickle as (key, source), and unpickling in a worker process imports the
cached module (or rewrites it if that cache directory lacks it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy

from attnphase.derive import rewrite as _rewrite
from attnphase.errors import ParameterError
from attnphase.params import check_choice
from attnphase.resume import cache_root

__all__ = ["CODEGEN_VERSION", "BACKENDS", "Kernel", "BoundKernel", "ActionKernels", "compile_kernel", "compile_action",
           "cache_dir", "clear_memory_cache", "generate_source", "load_generated_module", "structural_digests"]

CODEGEN_VERSION = "4"
BACKENDS = ("numpy", "torch", "mpmath")

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
        return f"{b}**{self.exponent(exponent)}"

    def exponent(self, exponent) -> str:
        return self.doprint(exponent)

    def minmax(self, e) -> str:
        fn = "max" if isinstance(e, sympy.Max) else "min"
        args = [self.doprint(a) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = f"{fn}({out}, {a})"
        return out

    def piecewise(self, e) -> str:
        out = self.nan()
        for expr, cond in reversed(e.args):
            if cond is sympy.true:
                out = self.doprint(expr)
            else:
                out = f"({self.doprint(expr)} if {self.doprint(cond)} else {out})"
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

    def minmax(self, e) -> str:
        fn = "np.maximum" if isinstance(e, sympy.Max) else "np.minimum"
        args = [self.doprint(a) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = f"{fn}({out}, {a})"
        return out

    def piecewise(self, e) -> str:
        out = self.nan()
        for expr, cond in reversed(e.args):
            if cond is sympy.true:
                out = self.doprint(expr)
            else:
                out = f"np.where({self.doprint(cond)}, {self.doprint(expr)}, {out})"
        return out


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

    def minmax(self, e) -> str:
        fn = "torch.maximum" if isinstance(e, sympy.Max) else "torch.minimum"
        args = [self.doprint(a) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = f"{fn}(_tensor({out}, _like), _tensor({a}, _like))"
        return out

    def piecewise(self, e) -> str:
        out = self.nan()
        for expr, cond in reversed(e.args):
            if cond is sympy.true:
                out = self.doprint(expr)
            else:
                out = (f"torch.where(_tensor({self.doprint(cond)}, _like, torch.bool), "
                       f"_tensor({self.doprint(expr)}, _like), _tensor({out}, _like))")
        return out


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

    def exponent(self, exponent) -> str:
        return self.doprint(exponent)

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


# -- kernels ---------------------------------------------------------------------------------------

class Kernel:
    """A compiled kernel: call it with one value per argument (arrays broadcast together).

    Attributes: `backend`, `compiler` ("numba"/"none" for numpy, else None), `arg_names` (the SymPy
    names of the arguments, in order), `output_shape`
    (() for a scalar expression, (k,) for a list, (n, m) for a Matrix), `key` (cache key), `source`
    (the generated module), `path` (its file in the disk cache, or None).
    """

    def __init__(self, key: str, source: str, backend: str, arg_names: tuple, output_shape: tuple, module,
                 path: Path | None, compiler: str = "numba"):
        self.key = key
        self.compiler = compiler if backend == "numpy" else None
        self.source = source
        self.backend = backend
        self.arg_names = tuple(arg_names)
        self.output_shape = tuple(output_shape)
        self.path = path
        self._module = module
        self._n_outputs = int(np.prod(self.output_shape)) if self.output_shape else 1

    @property
    def module_name(self) -> str:
        """Name of the generated module (registered in sys.modules when the kernel lives in the disk
        cache): numba code that calls this kernel's `evaluate` imports it as a module global, the only
        way its own compiled code can be cached."""
        return self._module.__name__

    def __repr__(self):
        return (f"Kernel(backend={self.backend!r}, args={list(self.arg_names)}, "
                f"output_shape={self.output_shape}, key={self.key[:12]})")

    def __reduce__(self):
        # Rebuilt from source in the receiving process (numba loads its compiled code from the disk
        # cache next to the source file when the cache directory is shared).
        meta = (self.backend, self.arg_names, self.output_shape, self.path is not None, self.compiler)
        return (_rebuild_kernel, (self.key, self.source, meta))

    def __call__(self, *values):
        if len(values) != len(self.arg_names):
            raise ParameterError("kernel arguments", len(values),
                                 f"exactly {len(self.arg_names)} values ({', '.join(self.arg_names)})")
        if self.backend == "numpy":
            return self._call_numpy(values)
        if self.backend == "torch":
            return self._call_torch(values)
        return self._call_mpmath(values)

    def bind(self, **fixed) -> "BoundKernel":
        """This kernel with some arguments fixed by name (the SymPy names in `arg_names`).

        The result is called with the remaining arguments, by position in `arg_names` order or by name:
        no positional argument list has to be kept in step with the expression by hand.
        """
        return BoundKernel(self, fixed)

    def call(self, **values):
        """Evaluate with every argument given by name."""
        return self.bind(**values)()

    def _call_numpy(self, values):
        arrays = [np.asarray(v, dtype=np.float64) for v in values]
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        if self.compiler == "none":
            with np.errstate(all="ignore"):  # same semantics as the numba loop: inf/NaN, no warnings
                outs = [np.broadcast_to(np.asarray(o, dtype=np.float64), shape)
                        for o in self._module.evaluate(*arrays)]
            result = np.stack(outs, axis=-1).reshape(shape + self.output_shape)
            return result[()] if result.ndim == 0 else result
        n_points = math.prod(shape)
        inputs = np.empty((len(arrays),) + shape)
        for j, a in enumerate(arrays):
            inputs[j] = a  # broadcast by the assignment (np.broadcast_to per argument cost 20 % of small calls)
        out = np.empty((n_points, self._n_outputs))
        self._module.evaluate_points(inputs.reshape(len(arrays), n_points), out)
        result = out.reshape(shape + self.output_shape)
        return result[()] if result.ndim == 0 else result

    def _call_torch(self, values):
        import torch

        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        floating = [t for t in tensors if t.is_floating_point()]
        if floating:
            dtype, device = floating[0].dtype, floating[0].device
        elif tensors:
            dtype, device = torch.float64, tensors[0].device
        else:
            dtype, device = torch.float64, torch.device("cpu")
        args = [v.to(dtype=dtype, device=device) if isinstance(v, torch.Tensor)
                else torch.as_tensor(v, dtype=dtype, device=device) for v in values]
        shape = torch.broadcast_shapes(*(a.shape for a in args)) if args else torch.Size()
        outs = []
        for o in self._module.evaluate(*args):
            if not isinstance(o, torch.Tensor):
                o = torch.full(shape, float(o), dtype=dtype, device=device)
            outs.append(o.expand(shape) if o.shape != shape else o)
        if not self.output_shape:
            return outs[0]
        return torch.stack(outs, dim=-1).reshape(tuple(shape) + self.output_shape)

    def _call_mpmath(self, values):
        def one_point(point):
            return [_to_mp(r) for r in self._module.evaluate(*(_to_mp(v) for v in point))]

        if not any(isinstance(v, (np.ndarray, list, tuple)) for v in values):
            res = one_point(values)
            if not self.output_shape:
                return res[0]
            return np.array(res, dtype=object).reshape(self.output_shape)
        arrays = np.broadcast_arrays(*(np.asarray(v, dtype=object) for v in values))
        shape = arrays[0].shape
        out = np.empty(shape + (self._n_outputs,), dtype=object)
        for index in np.ndindex(shape):
            out[index] = one_point([a[index] for a in arrays])
        return out.reshape(shape + self.output_shape)


class BoundKernel:
    """A kernel with some arguments fixed by name; see `Kernel.bind`."""

    def __init__(self, kernel: Kernel, fixed: dict):
        unknown = set(fixed) - set(kernel.arg_names)
        if unknown:
            raise ParameterError("kernel argument", sorted(unknown)[0], "one of " + ", ".join(kernel.arg_names))
        self.kernel = kernel
        self.fixed = dict(fixed)
        self.free_names = tuple(n for n in kernel.arg_names if n not in fixed)

    def __repr__(self):
        return f"BoundKernel({self.kernel!r}, fixed={sorted(self.fixed)}, free={list(self.free_names)})"

    def bind(self, **more) -> "BoundKernel":
        return BoundKernel(self.kernel, {**self.fixed, **more})

    def __call__(self, *free_values, **named):
        if free_values and named:
            raise ParameterError("kernel arguments", "positional and named",
                                 "either the free arguments by position or by name, not both")
        if named:
            return self.bind(**named)()
        if len(free_values) != len(self.free_names):
            raise ParameterError("kernel arguments", len(free_values),
                                 f"exactly {len(self.free_names)} values ({', '.join(self.free_names)})")
        values = dict(zip(self.free_names, free_values))
        return self.kernel(*(self.fixed[n] if n in self.fixed else values[n] for n in self.kernel.arg_names))


def _to_mp(v):
    from mpmath import mp, mpf

    if isinstance(v, (mpf, type(mp.mpc(0)))):
        return v
    if isinstance(v, sympy.Basic):
        return mpf(sympy.Float(v, mp.dps + 5)._mpf_) if v.is_real else mp.mpc(complex(v))
    if isinstance(v, np.generic):
        v = v.item()
    return mpf(v) if not isinstance(v, complex) else mp.mpc(v)


# -- caches ----------------------------------------------------------------------------------------

_MEMORY_CACHE: dict[str, Kernel] = {}  # cache key (SHA-256) -> kernel
_OBJECT_CACHE: dict[tuple, Kernel] = {}  # (backend, options, args, outputs as SymPy objects) -> kernel
_LOCK = threading.Lock()


def cache_dir() -> Path:
    """Directory of the on-disk kernel cache: $ATTNPHASE_CACHE_DIR/kernels or ~/.cache/attnphase/kernels."""
    return cache_root() / "kernels"


def clear_memory_cache() -> None:
    """Forget in-memory kernels (the disk cache stays); the next compile_kernel loads from disk."""
    with _LOCK:
        _MEMORY_CACHE.clear()
        _OBJECT_CACHE.clear()


def _module_name(key: str) -> str:
    return f"attnphase_kernel_{key[:40]}"


def _load_module(key: str, source: str, path: Path | None):
    """Import the generated module from its file (so numba can cache next to it) or exec it in memory."""
    return _import_source(_module_name(key), source, path)


def load_generated_module(name: str, source: str, *, on_disk: bool = True):
    """Load generated Python source as the module `name`, through the same cache as the kernels.

    on_disk: written (atomically, only if it changed) to `cache_dir()/<name>.py`, imported from there
    and registered in sys.modules, so that numba caches the machine code of its `cache=True` functions
    next to it and a later process loads them without compiling; else executed in memory. Code that
    calls compiled kernels from numba (e.g. derive.fused) is generated and loaded this way.
    """
    path = None
    if on_disk:
        path = cache_dir() / f"{name}.py"
        if not path.exists() or path.read_text() != source:
            _write_atomic(path, source)
    return _import_source(name, source, path)


def _import_source(name: str, source: str, path: Path | None):
    if path is not None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # numba's cache locator needs an importable module
        spec.loader.exec_module(module)
        return module
    import types

    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _rebuild_kernel(key: str, source: str, meta) -> Kernel:
    backend, arg_names, output_shape, on_disk, compiler = meta
    with _LOCK:
        if key in _MEMORY_CACHE:
            return _MEMORY_CACHE[key]
    path = None
    if on_disk:
        path = cache_dir() / f"k_{key[:40]}.py"
        if not path.exists() or path.read_text() != source:
            _write_atomic(path, source)
    kernel = Kernel(key, source, backend, arg_names, output_shape, _load_module(key, source, path), path,
                    compiler or "numba")
    if on_disk:
        with _LOCK:
            _MEMORY_CACHE[key] = kernel
    return kernel


# -- entry point -----------------------------------------------------------------------------------

def structural_digests(exprs) -> list[str]:
    """Merkle hash of the srepr tree of each expression: atoms hashed by their srepr (symbols with their
    assumptions, exact numbers), compound nodes by class path and their arguments' digests.

    Equivalent to hashing srepr(expr) but linear in the number of distinct subtrees: srepr of the
    4x4 action's Hessian takes 12 s, this 10 ms.
    """
    memo: dict = {}

    def digest(e) -> str:
        done = memo.get(e)
        if done is not None:
            return done
        if not e.args:
            text = sympy.srepr(e)
        else:
            text = f"{type(e).__module__}.{type(e).__qualname__}(" + ",".join(digest(a) for a in e.args) + ")"
        done = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        memo[e] = done
        return done

    return [digest(e) for e in exprs]


def _as_expression(e):
    try:
        return sympy.sympify(e, strict=not isinstance(e, str))
    except (sympy.SympifyError, SyntaxError, TypeError, ValueError):
        raise ParameterError("exprs", e, "SymPy expressions (or text SymPy can parse)") from None


def _flatten_outputs(exprs):
    if isinstance(exprs, sympy.MatrixBase):
        if 0 in exprs.shape:
            raise ParameterError("exprs", exprs, "a non-empty Matrix")
        return [_as_expression(e) for e in exprs], tuple(exprs.shape)
    if isinstance(exprs, (list, tuple)):
        if not exprs:
            raise ParameterError("exprs", exprs, "a non-empty list of scalar expressions")
        flat = []
        for e in exprs:
            if isinstance(e, (sympy.MatrixBase, list, tuple)):
                raise ParameterError("exprs", type(e).__name__, "a list of scalar expressions (not nested)")
            flat.append(_as_expression(e))
        return flat, (len(flat),)
    return [_as_expression(exprs)], ()


def _rules_signature(stabilize):
    if stabilize is True:
        rules = _rewrite.STABILITY_RULES
    elif stabilize is False or stabilize is None:
        rules = ()
    else:
        try:
            rules = tuple(stabilize)
        except TypeError:
            raise ParameterError("stabilize", stabilize, "True, False or a sequence of rewrite rules") from None
    known = {id(v): k for k, v in vars(_rewrite).items() if k.isupper()}
    names = [known.get(id(r)) for r in rules]
    return rules, (None if None in names else ",".join(names))


def compile_kernel(exprs, args, backend: str = "numpy", *, cse: bool = True, stabilize=True,
                   cache: bool = True, compiler: str = "numba") -> Kernel:
    """Generate and load a kernel evaluating `exprs` (expression, list or Matrix) at values of `args`.

    backend: "numpy" (numba-compiled loop over broadcast points), "torch" or "mpmath".
    cse: common-subexpression elimination. stabilize: True for rewrite.STABILITY_RULES, False for none,
    or a tuple of rules. cache: use the in-memory and on-disk caches (custom rules outside
    `rewrite` skip the disk cache). compiler (numpy backend only): "numba" (a compiled loop; pays off
    from ~10^3 points or repeated calls) or "none" (vectorised numpy/scipy calls, no compilation: for
    one-off evaluations, or where a compile of several seconds is not worth it).
    """
    backend = check_choice("backend", backend, BACKENDS)
    compiler = check_choice("compiler", compiler, ("numba", "none")) if backend == "numpy" else "numba"
    if isinstance(args, sympy.Symbol):
        args = [args]
    if isinstance(args, sympy.MatrixBase):
        args = list(args)
    if isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
        raise ParameterError("args", args, "a list of distinct SymPy symbols")
    args = list(args)
    if not all(isinstance(a, sympy.Symbol) for a in args) or len(set(args)) != len(args):
        raise ParameterError("args", args, "a list of distinct SymPy symbols")
    flat, output_shape = _flatten_outputs(exprs)
    missing = set().union(*(e.free_symbols for e in flat)) - set(args) if flat else set()
    if missing:
        raise ParameterError("args", [str(a) for a in args],
                             "a list containing every free symbol; missing " + ", ".join(sorted(map(str, missing))))
    rules, rules_name = _rules_signature(stabilize)
    # Fast path: the same SymPy objects again in this process (structural hash, no srepr needed).
    object_key = (backend, compiler, bool(cse), rules_name if rules_name is not None else tuple(map(id, rules)),
                  tuple(args), tuple(flat), output_shape)
    if cache:
        with _LOCK:
            if object_key in _OBJECT_CACHE:
                return _OBJECT_CACHE[object_key]
    key_text = "\n".join([CODEGEN_VERSION, backend, f"compiler={compiler}", f"cse={bool(cse)}", f"rules={rules_name}",
                          sympy.srepr(args), *structural_digests(flat), repr(output_shape)])
    key = hashlib.sha256(key_text.encode()).hexdigest()
    on_disk = bool(cache) and rules_name is not None
    if cache:
        with _LOCK:
            if key in _MEMORY_CACHE:
                _OBJECT_CACHE[object_key] = _MEMORY_CACHE[key]
                return _MEMORY_CACHE[key]
    path = cache_dir() / f"k_{key[:40]}.py" if on_disk else None
    if path is not None and path.exists():
        source = path.read_text()
    else:
        stable = _rewrite.stabilize(flat, rules) if rules else flat
        source = generate_source(stable, args, backend, cse=cse, numba_cache=on_disk, compiler=compiler)
        header = "# generated by attnphase.derive.codegen " + json.dumps(
            {"version": CODEGEN_VERSION, "backend": backend, "compiler": compiler, "args": [str(a) for a in args],
             "output_shape": list(output_shape), "key": key}) + "\n"
        source = header + source
        if path is not None:
            _write_atomic(path, source)
    kernel = Kernel(key, source, backend, tuple(str(a) for a in args), output_shape,
                    _load_module(key, source, path), path, compiler)
    if cache:
        with _LOCK:
            _MEMORY_CACHE[key] = kernel
            _OBJECT_CACHE[object_key] = kernel
    return kernel


@dataclass(frozen=True)
class ActionKernels:
    """An action S(variables; parameters) with its gradient and Hessian in the variables, compiled for
    float64 (numpy) and for mpmath: the kernel set every minimisation or saddle-node solve needs.

    `variables` and `parameters` are the SymPy symbols; every kernel takes the variables first, then the
    parameters, and can be bound by name (`kernels.action.bind(n=..., L=...)`).
    """

    variables: tuple
    parameters: tuple
    action: Kernel
    gradient: Kernel
    hessian: Kernel
    action_mp: Kernel
    gradient_mp: Kernel
    hessian_mp: Kernel


def compile_action(expr, variables, parameters) -> ActionKernels:
    """Compile S, its gradient and its Hessian in `variables`, each in float64 and in mpmath (cached)."""
    from attnphase.derive.calculus import gradient, hessian

    variables, parameters = tuple(variables), tuple(parameters)
    args = list(variables) + list(parameters)
    g = list(gradient(expr, list(variables)))
    h = hessian(expr, list(variables))
    return ActionKernels(
        variables, parameters,
        compile_kernel(expr, args), compile_kernel(g, args), compile_kernel(h, args),
        compile_kernel(expr, args, backend="mpmath"), compile_kernel(g, args, backend="mpmath"),
        compile_kernel(h, args, backend="mpmath"),
    )
