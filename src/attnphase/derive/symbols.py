"""Declared symbols: model parameters and order parameters with their domains.

A model declares each quantity once, with the set of values it may take:

    beta = parameter("beta", Domain.positive(), latex=r"\\beta", description="inverse temperature")
    m = order_parameter("m", Domain.interval(-1, 1))

The SymPy assumptions of the returned `Symbol` follow the domain (positive, nonnegative, integer,
...), so SymPy simplifies `sqrt(beta**2)` to `beta`. The domain, LaTeX name and description are
recorded in a module-level registry keyed by the symbol, so `validate(beta, value)` checks a number
where it enters the public API and `render.latex` prints the declared LaTeX name.

SymPy symbols with the same name and assumptions are the same object, so re-importing a model (for
instance in a worker process) re-registers identical records: declarations are idempotent.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import sympy

from attnphase.errors import ParameterError

__all__ = [
    "Domain",
    "SymbolInfo",
    "parameter",
    "order_parameter",
    "symbol_matrix",
    "domain_of",
    "symbol_info",
    "latex_names",
    "validate",
]


@dataclass(frozen=True)
class Domain:
    """A real interval (possibly unbounded, open or closed at each end), optionally integers only.

    `low`/`high` are floats; `-inf`/`inf` mean unbounded (an infinite end is always open).
    """

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = True
    high_open: bool = True
    integer: bool = False

    def __post_init__(self):
        low, high = float(self.low), float(self.high)
        if math.isnan(low) or math.isnan(high) or low > high:
            raise ParameterError("domain", (self.low, self.high), "an interval with low <= high")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        # An infinite end cannot be attained.
        if math.isinf(low):
            object.__setattr__(self, "low_open", True)
        if math.isinf(high):
            object.__setattr__(self, "high_open", True)

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def real(cls) -> Domain:
        """All real numbers."""
        return cls()

    @classmethod
    def positive(cls) -> Domain:
        """(0, inf)."""
        return cls(0.0, math.inf, low_open=True)

    @classmethod
    def nonnegative(cls) -> Domain:
        """[0, inf)."""
        return cls(0.0, math.inf, low_open=False)

    @classmethod
    def interval(cls, low, high, low_open: bool = False, high_open: bool = False, integer: bool = False) -> Domain:
        """[low, high] by default; `low_open`/`high_open` exclude an end."""
        return cls(float(low), float(high), low_open=low_open, high_open=high_open, integer=integer)

    @classmethod
    def unit_interval(cls) -> Domain:
        """[0, 1]."""
        return cls(0.0, 1.0, low_open=False, high_open=False)

    @classmethod
    def integers(cls, low=-math.inf, high=math.inf) -> Domain:
        """Integers in [low, high]."""
        return cls(float(low), float(high), low_open=False, high_open=False, integer=True)

    # -- queries --------------------------------------------------------------------------------
    def contains(self, x) -> bool:
        """True if the real number `x` lies in the domain (NaN never does)."""
        try:
            v = float(x)
        except (TypeError, ValueError, OverflowError):
            return False
        if math.isnan(v):
            return False
        if self.integer and not (math.isfinite(v) and v.is_integer()):
            return False
        if v < self.low or (self.low_open and v == self.low):
            return False
        if v > self.high or (self.high_open and v == self.high):
            return False
        return True

    def describe(self) -> str:
        """Human-readable description, e.g. 'a real number in (0, inf)'."""
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        kind = "an integer" if self.integer else "a real number"
        return f"{kind} in {left}{_fmt(self.low)}, {_fmt(self.high)}{right}"

    def assumptions(self) -> dict[str, bool]:
        """SymPy assumptions implied by the domain (only ones that hold for every member)."""
        out: dict[str, bool] = {"real": True}
        if self.integer:
            out["integer"] = True
        if self.low > 0 or (self.low == 0 and self.low_open):
            out["positive"] = True
        elif self.low >= 0:
            out["nonnegative"] = True
        if self.high < 0 or (self.high == 0 and self.high_open):
            out["negative"] = True
        elif self.high <= 0:
            out["nonpositive"] = True
        return out


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}"


@dataclass(frozen=True)
class SymbolInfo:
    """What a declaration records about a symbol."""

    symbol: sympy.Symbol
    domain: Domain
    latex: str | None
    description: str
    is_order_parameter: bool


_REGISTRY: dict[sympy.Symbol, SymbolInfo] = {}


def _declare(name: str, domain: Domain, latex: str | None, description: str, is_order: bool) -> sympy.Symbol:
    if not isinstance(name, str) or not name.isidentifier():
        raise ParameterError("name", name, "a Python identifier (letters, digits, underscores)")
    if not isinstance(domain, Domain):
        raise ParameterError("domain", domain, "an attnphase.derive.symbols.Domain")
    symbol = sympy.Symbol(name, **domain.assumptions())
    _REGISTRY[symbol] = SymbolInfo(symbol, domain, latex, description, is_order)
    return symbol


def parameter(name: str, domain: Domain | None = None, latex: str | None = None, description: str = "") -> sympy.Symbol:
    """Declare a model parameter; returns a SymPy Symbol whose assumptions follow `domain`."""
    return _declare(name, domain if domain is not None else Domain.real(), latex, description, False)


def order_parameter(name: str, domain: Domain | None = None, latex: str | None = None, description: str = "") -> sympy.Symbol:
    """Declare an order parameter (a quantity solved for, e.g. an overlap); otherwise like `parameter`."""
    return _declare(name, domain if domain is not None else Domain.real(), latex, description, True)


def symbol_matrix(name: str, rows: int, cols: int | None = None, *, symmetric: bool = False,
                  domain: Domain | None = None) -> sympy.Matrix:
    """An explicit matrix of declared symbols `name_i_j` (0-based).

    With `symmetric=True` the entries (i, j) and (j, i) are the same symbol `name_min_max`, so
    derivatives with respect to that symbol count both entries (see `calculus.matrix_gradient`).
    """
    cols = rows if cols is None else cols
    if not (isinstance(rows, numbers.Integral) and isinstance(cols, numbers.Integral)) or rows < 1 or cols < 1:
        raise ParameterError("shape", (rows, cols), "positive integers")
    if symmetric and rows != cols:
        raise ParameterError("symmetric", symmetric, "only for square matrices")
    dom = domain if domain is not None else Domain.real()

    def entry(i, j):
        if symmetric and i > j:
            i, j = j, i
        return parameter(f"{name}_{i}_{j}", dom, latex=f"{name}_{{{i}{j}}}")

    return sympy.Matrix(rows, cols, lambda i, j: entry(i, j))


def symbol_info(symbol: sympy.Symbol) -> SymbolInfo | None:
    """The declaration record of `symbol`, or None if it was not declared here."""
    return _REGISTRY.get(symbol)


def domain_of(symbol: sympy.Symbol) -> Domain:
    """The declared domain of `symbol`; an undeclared symbol gets the domain its assumptions imply."""
    info = _REGISTRY.get(symbol)
    if info is not None:
        return info.domain
    if symbol.is_positive:
        return Domain.positive()
    if symbol.is_nonnegative:
        return Domain.nonnegative()
    return Domain.real()


def latex_names() -> dict[sympy.Symbol, str]:
    """Declared LaTeX names of all registered symbols (for `render.latex`)."""
    return {s: info.latex for s, info in _REGISTRY.items() if info.latex}


def validate(symbol: sympy.Symbol, value) -> float:
    """Return `value` as a float if it lies in the domain of `symbol`, else raise ParameterError.

    Booleans, NaN, non-numbers and (unless the domain is unbounded on that side) infinities are rejected.
    """
    domain = domain_of(symbol)
    name = str(symbol)
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ParameterError(name, value, domain.describe())
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(name, value, domain.describe()) from None
    if not math.isfinite(x) or not domain.contains(x):
        raise ParameterError(name, value, domain.describe())
    return x
