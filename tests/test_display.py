"""Human output (`attnphase.cli.display`): tables with units, record lists as tables, long lists cut."""

from __future__ import annotations

import io
from collections import Counter

from attnphase.cli.display import MAX_ROWS, format_value, render


def rendered(payload, units=None) -> str:
    out = io.StringIO()
    render(payload, units, file=out)
    return out.getvalue()


def test_scalars_get_a_unit_column_when_a_unit_is_given():
    text = rendered({"command": "solve", "model": "m", "version": "v", "parameters": {"omega": 0.3},
                     "alpha_c": 1.2516512, "status": "converged", "branches": {"positional": {"q": 0.5, "m": None}}},
                    units={"alpha_c": "samples per dimension (n/d)", "q": "overlap, per dimension"})
    lines = [line.split() for line in text.splitlines()]
    assert ["alpha_c", "1.25165", "samples", "per", "dimension", "(n/d)"] in lines
    assert ["branches.positional"] in lines  # the nested mapping's own table, titled with its path
    assert ["q", "0.5", "overlap,", "per", "dimension"] in lines  # a bare name applies wherever it appears
    assert ["m", "n/a"] in lines  # None: not computed
    assert all(not line.endswith(" ") for line in text.splitlines())


def test_a_list_of_records_is_a_table_cut_at_max_rows_with_a_count():
    rows = [{"P": float(p), "c": p / 1000, "trace": list(range(50))} for p in range(3 * MAX_ROWS)]
    text = rendered({"command": "simulate", "model": "m", "version": "v", "parameters": {}, "chains": rows})
    assert f"chains ({3 * MAX_ROWS} rows)" in text
    assert f"first {MAX_ROWS} of {3 * MAX_ROWS} rows" in text
    assert "50 values" in text  # a nested list in a cell shows its size, not its contents
    body_lines = [line for line in text.splitlines() if line.endswith("(50 values)")]
    assert len(body_lines) == MAX_ROWS


def test_a_narrow_table_keeps_its_title_on_one_line():
    text = rendered({"command": "solve", "model": "potts", "version": "v", "parameters": {"q": 3, "J": 1.0}})
    assert "parameters" in text.splitlines()


def test_a_wide_table_of_few_records_is_transposed_and_no_cell_is_broken():
    records = [{"branch": name, **{f"quantity_number_{k}": 0.123456789 * (k + 1) for k in range(12)}}
               for name in ("positional", "semantic")]
    text = rendered({"command": "solve", "model": "m", "version": "v", "parameters": {}, "branches": records})
    lines = text.splitlines()
    assert max(map(len, lines)) <= 120
    assert any(line.split() == ["branch", "positional", "semantic"] for line in lines)  # one column per record
    assert any(line.split() == ["quantity_number_11", "1.48148", "1.48148"] for line in lines)


def test_a_wide_table_of_many_records_is_split_by_columns_repeating_the_first():
    records = [{"P": float(p), **{f"quantity_number_{k}": p + k / 7 for k in range(12)}} for p in range(10)]
    text = rendered({"command": "scan", "model": "m", "version": "v", "parameters": {}, "points": records})
    lines = text.splitlines()
    assert max(map(len, lines)) <= 120
    titles = [line for line in lines if line.startswith("points (10 rows), column")]
    assert len(titles) >= 2
    assert sum(line.split()[:1] == ["P"] for line in lines) == len(titles)  # the first column in each part
    for k in range(12):  # every column is shown whole, its header on one line
        assert sum(f"quantity_number_{k}" in line.split() for line in lines) == 1


def test_long_number_lists_are_cut_and_short_ones_inline():
    assert format_value([1.0, 2.5, None]) == "1, 2.5, n/a"
    # a digit string not computed (a spinodal beyond the range followed) reads "n/a" in a list, not an empty cell
    assert format_value(["5529.877", ""]) == "5529.877, n/a" and format_value("") == ""
    assert format_value(list(range(100))) == "0, 1, 2, 3, ... (100 values)"
    assert format_value(0.123456789) == "0.123457" and format_value(True) == "yes" and format_value([]) == "(none)"


def test_units_declared_on_result_fields_are_found_by_path():
    from dataclasses import dataclass, field

    from attnphase.cli.display import units_from

    @dataclass(frozen=True)
    class Branch:
        q: float = field(metadata={"unit": "per dimension"})
        m: float = 0.0

    @dataclass(frozen=True)
    class Solved:
        alpha_c: float = field(metadata={"unit": "n/d"})
        positional: Branch = Branch(0.5)

    assert units_from(Solved(1.25)) == {"alpha_c": "n/d", "positional.q": "per dimension"}
    assert units_from({"not": "a dataclass"}) == {}


