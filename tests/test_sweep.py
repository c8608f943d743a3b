"""Sweeps: grid parsing, the demo point function, resuming, failures, SIGKILL mid-sweep, two sweeps at once."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.grids import grid_points, parse_grid, parse_setting
from attnphase.store import ResultStore
from attnphase.sweep import (
    SWEEP_POINTS,
    curie_weiss_point,
    point_version,
    register_point,
    resolve_point,
    run_sweep,
)
from attnphase.version import code_version
from terminal_signals import as_from_a_terminal

CLI = "from attnphase.cli import main; main()"

# --- grids -----------------------------------------------------------------------------------------


def test_range_and_list_grids():
    assert parse_grid("beta=0.5:1.5:5").values == (0.5, 0.75, 1.0, 1.25, 1.5)
    # linspace noise is rounded away, so a range hits the same keys as the typed list
    assert parse_grid("x=0:0.9:10").values == tuple(k / 10 for k in range(10))
    assert 0.3 in parse_grid("x=0.1:0.5:5").values
    assert parse_grid("L=2:10:5").values == (2, 4, 6, 8, 10)
    assert all(isinstance(v, int) for v in parse_grid("L=2:10:5").values)
    assert parse_grid("L=2:3:3").values == (2.0, 2.5, 3.0)
    assert parse_grid("h=1.5:1.5:1").values == (1.5,)
    assert parse_grid("h=0.2, -0.1,3").values == (0.2, -0.1, 3)
    assert parse_grid("h=1e-3").values == (0.001,)


@pytest.mark.parametrize(
    "spec, rule",
    [
        ("beta=2:1:5", "reversed"),
        ("beta=1:1:3", "START < STOP"),
        ("beta=0:1:0", "NUM"),
        ("beta=0:1:-3", "NUM"),
        ("beta=0:1:2.5", "NUM is an integer"),
        ("beta=0:1:1", "NUM = 1 needs START == STOP"),
        ("beta=0:1", "three parts"),
        ("beta=nan:1:3", "finite"),
        ("beta=0:inf:3", "finite"),
        ("beta=", "non-empty"),
        ("beta=1,,2", "non-empty"),
        ("beta=1,x", "finite number"),
        ("beta=1,1.0", "distinct"),
        ("beta=1:1.000000000000001:3", "resolvable"),
        ("beta=0:1:10000001", "NUM is an integer in"),
        ("beta=-1e308:1e308:3", "overflows"),
    ],
)
def test_bad_grids_name_the_grid_and_the_form(spec, rule):
    with pytest.raises(ParameterError) as info:
        parse_grid(spec)
    assert info.value.name == "grid beta"
    assert rule in info.value.allowed and "NAME=START:STOP:NUM" in info.value.allowed


@pytest.mark.parametrize("spec", ["beta", "=1:2:3", "1beta=1:2:3", "be ta=1,2", 3.5])
def test_bad_grid_names(spec):
    with pytest.raises(ParameterError) as info:
        parse_grid(spec)
    assert info.value.name == "grid" and "NAME=START:STOP:NUM" in info.value.allowed


_GRID_TEXT = st.text(alphabet="beta=0123456789.:,-+eEinfa x_", max_size=24)


@settings(max_examples=settings.default.max_examples * 4)  # the grid grammar has many branches; parsing is cheap
@given(st.one_of(_GRID_TEXT, st.builds(lambda a, b, n: f"beta={a}:{b}:{n}", st.floats(allow_nan=True),
                                       st.floats(allow_nan=True), st.integers(-3, 50))))
def test_any_grid_text_parses_to_a_valid_grid_or_a_parameter_error(spec):
    """Never another exception; what parses is non-empty, finite, distinct, and ranges ascend."""
    try:
        grid = parse_grid(spec)
    except ParameterError as exc:
        assert exc.name.startswith("grid") and "NAME=START:STOP:NUM" in exc.allowed
        return
    values = list(grid.values)
    assert values and all(math.isfinite(v) for v in values) and len(set(values)) == len(values)
    if ":" in spec:
        assert values == sorted(values)


def _echo_point(seed):
    return {"seed": seed}


def test_integer_ranges_are_exact_at_any_size(tmp_path):
    """NUM evenly spaced values, both ends included (docs/sweeps.md): an integer range is computed in integers, so
    beyond 1e15 (GRID_DIGITS) its values are not shifted by the rounding of floats; a range of floats whose ends a
    float cannot hold is refused rather than moved."""
    seeds = (2000000000000001, 2000000000000011, 2000000000000021)
    assert parse_grid("seed=2000000000000001:2000000000000021:3").values == seeds
    big = 2**70
    assert parse_grid(f"n={big}:{big + 4}:5").values == tuple(range(big, big + 5))
    with pytest.raises(ParameterError, match="a float holds exactly") as info:
        parse_grid(f"n={2**53 + 1}:{2**53 + 8}:3")  # NUM - 1 = 2 does not divide 7
    assert info.value.name == "grid n"
    assert parse_grid("x=0.12345678901234567:1:2").values == (0.12345678901234567, 1.0)  # ends as typed
    assert parse_grid(f"n={2**60},{2**60 + 1}").values == (2**60, 2**60 + 1)  # two values, though one float
    run_sweep(f"{__name__}:_echo_point", ["seed=2000000000000001:2000000000000021:3"], store=tmp_path / "s.sqlite",
              workers=1)
    with ResultStore(tmp_path / "s.sqlite") as s:
        assert sorted(p.params["seed"] for p in s.rows()) == sorted(p.result["seed"] for p in s.rows()) == list(seeds)


def test_a_list_computed_in_python_and_the_range_typed_on_the_command_line_are_the_same_points(tmp_path):
    """The floats of a Python list are rounded to GRID_DIGITS as a range's inner values are, so np.linspace and the
    range form resume each other's sweeps (one stored row per point); values only rounding would merge are refused."""
    from attnphase.grids import as_grids

    computed = np.linspace(0.5, 2.0, 301)
    assert as_grids({"beta": computed})[0].values == parse_grid("beta=0.5:2:301").values
    assert as_grids({"beta": [0.1 + 0.2, 1]})[0].values == (0.3, 1)
    store = tmp_path / "s.sqlite"
    first = run_sweep("demo", {"beta": computed[:41]}, store=store, workers=1)
    again = run_sweep("demo", ["beta=0.5:0.7:41"], store=store, workers=1)
    assert (first.n_computed, again.n_cached, again.n_computed) == (41, 41, 0)
    with pytest.raises(ParameterError, match="distinct in 15 significant digits") as info:
        as_grids({"x": [1.0, np.nextafter(1.0, 2.0)]})
    assert info.value.name == "grid x"


