"""The Potts model's parameters, declared once for the API, the CLI and sweeps (no SymPy imported)."""

from dataclasses import dataclass

from attnphase.params import IntRange, ParameterSet, RealRange, parameter

__all__ = ["MAX_Q", "MAX_BETA_J", "Parameters", "Temperature", "Accuracy"]

# The branches are followed up to βJ = 1.25 max(q, βJ) (past the disordered instability at βJ = q, and past the β
# asked), where ∂f/∂u of the ordered state carries the factor x(1 − x) ≈ q e^{−1.25 max(q, βJ)}: it stays a normal
# float64 (> 2.2e-308) while both q and βJ are at most about 560. The branches are followed at J = 1 in βJ
# (`solve`), so J enters only as a unit; β ≥ 1e-9 and J ≥ 1e-6 keep the smallest βJ, 1e-15, a normal number.
MAX_Q = 500
MAX_BETA_J = 500.0


@dataclass(frozen=True)
class Parameters(ParameterSet):
    q: int = parameter(IntRange(2, MAX_Q), help="Number of states q.")
    J: float = parameter(RealRange(1e-6, 1e6), 1.0, help="Ferromagnetic coupling J.")


@dataclass(frozen=True)
class Temperature(ParameterSet):
    # the range of β alone; solve and sweeps also refuse βJ > MAX_BETA_J (`solve._validated`), so the help says so
    beta: float = parameter(RealRange(1e-9, 1e6), help=f"Inverse temperature beta, with beta*J at most {MAX_BETA_J:g}.")


@dataclass(frozen=True)
class Accuracy(ParameterSet):
    digits: int = parameter(IntRange(1, 100), 15, help="Significant digits asked of beta_c.")
