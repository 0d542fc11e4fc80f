"""Which table each Kafka topic mirrors into, and how its messages become the table's rows.

A topic goes to ``tables[topic]``, or without ``tables=`` to the schema and table its last two
dot-separated parts name (``erp.sales.orders`` -> ``sales.orders``, as Debezium and most CDC tools
name topics). Its messages are JSON rows of the table's ``schemas=`` DDL: with an operation column
when the table has a ``feed`` (any convention), applied in the order of partition and offset within
a key; without one, upserts by key, or inserts where the table has no keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError, InvalidNameError, OpenMirrorError, did_you_mean
from openmirror_nb._core.feed_options import FeedOptions
from openmirror_nb._core.model import TableRef

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset")  # what a mirror reads of a message
# The Kafka position of each row: it orders a key's changes and is never published.
PARTITION, OFFSET = "_kafka_partition", "_kafka_offset"
POSITION = (PARTITION, OFFSET)


@dataclass(frozen=True)
class TopicTable:
    """One topic's table: its columns (``schema``), keys (``None``: none declared) and change
    feed (``None``: messages carry no operation)."""

    topic: str
    table: TableRef
    schema: StructType | None  # None: none declared (Debezium events that carry their schema)
    keys: tuple[str, ...] | None
    feed: FeedOptions | None
    types: Mapping[str, str] | None = None  # declared column types (``decimal(p,s)`` or ``string``)

    @property
    def ordered_feed(self) -> FeedOptions:
        """The feed a push applies: the declared one ordered after its own columns by the Kafka
        position; without one, upserts (markers the router adds) in Kafka's order."""
        from dataclasses import replace

        if self.feed is None:
            return FeedOptions(order_by=POSITION)
        if self.feed.convention == "debezium":
            return self.feed  # Debezium orders by its source position (order_by's default)
        return replace(self.feed, order_by=(*self.feed.order_by, *POSITION))


def table_of(topic: str, tables: Mapping[str, str] | None) -> TableRef:
    """The table ``topic`` mirrors into (see the module docstring)."""
    if tables is not None:
        if topic not in tables:
            raise ConfigError(
                f"Topic {topic!r} is not in tables=; add it, e.g. tables={{..., {topic!r}: 'schema.table'}}."
                + did_you_mean(topic, tables)
            )
        return TableRef.parse(tables[topic])
    parts = topic.split(".")
    if len(parts) < 2:
        raise ConfigError(
            f"Topic {topic!r} has no '.', so it names no schema.table; map it with "
            f"tables={{{topic!r}: 'schema.table'}}."
        )
    try:
        return TableRef.parse(".".join(parts[-2:]))
    except InvalidNameError as exc:
        raise ConfigError(
            f"Topic {topic!r}: {exc} Or map it with tables={{{topic!r}: 'schema.table'}}."
        ) from None


def _by_table(given: Mapping[str, object] | None, what: str) -> dict[str, object]:
    """``given`` keyed by the table's identity (``"sales.orders"``), whatever case named it."""
    out: dict[str, object] = {}
    for name, value in (given or {}).items():
        try:
            out[TableRef.parse(name).identity] = value
        except OpenMirrorError as exc:
            raise ConfigError(f"{what}= names table {name!r}: {exc}") from None
    return out


@dataclass(frozen=True)
class TopicTables:
    """The mirror's declaration: topics to tables, and per table its columns, keys and feed."""

    tables: Mapping[str, str] | None
    schemas: Mapping[str, object]
    keys: Mapping[str, object]
    feed: FeedOptions | Mapping[str, object] | None
    types: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        *,
        tables: Mapping[str, str] | None,
        schemas: Mapping[str, str] | None,
        keys: Mapping[str, Sequence[str]] | None,
        feed: FeedOptions | Mapping[str, FeedOptions] | None,
        types: Mapping[str, Mapping[str, str]] | None = None,
    ) -> TopicTables:
        if tables is not None and not isinstance(tables, Mapping):
            raise ConfigError(
                f"tables= maps topics to tables, e.g. {{'orders': 'sales.orders'}}; got {tables!r}."
            )
        if schemas is not None and not isinstance(schemas, Mapping):
            raise ConfigError(
                "schemas= takes each table's columns as DDL, e.g. "
                "schemas={'sales.orders': 'id BIGINT, amount DECIMAL(12,2), op STRING'}."
            )
        for table, columns in (types or {}).items():
            if not isinstance(columns, Mapping):
                raise ConfigError(
                    f"types= of table {table!r} maps columns to types, e.g. {{'amount': 'decimal(38,10)'}}."
                )
        if keys is not None and not isinstance(keys, Mapping):
            raise ConfigError(
                f"keys= takes keys per table, e.g. keys={{'sales.orders': ['id']}}; got {keys!r}."
            )
        for table, given in (keys or {}).items():
            if isinstance(given, str) or not all(isinstance(k, str) for k in given):
                raise ConfigError(f"keys= of table {table!r} is not a list of columns; write [{given!r}].")
        feeds: FeedOptions | Mapping[str, object] | None = feed
        if isinstance(feed, Mapping):
            for table, one in feed.items():
                if not isinstance(one, FeedOptions):
                    raise ConfigError(f"feed= of table {table!r} is not an om.FeedOptions.")
            feeds = _by_table(feed, "feed")
        elif feed is not None and not isinstance(feed, FeedOptions):
            raise ConfigError(f"feed={feed!r} is not an om.FeedOptions or a dict of them by table.")
        return cls(
            dict(tables) if tables is not None else None,
            _by_table(schemas, "schemas"),
            _by_table(keys, "keys"),
            feeds,
            _by_table(types, "types"),
        )

    def route(self, topic: str, schema_of: object) -> TopicTable:
        """``topic``'s table; ``schema_of`` parses a DDL string into a ``StructType``."""
        table = table_of(topic, self.tables)
        ddl = self.schemas.get(table.identity)
        try:
            # no DDL: the messages must be Debezium events that carry their schema (said per batch)
            schema = None if ddl is None else schema_of(ddl)  # type: ignore[operator]
        except Exception as exc:  # Spark's parse error, said in one line
            from openmirror_nb._core.errors import user_line

            raise ConfigError(
                f"schemas= of table {table} is not a DDL column list: {user_line(exc)}"
            ) from None
        feed = self.feed.get(table.identity) if isinstance(self.feed, Mapping) else self.feed
        keys = self.keys.get(table.identity)
        types = self.types.get(table.identity)
        keys_of: tuple[str, ...] | None = tuple(keys) if keys else None  # type: ignore[arg-type]
        return TopicTable(topic, table, schema, keys_of, feed, types)  # type: ignore[arg-type]

    def routes(self, topics: Sequence[str], schema_of: object) -> dict[str, TopicTable]:
        """Each topic's table; two topics into one table are refused (one table, one topic)."""
        found = {t: self.route(t, schema_of) for t in topics}
        seen: dict[str, str] = {}
        for topic, route in found.items():
            other = seen.setdefault(route.table.identity, topic)
            if other != topic:
                raise ConfigError(
                    f"Topics {other!r} and {topic!r} both go to table {route.table}; each table takes one "
                    "topic: map one of them elsewhere with tables=."
                )
        return found
