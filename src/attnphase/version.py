"""The code version that keys every stored result: the package version plus a hash of its source.

`attnphase.__version__` (from the package metadata) changes only at a release, while results change
with every edit of a solver. Everything that is cached or stored across processes (the results store,
the JSON outputs' "version" field, the reproduce checkpoints) is therefore keyed by `code_version()`:

    0.1.0+src.3f9a1c2b7d4e

the release version, then the first 12 hex digits of a SHA-256 over the package's own source files
(their paths relative to the package and their bytes, in sorted order; `__pycache__` and compiled
files are left out).

Why a hash of the installed source rather than the git revision: it is the same for a wheel, an
editable install and a checkout, needs neither git nor a repository, and changes with an uncommitted
edit, which is exactly when a researcher would otherwise reuse a stale cache (a revision says nothing
about local changes, and `git status` to find them costs more than hashing). Two clones of the same
commit get the same version, so results can be shared between machines.

The hash is computed once per process, on first use (about 0.6 MB of source: a few milliseconds),
and importing this module imports nothing beyond the standard library.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

__all__ = ["package_version", "source_hash", "code_version", "hash_of_tree"]

PACKAGE_DIR = Path(__file__).resolve().parent
HASH_DIGITS = 12
# Files that are not source: byte-compiled caches, and editor or OS leftovers.
_SKIPPED_SUFFIXES = (".pyc", ".pyo", ".swp", "~")
_SKIPPED_DIRS = ("__pycache__",)


@cache
def package_version() -> str:
    """The installed distribution's version (pyproject.toml), or "0.0.0+unknown" when not installed.

    Read from the `Version:` line of the distribution's METADATA file on sys.path; importlib.metadata
    (the fallback, for installs that are not plain directories) costs about 0.1 s of imports, which
    `attnphase --version` cannot afford.
    """
    import sys

    for entry in sys.path:
        directory = Path(entry or ".")
        if not directory.is_dir():
            continue
        for info in directory.glob("attnphase-*.dist-info"):
            try:
                for line in (info / "METADATA").read_text(encoding="utf-8").splitlines():
                    if line.startswith("Version:"):
                        return line.partition(":")[2].strip()
                    if not line:  # the end of the headers
                        break
            except OSError:
                continue
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("attnphase")
    except PackageNotFoundError:
        return "0.0.0+unknown"


def _source_files(root: Path) -> list[Path]:
    files = []
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if not path.is_file() or any(part in _SKIPPED_DIRS or part.startswith(".") for part in relative.parts):
            continue
        if path.name.endswith(_SKIPPED_SUFFIXES):
            continue
        files.append(path)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def hash_of_tree(root: Path) -> str:
    """SHA-256 (hex) of the source files under `root`: each file's relative path and bytes, sorted by path."""
    digest = hashlib.sha256()
    for path in _source_files(root):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\x00")
        digest.update(path.read_bytes())
        digest.update(b"\x00")
    return digest.hexdigest()


@cache
def source_hash() -> str:
    """The first HASH_DIGITS hex digits of the hash of this package's source (computed once per process)."""
    return hash_of_tree(PACKAGE_DIR)[:HASH_DIGITS]


@cache
def code_version() -> str:
    """`<package version>+src.<source hash>`: the key under which results of this code are stored.

    A release version that already carries a local part (`0.1.0+foo`) gets the hash appended with a dot.
    """
    base = package_version()
    separator = "." if "+" in base else "+"
    return f"{base}{separator}src.{source_hash()}"
