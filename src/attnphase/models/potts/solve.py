"""The Potts model from the layers: branches of f(u; β) followed in β (`numeric.continuation`), the
minima at one β read off them, the transition classified on them (`numeric.transition`).

f depends on β and J through βJ only, up to the factor J: f(u; β, J) = J f(u; βJ, 1). The branches are
followed at J = 1 in the control βJ, and the results are carried to J afterwards (β = βJ/J, f and its
curvatures times J): the continuation's tolerances then see the same numbers for every J.
"""

import decimal
import math
from dataclasses import replace
from functools import lru_cache

import mpmath
import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.potts import symbolic
from attnphase.models.potts.parameters import MAX_BETA_J, MAX_Q, Accuracy, Parameters, Temperature
from attnphase.models.potts.results import Solution, Spinodal, State, Transition
from attnphase.numeric.continuation import ActionSystem, follow_branches
from attnphase.numeric.points_on_branches import stationary_points_at
from attnphase.numeric.precision import float_at_least, polished_stationary_point
from attnphase.numeric.threshold import Threshold, rounded_error, threshold_from_error
from attnphase.numeric.transition import classify_transition
from attnphase.params import check_real, check_real_list
from attnphase.results import Status

__all__ = ["coupling_range", "branches", "solve", "threshold", "decimal_coupling", "check_sweep_point",
           "sweep_point"]


def _checked_q(q) -> int:
    return Parameters.declarations()["q"].metadata["allowed"].check("q", q)


def coupling_range(q: int, coupling: float | None = None) -> tuple[float, float]:
    """βJ from 0.5 (disordered only) to 1.25 q (past the disordered instability at q), widened to hold a given βJ
    (in (0, MAX_BETA_J]). q and βJ are checked as `solve` checks them (ParameterError naming q or coupling)."""
    q = _checked_q(q)
    coupling = 1.0 if coupling is None else check_real("coupling", coupling, 0.0, MAX_BETA_J, low_open=True)
    return min(0.5, 0.5 * coupling), max(1.25 * q, 1.25 * coupling)


def branches(q: int, control_range, digits: int = 15):
    """f(u; βJ) at J = 1 and its branches through u = 0 (disordered) at the lowest βJ and u = βJm ≈ βJ at the
    highest. q and digits are checked as `threshold` checks them; control_range is two βJ, 0 < low < high ≤
    1.25 max(MAX_Q, MAX_BETA_J) (`coupling_range`)."""
    q = _checked_q(q)
    digits = Accuracy.validated(digits=digits).digits
    highest = 1.25 * max(MAX_Q, MAX_BETA_J)
    lo, hi = check_real_list("control_range", control_range, length=2, low=0.0, high=highest)
    if not 0 < lo < hi:
        raise ParameterError("control_range", control_range, f"two values of βJ, 0 < low < high <= {highest:g}")
    system = ActionSystem(symbolic.kernels()[0], "beta", {"J": 1.0, "q": q})
    return system, follow_branches(system, [([0.0], lo), ([hi], hi)], (lo, hi), digits=digits)


