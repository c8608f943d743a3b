"""The linear action's followed stationary branches: the order of the transition they show, and the crossover.

`branch_classification` follows the stationary branches of the reduced action in ln n (numeric.continuation) from
the lowest stable minima at the ends of the range and reads the global minimum off them (numeric.transition): a
first-order jump anywhere in the range, which the Landau expansion at the symmetric point cannot see.
`checked_order` holds that against the instability `linear_transition` locates; `later_jump` reports the crossover as
the branches see it, a second jump of the global minimum after the transition, with the jump of √(t² + c²) from the
coexisting states polished in mpmath and the errors of the float64 locations.
"""

from __future__ import annotations

import math
import sys

import mpmath
import numpy as np

from attnphase.models.copy_heads.convention import DEFAULT
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.numeric.continuation import ActionSystem, FunctionSystem, follow_branches, stationary_point
from attnphase.numeric.precision import polished_stationary_point
from attnphase.numeric.transition import classify_transition
from attnphase.results import Status

__all__ = ["BRANCH_DIGITS", "action_system", "branch_classification", "state_scale", "checked_order", "later_jump"]


BRANCH_DIGITS = 12
"""Digits the followed branches locate their singular points and crossings to (float64): enough to tell the
instability they find from the one located to `digits` digits on the symmetric state."""


def action_system(action_kernels, values: dict) -> ActionSystem:
    """An action (its kernels, the instance's values) as an `ActionSystem` in ln n, float64 (the parameters it
    takes, from `values`)."""
    names = {str(p) for p in action_kernels.parameters}
    return ActionSystem(action_kernels, "n", {k: v for k, v in values.items() if k in names}, log_control=True,
                        mp=False)


def _lowest_stable(system: ActionSystem, points, c: float):
    """The stable stationary point of lowest action that Newton's method reaches from the candidate points. The
    candidates are polished first: where the curvatures span hundreds of decades (σ² → 0) the multistart minimiser
    gives up at its start points, whose actions then say nothing about which minimum is lowest."""
    polished = [x for p in points if (x := stationary_point(system, p, c)) is not None]
    stable = [x for x in polished if np.all(np.linalg.eigvalsh(system.hessian(x, c)) > 0)]
    return min(stable, key=lambda x: system.value(x, c)) if stable else None


def branch_classification(system: ActionSystem, minima_at, n_lo: float, n_hi: float, state_scale: float = 1.0):
    """The order of the transition from the followed stationary branches (`numeric.transition`): the branches
    through the lowest stable minimum at n_lo and at n_hi (minima_at(n) -> candidate points), followed in ln n,
    the global minimum read off them. It sees a first-order jump anywhere in the range, which the Landau
    expansion at the instability cannot. state_scale (`state_scale`): the branches are followed in (t, c) divided by
    it, which the continuation's steps (at most 0.1) are sized for."""
    if state_scale != 1.0:
        system, minima_at = _scaled_system(system, state_scale), _scaled_points(minima_at, state_scale)
    control_range = (math.log(n_lo), math.log(n_hi))
    # at V ≳ 2^20 the float64 action's terms overflow along the branches (the equilibration of the continuation's
    # null vector and determinant sign then overflows too): those points are non-finite, a branch ends there as lost
    # and the classification says so; numpy's RuntimeWarnings about it went to stderr
    with np.errstate(over="ignore", invalid="ignore"):
        starts = [(p, c) for c in control_range
                  if (p := _lowest_stable(system, minima_at(math.exp(c)), c)) is not None]
        branches = follow_branches(system, starts, control_range, digits=BRANCH_DIGITS)
        return classify_transition(system, branches, control_range, digits=BRANCH_DIGITS,
                                   order_parameter=lambda x: state_scale * float(np.hypot(x[0], x[1])),
                                   canonical=_even_image, control_label="ln n")


def state_scale(inst: CopyHeadsInstance) -> float:
    """The size of the ordered minima relative to the default convention's, at least 1: at small τ the fit saturates
    where τnq/V ~ 1, i.e. q ~ V/(τn), with n ∝ (λ/τ)^{1/2}, so (t, c) ∝ (τλ)^{−1/4} (λ the smaller prior precision
    relative to the default's). At L = 16, V = 4, τ = 1e-16 the minimum at the top of the range is t ≈ c ≈ 1800: in
    steps of at most 0.1 the branch from there ran out of its 20000 points before reaching P*. Where τλ underflows to
    0 (s1 or the score variance ~1e306) it is taken as the smallest normal float: the scale is then ~1e77, as just
    above the underflow, and the branches are as far out of float64's reach."""
    own, default = inst.convention.linear_precisions(inst.L), DEFAULT.linear_precisions(inst.L)
    gamma = min(own[k] / default[k] for k in ("lam_t", "lam_c"))
    return max(1.0, max(inst.convention.tau(inst.V) * gamma, sys.float_info.min) ** -0.25)


def _scaled_points(minima_at, scale: float):
    """minima_at with (t, c) of each point divided by scale (the remainder's log, if any, unchanged)."""
    def scaled(n_):
        points = [np.asarray(x, float).copy() for x in minima_at(n_)]
        for x in points:
            x[:2] /= scale
        return points

    return scaled


