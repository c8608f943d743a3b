"""A rerun of a quick report by the same code computes nothing again: every theory curve, scan and simulation of the
first run is read back from the report directory, and the report is the same but for its run time. What
`attnphase reproduce` says of it on the way, in a pipe."""

from __future__ import annotations

import json
import re

import pytest


def _refuse(name):
    def refused(*args, **kwargs):
        raise AssertionError(f"{name} was computed again on a rerun")

    return refused


def _without_run_time(text: str) -> str:
    return re.sub(r"(Run time|Total time|wall time) \d+ s", r"\1 (elided)", text)


@pytest.mark.slow  # each report runs once in full (30 s to 2.5 minutes on 2 idle cores)
@pytest.mark.parametrize("model, expensive", [
    ("copy_heads", ["solve", "scaling", "scaling_in_V", "convention_table", "threshold", "simulate_sweep",
                    "linear_posterior_means", "simulate_hysteresis", "softmax_mean_field_window",
                    "softmax_row_mean_field", "softmax_finite_data_correction"]),
    ("signal_recovery", ["curve", "simulate", "sweep_point", "predicted_trajectories"]),
    # the phase curve reads its thresholds back itself (its checkpoint directory in the report directory)
    ("positional_semantic", ["solve_along", "simulate"]),
])
def test_a_rerun_reads_back_every_piece(tmp_path, monkeypatch, model, expensive):
    import importlib

    report = importlib.import_module(f"attnphase.reproduce.{model}")
    api = importlib.import_module(f"attnphase.api.{model}")
    import attnphase.resume as resume

    report.run(tmp_path, quick=True, device="cpu")
    first = (tmp_path / "report.md").read_text()
    resume.take_tally()
    monkeypatch.setattr(resume, "_kept_here", set())  # the rerun as a new process: the pieces are an earlier run's
    for name in expensive:
        monkeypatch.setattr(api, name, _refuse(name))
    from attnphase.reproduce.read_back import counting

    said = []
    with counting(said.append) as counts:  # as `reproduce` counts what it read back
        report.run(tmp_path, quick=True, device="cpu")
    assert _without_run_time((tmp_path / "report.md").read_text()) == _without_run_time(first)
    assert counts["read_back"] > 0 and counts["other_version"] == 0, counts
    assert said == []  # nothing computed, so no "computing" line on the way (the count comes when the model is done)


def _pipeline(out_dir, quick, device="auto"):
    """A report's pieces as the pipelines keep them: two by `computed_once`, one GD run by `cached_runner`, and a
    third `computed_once` piece only on a rerun (the piece an interrupted run had not reached)."""
    from attnphase.reproduce.positional_semantic_gd import cached_runner
    from attnphase.reproduce.read_back import computed_once

    rerun = (out_dir / "a.json").exists()
    for name in ("a", "b") + (("c",) if rerun else ()):
        computed_once(out_dir / f"{name}.json", lambda name=name: {"piece": name})
    cached_runner(out_dir / "gd_runs", lambda *arguments: {"m": [0.25], "d": 20})(1.0, 20, "semantic", 1, 10, 10, 0,
                                                                                 device)
    return {"pieces": 3 if rerun else 2}


def test_reproduce_says_in_a_pipe_when_a_model_computes_and_what_it_read_back_so_far(tmp_path, monkeypatch):
    """Audit r12 F4: without a progress bar (stderr not a terminal) and without --json, `reproduce` says when a model
    starts computing and, each time it goes on to compute after reading kept pieces, how many it read back so far
    (`resume.take_tally`, plus the GD runs `cached_runner` reads), so a run stopped before the model finishes has
    said both; the count at the end includes every piece. --json: no log line, the count in `read_back`. About 2 s
    (a stand-in pipeline)."""
    from click.testing import CliRunner

    import attnphase.cli.reproduce as reproduce_cli
    import attnphase.resume as resume
    from attnphase.cli import main

    monkeypatch.setattr(reproduce_cli, "run_model", lambda name, out_dir, **kwargs: _pipeline(out_dir, **kwargs))
    out = tmp_path / "reports"
    out.mkdir()
    first = CliRunner().invoke(main, ["reproduce", "potts", "--out", str(out)])
    assert first.exit_code == 0, first.output
    logged = [line for line in first.stderr.splitlines() if line.startswith("[reproduce]")]
    assert logged[0] == "[reproduce] potts (quick): computing; nothing kept by an earlier run read back"
    assert re.fullmatch(r"\[reproduce\] potts done in \d+\.\d s", logged[1]) and len(logged) == 2

    monkeypatch.setattr(resume, "_kept_here", set())  # the rerun as a new process
    again = CliRunner().invoke(main, ["reproduce", "potts", "--out", str(out)])
    logged = [line for line in again.stderr.splitlines() if line.startswith("[reproduce]")]
    assert logged[0] == "[reproduce] potts (quick): computing; read back 2 pieces kept by an earlier run so far"
    assert logged[2] == "[reproduce] potts: read back 3 pieces kept by an earlier run" and len(logged) == 3

    monkeypatch.setattr(resume, "_kept_here", set())
    as_json = CliRunner().invoke(main, ["reproduce", "potts", "--out", str(out), "--json"])
    assert "[reproduce]" not in as_json.stderr
    assert json.loads(as_json.stdout)["read_back"] == {"potts": {"read_back": 4, "other_version": 0}}


