"""The Potts model from the layers: branches of f(u; β) followed in β (`numeric.continuation`), the
minima at one β read off them, the transition classified on them (`numeric.transition`).

f depends on β and J through βJ only, up to the factor J: f(u; β, J) = J f(u; βJ, 1). The branches are
followed at J = 1 in the control βJ, and the results are carried to J afterwards (β = βJ/J, f and its
curvatures times J): the continuation's tolerances then see the same numbers for every J.
"""

import math
from dataclasses import replace

import mpmath

from attnphase.errors import ParameterError
from attnphase.models.potts import symbolic
from attnphase.models.potts.parameters import MAX_BETA_J, Accuracy, Parameters, Temperature
from attnphase.models.potts.results import Solution, State, Transition
from attnphase.numeric.continuation import ActionSystem, follow_branches, stationary_points_at
from attnphase.numeric.precision import DERIVED_ROUNDING, polished_stationary_point
from attnphase.numeric.threshold import Threshold, rounded_error, threshold_from_error
from attnphase.numeric.transition import classify_transition
from attnphase.results import Status

__all__ = ["coupling_range", "branches", "solve", "threshold", "check_sweep_point", "sweep_point"]


def coupling_range(q: int, coupling: float | None = None) -> tuple[float, float]:
    """βJ from 0.5 (disordered only) to 1.25 q (past the disordered instability at q), widened to hold a given βJ."""
    coupling = 1.0 if coupling is None else coupling
    return min(0.5, 0.5 * coupling), max(1.25 * q, 1.25 * coupling)


def branches(q: int, control_range, digits: int = 15):
    """f(u; βJ) at J = 1 and its branches through u = 0 (disordered) at the lowest βJ and u = βJm ≈ βJ at the
    highest."""
    system = ActionSystem(symbolic.kernels()[0], "beta", {"J": 1.0, "q": q})
    lo, hi = control_range
    return system, follow_branches(system, [([0.0], lo), ([hi], hi)], control_range, digits=digits)


def solve(q, beta, J=1.0) -> Solution:
    """The minima of f(m) at β in the one-favoured-state family (no transverse direction when q = 2)."""
    params, beta = _validated(q, beta, J)
    coupling = beta * params.J
    system, found = branches(params.q, coupling_range(params.q, coupling))
    states = {}
    for p in (p for p in stationary_points_at(system, found, coupling) if p["index"] == 0):
        # polished in mpmath: next to a branch point the curvature vanishes and the float64 root stops ~1e-12 away
        (u,), (u_error,) = polished_stationary_point(lambda u, c: system.gradient_mp([u], c),
                                                     lambda u, c: [[system.hessian_mp([u], c)[0, 0]]], p["x"], coupling)
        m, f, transverse = map(float, symbolic.kernels()[1].call(u=u, beta=coupling, J=1.0, q=params.q))
        favoured = 1 / (1 + (params.q - 1) * math.exp(-u)) if u > -700 else 0.0  # x(u), the favoured state's share
        m_error = params.q * favoured * (1 - favoured) / (params.q - 1) * u_error + DERIVED_ROUNDING * abs(m)
        states.setdefault(round(m, 9), (m, m_error, params.J * f, params.J * float(p["eigenvalues"][0]),
                                        params.J * transverse if params.q > 2 else math.nan))
    if not states:
        return Solution(beta, (), None, Status.FAILED, "no minimum on the followed branches")
    lowest = min(s[2] for s in states.values()) + 1e-12 * (1 + abs(min(s[2] for s in states.values())))
    # ties: m > 0 first
    minima = sorted(states.values(), key=lambda s: (s[2] > lowest, s[2] if s[2] > lowest else -s[0]))
    labelled = tuple(State(m, m_error, f, k, t, "stable" if f <= lowest else "saddle" if t <= 0 else "metastable")
                     for m, m_error, f, k, t in minima)
    return Solution(beta, labelled, labelled[0], Status.CONVERGED, f"{len(labelled)} minima of f(m)")


def _validated(q, beta, J) -> tuple[Parameters, float]:
    params, beta = Parameters.validated(q=q, J=J), Temperature.validated(beta=beta).beta
    if beta * params.J > MAX_BETA_J:
        raise ParameterError("beta", beta, f"a real number in [1e-09, {MAX_BETA_J / params.J:.6g}], βJ at most "
                                           f"{MAX_BETA_J:g}")
    return params, beta


def _in_beta(located: Threshold, J: float, digits: int, what: str) -> Threshold:
    """A threshold located in βJ as one in β: the root (at its working precision) and its error divided by J."""
    if J == 1.0 or not math.isfinite(located.value):
        return located
    with mpmath.workdps(digits + 10):
        root = mpmath.mpf(located.value_mp if located.value_mp is not None else located.value) / J
        division = float(abs(root) * mpmath.eps)  # the quotient's rounding at this precision
    bracket = None if located.bracket is None else (located.bracket[0] / J, located.bracket[1] / J)
    in_beta = threshold_from_error(root, located.error / J + division, digits, bracket, what, located.slope * J)
    # the status and its reasons are the located one's (a limited root stays limited for the same reason)
    return in_beta if located.status == Status.CONVERGED else replace(in_beta, status=located.status,
                                                                      message=located.message)


def threshold(q, J=1.0, digits=15) -> Transition:
    """The transition in β: its order, β_c to `digits` digits with its error, the spinodals, the jump of m."""
    params, digits = Parameters.validated(q=q, J=J), Accuracy.validated(digits=digits).digits
    system, found = branches(params.q, coupling_range(params.q), digits)
    t = classify_transition(system, found, coupling_range(params.q), digits=digits, order_parameter=lambda x: float(
        symbolic.kernels()[1].call(u=x[0], beta=1.0, J=1.0, q=params.q)[0]))
    spinodals = []
    for kind, located in zip(t.spinodal_kinds, t.spinodals):
        s = _in_beta(located, params.J, digits, kind.replace("_", " "))
        spinodals.append({"kind": kind, "beta": s.value, "digits": s.digits_string,
                          "error": rounded_error(s.value_mp, s.error),
                          "status": s.status})
    message = t.message if params.J == 1.0 else f"{t.message} (c = βJ: the branches are followed at J = 1)"
    if t.control is None:
        return Transition(t.order, math.nan, "", math.nan, tuple(spinodals), t.jump, t.status, message)
    at = _in_beta(t.control, params.J, digits, "the transition")
    return Transition(t.order, at.value, at.digits_string, rounded_error(at.value_mp, at.error), tuple(spinodals),
                      t.jump, t.status, message)


def check_sweep_point(beta, q, J=1.0) -> None:
    """What `sweep_point` checks of its parameters, for a sweep to run on every point before computing any."""
    _validated(q, beta, J)


def sweep_point(beta, q, J=1.0) -> dict:
    """The global minimum's m and f at β, and the number of locally stable states."""
    solution = solve(q, beta, J)
    return {"m": solution.global_minimum.m, "free_energy": solution.global_minimum.free_energy,
            "local_minima": float(sum(s.stability != "saddle" for s in solution.minima))}