def _scaled_system(system: ActionSystem, scale: float) -> FunctionSystem:
    """`system` in the variables (t/scale, c/scale[, r])."""
    factor = np.r_[scale, scale, np.ones(system.n - 2)]

    def value(y, n_):
        return system.value(factor * y, math.log(n_))

    def gradient(y, n_):
        return factor * system.gradient(factor * y, math.log(n_))

    def hessian(y, n_):
        return np.outer(factor, factor) * system.hessian(factor * y, math.log(n_))

    return FunctionSystem(system.n, value, gradient, hessian, log_control=True)


def _even_image(x: np.ndarray) -> np.ndarray:
    """The action is even under (t, c) ↦ (−t, −c) (the remainder, if any, unchanged): the image with t ≥ 0."""
    x = np.asarray(x, float).copy()
    if x[0] < 0 or (x[0] == 0 and x[1] < 0):
        x[:2] *= -1
    return x


def checked_order(found, n_star: float, landau: dict) -> tuple[str, Status | None, str]:
    """(order, status override, message) from the branch classification `found` against the instability at n_star:
    second order at a branch point equal to n_star (to 1e-8) confirms it; a first-order jump is reported as such
    (the instability is then not the transition); anything else leaves the Landau order with status limited."""
    if found.order == "second" and found.control is not None:
        n_branch = math.exp(found.control.value)
        if abs(n_branch - n_star) <= 1e-8 * n_star:
            return landau["order"], None, "; followed branches: second order at the same point"
        return landau["order"], Status.LIMITED, (f"; followed branches: second order at n = {n_branch:.12g}, not at the "
                                                 "instability")
    if found.order == "first" and found.control is not None:
        return "first", None, (f"; followed branches: FIRST order, the global minimum jumps at n = "
                               f"{math.exp(found.control.value):.12g} ({found.message})")
    return landau["order"], Status.LIMITED, f"; followed branches did not classify the transition ({found.message})"


def later_jump(inst: CopyHeadsInstance, found) -> tuple[dict, Status | None, str]:
    """The crossover as the followed branches see it (fields, status override, message): "first" when the global
    minimum jumps again after the transition (a fold pair on the ordered branch: the uniform-pooling minimum and the
    copy minimum coexist), with the coexistence point, its window and the jump of √(t² + c²); "smooth" when it
    does not; "not classified" when the branches were not classified or a later change of the global minimum was not
    (a branch missing there can hide a jump: at L = 2^24 the float64 branches lose the uniform-pooling minimum near
    the crossover)."""
    if found.status == Status.FAILED:  # checked_order has said why
        return {"crossover_order": "not classified"}, None, ""
    unclassified = [t for t in found.later if t.status == Status.FAILED]
    if unclassified:
        return ({"crossover_order": "not classified"}, Status.LIMITED,
                f"; the crossover is not classified: {unclassified[0].message}")
    jumps = [t for t in found.later if t.order == "first" and t.control is not None]
    if not jumps:
        return {"crossover_order": "smooth"}, None, ""
    jump = jumps[0]
    window = tuple(inst.P_of_n(math.exp(s.value)) if math.isfinite(s.value) else math.nan for s in jump.spinodals)
    P_jump = inst.P_of_n(math.exp(jump.control.value))
    size, size_error = _jump_of_polished_states(inst, jump)
    # the branches are located in float64 (BRANCH_DIGITS): each location's error in ln n is its relative error in P
    # (P ∝ n), beside the float's own rounding
    return ({"crossover_order": "first", "P_crossover_jump": P_jump,
             "P_crossover_jump_error": _in_P(P_jump, jump.control.error), "crossover_window": window,
             "crossover_window_error": tuple(_in_P(P, s.error) for P, s in zip(window, jump.spinodals)),
             "crossover_jump": size, "crossover_jump_error": size_error}, None, "")


# Digits of the polish of the coexisting states: the sizes are needed to float64 rounding, from states whose curvatures
# span ~L (the mpmath Newton steps then shrink from 1e-13 to far below it in two steps)
POLISH_DPS = 40


def _jump_of_polished_states(inst: CopyHeadsInstance, jump) -> tuple[float, float]:
    """The jump of √(t² + c²) at the crossover's coexistence point and its error: both coexisting states polished by
    Newton's method in mpmath at the located ln n (the float64 states sit at the gradient's rounding floor: 5.7e-14
    off in √(t² + c²) at L = 1024, V = 4), plus each size's move over the location's error (its slope along its
    branch times the error in ln n) and the float64 rounding of the result."""
    scale = state_scale(inst)
    n_ = mpmath.mpf(math.exp(jump.control.value))
    sizes = []
    for state in jump.states:
        x = np.asarray(state, float).copy()
        x[:2] *= scale
        polished, errors = polished_stationary_point(inst.reduced.gradient_mp, inst.reduced.hessian_mp, x, n_,
                                                     dps=POLISH_DPS)
        sizes.append((math.hypot(polished[0], polished[1]), float(errors[0] + errors[1])))
    slopes = [abs(slope) for slope in jump.order_parameter_slopes]  # of the sizes themselves (`branch_classification`)
    size = abs(sizes[1][0] - sizes[0][0])
    error = (sum(slopes) * jump.control.error + sizes[0][1] + sizes[1][1]
             + 2.0**-52 * (sizes[0][0] + sizes[1][0] + size))
    return size, error


def _in_P(P: float, ln_n_error: float) -> float:
    """The error of P at a location found in ln n with `ln_n_error`, plus P's float64 rounding."""
    return abs(P) * (ln_n_error + 2.0**-52) if math.isfinite(P) else math.nan
