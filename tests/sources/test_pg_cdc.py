"""The database checked before Debezium captures it (``pg_cdc``), against a real PostgreSQL: each test
flips one setting and meets its one line; the connector's configuration, which holds no password;
and the whole handover with real Kafka Connect and Debezium: the slot Debezium makes is seen, and a
change made in PostgreSQL arrives on ``Cdc.topic``."""

from __future__ import annotations

import json
import time

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.sources.pg_cdc import (
    Cdc,
    CdcTable,
    check_cdc,
    connector_config,
    retained_wal,
    size_text,
    worker_settings,
)
from openmirror_nb._core.sources.pg_cdc_problems import slot_problems
from tests.sources.postgres import PASSWORD, SUPERUSER, missing, start_server

pytestmark = [pytest.mark.spark, pytest.mark.skipif(missing() is not None, reason=str(missing()))]
ENV = "CDC_PG_PASSWORD"
READER = "cdc_reader"  # a login that is neither superuser nor any table's owner
SCHEMA_SQL = f"""
CREATE SCHEMA cdc;
CREATE TABLE cdc.orders (id int PRIMARY KEY, total numeric(10,2), placed date);
CREATE TABLE cdc.customers (id int PRIMARY KEY, code int NOT NULL UNIQUE, city int);
ALTER TABLE cdc.customers REPLICA IDENTITY FULL;
CREATE TABLE cdc.notes (id int PRIMARY KEY, body text);
ALTER TABLE cdc.notes REPLICA IDENTITY FULL;
CREATE TABLE cdc.events (at timestamptz, what int);
ALTER TABLE cdc.events REPLICA IDENTITY FULL;
CREATE TABLE cdc.heartbeat (id int PRIMARY KEY, ts timestamptz NOT NULL);
INSERT INTO cdc.orders VALUES (1, 9.50, '2026-01-02');
INSERT INTO cdc.events VALUES ('2026-01-02 10:00+00', 7);
CREATE ROLE {READER} LOGIN PASSWORD '{PASSWORD}';
GRANT USAGE ON SCHEMA cdc TO {READER};
"""
TABLES = (
    CdcTable("cdc", "orders", ("id",), ("id",)),
    CdcTable("cdc", "customers", ("code",), ("id",)),  # mirrored by another key: FULL identity
    CdcTable("cdc", "notes", ("id",), ("id",)),  # a text column: FULL identity, or a warning
    CdcTable("cdc", "events", (), ()),  # keyless, insert-only: in Debezium's snapshot
)
CDC = Cdc(heartbeat_table="cdc.heartbeat")
ALL = "cdc.orders, cdc.customers, cdc.notes, cdc.events, cdc.heartbeat"


@pytest.fixture(scope="module")
def pg():
    server = start_server(logical=True)
    server.sql(SCHEMA_SQL)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def source(pg):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, PASSWORD)
        yield om.Jdbc(pg.url, user=SUPERUSER, password_env=ENV)


@pytest.fixture(scope="module")
def reader(pg):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, PASSWORD)
        yield om.Jdbc(pg.url, user=READER, password_env=ENV)


def _problems(spark, source, tables=TABLES, cdc=CDC):
    found = check_cdc(spark, source, tables, cdc)
    assert PASSWORD not in repr(found)
    return found


def test_a_correct_setup_has_no_problem_and_no_warning(spark, source):
    found = _problems(spark, source)
    assert (found.problems, found.warnings, found.slot_exists, found.retained_wal_bytes) == (
        (),
        (),
        False,
        None,
    )
    assert retained_wal(spark, source, CDC.slot) is None


def test_wal_level_replica_is_one_problem_with_its_fix(spark):
    server = start_server()  # wal_level=replica, PostgreSQL's default
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(ENV, PASSWORD)
            found = check_cdc(spark, om.Jdbc(server.url, user=SUPERUSER, password_env=ENV), [], Cdc())
    finally:
        server.stop()
    assert found.problems == (
        "wal_level is replica, not logical: set wal_level = logical in postgresql.conf (on Azure Database for "
        "PostgreSQL, the server parameter wal_level), then restart the server.",
    )


