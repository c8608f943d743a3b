"""The results store's points as one flat table, in CSV or parquet (`ResultStore.export`, `attnphase store export`).

Columns: model, version, the parameters, the results, created, elapsed_s. A parameter named like one of the columns
model, version, created and elapsed_s is written `param.<name>`, and a result name that clashes with any column
`result.<name>` (prefixed again while that is taken too), so that no column is written over and every header is
distinct. Lists and dicts are JSON text; null
is an empty CSV cell / a parquet null; NaN and infinities are kept (nan, inf, -inf in CSV; NaN, Infinity inside JSON
text; floats in parquet). A parquet column whose values no one Arrow type holds (mixed types, an integer outside
int64, such as 2**63) is text, an integer as its exact digits. Parquet needs pyarrow
(`pip install 'attnphase[parquet]'`). The table is written to a sibling file and renamed over the target, so an
interrupted export leaves the file that was there before, never a truncated table.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from pathlib import Path

from attnphase.errors import ParameterError
from attnphase.jsonio import to_jsonable
from attnphase.resume import written_atomically

__all__ = ["EXPORT_FORMATS", "write_table"]

EXPORT_FORMATS = ("csv", "parquet")
# The columns of every row, whatever its parameters and results are named.
_ROW_COLUMNS = ("model", "version", "created", "elapsed_s")


def write_table(points: Sequence, path: str | os.PathLike, format: str = "csv") -> int:
    """Write `points` (`store.StoredPoint`s) as a flat table at `path`; returns the number of rows."""
    if format not in EXPORT_FORMATS:
        raise ParameterError("--format", format, "one of " + ", ".join(EXPORT_FORMATS))
    param_names = sorted({name for p in points for name in p.params})
    result_names = sorted({name for p in points for name in p.result})
    param_columns = {n: (f"param.{n}" if n in _ROW_COLUMNS else n) for n in param_names}
    taken = {*_ROW_COLUMNS, *param_columns.values()}
    result_columns = {}
    for n in result_names:  # result names may hold dots: "result." is prefixed until the header is one of its own
        column = n
        while column in taken:
            column = f"result.{column}"
        result_columns[n] = column
        taken.add(column)
    columns = ["model", "version", *param_columns.values(), *result_columns.values(), "created", "elapsed_s"]

    def cell(value):
        # JSON text as Python's json module writes it: NaN and infinities kept (NaN, Infinity), as in the store.
        return json.dumps(to_jsonable(value, keep_non_finite=True)) if isinstance(value, (list, dict)) else value

    table = []
    for p in points:
        record = {"model": p.model, "version": p.version}
        record.update({param_columns[n]: cell(p.params.get(n)) for n in param_names})
        record.update({result_columns[n]: cell(p.result.get(n)) for n in result_names})
        record.update({"created": p.created, "elapsed_s": p.elapsed})
        table.append(record)

    if format == "csv":
        def write(target: Path) -> None:
            with open(target, "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=columns)
                writer.writeheader()
                writer.writerows(table)
    else:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ParameterError(
                "--format", format, "csv, or parquet after installing pyarrow (pip install 'attnphase[parquet]')"
            ) from None
        columns_data = {c: [record.get(c) for record in table] for c in columns}
        arrays = {}
        for name, values in columns_data.items():
            try:
                arrays[name] = pa.array(values)
            # mixed types in one column, or an integer outside int64 (OverflowError: a point function of yours
            # may return 2**70): keep as text, an integer as its exact digits
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                arrays[name] = pa.array([None if v is None else str(v) for v in values])

        def write(target: Path) -> None:
            pq.write_table(pa.table(arrays), target)

    # Beside the file a symbolic link points to, so that the rename replaces that file, not the link; interrupted
    # (Ctrl-C, SIGTERM) or failed, the file at `path` stays as it was.
    with written_atomically(Path(os.path.realpath(path))) as partial:
        write(partial)
    return len(table)
