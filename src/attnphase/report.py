"""Report directories: a Markdown report, PNG figures and the CSV data behind every figure.

A reproduce pipeline builds a `Report`, adds headline numbers, tables and figures, and writes it into
its own directory. Every figure is saved together with the table it was drawn from, so a reader can
re-plot or check any curve without rerunning the computation.

Every file is written to a sibling and renamed over its name (`resume.written_atomically`): a run interrupted or
killed while it writes leaves the earlier file or the new one, never a truncated one that ends on a whole line and
looks complete.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are written headless
import matplotlib.pyplot as plt  # noqa: E402

from attnphase.numeric.digits import error_rounded_up  # noqa: E402
from attnphase.resume import written_atomically  # noqa: E402

__all__ = ["Report", "write_csv", "save_figure", "write_text", "value_with_error"]


def _cell(value) -> str:
    if isinstance(value, float):
        return "n/a" if not math.isfinite(value) else f"{value:.6g}"
    return str(value)


def value_with_error(value: float, error: float, min_decimals: int = 3) -> str:
    """"value ± error", both to the same decimal place: that of the error's second significant digit, rounded up
    (`error_rounded_up`), so that no nonzero error prints as 0.000, or min_decimals where that is more (a table's
    column keeps its decimals: 1.000 ± 0.500 at min_decimals 3); a non-finite error prints as "(no error)"."""
    if not math.isfinite(error):
        return f"{value:.{min_decimals}f} (no error)"
    if error <= 0:
        return f"{value:.{min_decimals}f} ± 0"
    decimals = max(min_decimals, 1 - math.floor(math.log10(error)))
    if decimals > min_decimals and float(error_rounded_up(error, decimals)) >= 10.0 ** (2 - decimals):
        decimals -= 1  # rounded up into the next decade (0.0995 -> 0.100): two digits are one decimal fewer there
    return f"{value:.{decimals}f} ± {error_rounded_up(error, decimals)}"


def write_text(path: Path, text: str) -> Path:
    """Write `text` to `path` (`written_atomically`)."""
    with written_atomically(path) as partial:
        partial.write_text(text)
    return Path(path)


def save_figure(fig, path: Path, **savefig_options) -> Path:
    """Save the matplotlib figure `fig` as the PNG `path` (`written_atomically`) and close it."""
    with written_atomically(path) as partial:
        fig.savefig(partial, format="png", **savefig_options)
    plt.close(fig)
    return Path(path)


def write_csv(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    """Write a list of dicts (same keys) as CSV (`written_atomically`); non-finite floats are written empty."""
    fieldnames: list[str] = []
    for row in rows:
        fieldnames.extend(k for k in row if k not in fieldnames)
    with written_atomically(path) as partial, partial.open("w", newline="") as handle:
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
        save_figure(fig, self.out_dir / png, dpi=120, bbox_inches="tight")
        write_csv(self.out_dir / data_csv, data)
        self._lines += [f"![{caption}]({png})", "", f"*{caption}* Data: [`{data_csv}`]({data_csv})", ""]

    def write(self, name: str = "report.md") -> Path:
        return write_text(self.out_dir / name, "\n".join(self._lines).rstrip() + "\n")