def test_settings_and_products():
    assert parse_setting("sigma=0.1") == ("sigma", 0.1)
    assert parse_setting("L=8") == ("L", 8)
    assert parse_setting("method=hybr") == ("method", "hybr")
    for bad in ("sigma=nan", "sigma=-inf", "sigma=", "=3", "sigma"):
        with pytest.raises(ParameterError):
            parse_setting(bad)
    points = grid_points([parse_grid("a=1,2"), parse_grid("b=0:1:3")], {"c": "x"})
    assert points == [{"c": "x", "a": a, "b": b} for a in (1, 2) for b in (0.0, 0.5, 1.0)]
    with pytest.raises(ParameterError, match="not also swept"):
        grid_points([parse_grid("a=1,2")], {"a": 3})
    with pytest.raises(ParameterError, match="one grid only"):
        grid_points([parse_grid("a=1,2"), parse_grid("a=3,4")])
    with pytest.raises(ParameterError, match="at most"):
        grid_points([parse_grid("a=0:1:1000"), parse_grid("b=0:1:1000"), parse_grid("c=1,2")])


# --- the demo point function --------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1e-3, 0.1, 0.5, 0.9, 0.999])
def test_curie_weiss_against_its_exact_inverse(m):
    """m = tanh(beta (m + h)) inverts to beta = atanh(m)/m at h = 0 and h = atanh(m)/beta - m."""
    eps = np.finfo(float).eps

    def tolerance(beta, h, dm_dparam, param):
        # brentq's stopping rule (xtol 1e-15 + 4 eps |m|) plus the rounding of the computed beta or h
        # (a few ulps) propagated through dm/dparam from the implicit-function theorem.
        return 1e-15 + 4 * eps * m + abs(dm_dparam) * 4 * eps * max(abs(param), 1e-300)

    beta = math.atanh(m) / m
    sech2 = 1 - m * m
    dm_dbeta = m * sech2 / (1 - beta * sech2)
    assert abs(curie_weiss_point(beta)["m"] - m) <= tolerance(beta, 0.0, dm_dbeta, beta)
    beta = 0.5  # h > 0 for every m here, so m is the stable (positive) root
    h = math.atanh(m) / beta - m
    dm_dh = beta * sech2 / (1 - beta * sech2)
    assert abs(curie_weiss_point(beta, h)["m"] - m) <= tolerance(beta, h, dm_dh, h)
    assert curie_weiss_point(beta, -h)["m"] == -curie_weiss_point(beta, h)["m"]


def test_curie_weiss_limits_and_thermodynamic_identity():
    for beta in (0.3, 1.0):
        assert curie_weiss_point(beta)["m"] == 0.0
    # Near the critical point m ~ sqrt(3 (beta - 1)) (1 + O(beta - 1)).
    for eps in (1e-4, 1e-6):
        assert curie_weiss_point(1 + eps)["m"] / math.sqrt(3 * eps) == pytest.approx(1, abs=2 * eps)
    # Deep in the ordered phase 1 - m = 2 exp(-2 beta) to leading order.
    assert (1 - curie_weiss_point(8.0)["m"]) / (2 * math.exp(-16)) == pytest.approx(1, rel=1e-5)
    # Envelope theorem: df/dh = -m. Central differences: truncation ~ h^2 f''', rounding ~ eps/h.
    beta, h, step = 1.7, 0.05, 1e-5
    slope = (curie_weiss_point(beta, h + step)["free_energy"] - curie_weiss_point(beta, h - step)["free_energy"]) / (2 * step)
    assert slope == pytest.approx(-curie_weiss_point(beta, h)["m"], abs=1e-8)
    with pytest.raises(ParameterError) as info:
        curie_weiss_point(-1.0)
    assert info.value.name == "beta"


