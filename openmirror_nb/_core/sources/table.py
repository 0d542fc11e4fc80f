"""What a source says about one of its tables (``SourceTable``), and everything the planner, the
runner, the panels and the magics use of a source (``Source``): its tables, the rows of one, its
description as a saved plan keeps it, and the optional parts (secrets to hide, where a Delta table's
files are, a read in parallel ranges, a table's version) with their neutral defaults."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from openmirror_nb._core.errors import ConfigError, did_you_mean
from openmirror_nb._core.table_info import ColumnInfo

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

SourceKind = str
"""A source's kind, as its saved plan names it: ``catalog``, ``jdbc``, ``delta_folder``, or one
registered with ``om.register_source``."""


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
        untyped: Columns whose source type no Spark type holds whole (PostgreSQL's ``numeric``
            without precision): name and source type. They are read as text, and a plan needs
            their type declared (``PlannedTable.types``).
    """

    name: str
    columns: tuple[ColumnInfo, ...] = ()
    primary_key: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    increasing: tuple[str, ...] = ()
    rows: int | None = None
    change_feed: bool = False
    unreadable: str | None = None
    untyped: tuple[tuple[str, str], ...] = ()
    schema: StructType | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_schema(
        cls,
        name: str,
        schema: StructType,
        *,
        not_null: frozenset[str] = frozenset(),
        primary_key: tuple[str, ...] = (),
        **facts: Any,
    ) -> SourceTable:
        """A table whose columns are ``schema``'s fields, as a source's ``discover`` gives it; a
        column is NOT NULL when the schema says so or ``not_null`` names it. ``facts``: the other
        attributes (``rows``, ``unique``, ``increasing``, ``change_feed``).

        Example:
            >>> om.SourceTable.from_schema("orders", frame.schema, primary_key=("id",), rows=3)
        """
        return source_table(name, schema, not_null=not_null, primary_key=primary_key, **facts)


@runtime_checkable
class Source(Protocol):
    """A database, catalog or folder of tables: what ``db.plan_sources`` discovers, ``db.run_plan``
    reads, a saved plan keeps, and the ``SourcePlanner`` panel and ``%openmirror discover`` take.

    Every member the package uses of a source is here. ``kind``, ``discover``, ``read`` and
    ``to_dict`` are the source's own; the others have a neutral default (no secrets, no Delta
    table, no parallel read, no version, the constructor's keywords as the saved entries), which a class
    subclassing ``om.Source`` inherits. A kind of your own is registered with
    ``om.register_source`` so that a saved plan of it loads again; the built-in ones
    (``om.Catalog``, ``om.Jdbc``, ``om.DeltaFolder``) are registered the same way.

    Attributes:
        kind: The kind it is registered as, saved in its plan (a class attribute).
        delta_tables: Every table is a Delta table ``delta_sync`` reads, with its change data
            feed or without (``om.DeltaFolder``). Default ``False``: only a table discovered with
            its change data feed on is.

    Example:
        >>> class CsvFolder(om.Source):
        ...     kind = "csv_folder"
        ...     def __init__(self, path): self.path = path
        ...     def discover(self): ...
        ...     def read(self, table): ...
        ...     def to_dict(self): return {"path": self.path}
        >>> om.register_source("csv_folder", "my_package.csv_folder:CsvFolder")
    """

    kind: str
    delta_tables: bool = False

    def discover(self) -> list[SourceTable]:
        """Every table of the source, with what it says of each (``SourceTable``: its columns and
        schema, keys, rows, identity columns, change data feed). A table that cannot be read is
        listed with ``unreadable`` set, not raised: the others are still planned."""
        ...

    def read(self, table: str) -> DataFrame:
        """One table, by the name ``discover`` gave it, as a Spark DataFrame (read lazily)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The source as its saved plan holds it: plain values, no secret (``kind`` is added when
        missing); ``from_dict`` builds it again. Two sources of a kind are the same source (a plan
        given as ``like=``) when their dicts are equal."""
        ...

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Source:
        """The source a saved plan describes (``to_dict``'s entries, ``kind`` among them).

        Default: every entry but ``kind`` passed to the constructor as a keyword.

        Raises:
            ConfigError: an entry the constructor does not take, or one it needs is missing.
        """
        args = {str(k): v for k, v in data.items() if k != "kind"}
        takes, needs = _keywords(cls)
        what = f"source ({data.get('kind', cls.kind)})"
        for key in args:
            if takes is not None and key not in takes:
                hint = did_you_mean(key, takes)
                raise ConfigError(
                    f"{what} has an unknown entry {key!r} (entries: {', '.join(['kind', *takes])}).{hint}"
                )
        for key in needs:
            if key not in args:
                raise ConfigError(f"{what} has no entry {key!r}; write {key}: <value>.")
        return cls(**args)

    @property
    def has_unsaved_secrets(self) -> bool:
        """Whether a secret was given as a value, which a saved plan leaves out (its file then says
        so). Default ``False``."""
        return False

    def read_typed(self, table: str, types: Mapping[str, str]) -> DataFrame:
        """``table`` with a plan's declared column ``types`` (column -> ``decimal(p,s)`` or
        ``string``), each value converted exactly or refused when read, in one line naming the
        table, column and value. Default: ``read``, then the conversions on Spark; a source whose
        reader would lose digits before Spark sees them reads those columns as text here
        (``om.Jdbc``)."""
        from openmirror_nb._core.column_types import apply_types

        return apply_types(self.read(table), types, table=table)

    def hide(self, text: str) -> str:
        """``text`` (a driver's or Spark's message) with the source's secrets replaced by ``***``.
        Default: ``text`` as it is."""
        return text

    def delta_location(self, table: str) -> str | None:
        """Where ``table``'s files are when it is a Delta table (what ``delta_sync`` reads).
        Default ``None``: it is not one."""
        return None

    def read_in_ranges(self, table: str, column: str, parts: int) -> DataFrame | None:
        """``table`` read in ``parts`` ranges of its whole-number ``column`` at once, over as many
        connections, for a large table (a run asks for it past a million rows). Default ``None``:
        the source reads no faster so, and the run reads it whole."""
        return None

    def version(self, table: str) -> str | None:
        """What identifies ``table``'s content now, as cheaply as the source can say it (a Delta
        table's version, PostgreSQL's statistics of the table), without reading its rows. A run
        asks before it reads the table, and leaves it unread when the answer is the one the last
        run that read it got (``db.run_plan``); so it must change whenever the table's rows or
        columns do. Default ``None``: the source cannot say, and every run reads the table."""
        return None


def _keywords(cls: type) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """The keywords ``cls`` takes (``None``: any, it has ``**kwargs``) and those it needs."""
    params = list(inspect.signature(cls).parameters.values())
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None, ()
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return tuple(p.name for p in named), tuple(p.name for p in named if p.default is p.empty)


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
