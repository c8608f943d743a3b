"""report.Checkpoint: finished pieces of a long report survive an interruption."""

import math
import os
import signal
import subprocess
import sys

from attnphase.report import Checkpoint


def test_pieces_are_read_back_with_nan_for_non_finite(tmp_path):
    path = tmp_path / "pieces.json"
    first = Checkpoint(path)
    assert first.get("omega=0.1") is None
    first.put("omega=0.1", {"alpha_c": 0.7515, "alpha_c_error": 0.0008, "alpha_l": float("nan"), "status": "converged"})
    reopened = Checkpoint(path).get("omega=0.1")
    assert reopened["alpha_c"] == 0.7515 and reopened["status"] == "converged"
    assert math.isnan(reopened["alpha_l"])
    assert not list(tmp_path.glob("*.partial"))


def test_a_kill_between_pieces_keeps_every_finished_piece(tmp_path):
    """A process that stores pieces and is SIGKILLed: every piece stored before the kill is there."""
    path = tmp_path / "pieces.json"
    code = (
        "import sys, time\n"
        "from attnphase.report import Checkpoint\n"
        f"c = Checkpoint({str(path)!r})\n"
        "for i in range(10**6):\n"
        "    c.put(f'piece {i}', {'value': float(i)})\n"
        "    print(i, flush=True)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    announced = [int(process.stdout.readline()) for _ in range(50)]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    stored = Checkpoint(path)
    for i in announced:
        assert stored.get(f"piece {i}") == {"value": float(i)}


def test_computed_once_reads_back_the_exact_object_and_survives_an_interruption(tmp_path):
    """The first call computes and stores; later calls return an equal object without computing; a
    computation interrupted before it returns leaves nothing behind, so the next call computes again."""
    import numpy as np
    import pytest

    from attnphase.report import computed_once

    path = tmp_path / "pieces" / "chains.pickle"
    calls = []

    def compute():
        calls.append(1)
        return {"c_trace": np.arange(5.0), "barrier": None, "sem": float("nan")}

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        computed_once(path, interrupted)
    assert not path.exists() and not list(tmp_path.rglob("*.partial"))
    first = computed_once(path, compute)
    again = computed_once(path, compute)
    assert len(calls) == 1
    assert np.array_equal(again["c_trace"], first["c_trace"]) and again["barrier"] is None
    assert math.isnan(again["sem"])
