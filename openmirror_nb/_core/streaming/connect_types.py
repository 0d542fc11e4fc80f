"""The columns of a Debezium (Kafka Connect) change event, each with the Spark type ``from_json``
reads its JSON value as and the conversion to what a faithful mirror holds: what the JDBC read of
the same PostgreSQL column gives (``sources/pg_read.py``, issue 39).

- ``int8..int64``, ``float``/``double`` (``"NaN"``, ``"Infinity"`` included), ``boolean``,
  ``string``: byte, short, int, long, float, double, boolean, string; ``bytes``: binary;
- ``Decimal``: ``decimal(p,s)`` exactly (``money``, which has no precision: ``decimal(38,s)``);
  a precision over 38 and ``VariableScaleDecimal`` (an unbounded ``numeric``, whose ``NaN``
  Debezium writes as null): their exact text, which ``types`` must declare ``decimal(p,s)`` or
  ``string``, as a plan does;
- ``Date``: date; ``Time``, ``MicroTime``, ``NanoTime``: PostgreSQL's text of the time;
  ``Timestamp``, ``MicroTimestamp``, ``NanoTimestamp``: the wall clock as UTC; ``ZonedTimestamp``:
  the instant (Connect's own ``Date``/``Time``/``Timestamp`` the same);
- ``Uuid``, ``Json``, ``Enum``, ``EnumSet``, ``Xml``, ``Ltree``, ``Interval``: string;
- arrays of whole numbers, floats, booleans and strings: Spark arrays; of the other types above:
  the array's JSON text, as PostgreSQL's ``to_json`` writes it.

Any other type is refused when the columns are made, in one line with the connector's fix.
``types`` (column -> ``decimal(p,s)`` or ``string``) converts as a plan's do: ``string`` keeps
PostgreSQL's text of the value (an array's JSON text).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.column_types import MAX_DIGITS, parse_type, type_problems
from openmirror_nb._core.errors import ChangeFeedError, ConfigError
from openmirror_nb._core.streaming import connect_values as V
from openmirror_nb._core.streaming.connect_decoding import (
    DEBEZIUM,
    DECIMAL,
    MICRO_OR_ZONED,
    SIMPLE,
    TIMES,
    VARIABLE,
    Decoded,
    decode,
    unsupported,
)

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType


@dataclass(frozen=True)
class ConnectColumn:
    """A column of the events' ``after``/``before`` struct, and how its mirror is made from it."""

    name: str
    raw: DataType  # the Spark type from_json reads this field of the payload's after/before as
    spark: DataType  # the mirrored column's type
    convert: Callable[[Column], Column]  # a Column of ``raw`` -> of ``spark``; NULL stays NULL
    connect_type: str  # as messages name it: "io.debezium.time.MicroTimestamp", "int32", "array<int32>"


def connect_columns(
    fields: Sequence[Mapping[str, Any]], *, table: str, types: Mapping[str, str] | None = None
) -> list[ConnectColumn]:
    """From a Connect struct schema's ``fields`` (the envelope's ``after`` field schema, as
    JSON-decoded dicts). A caller mirroring a table without some of its columns leaves their
    fields out. ``types``: column -> ``decimal(p,s)`` or ``string``, as a plan's types.

    Raises:
        ChangeFeedError: a field of a type no mirrored column holds; the line names the table,
            column, Connect type and the connector's setting that leaves it out.
        ConfigError: ``types`` is wrong, or misses a column that needs it (an unbounded numeric).
    """
    decoded = [(str(f["field"]), decode(f, table=table, column=str(f["field"]))) for f in fields]
    return _typed(decoded, table=table, types=types or {})


