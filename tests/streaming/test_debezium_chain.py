"""The Debezium chain the recorded topics come from (``tests/kafka_connect.py``): PostgreSQL with
logical decoding, Kafka Connect standalone with Debezium's connector, the session's broker. A row's
snapshot, insert, update and delete arrive as ``r``/``c``/``u``/``d`` envelopes and a tombstone, in
commit order; a worker killed outright and started again with its offsets file resumes from them:
no second snapshot, and a change made while it was down arrives."""

from __future__ import annotations

import base64
import json
import time
from decimal import Decimal

import pytest

import openmirror_nb as om
from tests.kafka_connect import KafkaConnect, missing
from tests.sources.postgres import PASSWORD, start_server

pytestmark = [pytest.mark.spark, pytest.mark.skipif(missing() is not None, reason=str(missing()))]
PREFIX = "dbzchain"  # topics of its own: the session's broker is shared
TOPIC = f"{PREFIX}.chain.t"


@pytest.fixture
def pg():
    server = start_server(logical=True)
    server.sql(
        "CREATE SCHEMA chain; CREATE TABLE chain.t (id int PRIMARY KEY, v text, n numeric(6,2));"
        " INSERT INTO chain.t VALUES (1, 'snap', 1.50);"
    )
    yield server
    server.stop()


def _read(kafka, until, timeout=60.0):
    """Every message of ``TOPIC`` from the start, as (key payload, value or ``None``), once ``until``
    holds for them."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": kafka.bootstrap, "group.id": "chain", "enable.auto.commit": False}
    )
    got = []
    deadline = time.monotonic() + timeout
    try:
        while TOPIC not in consumer.list_topics(timeout=10).topics:  # Connect makes it on first write
            assert time.monotonic() < deadline, f"{TOPIC} never made"
            time.sleep(0.2)
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        while not until(got):
            assert time.monotonic() < deadline, f"gave up waiting; had {_ops(got)}"
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            key = json.loads(message.key())["payload"]
            got.append((key, None if message.value() is None else json.loads(message.value())))
    finally:
        consumer.close()
    return got


def _ops(messages):
    return [(key["id"], value["payload"]["op"] if value else None) for key, value in messages]


def _sequence(value):
    """``source.sequence`` as Debezium writes it for PostgreSQL: a JSON text of [last commit LSN,
    event LSN], each a decimal string, the first ``null`` before any commit was streamed."""
    first, lsn = json.loads(value["payload"]["source"]["sequence"])
    return (-1 if first is None else int(first), int(lsn))


def test_envelopes_tombstone_and_resume_after_kill_then_the_mirror_equals_postgresql(
    spark, kafka, pg, tmp_path
):
    # Heartbeats keep the source offsets moving, so the worker flushes them each second.
    settings = {"heartbeat.interval.ms": 500}
    with KafkaConnect(
        kafka.bootstrap, pg, tables="chain\\.t", topic_prefix=PREFIX, slot="chain", settings=settings
    ) as connect:
        assert connect.status()["tasks"][0]["state"] == "RUNNING"
        connect.wait_streaming()
        pg.sql("INSERT INTO chain.t VALUES (2, 'new', 2.25);")
        pg.sql("UPDATE chain.t SET v = 'changed' WHERE id = 1;")
        pg.sql("DELETE FROM chain.t WHERE id = 2;")
        first = _read(kafka, lambda got: len(got) >= 5)
        assert _ops(first) == [(1, "r"), (2, "c"), (1, "u"), (2, "d"), (2, None)]  # None: the tombstone
        values = [value for _, value in first]
        # schemas.enable=true: each value is {schema, payload}, the schema Debezium's envelope
        assert values[0]["schema"]["name"] == f"{TOPIC}.Envelope"
        snap, created, updated, deleted = (value["payload"] for value in values[:4])
        assert snap["before"] is None and snap["after"]["v"] == "snap"
        assert snap["source"]["snapshot"] in ("first", "last", "true")  # one row: "last"
        # numeric(6,2): Connect's Decimal, the unscaled value's big-endian two's complement in base64
        unscaled = int.from_bytes(base64.b64decode(snap["after"]["n"]), "big", signed=True)
        assert Decimal(unscaled).scaleb(-2) == Decimal("1.50")
        assert created["before"] is None and created["after"]["v"] == "new"
        # default replica identity: an update has no before image, a delete only the key
        assert updated["before"] is None and updated["after"] == {**snap["after"], "v": "changed"}
        assert deleted["after"] is None and deleted["before"]["id"] == 2
        assert all(p["source"]["snapshot"] == "false" for p in (created, updated, deleted))
        assert _sequence(values[0])[0] == -1  # a snapshot event: no commit streamed yet
        streamed = [_sequence(value) for value in values[1:4]]
        assert streamed == sorted(streamed) and len(set(streamed)) == 3, streamed

        # Wait until the worker has flushed the offsets of what it sent, then crash it.
        seen = time.time()
        while not (connect.offsets.exists() and connect.offsets.stat().st_mtime > seen):
            assert time.time() < seen + 15, "offsets never flushed"
            time.sleep(0.1)
        connect.kill()
        assert not connect.running
        pg.sql("INSERT INTO chain.t VALUES (3, 'while down', 3.00);")
        began = time.monotonic()
        connect.start()
        print(f"Connect started again in {connect.started_in:.1f} s")
        after = _read(kafka, lambda got: any(key["id"] == 3 for key, _ in got))
        print(f"the change made while down arrived {time.monotonic() - began:.1f} s after the restart")
        later = after[len(first) :]
        # Resumed, not started over: no second snapshot; Debezium may resend the last events it
        # sent (at least once), but nothing else comes before the new row.
        assert all(op != "r" for _, op in _ops(later)), _ops(later)
        assert _ops(later)[-1] == (3, "c"), _ops(later)
        assert set(_ops(later)) <= {(3, "c"), *_ops(first)}
        resumed = later[-1][1]
        assert resumed["payload"]["after"]["v"] == "while down"
        assert _sequence(resumed) > streamed[-1]
        assert PASSWORD not in connect.log.read_text(encoding="utf-8", errors="replace")

    # The whole chain: Connect's topic, resent events included, through db.mirror_kafka with
    # nothing declared; the mirror holds what PostgreSQL holds.
    db = om.connect(tmp_path / "db", lock_timeout=30)
    db.mirror_kafka(
        om.Kafka(bootstrap_servers=kafka.bootstrap, topics=[TOPIC]), checkpoint=tmp_path / "ckpt"
    ).await_termination(timeout=600)
    om.LocalMirror(db.target.root).run_once()
    source = [line.split("|") for line in pg.sql("SELECT id, v, n FROM chain.t ORDER BY id;").splitlines()]
    mirrored = sorted((r["id"], r["v"], r["n"]) for r in db.read_table("chain.t").collect())
    assert (
        mirrored
        == [(int(i), v, Decimal(n)) for i, v, n in source]
        == [
            (1, "changed", Decimal("1.50")),
            (3, "while down", Decimal("3.00")),
        ]
    )
    assert list(db.describe("chain.t").keys) == ["id"]
