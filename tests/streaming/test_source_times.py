"""When a Kafka micro-batch's changes happened (``streaming.source_times``), without Kafka: a
batch of hand-made messages through the probe and the one checking job (``topic_shapes.gather``),
to each table's ``SourceTimes`` and the batch's mark; and the marks' table sequence numbers."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from openmirror_nb._core.landing_zone.freshness_log import SourceTimes
from openmirror_nb._core.landing_zone.push_state import StreamBatch
from openmirror_nb._core.landing_zone.stream_freshness import read_query
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.local import LocalStorage
from openmirror_nb._core.streaming.source_times import (
    LastSequences,
    SourceClock,
    TopicTimes,
    over,
    record,
    times_of,
)
from openmirror_nb._core.streaming.topic_shapes import TopicBatch, gather, probe

BASE = 1_790_000_000  # epoch seconds


def _event(op: str, ms: int, snapshot: str = "false", wrapped: bool = False) -> str:
    payload = {
        "before": None,
        "after": {"id": 1},
        "op": op,
        "ts_ms": ms + 999_000,  # the connector's time: not a commit's, never taken
        "source": {"ts_ms": ms, "snapshot": snapshot, "sequence": json.dumps([str(ms), str(ms + 1)])},
    }
    return json.dumps(
        {"schema": {"type": "struct", "fields": []}, "payload": payload} if wrapped else payload
    )


def _message(topic: str, partition: int, offset: int, value: str | None, at: float) -> tuple:
    key = json.dumps({"id": 1}).encode()
    return (
        key,
        value.encode() if value else None,
        topic,
        partition,
        offset,
        datetime.fromtimestamp(at, tz=UTC),
    )


@pytest.mark.spark
def test_the_checking_job_takes_each_topics_change_times_and_leaves_snapshot_reads_out(spark):
    ms = BASE * 1000
    messages = [
        # a table's snapshot read (older and newer than its changes), its changes over two
        # partitions, a tombstone: only the changes count
        _message("db.shop.orders", 0, 0, _event("r", ms - 50_000, "first"), BASE - 40),
        _message("db.shop.orders", 0, 1, _event("c", ms + 2_000), BASE + 2.5),
        _message("db.shop.orders", 1, 0, _event("u", ms + 3_000), BASE + 3.25),
        _message("db.shop.orders", 1, 1, _event("d", ms + 4_000), BASE + 4.5),
        _message("db.shop.orders", 1, 2, None, BASE + 4.5),
        _message("db.shop.orders", 0, 2, _event("r", ms + 90_000, "last"), BASE + 95),
        # a table with only a snapshot's reads, an incremental snapshot's among them
        _message("db.shop.loaded", 0, 0, _event("r", ms, "true"), BASE + 1),
        _message("db.shop.loaded", 0, 1, _event("r", ms + 9_000, "incremental"), BASE + 10),
        # Debezium's heartbeat message: the connector's time, not a commit's
        _message("__debezium-heartbeat.db", 0, 0, json.dumps({"ts_ms": ms + 500_000}), BASE + 500),
        # the heartbeat table's change, with schemas: a commit
        _message("db.shop.heartbeat", 0, 0, _event("u", ms + 6_000, wrapped=True), BASE + 6.75),
        # JSON rows: only their Kafka times
        _message("rows", 0, 0, json.dumps({"id": 1}), BASE + 1.5),
        _message("rows", 0, 1, json.dumps({"id": 2}), BASE + 7.5),
    ]
    df = spark.createDataFrame(
        messages, "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
    )
    rows = gather(probe(df), first={}, count={})
    found = {r["topic"]: TopicBatch.of(r, None).times for r in rows}

    assert found["db.shop.orders"] == TopicTimes((BASE + 2.0, BASE + 4.0), (BASE + 2.5, BASE + 4.5))
    assert found["db.shop.loaded"] == TopicTimes() and found["__debezium-heartbeat.db"] == TopicTimes()
    assert found["db.shop.heartbeat"] == TopicTimes((BASE + 6.0, BASE + 6.0), (BASE + 6.75, BASE + 6.75))
    assert found["rows"] == TopicTimes(None, (BASE + 1.5, BASE + 7.5))

    clock = SourceClock()
    clock.set(300.25, 0.004)
    orders = times_of(found["db.shop.orders"], clock)
    assert orders == SourceTimes("commit", BASE + 2.0, BASE + 4.0, BASE + 2.5, BASE + 4.5, 300.25, 0.004)
    assert times_of(found["db.shop.loaded"], clock) is None  # only a snapshot's: no source times
    # JSON rows: the Kafka times stand in, their clock's skew unknown
    assert times_of(found["rows"], clock) == SourceTimes(
        "topic", BASE + 1.5, BASE + 7.5, BASE + 1.5, BASE + 7.5
    )
    # the batch: every topic's commits, the heartbeat table's newest among them
    batch = times_of(over(found.values()), None)
    assert batch == SourceTimes("commit", BASE + 2.0, BASE + 6.0, BASE + 2.5, BASE + 6.75)


def test_a_clock_never_measured_or_failed_is_unknown_not_zero():
    clock = SourceClock()
    times = TopicTimes((1.0, 2.0), (1.5, 2.5))
    assert times_of(times, clock) == SourceTimes("commit", 1.0, 2.0, 1.5, 2.5)
    clock.set(4.0, 0.5)
    clock.set(None, None)
    assert times_of(times, clock).skew is None


def test_the_batch_mark_has_each_existing_tables_last_sequence_and_reads_states_sparingly(
    tmp_path, monkeypatch
):
    storage = LocalStorage(tmp_path)
    read: list[str] = []
    sequences = {"shop.orders": 7, "shop.customers": 3}

    class State:
        def __init__(self, n):
            self.last_sequence_number = n

    def read_state(folder):
        read.append(str(folder.ref))
        n = sequences.get(str(folder.ref))
        return None if n is None else State(n)

    monkeypatch.setattr("openmirror_nb._core.landing_zone.table_folder.TableFolder.read_state", read_state)
    tables = [TableRef("orders", "shop"), TableRef("customers", "shop"), TableRef("later", "shop")]
    last = LastSequences(every=3600)
    assert last.after(storage, tables, pushed=set()) == {"shop.orders": 7, "shop.customers": 3}
    assert len(read) == 3  # the first batch reads every table's state
    read.clear()
    sequences["shop.orders"] = 8
    sequences["shop.customers"] = 4  # another writer's: seen at the next full read
    assert last.after(storage, tables, pushed={"shop.orders"}) == {"shop.orders": 8, "shop.customers": 3}
    assert read == ["shop.orders"]

    found = [TopicTimes((BASE + 1.0, BASE + 2.0), (BASE + 1.5, BASE + 2.5)), TopicTimes()]
    record(storage, StreamBatch("q1", 4), found, None, lambda: {"shop.orders": 8})
    asked: list[int] = []
    record(storage, StreamBatch("q1", 5), [TopicTimes()], None, lambda: asked.append(5) or {})
    assert asked == []  # nothing timed: no mark, and no table's state read

    def broken() -> dict[str, int]:
        raise OSError("the store is away")

    record(storage, StreamBatch("q1", 6), found, None, broken)  # logged: the batch goes on
    (mark,) = read_query(storage, "q1")
    assert (mark.batch, mark.tables) == (4, {"shop.orders": 8})
    assert mark.source == SourceTimes("commit", BASE + 1.0, BASE + 2.0, BASE + 1.5, BASE + 2.5)
