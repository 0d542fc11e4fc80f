"""What a source says about one of its tables (``SourceTable``), and what every source offers the
planner (``Source``): its tables, the rows of one, and its description as a saved plan keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from openmirror_nb._core.table_info import ColumnInfo

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

SourceKind = Literal["catalog", "jdbc", "delta_folder"]


@dataclass(frozen=True)
class SourceTable:
    """One table of a source, as discovered.

    Attributes:
        name: The table as the source names it (a Delta folder's table under a schema folder:
            ``schema/table``).
        columns: Name, Spark type (as the table is read), NOT NULL in the source, and whether
            the column is in the primary key.
        primary_key: The primary key's columns in key order (JDBC metadata); empty when none.
        unique: Unique constraints (and unique indexes without a condition) whose columns are
            all NOT NULL, narrowest first: each identifies a row as a primary key would.
        increasing: Columns the source numbers itself (identity, serial, auto-increment):
            strictly increasing, the watermark ``append`` needs.
        rows: Rows, or an estimate where counting would read the table (JDBC: the database's
            statistics); ``None`` when unknown.
        change_feed: A Delta table with its change data feed on (``delta_sync`` reads it).
        unreadable: Why the table's columns cannot be read (its other facts are then empty).
    """

    name: str
    columns: tuple[ColumnInfo, ...] = ()
    primary_key: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    increasing: tuple[str, ...] = ()
    rows: int | None = None
    change_feed: bool = False
    unreadable: str | None = None
    schema: StructType | None = field(default=None, repr=False, compare=False)


class Source(Protocol):
    """A database, catalog or folder of tables that ``plan_sources`` discovers."""

    kind: SourceKind

    def discover(self) -> list[SourceTable]: ...

    def read(self, table: str) -> DataFrame: ...

    def to_dict(self) -> dict[str, Any]: ...


def source_table(
    name: str,
    schema: StructType,
    *,
    not_null: frozenset[str] = frozenset(),
    primary_key: tuple[str, ...] = (),
    **facts: Any,
) -> SourceTable:
    """A ``SourceTable`` whose columns are ``schema``'s fields; a column is NOT NULL when the
    schema says so or ``not_null`` names it (JDBC reads every column as nullable)."""
    columns = tuple(
        ColumnInfo(
            name=f.name,
            type=f.dataType.simpleString(),
            nullable=f.nullable and f.name not in not_null,
            key=f.name in primary_key,
        )
        for f in schema.fields
    )
    return SourceTable(name, columns, primary_key, schema=schema, **facts)
