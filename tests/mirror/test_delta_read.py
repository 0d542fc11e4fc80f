"""Behaviour 11: reading mirrored Delta tables back, exactly (never a folder glob)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmirror_nb._core.errors import MirrorError
from openmirror_nb._core.mirror import read_delta_pandas, read_delta_spark


def _mirrored(lz):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
    moment = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    lz.metadata("sales.orders", keyColumns=["id"])
    lz.parquet("sales.orders", 1, [{"id": i, "v": f"v{i}", "ts": moment} for i in range(10)], schema=schema)
    lz.mirror.run_once()
    wider = schema.append(pa.field("qty", pa.int32()))
    changes = [
        {"id": 1, "v": "new", "ts": None, "qty": 5},
        {"id": 2},
        {"id": 11, "v": "ins", "ts": moment, "qty": None},
    ]
    lz.parquet("sales.orders", 2, lz.with_marker(changes, [1, 2, 0], wider))
    lz.mirror.run_once()
    return lz.table_dir("sales.orders")


EXPECTED_IDS = [0, 1, 3, 4, 5, 6, 7, 8, 9, 11]


def test_read_delta_pandas_returns_the_live_rows_only(lz):
    table_dir = _mirrored(lz)
    on_disk = sum(pq.read_metadata(p).num_rows for p in table_dir.glob("*.parquet"))
    assert on_disk > len(EXPECTED_IDS)  # what a folder glob would wrongly return
    frame = read_delta_pandas(table_dir).sort_values("id")
    assert frame["id"].tolist() == EXPECTED_IDS
    assert list(frame.columns) == ["id", "v", "ts", "qty"]
    row = frame.set_index("id").loc[1]
    assert row["v"] == "new" and row["qty"] == 5 and str(frame["ts"].dtype) == "datetime64[us, UTC]"
    with pytest.raises(MirrorError, match="is not a Delta table"):
        read_delta_pandas(lz.root / "Tables" / "nope")


@pytest.mark.spark
@pytest.mark.parametrize("method", ["auto", "scan"])
def test_read_delta_spark_returns_the_live_rows_with_the_table_schema(lz, spark, method):
    table_dir = _mirrored(lz)
    frame = read_delta_spark(spark, table_dir, method=method)
    assert frame.columns == ["id", "v", "ts", "qty"]
    assert [f.dataType.simpleString() for f in frame.schema.fields] == [
        "bigint",
        "string",
        "timestamp",
        "int",
    ]
    rows = {r["id"]: r.asDict() for r in frame.collect()}
    assert sorted(rows) == EXPECTED_IDS
    assert rows[1] == {"id": 1, "v": "new", "ts": None, "qty": 5}
    # Spark 3.5 hands timestamps to Python as naive local times.
    local = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC).astimezone().replace(tzinfo=None)
    assert rows[0]["qty"] is None and rows[0]["ts"] == local
    assert rows[11]["qty"] is None


@pytest.mark.spark
def test_read_delta_spark_of_an_empty_table(lz, spark):
    lz.metadata("t", keyColumns=["id"])
    lz.parquet("t", 1, pa.table({"id": pa.array([], pa.int64())}))
    lz.mirror.run_once()
    frame = read_delta_spark(spark, lz.table_dir("t"))
    assert frame.columns == ["id"] and frame.count() == 0