def test_the_demo_flags_a_free_energy_beyond_float64_and_the_store_keeps_it(tmp_path):
    """-ln 2 / beta at beta = 1e-320 is beyond float64: -inf, with status diverged (not converged), stored exactly."""
    assert curie_weiss_point(2.0)["status"] == "converged"
    for beta, h in ((1e-320, 0.0), (10.0, 1e308)):
        point = curie_weiss_point(beta, h)
        assert (point["free_energy"], point["status"]) == (-math.inf, "diverged")
    report = run_sweep("demo", ["beta=1e-320,2"], store=tmp_path / "s.sqlite", workers=1)
    assert (report.n_computed, report.n_failed) == (2, 0)
    with ResultStore(tmp_path / "s.sqlite") as s:
        assert s.get("demo", {"beta": 1e-320, "h": 0})["free_energy"] == -math.inf


# --- running sweeps in this process ----------------------------------------------------------------


def _flaky_point(x):
    """Test point function: fails above x = 1, returns a non-dict at x = 0.5."""
    if x > 1:
        raise RuntimeError(f"no convergence at x={x}")
    if x == 0.5:
        return [x]
    return {"y": 2.0 * x}


def test_sweep_resumes_and_matches_direct_evaluation(tmp_path):
    store = tmp_path / "s.sqlite"
    report = run_sweep("demo", ["beta=0.5:2:4", "h=0,0.1"], store=store, workers=1)
    assert (report.n_points, report.n_computed, report.n_cached, report.n_failed) == (8, 8, 0, 0)
    with ResultStore(store) as s:
        for point in s.rows("demo"):
            assert point.result == curie_weiss_point(**point.params)
    again = run_sweep("demo", ["beta=0.5:2:4", "h=0,0.1"], store=store, workers=1)
    assert (again.n_computed, again.n_cached, again.backend) == (0, 8, "none")
    wider = run_sweep("demo", {"beta": np.linspace(0.5, 2, 4), "h": [0.0, 0.1, 0.2]}, store=store, workers=1)
    assert (wider.n_computed, wider.n_cached) == (4, 8)


def _point_with_defaults(x, h=0.0, sizes=(1, 2), **options):
    """Test point function with a default that can be a key (h) and one that cannot (a tuple)."""
    return {"y": x + h + len(sizes) + len(options)}


def test_a_parameter_given_at_its_default_is_the_same_point_as_one_left_out(tmp_path):
    """The key holds the point function's defaults: `--set h=0` where h defaults to 0 reuses the points computed
    without it, and the store holds each point once, with h."""
    store = str(tmp_path / "s.sqlite")
    sweep = ["sweep", "demo", "--grid", "beta=1.5,2", "--workers", "1", "--store", store, "--json"]
    assert json.loads(CliRunner().invoke(main, sweep).stdout)["n_computed"] == 2
    for setting in ("h=0", "h=0.0"):
        again = json.loads(CliRunner().invoke(main, [*sweep, "--set", setting]).stdout)
        assert (again["n_cached"], again["n_computed"]) == (2, 0)
    with ResultStore(store) as s:
        assert sorted((p.params["beta"], p.params["h"]) for p in s.rows("demo")) == [(1.5, 0), (2, 0)]
    own = f"{__name__}:_point_with_defaults"
    assert run_sweep(own, ["x=1,2"], store=store, workers=1).n_computed == 2
    again = run_sweep(own, ["x=1,2"], {"h": 0}, store=store, workers=1)
    assert (again.n_cached, again.n_computed) == (2, 0)
    with ResultStore(store) as s:
        assert [p.params for p in s.rows(own)] == [{"x": 1, "h": 0}, {"x": 2, "h": 0}]  # the tuple is no key


def test_editing_your_own_point_function_keys_its_points_anew(tmp_path, monkeypatch):
    """The code version of a point function outside attnphase covers its module's file: after an edit its old
    results are not reused (README: results of other code are never reused). attnphase's own keep code_version()."""
    import importlib

    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "editedpoints.py"
    module.write_text("def point(x):\n    return {'y': x * 2}\n")
    store = tmp_path / "s.sqlite"
    first = run_sweep("editedpoints:point", ["x=0:1:3"], store=store, workers=1)
    assert first.n_computed == 3 and first.version.startswith(code_version() + ".point.")
    assert run_sweep("editedpoints:point", ["x=0:1:3"], store=store, workers=1).n_cached == 3
    module.write_text("def point(x):\n    return {'y': x * 3.0}\n")  # another size: no stale bytecode is read
    importlib.reload(importlib.import_module("editedpoints"))
    edited = run_sweep("editedpoints:point", ["x=0:1:3"], store=store, workers=1)
    assert (edited.n_cached, edited.n_computed) == (0, 3) and edited.version != first.version
    with ResultStore(store) as s:
        assert sorted(p.result["y"] for p in s.rows(version=edited.version)) == [0.0, 1.5, 3.0]
    assert run_sweep("demo", ["beta=1,2"], store=store, workers=1).version == code_version()
    shown = CliRunner().invoke(main, ["sweep", "editedpoints:point", "--grid", "x=0:1:3", "--workers", "1", "--store",
                                      str(store), "--json"])
    assert json.loads(shown.stdout)["points_version"] == edited.version  # as `store list` names it
    # docs/sweeps.md: only that one file is hashed, not a module it imports
    (tmp_path / "editedhelper.py").write_text("SCALE = 3.0\n")
    module.write_text("from editedhelper import SCALE\n\ndef point(x):\n    return {'y': x * SCALE}\n")
    before = point_version("editedpoints:point")
    (tmp_path / "editedhelper.py").write_text("SCALE = 4.0\n")
    assert point_version("editedpoints:point") == before


