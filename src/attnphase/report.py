"""Report directories: a Markdown report, PNG figures and the CSV data behind every figure.

A reproduce pipeline builds a `Report`, adds headline numbers, tables and figures, and writes it into
its own directory. Every figure is saved together with the table it was drawn from, so a reader can
re-plot or check any curve without rerunning the computation.
"""

from __future__ import annotations

import csv
import json
import math
import os
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

from attnphase.jsonio import to_jsonable

matplotlib.use("Agg")  # reports are written headless
import matplotlib.pyplot as plt  # noqa: E402


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

    `get(key)` returns the stored dict (JSON null read back as NaN) or None; `put(key, value)` stores a
    dict and rewrites the file atomically (write a sibling, then rename), so a kill never leaves a
    half-written file behind.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.entries = json.loads(self.path.read_text()) if self.path.exists() else {}

    def get(self, key: str) -> dict | None:
        stored = self.entries.get(key)
        return None if stored is None else {k: math.nan if v is None else v for k, v in stored.items()}

    def put(self, key: str, value: Mapping[str, object]) -> None:
        self.entries[key] = to_jsonable(dict(value))
        write_json_atomically(self.path, self.entries)


def write_json_atomically(path: Path, obj) -> Path:
    """Write `obj` as JSON (non-finite floats as null) to a sibling file, then rename it over `path`:
    a reader, or a run resumed after a kill, never sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(to_jsonable(obj), indent=1, allow_nan=False))
    partial.replace(path)
    return path


def computed_once(path: Path, compute):
    """compute()'s result, kept in the pickle file `path`: computed on the first call, read back on later ones.

    For pieces of a report whose results are nested Python objects (simulation outputs with arrays and
    optional fields) that a JSON round trip would not give back exactly. The file is written to a sibling
    and renamed, so an interrupted run leaves either no file or a whole one; delete it to recompute.
    """
    path = Path(path)
    if path.exists():
        return pickle.loads(path.read_bytes())
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_bytes(pickle.dumps(result))
    partial.replace(path)
    return result
