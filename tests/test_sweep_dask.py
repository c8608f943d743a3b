"""The same sweep on a real dask.distributed cluster (loopback TCP) gives the serial numbers exactly."""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from distributed import Client, LocalCluster

from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.store import ResultStore
from attnphase.sweep import run_sweep


GRIDS = ["beta=0.5:2.5:9", "h=0,0.05,-0.2"]


@pytest.fixture(scope="module")
def cluster():
    """A scheduler and one two-thread worker in this process, talking TCP on 127.0.0.1."""
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, protocol="tcp", host="127.0.0.1",
        dashboard_address=None,
    ) as local:
        yield local


def _results(path):
    with ResultStore(path) as store:
        return {tuple(sorted(p.params.items())): p.result for p in store.rows()}


def test_dask_sweep_matches_serial_and_resumes(tmp_path, cluster):
    address = cluster.scheduler_address
    assert address.startswith("tcp://127.0.0.1:")
    serial = run_sweep("demo", GRIDS, store=tmp_path / "serial.sqlite", workers=1)
    on_dask = run_sweep("demo", GRIDS, store=tmp_path / "dask.sqlite", scheduler=address)
    assert (on_dask.backend, on_dask.workers, on_dask.n_computed, on_dask.n_failed) == ("dask", 2, 27, 0)
    assert serial.n_computed == 27
    serial_results, dask_results = _results(tmp_path / "serial.sqlite"), _results(tmp_path / "dask.sqlite")
    assert len(dask_results) == 27
    assert dask_results == serial_results  # bit-for-bit: same code, same inputs
    # Rerunning on the cluster (through the CLI) finds every point stored.
    rerun = CliRunner().invoke(main, ["sweep", "demo", *sum((["--grid", g] for g in GRIDS), []),
                                      "--scheduler", address, "--store", str(tmp_path / "dask.sqlite"), "--json"])
    assert rerun.exit_code == 0, rerun.output
    payload = json.loads(rerun.stdout)
    assert (payload["n_cached"], payload["n_computed"]) == (27, 0)
    # Extending the grid computes only the new points, on the cluster.
    wider = run_sweep("demo", ["beta=0.5:2.5:9", "h=0,0.05,-0.2,0.3"], store=tmp_path / "dask.sqlite",
                      scheduler=address)
    assert (wider.n_cached, wider.n_computed, wider.backend) == (27, 9, "dask")


def test_bad_parameters_on_dask_stop_the_sweep(tmp_path, cluster):
    with pytest.raises(ParameterError) as info:
        run_sweep("demo", ["beta=-1,1"], store=tmp_path / "s.sqlite", scheduler=cluster.scheduler_address)
    assert info.value.name == "beta"


def test_unreachable_or_malformed_scheduler_is_a_parameter_error_that_leaves_no_store(tmp_path):
    with socket.socket() as probe:  # a loopback port with nothing listening on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for address in (f"tcp://127.0.0.1:{port}", "nonsense::address"):
        with pytest.raises(ParameterError) as info:
            run_sweep("demo", ["beta=1,2"], store=tmp_path / "s.sqlite", scheduler=address, connect_timeout=1)
        assert info.value.name == "scheduler" and "dask scheduler" in info.value.allowed
    assert list(tmp_path.iterdir()) == []
    # the command names its option where run_sweep names its argument
    refused = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=1,2", "--scheduler", "nonsense::address",
                                        "--store", str(tmp_path / "s.sqlite")])
    assert refused.exit_code == 2 and "Error: invalid value for --scheduler: 'nonsense::address'" in refused.stderr


