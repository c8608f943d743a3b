"""α_c(ω) and α_l(ω) along a list of ω: the same path as `threshold` at every ω, continued in ω.

The first (largest) ω is a full `threshold` (tensor bracket, Newton on the first rung, climb). Every other ω
starts from the previous ω's first-rung fixed points at the threshold extrapolated in ω (numeric.branches.
extrapolate through the last three ω): Newton on the first rung from there, then the same climb with the
same verified error. Going down in ω keeps the positional branch on the accurate rules all the way to ω = 0,
where the tensor rules misplace it (m ≈ 0.07 instead of 0.15). The thresholds whose continuation fails at an
ω are computed afresh by one `threshold` there (α_l(0.45) ≈ 3.25 lies above the default alpha_max = 3, where
`threshold`'s scan extends, so the continuation accepts the same range).

With `checkpoint_dir`, each finished ω (its thresholds and the first-rung states the continuation goes on from)
is kept on disk as it is finished (resume.computed_once), under a subdirectory named by the curve's arguments:
the same call after an interruption reads those ω back and continues from their states, so it returns what an
uninterrupted call returns, without computing them again.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from attnphase import progress
from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import Parameters, ThresholdSearch, check_names
from attnphase.models.positional_semantic.point import linear_baseline
from attnphase.models.positional_semantic.results import PhaseCurve, Thresholds, combined_status
from attnphase.models.positional_semantic.rules import count_line_probes, resolve_rules
from attnphase.models.positional_semantic.thresholds import ALPHA_CEILING, SYMMETRIC_A, THRESHOLD_TOL, refine, threshold
from attnphase.numeric.blas_threads import one_blas_thread
from attnphase.numeric.branches import extrapolate
from attnphase.numeric.threshold import noisy_threshold
from attnphase.params import check_bool, check_real_list
from attnphase.results import Status
from attnphase.resume import computed_once, kept_directory

__all__ = ["phase_curve"]


def _continued(name: str, history: list, omega: float, params: Parameters, baseline: float, ladder,
               search: ThresholdSearch, outer_split_check: bool):
    """The threshold `name` at ω from the previous ω's (history: (ω, Threshold, first-rung states) per ω, the
    nearest last), or None when there is no usable history or the extrapolation leaves the range `threshold`
    searches (α outside [alpha_min, ALPHA_CEILING], a predicted q ≤ 0): the caller then searches afresh."""
    usable = [(w, t, s) for w, t, s in history if t.success or t.status == Status.LIMITED][-3:][::-1]
    if not usable or usable[0][2] is None:
        return None
    controls = [w for w, _, _ in usable]
    alpha = float(extrapolate(controls, [t.value for _, t, _ in usable], omega))
    if not search.alpha_min <= alpha <= ALPHA_CEILING:
        return None
    states = {}
    for branch, state in usable[0][2].items():
        known = [s[branch].solution.state for _, _, s in usable if s is not None and branch in s]
        predicted = extrapolate(controls[:len(known)], known, omega) if len(known) == len(controls) else known[0]
        if not predicted[0] > 0:  # q, the student's self-overlap
            return None
        states[branch] = replace(state, solution=replace(state.solution, state=np.asarray(predicted, float)))
    slope = usable[0][1].slope if name == "alpha_l" else None
    return refine(name, states, alpha, slope, params, baseline, ladder, search.tol, outer_split_check=outer_split_check)


@one_blas_thread()
def phase_curve(omegas, sigma=0.5, lam=0.01, A=None, L=2, *, tol=1e-3, alpha_min=0.3, alpha_max=3.0,
                which=("alpha_c", "alpha_l"), rules="auto", outer_split_check=True,
                checkpoint_dir: str | Path | None = None) -> PhaseCurve:
    """α_c(ω) and α_l(ω) at every ω in `omegas`, each to the absolute tolerance `tol` (see the module
    docstring and `threshold`, whose result each ω gets, and whose `outer_split_check` this passes on).

    checkpoint_dir: where each finished ω is kept, so that the same call resumes after an interruption (module
    docstring); None keeps nothing."""
    omegas = sorted(check_real_list("omegas", omegas, None, 0.0, 1.0), reverse=True)
    if len(set(omegas)) != len(omegas):
        raise ParameterError("omegas", omegas, "at least one ω in [0, 1], no repeats")
    base = Parameters.validated(omega=omegas[0], sigma=sigma, lam=lam, A=A, L=L)
    if not base.swap_symmetric:
        raise ParameterError("A", base.A, SYMMETRIC_A)
    search = ThresholdSearch.validated(tol=tol, alpha_min=alpha_min, alpha_max=alpha_max)
    which = tuple(check_names("which", which, ("alpha_c", "alpha_l"), "which"))
    outer_split_check = check_bool("outer_split_check", outer_split_check)
    ladder, _, verified = resolve_rules(base, rules, count_line_probes(search.tol, THRESHOLD_TOL))
    kept = None
    if checkpoint_dir is not None:  # everything the values depend on; the ω list, since each ω continues the last
        model = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.name != "omega"}
        kept = kept_directory(checkpoint_dir, "phase_curve", {
            "omegas": omegas, "model": model, "tol": search.tol, "alpha_min": search.alpha_min,
            "alpha_max": search.alpha_max, "which": list(which), "ladder": [rule.label for rule in ladder],
            "outer_split_check": outer_split_check})
    started = time.perf_counter()
    history = {name: [] for name in which}
    points = {}
    solved = set()  # the ω computed by this call (the others were read back from checkpoint_dir)
    with progress.task("α_c(ω), α_l(ω)", total=len(omegas)) as bar:
        for omega in omegas:
            params = dataclasses.replace(base, omega=omega)  # ω validated above, with the other parameters
            baseline = linear_baseline(params).value

            def at_omega(omega=omega, params=params, baseline=baseline):
                """name -> (Threshold, rungs, states at the threshold, first-rung states) at this ω."""
                solved.add(omega)
                continued = {name: _continued(name, history[name], omega, params, baseline, ladder, search,
                                              outer_split_check) for name in which}
                # one fresh `threshold` (one follow of the branches) for the thresholds whose continuation failed
                afresh = tuple(name for name in which if continued[name] is None
                               or not (continued[name][0].success or continued[name][0].status == Status.LIMITED))
                fresh = (threshold(omega, sigma, lam, A, L, tol=search.tol, alpha_min=search.alpha_min,
                                   alpha_max=search.alpha_max, which=afresh, rules=rules,
                                   outer_split_check=outer_split_check) if afresh else None)
                found = {}
                for name in which:
                    if name in afresh:
                        found[name] = (getattr(fresh, name), getattr(fresh, f"rungs_{name}"), fresh.states.get(name),
                                       fresh.states.get(name))
                    elif verified:
                        found[name] = continued[name]
                    else:
                        found[name] = (replace(continued[name][0], status=Status.LIMITED,
                                               message=continued[name][0].message + "; tensor rules only"),
                                       *continued[name][1:])
                return found

            if kept is None:
                found = at_omega()
            else:
                found = computed_once(kept / f"omega={omega!r}.json", at_omega)
            for name in which:
                history[name].append((omega, found[name][0], found[name][3]))
            missing = noisy_threshold(math.nan, math.nan, Status.NOT_REQUESTED, "not requested")
            result = {name: found[name][0] for name in which}
            points[omega] = Thresholds(result.get("alpha_c", missing), result.get("alpha_l", missing), baseline,
                                       search.tol, combined_status(*(t.status for t in result.values())),
                                       "; ".join(f"{n}: {t.message}" for n, t in result.items()),
                                       found.get("alpha_c", (None, ()))[1], found.get("alpha_l", (None, ()))[1],
                                       {name: found[name][2] for name in which},
                                       tuple(which) if kept is not None and omega not in solved else ())
            bar.advance(f"ω = {omega:g}")
    ascending = sorted(omegas)
    statuses = [points[w].status for w in ascending]
    converged = sum(s == Status.CONVERGED for s in statuses)
    read_back = sum(bool(points[w].read_back) for w in ascending)
    return PhaseCurve(tuple(ascending), tuple(points[w] for w in ascending), search.tol, time.perf_counter() - started,
                      combined_status(*statuses), f"{converged} of {len(statuses)} values of ω converged to the tolerance"
                      + (f"; {read_back} read back from {kept} (finished by an earlier call)" if read_back else ""))
