"""A JDBC source's tables as its driver describes them: ``java.sql.DatabaseMetaData`` called
through Spark's JVM gateway, with the driver Spark itself loads.

``DatabaseMetaData`` is the one description every JDBC driver gives (Oracle has no
``information_schema``; SQL Server's hides identity columns), and it needs no extra jar or
Python package: it runs wherever ``spark.read.jdbc`` does with a classic (non-Connect) session,
as in Fabric notebooks. The driver is registered through Spark's own ``DriverRegistry`` first,
because ``DriverManager`` does not see a jar added by ``spark.jars`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from openmirror_nb._core.errors import ConfigError, MissingDependencyError, NotSupportedError, user_line
from openmirror_nb._core.sources.table import SourceTable, source_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLE_TYPES = frozenset({"TABLE", "PARTITIONED TABLE", "BASE TABLE"})
_STATISTIC = "0"  # DatabaseMetaData.tableIndexStatistic: a getIndexInfo row holding the row count
# PostgreSQL keeps each table's row estimate (-1: never analyzed) where its planner reads it.
# A partitioned table's estimate is its partitions' (its own reltuples is -1); a partition is
# flagged, so it is not listed beside its parent (its rows would be mirrored twice).
_PG_ROWS = (
    "SELECT c.relname, CASE WHEN c.relkind = 'p' THEN (SELECT sum(greatest(k.reltuples, 0))::bigint "
    "FROM pg_inherits i JOIN pg_class k ON k.oid = i.inhrelid WHERE i.inhparent = c.oid) "
    "ELSE c.reltuples::bigint END, c.relispartition::text "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = ? AND c.relkind IN ('r', 'p')"
)


class Jdbc(Protocol):
    """What discovery needs of ``sources.jdbc.Jdbc``."""

    url: str
    schema: str | None

    def connection_properties(self) -> dict[str, str]: ...

    def hide(self, text: str) -> str: ...

    def qualified(self, table: str, schema: str | None = None) -> str: ...

    def read_columns(self, table: str) -> tuple[Any, dict[str, str]]: ...


@dataclass
class _Described:
    """One table as the metadata gives it."""

    not_null: set[str]
    increasing: list[str]
    primary_key: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    rows: int | None = None


def discover(spark: SparkSession, source: Jdbc) -> list[SourceTable]:
    """Every table of ``source``'s schema, in name order (see ``Jdbc.discover``)."""
    described = describe_tables(spark, source)
    return [_with_columns(spark, source, name, facts) for name, facts in sorted(described.items())]


def describe_tables(spark: SparkSession, source: Jdbc) -> dict[str, _Described]:
    """Table name -> what the metadata says of it: one connection, a few calls per table."""
    conn = _connect(spark, source)
    try:
        meta = conn.getMetaData()
        schema = source.schema or conn.getSchema()
        pattern = _escape(schema, meta.getSearchStringEscape()) if schema else None
        names = [
            str(name)
            for owner, name, kind in _rows(meta.getTables(None, pattern, "%", None), 2, 3, 4)
            if kind in TABLE_TYPES and owner == schema and name
        ]
        if not names:
            _check_schema(meta, schema, source)
        columns = _columns(meta, pattern, schema)
        estimates, partitions = _estimates(conn, meta, schema)
        names = [n for n in names if n not in partitions]
        found: dict[str, _Described] = {}
        for name in names:
            facts = columns.get(name) or _Described(set(), [])
            facts.primary_key = _primary_key(meta, schema, name)
            facts.unique, counted = _unique(meta, schema, name, facts)
            facts.rows = estimates[name] if name in estimates else counted
            found[name] = facts
        return found
    except Exception as exc:
        raise _failure(exc, source, connected=True) from None
    finally:
        conn.close()


def _with_columns(spark: SparkSession, source: Jdbc, name: str, facts: _Described) -> SourceTable:
    """The table's Spark schema as the source reads it (one query returning no rows), and its
    columns no Spark type holds whole (``untyped``)."""
    try:
        frame, untyped = source.read_columns(name)
        schema = frame.schema
    except Exception as exc:
        why = user_line(exc, hide=source.hide)
        return SourceTable(
            name,
            unreadable=f"Spark's JDBC reader cannot read its columns ({why}); leave it out (enabled: false)",
        )
    return source_table(
        name,
        schema,
        not_null=frozenset(facts.not_null),
        primary_key=facts.primary_key,
        unique=facts.unique,
        increasing=tuple(facts.increasing),
        rows=facts.rows,
        untyped=tuple(untyped.items()),
    )


def _connect(spark: SparkSession, source: Jdbc) -> Any:
    jvm = getattr(spark, "_jvm", None) or getattr(getattr(spark, "sparkContext", None), "_jvm", None)
    if jvm is None:
        raise NotSupportedError(
            "Discovering a JDBC source reads the driver's DatabaseMetaData through Spark's JVM gateway, "
            "which a Spark Connect session does not have; plan it from a classic session (Fabric's)."
        )
    props = source.connection_properties()
    driver = props.pop("driver", None)
    try:
        if driver:
            jvm.org.apache.spark.sql.execution.datasources.jdbc.DriverRegistry.register(driver)
        java_props = jvm.java.util.Properties()
        for key, value in props.items():
            java_props.setProperty(key, value)
        return jvm.java.sql.DriverManager.getConnection(source.url, java_props)
    except Exception as exc:
        raise _failure(exc, source, driver=driver) from None


