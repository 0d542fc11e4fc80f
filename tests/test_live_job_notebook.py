"""The live job notebook (``notebooks/mirror_database_live.ipynb``) as a pipeline runs it, through the
real chain of ``tests/streaming/test_mirror_plan.py``: PostgreSQL with logical decoding, Kafka
Connect with Debezium's connector configured with what the notebook's first run printed
(``PRINT_CONNECTOR``: ``db.cdc_connector(plan)`` and ``om.worker_settings``), the session's broker.
The first run prints the configuration and ends (no slot yet); then two scheduled runs with
``available_now``, writes before each. The mirrored tables must equal PostgreSQL's (the keyless one
as a multiset), and the password, which only the environment holds, appear in no output.

The kernel is ``tests/test_job_notebooks.py``'s, started with the password in its environment
(``PASSWORD_ENV``), as a Fabric environment's variable would hold it; only that kernel runs Spark.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable
from jupyter_client.manager import KernelManager

import openmirror_nb as om
from tests.kafka_connect import KafkaConnect, missing
from tests.sources.postgres import PASSWORD, SUPERUSER, start_server
from tests.test_job_notebooks import run_job

pytestmark = [pytest.mark.spark, pytest.mark.skipif(missing() is not None, reason=str(missing()))]
ENV = "OPENMIRROR_TEST_PG_PASSWORD"
SCHEMA = """
CREATE SCHEMA shop;
CREATE TABLE shop.orders (id int PRIMARY KEY, customer text NOT NULL, total numeric(10,2));
CREATE TABLE shop.events (at int NOT NULL, what text);
CREATE TABLE shop.openmirror_heartbeat (id int PRIMARY KEY, ts timestamptz NOT NULL);
INSERT INTO shop.orders SELECT i, 'c' || (i % 7), i * 1.25 FROM generate_series(1, 50) AS i;
INSERT INTO shop.events VALUES (1, 'opened'), (1, 'opened'), (2, 'paid');
"""
# Changes between the slot and the first load (in the load and in the stream): 5 updates, 5 deletes
# (each a delete and a tombstone), an insert into the keyless table.
BEFORE_LOAD = (
    "UPDATE shop.orders SET total = 0 WHERE id <= 5; DELETE FROM shop.orders WHERE id > 45;"
    " INSERT INTO shop.events VALUES (3, 'shipped');"
)
# Changes between the two scheduled runs: 2 updates, a delete (2 messages), an insert, a primary-key
# change (a delete, its tombstone and a create), two inserts into the keyless table.
BETWEEN_RUNS = (
    "UPDATE shop.orders SET customer = 'changed' WHERE id IN (1, 2); DELETE FROM shop.orders WHERE id = 3;"
    " INSERT INTO shop.orders VALUES (100, 'new', 9.99); UPDATE shop.orders SET id = 200 WHERE id = 4;"
    " INSERT INTO shop.events VALUES (4, 'refunded'), (4, 'refunded');"
)
MESSAGES = {"shop.orders": 5 + 10 + 2 + 2 + 1 + 3, "shop.events": 3 + 1 + 2}  # after both: in Kafka


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """One Python kernel (``tests/test_job_notebooks.py``'s), with the password in its environment."""
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(tmp_path_factory.mktemp("kernel")), env={**os.environ, ENV: PASSWORD})
    yield manager
    manager.shutdown_kernel(now=True)


@pytest.fixture
def pg():
    server = start_server(logical=True)
    server.sql(SCHEMA)
    yield server
    server.stop()


def _pg_rows(pg, query: str) -> list[tuple[str, ...]]:
    out = pg.sql(f"COPY ({query}) TO STDOUT WITH (FORMAT csv, NULL '')")
    return [tuple(line.split(",")) for line in out.splitlines() if line]


def _mirrored(db_path: Path, table: str, columns: list[str]) -> list[tuple[str, ...]]:
    rows = DeltaTable(str(db_path / "Tables" / Path(*table.split(".")))).to_pyarrow_table().to_pylist()
    return [tuple("" if r[c] is None else str(r[c]) for c in columns) for r in rows]


