"""The copy-heads report's thresholds and claimed laws (`reproduce.copy_heads`): the sizes scanned, the table of P*
and crossovers (softmax P* from the large-L shortcut row rate, the exact row rate beside it at the small L), the
verdict on each claimed exponent, and the headline numbers.
"""

from __future__ import annotations

import math

from attnphase.api import copy_heads as api
from attnphase.models.copy_heads.scaling_laws import SKIPPED_ORDER
from attnphase.report import value_with_error


def scan_sizes(quick: bool):
    """(L values of the scans in L at V = 4, V values of the scan in V at L = 4096, L values, V values and the fixed L
    of the convention table). Quick: the convention table uses the scans' own sizes, so that its default row is the
    same fit as "Claimed laws"; full: the scans reach L = 2^20 and V = 256, the convention table keeps the docs' sizes
    (L = 16…4096 at V = 4, V = 4…128 at L = 4096), a different fit, labelled by its range."""
    if quick:
        Ls, Vs = [2**k for k in range(4, 13, 2)], [4, 8, 16, 32, 64]
        return Ls, Vs, tuple(Ls), tuple(Vs), 4096
    return ([2**k for k in range(4, 21)], [4, 8, 16, 32, 64, 128, 256], (16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
            (4, 8, 16, 32, 64, 128), 4096)


def exact_row_rate_sizes(quick: bool) -> tuple:
    """The L (at V = 4) at which the report gives the softmax P* with the exact row rate beside the shortcut's: a few
    seconds each on 2 cores up to L = 256, 17 s at 1024 (full run only), 105 s and 4.7 GB at 4096 (not computed; the
    shortcut's excess falls with L: 20% at L = 16, 1.35% at 256, 0.33% at 1024)."""
    return (16, 64, 256) if quick else (16, 64, 256, 1024)


def exact_row_rate_thresholds(L_values, V: int = 4) -> list:
    """`softmax_exact_prior_threshold` at each L (default convention)."""
    return [api.softmax_exact_prior_threshold(L, V) for L in L_values]


SCAN_L, SCAN_V = "L at V = 4", "V at L = 4096"


def scaling_rows(soft, lin, linV) -> list[dict]:
    """scaling.csv: one row per threshold of each scan (softmax and linear in L at V = 4, linear in V at L = 4096),
    P* as float and as its polished digit string; scan: which scan the row belongs to (SCAN_L, SCAN_V), so that the
    linear L = 4096, V = 4 threshold, the end of the scan in L and the start of the scan in V, is one row of each and a
    reader can plot each scan from its own rows; row_rate: the softmax row rate of P* (the large-L shortcut, which
    `scaling` uses and the large-L law is about), None for linear attention."""
    return ([{"attention": "softmax", "scan": SCAN_L, "L": p.L, "V": 4, "P_star": p.P_star,
              "P_star_digits": p.P_star_digits, "row_rate": "shortcut", "P_crossover": None, "order": p.order}
             for p in soft.points]
            + [{"attention": "linear", "scan": SCAN_L, "L": p.L, "V": 4, "P_star": p.P_star,
                "P_star_digits": p.P_star_digits, "row_rate": None, "P_crossover": p.P_crossover, "order": p.order}
               for p in lin.points]
            + [{"attention": "linear", "scan": SCAN_V, "L": p.L, "V": p.V, "P_star": p.P_star,
                "P_star_digits": p.P_star_digits, "row_rate": None, "P_crossover": p.P_crossover, "order": p.order}
               for p in linV.points])


EXACT_COLUMN = "softmax P*, exact row rate (± Sobol error)"
EXCESS_COLUMN = "shortcut P* over exact"


def _exact_cells(r, exact: dict) -> tuple[str, str]:
    """(exact-row-rate P* ± its error, the shortcut's excess over it) for one threshold-table row."""
    if r["attention"] != "softmax":
        return "", ""
    ex = exact.get((r["L"], r["V"]))
    if ex is None:
        return "not computed", ""
    if not (math.isfinite(ex.P_star_exact) and math.isfinite(ex.error)):
        return f"{ex.order} ({ex.status})", ""
    excess = r["P_star"] / ex.P_star_exact - 1
    return value_with_error(ex.P_star_exact, ex.error, min_decimals=0), f"{100 * excess:+.3g}%"


def threshold_table(scal_rows, exact=()) -> list[dict]:
    """The report's threshold table: one row per (attention, L, V) (the scan in V starts at the L scan's last
    point), the row rate of P* (softmax: the shortcut), P* as its polished digits, P_crossover as the float64 it is;
    softmax rows also give P* with the exact row rate (`ExactRowRateThreshold`s in `exact`, at their L and V) with
    its Sobol error, and how far the shortcut's P* lies above it ("not computed" at the other sizes)."""
    exact = {(ex_L, ex_V): ex for ex_L, ex_V, ex in exact}
    shown = {}
    for r in scal_rows:
        shown.setdefault((r["attention"], r["L"], r["V"]), r)
    rows = []
    for r in shown.values():
        exact_cell, excess = _exact_cells(r, exact)
        rows.append({"attention": r["attention"], "L": r["L"], "V": r["V"],
                     "order": "—" if r["order"] == SKIPPED_ORDER else r["order"],
                     "row rate": r.get("row_rate") or "",
                     "P* (polished digits)": r["P_star_digits"] or "(not polished)",
                     EXACT_COLUMN: exact_cell, EXCESS_COLUMN: excess,
                     "P_crossover (float64)": "" if r["P_crossover"] is None else r["P_crossover"]})
    return rows


def thresholds_paragraph(quick: bool, exact, score_variance: float) -> str:
    """The text above the threshold table: what each column is, which row rate each softmax P* has, which sizes
    carry an order."""
    computed = [(L, ex) for L, V, ex in exact if math.isfinite(ex.P_star_exact)]
    sizes = ", ".join(str(L) for L, _ in computed)
    return (
        f"P*: the mpmath-polished root, rounded to the digits its error supports "
        f"({'15' if quick else '30 in the scans in L, 15 in the scan in V'} asked); P_crossover: the float64 value, "
        "shown to 6 significant digits (not polished). Row rate: every softmax P* of the scans (and of \"Claimed "
        "laws\") is the root of the homogeneous action with the large-L shortcut row rate (the row's softmax "
        "denominator at its mean: a Gaussian rate (x + ln(L − 1) + σ²/2)²/(2σ²) for the copy logit x, k = e^{σ²}, with "
        f"σ² the prior variance of one attention score, `--score-variance`, {score_variance:g} here), "
        "which the large-L law P* ~ L ln²L is about; its digits are those of that root, not of the model's P*. The "
        f"shortcut needs L ≫ e^{{σ²}} (= {math.exp(score_variance):.3g} here) and differs from the model's P* at "
        "finite L: "
        f"column \"{EXACT_COLUMN}\" is P* with the exact row integral (Sobol over the other L − 1 scores, float64) "
        f"at L = {sizes}, column \"{EXCESS_COLUMN}\" the shortcut's excess over it; the other softmax sizes are not "
        "computed here (`attnphase threshold copy-heads --attention softmax --row-rate exact` computes any one). "
        "Order: each softmax P* is a jump of the global minimum between two coexisting minima (first order at "
        "every size); a linear threshold's order is classified at both ends of each scan in L or V, the linear sizes "
        "between are located only (—): `attnphase threshold copy-heads` classifies any one of them.")


def headline_numbers(holds: bool, ex, f, lin, linV) -> dict:
    """The scaling part of the headline (the CLI summary shows the first three): each key says what its number is.
    The L ln²L verdict comes from the corrected ratio, not from the plain fit of P*/ln²L (claim 1), whose exponent
    is biased low by the log corrections: so the summary shows the verdict, the ratio it rests on and the linear
    crossover's exponent, not that fit's exponent (0.87 beside "yes" read as a contradiction). Each exponent comes
    with its "_error": the larger half of the band its verdict uses (`claim_verdict`: the 95% band widened by the
    drift of the local slope), so that the summary shows it beside the exponent."""
    exponents = {"linear_crossover_L_exponent_claim_1.5": lin.fit["P_crossover"],
                 "softmax_P_star_over_ln2L_fit_exponent_claim_1": f,
                 "linear_transition_V_exponent_claim_2": linV.fit["P_star"],
                 "linear_crossover_V_exponent_claim_0.5": linV.fit["P_crossover"]}
    numbers = {"softmax_L_ln2L_holds_by_corrected_ratio": holds, "softmax_corrected_ratio_last": ex.corrected_ratio[-1]}
    for key, fit in exponents.items():
        numbers[key] = fit.exponent
        numbers[f"{key}_error"] = max(fit.exponent_high - fit.exponent, fit.exponent - fit.exponent_low)
    return numbers


def claim_verdict(fit) -> str:
    """The verdict of a fitted claimed law (`law_fit`: 95% band of the fit over the upper half of the sizes, widened
    by the drift of the local slope and its geometric tail, `systematic`): the fit's own `verdict`, yes / no /
    undecided by numeric.scaling.exponent_verdict ("yes" needs the band to exclude the exponents
    numeric.scaling.EXPONENT_RESOLUTION away), "" when no exponent is claimed. The report's tables and
    `attnphase scaling copy-heads` print the same word."""
    return fit.verdict


def fit_range(fit, sizes) -> str:
    """The sizes a `law_fit` used (its last fit.n finite sizes), e.g. "L = 64…4096 (4 points)"."""
    used = sorted(sizes)[-int(fit.n):]
    return f"{fit.variable} = {used[0]}…{used[-1]} ({len(used)} points)"
