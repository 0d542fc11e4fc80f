"""How one Kafka Connect field schema (Debezium's, or one a DDL column stands for) is read from
JSON and mirrored: the Spark type ``from_json`` reads it as, the conversion to what the JDBC read of
the same PostgreSQL column gives (``connect_types`` has the whole mapping), PostgreSQL's text of a
value (what ``types`` declaring ``string`` keeps) and its text inside a JSON array. A type no
mirrored column holds is refused in one line with the connector's fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.column_types import MAX_DIGITS
from openmirror_nb._core.errors import ChangeFeedError
from openmirror_nb._core.streaming import connect_values as V

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType

DEBEZIUM = "io.debezium."
CONNECT = "org.apache.kafka.connect.data."
DECIMAL = f"{CONNECT}Decimal"
VARIABLE = f"{DEBEZIUM}data.VariableScaleDecimal"
ZONED = f"{DEBEZIUM}time.ZonedTimestamp"
MICRO_OR_ZONED = f"{DEBEZIUM}time.MicroTimestamp or {ZONED}"  # a TIMESTAMP column of a DDL
SIMPLE = {"int8": "byte", "int16": "short", "int32": "integer", "int64": "long", "float": "float"}
SIMPLE |= {
    "float32": "float",
    "double": "double",
    "float64": "double",
    "boolean": "boolean",
    "string": "string",
}
_TEXTS = {f"{DEBEZIUM}data.{n}" for n in ("Uuid", "Json", "Enum", "EnumSet", "Xml", "Ltree")}
_TEXTS |= {f"{DEBEZIUM}time.Interval"}  # interval.handling.mode=string: ISO 8601, not PostgreSQL's text
_JSON = f"{DEBEZIUM}data.Json"
# Date-times: the JSON type, and units a second (0: days); Connect's own are Debezium's of the same unit.
TIMES = {"Date": ("int32", 0), "Time": ("int32", 1000), "MicroTime": ("int64", 10**6)}
TIMES |= {"NanoTime": ("int64", 10**9), "Timestamp": ("int64", 1000), "MicroTimestamp": ("int64", 10**6)}
TIMES |= {"NanoTimestamp": ("int64", 10**9)}
_DAY = 86_400_000_000  # microseconds


@dataclass(frozen=True)
class Decoded:
    """One field's decoding: ``text`` gives PostgreSQL's text of a value (what ``types`` declaring
    ``string`` keeps), ``json`` its text inside an array as ``to_json`` writes it (``None``: an
    array of it is refused); ``untyped``: ``types`` must declare it."""

    raw: DataType
    spark: DataType
    convert: Callable[[Column], Column]
    text: Callable[[Column], Column]
    json: Callable[[Column], Column] | None
    connect_type: str
    untyped: bool = False


def decode(field: Mapping[str, Any], *, table: str, column: str) -> Decoded:
    """How one Connect field schema is read and mirrored; a type no mirror holds is refused."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BinaryType, DateType, StringType

    kind, name = str(field.get("type")), field.get("name")
    if kind == "array" and not name:
        items = field.get("items") or {}
        shown = f"array<{items.get('name') or items.get('type')}>"
        try:
            item = decode(items, table=table, column=column)
        except ChangeFeedError:
            raise ChangeFeedError(unsupported(table, column, shown)) from None
        if item.connect_type in SIMPLE:  # the JDBC read gives such arrays as Spark arrays
            return Decoded(ArrayType(item.raw), ArrayType(item.spark), _same, F.to_json, None, shown)
        if item.json is None:
            raise ChangeFeedError(unsupported(table, column, shown))
        json = _json_array(item.json)
        return Decoded(ArrayType(item.raw), StringType(), json, json, None, shown)
    if name is None and kind in SIMPLE:
        simple = _type(SIMPLE[kind])
        quoted = _quoted if kind == "string" else _as_text
        return Decoded(simple, simple, _same, _as_text, quoted, kind)
    if name is None and kind == "bytes":  # base64 in JSON; PostgreSQL's text of bytea is \x and hex
        return Decoded(StringType(), BinaryType(), F.unbase64, _bytea, None, kind)
    if name in (DECIMAL, VARIABLE):
        return _decimal(field, table=table, column=column)
    if name in _TEXTS:
        return Decoded(StringType(), StringType(), _same, _same, _same if name == _JSON else _quoted, name)
    short = str(name).rsplit(".", 1)[-1]
    if short in TIMES and name in (f"{DEBEZIUM}time.{short}", f"{CONNECT}{short}"):
        json_type, per_second = TIMES[short]
        raw = _type("integer" if json_type == "int32" else "long")
        if per_second == 0:

            def day(v: Column) -> Column:
                return F.date_from_unix_date(v).cast("string")

            return Decoded(raw, DateType(), F.date_from_unix_date, day, lambda v: _quoted(day(v)), name)
        if short.endswith("Time"):

            def clock(v: Column) -> Column:
                return V.time_text(v, per_second)

            return Decoded(raw, StringType(), clock, clock, lambda v: _quoted(clock(v)), name)
        return _timestamp(raw, per_second, table=table, column=column, connect_type=name)
    if name in (ZONED, MICRO_OR_ZONED):
        return _timestamp(StringType(), None, table=table, column=column, connect_type=name)
    raise ChangeFeedError(unsupported(table, column, str(name or kind)))


