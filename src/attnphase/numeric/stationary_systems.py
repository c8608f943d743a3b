"""The actions the continuation follows: S(x; c) with its gradient and Hessian in float64 and, optionally, mpmath.

`ActionSystem` binds `derive.codegen.compile_action` kernels by parameter name (every parameter but the control);
`FunctionSystem` wraps float64 callables (tabulated densities, chain-rule reductions). Both may follow the logarithm
of the control (`log_control`), and fall back to central differences of the gradient where a Hessian is not finite.
`numeric.continuation` follows their stationary branches; `numeric.transition` classifies them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import mpmath
import numpy as np

from attnphase.errors import ParameterError

__all__ = ["StationarySystem", "ActionSystem", "FunctionSystem"]


def _difference_hessian(gradient, x, c, n: int) -> np.ndarray:
    """∇²S by central differences of ∇S (step ε^{1/3} max(1, |x_j|): relative error ~1e-10), symmetrised."""
    x = np.asarray(x, dtype=float)
    columns = []
    for j in range(n):
        h = np.finfo(float).eps ** (1 / 3) * max(1.0, abs(x[j]))
        step = np.zeros(n)
        step[j] = h
        columns.append((gradient(x + step, c) - gradient(x - step, c)) / (2 * h))
    H = np.column_stack(columns)
    return 0.5 * (H + H.T)


class StationarySystem:
    """What the continuation needs of S(x; c): `n` variables, value, gradient and Hessian in float64 and, when
    `mp` is true, in mpmath (value_mp, gradient_mp, hessian_mp at the current mp.dps: folds, branch points and
    action crossings are then polished there; without, they are located in float64 with their error).

    log_control: the continuation variable c is the logarithm of the control parameter (which then must
    be positive): a control that spans decades (a data size from 10⁻⁴ to 10⁴ times its natural scale)
    is followed in steps of similar relative size everywhere, and every location (folds, branch points,
    crossings) is found and reported in ln(control)."""

    n: int
    mp: bool
    log_control: bool

    def parameter(self, c):
        """The control parameter's value at the continuation variable c (float64)."""
        return math.exp(c) if self.log_control else c

    def parameter_mp(self, c):
        return mpmath.exp(c) if self.log_control else c

    def control_gradient(self, x, c) -> np.ndarray:
        """∂_c ∇S by a central difference (step ε^{1/3} max(1, |c|): relative error ~1e-11)."""
        h = np.finfo(float).eps ** (1 / 3) * max(1.0, abs(c))
        return (self.gradient(x, c + h) - self.gradient(x, c - h)) / (2 * h)


@dataclass(frozen=True)
class ActionSystem(StationarySystem):
    """S(x; c) from `derive.codegen.compile_action` kernels: the control parameter named `control`,
    every other parameter bound by name in `fixed` (parameters the kernels do not take are an error).
    Evaluations in float64 (numpy arrays) and mpmath (at the current `mp.dps`); x is a sequence of n
    numbers. mp False: singular points located in float64 only (cheaper, when about 12 digits do)."""

    kernels: object  # derive.codegen.ActionKernels
    control: str
    fixed: Mapping[str, float]
    log_control: bool = False
    mp: bool = True
    bound: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        parameters = [str(p) for p in self.kernels.parameters]
        if self.control not in parameters:
            raise ParameterError("control", self.control, "one of the action's parameters " + ", ".join(parameters))
        missing = sorted(set(parameters) - {self.control} - set(self.fixed))
        unknown = sorted(set(self.fixed) - set(parameters) | ({self.control} & set(self.fixed)))
        if missing or unknown:
            raise ParameterError("fixed", dict(self.fixed), f"a value for every parameter but {self.control!r} "
                                 f"(missing: {missing}, not parameters or the control: {unknown})")
        names = ("action", "gradient", "hessian", "action_mp", "gradient_mp", "hessian_mp")
        object.__setattr__(self, "bound", {name: getattr(self.kernels, name).bind(**self.fixed) for name in names})

    @property
    def n(self) -> int:
        return len(self.kernels.variables)

    def value(self, x, c) -> float:
        return float(self.bound["action"](*x, self.parameter(c)))

    def gradient(self, x, c) -> np.ndarray:
        return np.asarray(self.bound["gradient"](*x, self.parameter(c)), dtype=float).reshape(self.n)

    def hessian(self, x, c) -> np.ndarray:
        """∇²S; where the compiled Hessian overflows float64 in an intermediate term although the gradient is
        finite (the softmax action at L ~ 2²⁵⁶, whose e^{−x} ~ L enters squared and cubed), central
        differences of the gradient."""
        with np.errstate(all="ignore"):
            H = np.asarray(self.bound["hessian"](*x, self.parameter(c)), dtype=float).reshape(self.n, self.n)
        return H if np.all(np.isfinite(H)) else _difference_hessian(self.gradient, x, c, self.n)

    def value_mp(self, x, c):
        return mpmath.mpf(self.bound["action_mp"](*x, self.parameter_mp(c)))

    def gradient_mp(self, x, c) -> list:
        return list(np.ravel(self.bound["gradient_mp"](*x, self.parameter_mp(c))))

    def hessian_mp(self, x, c):
        values = self.bound["hessian_mp"](*x, self.parameter_mp(c))
        return mpmath.matrix(np.asarray(values, dtype=object).reshape(self.n, self.n).tolist())


@dataclass(frozen=True)
class FunctionSystem(StationarySystem):
    """S(x; c) from float64 callables of (x, control parameter): value, gradient and Hessian (None: central
    differences of the gradient). For actions that are not compiled kernels (tabulated densities,
    chain-rule reductions); singular points and crossings are located in float64."""

    n: int
    value_of: Callable
    gradient_of: Callable
    hessian_of: Callable | None = None
    log_control: bool = False
    mp: bool = field(default=False, init=False)

    def value(self, x, c) -> float:
        return float(self.value_of(np.asarray(x, dtype=float), self.parameter(c)))

    def gradient(self, x, c) -> np.ndarray:
        return np.asarray(self.gradient_of(np.asarray(x, dtype=float), self.parameter(c)), dtype=float).reshape(self.n)

    def hessian(self, x, c) -> np.ndarray:
        if self.hessian_of is None:
            return _difference_hessian(self.gradient, x, c, self.n)
        return np.asarray(self.hessian_of(np.asarray(x, dtype=float), self.parameter(c)), dtype=float).reshape(self.n, self.n)