def test_a_user_without_replication_is_one_problem(spark, pg, reader):
    # The publication exists with every table, so the reader need not own them to make it.
    pg.sql(f"CREATE PUBLICATION openmirror FOR TABLE {ALL};")
    try:
        found = _problems(spark, reader)
    finally:
        pg.sql("DROP PUBLICATION openmirror;")
    assert found.problems == (
        f"User {READER} may not read a replication slot (neither REPLICATION nor superuser): run ALTER ROLE "
        f'"{READER}" WITH REPLICATION; as a superuser (on Azure, as the server\'s admin user).',
    )


def test_a_publication_the_user_cannot_create_is_one_problem(spark, pg, reader):
    pg.sql(f"ALTER ROLE {READER} WITH REPLICATION;")
    try:
        found = _problems(spark, reader)
    finally:
        pg.sql(f"ALTER ROLE {READER} WITH NOREPLICATION;")
    assert found.problems == (
        f"Publication openmirror does not exist and user {READER} cannot create it (it does not own {ALL}): "
        f"have the tables' owner run CREATE PUBLICATION openmirror FOR TABLE {ALL};",
    )


def test_a_publication_without_a_table_or_an_operation_is_one_problem_each(spark, pg, source):
    pg.sql("CREATE PUBLICATION openmirror FOR TABLE cdc.orders, cdc.customers, cdc.notes, cdc.events;")
    try:
        left_out = _problems(spark, source).problems
        pg.sql(
            "ALTER PUBLICATION openmirror ADD TABLE cdc.heartbeat;"
            " ALTER PUBLICATION openmirror SET (publish = 'insert, update');"
        )
        no_delete = _problems(spark, source).problems
    finally:
        pg.sql("DROP PUBLICATION openmirror;")
    assert left_out == (
        "Publication openmirror does not include cdc.heartbeat: run ALTER PUBLICATION openmirror ADD TABLE "
        "cdc.heartbeat;",
    )
    assert no_delete == (
        "Publication openmirror does not publish delete: run ALTER PUBLICATION openmirror SET (publish = "
        "'insert, update, delete');",
    )


def test_no_free_slot_is_one_problem(spark, pg, source):
    taken = [f"taken_{i}" for i in range(10)]  # max_replication_slots=10 in the test server
    pg.sql("".join(f"SELECT pg_create_physical_replication_slot('{name}');" for name in taken))
    try:
        found = _problems(spark, source)
    finally:
        pg.sql("".join(f"SELECT pg_drop_replication_slot('{name}');" for name in taken))
    assert found.problems == (
        "Replication slot openmirror does not exist and no slot is free (10 of max_replication_slots = 10 "
        "taken): drop an unused one (SELECT pg_drop_replication_slot('<name>');) or raise max_replication_slots "
        "in postgresql.conf, then restart the server.",
    )


def test_no_wal_sender_is_one_problem():
    # max_wal_senders needs a restart to change: the rule is checked on the values the server gives.
    assert slot_problems(CDC, None, "erp", 10, 0, 0) == [
        "max_wal_senders is 0, so the connector cannot stream: set max_wal_senders = 10 in postgresql.conf, "
        "then restart the server."
    ]


