"""The numbers of docs/models/copy_heads.md that no other test holds, read from the page and checked against what the
page's command (or the API call behind it) prints, to the page's printed digits. (The row mean field's table and
its law table are held by the slow test in test_copy_heads_meanfield.py, which computes them.)"""

from __future__ import annotations

import math
import re

import pytest

from attnphase.api import copy_heads as api
from model_pages import PAGES, page_table_after

PAGE = "copy_heads.md"
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def _page_text() -> str:
    return " ".join((PAGES / PAGE).read_text().split())


def _half_unit(printed: str) -> float:
    """Half a unit in the last printed digit of a decimal or e-notation number."""
    mantissa, _, exponent = printed.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def _within_digits(value: float, printed: str) -> bool:
    return abs(value - float(printed)) <= _half_unit(printed) * (1 + 1e-9)


def _size(printed: str) -> int:
    """L as the page writes it: 4096 or 2²⁰."""
    if printed.startswith("2") and len(printed) > 1 and printed[1] in "⁰¹²³⁴⁵⁶⁷⁸⁹":
        return 2 ** int(printed[1:].translate(SUPERSCRIPT))
    return int(printed)


def test_the_pages_linear_P_star_digit_strings_are_what_threshold_prints():
    """Linear attention, Convention A, L = 2²⁰: the page's 30-digit P* at V = 4 and V = 16 are `threshold`'s
    P_star_digits (classify=False: the Landau classification and the followed branches do not enter P*; about
    1 s)."""
    quoted = re.search(r"soft mode the uniform pooling for V < L\. P\* = ([\d.]+) \(L = 2²⁰, V = 4\), ([\d.]+) "
                       r"\(2²⁰, V = 16\);", _page_text())
    assert quoted is not None
    for V, printed in ((4, quoted[1]), (16, quoted[2])):
        result = api.threshold("linear", 2**20, V, digits=30, classify=False)
        assert result.P_star_digits == printed, (V, result.P_star_digits)


def test_the_pages_P_star_over_L_ln2_L_at_the_tables_sizes():
    """P*/(L ln²L) = 2.11 (L = 16), 0.629 (2²⁰) from the page's own 30-digit P* table (held by
    test_copy_heads.py), to the printed digits; the large-L limit 1/(4εσ²) = 1/3 at V = 4. (2²⁵⁶: slow test.)"""
    page = _page_text()
    quoted = re.search(r"P\*/\(L ln²L\) = ([\d.]+) \(L = 16\), ([\d.]+) \(2²⁰\), ([\d.]+) \(2²⁵⁶\) → 1/\(4εσ²\) = 1/3",
                       page)
    assert quoted is not None
    table = {_size(L): float(P) for L, P in page_table_after(PAGE, "P* (coexistence, target tokens), V = 4")}
    for L, printed in ((16, quoted[1]), (2**20, quoted[2])):
        assert _within_digits(table[L] / (L * math.log(L) ** 2), printed), (L, printed)
    assert 1 / (4 * (1 - 1 / 4)) == pytest.approx(1 / 3)


@pytest.mark.slow
def test_the_pages_linear_crossover_table_is_what_threshold_prints():
    """The crossover table (linear, V = 4, Convention A): each row's P_crossover, and for L ≥ 1024 the jump's P, its
    window and the jump of √(t² + c²), are `threshold`'s to the printed digits; L = 256 and 512 are smooth (about
    12 s)."""
    rows = page_table_after(PAGE, "**The crossover is a first-order jump for L ≥ 1024")
    assert [row[0] for row in rows] == ["256, 512", "1024", "4096", "16384", "65536"]
    (smooth, *jumps) = rows
    for L, printed in zip((256, 512), smooth[1].split(", ")):
        result = api.threshold("linear", L, 4)
        assert result.crossover_order == "smooth" and smooth[2:] == ["smooth", "—", "—"]
        assert _within_digits(result.P_crossover, printed), (L, result.P_crossover)
    for L, crossover, jump_at, window, jump in jumps:
        result = api.threshold("linear", int(L), 4)
        assert result.status == "converged" and result.crossover_order == "first", result.message
        low, high = window.split(" – ")
        for value, printed in ((result.P_crossover, crossover), (result.P_crossover_jump, jump_at),
                               (result.crossover_window[0], low), (result.crossover_window[1], high),
                               (result.crossover_jump, jump)):
            assert _within_digits(value, printed), (L, value, printed)


