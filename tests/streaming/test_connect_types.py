"""Debezium's (Kafka Connect's) JSON values decoded into what a faithful mirror holds, the same as the
JDBC read of the same PostgreSQL column gives (issue 39): unit tests of the conversions at their
edges, every recorded ``inv.every_type`` event of ``tests/data/debezium`` decoded, the same through a
declared DDL for messages without schemas, and the snapshot compared with a JDBC read of the same
table, type by type and value by value."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import struct
from decimal import Decimal
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ChangeFeedError, ConfigError, user_line
from openmirror_nb._core.streaming.connect_types import connect_columns, declared_columns
from tests.sources.postgres import PASSWORD, SUPERUSER, missing, start_server

pytestmark = pytest.mark.spark
DATA = Path(__file__).resolve().parents[1] / "data" / "debezium"
TABLE = "inv.every_type"
REFUSED = ("tmtz", "iv")  # ZonedTime and MicroDuration: no mirrored column holds them
UTC = dt.UTC


def _ts(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


# The snapshot (op "r") rows of README.md's every_type, as the mirror holds them (n: types 'string').
SNAPSHOT = {
    1: {
        "id": 1, "i2": 12, "i8": 1234567890123, "r": 1.5, "f": 3.141592653589793, "bo": True,
        "t": 'héllo "wörld"\nline 2', "vc": "varchar", "c": "ab   ", "n102": Decimal("12345678.91"),
        "n": "42.5", "d": dt.date(2024, 2, 29), "tm": "12:34:56.789012", "tm3": "12:34:56.789",
        "ts": _ts(2024, 2, 29, 12, 34, 56, 789012), "ts3": _ts(2024, 2, 29, 12, 34, 56, 789000),
        "tstz": _ts(2024, 2, 29, 11, 34, 56, 789012), "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "j": '{"a": [1, 2], "b": null}', "jb": '{"a": {"x": "y"}, "z": 1}', "e": "happy", "ai": [1, 2, 3],
        "at": ["a", "b c", None], "b": bytes.fromhex("deadbeef00"), "m": Decimal("1234.56"),
    },
    2: {
        "id": 2, "i2": -32768, "i8": -9223372036854775808, "r": _f32(-1.25e-7), "f": -1.7976931348623157e308,
        "bo": False, "t": "", "vc": "x", "c": "abcde", "n102": Decimal("-99999999.99"),
        "n": "123456789012345678901234.12", "d": dt.date(1969, 12, 31), "tm": "24:00:00", "tm3": "00:00:00.001",
        "ts": _ts(9999, 12, 31, 23, 59, 59, 999999), "ts3": _ts(1900, 1, 1, 0, 0, 0, 1000),
        "tstz": _ts(1969, 12, 31, 23, 59, 59, 999999), "u": "00000000-0000-0000-0000-000000000000", "j": "[]",
        "jb": "{}", "e": "sad", "ai": [], "at": [], "b": b"", "m": Decimal("-92233720368547758.08"),
    },
    3: {
        "id": 3, "i2": None, "i8": None, "r": math.inf, "f": math.nan, "bo": None, "t": None, "vc": None,
        "c": None, "n102": None, "n": None, "d": dt.date(1, 1, 1), "tm": None, "tm3": None, "ts": None,
        "ts3": None, "tstz": None, "u": None, "j": "null", "jb": "null", "e": None, "ai": [None, 7],
        "at": None, "b": None, "m": None,
    },
    4: {
        "id": 4, "i2": 0, "i8": 0, "r": 0.0, "f": 0.0, "bo": True, "t": "tiny", "vc": "y", "c": "z    ",
        "n102": Decimal("0.01"), "n": "0.000000000000000000001", "d": dt.date(9999, 12, 31), "tm": "00:00:00",
        "tm3": "23:59:59.999", "ts": _ts(1970, 1, 1), "ts3": _ts(1970, 1, 1), "tstz": _ts(1970, 1, 1),
        "u": "ffffffff-ffff-ffff-ffff-ffffffffffff", "j": '"text"', "jb": '[1, "two", 3.0]', "e": "ok",
        "ai": [-1], "at": [""], "b": b"\x00\xff", "m": Decimal("0.00"),
    },
}  # fmt: skip
# The streamed events after the snapshot, (op, id) and what differs from the snapshot row of that id.
STREAMED = [
    ("c", 5, {**dict.fromkeys(SNAPSHOT[3], None), "id": 5, "i2": 5, "t": "five", "n102": Decimal("5.50"),
              "n": "5.5", "d": dt.date(2025, 5, 5), "ts": _ts(2025, 5, 5, 5, 5, 5),
              "tstz": _ts(2025, 5, 5, 5, 5, 5), "ai": [5]}),
    ("u", 1, {**SNAPSHOT[1], "t": "one, changed", "n": "-0.5", "jb": '{"changed": true}'}),
    ("c", 20, {**SNAPSHOT[2], "id": 20}),
    ("u", 4, {**SNAPSHOT[4], "t": "B second"}),
    ("u", 1, {**SNAPSHOT[1], "t": "A second", "n": "-0.5", "jb": '{"changed": true}'}),
]  # fmt: skip


def _events(name):
    """(op, after as JSON text, the after field's schema or None) of every every_type change."""
    found = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["topic"] != "pg." + TABLE or record["value"] is None:
            continue
        value = json.loads(record["value"])
        payload = value.get("payload", value)
        schema = value.get("schema")
        after = next((f for f in schema["fields"] if f["field"] == "after"), None) if schema else None
        found.append((payload["op"], payload["after"], after))
    return found


def _decode(spark, columns, afters):
    """Each JSON object of ``afters`` read by ``from_json`` and converted, as dicts; timestamps as
    UTC datetimes through their microseconds (Python's own conversion fails at years 1 and 9999)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    raw = StructType([StructField(c.name, c.raw) for c in columns])
    frame = spark.createDataFrame([(json.dumps(a),) for a in afters], "v string")
    parsed = frame.select(F.from_json("v", raw).alias("a"))
    return _rows(parsed.select(*[c.convert(F.col("a")[c.name]).alias(c.name) for c in columns]))


def _rows(frame):
    from pyspark.sql import functions as F

    stamps = [f.name for f in frame.schema.fields if f.dataType.typeName() == "timestamp"]
    picked = frame.select(*[F.unix_micros(c).alias(c) if c in stamps else F.col(c) for c in frame.columns])
    out = []
    for row in picked.collect():
        found = row.asDict()
        for c in stamps:
            if found[c] is not None:
                found[c] = dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=found[c])
        out.append(found)
    return out


def _same(found, expected):
    """Rows equal, NaN equal to NaN (and -0.0 told from 0.0)."""
    assert found.keys() == expected.keys()
    for column, want in expected.items():
        got = found[column]
        if isinstance(want, float) and math.isnan(want):
            assert isinstance(got, float) and math.isnan(got), column
        elif isinstance(want, float):
            assert got == want and math.copysign(1, got) == math.copysign(1, want), (column, got, want)
        else:
            assert got == want, (column, got, want)


def _ddl(spark, text):
    """The StructType of a DDL, COMMENTs in its fields' metadata (Spark 3.5 has no StructType.fromDDL)."""
    return spark.createDataFrame([], text).schema


def _fields(after, leave=REFUSED):
    return [f for f in after["fields"] if f["field"] not in leave]


def _simple(spark, field, values, *, types=None):
    """``values`` of one Connect field (JSON values) decoded: (its column, the decoded values)."""
    (column,) = connect_columns([{**field, "field": "x"}], table="inv.t", types=types)
    return column, [r["x"] for r in _decode(spark, [column], [{"x": v} for v in values])]


def _unscaled(n: int) -> str:
    """Base64 of ``n`` as Java's BigInteger.toByteArray writes it: the fewest bytes with the sign."""
    length = (n if n >= 0 else ~n).bit_length() // 8 + 1
    return base64.b64encode(n.to_bytes(length, "big", signed=True)).decode()


def _refusal(spark, field, value, *, types=None):
    with pytest.raises(Exception) as caught:
        _simple(spark, field, [value], types=types)
    return user_line(caught.value)


# --- conversions at their edges ---------------------------------------------------------------------


def test_decimal_bytes_are_exact_at_every_edge(spark):
    field = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
             "parameters": {"scale": "2", "connect.decimal.precision": "38"}}  # fmt: skip
    unscaled = [0, -1, 1, 127, 128, -128, -129, 255, 256, -256, 1234567891, -9999999999, 9999999999,
                10**38 - 1, -(10**38 - 1), 2**63, -(2**63), 2**64, 2**123, 2**124, -(2**124)]  # fmt: skip
    encoded = [_unscaled(n) for n in unscaled]
    assert [base64.b64decode(encoded[unscaled.index(n)])[0] for n in (-128, -1, 128)] == [0x80, 0xFF, 0x00]
    column, found = _simple(spark, field, [*encoded, "AAAB", "//8=", "/4A=", None])  # sign-extended too
    assert column.spark.simpleString() == "decimal(38,2)"
    assert found == [Decimal(f"{n}E-2") for n in unscaled] + [
        Decimal("0.01"),
        Decimal("-0.01"),
        Decimal("-1.28"),
        None,
    ]
    assert found[unscaled.index(10**38 - 1)] == Decimal("999999999999999999999999999999999999.99")
    money = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}
    column, found = _simple(spark, money, ["SZYC0w==", "gAAAAAAAAAA="])  # no precision: money
    assert column.spark.simpleString() == "decimal(38,2)"
    assert found == [Decimal("12345678.91"), Decimal("-92233720368547758.08")]


