"""What ``db.describe(table)`` says about a table (``TableInfo``), and the database's table list.

Read from the table's ``_metadata.json`` and push state only (two small reads), so it is cheap on
OneLake too. Times are UTC.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from openmirror_nb._core.errors import LandingZoneError, OpenMirrorError, did_you_mean
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import TableOptions
from openmirror_nb._core.table_names import fold

# Spark's JSON type names and their DDL spelling (only flat types reach the state: complex
# columns are published as JSON text).
_DDL = {
    "string": "STRING",
    "long": "BIGINT",
    "integer": "INT",
    "short": "SMALLINT",
    "byte": "TINYINT",
    "double": "DOUBLE",
    "float": "FLOAT",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
    "binary": "BINARY",
}


@dataclass(frozen=True)
class ColumnInfo:
    """One column as last pushed: name, Spark DDL type, nullability, whether it is a key."""

    name: str
    type: str
    nullable: bool
    key: bool


@dataclass(frozen=True)
class TableInfo:
    """One table of the landing zone.

    Attributes:
        table: ``name`` or ``schema.name``.
        folder: The table folder in the landing zone.
        keys: ``keyColumns``.
        columns: The columns as last pushed (empty for a table this tool never pushed to,
            unless its delimited-text ``SchemaDefinition`` names them).
        options: File format, detection strategy, upsert default, delimited-text layout.
        last_sequence: The largest sequence number published (listing of the folder).
        base_rows: Keys in the key state's last base (``None`` if unknown).
        changed_keys: Keys touched by the pushes since that base, at most (``None`` if unknown).
        state_rows: Keys in the key state when exactly known (no push since its base), else
            ``None``: what ``db.status()`` shows too.
        pushes: Pushes committed by this tool in this incarnation of the table.
        pushes_since_base: Pushes whose key state is a delta on the last base.
        incarnation: The id of this incarnation of the table: a drop and a new initial load
            start another (``None`` if this tool never pushed to it).
        created: When the initial load was decided; ``last_push``: the last push.
        source: The Delta table ``db.sync_delta`` follows, and ``source_version`` the version held.
        source_position: The newest change of a Debezium stream the table holds, per partition of
            its topic: PostgreSQL's (last commit LSN, change LSN) and the rank of the event there,
            as ``"partition=commit:change:rank;..."`` (``None``: no such stream).
    """

    table: str
    folder: str
    keys: tuple[str, ...]
    columns: tuple[ColumnInfo, ...]
    options: TableOptions
    last_sequence: int
    base_rows: int | None
    changed_keys: int | None
    pushes: int
    pushes_since_base: int
    incarnation: str | None
    created: datetime | None
    last_push: datetime | None
    source: str | None = None
    source_version: int | None = None
    state_rows: int | None = None
    source_position: str | None = None

    @property
    def ddl(self) -> str:
        """The schema as Spark DDL, e.g. ```id` BIGINT NOT NULL, `name` STRING``."""
        return ", ".join(
            f"{quoted(c.name)} {c.type}" + ("" if c.nullable else " NOT NULL") for c in self.columns
        )

    def _facts(self) -> list[tuple[str, str]]:
        opts = self.options
        fmt = opts.file_format + (f" (separator {opts.column_separator!r})" if opts.is_delimited else "")
        rows = "unknown" if self.base_rows is None else f"{self.base_rows:,}"
        if self.changed_keys:
            rows += f" at the base, then at most {self.changed_keys:,} keys changed"
        return [
            ("keys", ", ".join(self.keys) or "none"),
            ("format", f"{fmt}, {opts.file_detection}, upsert default {str(opts.upsert_default).lower()}"),
            ("last sequence", str(self.last_sequence)),
            ("rows in key state", rows),
            ("pushes", f"{self.pushes:,} ({self.pushes_since_base:,} since the key-state base)"),
            ("incarnation", self.incarnation or "none (not pushed by openmirror_nb)"),
            ("created", _when(self.created)),
            ("last push", _when(self.last_push)),
            *([("synced from", f"{self.source} at version {self.source_version}")] if self.source else []),
        ]

    def __repr__(self) -> str:
        lines = [f"Table {self.table} (folder {self.folder})"]
        lines += [f"  {k}: {v}" for k, v in self._facts()]
        lines.append(f"  columns: {self.ddl or 'unknown'}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        facts = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
            for k, v in self._facts()
        )
        cols = "".join(
            f"<tr><td>{'🔑 ' if c.key else ''}{html.escape(c.name)}</td><td>{html.escape(c.type)}</td>"
            f"<td>{'' if c.nullable else 'NOT NULL'}</td></tr>"
            for c in self.columns
        )
        columns = (
            f"<table><tr><th>column</th><th>type</th><th></th></tr>{cols}</table>"
            if cols
            else "<i>columns unknown</i>"
        )
        return (
            f"<div><b>{html.escape(self.table)}</b> <code>{html.escape(self.folder)}</code>"
            f"<table>{facts}</table>{columns}</div>"
        )


def describe(home: TableFolder, *, known: Callable[[], list[str]]) -> TableInfo:
    """The ``TableInfo`` of one table; ``known`` lists the database's tables for the error hint
    (called only when the table is missing).

    Raises:
        LandingZoneError: the table has no ``_metadata.json`` in the landing zone.
    """
    meta = home.read_metadata()
    if meta is None:
        names = known()
        same = [n for n in names if fold(n) == fold(str(home.ref))]
        hint = (
            (f" Did you mean {same[0]!r}? Names are case-sensitive here." if same else "")
            or did_you_mean(str(home.ref), names)
            or (f" Tables: {', '.join(names)}." if names else "")
        )
        raise LandingZoneError(f"Table {str(home.ref)!r} does not exist in the landing zone.{hint}")
    state = home.read_state()
    keys = state.key_columns if state else meta.key_columns
    if state:
        columns = tuple(_column(f, keys) for f in json.loads(state.schema).get("fields", []))
    else:
        columns = tuple(
            ColumnInfo(c.name, _text_type(c.data_type), c.nullable, c.name in keys) for c in meta.text_columns
        )
    return TableInfo(
        table=str(home.ref),
        folder=home.folder,
        keys=tuple(keys),
        columns=columns,
        options=meta.options,
        last_sequence=max(home.last_sequence_number(), state.last_sequence_number if state else 0),
        base_rows=state.base_rows if state else None,
        changed_keys=state.delta_rows if state else None,
        state_rows=state.exact_rows if state else None,
        pushes=state.pushes if state else 0,
        pushes_since_base=state.pushes_since_base if state else 0,
        incarnation=state.incarnation if state else None,
        created=_time(state.created if state else None),
        last_push=_time(state.last_push if state else None),
        source=state.source if state else None,
        source_version=state.source_version if state else None,
        source_position=state.source_position if state else None,
    )


def _column(field: dict[str, Any], keys: tuple[str, ...]) -> ColumnInfo:
    kind = field.get("type")
    if isinstance(kind, str):
        ddl = _DDL.get(kind, kind.upper())  # decimal(10,2) -> DECIMAL(10,2)
    else:
        ddl = json.dumps(kind)
    return ColumnInfo(
        str(field.get("name")), ddl, bool(field.get("nullable", True)), field.get("name") in keys
    )


# SchemaDefinition DataType (lower case) -> the Spark type its values are read as: DateTime is a
# timestamp, ITime stays text, ByteArray is base64-decoded binary; the others share their names.
_TEXT_DDL = {
    "int16": "SMALLINT",
    "int32": "INT",
    "int64": "BIGINT",
    "single": "FLOAT",
    "idate": "DATE",
    "datetime": "TIMESTAMP",
    "itime": "STRING",
    "bytearray": "BINARY",
}


def _text_type(data_type: str) -> str:
    return _TEXT_DDL.get(data_type, data_type.upper())


def _time(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "unknown"


def database_html(target: str, tables: Callable[[], list[str]], info: Callable[[str], TableInfo]) -> str:
    """The database's HTML repr: one row per table; a table that cannot be read says why in its
    row, and the others still show."""
    try:
        names = tables()
    except OpenMirrorError as exc:
        return f"<div><b>{html.escape(target)}</b><br>{html.escape(str(exc))}</div>"
    rows = "".join(_html_row(name, info) for name in names)
    return (
        f"<div><b>Mirrored database</b> <code>{html.escape(target)}</code>, {len(names):,} tables"
        f"<table><tr><th>table</th><th>keys</th><th>last sequence</th><th>rows</th></tr>{rows}</table></div>"
    )


def _html_row(table: str, info: Callable[[str], TableInfo]) -> str:
    try:
        found = info(table)
    except OpenMirrorError as exc:
        return f"<tr><td>{html.escape(table)}</td><td colspan='3'>{html.escape(str(exc))}</td></tr>"
    rows = "" if found.base_rows is None else f"{found.base_rows:,}"
    if found.changed_keys:
        rows += f" (±{found.changed_keys:,})"
    return (
        f"<tr><td>{html.escape(found.table)}</td><td>{html.escape(', '.join(found.keys))}</td>"
        f"<td style='text-align:right'>{found.last_sequence}</td>"
        f"<td style='text-align:right'>{rows}</td></tr>"
    )
