"""``db.batch_sink`` on real Structured Streaming queries (file source, rate source, a Kafka-shaped
feed): each micro-batch is applied once, its identity committed with its files; a replayed batch
publishes nothing; a new query's batch 0 applies; a table dropped under the query stops it."""

from __future__ import annotations

import logging

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from tests.conftest import tree_hash, visible_hash
from tests.reliability.harness import lzcheck, mirrored_rows, sequence_numbers
from tests.streaming.feeds import COLUMNS, Feed, applied, event, forget_commit, run

pytestmark = [pytest.mark.spark, pytest.mark.newest]  # core: the newest PySpark runs it too

TABLE = "sales.orders"


def _state(db, table=TABLE):
    return TableFolder.of(db.storage, table).read_state()


def _mirror(db, table=TABLE):
    om.LocalMirror(db.target.root).run_once()
    return mirrored_rows(db, table, COLUMNS)


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db", lock_timeout=30)


def test_each_batch_is_applied_once_with_its_identity_committed(spark, db, tmp_path):
    feed = Feed(tmp_path)
    first = [event(1, 0), event(2, 0), event(3, 0)]
    second = [event(2, 4, v="two"), event(3, 2), event(4, 0)]
    feed.drop(first)
    feed.drop(second)
    sink = db.batch_sink(table=TABLE, keys=["id"], op_column="op")
    query = run(feed.stream(spark), sink, tmp_path / "ckpt")
    state = _state(db)
    assert state.streams == ((str(query.id), 1),)  # batches 0 and 1, one file each
    assert (state.stream.query, state.stream.batch, state.stream.rows) == (str(query.id), 1, 3)
    assert sequence_numbers(db.target.landing_zone / "sales.schema/orders") == [1, 2]
    assert _mirror(db) == applied(first + second)
    assert lzcheck(db.target.landing_zone, TABLE) == applied(first + second)


def test_a_batch_spark_replays_publishes_nothing_and_says_so(spark, db, tmp_path, caplog):
    """Reproduces a crash after the sink returned but before Spark's commit log: the batch's entry
    under the checkpoint's commits/ is removed, so the restarted query runs that batch again."""
    feed, ckpt = Feed(tmp_path), tmp_path / "ckpt"
    events = [event(1, 0), event(2, 0)]
    feed.drop(events)
    sink = db.batch_sink(table=TABLE, keys=["id"], op_column="op")
    query = run(feed.stream(spark), sink, ckpt)
    folder = db.target.landing_zone / "sales.schema/orders"
    before = tree_hash(folder)
    forget_commit(ckpt, 0)
    caplog.set_level(logging.INFO, logger="openmirror_nb")
    again = run(feed.stream(spark), db.batch_sink(table=TABLE, keys=["id"], op_column="op"), ckpt)
    assert again.id == query.id
    assert "Batch 0 of streaming query" in caplog.text and "already in table sales.orders" in caplog.text
    assert tree_hash(folder) == before  # not even the "last checked" record
    assert _mirror(db) == applied(events)  # marker 0 twice would hold each row twice


def test_a_new_query_applies_its_batch_0_and_says_what_that_means(spark, db, tmp_path, caplog):
    feed = Feed(tmp_path)
    events = [event(1, 4), event(2, 4)]
    feed.drop(events)
    run(feed.stream(spark), db.batch_sink(table=TABLE, keys=["id"], op_column="op"), tmp_path / "a")
    caplog.set_level(logging.WARNING, logger="openmirror_nb")
    other = run(feed.stream(spark), db.batch_sink(table=TABLE, keys=["id"], op_column="op"), tmp_path / "b")
    assert "holds batches of other streaming queries" in caplog.text
    assert "row marker 0 inserts them again" in caplog.text
    assert sequence_numbers(db.target.landing_zone / "sales.schema/orders") == [1, 2]
    assert dict(_state(db).streams)[str(other.id)] == 0
    assert _mirror(db) == applied(events)  # upserts applied twice: the same table


def test_a_table_dropped_under_the_query_stops_it_and_publishes_nothing(spark, db, tmp_path):
    feed, ckpt = Feed(tmp_path), tmp_path / "ckpt"
    feed.drop([event(1, 0)])
    run(feed.stream(spark), db.batch_sink(table=TABLE, keys=["id"], op_column="op"), ckpt)
    db.drop(TABLE)
    feed.drop([event(2, 0)])
    lz_before = tree_hash(db.target.landing_zone / "sales.schema")
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException, match="was dropped or reseeded while streaming query"):
        run(feed.stream(spark), db.batch_sink(table=TABLE, keys=["id"], op_column="op"), ckpt)
    assert tree_hash(db.target.landing_zone / "sales.schema") == lz_before
    assert not (ckpt / "commits" / "1").exists()  # Spark's checkpoint did not advance


