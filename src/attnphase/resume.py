"""Work kept on disk so that an interrupted run resumes: nothing already computed is computed again.

* `Checkpoint`: finished pieces of a long run (dicts of numbers and text) in one JSON file.
* `computed_once`: one result (nested objects: arrays, the package's result dataclasses) in a JSON file plus an
  array file, computed on the first call and read back on later ones; `keep` and `read_kept`, its two halves,
  for results that come one at a time from a generator.
* `write_json_atomically`: the write both use (a sibling file, then a rename); `kept_directory`: where one
  computation's pieces go, named by a hash of its arguments.
* `cache_root`: where the toolkit keeps work that is not a report's (compiled kernels, finished points of long
  commands): $ATTNPHASE_CACHE_DIR, else ~/.cache/attnphase.

Everything kept records the code version that wrote it (`attnphase.version.code_version()`) and is ignored by
any other version, so a run never mixes pieces computed by different code.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from attnphase.jsonio import decode_exact, encode_exact, to_jsonable
from attnphase.version import code_version

__all__ = ["CACHE_ENV", "cache_root", "cache_root_error", "Checkpoint", "write_json_atomically", "written_atomically",
           "kept_directory", "computed_once", "read_kept", "keep", "COMPUTED_ONCE_FORMAT", "take_tally",
           "kept_by_this_process"]

CACHE_ENV = "ATTNPHASE_CACHE_DIR"

# Pieces read back, and pieces kept by another code version and so not used, since the last `take_tally`: what a
# resumed run says it reused (`attnphase reproduce` per model), since a change of the code drops every kept piece.
# Only what an earlier process kept counts: a piece this process kept and reads again (a sweep's points, put then
# read to build its table) is not reused work.
_tally = {"read_back": 0, "other_version": 0}
_kept_here: set[Path] = set()  # the `keep` paths (JSON files) written by this process
_checkpoint_puts = 0  # pieces this process put into `Checkpoint`s


def kept_by_this_process() -> int:
    """How many pieces this process has kept (`keep`, `computed_once`, `Checkpoint.put`): what an interruption can
    say it kept."""
    return len(_kept_here) + _checkpoint_puts


def take_tally() -> dict[str, int]:
    """The pieces read back and the pieces of another code version left unused since the last call; resets both."""
    counts = dict(_tally)
    _tally.update(read_back=0, other_version=0)
    return counts


def cache_root() -> Path:
    """$ATTNPHASE_CACHE_DIR when set, else ~/.cache/attnphase."""
    return Path(os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "attnphase"))


def cache_root_error(exc: OSError):
    """The ParameterError for a cache below `cache_root()` that cannot be written (a file in the way, no permission):
    it names $ATTNPHASE_CACHE_DIR, the one setting a user changes to fix it, with the directory used and the cause."""
    from attnphase.errors import ParameterError

    return ParameterError(f"${CACHE_ENV}", os.environ.get(CACHE_ENV) or f"unset, so {cache_root()}",
                          f"a writable directory ({exc})")


class Checkpoint:
    """Finished pieces of a long report, kept in one JSON file so that an interrupted run resumes.

    `get(key)` returns the stored dict (JSON null read back as NaN, at any depth) or None; `put(key, value)` stores a
    dict and rewrites the file atomically (write a sibling, then rename), so a kill never leaves a
    half-written file behind. The file records the code version (`attnphase.version.code_version()`)
    that wrote it: a file from another version of the code is ignored (and replaced at the first `put`),
    so a report never mixes pieces computed by different code.

    A file that cannot be read as a checkpoint (truncated, damaged, not JSON) is set aside, renamed to
    `<name>.unreadable` (`.unreadable-2`, ... when that exists; nothing is deleted), with a one-line warning
    on stderr naming both files, and its pieces are computed again.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.version = code_version()
        self.entries = {}
        self._from_disk: set[str] = set()  # keys an earlier process kept, not yet read back (`take_tally`)
        if self.path.exists():
            try:
                stored = json.loads(self.path.read_text())
                if not isinstance(stored, dict) or not isinstance(stored.get("entries", {}), dict):
                    raise ValueError("not a checkpoint: no dict of entries")
            except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
                self._set_aside(exc)
                return
            if stored.get("version") == self.version:
                self.entries = stored.get("entries", {})
                self._from_disk = set(self.entries)
            else:
                _tally["other_version"] += len(stored.get("entries", {}))

    def _set_aside(self, exc: Exception) -> None:
        aside = self.path.with_name(self.path.name + ".unreadable")
        number = 1
        while aside.exists():
            number += 1
            aside = self.path.with_name(f"{self.path.name}.unreadable-{number}")
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        try:
            self.path.replace(aside)
            kept = f"set aside as {aside}"
        except OSError as rename_error:
            kept = f"left in place ({rename_error.strerror or rename_error}); it is replaced at the first piece"
        print(f"warning: checkpoint {self.path} could not be read ({reason}); {kept}, and its pieces are computed "
              f"again", file=sys.stderr, flush=True)

    def get(self, key: str) -> dict | None:
        stored = self.entries.get(key)
        if stored is None:
            return None
        if key in self._from_disk:
            self._from_disk.discard(key)
            _tally["read_back"] += 1
        return _nulls_as_nan(stored)

    def put(self, key: str, value: Mapping[str, object]) -> None:
        global _checkpoint_puts
        self.entries[key] = to_jsonable(dict(value))
        _checkpoint_puts += 1
        write_json_atomically(self.path, {"version": self.version, "entries": self.entries})


