"""Finite-d GD runs held against the d → ∞ theory: the theory's values per branch from a `solve` result, the branch
each run landed on, and per quantity the trials' mean and standard error against the branch's value with its verified
error (validate.compare).

Moved here from the reproduce report's GD validation (reproduce.positional_semantic_gd, which uses it unchanged), so
that `simulate` can hold its runs against the theory the same way. The quantities: the overlap that is non-zero on a
branch (|m| or |θ|), q, ε_g and ε_t (COMPARED). Agreement: |mean − theory| ≤ 3 √(sem² + theory error²)
(validate.compare.compare; sem = the trials' spread / √trials).
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.validate.compare import Comparison, compare
from attnphase.validate.finite_size import classify_minimum

__all__ = ["COMPARED", "SIM_KEYS", "REFERENCE_KEYS", "reference_entry", "landed_labels", "branch_comparisons"]

# Quantities compared per branch: the overlap that is non-zero on it, q and the two errors.
COMPARED = {"positional": ("abs_m", "q", "test_error", "train_loss"),
            "semantic": ("abs_theta", "q", "test_error", "train_loss")}
# The simulation's field of each compared quantity (its m and θ are the absolute overlaps |m|, |θ|).
SIM_KEYS = {"abs_m": "m", "abs_theta": "theta", "q": "q", "test_error": "test_error", "train_loss": "train_loss"}
REFERENCE_KEYS = ("abs_m", "abs_theta", "q", "test_error", "free_energy", "train_loss")
BAND = 3.0  # validate.compare's normal band


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
            rows.append(compare(key, value, samples, theory_error=error, n_sigma=BAND))
            continue
        finite = samples.size > 1 and bool(np.all(np.isfinite(samples)))
        spread = float(samples.std(ddof=1)) if finite else math.nan
        rows.append(Comparison(key, value, error, float(samples.mean()), spread,
                               spread / math.sqrt(samples.size) if finite else math.nan, int(samples.size), None,
                               None, BAND))
    return rows
