"""`threshold`: the transition of one instance, located and classified by the method its attention and
convention call for (homogeneous softmax: its stationary branches followed in n; linear: instability of the
symmetric state, checked on the followed branches; causal mask: the row-resolved forms; first attempt: the
two-parameter reduction (m, q))."""

from __future__ import annotations

import math

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.convention import DEFAULT, Convention, refuse_linear_only
from attnphase.models.copy_heads.homogeneous import SCALE_FIELDS, softmax_grid, spelled
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.parameters import ThresholdSettings
from attnphase.models.copy_heads.linear_transition import first_attempt_transition, linear_transition, n_range
from attnphase.models.copy_heads.results import LinearTransition, SoftmaxTransition, Transition
from attnphase.models.copy_heads.softmax_transition import softmax_n_scale, softmax_transition
from attnphase.params import check_bool
from attnphase.results import Status

__all__ = ["action_overflow", "threshold_instance", "threshold"]


def action_overflow(inst: CopyHeadsInstance) -> str:
    """Why the float64 action cannot be scanned at these parameters ("" when it can).

    Softmax: S' on the x grid at the natural scale of n (S' only: the minima are its sign changes, and the
    bisection works without S'', which overflows at L ~ 2^256 while the scan and the mpmath polish still work);
    linear: the Hessian at the symmetric state at both ends of the n scan (remainder at ρ = 1 for "entropy"; under
    the causal mask the stability matrix there).
    Extreme τ, σ² or β make these overflow (e.g. τ = 1e300, or τ = 1e-300, whose scan reaches n ~ 1e158), and the
    scans would then see no sign change at all. The message names the scales set away from 1 (on the command line
    by their options: `homogeneous.options_named`), and the one that alone puts the action there if one does.
    """
    if not _overflows(inst):
        return ""
    conv = inst.convention
    away = [name for name in SCALE_FIELDS if getattr(conv, name) != 1.0]
    alone = [name for name in away if not _overflows(inst.with_convention(conv.with_(**{name: 1.0})))]
    if alone:
        at_one = f"{alone[0]} = 1" if spelled(alone[0]) == alone[0] else f"{spelled(alone[0])} 1"  # tau0 = 1, --tau 1
        cause = f": {spelled(alone[0])} = {getattr(conv, alone[0]):g} alone puts it there (with {at_one} it does not)"
    else:
        cause = "".join(f"; {spelled(name)} = {getattr(conv, name):g}" for name in away) + ")"
    return (f"the reduced {inst.attention} action overflows float64 at these parameters (L = {inst.L}, V = {inst.V}"
            f"{')' if alone else ''}{cause}: threshold not computed")


def _overflows(inst: CopyHeadsInstance) -> bool:
    action = inst.reduced
    with np.errstate(all="ignore"):
        if inst.attention == "softmax":
            values = [action.gradient(softmax_grid(inst), softmax_n_scale(inst))]
        elif inst.causal:  # the row-resolved stability matrix its scan evaluates
            from attnphase.models.copy_heads.causal import stability_matrix

            values = [stability_matrix(inst, np.array(n_range(inst)))]
        else:
            zero = [0.0, 0.0] + ([0.0] if inst.entropy else [])
            values = [action.hessian(*zero, n_) for n_ in n_range(inst)]
    return not all(np.all(np.isfinite(np.asarray(v, float))) for v in values)


def threshold_instance(inst: CopyHeadsInstance, digits: int = 30, classify: bool = True,
                       reduction: str = "convention-a", follow: bool = True) -> Transition:
    """`threshold` for a validated instance and settings (follow=False: linear attention is classified at its
    instability by the Landau expansion only, without following the stationary branches; for scaling scans)."""
    if inst.causal:
        if reduction == "first-attempt":
            raise ParameterError("reduction", reduction, "'convention-a' with boundary 'causal'")
        if inst.attention == "softmax":
            from attnphase.models.copy_heads.row_mean_field import causal_softmax_transition

            return causal_softmax_transition(inst, digits)
        from attnphase.models.copy_heads.causal import causal_linear_transition
        from attnphase.models.copy_heads.results import CausalLinearTransition

        overflow = action_overflow(inst)
        if overflow:
            return CausalLinearTransition("linear", inst.L, inst.V, "undetermined", math.nan, "", math.nan, math.nan,
                                          Status.FAILED, overflow)
        return causal_linear_transition(inst, digits, classify)
    overflow = action_overflow(inst)
    if overflow:
        # a scan over non-finite curvatures would find no sign change and report "no transition"
        kind = SoftmaxTransition if inst.attention == "softmax" else LinearTransition
        return kind(inst.attention, inst.L, inst.V, "undetermined", math.nan, "", math.nan, math.nan, Status.FAILED,
                    overflow)
    if inst.attention == "softmax":
        return softmax_transition(inst, digits)
    if reduction == "first-attempt":
        return first_attempt_transition(inst, digits)
    return linear_transition(inst, digits, classify, follow)


def threshold(attention: str, L: int, V: int, digits: int = 30, convention: Convention = DEFAULT,
              classify: bool = True, reduction: str = "convention-a") -> Transition:
    """P* (and the crossover for linear attention) to `digits` significant digits.

    The softmax order is always found (on the followed branches); classify=False skips the Landau step of the
    linear classification and the branch check (used inside sweeps, where the end points are classified).
    """
    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
    settings = ThresholdSettings.validated(digits=digits, reduction=reduction)
    if inst.attention == "softmax":
        refuse_linear_only("reduction", settings.reduction, ThresholdSettings.declarations()["reduction"].default)
    return threshold_instance(inst, settings.digits, check_bool("classify", classify), settings.reduction)
