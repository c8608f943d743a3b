"""`attnphase store`: look into and export the results store."""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import sys
from pathlib import Path

import click

from attnphase.cli.common import emit, json_option, store_path_or_default, warn_of_damaged_rows
from attnphase.cli.groups import GuardedGroup, keep_when_interrupted
from attnphase.cli.output_paths import OutputPath
from attnphase.store import EXPORT_FORMATS, ResultStore, StoreError
from attnphase.store_export import write_table

__all__ = ["store_group"]


class _StoreFile(click.Path):
    """A store file to read: the empty path and a path too long for the system name no file, bad values (exit status
    2, as for `sweep`'s --store); a store that is missing or cannot be used is `ResultStore`'s to report (exit 1)."""

    def __init__(self):
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value, param, ctx):
        text = os.fspath(value)
        if not text:  # click.Path would read it as the current directory
            self.fail("An empty path names no file.", param, ctx)
        try:
            os.stat(text)
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                self.fail(f"File {text!r} cannot be a results store: {exc.strerror}.", param, ctx)
        return super().convert(value, param, ctx)


_STORE_PATH = _StoreFile()
_store_option = click.option(
    "--store", "store_path", type=_STORE_PATH, default=None,
    help="Results store file (default: $ATTNPHASE_STORE, else ./results.sqlite).",
)


def _open(store_path: Path | None) -> ResultStore:
    """The store, opened read-only: these commands never change a store or convert a file (SQLite may add the
    -wal and -shm files beside it; see the group's help)."""
    try:
        return ResultStore(store_path_or_default(store_path, _STORE_PATH), read_only=True)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None


@click.group("store", cls=GuardedGroup)
def store_group() -> None:
    """List, export and check the results store that sweeps write to.

    These commands only read the store (a store on read-only media, or in a directory you may not
    write, included): they never change a store, convert a file or make a store of one. Beside a store
    in a writable directory SQLite may leave FILE-wal and FILE-shm, the files through which readers
    share the store with a running sweep (they hold no points of their own); the next sweep to finish
    removes them. A store that cannot be used (missing, corrupted, not a store) gives exit status 1
    with a message naming the file and what to do; bad option values give exit status 2, a store path
    that cannot be a store file (a directory, an empty path, a path too long for the system) among
    them, whether given by --store or by $ATTNPHASE_STORE.
    """


@store_group.command("list")
@_store_option
@click.option("--model", default=None, help="Only this model (one the store holds; another exits 2 naming them).")
@json_option
def list_command(store_path, model, as_json) -> None:
    """Summarise the store: points per model and code version.

    \b
    Examples:
      attnphase store list
      attnphase store list --store demo.sqlite --json
    """
    store = _open(store_path)
    try:
        _refuse_a_filter_that_matches_nothing(store, model)
        summaries = [s for s in store.summary() if model is None or s.model == model]
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    damaged = [str(damage) for damage in store.damaged_rows.values()]
    warn_of_damaged_rows(store.path, damaged)
    if as_json:
        emit("store list", model, {"store": str(store.path)},
             {"store": str(store.path), "models": summaries, "damaged_rows": damaged}, True)
        return
    rows = [{"model": s.model, "version": s.version, "points": s.n_points, "parameters": ", ".join(s.parameter_names),
             "last written": datetime.datetime.fromtimestamp(s.last_created).isoformat(timespec="seconds")}
            for s in summaries]
    emit("store list", model, {"store": str(store.path)}, {"models": rows or "(no points)"}, False)


@store_group.command("export")
@_store_option
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="csv", show_default=True,
              help="parquet needs pyarrow.")
@click.option("--out", type=OutputPath(directory=False), required=True,
              help="File to write (replaced if it exists, by a rename once the table is whole: an interrupted export "
                   "leaves it as it was; its directory must exist).")
@click.option("--model", default=None,
              help="Only this model (default: every model; one the store does not hold exits 2 naming those it does).")
@click.option("--code-version", "wanted_version", default=None, metavar="VERSION",
              help="Only the points of this code version, as `attnphase store list` names it (default: the current "
                   "one of each model; one the store does not hold exits 2 naming those it does).")
@click.option("--all-versions", is_flag=True,
              help="The points of every code version: a point computed by several is a row per version.")
