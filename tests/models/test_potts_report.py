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
