"""The results store: one SQLite file holding every computed point of every sweep.

A point is keyed by (model, canonical parameters, code version). The code version is
`attnphase.version.code_version()`: the release plus a hash of the installed source, so a point
computed before any change to the code is never reused after it (a sweep of a point function outside the
package adds a hash of that function's module file: `attnphase.point_code.point_version`). The canonical parameters
are the JSON text of the parameter dict with sorted keys, floats written with `repr` (shortest round-trip
form, so the key is exact) and integral floats written as integers, so `beta=1` and `beta=1.0` name
the same point. A sweep fills in the point function's defaults before keying a point (`attnphase.sweep`), so a
parameter given at its default value and one left out name the same point. Results computed by another code version
are kept but never reused.

Why SQLite, and how the guarantees come about:

* Atomic points. Each `put` is one transaction writing one row; the result is one JSON column with
  a SHA-256 checksum of the whole row next to it. A process killed mid-write leaves either the whole
  row or nothing (SQLite's journal rolls an uncommitted transaction back on the next open).
* No duplicates. A UNIQUE constraint on the key plus `INSERT OR IGNORE`: when two processes compute
  the same point, the first commit wins and the second is a no-op.
* Concurrent writers. WAL journal mode lets readers run alongside the single writer; writers take
  the write lock up front (`BEGIN IMMEDIATE`) and wait up to `busy_timeout` for each other instead
  of failing. This holds for processes on one machine; WAL does not work over network filesystems
  (NFS, SMB), so keep the store on a local disk and let one driver write for a cluster.
* Durability. `synchronous=FULL`: a committed point survives a power loss, not only a crash.
* Corruption. Opening a store runs `PRAGMA quick_check` (b-tree structure, O(file size)); damage
  there raises `StoreError` naming the file and what to do. Every row read checks its checksum, which
  catches damage inside a row's bytes that the b-tree check cannot see: a damaged row is skipped and
  recorded (`ResultStore.damaged_rows`, `DamagedRow`) while every intact row stays readable, and a
  `put` of its point replaces it (a sweep computes a point whose row is damaged again).
* Other files are left alone. Opening lists the file's tables before anything is written: a writer
  makes a store of a new or empty file only, and refuses an SQLite database with other tables (its
  owner's data is not ours to add to). A reader (`read_only=True`, the `attnphase store` commands)
  never writes: SQLite opens the file read-only, so it cannot create, convert or change it, and a
  store on read-only media or in a directory the user may not write is read as immutable (see
  `ResultStore._may_read_as_immutable`). Beside a store in a writable directory SQLite may still
  create FILE-wal and FILE-shm, through which a reader and a running sweep share the file; the next
  sweep to close removes them.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnphase.errors import ParameterError
from attnphase.store_export import EXPORT_FORMATS, write_table
from attnphase.store_rows import (ROW_COLUMNS, DamagedRow, StoredPoint, canonical_params, read_row, result_text,
                                   row_checksum, text_as_stored)
from attnphase.version import code_version

__all__ = [
    "STORE_ENV", "DEFAULT_STORE_NAME", "EXPORT_FORMATS", "StoreError", "StoredPoint", "DamagedRow", "ModelSummary",
    "ResultStore", "default_store_path", "canonical_params",
]

STORE_ENV = "ATTNPHASE_STORE"
DEFAULT_STORE_NAME = "results.sqlite"
SCHEMA_VERSION = "1"
# How long a writer waits for another process holding the write lock. One put holds it for about
# one fsync, so this is only reached when something is badly stuck.
BUSY_TIMEOUT_MS = 60_000

# The tables that make an SQLite file a results store; a file with other tables and not these is someone else's.
_STORE_TABLES = {"meta", "results"}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    id       INTEGER PRIMARY KEY,
    model    TEXT NOT NULL,
    params   TEXT NOT NULL,   -- canonical JSON of the parameters
    version  TEXT NOT NULL,   -- attnphase.version.code_version() of the code that computed the point
    result   TEXT NOT NULL,   -- JSON object returned by the point function
    created  REAL NOT NULL,   -- unix time of the commit
    elapsed  REAL,            -- seconds the point took to compute, when known
    checksum TEXT NOT NULL,   -- sha256 of model, params, version and result
    UNIQUE (model, params, version)
);
"""


