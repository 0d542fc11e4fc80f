"""``db.mirror_kafka`` on a real broker (``tests/kafka_broker.py``): 3-partition topics written by a
real producer, read by Spark's Kafka source, each topic into its table, checked by the local
mirror and the independent contract checker."""

from __future__ import annotations

import json
import uuid

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from tests.conftest import tree_hash, visible_hash
from tests.reliability.harness import lzcheck, mirrored_rows

pytestmark = [pytest.mark.spark, pytest.mark.runtime13]


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db", lock_timeout=30)


def _topic(kafka, table: str, partitions: int = 3) -> str:
    """A fresh topic whose last two parts name ``table`` (each test its own)."""
    name = f"t{uuid.uuid4().hex[:8]}.{table}"
    kafka.create_topic(name, partitions=partitions)
    return name


def _send(kafka, topic: str, rows: list[dict | str | None], partitions: int = 3) -> list[tuple[int, int]]:
    """Each row as a JSON value keyed by its id, in partition id % 3 (text is sent as it is, to
    partition 1 of 3)."""
    messages = []
    for row in rows:
        if isinstance(row, dict):
            messages.append((str(row["id"]), json.dumps(row), row["id"] % partitions))
        else:
            messages.append((None, row, 1 % partitions))
    return kafka.produce(topic, messages)


def _mirror(db, kafka, topics, tmp_path, **kwargs):
    ms = db.mirror_kafka(
        om.Kafka(bootstrap_servers=kafka.bootstrap, topics=topics), checkpoint=tmp_path / "ckpt", **kwargs
    )
    ms.await_termination(timeout=600)
    om.LocalMirror(db.target.root).run_once()
    return ms


def test_messages_without_an_operation_are_upserts_by_key_in_partition_and_offset_order(
    spark, db, kafka, tmp_path
):
    topic = _topic(kafka, "sales.orders")
    rows = [{"id": i, "v": f"v{i}", "n": i} for i in range(1, 10)]
    rows += [{"id": i, "v": f"u{i}", "n": -i} for i in (2, 3, 4)] + [{"id": 3, "v": "last", "n": 0}]
    _send(kafka, topic, rows)
    ms = _mirror(
        db,
        kafka,
        [topic],
        tmp_path,
        schemas={"sales.orders": "id BIGINT, v STRING, n BIGINT"},
        keys={"sales.orders": ["id"]},
    )
    assert ms.error is None
    latest = {r["id"]: (r["id"], r["v"], r["n"]) for r in rows}
    assert mirrored_rows(db, "sales.orders") == sorted(latest.values())
    assert lzcheck(db.target.landing_zone, "sales.orders") == sorted(latest.values())


def test_an_operation_column_a_keyless_table_and_a_mapped_topic_in_one_stream(spark, db, kafka, tmp_path):
    lines, audit = _topic(kafka, "sales.lines"), f"audit{uuid.uuid4().hex[:6]}"
    kafka.create_topic(audit, partitions=3)
    changes = [{"id": i, "v": f"v{i}", "n": i, "op": 0} for i in range(1, 7)]
    changes += [{"id": 2, "v": "u2", "n": 20, "op": 4}, {"id": 5, "v": None, "n": None, "op": 2}]
    _send(kafka, lines, changes)
    events = [{"id": i % 2, "v": f"e{i}", "n": i} for i in range(5)]  # no keys: every message a row
    _send(kafka, audit, events)
    _mirror(
        db,
        kafka,
        [lines, audit],
        tmp_path,
        tables={lines: "sales.lines", audit: "audit.events"},
        schemas={
            "sales.lines": "id BIGINT, v STRING, n BIGINT, op INT",
            "audit.events": "id INT, v STRING, n INT",
        },
        keys={"sales.lines": ["id"]},
        feed={"sales.lines": om.FeedOptions(op_column="op")},
    )
    assert mirrored_rows(db, "sales.lines") == [
        (1, "v1", 1),
        (2, "u2", 20),
        (3, "v3", 3),
        (4, "v4", 4),
        (6, "v6", 6),
    ]
    assert [c.name for c in db.describe("sales.lines").columns] == ["id", "v", "n"]
    assert mirrored_rows(db, "audit.events") == sorted((e["id"], e["v"], e["n"]) for e in events)
    assert db.describe("audit.events").keys == ()


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("{not json", "is not JSON of its table's schema"),
        ('{"id": "abc", "v": "x", "n": 1}', "is not JSON of its table's schema"),
        (None, "is null"),
    ],
)
def test_a_value_that_does_not_parse_stops_the_batch_naming_topic_partition_and_offset(
    spark, db, kafka, tmp_path, bad, why
):
    topic = _topic(kafka, "sales.orders")
    placed = _send(kafka, topic, [{"id": 1, "v": "a", "n": 1}, {"id": 4, "v": "b", "n": 4}, bad])
    before = tree_hash(db.target.landing_zone)
    with pytest.raises(om.ChangeFeedError) as caught:
        db.mirror_kafka(
            om.Kafka(bootstrap_servers=kafka.bootstrap, topics=topic),
            schemas={"sales.orders": "id BIGINT, v STRING, n BIGINT"},
            keys={"sales.orders": ["id"]},
            checkpoint=tmp_path / "ckpt",
        ).await_termination(timeout=600)
    partition, offset = placed[-1]
    assert str(caught.value).startswith(
        f"Topic {topic} partition {partition} offset {offset}: the message's value {why}"
    )
    assert "nothing of batch 0 was published" in str(caught.value)
    assert tree_hash(db.target.landing_zone) == before


