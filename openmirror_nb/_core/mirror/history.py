"""The versions of one key's row across the mirror's Delta commits: Prostore's actual record and
its archive of past versions, read back with Delta time travel (``key_versions`` holds the result).

The mirror's tables have no change data feed, so the versions are walked in order and only what
each commit added or removed is read: a data file never changes once written, so each one is
read once, with the key pushed down to the Parquet reader (row groups whose statistics exclude
the key are skipped).
"""

from __future__ import annotations

import json
import math
import operator
import os
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from deltalake import DeltaTable

from openmirror_nb._core.errors import ConfigError, MirrorError
from openmirror_nb._core.mirror.apply import COMMIT_KEY
from openmirror_nb._core.mirror.columns import align
from openmirror_nb._core.mirror.delta_read import (
    commit_times,
    open_delta,
    plain_arrow_schema,
    reads_as_plain_parquet,
    scan_arrow,
)
from openmirror_nb._core.mirror.key_versions import KeyHistory, KeyVersion, Operation, Row


def key_history(
    table_dir: str | os.PathLike[str], *, table: str, keys: Sequence[str], key: Any
) -> KeyHistory:
    """The history of ``key`` (``{column: value}``, or a value for a one-column key) in the
    mirrored Delta table at ``table_dir``, whose key columns are ``keys``.

    Raises:
        MirrorError: ``table_dir`` holds no Delta table, or the table lacks a key column.
        ConfigError: ``key`` does not name exactly the key columns, or a value is of the wrong type.
    """
    latest = open_delta(table_dir)
    values = _typed(key_values(key, tuple(keys), table=table), plain_arrow_schema(latest), table=table)
    condition = _condition(values)
    log = latest.history()
    times = commit_times(log)
    files = {int(h["version"]): _applied_files(h) for h in log}
    # Protocol features and partitioning never go back, so the latest version decides for all.
    by_file = reads_as_plain_parquet(latest) and not latest.metadata().partition_columns
    snapshot = DeltaTable(os.fspath(table_dir), version=min(times))
    reader = _FileReader(values, condition)
    entries: list[KeyVersion] = []
    previous: Row | None = None
    for version, moment in times.items():
        if version != snapshot.version():
            snapshot.load_as_version(version)  # incremental: reads only the commits since
        found = reader.rows(snapshot) if by_file else scan_arrow(snapshot).filter(condition).to_pylist()
        row = _in_table_order(found[0], snapshot) if found else None
        operation = _operation(previous, row)
        if operation is not None:
            entries.append(KeyVersion(version, moment, operation, row, files.get(version, ())))
        previous = row
    return KeyHistory(table, values, tuple(entries), (min(times), max(times)))


def key_values(key: Any, keys: tuple[str, ...], *, table: str) -> dict[str, Any]:
    """``key`` as ``{column: value}`` in key-column order."""
    if not keys:
        raise ConfigError(f"{table} has no key columns; history follows the row of one key.")
    example = "{" + ", ".join(f"{k!r}: ..." for k in keys) + "}"
    if isinstance(key, Mapping):
        given = dict(key)
    elif len(keys) == 1:
        given = {keys[0]: key}
    else:
        raise ConfigError(f"key={key!r}: {table} has key columns {', '.join(keys)}; pass key={example}.")
    if set(given) != set(keys):
        raise ConfigError(f"key={given!r} does not name the key columns of {table}; pass key={example}.")
    return {k: given[k] for k in keys}


def _typed(values: dict[str, Any], schema: pa.Schema, *, table: str) -> dict[str, Any]:
    """``values`` as the key columns' types hold them (``numpy.int64(1)`` -> ``1``)."""
    typed = {}
    for column, value in values.items():
        if schema.get_field_index(column) < 0:
            raise MirrorError(
                f"Mirrored table {table} has no key column {column!r}; run the mirror or reseed the table."
            )
        kind = schema.field(column).type
        try:
            typed[column] = pa.scalar(value, type=kind).as_py()
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            raise ConfigError(
                f"key {column}={value!r} is not a {kind} value; pass a value of the column's type."
            ) from None
    return typed


def _condition(values: dict[str, Any]) -> ds.Expression:
    condition: ds.Expression = reduce(operator.and_, [ds.field(c) == v for c, v in values.items()])
    return condition


class _FileReader:
    """The key's rows of a table version, from the rows of its data files read once each."""

    def __init__(self, values: dict[str, Any], condition: ds.Expression) -> None:
        self._values = values
        self._condition = condition
        self._holding: dict[str, list[Row]] = {}  # live files holding the key -> its rows there
        self._live: set[str] = set()

    def rows(self, snapshot: DeltaTable) -> list[Row]:
        live = set(snapshot.file_uris())
        for gone in self._live - live:
            self._holding.pop(gone, None)
        schema = plain_arrow_schema(snapshot)
        for new in sorted(live - self._live):
            found = self._read(new, schema)
            if found:
                self._holding[new] = found
        self._live = live
        return [row for path in sorted(self._holding) for row in self._holding[path]]

    def _read(self, path: str, schema: pa.Schema) -> list[Row]:
        """The key's rows in one data file, from the row groups whose statistics admit the key.

        Pruned by hand: delta-rs records view types in the files' Arrow schema, on which
        pyarrow's own filter pushdown fails; the groups read are cast to the table's plain types.
        """
        file = pq.ParquetFile(path)
        meta = file.metadata
        groups = [i for i in range(meta.num_row_groups) if self._may_hold(meta.row_group(i))]
        if not groups:
            return []
        return align(file.read_row_groups(groups), schema).filter(self._condition).to_pylist()

    def _may_hold(self, group: pq.RowGroupMetaData) -> bool:
        for i in range(group.num_columns):
            column = group.column(i)
            stats = column.statistics
            if column.path_in_schema not in self._values or stats is None or not stats.has_min_max:
                continue
            try:
                if not stats.min <= self._values[column.path_in_schema] <= stats.max:
                    return False
            except TypeError:
                continue  # statistics that do not compare with the value: read the group
        return True


def _in_table_order(row: Row, snapshot: DeltaTable) -> Row:
    # A file written before a column was added lacks it: the version's schema says NULL.
    return {name: row.get(name) for name in plain_arrow_schema(snapshot).names}


def _operation(before: Row | None, after: Row | None) -> Operation | None:
    if before is None:
        return None if after is None else "insert"
    if after is None:
        return "delete"
    # A column added since `before` was read is NULL in it: only real value changes count.
    same = all(_equal(before.get(c), after.get(c)) for c in before.keys() | after.keys())
    return None if same else "update"


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _applied_files(commit: dict[str, Any]) -> tuple[str, ...]:
    raw = commit.get(COMMIT_KEY)
    if not isinstance(raw, str):
        return ()
    try:
        names = json.loads(raw).get("files") or []
    except (ValueError, AttributeError):
        return ()  # commit info written by something else: the files are unknown, not an error
    return tuple(str(n) for n in names)
