"""The Potts model's parameters, declared once for the API, the CLI and sweeps (no SymPy imported)."""

from dataclasses import dataclass

from attnphase.params import IntRange, ParameterSet, RealRange, parameter

__all__ = ["MAX_Q", "Parameters", "Temperature", "Accuracy"]

MAX_Q = 500  # β reaches 1.25 q/J, where the ordered 1 − x ~ q e^{−βJ} must stay above float64 underflow


@dataclass(frozen=True)
class Parameters(ParameterSet):
    q: int = parameter(IntRange(2, MAX_Q), help="Number of states q.")
    J: float = parameter(RealRange(0.0, 1e6, low_open=True), 1.0, help="Ferromagnetic coupling J.")


@dataclass(frozen=True)
class Temperature(ParameterSet):
    beta: float = parameter(RealRange(0.0, 1e6, low_open=True), help="Inverse temperature beta.")


@dataclass(frozen=True)
class Accuracy(ParameterSet):
    digits: int = parameter(IntRange(1, 100), 15, help="Significant digits asked of beta_c.")
