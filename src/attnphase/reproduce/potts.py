"""`attnphase reproduce potts`: the mean-field q-state Potts transition against the closed forms.

Writes into out_dir (through `report.Report`):
* thresholds.csv — for q = 2..8: the order, β_c with its error estimate against the closed form
  2(q − 1) ln(q − 1)/(q − 2) (β_c J = 2 for q = 2; Wu, Rev. Mod. Phys. 54, 235 (1982)), the spinodals
  (the ordered branch's fold; the disordered state's instability at βJ = q) and the jump of m against
  (q − 2)/(q − 1);
* landscape.png / landscape.csv — f(m) − f(0) for q = 3 at the lower spinodal, at β_c and at the upper
  spinodal;
* report.md.
About 10-25 s on a shared 2-core machine; `quick` asks 15 digits instead of 30.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import mpmath
import numpy as np

from attnphase.models.potts import symbolic
from attnphase.models.potts.solve import threshold
from attnphase.report import Report

__all__ = ["closed_form_beta_c", "run"]


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
    rows, worst = [], 0.0
    for q in states:
        t = threshold(q, 1.0, digits)
        with mpmath.workdps(digits + 20):
            deviation = float(abs(mpmath.mpf(t.beta_c_digits) - closed_form_beta_c(q)))
        worst = max(worst, deviation / float(closed_form_beta_c(q)))
        fold = [s for s in t.spinodals if s["kind"] == "fold"]
        instability = [s for s in t.spinodals if s["kind"] == "branch_point"]
        rows.append({"q": q, "order": t.order, "beta_c": t.beta_c_digits, "error": t.beta_c_error,
                     "deviation from closed form": deviation, "fold spinodal": fold[0]["digits"][:18] if fold else "",
                     "disordered instability": instability[0]["digits"][:18] if instability else "",
                     "jump of m": t.jump, "(q-2)/(q-1)": (q - 2) / (q - 1)})
    report.heading("Transition against the closed forms")
    report.table(rows, "thresholds.csv")
    three = next(r for r in rows if r["q"] == 3)
    report.heading("Free-energy landscape, q = 3")
    figure, data = _landscape(float(three["fold spinodal"]), float(three["beta_c"]), 3.0)
    report.figure(figure, "landscape", "f(m) − f(0) for q = 3 at the lower spinodal, at β_c (two minima of equal "
                  "f) and at the disordered instability βJ = q.", data)
    seconds = time.perf_counter() - start
    report.paragraph(f"Largest relative deviation of β_c from the closed form: {worst:.2e}. Total time {seconds:.1f} s.")
    report.write()
    return {"beta_c": {r["q"]: r["beta_c"] for r in rows}, "max_relative_deviation": worst, "seconds": seconds}


def _landscape(*betas):
    _, kernel = symbolic.kernels()
    u = np.linspace(-4.0, 8.0, 400)
    fig, ax = plt.subplots(figsize=(6, 4))
    data = []
    for beta in betas:
        m, f, _ = np.moveaxis(kernel.call(u=u, beta=beta, J=1.0, q=3), -1, 0)
        f0 = float(kernel.call(u=0.0, beta=beta, J=1.0, q=3)[1])
        ax.plot(m, f - f0, label=f"βJ = {beta:.6g}")
        data += [{"beta": beta, "m": float(a), "f_minus_f0": float(b - f0)} for a, b in zip(m, f)]
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("m")
    ax.set_ylabel("f(m) − f(0)")
    ax.set_ylim(-0.01, 0.02)
    ax.legend()
    return fig, data