def unsupported(table: str, column: str, connect_type: str) -> str:
    """The line refusing a column of ``connect_type``, with the connector settings that fix it."""
    also = {
        f"{DEBEZIUM}time.MicroDuration": ", or set interval.handling.mode=string (ISO 8601 text)",
        f"{DEBEZIUM}time.ZonedTime": ", or make it time (without time zone) or text in the database",
    }.get(connect_type.removeprefix("array<").removesuffix(">"), "")
    return (
        f"Table {table} column {column!r} is {connect_type}, which no mirrored column holds as the database "
        f"does: leave it out in the connector, column.exclude.list=<schema>.<table>.{column}{also}."
    )


def _decimal(field: Mapping[str, Any], *, table: str, column: str) -> Decoded:
    """A Connect ``Decimal`` (``decimal(p,s)`` when Spark holds every value its precision allows)
    or a ``VariableScaleDecimal`` (its text, which ``types`` must type)."""
    from pyspark.sql.types import DecimalType, IntegerType, StringType, StructField, StructType

    if field.get("name") == VARIABLE:

        def variable(v: Column) -> Column:
            return V.decimal_text(v["value"], v["scale"])

        raw = StructType([StructField("scale", IntegerType()), StructField("value", StringType())])
        return Decoded(raw, StringType(), variable, variable, variable, VARIABLE, untyped=True)
    parameters = field.get("parameters") or {}
    scale = int(parameters.get("scale", 0))
    precision = int(parameters.get("connect.decimal.precision", MAX_DIGITS))  # money has none

    def text(v: Column) -> Column:
        return V.decimal_text(v, scale)

    if not 0 <= scale <= precision <= MAX_DIGITS:  # numeric(50,2): typed by types, as a plan does
        return Decoded(StringType(), StringType(), text, text, text, DECIMAL, untyped=True)
    why = (
        f"which decimal({precision},{scale}) (its Connect Decimal type) does not hold; nothing was written: "
        f"declare it types={{{table!r}: {{{column!r}: 'string'}}}} or a wider decimal"
    )

    def convert(v: Column) -> Column:
        return V.exact_decimal(text(v), precision, scale, table=table, column=column, why=why)

    return Decoded(StringType(), DecimalType(precision, scale), convert, text, text, DECIMAL)


def _timestamp(
    raw: DataType, per_second: int | None, *, table: str, column: str, connect_type: str
) -> Decoded:
    """A timestamp from an amount of ``per_second`` units since 1970, or (``None``) from an
    ISO-8601 instant or, for a TIMESTAMP a DDL declares, either; refused when a microsecond does
    not hold it."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    zoned = per_second is None
    why = "which is no instant a timestamp holds (to the microsecond); nothing was written"

    def micros(v: Column) -> Column:
        if per_second == 10**9:
            exact = v % 1000 == 0
            return F.when(exact, V.call("div", v, 1000)).otherwise(
                V.refused(table, column, v.cast("string"), why)
            )
        if per_second is not None:
            return v * F.lit(10**6 // per_second)
        parsed, exact = V.zoned_micros(v)
        whole = v.rlike("^-?[0-9]+$") if connect_type == MICRO_OR_ZONED else F.lit(False)
        refusal = V.refused(table, column, v, why)
        return F.when(whole, v.cast("long")).when(exact, parsed).otherwise(refusal)

    def convert(v: Column) -> Column:
        return F.when(v.isNotNull(), F.timestamp_micros(micros(v)))

    def text(v: Column, sep: str = " ", zone: str = "+00") -> Column:  # PostgreSQL's, in UTC
        us = micros(v)
        day = F.date_from_unix_date(V.call("div", us - F.pmod(us, F.lit(_DAY)), _DAY)).cast("string")
        shown = F.concat(day, F.lit(sep), V.time_text(F.pmod(us, F.lit(_DAY)), 10**6))
        return F.concat(shown, F.lit(zone)) if zoned else shown

    return Decoded(
        raw, TimestampType(), convert, text, lambda v: _quoted(text(v, "T", "+00:00")), connect_type
    )


def _type(name: str) -> DataType:
    """The Spark type of one of ``SIMPLE``'s names."""
    from pyspark.sql import types as T

    classes: dict[str, type[DataType]] = {"byte": T.ByteType, "short": T.ShortType, "integer": T.IntegerType}
    classes |= {"long": T.LongType, "float": T.FloatType, "double": T.DoubleType, "boolean": T.BooleanType}
    return classes.get(name, T.StringType)()


def _same(value: Column) -> Column:
    return value


def _as_text(value: Column) -> Column:
    return value.cast("string")


def _quoted(text: Column) -> Column:
    """``text`` as a JSON string (``null`` for NULL), escaped as Spark's JSON writer does."""
    from pyspark.sql import functions as F

    return F.regexp_replace(F.to_json(F.array(text)), r"^\[|\]$", "")


def _bytea(value: Column) -> Column:
    from pyspark.sql import functions as F

    return F.concat(F.lit("\\x"), F.lower(F.hex(F.unbase64(value))))


def _json_array(item: Callable[[Column], Column]) -> Callable[[Column], Column]:
    """An array's JSON text from its items' (PostgreSQL's ``to_json``: no spaces, ``null``)."""
    from pyspark.sql import functions as F

    def json(value: Column) -> Column:
        items = F.array_join(F.transform(value, lambda x: F.coalesce(item(x), F.lit("null"))), ",")
        return F.when(value.isNotNull(), F.concat(F.lit("["), items, F.lit("]")))

    return json