def test_a_report_file_is_replaced_whole_or_not_at_all(tmp_path):
    """A CSV, figure or text whose writing fails (as an interruption or a full disk stops it) leaves the file it was
    replacing as it was and no partial sibling: the CSV that an interrupted rerun truncated ended on a whole line
    and looked complete."""
    import matplotlib.pyplot as plt

    from pathlib import Path

    from attnphase.report import Report, save_figure, write_csv, write_text

    class Unprintable:
        def __str__(self):
            raise KeyboardInterrupt  # the interruption, at the third row

    path = tmp_path / "data.csv"
    write_csv(path, [{"x": i, "y": i * i} for i in range(5)])
    before = path.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        write_csv(path, [{"x": 0, "y": 0}, {"x": 1, "y": 1}, {"x": Unprintable(), "y": 4}])
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]

    figure_path = tmp_path / "figure.png"
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, figure_path)
    drawn = figure_path.read_bytes()
    assert drawn.startswith(b"\x89PNG")

    def interrupted_while_writing(figure, target, **options):
        with open(target, "wb") as handle:
            handle.write(b"\x89PNG")  # a few bytes out, then the interruption
        raise KeyboardInterrupt

    fig, ax = plt.subplots()
    fig.savefig = interrupted_while_writing.__get__(fig)
    with pytest.raises(KeyboardInterrupt):
        save_figure(fig, figure_path)
    assert figure_path.read_bytes() == drawn and not list(tmp_path.glob("*.partial"))

    write_text(tmp_path / "report.md", "# earlier\n")
    real_write_text = Path.write_text

    def write_three_characters_then_stop(target, text, *args, **kwargs):
        real_write_text(target, text[:3], *args, **kwargs)
        raise KeyboardInterrupt

    report = Report(tmp_path, "a report")
    Path.write_text = write_three_characters_then_stop
    try:
        with pytest.raises(KeyboardInterrupt):
            report.write()
    finally:
        Path.write_text = real_write_text
    assert (tmp_path / "report.md").read_text() == "# earlier\n" and not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("model", ["potts", "copy-heads"])
def test_a_model_interrupted_on_a_rerun_is_left_without_the_earlier_runs_report(tmp_path, monkeypatch, model):
    """`reproduce` into a directory that holds an earlier report: the model's report.md (in the directory named
    after the model with underscores) goes when the model starts (its pipeline writes the new one last), so an
    interrupted rerun does not leave the earlier report.md beside the rerun's first files, as it did (a 15-digit
    report over a 30-digit thresholds.csv)."""
    from attnphase import reproduce
    from attnphase.models.registry import get

    model_dir = tmp_path / get(model).derivation_stem
    model_dir.mkdir()
    (model_dir / "report.md").write_text("# earlier\n")
    (model_dir / "data.csv").write_text("x\n1\n")

    class Interrupted:
        @staticmethod
        def run(out_dir, quick, device="auto"):
            assert out_dir == model_dir and not (out_dir / "report.md").exists()  # gone before anything is written
            raise KeyboardInterrupt

    monkeypatch.setattr(reproduce, "load", lambda pipeline: Interrupted)
    with pytest.raises(KeyboardInterrupt):
        reproduce.run_model(model, tmp_path, quick=True)
    assert not (model_dir / "report.md").exists() and (model_dir / "data.csv").exists()


def test_a_rerun_of_the_potts_report_writes_its_own_report(tmp_path):
    """The report.md removed at the start is written again by a run that finishes."""
    from attnphase import reproduce

    reproduce.run_model("potts", tmp_path, quick=True)
    reproduce.run_model("potts", tmp_path, quick=True)
    assert (tmp_path / "potts" / "report.md").read_text().startswith("# Mean-field q-state Potts model")