def solve(q, beta, J=1.0) -> Solution:
    """The minima of f(m) at β in the one-favoured-state family (no transverse direction when q = 2). A state found
    on two branches (their crossing at a branch point) is reported once: points whose m agree within their errors
    are one state. A stationary point whose curvature vanishes within its error is a minimum only if the first
    derivative of f beyond the second that does not vanish is of even order and positive: at the disordered
    instability βJ = q (q ≥ 3) m = 0 is an inflection (f‴ ≠ 0) and is not reported."""
    params, _ = _validated(q, beta, J)
    typed_beta = decimal_coupling(beta, name="beta")  # as J: numpy.float32(2.8) is the decimal 2.8
    beta = float(typed_beta)
    coupling = beta * params.J  # in float64: where the branches are followed and the stationary points found
    with mpmath.workdps(2 * _POLISH_DIGITS):
        # polished at βJ of the decimals typed (each float's shortest decimal, as `threshold` takes J), so that m_error
        # covers m there, not only at the nearest binary64 product: q = 3, β = 2.8 differ by 3e-16 in m
        typed_J = mpmath.mpf(decimal_coupling(J))
        typed_coupling = mpmath.mpf(typed_beta) * typed_J
    system, found = branches(params.q, coupling_range(params.q, coupling))
    points = []
    for p in (p for p in stationary_points_at(system, found, coupling) if p["index"] == 0):
        u, u_error = _polished(system, float(p["x"][0]), typed_coupling)
        m, m_error = _order_parameter(u, u_error, params.q)
        values = _state_values(system, u, min(u_error, _root_distance(u, typed_coupling, params.q)), typed_coupling,
                               typed_J, params.q)
        points.append((m, m_error, *values, u, u_error))
    states, not_minima = [], []
    for point in sorted(points, key=lambda s: s[1]):  # the best-resolved first: it stands for the state
        if any(abs(point[0] - s[0]) <= point[1] + s[1] for s in states + not_minima):
            continue  # the same state within the errors
        kind = _kind_along_the_family(system, point[-2], point[-1], typed_coupling)
        (states if kind == "minimum" else not_minima).append(point[:-2] + (kind,))
    if not states:
        return Solution(beta, (), None, Status.FAILED, "no minimum on the followed branches")
    lowest = min(s[2] for s in states) + 1e-12 * (1 + abs(min(s[2] for s in states)))
    # ties: m > 0 first
    minima = sorted(states, key=lambda s: (s[2] > lowest, s[2] if s[2] > lowest else -s[0]))
    labelled = tuple(State(*values, "stable" if values[2] <= lowest else "saddle" if values[6] is not None
                           and values[6] <= 0 else "metastable") for *values, _ in minima)
    message = f"{len(labelled)} {'minimum' if len(labelled) == 1 else 'minima'} of f(m)"
    for m, m_error, *_, kind in not_minima:
        # f″ vanishing within its error while f‴ does not reads as an inflection; a minimum and a maximum closer than
        # the point's error read the same (q = 20 within 1e-13 of βJ = q, audit r19): the message says both
        unresolved = " (or a minimum and a maximum closer than its error)" if kind == "inflection" else ""
        message += f"; m = {m:.3g} (error {m_error:.2g}) is stationary but not a minimum: {kind}{unresolved}"
    return Solution(beta, labelled, labelled[0], Status.CONVERGED, message)


_POLISH_DIGITS = 30


def _order_parameter(u: float, u_error: float, q: int) -> tuple[float, float]:
    """m = (qx − 1)/(q − 1) = (1 − e^{−u})/(1 + (q − 1)e^{−u}) in mpmath, rounded to float64, and its error: the
    polish's error times dm/du = q x(1 − x)/(q − 1) = q e^{−u}/(1 + (q − 1)e^{−u})², plus the rounding to float64
    (in float64, qx − 1 would lose the absolute 1e-16 that matters next to m = 0) and the polish's working precision
    (10^-30)."""
    with mpmath.workdps(2 * _POLISH_DIGITS):
        decay = mpmath.exp(-mpmath.mpf(u))
        m = (1 - decay) / (1 + (q - 1) * decay)
        slope = q * decay / (1 + (q - 1) * decay) ** 2
        error = slope * u_error + abs(m - float(m)) + mpmath.mpf(10) ** -_POLISH_DIGITS  # the polish's precision
        return float(m) + 0.0, float_at_least(error)  # + 0.0: a zero is 0.0, never -0.0


