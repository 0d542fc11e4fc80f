"""Where a Kafka mirror reads: ``om.Kafka`` (a broker) and ``om.EventHubs`` (an Event Hubs
namespace's Kafka endpoint), turned into the options of Spark's Kafka source.

Both subscribe to named topics with ``failOnDataLoss`` on: offsets a checkpoint needs that are gone
from a topic stop the query (``kafka_errors``), they are never skipped. Event Hubs authenticates
with SASL/PLAIN over TLS on port 9093, the user ``$ConnectionString`` and the namespace's
connection string as password, with Kafka's own ``PlainLoginModule`` (Fabric's Spark has Kafka's
client as it is, not the ``kafkashaded.`` copy Databricks documents). The connection string is read
when the stream starts (an environment variable, or a Key Vault secret in Fabric) and only then: it
is in no field, repr, saved state or message of these objects.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.secret_refs import ENV_NAME, VAULT_SECRET, vault_secret

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Kafka's legal topic names (its Topic.validate): letters, digits, '.', '_' and '-', up to 249.
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_SERVER = re.compile(r"^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9A-Fa-f:.]+\]:\d{1,5}$")
EVENT_HUBS_PORT = 9093
# What Microsoft advises for Event Hubs' Kafka endpoint (its "recommended configurations"): a
# request may wait for a throttled namespace longer than Kafka's 30 s default.
EVENT_HUBS_OPTIONS = {"kafka.request.timeout.ms": "60000", "kafka.session.timeout.ms": "30000"}
_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
# A batch reads each topic partition up to the newest offset a trigger saw, and there the consumer
# waits fetch.max.wait.ms (500 ms by default) for data no batch asks for, once per partition: ten
# 3-partition topics on 2 cores made a 0.3 s read of the last 10,000 messages take 8 s. Shorter, it
# costs a few empty fetches at most. options= may set it otherwise (not for a DataFrame the user built).
FETCH_WAIT = {"kafka.fetch.max.wait.ms": "10"}
# Options the mirror sets itself: given in options=, they would be overridden or make it unsafe.
_OURS = {
    "subscribe": "topics=",
    "subscribepattern": "topics=",
    "assign": "topics=",
    "kafka.bootstrap.servers": "bootstrap_servers=",
    "startingoffsets": "db.mirror_kafka(starting_offsets=...)",
    "maxoffsetspertrigger": "db.mirror_kafka(max_offsets_per_trigger=...)",
    "failondataloss": "nothing: a mirror never skips offsets it has not applied",
}


def _topics(topics: str | Sequence[str]) -> tuple[str, ...]:
    """The topics named, checked; none is allowed here (``db.mirror_plan`` names them itself),
    and refused by ``db.mirror_kafka`` (``EMPTY``)."""
    given = [topics] if isinstance(topics, str) else list(topics)
    for topic in given:
        if not isinstance(topic, str) or not _TOPIC.match(topic):
            raise ConfigError(
                f"Topic {topic!r} is not a Kafka topic name (letters, digits, '.', '_' and '-', up to "
                "249); list the topics by name, e.g. topics=['erp.sales.orders']."
            )
    return tuple(dict.fromkeys(given))


EMPTY = "topics= is empty; name at least one topic, e.g. topics=['erp.sales.orders']."


def _options(options: Mapping[str, str]) -> dict[str, str]:
    for name, value in options.items():
        ours = _OURS.get(str(name).lower())
        if ours:
            raise ConfigError(f"options= sets {name!r}, which the mirror sets itself; use {ours} instead.")
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(f"options= value of {name!r} is not text or a number; give it as text.")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}


@dataclass(frozen=True)
class Kafka:
    """A Kafka cluster to mirror topics from (``db.mirror_kafka``).

    Attributes:
        bootstrap_servers: ``"host:port"``, several comma-separated, or a list of them.
        topics: The topics to mirror (one or a list); ``db.mirror_plan`` names its own.
        options: More options of Spark's Kafka source, e.g. ``{"kafka.security.protocol":
            "SASL_SSL", ...}`` for a secured cluster (``kafka.``-prefixed ones go to Kafka's
            consumer). Kept out of the repr: they may hold credentials.

    Example:
        >>> source = om.Kafka(bootstrap_servers="broker:9092", topics=["erp.sales.orders"])
    """

    bootstrap_servers: str | Sequence[str]
    topics: str | Sequence[str] = ()
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        servers = self.bootstrap_servers
        listed = servers.split(",") if isinstance(servers, str) else list(servers)
        listed = [s.strip() for s in listed if isinstance(s, str) and s.strip()]
        bad = [s for s in listed if not _SERVER.match(s)]
        if not listed or bad:
            raise ConfigError(
                f"bootstrap_servers {bad[0] if bad else servers!r} is not 'host:port'; write e.g. "
                "bootstrap_servers='broker1:9092,broker2:9092'."
            )
        object.__setattr__(self, "bootstrap_servers", ",".join(listed))
        object.__setattr__(self, "topics", _topics(self.topics))
        object.__setattr__(self, "options", _options(self.options))

    def read_options(self) -> dict[str, str]:
        """The Kafka source's options, credentials included (only ``start`` calls this)."""
        return {**FETCH_WAIT, **self.options, "kafka.bootstrap.servers": str(self.bootstrap_servers)}

    def describe(self) -> str:
        """``Kafka <servers>``: how a message names this source (no option, so no credential)."""
        return f"Kafka {self.bootstrap_servers}"