@pytest.fixture
def a_point_module(tmp_path, monkeypatch):
    """A module of your own on the import path, `stalepoints.py` (point(x) -> {"y": x * x}), forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "stalepoints.py"
    module.write_text("def point(x):\n    return {'y': x * x}\n")
    yield module
    sys.modules.pop("stalepoints", None)


def test_a_result_of_other_code_than_the_sweeps_is_not_stored(tmp_path, a_point_module):
    """A stored result is keyed by the code that computed it: a process that keeps a module it imported
    before an edit (a long-lived dask worker; here this process, which runs the serial sweep) gives results of the old
    code, which are refused, not stored under the edited file's version; after a reload the points are computed."""
    import importlib

    store = tmp_path / "s.sqlite"
    first = run_sweep("stalepoints:point", ["x=1:3:3"], store=store, workers=1)
    a_point_module.write_text("def point(x):\n    return {'y': x * x + 1000.0}\n")  # edited, not reloaded here
    stale = run_sweep("stalepoints:point", ["x=1:4:4"], store=store, workers=1)
    assert stale.version != first.version
    assert (stale.n_computed, stale.n_failed) == (0, 4)
    error = stale.failures[0].error
    assert f"other code (version {first.version}, not {stale.version})" in error and "restart the dask workers" in error
    with ResultStore(store) as s:
        assert s.rows(version=stale.version) == []
    importlib.reload(importlib.import_module("stalepoints"))
    fresh = run_sweep("stalepoints:point", ["x=1:4:4"], store=store, workers=1)
    assert (fresh.version, fresh.n_computed, fresh.n_failed) == (stale.version, 4, 0)
    with ResultStore(store) as s:
        assert sorted(p.result["y"] for p in s.rows(version=fresh.version)) == [1001.0, 1004.0, 1009.0, 1016.0]


def test_a_result_of_other_attnphase_code_is_not_stored(tmp_path, monkeypatch):
    """attnphase's own point functions carry the code version of the source as the process imported it: a process
    that loaded the demo before the source changed (the driver now keys by the new source) gives results that are
    refused, and so does a worker of an attnphase whose results carry no version."""
    import attnphase.point_code as point_code
    import attnphase.sweep as sweep

    point_code.loaded_point("attnphase.sweep:curie_weiss_point")  # loaded under this source's version
    monkeypatch.setattr(point_code, "_IMPORTED_CODE_VERSION", "0.1.0+src.0123456789ab")  # the driver's, after an edit
    monkeypatch.setattr(sweep, "point_version_on_disk", lambda target: "0.1.0+src.0123456789ab")  # as on disk now
    report = run_sweep("demo", ["beta=1,2"], store=tmp_path / "s.sqlite", workers=1)
    assert (report.version, report.n_computed, report.n_failed) == ("0.1.0+src.0123456789ab", 0, 2)
    assert f"version {code_version()}, not 0.1.0+src.0123456789ab" in report.failures[0].error
    assert "restart the dask workers" in report.failures[0].error  # the worker is the stale process here
    monkeypatch.undo()
    monkeypatch.setattr(sweep, "evaluate_point", lambda target, params: ("ok", {"m": 0.0}, 0.1))
    report = run_sweep("demo", ["beta=1,2"], store=tmp_path / "s.sqlite", workers=1)
    assert report.n_failed == 2 and "version unknown: an older attnphase" in report.failures[0].error
    with ResultStore(tmp_path / "s.sqlite") as s:
        assert s.rows() == []


def test_a_session_that_imported_attnphase_before_an_edit_is_told_to_restart_itself(tmp_path, monkeypatch):
    """A local pool's workers start afresh and run attnphase as it is on disk, while a session that imported it before
    an edit (a notebook's kernel after git pull) keys its sweeps by the old code: every result is refused, and the
    message says that the session, not a worker, is to be restarted (reloading a module there changes nothing)."""
    import attnphase.point_code as point_code

    imported_before_the_edit = "0.1.0+src.0123456789ab"
    monkeypatch.setattr(point_code, "_IMPORTED_CODE_VERSION", imported_before_the_edit)
    report = run_sweep("demo", ["beta=1,2"], store=tmp_path / "s.sqlite", workers=2)
    assert (report.backend, report.version, report.n_computed, report.n_failed) == (
        "processes", imported_before_the_edit, 0, 2)
    assert [failure.error for failure in report.failures] == 2 * [
        f"not stored: the worker ran the code now on disk (version {code_version()}, not {imported_before_the_edit}): "
        "this Python session imported attnphase before its source was edited (git pull, an edit of an editable "
        "install), and keys its sweeps by the code it imported, whatever it reloads: restart the session (a "
        "notebook: its kernel), then run the sweep again"]
    with ResultStore(tmp_path / "s.sqlite") as s:
        assert s.rows() == []