def test_a_failed_connection_leaves_no_client_to_close_itself_later(tmp_path):
    """A Client that failed to connect and is closed later by the garbage collector can run its close while another
    Client starts, and distributed then deadlocks on its loop lock (a retried sweep hung). No such Client is left."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gc.collect()
    gc.disable()  # what is left must be left by the failed connection, not collected by chance before the count
    # (type(), not isinstance: gc.get_objects() holds weak proxies, and isinstance on a dead one raises)
    try:
        before = sum(type(obj) is Client for obj in gc.get_objects())
        with pytest.raises(ParameterError):
            run_sweep("demo", ["beta=1,2"], store=tmp_path / "s.sqlite", scheduler=f"tcp://127.0.0.1:{port}",
                      connect_timeout=1)
        assert sum(type(obj) is Client for obj in gc.get_objects()) == before
    finally:
        gc.enable()


def test_a_worker_that_kept_the_code_from_before_an_edit_stores_nothing(tmp_path, cluster, monkeypatch):
    """docs/sweeps.md: results of other code are never reused. A dask worker keeps the module it imported first
    (this cluster's worker runs in this process, and keeps it as a worker process does): after an edit of the
    file, its results of the old code are refused, not stored under the edited file's version, and the message
    says to restart the workers."""
    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "workerpoints.py"
    module.write_text("def point(x):\n    return {'y': x * x}\n")
    store, address = tmp_path / "s.sqlite", cluster.scheduler_address
    try:
        first = run_sweep("workerpoints:point", ["x=1:4:4"], store=store, scheduler=address)
        assert (first.backend, first.n_computed) == ("dask", 4)
        module.write_text("def point(x):\n    return {'y': x * x + 1000.0}\n")
        stale = run_sweep("workerpoints:point", ["x=1:6:6"], store=store, scheduler=address)
    finally:
        sys.modules.pop("workerpoints", None)
    assert stale.version != first.version and (stale.n_computed, stale.n_failed) == (0, 6)
    assert all("restart the dask workers" in failure.error for failure in stale.failures)
    with ResultStore(store) as results:
        assert results.rows(version=stale.version) == []


SCENARIO = Path(__file__).with_name("dask_kill_scenario.py")


def _run_scenario(store_path: Path, n_points: int, limit: float = 240.0) -> tuple[str, str]:
    """(stdout, stderr) of tests/dask_kill_scenario.py; on `limit` its whole process group (the cluster's
    worker processes included) is killed."""
    process = subprocess.Popen([sys.executable, str(SCENARIO), str(store_path), str(n_points)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        return process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        return stdout, stderr + f"\n(killed after {limit:g} s)"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # nothing it started may outlive the test
        except ProcessLookupError:
            pass


def test_a_sweep_survives_a_worker_process_killed_mid_run(tmp_path):
    """Two worker processes; one is SIGKILLed while points are in flight. The scheduler reruns its
    points elsewhere (the nanny restarts it), and every point ends in the store exactly once.

    The cluster runs in a child process, bounded in time. dask gives its event loop a fixed 10 s to start
    (distributed.utils.LoopRunner); with the other test worker keeping both cores busy it once did not, so a
    cluster that never came up is started once more. Anything after "cluster up" is the sweep's and counts."""
    n_points = 16
    for attempt in range(2):
        store_path = tmp_path / f"kill{attempt}.sqlite"
        stdout, stderr = _run_scenario(store_path, n_points)
        if "cluster up" in stdout:
            break
    assert "cluster up" in stdout, stderr[-4000:]
    outcome = json.loads(stdout.splitlines()[-1]) if stdout.rstrip().endswith("}") else {"error": stderr[-4000:]}
    assert "error" not in outcome, outcome["error"]
    report = outcome["report"]
    assert outcome["stored_before_kill"] < n_points  # the kill happened mid-run
    assert ((report["n_points"], report["n_computed"], report["n_failed"], report["backend"])
            == (n_points, n_points, 0, "dask"))
    with ResultStore(store_path) as store:
        rows = store.rows("slow_points:sleepy_point")
    assert sorted(row.params["x"] for row in rows) == list(range(n_points))  # every point, exactly once
    assert all(row.result["x"] == row.params["x"] for row in rows)


class _SchedulerThatGoesAway:
    """A stand-in for a Client whose scheduler dies after `finishing` points: those points' futures finish, the
    others never do, and the next wait raises what distributed raises when it gives up reconnecting (it cancels
    every future: FuturesCancelledError, a CancelledError)."""

    def __init__(self, finishing: int):
        self.finishing, self.submitted = finishing, 0

    def scheduler_info(self):
        return {"workers": {"tcp://127.0.0.1:1": {"nthreads": 2}}}

    def submit(self, function, *args, pure=False):
        import concurrent.futures

        future = concurrent.futures.Future()
        self.submitted += 1
        if self.submitted <= self.finishing:
            future.set_result(function(*args))
        return future

    def cancel(self, futures):
        raise OSError("the connection to the scheduler is closed")  # as a real client's would, its scheduler gone


def test_a_lost_scheduler_stops_the_sweep_with_one_line_saying_what_is_kept(tmp_path, monkeypatch):
    """Audit k18 D2: a dask scheduler killed mid-sweep ended it with "error: FuturesCancelledError: 4 Futures
    cancelled ..." and distributed's tracebacks, no JSON object under --json and no word on the points kept. Now the
    finished points are stored and the sweep stops as a dead local worker stops it: exit 1, one JSON object with
    status failed, a message naming the lost scheduler and the points kept."""
    import distributed
    import distributed.client as client_module

    from attnphase import sweep

    def wait(futures, return_when):
        done = {f for f in futures if f.done()}
        if not done:
            reason = "scheduler-connection-lost"
            raise client_module.FuturesCancelledError([client_module.CancelledFuturesGroup(
                [client_module.FutureCancelledError(f"key-{i}", reason) for i in range(len(futures))], reason)])
        return type("Waited", (), {"done": done})()

    monkeypatch.setattr(distributed, "wait", wait)
    monkeypatch.setattr(sweep, "connect_dask", lambda scheduler, timeout: (_SchedulerThatGoesAway(5), False))
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=0.5:2.5:9", "--scheduler",
                                       "tcp://127.0.0.1:1", "--store", str(store), "--json"])
    assert result.exit_code == 1, (result.stdout, result.stderr, result.exception)
    assert len(result.stdout.splitlines()) == 1, result.stderr
    out = json.loads(result.stdout)
    assert (out["status"], out["n_computed"], out["n_points"]) == ("failed", 5, 9)
    assert out["message"] == (f"lost the dask scheduler (4 Futures cancelled: scheduler-connection-lost): 5 points "
                              f"finished by this run are in the store {store} (5 of the grid's 9); the same command "
                              "computes the rest")
    assert result.stderr == f"error: {out['message']}\n"
    with ResultStore(store) as results:
        assert len(results.rows("demo")) == 5


