"""Options naming a place a command writes to, checked when the command line is read.

A command that computes for minutes (or hours) and then cannot write its output loses that work, and an empty
path would silently mean the current directory. So `OutputPath` refuses, before anything runs, with exit status 2
and a message naming the option: the empty path, a path of the wrong kind (a file for a directory or the other
way round), and a path that cannot be written or created.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import click

__all__ = ["OutputPath", "why_not_writable"]


def why_not_writable(path: str | os.PathLike, *, directory: bool) -> str | None:
    """Why `path` (not empty) cannot be written, as a sentence naming it, or None when it can.

    directory: a directory that the command creates with its missing parents when needed, so the nearest existing
    ancestor must be a writable directory; else a file, whose directory must already exist and be writable.
    """
    problem = _write_problem(Path(path), directory)
    return None if problem is None else f"{'Directory' if directory else 'File'} {os.fspath(path)!r} {problem}."


def _write_problem(path: Path, directory: bool) -> str | None:
    try:  # os.path.exists says False for a name the system cannot look up, and the check below would pass it
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return f"cannot be created: {exc.strerror}"
    if os.path.exists(path):
        if directory != path.is_dir():
            return "is a file, not a directory" if directory else "is a directory, not a file"
        if directory:
            reason = _why_no_file_can_be_made_in(path)
            return None if reason is None else f"is not writable ({reason})"
        if not path.is_file():
            # a device or a named pipe: the output would be renamed over it (as root, /dev/null for every process)
            return "is not a regular file (a device, a pipe or a socket): give a new path or a regular file"
        if not os.access(path, os.W_OK):
            return "is not writable"
        # The file is replaced by a sibling renamed over it (store export) or kept with SQLite's log beside it (a
        # sweep's store): its directory must take new files too.
        reason = _why_no_file_can_be_made_in(path.parent)
        return None if reason is None else f"cannot be written: its directory {path.parent} is not writable ({reason})"
    parent = path.parent
    if directory:
        while not os.path.exists(parent) and parent != parent.parent:
            parent = parent.parent
    elif not os.path.exists(parent):
        return f"cannot be created: its directory {parent} does not exist"
    if not parent.is_dir():
        return f"cannot be created: {parent} is a file, not a directory"
    reason = _why_no_file_can_be_made_in(parent)
    return None if reason is None else f"cannot be created: {parent} is not writable ({reason})"


def _why_no_file_can_be_made_in(directory: Path) -> str | None:
    """Why no file can be created in the existing `directory`, or None when one can: found by creating and removing
    a trial file. Permission bits (`os.access`) cannot tell: root passes them everywhere, also where nothing can be
    created (/proc, a filesystem that refuses writes for other reasons)."""
    try:
        descriptor, trial = tempfile.mkstemp(prefix=".attnphase-write-check-", dir=directory)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(descriptor)
    os.unlink(trial)
    return None


class OutputPath(click.Path):
    """A `click.Path` (converted to `pathlib.Path`) for a directory or file the command writes.

    directory: a directory, created with its missing parents by the command; else a file in an existing directory.
    writable: refuse a path that cannot be written (`why_not_writable`). A command that writes only with some
    options (`derive` without --check) passes False and calls `why_not_writable` itself when it will write; the
    empty path and the wrong kind are refused either way.
    """

    def __init__(self, *, directory: bool, writable: bool = True):
        super().__init__(file_okay=not directory, dir_okay=directory, path_type=Path)
        self.directory = directory
        self.check_writable = writable

    def convert(self, value, param, ctx):
        text = os.fspath(value)
        if not text:
            hint = " ('.' is the current directory)" if self.directory else ""
            self.fail(f"An empty path names no {self.name}{hint}.", param, ctx)
        problem = why_not_writable(text, directory=self.directory) if self.check_writable else None
        if problem is not None:
            self.fail(problem, param, ctx)
        return super().convert(value, param, ctx)  # the kind of an existing path, when not checked above
