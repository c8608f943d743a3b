"""A sweep's parameters are checked before any point runs: names against the point function's signature,
required parameters given, and values against the ranges the model declares. Bad input is exit status 2
naming the option (--grid NAME or --set NAME), never points "failed and were not stored"."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.grids import grid_points, parse_grid
from attnphase.store import ResultStore
from attnphase.sweep import POINT_CHECKS, SWEEP_POINTS, check_sweep_parameters, run_sweep


def _any_parameters_point(**params):
    """Test point function that takes any parameters."""
    return {"n_parameters": len(params)}


def _needs_x_point(x, scale=1.0):
    """Test point function with a required parameter and an optional one."""
    return {"y": scale * x}


def _sweep(tmp_path, *args):
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(main, ["sweep", *args, "--workers", "1", "--store", str(store), "--json"])
    return result, store


def _refused(tmp_path, *args):
    """Run a sweep that must be refused as bad input: exit 2, no report, no traceback, no store written."""
    result, store = _sweep(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and "Traceback" not in result.stderr and "rerun" not in result.stderr
    assert not store.exists()  # refused before the store was opened
    return result.stderr


@pytest.mark.parametrize("args, named", [
    (["demo", "--grid", "nosuch=1,2"], "--grid nosuch"),
    (["demo", "--grid", "beta=1,2", "--set", "nosuch=1"], "--set nosuch"),
    (["positional-semantic", "--grid", "alpha=1,2", "--set", "omega=0.3", "--set", "branches=foo"], "--set branches"),
    (["signal-recovery", "--grid", "rho=0,0.5", "--set", "d=8"], "--grid rho"),
])
def test_a_name_the_point_function_does_not_take_is_refused_with_the_names_it_takes(tmp_path, args, named):
    stderr = _refused(tmp_path, *args)
    assert named in stderr and "one of the parameters" in stderr
    if args[0] == "demo":
        assert "required beta; optional h" in stderr


def test_a_convention_field_of_copy_heads_is_a_name_it_takes_and_anything_else_is_refused(tmp_path):
    stderr = _refused(tmp_path, "copy-heads", "--grid", "P=10,20", "--set", "nosuch=3")
    assert "--set nosuch" in stderr and "attention, L, V, P" in stderr and "boundary" in stderr
    stderr = _refused(tmp_path, "copy-heads", "--grid", "P=10,20", "--set", "boundary=foo")
    assert "--set boundary" in stderr and "'periodic'" in stderr


def test_a_set_value_is_read_as_its_declared_type_and_the_copy_heads_defaults_are_in_the_key(tmp_path):
    """docs/sweeps.md: a flag's --set VALUE is a bool (true/false/True/False/1/0), a text parameter's VALUE stays
    text (linear_scale=1 is the choice '1'), and a copy-heads convention field given at its default is the point
    computed without it (one stored row)."""
    from attnphase.grids import parse_setting

    defaults = {"bias": True, "linear_scale": "1/L", "beta": 1.0}
    for text, flag in (("false", False), ("False", False), ("0", False), ("true", True), ("True", True), ("1", True)):
        assert parse_setting(f"bias={text}", defaults) == ("bias", flag)
    assert parse_setting("linear_scale=1", defaults) == ("linear_scale", "1")
    assert parse_setting("beta=1", defaults) == ("beta", 1) and parse_setting("linear_scale=1") == ("linear_scale", 1)
    with pytest.raises(ParameterError, match="true or false") as info:
        parse_setting("bias=maybe", defaults)
    assert info.value.name == "--set bias"

    base = ["sweep", "copy-heads", "--grid", "P=50,100", "--set", "attention=linear", "--set", "L=4", "--set", "V=2"]
    store = tmp_path / "s.sqlite"

    def sweep(*settings):
        result = CliRunner().invoke(main, [*base, *settings, "--workers", "1", "--store", str(store), "--json"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        return report["n_cached"], report["n_computed"]

    assert sweep("--set", "bias=false") == (0, 2)
    assert sweep("--set", "bias=0") == (2, 0)
    assert sweep("--set", "linear_scale=1") == (0, 2)
    assert sweep() == (0, 2)
    assert sweep("--set", "beta=1", "--set", "bias=True", "--set", "linear_scale=1/L") == (2, 0)  # the defaults
    with ResultStore(store) as s:
        rows = s.rows("copy-heads")
    assert len(rows) == 6 and all(len(row.params) == 18 for row in rows)  # attention, L, V, P and 14 conventions
    assert sorted((row.params["bias"], row.params["linear_scale"]) for row in rows) == [
        (False, "1/L")] * 2 + [(True, "1")] * 2 + [(True, "1/L")] * 2


def test_a_name_spelled_as_another_commands_option_is_refused_with_the_sweeps_name(tmp_path):
    """copy-heads' --tau (solve, threshold, scaling) is the sweep parameter tau0: the refusal says so."""
    stderr = _refused(tmp_path, "copy-heads", "--grid", "P=10,20", "--set", "tau=2")
    assert "--set tau" in stderr and "did you mean tau0?" in stderr