@dataclass(frozen=True)
class EventHubs:
    """An Azure Event Hubs namespace, read through its Kafka endpoint (``db.mirror_kafka``): each
    event hub is a topic.

    Attributes:
        namespace: The namespace's name (``myns``: ``myns.servicebus.windows.net:9093``), or its
            host, with a port when it is not 9093 (another cloud's suffix, a private endpoint).
        topics: The event hubs to mirror (one or a list); ``db.mirror_plan`` names its own.
        connection_string_env: An environment variable holding the namespace's (or an event
            hub's) connection string; or
        connection_string_secret: An Azure Key Vault secret holding it,
            ``https://<vault>.vault.azure.net/secrets/<name>``, read with ``notebookutils`` in Fabric.
        options: More options of Spark's Kafka source (Microsoft's advised
            ``kafka.request.timeout.ms`` 60000 and ``kafka.session.timeout.ms`` 30000 are set
            unless given here).

    Example:
        >>> source = om.EventHubs(namespace="contoso-events", topics=["erp.sales.orders"],
        ...                       connection_string_secret="https://kv.vault.azure.net/secrets/eh")
    """

    namespace: str
    topics: str | Sequence[str] = ()
    connection_string_env: str | None = None
    connection_string_secret: str | None = None
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        host = self.namespace
        if not isinstance(host, str) or not re.match(r"^[A-Za-z0-9.-]+(:\d{1,5})?$", host):
            raise ConfigError(
                f"namespace {host!r} is not an Event Hubs namespace; give its name, e.g. "
                "namespace='contoso-events', or its host 'contoso-events.servicebus.windows.net'."
            )
        object.__setattr__(self, "topics", _topics(self.topics))
        env, secret = self.connection_string_env, self.connection_string_secret
        if (env is None) == (secret is None):
            raise ConfigError(
                "Give Event Hubs' connection string one way: connection_string_env='NAME' (an environment "
                "variable) or connection_string_secret=<Key Vault secret URL>, never the string itself."
            )
        # Neither reference is repeated in the message: it may be the connection string itself.
        if env is not None and not ENV_NAME.match(env):
            raise ConfigError(
                "connection_string_env is not an environment variable name (letters, digits and '_'); "
                "give the variable's name, e.g. connection_string_env='EVENTHUBS_CONNECTION'."
            )
        if secret is not None and not VAULT_SECRET.match(secret):
            raise ConfigError(
                "connection_string_secret is not a Key Vault secret URL; give one like "
                "'https://<vault>.vault.azure.net/secrets/<name>', never the connection string itself."
            )
        object.__setattr__(self, "options", _options(self.options))

    @property
    def bootstrap_servers(self) -> str:
        """The Kafka endpoint: ``<namespace>.servicebus.windows.net:9093``, or the host given."""
        host, _, port = self.namespace.partition(":")
        if "." not in host:
            host += ".servicebus.windows.net"
        return f"{host}:{port or EVENT_HUBS_PORT}"

    def connection_string(self) -> str:
        """The connection string, read now.

        Raises:
            ConfigError: the variable is not set, the secret is asked for outside Fabric, or what
                was read is not an Event Hubs connection string (not shown).
        """
        if self.connection_string_env:
            value = os.environ.get(self.connection_string_env)
            if not value:
                raise ConfigError(
                    f"Environment variable {self.connection_string_env} (connection_string_env) is not "
                    "set; set it to the Event Hubs connection string before starting the mirror."
                )
        else:
            assert self.connection_string_secret is not None
            value = vault_secret(self.connection_string_secret, instead="connection_string_env='NAME'")
        where = self.connection_string_env or self.connection_string_secret
        if not value.startswith("Endpoint=sb://") or "SharedAccess" not in value:
            raise ConfigError(
                f"What {where} holds is not an Event Hubs connection string (Endpoint=sb://...;"
                "SharedAccessKeyName=...;SharedAccessKey=...); copy it from the namespace's Shared "
                "access policies."
            )
        if '"' in value or "\\" in value:
            raise ConfigError(f"The connection string in {where} holds a quote or backslash; copy it again.")
        return value

    def read_options(self) -> dict[str, str]:
        """The Kafka source's options, the connection string included (only ``start`` calls this)."""
        jaas = f'{_PLAIN} required username="$ConnectionString" password="{self.connection_string()}";'
        return {
            **EVENT_HUBS_OPTIONS,
            **FETCH_WAIT,
            **self.options,
            "kafka.bootstrap.servers": self.bootstrap_servers,
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": jaas,
        }

    def describe(self) -> str:
        """``Event Hubs <host>:<port>``: how a message names this source."""
        return f"Event Hubs {self.bootstrap_servers}"


