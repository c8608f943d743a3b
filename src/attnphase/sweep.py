"""Resumable parameter sweeps on a local process pool or a dask.distributed cluster.

A sweep evaluates a model's *point function* on the Cartesian product of one or more grids
(`attnphase.grids`), with any other parameters held fixed, and commits every point to the results store
(`attnphase.store`) as it finishes. Only the points missing from the store are computed, so an
interrupted sweep is resumed by running the same command again.

Point functions are top-level (picklable) functions `sweep_point(**params) -> dict[str, float]`,
named by model in `SWEEP_POINTS` as "module:function" strings so that a worker process (local or on
a cluster node) imports them itself. A model argument of the form "module:function" is used as is,
which lets a researcher sweep their own function without registering it. The code version that keys a
point function's results (`point_code.point_version`) covers the file of that function's module too when it is not
part of attnphase, so that editing your own function does not reuse its old results. Each result carries the
version of the code that computed it, as the process that ran it loaded that code; a result of other code than the
sweep's (a long-lived dask worker that imported it before an edit) is not stored: the point counts as failed.

Before any point runs (and before any worker or cluster is started) the driver checks the sweep's
parameters: every --grid and --set name against the point function's signature (a function with
**kwargs takes any name), every required parameter given, and, for the registered models, every
point's values against the ranges the model declares (`POINT_CHECKS`: each model's `sweep_check`, next to
its point function). A bad value that only the point function itself can see still stops
the sweep at the first point that raises `ParameterError`; other exceptions mark a point failed.

Where the work runs and where results are written (the executors are `attnphase.sweep_executors`):

* `workers == 1`: serially in this process.
* otherwise a local pool of `workers` processes (spawned, so nothing inherited from the driver can
  deadlock them; each exits when the driver dies, and never sees Ctrl-C, which the driver handles for it).
* `scheduler=ADDRESS` (or a `distributed.Client`): a dask.distributed cluster, e.g. one started on
  a SLURM or PBS allocation with dask-jobqueue; every worker needs attnphase (and the point
  function's module) importable. dask is an optional dependency: `pip install 'attnphase[cluster]'`.

In every case the driver process writes each result as its future completes and keeps at most two
points per worker submitted but not yet written, so killing the driver loses at most those points;
nothing on a worker touches the store. A sweep stopped early (KeyboardInterrupt, the CLI's SIGTERM, a point's
ParameterError, a local worker process that died) first writes every point that has finished, then stops the
local workers at once (their running points are computed again by the next run) or cancels the cluster's tasks,
and re-raises (a dead local worker as `WorkerProcessDied`; on a cluster, dask runs a lost worker's points again,
and a lost scheduler stops the sweep with `SchedulerLost`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnphase import progress as progress_display
from attnphase.errors import ParameterError
from attnphase.grids import Grid, as_grids, grid_points
from attnphase.params import check_int, check_positive, check_real
# the named point functions and the parameter checks, re-exported: `attnphase.sweep` is where users find them
from attnphase.point_code import (
    SWEEP_POINTS, current_version, point_version, point_version_on_disk, register_point, resolve_point,
)
from attnphase.store import ResultStore
from attnphase.sweep_parameters import (
    POINT_CHECKS, check_sweep_parameters, declared_defaults, point_parameters, with_defaults_in_the_key,
)
from attnphase.sweep_executors import (
    CLUSTER_EXTRA_HINT, SchedulerLost, WorkerProcessDied, client_errors_without_tracebacks, connect_dask,
    evaluate_point, require_distributed, run_dask, run_pool,
)
from attnphase.version import code_version

__all__ = ["SWEEP_POINTS", "POINT_CHECKS", "CLUSTER_EXTRA_HINT", "register_point", "resolve_point", "point_version",
           "current_version", "point_parameters", "declared_defaults", "curie_weiss_point", "check_curie_weiss_point",
           "check_sweep_parameters", "evaluate_point", "SweepFailure", "SweepReport", "PointParameterError",
           "WorkerProcessDied", "SchedulerLost", "run_sweep", "require_distributed"]

# --- the demo point function ----------------------------------------------------------------------


def curie_weiss_point(beta: float, h: float = 0.0) -> dict[str, Any]:
    """Demo point function: the Curie-Weiss (mean-field Ising) magnetisation, in closed form.

    The magnetisation solves m = tanh(beta (m + h)); among the roots we take the one with the sign of
    h (the positive one at h = 0, a convention for the broken symmetry), which minimises the free
    energy per spin f(m) = m^2/2 - (1/beta) ln(2 cosh(beta (m + h))). For h = 0 it vanishes at
    beta <= 1 and grows as sqrt(3 (beta - 1)) above. Inverting the equation gives exact references:
    beta = atanh(m)/m at h = 0 and h = atanh(m)/beta - m otherwise.

    Where f overflows float64 (at extreme beta or h) it is returned as it is, -inf, with status "diverged": it has
    left the finite numbers (`attnphase.results.Status`), and is no converged value.
    """
    from scipy.optimize import brentq

    beta, h = check_curie_weiss_point(beta, h)
    sign = -1.0 if h < 0 else 1.0
    field_ = abs(h)
    iterations, converged = 0, True
    if field_ == 0.0 and beta <= 1.0:
        magnetisation = 0.0
    elif field_ == 0.0:
        # Divide out the trivial root m = 0: q(m) = 1 - tanh(beta m)/m is 1 - beta < 0 at m -> 0+
        # and 1 - tanh(beta) > 0 at m = 1, with the nonzero root as its only zero.
        magnetisation, info = brentq(
            lambda m: 1.0 - math.tanh(beta * m) / m, 1e-300, 1.0, xtol=1e-15, rtol=4 * np.finfo(float).eps,
            full_output=True,
        )
        iterations, converged = info.iterations, info.converged
    else:
        # g(m) = m - tanh(beta (m + h)) < 0 at m = tanh(beta h) and >= 0 at m = 1: one root between.
        low = math.tanh(beta * field_)
        g = lambda m: m - math.tanh(beta * (m + field_))  # noqa: E731
        if g(low) >= 0.0 or g(1.0) <= 0.0:  # tanh saturated in float64: the root is 1 to machine precision
            magnetisation = 1.0 if g(1.0) <= 0.0 else low
        else:
            magnetisation, info = brentq(g, low, 1.0, xtol=1e-15, rtol=4 * np.finfo(float).eps, full_output=True)
            iterations, converged = info.iterations, info.converged
    m = sign * magnetisation
    x = beta * (m + h)
    free_energy = 0.5 * m * m - float(np.logaddexp(x, -x)) / beta
    status = "converged" if converged else "max_iter"
    if not math.isfinite(free_energy):  # beyond float64 (ln 2 / beta at beta < 4e-309, or beta |h| > 1.8e308)
        status = "diverged"
    return {
        "m": m,
        "free_energy": free_energy,
        "residual": abs(m - math.tanh(x)),
        "iterations": iterations,
        "status": status,
    }


def check_curie_weiss_point(beta, h=0.0) -> tuple[float, float]:
    """The demo's parameters, checked: beta > 0 and a finite field h."""
    return check_positive("beta", beta), check_real("h", h)


