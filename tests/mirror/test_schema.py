"""Behaviour 6: columns are added, omitted nullable columns are NULL; other changes fail."""

from __future__ import annotations

import datetime as dt
import shutil

import pyarrow as pa

BASE = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("qty", pa.int32())])


def _seed(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1, "name": "a", "qty": 1}], schema=BASE)


def test_a_new_column_is_added_and_older_rows_are_null(lz):
    _seed(lz)
    lz.parquet("orders", 2, [{"id": 3, "name": "c", "qty": 3}], schema=BASE)
    lz.mirror.run_once()
    wider = BASE.append(pa.field("city", pa.string()))
    lz.parquet("orders", 3, lz.with_marker([{"id": 2, "name": "b", "qty": 2, "city": "Oslo"}], [0], wider))
    lz.parquet("orders", 4, lz.with_marker([{"id": 3, "name": "C", "qty": 3, "city": "Rome"}], [1], wider))
    run = lz.mirror.run_once()
    assert run["orders"].status == "Replicating"
    assert lz.rows("orders") == [
        {"id": 1, "name": "a", "qty": 1, "city": None},
        {"id": 2, "name": "b", "qty": 2, "city": "Oslo"},
        {"id": 3, "name": "C", "qty": 3, "city": "Rome"},
    ]


def test_an_omitted_nullable_column_is_null_in_new_rows(lz):
    _seed(lz)
    narrow = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    lz.parquet("orders", 2, [{"id": 2, "name": "b"}], schema=narrow)
    lz.mirror.run_once()
    assert lz.rows("orders") == [{"id": 1, "name": "a", "qty": 1}, {"id": 2, "name": "b", "qty": None}]


def _assert_stuck(lz, text):
    run = lz.mirror.run_once()
    assert run["orders"].status == "Failed"
    assert run["orders"].error_code == "SchemaChangeNotSupported"
    assert text in run["orders"].error and run["orders"].error.endswith("SequenceNumber: 2")
    # Replacing the file does not help (contract §5.1): only recreating the folder does.
    lz.parquet("orders", 2, lz.with_marker([{"id": 1, "name": "z", "qty": 5}], [4], BASE))
    again = lz.mirror.run_once()
    assert again["orders"].status == "Failed" and again["orders"].files_applied == ()
    assert lz.rows("orders") == [{"id": 1, "name": "a", "qty": 1}]


def test_an_omitted_non_nullable_column_fails_the_table_until_recreated(lz):
    _seed(lz)
    lz.parquet(
        "orders", 2, [{"name": "b", "qty": 2}], schema=pa.schema([("name", pa.string()), ("qty", pa.int32())])
    )
    _assert_stuck(lz, "Column 'id' is not nullable but the data file omits it")


def test_a_changed_column_type_fails_the_table_until_recreated(lz):
    _seed(lz)
    changed = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("qty", pa.int64())]
    )
    lz.parquet("orders", 2, lz.with_marker([{"id": 1, "name": "b", "qty": 2}], [1], changed))
    lz.parquet("orders", 3, lz.with_marker([{"id": 3, "name": "c", "qty": 3}], [0], BASE))
    _assert_stuck(lz, "Column 'qty' changed type from int32 to int64")
    shutil.rmtree(lz.folder("orders"))
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1, "name": "new", "qty": 10}], schema=changed)
    run = lz.mirror.run_once()
    assert run["orders"].event == "rebuilt" and run["orders"].status == "Replicating"
    assert lz.rows("orders") == [{"id": 1, "name": "new", "qty": 10}]


def test_timestamps_of_any_unit_or_zone_are_one_delta_type(lz):
    lz.metadata("t", keyColumns=["id"])
    moment = dt.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
    for seq, ts_type in enumerate(
        (pa.timestamp("us", tz="UTC"), pa.timestamp("ns"), pa.timestamp("ms", tz="Europe/Oslo")), 1
    ):
        schema = pa.schema([("id", pa.int64()), ("ts", ts_type)])
        lz.parquet("t", seq, [{"id": seq, "ts": moment}], schema=schema)
    run = lz.mirror.run_once()
    assert run["t"].status == "Replicating", run["t"].error
    assert [r["ts"] for r in lz.rows("t")] == [moment, moment, moment.replace(microsecond=678000)]


def test_key_columns_cannot_change(lz):
    _seed(lz)
    lz.mirror.run_once()
    lz.metadata("orders", keyColumns=["name"])
    lz.parquet("orders", 2, [{"id": 2, "name": "b", "qty": 2}], schema=BASE)
    run = lz.mirror.run_once()
    assert run["orders"].status == "Failed"
    assert "keyColumns changed from ['id'] to ['name']" in run["orders"].error
    assert run["orders"].error.startswith("We encountered an error while parsing metadata file")