def _root_distance(u: float, coupling, q: int) -> float:
    """A bound on the distance from u to the stationary point near it, from the stationarity u = βJ m(u) (at J = 1):
    g(u) = u − βJ m(u), g′ = 1 − βJ m′, m′ = q x(1 − x)/(q − 1) (`_order_parameter`). With ĝ = |g(u)| plus its
    rounding (the difference between the polish's digits and twice them), the root lies within r = 2ĝ/|g′(u)| where
    |g′| stays above |g′(u)|/2 on u ± r: |g″| = βJ|m″| ≤ βJ m′(u) e^r (|m″| ≤ m′, and x(1 − x) changes by at most e^r
    over r), so βJ m′(u) e^r r ≤ |g′(u)|/2 suffices; else inf. Deep in the ordered phase, where f′ carries the factor
    x(1 − x) ≈ (q − 1)e^{−u} and the polish's rounding floor is wide (q = 500, βJ = 100: 3e4), g′ ≈ 1 and r is the
    float u's own rounding."""
    values = []
    for digits in (_POLISH_DIGITS, 2 * _POLISH_DIGITS):
        with mpmath.workdps(digits):
            at = mpmath.mpf(u)
            decay = mpmath.exp(-at)
            slope = q * decay / (1 + (q - 1) * decay) ** 2
            values.append((at - coupling * (1 - decay) / (1 + (q - 1) * decay), 1 - coupling * slope, coupling * slope))
    with mpmath.workdps(2 * _POLISH_DIGITS):
        (g_low, _, _), (g, g1, bend) = values
        if g1 == 0:
            return math.inf
        r = 2 * (abs(g) + abs(g - g_low)) / abs(g1)
        return float_at_least(r) if bend * mpmath.exp(r) * r <= abs(g1) / 2 else math.inf


@lru_cache(maxsize=None)
def _transverse_kernel_mp():
    """κ⊥(u; β, J, q) from the symbolic source, in mpmath."""
    from attnphase.derive.codegen import compile_kernel

    return compile_kernel(symbolic.transverse_curvature, [symbolic.u, symbolic.beta, symbolic.J, symbolic.q],
                          backend="mpmath")


def _state_values(system, u: float, u_error: float, coupling, J, q: int) -> tuple:
    """free_energy, curvature (f″ along the family) and transverse_curvature (None for q = 2), each with its error,
    at the polished stationary point u ± u_error and the coupling βJ (an mpf), carried to J (an mpf: f(u; β, J) =
    J f(u; βJ, 1), the curvatures likewise). Each is evaluated in mpmath at the polish's working precision and at
    twice it, and the latter rounded to float64. Its error: the move over u_error, from the derivatives along the
    family (f: |f′|δ + |f″|δ²/2 + |f‴|δ³/6, stationary; f″: |f‴|δ + |f⁗|δ²/2; κ⊥ = 2((e^u + q − 1)/(βJ) − 1) at J = 1
    moves by 2e^u(e^δ − 1)/(βJ) exactly), plus the difference between the two precisions (the rounding at the
    polish's) and 10^-55 relative (that at twice it), times J, plus the rounding of the product to float64. The u
    error is the smaller of the polish's and `_root_distance`."""
    values = []
    for digits in (_POLISH_DIGITS, 2 * _POLISH_DIGITS):
        with mpmath.workdps(digits):
            at = mpmath.mpf(u)
            transverse = _transverse_kernel_mp().call(u=at, beta=coupling, J=1, q=q) if q > 2 else None
            values.append((system.value_mp([at], coupling), _derivatives(system, u, coupling, digits), transverse))
    (f_low, d_low, t_low), (f, (f1, f2, f3, f4), t) = values
    out = []
    with mpmath.workdps(2 * _POLISH_DIGITS):
        delta = mpmath.mpf(u_error)
        moves = [abs(f1) * delta + abs(f2) * delta**2 / 2 + abs(f3) * delta**3 / 6,
                 abs(f3) * delta + abs(f4) * delta**2 / 2]
        pairs = [(f, f_low), (f2, d_low[1])]
        if t is not None:
            moves.append(2 * mpmath.exp(mpmath.mpf(u)) * mpmath.expm1(delta) / coupling)
            pairs.append((t, t_low))
        for (high, low), move in zip(pairs, moves):
            value = J * high
            # twice the digits round too: 10^-55 relative (f = −0.5 + e^{−500}: 0 at both precisions)
            precision = abs(high) * mpmath.mpf(10) ** (5 - 2 * _POLISH_DIGITS)
            error = J * (move + abs(high - low) + precision) + abs(value - float(value))
            out += [float(value) + 0.0, float_at_least(error)]
    return tuple(out) if t is not None else (*out, None, None)


