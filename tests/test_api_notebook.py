"""The Python API as a notebook user meets it (audit a14): progress, tables, error names, plots."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase import progress
from attnphase.sweep import run_sweep


def test_sweep_follows_the_enclosing_progress_block(tmp_path, capsys):
    """getting-started's notebook recipe `progress.shown(True, terminal_only=False)` draws the sweep's bar too (finding
    1: run_sweep's default reset it to the terminal check); a block that switched it off keeps it off."""
    with progress.shown(True, terminal_only=False):
        run_sweep("demo", {"beta": [0.6, 0.7, 0.8]}, store=tmp_path / "s.sqlite", workers=1)
    assert "sweep demo" in capsys.readouterr().err
    with progress.shown(False, terminal_only=False):
        run_sweep("demo", {"beta": [0.6, 0.9]}, store=tmp_path / "s.sqlite", workers=1)
    assert capsys.readouterr().err == ""
    run_sweep("demo", {"beta": [0.5, 1.0]}, store=tmp_path / "s.sqlite", workers=1)  # no block: stderr is no terminal
    assert capsys.readouterr().err == ""
    assert progress.setting() is None


def test_point_results_table_has_a_row_per_minimum_with_its_values():
    """to_pandas() of a point result (finding 2) was one row of the bookkeeping fields, without a single computed
    value: now one row per minimum, the point's fields repeated, every value and its error a column."""
    from attnphase.api import copy_heads as ch
    from attnphase.models.potts.solve import solve

    potts = solve(3, 2.8)
    frame = potts.to_pandas()
    assert len(frame) == len(potts.minima) == 2
    assert list(frame["beta"]) == [2.8, 2.8] and list(frame["minimum"]) == [0, 1]
    assert list(frame["m"]) == [s.m for s in potts.minima]
    assert list(frame["m_error"]) == [s.m_error for s in potts.minima]
    assert list(frame["stability"]) == ["stable", "metastable"] and set(frame["status"]) == {"converged"}
    assert {"free_energy", "curvature", "transverse_curvature"} <= set(frame.columns)

    copy = ch.solve("linear", 16, 4, 30.0)
    frame = copy.to_pandas()
    assert len(frame) == len(copy.minima) and list(frame["P"]) == [30.0] * len(copy.minima)
    best = frame[frame["minimum"] == copy.global_index].iloc[0]
    assert best["c_copy"] == copy.global_minimum.c_copy and best["action"] == copy.global_minimum.action
    assert best["minimum_error"] == copy.global_minimum.error == best["error"]  # the minimum's own beside the point's
    assert {"c_uniform", "a_copy", "rho", "stable", "loss_gibbs", "loss_mean_predictor"} <= set(frame.columns)


def test_positional_semantic_solve_table_has_a_row_per_branch():
    """A positional-semantic SolveResult (built here: a solve takes a minute) has a row per branch found, its values
    and errors, its own status beside the point's."""
    import numpy as np

    from attnphase.models.positional_semantic.results import BranchSolution, MissingBranch, SolveResult
    from attnphase.results import Status

    def branch(name, q, status):
        return BranchSolution(name, 1.25, q, 0.5, 0.1, 0.2, -0.3, 0.3, 0.4, True, 0.5, status, "", 10, 1e-12, 20,
                              np.zeros(4), errors={"q": 1e-5, "m": 2e-5}, rule="split", checked_on="a, b")

    point = SolveResult((branch("positional", 0.7, Status.CONVERGED), branch("semantic", 0.9, Status.LIMITED)),
                        "semantic", 0.05, 3e-3, Status.LIMITED, "one limited", (MissingBranch("mixed", "not_found",
                                                                                                "not asked"),))
    frame = point.to_pandas()
    assert list(frame["branch"]) == ["positional", "semantic"] and list(frame["q"]) == [0.7, 0.9]
    assert list(frame["q_error"]) == [1e-5, 1e-5] and list(frame["m_error"]) == [2e-5, 2e-5]
    assert list(frame["branch_status"]) == ["converged", "limited"] and list(frame["status"]) == ["limited"] * 2
    assert list(frame["global_branch"]) == ["semantic"] * 2 and list(frame["tol"]) == [3e-3] * 2
    assert {"theta", "V", "test_error", "train_loss", "free_energy", "stable"} <= set(frame.columns)
    empty = SolveResult((), None, 0.05, 3e-3, Status.FAILED, "nothing")
    assert empty.to_pandas().to_dict("records") == [{"global_branch": None, "linear_baseline_test_error": 0.05,
                                                     "tol": 3e-3, "status": "failed", "message": "nothing",
                                                     "success": False}]


def test_run_sweep_errors_name_its_arguments_and_the_command_its_options(tmp_path):
    """Finding 3: run_sweep's grid and base checks said --grid beta, --set bogus to a Python caller; they name the
    arguments now (grid beta, base bogus), and `attnphase sweep` still names the options it was given."""
    import pytest
    from click.testing import CliRunner

    from attnphase.cli import main
    from attnphase.errors import ParameterError

    store = tmp_path / "s.sqlite"
    cases = [({"beta": [float("nan")]}, {"q": 3}, "grid beta", "a list of distinct finite numbers"),
             ({"beta": 2.0}, {"q": 3}, "grid beta", "a list of distinct finite numbers"),
             ({"beta": [2.0]}, {"q": 3, "bogus": 1}, "base bogus", "one of the parameters potts takes"),
             ({"beta": [2.0]}, {}, "base q", "potts requires q, fixed in base or swept by a grid"),
             ({"beta": [2.0], "q": [3]}, {"q": 3}, "base q", "not also swept by a grid"),
             (["beta=2:1:3"], {"q": 3}, "grid beta", "reversed"),
             ({}, {"q": 3}, "grids", "at least one grid")]
    for grids, base, name, rule in cases:
        with pytest.raises(ParameterError) as info:
            run_sweep("potts", grids, base, store=store, workers=1)
        assert info.value.name == name and rule in info.value.allowed, info.value
        assert "--" not in str(info.value), info.value
    for bad, name in ((dict(workers=0), "workers"), (dict(), "model")):
        with pytest.raises(ParameterError) as info:
            run_sweep("potts" if bad else "nosuch", {"beta": [2.0]}, {"q": 3}, store=store, **bad)
        assert info.value.name == name
    assert not store.exists()

    def refusal(*args):
        out = CliRunner().invoke(main, ["sweep", *args, "--store", str(store), "--workers", "1"])
        assert out.exit_code == 2, out.output
        return out.output

    assert "invalid value for --grid beta: 'beta=2:1:3'" in refusal("potts", "--grid", "beta=2:1:3", "--set", "q=3")
    assert "invalid value for --set bogus: 1" in refusal("potts", "--grid", "beta=2", "--set", "q=3",
                                                        "--set", "bogus=1")
    assert "fixed by --set q=VALUE or swept by --grid q=..." in refusal("potts", "--grid", "beta=2")
    assert "invalid value for MODEL: 'nosuch'" in refusal("nosuch", "--grid", "beta=2")


def test_a_list_parameter_given_none_says_a_list_as_an_empty_one_does():
    """Finding 3: ps.phase_curve(None) said "a comma-separated list of numbers", [] "a non-empty list of numbers"."""
    import pytest

    from attnphase.api import positional_semantic as ps
    from attnphase.errors import ParameterError

    for omegas in (None, [], 0.3):
        with pytest.raises(ParameterError) as info:
            ps.phase_curve(omegas)
        assert (info.value.name, info.value.allowed) == ("omegas", "a non-empty list of numbers")


def test_copy_heads_messages_name_options_on_the_command_line_only():
    """Finding 3: a copy-heads solve beyond the solvable range of P said "P (--P) = ..." to a Python caller; the CLI
    keeps its wording ("P (--P)", "tau0 (--tau)"), the API names the parameters as its call does."""
    import json

    from click.testing import CliRunner

    from attnphase.api import copy_heads as ch
    from attnphase.cli import main

    beyond = ch.solve("softmax", 16, 4, 1e200)
    assert beyond.status == "failed" and "; P = 1e+200 lies beyond the range" in beyond.message
    assert "--" not in beyond.message, beyond.message
    hot = ch.solve("softmax", 16, 4, 300.0, convention=ch.DEFAULT.with_(tau0=1e308))
    assert "; tau0 = 1e+308 alone puts them there" in hot.message and "--" not in hot.message, hot.message

    def cli_message(*options):
        out = CliRunner().invoke(main, ["solve", "copy-heads", "--attention", "softmax", "--L", "16", "--V", "4",
                                        *options, "--json"])
        assert out.exit_code == 1, out.output
        return json.loads(out.stdout)["message"]

    assert cli_message("--P", "1e200") == beyond.message.replace("; P = ", "; P (--P) = ")
    assert cli_message("--P", "300", "--tau", "1e308") == hot.message.replace("; tau0 = ", "; tau0 (--tau) = ")


def test_the_linear_thresholds_scales_are_named_as_the_caller_spells_them():
    """The note on which scales are set away from 1 (in a linear threshold's message where no crossover is found
    in the followed range) named the CLI's options to Python callers too."""
    from attnphase.api import copy_heads as ch
    from attnphase.cli.common import declared_options
    from attnphase.cli.copy_heads import DECLARED
    from attnphase.models.copy_heads.homogeneous import options_named
    from attnphase.models.copy_heads.instance import CopyHeadsInstance
    from attnphase.models.copy_heads.linear_transition import scales_away_from_one

    inst = CopyHeadsInstance("linear", 16, 4, ch.DEFAULT.with_(tau0=2.0, s1=0.5))
    assert scales_away_from_one(inst) == " (at tau0 = 2, s1 = 0.5)"
    with options_named(declared_options(*DECLARED)):
        assert scales_away_from_one(inst) == " (at --tau = 2, --s1 = 0.5)"
    assert scales_away_from_one(CopyHeadsInstance("linear", 16, 4, ch.DEFAULT)) == ""


def test_potts_takes_a_numpy_beta_as_its_decimal_as_it_takes_j():
    """Finding 5: numpy.float32(2.8) as β was the binary 2.7999999523 (m off by 7e-8, its error 1e-18), while a
    float32 J is its shortest decimal; finding 8: decimal_coupling(None) was a bare TypeError."""
    import numpy as np
    import pytest

    from attnphase.errors import ParameterError
    from attnphase.models.potts.solve import decimal_coupling, solve

    typed, single = solve(3, 2.8), solve(3, np.float32(2.8))
    assert single.beta == 2.8 and single.as_dict() == typed.as_dict()
    assert solve(3, np.float32(2.8), np.float32(0.5)).as_dict() == solve(3, 2.8, 0.5).as_dict()
    for bad in (None, float("nan"), [0.3]):
        with pytest.raises(ParameterError) as info:
            decimal_coupling(bad)
        assert info.value.name == "J"


def test_plot_helpers_refuse_nothing_to_draw():
    """Finding 6: ps.plot_phase_diagram([]) and plot_order_parameters([]) drew empty axes; they refuse it as
    sr.plot_objective([]) does."""
    import pytest

    from attnphase.api import positional_semantic as ps
    from attnphase.api import signal_recovery as sr
    from attnphase.errors import ParameterError

    for plot, name in ((ps.plot_phase_diagram, "curve"), (ps.plot_order_parameters, "results"),
                       (sr.plot_objective, "curves")):
        with pytest.raises(ParameterError) as info:
            plot([])
        assert info.value.name == name and "non-empty" in info.value.allowed, info.value


def test_the_facade_docstring_lists_solves_default_branches():
    """Finding 7: the module docstring said solve returns the trivial branch too; by default it solves the
    positional and semantic ones (the trivial and mixed ones on request)."""
    import inspect

    from attnphase.api import positional_semantic as ps

    default = inspect.signature(ps.solve).parameters["branches"].default
    assert tuple(default) == ("positional", "semantic")
    entry = " ".join(ps.__doc__.split("* `solve(")[1].split("* `")[0].split())
    assert "the positional (θ = 0) and semantic (m = 0) branches (and the trivial and mixed ones on request" in entry


def test_the_copy_heads_page_maps_the_clis_convention_keys_to_the_fields():
    """Finding 9: the CLI's JSON names the convention by option (tau, score_variance), the API by field (tau0,
    sigma2). Neither is renamed; the copy-heads page says how they map, and the mapping it gives is the code's."""
    import json
    import re
    from pathlib import Path

    from click.testing import CliRunner

    from attnphase.api import copy_heads as ch
    from attnphase.cli import main
    from attnphase.params import option_name

    page = " ".join((Path(__file__).parents[1] / "docs" / "models" / "copy_heads.md").read_text().split())
    conventions = page.split("## Conventions")[1].split("## ")[0]
    sentence = re.search(r"The CLI's `--json` output echoes the convention by option name, [^.]*\.", conventions)
    assert sentence, "the Conventions section says how the CLI's keys map to Convention's fields"
    said = dict(re.findall(r"`(\w+)` is (?:the field )?`(\w+)`", sentence.group(0)))
    declared = ch.Convention.declarations()
    by_option = {option_name(field).lstrip("-").replace("-", "_"): name for name, field in declared.items()}
    assert said == {key: name for key, name in by_option.items() if key != name} == {"tau": "tau0",
                                                                                      "score_variance": "sigma2"}

    out = CliRunner().invoke(main, ["solve", "copy-heads", "--attention", "linear", "--L", "16", "--V", "4", "--P",
                                    "30", "--tau", "2", "--score-variance", "3", "--json"])
    assert out.exit_code == 0, out.output
    echoed = json.loads(out.stdout)["parameters"]["convention"]
    assert set(echoed) == set(by_option)
    renamed = {said.get(key, key): value for key, value in echoed.items()}
    assert ch.Convention.validated(**renamed) == ch.DEFAULT.with_(tau0=2.0, sigma2=3.0)



_BAD_ARGUMENTS = [  # (run_sweep's arguments beside its good ones, the argument named, a part of its rule)
    (dict(grids=None), "grids", "at least one grid"),
    (dict(grids=5), "grids", "at least one grid"),
    (dict(grids={"beta": np.ones((2, 2))}), "grid beta", "an array of one dimension"),
    (dict(grids={"beta": [np.ones(2)]}), "grid beta", "one number each"),
    (dict(store=5), "store", "the path of its file (str or os.PathLike)"),
    (dict(store=b"s.sqlite"), "store", "the path of its file (str or os.PathLike)"),
    (dict(store=""), "store", "an empty one names none"),
    (dict(workers="2"), "workers", "an integer in [1, 1024]"),
    (dict(workers=2.5), "workers", "an integer in [1, 1024]"),
    (dict(progress="yes"), "progress", "True, False, or None"),
    (dict(progress=1), "progress", "True, False, or None"),
    (dict(connect_timeout=-1), "connect_timeout", "(0, inf)"),
    (dict(connect_timeout=float("nan")), "connect_timeout", "(0, inf)"),
    (dict(connect_timeout="30"), "connect_timeout", "(0, inf)"),
    (dict(on_start=5), "on_start", "a function"),
]


@pytest.mark.parametrize("bad, name, rule", _BAD_ARGUMENTS)
def test_run_sweep_refuses_a_bad_argument_naming_it_before_the_store_is_opened(tmp_path, bad, name, rule):
    """Audit b15 D6: grids None or a 2-d array, store 5 or "", workers "2", progress "yes", connect_timeout -1 and
    on_start 5 failed with bare Python errors (numpy's ValueError, pathlib's TypeError, "'int' object is not callable"
    once the store was open) or passed unchecked; each is a ParameterError naming the argument and what it allows,
    before the store is opened."""
    from attnphase.errors import ParameterError

    store = tmp_path / "s.sqlite"
    with pytest.raises(ParameterError) as info:
        run_sweep("potts", base={"q": 3}, **{"grids": {"beta": [2.0]}, "store": store, "workers": 1, **bad})
    assert info.value.name == name and rule in info.value.allowed, info.value
    assert "--" not in str(info.value), info.value
    assert not store.exists()


def test_run_sweep_takes_numpy_numbers_and_flags_and_the_command_names_its_store_option(tmp_path):
    from attnphase.errors import ParameterError
    from attnphase.grids import as_sweep_option_error

    started = []
    report = run_sweep("demo", {"beta": np.array([0.5, 2.0])}, store=tmp_path / "s.sqlite", workers=np.int64(1),
                       progress=np.bool_(False), connect_timeout=np.float64(5.0), on_start=started.append)
    assert report.n_computed == 2 and started == [report]
    assert as_sweep_option_error(ParameterError("store", "", "a file")).name == "--store"
