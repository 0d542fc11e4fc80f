"""A micro-batch of Spark's Kafka source, split by topic into its tables' rows.

The batch (``key``, ``value``, ``topic``, ``partition``, ``offset``, ...) is read once; each
topic's values are parsed as JSON of its table's schema. A value that is not such JSON (or a null
value, a tombstone) would become a row of NULLs through a plain ``from_json``: here it stops the
batch, named by topic, partition and offset, before any table publishes. Then the routed sink's
checks and its exactly-once application per table run as for any routed stream (``route``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ChangeFeedError, ConfigError, OpenMirrorError, SourceError, user_line
from openmirror_nb._core.landing_zone.push_state import StreamBatch
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import ROW_MARKER, RowMarker
from openmirror_nb._core.pipeline.push.request import PushRequest
from openmirror_nb._core.streaming.route import ApplyOne, Router
from openmirror_nb._core.streaming.topics import OFFSET, PARTITION, POSITION, TopicTable, TopicTables

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset")
_UNPARSED = "_openmirror_unparsed"  # from_json's corrupt-record column


def check_kafka_frame(df: DataFrame) -> None:
    """Refuse a DataFrame that is not Spark's Kafka source (its columns say so)."""
    missing = [c for c in KAFKA_COLUMNS if c not in df.columns]
    if missing or not getattr(df, "isStreaming", False):
        raise ConfigError(
            "db.mirror_kafka takes om.Kafka(...), om.EventHubs(...) or a streaming DataFrame of Spark's "
            "Kafka source (spark.readStream.format('kafka')); this one lacks "
            f"{', '.join(missing) or 'a stream'}."
        )


@dataclass(frozen=True)
class TopicRouter(Router):
    """A routed sink whose route is the Kafka topic and whose tables' rows are parsed from the
    messages' JSON values (``declared``: what ``db.mirror_kafka`` was given; ``routes``: the
    topics resolved when the stream started, others are resolved as they appear)."""

    declared: TopicTables | None = None
    schema_of: Callable[[str], StructType] | None = None
    routes: dict[str, TopicTable] = field(default_factory=dict)
    where: str = "Kafka"  # the source, as a message names it

    def apply(self, df: DataFrame, batch: StreamBatch, apply_one: ApplyOne) -> None:
        """Parse and check every topic's messages, then check and apply each table's rows."""
        # Spark's Kafka source makes a task per topic partition: ten 3-partition topics are 30 tasks
        # for each of the batch's many small jobs. Fewer partitions of the batch, read once, cost
        # less; a key's order is by its partition and offset columns, not by where its row lies.
        tasks = df.sparkSession.sparkContext.defaultParallelism
        df = df.select(*KAFKA_COLUMNS).coalesce(max(1, tasks)).persist()
        try:
            self._apply(df, batch, apply_one)
        except Exception as exc:
            said = None if isinstance(exc, OpenMirrorError) else kafka_failure(exc, self.where)
            if said is None:
                raise
            raise said from None
        finally:
            df.unpersist()

    def _apply(self, df: DataFrame, batch: StreamBatch, apply_one: ApplyOne) -> None:
        from pyspark.sql import functions as F

        topics = sorted(r["topic"] for r in df.select("topic").distinct().collect())
        routes = [self._route(t) for t in topics]
        self._check_values(df, routes, batch)
        keys = {r.topic: self._keys(r) for r in routes}  # a table's metadata read once a batch
        parts = {
            r.topic: (
                self._rows(df.where(F.col("topic") == r.topic), r, keys[r.topic]),
                self._request_of(r, keys[r.topic]),
            )
            for r in routes
        }
        checked = self._check(parts, batch)
        self._apply_all([(p, q, checked.get(t)) for t, (p, q) in parts.items()], apply_one)

    def _route(self, topic: str) -> TopicTable:
        known = self.routes.get(topic)
        if known is not None:
            return known
        assert self.declared is not None and self.schema_of is not None
        route = self.declared.route(topic, self.schema_of)
        taken = [t for t, r in self.routes.items() if r.table.identity == route.table.identity]
        if taken:
            raise ConfigError(
                f"Topics {taken[0]!r} and {topic!r} both go to table {route.table}; each table takes one "
                "topic: map one of them elsewhere with tables=."
            )
        self.routes[topic] = route
        return route

    @staticmethod
    def _parsed(route: TopicTable) -> Column:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        schema = StructType([*route.schema.fields, StructField(_UNPARSED, StringType())])
        options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _UNPARSED}
        return F.from_json(F.col("value").cast("string"), schema, options)

    def _check_values(self, df: DataFrame, routes: list[TopicTable], batch: StreamBatch) -> None:
        """One job over the batch: the first message of each topic whose value is null or not
        JSON of its table's schema stops the batch, named by topic, partition and offset."""
        from pyspark.sql import functions as F

        probes = []
        for route in routes:
            parsed = self._parsed(route)
            why = F.when(F.col("value").isNull(), F.lit("is null (a tombstone)")).when(
                parsed.isNull() | parsed[_UNPARSED].isNotNull(), F.lit("is not JSON of its table's schema")
            )
            probes.append(
                df.where(F.col("topic") == route.topic)
                .select("topic", F.struct("partition", "offset", why.alias("why")).alias("at"))
                .where(F.col("at.why").isNotNull())
            )
        if not probes:
            return
        union = probes[0]
        for probe in probes[1:]:
            union = union.unionByName(probe)
        found = (
            union.groupBy("topic")
            .agg(F.count("*").alias("n"), F.min("at").alias("at"))
            .orderBy("topic")
            .collect()
        )
        if found:
            row = found[0]
            at, table = row["at"], self.routes[row["topic"]].table
            more = f" ({row['n'] - 1:,} more in this batch)" if row["n"] > 1 else ""
            raise ChangeFeedError(
                f"Topic {row['topic']} partition {at['partition']} offset {at['offset']}: the message's "
                f"value {at['why']} (table {table}){more}; nothing of batch {batch.batch} was published: "
                f"fix what writes the topic, or the table's DDL in schemas=."
            )

    def _rows(self, raw: DataFrame, route: TopicTable, keys: tuple[str, ...] | None) -> DataFrame:
        """The table's rows of ``raw``: the parsed columns, with the Kafka position that orders
        them and, for messages without an operation, the marker of an upsert."""
        from pyspark.sql import functions as F

        parsed = raw.select(
            self._parsed(route).alias("v"),
            F.col("partition").alias(PARTITION),
            F.col("offset").alias(OFFSET),
        )
        names = [f.name for f in route.schema.fields]
        rows = parsed.select(*[F.col("v").getField(n).alias(n) for n in names], PARTITION, OFFSET)
        if route.feed is not None:
            # a Debezium feed is ordered by its own source position, and publishes no extra column
            return rows.drop(*POSITION) if route.feed.convention == "debezium" else rows
        if keys is None:
            return rows.drop(*POSITION)  # inserts, in no order a keyless table could show
        return rows.withColumn(ROW_MARKER, F.lit(int(RowMarker.UPSERT)))

    def _keys(self, route: TopicTable) -> tuple[str, ...] | None:
        if route.keys is not None:
            return route.keys
        meta = TableFolder(self.storage, route.table).read_metadata()
        return tuple(meta.key_columns) if meta is not None and meta.key_columns else None

    def _request_of(self, route: TopicTable, keys: tuple[str, ...] | None) -> PushRequest:
        from dataclasses import replace

        if route.feed is None and keys is None:
            return replace(self.base, table=route.table, keys=None, mode="snapshot", append=True)
        hidden = () if route.feed is not None and route.feed.convention == "debezium" else POSITION
        return replace(
            self.base, table=route.table, keys=route.keys, feed=route.ordered_feed, unpublished=hidden
        )


