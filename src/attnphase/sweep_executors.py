"""Where a sweep's points run: serially, on a local process pool, or on a dask.distributed cluster.

`attnphase.sweep.run_sweep` hands each missing point to one of these executors. A point runs as `evaluate_point`,
which never raises (its outcome is a plain tuple that survives pickling); the driver writes each outcome as its
future completes and keeps at most two points per worker submitted but not yet written. A sweep stopped early
(KeyboardInterrupt, the CLI's SIGTERM, a point's ParameterError, a local worker process that died) first writes every
point that has finished, then stops the local workers at once (their running points are computed again by the next
run) or cancels the cluster's tasks, and re-raises (a dead worker as `WorkerProcessDied`, a lost dask scheduler as
`SchedulerLost`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from attnphase.errors import ParameterError
from attnphase.jsonio import to_jsonable
from attnphase.point_code import loaded_point

if TYPE_CHECKING:
    from attnphase.sweep import _Recorder

__all__ = ["CLUSTER_EXTRA_HINT", "WorkerProcessDied", "SchedulerLost", "evaluate_point", "require_distributed",
           "run_pool", "run_dask", "client_errors_without_tracebacks"]


# --- evaluating points ----------------------------------------------------------------------------


def evaluate_point(target: str, params: dict[str, Any]) -> tuple:
    """Run one point where the work happens; never raises, so that any executor can carry the outcome.

    Returns ("ok", result_dict, seconds, code_version), ("parameter_error", name, value, allowed, seconds) or
    ("error", message, seconds). Plain tuples, because exceptions do not all survive pickling. `code_version` is the
    version of the code this process loaded and ran (`point_code.LoadedPoint`), which the driver compares with the
    sweep's before storing the result.
    """
    start = time.perf_counter()
    try:
        point = loaded_point(target)
        # Non-finite values stay floats: the store keeps them exactly (store_rows.result_text).
        result = to_jsonable(point.function(**params), keep_non_finite=True)
        if not isinstance(result, dict):
            raise TypeError(f"the point function returned {type(result).__name__}, not a dict")
        return ("ok", result, time.perf_counter() - start, point.version)
    except ParameterError as exc:
        value = exc.value if isinstance(exc.value, (int, float, str, bool, type(None))) else repr(exc.value)
        return ("parameter_error", exc.name, value, exc.allowed, time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - a failed point is reported, the sweep goes on
        return ("error", f"{type(exc).__name__}: {exc}", time.perf_counter() - start)


def _start_worker(parent_pid: int, started) -> None:
    """Pool-worker initializer, run once the process has started: sets `started` (a shared flag: the driver can tell
    a pool whose workers never started, `_why_the_pool_broke`), and makes the worker exit when the driver dies
    (SIGKILL gives it no chance to clean up)."""
    started.value = 1

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent_pid:
                os._exit(0)

    threading.Thread(target=watch, name="attnphase-parent-watch", daemon=True).start()


def _run_windowed(missing, window, submit, wait_first, outcome_of, recorder, pending) -> None:
    """Keep at most `window` points submitted and not yet written; write each as it completes.

    The window is what bounds the loss when the driver is killed: every point outside it is either
    stored or not yet started. `pending` (future -> params) is the caller's, for cancelling on exit.
    """
    queue = iter(missing)

    def top_up() -> None:
        while len(pending) < window:
            params = next(queue, None)
            if params is None:
                return
            pending[submit(params)] = params

    top_up()
    while pending:
        for future in wait_first(list(pending)):
            # Written before it leaves `pending`: a point interrupted while being written is written again by
            # `_keep_finished` (a second put of a stored point changes nothing).
            recorder.record(pending[future], outcome_of(future))
            del pending[future]
        top_up()


def _keep_finished(pending, outcome_of, recorder) -> None:
    """Write every point of `pending` that has finished with a result; the driver calls it when a sweep stops
    early (Ctrl-C, SIGTERM, a point's ParameterError, a worker that died), so that every point finished by then is in
    the store."""
    for future, params in list(pending.items()):
        if not future.done() or future.cancelled():
            continue
        try:
            outcome = outcome_of(future)
        except BaseException:  # noqa: BLE001 - e.g. a worker's own KeyboardInterrupt: nothing to keep
            continue
        if outcome[0] == "ok":
            recorder.record(params, outcome)
        del pending[future]


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM ignored inside (main thread only): the cleanup of an interrupted sweep (writing what
    finished, stopping the workers) is short, and a second Ctrl-C must not break it off half done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            held[number] = signal.signal(number, signal.SIG_IGN)
        except (ValueError, OSError):  # pragma: no cover - not settable here
            pass
    try:
        yield
    finally:
        for number, handler in held.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


class WorkerProcessDied(RuntimeError):
    """A local worker process died (killed, e.g. by the out-of-memory killer, or failed as it started) and the pool
    cannot go on.

    The points it was running and those queued behind them are not stored; every point finished before is.
    """


class SchedulerLost(RuntimeError):
    """The dask scheduler went away mid-sweep (it was killed, its machine or the network failed): the client cannot
    reach it again and its tasks are cancelled. Every point finished before is stored; the rest need a scheduler."""


def _submit_shielded_from_ctrl_c(executor: concurrent.futures.ProcessPoolExecutor, *args) -> concurrent.futures.Future:
    """`executor.submit(*args)` with SIGINT blocked in this thread meanwhile.

    The pool starts its worker processes inside `submit`, and a process inherits the signal mask of the thread that
    starts it, through fork and exec, for its whole life. So the workers never see SIGINT: a Ctrl-C at a terminal goes
    to the whole process group, and a worker that got one would print a KeyboardInterrupt traceback (while it waits
    for work, or while it starts up) before the driver stops it anyway. A SIGINT that arrives meanwhile is held, not
    lost: it reaches the driver when the mask is restored. (Blocking rather than ignoring, because an ignored SIGINT
    would be discarded.) SIGTERM stays deliverable: it is how `_stop_pool` ends the workers.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return executor.submit(*args)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def run_pool(n_workers: int, target: str, missing: list[dict[str, Any]], recorder: _Recorder) -> None:
    context = multiprocessing.get_context("spawn")
    started = context.RawValue("b", 0)  # only ever set to 1, by each worker (`_start_worker`): no lock needed
    executor = concurrent.futures.ProcessPoolExecutor(
        max_workers=n_workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), started)
    )
    pending: dict = {}
    try:
        _run_windowed(
            missing, 2 * n_workers,  # one running and one queued per worker
            lambda params: _submit_shielded_from_ctrl_c(executor, evaluate_point, target, params),
            lambda futures: concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED).done,
            concurrent.futures.Future.result, recorder, pending,
        )
    except BaseException as stop:
        # Stopped early (Ctrl-C, SIGTERM, a point's ParameterError, a worker that died): write the points that have
        # finished, stop the ones still running (they would otherwise run to their end with nobody to write them),
        # and return at once. A second signal during this is ignored rather than leaving the pool half shut down.
        with _signals_held():
            try:
                _keep_finished(pending, concurrent.futures.Future.result, recorder)
            finally:
                exit_codes = _stop_pool(executor)
        if isinstance(stop, BrokenProcessPool):
            # Raised by the future of every point the pool still held, or by `submit` once it knows: the pool is
            # unusable, so the sweep stops here and the next run computes what is missing.
            raise WorkerProcessDied(_why_the_pool_broke(bool(started.value), exit_codes)) from None
        raise
    executor.shutdown(wait=True)