def _wait_for_messages(kafka, prefix: str, connect: KafkaConnect, timeout: float = 90.0) -> None:
    """Wait until the connector has sent every change made so far (``MESSAGES`` per topic)."""
    deadline = time.monotonic() + timeout
    while True:
        found = {}
        for table in MESSAGES:
            try:
                found[table] = sum(kafka.end_offsets(f"{prefix}.{table}").values())
            except Exception:  # not made yet
                found[table] = 0
        if all(found[t] >= n for t, n in MESSAGES.items()):
            return
        assert connect.running, "Kafka Connect exited"
        assert time.monotonic() < deadline, f"messages in Kafka {found}, want {MESSAGES}"
        time.sleep(0.5)


def test_the_live_job_prints_the_connector_then_mirrors_postgresql(kafka, kernel, pg, tmp_path):
    prefix = f"job{uuid.uuid4().hex[:6]}"
    db_path = tmp_path / "db"
    params = dict(
        TARGET=str(db_path), SOURCE_URL=pg.url, SOURCE_USER=SUPERUSER, PASSWORD_ENV=ENV, SOURCE_SCHEMA="shop",
        KAFKA_BOOTSTRAP=kafka.bootstrap, TOPIC_PREFIX=prefix, SLOT=prefix, PUBLICATION=prefix,
        HEARTBEAT_TABLE="shop.openmirror_heartbeat", CHECKPOINT=str(tmp_path / "ckpt"), TRIGGER="available_now",
    )  # fmt: skip
    printed = run_job(kernel, "mirror_database_live", **params, PRINT_CONNECTOR=True)
    outputs = [printed]
    assert f"Replication slot {prefix} does not exist yet" in printed, printed
    assert "Warning: Table shop.events " in printed, printed  # no replica identity: printed, not failed
    config = json.JSONDecoder().raw_decode(printed[printed.index('{\n  "name"') :])[0]
    assert config["config"]["database.password"] == "${env:" + ENV + "}"
    worker = om.worker_settings(config)
    assert worker and all(f"\n{k}={v}\n" in printed for k, v in worker.items()), printed
    connect = KafkaConnect(
        kafka.bootstrap, pg, name=config["name"], slot=config["config"]["slot.name"], topic_prefix=prefix,
        settings=config["config"], worker=worker, env={ENV: PASSWORD},
    )  # fmt: skip
    with connect:
        connect.wait_streaming()
        pg.sql(BEFORE_LOAD)
        printed = run_job(kernel, "mirror_database_live", **params)
        outputs.append(printed)
        assert "  ok        shop.orders (orders)" in printed, printed  # the first load, over JDBC
        assert "  unchanged shop.events (events)" in printed, printed  # Debezium's snapshot loads it
        assert "\nok: 2 tables" in printed, printed
        pg.sql(BETWEEN_RUNS)
        _wait_for_messages(kafka, prefix, connect)
        printed = run_job(kernel, "mirror_database_live", **params)
        outputs.append(printed)
        assert "PlanRun of 2 tables" in printed and "2 unchanged" in printed, printed  # loaded once only
        assert f"{prefix}.shop.orders -> shop.orders: applied to commit" in printed, printed
        assert f"replication slot {prefix} retains" in printed, printed  # db.status()'s note
        assert "\nok: 2 tables" in printed, printed
        assert PASSWORD not in connect.log.read_text(encoding="utf-8", errors="replace")
    om.LocalMirror(db_path).run_once()

    orders = _pg_rows(pg, "SELECT id, customer, total FROM shop.orders")
    assert sorted(_mirrored(db_path, "shop.orders", ["id", "customer", "total"])) == sorted(orders)
    assert len(orders) == 45 - 1 + 1 and ("200", "c4", "0.00") in orders
    events = _pg_rows(pg, "SELECT at, what FROM shop.events")
    assert Counter(_mirrored(db_path, "shop.events", ["at", "what"])) == Counter(events)
    assert sum(Counter(events).values()) == 6
    assert not [i for i, out in enumerate(outputs) if PASSWORD in out]  # every run's outputs