def _polished(system, u0: float, coupling) -> tuple[float, float]:
    """The stationary point near the float64 u0, polished in mpmath at the coupling βJ (a float or an mpf): (u, its
    error). Newton's steps only halve the
    distance to a double root (at a branch point), so up to 40 are taken. A u0 whose gradient is rounding at the
    working precision (it differs from the gradient at twice the digits by as much as its size) is kept: Newton would
    divide the gradient's rounding by the curvature's (zero at a branch point) and leave. The error includes the
    distance over which the gradient's rounding can hide the root (`_rounding_floor`)."""
    gradients = []
    for digits in (_POLISH_DIGITS, 2 * _POLISH_DIGITS):
        with mpmath.workdps(digits):
            gradients.append(system.gradient_mp([mpmath.mpf(u0)], coupling)[0])
    with mpmath.workdps(2 * _POLISH_DIGITS):
        stationary = abs(gradients[0]) <= abs(gradients[0] - gradients[1])
    if stationary:
        u, u_error = u0, 0.0
    else:
        (u,), (u_error,) = polished_stationary_point(lambda u, c: system.gradient_mp([u], c),
                                                     lambda u, c: [[system.hessian_mp([u], c)[0, 0]]], [u0],
                                                     coupling, dps=_POLISH_DIGITS, steps=40)
        u, u_error = float(u), float(u_error)
    # added, not the larger of the two: the polish's error is its last step and the float's rounding, while the root
    # of the polish's own f' can lie up to the rounding floor from the true one (q = 2 at βJ = 2.0001, where f'' is
    # 1e-5: 1e-27 beyond a float's rounding of 1e-18)
    return u, u_error + _rounding_floor(system, u, coupling)


def _derivatives(system, u: float, coupling: float, digits: int) -> list:
    """f′, f″, f‴, f⁗ along the family at u at `digits` digits (the last two by mpmath differentiation of the
    Hessian kernel)."""
    with mpmath.workdps(digits):
        x = mpmath.mpf(u)
        curvature = lambda v: system.hessian_mp([v], coupling)[0, 0]  # noqa: E731
        return [system.gradient_mp([x], coupling)[0], curvature(x), mpmath.diff(curvature, x, 1),
                mpmath.diff(curvature, x, 2)]


def _rounding_floor(system, u: float, coupling: float) -> float:
    """How far from u a root of f′ can lie unseen under the rounding ε of f′ at the polish's digits (their difference
    from twice the digits, and at least 10^-digits times the terms' size 1 + |u|/βJ): the smallest d with
    Σ_k |f^(k+1)| d^k/k! ≥ ε is at most min_k (k! ε/|f^(k+1)|)^(1/k), k = 1, 2, 3."""
    low, high = (_derivatives(system, u, coupling, d) for d in (_POLISH_DIGITS, 2 * _POLISH_DIGITS))
    with mpmath.workdps(2 * _POLISH_DIGITS):
        eps = abs(low[0] - high[0]) + mpmath.mpf(10) ** -_POLISH_DIGITS * (1 + abs(u) / coupling)
        bounds = [(mpmath.factorial(k) * eps / abs(high[k])) ** (mpmath.mpf(1) / k) for k in (1, 2, 3) if high[k] != 0]
        floor = min(bounds) if bounds else mpmath.inf
        return float_at_least(floor)


