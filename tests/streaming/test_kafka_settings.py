"""``om.Kafka`` and ``om.EventHubs`` as settings (no broker): what they turn into for Spark's Kafka
source, what they refuse, which table each topic names, and that Event Hubs' connection string is
read only when asked and is in no repr, message or saved form."""

from __future__ import annotations

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import scrub, user_line
from openmirror_nb._core.streaming.kafka_failures import kafka_failure
from openmirror_nb._core.streaming.kafka_source import starting_offsets_option
from openmirror_nb._core.streaming.topics import TopicTables, table_of

SECRET = "Zq9Kk2Vr7Wm1Tn4Yp8Hs3Lx6Cb0Fd5Ga=="
CONNECTION = (
    "Endpoint=sb://contoso-events.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
    f"SharedAccessKey={SECRET}"
)


def test_a_broker_subscribes_its_topics_and_keeps_the_options_the_mirror_does_not_own():
    source = om.Kafka(
        bootstrap_servers=["b1:9092", " b2:9092"],
        topics=["erp.sales.orders", "erp.sales.orders", "erp.sales.lines"],
        options={"kafka.security.protocol": "SSL", "includeHeaders": True},
    )
    assert source.topics == ("erp.sales.orders", "erp.sales.lines")
    assert source.read_options() == {
        "kafka.fetch.max.wait.ms": "10",  # a batch's read does not wait at each partition's end
        "kafka.security.protocol": "SSL",
        "includeHeaders": "true",
        "kafka.bootstrap.servers": "b1:9092,b2:9092",
    }
    assert "kafka.security" not in repr(source)  # options may hold credentials
    waits = om.Kafka(bootstrap_servers="b:9092", topics="t.a", options={"kafka.fetch.max.wait.ms": 100})
    assert waits.read_options()["kafka.fetch.max.wait.ms"] == "100"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bootstrap_servers": "broker", "topics": "t.a"}, r"'broker' is not 'host:port'"),
        ({"bootstrap_servers": "b:9092", "topics": ["sales orders"]}, r"'sales orders' is not a Kafka topic"),
        (
            {"bootstrap_servers": "b:9092", "topics": "t.a", "options": {"failOnDataLoss": "false"}},
            r"sets 'failOnDataLoss'.*never skips offsets",
        ),
        (
            {"bootstrap_servers": "b:9092", "topics": "t.a", "options": {"startingOffsets": "latest"}},
            r"use db.mirror_kafka\(starting_offsets=...\)",
        ),
    ],
)
def test_bad_broker_settings_are_refused_naming_the_value_and_the_fix(kwargs, message):
    with pytest.raises(om.ConfigError, match=message):
        om.Kafka(**kwargs)


def test_a_kafka_mirror_without_topics_is_refused(tmp_path):
    # om.Kafka may name none (db.mirror_plan names its own); db.mirror_kafka needs some
    db = om.connect(tmp_path / "db")
    with pytest.raises(om.ConfigError, match=r"topics= is empty; name at least one topic"):
        db.mirror_kafka(om.Kafka(bootstrap_servers="b:9092"), checkpoint=tmp_path / "ckpt")


def test_event_hubs_reads_its_connection_string_when_asked_and_builds_sasl_plain(monkeypatch):
    source = om.EventHubs(
        namespace="contoso-events", topics="erp.sales.orders", connection_string_env="EH_CONN"
    )
    with pytest.raises(
        om.ConfigError, match=r"Environment variable EH_CONN \(connection_string_env\) is not set"
    ):
        source.read_options()
    monkeypatch.setenv("EH_CONN", CONNECTION)
    options = source.read_options()
    assert options["kafka.bootstrap.servers"] == "contoso-events.servicebus.windows.net:9093"
    assert options["kafka.security.protocol"] == "SASL_SSL" and options["kafka.sasl.mechanism"] == "PLAIN"
    assert options["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="$ConnectionString" password="{CONNECTION}";'
    )
    assert "kafkashaded" not in options["kafka.sasl.jaas.config"]
    assert options["kafka.request.timeout.ms"] == "60000"
    assert SECRET not in repr(source) and "EH_CONN" in repr(source)
    host = om.EventHubs(namespace="ns.servicebus.chinacloudapi.cn", topics="a.b", connection_string_env="X")
    assert host.bootstrap_servers == "ns.servicebus.chinacloudapi.cn:9093"


def test_event_hubs_refuses_a_connection_string_given_in_place_of_its_reference(monkeypatch):
    for kwargs in (
        {"connection_string_env": CONNECTION},
        {"connection_string_secret": CONNECTION},
        {},
        {"connection_string_env": "A", "connection_string_secret": "https://kv.vault.azure.net/secrets/eh"},
    ):
        with pytest.raises(om.ConfigError) as caught:
            om.EventHubs(namespace="ns", topics="a.b", **kwargs)
        assert SECRET not in str(caught.value) and "connection_string" in str(caught.value)
    monkeypatch.setenv("EH_CONN", "not a connection string " + SECRET)
    with pytest.raises(
        om.ConfigError, match=r"What EH_CONN holds is not an Event Hubs connection string"
    ) as caught:
        om.EventHubs(namespace="ns", topics="a.b", connection_string_env="EH_CONN").read_options()
    assert SECRET not in str(caught.value)