def test_a_new_checkpoint_starts_where_said_and_a_batch_takes_at_most_the_bound(spark, db, kafka, tmp_path):
    topic = _topic(kafka, "sales.orders")
    _send(kafka, topic, [{"id": i, "v": f"v{i}", "n": i} for i in range(1, 10)])
    declared = {
        "schemas": {"sales.orders": "id BIGINT, v STRING, n BIGINT"},
        "keys": {"sales.orders": ["id"]},
    }
    _mirror(db, kafka, [topic], tmp_path, max_offsets_per_trigger=4, **declared)
    lag = db.status()["sales.orders"].stream_lag
    assert [(p.topic, p.partition, p.lag) for p in lag] == [(topic, 0, 0), (topic, 1, 0), (topic, 2, 0)]
    assert (
        [p.applied for p in lag] == [p.latest for p in lag] == [kafka.end_offsets(topic)[i] for i in range(3)]
    )
    state = TableFolder.of(db.storage, "sales.orders").read_state()
    assert [b for _, b in state.streams] == [2]  # 9 messages, at most 4 a batch: batches 0, 1 and 2
    assert len(mirrored_rows(db, "sales.orders")) == 9
    late = tmp_path / "late"
    late.mkdir()
    ms = _mirror(db, kafka, [topic], late, starting_offsets="latest", **declared)
    assert ms.query.lastProgress is None or ms.query.lastProgress["numInputRows"] == 0


def test_a_topic_without_a_dot_is_refused_before_anything_starts(spark, db, kafka, tmp_path):
    with pytest.raises(om.ConfigError, match=r"Topic 'orders' has no '.'.*tables="):
        db.mirror_kafka(
            om.Kafka(bootstrap_servers=kafka.bootstrap, topics="orders"),
            schemas={"sales.orders": "id BIGINT"},
            checkpoint=tmp_path / "ckpt",
        )
    assert spark.streams.active == [] and not (tmp_path / "ckpt").exists()


def test_a_stream_the_user_built_from_sparks_kafka_source(spark, db, kafka, tmp_path):
    topic = _topic(kafka, "sales.orders")
    rows = [{"id": i, "v": f"v{i}", "n": i} for i in range(1, 5)]
    _send(kafka, topic, rows)
    df = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    ms = db.mirror_kafka(
        df,
        schemas={"sales.orders": "id BIGINT, v STRING, n BIGINT"},
        keys={"sales.orders": ["id"]},
        checkpoint=tmp_path / "ckpt",
    )
    ms.await_termination(timeout=600)
    om.LocalMirror(db.target.root).run_once()
    assert mirrored_rows(db, "sales.orders") == [(r["id"], r["v"], r["n"]) for r in rows]
    with pytest.raises(om.ConfigError, match=r"lacks key, topic, partition, offset"):
        db.mirror_kafka(
            spark.readStream.format("rate").load(), schemas={"a.b": "id INT"}, checkpoint=tmp_path / "x"
        )


def test_offsets_gone_from_the_topic_stop_the_query_in_one_line(spark, db, kafka, tmp_path):
    topic = _topic(kafka, "sales.orders", partitions=1)
    declared = {
        "schemas": {"sales.orders": "id BIGINT, v STRING, n BIGINT"},
        "keys": {"sales.orders": ["id"]},
    }
    _send(kafka, topic, [{"id": i, "v": "a", "n": i} for i in range(3)], partitions=1)
    _mirror(db, kafka, [topic], tmp_path, **declared)
    _send(kafka, topic, [{"id": i, "v": "b", "n": i} for i in range(3, 9)], partitions=1)
    kafka.delete_records(topic, {0: 6})  # retention took offsets 3-5, which the checkpoint needs next
    before, state = (
        visible_hash(db.target.landing_zone),
        TableFolder.of(db.storage, "sales.orders").read_state(),
    )
    with pytest.raises(om.SourceError) as caught:
        _mirror(db, kafka, [topic], tmp_path, **declared)
    message = str(caught.value)
    # Spark 4 names the range it could not read, Spark 3.5 the first offset
    assert (
        f"gone from Kafka (Could not read records in offset [3, 9) for topic partition {topic}-0:" in message
        or f"gone from Kafka (offset 3 of topic partition {topic}-0:" in message
    )
    assert "nothing was skipped" in message and "\n" not in message
    assert visible_hash(db.target.landing_zone) == before  # the lag it saw is saved under _openmirror
    assert TableFolder.of(db.storage, "sales.orders").read_state() == state


def test_the_lag_per_partition_is_saved_where_any_notebooks_status_reads_it(spark, db, kafka, tmp_path):
    topic = _topic(kafka, "sales.orders", partitions=1)
    good = [{"id": i, "v": "a", "n": i} for i in range(4)]
    _send(kafka, topic, [*good, "{not json", *good], partitions=1)  # batch 1 stops at offset 4
    with pytest.raises(om.ChangeFeedError, match=rf"Topic {topic} partition 0 offset 4"):
        _mirror(
            db,
            kafka,
            [topic],
            tmp_path,
            max_offsets_per_trigger=4,
            schemas={"sales.orders": "id BIGINT, v STRING, n BIGINT"},
            keys={"sales.orders": ["id"]},
        )
    other_notebook = om.connect(db.target.root, create=False)
    (lag,) = other_notebook.status()["sales.orders"].stream_lag
    assert (lag.topic, lag.partition, lag.applied, lag.latest, lag.lag) == (topic, 0, 4, 9, 5)
    assert f"kafka: 5 messages behind ({topic} p0 5)" in repr(other_notebook.status())
    assert "kafka lag" in other_notebook.status()["sales.orders"].to_html()