@pytest.mark.parametrize("args, missing", [
    (["potts", "--grid", "beta=1,2"], "q"),
    (["signal-recovery", "--grid", "theta=0,0.5", "--set", "d=8", "--set", "L=4"], "R"),
    ([f"{__name__}:_needs_x_point", "--grid", "scale=1,2"], "x"),
])
def test_a_required_parameter_given_by_neither_option_is_refused(tmp_path, args, missing):
    stderr = _refused(tmp_path, *args)
    assert f"--set {missing}" in stderr and f"--grid {missing}=" in stderr and "requires" in stderr


def test_every_missing_required_parameter_is_named_at_once(tmp_path):
    """signal-recovery without d, L, R: the first named as the option to give, the others listed in the same
    refusal (it named d alone, so three runs found them one by one)."""
    stderr = _refused(tmp_path, "signal-recovery", "--grid", "theta=1")
    assert "--set d" in stderr and "(missing too: L, R)" in stderr


@pytest.mark.parametrize("args, named, allowed", [
    (["potts", "--grid", "beta=1,2", "--set", "q=1"], "--set q", "[2, 500]"),
    (["demo", "--grid", "beta=2,-1"], "--grid beta", "(0, inf)"),  # the first point is fine: still nothing runs
    (["positional-semantic", "--grid", "alpha=1,2", "--set", "omega=1.5"], "--set omega", "[0, 1]"),
    (["copy-heads", "--grid", "P=10,-20"], "--grid P", "(0, inf)"),
    (["copy-heads", "--grid", "L=0,16"], "--grid L", "[2, 2^256]"),  # not its 78 digits
])
def test_a_value_outside_the_declared_range_is_refused_before_any_point(tmp_path, args, named, allowed):
    stderr = _refused(tmp_path, *args)
    assert f"invalid value for {named}" in stderr and allowed in stderr


def test_a_function_with_kwargs_takes_any_name(tmp_path):
    result, store = _sweep(tmp_path, f"{__name__}:_any_parameters_point", "--grid", "whatever=1,2",
                           "--set", "label=run-a")
    assert result.exit_code == 0, result.output
    with ResultStore(store) as s:
        assert sorted(p.result["n_parameters"] for p in s.rows()) == [2, 2]


def test_the_api_names_the_grid_for_a_name_and_the_parameter_for_a_value(tmp_path):
    with pytest.raises(ParameterError) as info:
        run_sweep("demo", ["nosuch=1,2"], store=tmp_path / "s.sqlite", workers=2)
    assert info.value.name == "grid nosuch"
    with pytest.raises(ParameterError) as info:
        run_sweep("demo", {"beta": [1.0, -1.0]}, store=tmp_path / "s.sqlite", workers=2)
    assert (info.value.name, info.value.value) == ("beta", -1.0)
    assert not (tmp_path / "s.sqlite").exists()


def test_the_checks_come_before_the_scheduler_is_reached(tmp_path):
    # Nothing listens on port 1: reaching it would be a --scheduler error, not one about the parameters.
    for grids, named in ((["nosuch=1,2"], "grid nosuch"), (["beta=-1,1"], "beta")):
        with pytest.raises(ParameterError) as info:
            run_sweep("demo", grids, store=tmp_path / "s.sqlite", scheduler="tcp://127.0.0.1:1", connect_timeout=1)
        assert info.value.name == named
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize("model, grid, base", [
    ("demo", "beta=0.5,2", {}),
    ("potts", "beta=1,3", {"q": 3}),
    ("positional-semantic", "alpha=0.5,2", {"omega": 0.3}),
    ("signal-recovery", "theta=0,2", {"d": 8, "L": 4, "R": 2, "trials": 2}),
    ("copy-heads", "P=10,200", {"boundary": "causal", "L": 4}),
])
def test_every_registered_model_has_a_check_that_passes_valid_points(model, grid, base):
    assert SWEEP_POINTS[model] in POINT_CHECKS
    grids = [parse_grid(grid)]
    check_sweep_parameters(model, grids, base, grid_points(grids, base))