def _nulls_as_nan(value):
    """A stored JSON value with every null, at any depth of dicts and lists, read back as NaN (how a non-finite
    number was written)."""
    if value is None:
        return math.nan
    if isinstance(value, dict):
        return {k: _nulls_as_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nulls_as_nan(v) for v in value]
    return value


@contextlib.contextmanager
def written_atomically(path: Path) -> Iterator[Path]:
    """The sibling file to write `path`'s new content to; renamed over `path` when the block ends without an error,
    removed otherwise (the parent directory is created): a reader, or a run resumed after an interruption, sees the
    earlier file or the new one, never a half-written one, and no stray sibling is left. A process killed outright
    (SIGKILL) while it wrote cannot remove its sibling: the next write of `path` removes the siblings of processes
    that no longer run (`_remove_siblings_of_ended_processes`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_siblings_of_ended_processes(path)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        yield partial
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def _remove_siblings_of_ended_processes(path: Path) -> None:
    """Remove `path`'s `<name>.<pid>.partial` siblings whose process has ended (a write cut short by SIGKILL). The
    sibling of a process that still runs is its write in progress and is left alone, as is one whose pid another
    process has since taken (it is removed once that one ends)."""
    for sibling in path.parent.glob(f"{glob.escape(path.name)}.*.partial"):
        pid = sibling.name[len(path.name) + 1:-len(".partial")]
        if pid.isdigit() and not _process_runs(int(pid)):
            sibling.unlink(missing_ok=True)


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def write_json_atomically(path: Path, obj) -> Path:
    """Write `obj` as JSON (non-finite floats as null) to `path` (`written_atomically`)."""
    with written_atomically(path) as partial:
        partial.write_text(json.dumps(to_jsonable(obj), indent=1, allow_nan=False))
    return Path(path)


COMPUTED_ONCE_FORMAT = 1


def kept_directory(root, kind: str, arguments: Mapping[str, object]) -> Path:
    """The directory `root`/`kind`-<hash> for the pieces of one computation, the hash that of `arguments` (every
    argument its values depend on, as JSON), so that a call with other arguments never reads them; created, with
    the arguments written beside the pieces. Raises ParameterError (checkpoint_dir) when it cannot be made."""
    from attnphase.errors import ParameterError

    text = json.dumps(to_jsonable(dict(arguments)), sort_keys=True)
    if isinstance(root, (str, os.PathLike)) and not os.fspath(root).strip():  # "" would be the working directory
        raise ParameterError("checkpoint_dir", root, "a directory path, not empty (None: keep nothing)")
    try:
        directory = Path(root) / f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
        directory.mkdir(parents=True, exist_ok=True)
        with written_atomically(directory / "arguments.json") as partial:
            partial.write_text(text + "\n")
    except (OSError, TypeError) as exc:
        shown = os.fspath(root) if isinstance(root, os.PathLike) else root  # a path as its text, not a Path's repr
        raise ParameterError("checkpoint_dir", shown, f"a writable directory ({exc})") from None
    return directory


def computed_once(path: Path, compute):
    """compute()'s result, kept on disk: computed on the first call, read back on later ones.

    For pieces of a report whose results are nested Python objects (simulation outputs with arrays,
    optional fields, the package's result dataclasses). The result is written as `<stem>.json` (numbers,
    text, lists, dicts, and tagged entries for what JSON cannot hold; see `attnphase.jsonio.encode_exact`)
    plus `<stem>.npz` for its numpy arrays, where `<stem>` is `path` without its suffix; no pickle, so
    reading a report directory never runs code, and classes are rebuilt only from the attnphase package.
    The object read back equals the one computed (arrays, NaN, None, tuples, mpmath numbers included).

    The JSON file names the code version that wrote it and the SHA-256 of its array file; a file of
    another code version, a missing or different array file, or an unreadable file is recomputed. Both
    files are written to siblings and renamed, arrays first, so an interrupted run leaves either no
    result or a whole one; delete the JSON file to recompute.
    """
    stored = read_kept(path, _MISSING)
    if stored is not _MISSING:
        return stored
    result = compute()
    keep(path, result)
    return result


def read_kept(path: Path, missing=None):
    """What `keep` (or `computed_once`) stored at `path`, or `missing` where nothing usable by this code version
    is stored there."""
    path = Path(path)
    return _read_computed(path.with_suffix(".json"), path.with_suffix(".npz"), missing)


def keep(path: Path, result) -> None:
    """Store `result` at `path` as `computed_once` does (the JSON file and, for its arrays, the array file)."""
    path = Path(path)
    json_path, npz_path = path.with_suffix(".json"), path.with_suffix(".npz")
    arrays: dict = {}
    encoded = encode_exact(result, arrays)  # before writing anything: a TypeError leaves no files
    json_path.parent.mkdir(parents=True, exist_ok=True)
    array_hash = None
    if arrays:
        with written_atomically(npz_path) as partial:
            with partial.open("wb") as handle:
                np.savez(handle, **arrays)
            array_hash = hashlib.sha256(partial.read_bytes()).hexdigest()
    record = {"format": COMPUTED_ONCE_FORMAT, "version": code_version(),
              "arrays": npz_path.name if arrays else None, "arrays_sha256": array_hash, "value": encoded}
    with written_atomically(json_path) as partial:
        partial.write_text(json.dumps(record, allow_nan=False))
    _kept_here.add(json_path.resolve())


_MISSING = object()


def _read_computed(json_path: Path, npz_path: Path, missing):
    """The stored result, or `missing` when there is none usable for this code version."""
    if not json_path.exists():
        return missing
    try:
        record = json.loads(json_path.read_text())
        if record.get("format") != COMPUTED_ONCE_FORMAT or record.get("version") != code_version():
            _tally["other_version"] += 1
            return missing
        arrays = {}
        if record["arrays"] is not None:
            raw = npz_path.read_bytes()
            if hashlib.sha256(raw).hexdigest() != record["arrays_sha256"]:
                return missing
            with np.load(io.BytesIO(raw), allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        value = decode_exact(record["value"], arrays)
        if json_path.resolve() not in _kept_here:
            _tally["read_back"] += 1
        return value
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError):
        return missing  # unreadable, or written by code whose classes have changed: compute again
