"""A Delta source's schema against the mirrored table's, before a sync publishes anything.

Design §7: an added column and a dropped nullable column are absorbed (the mirror adds the
column; the dropped one is NULL from then on); a rename, a type change, a dropped NOT NULL
column or a dropped or renamed key column needs a reseed. Under column mapping a rename keeps
the column's physical name, which is how it is told from a drop and an add; where the older
version is not known (its log was cleaned up, or Spark's Delta reader hides the mapping), a
column gone and one come with the same type are taken for a rename, never for data to drop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import SchemaChangeError

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

_JSON_TYPES = ("struct", "array", "map", "variant")


@dataclass(frozen=True)
class SourceSchema:
    """The source's schema now, and its renames since the version the table holds.

    Attributes:
        schema: The Spark schema the source is read with.
        renames: Old name -> new name by physical name; ``None`` when that cannot be known.
        mapped: Column mapping may be on (renames are possible at all).
    """

    schema: StructType
    renames: dict[str, str] | None
    mapped: bool


def check_source_schema(
    source: SourceSchema, *, uri: str, table: str, pushed: str, keys: tuple[str, ...], delimited: bool
) -> None:
    """Raise ``SchemaChangeError`` with the reseed call if the mirror cannot absorb the change
    from ``pushed`` (the table's last pushed schema, Spark JSON) to ``source``."""
    old = {f["name"]: f for f in json.loads(pushed)["fields"]}
    new = {f.name: _published(json.loads(f.dataType.json()), delimited) for f in source.schema.fields}
    renamed = _renames(source, old, new)
    reasons = [f"column {a!r} was renamed to {b!r}" for a, b in renamed.items() if a in old]
    reasons += [
        f"column {name!r} changed type from {_short(old[name]['type'])} to {_short(kind)}"
        for name, kind in new.items()
        if name in old and kind != old[name]["type"]
    ]
    gone = [n for n in old if n not in new and n not in renamed]
    reasons += [f"key column {n!r} was dropped" for n in gone if n in keys]
    reasons += [
        f"NOT NULL column {n!r} was dropped" for n in gone if n not in keys and not old[n]["nullable"]
    ]
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


def _renames(source: SourceSchema, old: dict[str, Any], new: dict[str, Any]) -> dict[str, str]:
    if source.renames is not None:
        return source.renames
    if not source.mapped:
        return {}
    come = [n for n in new if n not in old]
    out: dict[str, str] = {}
    for name in (n for n in old if n not in new):
        twin = next((c for c in come if c not in out.values() and new[c] == old[name]["type"]), None)
        if twin is not None:
            out[name] = twin
    return out


def _published(kind: Any, delimited: bool) -> Any:
    """A column's type as a push publishes it (``pipeline.normalize``): complex types as JSON
    text, and binary as base64 text in delimited files."""
    name = kind.get("type") if isinstance(kind, dict) else kind
    if name in _JSON_TYPES or (delimited and name == "binary"):
        return "string"
    return kind


def _short(kind: Any) -> str:
    return kind if isinstance(kind, str) else str(kind.get("type", kind))