def test_progress_bar_only_when_asked(tmp_path, capsys):
    run_sweep("demo", ["beta=0.5:2:4"], store=tmp_path / "s.sqlite", workers=1, progress=True)
    assert "4/4" in capsys.readouterr().err
    run_sweep("demo", ["beta=0.5:2:5"], store=tmp_path / "s.sqlite", workers=1)  # stderr is not a terminal
    assert capsys.readouterr().err == ""


def test_failed_points_are_reported_not_stored_and_retried(tmp_path, monkeypatch):
    monkeypatch.setitem(SWEEP_POINTS, "flaky", f"{__name__}:_flaky_point")
    store = tmp_path / "s.sqlite"
    report = run_sweep("flaky", ["x=0:2:5"], store=store, workers=1)
    assert (report.n_computed, report.n_failed) == (2, 3)
    errors = {f.params["x"]: f.error for f in report.failures}
    assert "not a dict" in errors[0.5] and "no convergence at x=1.5" in errors[1.5]
    assert run_sweep("flaky", ["x=0:2:5"], store=store, workers=1).n_failed == 3  # retried, not cached


def _own_checks_point(x):
    """Test point function with no declared check: only the point itself refuses x < 0."""
    if x < 0:
        raise ParameterError("x", x, "a real number >= 0")
    return {"y": x}


def test_bad_parameters_inside_a_point_stop_the_sweep(tmp_path):
    store = tmp_path / "s.sqlite"
    with pytest.raises(ParameterError) as info:
        run_sweep(f"{__name__}:_own_checks_point", ["x=1,2,-1,3"], store=store, workers=1)
    assert info.value.name == "x"
    with ResultStore(store) as s:  # points finished before the bad one are kept
        assert sorted(p.params["x"] for p in s.rows()) == [1, 2]
    bad = CliRunner().invoke(main, ["sweep", f"{__name__}:_own_checks_point", "--grid", "x=-1,1", "--workers", "1",
                                    "--store", str(store)])
    assert bad.exit_code == 2 and "--grid x: -1" in bad.stderr and "rerun" not in bad.stderr


def test_model_resolution(monkeypatch):
    assert resolve_point("demo")[1] is curie_weiss_point
    with pytest.raises(ParameterError, match="module:function") as info:
        resolve_point("no-such-model")
    assert info.value.name == "model"
    with pytest.raises(ParameterError, match="can be imported"):
        resolve_point("attnphase.no_such_module:f")
    monkeypatch.setattr("attnphase.sweep.SWEEP_POINTS", dict(SWEEP_POINTS))
    register_point("flaky", _flaky_point)
    assert resolve_point("flaky")[1] is _flaky_point
    with pytest.raises(ParameterError, match="top-level"):
        register_point("lambda", lambda x: {"y": x})


def test_cli_sweep_json_and_exit_statuses(tmp_path):
    store = str(tmp_path / "s.sqlite")
    ok = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=0.5:2:4", "--set", "h=0.1", "--workers", "1",
                                   "--store", store, "--json"])
    assert ok.exit_code == 0, ok.output
    payload = json.loads(ok.stdout)
    assert (payload["n_points"], payload["n_computed"], payload["n_cached"]) == (4, 4, 0)
    assert payload["parameters"]["grid"] == {"beta": [0.5, 1.0, 1.5, 2.0]} and payload["parameters"]["set"] == {"h": 0.1}
    assert payload["store"] == store and payload["version"] and ok.stderr == ""  # no progress bar when piped
    assert (payload["status"], payload["success"]) == ("converged", True)  # as every command's result says it
    bad = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=2:1:5", "--store", store])
    assert bad.exit_code == 2 and "--grid beta" in bad.stderr and "reversed" in bad.stderr
    bad = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=-1,1", "--workers", "1", "--store", store, "--json"])
    assert bad.exit_code == 2 and "beta" in bad.stderr and bad.stdout == ""
    bad = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=1,2", "--workers", "0", "--store", store])
    assert bad.exit_code == 2 and "--workers" in bad.stderr
    # Failed points: the report is printed, the status is 1, and the failures are named.
    failed = CliRunner().invoke(main, ["sweep", f"{__name__}:_flaky_point", "--grid", "x=0,2", "--workers", "1",
                                       "--store", store, "--json"])
    assert failed.exit_code == 1 and "the same command computes only these again" in failed.stderr
    payload = json.loads(failed.stdout)
    assert (payload["n_computed"], payload["n_failed"]) == (1, 1) and "x=2" in payload["failures"][0]["error"]
    assert (payload["status"], payload["success"]) == ("failed", False) and "1 point(s) failed" in payload["message"]


# --- processes: SIGKILL mid-sweep, two sweeps at once ----------------------------------------------

SLOW_POINT = textwrap.dedent(
    """
    import os, time
    _waited = False

    def point(x, delay=0.0):
        '''y = x^2 + 1 after `delay` seconds; logs "tag x pid time" for every evaluation.'''
        global _waited
        go = os.environ.get("GO_FILE")
        if go and not _waited:  # hold the first point until the test says go
            with open(os.environ["EVAL_LOG"], "a") as fh:
                fh.write(f"ready {os.getpid()}\\n")
            while not os.path.exists(go):
                time.sleep(0.01)
            _waited = True
        with open(os.environ["EVAL_LOG"], "a") as fh:
            fh.write(f"{os.environ['RUN_TAG']} {x!r} {os.getpid()} {time.time()!r}\\n")
        time.sleep(delay)
        with open(os.environ["EVAL_LOG"], "a") as fh:
            fh.write(f"{os.environ['RUN_TAG']}-done {x!r} {os.getpid()} {time.time()!r}\\n")
        return {"y": x * x + 1.0}
    """
)


