"""Result types of the Potts model."""

from dataclasses import dataclass

from attnphase.results import Result, Status, rows_per_part

__all__ = ["State", "Solution", "Spinodal", "Transition"]


@dataclass(frozen=True)
class State:
    """A minimum of f(m): "stable" (global), "metastable", or "saddle" (unstable to splitting the others).

    m_error: the error of m from the mpmath polish of the stationary point; m is never -0.0 (a zero is 0.0).
    free_energy: f per spin; curvature: ∂²f/∂u² along the one-favoured-state family (u the log-odds);
    transverse_curvature: ∂²f/∂ε² at ε = 0 for two unfavoured fractions p ± ε, 2((q − 1)/(β(1 − x)) − J), both
    full second derivatives. The three are evaluated in mpmath at the polished stationary point (at the decimal β
    and J, as m is) and rounded to float64; each `_error` is the absolute error of the float printed: the move over
    the stationary point's error (f is stationary there, so it moves at second order), the working precision's
    rounding and the rounding to float64. For q = 2 there is no transverse direction (one unfavoured state):
    transverse_curvature and transverse_curvature_error are None."""

    m: float
    m_error: float
    free_energy: float
    free_energy_error: float
    curvature: float
    curvature_error: float
    transverse_curvature: float | None
    transverse_curvature_error: float | None
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
class Spinodal:
    """One spinodal of the transition: its kind ("fold": the ordered branch's fold; "branch_point": the disordered
    state's instability at βJ = q), β (the float), its digit string (the root rounded to the digits its error
    supports), the error of the float β (absolute) and the status of its location."""

    kind: str
    beta: float
    digits: str
    error: float
    status: Status


@dataclass(frozen=True)
class Transition(Result):
    """β_c (value, digit string, error), the spinodals (`Spinodal`: kind, beta, digits, error, status), the jump of m
    and its error. Each error is that of the float (the root's error plus the float's rounding); the digit strings
    are the roots rounded to the digits their errors support."""

    order: str
    beta_c: float
    beta_c_digits: str
    beta_c_error: float
    spinodals: tuple[Spinodal, ...]
    jump: float
    jump_error: float
    status: Status
    message: str