def _failure(exc: Exception, source: Jdbc, driver: str | None = None, connected: bool = False) -> Exception:
    if isinstance(exc, ConfigError | NotSupportedError | MissingDependencyError):
        return exc
    line = user_line(exc, hide=source.hide)
    if "ClassNotFoundException" in line or "No suitable driver" in line:
        return MissingDependencyError(
            f"No JDBC driver for {source.url} on the Spark session ({line}); put its jar on spark.jars "
            f"(and pass driver= its class{f', {driver}' if driver else ''}): see the many-tables guide."
        )
    if connected:
        return ConfigError(
            f"Cannot read the tables of JDBC source {source.url} ({line}); check that its user may read "
            "the database's catalog."
        )
    return ConfigError(
        f"Cannot connect to JDBC source {source.url} ({line}); check its host, port, database, user and "
        "password."
    )


def _rows(result: Any, *columns: int) -> list[tuple[str | None, ...]]:
    """The rows of a JDBC ``ResultSet`` (by 1-based column index, as strings), closed after."""
    out = []
    try:
        while result.next():
            out.append(tuple(result.getString(c) for c in columns))
    finally:
        result.close()
    return out


def _escape(name: str, escape: str | None) -> str:
    """A schema name as a metadata search pattern matches it exactly (``_`` and ``%`` escaped)."""
    if not escape:
        return name
    return name.replace(escape, escape * 2).replace("_", escape + "_").replace("%", escape + "%")


def _check_schema(meta: Any, schema: str | None, source: Jdbc) -> None:
    known = sorted(str(s) for (s,) in _rows(meta.getSchemas(), 1) if s)
    if schema not in known:
        raise ConfigError(
            f"Schema {schema!r} is not in {source.url} (schemas: {', '.join(known)}); pass schema= one "
            "of them."
        )


def _columns(meta: Any, pattern: str | None, schema: str | None) -> dict[str, _Described]:
    found: dict[str, _Described] = {}
    # getColumns: 2 TABLE_SCHEM, 3 TABLE_NAME, 4 COLUMN_NAME, 11 NULLABLE, 23 IS_AUTOINCREMENT
    for owner, table, column, nullable, auto in _rows(
        meta.getColumns(None, pattern, "%", "%"), 2, 3, 4, 11, 23
    ):
        if owner != schema or table is None or column is None:
            continue
        facts = found.setdefault(table, _Described(set(), []))
        if nullable == "0":  # columnNoNulls
            facts.not_null.add(column)
        if (auto or "").upper() == "YES":
            facts.increasing.append(column)
    return found


def _primary_key(meta: Any, schema: str | None, table: str) -> tuple[str, ...]:
    # getPrimaryKeys: 4 COLUMN_NAME, 5 KEY_SEQ
    rows = _rows(meta.getPrimaryKeys(None, schema, table), 4, 5)
    return tuple(str(column) for column, _ in sorted(rows, key=lambda r: int(r[1] or 0)))


def _unique(
    meta: Any, schema: str | None, table: str, facts: _Described
) -> tuple[tuple[tuple[str, ...], ...], int | None]:
    """Unique indexes on NOT NULL columns only (no condition, no expression), narrowest first and
    the primary key's left out; and the row count a ``tableIndexStatistic`` row gives, if any."""
    indexes: dict[str, list[tuple[int, str | None]]] = {}
    partial: set[str] = set()
    rows = None
    # getIndexInfo: 5 NON_UNIQUE, 6 INDEX_NAME, 7 TYPE, 8 ORDINAL_POSITION, 9 COLUMN_NAME,
    # 11 CARDINALITY, 13 FILTER_CONDITION
    found = _rows(meta.getIndexInfo(None, schema, table, True, True), 5, 6, 7, 8, 9, 11, 13)
    for non_unique, index, kind, position, column, cardinality, condition in found:
        if kind == _STATISTIC:
            rows = int(cardinality) if cardinality is not None else None
            continue
        if index is None or (non_unique or "").lower() in ("true", "1"):
            continue
        if condition:
            partial.add(index)
        indexes.setdefault(index, []).append((int(position or 0), column))
    keys = []
    for index, parts in indexes.items():
        columns = tuple(str(c) for _, c in sorted(parts, key=lambda p: p[0]) if c is not None)
        whole = len(columns) == len(parts) and index not in partial
        if whole and set(columns) <= facts.not_null and set(columns) != set(facts.primary_key):
            keys.append((len(columns), index, columns))
    return tuple(columns for _, _, columns in sorted(keys)), rows


def _estimates(conn: Any, meta: Any, schema: str | None) -> tuple[dict[str, int | None], set[str]]:
    """Row estimates the database keeps (PostgreSQL: ``reltuples``), and the tables that are
    partitions of another (PostgreSQL's declarative partitioning); both empty for other databases,
    whose drivers report estimates as a ``tableIndexStatistic`` row of ``getIndexInfo`` instead."""
    if schema is None or meta.getDatabaseProductName() != "PostgreSQL":
        return {}, set()
    query = conn.prepareStatement(_PG_ROWS)
    try:
        query.setString(1, schema)
        found = _rows(query.executeQuery(), 1, 2, 3)
    finally:
        query.close()
    estimates = {str(n): int(rows) if rows is not None and int(rows) >= 0 else None for n, rows, _ in found}
    return estimates, {str(n) for n, _, part in found if part == "true"}
