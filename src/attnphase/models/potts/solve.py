"""The Potts model from the layers: branches of f(u; β) followed in β (`numeric.continuation`), the
minima at one β read off them, the transition classified on them (`numeric.transition`)."""

import math

from attnphase.models.potts import symbolic
from attnphase.errors import ParameterError
from attnphase.models.potts.parameters import MAX_BETA_J, Accuracy, Parameters, Temperature
from attnphase.models.potts.results import Solution, State, Transition
from attnphase.numeric.continuation import ActionSystem, follow_branches, stationary_points_at
from attnphase.numeric.transition import classify_transition
from attnphase.results import Status

__all__ = ["beta_range", "branches", "solve", "threshold", "check_sweep_point", "sweep_point"]


def beta_range(params: Parameters, beta: float = 1.0) -> tuple[float, float]:
    """βJ from 0.5 (disordered only) to 1.25 q (past the disordered instability at q), widened to hold β."""
    return min(0.5, 0.5 * beta * params.J) / params.J, max(1.25 * params.q, 1.25 * beta * params.J) / params.J


def branches(params: Parameters, control_range, digits: int = 15):
    """f(u; β) and its branches through u = 0 (disordered) at the lowest β and u = βJm ≈ βJ at the highest."""
    system = ActionSystem(symbolic.kernels()[0], "beta", {"J": params.J, "q": params.q})
    lo, hi = control_range
    return system, follow_branches(system, [([0.0], lo), ([hi * params.J], hi)], control_range, digits=digits)


def solve(q, beta, J=1.0) -> Solution:
    """The minima of f(m) at β in the one-favoured-state family (no transverse direction when q = 2)."""
    params, beta = _validated(q, beta, J)
    system, found = branches(params, beta_range(params, beta))
    states = {}
    for p in (p for p in stationary_points_at(system, found, beta) if p["index"] == 0):
        m, f, transverse = map(float, symbolic.kernels()[1].call(u=p["x"][0], beta=beta, J=params.J, q=params.q))
        states.setdefault(round(m, 9), (m, f, float(p["eigenvalues"][0]), transverse if params.q > 2 else math.nan))
    if not states:
        return Solution(beta, (), None, Status.FAILED, "no minimum on the followed branches")
    lowest = min(s[1] for s in states.values()) + 1e-12 * (1 + abs(min(s[1] for s in states.values())))
    minima = sorted(states.values(), key=lambda s: (s[1] > lowest, s[1] if s[1] > lowest else -s[0]))  # ties: m > 0 first
    labelled = tuple(State(m, f, k, t, "stable" if f <= lowest else "saddle" if t <= 0 else "metastable")
                     for m, f, k, t in minima)
    return Solution(beta, labelled, labelled[0], Status.CONVERGED, f"{len(labelled)} minima of f(m)")


def _validated(q, beta, J) -> tuple[Parameters, float]:
    params, beta = Parameters.validated(q=q, J=J), Temperature.validated(beta=beta).beta
    if beta * params.J > MAX_BETA_J:
        raise ParameterError("beta", beta, f"a real number in (0, {MAX_BETA_J / params.J:.6g}], βJ at most {MAX_BETA_J:g}")
    return params, beta


def threshold(q, J=1.0, digits=15) -> Transition:
    """The transition in β: its order, β_c to `digits` digits with its error, the spinodals, the jump of m."""
    params, digits = Parameters.validated(q=q, J=J), Accuracy.validated(digits=digits).digits
    system, found = branches(params, beta_range(params), digits)
    t = classify_transition(system, found, beta_range(params), digits=digits, order_parameter=lambda x: float(
        symbolic.kernels()[1].call(u=x[0], beta=1.0, J=params.J, q=params.q)[0]))
    spinodals = tuple({"kind": k, "beta": s.value, "digits": s.digits_string, "error": s.error, "status": s.status}
                      for k, s in zip(t.spinodal_kinds, t.spinodals))
    at = t.control
    return Transition(t.order, math.nan if at is None else at.value, "" if at is None else at.digits_string,
                      math.nan if at is None else at.error, spinodals, t.jump, t.status, t.message)


def check_sweep_point(beta, q, J=1.0) -> None:
    """What `sweep_point` checks of its parameters, for a sweep to run on every point before computing any."""
    _validated(q, beta, J)


def sweep_point(beta, q, J=1.0) -> dict:
    """The global minimum's m and f at β, and the number of locally stable states."""
    solution = solve(q, beta, J)
    return {"m": solution.global_minimum.m, "free_energy": solution.global_minimum.free_energy,
            "local_minima": float(sum(s.stability != "saddle" for s in solution.minima))}
