"""Report directories: a Markdown report, PNG figures and the CSV data behind every figure.

A reproduce pipeline builds a `Report`, adds headline numbers, tables and figures, and writes it into
its own directory. Every figure is saved together with the table it was drawn from, so a reader can
re-plot or check any curve without rerunning the computation.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np

from attnphase.jsonio import decode_exact, encode_exact, to_jsonable
from attnphase.version import code_version

matplotlib.use("Agg")  # reports are written headless
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["Report", "Checkpoint", "write_csv", "write_json_atomically", "computed_once", "COMPUTED_ONCE_FORMAT"]


def _cell(value) -> str:
    if isinstance(value, float):
        return "n/a" if not math.isfinite(value) else f"{value:.6g}"
    return str(value)


def write_csv(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    """Write a list of dicts (same keys) as CSV; non-finite floats are written empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fieldnames: list[str] = []
    for row in rows:
        fieldnames.extend(k for k in row if k not in fieldnames)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fieldnames)
        writer.writeheader()
        for row in rows:
            writer.writerow({
                k: ("" if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()
            })
    return path


class Report:
    """Accumulates a Markdown report and writes it with its figures and data into `out_dir`."""

    def __init__(self, out_dir: Path, title: str):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._lines: list[str] = [f"# {title}", ""]

    def paragraph(self, text: str) -> None:
        self._lines += [text.strip(), ""]

    def heading(self, text: str, level: int = 2) -> None:
        self._lines += ["#" * level + " " + text, ""]

    def table(self, rows: Sequence[Mapping[str, object]], csv_name: str | None = None) -> None:
        """A Markdown table of `rows`; with `csv_name` the same rows are also written as CSV."""
        if not rows:
            self.paragraph("(no rows)")
            return
        keys = list(rows[0])
        self._lines.append("| " + " | ".join(keys) + " |")
        self._lines.append("|" + "---|" * len(keys))
        for row in rows:
            self._lines.append("| " + " | ".join(_cell(row.get(k, "")) for k in keys) + " |")
        self._lines.append("")
        if csv_name:
            write_csv(self.out_dir / csv_name, rows)
            self._lines += [f"Data: [`{csv_name}`]({csv_name})", ""]

    def figure(self, fig, name: str, caption: str, data: Sequence[Mapping[str, object]]) -> None:
        """Save `fig` as `<name>.png`, its data as `<name>.csv`, and link both from the report."""
        png, data_csv = f"{name}.png", f"{name}.csv"
        fig.savefig(self.out_dir / png, dpi=120, bbox_inches="tight")
        plt.close(fig)
        write_csv(self.out_dir / data_csv, data)
        self._lines += [f"![{caption}]({png})", "", f"*{caption}* Data: [`{data_csv}`]({data_csv})", ""]

    def write(self, name: str = "report.md") -> Path:
        path = self.out_dir / name
        path.write_text("\n".join(self._lines).rstrip() + "\n")
        return path


class Checkpoint:
    """Finished pieces of a long report, kept in one JSON file so that an interrupted run resumes.

    `get(key)` returns the stored dict (JSON null read back as NaN, at any depth) or None; `put(key, value)` stores a
    dict and rewrites the file atomically (write a sibling, then rename), so a kill never leaves a
    half-written file behind. The file records the code version (`attnphase.version.code_version()`)
    that wrote it: a file from another version of the code is ignored (and replaced at the first `put`),
    so a report never mixes pieces computed by different code.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.version = code_version()
        self.entries = {}
        if self.path.exists():
            stored = json.loads(self.path.read_text())
            if isinstance(stored, dict) and stored.get("version") == self.version:
                self.entries = stored.get("entries", {})

    def get(self, key: str) -> dict | None:
        stored = self.entries.get(key)
        return None if stored is None else _nulls_as_nan(stored)

    def put(self, key: str, value: Mapping[str, object]) -> None:
        self.entries[key] = to_jsonable(dict(value))
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


def write_json_atomically(path: Path, obj) -> Path:
    """Write `obj` as JSON (non-finite floats as null) to a sibling file, then rename it over `path`:
    a reader, or a run resumed after a kill, never sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(to_jsonable(obj), indent=1, allow_nan=False))
    partial.replace(path)
    return path


COMPUTED_ONCE_FORMAT = 1


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
    path = Path(path)
    json_path, npz_path = path.with_suffix(".json"), path.with_suffix(".npz")
    stored = _read_computed(json_path, npz_path)
    if stored is not _MISSING:
        return stored
    result = compute()
    arrays: dict = {}
    encoded = encode_exact(result, arrays)  # before writing anything: a TypeError leaves no files
    json_path.parent.mkdir(parents=True, exist_ok=True)
    array_hash = None
    if arrays:
        partial = npz_path.with_name(f"{npz_path.name}.{os.getpid()}.partial")
        with partial.open("wb") as handle:
            np.savez(handle, **arrays)
        array_hash = hashlib.sha256(partial.read_bytes()).hexdigest()
        partial.replace(npz_path)
    record = {"format": COMPUTED_ONCE_FORMAT, "version": code_version(),
              "arrays": npz_path.name if arrays else None, "arrays_sha256": array_hash, "value": encoded}
    partial = json_path.with_name(f"{json_path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(record, allow_nan=False))
    partial.replace(json_path)
    return result


_MISSING = object()


def _read_computed(json_path: Path, npz_path: Path):
    """The stored result, or _MISSING when there is none usable for this code version."""
    if not json_path.exists():
        return _MISSING
    try:
        record = json.loads(json_path.read_text())
        if record.get("format") != COMPUTED_ONCE_FORMAT or record.get("version") != code_version():
            return _MISSING
        arrays = {}
        if record["arrays"] is not None:
            raw = npz_path.read_bytes()
            if hashlib.sha256(raw).hexdigest() != record["arrays_sha256"]:
                return _MISSING
            with np.load(io.BytesIO(raw), allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        return decode_exact(record["value"], arrays)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError):
        return _MISSING  # unreadable, or written by code whose classes have changed: compute again