def test_a_slot_of_another_kind_is_one_problem_and_a_pgoutput_slot_is_used(spark, pg, source):
    pg.sql("SELECT pg_create_physical_replication_slot('openmirror');")
    try:
        physical = _problems(spark, source)
    finally:
        pg.sql("SELECT pg_drop_replication_slot('openmirror');")
    assert physical.problems == (
        "Replication slot openmirror is a physical slot, not a logical pgoutput slot of database erp: drop it if "
        "nothing else reads it (SELECT pg_drop_replication_slot('openmirror');) or use another, om.Cdc(slot='...').",
    )
    assert physical.slot_exists and physical.retained_wal_bytes is None  # no position yet

    pg.sql("SELECT pg_create_logical_replication_slot('openmirror', 'pgoutput');")
    try:
        pg.sql(
            "INSERT INTO cdc.notes VALUES (100, repeat('x', 100000)); DELETE FROM cdc.notes WHERE id = 100;"
        )
        logical = _problems(spark, source, cdc=Cdc(heartbeat_table="cdc.heartbeat", slot_wal_warning_bytes=1))
        retained = retained_wal(spark, source, "openmirror")
    finally:
        pg.sql("SELECT pg_drop_replication_slot('openmirror');")
    assert logical.problems == () and logical.slot_exists
    held = logical.retained_wal_bytes
    assert held is not None and held > 0 and retained is not None and retained >= held
    assert logical.warnings == (
        f"Replication slot openmirror retains {size_text(held)} of WAL (over 1 bytes), which fills the server's "
        "disk: start the connector so it reads the slot, or drop the slot if it is abandoned: "
        "SELECT pg_drop_replication_slot('openmirror');",
    )


def test_keys_that_are_not_the_primary_key_need_full_replica_identity(spark, pg, source):
    pg.sql("ALTER TABLE cdc.customers REPLICA IDENTITY DEFAULT;")
    try:
        found = _problems(spark, source)
    finally:
        pg.sql("ALTER TABLE cdc.customers REPLICA IDENTITY FULL;")
    assert found.problems == (
        "Table cdc.customers is mirrored with keys (code), not its primary key (id), and its replica identity is "
        "DEFAULT, so an update's or delete's event may lack them: run ALTER TABLE cdc.customers REPLICA IDENTITY FULL;",
    )
    assert found.warnings == ()


def test_a_toastable_column_without_full_identity_is_a_warning(spark, pg, source):
    pg.sql("ALTER TABLE cdc.notes REPLICA IDENTITY DEFAULT;")
    try:
        found = _problems(spark, source)
    finally:
        pg.sql("ALTER TABLE cdc.notes REPLICA IDENTITY FULL;")
    assert found.problems == ()
    assert found.warnings == (
        "Table cdc.notes has columns PostgreSQL may store out of line (body) and replica identity DEFAULT: an "
        "update that leaves such a value unchanged sends Debezium's __debezium_unavailable_value, which stops the "
        "table's batches; run ALTER TABLE cdc.notes REPLICA IDENTITY FULL;",
    )


def test_a_keyless_table_without_any_identity_is_a_warning(spark, pg, source):
    pg.sql("ALTER TABLE cdc.events REPLICA IDENTITY DEFAULT;")
    try:
        found = _problems(spark, source)
    finally:
        pg.sql("ALTER TABLE cdc.events REPLICA IDENTITY FULL;")
    assert found.problems == ()
    assert found.warnings == (
        "Table cdc.events has no primary key nor replica identity: in publication openmirror its UPDATE and "
        "DELETE fail in PostgreSQL; if anything updates or deletes its rows, run ALTER TABLE cdc.events "
        "REPLICA IDENTITY FULL;",
    )


def test_heartbeats(spark, source):
    assert _problems(spark, source, cdc=Cdc(heartbeat_table="cdc.heartbeat", heartbeat_ms=0)).problems == (
        "Cdc(heartbeat_ms=0) sends no heartbeats, so the slot keeps WAL while the captured tables are idle: "
        "give heartbeat_ms > 0, e.g. om.Cdc(heartbeat_ms=10000).",
    )
    none = _problems(spark, source, cdc=Cdc())
    assert none.problems == ()
    assert none.warnings == (
        "No heartbeat table: while the captured tables are idle and the server writes elsewhere, slot openmirror "
        "holds WAL; run CREATE TABLE cdc.openmirror_heartbeat (id int PRIMARY KEY, ts timestamptz NOT NULL); "
        "and give om.Cdc(heartbeat_table='cdc.openmirror_heartbeat').",
    )
    assert _problems(spark, source, cdc=Cdc(heartbeat_table="cdc.beat")).problems == (
        "Heartbeat table cdc.beat does not exist: run CREATE TABLE cdc.beat (id int PRIMARY KEY, ts timestamptz "
        "NOT NULL);",
    )


