"""The tables of the model pages (docs/models/*.md), read by the tests that hold them to what the commands compute."""

from __future__ import annotations

from pathlib import Path

PAGES = Path(__file__).resolve().parents[2] / "docs" / "models"


def page_table_after(page: str, heading: str) -> list[list[str]]:
    """The cells of the first Markdown table after the line starting with `heading` in docs/models/`page`, without
    the table's header and its rule."""
    lines = (PAGES / page).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]
