"""`attnphase sweep`: a resumable parameter sweep of a model, written point by point to the store."""

from __future__ import annotations

import sys

import click

from attnphase.cli.common import (Int, emit, json_option, renamed_to_option, store_path_or_default,
                                  warn_of_damaged_rows)
from attnphase.cli.groups import keep_when_interrupted
from attnphase.cli.output_paths import OutputPath
from attnphase.errors import ParameterError
from attnphase.grids import GRID_FORM, Grid, as_sweep_option_error, parse_grid, parse_setting
from attnphase.store import StoreError
from attnphase.sweep import (SWEEP_POINTS, PointParameterError, SchedulerLost, SweepReport, WorkerProcessDied,
                             declared_defaults, point_parameters, run_sweep)


_STORE_PATH = OutputPath(directory=False)


class _SweepCommand(click.Command):
    """`sweep`, whose --help given after a MODEL also lists the parameters MODEL's point function takes: a model's
    parameters are not options of this command, so click's own help cannot show them."""

    def parse_args(self, ctx, args):
        if any(token in ctx.help_option_names for token in args):
            ctx.meta["sweep_model"] = self._model_argument(args)
        return super().parse_args(ctx, args)

    def _model_argument(self, args: list[str]) -> str | None:
        """The first token that is neither an option nor an option's value."""
        takes_a_value = {name for param in self.params if isinstance(param, click.Option) and not param.is_flag
                         for name in param.opts}
        tokens = iter(args)
        for token in tokens:
            if token in takes_a_value:
                next(tokens, None)
            elif not token.startswith("-"):
                return token
        return None

    def format_epilog(self, ctx, formatter) -> None:
        super().format_epilog(ctx, formatter)
        model = ctx.meta.get("sweep_model")
        if model is None:
            return
        try:
            required, optional, takes_any_name = point_parameters(model)
        except ParameterError as exc:
            with formatter.section(f"Parameters of {model}"):
                formatter.write_text(str(as_sweep_option_error(exc)))
            return
        rows = [(name, "required: give it by --grid or --set") for name in required]
        rows += [(name, f"default {value!r}") for name, value in optional.items()]
        with formatter.section(f"Parameters of {model} (--grid NAME=... or --set NAME=VALUE)"):
            formatter.write_dl(rows)
            if takes_any_name:
                formatter.write_paragraph()
                formatter.write_text("It also takes any other name (**kwargs): its points check them when they run.")
            if model in SWEEP_POINTS:
                formatter.write_paragraph()
                formatter.write_text("A value outside the model's declared range is refused, with the range, before "
                                     "any point runs.")


@click.command(cls=_SweepCommand)
@click.argument("model")
@click.option("--grid", "grid_specs", multiple=True, required=True, metavar="NAME=START:STOP:NUM",
              help=f"A swept parameter; repeat for a product grid. Form: {GRID_FORM}.")
@click.option("--set", "settings", multiple=True, metavar="NAME=VALUE",
              help="A parameter held fixed at VALUE for every point; repeatable. VALUE is read as the parameter is "
                   "declared: true or false (also True, False, 1, 0) for a flag, text as typed for a text parameter "
                   "(linear_scale=1), else a number when it reads as one.")
@click.option("--workers", type=Int(1, 1024), default=None,
              help="Local worker processes (default: the CPU count; 1 runs in this process).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on a dask.distributed cluster, e.g. tcp://10.0.0.5:8786 (overrides --workers; needs "
                   "pip install 'attnphase[cluster]').")
@click.option("--store", "store_path", type=_STORE_PATH, default=None,
              help="Results store file (default: $ATTNPHASE_STORE, else ./results.sqlite).")
