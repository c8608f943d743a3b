"""Sweeps that stop or fail part way: what they say, what they print with --json, and what they keep."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from click.testing import CliRunner

from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.store import ResultStore

DYING_POINT = textwrap.dedent(
    """
    import os, signal

    def point(x):
        '''y = 2 x; at x = 3 the worker process kills itself (as the out-of-memory killer would), the first time.'''
        marker = os.environ["DIED_ONCE"]
        if x == 3 and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return {"y": 2.0 * x}
    """
)


def _stored_x(store) -> list[float]:
    with ResultStore(store, read_only=True) as results:
        return sorted(point.params["x"] for point in results.rows())


def test_a_worker_that_dies_ends_the_sweep_cleanly_and_the_same_command_computes_the_rest(tmp_path, monkeypatch):
    """A local worker killed mid-sweep: exit 1, one JSON object (status failed) and a message that the finished
    points are in the store and the same command computes the rest; the dead worker's point is not stored, and the
    rerun computes exactly the points missing."""
    (tmp_path / "dying.py").write_text(DYING_POINT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DIED_ONCE", str(tmp_path / "died"))
    store = tmp_path / "s.sqlite"
    command = ["sweep", "dying:point", "--grid", "x=0:19:20", "--workers", "2", "--store", str(store), "--json"]
    first = CliRunner().invoke(main, command)
    assert first.exit_code == 1, first.output
    payload = json.loads(first.stdout)  # exactly one object
    stored = _stored_x(store)
    assert payload["status"] == "failed" and "worker process died" in payload["message"]
    assert 3 not in stored and payload["n_computed"] == len(stored) < 20
    assert first.stderr == f"error: {payload['message']}\n" and "Traceback" not in first.output
    assert f"in the store {store}" in first.stderr and "the same command computes the rest" in first.stderr
    rerun = CliRunner().invoke(main, command)
    assert rerun.exit_code == 0, rerun.output
    report = json.loads(rerun.stdout)
    assert (report["n_cached"], report["n_computed"]) == (len(stored), 20 - len(stored))
    assert _stored_x(store) == list(range(20))


def test_a_script_without_the_main_guard_is_told_so_not_that_a_worker_was_killed(tmp_path):
    """Each local worker process imports the driver's script again as it starts: a script that calls run_sweep at its
    top level (no `if __name__ == "__main__":`) makes every worker fail while starting, and the sweep stops saying
    so, not that a worker was killed by the out-of-memory killer."""
    store = tmp_path / "s.sqlite"
    script = tmp_path / "unguarded.py"
    script.write_text("from attnphase.sweep import run_sweep\n\n"
                      f"run_sweep('demo', {{'beta': [0.5, 1.0, 1.5, 2.0]}}, store={str(store)!r}, workers=2)\n")
    finished = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert finished.returncode == 1 and finished.stdout == ""
    stopped = [line for line in finished.stderr.splitlines() if line.startswith("attnphase.sweep_executors.")]
    assert stopped == [
        "attnphase.sweep_executors.WorkerProcessDied: the worker processes exited with an error as they started, "
        "before running any point (their errors are above, on stderr): most often a script that calls run_sweep at "
        "its top level, which each worker process runs again as it imports the script; make the call under "
        '`if __name__ == "__main__":`'], finished.stderr
    assert "bootstrapping phase" in finished.stderr  # the workers' own errors (multiprocessing's), above it
    assert _stored_x(store) == []


def refusing_point(x):
    """A point function without a declared check: only the point itself refuses x >= 0.6."""
    if x >= 0.6:
        raise ParameterError("x", x, "x < 0.6")
    return {"y": x}


def test_a_point_that_refuses_its_value_stops_the_sweep_and_says_what_was_stored(tmp_path):
    """Exit 2 with the message naming the option (the value is the caller's to fix), and, since the sweep ran, one
    JSON object with --json and the word that the points finished before it are in the store."""
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(main, ["sweep", f"{__name__}:refusing_point", "--grid", "x=0:1:11", "--workers", "1",
                                       "--store", str(store), "--json"])
    assert result.exit_code == 2, result.output
    error = result.stderr.splitlines()  # one line, as a refusal before the run: no usage lines (docs/cli.md)
    assert error == [f"Error: invalid value for --grid x: 0.6 (allowed: x < 0.6); the sweep stopped there: 6 points "
                     f"finished by this run are in the store {store} (6 of the grid's 11)"]
    payload = json.loads(result.stdout)
    assert (payload["status"], payload["n_computed"], payload["store"]) == ("failed", 6, str(store))
    assert payload["message"] == error[0].removeprefix("Error: ")
    assert _stored_x(store) == [0, 0.1, 0.2, 0.3, 0.4, 0.5]


def diverging_point(x, z):
    """Fails for x > 0.4, at every z."""
    if x > 0.4:
        raise ValueError(f"diverged at x={x}")
    return {"y": x * z}


def test_the_failure_table_shows_each_failed_point_and_says_when_the_list_is_cut(tmp_path):
    """The text table names every failed point by its values (z=1 and z=2 apart), not as "2 fields"; past the first
    20 failures the list is cut, and both outputs say so."""
    store = str(tmp_path / "s.sqlite")
    model = f"{__name__}:diverging_point"
    text = CliRunner().invoke(main, ["sweep", model, "--grid", "x=0:1:5", "--grid", "z=1,2", "--workers", "1",
                                     "--store", store])
    assert text.exit_code == 1, text.output
    assert "2 fields" not in text.stdout
    for x in ("0.5", "0.75", "1.0"):
        for z in (1, 2):
            assert f"x={x}, z={z}" in text.stdout
    assert text.stderr == "6 point(s) failed and were not stored; the same command computes only these again\n"
    many = CliRunner().invoke(main, ["sweep", model, "--grid", "x=0.5:1:24", "--grid", "z=1,2", "--workers", "1",
                                     "--store", store, "--json"])
    payload = json.loads(many.stdout)
    assert (payload["n_failed"], payload["n_failures_listed"], len(payload["failures"])) == (48, 20, 20)
    assert payload["failures"][0]["params"] == {"x": 0.5, "z": 1}
    assert many.stderr == ("48 point(s) failed and were not stored (the first 20 of 48 are listed); the same command "
                           "computes only these again\n")
