"""How a plan's ``cdc`` tables are captured (``Cdc``, ``CdcTable``) and the configuration of the
Debezium PostgreSQL connector that captures them (``connector_config``), which the user runs in
Kafka Connect outside Fabric.

The configuration holds the password only as a reference a Connect worker resolves itself
(``${env:NAME}``, ``${file:...}``: Kafka's config providers), never as a value. Debezium makes the
replication slot on its first start, so a keyless table's snapshot, which Debezium takes, is
consistent with the slot; keyed tables are left out of its snapshot (the package loads them over
JDBC once the slot exists). Property names and values are Debezium 3.6's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import parse_qsl, unquote

from openmirror_nb._core.errors import ConfigError

if TYPE_CHECKING:
    from openmirror_nb._core.sources.jdbc import Jdbc

CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
PASSWORD_FILE = "/etc/kafka-connect/openmirror.properties"
# The worker settings each kind of reference needs (Kafka's own config providers).
PROVIDERS = {
    "env": {
        "config.providers": "env",
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    },
    "file": {
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
    },
}
_SLOT = re.compile(r"[a-z0-9_]{1,63}")  # PostgreSQL's rule for a replication slot's name
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")  # a name Debezium may write into SQL unquoted
_HEARTBEAT = re.compile(r"[a-z_][a-z0-9_]{0,62}\.[a-z_][a-z0-9_]{0,62}")  # written into SQL unquoted
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,200}")  # Kafka's topic characters, room left for the names
_UNSAFE_TOPIC = re.compile(r"[^A-Za-z0-9._-]")
# //host:port/database?query, the host maybe [IPv6]
_URL = re.compile(
    r"jdbc:postgresql://(?P<host>\[[^\]]+\]|[^/:?,]*)(?::(?P<port>\d+))?/(?P<db>[^?]*)(?:\?(?P<q>.*))?"
)
# Characters the connector's list settings split on (`,` between regexes, `;` and `:` in
# message.key.columns): written as Java regex escapes, so a name holding one still matches.
_SEPARATORS = {",": r"\x2C", ";": r"\x3B", ":": r"\x3A"}


@dataclass(frozen=True)
class Cdc:
    """How a plan's cdc tables are captured: Debezium's PostgreSQL connector in Kafka Connect.

    Args:
        topic_prefix: Debezium's ``topic.prefix``: each table's topic is ``<prefix>.<schema>.<table>``.
        slot: The logical replication slot (``slot.name``), made by Debezium on its first start.
        publication: The publication (``publication.name``), made by Debezium for the captured
            tables when it does not exist.
        heartbeat_ms: ``heartbeat.interval.ms``: how often the connector confirms its position,
            so the slot releases WAL while the captured tables are idle.
        heartbeat_table: ``"schema.table"`` that ``heartbeat.action.query`` writes at each
            heartbeat (``(id int PRIMARY KEY, ts timestamptz NOT NULL)``), so the slot moves on
            even when nothing captured changes while the server writes elsewhere.
        slot_wal_warning_bytes: ``db.status()`` warns when the slot retains more WAL than this.
        connector_name: The connector's name in Kafka Connect.

    Raises:
        ConfigError: a name PostgreSQL, Debezium or Kafka would refuse or change.
    """

    topic_prefix: str = "openmirror"
    slot: str = "openmirror"
    publication: str = "openmirror"
    heartbeat_ms: int = 10_000
    heartbeat_table: str | None = None
    slot_wal_warning_bytes: int = 1 << 30
    connector_name: str = "openmirror-cdc"

    def __post_init__(self) -> None:
        if not isinstance(self.topic_prefix, str) or not _TOPIC.fullmatch(self.topic_prefix):
            raise ConfigError(
                f"Cdc(topic_prefix={self.topic_prefix!r}) is not a Kafka topic prefix; use letters, digits, "
                "'.', '_' and '-' only, e.g. Cdc(topic_prefix='erp')."
            )
        if not isinstance(self.slot, str) or not _SLOT.fullmatch(self.slot):
            raise ConfigError(
                f"Cdc(slot={self.slot!r}) is not a replication slot name; PostgreSQL takes lower-case "
                "letters, digits and '_' (at most 63), e.g. Cdc(slot='openmirror_erp')."
            )
        if not isinstance(self.publication, str) or not _IDENTIFIER.fullmatch(self.publication):
            raise ConfigError(
                f"Cdc(publication={self.publication!r}) is not a plain PostgreSQL name; use lower-case "
                "letters, digits and '_' (at most 63, not starting with a digit), e.g. "
                "Cdc(publication='openmirror_erp')."
            )
        if not isinstance(self.heartbeat_ms, int) or isinstance(self.heartbeat_ms, bool):
            raise ConfigError(
                f"Cdc(heartbeat_ms={self.heartbeat_ms!r}) is not a whole number of milliseconds, e.g. 10000."
            )
        if self.heartbeat_table is not None and not _HEARTBEAT.fullmatch(str(self.heartbeat_table)):
            raise ConfigError(
                f"Cdc(heartbeat_table={self.heartbeat_table!r}) is not 'schema.table' of lower-case names; "
                "give one like Cdc(heartbeat_table='public.openmirror_heartbeat')."
            )
        wal = self.slot_wal_warning_bytes
        if not isinstance(wal, int) or isinstance(wal, bool) or wal <= 0:
            raise ConfigError(
                f"Cdc(slot_wal_warning_bytes={wal!r}) is not a positive number of bytes, e.g. 1 << 30 (1 GB)."
            )
        if not isinstance(self.connector_name, str) or not _TOPIC.fullmatch(self.connector_name):
            raise ConfigError(
                f"Cdc(connector_name={self.connector_name!r}) is not a Kafka Connect connector name for a "
                "URL; use letters, digits, '.', '_' and '-' only, e.g. Cdc(connector_name='erp-cdc')."
            )

    def topic(self, schema: str, table: str) -> str:
        """The topic Debezium writes ``schema.table``'s changes to: ``<topic_prefix>.<schema>.<table>``,
        each character Kafka refuses in a topic name replaced by ``_``, as Debezium does."""
        return _UNSAFE_TOPIC.sub("_", f"{self.topic_prefix}.{schema}.{table}")

    @property
    def heartbeat_parts(self) -> tuple[str, str] | None:
        """The heartbeat table's schema and name, or ``None``."""
        if self.heartbeat_table is None:
            return None
        schema, _, name = self.heartbeat_table.partition(".")
        return schema, name

    def heartbeat_query(self) -> str | None:
        """The ``heartbeat.action.query``: an upsert of the heartbeat table's one row."""
        if self.heartbeat_table is None:
            return None
        return (
            f"INSERT INTO {self.heartbeat_table} (id, ts) VALUES (1, now()) "
            "ON CONFLICT (id) DO UPDATE SET ts = EXCLUDED.ts"
        )


