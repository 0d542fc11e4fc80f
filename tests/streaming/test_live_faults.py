"""``db.mirror_plan`` through every fault of issue 42, item 4, in sequence, with ``pgbench``
writing throughout (``tests/cdc_chain.py``): Kafka Connect killed, the broker stopped and started,
the Spark driver killed between two renames of a push (a child process, ``live_child``),
PostgreSQL crashed and started. Then drained (the applied position past the WAL's end read once
pgbench stopped, a marker written after it) and compared: each pgbench table equals PostgreSQL row
for row, ``pgbench_history`` (no key) as a multiset, and the landing zone passes the independent
contract checker. Repeated random faults run in ``scripts/soak`` (``OPENMIRROR_SOAK``)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid

import pytest

import openmirror_nb as om
from tests import cdc_chain
from tests.cdc_chain import MARKER_TABLE, PGBENCH_COLUMNS, PGBENCH_KEYS, Pgbench, missing
from tests.kafka_broker import KafkaBroker
from tests.kafka_connect import KafkaConnect
from tests.reliability.harness import child_env, lzcheck
from tests.sources.postgres import PASSWORD, SUPERUSER, start_server

pytestmark = [pytest.mark.spark, pytest.mark.skipif(missing() is not None, reason=str(missing()))]
ENV = "OPENMIRROR_TEST_PG_PASSWORD"
RATE = 50  # pgbench transactions a second: four events each
BETWEEN = 3.0  # seconds of pgbench between two faults
SETTINGS = {  # as the harness (test_cdc_chain_harness): quicker restarts, a quicker snapshot
    "retriable.restart.connector.wait.ms": 1000,
    "producer.override.linger.ms": 50,
}


@pytest.fixture
def pg():
    server = start_server(logical=True)
    yield server
    server.stop()


FAULTS = ("connect", "broker", "driver", "postgres")  # in CI: each once, in this order


def test_pgbench_through_every_fault_then_every_table_equals_postgresql(spark, pg, tmp_path, monkeypatch):
    _chain(pg, tmp_path, monkeypatch, list(FAULTS))


@pytest.mark.skipif(not os.environ.get("OPENMIRROR_SOAK"), reason="scripts/soak runs it")
def test_random_faults_soak(spark, pg, tmp_path, monkeypatch):
    seed = int(os.environ.get("OPENMIRROR_CDC_SEED") or time.time_ns() % 1_000_000_007)
    count = int(os.environ.get("OPENMIRROR_CDC_FAULTS", "12"))
    rng = random.Random(seed)
    faults = [rng.choice(FAULTS) for _ in range(count)]
    print(f"OPENMIRROR_CDC_SEED={seed}: {faults}", flush=True)
    _chain(pg, tmp_path, monkeypatch, faults, seed=seed)


def _chain(pg, tmp_path, monkeypatch, faults: list[str], seed: int | None = None) -> None:
    monkeypatch.setenv(ENV, PASSWORD)
    bench = Pgbench(pg, tmp_path / "pgbench")
    bench.init(scale=1)
    cdc_chain.create_marker_table(pg)
    cdc_chain.durable_commits(pg)  # what pgbench counts as committed survives the crash below
    db = om.connect(tmp_path / "db", lock_timeout=120)
    plan = db.plan_sources(
        om.Jdbc(pg.url, user=SUPERUSER, password_env=ENV, schema="public"), strategy="cdc", suggest=False
    )
    prefix = f"faults{uuid.uuid4().hex[:6]}"
    cdc = om.Cdc(topic_prefix=prefix, slot=prefix, publication=prefix, heartbeat_table=MARKER_TABLE)
    plan_file = tmp_path / "plan.yaml"
    plan.save(plan_file)
    config = db.cdc_connector(plan, cdc=cdc)
    checkpoint = tmp_path / "ckpt"
    seen: list[str] = [] if seed is None else [f"seed {seed}"]

    def mirror() -> om.LivePlan:
        live = db.mirror_plan(
            plan,
            kafka=om.Kafka(bootstrap_servers=broker.bootstrap),
            checkpoint=checkpoint,
            cdc=cdc,
            progress=False,
        )
        live.await_termination(timeout=600)
        return live

    with KafkaBroker() as broker, KafkaConnect(
        broker.bootstrap, pg, name=cdc.connector_name, slot=cdc.slot, topic_prefix=cdc.topic_prefix,
        settings={**config["config"], **SETTINGS}, worker=om.worker_settings(config), env={ENV: PASSWORD},
    ) as connect:  # fmt: skip
        connect.wait_streaming(120)
        cdc_chain.wait_snapshot_committed(connect)  # a kill during it is a reload (docs/postgres-live.md)
        bench.start(rate=RATE, clients=2)
        time.sleep(BETWEEN)
        first = mirror()
        assert {r.table: r.status for r in first.loaded.tables}["pgbench_accounts"] == "ok"
        for fault in faults:
            seen.append(fault)
            if fault == "connect":  # Kafka Connect killed: it sends again what it had not flushed
                cdc_chain.kill_connect(connect)
            elif fault == "broker":
                cdc_chain.bounce_broker(broker)
            elif fault == "postgres":  # a crash; pgbench's connections end with it
                cdc_chain.restart_postgres(pg, mode="immediate")
                bench.start(rate=RATE, clients=2)
                connect.wait_streaming(120)
            time.sleep(BETWEEN)
            if fault == "driver":  # the Spark driver killed between two renames of a push
                child = subprocess.run(
                    [sys.executable, "-m", "tests.streaming.live_child", str(tmp_path / "db"), str(plan_file),
                     _cdc_json(cdc), broker.bootstrap, str(checkpoint)],
                    env=child_env(OPENMIRROR_CRASH_AT="between_renames", OPENMIRROR_SPARK_JARS=os.environ.get(
                        "OPENMIRROR_SPARK_JARS", ""), **{ENV: PASSWORD}),
                    capture_output=True, timeout=600,
                )  # fmt: skip
                assert child.returncode == -9, child.stdout.decode(errors="replace")[-3000:]
            mirror()  # after a driver kill: the journal finishes the push, Spark replays the batch

        bench.stop()
        target = cdc_chain.lsn(cdc_chain.drain_target(pg))
        deadline = time.monotonic() + 180
        applied = None
        while applied is None or applied < target:  # drained: a bounded wait
            assert time.monotonic() < deadline, (
                f"not drained after {seen}: applied {applied}, target {target}"
            )
            cdc_chain.marker(pg)  # its event is past the target, even once every table is idle
            applied = mirror().applied_lsn()
        mirror()  # and what Connect wrote before the marker's event, to each topic's end
    om.LocalMirror(db.target.root).run_once()

    history = int(pg.sql("SELECT count(*) FROM pgbench_history;"))
    assert history >= bench.transactions > 0
    for table, key in PGBENCH_KEYS.items():
        columns = PGBENCH_COLUMNS[table]
        expected = cdc_chain.pg_rows(pg, table, columns)
        frame = db.read_table(table).selectExpr(*[f"CAST(`{c}` AS STRING) AS `{c}`" for c in columns])
        got = [tuple(r) for r in frame.collect()]
        cdc_chain.assert_same(expected, got, keyed=bool(key), key=len(key) or 1, what=f"{table} after {seen}")
        assert len(lzcheck(db.target.landing_zone, table, columns)) == len(expected)


def _cdc_json(cdc: om.Cdc) -> str:
    import dataclasses
    import json

    return json.dumps(dataclasses.asdict(cdc))
