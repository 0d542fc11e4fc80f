"""``db.mirror_plan`` (issue 42): a PostgreSQL database from nothing to live, through the real
chain: PostgreSQL with logical decoding, Kafka Connect with Debezium's connector configured by
``db.cdc_connector``, the session's broker, the stream. The source is written to throughout: before
the connector, between the slot and the first loads, while the stream runs. After the drain (the
applied position past ``pg_current_wal_lsn()`` read once the writes stopped), every table equals
PostgreSQL, the keyless one as a multiset. The stream's files carry their changes' commit times,
Kafka times and the server's measured clock skew (``_openmirror/freshness.json``), and each batch
records how far it read the source (``_openmirror/streams/<query>.freshness.json``)."""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from decimal import Decimal

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone.freshness_log import FileFreshness, read_log
from openmirror_nb._core.landing_zone.stream_freshness import read_query
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import TableRef
from tests.kafka_connect import KafkaConnect, missing
from tests.sources.postgres import PASSWORD, SUPERUSER, start_server

pytestmark = [pytest.mark.spark, pytest.mark.skipif(missing() is not None, reason=str(missing()))]
ENV = "OPENMIRROR_TEST_PG_PASSWORD"
SCHEMA = """
CREATE SCHEMA shop;
CREATE TABLE shop.orders (id int PRIMARY KEY, customer text NOT NULL, total numeric(10,2));
CREATE TABLE shop.customers (code text PRIMARY KEY, name text);
CREATE TABLE shop.events (at int NOT NULL, what text);
ALTER TABLE shop.events REPLICA IDENTITY FULL;
CREATE TABLE shop.openmirror_heartbeat (id int PRIMARY KEY, ts timestamptz NOT NULL);
INSERT INTO shop.orders SELECT i, 'c' || (i % 7), i * 1.25 FROM generate_series(1, 200) AS i;
INSERT INTO shop.customers VALUES ('a', 'Ada'), ('b', 'Grace');
INSERT INTO shop.events VALUES (1, 'opened'), (1, 'opened'), (2, 'paid');
"""


@pytest.fixture
def pg():
    server = start_server(logical=True)
    server.sql(SCHEMA)
    yield server
    server.stop()


def _lsn(text: str) -> int:
    high, low = text.strip().split("/")
    return (int(high, 16) << 32) | int(low, 16)


def _pg_rows(pg, query: str) -> list[tuple[str, ...]]:
    out = pg.sql(f"COPY ({query}) TO STDOUT WITH (FORMAT csv, NULL '')")
    return [tuple(line.split(",")) for line in out.splitlines() if line]


def _mirrored(db, table: str, columns: list[str]) -> list[tuple[str, ...]]:
    def text(value):
        return "" if value is None else str(value)

    return [tuple(text(r[c]) for c in columns) for r in db.read_table(table).collect()]


