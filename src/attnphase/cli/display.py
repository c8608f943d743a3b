"""Human-readable output of a command's result: tables on stdout, drawn with `rich`.

`render(payload, units)` turns the JSON-safe payload that `attnphase.cli.common.emit` builds into:

* one two-column table of the payload's scalar fields (name, value), with a third column for the
  unit or convention of the fields that carry one;
* one table per nested mapping (its scalar fields, titled with the mapping's path, e.g. `branches.positional`);
* one table per list of records (a list of mappings): a column per key, one row per record; a cell
  that holds a nested value shows its size instead (`3 values`, `2 fields`); a table too wide for the
  screen is transposed (a few records) or split by columns, never broken inside a word;
* lists of numbers inline when short, else their first values and a count.

Long lists of records are cut to `MAX_ROWS` rows with a line that says how many were left out; `--json`
gives everything. Units: `units` maps a field's path (`"alpha_c"`, `"branches.positional.q"`, or a last
component such as `"q"`, which applies wherever that name appears) to a short text (`"per token"`,
`"nats"`, `"rho = <w, w*>/|w*|"`). A command passes them to `emit(..., units=...)`; no model has to.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render", "units_from", "format_value", "console", "print_renderables", "MAX_ROWS", "MAX_INLINE_VALUES",
           "MAX_TRANSPOSED_RECORDS", "PIPED_WIDTH"]

MAX_ROWS = 20  # records shown per table of records (scalar tables show every field)
MAX_INLINE_VALUES = 8
MAX_TRANSPOSED_RECORDS = 6  # a table of records too wide for the screen is transposed up to this many records
MIN_WRAPPED_WIDTH = 40  # a column wider than the room left still joins its table if this much is left: it is wrapped
COLUMN_GAP = 3  # characters between two columns of a table of records
SIGNIFICANT_DIGITS = 6
PIPED_WIDTH = 120  # columns of the tables when stdout is not a terminal (a terminal gives its own width)


def console(file=None):
    """A rich Console on `file` (default: the current sys.stdout), without colour guessing on numbers."""
    import sys

    from rich.console import Console

    file = file or sys.stdout
    is_terminal = hasattr(file, "isatty") and file.isatty()
    return Console(file=file, highlight=False, soft_wrap=False, width=None if is_terminal else PIPED_WIDTH)


def print_renderables(renderables, file=None) -> None:
    """Print rich renderables (tables, text) to `file` without the trailing blanks rich pads lines with."""
    import io
    import sys

    from rich.console import Console

    file = file or sys.stdout
    target = console(file)
    buffer = io.StringIO()
    # Rendered into a buffer with the target's width and colours, then trimmed line by line.
    staging = Console(file=buffer, highlight=False, soft_wrap=False, width=target.width,
                      force_terminal=target.is_terminal, color_system=target.color_system)
    for item in renderables:
        staging.print(item)
    file.write("\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n")


def format_value(value: Any) -> str:
    """One cell: numbers to SIGNIFICANT_DIGITS digits, None as "n/a" (not computed), short lists inline."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "n/a"
        return f"{value:.{SIGNIFICANT_DIGITS}g}"
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return f"{len(value)} fields"
    if isinstance(value, Sequence):
        if _is_scalar_list(value) and len(value) <= MAX_INLINE_VALUES:
            return ", ".join(_list_item(v) for v in value) if value else "(none)"
        if _is_scalar_list(value):
            head = ", ".join(_list_item(v) for v in value[:4])
            return f"{head}, ... ({len(value)} values)"
        return f"{len(value)} values"
    return str(value)


def _list_item(value: Any) -> str:
    """One value of an inline list: an empty string (a digit string not computed, e.g. a spinodal beyond the range
    followed) as "n/a", as a missing number is, not as nothing between two commas."""
    return format_value(value) or "n/a"


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _is_scalar_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str) and all(_is_scalar(v) for v in value)


def _is_record_list(value: Any) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str) and len(value) > 0
            and all(isinstance(v, Mapping) for v in value))


