"""Scaling of the thresholds with L and V against the claimed laws (docs/models/copy_heads.md), per convention."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.convention import DEFAULT, LINEAR_ONLY, Convention
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.law_verdicts import softmax_scaling_verdict
from attnphase.models.copy_heads.parameters import (
    ATTENTIONS, MAX_L, MAX_SCALING_L, MAX_V, ScalingRange, ThresholdSettings,
)
from attnphase.models.copy_heads.results import (
    ClaimedLawFit, ConventionEntry, ConventionRow, ConventionTable, ScalingPoint, ScalingResult, SoftmaxExtrapolation,
)
from attnphase.models.copy_heads.thresholds import threshold_instance
from attnphase.numeric.scaling import asymptotic_count, fit_power_law, law_fit
from attnphase.params import OneOf, check_int, check_real_list
from attnphase.results import Status

__all__ = ["CLAIMED_LAWS", "SKIPPED_ORDER", "claimed_law_fit", "softmax_large_L_correction",
           "softmax_ratio_extrapolation", "default_L_values", "softmax_law_verdict", "scaling", "scaling_in_V",
           "NAMED_CONVENTIONS", "convention_table"]

# (attention, threshold, variable) -> (claimed exponent, log power, the law a fit over `variable` tests, the part of
# the claim (spec §1: P* ~ V², the crossover ~ L^{3/2} V^{1/2}, softmax P* ~ L ln²L) it does not test, "" when none).
# A fit in L says nothing about the V power: under τ = 1/V the crossover goes as V L^{3/2}, and with the read-out at
# its MAP P* goes as V, while the L exponents still hold (docs/models/copy_heads.md, "Which claims hold under which
# convention"); so a fit's law names only the power it fits.
CLAIMED_LAWS = {
    ("softmax", "P_star", "L"): (1.0, 2.0, "P* ~ L ln^2 L", ""),
    ("linear", "P_star", "L"): (0.0, 0.0, "P* ~ L^0 (no L dependence)", "P* ~ V^2"),
    ("linear", "P_crossover", "L"): (1.5, 0.0, "P_crossover ~ L^(3/2)", "P_crossover ~ V^(1/2)"),
    ("softmax", "P_star", "V"): (None, 0.0, "none (no V dependence claimed)", "P* ~ L ln^2 L"),
    ("linear", "P_star", "V"): (2.0, 0.0, "P* ~ V^2", "P* ~ L^0 (no L dependence)"),
    ("linear", "P_crossover", "V"): (0.5, 0.0, "P_crossover ~ V^(1/2)", "P_crossover ~ L^(3/2)"),
}
# where the fit over the other variable is made
_FIT_OVER = {"L": "`attnphase scaling copy-heads` (a fit in L)",
             "V": "attnphase.api.copy_heads.scaling_in_V (a fit in V; the command fits in L only)"}


def _not_tested(part: str, variable: str) -> str:
    """The sentence that says which part of the claim a fit over `variable` leaves untested ("" when none)."""
    if not part:
        return ""
    other = "V" if variable == "L" else "L"
    return (f"{part}: not tested by this fit in {variable}; see {_FIT_OVER[other]}, and docs/models/copy_heads.md "
            "(\"Which claims hold under which convention\") for the conventions where it fails")


def claimed_law_fit(xs, ys, attention: str, which: str, variable: str) -> ClaimedLawFit:
    """The fit of threshold `which` against the part of its claimed law that varies with `variable`
    (`numeric.scaling.law_fit`: the upper half of the sizes, band widened by the drift of the local slope and its
    tail); the part of the claim it does not test is `not_tested`, in words."""
    claimed, log_power, words, untested = CLAIMED_LAWS[(attention, which, variable)]
    fit = law_fit(xs, ys, claimed, log_power=log_power)
    return ClaimedLawFit(**dataclasses.asdict(fit), law=words, not_tested=_not_tested(untested, variable),
                         variable=variable, threshold=which)


def _sizes(name: str, values, high: int, at_least: int = 1) -> list[int]:
    """The distinct integers of a list of sizes in [2, high], sorted; at least `at_least` of them (a fit needs 3)."""
    allowed = f"a list of at least {at_least} distinct integer(s) in [2, 2^{high.bit_length() - 1}]"
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ParameterError(name, values, allowed)
    sizes = sorted({check_int(name, v, 2, high) for v in values})
    if len(sizes) < at_least:
        raise ParameterError(name, values, allowed + (" (a fit has 2 parameters)" if at_least == 3 else ""))
    return sizes


def _convention(conv) -> Convention:
    if not isinstance(conv, Convention):
        raise ParameterError("convention", conv, "an attnphase.models.copy_heads.Convention")
    return conv


def softmax_large_L_correction(L: int, V: int, conv: Convention = DEFAULT) -> float:
    """Large-L form of the softmax coexistence point, n* ≈ T ℓ²/(4εσ²) · C(ℓ), ℓ = ln L.

    Derivation (shortcut row rate, u ≫ 1): on the copy branch a² ≫ k/L, so the fit gain is
    (εn/2)ρ with ρ = m²/q = 1/(1 + e^{−2y}), s = ℓ/2 + σ² + y the previous-position score. Stationarity
    T s/σ² = εn dρ/dy gives e^{−2y} = 2/ℓ; equating the two branches, T s²/(2σ²) = (εn/2)(1 − 2/ℓ), so
    C(ℓ) = 1 + (2 ln ℓ + 4σ² + 2 − 2 ln 2)/ℓ + O(ln²ℓ/ℓ²).
    """
    L = check_int("L", L, 2, MAX_L)  # ln ln L needs L > 1
    check_int("V", V, 2, MAX_V)
    conv = _convention(conv)
    ell = math.log(L)
    return 1 + (2 * math.log(ell) + 4 * conv.sigma2 + 2 - 2 * math.log(2)) / ell


def softmax_law_verdict(extrapolation: SoftmaxExtrapolation, law: str = "P* ~ L ln²L") -> tuple[bool, str]:
    """One verdict on P* ~ L ln²L for the softmax thresholds of a scan, with its criterion (the text names the law
    `law`: the extrapolation is of n*, which is P* where P counts target tokens): the law holds
    (asymptotically) when the corrected ratio P*/(L ln²L · C(ln L)/(4εσ²)) approaches 1 monotonically over the sizes
    computed and, over the sizes the fits take (numeric.scaling.asymptotic_count: the upper half, at least 4), its
    remainder is of the derived order ln²ln L/ln²L: remainder/(ln²ln L/ln²L) positive and within a factor 2 (it is
    larger at small L, where the expansion starts), on at least three sizes (two always lie within some factor). A
    plain power-law fit of P*/ln²L over a finite range is not the criterion: the slowly decaying log corrections bias
    it below 1."""
    corrected = np.array(extrapolation.corrected_ratio)
    remainder = np.array(extrapolation.remainder_over_ln2ell_over_ell2)
    upper = remainder[-asymptotic_count(len(remainder)):]
    approaches = len(corrected) >= 2 and bool(np.all(np.diff(np.abs(corrected - 1)) < 0))
    derived_order = bool(len(upper) >= 3 and np.all(upper > 0) and upper.max() <= 2 * upper.min())
    holds = approaches and derived_order
    text = (f"{law} {'holds' if holds else 'does not hold'} asymptotically: the corrected ratio "
            f"{' → '.join(f'{v:.4f}' for v in corrected)} {'approaches' if approaches else 'does not approach'} 1 "
            f"monotonically, with remainder/(ln²ln L/ln²L) over the {len(upper)} largest sizes (as the fits) from "
            f"{upper.min():.2f} to {upper.max():.2f} ({'within' if derived_order else 'not within'} a factor 2"
            f"{'' if len(upper) >= 3 else '; fewer than three sizes judge no order'})")
    return holds, text


def softmax_ratio_extrapolation(Ls, P_stars, V: int, conv: Convention = DEFAULT) -> SoftmaxExtrapolation:
    """Does n*/(T ln²L) tend to a constant? Compared with the large-L analysis.

    R(L) = n*/(T ℓ²); R∞ = 1/(4εσ²) is the predicted limit. The corrected ratio R/(R∞ C(ℓ)) must tend
    to 1 with a remainder O(ln²ℓ/ℓ²); `corrected_slope` is its log-log slope against L over the
    points given (band from numeric.scaling), which must be ≈ 0.
    """
    if isinstance(Ls, str) or not isinstance(Ls, Iterable):
        raise ParameterError("Ls", Ls, f"a list of integers in [2, 2^{MAX_L.bit_length() - 1}]")
    Ls = [check_int("Ls", v, 2, MAX_L) for v in Ls]
    P_stars = check_real_list("P_stars", P_stars, len(Ls), 0.0)
    V = check_int("V", V, 2, MAX_V)
    conv = _convention(conv)
    R_inf = 1 / (4 * (1 - 1 / V) * conv.sigma2)
    R = np.array([conv.n_of_P(p, L) / (conv.targets(L) * math.log(L) ** 2) for p, L in zip(P_stars, Ls)])
    corrected = R / (R_inf * np.array([softmax_large_L_correction(L, V, conv) for L in Ls]))
    remainder_scale = np.array([math.log(math.log(L)) ** 2 / math.log(L) ** 2 for L in Ls])
    slope = {}
    if len(Ls) >= 3:
        fit = fit_power_law(np.array(Ls, float), corrected)
        slope = {"corrected_slope": fit.exponent, "corrected_slope_low": fit.exponent_low,
                 "corrected_slope_high": fit.exponent_high}
    return SoftmaxExtrapolation(R_inf, tuple(R.tolist()), tuple(corrected.tolist()),
                                tuple(((corrected - 1) / remainder_scale).tolist()), **slope)


def default_L_values(L_min: int, L_max: int) -> list[int]:
    """L_min, the powers of 2 in between, L_max (however few: `scaling` refuses fewer than 3)."""
    L_min = check_int("L_min", L_min, 2, MAX_SCALING_L)  # its own range: a too large L_min is not L_max's fault
    return ScalingRange(L_min, check_int("L_max", L_max, L_min, MAX_SCALING_L)).L_values()


SKIPPED_ORDER = "skipped (classified at the end sizes only)"
"""The order of a linear scan's interior size: the Landau step runs at the first and the last size only (the order
does not change in between; `threshold copy-heads` classifies any one size)."""


def _points(attention: str, sizes: list, V_or_L, variable: str, digits: int, convention: Convention) -> tuple:
    """(ScalingPoint per size, the threshold's message per size, whether it failed: nothing computed there)."""
    points, messages, failed = [], [], []
    for i, size in enumerate(sizes):
        L, V = (size, V_or_L) if variable == "L" else (V_or_L, size)
        inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
        classify = i in (0, len(sizes) - 1)
        tr = threshold_instance(inst, digits, classify=classify, follow=False)
        order = SKIPPED_ORDER if not classify and tr.order == "not classified" else tr.order
        points.append(ScalingPoint(L, V, tr.P_star, tr.P_star_digits, order,
                                   tr.P_crossover if attention == "linear" else None))
        messages.append(tr.message)
        failed.append(tr.status == Status.FAILED)
    return points, messages, failed


def _fits(attention: str, points: list, variable: str) -> dict:
    xs = [getattr(p, variable) for p in points]
    fits = {"P_star": claimed_law_fit(xs, [p.P_star for p in points], attention, "P_star", variable)}
    if attention == "linear":
        fits["P_crossover"] = claimed_law_fit(xs, [p.P_crossover or math.nan for p in points], attention, "P_crossover",
                                              variable)
    return fits


def scaling(attention: str, V: int, L_min: int, L_max: int, digits: int = 15, convention: Convention = DEFAULT,
            L_values=None) -> ScalingResult:
    """P* (and the crossover) at L = L_min, 2^k in between, L_max (or at `L_values`); fits against each claimed law."""
    attention = OneOf(ATTENTIONS).check("attention", attention)
    V = check_int("V", V, 2, MAX_V)
    if attention == "softmax" and isinstance(convention, Convention) and convention.boundary == "causal":
        raise ParameterError("boundary", "causal", "'periodic' or 'drop-first' for softmax scaling: under the causal "
                                                   "mask the row mean field has no first-order transition at L = "
                                                   "8...256, so there is no P* to fit")
    if L_values is not None:
        Ls = _sizes("L_values", L_values, MAX_L, at_least=3)
        digits = ThresholdSettings.validated(digits=digits).digits
    else:
        sizes = ScalingRange.validated(L_min=L_min, L_max=L_max, digits=digits)
        Ls, digits = sizes.L_values(), sizes.digits
    points, messages, failed = _points(attention, Ls, V, "L", digits, convention)
    # small L can lack the transition (softmax at V = 4: none below L = 8); those sizes are reported, not fitted
    found = [p for p in points if math.isfinite(p.P_star)]
    without = ", ".join(str(p.L) for p in points if not math.isfinite(p.P_star))
    if len(found) < 3:
        # "not found" says the range holds no transition; where a threshold failed (the action overflows float64
        # there), nothing was computed at that size, and the scan failed with it
        status = Status.FAILED if any(failed) else Status.NOT_FOUND
        return ScalingResult(attention, "L", {"V": V}, tuple(points), {}, None, status,
                             f"P* found at {len(found)} of {len(points)} values of L (none at L = {without}): a fit "
                             f"needs 3; {_advice(points, messages)}")
    extrapolation = None
    if attention == "softmax":
        extrapolation = softmax_ratio_extrapolation([p.L for p in found], [p.P_star for p in found], V, convention)
    left_out = f"; no P* at L = {without} (left out of the fits)" if without else ""
    result = ScalingResult(attention, "L", {"V": V}, tuple(points), _fits(attention, found, "L"), extrapolation,
                           Status.CONVERGED, f"{len(points)} values of L{left_out}")
    verdict = softmax_scaling_verdict(result, convention)
    if verdict is None:
        return result
    # the asymptotic claim is judged by the corrected ratio, not by the plain fit's band (law_verdicts): the fit of
    # P_star carries that verdict and its flag together, and no resolution (the band's rule is not what decided it:
    # the claimed exponent may lie outside the printed band); the plain fit's own stay in law_verdict (*_by_plain_fit)
    fits = {**result.fit, "P_star": dataclasses.replace(result.fit["P_star"], verdict=verdict["verdict"],
                                                        holds=verdict["holds"], resolution=math.nan)}
    return dataclasses.replace(result, fit=fits, law_verdict=verdict)


def _advice(points: list, messages: list) -> str:
    """What to change when too few sizes have a P*: --L-min where only sizes below the smallest with a P* lack one
    (below the onset of the transition), otherwise the reason the threshold gave at the first size without one that
    the onset does not explain (it names the option at fault, e.g. a scale that takes the action beyond float64):
    there a larger L_min does not help."""
    has = [math.isfinite(p.P_star) for p in points]
    missing = [i for i, found in enumerate(has) if not found]
    above_onset = [i for i in missing if any(has[:i])]
    if any(has) and not above_onset:
        return "raise --L-min (the smaller sizes lie below the onset of the transition)"
    first = (above_onset or missing)[0]
    return f"at L = {points[first].L}: {messages[first]}"


def scaling_in_V(attention: str, L: int, V_values, digits: int = 15, convention: Convention = DEFAULT) -> ScalingResult:
    """P* (and the crossover) against V at fixed L, fitted against the claimed V laws."""
    attention = OneOf(ATTENTIONS).check("attention", attention)
    L = check_int("L", L, 2, MAX_L)
    Vs = _sizes("V_values", V_values, MAX_V, at_least=3)
    digits = ThresholdSettings.validated(digits=digits).digits
    points, _, _ = _points(attention, Vs, L, "V", digits, convention)
    return ScalingResult(attention, "V", {"L": L}, tuple(points), _fits(attention, points, "V"), None, Status.CONVERGED,
                         f"{len(points)} values of V")


NAMED_CONVENTIONS = {
    "A (default)": DEFAULT,
    "no 1/L scale (kappa=1)": DEFAULT.with_(linear_scale="1"),
    "kappa=1/sqrt(L)": DEFAULT.with_(linear_scale="1/sqrt(L)"),
    "no bias": DEFAULT.with_(bias=False),
    "tau=1/V": DEFAULT.with_(tau_scale="inverse-V"),
    "entropy of the remainder": DEFAULT.with_(remainder="entropy"),
    "drop-first boundary": DEFAULT.with_(boundary="drop-first"),
    "causal mask": DEFAULT.with_(boundary="causal"),
    "causal mask, remainder entropy": DEFAULT.with_(boundary="causal", remainder="entropy"),
    "P counts sequences": DEFAULT.with_(P_counts="sequences"),
    "P counts sequences, loss averaged": DEFAULT.with_(P_counts="sequences", loss="averaged"),
    "centred tokens": DEFAULT.with_(tokens="centred"),
}
# the softmax action does not contain the linear-attention choices nor the remainder, and centring the inputs shifts
# its features by the constant 1/V·1 (rows sum to 1): the action changes by a constant
_SOFTMAX_BLIND = {*LINEAR_ONLY, "remainder", "tokens"}


def _orders(points) -> tuple:
    """The orders the scans classified (the interior sizes they skip on purpose are no order)."""
    return tuple(sorted({p.order for p in points} - {SKIPPED_ORDER}))


def convention_table(L_values=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096), V_values=(4, 8, 16, 32, 64),
                     V_fixed: int = 4, L_fixed: int = 1024, conventions=None) -> ConventionTable:
    """For each convention: the fitted exponents of every claimed law and whether the claim holds."""
    L_values = _sizes("L_values", L_values, MAX_L, at_least=3)
    V_values = _sizes("V_values", V_values, MAX_V, at_least=3)
    V_fixed = check_int("V_fixed", V_fixed, 2, MAX_V)
    L_fixed = check_int("L_fixed", L_fixed, 2, MAX_L)
    if conventions is None:
        conventions = NAMED_CONVENTIONS
    elif not (isinstance(conventions, Mapping) and conventions
              and all(isinstance(c, Convention) for c in conventions.values())):
        raise ParameterError("conventions", conventions, "a non-empty mapping of names to Convention objects")
    rows = []
    for name, conv in conventions.items():
        changed = {f for f in Convention.declarations() if getattr(conv, f) != getattr(DEFAULT, f)}
        note = ""
        if changed and changed <= _SOFTMAX_BLIND:
            softmax, note = None, "same as default (softmax does not depend on this choice)"
        elif conv.boundary == "causal":
            # P* under the mask comes from the row mean field (L <= 256), not from a scan up to 4096
            softmax, note = None, ("no scaling fit: row mean field (causal_softmax_transition) computable for "
                                   "L <= 256; it finds a continuous onset (order 'none') at L = 8...256 (V = 4)")
        else:
            sL = scaling("softmax", V_fixed, min(L_values), max(L_values), convention=conv.without_linear_choices(),
                         L_values=L_values)
            softmax = ConventionEntry(tuple(sL.fit.values()), _orders(sL.points), sL.extrapolation)
        sL = scaling("linear", V_fixed, min(L_values), max(L_values), convention=conv, L_values=L_values)
        sV = scaling_in_V("linear", L_fixed, V_values, convention=conv)
        linear = ConventionEntry(tuple(sL.fit.values()) + tuple(sV.fit.values()), _orders(sL.points + sV.points))
        rows.append(ConventionRow(name, softmax, linear, note))
    return ConventionTable(tuple(rows), Status.CONVERGED, f"{len(rows)} conventions")