def test_a_decimal_its_precision_does_not_hold_is_refused_in_one_line(spark):
    field = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
             "parameters": {"scale": "2", "connect.decimal.precision": "10"}}  # fmt: skip
    _, found = _simple(spark, field, [_unscaled(9999999999), _unscaled(-9999999999), _unscaled(1234567891)])
    assert found == [Decimal("99999999.99"), Decimal("-99999999.99"), Decimal("12345678.91")]
    line = _refusal(spark, field, _unscaled(10**10))
    assert line == (
        "Table inv.t column 'x' holds 100000000.00, which decimal(10,2) (its Connect Decimal type) does not "
        "hold; nothing was written: declare it types={'inv.t': {'x': 'string'}} or a wider decimal"
    )
    wide = _refusal(spark, field, _unscaled(-(10**50) - 7))  # past 38 digits: its digits all the same
    assert f"holds -{10**48}.07, which decimal(10,2)" in wide


def test_a_variable_scale_decimal_needs_types_and_is_exact(spark):
    field = {"type": "struct", "name": "io.debezium.data.VariableScaleDecimal",
             "fields": [{"type": "int32", "field": "scale"}, {"type": "bytes", "field": "value"}]}  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        connect_columns([{**field, "field": "n"}], table="inv.every_type")
    assert str(caught.value) == (
        "Table inv.every_type column 'n' is io.debezium.data.VariableScaleDecimal, which can hold more "
        "digits than any Spark decimal (38): declare it, types={'inv.every_type': {'n': 'decimal(38,10)'}} "
        "(the precision its values need) or {'n': 'string'} (its exact text)."
    )
    values = [{"scale": 1, "value": "Aak="}, {"scale": 21, "value": "AQ=="}, {"scale": 0, "value": "+w=="},
              {"scale": 2, "value": "CjZMmCJ+qmrcupQ="}, {"scale": -3, "value": "Bw=="}, None]  # fmt: skip
    column, found = _simple(spark, field, values, types={"x": "string"})
    assert column.spark.simpleString() == "string"
    assert found == ["42.5", "0.000000000000000000001", "-5", "123456789012345678901234.12", "7000", None]
    column, found = _simple(spark, field, values[:3], types={"x": "decimal(38,21)"})
    assert found == [Decimal("42.5"), Decimal("1E-21"), Decimal(-5)]
    line = _refusal(spark, field, values[3], types={"x": "decimal(38,21)"})
    assert line == (
        "Table inv.t column 'x' holds 123456789012345678901234.12, which decimal(38,21) (declared in types) "
        "does not hold without rounding; nothing was written: declare a wider decimal or x: 'string'"
    )