class PointParameterError(ParameterError):
    """A point's function refused a parameter value (`ParameterError`), which stops the sweep: bad parameters are the
    caller's to fix, and usually affect every point. The points finished before it stay stored."""


@dataclass(frozen=True)
class SweepFailure:
    """A point that failed (its function raised, or other code than the sweep's computed it); it is not stored, so
    the next run retries it."""

    params: dict[str, Any]
    error: str


@dataclass
class SweepReport:
    """What a sweep did. `n_points = n_cached + n_computed + n_failed` (+ points left by an abort): `n_computed` the
    points this sweep stored, `n_cached` those the store held already, or that another sweep on it stored first
    while this one computed them too. `failures` lists the first `_Recorder.MAX_FAILURES_KEPT` failed points only;
    `n_failed` counts them all."""

    model: str
    target: str
    grid: dict[str, list[Any]]
    base: dict[str, Any]
    n_points: int
    n_cached: int
    n_computed: int = 0
    n_failed: int = 0
    n_other_versions: int = 0  # points not stored by this code version but by another: not reused, computed again
    failures: list[SweepFailure] = field(default_factory=list)
    # The rows of the sweep's model and version read and skipped as damaged (store.DamagedRow), less those the sweep
    # has replaced since (it computes a point of the grid among them again): damaged rows still in the store.
    damaged_rows: list[str] = field(default_factory=list)
    store: str = ""
    version: str = field(default_factory=code_version)
    backend: str = "serial"
    workers: int = 1
    elapsed_s: float = 0.0


