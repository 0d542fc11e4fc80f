"""PostgreSQL's tables read exactly, whatever the JVM's or the session's time zone.

Spark's JDBC reader takes timestamps and dates through ``java.sql.Timestamp`` and ``Date``:
in the JVM's default time zone (a ``timestamp`` read on a machine in ``Asia/Kolkata`` comes
back 5:30 early) and in the Julian calendar before 1582 (``1582-10-10`` becomes ``10-20``; a
``timestamptz`` of 1500 is off by the zone's local mean time). It rounds ``numeric`` without
precision to 18 decimals and fails a value over 38 digits. So each table is read through a
query that hands Spark numbers and text only, converted back on Spark:

- ``timestamptz``: its instant, as microseconds since 1970 in UTC; ``timestamp`` (without time
  zone): its wall-clock value taken as UTC (as Debezium's ``MicroTimestamp`` does); ``date``:
  days since 1970. Both in PostgreSQL's own (proleptic Gregorian) calendar, years 1 to 9999 and
  BC. ``infinity`` is refused in one line naming the table, column and value;
- ``numeric`` without precision, or wider than Spark's 38 digits (or a negative scale, or one
  over its precision): its exact text, which the plan's ``types`` turns into a decimal or keeps;
- ``money``: ``decimal(19,2)``, exactly (a currency with more fraction digits is refused);
- ``time``, ``timetz``, ``interval`` (ISO 8601), arrays of other types than whole numbers,
  floats, ``bool`` and text (as JSON, which a push writes an array as), ``bit(n)``, ``varbit``, enums,
  ranges and any type Spark has no reader for: their text, as PostgreSQL writes it with the
  session in UTC (set for every read, so ``timestamptz`` inside an array is UTC too).

The other types (whole numbers, floats, bounded ``numeric``, ``bool``, ``bit(1)``, text types,
``bytea``, ``uuid``, ``json``, ``jsonb``, ``inet``) are read by Spark as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.column_types import MAX_DIGITS, apply_types, shown
from openmirror_nb._core.errors import REFUSAL_MARK
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.sources.watermark import ROWS_PAST

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.sources.jdbc_meta import Jdbc

# For every read: text of timestamptz (in arrays, ranges) in UTC, intervals in ISO 8601.
SESSION_INIT = "SET TIME ZONE 'UTC'; SET IntervalStyle = 'iso_8601'; SET DateStyle = 'ISO'"
_NATIVE = frozenset(
    {
        "int2", "int4", "int8", "oid", "float4", "float8", "bool", "bpchar", "varchar", "text",
        "name", "bytea", "uuid", "json", "jsonb", "inet", "cidr", "macaddr", "macaddr8",
    }
)  # fmt: skip
# Arrays Spark's reader takes element by element without loss (not date-times: the JVM's zone).
_ARRAY_NATIVE = frozenset({"int2", "int4", "int8", "float4", "float8", "bool", "bpchar", "varchar", "text"})
_MICROS = (  # days and the time of day apart: exact in every version (EXTRACT is float before 14)
    "(({v})::date - DATE '1970-01-01')::int8 * 86400000000 "
    "+ (EXTRACT(EPOCH FROM ({v})::time) * 1000000)::int8"
)
_BAD = "_om_bad_"  # the text of a value Spark is told to refuse (dropped before the frame is used)
_COLUMNS = (
    "SELECT a.attname, b.typname, format_type(a.atttypid, a.atttypmod), b.typcategory, "
    "CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END "
    "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_type t ON t.oid = a.atttypid "
    "JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END "
    "WHERE n.nspname = ? AND c.relname = ? AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
)


@dataclass(frozen=True)
class PgColumn:
    """A column as PostgreSQL's catalog says it (a domain as its base type)."""

    name: str
    type: str  # pg_type.typname: int4, numeric, timestamptz, _int4 (an array)...
    shown: str  # format_type: numeric(50,2), timestamp without time zone, integer[]...
    category: str  # pg_type.typcategory: A (array), E (enum), R (range)...
    typmod: int

    @property
    def untyped(self) -> bool:
        """A ``numeric`` no Spark decimal holds whole: no precision, over 38 digits, a scale
        below 0 or over its precision."""
        if self.type != "numeric":
            return False
        if self.typmod < 0:
            return True
        precision = ((self.typmod - 4) >> 16) & 0xFFFF
        scale = (((self.typmod - 4) & 0x7FF) ^ 1024) - 1024  # signed since PostgreSQL 15
        return precision > MAX_DIGITS or not 0 <= scale <= precision