def test_a_key_vault_connection_string_is_read_in_fabric_only():
    source = om.EventHubs(
        namespace="ns", topics="a.b", connection_string_secret="https://kv.vault.azure.net/secrets/eh-conn"
    )
    with pytest.raises(
        om.ConfigError, match=r"only a Fabric notebook has; elsewhere give it with connection_string_env"
    ):
        source.read_options()


def test_the_key_of_a_connection_string_is_scrubbed_from_any_line():
    assert SECRET not in scrub(f"failed with {CONNECTION}")
    assert "SharedAccessKeyName=RootManageSharedAccessKey" in scrub(CONNECTION)
    assert SECRET not in user_line(RuntimeError(f"connect: {CONNECTION}"))


def test_a_topic_names_its_table_by_its_last_two_parts_or_by_tables():
    assert str(table_of("dbserver1.inventory.customers", None)) == "inventory.customers"
    assert str(table_of("orders", {"orders": "sales.orders"})) == "sales.orders"
    with pytest.raises(
        om.ConfigError, match=r"Topic 'orders' has no '.'.*tables=\{'orders': 'schema.table'\}"
    ):
        table_of("orders", None)
    with pytest.raises(om.ConfigError, match=r"Topic 'lines' is not in tables="):
        table_of("lines", {"orders": "sales.orders"})


def test_a_topics_table_takes_its_declared_schema_types_and_keys_and_one_table_takes_one_topic():
    declared = TopicTables.create(
        tables=None,
        schemas={"Sales.Orders": "id BIGINT"},
        keys={"sales.orders": ["id"]},
        feed=None,
        types={"SALES.lines": {"n": "decimal(38,10)"}},
    )
    route = declared.route("erp.sales.orders", lambda ddl: ddl)
    assert (route.schema, route.keys, route.feed, route.types) == ("id BIGINT", ("id",), None, None)
    # no DDL: Debezium events with schemas carry the columns (a JSON row is refused per batch)
    lines = declared.route("erp.sales.lines", lambda ddl: ddl)
    assert (lines.schema, lines.keys, lines.types) == (None, None, {"n": "decimal(38,10)"})
    with pytest.raises(
        om.ConfigError, match=r"Topics 'a.sales.orders' and 'b.sales.orders' both go to table"
    ):
        declared.routes(["a.sales.orders", "b.sales.orders"], lambda ddl: ddl)
    with pytest.raises(om.ConfigError, match=r"types= of table 'sales.lines' maps columns to types"):
        TopicTables.create(tables=None, schemas=None, keys=None, feed=None, types={"sales.lines": "string"})


def test_starting_offsets_are_earliest_unless_said():
    assert starting_offsets_option(None) == "earliest"
    assert starting_offsets_option("latest") == "latest"
    assert starting_offsets_option({"t.a": {0: 5, 1: -2}}) == '{"t.a": {"0": 5, "1": -2}}'
    with pytest.raises(om.ConfigError, match=r"starting_offsets 'first' is not"):
        starting_offsets_option("first")


def test_offsets_gone_from_a_topic_are_said_in_one_line_with_the_way_on():
    spark_text = (
        "org.apache.spark.sql.kafka010.KafkaIllegalStateException: Some data may have been lost because "
        "they are not available in Kafka any more;\neither the data was aged out by Kafka ...\nReason: Could "
        "not read records in offset [3, 9) for topic partition t.a-0\nwith consumer group spark-kafka-1.\n"
        "\tat org.apache.spark.sql.kafka010.KafkaExceptions$.couldNotReadOffsetRange(KafkaExceptions.scala:101)"
    )
    said = kafka_failure(RuntimeError(spark_text))
    assert isinstance(said, om.SourceError)
    assert str(said).startswith(
        "Offsets this stream's checkpoint needs are gone from Kafka (Could not read records in offset [3, 9) "
        "for topic partition t.a-0: retention removed them"
    )
    assert "nothing was skipped" in str(said) and "starting_offsets=" in str(said) and "\n" not in str(said)
    spark35 = (
        "java.lang.IllegalStateException: Cannot fetch offset 3 (GroupId: spark-kafka-source-1, "
        "TopicPartition: t.a-0). Some data may have been lost because they are not available in Kafka"
    )
    said35 = str(kafka_failure(RuntimeError(spark35)))
    assert "gone from Kafka (offset 3 of topic partition t.a-0: retention" in said35
    assert kafka_failure(RuntimeError("Broker may not be available")) is None
    refused = kafka_failure(
        RuntimeError("SaslAuthenticationException: Authentication failed"), "Event Hubs h:9093"
    )
    assert str(refused).startswith("Event Hubs h:9093 refused the stream's credentials")