@json_option
def sweep(model, grid_specs, settings, workers, scheduler, store_path, as_json) -> None:
    """Compute MODEL on a parameter grid, storing each point as it finishes.

    MODEL is one of the registered models or module:function (a top-level function
    `f(**params) -> dict`). Points already in the store (same model, parameters and code version)
    are not recomputed, so rerunning an interrupted sweep finishes it. Before any point runs, every
    --grid and --set name is checked against the parameters MODEL takes, its required parameters
    must be given, and a registered model's values must lie in its declared ranges. Exit status: 0
    when every point is stored, 1 when some points failed (they are retried next run), a local
    worker process died or the dask scheduler was lost (the same command computes the rest) or the
    store is unusable, 2 for bad parameters.

    \b
    Examples:
      attnphase sweep demo --grid beta=0.5:2:16 --grid h=0,0.1
      attnphase sweep demo --grid beta=0.5:2:16 --set h=0.05 --workers 2 --store demo.sqlite
      attnphase sweep mypackage.points:point --grid x=0:1:11   # your own function
      attnphase sweep demo --grid beta=0.5:2:301 --scheduler tcp://127.0.0.1:8786 --json
    """
    try:
        grids = [parse_grid(spec) for spec in grid_specs]
        defaults = declared_defaults(model) if settings else {}  # a --set VALUE is read as its parameter's type
    except ParameterError as exc:  # named as run_sweep's arguments are: the user typed the options
        raise as_sweep_option_error(exc) from None
    base = _fixed_settings(settings, defaults)
    store_path = store_path_or_default(store_path, _STORE_PATH)
    from attnphase import progress

    started: list[SweepReport] = []  # the running sweep's report, updated as its points are written
    _say_what_an_interruption_keeps(model, started, store_path)

    def on_start(report: SweepReport) -> None:
        started.append(report)
        warn_of_damaged_rows(report.store, report.damaged_rows)
        if report.n_other_versions:  # why a resumed sweep starts again from the beginning, e.g. after an edit
            click.echo(f"note: {report.n_other_versions} point(s) of this grid are stored under other code versions "
                       "only, which are not reused (see `attnphase store list`): they are computed again", err=True)

    try:
        report = run_sweep(model, grids, base, store=store_path, workers=workers, scheduler=scheduler,
                           progress=progress.is_shown(), on_start=on_start)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: say where the finished points are; the group exits (130, 143)
        _say_what_an_interruption_keeps(model, started, store_path)
        raise
    except (StoreError, ImportError) as exc:  # ImportError: --scheduler without the cluster extra
        raise click.ClickException(str(exc)) from None
    except PointParameterError as exc:  # the sweep ran, and stopped at a point that refused its value
        (stopped,) = started
        message = f"{_as_option_error(exc, grids, base)}; the sweep stopped there: {_what_was_kept(stopped)}"
        emit("sweep", model, _parameters(stopped, workers, scheduler),
             {**_result(stopped, as_json), "status": "failed", "message": message, "success": False}, as_json)
        click.echo(f"Error: {message}", err=True)  # a bad value (exit status 2), given as a refusal before a run is:
        sys.exit(2)  # one line, without the usage lines of the option parser's own refusals
    except ParameterError as exc:  # refused before any point ran: nothing printed on stdout
        raise _as_option_error(exc, grids, base) from None
    except (WorkerProcessDied, SchedulerLost) as exc:  # the executor cannot go on: say what is kept
        (stopped,) = started
        message = f"{exc}: {_what_was_kept(stopped)}; the same command computes the rest"
        emit("sweep", model, _parameters(stopped, workers, scheduler),
             {**_result(stopped, as_json), "status": "failed", "message": message, "success": False}, as_json)
        click.echo(f"error: {message}", err=True)
        sys.exit(1)
    emit("sweep", model, _parameters(report, workers, scheduler), _result(report, as_json), as_json)
    if report.n_failed:
        listed = len(report.failures)
        cut = f" (the first {listed} of {report.n_failed} are listed)" if listed < report.n_failed else ""
        click.echo(f"{report.n_failed} point(s) failed and were not stored{cut}; {RERUN}", err=True)
        sys.exit(1)


