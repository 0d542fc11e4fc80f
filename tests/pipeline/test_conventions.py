"""Change conventions mapped to row markers: Prostore sys_op, Delta CDF, Debezium, compaction."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.model import ROW_MARKER
from tests.conftest import tree_hash

pytestmark = [pytest.mark.spark, pytest.mark.newest]  # core: the newest PySpark runs it too

SCHEMA = "id long, v string"


def rows_of(lz, seq, table="t"):
    return pq.read_table(lz / table / f"{seq:020d}.parquet").to_pylist()


@pytest.fixture
def seeded(spark, db):
    db.push(spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], SCHEMA), table="t", keys=["id"])
    return db


def test_sys_op_maps_to_upsert_and_delete(spark, seeded, lz):
    feed = spark.createDataFrame([(1, "A", 0), (2, None, 1), (9, "new", 0)], SCHEMA + ", sys_op int")
    result = seeded.push(feed, table="t", mode="changes", convention="sys_op")
    assert result.rows == {"delete": 1, "upsert": 2}
    out = {r["id"]: r for r in rows_of(lz, 2)}
    assert out[2] == {"id": 2, "v": None, ROW_MARKER: 2} and out[1][ROW_MARKER] == 4
    assert "sys_op" not in out[1]


def test_sys_op_keys_must_be_unique_in_a_batch(spark, seeded):
    feed = spark.createDataFrame([(1, "A", 0), (1, None, 1), (2, "B", 0)], SCHEMA + ", sys_op int")
    before = tree_hash(seeded.target.landing_zone)
    with pytest.raises(om.ChangeFeedError, match="occur more than once") as info:
        seeded.push(feed, table="t", mode="changes", convention="sys_op")
    assert "1" in str(info.value) and tree_hash(seeded.target.landing_zone) == before


def test_sys_op_strict_delete(spark, seeded, lz):
    good = spark.createDataFrame([(2, "b", 1), (1, "A", 0)], SCHEMA + ", sys_op int")
    assert seeded.push(good, table="t", mode="changes", convention="sys_op", strict_delete=True).rows == {
        "delete": 1,
        "upsert": 1,
    }
    before = tree_hash(seeded.target.landing_zone)
    stale = spark.createDataFrame([(1, "a", 1), (3, "c", 1)], SCHEMA + ", sys_op int")  # 1 is now "A"
    with pytest.raises(om.ChangeFeedError, match="strict_delete") as info:
        seeded.push(stale, table="t", mode="changes", convention="sys_op", strict_delete=True)
    assert "1" in str(info.value) and tree_hash(seeded.target.landing_zone) == before
    missing = spark.createDataFrame([(2, "b", 1)], SCHEMA + ", sys_op int")  # already deleted
    with pytest.raises(om.ChangeFeedError, match="does not exist"):
        seeded.push(missing, table="t", mode="changes", convention="sys_op", strict_delete=True)
    with pytest.raises(om.ConfigError, match="sys_op"):
        seeded.push(
            missing.withColumnRenamed("sys_op", "op"),
            table="t",
            mode="changes",
            op_column="op",
            strict_delete=True,
        )


def test_cdf_drops_preimages_orders_commits_and_splits_key_changes(spark, seeded, lz):
    feed = spark.createDataFrame(
        [
            (2, "b2", "update_postimage", 6, "2026-01-01"),
            (2, "b", "update_preimage", 6, "2026-01-01"),
            (1, "a", "update_preimage", 5, "2026-01-01"),  # key 1 became key 10 in commit 5
            (10, "a", "update_postimage", 5, "2026-01-01"),
            (3, "c", "delete", 7, "2026-01-01"),
            (4, "d", "insert", 4, "2026-01-01"),
            (2, "b3", "update_postimage", 8, "2026-01-01"),
            (2, "b2", "update_preimage", 8, "2026-01-01"),
        ],
        SCHEMA + ", _change_type string, _commit_version long, _commit_timestamp string",
    )
    result = seeded.push(feed, table="t", mode="changes", convention="cdf")
    out = [r for seq in result.sequence_numbers for r in rows_of(lz, seq)]
    assert all(set(r) == {"id", "v", ROW_MARKER} for r in out)  # CDF metadata columns dropped
    assert [r["v"] for r in out if r["id"] == 2] == ["b2", "b3"]  # commit order, preimages gone
    assert {r["id"]: r[ROW_MARKER] for r in out if r["id"] != 2} == {1: 2, 10: 4, 3: 2, 4: 4}
    om.LocalMirror(seeded.target.root).run_once()
    mirrored = seeded.read_table("t", as_pandas=True).sort_values("id")
    assert mirrored.values.tolist() == [[2, "b3"], [4, "d"], [10, "a"]]


def test_debezium_ops(spark, seeded, lz):
    feed = spark.createDataFrame(
        [(1, "A", "u"), (2, "b", "d"), (7, "g", "c"), (8, "h", "r")], SCHEMA + ", op string"
    )
    result = seeded.push(feed, table="t", mode="changes", convention="debezium")
    assert result.rows == {"delete": 1, "upsert": 3}
    bad = spark.createDataFrame([(1, "A", "x")], SCHEMA + ", op string")
    with pytest.raises(om.ChangeFeedError, match="'x'"):
        seeded.push(bad, table="t", mode="changes", convention="debezium")


def test_compact_keeps_each_keys_net_change(spark, seeded, lz):
    feed = spark.createDataFrame(
        [(1, "x", 4, 1), (1, "y", 1, 2), (2, "z", 4, 1), (2, None, 2, 2), (5, "e", 0, 1)],
        SCHEMA + ", op int, lsn int",
    )
    result = seeded.push(feed, table="t", mode="changes", op_column="op", order_by=["lsn"], compact=True)
    out = {r["id"]: (r["v"], r[ROW_MARKER]) for r in rows_of(lz, result.sequence_numbers[0])}
    assert out == {1: ("y", 4), 2: (None, 2), 5: ("e", 0)}
    assert result.rows == {"insert": 1, "delete": 1, "upsert": 1}