@dataclass(frozen=True)
class CdcTable:
    """One table of the source captured by the connector.

    Args:
        schema: The table's schema in PostgreSQL.
        name: The table's name in PostgreSQL.
        keys: The mirrored keys (empty: keyless, insert-only).
        primary_key: The source's primary key (empty: none).
    """

    schema: str
    name: str
    keys: tuple[str, ...]
    primary_key: tuple[str, ...]

    @property
    def keyless(self) -> bool:
        return not self.keys

    @property
    def keys_are_primary(self) -> bool:
        """True when the mirrored keys are the primary key's columns (in any order)."""
        return bool(self.keys) and set(self.keys) == set(self.primary_key)


class ConnectorConfig(TypedDict):
    """What Kafka Connect's REST API takes to create a connector (``POST /connectors``); ``config``
    alone is what ``PUT /connectors/<name>/config`` takes (it holds ``name`` too)."""

    name: str
    config: dict[str, str]


def connector_config(
    source: Jdbc, tables: Sequence[CdcTable], cdc: Cdc, *, password_ref: str | None = None
) -> ConnectorConfig:
    """The configuration of Debezium's PostgreSQL connector capturing ``tables`` of ``source``, as
    JSON for Kafka Connect's REST API (``{"name": ..., "config": {...}}``).

    The password is a reference the worker resolves: ``password_ref`` when given; else
    ``${env:<password_env>}`` when the source names an environment variable; else
    ``${file:/etc/kafka-connect/openmirror.properties:password}``. The worker must enable the
    provider the reference names (``worker_settings`` gives the lines), e.g.::

        config.providers=env
        config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider

    Keyless tables are in Debezium's snapshot (``snapshot.mode=initial`` with
    ``snapshot.include.collection.list``), keyed ones are not (``no_data`` when every table has
    keys): they are loaded over JDBC once the slot exists. ``message.key.columns`` makes the Kafka
    key of a table whose mirrored keys are not its primary key.

    Raises:
        ConfigError: the source is not PostgreSQL, has no user, its URL names several hosts, or
            ``password_ref`` is not a ``${provider:...}`` reference.
    """
    if source.subprotocol != "postgresql":
        raise ConfigError(
            f"Debezium's PostgreSQL connector reads PostgreSQL; {source.url} is {source.subprotocol}: "
            "give a jdbc:postgresql:// source."
        )
    if not source.user:
        raise ConfigError(
            f"Source {source.url} has no user for the connector; give om.Jdbc(..., user='...')."
        )
    if password_ref is not None and not re.fullmatch(r"\$\{[A-Za-z0-9_.-]+:[^}]+\}", password_ref):
        raise ConfigError(
            "password_ref is not a Kafka config provider reference; give one like '${env:PG_PASSWORD}' or "
            "'${file:/etc/kafka-connect/pg.properties:password}', never the password itself."
        )
    host, port, database, query = _address(source)
    config: dict[str, str] = {
        "name": cdc.connector_name,
        "connector.class": CONNECTOR_CLASS,
        "tasks.max": "1",
        "plugin.name": "pgoutput",  # PostgreSQL's own decoder: nothing to install on the server
        "database.hostname": host,
        "database.port": port,
        "database.dbname": database,
        "database.user": source.user,
        "database.password": password_ref or _password_ref(source),
        "topic.prefix": cdc.topic_prefix,
        "slot.name": cdc.slot,
        "publication.name": cdc.publication,
        "publication.autocreate.mode": "filtered",  # a publication of the included tables only
        "table.include.list": ",".join(_table_regex(t.schema, t.name) for t in _captured(tables, cdc)),
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "true",
        "decimal.handling.mode": "precise",
        "time.precision.mode": "adaptive",
        "tombstones.on.delete": "true",
        "skipped.operations": "t",  # a truncate cannot be mirrored as changes
        "heartbeat.interval.ms": str(cdc.heartbeat_ms),
        "provide.transaction.metadata": "false",
        # Connect makes the topics (a broker may not create them on use): one partition keeps a
        # table's changes in commit order; the broker's own replication factor.
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "-1",
    }
    sslmode = _sslmode(query, source.properties)
    if sslmode:
        config["database.sslmode"] = sslmode
    keyless = [t for t in tables if t.keyless]
    if keyless:
        config["snapshot.mode"] = "initial"
        config["snapshot.include.collection.list"] = ",".join(_table_regex(t.schema, t.name) for t in keyless)
    else:
        config["snapshot.mode"] = "no_data"
    custom = [t for t in tables if t.keys and not t.keys_are_primary]
    if custom:
        config["message.key.columns"] = ";".join(
            f"{_table_regex(t.schema, t.name)}:{','.join(_regex(k) for k in t.keys)}" for t in custom
        )
    heartbeat = cdc.heartbeat_query()
    if heartbeat is not None:
        config["heartbeat.action.query"] = heartbeat
    return {"name": cdc.connector_name, "config": config}