class StoreError(RuntimeError):
    """The store file cannot be used: corrupted, not a store, or not openable. Names the path."""

    def __init__(self, path: str | os.PathLike, problem: str, remedy: str):
        self.path = str(path)
        self.problem = problem
        self.remedy = remedy
        super().__init__(f"results store {self.path}: {problem}. {remedy}")

    def __reduce__(self):
        return (type(self), (self.path, self.problem, self.remedy))


_FRESH_STORE = ("move it aside (keep it for inspection; `sqlite3 FILE .recover` may salvage rows) and rerun the sweep "
                "with a fresh store: completed points are recomputed")
_CORRUPT_REMEDY = f"The file is damaged: {_FRESH_STORE}"


def default_store_path() -> Path:
    """$ATTNPHASE_STORE when set, else ./results.sqlite. Set but empty, it names no file: a ParameterError (not the
    default in the current directory, which the user did not name)."""
    value = os.environ.get(STORE_ENV)
    if value is None:
        return Path(DEFAULT_STORE_NAME)
    if not value:
        from attnphase.errors import ParameterError

        raise ParameterError(f"${STORE_ENV}", value, f"the path of a store file (unset: ./{DEFAULT_STORE_NAME}); an "
                                                     "empty path names no file")
    return Path(value)


@dataclass(frozen=True)
class ModelSummary:
    """What the store holds for one (model, version)."""

    model: str
    version: str
    n_points: int
    parameter_names: list[str]
    first_created: float
    last_created: float