def test_tables_missing_from_the_database_are_one_problem(spark, source):
    tables = (*TABLES, CdcTable("cdc", "gone", ("id",), ("id",)), CdcTable("cdc", "Odd Name", (), ()))
    assert _problems(spark, source, tables).problems == (
        "Tables not found in database erp: cdc.gone, cdc.Odd Name; create them, or plan again "
        "(db.plan_sources) without them.",
    )


def test_cdc_refuses_names_postgresql_debezium_or_kafka_would_not_take():
    with pytest.raises(ConfigError, match=r"^Cdc\(slot='Mirror-1'\) is not a replication slot name"):
        Cdc(slot="Mirror-1")
    with pytest.raises(ConfigError, match=r"^Cdc\(topic_prefix='a b'\) is not a Kafka topic prefix"):
        Cdc(topic_prefix="a b")
    with pytest.raises(ConfigError, match=r"^Cdc\(heartbeat_table='beat'\) is not 'schema.table'"):
        Cdc(heartbeat_table="beat")
    with pytest.raises(ConfigError, match=r"^Cdc\(publication='Pub'\) is not a plain PostgreSQL name"):
        Cdc(publication="Pub")
    assert Cdc(topic_prefix="erp").topic("inv", "order lines") == "erp.inv.order_lines"


def test_the_connector_config_holds_references_never_the_password(source):
    made = connector_config(source, TABLES, CDC)
    config = made["config"]
    assert made["name"] == config["name"] == "openmirror-cdc"
    assert PASSWORD not in json.dumps(made)
    assert config["database.password"] == "${env:CDC_PG_PASSWORD}"
    assert worker_settings(made) == {
        "config.providers": "env",
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    }
    host, port = source.url.split("//")[1].split("/")[0].split(":")
    assert {
        k: config[k] for k in ("database.hostname", "database.port", "database.dbname", "database.user")
    } == {
        "database.hostname": host,
        "database.port": port,
        "database.dbname": "erp",
        "database.user": SUPERUSER,
    }
    assert config["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert (config["plugin.name"], config["slot.name"], config["publication.name"]) == (
        "pgoutput",
        "openmirror",
        "openmirror",
    )
    assert config["publication.autocreate.mode"] == "filtered"
    assert config["table.include.list"] == (
        r"cdc\.orders,cdc\.customers,cdc\.notes,cdc\.events,cdc\.heartbeat"
    )
    assert (config["snapshot.mode"], config["snapshot.include.collection.list"]) == (
        "initial",
        r"cdc\.events",
    )
    assert config["message.key.columns"] == r"cdc\.customers:code"
    assert config["heartbeat.action.query"] == (
        "INSERT INTO cdc.heartbeat (id, ts) VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET ts = EXCLUDED.ts"
    )
    assert "database.sslmode" not in config
    fixed = {
        "decimal.handling.mode": "precise",
        "time.precision.mode": "adaptive",
        "tombstones.on.delete": "true",
        "skipped.operations": "t",
        "provide.transaction.metadata": "false",
        "heartbeat.interval.ms": "10000",
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
    }
    assert {k: config[k] for k in fixed} == fixed
    assert all(isinstance(v, str) for v in config.values())