def read_exactly(
    source: Jdbc, table: str, *, split: dict[str, Any], strings: frozenset[str]
) -> tuple[DataFrame, list[PgColumn]] | None:
    """``table`` of a PostgreSQL ``source`` read through the query of ``select_list`` and
    ``converted`` back, with its columns as the catalog gives them; ``None`` when the catalog
    has no such table (the plain read then says why). ``split``: Spark's ``partitionColumn``
    options, ``strings``: the columns the plan declares ``string``."""
    from openmirror_nb._core.runtime import get_spark
    from openmirror_nb._core.sources.jdbc_meta import _connect

    spark = get_spark()
    conn = _connect(spark, source)
    try:
        schema = source.schema or str(conn.getSchema())
        columns = pg_columns(conn, schema, table)
    finally:
        conn.close()
    if not columns:
        return None
    query = f"(SELECT {select_list(columns, strings)} FROM {source.qualified(table, schema)}) AS om_read"
    properties = {**source.connection_properties(), "sessionInitStatement": SESSION_INIT}
    raw = spark.read.jdbc(source.url, query, properties=properties, **split)
    frame = converted(raw, columns, strings, table=table)
    numbered = {c.name for c in columns if _kind(c, strings) in ("timestamp", "timestamptz", "date")}

    def rows_past(column: str, bound: int, inclusive: bool) -> DataFrame | None:
        """The rows past ``bound`` (microseconds or days since 1970), filtered in the database."""
        if column not in numbered:
            return None
        value = raw[quoted(column)]
        rows = raw.where(value >= bound if inclusive else value > bound)
        return converted(rows, columns, strings, table=table)

    frame.__dict__[ROWS_PAST] = rows_past  # watermark.past filters in the database through it
    return frame, columns


def pg_columns(conn: Any, schema: str, table: str) -> list[PgColumn]:
    """The columns of ``schema.table``, in order, through an open JDBC connection."""
    query = conn.prepareStatement(_COLUMNS)
    try:
        query.setString(1, schema)
        query.setString(2, table)
        result = query.executeQuery()
        found = []
        while result.next():
            found.append(
                PgColumn(
                    str(result.getString(1)),
                    str(result.getString(2)),
                    str(result.getString(3)),
                    str(result.getString(4)),
                    int(result.getInt(5)),
                )
            )
        return found
    finally:
        query.close()


def select_list(columns: list[PgColumn], strings: frozenset[str]) -> str:
    """The query's columns: each as Spark reads it exactly (module docstring); ``strings``: the
    columns the plan declares ``string``, read as their text."""
    out = []
    for i, column in enumerate(columns):
        name = _ident(column.name)
        kind = _kind(column, strings)
        if kind in ("timestamp", "timestamptz", "date"):
            value = f"({name} AT TIME ZONE 'UTC')" if kind == "timestamptz" else name
            number = f"{name} - DATE '1970-01-01'" if kind == "date" else _MICROS.format(v=value)
            out.append(f"CASE WHEN isfinite({name}) THEN {number} END AS {name}")
            out.append(f"CASE WHEN NOT isfinite({name}) THEN {name}::text END AS {_ident(_BAD + str(i))}")
        elif kind == "money":
            out.append(f"({name})::numeric::text AS {name}")
        elif kind == "array":
            out.append(f"to_json({name})::text AS {name}")
        elif kind == "text":
            out.append(f"({name})::text AS {name}")
        else:
            out.append(name)
    return ", ".join(out)


def converted(frame: DataFrame, columns: list[PgColumn], strings: frozenset[str], *, table: str) -> DataFrame:
    """The frame the query of ``select_list`` gives, as the table: numbers back to timestamps and
    dates (an infinite one refused), ``money`` to ``decimal(19,2)``."""
    from pyspark.sql import functions as F

    out = []
    for i, column in enumerate(columns):
        value = F.col(quoted(column.name))
        kind = _kind(column, strings)
        if kind in ("timestamp", "timestamptz", "date"):
            bad = F.col(quoted(_BAD + str(i)))
            back = F.date_from_unix_date(value) if kind == "date" else F.timestamp_micros(value)
            refused = F.raise_error(
                F.concat(
                    F.lit(f"{REFUSAL_MARK}Table {table} column {column.name!r} holds "),
                    shown(bad),
                    F.lit(
                        f", which no mirrored {'date' if kind == 'date' else 'timestamp'} holds; nothing "
                        f"was written: declare it types: {{{column.name}: string}} in the plan, or replace "
                        "the value"
                    ),
                )
            )
            value = F.when(bad.isNull(), back).otherwise(refused)
        out.append(value.alias(column.name))
    frame = frame.select(*out)
    money = {c.name: "decimal(19,2)" for c in columns if _kind(c, strings) == "money"}
    return apply_types(frame, money, table=table)


def _kind(column: PgColumn, strings: frozenset[str]) -> str:
    """How a column is read: ``native`` (by Spark), ``text``, ``array``, ``money``, or its
    date-time type."""
    if column.name in strings or column.untyped:
        return "text"
    if column.category == "A":  # arrays of types Spark reads whole stay arrays (a push writes JSON)
        return "native" if column.type[1:] in _ARRAY_NATIVE else "array"
    if column.type in ("timestamp", "timestamptz", "date", "money"):
        return column.type
    if column.type == "numeric" or column.type in _NATIVE or (column.type == "bit" and column.typmod == 1):
        return "native"
    return "text"


def _ident(name: str) -> str:
    """``name`` quoted as PostgreSQL's SQL quotes an identifier."""
    return '"' + name.replace('"', '""') + '"'