def test_a_database_goes_from_nothing_to_live_and_equals_postgresql(spark, kafka, pg, tmp_path):
    db = om.connect(tmp_path / "db", lock_timeout=60)
    source = om.Jdbc(pg.url, user=SUPERUSER, password_env=ENV, schema="shop")
    prefix = f"live{uuid.uuid4().hex[:6]}"
    cdc = om.Cdc(
        topic_prefix=prefix, slot=prefix, publication=prefix, heartbeat_table="shop.openmirror_heartbeat"
    )
    os.environ[ENV] = PASSWORD
    try:
        plan = db.plan_sources(source, target_schema="shop", strategy="cdc", suggest=False)
        by_source = {t.source: t for t in plan.tables}
        assert by_source["events"].keys == () and by_source["orders"].keys == ("id",)
        assert not any(t.problems for t in plan.tables), [t.problems for t in plan.tables]
        check = db.check_cdc(plan, cdc=cdc)
        assert check.problems == () and not check.slot_exists
        with pytest.raises(om.SourceError, match=rf"Replication slot {prefix} does not exist yet"):
            db.mirror_plan(
                plan, kafka=om.Kafka(bootstrap_servers=kafka.bootstrap), checkpoint=tmp_path / "c", cdc=cdc
            )

        config = db.cdc_connector(plan, cdc=cdc)
        assert PASSWORD not in str(config) and config["config"]["database.password"] == "${env:" + ENV + "}"
        connect = KafkaConnect(
            kafka.bootstrap, pg, name=cdc.connector_name, slot=cdc.slot, topic_prefix=cdc.topic_prefix,
            # keyed tables over several partitions (positions are per partition); no Connect crash
            # here, so the keyless table's three partitions cannot receive a copy elsewhere
            settings={**config["config"], "topic.creation.default.partitions": 3},
            worker=om.worker_settings(config), env={ENV: PASSWORD},
        )  # fmt: skip
        with connect:
            connect.wait_streaming()
            # changes after the slot, before the first load: in the load and in the stream
            pg.sql(
                "UPDATE shop.orders SET total = 0 WHERE id <= 10; DELETE FROM shop.orders WHERE id > 190;"
                " INSERT INTO shop.events VALUES (3, 'shipped');"
            )
            live = _pass(db, plan, kafka, tmp_path, cdc)
            # the heartbeat table is the connector's: not mirrored; Debezium's snapshot loads events
            assert {r.table: r.status for r in live.loaded.tables} == {
                "shop.orders": "ok",
                "shop.customers": "ok",
                "shop.events": "unchanged",
            }
            # while live: a primary-key change, deletes, inserts, a new customer
            pg.sql(
                "UPDATE shop.orders SET id = 1000 WHERE id = 5; DELETE FROM shop.orders WHERE id = 6;"
                " INSERT INTO shop.orders VALUES (2000, 'new', 9.99); UPDATE shop.customers SET name = NULL"
                " WHERE code = 'a'; INSERT INTO shop.customers VALUES ('c', 'Lin');"
                " INSERT INTO shop.events VALUES (4, 'refunded'), (4, 'refunded');"
            )
            live = _drain(db, pg, plan, kafka, tmp_path, cdc)
            assert all(r.status == "unchanged" for r in live.loaded.tables)  # loaded once only
            _assert_freshness_recorded(db, live)
            assert PASSWORD not in connect.log.read_text(encoding="utf-8", errors="replace")

            # the source's schema changes: an added column flows; a type change stops its table only
            pg.sql(
                "ALTER TABLE shop.customers ADD COLUMN tier int; UPDATE shop.customers SET tier = 2 WHERE code = 'b';"
                " ALTER TABLE shop.orders ALTER COLUMN total TYPE numeric(12,3);"
                " UPDATE shop.orders SET total = 1.125 WHERE id = 1; INSERT INTO shop.events VALUES (5, 'later');"
            )
            _drain(db, pg, plan, kafka, tmp_path, cdc)
            stopped = db.status()["shop.orders"]
            assert stopped.health == "blocked" and stopped.held_events >= 1, stopped.advice
            assert "changed type" in stopped.advice[0]
            assert db.status()["shop.customers"].held_events == 0
            # the wizard's reseed from a full copy read over JDBC; the next batch applies the kept events
            copy = source.read("orders")
            db.apply_schema_change(db.plan_schema_change("shop.orders", copy), copy, confirm="shop.orders")
            pg.sql("UPDATE shop.orders SET total = 2.5 WHERE id = 2;")
            _drain(db, pg, plan, kafka, tmp_path, cdc)
            assert db.status()["shop.orders"].held_events == 0
    finally:
        os.environ.pop(ENV, None)
    om.LocalMirror(db.target.root).run_once()

    assert db.status()["shop.orders"].health == "ok"
    orders = _pg_rows(pg, "SELECT id, customer, total FROM shop.orders")
    assert sorted(_mirrored(db, "shop.orders", ["id", "customer", "total"])) == sorted(orders)
    assert len(orders) == 190
    customers = _pg_rows(pg, "SELECT code, name, tier FROM shop.customers")
    assert sorted(_mirrored(db, "shop.customers", ["code", "name", "tier"])) == sorted(customers)
    events = _pg_rows(pg, "SELECT at, what FROM shop.events")
    assert Counter(_mirrored(db, "shop.events", ["at", "what"])) == Counter(events)
    assert sum(Counter(events).values()) == 7
    assert Decimal(db.read_table("shop.orders").where("id = 2000").first()["total"]) == Decimal("9.990")
    assert Decimal(db.read_table("shop.orders").where("id = 1").first()["total"]) == Decimal("1.125")
    assert db.describe("shop.orders").source_position is not None
    assert any(n.startswith(f"replication slot {prefix} retains ") for n in db.status().notes)
    for table in ("shop.customers", "shop.events"):  # applied by the local mirror now
        fresh = db.status()[table].freshness
        assert fresh is not None and fresh.source == "commit" and fresh.skew is not None, fresh
        assert fresh.published.p50 is not None and fresh.published.p50 > 0, fresh
        assert fresh.applied.p50 is not None and fresh.applied.p50 >= fresh.published.p50, fresh
        # the heartbeat's batch marks keep it young; a bound, not a figure: the machine is shared
        assert fresh.age is not None and 0 <= fresh.age < 600, fresh


