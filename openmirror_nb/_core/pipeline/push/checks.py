"""Checks that compare a push with the table it goes to, and the SchemaDefinition it declares.

Every failure names the offending value and the fix; they run before anything is published.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import (
    ChangeFeedError,
    ConfigError,
    KeyColumnsError,
    SchemaChangeError,
    preview,
)
from openmirror_nb._core.landing_zone.metadata import TableMetadata
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.model import ROW_MARKER, TableOptions
from openmirror_nb._core.pipeline.feeds.changes import INVALID_MARKER
from openmirror_nb._core.pipeline.push.normalize import TEXT_TYPE
from openmirror_nb._core.pipeline.push.stage import StagedStats

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# Delimited-text DataType names (contract §2.1) for each Spark type name.
_TEXT_TYPES = {
    "byte": "Int16",
    "short": "Int16",
    "integer": "Int32",
    "long": "Int64",
    "float": "Single",
    "double": "Double",
    "boolean": "Boolean",
    "date": "IDate",
    "timestamp": "DateTime",
    "timestamp_ntz": "DateTime",
    "string": "String",
    "binary": "ByteArray",
}


def resolve_keys(
    given: tuple[str, ...] | None, meta: TableMetadata | None, table: str, *, append: bool = False
) -> tuple[str, ...]:
    """The key columns to use: the table's own, which can never change (contract §2.1); none for
    an ``append`` (insert-only rows, marker-free), which a table with keys refuses."""
    existing = meta.key_columns if meta else ()
    if append:
        if existing:
            raise KeyColumnsError(
                f"Table {table!r} has keyColumns {list(existing)}; append publishes insert-only rows to a "
                "table without keys: use strategy incremental or snapshot for it."
            )
        return ()
    if meta is not None and not existing and given:
        raise KeyColumnsError(
            f"Table {table!r} is insert-only (its _metadata.json has no keyColumns); a push cannot add "
            f"keys {list(given)} to it: drop it and push it again with them."
        )
    if not given:
        if existing:
            return existing
        raise KeyColumnsError(
            f"Table {table!r} has no keyColumns yet; pass keys=['id'] (the columns that identify a row)."
        )
    if existing and set(given) != set(existing):
        raise KeyColumnsError(
            f"Table {table!r} has keyColumns {list(existing)}, which can never change; push with "
            f"keys={list(existing)}, or drop and reseed the table to use {list(given)}."
        )
    return existing or given


def resolve_options(given: TableOptions | None, meta: TableMetadata | None, table: str) -> TableOptions:
    """The table's options: fixed by its ``_metadata.json`` once it exists."""
    if meta is None:
        return given or TableOptions()
    if given is not None:
        for name in ("file_format", "file_detection", "upsert_default"):
            if getattr(given, name) != getattr(meta.options, name):
                raise ConfigError(
                    f"Table {table!r} was created with {name}={getattr(meta.options, name)!r}; it "
                    f"cannot change to {getattr(given, name)!r} without dropping and reseeding it."
                )
    return meta.options


def check_against_state(
    schema: StructType, state: PushState | None, options: TableOptions, table: str
) -> None:
    """Refuse type changes (and, for delimited text, any column change) since the last push."""
    if state is None:
        return
    before = {f["name"]: f["type"] for f in json.loads(state.schema)["fields"]}
    now = {f.name: json.loads(f.dataType.json()) for f in schema.fields if f.name != ROW_MARKER}
    for name, kind in now.items():
        if name in before and before[name] != kind:
            raise SchemaChangeError(
                f"Column {name!r} of table {table!r} changed type from {_short(before[name])} to "
                f"{_short(kind)}; the mirror cannot change a column's type. Cast it back, or reseed: "
                f"plan = db.plan_schema_change({table!r}, df); db.apply_schema_change(plan, df, "
                f"confirm={table!r})."
            )
    if options.is_delimited and set(now) != set(before):
        added, dropped = sorted(set(now) - set(before)), sorted(set(before) - set(now))
        raise SchemaChangeError(
            f"Table {table!r} is delimited text, whose SchemaDefinition cannot evolve (added {added}, "
            f"dropped {dropped}); keep the columns, or reseed (delete the table folder, push again)."
        )


def _short(kind: Any) -> str:
    return kind if isinstance(kind, str) else str(kind.get("type", kind))


def check_stats(
    stats: StagedStats, *, keys: tuple[str, ...], table: str, invalid_values: Sequence[Any] = ()
) -> None:
    """Reject invalid markers, then NULL keys, found in the staged files.

    Operations first: an event with an operation no convention defines (a truncate, say) often
    has no row and so no key, and its operation is what the user has to fix.
    """
    bad = stats.rows_by_marker.get(INVALID_MARKER, 0)
    if bad:
        shown = preview(invalid_values, limit=5)
        raise ChangeFeedError(
            f"{bad:,} change row(s) of table {table!r} have operation value(s) {shown}; the row-marker "
            "convention accepts only 0 (insert), 1 (update), 2 (delete) and 4 (upsert)."
        )
    if stats.null_key_rows:
        raise null_key_error(stats.null_key_rows, keys=keys, table=table)


def null_key_error(rows: int, *, keys: tuple[str, ...], table: str) -> KeyColumnsError:
    return KeyColumnsError(
        f"{rows:,} row(s) of table {table!r} have a NULL in key columns {list(keys)}; "
        "every key value must be set. Filter them out or fill them before pushing."
    )


def duplicate_error(dupes: list[tuple[Any, ...]], *, keys: tuple[str, ...], table: str) -> KeyColumnsError:
    shown = preview([d[0] if len(d) == 1 else d for d in dupes], limit=5)
    return KeyColumnsError(
        f"Key columns {list(keys)} of table {table!r} are not unique in this snapshot: {shown} occur more "
        "than once. Deduplicate the DataFrame or choose keys that identify one row."
    )


def schema_definition(schema: StructType, keys: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    """``SchemaDefinition.Columns`` for delimited text (the marker column is not a table column)."""
    columns = []
    for f in schema.fields:
        if f.name == ROW_MARKER:
            continue
        kind = f.dataType.typeName()
        columns.append(
            {
                "Name": f.name,
                "DataType": f.metadata.get(TEXT_TYPE) or _TEXT_TYPES.get(kind, "String"),
                "IsNullable": f.name not in keys,
            }
        )
    return tuple(columns)
