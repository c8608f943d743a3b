"""The Python API as a notebook user meets it (audit a14): progress, tables, error names, plots."""

from __future__ import annotations

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