def test_the_connector_config_of_keyed_tables_and_other_password_references():
    keyed = [CdcTable("public", "orders", ("id",), ("id",))]
    ssl = om.Jdbc("jdbc:postgresql://db.example.com/erp?sslmode=require", user="etl", password=PASSWORD)
    config = connector_config(ssl, keyed, Cdc())["config"]
    assert PASSWORD not in json.dumps(config)
    assert config["database.password"] == "${file:/etc/kafka-connect/openmirror.properties:password}"
    assert (config["database.port"], config["database.sslmode"], config["snapshot.mode"]) == (
        "5432",
        "require",
        "no_data",
    )
    assert "snapshot.include.collection.list" not in config and "message.key.columns" not in config
    assert "heartbeat.action.query" not in config
    assert worker_settings(config)["config.providers"] == "file"
    ref = connector_config(ssl, keyed, Cdc(), password_ref="${vault:pg:password}")["config"]
    assert ref["database.password"] == "${vault:pg:password}" and worker_settings(ref) == {}
    with pytest.raises(ConfigError, match=r"^password_ref is not a Kafka config provider reference"):
        connector_config(ssl, keyed, Cdc(), password_ref=PASSWORD)


def test_debezium_makes_the_slot_and_a_change_arrives_on_the_topic(spark, kafka, pg, source):
    """Last: Debezium's slot and publication stay on the module's server."""
    from tests.kafka_connect import KafkaConnect
    from tests.kafka_connect import missing as connect_missing

    if connect_missing():
        pytest.skip(str(connect_missing()))
    cdc = Cdc(topic_prefix="omcdc", heartbeat_table="cdc.heartbeat", heartbeat_ms=1000)
    made = connector_config(source, TABLES, cdc)
    assert PASSWORD not in json.dumps(made)
    connect = KafkaConnect(
        kafka.bootstrap, pg, name=cdc.connector_name, slot=cdc.slot, topic_prefix=cdc.topic_prefix,
        settings=made["config"], worker=worker_settings(made), env={ENV: PASSWORD},
    )  # fmt: skip
    with connect:
        connect.wait_streaming()
        found = check_cdc(spark, source, TABLES, cdc)
        assert found.problems == () and found.slot_exists and found.retained_wal_bytes is not None
        assert retained_wal(spark, source, cdc.slot) is not None
        pg.sql("INSERT INTO cdc.orders VALUES (2, 20.25, '2026-02-03');")
        orders = _read(kafka, cdc.topic("cdc", "orders"), lambda got: any(k == {"id": 2} for k, _ in got))
        events = _read(kafka, cdc.topic("cdc", "events"), lambda got: len(got) >= 1)
        deadline = time.monotonic() + 30
        while pg.sql("SELECT count(*) FROM cdc.heartbeat;").strip() != "1":  # heartbeat.action.query ran
            assert time.monotonic() < deadline, "no heartbeat written"
            time.sleep(0.2)
        log = connect.log.read_text(encoding="utf-8", errors="replace")
    # The keyed table is not in Debezium's snapshot (the package loads it over JDBC): only the insert.
    assert [(k["id"], v["payload"]["op"]) for k, v in orders] == [(2, "c")]
    assert orders[0][1]["payload"]["after"]["id"] == 2
    assert events[0][1]["payload"]["op"] == "r"  # the keyless table is: its row as a snapshot read
    assert PASSWORD not in log


def _read(kafka, topic, until, timeout=60.0):
    """Every message of ``topic`` from the start, as (key payload or ``None``, value), once ``until``
    holds for them (tombstones left out)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": kafka.bootstrap, "group.id": "pgcdc", "enable.auto.commit": False}
    )
    got: list = []
    deadline = time.monotonic() + timeout
    try:
        while topic not in consumer.list_topics(timeout=10).topics:
            assert time.monotonic() < deadline, f"{topic} never made"
            time.sleep(0.2)
        consumer.assign([TopicPartition(topic, 0, 0)])
        while not until(got):
            assert time.monotonic() < deadline, f"gave up waiting on {topic}; had {got}"
            message = consumer.poll(0.5)
            if message is None or message.error() or message.value() is None:
                continue
            key = json.loads(message.key())["payload"] if message.key() else None
            got.append((key, json.loads(message.value())))
    finally:
        consumer.close()
    return got