@pytest.mark.parametrize("args", [
    ["sweep", "positional-semantic", "--help"],
    ["sweep", "--grid", "alpha=1,2", "--workers", "1", "positional-semantic", "-h"],  # the model after options
])
def test_sweep_model_help_lists_the_parameters_the_model_takes(args):
    """A model's parameters are not options of `sweep`: its --help after MODEL lists them, required and optional
    with the defaults its point function declares (the ones a sweep fills into a point's key)."""
    from attnphase.models.positional_semantic.rules import FIELD_TOL

    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    listed = result.output.split("Parameters of positional-semantic", 1)[1]
    rows = {line.split()[0]: line.split(None, 1)[1] for line in listed.splitlines()[1:] if line.startswith("  ")
            and len(line.split()) > 1 and not line.startswith("   ")}
    assert rows["omega"].startswith("required") and rows["alpha"].startswith("required")
    assert rows["tol"] == f"default {FIELD_TOL!r}" and rows["L"] == "default 2"


def test_sweep_help_for_an_unknown_model_says_which_models_there_are():
    result = CliRunner().invoke(main, ["sweep", "nosuch", "--help"])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert "invalid value for MODEL: 'nosuch'" in result.output and "potts" in result.output
    assert "Parameters of" not in CliRunner().invoke(main, ["sweep", "--help"]).output


def test_a_number_given_as_text_in_base_is_refused_where_the_model_takes_a_number(tmp_path):
    """Audit b15 D6: {"q": "3"} passed potts' check (which reads text as a number) and stored the point under the key
    q "3", beside the one of q 3: a second copy of it. It is refused naming base q and the model's range, before the
    store is opened; text stays text where the model's parameter is text (copy-heads' linear_scale, whose choice '1'
    reads as a number) and where the point function has no check (a researcher's own)."""
    result, store = _sweep(tmp_path, "potts", "--grid", "beta=1", "--set", "q=3")  # the command's --set reads 3
    assert result.exit_code == 0, result.output
    for model, grids, base, name, allowed in (
        ("potts", {"beta": [1.0]}, {"q": "3"}, "base q", "an integer in [2, 500], given as a number: 3, not the text "
                                                         "'3'"),
        ("copy-heads", {"P": [50.0]}, {"attention": "linear", "L": 4, "V": 2, "beta": "2.5"}, "base beta",
         "(0, inf), given as a number: 2.5, not the text '2.5'"),
        ("signal-recovery", {"theta": [0.0]}, {"d": "8", "L": 4, "R": 2}, "base d", "given as a number: 8,"),
    ):
        with pytest.raises(ParameterError) as info:
            run_sweep(model, grids, base, store=store, workers=1)
        assert info.value.name == name and allowed in info.value.allowed, info.value
    with ResultStore(store) as results:
        assert [row.params for row in results.rows()] == [{"J": 1, "beta": 1, "q": 3}]  # one copy of the point

    grids = [parse_grid("P=50,100")]
    base = {"attention": "linear", "L": 4, "V": 2, "linear_scale": "1"}
    check_sweep_parameters("copy-heads", grids, base, grid_points(grids, base))  # the choice '1': text
    report = run_sweep(f"{__name__}:_any_parameters_point", {"x": [1]}, {"label": "3"}, store=store, workers=1)
    assert report.n_computed == 1


def test_a_range_grid_states_one_range_of_num():
    """Audit b15 D7: NUM 1e308 was said to be "an integer >= 1", NUM 0 or 100000000 "an integer in [1, 1000000]"; a
    NUM of 5000 digits raised int()'s ValueError (over 4300 digits)."""
    for spec in ("beta=1:2:1e308", "beta=1:2:0", "beta=1:2:100000000", "beta=1:2:x", "beta=1:2:" + "1" * 5000,
                 "beta=1:2:-0001"):
        with pytest.raises(ParameterError) as info:
            parse_grid(spec)
        assert info.value.allowed.startswith("NUM is an integer in [1, 1000000];"), info.value