def declared_columns(
    schema: StructType, *, table: str, types: Mapping[str, str] | None = None
) -> list[ConnectColumn]:
    """For messages without schemas: from the table's DDL (a StructType the user declared). Each
    Spark type decodes Debezium's default encoding for it (``decimal.handling.mode=precise``,
    ``time.precision.mode=adaptive``, PostgreSQL's default precisions): DECIMAL(p,s) <- base64
    Connect Decimal bytes with scale s; TIMESTAMP <- an integer of microseconds (MicroTimestamp) or
    an ISO-8601 string with offset (ZonedTimestamp); DATE <- an integer of days; BINARY <- base64;
    numbers, booleans and strings as they are; ARRAY <- a JSON array of its items. A column's DDL
    COMMENT may name the Connect type instead (``ts3 TIMESTAMP COMMENT 'io.debezium.time.Timestamp'``,
    ``ai ARRAY<STRING> COMMENT 'array<io.debezium.data.Uuid>'``); a DECIMAL(p,s) or STRING column
    commented ``io.debezium.data.VariableScaleDecimal`` declares its type (``types`` overrides it).

    Raises:
        ChangeFeedError: a COMMENT or a Spark type that names no Connect type this module decodes.
        ConfigError: a commented column's DDL type is not the type it is mirrored as, or ``types``
            is wrong.
    """
    from pyspark.sql.types import ArrayType

    types = dict(types or {})
    decoded = []
    for field in schema.fields:
        comment = field.metadata.get("comment")
        connect = _declared(field.dataType, comment, table=table, column=field.name)
        column = decode(connect, table=table, column=field.name)
        ddl = field.dataType.simpleString()
        if (
            column.connect_type == VARIABLE
            and field.name not in types
            and ddl.startswith(("decimal", "string"))
        ):
            types[field.name] = ddl  # the DDL declares it
        elif comment and column.connect_type != VARIABLE and not isinstance(field.dataType, ArrayType):
            if column.spark != field.dataType:
                mirrored = column.spark.simpleString()
                raise ConfigError(
                    f"Table {table} column {field.name!r} is declared {ddl} with COMMENT {comment!r}, which "
                    f"is mirrored as {mirrored}: declare it {mirrored.upper()}."
                )
        decoded.append((field.name, column))
    return _typed(decoded, table=table, types=types)


def _declared(kind: DataType, comment: str | None, *, table: str, column: str) -> dict[str, Any]:
    """The Connect field schema a DDL column (with its COMMENT, a Connect type) stands for."""
    from pyspark.sql.types import ArrayType, DecimalType

    name = comment or {"date": f"{DEBEZIUM}time.Date", "timestamp": MICRO_OR_ZONED}.get(kind.typeName())
    if isinstance(kind, ArrayType):
        item = name[6:-1] if name and name.startswith("array<") and name.endswith(">") else None
        if name and item is None:
            raise ChangeFeedError(unsupported(table, column, name))
        return {"type": "array", "items": _declared(kind.elementType, item, table=table, column=column)}
    if isinstance(kind, DecimalType):
        precise = {"scale": kind.scale, "connect.decimal.precision": kind.precision}
        return {"type": "bytes", "name": name or DECIMAL, "parameters": precise}
    if name is None:
        simple = {v: k for k, v in reversed(SIMPLE.items())} | {"binary": "bytes"}
        return {"type": simple.get(kind.typeName(), kind.simpleString())}
    if name in SIMPLE or name == "bytes":
        return {"type": name}
    if name == DECIMAL:
        raise ConfigError(f"Table {table} column {column!r} is a Connect Decimal: declare it DECIMAL(p,s).")
    short = name.rsplit(".", 1)[-1]
    json_type = TIMES[short][0] if short in TIMES else "string"
    return {"type": "struct" if name == VARIABLE else json_type, "name": name}


def _typed(
    decoded: list[tuple[str, Decoded]], *, table: str, types: Mapping[str, str]
) -> list[ConnectColumn]:
    """The columns with ``types`` applied: a decimal exactly or refused, ``string`` as text."""
    from pyspark.sql.types import DecimalType, StringType, StructField, StructType

    missing = [
        f"Table {table} column {name!r} is {d.connect_type}, which can hold more digits than any Spark "
        f"decimal ({MAX_DIGITS}): declare it, types={{{table!r}: {{{name!r}: 'decimal(38,10)'}}}} (the "
        f"precision its values need) or {{{name!r}: 'string'}} (its exact text)"
        for name, d in decoded
        if d.untyped and name not in types
    ]
    problems = type_problems(StructType([StructField(n, d.spark) for n, d in decoded]), types, {})
    if missing or problems:
        raise ConfigError("; ".join([*missing, *(f"Table {table} {p}" for p in problems)]) + ".")
    columns = []
    for name, d in decoded:
        if name not in types:
            columns.append(ConnectColumn(name, d.raw, d.spark, d.convert, d.connect_type))
            continue
        declared = parse_type(types[name], column=name)
        if declared is None:
            columns.append(ConnectColumn(name, d.raw, StringType(), d.text, d.connect_type))
            continue
        precision, scale = declared
        why = (
            f"which decimal({precision},{scale}) (declared in types) does not hold without rounding; nothing "
            f"was written: declare a wider decimal or {name}: 'string'"
        )

        convert = _to_decimal(d.text, precision, scale, table=table, column=name, why=why)
        columns.append(ConnectColumn(name, d.raw, DecimalType(precision, scale), convert, d.connect_type))
    return columns


def _to_decimal(
    text: Callable[[Column], Column], precision: int, scale: int, *, table: str, column: str, why: str
) -> Callable[[Column], Column]:
    """A conversion of a value, through its ``text``, to ``decimal(precision,scale)`` exactly."""

    def convert(value: Column) -> Column:
        return V.exact_decimal(text(value), precision, scale, table=table, column=column, why=why)

    return convert