def _env(tmp_path: Path, tag: str, **extra) -> dict[str, str]:
    (tmp_path / "slowpoint.py").write_text(SLOW_POINT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    env.update(EVAL_LOG=str(tmp_path / "evals.log"), RUN_TAG=tag, **extra)
    env.pop("ATTNPHASE_DEBUG", None)
    return env


def _evaluations(tmp_path: Path, tag: str) -> list[tuple[float, int, float]]:
    """(x, pid, time) of every evaluation logged under `tag`."""
    lines = (tmp_path / "evals.log").read_text().splitlines()
    return [(float(x), int(pid), float(t)) for t_, x, pid, t in (ln.split() for ln in lines if ln.startswith(tag + " "))]


def _stored_count(path: Path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has exited
    except FileNotFoundError:
        return True


def test_sigkill_mid_sweep_then_rerun_completes_without_recomputing(tmp_path):
    store, workers, n_grid = tmp_path / "s.sqlite", 2, 40
    command = [sys.executable, "-c", CLI, "sweep", "slowpoint:point", "--grid", "x=0:3.9:40", "--set", "delay=0.15",
               "--workers", str(workers), "--store", str(store), "--json"]
    driver = subprocess.Popen(command, env=_env(tmp_path, "first"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        deadline = time.time() + 90
        while _stored_count(store) < 8 and driver.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert driver.poll() is None, driver.communicate()
        os.kill(driver.pid, signal.SIGKILL)  # the driver only, as `kill -9 PID` would
        driver.communicate(timeout=30)
        # Its pool workers notice the driver is gone and exit by themselves.
        worker_pids = {pid for _, pid, _ in _evaluations(tmp_path, "first")}
        deadline = time.time() + 10
        while not all(_gone(pid) for pid in worker_pids) and time.time() < deadline:
            time.sleep(0.1)
        assert all(_gone(pid) for pid in worker_pids)
    finally:
        try:
            os.killpg(driver.pid, signal.SIGKILL)  # nothing of the first run may outlive the test
        except ProcessLookupError:
            pass
    first = {x for x, _, _ in _evaluations(tmp_path, "first")}
    with ResultStore(store) as s:
        stored_first = {p.params["x"] for p in s.rows()}
    assert 8 <= len(stored_first) < n_grid and stored_first <= first
    # What the kill lost: at most the window of points submitted and not yet written (2 per worker).
    assert len(first - stored_first) <= 2 * workers

    rerun = subprocess.run(command, env=_env(tmp_path, "second"), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    second = [x for x, _, _ in _evaluations(tmp_path, "second")]
    assert report["n_cached"] == len(stored_first) and report["n_computed"] == n_grid - len(stored_first)
    assert len(second) == report["n_computed"] and not set(second) & stored_first  # no stored point recomputed
    with ResultStore(store) as s:
        rows = s.rows()
        assert s.verify() == []
    xs = [p.params["x"] for p in rows]
    assert sorted(xs) == list(parse_grid("x=0:3.9:40").values)  # complete, no duplicates
    assert all(p.result == {"y": p.params["x"] ** 2 + 1.0} for p in rows)  # no partial rows


def _finished(tmp_path: Path, tag: str) -> set[float]:
    """x of every evaluation logged as finished under `tag`."""
    lines = (tmp_path / "evals.log").read_text().splitlines()
    return {float(line.split()[1]) for line in lines if line.startswith(tag + "-done ")}


def _driver_once_stored(command, env, store, count: int) -> subprocess.Popen:
    """The sweep `command` started as from a terminal (its own process group), returned once `count` points are in
    the store, once it has ended, or after 60 s."""
    driver = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True, preexec_fn=as_from_a_terminal)
    deadline = time.time() + 60
    while _stored_count(store) < count and driver.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    return driver


@pytest.mark.parametrize("signal_number, whole_group, count", [
    (signal.SIGINT, False, 1),   # kill -INT PID: the driver alone
    (signal.SIGINT, False, 2),   # a second one while it stops
    (signal.SIGINT, True, 2),    # Ctrl-C twice at the terminal (the whole process group)
    (signal.SIGTERM, True, 1),   # what SLURM and PBS send at the walltime
], ids=["int", "int-twice", "ctrl-c-twice", "term"])
def test_a_signalled_sweep_keeps_its_finished_points_and_exits_at_once(tmp_path, signal_number, whole_group, count):
    """Points of 0.1 s and of 30 s: once both workers run a 30 s point, a signal stops the sweep within seconds
    (not when the running points end), with every finished point stored, the message that says so, the exit
    status 128 + the signal, no traceback, and no worker left."""
    store = tmp_path / "s.sqlite"
    command = [sys.executable, "-c", CLI, "sweep", "slowpoint:point", "--grid", "x=0,1,2", "--grid", "delay=0.1,30",
               "--workers", "2", "--store", str(store), "--json"]
    # x = 0 and 1 at 0.1 s are stored; the workers are then inside (0, 30 s) and (1, 30 s).
    driver = _driver_once_stored(command, _env(tmp_path, "first"), store, 2)
    try:
        time.sleep(0.5)
        assert driver.poll() is None, driver.communicate()
        for _ in range(count):
            (os.killpg if whole_group else os.kill)(driver.pid, signal_number)
            time.sleep(0.05)
        signalled = time.time()
        _, stderr = driver.communicate(timeout=20)
        stopped_after = time.time() - signalled
    finally:
        try:
            os.killpg(driver.pid, signal.SIGKILL)  # nothing of this run may outlive the test
        except ProcessLookupError:
            pass
    word = "terminated" if signal_number == signal.SIGTERM else "interrupted"
    assert driver.returncode == 128 + signal_number, stderr
    assert stderr == (f"{word}: 2 points finished by this run are in the store {store} (2 of the grid's 6); the same "
                      "command computes the rest\n")
    assert stopped_after < 10
    with ResultStore(store) as s:
        stored = {(p.params["x"], p.params["delay"]) for p in s.rows()}
    assert stored == {(0, 0.1), (1, 0.1)} and {x for x, _ in stored} == _finished(tmp_path, "first")
    worker_pids = {pid for _, pid, _ in _evaluations(tmp_path, "first")}
    deadline = time.time() + 5
    while not all(_gone(pid) for pid in worker_pids) and time.time() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in worker_pids)


def test_ctrl_c_at_a_terminal_reaches_no_worker(tmp_path):
    """Ctrl-C at a terminal signals the whole process group, pool workers included. They never see it (the driver
    stops them), so stderr holds the interruption line only: no KeyboardInterrupt traceback from a worker waiting
    for work (here the one whose 0.1 s point is done) or starting up."""
    store = tmp_path / "s.sqlite"
    command = [sys.executable, "-c", CLI, "sweep", "slowpoint:point", "--grid", "delay=0.1,30", "--set", "x=1",
               "--workers", "2", "--store", str(store)]
    driver = _driver_once_stored(command, _env(tmp_path, "first"), store, 1)
    try:
        assert driver.poll() is None, driver.communicate()
        os.killpg(driver.pid, signal.SIGINT)
        _, stderr = driver.communicate(timeout=20)
    finally:
        try:
            os.killpg(driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert driver.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.startswith("interrupted: ") and stderr.count("\n") == 1, stderr


# The Python API as a notebook would call it (the CLI path is the SIGKILL test's).
_API_DRIVER = textwrap.dedent(
    """
    import dataclasses, json, sys
    from attnphase.sweep import run_sweep
    report = run_sweep("slowpoint:point", [sys.argv[1]], {"delay": 0.03}, store=sys.argv[2], workers=1)
    print(json.dumps(dataclasses.asdict(report)))
    """
)


def _stop_and_collect(processes) -> list[tuple[str, str]]:
    """(stdout, stderr) of every process, killing the ones still running first: `communicate()` on
    a sweep that waits for the go-file would otherwise block forever."""
    for p in processes:
        if p.poll() is None:
            p.kill()
    return [p.communicate(timeout=30) for p in processes]


_OPEN_AND_PUT = textwrap.dedent(
    """
    import os, sys, time
    from attnphase.store import ResultStore
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.001)
    with ResultStore(sys.argv[1]) as store:
        store.put("race", {"k": int(sys.argv[3])}, {"y": float(sys.argv[3])})
    """
)


def test_processes_creating_one_new_store_at_the_same_moment_all_succeed(tmp_path):
    store, go, n = tmp_path / "new.sqlite", tmp_path / "go", 6
    openers = [subprocess.Popen([sys.executable, "-c", _OPEN_AND_PUT, str(store), str(go), str(k)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(n)]
    try:
        time.sleep(3.0)  # let every interpreter start and wait at the go-file
        go.touch()
        outputs = [p.communicate(timeout=120) for p in openers]
    finally:
        _stop_and_collect([p for p in openers if p.poll() is None])
    assert [p.returncode for p in openers] == [0] * n, [err for _, err in outputs]
    with ResultStore(store) as s:
        assert sorted(p.params["k"] for p in s.rows()) == list(range(n))


def test_two_sweeps_on_one_store_at_once_lose_nothing(tmp_path):
    store, go = tmp_path / "s.sqlite", tmp_path / "go"
    grids = ["x=0:2.9:30", "x=1.5:4.4:30"]  # 15 points in common, 45 in all
    sweeps = [
        subprocess.Popen([sys.executable, "-c", _API_DRIVER, grid, str(store)],
                         env=_env(tmp_path, f"run{k}", GO_FILE=str(go)), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for k, grid in enumerate(grids)
    ]
    try:
        deadline = time.time() + 90
        log = tmp_path / "evals.log"
        while time.time() < deadline and (not log.exists() or log.read_text().count("ready") < 2):
            assert all(p.poll() is None for p in sweeps), _stop_and_collect(sweeps)
            time.sleep(0.02)
        go.touch()  # both are now holding their first point: they run at the same time
        outputs = [p.communicate(timeout=120) for p in sweeps]
    finally:
        for p in sweeps:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in sweeps] == [0, 0], [err for _, err in outputs]
    reports = [json.loads(out) for out, _ in outputs]
    assert all(r["n_points"] == r["n_computed"] + r["n_cached"] == 30 and r["n_failed"] == 0 for r in reports)
    # each row is counted as computed by the sweep that stored it, once (each had counted every point it computed)
    assert sum(r["n_computed"] for r in reports) == 45, reports
    spans = [[t for _, _, t in _evaluations(tmp_path, f"run{k}")] for k in range(2)]
    assert max(min(s) for s in spans) < min(max(s) for s in spans)  # the two runs overlapped in time
    expected = set(parse_grid(grids[0]).values) | set(parse_grid(grids[1]).values)
    with ResultStore(store) as s:
        rows = s.rows()
    assert len(rows) == len(expected) == 45
    assert {p.params["x"] for p in rows} == expected
    assert all(p.result == {"y": p.params["x"] ** 2 + 1.0} for p in rows)


def test_a_dask_sweep_without_the_cluster_extra_names_the_extra(tmp_path, monkeypatch):
    """dask is optional: without it, --scheduler fails with the command that installs it (exit 1), and
    nothing else needs it."""
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'attnphase\[cluster\]'"):
        run_sweep("demo", ["beta=1,2"], store=tmp_path / "s.sqlite", scheduler="tcp://127.0.0.1:8786")
    result = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=1,2", "--scheduler", "tcp://127.0.0.1:8786",
                                       "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 1 and "attnphase[cluster]" in result.output and "Traceback" not in result.output
    local = run_sweep("demo", ["beta=1,2"], store=tmp_path / "s.sqlite", workers=1)
    assert local.n_computed == 2


def test_a_sweep_of_your_own_function_needs_its_module_importable(tmp_path, monkeypatch):
    """docs/sweeps.md: `sweep module:function` imports the module by its path; off the import path the sweep stops
    before any point with the import error, on it (PYTHONPATH, here sys.path) it runs."""
    (tmp_path / "s21points.py").write_text("def point(x):\n    return {'y': 2 * x}\n")
    args = ["sweep", "s21points:point", "--grid", "x=0:1:3", "--store", str(tmp_path / "s.sqlite"), "--json"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2 and "can be imported" in out.output and "No module named 's21points'" in out.output
    monkeypatch.syspath_prepend(str(tmp_path))
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    with ResultStore(tmp_path / "s.sqlite") as results:
        assert sorted(r.result["y"] for r in results.rows("s21points:point")) == [0.0, 1.0, 2.0]


def test_a_sweep_says_how_many_workers_ran(tmp_path):
    """Without --workers the parameters echo `null` (not given) and the result says what ran: the CPU count, at most
    one worker per point to compute; none when every point is stored."""
    command = ["sweep", "demo", "--grid", "beta=0.5:2:3", "--store", str(tmp_path / "s.sqlite"), "--json"]
    first = CliRunner().invoke(main, command)
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    expected = min(os.cpu_count() or 1, 3)
    assert report["parameters"]["workers"] is None and report["workers_used"] == expected
    assert report["backend"] == ("serial" if expected == 1 else "processes")
    again = json.loads(CliRunner().invoke(main, command).stdout)
    assert (again["workers_used"], again["backend"]) == (0, "none")


class _StoreSignalledAfterCommit(ResultStore):
    """A store on which a signal arrives just after the third point's row is committed, before `put` returns:
    where an interruption of a sweep of cheap points, whose time is mostly the commit, usually lands."""

    puts = 0
    signal_number = signal.SIGINT

    def put(self, *args, **kwargs):
        stored = super().put(*args, **kwargs)
        self.puts += 1
        if self.puts == 3:
            os.kill(os.getpid(), self.signal_number)
        return stored


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_a_sweep_interrupted_just_after_a_commit_counts_the_point_it_stored(tmp_path, signal_number):
    """The interrupted sweep's report counts every row it wrote: the KeyboardInterrupt of a signal during a point's
    commit was raised before the point was counted (n_computed one below the rows in the store, in 6 of 8
    interruptions of a cheap sweep), also where the signal reached another thread than the main one (a BLAS worker:
    blocking it in the main thread's mask did not defer it), and for SIGTERM as the command line raises it."""
    import threading

    from attnphase.cli.groups import Terminated, _raise_terminated

    idle = threading.Event()
    other = threading.Thread(target=idle.wait, daemon=True)  # a thread that may take the signal
    other.start()
    # as the command line has them (a test runner started in the background can hand down an ignored SIGINT); the
    # SIGTERM handler ignores both once it has run
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
                signal.SIGTERM: signal.signal(signal.SIGTERM, _raise_terminated)}
    started = []
    try:
        with _StoreSignalledAfterCommit(tmp_path / "s.sqlite") as store:
            store.signal_number = signal_number
            with pytest.raises(Terminated if signal_number == signal.SIGTERM else KeyboardInterrupt):
                run_sweep("demo", ["beta=0.5:1:6"], store=store, workers=1, on_start=started.append)
            (report,) = started
            assert report.n_computed == len(list(store.rows())) == 3
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        idle.set()