# What a rerun does about failed points: it computes them again, and only them. A failure caused by the point's
# parameters (a schedule that cannot be planned there) fails again, so none is promised to succeed.
RERUN = "the same command computes only these again"


def _parameters(report: SweepReport, workers: int | None, scheduler: str | None) -> dict:
    return {"grid": report.grid, "set": report.base, "workers": workers, "scheduler": scheduler}


def _result(report: SweepReport, as_json: bool) -> dict:
    """The report's fields. A failed point's parameters are a mapping in JSON, and in a table the swept values as
    text (`x=0.5, z=1`): a table shows a mapping only as its size."""
    swept = list(report.grid)

    def point(params: dict):
        return params if as_json else ", ".join(f"{name}={params[name]}" for name in swept if name in params)

    return {
        "n_points": report.n_points,
        "n_computed": report.n_computed,
        "n_cached": report.n_cached,
        "n_failed": report.n_failed,
        "n_other_versions": report.n_other_versions,
        "n_failures_listed": len(report.failures),  # the first failures only (SweepReport.failures)
        "failures": [{"params": point(f.params), "error": f.error} for f in report.failures],
        "damaged_rows": report.damaged_rows,
        "store": report.store,
        "points_version": report.version,  # the code version its points are stored under (point_code.point_version)
        "backend": report.backend,
        # what ran (the CPU count by default, at most one per point to compute; dask: the cluster's threads), where the
        # parameters echo --workers as given
        "workers_used": report.workers,
        "elapsed_s": report.elapsed_s,
        # as every command's result says it (an interrupted or stopped sweep replaces these)
        "status": "converged" if not report.n_failed else "failed",
        "message": (f"every point of the grid is in the store {report.store}" if not report.n_failed else
                    f"{report.n_failed} point(s) failed and were not stored; {RERUN}"),
        "success": not report.n_failed,
    }


def _what_was_kept(report: SweepReport) -> str:
    """Where the points of a sweep that stopped early are: how many this run wrote, and how much of the grid is
    stored."""
    n = report.n_computed
    return (f"{n} point{'' if n == 1 else 's'} finished by this run {'is' if n == 1 else 'are'} in the store "
            f"{report.store} ({report.n_cached + n} of the grid's {report.n_points})")


def _say_what_an_interruption_keeps(model: str, started: list[SweepReport], store_path) -> None:
    """The interruption message (and JSON fields) of the sweep of `model`: where its finished points are."""
    if not started:  # before the store was opened and read
        keep_when_interrupted(f"no point finished in this run (the store is {store_path}); the same command computes "
                              "them", model, store=str(store_path), n_computed=0)
        return
    (report,) = started
    keep_when_interrupted(f"{_what_was_kept(report)}; the same command computes the rest", model, store=report.store,
                          n_points=report.n_points, n_cached=report.n_cached, n_computed=report.n_computed)


def _fixed_settings(settings: tuple[str, ...], defaults: dict) -> dict:
    """The --set values by name; a name fixed by two --set options is refused (which value was meant is unknown),
    as a name swept by two --grid options is."""
    base: dict = {}
    for spec in settings:
        name, value = parse_setting(spec, defaults)
        if name in base:
            raise ParameterError(f"--set {name}", value, f"each parameter fixed by one --set only; --set {name}="
                                                         f"{base[name]!r} was given too")
        base[name] = value
    return base


def _as_option_error(exc: ParameterError, grids: list[Grid], base: dict) -> ParameterError:
    """The error with a swept or fixed parameter renamed to the option that gave it (--grid NAME, --set NAME).

    The model's checks and point functions name their own parameters, and run_sweep its arguments (grid NAME, base
    NAME: `grids.as_sweep_option_error`); the user typed the option.
    """
    options = {name: f"--set {name}" for name in base} | {grid.name: f"--grid {grid.name}" for grid in grids}
    renamed = renamed_to_option(exc, options)
    return renamed if renamed is not exc else as_sweep_option_error(exc)


__all__ = ["sweep", "SWEEP_POINTS"]