def _unit(units: Mapping[str, str], path: str) -> str:
    if path in units:
        return units[path]
    return units.get(path.rsplit(".", 1)[-1], "")


def _title_width(title: str | None) -> int | None:
    """A table is at least as wide as its title: rich wraps a title to the table's width, so a narrow
    table would print its title broken over lines ("parameter" / "s")."""
    return len(title) if title else None


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def _scalar_table(title: str | None, rows: list[tuple[str, Any]], units: Mapping[str, str], prefix: str):
    from rich.table import Table

    with_units = any(_unit(units, prefix + name) for name, _ in rows)
    table = Table(title=_literal(title), title_justify="left", show_header=False, box=None, pad_edge=False,
                  min_width=_title_width(title))
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    if with_units:
        table.add_column("unit", style="dim", overflow="fold")
    for name, value in rows:  # every field: a parameter or a result hidden behind "... more" would be lost
        cells = [name, format_value(value)]
        if with_units:
            cells.append(_unit(units, prefix + name))
        table.add_row(*map(_literal, cells))
    return table


def _record_tables(title: str, records: Sequence[Mapping[str, Any]], units: Mapping[str, str], prefix: str,
                   width: int) -> list:
    """A list of records as tables of at most `width` columns of text.

    One row per record when the columns fit side by side; otherwise, for a few records whose transposed table fits,
    one row per field and one column per record (transposed); otherwise the columns split over several tables, each
    repeating the first column so that its rows can be matched up, a column wider than the room left joining a table
    where at least MIN_WRAPPED_WIDTH is left (one table where all do). No cell is ever cut: one wider than its column
    (a long message) is wrapped at spaces (a single word longer than its column, folded). Transposed, six failed sweep
    points with long messages were six narrow columns, each message over 20 lines.
    """
    columns: list[str] = []
    for record in records:
        columns.extend(k for k in record if k not in columns)
    shown = records[:MAX_ROWS]
    headers = [f"{c}\n({_unit(units, prefix + c)})" if _unit(units, prefix + c) else c for c in columns]
    cells = [[format_value(record.get(c)) if c in record else "" for c in columns] for record in shown]
    widths = [max([len(line) for line in header.splitlines()] + [len(row[k]) for row in cells])
              for k, header in enumerate(headers)]
    caption = f"first {len(shown)} of {len(records)} rows (all of them with --json)" if len(records) > len(shown) else None
    if sum(widths) + COLUMN_GAP * (len(widths) - 1) <= width:
        return [_grid(title, headers, cells, caption)]
    transposed_widths = [max(len(h.replace("\n", " ")) for h in headers)] + [max(map(len, row)) for row in cells]
    if (len(records) <= MAX_TRANSPOSED_RECORDS
            and sum(transposed_widths) + COLUMN_GAP * (len(transposed_widths) - 1) <= width):
        labels = [row[0] if columns and isinstance(shown[k].get(columns[0]), str) else f"[{k}]"
                  for k, row in enumerate(cells)]
        transposed = [[headers[k].replace("\n", " ")] + [row[k] for row in cells] for k in range(len(columns))]
        if labels[0] != "[0]":  # the first column names the records: it is the header row now
            transposed = transposed[1:]
        return [_grid(title, [columns[0] if labels[0] != "[0]" else "", *labels], transposed, caption,
                      first_column_bold=True)]
    tables, start = [], 1
    while start < len(columns):
        used, stop = widths[0], start
        joins = lambda k: used + COLUMN_GAP + min(widths[k], MIN_WRAPPED_WIDTH) <= width  # noqa: E731
        while stop < len(columns) and (stop == start or joins(stop)):
            used += COLUMN_GAP + widths[stop]
            stop += 1
        if start == 1 and stop == len(columns):  # every column in one table
            return [_grid(title, headers, cells, caption)]
        part = [0, *range(start, stop)]
        tables.append(_grid(f"{title}, columns {start + 1}-{stop} of {len(columns)}" if stop > start + 1
                            else f"{title}, column {start + 1} of {len(columns)}",
                            [headers[k] for k in part], [[row[k] for k in part] for row in cells], caption))
        start = stop
    return tables


