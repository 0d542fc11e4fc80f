"""A Delta source's schema against the mirrored table's, before a sync publishes anything.

Design §7: an added column and a dropped nullable column are absorbed (the mirror adds the
column; the dropped one is NULL from then on); a rename, a type change, a dropped NOT NULL
column, a column dropped and added again under its name, or a dropped or renamed key column
needs a reseed. Renames are known, never guessed: under column mapping a column keeps its
physical name through a rename, and the columns of the version the table holds are kept in its
state (``PushState.source_columns``; else read from the log). Where they cannot be known (a
state older than that, and the log of that version cleaned up), columns gone while others came
cannot be told from renames, and a reseed is asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import SchemaChangeError

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from openmirror_nb._core.pipeline.delta.columns import TableColumns

_JSON_TYPES = ("struct", "array", "map", "variant")
Column = tuple[str, str, bool]
"""A source column: (name, physical name, NOT NULL)."""


@dataclass(frozen=True)
class SourceSchema:
    """The source's schema now, its columns now and at the version the table holds.

    Attributes:
        schema: The Spark schema the source is read with.
        columns: The columns now (``Column``).
        before: The columns at the version the table holds; ``None`` when they cannot be known.
        mapped: Column mapping is on (renames are possible at all).
    """

    schema: StructType
    columns: tuple[Column, ...]
    before: tuple[Column, ...] | None
    mapped: bool

    @classmethod
    def of(
        cls, schema: StructType, columns: Sequence[Column], before: Sequence[Column] | None, *, mapped: bool
    ) -> SourceSchema:
        return cls(schema, tuple(columns), None if before is None else tuple(before), mapped)

    def renames(self) -> dict[str, str]:
        """Old name -> new name of each renamed column (by physical name); none when not known."""
        if self.before is None:
            return {}
        old = {physical: name for name, physical, _ in self.before}
        return {old[p]: n for n, p, _ in self.columns if p in old and old[p] != n}

    def replaced(self) -> list[str]:
        """Names whose column was dropped and another added under the same name."""
        if self.before is None:
            return []
        old = {name: physical for name, physical, _ in self.before}
        renamed = self.renames()
        return [n for n, p, _ in self.columns if n in old and old[n] != p and n not in renamed]


def source_columns(columns: TableColumns) -> tuple[Column, ...]:
    """The top-level columns of one version, as ``PushState.source_columns`` keeps them."""
    return tuple(
        (str(f["name"]), columns.physical_name(f["name"]), not f.get("nullable", True))
        for f in columns.fields
    )


def held_columns(kept: Sequence[Any], read: Callable[[], TableColumns | None]) -> tuple[Column, ...] | None:
    """The columns at the version the table holds: ``kept`` (the state's) if any, else ``read()``
    (from the log), else ``None`` (not known: the log of that version was cleaned up)."""
    if kept:
        return tuple((str(n), str(p), bool(nn)) for n, p, nn in kept)
    try:
        found = read()
    except Exception:  # that version's log is gone: its columns are not known
        return None
    return None if found is None else source_columns(found)


def check_source_schema(
    source: SourceSchema, *, uri: str, table: str, pushed: str, keys: tuple[str, ...], delimited: bool
) -> None:
    """Raise ``SchemaChangeError`` with the reseed call if the mirror cannot absorb the change
    from ``pushed`` (the table's last pushed schema, Spark JSON) to ``source``."""
    old = {f["name"]: f for f in json.loads(pushed)["fields"]}
    new = {f.name: _published(json.loads(f.dataType.json()), delimited) for f in source.schema.fields}
    renamed = source.renames()
    reasons = [f"column {a!r} was renamed to {b!r}" for a, b in renamed.items() if a in old]
    reasons += [f"column {n!r} was dropped and added again" for n in source.replaced() if n in old]
    reasons += [
        f"column {name!r} changed type from {_short(old[name]['type'])} to {_short(kind)}"
        for name, kind in new.items()
        if name in old and kind != old[name]["type"]
    ]
    gone = [n for n in old if n not in new and n not in renamed]
    come = [n for n in new if n not in old and n not in renamed.values()]
    if source.before is None and source.mapped and gone and come:
        reasons.append(
            f"columns {', '.join(map(repr, gone))} are gone and {', '.join(map(repr, come))} came, and "
            "the columns of the version the table holds are not known (its log was cleaned up), so a "
            "rename cannot be told from a drop and an add"
        )
    not_null = (
        {n for n, _, nn in source.before if nn}
        if source.before is not None
        else {n for n in old if not old[n]["nullable"]}
    )
    reasons += [f"key column {n!r} was dropped" for n in gone if n in keys]
    reasons += [f"NOT NULL column {n!r} was dropped" for n in gone if n not in keys and n in not_null]
    if not reasons:
        return
    new_keys = [renamed.get(k, k) for k in keys]
    choose = ", keys=[...]" if any(k not in new for k in new_keys) else ""
    choose = choose or (f", keys={new_keys!r}" if new_keys != list(keys) else "")
    raise SchemaChangeError(
        f"Table {table!r} cannot follow {uri} without a reseed: {'; '.join(reasons)}. Reseed it from "
        f"the Delta table: df = om.read_delta({uri!r}); db.apply_schema_change(db.plan_schema_change("
        f"{table!r}, df{choose}), df, confirm={table!r}); then sync_delta again."
    )


def _published(kind: Any, delimited: bool) -> Any:
    """A column's type as a push publishes it (``pipeline.push.normalize``): complex types as JSON
    text, and binary as base64 text in delimited files."""
    name = kind.get("type") if isinstance(kind, dict) else kind
    if name in _JSON_TYPES or (delimited and name == "binary"):
        return "string"
    return kind


def _short(kind: Any) -> str:
    return kind if isinstance(kind, str) else str(kind.get("type", kind))
