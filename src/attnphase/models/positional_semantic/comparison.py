"""Finite-d runs held against the d → ∞ theory: which branch of `solve` a run is compared with, and per quantity the
trials' mean with its standard error against the branch's value with its verified error (validate.compare).

Shared by `simulate` (`compare_with_theory`, what the CLI prints) and the reproduce report's GD validation
(reproduce.positional_semantic_gd: `reference_entry`, `landed_labels`, `branch_comparisons`), so that both hold a run
against the theory the same way.

The branch: the one the initialisation starts on (semantic init: Q₀ = Q*, the semantic branch; positional init: the
positional branch); for the random init (Adam), the one most trials landed on, told by their overlaps |m| and |θ|
against both branches (`landed_labels`, validate.finite_size.classify_minimum). The quantities: the overlap that is
non-zero on that branch (|m| or |θ|), q, ε_g and ε_t (COMPARED). Agreement: |mean − theory| ≤ 3 √(sem² + theory
error²) (validate.compare.compare; sem = the trials' spread / √trials), the normal band copy heads uses for one set of
runs.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import Accuracy
from attnphase.models.positional_semantic.results import GDResult, MissingBranch, SolveResult
from attnphase.results import Status
from attnphase.validate.compare import NORMAL_BAND, Comparison, compare, student_band, verdict_message
from attnphase.validate.finite_size import classify_minimum

__all__ = ["COMPARED", "SIM_KEYS", "REFERENCE_KEYS", "reference_entry", "landed_labels", "branch_comparisons",
           "compare_with_theory"]

# Quantities compared per branch: the overlap that is non-zero on it, q and the two errors.
COMPARED = {"positional": ("abs_m", "q", "test_error", "train_loss"),
            "semantic": ("abs_theta", "q", "test_error", "train_loss")}
# The simulation's field of each compared quantity (its m and θ are the absolute overlaps |m|, |θ|).
SIM_KEYS = {"abs_m": "m", "abs_theta": "theta", "q": "q", "test_error": "test_error", "train_loss": "train_loss"}
REFERENCE_KEYS = ("abs_m", "abs_theta", "q", "test_error", "free_energy", "train_loss")
# The band of a comparison: the standard error of the trials' mean comes from the trials themselves, so the band is
# Student's t for trials − 1 degrees of freedom at the normal band's 99.73% (`validate.compare.student_band`; as copy
# heads' for several training sets). The normal ±3 rejected a right theory in about 4% of default runs of 5 trials
# (audit v15: q at d = 100, z = −3.07 from 5 trials, −0.94 from 20).
BAND_REASON = "the 99.73% Student-t band of the trials' mean (its error from the trials themselves)"


def _band(trials: int) -> float:
    return student_band(trials - 1) if trials > 1 else NORMAL_BAND


def reference_entry(result) -> dict:
    """One α of the theory from an `api.solve` result: {branch: {quantity: value, quantity + "_error": its error,
    "status": ..., "message": ...}}, a missing branch with NaN values and its evidence."""
    entry = {}
    for b in result.branches:
        fields = {"status": str(b.status), "message": b.message}
        for key in REFERENCE_KEYS:
            name = {"abs_m": "m", "abs_theta": "theta"}.get(key, key)
            fields[key] = abs(getattr(b, name)) if key.startswith("abs") else getattr(b, name)
            fields[key + "_error"] = b.errors.get(name, math.nan)
        entry[b.branch] = fields
    for m in result.missing:
        entry[m.branch] = {"status": str(m.status), "message": m.message,
                           **{k: math.nan for key in REFERENCE_KEYS for k in (key, key + "_error")}}
    return entry


def landed_labels(run, reference: dict, alpha: float) -> np.ndarray:
    """Per-seed minimum reached (finite_size.classify_minimum against the two theory branches at α; a
    branch without a converged theory value at α is never assigned). run: a mapping with the per-trial m and
    theta; reference: {(branch, α): reference_entry(...)[branch]}."""
    def existing(branch, key):
        value = reference[(branch, alpha)][key]
        found = reference[(branch, alpha)]["status"] in ("converged", "limited")
        return value if found and np.isfinite(value) and value > 0 else None

    return classify_minimum(run["m"], run["theta"], existing("positional", "abs_m"), existing("semantic", "abs_theta"))


def branch_comparisons(run, theory: dict, branch: str, mask=None) -> list[Comparison]:
    """One Comparison per quantity of COMPARED[branch]: the trials' values (those of `mask`, default all) against the
    branch's value with its error (`theory`: reference_entry(...)[branch]), by validate.compare.compare. No verdict
    (z and agrees None) where that rule has none to give: one trial (std and sem NaN), a theory error that is not
    finite (no bound) or a trial value that is not finite (mean NaN)."""
    rows = []
    for key in COMPARED[branch]:
        samples = np.asarray(run[SIM_KEYS[key]], float)
        samples = samples if mask is None else samples[mask]
        value, error = float(theory[key]), float(theory[key + "_error"])
        if samples.size > 1 and math.isfinite(error) and np.all(np.isfinite(samples)):
            rows.append(compare(key, value, samples, theory_error=error, n_sigma=_band(samples.size)))
            continue
        finite = samples.size > 1 and bool(np.all(np.isfinite(samples)))
        spread = float(samples.std(ddof=1)) if finite else math.nan
        rows.append(Comparison(key, value, error, float(samples.mean()), spread,
                               spread / math.sqrt(samples.size) if finite else math.nan, int(samples.size), None,
                               None, _band(samples.size)))
    return rows


def _chosen_branch(init: str, labels: np.ndarray) -> tuple[str | None, np.ndarray | None, str]:
    """(branch, the trials compared (None: all), why): the init's branch, or for the random init the branch most
    trials landed on (none where none landed on a branch, or as many on each)."""
    landed = {b: int(np.sum(labels == b)) for b in ("positional", "semantic", "other")}
    if init in ("semantic", "positional"):
        away = [f"{landed[b]} on {'neither branch' if b == 'other' else 'the ' + b + ' branch'}"
                for b in ("positional", "semantic", "other") if b != init and landed[b]]
        return init, None, f"the {init} init's branch" + (
            f"; of the {labels.size} trials {', '.join(away)} instead, by |m| and |θ| against both branches"
            if away else "")
    counts = {b: landed[b] for b in ("positional", "semantic")}
    how = (f"by their overlaps |m|, |θ| against both branches (validate.finite_size.classify_minimum): "
           f"{counts['positional']} on the positional branch, {counts['semantic']} on the semantic one, "
           f"{landed['other']} on neither")
    if max(counts.values()) == 0 or counts["positional"] == counts["semantic"]:
        return None, None, f"the random init's trials landed {how}: no branch to compare with"
    branch = max(counts, key=counts.get)
    return branch, labels == branch, (f"the random init: the branch most trials landed on, {how}; compared over those "
                                      f"{counts[branch]}")


def _no_verdict(comparisons: list[Comparison], settled: bool) -> tuple[list[Comparison], dict]:
    """The comparisons without a verdict where the run cannot give one, and why (name -> (reason,)): a run that has not
    settled (its values are not yet the finite-d minimum's), or two trials (one degree of freedom: their spread bounds
    nothing, as copy heads gives no verdict from two training sets)."""
    out, why = [], {}
    for c in comparisons:
        if c.n < 2:
            why[c.name] = ("one trial: no spread",)
        elif not math.isfinite(c.mean):
            why[c.name] = ("a trial's value is not finite",)
        elif not math.isfinite(c.theory_error):
            why[c.name] = ("the theory's error is unbounded",)
        elif not settled:
            why[c.name] = ("the run has not settled",)
        elif c.n == 2:
            why[c.name] = ("two trials: one degree of freedom",)
        if c.name in why:
            c = dataclasses.replace(c, agrees=None)
        out.append(c)
    return out, why


def compare_with_theory(run: GDResult, *, tol: float = Accuracy().tol, theory: SolveResult | None = None) -> GDResult:
    """`run` (a `simulate` result) held against the theory: the same `solve` as `attnphase solve positional-semantic`
    at the run's ω, α, σ, λ, A, L (positional and semantic branches, relative tolerance `tol`), or `theory` (such a
    result at the same point, solved once for several runs). Returns the run with theory (the compared branch as solve
    gives it, or its MissingBranch where it does not exist at α), theory_choice (why that branch), landed (the branch
    each trial landed on), comparisons (COMPARED of that branch, `branch_comparisons`; no verdict where the run has not
    settled, or from fewer than three trials) and the message extended by the verdict, which states d: the theory is
    the d → ∞ limit, so a finite-d offset of the means is expected. A diverged run is not solved for (no theory, no
    comparisons; the message says why)."""
    if not isinstance(run, GDResult) or run.params is None or not math.isfinite(run.alpha):
        raise ParameterError("run", type(run).__name__,
                             "a result of `simulate` (it carries its model parameters and α)")
    tol = Accuracy.validated(tol=tol).tol
    if run.status == Status.DIVERGED:  # nothing finite to compare: no solve
        return dataclasses.replace(run, theory_tol=tol, theory_choice="none: the run diverged",
                                   message=f"{run.message}; no comparison with the theory: the run diverged")
    alpha, params = run.alpha, run.params
    if theory is None:
        from attnphase.models.positional_semantic.point import solve

        theory = solve(params.omega, alpha, params.sigma, params.lam, params.A, params.L, tol=tol)
    solved = {b.branch: b for b in theory.branches} | {m.branch: m for m in theory.missing}
    if not {"positional", "semantic"} <= set(solved) or any(
            not math.isclose(b.alpha, alpha, rel_tol=1e-12) for b in theory.branches):
        raise ParameterError("theory", theory.message, f"a solve result at α = {alpha:g} with the positional and "
                                                       "semantic branches (found or missing)")
    entry = reference_entry(theory)
    arrays = {name: getattr(run, name) for name in ("m", "theta", "q", "test_error", "train_loss")}
    labels = landed_labels(arrays, {(b, alpha): entry[b] for b in ("positional", "semantic")}, alpha)
    branch, mask, choice = _chosen_branch(run.init, labels)
    head = (f"against the theory (d → ∞; this run at d = {run.d}, so a finite-d offset of the means is expected), "
            f"`solve` at α = {alpha:g} to tol {tol:g}")
    comparisons, solution = [], solved.get(branch)
    if branch is None:
        text = f"{head}: {choice}"
    elif isinstance(solution, MissingBranch):
        exists = "does not exist" if solution.status == Status.NOT_FOUND else f"was not solved ({solution.status})"
        text = f"{head}: its {branch} branch ({choice}) {exists} there: {solution.message}; no comparison"
    else:
        comparisons, why = _no_verdict(branch_comparisons(arrays, entry[branch], branch, mask),
                                       run.status == Status.CONVERGED)
        state = "" if solution.status == Status.CONVERGED else f"; its status {solution.status}: {solution.message}"
        text = (f"{head}, its {branch} branch ({choice}{state}): "
                f"{verdict_message(comparisons, why, band_reason=BAND_REASON)}")
    return dataclasses.replace(run, theory=solution, theory_tol=tol, theory_choice=choice, landed=tuple(labels),
                               comparisons=tuple(comparisons), message=f"{run.message}; {text}")