def test_a_bad_row_stops_the_query_with_nothing_of_its_batch_published(spark, db, tmp_path):
    feed, ckpt = Feed(tmp_path), tmp_path / "ckpt"
    feed.drop([event(1, 0)])
    run(feed.stream(spark), db.batch_sink(table=TABLE, keys=["id"], op_column="op"), ckpt)
    feed.drop([event(2, 0), {"id": None, "v": "x", "n": 1, "op": 0}])
    folder = db.target.landing_zone / "sales.schema/orders"
    before = tree_hash(folder)
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException, match=r"have a NULL in key columns \['id'\]"):
        run(feed.stream(spark), db.batch_sink(table=TABLE, keys=["id"], op_column="op"), ckpt)
    assert tree_hash(folder) == before
    assert not (ckpt / "commits" / "1").exists()


def test_an_empty_batch_publishes_nothing(spark, db, tmp_path):
    feed, ckpt = Feed(tmp_path), tmp_path / "ckpt"
    feed.drop([event(1, 0)])
    sink = db.batch_sink(table=TABLE, keys=["id"], op_column="op")
    run(feed.stream(spark).where("id < 100"), sink, ckpt)
    folder = db.target.landing_zone / "sales.schema/orders"
    before = visible_hash(folder)
    feed.drop([event(500, 0)])  # filtered out: the batch reaches the sink empty
    run(feed.stream(spark).where("id < 100"), sink, ckpt)
    assert (ckpt / "commits" / "1").exists()
    assert visible_hash(folder) == before
    assert _state(db).applied(next(iter(dict(_state(db).streams)))) == 0


def test_a_first_empty_batch_creates_no_table(spark, db, tmp_path):
    feed = Feed(tmp_path)
    feed.drop([event(500, 0)])
    run(
        feed.stream(spark).where("id < 100"),
        db.batch_sink(table="t", keys=["id"], op_column="op"),
        tmp_path / "c",
    )
    assert db.tables() == []


def test_the_rate_source(spark, db, tmp_path):
    from pyspark.sql import functions as F

    rate = spark.readStream.format("rate").option("rowsPerSecond", 50).load()
    feed = rate.select((F.col("value") % 7).alias("id"), F.col("value").alias("n"), F.lit(4).alias("op"))
    sink = db.batch_sink(table="ticks", keys=["id"], op_column="op")
    query = feed.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "c")).start()
    try:
        while len(dict(_state(db, "ticks").streams if _state(db, "ticks") else ())) == 0 or (
            _state(db, "ticks").stream.batch < 2
        ):
            query.awaitTermination(0.2)
            assert query.exception() is None
    finally:
        query.stop()
    state = _state(db, "ticks")
    om.LocalMirror(db.target.root).run_once()
    mirrored = db.read_table("ticks", as_pandas=True)
    assert sorted(mirrored["id"]) == sorted(set(mirrored["id"]))  # one row per key
    assert state.last_sequence_number == len(sequence_numbers(db.target.landing_zone / "ticks"))


def test_a_kafka_shaped_feed_parsed_with_from_json(spark, db, tmp_path):
    """What Spark's Kafka source yields (key, value as JSON text, topic, partition, offset),
    dropped as files: the same code path as a Kafka or Event Hubs stream in Fabric."""
    import json

    from pyspark.sql import functions as F

    feed = Feed(tmp_path)
    changes = [event(1, 0), event(2, 0), event(1, 4, v="one"), event(2, 2)]
    records = [
        {"key": str(e["id"]), "value": json.dumps(e), "topic": "orders", "partition": 0, "offset": i}
        for i, e in enumerate(changes)
    ]
    feed.drop(records)
    raw = feed.stream(spark, "key string, value string, topic string, partition int, offset long")
    parsed = raw.select(
        F.from_json("value", "id long, v string, n long, op int").alias("e"), "offset"
    ).select("e.*", "offset")
    sink = db.batch_sink(table=TABLE, keys=["id"], op_column="op", order_by=["offset"])
    run(parsed, sink, tmp_path / "ckpt")
    assert _mirror(db) == applied(changes)


def test_snapshot_mode_and_bad_targets_are_refused(spark, db):
    with pytest.raises(om.ConfigError, match="mode='snapshot' cannot stream"):
        db.batch_sink(table=TABLE, keys=["id"], mode="snapshot")
    with pytest.raises(om.ConfigError, match="either table="):
        db.batch_sink(keys=["id"])
    with pytest.raises(om.ConfigError, match="routed sink takes keys per table"):
        db.batch_sink(route="tbl", keys=["id"])
    with pytest.raises(om.ConfigError, match=r"pass it to df\.writeStream\.foreachBatch"):
        db.batch_sink(table=TABLE, keys=["id"])(spark.range(1), 0)  # not a batch of a query
    assert db.tables() == []
