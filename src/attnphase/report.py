"""Report directories: a Markdown report, PNG figures and the CSV data behind every figure.

A reproduce pipeline builds a `Report`, adds headline numbers, tables and figures, and writes it into
its own directory. Every figure is saved together with the table it was drawn from, so a reader can
re-plot or check any curve without rerunning the computation.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are written headless
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["Report", "write_csv"]


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