class ResultStore:
    """A results store in one SQLite file (created on first use; `read_only=True` to only read one).

    >>> store = ResultStore("results.sqlite")                           # doctest: +SKIP
    >>> store.put("demo", {"beta": 1.5}, {"m": 0.8585})                 # doctest: +SKIP
    >>> store.get("demo", {"beta": 1.5})                                # doctest: +SKIP
    {'m': 0.8585}

    Lookups use the current code version (`attnphase.version.code_version()`) unless `version=` says
    otherwise. A damaged row is skipped by every reader, which records it in `damaged_rows` (row id ->
    `DamagedRow`: every damaged row this object has read, as it last read it: a row read intact again, or
    replaced by this object's `put`, is dropped). A store object holds one connection; give each process
    (and each thread) its own `ResultStore`.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, version: str | None = None,
                 read_only: bool = False):
        """read_only: open an existing store without writing anything (no points can be put). Otherwise the store
        is created when `path` does not exist or is an empty file."""
        self.path = Path(path) if path is not None else default_store_path()
        self.version = version or code_version()
        self.read_only = read_only
        self.damaged_rows: dict[int, DamagedRow] = {}
        try:
            exists, is_directory, directory_exists = self.path.exists(), self.path.is_dir(), self.path.parent.exists()
        except OSError as exc:  # these raise for a name too long for the system, or a directory one may not search
            raise StoreError(self.path, f"cannot be looked up ({exc.strerror})",
                             "Check the path and its permissions") from None
        if read_only and not exists:
            raise StoreError(self.path, "does not exist",
                             "Run a sweep first, or point --store / $ATTNPHASE_STORE at a store")
        if is_directory:
            raise StoreError(self.path, "is a directory", "Pass a file path with --store")
        if not directory_exists:
            raise StoreError(
                self.path, "its directory does not exist", "Create the directory or choose another path"
            )
        self._conn = self._connect(immutable=False)
        try:
            try:
                self._setup_when_unlocked()
            except sqlite3.OperationalError as exc:
                if not self._may_read_as_immutable(exc):
                    raise
                self._conn.close()
                self._conn = self._connect(immutable=True)
                self._setup_when_unlocked()
        except StoreError:
            self._conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise self._as_store_error(exc) from None

    # -- opening -------------------------------------------------------------------------------

    def _setup_when_unlocked(self) -> None:
        """`_setup`, retried while another process holds the file during its own first open.

        Switching a new file to WAL needs an exclusive lock, and SQLite can report "database is locked"
        for it at once instead of calling the busy handler, e.g. when two sweeps create the same store
        at the same moment. The set-up is idempotent, so it is retried until `BUSY_TIMEOUT_MS`.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        pause = 0.01
        while True:
            try:
                self._setup()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                    raise
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                time.sleep(pause)
                pause = min(2 * pause, 0.5)

    def _connect(self, *, immutable: bool) -> sqlite3.Connection:
        if self.read_only:
            # An SQLite URI (the path percent-encoded by as_uri) with mode=ro: SQLite itself refuses every write and
            # never creates the file.
            target, uri = self.path.absolute().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else ""), True
        else:
            target, uri = self.path, False
        try:
            # isolation_level=None: no implicit transactions; every transaction below is explicit.
            connection = sqlite3.connect(target, uri=uri, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(self.path, f"cannot be opened ({exc})", "Check the path and its permissions") from None
        connection.text_factory = text_as_stored
        return connection

    def _may_read_as_immutable(self, exc: sqlite3.OperationalError) -> bool:
        """Whether a read-only open that failed with `exc` is retried with the file declared immutable.

        Reading a WAL database needs its write-ahead log (FILE-wal) and shared-memory index (FILE-shm), which SQLite
        creates beside the file when they are missing. In a directory where this process cannot create files that
        fails: on read-only media with "unable to open" (SQLITE_CANTOPEN), in a directory without write permission
        for this user (a colleague's store, a shared project's) with SQLITE_READONLY_DIRECTORY, "attempt to write a
        readonly database". When no log holds points beside it, the file holds every committed point, so it is read
        as immutable: without the index and without locks. On read-only media no process can change it meanwhile;
        the owner of a directory this user may not write can start a sweep, whose points this read does not see (and
        should that sweep rewrite the file during the read, the read can fail as unreadable: run the command again).
        A log with points in it would be ignored that way (points silently missing), so that case is refused instead.
        """
        # The code names the unwritable directory itself; "unable to open" has other causes, so it is checked.
        directory_refused = getattr(exc, "sqlite_errorname", None) == "SQLITE_READONLY_DIRECTORY" or (
            "unable to open" in str(exc) and not os.access(self.path.parent, os.W_OK))
        if not self.read_only or not directory_refused:
            return False
        log = Path(f"{self.path}-wal")
        if log.exists() and log.stat().st_size > 0:
            raise StoreError(
                self.path, f"cannot be read: its directory is not writable and its write-ahead log {log} holds points "
                "not yet in the file",
                "Copy the store and its -wal file to a writable directory and run the command there (the first open "
                "moves the points into the store file)",
            )
        return True

    def _setup(self) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # The first statement that reads the header: a file that is not SQLite fails here, before anything is
        # written to it.
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        is_new = not tables  # a file just created, or an empty one: a writer makes it a store
        if not _STORE_TABLES <= tables and not (is_new and not self.read_only):
            problem = ("is empty, not a results store" if is_new
                       else f"is an SQLite database but not a results store (its tables: {', '.join(sorted(tables))})")
            raise StoreError(
                self.path, problem,
                "Point --store / $ATTNPHASE_STORE at a store a sweep wrote, or give a sweep a new file (attnphase "
                "never adds its tables to another database)",
            )
        if not self.read_only:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(
                    self.path, f"cannot use WAL journal mode (got {mode!r})",
                    "Put the store on a local disk (WAL needs shared memory; network filesystems lack it)",
                )
            conn.execute("PRAGMA synchronous = FULL")
        problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            # SQLite's problems can span lines ("*** in database main ***\nPage 3: ..."): each said on one
            raise StoreError(self.path, "failed the integrity check: " + "; ".join(" ".join(p.split())
                                                                                 for p in problems[:3]),
                             _CORRUPT_REMEDY)
        if is_new:
            # Idempotent, for two sweeps that create the same store at the same moment.
            with self._write():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
                )
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            raise StoreError(self.path, "has no schema version in its meta table", _CORRUPT_REMEDY)
        if row[0] != SCHEMA_VERSION:
            raise StoreError(
                self.path, f"has schema version {row[0]}, this code reads {SCHEMA_VERSION}",
                "Use the attnphase version that wrote it, or a new store",
            )

    def _as_store_error(self, exc: sqlite3.DatabaseError) -> StoreError:
        message = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and "locked" in message:
            return StoreError(self.path, f"stayed locked by another process ({message})",
                              "Another writer is stuck; wait for it or stop it")
        if "readonly" in message or "read-only" in message:
            return StoreError(self.path, f"is read-only ({message})",
                              "Make the file and its directory writable, or copy the store somewhere writable")
        if "unable to open" in message:
            return StoreError(self.path, f"cannot be opened ({message})", "Check the path and its permissions")
        if "not a database" in message:  # most often another file named by mistake; else a store's damaged header
            return StoreError(self.path, "is not a results store (not an SQLite database, or its header is damaged)",
                              "Check the path: --store (or $ATTNPHASE_STORE) may name another kind of file; if it is "
                              "a store, its first page is damaged: " + _FRESH_STORE)
        if "no such column" in message or "no such table" in message:
            return StoreError(self.path, f"is unreadable ({message})",
                              "Its tables lack what this code reads: written by another attnphase version with the "
                              "same schema version, or damaged. Use the version that wrote it, or " + _FRESH_STORE)
        return StoreError(self.path, f"is unreadable ({message})", _CORRUPT_REMEDY)

    class _Transaction:
        """`BEGIN IMMEDIATE` ... `COMMIT`: take the write lock first so two writers never deadlock."""

        def __init__(self, conn: sqlite3.Connection):
            self.conn = conn

        def __enter__(self):
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, exc_type, exc, tb):
            if exc_type is None:
                self.conn.execute("COMMIT")
            else:
                self.conn.execute("ROLLBACK")
            return False

    def _write(self) -> ResultStore._Transaction:
        return ResultStore._Transaction(self._conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading and writing points ------------------------------------------------------------

    def _guarded(self, func, *args):
        try:
            return func(*args)
        except sqlite3.DatabaseError as exc:
            raise self._as_store_error(exc) from None

    def put(self, model: str, params: Mapping[str, Any], result: Mapping[str, Any], *,
            elapsed: float | None = None, version: str | None = None) -> bool:
        """Commit one point (one transaction), under `version` (default: the store's). Returns False when the point
        was already stored; a damaged row of the point (`DamagedRow`) is replaced.

        Non-finite floats in `result` are kept exactly (NaN, +inf and -inf read back as they were put; `store_rows`).
        """
        key = canonical_params(params)
        if not isinstance(result, Mapping):
            raise ParameterError("result", result, "a dict of result names to values")
        text = result_text(result)
        version = version or self.version
        checksum = row_checksum(model, key, version, text)
        created = time.time()

        def insert():
            with self._write() as conn:
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO results (model, params, version, result, created, elapsed, checksum)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)", (model, key, version, text, created, elapsed, checksum),
                )
                if cursor.rowcount == 1:
                    return True
                # Stored already: the first commit wins, unless its row is damaged (same transaction, so no other
                # writer comes between the check and the replacement).
                stored = conn.execute(f"SELECT {self._COLUMNS} FROM results WHERE model = ? AND params = ? AND "
                                      "version = ?", (model, key, version)).fetchone()
                if stored is None or not isinstance(read_row(stored), DamagedRow):
                    return False
                conn.execute("UPDATE results SET result = ?, created = ?, elapsed = ?, checksum = ? WHERE id = ?",
                             (text, created, elapsed, checksum, stored[0]))
            self.damaged_rows.pop(stored[0], None)  # once committed: the row is whole again
            return True

        return self._guarded(insert)

    _COLUMNS = ROW_COLUMNS

    def _intact(self, raw: Iterable[tuple]) -> list[StoredPoint]:
        """The intact rows of `raw` as points; each damaged one is skipped and recorded in `damaged_rows`, and one
        recorded before that is intact now (replaced by another process) is dropped from it."""
        points = []
        for row in raw:
            read = read_row(row)
            if isinstance(read, DamagedRow):
                self.damaged_rows[read.row_id] = read
            else:
                self.damaged_rows.pop(row[0], None)  # the row's id: ROW_COLUMNS
                points.append(read)
        return points

    def get(self, model: str, params: Mapping[str, Any], *, version: str | None = None) -> dict[str, Any] | None:
        """The stored result of one point, or None when it has not been computed (by this version) or its row is
        damaged."""
        key = canonical_params(params)
        row = self._guarded(lambda: self._conn.execute(
            f"SELECT {self._COLUMNS} FROM results WHERE model = ? AND params = ? AND version = ?",
            (model, key, version or self.version),
        ).fetchone())
        points = [] if row is None else self._intact([row])
        return points[0].result if points else None

    def missing(self, model: str, params_list: Iterable[Mapping[str, Any]], *,
                version: str | None = None) -> list[dict[str, Any]]:
        """The points of `params_list` not yet stored for `model` (and this version), in order; a point whose row is
        damaged is missing."""
        wanted = [(canonical_params(p), dict(p)) for p in params_list]
        # Decoding every stored row (not only its key) verifies the checksums: a damaged row counts as missing (and
        # is recorded), never as present.
        version = version or self.version
        stored = {canonical_params(point.params) for point in self.rows(model, version=version)}
        return [params for key, params in wanted if key not in stored]

    def count_under_other_versions(self, model: str, params_list: Iterable[Mapping[str, Any]], *,
                                   version: str | None = None) -> int:
        """How many of the points of `params_list` are stored for `model` under a code version other than `version`
        (default: the store's). Results of other code are never reused: a sweep computes such points again."""
        version = version or self.version
        other = {key for (key,) in self._guarded(lambda: self._conn.execute(
            "SELECT DISTINCT params FROM results WHERE model = ? AND version != ?", (model, version)).fetchall())}
        return sum(canonical_params(params) in other for params in params_list)

    def rows(self, model: str | None = None, *, version: str | None = None) -> list[StoredPoint]:
        """Every intact stored point (all code versions unless `version` is given), oldest first; damaged rows are
        skipped and recorded in `damaged_rows`."""
        clauses, args = [], []
        if model is not None:
            clauses.append("model = ?")
            args.append(model)
        if version is not None:
            clauses.append("version = ?")
            args.append(version)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        raw = self._guarded(lambda: self._conn.execute(
            f"SELECT {self._COLUMNS} FROM results{where} ORDER BY id", args
        ).fetchall())
        return self._intact(raw)

    def count(self, model: str | None = None) -> int:
        """Number of stored points (all versions)."""
        if model is None:
            sql, args = "SELECT COUNT(*) FROM results", ()
        else:
            sql, args = "SELECT COUNT(*) FROM results WHERE model = ?", (model,)
        return self._guarded(lambda: self._conn.execute(sql, args).fetchone()[0])

    def versions_by_model(self) -> dict[str, list[str]]:
        """Each stored model's code versions (models and versions sorted), from the key columns alone: cheap, and
        also naming rows that are damaged."""
        pairs = self._guarded(lambda: self._conn.execute(
            "SELECT DISTINCT model, version FROM results ORDER BY model, version").fetchall())
        versions: dict[str, list[str]] = {}
        for model, version in pairs:
            versions.setdefault(model, []).append(version)
        return versions

    def summary(self) -> list[ModelSummary]:
        """One entry per (model, version): how many intact points, which parameters, when written."""
        groups: dict[tuple[str, str], list[StoredPoint]] = {}
        for point in self.rows():
            groups.setdefault((point.model, point.version), []).append(point)
        return [
            ModelSummary(
                model=model, version=version, n_points=len(points),
                parameter_names=sorted({name for p in points for name in p.params}),
                first_created=min(p.created for p in points), last_created=max(p.created for p in points),
            )
            for (model, version), points in sorted(groups.items())
        ]

    def verify(self) -> list[str]:
        """Full check: `PRAGMA integrity_check` plus every row's checksum. Returns the problems found."""
        problems = [row[0] for row in self._guarded(lambda: self._conn.execute("PRAGMA integrity_check").fetchall())]
        problems = [] if problems == ["ok"] else problems
        raw = self._guarded(lambda: self._conn.execute(f"SELECT {self._COLUMNS} FROM results ORDER BY id").fetchall())
        return problems + [str(read) for read in map(read_row, raw) if isinstance(read, DamagedRow)]

    # -- export ----------------------------------------------------------------------------------

    def export(self, path: str | os.PathLike, format: str = "csv", *, model: str | None = None,
               version: str | None = None) -> int:
        """Write the points (of `model`, or all; of code version `version`, or all) as a flat table
        (`store_export.write_table`); returns the number of rows."""
        return write_table(self.rows(model, version=version), path, format)