def _why_the_pool_broke(any_worker_started: bool, exit_codes: list[int | None]) -> str:
    """The message of a `WorkerProcessDied`, from whether any worker ran its initializer (`_start_worker`) and the
    workers' exit codes (negative: killed by that signal)."""
    if not any_worker_started and any(code is not None and code > 0 for code in exit_codes):
        # They exited with an error before their initializer ran: while starting, which (spawn) imports the driver's
        # main module again. A script that calls run_sweep at its top level, unguarded, makes each worker start a
        # pool of its own there, which multiprocessing refuses with a RuntimeError in every worker.
        return ("the worker processes exited with an error as they started, before running any point (their errors "
                "are above, on stderr): most often a script that calls run_sweep at its top level, which each worker "
                "process runs again as it imports the script; make the call under `if __name__ == \"__main__\":`")
    return "a worker process died (killed, e.g. by the out-of-memory killer), which stops the pool"


def _stop_pool(executor: concurrent.futures.ProcessPoolExecutor) -> list[int | None]:
    """Cancel the queued points and end the worker processes now, then shut the pool down (which no longer waits
    on anything). Returns the workers' exit codes."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + 5.0
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(1.0)
    executor.shutdown(wait=True, cancel_futures=True)
    return [process.exitcode for process in processes]


def _first_line_and_reasons(exc: BaseException) -> str:
    """The first line of `exc`'s message and, for distributed's FuturesCancelledError, the reasons it gives ("4
    Futures cancelled: scheduler-connection-lost")."""
    first_line = str(exc).splitlines()[0].rstrip(":") if str(exc) else type(exc).__name__
    reasons = sorted({str(group.reason) for group in getattr(exc, "error_groups", ())})
    return f"{first_line}: {', '.join(reasons)}" if reasons else first_line


@contextlib.contextmanager
def client_errors_without_tracebacks():
    """distributed's client logs its failed reconnections, and their cancellation when it closes, with the tracebacks
    of its event loop; a sweep says itself what was lost and kept (`SchedulerLost`), so while it holds a client (up to
    and including its close) they are logged as their one-line messages."""
    def without_traceback(record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return bool(record.getMessage().strip())  # a record that was its traceback alone says nothing now

    logger = logging.getLogger("distributed.client")
    logger.addFilter(without_traceback)
    try:
        yield
    finally:
        logger.removeFilter(without_traceback)


def _dask_outcome(future) -> tuple:
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - the worker was lost; the point is retried next run
        return ("error", f"dask task failed: {type(exc).__name__}: {exc}", 0.0)


CLUSTER_EXTRA_HINT = "pip install 'attnphase[cluster]'"


def require_distributed():
    """The `distributed` module, or an ImportError that says which extra installs it."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(
            f"sweeps on a dask cluster need dask.distributed, which is not installed ({exc}); "
            f"install it with: {CLUSTER_EXTRA_HINT}"
        ) from None
    return distributed


def connect_dask(scheduler: Any, connect_timeout: float):
    """(a dask.distributed Client for `scheduler`, whether it was opened here and is the caller's to close):
    `scheduler` itself when it is a Client, else a connection to the address, or a ParameterError naming it.

    Each address that fails leaves a thread named "IO loop" and three file descriptors in this process, which
    nothing here can stop: they are distributed's (a bare `distributed.Client` that fails to connect leaves the same,
    distributed 2026.8.0). A session that retries many addresses holds one such thread per failure until it ends.
    """
    Client = require_distributed().Client
    if isinstance(scheduler, Client):
        return scheduler, False
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ParameterError("scheduler", scheduler, "a dask scheduler address such as tcp://127.0.0.1:8786")
    try:
        return Client(scheduler, timeout=connect_timeout), True
    except (OSError, TimeoutError, ValueError) as exc:
        reason = str(exc)
    # The Client that failed to connect survives in a reference cycle through the exception's traceback and closes
    # itself when the garbage collector reaches it. If that happens while another Client starts (a retry with the
    # right address), its close waits on distributed's loop lock, which the starting Client holds: the process
    # hangs. So the cycle is collected here, and the error is raised outside the except block, without a context
    # that would keep the failed Client alive. Collecting frees the Client object only: the thread running its event
    # loop ("IO loop") and that loop's descriptors stay, as distributed leaves them (see the docstring).
    gc.collect()
    raise ParameterError(
        "scheduler", scheduler, f"the address of a running dask scheduler reachable from here ({reason})"
    )


def run_dask(client, target: str, missing: list[dict[str, Any]], recorder: _Recorder) -> None:
    """The missing points on a dask.distributed `client` (`connect_dask`), a window of them submitted at a time."""
    wait = require_distributed().wait
    from distributed.comm.core import CommClosedError

    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
    recorder.report.backend, recorder.report.workers = "dask", threads
    pending: dict = {}
    try:
        _run_windowed(
            missing, 2 * max(threads, 1),
            lambda params: client.submit(evaluate_point, target, params, pure=False),
            lambda futures: wait(futures, return_when="FIRST_COMPLETED").done,
            _dask_outcome, recorder, pending,
        )
    except BaseException as exc:
        with _signals_held():
            _keep_finished(pending, _dask_outcome, recorder)  # finished before the stop: written, not lost
        # distributed cancels every future when the client cannot reconnect to its scheduler (the wait then raises
        # its FuturesCancelledError, a CancelledError), or a call to it fails on a closed connection
        if isinstance(exc, (concurrent.futures.CancelledError, CommClosedError)):
            raise SchedulerLost(f"lost the dask scheduler ({_first_line_and_reasons(exc)})") from None
        raise
    finally:
        if pending:
            with contextlib.suppress(Exception):  # a lost scheduler cannot be told: its tasks are gone with it
                client.cancel(list(pending))