def _grid(title: str, headers: list[str], rows: list[list[str]], caption: str | None, first_column_bold=False):
    from rich import box
    from rich.table import Table

    table = Table(title=_literal(title), title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, min_width=_title_width(title), caption=_literal(caption), caption_justify="left")
    # The first column (the names matching rows up) keeps its width; the others stay on one line where they fit and are
    # wrapped at spaces where not: without it rich cuts a cell wider than the table (a missing branch's evidence) and
    # the names to "…".
    first_cells = [headers[0], *(row[0] for row in rows)] if headers else []
    first_width = max((len(line) for text in first_cells for line in text.splitlines()), default=0)
    for k, header in enumerate(headers):
        if k == 0:
            table.add_column(_literal(header), no_wrap=True, min_width=first_width,
                             style="bold" if first_column_bold else None)
        else:
            table.add_column(_literal(header), overflow="fold")
    for row in rows:
        table.add_row(*map(_literal, row))
    return table


def _literal(text: str | None) -> str | None:
    """`text` escaped for rich, which reads "[...]" as markup: a message's "E[g η]" would print as "E"."""
    from rich.markup import escape

    return None if text is None else escape(text)


def _tables(title: str | None, mapping: Mapping[str, Any], units: Mapping[str, str], prefix: str = "",
            width: int = PIPED_WIDTH):
    """The tables of one mapping: its scalars first, then one table per nested mapping or record list."""
    scalars, nested = [], []
    for name, value in mapping.items():
        if _is_scalar(value) or _is_scalar_list(value):
            scalars.append((name, value))
        else:
            nested.append((name, value))
    out = []
    if scalars:
        out.append(_scalar_table(title, scalars, units, prefix))
    for name, value in nested:
        path = f"{prefix}{name}"
        if isinstance(value, Mapping):
            out.extend(_tables(path, value, units, path + ".", width))
        elif _is_record_list(value):
            out.extend(_record_tables(f"{path} ({_rows(len(value))})", value, units, path + ".", width))
        else:  # a list mixing records and values, or of lists: index each entry
            out.extend(_tables(path, {f"[{i}]": v for i, v in enumerate(value[:MAX_ROWS])}, units, path + ".",
                               width))
            if len(value) > MAX_ROWS:
                out.append(f"{path}: first {MAX_ROWS} of {len(value)} entries (all of them with --json)")
    return out


def units_from(result: Any, prefix: str = "") -> dict[str, str]:
    """The units declared on a result dataclass's fields, `field(metadata={"unit": "..."})`, by path.

    Nested dataclasses are followed (their fields get "outer.inner" paths), so a result type can carry
    its units once, next to its fields: `emit(..., units=units_from(result))`.
    """
    import dataclasses

    units: dict[str, str] = {}
    if not dataclasses.is_dataclass(result) or isinstance(result, type):
        return units
    for f in dataclasses.fields(result):
        if "unit" in f.metadata:
            units[prefix + f.name] = f.metadata["unit"]
        units.update(units_from(getattr(result, f.name), f"{prefix}{f.name}."))
    return units


def render(payload: Mapping[str, Any], units: Mapping[str, str] | None = None, *, file=None) -> None:
    """Print `payload` (JSON-safe: dicts, lists, str, numbers, None) as tables to `file` (default stdout).

    The keys "command", "model", "version" and "parameters" form the heading and the parameter table.
    """
    units = dict(units or {})
    items: list = []
    body = {k: v for k, v in payload.items() if k not in ("command", "model", "version", "parameters")}
    heading = " ".join(str(payload[k]) for k in ("command", "model") if payload.get(k))
    if heading:
        items.append(f"[bold]{heading}[/bold]  [dim](attnphase {payload.get('version', '')})[/dim]")
    width = console(file).width
    parameters = payload.get("parameters") or {}
    if parameters:
        items.extend(_tables("parameters", parameters, {}, "parameters.", width))
        items.append("")
    for table in _tables("result" if parameters else None, body, units, width=width):
        items.extend([table, ""])
    print_renderables(items[:-1] if items and items[-1] == "" else items, file)