def test_floats_numbers_and_bytes(spark):
    _, found = _simple(spark, {"type": "float"}, ["Infinity", "-Infinity", "NaN", 1.5, None])
    assert found[:2] == [math.inf, -math.inf] and math.isnan(found[2]) and found[3:] == [1.5, None]
    column, found = _simple(spark, {"type": "int16"}, [-32768, 32767])
    assert (column.spark.simpleString(), found) == ("smallint", [-32768, 32767])
    column, found = _simple(spark, {"type": "bytes"}, ["3q2+7wA=", "", None])
    assert (column.spark.simpleString(), found) == ("binary", [bytes.fromhex("deadbeef00"), b"", None])


def test_times_of_day_are_postgresql_text(spark):
    micro = {"type": "int64", "name": "io.debezium.time.MicroTime"}
    _, found = _simple(spark, micro, [0, 1, 45296789012, 45296780000, 86399999999, 86400000000, None])
    assert found == ["00:00:00", "00:00:00.000001", "12:34:56.789012", "12:34:56.78", "23:59:59.999999",
                     "24:00:00", None]  # fmt: skip
    _, found = _simple(spark, {"type": "int32", "name": "io.debezium.time.Time"}, [1, 86399999])
    assert found == ["00:00:00.001", "23:59:59.999"]
    _, found = _simple(spark, {"type": "int64", "name": "io.debezium.time.NanoTime"}, [45296789012345])
    assert found == ["12:34:56.789012345"]
    _, found = _simple(spark, {"type": "int32", "name": "org.apache.kafka.connect.data.Time"}, [45296789])
    assert found == ["12:34:56.789"]