def test_reproduce_ends_with_one_summary_row_per_model(capsys):
    from attnphase.cli.reproduce import HEADLINE_NUMBERS, print_summary

    headlines = {"copy-heads": {"softmax_P_star_exponent": 1.0213, "ratio": 2.5, "third": 3.0, "fourth": 4.0,
                                "lines": ["not a number"]},
                 "signal-recovery": {"checks": {"nested": 1.0}, "seconds": 43.19}}
    print_summary(headlines, {"copy-heads": 96.04, "signal-recovery": 43.2},
                  {"copy-heads": "reports/copy_heads/report.md", "signal-recovery": "reports/signal_recovery/report.md"})
    text = capsys.readouterr().out
    assert "softmax_P_star_exponent = 1.0213" in text and "96.0" in text and "reports/copy_heads/report.md" in text
    assert "fourth" not in text and f"+{4 - HEADLINE_NUMBERS} more in the report" in text
    assert "(see the report)" in text  # a model without scalar headline numbers: its run time is not one
    assert "seconds =" not in text and "43.2" in text


def test_a_cell_wider_than_the_table_is_wrapped_at_spaces_not_cut():
    """A missing branch's evidence is one long message: every word of it is shown, on lines within the width, and
    the row names stay whole (rich cut both to "…" before). The records stay one row each, their messages wrapped:
    transposed, six failed sweep points with long messages were six narrow columns of 20 lines each."""
    message = ("positional: the tensor rule carries it to α = 1, split-line 8 does not: followed from α = 0.3: alive "
               "at 0.87359, lost at 0.88359 (jumped)")
    names = ("positional", "semantic", "mixed", "trivial", "fifth", "sixth")
    for count in (1, 2, 6):
        records = [{"branch": name, "status": "not_found", "message": message} for name in names]
        text = rendered({"command": "solve", "model": "m", "version": "v", "parameters": {},
                         "missing": records[:count]})
        lines = text.splitlines()
        assert max(map(len, lines)) <= 120 and "…" not in text
        assert any(line.split() == ["branch", "status", "message"] for line in lines)
        rows = [k for k, line in enumerate(lines) if line.split()[:2] in ([name, "not_found"] for name in names)]
        assert len(rows) == count and all(b - a == 2 for a, b in zip(rows, rows[1:]))  # each message on two lines
        words = [w for w in " ".join(lines[rows[0]:]).split() if w not in (*names, "not_found")]  # the messages
        assert Counter(words) == Counter(message.split() * count)
        assert " ".join(lines[rows[0]].split()[2:] + lines[rows[0] + 1].split()) == message
    # a record without fields has no first column to keep: nothing to show, and no error
    assert rendered({"command": "c", "model": "m", "version": "v", "parameters": {}, "empty": [{}]}).split() == [
        "c", "m", "(attnphase", "v)"]


def test_square_brackets_in_any_text_are_printed_as_written():
    """rich reads "[...]" as markup: a message's "E[g η]" printed as "E", in a scalar, a record table's cell, header and
    title alike."""
    message = "θ̂ = α E[g η]/V* = 0 [bold]"
    text = rendered({"command": "solve", "model": "m", "version": "v", "parameters": {}, "message": message,
                     "missing": [{"branch": "semantic", "message": message}], "rows [raw]": [{"E[x]": 1.0}]})
    assert text.count(message) == 2 and "rows [raw]" in text and "E[x]" in text


def test_the_reproduce_summary_shows_each_headline_number_with_its_error():
    """An error is shown beside its value, not as a headline number of its own (α_c's error took one of the three
    places, and α_l came without its error): keys "<name>(…)" and "<name>_mean" find "<name>_error"; the error is
    shown to two digits, rounded up, and the value to the same decimal place (1.49051 ± 0.0045 showed a digit the
    error does not support)."""
    from attnphase.cli.reproduce import headline_cell

    positional = headline_cell({"alpha_c(omega=0.30)": 1.25194, "alpha_c_error": 0.000823448,
                                "alpha_l(omega=0.30)": 1.49051, "alpha_l_error": 0.00440125, "omega": 0.3,
                                "baseline": 0.002, "seconds": 150.0})
    assert positional.splitlines() == ["alpha_c(omega=0.30) = 1.25194 ± 0.00083",
                                       "alpha_l(omega=0.30) = 1.4905 ± 0.0045", "omega = 0.3",
                                       "(+1 more in the report)"]
    # a number that was not computed (None: the full report's bimodality in a quick run) is not "in the report"
    assert headline_cell({"a": 1.0, "b": 2.0, "c": 3.0, "d": None, "e": 4.0}).splitlines()[-1] == \
        "(+1 more in the report)"
    assert headline_cell({"a": 1.0, "b": 2.0, "c": 3.0, "d": None}).splitlines() == ["a = 1", "b = 2", "c = 3"]
    recovery = headline_cell({"headline_alignment_mean": 0.997167, "headline_alignment_error": 5.7e-05,
                              "headline_predicted_alignment": 0.997344,
                              "headline_predicted_alignment_error": 0.000182})
    assert recovery.splitlines() == ["headline_alignment_mean = 0.997167 ± 0.000057",
                                     "headline_predicted_alignment = 0.99734 ± 0.00019"]
