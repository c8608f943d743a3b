"""Whether two expressions are equal: symbolically where SymPy can decide it, otherwise at random points
in high precision. Used to hold a rendered derivation to the expressions the solvers compile.

    check = equivalent(shown, reference)          # an Equivalence (a Result)
    checks = check_document(doc)                  # one EquationCheck per equation of a MarkdownDocument

Symbolic: the two sides are structurally identical, or `sympy.simplify` reduces their difference to 0 (the
numerically stable functions of `derive.rewrite`, e.g. sigmoid and logaddexp, are first rewritten as exp and log).
Otherwise (and first, since it is fast and settles every inequality) both sides are evaluated with mpmath
at `points` random points of their free symbols, each drawn inside the symbol's declared domain
(`symbols.domain_of`), at `digits` significant digits; a point where either side is not a finite real
number is redrawn. When they agree there and the difference is small, simplify is tried to prove it
(only then: it has no time limit). Two different analytic expressions agreeing to `digits - 20` digits at
several random points would be a coincidence of probability zero, so agreement there is taken as
equality, and it is reported as such (`method == "points"`).

Expectations (`render.Expectation`) are compared after linearity is applied: each one is split over the
terms of its expanded integrand and the factors free of its random variables are pulled out; what is
left under each 𝔼 is then an opaque quantity, drawn at random like a symbol, and two of them are the
same quantity only if their integrands are equal (checked the same way).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

import mpmath
import sympy

from attnphase.derive.render import Equation, Expectation, MarkdownDocument
from attnphase.derive.rewrite import unstabilize
from attnphase.derive.symbols import domain_of
from attnphase.errors import ParameterError
from attnphase.results import Result, Status

__all__ = ["Equivalence", "EquationCheck", "equivalent", "normalise_expectations", "check_equation",
           "check_document", "SYMBOLIC_SIZE_LIMIT"]

SYMBOLIC_SIZE_LIMIT = 40
"""Operations in a difference above which `sympy.simplify` is not tried (its run time grows quickly)."""
GUARD_DIGITS = 20  # digits the comparison leaves for cancellation inside either side's evaluation
MAX_DRAWS_PER_POINT = 40


@dataclass(frozen=True)
class Equivalence(Result):
    """Whether two expressions are equal. status: converged (equal) or failed (they differ, or no point
    was found where both are real); method: "identical", "symbolic" or "points"; points: how many random
    points were compared; max_relative_difference: the largest |a − b| / max(1, |a|, |b|) there."""

    status: Status
    message: str
    method: str
    points: int = 0
    max_relative_difference: float = 0.0


@dataclass(frozen=True)
class EquationCheck(Result):
    """One rendered equation against its reference, at every value of its free indices."""

    status: Status
    message: str
    equation: str
    label: str | None
    methods: tuple[str, ...]
    max_relative_difference: float


def normalise_expectations(expr):
    """`expr` with each Expectation split over its integrand's terms, constant factors pulled out."""
    def split(expectation):
        integrand, random_variables = expectation.args[0], expectation.args[1:]
        total = sympy.Integer(0)
        for term in sympy.Add.make_args(sympy.expand(integrand)):
            if random_variables:
                constant, varying = term.as_independent(*random_variables, as_Add=False)
            else:  # every symbol may be random: only a number comes out
                constant, varying = term.as_coeff_Mul()
            total += constant * (Expectation(varying, *random_variables) if varying != 1 else 1)
        return total

    return sympy.sympify(expr).replace(lambda e: isinstance(e, Expectation), split)


def _window(symbol, rng: random.Random):
    """One random value inside the declared domain of `symbol`, away from its ends."""
    domain = domain_of(symbol)
    low, high = domain.low, domain.high
    if domain.integer:
        first = int(max(low, 2 if low >= 0 else -3))
        return mpmath.mpf(rng.randint(first, int(min(high, first + 6))))
    if math.isinf(low) and math.isinf(high):
        low, high = -2.0, 2.0
    elif math.isinf(high):
        low, high = low + (0.2 if domain.low_open or low > 0 else 0.05), low + 3.0
    elif math.isinf(low):
        low, high = high - 3.0, high - 0.2
    else:
        margin = 0.05 * (high - low)
        low, high = low + margin, high - margin
    return mpmath.mpf(rng.uniform(low, high))


def _real(value, tolerance) -> mpmath.mpf | None:
    try:
        value = mpmath.mpmathify(value)
    except (TypeError, ValueError):
        return None
    if isinstance(value, mpmath.mpc):
        if abs(value.imag) > tolerance * max(1, abs(value.real)):
            return None
        value = value.real
    return value if mpmath.isfinite(value) else None


def _opaque_symbols(a, b, digits: int, points: int, seed: int):
    """Each expectation (normalised) becomes a symbol drawn like the others; expectations of equal
    integrands (over the same random variables) share one symbol, however the integrands are written."""
    opaque = sorted((a.atoms(Expectation) | b.atoms(Expectation)), key=sympy.default_sort_key)
    representatives: list = []
    replace = {}
    for expectation in opaque:
        for k, other in enumerate(representatives):
            if other.args[1:] == expectation.args[1:] and equivalent(
                    other.args[0], expectation.args[0], digits=digits, points=points, seed=seed).success:
                replace[expectation] = sympy.Symbol(f"expectation_{k}", real=True)
                break
        else:
            replace[expectation] = sympy.Symbol(f"expectation_{len(representatives)}", real=True)
            representatives.append(expectation)
    return a.xreplace(replace), b.xreplace(replace)


