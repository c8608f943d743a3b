"""A map F wrapped for the fixed-point solvers and the finite-difference Jacobians: shape handling, evaluation
counting, the checks of finiteness and of the coordinate transforms' domains, and the one exception that stops
a solver with a status and a message (never a traceback from the user's F)."""

from __future__ import annotations

import numpy as np

from attnphase.errors import ParameterError
from attnphase.results import Status

__all__ = ["SolverStop", "WrappedMap"]


class SolverStop(Exception):
    """Abort the solver with a status and a message."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class WrappedMap:
    """F wrapped for the solvers: shape handling, evaluation counting, domain and finiteness checks."""

    def __init__(self, F, shape, transforms):
        self.F = F
        self.shape = shape
        self.transforms = transforms
        self.evaluations = 0
        self.last_x: np.ndarray | None = None  # the last point F was called at (for error reports)

    def call(self, x: np.ndarray) -> np.ndarray:
        """F(x) as a flat array; raises SolverStop on exceptions, wrong shapes and non-finite values."""
        self.evaluations += 1
        self.last_x = x
        arg = float(x[0]) if self.shape == () else x.reshape(self.shape).copy()
        try:
            with np.errstate(all="ignore"):
                y = np.asarray(self.F(arg), dtype=float).ravel()
        except ParameterError:
            raise
        except Exception as exc:  # F is user code; its failure is a status, not a traceback
            raise SolverStop(Status.FAILED, f"F raised {type(exc).__name__}: {exc} at x = {_short(x)}") from None
        if y.shape != x.shape:
            raise SolverStop(Status.FAILED, f"F returned {y.size} values for {x.size} coordinates")
        if not np.all(np.isfinite(y)):
            raise SolverStop(Status.DIVERGED, f"F returned non-finite values at x = {_short(x)}")
        return y

    def contains(self, x: np.ndarray) -> bool:
        """Whether every coordinate of x lies in its transform's domain (finite included)."""
        return all(t.contains(v) for t, v in zip(self.transforms, x))

    def to_u(self, x: np.ndarray) -> np.ndarray:
        return np.array([t.to_unconstrained(xi) for t, xi in zip(self.transforms, x)], dtype=float)

    def to_x(self, u: np.ndarray) -> np.ndarray:
        return np.array([t.from_unconstrained(ui) for t, ui in zip(self.transforms, u)], dtype=float)

    def G(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x, F(x), T(F(x))) for x = T^-1(u)."""
        if not np.all(np.isfinite(u)):
            raise SolverStop(Status.DIVERGED, f"the iterate became non-finite (unconstrained coordinates {_short(u)})")
        x = self.to_x(u)
        y = self.call(x)
        for i, (t, yi) in enumerate(zip(self.transforms, y)):
            if not t.contains(yi):
                raise SolverStop(
                    Status.FAILED,
                    f"F(x) left the domain: coordinate {i} = {yi:.6g} is outside {t.describe()} at x = {_short(x)}",
                )
        return x, y, self.to_u(y)


def _short(values: np.ndarray) -> str:
    """A vector in a message, six significant digits each (callers quote messages whole, so keep them short)."""
    return "[" + ", ".join(f"{v:.6g}" for v in np.ravel(values)) + "]"