def worker_settings(connector: ConnectorConfig | Mapping[str, str]) -> dict[str, str]:
    """The Kafka Connect worker settings the connector's password reference needs: the config
    provider it names (``env``: Kafka's ``EnvVarConfigProvider``; ``file``: its
    ``FileConfigProvider``); empty for another provider, which the user has set up."""
    config = connector.get("config", connector)
    assert isinstance(config, Mapping)
    found = re.match(r"\$\{([A-Za-z0-9_.-]+):", str(config.get("database.password", "")))
    return dict(PROVIDERS.get(found.group(1), {})) if found else {}


def captured(tables: Sequence[CdcTable], cdc: Cdc) -> list[tuple[str, str]]:
    """Every table the connector captures, as (schema, name): ``tables`` and the heartbeat table."""
    return [(t.schema, t.name) for t in _captured(tables, cdc)]


def _captured(tables: Sequence[CdcTable], cdc: Cdc) -> list[CdcTable]:
    parts = cdc.heartbeat_parts
    if parts is None or any((t.schema, t.name) == parts for t in tables):
        return list(tables)
    return [*tables, CdcTable(parts[0], parts[1], ("id",), ("id",))]


def _password_ref(source: Jdbc) -> str:
    if source.password_env:
        return "${env:" + source.password_env + "}"
    return "${file:" + PASSWORD_FILE + ":password}"


def _address(source: Jdbc) -> tuple[str, str, str, str]:
    """Host, port, database and query string of a PostgreSQL JDBC URL (port 5432 by default)."""
    found = _URL.fullmatch(source.url)
    if found is None:
        if "," in source.url.partition("//")[2].partition("/")[0]:
            raise ConfigError(
                f"JDBC URL {source.url} names several hosts; Debezium connects to one: give the primary's."
            )
        raise ConfigError(
            f"JDBC URL {source.url} is not jdbc:postgresql://host:port/database; give one like that for "
            "the connector."
        )
    host = found.group("host").strip("[]") or "localhost"
    return host, found.group("port") or "5432", unquote(found.group("db")), found.group("q") or ""


def _sslmode(query: str, properties: Mapping[str, str]) -> str | None:
    """The connection's ``sslmode``: the URL's or the properties' own, else ``verify-full`` where
    ``ssl=true`` asks for TLS (what PostgreSQL's JDBC driver then does)."""
    settings = {k.lower(): v for k, v in parse_qsl(query)}
    settings.update({k.lower(): v for k, v in properties.items()})
    if settings.get("sslmode"):
        return settings["sslmode"]
    if settings.get("ssl", "").lower() in ("true", "1", "yes", "on"):
        return "verify-full"
    return None


def _table_regex(schema: str, name: str) -> str:
    """The exact regex Debezium's table lists match ``schema.name`` with."""
    return f"{_regex(schema)}\\.{_regex(name)}"


def _regex(name: str) -> str:
    escaped = re.escape(name)
    for char, code in _SEPARATORS.items():
        escaped = escaped.replace(char, code)
    return escaped