def equivalent(a, b, *, digits: int = 50, points: int = 6, seed: int = 0) -> Equivalence:
    """Whether expressions (or matrices of the same shape) `a` and `b` are equal (see the module doc)."""
    a, b = sympy.sympify(a), sympy.sympify(b)
    if isinstance(a, sympy.MatrixBase) or isinstance(b, sympy.MatrixBase):
        if not (isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase)) or a.shape != b.shape:
            return Equivalence(Status.FAILED, f"shapes differ: {getattr(a, 'shape', ())} and {getattr(b, 'shape', ())}",
                               "identical")
        entries = [equivalent(x, y, digits=digits, points=points, seed=seed) for x, y in zip(a, b)]
        failed = [e for e in entries if not e.success]
        worst = max((e.max_relative_difference for e in entries), default=0.0)
        methods = sorted({e.method for e in entries})
        if failed:
            return Equivalence(Status.FAILED, failed[0].message, failed[0].method, failed[0].points, worst)
        return Equivalence(Status.CONVERGED, "every entry equal", "+".join(methods),
                           max(e.points for e in entries), worst)
    a, b = normalise_expectations(a), normalise_expectations(b)
    if a == b:
        return Equivalence(Status.CONVERGED, "structurally identical", "identical")
    # the stable forms the kernels compile (sigmoid, logaddexp, ...) as exp and log: what mpmath evaluates at the
    # points, exactly at their precision, and what simplify knows
    a, b = unstabilize(a), unstabilize(b)
    at_points = _compare_at_points(a, b, digits, points, seed)  # fast, and decides every inequality
    if at_points.success and sympy.count_ops(a - b) <= SYMBOLIC_SIZE_LIMIT and sympy.simplify(a - b) == 0:
        return Equivalence(Status.CONVERGED, "simplify(a - b) == 0", "symbolic")
    return at_points


def _compare_at_points(a, b, digits: int, points: int, seed: int) -> Equivalence:
    a, b = _opaque_symbols(a, b, digits, points, seed)
    symbols = sorted(a.free_symbols | b.free_symbols, key=sympy.default_sort_key)
    rng = random.Random(seed)
    tolerance = mpmath.mpf(10) ** (GUARD_DIGITS - digits)
    with mpmath.workdps(digits):
        left, right = (sympy.lambdify(symbols, side, modules="mpmath") for side in (a, b))
        worst, compared = mpmath.mpf(0), 0
        for _ in range(points * MAX_DRAWS_PER_POINT):
            values = [_window(symbol, rng) for symbol in symbols]
            try:
                x, y = _real(left(*values), tolerance), _real(right(*values), tolerance)
            except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                continue
            if x is None or y is None:
                continue
            difference = abs(x - y) / max(1, abs(x), abs(y))
            worst = max(worst, difference)
            compared += 1
            if difference > tolerance:
                point = ", ".join(f"{s}={mpmath.nstr(v, 6)}" for s, v in zip(symbols, values))
                return Equivalence(Status.FAILED, f"differ at {point}: {mpmath.nstr(x, 12)} vs {mpmath.nstr(y, 12)}",
                                   "points", compared, float(worst))
            if compared == points:
                return Equivalence(Status.CONVERGED, f"equal to {digits - GUARD_DIGITS} digits at {points} random points",
                                   "points", compared, float(worst))
    return Equivalence(Status.FAILED, f"only {compared} of {points} random points gave real values on both sides",
                       "points", compared, float(worst))


def _index_values(document: MarkdownDocument, indices):
    """Every combination of the free indices' integer values (ranges with the document's sizes fixed)."""
    ranges = []
    for index, lower, upper in indices:
        sizes = {symbol: sympy.Integer(value) for symbol, value in document.sizes.items()}
        lower, upper = (sympy.sympify(sympy.sympify(bound).xreplace(sizes)) for bound in (lower, upper))
        if not (lower.is_Integer and upper.is_Integer):
            raise ParameterError("indices", (index, lower, upper), "ranges that are integers once the sizes are fixed")
        ranges.append(range(int(lower), int(upper) + 1))
    return itertools.product(*ranges)


def check_equation(document: MarkdownDocument, equation: Equation, **options) -> EquationCheck:
    """`equation.shown` with the names substituted back against `equation.reference`, at every value of
    its free indices (options: `equivalent`'s digits, points, seed)."""
    if equation.reference is None:
        return EquationCheck(Status.NOT_FOUND, "no reference (a definition checked through its uses)",
                             equation.lhs, equation.label, (), 0.0)
    methods, worst = [], 0.0
    index_symbols = [index for index, _, _ in equation.indices]
    for values in _index_values(document, equation.indices):
        at = dict(zip(index_symbols, (sympy.Integer(v) for v in values)))
        shown = document.expand(sympy.sympify(equation.shown).xreplace(at))
        if equation.substitutions:
            shown = shown.subs(equation.substitutions)
        reference = equation.reference(*values) if callable(equation.reference) else \
            document.expand(sympy.sympify(equation.reference).xreplace(at))
        result = equivalent(shown, reference, **options)
        methods.append(result.method)
        worst = max(worst, result.max_relative_difference)
        if not result.success:
            where = f" at {dict(zip(map(str, index_symbols), values))}" if values else ""
            return EquationCheck(Status.FAILED, f"{equation.lhs}{where}: {result.message}", equation.lhs,
                                 equation.label, tuple(methods), worst)
    return EquationCheck(Status.CONVERGED, "equal to its reference", equation.lhs, equation.label,
                         tuple(sorted(set(methods))), worst)


def check_document(document: MarkdownDocument, **options) -> list[EquationCheck]:
    """`check_equation` for every equation of `document` that has a reference."""
    return [check_equation(document, equation, **options) for equation in document.equations
            if equation.reference is not None]