KafkaSource = Kafka | EventHubs


def starting_offsets_option(given: str | Mapping[str, Mapping[int, int]] | None) -> str:
    """Spark's ``startingOffsets`` for a new checkpoint: ``earliest`` unless ``given`` says
    ``latest`` or per topic and partition (``{"t": {0: 42}}``; -2 earliest, -1 latest)."""
    if given is None or given == "earliest":
        return "earliest"
    if given == "latest":
        return "latest"
    if isinstance(given, Mapping):
        try:
            return json.dumps(
                {str(t): {str(int(p)): int(o) for p, o in parts.items()} for t, parts in given.items()}
            )
        except (AttributeError, TypeError, ValueError):
            pass
    raise ConfigError(
        f"starting_offsets {given!r} is not 'earliest', 'latest' or offsets per topic and partition, "
        "e.g. {'erp.sales.orders': {0: 42, 1: -2}}."
    )


def read_kafka(
    spark: SparkSession,
    source: KafkaSource,
    *,
    starting_offsets: str | Mapping[str, Mapping[int, int]] | None,
    max_offsets_per_trigger: int | None,
    missing_ok: bool = False,
) -> DataFrame:
    """The stream of Spark's Kafka source that ``source`` describes: its topics subscribed,
    ``failOnDataLoss`` on, a new checkpoint starting at ``starting_offsets`` (earliest).
    ``missing_ok``: topics that do not exist yet are read once they do, from their start (a
    pattern of exactly those names: Debezium makes a table's topic at its first change)."""
    offsets = starting_offsets_option(starting_offsets)
    most = max_offsets_per_trigger
    if most is not None and (isinstance(most, bool) or not isinstance(most, int) or most < 1):
        raise ConfigError(f"max_offsets_per_trigger {most!r} must be a whole number of at least 1.")
    reader = spark.readStream.format("kafka")
    with _unlogged():
        for name, value in source.read_options().items():
            reader = reader.option(name, value)
    if missing_ok:
        named = "|".join(re.escape(t) for t in source.topics)
        reader = reader.option("subscribePattern", f"^(?:{named})$")
    else:
        reader = reader.option("subscribe", ",".join(source.topics))
    reader = reader.option("startingOffsets", offsets).option("failOnDataLoss", "true")
    if most is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(most))
    return reader.load()


@contextmanager
def _unlogged() -> Iterator[None]:
    """py4j logs every command it sends to the JVM at DEBUG, arguments included: a notebook logging
    at DEBUG would show the connection string. Its loggers are held at INFO while options go over."""
    py4j = logging.getLogger("py4j")
    before = py4j.level
    py4j.setLevel(max(logging.INFO, before))
    try:
        yield
    finally:
        py4j.setLevel(before)
