"""The killed-worker scenario of tests/test_sweep_dask.py (not a test module), run as a script in its own
process so that the test can bound it in time and kill everything it started: dask's own waits (its
event loop's start, `Client.run`, closing a cluster whose worker was killed) have no overall limit.

    python tests/dask_kill_scenario.py STORE N_POINTS

Starts a LocalCluster with two worker processes, prints "cluster up", sweeps N_POINTS sleepy points on
it, SIGKILLs a worker process while it holds a point, and prints one JSON line: the sweep's report (or
its error) and how many points were stored before the kill.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import threading
import time


def main(store_path: str, n_points: int) -> dict:
    from distributed import Client, LocalCluster

    from attnphase.store import ResultStore
    from attnphase.sweep import run_sweep

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, protocol="tcp", host="127.0.0.1",
                      dashboard_address=":0") as local, Client(local) as client:
        pids = client.run(os.getpid)  # worker address -> its process id
        print("cluster up", flush=True)
        outcome = {}

        def sweep():
            try:
                report = run_sweep("slow_points:sleepy_point", [f"x=0:{n_points - 1}:{n_points}"], {"seconds": 0.3},
                                   store=store_path, scheduler=client)
                outcome["report"] = dataclasses.asdict(report)
            except BaseException as exc:  # noqa: BLE001 - reported to the test
                outcome["error"] = repr(exc)

        driver = threading.Thread(target=sweep, daemon=True)
        driver.start()
        deadline = time.monotonic() + 60
        with ResultStore(store_path) as store:
            while store.count() < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            busy = {}
            while not busy and time.monotonic() < deadline:  # a worker with a point running now
                busy = {worker: keys for worker, keys in client.processing().items() if keys and worker in pids}
            if not busy:
                return {"error": "no worker was seen holding a point", **outcome}
            stored_before_kill = store.count()
            os.kill(pids[next(iter(busy))], signal.SIGKILL)
        driver.join(timeout=120)
        if driver.is_alive():
            return {"error": "the sweep did not finish within 120 s of the kill", "stored_before_kill": stored_before_kill}
        return {**outcome, "stored_before_kill": stored_before_kill}


if __name__ == "__main__":  # the worker processes are spawned: they import this file without running this
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))), flush=True)
