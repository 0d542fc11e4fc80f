"""``db.mirror_stream``: the query started with a batch sink and a checkpoint; its handle
(``MirrorStream``) re-raises the sink's ``OpenMirrorError`` itself, where a plain ``foreachBatch``
query gives Spark's ``StreamingQueryException`` with the message inside."""

from __future__ import annotations

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.streaming.stream import trigger_of
from tests.reliability.harness import mirrored_rows
from tests.streaming.feeds import COLUMNS, Feed, applied, event, run

pytestmark = [pytest.mark.spark, pytest.mark.newest]  # core: the newest PySpark runs it too


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db", lock_timeout=30)


def test_available_now_takes_what_arrived_and_ends(spark, db, tmp_path):
    feed = Feed(tmp_path)
    events = [event(1, 0), event(2, 0), event(1, 4, v="again")]
    feed.drop(events)
    ms = db.mirror_stream(
        feed.stream(spark), table="t", keys=["id"], op_column="op", checkpoint=tmp_path / "c"
    )
    assert isinstance(ms, om.MirrorStream)
    assert ms.await_termination(timeout=600) is True
    assert not ms.query.isActive and ms.error is None
    assert f"query {ms.query.id}, stopped" in repr(ms)
    om.LocalMirror(db.target.root).run_once()
    assert mirrored_rows(db, "t", COLUMNS) == applied(events)


def test_once_and_an_interval_run_until_stopped(spark, db, tmp_path):
    feed = Feed(tmp_path)
    feed.drop([event(1, 0)])
    once = db.mirror_stream(
        feed.stream(spark), table="t", keys=["id"], op_column="op", checkpoint=tmp_path / "c", trigger="once"
    )
    once.await_termination()
    feed.drop([event(2, 0)])
    every = db.mirror_stream(
        feed.stream(spark),
        table="t",
        keys=["id"],
        op_column="op",
        checkpoint=tmp_path / "c",
        trigger="1 second",
        query_name="orders_feed",
    )
    try:
        while TableFolder.of(db.storage, "t").read_state().stream.batch < 1:
            assert every.await_termination(timeout=0.2) is False  # an interval never ends by itself
    finally:
        every.stop()
    assert not every.query.isActive and every.query.name == "orders_feed"
    assert every.query.id == once.query.id  # the checkpoint keeps the query's id


def test_the_sinks_error_is_raised_as_itself(spark, db, tmp_path):
    feed = Feed(tmp_path)
    feed.drop([{"id": None, "v": "x", "n": 1, "op": 0}])
    ms = db.mirror_stream(
        feed.stream(spark), table="t", keys=["id"], op_column="op", checkpoint=tmp_path / "c"
    )
    with pytest.raises(om.KeyColumnsError, match=r"1 row\(s\) of table 't' have a NULL in key columns"):
        ms.await_termination()
    assert isinstance(ms.error, om.KeyColumnsError)
    assert db.tables() == []


def test_through_plain_foreach_batch_it_is_inside_sparks_exception(spark, db, tmp_path):
    from pyspark.errors import StreamingQueryException

    feed = Feed(tmp_path)
    feed.drop([{"id": 1, "v": "x", "n": 1, "op": 9}])
    sink = db.batch_sink(table="t", keys=["id"], op_column="op")
    with pytest.raises(StreamingQueryException) as raised:
        run(feed.stream(spark), sink, tmp_path / "c")
    assert "ChangeFeedError" in str(raised.value) and "operation value(s) 9" in str(raised.value)
    assert isinstance(sink.error, om.ChangeFeedError)


def test_what_mirror_stream_refuses(spark, db, tmp_path):
    feed = Feed(tmp_path)
    with pytest.raises(om.ConfigError, match="needs checkpoint="):
        db.mirror_stream(feed.stream(spark), table="t", keys=["id"], op_column="op")
    with pytest.raises(om.ConfigError, match="takes a streaming DataFrame"):
        db.mirror_stream(spark.range(3), table="t", keys=["id"], checkpoint=tmp_path / "c")
    with pytest.raises(om.ConfigError, match="trigger 'often' is not one of"):
        db.mirror_stream(
            feed.stream(spark), table="t", keys=["id"], checkpoint=tmp_path / "c", trigger="often"
        )
    assert not (tmp_path / "c").exists() and db.tables() == []


def test_triggers():
    assert trigger_of("available_now") == {"availableNow": True}
    assert trigger_of("once") == {"once": True}
    assert trigger_of("10 seconds") == {"processingTime": "10 seconds"}
    assert trigger_of("500 ms") == {"processingTime": "500 ms"}
    with pytest.raises(om.ConfigError):
        trigger_of("10")
