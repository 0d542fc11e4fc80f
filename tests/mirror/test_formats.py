"""Behaviour 5: Parquet with every codec, delimited text driven by _metadata.json."""

from __future__ import annotations

import base64
import datetime as dt

import pyarrow as pa
import pytest

UTC = dt.UTC


@pytest.mark.parametrize("compression", ["none", "snappy", "gzip", "zstd", "brotli", "lz4"])
def test_parquet_with_any_compression(lz, compression):
    lz.metadata("orders", keyColumns=["id"])
    rows = [{"id": i, "name": f"n{i}"} for i in range(50)]
    lz.parquet("orders", 1, rows, compression=compression)
    lz.parquet("orders", 2, lz.with_marker([{"id": 3, "name": "three"}], [1]), compression=compression)
    run = lz.mirror.run_once()
    assert run["orders"].files_applied == ("00000000000000000001.parquet", "00000000000000000002.parquet")
    assert len(lz.rows("orders")) == 50
    assert lz.rows("orders")[3] == {"id": 3, "name": "three"}


def _schema(*columns):
    return {"Columns": [{"Name": n, "DataType": t, "IsNullable": nullable} for n, t, nullable in columns]}


def test_delimited_text_every_data_type(lz):
    lz.metadata(
        "types",
        keyColumns=["id"],
        SchemaDefinition=_schema(
            ("id", "Int32", False),
            ("small", "Int16", True),
            ("big", "Int64", True),
            ("d", "Double", True),
            ("s", "Single", True),
            ("ts", "DateTime", True),
            ("day", "IDate", True),
            ("tod", "ITime", True),
            ("txt", "String", True),
            ("flag", "Boolean", True),
            ("raw", "ByteArray", True),
        ),
        FileFormat="DelimitedText",
        FileExtension="csv",
    )
    raw = base64.b64encode(b"\x00\xffbin").decode()
    body = (
        "id,small,big,d,s,ts,day,tod,txt,flag,raw,__rowMarker__\n"
        f'1,-5,9000000000,1.5,2.25,2025-06-17 14:30:00.123456,2025-06-17,14:30:00,"a,b",true,"{raw}",0\n'
        '2,,,,,,,,"",false,,0\n'
        "3,,,,,,,,,,,0\n"
    )
    lz.text("types", 1, body)
    run = lz.mirror.run_once()
    assert run["types"].status == "Replicating", run["types"].error
    rows = lz.rows("types")
    assert rows[0] == {
        "id": 1,
        "small": -5,
        "big": 9_000_000_000,
        "d": 1.5,
        "s": 2.25,
        "ts": dt.datetime(2025, 6, 17, 14, 30, 0, 123456, tzinfo=UTC),
        "day": dt.date(2025, 6, 17),
        "tod": "14:30:00",
        "txt": "a,b",
        "flag": True,
        "raw": b"\x00\xffbin",
    }
    assert rows[1]["txt"] == "" and rows[1]["flag"] is False and rows[1]["d"] is None
    assert rows[2]["txt"] is None and rows[2]["flag"] is None


def test_delimited_text_options_from_metadata(lz):
    lz.metadata(
        "people",
        {
            "KeyColumns": ["id"],
            "SchemaDefinition": _schema(
                ("id", "Int64", False), ("name", "String", True), ("age", "Int32", True)
            ),
            "fileFormat": "DelimitedText",
            "FileExtension": "psv",
            "FileFormatTypeProperties": {
                "FirstRowAsHeader": True,
                "RowSeparator": "\r\n",
                "ColumnSeparator": ";",
                "QuoteCharacter": "'",
                "EscapeCharacter": "\\",
                "NullValue": "N/A",
                "Encoding": "windows-1252",
            },
        },
    )
    body = "id;name;age;__rowMarker__\r\n1;'Zoë; \\'Z\\'';N/A;0\r\n2;'';41;0\r\n3;N/A;7;4\r\n"
    lz.text("people", 1, body, ext="psv", encoding="cp1252")
    run = lz.mirror.run_once()
    assert run["people"].status == "Replicating", run["people"].error
    assert lz.rows("people") == [
        {"id": 1, "name": "Zoë; 'Z'", "age": None},
        {"id": 2, "name": "", "age": 41},
        {"id": 3, "name": None, "age": 7},
    ]


def test_tab_separated_text_in_utf16(lz):
    lz.metadata(
        "t",
        keyColumns=["k"],
        SchemaDefinition=_schema(("k", "String", False), ("v", "Double", True)),
        FileFormat="DelimitedText",
        FileExtension="tsv",
        FileFormatTypeProperties={"Encoding": "utf-16", "EscapeCharacter": '"'},
    )
    lz.text("t", 1, 'k\tv\n"a\t""x"""\t1.5\nb\t2\n', ext="tsv", encoding="utf-16")
    lz.mirror.run_once()
    assert lz.rows("t", key="k") == [{"k": 'a\t"x"', "v": 1.5}, {"k": "b", "v": 2.0}]


def test_csv_without_schema_definition_reads_strings(lz):
    lz.metadata("loose", keyColumns=["id"], FileFormat="CSV")
    lz.text("loose", 1, "id,amount\n1,10.5\n2,\n")
    lz.mirror.run_once()
    assert lz.rows("loose") == [{"id": "1", "amount": "10.5"}, {"id": "2", "amount": None}]


def test_delimited_value_that_does_not_fit_its_type_fails_the_table(lz):
    lz.metadata(
        "t",
        keyColumns=["id"],
        SchemaDefinition=_schema(("id", "Int16", False)),
        FileFormat="DelimitedText",
        FileExtension="csv",
    )
    lz.text("t", 1, "id\n1\n")
    lz.text("t", 2, "id\n70000\n")
    run = lz.mirror.run_once()
    assert run["t"].status == "Failed"
    assert "int16" in run["t"].error and run["t"].error.endswith("SequenceNumber: 2")
    assert lz.rows("t") == [{"id": 1}]


def test_datetime_values_with_seven_digits_and_offsets_are_utc(lz):
    lz.metadata(
        "t",
        keyColumns=["id"],
        SchemaDefinition=_schema(("id", "Int32", False), ("ts", "DateTime", True)),
        FileFormat="DelimitedText",
        FileExtension="csv",
    )
    lz.text("t", 1, "id,ts\n1,2025-06-17T14:30:00.1234567Z\n2,2025-06-17 16:30:00+02:00\n")
    lz.mirror.run_once()
    assert [r["ts"] for r in lz.rows("t")] == [
        dt.datetime(2025, 6, 17, 14, 30, 0, 123456, tzinfo=UTC),
        dt.datetime(2025, 6, 17, 14, 30, tzinfo=UTC),
    ]


def test_parquet_types_are_kept(lz):
    import decimal

    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("amount", pa.decimal128(18, 2)),
            ("day", pa.date32()),
            ("tags", pa.list_(pa.string())),
            ("blob", pa.binary()),
            ("tiny", pa.int8()),
        ]
    )
    row = {
        "id": 1,
        "amount": decimal.Decimal("12.34"),
        "day": dt.date(2024, 2, 29),
        "tags": ["a", "b"],
        "blob": b"\x01",
        "tiny": 7,
    }
    lz.metadata("t", keyColumns=["id"])
    lz.parquet("t", 1, [row], schema=schema)
    lz.mirror.run_once()
    assert lz.rows("t") == [row]