def _drain(db, pg, plan, kafka, tmp_path, cdc):
    """Passes of the stream until its applied position is past the WAL's end read now (a bounded
    wait): the heartbeat table's write, as heartbeat.action.query makes it, is an event past it."""
    target = _lsn(pg.sql("SELECT pg_current_wal_insert_lsn();"))
    deadline = time.monotonic() + 120
    drained = None
    while drained is None or drained < target:
        assert time.monotonic() < deadline, f"not drained: applied {drained}, target {target}"
        pg.sql(
            "INSERT INTO shop.openmirror_heartbeat VALUES (1, clock_timestamp())"
            " ON CONFLICT (id) DO UPDATE SET ts = excluded.ts;"
        )
        live = _pass(db, plan, kafka, tmp_path, cdc)
        drained = live.applied_lsn()
    return live


def _pass(db, plan, kafka, tmp_path, cdc):
    """One ``available_now`` pass of the live mirror, on the test's checkpoint."""
    live = db.mirror_plan(
        plan, kafka=om.Kafka(bootstrap_servers=kafka.bootstrap), checkpoint=tmp_path / "ckpt", cdc=cdc
    )
    live.await_termination(timeout=600)
    return live


def _stream_files(db, table: str) -> list[FileFreshness]:
    """The table's published files whose summaries carry commit times (the stream's; a first
    load's carry its read time)."""
    found = read_log(db.storage, TableFolder(db.storage, TableRef.parse(table)).internal)
    return [f for f in found.files if f.source is not None and f.source.kind == "commit"]


def _assert_freshness_recorded(db, live):
    """Each table's stream files: commit times in order, on the measured clock (this machine's:
    skew about 0), reaching Kafka after the commit and published after that; and the batch marks:
    the newest commit seen (the heartbeat table's among them) and every table's last file."""
    newest = 0.0
    for table in ("shop.orders", "shop.customers", "shop.events"):
        files = _stream_files(db, table)
        assert files, f"{table}: no published file carries commit times"
        for f in files:
            s = f.source
            assert s is not None and s.oldest <= s.newest, f
            assert s.topic_oldest is not None and s.topic_newest is not None, f
            assert s.topic_oldest >= s.local(s.oldest) - 1 and s.topic_newest >= s.local(s.newest) - 1, f
            assert s.skew is not None and s.skew_error is not None and s.skew_error < 0.5, f
            assert abs(s.skew) <= s.skew_error + 1, f  # one machine: the same clock
            assert s.topic_newest - 1 <= f.published <= time.time(), f
            newest = max(newest, s.newest)
    marks = read_query(db.storage, str(live.stream.query.id))
    assert marks, "no batch mark under _openmirror/streams/"
    last = marks[-1]
    assert last.source.kind == "commit" and last.source.skew is not None, last
    assert last.source.newest >= newest - 1, last  # the heartbeat's commit is the newest
    for table in ("shop.orders", "shop.customers", "shop.events"):
        state = TableFolder(db.storage, TableRef.parse(table)).read_state()
        assert state is not None and last.tables[table] == state.last_sequence_number, (table, last)