def _kind_along_the_family(system, u: float, u_error: float, coupling: float) -> str:
    """"minimum", "maximum", "inflection" or "degenerate" (f″, f‴ and f⁗ all vanish within their errors) for the
    stationary point u ± u_error of f along the family, from f″ and, where it vanishes within its error, f‴ and f⁗
    (mpmath differentiation of the Hessian kernel). Each derivative's error: its rounding (the difference between
    30 and 60 digits) plus the next derivatives times u_error (Taylor)."""
    values = [_derivatives(system, u, coupling, d)[1:] for d in (_POLISH_DIGITS, 2 * _POLISH_DIGITS)]
    with mpmath.workdps(2 * _POLISH_DIGITS):
        (f2, f3, f4), rounding = values[1], [abs(a - b) for a, b in zip(*values)]
        if abs(f2) > rounding[0] + abs(f3) * u_error + abs(f4) * u_error**2 / 2:
            return "minimum" if f2 > 0 else "maximum"
        if abs(f3) > rounding[1] + abs(f4) * u_error:
            return "inflection"
        if abs(f4) > rounding[2]:
            return "minimum" if f4 > 0 else "maximum"
    return "degenerate"


def _validated(q, beta, J) -> tuple[Parameters, float]:
    params, beta = Parameters.validated(q=q, J=J), Temperature.validated(beta=beta).beta
    if beta * params.J > MAX_BETA_J:
        lowest = Temperature.declarations()["beta"].metadata["allowed"].low
        raise ParameterError("beta", beta, f"a real number in [{lowest:g}, {MAX_BETA_J / params.J:.6g}]: beta*J at "
                                           f"most {MAX_BETA_J:g} at J = {params.J:g}")
    return params, beta


def decimal_coupling(J, *, name: str = "J") -> str:
    """The decimal value of J at which `threshold` computes β_c and the spinodals to their digits: J itself where it
    is given as text (the CLI passes --J as typed), else the shortest decimal that rounds to the float J (its repr:
    0.3 is the decimal 0.3, not the binary64 number 0.299999999999999988898 nearest to it; a numpy float's shortest
    decimal at its own precision, so numpy.float32(0.3) is 0.3 too). `solve` takes β by it too (`name` "beta").
    Call it on a J that `Parameters` accepts; anything that is not a finite real number raises ParameterError naming
    `name`."""
    check_real(name, J)
    if isinstance(J, str):
        return str(decimal.Decimal(J.strip()))  # the text as typed, in a spelling mpmath reads ("1_000", " 3 ")
    if isinstance(J, np.floating):
        return str(J)  # numpy writes the shortest decimal that rounds to J in J's own precision
    return repr(float(J))


def _in_beta(located: Threshold, J: str, digits: int, what: str) -> Threshold:
    """A threshold located in βJ as one in β: the root (at its working precision) divided by the decimal J, and its
    error divided by J plus the rounding of J and of the quotient at that precision. The float `value` is then the
    quotient rounded to float64, and `rounded_error` adds that rounding to the error."""
    with mpmath.workdps(digits + 10):
        coupling = mpmath.mpf(J)
        if coupling == 1 or not math.isfinite(located.value):
            return located
        root = mpmath.mpf(located.value_mp if located.value_mp is not None else located.value) / coupling
        rounding = float(2 * abs(root) * mpmath.eps)  # J's rounding to this precision and the quotient's
        scale = float(coupling)
    # the root's own error divided by J, rounded up (the float J is within a unit in its last place of the decimal)
    bracket = None if located.bracket is None else (located.bracket[0] / scale, located.bracket[1] / scale)
    error = math.nextafter(math.nextafter(located.error / scale, math.inf), math.inf) + rounding
    in_beta = threshold_from_error(root, error, digits, bracket, what, located.slope * scale)
    # the status and its reasons are the located one's (a limited root stays limited for the same reason)
    return in_beta if located.status == Status.CONVERGED else replace(in_beta, status=located.status,
                                                                      message=located.message)


