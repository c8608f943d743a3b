"""The results store: keys, atomic points, concurrent writers, SIGKILL mid-write, corruption, export."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, strategies as st

from attnphase.version import code_version
from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.store import ResultStore, StoreError, canonical_params, default_store_path
from attnphase.sweep import curie_weiss_point, run_sweep
from test_output_paths import assert_refused, read_only


def test_canonical_key_is_sorted_exact_and_type_blind_for_integral_floats():
    assert canonical_params({"h": 0.1, "beta": 2}) == '{"beta":2,"h":0.1}'
    # 1 and 1.0 (and numpy scalars) name the same point; -0.0 is 0.
    assert canonical_params({"L": 1.0}) == canonical_params({"L": 1}) == canonical_params({"L": np.int64(1)})
    assert canonical_params({"x": -0.0}) == canonical_params({"x": 0})
    # repr is the shortest exact text: neighbouring floats get different keys.
    x = 0.1
    assert canonical_params({"x": x}) != canonical_params({"x": np.nextafter(x, 1.0)})
    assert json.loads(canonical_params({"x": np.nextafter(x, 1.0)}))["x"] == np.nextafter(x, 1.0)
    for bad in (float("nan"), float("inf"), [1, 2]):
        with pytest.raises(ParameterError) as info:
            canonical_params({"beta": bad})
        assert info.value.name == "beta"


def test_a_bool_parameter_is_keyed_as_a_bool_not_as_the_integer_it_equals(tmp_path):
    """True == 1 in Python, but a switch and a count are different parameters: true and 1 are different keys (JSON
    keeps the two types apart), so a point stored with b=True is not returned for b=1, and its parameter reads back
    as the bool it was."""
    assert canonical_params({"b": True}) == '{"b":true}' and canonical_params({"b": False}) == '{"b":false}'
    assert canonical_params({"b": True}) != canonical_params({"b": 1})
    assert canonical_params({"b": False}) != canonical_params({"b": 0})
    # numpy's and torch's bools are bools too (they were keyed by their .item() as 1 and 0)
    import torch

    for true, false in ((np.True_, np.False_), (torch.tensor(True), torch.tensor(False))):
        assert (canonical_params({"b": true}), canonical_params({"b": false})) == ('{"b":true}', '{"b":false}')
    with ResultStore(tmp_path / "s.sqlite") as store:
        assert store.put("mine", {"b": True}, {"y": 1.0}) and store.put("mine", {"b": 1}, {"y": 2.0})
        assert (store.get("mine", {"b": True}), store.get("mine", {"b": 1})) == ({"y": 1.0}, {"y": 2.0})
        assert sorted(type(row.params["b"]).__name__ for row in store.rows("mine")) == ["bool", "int"]


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.one_of(st.floats(), st.integers(), st.text(max_size=5)),
                       max_size=4))
def test_canonical_key_round_trips_or_refuses(params):
    """Finite numbers and text give a key that reads back to equal values; NaN and inf are refused."""
    try:
        key = canonical_params(params)
    except ParameterError as exc:
        assert isinstance(exc.value, float) and not np.isfinite(exc.value)
        return
    assert json.loads(key) == params and canonical_params(json.loads(key)) == key


def test_put_get_missing_and_no_duplicates(tmp_path):
    with ResultStore(tmp_path / "s.sqlite") as store:
        assert store.put("demo", {"beta": 1.5, "h": 0.0}, {"m": 0.25, "missing": None}, elapsed=0.5)
        # Same point again (h written as an int this time): ignored, first result kept.
        assert not store.put("demo", {"h": 0, "beta": 1.5}, {"m": 99.0})
        assert store.get("demo", {"beta": 1.5, "h": 0}) == {"m": 0.25, "missing": None}
        assert store.get("demo", {"beta": 2.0, "h": 0}) is None
        assert store.get("other", {"beta": 1.5, "h": 0}) is None
        wanted = [{"beta": b, "h": 0.0} for b in (1.0, 1.5, 2.0)]
        assert store.missing("demo", wanted) == [wanted[0], wanted[2]]
        assert store.count() == 1
        (row,) = store.rows()
        assert (row.model, row.version, row.params, row.elapsed) == ("demo", code_version(), {"beta": 1.5, "h": 0}, 0.5)
    # Another code version neither sees nor overwrites these points.
    with ResultStore(tmp_path / "s.sqlite", version="0.0.0+other") as old:
        assert old.get("demo", {"beta": 1.5, "h": 0}) is None
        assert old.put("demo", {"beta": 1.5, "h": 0}, {"m": 0.3})
        assert len(old.rows("demo")) == 2 and len(old.rows("demo", version="0.0.0+other")) == 1


def test_non_finite_results_are_kept_exactly_and_old_rows_with_null_stay_readable(tmp_path):
    """NaN, +inf, -inf and None are four different results: each reads back, and exports, as it was put. A row that
    older code wrote with null for a non-finite value reads back as None."""
    from attnphase.store_rows import row_checksum

    path = tmp_path / "s.sqlite"
    put = {"nan": float("nan"), "inf": np.inf, "minus_inf": -np.inf, "none": None, "x": 1.5,
           "curve": [1.0, float("nan")], "__float__": "a result named like a tag"}
    with ResultStore(path) as store:
        store.put("mine", {"i": 1}, put)
        got = store.get("mine", {"i": 1})
        store.export(tmp_path / "t.csv")
    assert math.isnan(got.pop("nan")) and math.isnan(got["curve"].pop())
    assert got == {"inf": math.inf, "minus_inf": -math.inf, "none": None, "x": 1.5, "curve": [1.0],
                   "__float__": "a result named like a tag"}
    with open(tmp_path / "t.csv", newline="") as fh:
        (row,) = csv.DictReader(fh)
    assert (row["nan"], row["inf"], row["minus_inf"], row["none"]) == ("nan", "inf", "-inf", "")
    assert math.isnan(json.loads(row["curve"])[1])
    # rows as the code before wrote them: null where a value was NaN; plain JSON, also where a result's name is one
    # of the exact encoding's tags (read as written, not decoded into a number: an audit found export crash on it)
    old_rows = {1: '{"m":null,"x":2.0}', 2: '{"__float__":3.0,"y":1.0}'}
    version = code_version()
    with sqlite3.connect(path) as connection:
        for i, text in old_rows.items():
            connection.execute("INSERT INTO results (model, params, version, result, created, elapsed, checksum) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?)", ("old", f'{{"i":{i}}}', version, text, 0.0, None,
                                                                row_checksum("old", f'{{"i":{i}}}', version, text)))
    connection.close()
    with ResultStore(path, read_only=True) as store:
        assert store.get("old", {"i": 1}) == {"m": None, "x": 2.0} and store.verify() == []
        assert store.get("old", {"i": 2}) == {"__float__": 3.0, "y": 1.0}
        assert store.export(tmp_path / "old.csv", model="old") == 2
    import pyarrow.parquet as pq  # the parquet extra, which `make test` installs: its absence is a failure, not a skip

    with ResultStore(path, read_only=True) as store:
        store.export(tmp_path / "t.parquet", "parquet", model="mine")
    columns = pq.read_table(tmp_path / "t.parquet").to_pydict()
    assert math.isnan(columns["nan"][0]) and (columns["inf"], columns["minus_inf"]) == ([math.inf], [-math.inf])
    assert columns["none"] == [None]


def test_default_path_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNPHASE_STORE", str(tmp_path / "env.sqlite"))
    assert default_store_path() == tmp_path / "env.sqlite"
    monkeypatch.delenv("ATTNPHASE_STORE")
    assert str(default_store_path()) == "results.sqlite"


def test_export_csv_and_parquet_round_trip_exactly(tmp_path):
    store = ResultStore(tmp_path / "s.sqlite")
    rng = np.random.default_rng(7)
    expected = {}
    for beta in (0.5, 1.0 / 3.0, 2.0):
        m = float(rng.standard_normal())
        expected[beta] = m
        store.put("demo", {"beta": beta}, {"m": m, "status": "converged", "curve": [1.0, 2.5]})
    store.put("other", {"L": 4}, {"L": 10.0})  # a result named like a parameter column
    assert store.export(tmp_path / "demo.csv", "csv", model="demo") == 3
    with open(tmp_path / "demo.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert {float(r["beta"]): float(r["m"]) for r in table} == expected  # repr text round-trips exactly
    assert {r["status"] for r in table} == {"converged"} and json.loads(table[0]["curve"]) == [1.0, 2.5]
    assert store.export(tmp_path / "all.csv") == 4
    with open(tmp_path / "all.csv", newline="") as fh:
        header = next(csv.reader(fh))
    assert header[:3] == ["model", "version", "L"] and "result.L" in header
    try:
        import pyarrow.parquet as pq
    except ImportError:  # without pyarrow the export must say how to get it
        with pytest.raises(ParameterError, match="pyarrow"):
            store.export(tmp_path / "demo.parquet", "parquet")
    else:
        assert store.export(tmp_path / "demo.parquet", "parquet", model="demo") == 3
        columns = pq.read_table(tmp_path / "demo.parquet").to_pydict()
        assert dict(zip(columns["beta"], columns["m"])) == expected
    with pytest.raises(ParameterError) as info:
        store.export(tmp_path / "x.json", "json")
    assert info.value.name == "--format"


def test_export_never_writes_a_parameter_or_result_over_a_column(tmp_path):
    """Parameters named like the table's own columns get `param.`, results named like any column `result.`: the
    model, version and created columns keep their values and every header is distinct, in CSV and parquet, also
    where a result's own name is a prefixed one (`result.x` beside a clashing `x`: prefixed once more)."""
    clashing = {"x": 1, "model": 3, "version": 7, "created": 2, "elapsed_s": 4}
    with ResultStore(tmp_path / "s.sqlite") as store:
        store.put("mine:clash", clashing, {"x": 10.0, "result.x": 11.0, "created": 5.0, "model": 6.0, "y": 1.0},
                  elapsed=0.25)
        written = store.rows()[0]
        assert store.export(tmp_path / "t.csv") == 1
    with open(tmp_path / "t.csv", newline="") as fh:
        header, values = list(csv.reader(fh))
    row = dict(zip(header, values))
    assert len(header) == len(set(header)) == 14
    assert (row["model"], row["version"], float(row["created"]), float(row["elapsed_s"])) == (
        "mine:clash", code_version(), written.created, 0.25)
    assert {name: row[f"param.{name}"] for name in ("model", "version", "created", "elapsed_s")} == {
        "model": "3", "version": "7", "created": "2", "elapsed_s": "4"}
    results = ("result.result.x", "result.x", "result.created", "result.model", "y")
    assert (row["x"], *(row[name] for name in results)) == ("1", "10.0", "11.0", "5.0", "6.0", "1.0")
    import pyarrow.parquet as pq  # the parquet extra, which `make test` installs

    with ResultStore(tmp_path / "s.sqlite") as store:
        store.export(tmp_path / "t.parquet", "parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.column_names == header
    assert table.column("model").to_pylist() == ["mine:clash"] and table.column("param.model").to_pylist() == [3]


def _integers_beyond_int64_point(x):
    """Results a point function of yours may return: Python ints are unbounded, parquet's integers are 64-bit."""
    return {"huge": 2**70 + 3, "just_past_int64": 2**63, "small": int(x), "mixed": 1 if x == 1 else "one"}


def test_export_writes_an_integer_beyond_int64_to_parquet_as_its_exact_digits(tmp_path):
    """A result column holding 2**70 + 3 (or 2**63, one past int64) made the parquet export fail with "OverflowError:
    Python int too large to convert to C long", naming no column. Now such a column is text with the integer's exact
    digits, as a column of mixed types is, while a column of integers within int64 stays int64."""
    import pyarrow.parquet as pq  # the parquet extra, which `make test` installs

    store = str(tmp_path / "s.sqlite")
    sweep = CliRunner().invoke(main, ["sweep", f"{__name__}:_integers_beyond_int64_point", "--grid", "x=1,2",
                                      "--workers", "1", "--store", store])
    assert sweep.exit_code == 0, sweep.output
    export = CliRunner().invoke(main, ["store", "export", "--store", store, "--format", "parquet", "--out",
                                       str(tmp_path / "t.parquet")])
    assert export.exit_code == 0, export.output
    table = pq.read_table(tmp_path / "t.parquet").sort_by("small")
    assert table.column("huge").to_pylist() == [str(2**70 + 3)] * 2 == ["1180591620717411303427"] * 2
    assert table.column("just_past_int64").to_pylist() == ["9223372036854775808"] * 2
    assert table.column("mixed").to_pylist() == ["1", "one"]
    assert table.column("small").to_pylist() == [1, 2] and str(table.schema.field("small").type) == "int64"


# --- faults -----------------------------------------------------------------------------------------


def _filled_store(path, n=120):
    with ResultStore(path) as store:
        for i in range(n):
            store.put("demo", {"i": i}, {"value": i * 0.5, "status": "converged"})
    assert not os.path.exists(f"{path}-wal")  # closing checkpointed everything into the main file


def _damage_header(data: bytearray) -> None:
    data[0:16] = b"\xff" * 16


def _zero_second_page(data: bytearray) -> None:
    page = int.from_bytes(data[16:18], "big")
    data[page : 2 * page] = bytes(page)


def _edit_one_result(data: bytearray) -> None:
    # A change inside a row's payload leaves the b-tree intact; only the row checksum sees it.
    at = data.find(b'"value":30.0')
    assert at > 0
    data[at + 8 : at + 12] = b"31.0"


@pytest.mark.parametrize("damage", [_damage_header, _zero_second_page])
def test_corrupted_store_is_detected_with_a_clear_error(tmp_path, damage):
    path = tmp_path / "s.sqlite"
    _filled_store(path)
    data = bytearray(path.read_bytes())
    damage(data)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        with ResultStore(path) as store:
            store.rows()
    message = str(info.value)
    assert str(path) in message and "move it aside" in message
    # The CLI says the same on stderr with exit status 1 (a fault, not bad input) and no traceback, on one line (SQLite
    # gives the second page's damage as "*** in database main ***" and the page on a line of its own)
    result = CliRunner().invoke(main, ["store", "list", "--store", str(path)])
    assert result.exit_code == 1, result.output
    assert str(path) in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    result = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=1:2:2", "--store", str(path), "--json"])
    assert result.exit_code == 1 and str(path) in result.stderr and result.stdout == ""


def _change_one_digit(path, row_id):
    """The bytes of one row's result changed, as a disk error would (its checksum is left as it was)."""
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE results SET result = replace(result, '.', '.9') WHERE id = ?", (row_id,))
    connection.close()


def _break_its_text(path, row_id):
    """One row's parameters replaced by bytes that are not UTF-8."""
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE results SET params = CAST(? AS TEXT) WHERE id = ?", (b'{"beta":\xff}', row_id))
    connection.close()


@pytest.mark.parametrize("damage, replaced", [(_change_one_digit, True), (_break_its_text, False)])
def test_a_damaged_row_is_named_and_skipped_and_a_sweep_replaces_it(tmp_path, damage, replaced):
    """docs/sweeps.md: a damaged row is reported, not read. `store list` and `store export` name it on stderr and
    in their JSON and go on with every intact row; a sweep computes its point again and replaces the row (one whose
    parameters are damaged names no point: it stays, skipped, and the point is stored anew); `store check` exits 1
    while a damaged row is left, and a sweep of other points reuses the intact ones."""
    path = str(tmp_path / "s.sqlite")
    sweep = ["sweep", "demo", "--grid", "beta=0.5:2:8", "--workers", "1", "--store", path, "--json"]
    assert CliRunner().invoke(main, sweep).exit_code == 0
    damage(path, 3)
    listed = CliRunner().invoke(main, ["store", "list", "--store", path, "--json"])
    assert listed.exit_code == 0, listed.output
    assert listed.stderr.startswith(f"warning: results store {path}: 1 damaged row skipped")
    assert "row 3 (" in listed.stderr
    payload = json.loads(listed.stdout)
    assert payload["models"][0]["n_points"] == 7 and len(payload["damaged_rows"]) == 1
    exported = CliRunner().invoke(main, ["store", "export", "--store", path, "--out", str(tmp_path / "t.csv"),
                                         "--json"])
    assert exported.exit_code == 0 and json.loads(exported.stdout)["n_rows"] == 7 and "row 3 (" in exported.stderr
    checked = CliRunner().invoke(main, ["store", "check", "--store", path, "--json"])
    assert checked.exit_code == 1 and any(p.startswith("row 3 (") for p in json.loads(checked.stdout)["problems"])
    others = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=3,4", "--workers", "1", "--store", path])
    assert others.exit_code == 0, others.output
    again = CliRunner().invoke(main, sweep)
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert (report["n_cached"], report["n_computed"], len(report["damaged_rows"])) == (7, 1, 0 if replaced else 1)
    checked = CliRunner().invoke(main, ["store", "check", "--store", path])
    assert checked.exit_code == (0 if replaced else 1), checked.output
    with ResultStore(path, read_only=True) as results:
        rows = results.rows("demo")
        assert len(rows) == 10 and list(results.damaged_rows) == ([] if replaced else [3])
        assert all(row.result == curie_weiss_point(**row.params) for row in rows)
    if not replaced:  # docs/sweeps.md: the row named in the warning is removed by its id
        with sqlite3.connect(path) as connection:
            connection.execute("DELETE FROM results WHERE id = 3")
        connection.close()
        assert CliRunner().invoke(main, ["store", "check", "--store", path]).exit_code == 0


@pytest.mark.parametrize("column", ["version", "model"])
def test_a_row_whose_model_or_code_version_changed_after_writing_fails_its_checksum_and_is_not_reused(tmp_path, column):
    """The checksum covers every column of the key, not only the result: a point computed by other code (version
    "an-older-version") or for another model ("other"), whose version (model) bytes were changed afterwards to this
    code's (to "demo"), its checksum left as it was, fails its checksum. `get` does not return it, `verify` names
    it, and a sweep computes the point again (the closed form, curie_weiss_point) instead of reusing a result this
    code did not compute; the row it writes is whole."""
    from attnphase.sweep import current_version

    path = tmp_path / "s.sqlite"
    params = {"beta": 1.5, "h": 0}  # the key a sweep of demo over beta=1.5 looks up
    with ResultStore(path) as store:
        if column == "version":
            store.put("demo", params, {"m": 0.123}, version="an-older-version")
        else:
            store.put("other", params, {"m": 0.123}, version=current_version("demo"))
    with sqlite3.connect(path) as connection:
        connection.execute(f"UPDATE results SET {column} = ?",
                           (current_version("demo") if column == "version" else "demo",))
    connection.close()
    with ResultStore(path, read_only=True) as store:
        assert store.get("demo", params) is None
        assert [problem.partition(" (")[0] for problem in store.verify()] == ["row 1"]
    report = run_sweep("demo", ["beta=1.5"], store=path, workers=1)
    assert (report.n_cached, report.n_computed) == (0, 1)
    with ResultStore(path, read_only=True) as store:
        assert store.get("demo", params) == curie_weiss_point(beta=1.5) and store.verify() == []


def test_a_sweep_reports_the_damaged_rows_it_leaves_not_those_it_replaced_or_that_its_store_read_before(tmp_path):
    """A sweep's damaged_rows are the rows of its model and version still damaged when it ends: not a row it
    replaced, in its own report or a later sweep's with the same store object, nor a damaged row of another model
    that the object read before."""
    path = tmp_path / "s.sqlite"
    run_sweep("demo", ["beta=0.5,1.5"], store=path, workers=1)
    with ResultStore(path) as results:
        results.put("other", {"x": 1}, {"y": 0.5})
    _change_one_digit(path, 2)
    _change_one_digit(path, 3)
    at_start = []
    with ResultStore(path) as results:
        assert results.rows("other") == [] and list(results.damaged_rows) == [3]
        first = run_sweep("demo", ["beta=0.5,1.5"], store=results, workers=1,
                          on_start=lambda report: at_start.append(list(report.damaged_rows)))
        assert at_start == [['row 2 (model \'demo\', parameters {"beta":1.5,"h":0}) fails its checksum (its bytes '
                             'changed after it was written)']]
        assert (first.n_cached, first.n_computed, first.damaged_rows) == (1, 1, [])
        assert list(results.damaged_rows) == [3]
        second = run_sweep("demo", ["beta=0.5,1.5"], store=results, workers=1)
        assert (second.n_cached, second.n_computed, second.damaged_rows) == (2, 0, [])
        assert [problem.partition(" (")[0] for problem in results.verify()] == ["row 3"]


def test_a_file_that_is_not_a_store_and_a_missing_store(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("these are my notes, not a results store\n" * 200)
    with pytest.raises(StoreError, match="not a results store") as info:
        ResultStore(text)
    # most often a path typed wrong: the remedy says so before calling a store damaged
    assert info.value.remedy.startswith("Check the path: --store (or $ATTNPHASE_STORE) may name another kind of file")
    with pytest.raises(StoreError, match="does not exist"):
        ResultStore(tmp_path / "absent.sqlite", read_only=True)
    result = CliRunner().invoke(main, ["store", "export", "--store", str(tmp_path / "absent.sqlite"), "--out", "x.csv"])
    assert result.exit_code == 1 and "does not exist" in result.stderr


@pytest.mark.parametrize("command", [["list"], ["check"], ["export", "--out", "out.csv"]])
def test_a_store_path_that_names_no_file_is_a_bad_value_of_the_option_or_the_variable(command, tmp_path, monkeypatch):
    """`store --help`: a store path that cannot be a store file exits 2 naming --store or $ATTNPHASE_STORE, as for
    `sweep`: the empty path, and a path too long for the system (a name over 255 bytes, or the whole over 4096)."""
    monkeypatch.chdir(tmp_path)
    long_name = str(tmp_path / ("e" * 300) / "s.sqlite")
    long_path = str(tmp_path / "/".join(["d" * 200] * 25) / "s.sqlite")
    for path in (long_name, long_path):
        error = assert_refused(CliRunner().invoke(main, ["store", *command, "--store", path]), "'--store'")
        assert error == (f"Error: Invalid value for '--store': File {path!r} cannot be a results store: File name "
                         "too long.")
        monkeypatch.setenv("ATTNPHASE_STORE", path)
        error = assert_refused(CliRunner().invoke(main, ["store", *command]), "'$ATTNPHASE_STORE'")
        assert error == (f"Error: Invalid value for '$ATTNPHASE_STORE': File {path!r} cannot be a results store: File "
                         "name too long.")
        monkeypatch.delenv("ATTNPHASE_STORE")
    error = assert_refused(CliRunner().invoke(main, ["store", *command, "--store", ""]), "'--store'")
    assert error == "Error: Invalid value for '--store': An empty path names no file."
    assert os.listdir(tmp_path) == []


def test_a_store_whose_table_lacks_a_column_names_another_layout_first(tmp_path):
    """A store of another code version with the same schema version but another layout (a column this code reads
    missing) is unreadable, the likelier cause named before damage (audit b15)."""
    path = tmp_path / "s.sqlite"
    _filled_store(path, n=2)
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE results DROP COLUMN elapsed")
    with pytest.raises(StoreError, match=r"is unreadable \(no such column: elapsed\)") as info:
        with ResultStore(path) as store:
            store.rows()
    assert info.value.remedy.startswith("Its tables lack what this code reads: written by another attnphase version")


def test_a_store_path_too_long_for_the_system_is_a_store_error_naming_it(tmp_path):
    path = tmp_path / ("e" * 300 + ".sqlite")
    for only_reading in (True, False):
        with pytest.raises(StoreError) as info:
            ResultStore(path, read_only=only_reading)
        assert str(info.value) == (f"results store {path}: cannot be looked up (File name too long). Check the path "
                                   "and its permissions")


def _foreign_database(path):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (x)")
    connection.execute("INSERT INTO t VALUES ('somebody else''s row')")
    connection.commit()
    connection.close()


_NOT_STORES = {
    "another database": (_foreign_database, "not a results store (its tables: t)"),
    "an empty file": (lambda path: path.write_bytes(b""), "is empty"),
    "a text file": (lambda path: path.write_text("my notes\n" * 200), "not a results store"),
}


@pytest.mark.parametrize("kind", _NOT_STORES)
@pytest.mark.parametrize("command", [["list"], ["check"], ["export", "--out", "out.csv"]])
def test_the_store_commands_only_read_and_refuse_what_is_not_a_store(kind, command, tmp_path, monkeypatch):
    """Exit 1 naming the file, and the file left exactly as it was: no tables added, no journal switched to WAL,
    no companion files made, no export written."""
    monkeypatch.chdir(tmp_path)
    make, problem = _NOT_STORES[kind]
    path = tmp_path / "other.sqlite"
    make(path)
    saved = path.read_bytes()
    result = CliRunner().invoke(main, ["store", *command, "--store", str(path)])
    assert result.exit_code == 1, result.output
    assert str(path) in result.stderr and problem in result.stderr and "Traceback" not in result.output
    assert path.read_bytes() == saved and os.listdir(tmp_path) == ["other.sqlite"]


def test_the_store_commands_change_no_store_and_the_next_sweep_removes_the_files_sqlite_adds(tmp_path):
    """`store --help`: the read-only commands leave the store's bytes as they were; SQLite may add FILE-wal and
    FILE-shm beside it (without points), and the next sweep to finish removes them."""
    path = tmp_path / "s.sqlite"
    sweep = ["sweep", "demo", "--grid", "beta=1,2", "--workers", "1", "--store", str(path)]
    assert CliRunner().invoke(main, sweep).exit_code == 0
    assert os.listdir(tmp_path) == ["s.sqlite"]
    saved = path.read_bytes()
    for command in (["list"], ["check"], ["export", "--out", str(tmp_path / "t.csv")]):
        assert CliRunner().invoke(main, ["store", *command, "--store", str(path)]).exit_code == 0
    assert path.read_bytes() == saved
    assert set(os.listdir(tmp_path)) <= {"s.sqlite", "s.sqlite-wal", "s.sqlite-shm", "t.csv"}
    wal = tmp_path / "s.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    assert CliRunner().invoke(main, sweep).exit_code == 0
    assert sorted(os.listdir(tmp_path)) == ["s.sqlite", "t.csv"]
    help_text = " ".join(CliRunner().invoke(main, ["store", "--help"]).output.split())
    assert "SQLite may leave FILE-wal and FILE-shm" in help_text and "never create" not in help_text


def test_a_sweep_fills_an_empty_file_but_never_adds_its_tables_to_another_database(tmp_path):
    foreign = tmp_path / "theirs.sqlite"
    _foreign_database(foreign)
    saved = foreign.read_bytes()
    sweep = ["sweep", "demo", "--grid", "beta=1:2:2", "--workers", "1", "--json", "--store"]
    result = CliRunner().invoke(main, [*sweep, str(foreign)])
    assert result.exit_code == 1 and "not a results store (its tables: t)" in result.stderr and result.stdout == ""
    assert foreign.read_bytes() == saved and os.listdir(tmp_path) == ["theirs.sqlite"]
    empty = tmp_path / "new.sqlite"
    empty.write_bytes(b"")
    assert CliRunner().invoke(main, [*sweep, str(empty)]).exit_code == 0
    with ResultStore(empty, read_only=True) as store:
        assert store.count("demo") == 2


def test_a_store_without_its_schema_version_is_reported(tmp_path):
    path = tmp_path / "s.sqlite"
    ResultStore(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM meta")
    connection.close()
    with pytest.raises(StoreError, match="no schema version"):
        ResultStore(path, read_only=True)


def test_a_store_on_read_only_media_is_read(tmp_path):
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    _filled_store(shelf / "s.sqlite", n=5)
    with read_only(shelf):
        listed = CliRunner().invoke(main, ["store", "list", "--store", str(shelf / "s.sqlite"), "--json"])
        checked = CliRunner().invoke(main, ["store", "check", "--store", str(shelf / "s.sqlite"), "--json"])
        exported = CliRunner().invoke(main, ["store", "export", "--store", str(shelf / "s.sqlite"),
                                             "--out", str(tmp_path / "out.csv")])
        assert os.listdir(shelf) == ["s.sqlite"]
    assert listed.exit_code == 0 and json.loads(listed.stdout)["models"][0]["n_points"] == 5, listed.output
    assert checked.exit_code == 0 and json.loads(checked.stdout)["ok"] is True, checked.output
    assert exported.exit_code == 0, exported.output
    with open(tmp_path / "out.csv", newline="") as fh:
        assert sorted(int(row["i"]) for row in csv.DictReader(fh)) == list(range(5))
    with ResultStore(shelf / "s.sqlite", read_only=True) as store, pytest.raises(StoreError, match="read-only"):
        store.put("demo", {"i": 99}, {"value": 1.0})


def test_a_store_with_points_in_its_log_on_read_only_media_is_refused_clearly(tmp_path):
    """Read as immutable, the file alone would miss the points still in its write-ahead log: refused instead."""
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    with ResultStore(tmp_path / "s.sqlite") as writer:  # open: the points are in the log, not yet in the file
        writer.put("demo", {"i": 1}, {"value": 0.5})
        for name in ("s.sqlite", "s.sqlite-wal"):
            (shelf / name).write_bytes((tmp_path / name).read_bytes())
    with read_only(shelf):
        result = CliRunner().invoke(main, ["store", "list", "--store", str(shelf / "s.sqlite")])
    assert result.exit_code == 1 and "write-ahead log" in result.stderr and "Traceback" not in result.output


def _readonly_directory_error() -> sqlite3.OperationalError:
    """The error SQLite 3.40 raises at the first read of a read-only connection to a WAL store whose directory this
    user may not write: it cannot create the store's -wal there."""
    error = sqlite3.OperationalError("attempt to write a readonly database")
    error.sqlite_errorcode, error.sqlite_errorname = sqlite3.SQLITE_READONLY_DIRECTORY, "SQLITE_READONLY_DIRECTORY"
    return error


def test_a_store_in_a_directory_this_user_may_not_write_is_read(tmp_path, monkeypatch):
    """`store --help`: these commands only read, so they read a colleague's store in a directory without write
    permission for this user too. There SQLite refuses a read-only open with SQLITE_READONLY_DIRECTORY (the store is
    then read as immutable, which needs no -wal); root, whom modes do not stop, never gets that error, so every open
    but an immutable one fails here with the error SQLite raises."""
    path = tmp_path / "s.sqlite"
    _filled_store(path, n=5)
    refused = []

    class RefusedConnection(sqlite3.Connection):
        def execute(self, *args):
            refused.append(args[0])
            raise _readonly_directory_error()

    real_connect = sqlite3.connect

    def connect_as_in_that_directory(target, *args, uri=False, **kwargs):
        if uri and "immutable=1" not in target:
            kwargs["factory"] = RefusedConnection
        return real_connect(target, *args, uri=uri, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect_as_in_that_directory)
    listed = CliRunner().invoke(main, ["store", "list", "--store", str(path), "--json"])
    checked = CliRunner().invoke(main, ["store", "check", "--store", str(path), "--json"])
    exported = CliRunner().invoke(main, ["store", "export", "--store", str(path), "--out", str(tmp_path / "out.csv")])
    assert listed.exit_code == 0 and json.loads(listed.stdout)["models"][0]["n_points"] == 5, listed.output
    assert checked.exit_code == 0 and json.loads(checked.stdout)["ok"] is True, checked.output
    assert exported.exit_code == 0, exported.output
    with open(tmp_path / "out.csv", newline="") as fh:
        assert sorted(int(row["i"]) for row in csv.DictReader(fh)) == list(range(5))
    with ResultStore(path, read_only=True) as store:
        assert sorted(point.params["i"] for point in store.rows()) == list(range(5))
    assert len(refused) == 4  # each open was refused once, then read as immutable
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "s.sqlite"]  # read as immutable: no -wal or -shm made


def test_store_check_command_reports_damage(tmp_path):
    path = tmp_path / "s.sqlite"
    _filled_store(path)
    ok = CliRunner().invoke(main, ["store", "check", "--store", str(path), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True
    data = bytearray(path.read_bytes())
    _edit_one_result(data)
    path.write_bytes(bytes(data))
    bad = CliRunner().invoke(main, ["store", "check", "--store", str(path), "--json"])
    assert bad.exit_code == 1
    report = json.loads(bad.stdout)
    assert report["ok"] is False and any("checksum" in p for p in report["problems"])


_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from attnphase.store import ResultStore
    path, first, last, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    store = ResultStore(path)
    while not go.exists():  # start both writers together
        time.sleep(0.005)
    for i in range(first, last):
        inserted = store.put("w", {"i": i}, {"value": 0.5 * i, "pad": "x" * 1000})
        print(i, int(inserted), flush=True)
    """
)


def test_concurrent_writers_lose_nothing_and_duplicate_nothing(tmp_path):
    """Two processes write overlapping key ranges at once: every key ends up stored exactly once."""
    path, go = tmp_path / "s.sqlite", tmp_path / "go"
    ResultStore(path).close()
    ranges = [(0, 150), (75, 225)]
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(a), str(b), str(go)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for a, b in ranges
    ]
    time.sleep(0.5)
    go.touch()
    outputs = [w.communicate(timeout=120) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], [err for _, err in outputs]
    inserted = {}
    for out, _ in outputs:
        for line in out.splitlines():
            i, flag = map(int, line.split())
            inserted[i] = inserted.get(i, 0) + flag
    assert sorted(inserted) == list(range(225))
    assert all(count == 1 for count in inserted.values())  # each key won by exactly one writer
    with ResultStore(path) as store:
        rows = store.rows("w")
    assert sorted(r.params["i"] for r in rows) == list(range(225))
    assert all(r.result["value"] == 0.5 * r.params["i"] for r in rows)


def test_sigkill_mid_write_loses_at_most_the_point_being_written(tmp_path):
    """A writer killed at a random moment leaves a valid store holding every point it reported."""
    path = tmp_path / "s.sqlite"
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), "0", "100000", str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reported = -1
    try:
        for line in writer.stdout:  # let it commit a few hundred points, then kill it mid-stream
            reported = int(line.split()[0])
            if reported >= 300:
                break
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        # Points reported after we stopped reading were committed too; drain them.
        for line in writer.stdout.read().splitlines():
            reported = int(line.split()[0])
        writer.stderr.close()
        writer.stdout.close()
    assert reported >= 300
    with ResultStore(path) as store:  # opens: recovery of the WAL, quick_check, then checksums
        stored = sorted(r.params["i"] for r in store.rows("w"))
        assert store.verify() == []
    # Sequential commits: the stored points are a prefix, holding every reported point and at most
    # the one that was being written when the signal landed.
    assert stored == list(range(len(stored)))
    assert reported + 1 <= len(stored) <= reported + 2
    raw = sqlite3.connect(path).execute("SELECT COUNT(*), COUNT(DISTINCT params) FROM results").fetchone()
    assert raw[0] == raw[1] == len(stored)


def _own_point(x):
    return {"y": 2.0 * x}


def test_points_of_other_code_versions_are_counted_by_a_sweep_and_left_out_of_an_export(tmp_path):
    """A sweep says how many of its points are stored under other code versions only (computed again, never
    reused); `store export` writes the current version of each model by default (one row per point), every version
    with --all-versions, one with --code-version."""
    store = str(tmp_path / "s.sqlite")
    old = "0.0.9+src.000000000000"
    with ResultStore(store, version=old) as results:
        for beta in (0.5, 1.0, 1.5, 2.0):
            results.put("demo", {"beta": beta, "h": 0}, {"m": -1.0})
    sweep = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=0.5:2:4", "--workers", "1", "--store", store,
                                      "--json"])
    assert sweep.exit_code == 0, sweep.output
    report = json.loads(sweep.stdout)
    assert (report["n_cached"], report["n_computed"], report["n_other_versions"]) == (0, 4, 4)
    assert sweep.stderr.startswith("note: 4 point(s) of this grid are stored under other code versions only")
    CliRunner().invoke(main, ["sweep", f"{__name__}:_own_point", "--grid", "x=1,2", "--workers", "1", "--store", store])

    def export(*options):
        result = CliRunner().invoke(main, ["store", "export", "--store", store, "--out", str(tmp_path / "t.csv"),
                                           "--json", *options])
        assert result.exit_code == 0, result.output
        with open(tmp_path / "t.csv", newline="") as fh:
            return json.loads(result.stdout), result.stderr, list(csv.DictReader(fh))

    payload, stderr, rows = export()
    assert (payload["n_rows"], payload["n_other_versions"], payload["parameters"]["versions"]) == (6, 4, "current")
    assert sorted((r["model"], r["version"] == code_version()) for r in rows) == [
        ("demo", True)] * 4 + [(f"{__name__}:_own_point", False)] * 2  # your own function: its own current version
    assert all(float(r["m"]) >= 0 for r in rows if r["model"] == "demo")  # none of the old -1
    assert "4 stored point(s) of other code versions were left out" in stderr
    payload, _, rows = export("--all-versions")
    assert (payload["n_rows"], payload["n_other_versions"]) == (10, 0)
    payload, _, rows = export("--code-version", old)
    assert payload["n_rows"] == 4 and {r["version"] for r in rows} == {old} and {r["m"] for r in rows} == {"-1.0"}
    both = CliRunner().invoke(main, ["store", "export", "--store", store, "--out", str(tmp_path / "t.csv"),
                                     "--code-version", old, "--all-versions"])
    assert both.exit_code == 2 and "--all-versions" in both.stderr


def test_a_model_or_code_version_that_names_nothing_stored_is_refused_with_what_is_stored(tmp_path):
    """A typo in --model or --code-version is a bad value naming what the store holds (exit 2), not an empty table
    or listing that looks like a result; no file is written."""
    store, out = str(tmp_path / "s.sqlite"), tmp_path / "t.csv"
    old = "0.0.9+src.000000000000"
    with ResultStore(store, version=old) as results:
        results.put("demo", {"beta": 1.0}, {"m": 0.5})
        results.put("other", {"x": 1}, {"y": 2.0}, version="0.0.8+src.111111111111")

    def refused(*command):
        result = CliRunner().invoke(main, [*command, "--store", store, "--json"])
        assert result.exit_code == 2 and result.stdout == "", result.output
        return result.stderr

    for command in (["store", "export", "--out", str(out)], ["store", "list"]):
        message = refused(*command, "--model", "nosuch")
        assert "'--model'" in message and "'nosuch'" in message and "demo, other" in message
    message = refused("store", "export", "--out", str(out), "--code-version", "bogus")
    assert "'--code-version'" in message and f"0.0.8+src.111111111111, {old}" in message
    message = refused("store", "export", "--out", str(out), "--model", "demo",
                      "--code-version", "0.0.8+src.111111111111")
    assert "of model 'demo'" in message and old in message and "0.0.8" not in message.split("holds")[1]
    assert not out.exists()
    listed = CliRunner().invoke(main, ["store", "export", "--out", str(out), "--store", store, "--model", "demo",
                                       "--code-version", old, "--json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout)["n_rows"] == 1


def test_an_interrupted_export_leaves_the_file_that_was_there(tmp_path, monkeypatch):
    """The table is written beside --out and renamed over it: an export interrupted half way leaves the previous
    table whole (no truncated file that looks complete) and no partial file, says so, and its one JSON object names
    the command `store export`, as a finished export does."""
    import attnphase.store_export as store_export

    path, out = tmp_path / "s.sqlite", tmp_path / "table.csv"
    _filled_store(path, n=50)
    out.write_text("the previous export\n")

    class InterruptedHalfWay(csv.DictWriter):
        def writerows(self, rows):
            super().writerows(rows[: len(rows) // 2])
            raise KeyboardInterrupt

    monkeypatch.setattr(store_export.csv, "DictWriter", InterruptedHalfWay)
    result = CliRunner().invoke(main, ["store", "export", "--store", str(path), "--out", str(out), "--json"])
    message = f"interrupted: the table was not written, and {out} was left as it was"
    assert result.exit_code == 130 and result.stderr == message + "\n"
    payload = json.loads(result.stdout)
    assert (payload["command"], payload["model"], payload["message"]) == ("store export", None, message)
    assert out.read_text() == "the previous export\n" and not list(tmp_path.glob("*partial*"))
    monkeypatch.undo()
    finished = CliRunner().invoke(main, ["store", "export", "--store", str(path), "--out", str(out), "--json"])
    assert (json.loads(finished.stdout)["command"], json.loads(finished.stdout)["n_rows"]) == ("store export", 50)
    with open(out, newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 50
    link = tmp_path / "latest.csv"  # an --out that is a symbolic link: the file it points to is replaced
    link.symlink_to(out)
    assert CliRunner().invoke(main, ["store", "export", "--store", str(path), "--out", str(link),
                                     "--model", "demo"]).exit_code == 0
    assert link.is_symlink() and out.read_text().startswith("model,version,")


def test_an_export_says_when_a_point_functions_source_is_not_on_the_import_path(tmp_path, monkeypatch):
    """Your own module:function swept with its module on the import path, exported from where it is not: its current
    code version is unknown (it hashes the module's source), so its points are left out with that reason, not counted
    as of other code versions; with the module found again they are the current version's and exported."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "ownpoints.py").write_text("def point(x):\n    return {'y': 2.0 * x}\n")
    store, out = str(tmp_path / "s.sqlite"), str(tmp_path / "t.csv")
    monkeypatch.syspath_prepend(str(package))
    sweep = CliRunner().invoke(main, ["sweep", "ownpoints:point", "--grid", "x=1,2", "--workers", "1",
                                      "--store", store])
    assert sweep.exit_code == 0, sweep.output

    def export():
        result = CliRunner().invoke(main, ["store", "export", "--store", store, "--out", out, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout), result.stderr

    payload, _ = export()
    assert (payload["n_rows"], payload["n_other_versions"], payload["models_not_on_the_import_path"]) == (2, 0, [])
    monkeypatch.undo()  # the module leaves the import path (and the loaded modules)
    sys.modules.pop("ownpoints", None)
    payload, stderr = export()
    assert (payload["n_rows"], payload["n_other_versions"]) == (0, 0)
    assert (payload["models_not_on_the_import_path"], payload["n_of_models_not_on_the_import_path"]) == (
        ["ownpoints:point"], 2)
    assert "2 stored point(s) of ownpoints:point were left out: the point function's source is not found" in stderr
    assert "other code versions" not in stderr.split("(put its module")[0]