@contextlib.contextmanager
def _signals_deferred():
    """SIGINT and SIGTERM taken up inside (main thread only) only on leaving, by the handlers they found. A signal
    during a point's COMMIT raised its KeyboardInterrupt just after the row was stored and before it was counted, so
    an interrupted sweep reported one point fewer than it had written (with cheap points, whose time is mostly the
    commit, in most interruptions). Python runs signal handlers in the main thread whichever thread the signal
    reached (a BLAS or OpenMP worker often), so the handlers are swapped here rather than the signal mask, which is
    each thread's own: a signal is recorded, and raised again once the handlers are back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    found = {number: signal.signal(number, lambda number, frame: received.append(number))
             for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in found.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        for number in dict.fromkeys(received):  # each once, in the order they came
            signal.raise_signal(number)


class _Recorder:
    """Writes each finished point to the store and tallies the report (driver side only)."""

    MAX_FAILURES_KEPT = 20

    def __init__(self, store: ResultStore, model: str, report: SweepReport, progress_bar):
        self.store, self.model, self.report, self.bar = store, model, report, progress_bar

    def record(self, params: dict[str, Any], outcome: tuple) -> None:
        kind = outcome[0]
        if kind == "ok" and self._ran_this_sweeps_code(outcome):
            with _signals_deferred():  # a row committed is a row counted: the report says how many this run wrote
                if self.store.put(self.model, params, outcome[1], elapsed=outcome[2], version=self.report.version):
                    self.report.n_computed += 1
                else:  # another sweep on the same store stored it first: its row is kept, and counted as theirs
                    self.report.n_cached += 1
        elif kind == "ok":
            ran = outcome[3] if len(outcome) > 3 else None
            self._failed(params, _other_code_message(ran, self.report.version, self._version_on_disk))
        elif kind == "parameter_error":
            # Bad parameters are the caller's to fix, and usually affect every point: stop.
            _, name, value, allowed, _ = outcome
            raise PointParameterError(name, value, allowed)
        else:
            self._failed(params, outcome[1])
        self.bar.advance(", ".join(f"{name}={params[name]}" for name in self.report.grid))  # the swept values

    def _ran_this_sweeps_code(self, outcome: tuple) -> bool:
        """Whether the process that computed an "ok" outcome ran the code this sweep stores its points under."""
        return len(outcome) > 3 and outcome[3] == self.report.version

    @functools.cached_property
    def _version_on_disk(self) -> str:
        """The sweep's version as the code is on disk now (`point_version_on_disk`), hashed once per sweep, at the first
        result of other code."""
        return point_version_on_disk(self.report.target)

    def _failed(self, params: dict[str, Any], error: str) -> None:
        self.report.n_failed += 1
        if len(self.report.failures) < self.MAX_FAILURES_KEPT:
            self.report.failures.append(SweepFailure(params, error))


def _other_code_message(ran: str | None, version: str, version_on_disk: str) -> str:
    """Why a result computed by code of version `ran` is not stored by a sweep of `version` (it is computed again by
    the next run)."""
    if ran == version_on_disk:
        # The worker is the up-to-date process: this one (a notebook's kernel, say) imported attnphase before an edit,
        # and keys its sweeps by that code for its whole life (point_code), which reloading a module cannot change.
        return (f"not stored: the worker ran the code now on disk (version {ran}, not {version}): this Python session "
                "imported attnphase before its source was edited (git pull, an edit of an editable install), and keys "
                "its sweeps by the code it imported, whatever it reloads: restart the session (a notebook: its "
                "kernel), then run the sweep again")
    # A worker of an attnphase from before results carried their version returns the result without one.
    ran = ran or "unknown: an older attnphase"
    return (f"not stored: a worker ran other code (version {ran}, not {version}), e.g. a dask worker started before "
            "an edit, which keeps the modules it imported first: restart the dask workers (in a Python session, "
            "importlib.reload the edited module), then run the sweep again")


def run_sweep(
    model: str,
    grids: Iterable[str | Grid] | Mapping[str, Sequence[Any]],
    base: Mapping[str, Any] | None = None,
    *,
    store: ResultStore | str | os.PathLike | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    progress: bool | None = None,
    connect_timeout: float = 30.0,
    on_start: Callable[[SweepReport], None] | None = None,
) -> SweepReport:
    """Compute the missing points of a sweep and commit each to the store as it finishes.

    `grids`: "NAME=START:STOP:NUM" / "NAME=V1,V2" strings, `Grid`s, or {name: values}. `base`: fixed
    parameters. `store`: a `ResultStore` or a path (default $ATTNPHASE_STORE, else ./results.sqlite).
    `workers`: local processes (default: the CPU count; 1 runs in this process). `scheduler`: a
    dask.distributed scheduler address or `Client` (needs the `cluster` extra); overrides `workers`.
    `progress`: a progress bar on stderr (`attnphase.progress`); None (the default) follows the enclosing
    `progress.shown(...)` block (a notebook's `progress.shown(True, terminal_only=False)`), and where no block
    set it, shows one when stderr is a terminal.
    `connect_timeout`: seconds to reach the scheduler. `on_start`: called with the sweep's report once the
    store is open, before any point runs; the report is then updated as each point is written, so that a
    caller whose sweep stops early can say what it kept (the CLI does).

    Parameters that no point could run with raise `ParameterError` before the store is opened
    (`check_sweep_parameters`), and so do bad arguments, each named as this function names it (grid NAME, base NAME,
    grids, store, workers, progress, connect_timeout, on_start); a number given as text in `base` ({"q": "3"}) is
    refused where the model's check takes a number, since the store would key it apart from the number. A point
    whose function raises `ParameterError` stops the sweep with that error, as a `PointParameterError` (points
    finished before it stay stored); any other exception marks the point failed and the sweep goes on. A local
    worker process that dies (killed, out of memory) stops the sweep with `WorkerProcessDied` (points finished before
    it stay stored; its own are computed by the next run), and so do workers that fail as they start: each imports
    the calling script again, so a script calls this under `if __name__ == "__main__":` when `workers` is more than 1.
    A dask scheduler that goes away mid-sweep stops it with `SchedulerLost` (points finished before stay stored).
    """
    started = time.perf_counter()
    target, function = resolve_point(model)
    grid_list = as_grids(grids)
    base = dict(base or {})
    points = grid_points(grid_list, base)
    check_sweep_parameters(model, grid_list, base, points)
    points = with_defaults_in_the_key(function, points)
    workers = _checked_arguments(store, workers, progress, connect_timeout, on_start)
    version = point_version(target)
    with contextlib.ExitStack() as opened:
        client = None
        if scheduler is not None:  # reached before the store is opened: an address with no scheduler leaves no store
            client, own_client = connect_dask(scheduler, connect_timeout)
            opened.enter_context(client_errors_without_tracebacks())  # until after the close below
            if own_client:
                opened.callback(client.close)
        result_store = store if isinstance(store, ResultStore) else opened.enter_context(ResultStore(store))
        report = None
        try:
            missing = result_store.missing(model, points, version=version)
            report = SweepReport(
                model=model, target=target, grid={g.name: list(g.values) for g in grid_list}, base=base,
                n_points=len(points), n_cached=len(points) - len(missing), store=str(result_store.path),
                version=version,
                n_other_versions=result_store.count_under_other_versions(model, missing, version=version),
                damaged_rows=_damaged_rows_of(result_store, model, version),
            )
            if on_start is not None:
                on_start(report)
            with (_progress_shown(progress),
                  progress_display.task(f"sweep {model}", total=len(points)) as bar):
                bar.advance("stored before", amount=report.n_cached)
                recorder = _Recorder(result_store, model, report, bar)
                if not missing:
                    report.backend, report.workers = "none", 0
                elif client is not None:
                    run_dask(client, target, missing, recorder)
                else:
                    n_workers = min(workers or os.cpu_count() or 1, len(missing))
                    report.workers = n_workers
                    if n_workers == 1:
                        report.backend = "serial"
                        for params in missing:
                            recorder.record(params, evaluate_point(target, params))
                    else:
                        report.backend = "processes"
                        run_pool(n_workers, target, missing, recorder)
            return report
        finally:
            if report is not None:  # also for a sweep that stopped early, whose report says what it had done
                report.damaged_rows = _damaged_rows_of(result_store, model, version)
                report.elapsed_s = time.perf_counter() - started


_MAX_WORKERS = 1024  # as the command's --workers
_STORE_RULE = ("a ResultStore, the path of its file (str or os.PathLike), or None for the default ($ATTNPHASE_STORE, "
               "else ./results.sqlite)")


def _checked_arguments(store, workers, progress, connect_timeout, on_start) -> int | None:
    """`workers` as an int (None: the CPU count), or a ParameterError naming the first bad argument of `run_sweep`
    among these, before any worker starts or the store is opened. Text is refused where a number belongs."""
    if store is not None and not isinstance(store, ResultStore):
        path = os.fspath(store) if isinstance(store, (str, os.PathLike)) else None
        if not isinstance(path, str):
            raise ParameterError("store", store, _STORE_RULE)
        if not path:
            raise ParameterError("store", store, f"a path that names a file (an empty one names none): {_STORE_RULE}")
    if workers is not None:
        allowed = f"an integer in [1, {_MAX_WORKERS}], or None for the CPU count"
        if isinstance(workers, str):  # the command line's spelling, which its --workers reads
            raise ParameterError("workers", workers, allowed)
        try:
            workers = check_int("workers", workers, 1, _MAX_WORKERS)
        except ParameterError:
            raise ParameterError("workers", workers, allowed) from None
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise ParameterError("progress", progress, "True, False, or None to follow the enclosing "
                                                   "progress.shown(...) block (where none, a terminal's stderr only)")
    # seconds; only a sweep on a scheduler address uses it, but a bad one is refused whatever the sweep
    if isinstance(connect_timeout, str):
        raise ParameterError("connect_timeout", connect_timeout, "a finite real number in (0, inf)")
    check_positive("connect_timeout", connect_timeout)
    if on_start is not None and not callable(on_start):
        raise ParameterError("on_start", on_start, "a function called with the sweep's report, or None")
    return workers


def _progress_shown(progress: bool | None) -> contextlib.AbstractContextManager:
    """The progress display of a sweep: as asked (`progress` True or False), else as the caller's
    `progress.shown(...)` block set it, else on a terminal only."""
    if progress is not None:
        return progress_display.shown(bool(progress), terminal_only=False)
    if progress_display.setting() is not None:
        return contextlib.nullcontext()
    return progress_display.shown(True, terminal_only=True)


def _damaged_rows_of(store: ResultStore, model: str, version: str) -> list[str]:
    """The damaged rows of `model` and `version` that `store` has read and not replaced since: once
    `ResultStore.missing` has read every row of the two, the damaged ones among them (a caller's store object may
    also hold damaged rows of other models and versions, which it read before)."""
    return [str(damage) for damage in store.damaged_rows.values() if (damage.model, damage.version) == (model, version)]