def threshold(q, J=1.0, digits=15) -> Transition:
    """The transition in β: its order, β_c to `digits` digits with its error, the spinodals, the jump of m.

    β_c and the spinodals are computed at the decimal J (`decimal_coupling`): a float J is taken as its shortest
    round-trip decimal (repr), mpmath.mpf(repr(J)); a J given as text (as the CLI passes --J) as the decimal it
    spells. β_c = 20/3 for q = 2 at J = 0.3, to every digit asked; each error covers the float's deviation from
    the value at that decimal J."""
    params, digits = Parameters.validated(q=q, J=J), Accuracy.validated(digits=digits).digits
    coupling = decimal_coupling(J)
    system, found = branches(params.q, coupling_range(params.q), digits)
    # the branches are followed in βJ at J = 1, so the messages name that control (β itself where J = 1)
    t = classify_transition(system, found, coupling_range(params.q), digits=digits, order_parameter=lambda x: float(
        symbolic.kernels()[1].call(u=x[0], beta=1.0, J=1.0, q=params.q)[0]),
        control_label="β" if mpmath.mpf(coupling) == 1 else "βJ")
    spinodals = []
    for kind, located in zip(t.spinodal_kinds, t.spinodals):
        s = _in_beta(located, coupling, digits, kind.replace("_", " "))
        spinodals.append(Spinodal(kind, s.value, s.digits_string, rounded_error(s.value_mp, s.error), s.status))
    jump, jump_error = _jump(system, t, params.q)
    if t.control is None:
        return Transition(t.order, math.nan, "", math.nan, tuple(spinodals), jump, jump_error, t.status, t.message)
    at = _in_beta(t.control, coupling, digits, "the transition")
    return Transition(t.order, at.value, at.digits_string, rounded_error(at.value_mp, at.error), tuple(spinodals),
                      jump, jump_error, t.status, t.message)


def _jump(system, transition, q: int) -> tuple[float, float]:
    """The jump of m at a first-order transition and its error: the ordered minimum at the transition's βJ (at its
    working precision), polished in mpmath from the classification's float64 state (`_polished`; u = βJ m), its m
    and error (`_order_parameter`), plus m's move over the error of βJ itself (dm/d(βJ) = m′(u) m/(1 − βJ m′(u)),
    from u = βJ m(u)); the disordered state's m is 0 exactly. A continuous transition's jump is 0 exactly; without
    a transition there is no error (NaN). The float64 states had left 1.3e-15 at q = 3 (jump 0.5000000000000013)."""
    if transition.order != "first" or transition.control is None:
        return transition.jump, 0.0 if transition.jump == 0.0 else math.nan
    with mpmath.workdps(2 * _POLISH_DIGITS):
        coupling = mpmath.mpf(transition.control.value_mp)
        u, u_error = _polished(system, float(coupling) * transition.jump, coupling)
        m, m_error = _order_parameter(u, u_error, q)
        decay = mpmath.exp(-mpmath.mpf(u))
        slope = q * decay / (1 + (q - 1) * decay) ** 2  # dm/du
        error = m_error + abs(slope * m / (1 - coupling * slope)) * transition.control.error
        return m, float_at_least(error)


def check_sweep_point(beta, q, J=1.0) -> None:
    """What `sweep_point` checks of its parameters, for a sweep to run on every point before computing any."""
    _validated(q, beta, J)


def sweep_point(beta, q, J=1.0) -> dict:
    """The global minimum's m and f at β, the number of locally stable states and the solve's status. Without a
    global minimum the point fails (a sweep records why and computes it again on its next run)."""
    solution = solve(q, beta, J)
    if solution.global_minimum is None:
        raise RuntimeError(f"no global minimum at β = {beta:g}: {solution.message}")
    return {"m": solution.global_minimum.m, "free_energy": solution.global_minimum.free_energy,
            "local_minima": float(sum(s.stability != "saddle" for s in solution.minima)),
            "status": solution.status.value}
