"""The test broker itself (``tests/kafka_broker.py``): the producer puts each message where asked;
Spark's Kafka source reads them all, on the plain listener and, with the connection string, on the
Event Hubs-like SASL_SSL one, which refuses a wrong one; a broker stopped and started again still has
its messages."""

from __future__ import annotations

import pytest

from tests.kafka_broker import CONNECTION_STRING, SASL_USER, STORE_TYPE

TOPIC = "broker-test-orders"  # names of their own: the session's broker is shared
MESSAGES = [
    *((f"k{i}", f"v{i}", i % 3) for i in range(9)),
    (None, b"\x00\xff", 1),  # no key, a value that is no text
    (b"gone", None, 2),  # a tombstone
    ("anywhere", "the partitioner's choice", None),
]
WRONG = CONNECTION_STRING.replace("SharedAccessKey=", "SharedAccessKey=x")


def _bytes(data):
    return data.encode() if isinstance(data, str) else None if data is None else bytes(data)


@pytest.fixture(scope="module")
def orders(kafka):
    """``TOPIC`` with ``MESSAGES``; the (partition, offset) of each."""
    kafka.create_topic(TOPIC, partitions=3)
    return kafka.produce(TOPIC, MESSAGES)


def _expected(placed):
    return sorted((p, o, _bytes(k), _bytes(v)) for (k, v, _), (p, o) in zip(MESSAGES, placed, strict=True))


def _read(spark, bootstrap, topic=TOPIC, **options):
    """Every message of ``topic`` as Spark's Kafka source reads it in a batch: (partition, offset,
    key, value)."""
    reader = (
        spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    )
    for name, value in options.items():
        reader = reader.option(name, value)
    rows = reader.load().select("partition", "offset", "key", "value").collect()
    return sorted((r.partition, r.offset, _bytes(r.key), _bytes(r.value)) for r in rows)


def _event_hubs(kafka, connection_string):
    """The options a Spark reader of an Event Hubs namespace has, here for the test broker."""
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{SASL_USER}" password="{connection_string}";'
    )
    return {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": jaas,
        "kafka.ssl.truststore.location": str(kafka.truststore),
        "kafka.ssl.truststore.password": kafka.truststore_password,
        "kafka.ssl.truststore.type": STORE_TYPE,
    }


def test_the_producer_puts_each_message_where_asked_in_order(kafka, orders):
    asked = [partition for _, _, partition in MESSAGES]
    assert [p for p, _ in orders][:-1] == asked[:-1]
    counts = {p: 0 for p in range(3)}
    for partition, offset in orders:
        assert offset == counts[partition]  # one after the other, no gap
        counts[partition] += 1
    assert kafka.end_offsets(TOPIC) == counts


@pytest.mark.spark
def test_spark_reads_every_message_at_its_partition_and_offset(spark, kafka, orders):
    assert _read(spark, kafka.bootstrap) == _expected(orders)


@pytest.mark.spark
def test_the_sasl_ssl_listener_takes_the_connection_string_as_password(spark, kafka, orders):
    assert _read(spark, kafka.sasl_bootstrap, **_event_hubs(kafka, CONNECTION_STRING)) == _expected(orders)


@pytest.mark.spark
def test_the_sasl_ssl_listener_refuses_a_wrong_connection_string(spark, kafka, orders):
    with pytest.raises(Exception) as refused:
        _read(spark, kafka.sasl_bootstrap, **_event_hubs(kafka, WRONG))
    text = str(refused.value)
    assert "SaslAuthenticationException" in text and "Invalid username or password" in text
    assert "SharedAccessKey=" not in text


@pytest.mark.spark
def test_deleted_records_are_gone_and_the_end_stays(spark, kafka):
    kafka.create_topic("broker-test-trimmed", partitions=1)
    kafka.produce("broker-test-trimmed", [(None, f"m{i}", 0) for i in range(5)])
    kafka.delete_records("broker-test-trimmed", {0: 3})
    assert kafka.end_offsets("broker-test-trimmed") == {0: 5}
    assert _read(spark, kafka.bootstrap, "broker-test-trimmed") == [(0, 3, None, b"m3"), (0, 4, None, b"m4")]


def test_a_broker_stopped_and_started_again_keeps_its_messages(kafka):
    kafka.create_topic("broker-test-restarted", partitions=2)
    kafka.produce("broker-test-restarted", [(None, "before", 0), (None, "before", 1), (None, "before", 1)])
    kafka.stop()
    assert not kafka.running
    kafka.start()
    assert kafka.end_offsets("broker-test-restarted") == {0: 1, 1: 2}
    assert kafka.produce("broker-test-restarted", [(None, "after", 1)]) == [(1, 2)]
