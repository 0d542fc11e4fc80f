"""Turn data files into changes: validate ``__rowMarker__`` and keys, then net them per key.

Marker matrix (contract §4): 0 inserts even when the key exists; 1 and 4 insert-or-replace; 2
deletes or does nothing; a file without the marker column is all inserts, or all upserts with
``isUpsertDefaultRowMarker``. Rows apply in file order, files in sequence order.

Undocumented cases, decided here: markers 1/2/4 (or default upserts) on a table without
``keyColumns`` fail the table; a 1/2/4 row with a NULL key value fails the table; when a key is
held by several rows (after marker-0 duplicates) a 1/4 replaces all of them with the one new
row and a 2 deletes all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from openmirror_nb._core.errors import did_you_mean
from openmirror_nb._core.mirror.columns import canonical_type, cast_column, evolve_schema, null_violations
from openmirror_nb._core.mirror.discovery import DataFile
from openmirror_nb._core.mirror.faults import TableFault
from openmirror_nb._core.model import ROW_MARKER, RowMarker

_MARKERS = [int(m) for m in RowMarker]
_ROW = "__openmirror_row__"
_LAST = "__openmirror_last__"


@dataclass(frozen=True)
class PreparedFile:
    """One data file read, checked and brought to the table's types, ready to apply."""

    file: DataFile
    data: pa.Table
    markers: np.ndarray
    inserts: int
    updates: int
    deletes: int


def prepare_file(
    file: DataFile,
    raw: pa.Table,
    *,
    keys: tuple[str, ...],
    upsert_default: bool,
    schema: pa.Schema | None,
) -> tuple[PreparedFile, pa.Schema]:
    """Check one file against the table and return it with the table schema after it.

    Raises:
        TableFault: a bad marker, key or value (kind ``file``), or a schema change the table
            cannot absorb (kind ``schema``).
    """
    data, markers = _split_marker(raw, upsert_default)
    if len(set(data.column_names)) != data.num_columns:
        raise TableFault(f"The file has duplicate column names: {data.column_names}.")
    incoming = pa.schema(
        [pa.field(f.name, canonical_type(f.name, f.type), nullable=f.nullable) for f in data.schema]
    )
    new_schema = evolve_schema(schema, incoming)
    data = pa.Table.from_arrays(
        [cast_column(name, data.column(name), new_schema.field(name).type) for name in data.column_names],
        names=data.column_names,
    )
    _check_keys(data, markers, keys)
    written = data.filter(pa.array(markers != int(RowMarker.DELETE)))
    problem = null_violations(written, new_schema)
    if problem:
        raise TableFault(problem)
    counts = np.bincount(markers, minlength=5)
    prepared = PreparedFile(
        file=file,
        data=data,
        markers=markers,
        inserts=int(counts[0]),
        updates=int(counts[1] + counts[4]),
        deletes=int(counts[2]),
    )
    return prepared, new_schema


def _split_marker(raw: pa.Table, upsert_default: bool) -> tuple[pa.Table, np.ndarray]:
    names = raw.column_names
    if ROW_MARKER not in names:
        fill = int(RowMarker.UPSERT if upsert_default else RowMarker.INSERT)
        return raw, np.full(raw.num_rows, fill, dtype=np.int8)
    position = names.index(ROW_MARKER)
    if position != len(names) - 1 or names.count(ROW_MARKER) > 1:
        raise TableFault(
            f"{ROW_MARKER} must be the last column; it is column {position + 1} of {len(names)}."
        )
    column = raw.column(position)
    if not pa.types.is_integer(column.type):
        raise TableFault(f"{ROW_MARKER} must be an integer column; it has type {column.type}.")
    valid = pc.is_in(column, value_set=pa.array(_MARKERS, column.type))
    if column.null_count or not pc.all(valid, min_count=0).as_py():
        row = next(i for i, ok in enumerate(valid.to_pylist()) if ok is not True)
        value = column[row].as_py()
        raise TableFault(
            f"Row {row + 1} has {ROW_MARKER} value {value!r}; the supported values are 0 (insert), "
            "1 (update), 2 (delete) and 4 (upsert)."
        )
    markers = column.to_numpy().astype(np.int8)
    return raw.remove_column(position), markers


def _check_keys(data: pa.Table, markers: np.ndarray, keys: tuple[str, ...]) -> None:
    changes = markers != int(RowMarker.INSERT)
    if not keys:
        if changes.any():
            row = int(np.argmax(changes)) + 1
            raise TableFault(
                f"Row {row} has {ROW_MARKER} {int(markers[row - 1])} (or the table upserts by default) but "
                "_metadata.json declares no keyColumns; updates, deletes and upserts need keyColumns."
            )
        return
    for key in keys:
        if key not in data.column_names:
            raise TableFault(
                f"Key column '{key}' is missing from the file, which has {data.column_names}."
                + did_you_mean(key, data.column_names)
            )
        column_type = data.schema.field(key).type
        if pa.types.is_nested(column_type):
            raise TableFault(f"Key column '{key}' has type {column_type}; key columns must be scalar.")
    if changes.any():
        keyed = data.select(list(keys)).filter(pa.array(changes))
        for key in keys:
            if keyed.column(key).null_count:
                raise TableFault(f"Key column '{key}' is NULL in an update, delete or upsert row.")


@dataclass(frozen=True)
class ChangePlan:
    """The net effect of a run of files on the table.

    Attributes:
        rows: Rows to add to the table, in file order.
        touched: One row per key (key columns only) whose current rows are removed first;
            ``None`` when the files only insert.
    """

    rows: pa.Table
    touched: pa.Table | None


def plan_changes(data: pa.Table, markers: np.ndarray, keys: tuple[str, ...]) -> ChangePlan:
    """Net the rows of consecutive files into one remove-then-add per key.

    Only the last 1/2/4 row of a key and the marker-0 rows after it matter: everything before
    that row is replaced or deleted by it. Its key's current rows are removed; the row itself
    (unless a delete) and the later inserts are added.
    """
    changes = markers != int(RowMarker.INSERT)
    if not keys or not changes.any():
        return ChangePlan(data, None)
    index = pa.array(np.arange(data.num_rows, dtype=np.int64))
    keyed = data.select(list(keys)).append_column(_ROW, index)
    last = keyed.filter(pa.array(changes)).group_by(list(keys), use_threads=False).aggregate([(_ROW, "max")])
    last = last.rename_columns([*keys, _LAST])
    joined = keyed.join(last, keys=list(keys), join_type="left outer", use_threads=False)
    row = joined.column(_ROW).to_numpy()
    # Keys without a 1/2/4 row have no last row (NULL after the outer join): -1.
    last_row = np.nan_to_num(joined.column(_LAST).to_numpy(zero_copy_only=False).astype(np.float64), nan=-1)
    kinds = markers[row]
    keep = (
        (last_row < 0)
        | ((row == last_row) & (kinds != int(RowMarker.DELETE)))
        | ((kinds == int(RowMarker.INSERT)) & (row > last_row))
    )
    rows = np.sort(row[keep])
    return ChangePlan(data.take(pa.array(rows)), last.select(list(keys)))
