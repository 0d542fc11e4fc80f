"""Delimited-text tables: metadata, header, separators, NULL vs empty, types as text."""

from __future__ import annotations

import json

import pytest

import openmirror_nb as om

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("fmt", "sep"), [("csv", ","), ("tsv", "\t"), ("psv", "|")])
def test_delimited_tables(spark, db, lz, fmt, sep):
    df = spark.sql(
        """select * from values
             (1L, 'plain', cast(null as string), timestamp'2026-03-01 10:11:12.5', date'2026-03-01', true, X'CAFE'),
             (2L, '', 'a,b|c\td "q"', timestamp'2026-03-02 00:00:00', date'2026-03-02', false, X'')
           as t(id, s, n, ts, d, flag, raw)"""
    )
    options = om.TableOptions(file_format=fmt)
    result = db.push(df, table="txt", keys=["id"], table_options=options)
    folder = lz / "txt"
    meta = json.loads((folder / "_metadata.json").read_text())
    assert meta["FileFormat"] == "DelimitedText" and meta["FileExtension"] == fmt
    props = meta["FileFormatTypeProperties"]
    assert (
        props["ColumnSeparator"] == sep
        and props["FirstRowAsHeader"] is True
        and props["RowSeparator"] == "\n"
    )
    types = {c["Name"]: c["DataType"] for c in meta["SchemaDefinition"]["Columns"]}
    assert types == {
        "id": "Int64",
        "s": "String",
        "n": "String",
        "ts": "DateTime",
        "d": "IDate",
        "flag": "Boolean",
        "raw": "ByteArray",
    }
    nullable = {c["Name"]: c["IsNullable"] for c in meta["SchemaDefinition"]["Columns"]}
    assert nullable["id"] is False and nullable["s"] is True
    files = sorted(folder.glob(f"*.{fmt}"))
    assert [f.name for f in files] == [f"{1:020d}.{fmt}"] and result.sequence_numbers == (1,)
    lines = files[0].read_text(encoding="utf-8").split("\n")
    assert lines[0] == sep.join(["id", "s", "n", "ts", "d", "flag", "raw"])
    body = {line.split(sep, 1)[0]: line for line in lines[1:] if line}
    one = body["1"].split(sep)
    assert (
        one[1] == "plain"
        and one[2] == ""
        and one[3] == "2026-03-01 10:11:12.500000"
        and one[4] == "2026-03-01"
    )
    assert one[6] == "yv4="  # base64 of CAFE
    assert '""' in body["2"]  # the empty string is quoted, unlike the NULL in row 1


def test_delimited_schema_cannot_evolve(spark, db):
    options = om.TableOptions(file_format="csv")
    db.push(spark.sql("select 1L as id, 'a' as v"), table="txt", keys=["id"], table_options=options)
    more = spark.sql("select 2L as id, 'b' as v, 3 as extra, 0 as op")
    with pytest.raises(om.SchemaChangeError, match="cannot evolve"):
        db.push(more, table="txt", mode="changes", op_column="op")


def test_delimited_change_feed_keeps_marker_last(spark, db, lz):
    options = om.TableOptions(file_format="csv")
    db.push(spark.sql("select 1L as id, 'a' as v"), table="txt", keys=["id"], table_options=options)
    db.push(spark.sql("select 1L as id, 'b' as v, 4 as op"), table="txt", mode="changes", op_column="op")
    second = (lz / "txt" / f"{2:020d}.csv").read_text().split("\n")
    assert second[0] == "id,v,__rowMarker__" and second[1] == "1,b,4"
    with pytest.raises(om.ConfigError, match="Parquet only"):
        db.push(
            spark.sql("select 1L as id, 'b' as v, 4 as op"),
            table="txt",
            mode="changes",
            op_column="op",
            compression="zstd",
        )
