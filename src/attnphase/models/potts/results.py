"""Result types of the Potts model."""

from dataclasses import dataclass

from attnphase.results import Result, Status, rows_per_part

__all__ = ["State", "Solution", "Transition"]


@dataclass(frozen=True)
class State:
    """A minimum of f(m): "stable" (global), "metastable", or "saddle" (unstable to splitting the others). m_error:
    the error of m from the mpmath polish of the stationary point (free_energy, stationary there, moves only at second
    order in it). curvature: ∂²f/∂u² along the one-favoured-state family (u the log-odds); transverse_curvature:
    ∂²f/∂ε² at ε = 0 for two unfavoured fractions p ± ε, 2((q − 1)/(β(1 − x)) − J) (NaN for q = 2), both full second
    derivatives."""

    m: float
    m_error: float
    free_energy: float
    curvature: float
    transverse_curvature: float
    stability: str


@dataclass(frozen=True)
class Solution(Result):
    """The minima of f at β, lowest first; the global one is printed as "global"."""

    beta: float
    minima: tuple[State, ...]
    global_minimum: State | None
    status: Status
    message: str

    def as_dict(self) -> dict:
        out = super().as_dict()
        out["global"] = out.pop("global_minimum")
        return out

    def rows(self):
        """One row per minimum (`minimum` its position, lowest f first), β and the status on each."""
        return rows_per_part(self, "minima", "minimum")


@dataclass(frozen=True)
class Transition(Result):
    """β_c (value, digit string, error), the spinodals ({kind, beta, digits, error, status}), the jump of m and its
    error. Each error is that of the float (the root's error plus the float's rounding); the digit strings are the
    roots rounded to the digits their errors support."""

    order: str
    beta_c: float
    beta_c_digits: str
    beta_c_error: float
    spinodals: tuple[dict, ...]
    jump: float
    jump_error: float
    status: Status
    message: str