def test_points_finished_when_the_scheduler_is_lost_are_stored_and_the_clients_tracebacks_are_dropped(
        tmp_path, monkeypatch, caplog):
    """Points whose futures finished before the wait that found the scheduler gone are stored too (the sweep keeps
    what has finished before it stops), and while the sweep holds its client, distributed's client logs its errors
    as their one-line messages, without their tracebacks (audit t18 M35, M37)."""
    import distributed
    import distributed.client as client_module

    from attnphase import sweep
    from attnphase.sweep_executors import client_errors_without_tracebacks

    logger = logging.getLogger("distributed.client")
    with client_errors_without_tracebacks(), caplog.at_level(logging.ERROR, logger="distributed.client"):
        try:
            raise OSError("connection refused")
        except OSError:
            logger.exception("Failed to reconnect to scheduler")
    (record,) = [r for r in caplog.records if r.name == "distributed.client"]
    assert record.exc_info is None and "Traceback" not in caplog.text

    def wait(futures, return_when):  # the scheduler is gone at the first wait, while four points had finished
        reason = "scheduler-connection-lost"
        raise client_module.FuturesCancelledError([client_module.CancelledFuturesGroup(
            [client_module.FutureCancelledError(f"key-{i}", reason) for i in range(len(futures))], reason)])

    monkeypatch.setattr(distributed, "wait", wait)
    monkeypatch.setattr(sweep, "connect_dask", lambda scheduler, timeout: (_SchedulerThatGoesAway(4), False))
    with pytest.raises(sweep.SchedulerLost):
        run_sweep("demo", ["beta=0.5:2.5:9"], store=tmp_path / "s.sqlite", scheduler="tcp://127.0.0.1:1")
    with ResultStore(tmp_path / "s.sqlite") as results:
        assert len(results.rows("demo")) == 4