def test_timestamps_are_exact_in_any_session_zone(spark):
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        zoned = {"type": "string", "name": "io.debezium.time.ZonedTimestamp"}
        texts = ["2024-02-29T11:34:56.789012Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z",
                 "2024-02-29T11:34:56.5+05:30", "1500-03-01T12:00:00-00:30:15", None]  # fmt: skip
        _, found = _simple(spark, zoned, texts)
        assert found == [_ts(2024, 2, 29, 11, 34, 56, 789012), _ts(1, 1, 1), _ts(9999, 12, 31, 23, 59, 59, 999999),
                         _ts(2024, 2, 29, 6, 4, 56, 500000), _ts(1500, 3, 1, 12, 30, 15), None]  # fmt: skip
        micro = {"type": "int64", "name": "io.debezium.time.MicroTimestamp"}
        _, found = _simple(spark, micro, [-62135596800000000, 253402300799999999])
        assert found == [_ts(1, 1, 1), _ts(9999, 12, 31, 23, 59, 59, 999999)]
        nano = {"type": "int64", "name": "io.debezium.time.NanoTimestamp"}
        _, found = _simple(spark, nano, [1709210096789012000, -1000])
        assert found == [_ts(2024, 2, 29, 12, 34, 56, 789012), _ts(1969, 12, 31, 23, 59, 59, 999999)]
        assert _refusal(spark, nano, 1709210096789012345) == (
            "Table inv.t column 'x' holds 1709210096789012345, which is no instant a timestamp holds (to the "
            "microsecond); nothing was written"
        )
        assert "column 'x' holds 2024-02-29T11:34:56.7890123Z, which is no instant" in _refusal(
            spark, zoned, "2024-02-29T11:34:56.7890123Z"
        )
        _, found = _simple(spark, micro, [-1, 1709210096789012], types={"x": "string"})
        assert found == ["1969-12-31 23:59:59.999999", "2024-02-29 12:34:56.789012"]  # PostgreSQL's text
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_arrays_native_or_as_postgresql_json(spark):
    column, found = _simple(spark, {"type": "array", "items": {"type": "int32"}}, [[1, None], [], None])
    assert (column.spark.simpleString(), found) == ("array<int>", [[1, None], [], None])
    dates = {"type": "array", "items": {"type": "int32", "name": "io.debezium.time.Date"}}
    column, found = _simple(spark, dates, [[19782, None, -719162]])
    assert (column.spark.simpleString(), found) == ("string", ['["2024-02-29",null,"0001-01-01"]'])
    uuids = {"type": "array", "items": {"type": "string", "name": "io.debezium.data.Uuid"}}
    assert _simple(spark, uuids, [["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]])[1] == [
        '["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]'
    ]
    stamps = {"type": "array", "items": {"type": "string", "name": "io.debezium.time.ZonedTimestamp"}}
    assert _simple(spark, stamps, [["1500-03-01T12:00:00Z"]])[1] == ['["1500-03-01T12:00:00+00:00"]']
    numbers = {"type": "array", "items": {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                                          "parameters": {"scale": "2"}}}  # fmt: skip
    assert _simple(spark, numbers, [["AJY=", "//8="]])[1] == ["[1.50,-0.01]"]


@pytest.mark.parametrize(
    ("field", "fix"),
    [
        ({"type": "string", "name": "io.debezium.time.ZonedTime"}, "or make it time (without time zone)"),
        ({"type": "int64", "name": "io.debezium.time.MicroDuration"}, "or set interval.handling.mode=string"),
        ({"type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": "8"}}, ""),
        ({"type": "struct", "name": "io.debezium.data.geometry.Point", "fields": []}, ""),
        ({"type": "map", "keys": {"type": "string"}, "values": {"type": "string"}}, ""),
        ({"type": "array", "items": {"type": "int64", "name": "io.debezium.time.MicroDuration"}}, "or set"),
    ],
)
def test_types_no_mirror_holds_are_refused_with_the_fix(field, fix):
    with pytest.raises(ChangeFeedError) as caught:
        connect_columns([{**field, "field": "x"}], table="inv.t")
    shown = field.get("name") or field["type"]
    shown = f"array<{field['items']['name']}>" if field["type"] == "array" else shown
    line = str(caught.value)
    assert line.startswith(f"Table inv.t column 'x' is {shown}, which no mirrored column holds"), line
    assert "column.exclude.list=<schema>.<table>.x" in line and fix in line and "\n" not in line


def test_types_are_checked_as_a_plan_checks_them():
    fields = [{"type": "int32", "field": "a"}, {"type": "boolean", "field": "b"}]
    with pytest.raises(ConfigError) as caught:
        connect_columns(
            fields, table="inv.t", types={"a": "decimal(40,2)", "b": "decimal(5,0)", "zz": "string"}
        )
    line = str(caught.value)
    assert "a: 'decimal(40,2)' is not decimal(p,s)" in line and "types: b is boolean" in line
    assert "types: 'zz' is not a column of the table" in line and "\n" not in line


# --- the recorded topics --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded():
    return _events("schemas.jsonl")


def test_every_recorded_event_decodes_to_the_database_values(spark, recorded):
    _, _, after = recorded[0]
    for column in REFUSED:
        with pytest.raises(ChangeFeedError, match=f"column '{column}' is io.debezium.time.") as caught:
            connect_columns(after["fields"], table=TABLE, types={"n": "string"})
        assert "\n" not in str(caught.value)
        after = {**after, "fields": [f for f in after["fields"] if f["field"] != column]}
    columns = connect_columns(_fields(after), table=TABLE, types={"n": "string"})
    assert {c.name: c.spark.simpleString() for c in columns} == SPARK_TYPES
    changes = [(op, a) for op, a, _ in recorded if a is not None]
    found = _decode(spark, columns, [a for _, a in changes])
    expected = [(op, SNAPSHOT[i]) for op, i in (("r", 1), ("r", 2), ("r", 3), ("r", 4))]
    expected += [(op, row) for op, _, row in STREAMED]
    assert [op for op, _ in changes] == [op for op, _ in expected]
    for row, (_, want) in zip(found, expected, strict=True):
        _same(row, want)
    deletes = [a for op, a, _ in recorded if op == "d"]
    assert deletes == [None, None]  # a delete's after is null; its before only has the key


SPARK_TYPES = {
    "id": "int", "i2": "smallint", "i8": "bigint", "r": "float", "f": "double", "bo": "boolean", "t": "string",
    "vc": "string", "c": "string", "n102": "decimal(10,2)", "n": "string", "d": "date", "tm": "string",
    "tm3": "string", "ts": "timestamp", "ts3": "timestamp", "tstz": "timestamp", "u": "string", "j": "string",
    "jb": "string", "e": "string", "ai": "array<int>", "at": "array<string>", "b": "binary",
    "m": "decimal(38,2)",
}  # fmt: skip


def test_connect_time_precision_and_decimal_strings(spark):
    """``time.precision.mode=connect`` truncates times to ms; ``decimal.handling.mode=string`` writes
    decimals as text (``NaN`` as ``NAN``), which ``types`` makes decimals again."""
    events = _events("schemas_connect_string.jsonl")
    types = {"n102": "decimal(10,2)", "m": "decimal(19,2)"}
    columns = connect_columns(_fields(events[0][2]), table=TABLE, types=types)
    found = _decode(spark, columns, [a for op, a, _ in events if op == "r"])
    for row, i in zip(found, SNAPSHOT, strict=True):
        want = {**SNAPSHOT[i], "n": {3: "NAN"}.get(i, SNAPSHOT[i]["n"])}
        for column in ("tm", "ts"):  # µs cut to ms by the connector
            value = want[column]
            if isinstance(value, str) and "." in value:
                value = value[: value.index(".") + 4].rstrip("0").rstrip(".")
            elif isinstance(value, dt.datetime):
                value = value.replace(microsecond=value.microsecond // 1000 * 1000)
            want[column] = value
        _same(row, want)
    assert {c.name: c.spark.simpleString() for c in columns if c.name in ("n", "m", "n102", "ts")} == {
        "n102": "decimal(10,2)", "n": "string", "ts": "timestamp", "m": "decimal(19,2)"
    }  # fmt: skip


DDL = (
    "id INT, i2 SMALLINT, i8 BIGINT, r FLOAT, f DOUBLE, bo BOOLEAN, t STRING, vc STRING, c STRING, "
    "n102 DECIMAL(10,2), n STRING COMMENT 'io.debezium.data.VariableScaleDecimal', d DATE, "
    "tm STRING COMMENT 'io.debezium.time.MicroTime', tm3 STRING COMMENT 'io.debezium.time.Time', "
    "ts TIMESTAMP, ts3 TIMESTAMP COMMENT 'io.debezium.time.Timestamp', tstz TIMESTAMP, u STRING, j STRING, "
    "jb STRING, e STRING, ai ARRAY<INT>, at ARRAY<STRING>, b BINARY, m DECIMAL(38,2)"
)


def test_messages_without_schemas_decode_the_same_through_a_declared_ddl(spark):
    schema = _ddl(spark, DDL)
    columns = declared_columns(schema, table=TABLE)
    assert {c.name: c.spark.simpleString() for c in columns} == SPARK_TYPES
    plain = [a for op, a, _ in _events("plain.jsonl") if a is not None]
    with_schemas = [a for op, a, _ in _events("schemas.jsonl") if a is not None]
    assert plain == with_schemas  # the same values; only the schema is gone
    for column in REFUSED:
        for a in plain:
            a.pop(column)
    expected = _decode(spark, connect_columns(_fields(_events("schemas.jsonl")[0][2]), table=TABLE,
                                              types={"n": "string"}), plain)  # fmt: skip
    found = _decode(spark, columns, plain)
    for row, want in zip(found, expected, strict=True):
        _same(row, want)
    money = declared_columns(_ddl(spark, "m DECIMAL(19,2)"), table=TABLE)  # as the JDBC read types it
    assert [r["m"] for r in _decode(spark, money, [{"m": "AeJA"}])] == [Decimal("1234.56")]


def test_a_declared_comment_must_name_a_type_that_fits_the_ddl(spark):
    with pytest.raises(ChangeFeedError, match=r"column 'x' is io.debezium.time.ZonedTime, which no mirrored"):
        declared_columns(_ddl(spark, "x STRING COMMENT 'io.debezium.time.ZonedTime'"), table=TABLE)
    with pytest.raises(ChangeFeedError, match=r"column 'x' is customer id, which no mirrored"):
        declared_columns(_ddl(spark, "x STRING COMMENT 'customer id'"), table=TABLE)
    with pytest.raises(ConfigError, match=r"is declared timestamp with COMMENT .* declare it STRING\.$"):
        declared_columns(_ddl(spark, "x TIMESTAMP COMMENT 'io.debezium.time.MicroTime'"), table=TABLE)
    with pytest.raises(ConfigError, match=r"types=\{'inv.every_type': \{'n': 'decimal\(38,10\)'\}\}"):
        declared_columns(_ddl(spark, "n INT COMMENT 'io.debezium.data.VariableScaleDecimal'"), table=TABLE)
    (n,) = declared_columns(
        _ddl(spark, "n DECIMAL(38,10) COMMENT 'io.debezium.data.VariableScaleDecimal'"), table=TABLE
    )
    assert n.spark.simpleString() == "decimal(38,10)"


# --- both ways: the JDBC read of the same table ---------------------------------------------------


@pytest.fixture(scope="module")
def every_type_pg():
    """README.md's ``inv.every_type`` (its snapshot rows, without the refused tmtz and iv) in a server
    of this module's own: the source suite's ``postgres`` fixture loads its ERP schema, which this
    does not need, and lives in ``tests/sources``' conftest."""
    why = missing()
    if why:
        pytest.skip(why)
    server = start_server()
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    sql = readme.split("## Before the connector starts (snapshot: `op` `r`)\n\n```sql\n", 1)[1].split("```")[
        0
    ]
    server.sql(sql.split("INSERT INTO inv.small")[0])
    server.sql("ALTER TABLE inv.every_type DROP COLUMN tmtz, DROP COLUMN iv;")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ERP_PASSWORD", PASSWORD)
        yield server
    server.stop()


def test_the_snapshot_matches_the_jdbc_read_of_the_same_table(spark, every_type_pg, recorded):
    source = om.Jdbc(every_type_pg.url, user=SUPERUSER, password_env="ERP_PASSWORD", schema="inv")
    jdbc = source.read_typed("every_type", {"n": "string"}).orderBy("id")
    after = recorded[0][2]
    columns = connect_columns(_fields(after), table=TABLE, types={"n": "string"})
    debezium = [a for op, a, _ in recorded if op == "r"]
    jdbc_types = {f.name: f.dataType.simpleString() for f in jdbc.schema.fields}
    ours = {c.name: c.spark.simpleString() for c in columns}
    # money: Debezium's Decimal has no precision, so decimal(38,2) unless types declares it; JDBC
    # reads it as decimal(19,2) (pg_read).
    assert (ours.pop("m"), jdbc_types.pop("m")) == ("decimal(38,2)", "decimal(19,2)")
    assert ours == jdbc_types
    typed = connect_columns(_fields(after), table=TABLE, types={"n": "string", "m": "decimal(19,2)"})
    assert {c.name: c.spark for c in typed} == {f.name: f.dataType for f in jdbc.schema.fields}
    for read, decoded in zip(_rows(jdbc), _decode(spark, typed, debezium), strict=True):
        if read["id"] == 3:  # NaN: the JDBC read keeps numeric's text, Debezium writes null
            assert (read.pop("n"), decoded.pop("n")) == ("NaN", None)
        _same(decoded, read)
