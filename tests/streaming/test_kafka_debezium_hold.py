"""A schema change stops one table of a Debezium mirror, not the stream (issue 41, item 4).

Replays the recorded ``inv.small`` topic (``tests/data/debezium/README.md``: ``ADD COLUMN w int``,
then ``ALTER COLUMN w TYPE bigint``) beside ``inv.every_type``, in phases, through one checkpoint:
the added column reaches the mirror; the type change stops ``inv.small``, whose later events are
kept and counted in status while ``inv.every_type`` goes on; the schema wizard's reseed loads an
older copy of the source table, and the next batch applies the kept events to it, so the mirror
ends equal to the source."""

from __future__ import annotations

import json
import uuid

import pytest

import openmirror_nb as om
from tests.conftest import tree_hash
from tests.reliability.harness import lzcheck
from tests.streaming.test_kafka_debezium import TYPES, _without_refused, recorded, reference

pytestmark = [pytest.mark.spark]


def _op(message: dict) -> str | None:
    return None if message["value"] is None else json.loads(message["value"])["payload"]["op"]


def _w_type(message: dict) -> str | None:
    """The Connect type of column ``w`` in the message's schema (``None``: no such column)."""
    if message["value"] is None:
        return None
    fields = json.loads(message["value"])["schema"]["fields"]
    after = next(f for f in fields if f["field"] == "after")["fields"]
    return next((f["type"] for f in after if f["field"] == "w"), None)


def _produce(kafka, topic: str, messages: list[dict]) -> None:
    kafka.produce(topic, [(m["key"], _without_refused(m["value"]), 0) for m in messages])


def _run(db, kafka, topics, tmp_path):
    ms = db.mirror_kafka(
        om.Kafka(bootstrap_servers=kafka.bootstrap, topics=topics), checkpoint=tmp_path / "ckpt", types=TYPES
    )
    ms.await_termination(timeout=600)
    om.LocalMirror(db.target.root).run_once()
    return ms


def _rows(db, table: str) -> dict[int, tuple]:
    return {
        r["id"]: (r["v"], r["w"] if "w" in r else None)
        for r in (x.asDict() for x in db.read_table(table).collect())
    }


def test_a_type_change_stops_its_table_keeps_its_events_and_a_reseed_applies_them(spark, kafka, tmp_path):
    db = om.connect(tmp_path / "db", lock_timeout=30)
    topics = recorded("schemas")
    small = [m for m in topics["pg.inv.small"] if _op(m) != "t"]  # a truncate stops a stream by design
    every = topics["pg.inv.every_type"]
    changed = next(i for i, m in enumerate(small) if _w_type(m) == "int64")
    added = next(i for i, m in enumerate(small) if _w_type(m) == "int32")
    later = next(
        i for i, m in enumerate(small) if i > changed and json.loads(m["key"])["payload"]["id"] == 70
    )
    prefix = f"h{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}.inv.small", f"{prefix}.inv.every_type"]
    for name in names:
        kafka.create_topic(name, partitions=1)

    # 1. before the changes, then the added column: both reach the mirror
    _produce(kafka, names[0], small[:added])
    _produce(kafka, names[1], every[:6])
    _run(db, kafka, names, tmp_path)
    _produce(kafka, names[0], small[added:changed])
    _run(db, kafka, names, tmp_path)
    assert _rows(db, "inv.small") == {1: ("one", None), 2: ("TWO", None), 3: ("three", None), 4: ("four", 4)}

    # 2. w becomes bigint: inv.small stops, its events are kept, inv.every_type goes on
    home = db.target.landing_zone / "inv.schema" / "small"
    before = tree_hash(home)
    _produce(kafka, names[0], small[changed:later])
    _produce(kafka, names[1], every[6:])
    _run(db, kafka, names, tmp_path)  # no error: the stream went on
    assert tree_hash(home) == before
    mirrored = sorted(r["id"] for r in db.read_table("inv.every_type").collect())
    assert mirrored == sorted(reference(every)) == [1, 4, 5, 20]
    row = db.status()["inv.small"]
    assert row.health == "blocked" and row.held_events == later - changed
    assert "changed type" in row.advice[0] and "db.apply_schema_change" in row.advice[0]
    assert db.status()["inv.every_type"].held_events == 0

    # 3. more events for the stopped table: kept too, counted
    _produce(kafka, names[0], small[later:])
    _run(db, kafka, names, tmp_path)
    assert tree_hash(home) == before
    assert db.status()["inv.small"].held_events == len(small) - changed

    # 4. the wizard's reseed loads a copy of the source as it was before the last events ...
    copy = reference(small[:later])
    df = spark.createDataFrame(
        [(i, r["v"], r.get("w")) for i, r in sorted(copy.items())], "id INT, v STRING, w BIGINT"
    )
    plan = db.plan_schema_change("inv.small", df)
    assert plan.needs_reseed
    db.apply_schema_change(plan, df, confirm="inv.small", progress=False)
    assert db.status()["inv.small"].held_events == len(small) - changed  # kept until a batch applies them

    # ... and the next batch applies every kept event to it: the mirror equals the source
    _produce(kafka, names[1], every[-1:])  # one more event anywhere starts a batch
    _run(db, kafka, names, tmp_path)
    expected = {i: (r["v"], r.get("w")) for i, r in reference(small).items()}
    assert _rows(db, "inv.small") == expected
    assert db.read_table("inv.small").count() == len(expected)  # applied as upserts: no key twice
    assert expected[5] == ("five", 5_000_000_000) and 50 not in expected and 999 in expected
    row = db.status()["inv.small"]
    assert row.health == "ok" and row.held_events == 0
    assert not (db.target.landing_zone / "_openmirror" / "streams" / "held").exists() or not any(
        (db.target.landing_zone / "_openmirror" / "streams" / "held").rglob("*.json")
    )
    assert sorted(lzcheck(db.target.landing_zone, "inv.small", ("id", "v"))) == sorted(
        (i, v) for i, (v, _) in expected.items()
    )


def test_a_keyless_tables_type_change_stops_the_stream_in_one_line(spark, kafka, tmp_path):
    """A keyless table's kept events could not be applied after a reseed without inserting the
    copy's rows twice: the change stops the batch, and nothing of it is published."""
    db = om.connect(tmp_path / "db", lock_timeout=30)
    creates = [m for m in recorded("schemas")["pg.inv.nokey"] if _op(m) in ("r", "c")]
    changed = json.loads(creates[-1]["value"])
    for part in changed["schema"]["fields"]:
        for field in part.get("fields", []) if part["field"] in ("before", "after") else []:
            if field["field"] == "a":
                field["type"] = "int64"  # as an ALTER COLUMN a TYPE bigint makes Debezium write it
    topic = f"k{uuid.uuid4().hex[:6]}.inv.nokey"
    kafka.create_topic(topic, partitions=1)
    _produce(kafka, topic, creates[:-1])
    _run(db, kafka, [topic], tmp_path)
    before = tree_hash(db.target.landing_zone / "inv.schema")
    _produce(kafka, topic, [{"key": creates[-1]["key"], "value": json.dumps(changed)}])
    with pytest.raises(om.SchemaChangeError) as caught:
        _run(db, kafka, [topic], tmp_path)
    line = str(caught.value)
    assert "changed type" in line and "has no key, so its events cannot wait for the reseed" in line
    assert "\n" not in line
    assert tree_hash(db.target.landing_zone / "inv.schema") == before
