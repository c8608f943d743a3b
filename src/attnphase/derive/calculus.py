"""Derivatives of scalar and matrix expressions.

Matrices are explicit SymPy matrices of symbols (see `symbols.symbol_matrix`), so traces,
determinants, log-determinants and elementwise functions are ordinary scalar expressions in the
entries and every derivative is a plain partial derivative:

    d/dA_ij  tr(A^2)          = 2 A_ji
    d/dA_ij  log det(I + bA)  = b [(I + bA)^{-1}]_ji        (general A)

For a symmetric matrix built with `symmetric=True` the (i, j) and (j, i) entries are one symbol, so
`matrix_gradient` returns the derivative with respect to that free variable, which counts both
entries (2x the off-diagonal of the "symmetric gradient" convention). That is the derivative a
finite difference in the free variable measures.

No simplification is applied: expressions stay as SymPy builds them and code generation removes the
repeated work by common-subexpression elimination.
"""

from __future__ import annotations

from collections.abc import Iterable

import sympy

from attnphase.errors import ParameterError

__all__ = ["gradient", "hessian", "jacobian", "matrix_gradient", "flatten_variables", "elementwise", "trace", "logdet"]


def flatten_variables(variables) -> list[sympy.Symbol]:
    """A list of distinct symbols from a symbol, a list or a Matrix (row-major), first occurrence kept.

    A symmetric symbol matrix thus contributes each free entry once.
    """
    if isinstance(variables, sympy.Symbol):
        items = [variables]
    elif isinstance(variables, sympy.MatrixBase):
        items = list(variables)
    elif isinstance(variables, Iterable):
        items = []
        for v in variables:
            items.extend(flatten_variables(v))
    else:
        raise ParameterError("variables", variables, "a Symbol, a list of Symbols or a Matrix of Symbols")
    out, seen = [], set()
    for v in items:
        if not isinstance(v, sympy.Symbol):
            raise ParameterError("variables", v, "symbols only")
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _scalar(expr) -> sympy.Expr:
    expr = sympy.sympify(expr)
    if isinstance(expr, sympy.MatrixBase):
        if expr.shape != (1, 1):
            raise ParameterError("expr", expr.shape, "a scalar expression")
        expr = expr[0, 0]
    return expr


def gradient(expr, variables) -> sympy.Matrix:
    """Column vector (n x 1) of partial derivatives d expr / d v_k."""
    expr = _scalar(expr)
    vs = flatten_variables(variables)
    return sympy.Matrix([sympy.diff(expr, v) for v in vs])


def hessian(expr, variables) -> sympy.Matrix:
    """n x n matrix of second derivatives; only the upper triangle is differentiated (symmetry)."""
    expr = _scalar(expr)
    vs = flatten_variables(variables)
    first = [sympy.diff(expr, v) for v in vs]
    n = len(vs)
    H = sympy.zeros(n, n)
    for i in range(n):
        for j in range(i, n):
            H[i, j] = sympy.diff(first[i], vs[j])
            H[j, i] = H[i, j]
    return H


def jacobian(exprs, variables) -> sympy.Matrix:
    """m x n matrix d exprs_i / d v_j; `exprs` a list, a Matrix (flattened row-major) or one expression."""
    if isinstance(exprs, sympy.MatrixBase):
        items = list(exprs)
    elif isinstance(exprs, (list, tuple)):
        items = [sympy.sympify(e) for e in exprs]
    else:
        items = [sympy.sympify(exprs)]
    vs = flatten_variables(variables)
    return sympy.Matrix(len(items), len(vs), lambda i, j: sympy.diff(items[i], vs[j]))


def matrix_gradient(expr, M: sympy.MatrixBase) -> sympy.Matrix:
    """Matrix of the same shape as the symbol matrix M with entries d expr / d M[i, j].

    For a symmetric symbol matrix the (i, j) and (j, i) entries are equal and are the derivative with
    respect to the shared symbol.
    """
    if not isinstance(M, sympy.MatrixBase):
        raise ParameterError("M", M, "a SymPy Matrix of symbols")
    expr = _scalar(expr)
    cache: dict[sympy.Symbol, sympy.Expr] = {}

    def entry(i, j):
        s = M[i, j]
        if not isinstance(s, sympy.Symbol):
            raise ParameterError("M", s, "a matrix whose entries are symbols")
        if s not in cache:
            cache[s] = sympy.diff(expr, s)
        return cache[s]

    return sympy.Matrix(M.rows, M.cols, entry)


def elementwise(f, M: sympy.MatrixBase) -> sympy.Matrix:
    """Apply a scalar function to every entry of M."""
    return M.applyfunc(f)


def trace(M: sympy.MatrixBase) -> sympy.Expr:
    """tr M."""
    return M.trace()


def logdet(M: sympy.MatrixBase) -> sympy.Expr:
    """log det M of an explicit matrix (Berkowitz determinant, no simplification)."""
    return sympy.log(M.det(method="berkowitz"))
