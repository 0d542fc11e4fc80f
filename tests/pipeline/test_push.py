"""Initial loads and change feeds through the real push path with local Spark."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.model import ROW_MARKER

pytestmark = [pytest.mark.spark, pytest.mark.newest]  # core: the newest PySpark runs it too

SEQ1 = "00000000000000000001"


def data_files(folder):
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name[:20].isdigit())


def test_initial_load_writes_metadata_then_numbered_marker_free_files(spark, db, lz, monkeypatch):
    seen = []
    rename = db.storage.rename

    def spy(src, dst):
        # the metadata must already be there when the first data file appears (renames inside
        # the tool's own _openmirror/ folder, such as the key state's bucket files, are not data)
        if "_openmirror/" not in dst:
            seen.append((dst, (lz / "sales.schema/orders/_metadata.json").exists()))
        rename(src, dst)

    monkeypatch.setattr(db.storage, "rename", spy)
    df = spark.range(0, 2500, numPartitions=3).selectExpr("id as order_id", "id * 2 as qty")
    result = db.push(df, table="sales.orders", keys=["order_id"], rows_per_file=1000)
    folder = lz / "sales.schema" / "orders"
    assert [p.name for p in data_files(folder)] == [f"{i:020d}.parquet" for i in (1, 2, 3)]
    assert all(has_meta for _, has_meta in seen) and len(seen) == 3
    assert json.loads((folder / "_metadata.json").read_text())["keyColumns"] == ["order_id"]
    assert result.sequence_numbers == (1, 2, 3) and result.rows == {"initial": 2500}
    total = 0
    for f in data_files(folder):
        table = pq.read_table(f)
        assert ROW_MARKER not in table.column_names and table.num_rows <= 1000
        total += table.num_rows
    assert total == 2500
    assert result.bytes == sum(f.stat().st_size for f in data_files(folder))
    partner = json.loads((lz / "_partnerEvents.json").read_text())
    assert (
        partner["partnerName"] == "openmirror_nb" and partner["sourceInfo"]["sourceVersion"] == spark.version
    )
    assert not any(p.name.startswith("_partnerEvents") for p in folder.iterdir())


def test_numbers_continue_from_processed_and_ready_to_delete_folders(spark, db, lz):
    folder = lz / "orders"
    (folder / "_ProcessedFiles").mkdir(parents=True)
    (folder / "_FilesReadyToDelete").mkdir()
    # files another tool published and the service already moved away
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    pq.write_table(
        pq.read_table(_one_file(spark, lz)), folder / "_ProcessedFiles" / "00000000000000000006.parquet"
    )
    pq.write_table(
        pq.read_table(_one_file(spark, lz)), folder / "_FilesReadyToDelete" / "00000000000000000007.parquet"
    )
    changes = spark.createDataFrame([(1, "a", 4)], "id long, v string, op int")
    result = db.push(changes, table="orders", mode="changes", op_column="op")
    assert result.sequence_numbers == (8,)
    assert (folder / "00000000000000000008.parquet").exists()


def _one_file(spark, lz):
    path = lz.parent.parent / "scratch"
    spark.createDataFrame([(1, "a")], "id long, v string").coalesce(1).write.mode("overwrite").parquet(
        str(path)
    )
    return next(p for p in path.iterdir() if p.name.endswith(".parquet"))


def test_types_are_normalized(spark, db, lz):
    df = spark.sql(
        """select 1L as id, named_struct('a', 1, 'b', 'x') as s, array(1, 2) as arr, map('k', 2) as m,
                  cast('12345.67' as decimal(18, 2)) as amount, timestamp'2026-03-01 10:11:12.123456' as ts,
                  date'1500-01-01' as old_day, cast(null as string) as nothing"""
    )
    db.push(df, table="typed", keys=["id"])
    f = lz / "typed" / f"{SEQ1}.parquet"
    table = pq.read_table(f)
    row = table.to_pylist()[0]
    assert (
        json.loads(row["s"]) == {"a": 1, "b": "x"}
        and json.loads(row["arr"]) == [1, 2]
        and json.loads(row["m"]) == {"k": 2}
    )
    assert (
        row["amount"] == decimal.Decimal("12345.67")
        and str(table.schema.field("amount").type) == "decimal128(18, 2)"
    )
    assert row["ts"] == dt.datetime(2026, 3, 1, 10, 11, 12, 123456, tzinfo=dt.UTC)
    assert row["old_day"] == dt.date(1500, 1, 1)  # proleptic calendar, not Spark's legacy rebase
    physical = pq.ParquetFile(f).schema
    assert physical.column(table.column_names.index("ts")).physical_type == "INT64"  # not INT96
    assert str(table.schema.field("ts").type) == "timestamp[us, tz=UTC]"


@pytest.mark.parametrize("codec", ["none", "snappy", "gzip", "zstd"])
def test_parquet_compression(spark, db, lz, codec):
    db.push(spark.range(10).selectExpr("id", "'x' as v"), table=f"c_{codec}", keys=["id"], compression=codec)
    meta = pq.ParquetFile(lz / f"c_{codec}" / f"{SEQ1}.parquet").metadata
    expected = {"none": "UNCOMPRESSED", "snappy": "SNAPPY", "gzip": "GZIP", "zstd": "ZSTD"}[codec]
    assert meta.row_group(0).column(0).compression == expected


def test_change_feed_markers_last_typed_nulls_and_order(spark, db, lz):
    db.push(
        spark.createDataFrame([(1, "a", 10), (2, "b", 20)], "id long, v string, n int"),
        table="t",
        keys=["id"],
    )
    rows = [
        (1, "x", 11, 1, 3),
        (1, "y", 12, 4, 5),
        (2, "z", 21, 2, 2),
        (3, "w", 30, 0, 1),
        (1, "q", 13, 4, 4),
    ]
    changes = spark.createDataFrame(rows, "id long, v string, n int, op int, lsn int").repartition(3)
    result = db.push(changes, table="t", mode="changes", op_column="op", order_by=["lsn"])
    assert result.rows == {"insert": 1, "update": 1, "delete": 1, "upsert": 2}
    out = [r for f in data_files(lz / "t")[1:] for r in pq.read_table(f).to_pylist()]
    tables = [pq.read_table(f) for f in data_files(lz / "t")[1:]]
    assert all(
        t.column_names[-1] == ROW_MARKER and str(t.schema.field(ROW_MARKER).type) == "int32" for t in tables
    )
    assert "op" not in tables[0].column_names
    key1 = [(r["v"], r["lsn"]) for r in out if r["id"] == 1]
    assert key1 == [("x", 3), ("q", 4), ("y", 5)]  # ordered by lsn, not input order
    delete = next(r for r in out if r[ROW_MARKER] == 2)
    assert delete == {"id": 2, "v": None, "n": None, "lsn": None, ROW_MARKER: 2}
    assert str(tables[0].schema.field("n").type) == "int32"  # typed NULLs keep the column type


def test_change_feed_without_order_by_keeps_input_order(spark, db, lz):
    rows = [(7, f"v{i}", 4) for i in range(30)]
    changes = spark.createDataFrame(rows, "id long, v string, op int").coalesce(1)
    db.push(changes, table="seq", keys=["id"], mode="changes", op_column="op")
    out = [r["v"] for f in data_files(lz / "seq") for r in pq.read_table(f).to_pylist()]
    assert out == [f"v{i}" for i in range(30)]


def test_first_push_of_an_empty_dataframe_publishes_a_schema_only_file(spark, db, lz):
    result = db.push(spark.range(0).selectExpr("id", "'x' as v"), table="empty", keys=["id"])
    files = data_files(lz / "empty")
    assert [f.name for f in files] == [f"{SEQ1}.parquet"] and result.sequence_numbers == (1,)
    table = pq.read_table(files[0])
    assert table.num_rows == 0 and table.column_names == ["id", "v"] and files[0].stat().st_size > 0


def test_empty_change_batch_publishes_nothing(spark, db, lz):
    first = db.push(spark.range(3).selectExpr("id", "'x' as v"), table="t", keys=["id"])
    assert first.sequence_numbers == (1,)
    empty = spark.createDataFrame([], "id long, v string, op int")
    result = db.push(empty, table="t", mode="changes", op_column="op")
    assert result.sequence_numbers == () and len(data_files(lz / "t")) == 1


def test_small_parts_are_merged_into_fewer_files(spark, db, lz):
    df = spark.range(0, 200, numPartitions=20).selectExpr("id", "id % 7 as v")
    result = db.push(df, table="merged", keys=["id"], rows_per_file=100)
    assert result.sequence_numbers == (1, 2)
    assert sum(pq.read_table(f).num_rows for f in data_files(lz / "merged")) == 200


def test_upsert_default_and_detection_strategy_go_to_metadata(spark, db, lz):
    options = om.TableOptions(file_detection="LastUpdateTimeFileDetection", upsert_default=True)
    db.push(spark.range(3), table="opts", keys=["id"], table_options=options)
    meta = json.loads((lz / "opts" / "_metadata.json").read_text())
    assert (
        meta["fileDetectionStrategy"] == "LastUpdateTimeFileDetection"
        and meta["isUpsertDefaultRowMarker"] is True
    )
    # later pushes inherit the table's options without repeating them
    db.push(spark.createDataFrame([(5, 4)], "id long, op int"), table="opts", mode="changes", op_column="op")
    files = data_files(lz / "opts")
    assert len(files) == 2 and files[1].stat().st_mtime > files[0].stat().st_mtime


def test_push_result_and_state(spark, db, lz):
    result = db.push(spark.range(5), table="s.t", keys=["id"])
    assert "s.t: file 1; initial 5" in repr(result) and "<table>" in result._repr_html_()
    state = json.loads((lz / "s.schema" / "t" / "_openmirror" / "state.json").read_text())
    assert state["key_columns"] == ["id"] and state["last_sequence_number"] == 1 and state["pushes"] == 1
    assert not (lz / "s.schema" / "t" / "_openmirror" / "staging").exists()
    assert not (lz / "_openmirror").exists()  # nothing of a table lives outside its folder
    assert db.tables() == ["s.t"]


def test_checks_handed_to_a_push_hold_only_for_the_state_they_were_made_against(spark, db, lz, monkeypatch):
    """A routed batch checks its tables before their pushes take the lock (``checks_before.Checked``);
    a push handed checks made against another state of the table (here: none) checks again."""
    from openmirror_nb._core.pipeline.push import checks_before as push_checks
    from openmirror_nb._core.pipeline.push import run as push_mod
    from tests.conftest import tree_hash

    real, handed = push_mod.run_push, []

    def with_stale_checks(storage, df, request, *args, **kw):
        handed.append(push_checks.check_frame(df, request, None, None))  # as if the table were new
        return real(storage, df, request, *args, checked=handed[-1], **kw)

    db.push(spark.createDataFrame([(1, "a")], "id long, v string"), table="t", keys=["id"])
    before = tree_hash(lz)
    monkeypatch.setattr(push_mod, "run_push", with_stale_checks)
    with pytest.raises(om.SchemaChangeError, match="Column 'v' of table 't' changed type"):
        db.push(spark.createDataFrame([(1, 2)], "id long, v int"), table="t", keys=["id"])
    assert len(handed) == 1 and tree_hash(lz) == before
