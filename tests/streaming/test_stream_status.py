"""What ``db.status()`` and the monitor pane (headless) show of a streamed table: the query, its
last batch id and time, rows in that batch and how long ago it ended."""

from __future__ import annotations

import time

import pytest

import openmirror_nb as om
from tests.streaming.feeds import Feed, event, run

pytestmark = pytest.mark.spark


def test_status_and_the_monitor_pane_show_the_last_batch(spark, tmp_path):
    db = om.connect(tmp_path / "db", lock_timeout=30)
    db.push(spark.createDataFrame([(1, "x")], "id long, name string"), table="plain", keys=["id"])
    feed = Feed(tmp_path)
    feed.drop([event(1, 0), event(2, 0)])
    feed.drop([event(3, 0), event(1, 2), event(4, 0)])
    started = time.time()
    query = run(
        feed.stream(spark), db.batch_sink(table="orders", keys=["id"], op_column="op"), tmp_path / "c"
    )
    ended = time.time()

    report = db.status()
    streamed = next(t for t in report.tables if t.table == "orders")
    assert (streamed.stream_query, streamed.stream_batch, streamed.stream_batch_rows) == (str(query.id), 1, 3)
    assert started <= streamed.stream_batch_time.timestamp() <= ended
    assert 0 <= streamed.stream_seconds <= report.taken_at.timestamp() - started
    assert streamed.row()["stream_batch"] == 1
    plain = next(t for t in report.tables if t.table == "plain")
    assert (plain.stream_query, plain.stream_batch, plain.stream_seconds) == (None, None, None)

    pane = om.widgets.MonitorPane(db)
    try:
        pane.table_picker.value = "orders"
        assert f"query {query.id}" in pane.detail.value
        assert "1, 3 rows, ended" in pane.detail.value
        pane.table_picker.value = "plain"
        assert "last batch" not in pane.detail.value
    finally:
        pane.close()
