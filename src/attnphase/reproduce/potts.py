"""`attnphase reproduce potts`: the mean-field q-state Potts transition against the closed forms.

Writes into out_dir (through `report.Report`):
* thresholds.csv — for q = 2..8: the order, the printed β_c with its error estimate (absolute), its own rounding
  (absolute) and its deviation (absolute and relative) from the closed form
  2(q − 1) ln(q − 1)/(q − 2) (β_c J = 2 for q = 2; Wu, Rev. Mod. Phys. 54, 235 (1982)), the spinodals
  (the ordered branch's fold; the disordered state's instability at βJ = q) and the jump of m against
  (q − 2)/(q − 1), each with its error estimate (absolute);
* landscape.png / landscape.csv — f(m) − f(0) for q = 3 at the lower spinodal, at β_c and at the upper
  spinodal;
* report.md.
A few seconds on 2 cores (docs/models/potts.md); `quick` asks 15 digits instead of 30.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import matplotlib.pyplot as plt
import mpmath
import numpy as np

from attnphase.models.potts import symbolic
from attnphase.models.potts.results import Spinodal
from attnphase.models.potts.solve import threshold
from attnphase.report import Report

__all__ = ["closed_form_beta_c", "beta_c_comparison", "spinodal_columns", "run"]


def closed_form_beta_c(q: int, J: float = 1.0):
    """β_c of the mean-field Potts model (Wu 1982), in mpmath at the current precision."""
    if q == 2:
        return mpmath.mpf(2) / J
    return 2 * mpmath.mpf(q - 1) * mpmath.log(q - 1) / (q - 2) / J


def run(out_dir: Path, quick: bool, device: str = "auto", states: Sequence[int] = range(2, 9)) -> dict:
    """Write the report directory for q in `states` (3 among them); return the headline numbers (the
    device is not used)."""
    start = time.perf_counter()
    digits = 15 if quick else 30
    report = Report(Path(out_dir), "Mean-field q-state Potts model")
    report.paragraph(f"H = −(J/2N) Σ_ij δ(σ_i, σ_j), J = 1; order parameter m = (qx − 1)/(q − 1). Each β_c is "
                     f"asked to {digits} significant digits from the followed branches of f(m) (`attnphase "
                     f"threshold potts`) and compared with the closed form in mpmath.")
    rows = []
    for q in states:
        t = threshold(q, 1.0, digits)
        fold = [s for s in t.spinodals if s.kind == "fold"]
        instability = [s for s in t.spinodals if s.kind == "branch_point"]
        rows.append({"q": q, "order": t.order, BETA_C: t.beta_c_digits, **beta_c_comparison(t.beta_c_digits,
                                                                                             t.beta_c_error, q),
                     **spinodal_columns(FOLD, fold), **spinodal_columns(INSTABILITY, instability),
                     JUMP: t.jump, JUMP_ERROR: t.jump_error, "(q-2)/(q-1)": (q - 2) / (q - 1)})
    report.heading("Transition against the closed forms")
    report.paragraph(f"Each β_c is printed to the {digits} significant digits asked, so the printed value carries its own "
                     f"rounding (up to half a unit in its last digit, column \"{ROUNDING}\"); \"{ERROR}\" is "
                     "`threshold`'s `beta_c_error`, the estimate of the computed value's error. Both deviation columns "
                     "compare the printed value with the closed form (mpmath): absolute |printed − closed form| and "
                     f"relative (the absolute one over the closed form). \"{WITHIN}\": the absolute deviation is at most "
                     f"the rounding plus the error estimate. The spinodals (\"{FOLD}\": the ordered branch's fold; "
                     f"\"{INSTABILITY}\": the disordered state's, at βJ = q) are printed to the same digits as "
                     "`threshold` prints them (rounded in their last digit), each with `threshold`'s error estimate "
                     f"(absolute, as for β_c); \"{JUMP}\" is `threshold`'s jump with its `jump_error` (absolute), "
                     "against the closed form (q − 2)/(q − 1).")
    report.table(rows, "thresholds.csv")
    worst_row = max(rows, key=lambda r: r[RELATIVE])
    worst = worst_row[RELATIVE]
    within = all(r[WITHIN] == "yes" for r in rows)
    three = next(r for r in rows if r["q"] == 3)
    report.heading("Free-energy landscape, q = 3")
    figure, data = _landscape((float(three[FOLD]), "lower spinodal: ordered minimum appears"),
                              (float(three[BETA_C]), "β_c: equal minima"),
                              (3.0, "disordered instability, βJ = q"))
    report.figure(figure, "landscape", "f(m) − f(0), the mean-field free energy per spin in units of J, for q = 3 at "
                  "the lower spinodal, at β_c (two minima of equal f) and at the disordered instability βJ = q (the "
                  "legend says which curve is which). The y range holds every curve's minimum and the barrier between "
                  "them; the curves leave it upwards towards the ends of m.", data)
    seconds = time.perf_counter() - start
    report.paragraph(f"Largest relative deviation |printed β_c − closed form|/closed form: {worst:.2e} (q = "
                     f"{worst_row['q']}; absolute {worst_row[ABSOLUTE]:.2e} against the rounding of the {digits}-digit "
                     f"value, {worst_row[ROUNDING]:.1e}). Every absolute deviation lies within the printed value's "
                     f"rounding plus the error estimate: {'yes' if within else 'no'}. Total time {seconds:.1f} s.")
    report.write()
    return {"beta_c": {r["q"]: r[BETA_C] for r in rows}, "max_relative_deviation": worst,
            "deviations_within_rounding_plus_error": within, "seconds": seconds}


BETA_C = "beta_c (printed)"
ERROR = "error estimate (absolute, beta_c_error)"
ROUNDING = "rounding of the printed value (absolute, half a unit in its last digit)"
ABSOLUTE = "deviation from closed form (absolute)"
RELATIVE = "deviation from closed form (relative)"
WITHIN = "deviation within rounding + error"
FOLD = "fold spinodal"
INSTABILITY = "disordered instability"
JUMP = "jump of m"
JUMP_ERROR = "jump of m error (absolute)"


def spinodal_columns(name: str, found: list[Spinodal]) -> dict:
    """A spinodal's two columns: the value as `threshold` prints it (its digits string, rounded in its last digit:
    the report printed the first 18 characters, truncated) and its error estimate (absolute); both empty where
    there is none (q = 2 has no fold)."""
    return {name: found[0].digits if found else "", f"{name} error (absolute)": found[0].error if found else ""}


def beta_c_comparison(beta_c_digits: str, beta_c_error: float, q: int) -> dict:
    """The columns that compare a printed β_c with the closed form, each labelled absolute or relative: the error
    estimate, the printed value's own rounding (half a unit in its last printed digit), the absolute and the
    relative deviation of the printed value from the closed form, and whether the deviation lies within rounding +
    error."""
    printed = Decimal(beta_c_digits)
    rounding = 0.5 * 10.0 ** printed.as_tuple().exponent
    with mpmath.workdps(len(printed.as_tuple().digits) + 20):
        exact = closed_form_beta_c(q)
        deviation = abs(mpmath.mpf(beta_c_digits) - exact)
        relative = float(deviation / exact)
        deviation = float(deviation)
    within = deviation <= rounding + (beta_c_error if math.isfinite(beta_c_error) else math.inf)
    return {ERROR: beta_c_error, ROUNDING: rounding, ABSOLUTE: deviation, RELATIVE: relative,
            WITHIN: "yes" if within else "no"}


def _landscape(*curves: tuple[float, str]):
    """f(m) − f(0) for q = 3 at each (βJ, what it is) of `curves`, labelled with both, and the rows behind it. The y
    range is set from the curves: it holds every curve's lowest value and the stationary points between (the
    barrier at β_c, the spinodal's flat inflection), with a tenth of their span as margin, and reaches up at least as
    far as the deepest minimum goes down."""
    _, kernel = symbolic.kernels()
    u = np.linspace(-4.0, 8.0, 400)
    fig, ax = plt.subplots(figsize=(6, 4))
    data = []
    lowest, highest = 0.0, 0.0
    for beta, what in curves:
        m, f, _ = np.moveaxis(kernel.call(u=u, beta=beta, J=1.0, q=3), -1, 0)
        f0 = float(kernel.call(u=0.0, beta=beta, J=1.0, q=3)[1])
        shifted = f - f0
        ax.plot(m, shifted, label=f"βJ = {beta:.6g} ({what})")
        data += [{"beta": beta, "m": float(a), "f_minus_f0": float(b - f0)} for a, b in zip(m, f)]
        order = np.argsort(m)
        values, slope = shifted[order], np.diff(shifted[order]) / np.diff(m[order])
        turning = np.flatnonzero(slope[:-1] * slope[1:] <= 0) + 1  # local extrema inside the range of m
        flattest = int(np.argmin(np.abs(slope))) + 1  # where a curve is flattest: the spinodal's inflection
        lowest = min(lowest, float(values.min()))
        highest = max([highest, float(values[flattest]), *values[turning].tolist()])
    margin = 0.1 * (highest - lowest)
    ax.set_ylim(lowest - margin, max(highest, -lowest) + margin)
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("m")
    ax.set_ylabel("f(m) − f(0)  (per spin, in units of J)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14))  # below the axes: no curve under it
    return fig, data
