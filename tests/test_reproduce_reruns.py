"""A rerun of a quick report by the same code computes nothing again: every theory curve, scan and simulation of the
first run is read back from the report directory, and the report is the same but for its run time."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow  # each report runs once in full (30 s to 2.5 minutes on 2 idle cores)


def _refuse(name):
    def refused(*args, **kwargs):
        raise AssertionError(f"{name} was computed again on a rerun")

    return refused


def _without_run_time(text: str) -> str:
    return re.sub(r"(Run time|Total time|wall time) \d+ s", r"\1 (elided)", text)


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
    report.run(tmp_path, quick=True, device="cpu")
    assert _without_run_time((tmp_path / "report.md").read_text()) == _without_run_time(first)
    counts = resume.take_tally()  # what `reproduce` says it read back
    assert counts["read_back"] > 0 and counts["other_version"] == 0, counts