@json_option
def export_command(store_path, fmt, out, model, wanted_version, all_versions, as_json) -> None:
    """Write the stored points as one flat table (parameters and results as columns).

    By default only the points of the current code version are written: for each model, those a
    sweep run now would reuse (the version of this attnphase, and for your own module:function the
    hash of its module's file too, found on the import path as a sweep finds it), so that the table
    has one row per point. The points of other versions are counted (n_other_versions) and written
    with --all-versions, or one version with --code-version.

    \b
    Examples:
      attnphase store export --format csv --out demo.csv --model demo
      attnphase store export --format parquet --out all.parquet --all-versions
    """
    if wanted_version is not None and all_versions:
        raise click.BadParameter("--code-version names one version and --all-versions asks for every one: give one "
                                 "of them.", param_hint="'--all-versions'")
    if _is_part_of(store_path_or_default(store_path, _STORE_PATH), out):
        raise click.BadParameter(f"File {str(out)!r} is the results store itself, or one of its SQLite files; "
                                 "writing the table there would destroy the store.", param_hint="'--out'")
    keep_when_interrupted(f"the table was not written, and {out} was left as it was")
    store = _open(store_path)
    try:
        _refuse_a_filter_that_matches_nothing(store, model, wanted_version)
        points = store.rows(model, version=wanted_version)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    n_other_versions, unknown, n_unknown = 0, [], 0
    if wanted_version is None and not all_versions:
        from attnphase.point_code import point_source_found
        from attnphase.sweep import SWEEP_POINTS, current_version

        models = {point.model for point in points}
        # the current version of a point function hashes its source: where that is not found on the import path it is
        # unknown, and the points are left out for that reason, not as of other code versions
        unknown = sorted(name for name in models if not point_source_found(SWEEP_POINTS.get(name, name)))
        current = {name: current_version(name) for name in models}
        of_this_code = [point for point in points
                        if point.model not in unknown and point.version == current[point.model]]
        n_unknown = sum(point.model in unknown for point in points)
        n_other_versions, points = len(points) - len(of_this_code) - n_unknown, of_this_code
    damaged = [str(damage) for damage in store.damaged_rows.values()]
    warn_of_damaged_rows(store.path, damaged)
    n_rows = write_table(points, out, fmt)
    if n_other_versions:
        click.echo(f"note: {n_other_versions} stored point(s) of other code versions were left out (--all-versions "
                   "or --code-version VERSION exports them)", err=True)
    if unknown:
        click.echo(f"note: {n_unknown} stored point(s) of {', '.join(unknown)} were left out: the point function's "
                   "source is not found on the import path, so its current code version is unknown (put its module "
                   "on PYTHONPATH as for the sweep that stored them; --all-versions or --code-version VERSION "
                   "exports them as they are)", err=True)
    versions = "all" if all_versions else wanted_version or "current"
    emit("store export", model, {"store": str(store.path), "format": fmt, "versions": versions},
         {"out": str(out), "n_rows": n_rows, "n_other_versions": n_other_versions,
          "models_not_on_the_import_path": unknown, "n_of_models_not_on_the_import_path": n_unknown,
          "damaged_rows": damaged}, as_json)


_VERSIONS_NAMED = 10  # in the message of a --code-version that matches nothing; a store may hold many


def _refuse_a_filter_that_matches_nothing(store: ResultStore, model: str | None, version: str | None = None) -> None:
    """A --model or --code-version that names nothing stored is a bad value (a typo, most often): refused with
    what the store holds, rather than an empty table or listing that looks like a result."""
    stored = store.versions_by_model()
    if model is not None and model not in stored:
        held = f"the models {', '.join(stored)}" if stored else "no points"
        raise click.BadParameter(f"no point of model {model!r} is stored in {store.path}, which holds {held}.",
                                 param_hint="'--model'")
    if version is None:
        return
    versions = sorted({v for name, held in stored.items() if model in (None, name) for v in held})
    if version not in versions:
        of_model = f" of model {model!r}" if model is not None else ""
        named = ", ".join(versions[:_VERSIONS_NAMED]) + (
            f" and {len(versions) - _VERSIONS_NAMED} more" if len(versions) > _VERSIONS_NAMED else "")
        held = f"the code versions {named}" if versions else "no points"
        raise click.BadParameter(f"no point{of_model} of code version {version!r} is stored in {store.path}, which "
                                 f"holds{of_model} {held} (`attnphase store list` shows them).",
                                 param_hint="'--code-version'")


def _is_part_of(store_path: Path, out: Path) -> bool:
    """Whether `out` is the store file or a companion SQLite keeps beside it (write-ahead log, index, journal): by
    its path, through symbolic links, or as a hard link to the same file."""
    companions = (store_path.with_name(store_path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))
    for part in (store_path, *companions):
        if out.resolve() == part.resolve():
            return True
        with contextlib.suppress(OSError):  # either does not exist: not one file
            if os.path.samefile(out, part):
                return True
    return False


@store_group.command("check")
@_store_option
@json_option
def check_command(store_path, as_json) -> None:
    """Full integrity check of the store file and of every row's checksum; exit 1 on damage.

    \b
    Example:
      attnphase store check --store results.sqlite
    """
    store = _open(store_path)
    try:
        problems = store.verify()
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    emit("store check", None, {"store": str(store.path)}, {"ok": not problems, "problems": problems}, as_json)
    if problems:
        sys.exit(1)