@pytest.mark.slow
def test_the_pages_small_tau_causal_and_largest_L_thresholds_are_what_threshold_prints():
    """Single values of the prose, each `threshold`'s to the printed digits: softmax P* = 5.3e6 at τ = 1e-10 and
    linear P* = 3.97e8 at τ = 1e-16 (L = 16, V = 4); the causal linear P* = 344.31 at L = 2²⁰, V = 16; and
    P*/(L ln²L) = 0.362 at L = 2²⁵⁶ (about 10 s)."""
    page = _page_text()
    softmax_tau = re.search(r"τ = 1e-10 at L = 16, V = 4: P\* = ([\d.e]+)\)", page)
    linear_tau = re.search(r"at τ = 1e-16, L = 16, V = 4: P\* = ([\d.e]+)\)", page)
    causal_16 = re.search(r"approaching its limit as 1/L; V = 16: ([\d.]+) \(2²⁰\)\.", page)
    ratio = re.search(r"P\*/\(L ln²L\) = [\d.]+ \(L = 16\), [\d.]+ \(2²⁰\), ([\d.]+) \(2²⁵⁶\)", page)
    assert None not in (softmax_tau, linear_tau, causal_16, ratio)
    tau10 = api.threshold("softmax", 16, 4, convention=api.DEFAULT.with_(tau0=1e-10))
    tau16 = api.threshold("linear", 16, 4, convention=api.DEFAULT.with_(tau0=1e-16))
    assert tau10.order == "first" and tau16.status == "converged"
    assert _within_digits(tau10.P_star, softmax_tau[1]) and _within_digits(tau16.P_star, linear_tau[1])
    causal = api.threshold("linear", 2**20, 16, digits=30, convention=api.Convention(boundary="causal"),
                           classify=False)
    assert _within_digits(causal.P_star, causal_16[1]), causal.P_star
    L = 2**256
    largest = api.threshold("softmax", L, 4, digits=15)
    assert largest.order == "first" and _within_digits(largest.P_star / (L * math.log(L) ** 2), ratio[1])


@pytest.mark.slow
def test_the_pages_causal_softmax_sampling_at_P_140_is_what_its_command_prints():
    """The causal softmax MALA run the page quotes (L = 8, V = 4, P = 140, `--fluctuations`, seed 3), run as the page
    writes its command: c and its error, the theory's c and z to the printed digits, rejected; the table row's
    0.463 ± 0.004 is the same run's c, 0.03 below the mean-participation value the row gives (0.494, held by
    test_copy_heads_causal.py) (65 s wall, 27 s of CPU, on 2 shared cores)."""
    import json
    import shlex

    from click.testing import CliRunner

    from attnphase.cli import main

    page = _page_text()
    quoted = re.search(r"at P = 140 either: c = ([\d.]+) ± ([\d.]+) against its ([\d.]+) \(z = (−[\d.]+); "
                       r"`attnphase (simulate copy-heads [^`]+)`\)", page)
    row = re.search(r"\| softmax MALA, causal, L = 8, P = 140, c \| ([\d.]+) ± ([\d.]+), ([\d.]+) below the causal "
                    r"mean field with mean-participation rows \(([\d.]+)\) \|", (PAGES / PAGE).read_text())
    assert quoted is not None and row is not None
    out = CliRunner().invoke(main, shlex.split(quoted[5]) + ["--json"])
    assert out.exit_code == 0, out.output
    (c,) = [x for x in json.loads(out.stdout)["comparisons"] if x["name"] == "c_copy"]
    assert c["agrees"] is False
    for value, printed in ((c["mean"], quoted[1]), (c["sem"], quoted[2]), (c["theory"], quoted[3]),
                           (c["z"], quoted[4].replace("−", "-")), (c["mean"], row[1]), (c["sem"], row[2])):
        assert _within_digits(value, printed), (value, printed)
    assert _within_digits(float(row[4]) - float(row[1]), row[3])


@pytest.mark.slow
def test_the_pages_linear_solve_error_next_to_P_star_is_what_solve_prints():
    """Linear, L = 4096, V = 4, P = P* + 1e-14: the one stable minimum's t and the error `solve` gives for it are the
    page's 1.22e-8 ± 1e-23 to the printed digits (about 5 s)."""
    quoted = re.search(r"\(L = 4096, P − P\* = 1e-14: t = ([\d.e-]+) ± ([\d.e-]+)\);", _page_text())
    assert quoted is not None
    P_star = api.threshold("linear", 4096, 4, digits=30, classify=False).P_star
    result = api.solve("linear", 4096, 4, P_star + 1e-14)
    (stable,) = [m for m in result.minima if m.stable]
    assert result.status == "converged" and result.error == stable.error
    assert _within_digits(stable.c_uniform, quoted[1]) and _within_digits(stable.error, quoted[2])


def test_solve_sees_the_linear_crossover_jump_at_L_4096_as_the_page_says():
    """L = 4096, V = 4: two stable minima at P = 634000 … 642000, a third from about 643000, and the global minimum's
    t falls from 0.236 to 0.043 between 634000 and 636000 (the jump `threshold` puts at 634975): the page's sentence,
    each number read from it and checked to its printed digits (five solves, about 1 s)."""
    quoted = re.search(r"L = 4096: two stable minima at P = (\d+)…(\d+), a third from about (\d+), t = ([\d.]+) → "
                       r"([\d.]+) between (\d+) and (\d+);", _page_text())
    assert quoted is not None
    two_from, two_to, third_from, t_before, t_after, jump_from, jump_to = quoted.groups()

    def stable_minima_and_t(P: str) -> tuple[int, float]:
        result = api.solve("linear", 4096, 4, float(P))
        assert result.status == "converged", result.message
        return sum(m.stable for m in result.minima), result.minima[result.global_index].c_uniform

    assert stable_minima_and_t(two_from)[0] == stable_minima_and_t(two_to)[0] == 2
    assert stable_minima_and_t(str(int(third_from) + 1000))[0] == 3  # "about": within the next thousand
    assert _within_digits(stable_minima_and_t(jump_from)[1], t_before)
    assert _within_digits(stable_minima_and_t(jump_to)[1], t_after)
