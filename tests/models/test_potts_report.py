"""The Potts report (`attnphase reproduce potts`): every deviation and error column says whether it is absolute or
relative, and the printed β_c's own rounding is reported beside them."""

from __future__ import annotations

import pytest

from attnphase.reproduce import potts as report


def test_each_comparison_column_is_labelled_absolute_or_relative_with_the_printed_rounding():
    columns = report.beta_c_comparison("2.77258872223978", 2.58e-23, 3)
    assert set(columns) == {report.ERROR, report.ROUNDING, report.ABSOLUTE, report.RELATIVE, report.WITHIN}
    for key in (report.ERROR, report.ROUNDING, report.ABSOLUTE):
        assert "absolute" in key
    assert "relative" in report.RELATIVE
    assert columns[report.ROUNDING] == pytest.approx(5e-15)  # half a unit in the 15th digit of 2.77…
    assert columns[report.ABSOLUTE] == pytest.approx(1.2377e-15, rel=1e-3)
    assert columns[report.RELATIVE] == pytest.approx(columns[report.ABSOLUTE] / 2.772588722239781, rel=1e-12)
    assert columns[report.WITHIN] == "yes"
    assert report.beta_c_comparison("2.77258872223", 1e-20, 3)[report.WITHIN] == "no"  # 11 digits, rounding 5e-12
    assert report.beta_c_comparison("2.7725887222", 1e-20, 3)[report.WITHIN] == "yes"


def test_the_report_says_which_deviation_is_relative(tmp_path):
    numbers = report.run(tmp_path, quick=True, states=(3, 4))
    text = (tmp_path / "report.md").read_text()
    assert report.ABSOLUTE in text and report.RELATIVE in text and report.ROUNDING in text
    assert "Largest relative deviation |printed β_c − closed form|/closed form" in text
    assert numbers["deviations_within_rounding_plus_error"] is True
    header = (tmp_path / "thresholds.csv").read_text().splitlines()[0]
    assert "deviation from closed form (absolute)" in header and "error estimate (absolute" in header


def test_the_spinodals_and_the_jump_carry_their_errors_and_the_spinodals_are_rounded(tmp_path):
    """Audit r12 F1: thresholds.csv and report.md give each spinodal and the jump of m with `threshold`'s error
    (absolute), and a spinodal as `threshold` prints it, rounded in its last digit (the report printed its first 18
    characters: 2.7456435767327243 for the q = 3 fold, which rounds to …244). Reference: the fold at the minimum over
    m > 0 of βJ(m) = ln((1 + (q − 1)m)/(1 − m))/m, from mpmath at 50 digits."""
    import csv

    import mpmath

    report.run(tmp_path, quick=False, states=(2, 3))
    with (tmp_path / "thresholds.csv").open() as handle:
        rows = {row["q"]: row for row in csv.DictReader(handle)}
    columns = list(rows["3"])
    for name in (report.FOLD, report.INSTABILITY, report.JUMP):
        assert columns[columns.index(name) + 1] == f"{name} error (absolute)"
    with mpmath.workdps(50):
        def beta_j(m):
            return mpmath.log((1 + 2 * m) / (1 - m)) / m

        fold = beta_j(mpmath.findroot(lambda m: mpmath.diff(beta_j, m), 0.3))
        assert rows["3"][report.FOLD] == mpmath.nstr(fold, 30, strip_zeros=False) == "2.74564357673272439688346564577"
        error = float(rows["3"][f"{report.FOLD} error (absolute)"])
        assert 0 < error < 1e-15 and abs(mpmath.mpf(rows["3"][report.FOLD]) - fold) <= error
    assert rows["3"][report.INSTABILITY] == "3." + "0" * 29
    assert float(rows["3"][f"{report.INSTABILITY} error (absolute)"]) < 1e-40
    jump_error = float(rows["3"][report.JUMP_ERROR])
    assert 0 < jump_error < 1e-15 and abs(float(rows["3"][report.JUMP]) - 0.5) <= jump_error
    # q = 2: no fold (no value, no error); a continuous transition's jump is 0 exactly, error 0
    assert rows["2"][report.FOLD] == rows["2"][f"{report.FOLD} error (absolute)"] == ""
    assert float(rows["2"][report.JUMP]) == float(rows["2"][report.JUMP_ERROR]) == 0.0
    text = (tmp_path / "report.md").read_text()
    assert f"| {report.FOLD} | {report.FOLD} error (absolute) |" in text and "`jump_error` (absolute)" in text


def test_a_spinodal_that_does_not_exist_has_empty_cells_not_a_zero_error():
    """q = 2 has no fold: its fold cells are empty, not an error of 0 that would claim an exact value (audit t18
    M74); a found spinodal gives its digits and its error."""
    from attnphase.models.potts.results import Spinodal
    from attnphase.reproduce.potts import spinodal_columns

    assert spinodal_columns("fold", []) == {"fold": "", "fold error (absolute)": ""}
    found = Spinodal("fold", 2.7, "2.70", 1e-16, "converged")
    assert spinodal_columns("fold", [found]) == {"fold": "2.70", "fold error (absolute)": 1e-16}