def kafka_failure(exc: BaseException, where: str = "Kafka") -> SourceError | None:
    """One line for a query Spark's Kafka source stopped: offsets its checkpoint needs gone from a
    topic (``failOnDataLoss``), or credentials the broker refused; ``None`` for other failures."""
    text = str(exc)  # whole: Spark's wrappers put the Kafka reason past a line's length
    if "KAFKA_DATA_LOSS" in text or "data may have been lost" in text.lower():
        # Spark 4: "Reason: Could not read records in offset [3, 9) for topic partition t-0 with ...";
        # Spark 3.5: "Cannot fetch offset 3 (GroupId: ..., TopicPartition: t-0)."
        reason = re.search(r"Reason: (.+?)(?:\s+with consumer group|\n\s*at |\.?\s*$)", text, re.S)
        fetch = re.search(r"Cannot fetch offset (\d+) \(GroupId: [^,]*, TopicPartition: ([^)]+)\)", text)
        if fetch:
            said = f"offset {fetch.group(1)} of topic partition {fetch.group(2)}"
        else:
            said = " ".join(reason.group(1).split()) if reason else user_line(exc)
        return SourceError(
            f"Offsets this stream's checkpoint needs are gone from Kafka ({said}: retention removed them, "
            "or the topic was deleted and made again); nothing was skipped: reload the tables from a full "
            "copy of their source (db.apply_schema_change(table, df)) and start a new checkpoint at the "
            "offsets that copy covers (starting_offsets=)."
        )
    line = user_line(exc)
    if "SaslAuthenticationException" in text or "Authentication failed" in text:
        return SourceError(
            f"{where} refused the stream's credentials (SASL authentication failed); nothing was read: "
            "check the connection string (Event Hubs: the namespace's or event hub's, from its Shared "
            "access policies) or the SASL options. Spark said: " + line
        )
    return None
