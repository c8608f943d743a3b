"""α_c (the free energies of the positional and semantic branches cross) and α_l (the semantic test
error crosses the linear baseline): at one ω on tensor rules with a check-rule error, refined on
split-line convergence studies, and along ω by continuation (tensor rules)."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import replace

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.accurate import ENVELOPE_RULES, STATE_RULES, convergence_study
from attnphase.models.positional_semantic.branches import BranchTracker, distinct, genuine
from attnphase.models.positional_semantic.parameters import Parameters, ThresholdSearch
from attnphase.models.positional_semantic.results import CurveResult, LinearBaseline, Thresholds, combined_status
from attnphase.models.positional_semantic.point import linear_baseline
from attnphase.numeric.branches import extrapolate
from attnphase.numeric.threshold import (CrossingValue, Threshold, first_sign_change, noisy_newton_root, noisy_threshold,
                                         scan_crossing, second_difference_bound, secant_root)
from attnphase.params import check_choice, check_real_list
from attnphase.results import Status

__all__ = ["SYMMETRIC_A", "MEANING_C", "MEANING_L", "crossing_functions", "refine_threshold", "threshold",
           "alpha_c_curve"]

# What the threshold searches require of A (Parameters.swap_symmetric; the branches need nothing).
SYMMETRIC_A = "a token-reversal symmetric A (thresholds are computed in the spec's symmetric setting)"
MEANING_C = {-1: "positional is the global minimum (Φ_sem < Φ_pos)", 1: "semantic is the global minimum (Φ_sem > Φ_pos)"}
MEANING_L = {-1: "the semantic branch beats the linear baseline", 1: "the semantic branch does not beat the linear baseline"}
# Newton steps (one convergence study per branch each) of the threshold refinement.
REFINE_STEPS = 3


def _search_with_check(nodes_per_dim, check_nodes_per_dim, alpha_min, alpha_max, n_scan, rtol) -> ThresholdSearch:
    """The validated search settings of a threshold with a check-rule error (the check rule is required)."""
    search = ThresholdSearch.validated(nodes_per_dim=nodes_per_dim, check_nodes_per_dim=check_nodes_per_dim,
                                       alpha_min=alpha_min, alpha_max=alpha_max, n_scan=n_scan, rtol=rtol)
    if search.check_nodes_per_dim is None:
        raise ParameterError("check_nodes_per_dim", None, f"an integer in [{search.nodes_per_dim + 1}, 48]")
    return search


def crossing_functions(tracker: BranchTracker, baseline: float):
    """Δ_c(α) = Φ_sem − Φ_pos and Δ_l(α) = ε_g,sem − ε_g^lin on the tracker's rule; NaN where a solve
    failed or slid onto another branch (`genuine`), never a crossing."""
    def delta_c(alpha):
        return genuine(tracker.at("semantic", alpha), "free_energy") - genuine(tracker.at("positional", alpha), "free_energy")

    def delta_l(alpha):
        return genuine(tracker.at("semantic", alpha), "test_error") - baseline

    return delta_c, delta_l


def refine_threshold(kind: str, coarse: Threshold, tracker: BranchTracker, params: Parameters, baseline: LinearBaseline,
                     state_rules=STATE_RULES, envelope_rules=ENVELOPE_RULES) -> tuple[Threshold, tuple]:
    """Root of the ACCURATELY computed crossing function, by Newton's method from the tensor-rule root
    (numeric.threshold.noisy_newton_root); returns it and the convergence studies it made.

    Crossing functions: Δ_c = Φ_sem − Φ_pos and Δ_l = ε_g,sem − ε_g^lin, each evaluated by
    `convergence_study` (split-line rules, with its error). Slopes: dΔ_c/dα = E[M]_pos − E[M]_sem
    exactly (dΦ/dα = −E[M] along a branch), taken from the studies; dΔ_l/dα from the secant of the
    accurate values once there are two, the working rule's bracket secant before (its uncertainty from
    the working rule's local slope). Each step is one study per branch, started from the previous
    study's state. The linearisation error of the last step uses |Δ''| from the accurate slopes of two
    steps for α_c, else the larger of the working rule's second differences with steps 0.05 and 0.1.
    The tensor rule enters only as the start and through |Δ''|.

    Why not one linear correction from the tensor root: at small ω the tensor rules misplace the
    positional branch (ω = 0, α = 0.6: m = 0.072 on 10 nodes against 0.152 converged, Φ too low by
    6.5e-6), so the tensor root can be far off (ω = 0.1: 0.701 on 8 nodes against 0.7515 converged) and
    its slope is not that of the accurate Δ_c.
    """
    if not coarse.success:  # keep what the scan found (not_found / failed) and why
        return noisy_threshold(math.nan, math.nan, coarse.status, f"not refined: {coarse.message}", coarse.bracket), ()
    branches = ("semantic", "positional") if kind == "alpha_c" else ("semantic",)
    crossing = crossing_functions(tracker, baseline.value)[0 if kind == "alpha_c" else 1]
    alpha = coarse.value
    # working-rule curvature and local slope near the tensor root (cheap tensor solves)
    curvature = second_difference_bound(crossing, alpha)
    h = 0.02
    local_slope = (crossing(alpha + h) - crossing(alpha - h)) / (2 * h)
    starts = {b: tracker.at(b, alpha) for b in branches}
    studies = []

    def evaluate(a) -> CrossingValue:
        made = tuple(convergence_study(b, a, params, state_rules=state_rules, envelope_rules=envelope_rules,
                                       start=replace(starts[b], alpha=a)) for b in branches)
        studies.extend(made)
        if not all(s.success for s in made):
            return CrossingValue(a, failure="split-line study: " + "; ".join(s.message for s in made))
        for b, study in zip(branches, made):
            starts[b] = replace(starts[b], state=study.state)
        if kind == "alpha_c":
            semantic, positional = made
            return CrossingValue(a, semantic.free_energy - positional.free_energy,
                                 semantic.free_energy_error + positional.free_energy_error,
                                 positional.envelope - semantic.envelope)
        return CrossingValue(a, made[0].test_error - baseline.value, made[0].test_error_error + baseline.error)

    refined, _ = noisy_newton_root(evaluate, alpha, curvature=curvature, curvature_source="working-rule second difference",
                                   initial_slope=coarse.slope, reference_slope=local_slope, max_steps=REFINE_STEPS,
                                   bracket=coarse.bracket, name="α")
    return replace(refined, message=f"split-line convergence studies from the tensor root {coarse.value:.5f}; "
                                    f"{refined.message}"), tuple(studies)


def threshold(omega, sigma=0.5, lam=0.01, A=None, L=2, *, nodes_per_dim=10, check_nodes_per_dim=14,
              alpha_min=0.5, alpha_max=3.0, n_scan=6, rtol=1e-4, refine=(), state_rules=STATE_RULES,
              envelope_rules=ENVELOPE_RULES) -> Thresholds:
    """α_c(ω) and α_l(ω) with error estimates.

    Both branches are followed over a scan of α (warm-started); the first sign change of
    Δ_c = Φ_semantic − Φ_positional (semantic becomes the global minimum) and of
    Δ_l = ε_g,semantic − ε_g^lin is refined by a bracketing root finder to `rtol`, and the crossing
    function is re-evaluated at the root on a finer rule (`check_nodes_per_dim`) to estimate the
    quadrature error of the threshold (numeric.threshold.scan_crossing).

    refine: names among ("alpha_c", "alpha_l") to move to the root of the accurately computed crossing
    function (`refine_threshold`, split-line convergence studies at the tensor-rule root; about two
    minutes per branch study on two cores); reported as `<name>_refined` with its error.
    """
    params = Parameters.validated(omega=omega, sigma=sigma, lam=lam, A=A, L=L)
    search = _search_with_check(nodes_per_dim, check_nodes_per_dim, alpha_min, alpha_max, n_scan, rtol)
    nodes_per_dim, check_nodes_per_dim, rtol = search.nodes_per_dim, search.check_nodes_per_dim, search.rtol
    if not params.swap_symmetric:
        raise ParameterError("A", params.A, SYMMETRIC_A)
    refine = tuple(check_choice("refine", name, ("alpha_c", "alpha_l")) for name in refine)
    baseline = linear_baseline(params)
    work = BranchTracker(params, nodes_per_dim)
    check = BranchTracker(params, check_nodes_per_dim, seed=work)
    work_c, work_l = crossing_functions(work, baseline.value)
    check_c, check_l = crossing_functions(check, baseline.value)
    alphas = np.linspace(search.alpha_min, search.alpha_max, search.n_scan)
    dc = [work_c(a) for a in alphas]
    dl = [work_l(a) for a in alphas]

    def why(branches):
        """Which branch solve is missing at α, and why (for the diagnostics of an unsolved scan point)."""
        def explain(a):
            lost = [f"{b} {work.at(b, a).status}" + (" but collapsed" if work.at(b, a).success else "")
                    for b in branches if not distinct(work.at(b, a))]
            return ", ".join(lost)
        return explain

    alpha_c = scan_crossing(work_c, alphas, dc, check_c, rtol, meaning=MEANING_C, why=why(("semantic", "positional")),
                            name="α")
    alpha_l = scan_crossing(work_l, alphas, dl, check_l, rtol, meaning=MEANING_L, why=why(("semantic",)), name="α")
    refined, studies = {}, ()
    for name, coarse in (("alpha_c", alpha_c), ("alpha_l", alpha_l)):
        if name in refine:
            refined[name], new = refine_threshold(name, coarse, work, params, baseline, state_rules, envelope_rules)
            studies += new
    result = Thresholds(alpha_c, alpha_l, baseline.value, nodes_per_dim, check_nodes_per_dim, Status.CONVERGED,
                             f"alpha_c: {alpha_c.message}; alpha_l: {alpha_l.message}", refined, studies)
    return replace(result, status=combined_status(result.best("alpha_c").status, result.best("alpha_l").status))


def alpha_c_curve(omegas, sigma=0.5, lam=0.01, A=None, L=2, *, nodes_per_dim=6, check_nodes_per_dim=8,
                  alpha_min=0.4, alpha_max=3.0, n_scan=6, rtol=1e-3) -> CurveResult:
    """α_c(ω) and α_l(ω) for every ω in `omegas` (sorted ascending), by continuation in ω.

    The first ω is bracketed on a scan of [alpha_min, alpha_max] (n_scan points); every later ω starts
    the secant method (numeric.threshold.secant_root) from the previous thresholds extrapolated linearly
    in ω, and every branch solve is warm-started from the previous ω's solutions (BranchTracker seeds,
    linear extrapolation in α). Errors: the shift of the crossing function on the check rule at the
    root, over the slope (as in `threshold`), plus rtol·α.
    """
    omegas = sorted(check_real_list("omegas", omegas, None, 0.0, 1.0))
    base = Parameters.validated(omega=omegas[0], sigma=sigma, lam=lam, A=A, L=L)
    search = _search_with_check(nodes_per_dim, check_nodes_per_dim, alpha_min, alpha_max, n_scan, rtol)
    nodes_per_dim, check_nodes_per_dim = search.nodes_per_dim, search.check_nodes_per_dim
    alpha_min, alpha_max, n_scan, rtol = search.alpha_min, search.alpha_max, search.n_scan, search.rtol
    started = time.perf_counter()
    alpha_c, alpha_l, previous, solves = [], [], None, 0
    for k, omega in enumerate(omegas):
        params = dataclasses.replace(base, omega=omega)  # ω validated above, with the other parameters
        work = BranchTracker(params, nodes_per_dim, seed=previous)
        check = BranchTracker(params, check_nodes_per_dim, seed=work)
        baseline = linear_baseline(params).value
        work_functions, check_functions = crossing_functions(work, baseline), crossing_functions(check, baseline)
        for history, f, f_check in ((alpha_c, work_functions[0], check_functions[0]),
                                    (alpha_l, work_functions[1], check_functions[1])):
            known = [(w, t.value) for w, t in zip(omegas[:k], history) if t.success][-2:]
            guess = extrapolate([w for w, _ in known[::-1]], [a for _, a in known[::-1]], omega) if known else None
            if guess is not None and not (alpha_min <= guess <= alpha_max):
                guess = None  # the extrapolation left the scan range: bracket afresh
            if guess is None:  # first ω (or no converged one yet): bracket on a scan, guess by interpolation
                guess = first_sign_change(f, np.linspace(alpha_min, alpha_max, n_scan))
            if guess is None:
                history.append(noisy_threshold(math.nan, math.nan, Status.NOT_FOUND,
                                               f"no sign change on [{alpha_min:g}, {alpha_max:g}]"))
                continue
            history.append(secant_root(f, float(guess), f_check, rtol, (alpha_min, alpha_max)))
        solves += work.solves + check.solves
        previous = work
    statuses = [t.status for t in alpha_c + alpha_l]
    converged = sum(s == Status.CONVERGED for s in statuses)
    return CurveResult(tuple(omegas), tuple(alpha_c), tuple(alpha_l), nodes_per_dim, check_nodes_per_dim,
                       time.perf_counter() - started, solves, combined_status(*statuses),
                       f"{converged} of {len(statuses)} thresholds converged")
