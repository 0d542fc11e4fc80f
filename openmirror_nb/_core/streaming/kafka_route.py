"""A micro-batch of Spark's Kafka source, split by topic into its tables' rows.

The batch (``key``, ``value``, ``topic``, ``partition``, ``offset``, ...) is read once and each
message probed for its topic's shape (``topic_shapes``): JSON rows of a declared table, or
Debezium's events (``debezium_rows``), heartbeats and transaction metadata being ignored. A JSON
topic's values are parsed as JSON of its table's schema: one that is not (or a null value, a
tombstone) would become a row of NULLs through a plain ``from_json``; here it stops the batch,
named by topic, partition and offset, before any table publishes, as do the Debezium events a
mirror cannot apply. Then the routed sink's checks and its exactly-once application per table run
as for any routed stream (``route``). A Debezium table skips the events at or below the source
position it holds (``positions``); one a schema change stopped has its messages kept, not applied,
until it is reseeded (``held_tables``). Each push carries when its changes happened, and each batch
records how far the stream read its source (``source_times``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import (
    ChangeFeedError,
    ConfigError,
    OpenMirrorError,
    SchemaChangeError,
    user_line,
)
from openmirror_nb._core.landing_zone.push_state import StreamBatch
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.streaming import debezium_rows, json_rows, positions, source_times
from openmirror_nb._core.streaming.held_tables import Holding
from openmirror_nb._core.streaming.kafka_failures import kafka_failure
from openmirror_nb._core.streaming.route import ApplyOne, Router
from openmirror_nb._core.streaming.source_times import TIMESTAMP, LastSequences, SourceClock
from openmirror_nb._core.streaming.topic_shapes import (
    DEBEZIUM,
    IGNORED,
    JSON,
    SHAPE,
    TopicBatch,
    gather,
    probe,
    read_shapes,
    save_shapes,
)
from openmirror_nb._core.streaming.topics import (
    KAFKA_COLUMNS,
    TopicTable,
    TopicTables,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

Batches = dict[str, TopicBatch]  # per topic, what the checking job found


@dataclass(frozen=True)
class TopicRouter(Router):
    """A routed sink whose route is the Kafka topic and whose tables' rows are parsed from the
    messages' JSON values (``declared``: what ``db.mirror_kafka`` was given; ``routes``: the
    topics resolved when the stream started, others are resolved as they appear)."""

    declared: TopicTables | None = None
    schema_of: Callable[[str], StructType] | None = None
    routes: dict[str, TopicTable] = field(default_factory=dict)
    recorded: dict[str, dict[str, str]] = field(default_factory=dict)  # per query: topic -> shape
    where: str = "Kafka"  # the source, as a message names it
    markers: frozenset[str] = frozenset()  # topics whose events only move the positions recorded
    clock: SourceClock | None = None  # the source's clock against this machine's, if measured
    # a batch may stop short of a topic's end (maxOffsetsPerTrigger): it proves no idle table current
    limited: bool = False
    sequences: LastSequences = field(default_factory=LastSequences)

    def apply(self, df: DataFrame, batch: StreamBatch, apply_one: ApplyOne) -> None:
        """Parse and check every topic's messages, then check and apply each table's rows."""
        # Spark's Kafka source makes a task per topic partition: ten 3-partition topics are 30 tasks
        # for each of the batch's many small jobs. Fewer partitions of the batch, read once (parsed
        # and kept, ``_parse``), cost less; a key's order is by its partition and offset columns, not
        # by where its row lies.
        from pyspark.sql import functions as F

        tasks = df.sparkSession.sparkContext.defaultParallelism
        stamp = F.col(TIMESTAMP) if TIMESTAMP in df.columns else F.lit(None).cast("timestamp")
        df = df.select(*KAFKA_COLUMNS, stamp.alias(TIMESTAMP)).coalesce(max(1, tasks))
        try:
            self._apply(df, batch, apply_one)
        except Exception as exc:
            said = None if isinstance(exc, OpenMirrorError) else kafka_failure(exc, self.where)
            if said is None:
                raise
            raise said from None

    def _apply(self, df: DataFrame, batch: StreamBatch, apply_one: ApplyOne) -> None:
        holding = Holding.begin(self.storage, batch)  # tables a schema change stopped (``held_tables``)
        try:
            aside = holding.held_topics() | self.markers  # kept, or no table's: not checked
            parsed, batches, columns = self._parse(holding.with_kept(df), batch, aside)
            try:
                self._apply_parsed(parsed, batches, columns, batch, apply_one, holding)
            finally:
                parsed.unpersist()
        finally:
            holding.close()

    def _apply_parsed(
        self,
        parsed: DataFrame,
        batches: Batches,
        columns: dict[str, int],
        batch: StreamBatch,
        apply_one: ApplyOne,
        holding: Holding,
    ) -> None:
        parts = {}
        for topic in sorted(batches):
            found, route = batches[topic], self.routes.get(topic)
            if (
                route is None
                or found.first is None
                or found.shape not in (JSON, *DEBEZIUM)
                or topic in self.markers
            ):
                continue  # heartbeats, transaction metadata, or only tombstones (a JSON topic's
                # were refused)
            stopped = holding.holds(route)
            if stopped is not None:
                holding.keep(parsed, route, reason=stopped.reason, keyed=True)
            elif found.shape == JSON:
                keys = self._keys(route)  # a table's metadata read once a batch
                parts[topic] = (
                    json_rows.table_rows(parsed, columns[topic], route, keys),
                    json_rows.request_of(self.base, route, keys),
                )
            else:
                try:
                    state = TableFolder(self.storage, route.table).read_state()
                    parts[topic] = debezium_rows.part(
                        parsed,
                        found,
                        route,
                        self.base,
                        self._keys,
                        widen_to=holding.widen_to(route),
                        after=positions.decode_all(state.source_position) if state else None,
                        mirrored=state is not None,
                    )
                except SchemaChangeError as exc:
                    holding.keep(parsed, route, reason=user_line(exc), keyed=self._keyed(found, route))

        def aside(topic: str, exc: SchemaChangeError) -> bool:
            found, route = batches[topic], self.routes[topic]
            if found.shape not in DEBEZIUM:
                return False  # a JSON topic's columns are declared: the declaration changed
            holding.keep(parsed, route, reason=user_line(exc), keyed=self._keyed(found, route))
            return True

        checked = self._check(parts, batch, aside)
        timed = {t: source_times.times_of(batches[t].times, self.clock) for t in parts}
        self._apply_all(
            [(p, replace(q, source_times=timed[t]), checked.get(t)) for t, (p, q) in parts.items()], apply_one
        )
        holding.applied()
        held = holding.held_topics()
        applied = {t: b.position for t, b in batches.items() if b.position is not None and t not in held}
        positions.save_positions(self.storage, batch.query, applied)
        if not self.limited:
            self._mark(batch, batches, held, pushed={str(q.table) for _, q in parts.values()})

    def _mark(self, batch: StreamBatch, batches: Batches, held: set[str], pushed: set[str]) -> None:
        """Record how far the batch read the source, for every table but the stopped ones."""
        tables = [r.table for t, r in sorted(self.routes.items()) if t not in held]
        sequences = partial(self.sequences.after, self.storage, tables, pushed)
        source_times.record(self.storage, batch, [b.times for b in batches.values()], self.clock, sequences)

    def _keyed(self, found: TopicBatch, route: TopicTable) -> bool:
        return bool(route.keys or found.key_names() or self._keys(route))

    def _parse(
        self, df: DataFrame, batch: StreamBatch, held: set[str]
    ) -> tuple[DataFrame, Batches, dict[str, int]]:
        """The batch, kept for the checks and every table's push, with what one job over it found
        per topic (``TopicBatch``: its shape, from the first message the stream saw, and what the
        checks need), and the column ``_p<i>`` of each JSON topic's values parsed once. The job also
        checks the values: the first message of a JSON topic whose value is null or not JSON of its
        table's schema stops the batch, named by topic, partition and offset. A topic not routed
        yet (a subscribed pattern's new topic) is routed, and a JSON one's batch parsed again. The
        topics of ``held`` tables (stopped by a schema change) are kept, not checked."""
        from pyspark.sql import functions as F

        shapes = self._shapes(batch.query)
        probed = probe(df)
        routes = [
            r for r in self.routes.values() if r.schema is not None and shapes.get(r.topic, JSON) == JSON
        ]
        while True:
            values = [json_rows.parsed_value(r).alias(f"_p{i}") for i, r in enumerate(routes)]
            parsed = probed.select("*", *values).persist()
            bad = F.lit(None).cast("string")
            for i, route in enumerate(routes):
                value = F.col(f"_p{i}")
                wrong = F.when(
                    value.isNull() | value[json_rows.UNPARSED].isNotNull(),
                    F.lit("is not JSON of its table's schema"),
                )
                bad = F.when((F.col("topic") == route.topic) & (F.col(SHAPE) == JSON), wrong).otherwise(bad)
            at = F.struct("partition", "offset", bad.alias("why"))
            rows = gather(parsed, first={"at": F.when(bad.isNotNull(), at)}, count={"n": bad})
            batches = {r["topic"]: TopicBatch.of(r, shapes.get(r["topic"])) for r in rows}
            fresh = [
                self._route(t)
                for t, b in sorted(batches.items())
                if t not in self.routes and b.shape not in IGNORED and t not in self.markers
            ]
            again = [r for r in fresh if r.schema is not None and batches[r.topic].shape == JSON]
            if not again:
                break
            parsed.unpersist()
            routes += again
        try:
            self._refuse(rows, batches, {r.topic for r in routes}, batch, held)
        except BaseException:
            parsed.unpersist()
            raise
        seen = {t: b.shape for t, b in batches.items() if b.shape is not None and t not in shapes}
        if seen:
            shapes.update(seen)
            save_shapes(self.storage, batch.query, shapes)
        return parsed, batches, {r.topic: i for i, r in enumerate(routes)}

    def _refuse(
        self, rows: list[Any], batches: Batches, parsed: set[str], batch: StreamBatch, held: set[str]
    ) -> None:
        """Stop the batch, in one line naming the first message at fault, on what the job found
        (a stopped table's messages are checked when they are applied; ``held``: those and markers)."""
        for topic, found in sorted(batches.items()):
            if found.shape in IGNORED or found.shape is None or topic in held:
                continue
            table = self.routes[topic].table
            found.check(str(table))
            if found.shape == JSON and topic not in parsed:
                raise ChangeFeedError(
                    f"{found.where(found.first)}: the message is a JSON row, not a Debezium event, so "
                    f"table {table} needs its columns: give them in schemas={{'{table}': 'id BIGINT, ...'}}."
                )
            if found.shape == JSON and found.tombstone_at is not None:
                raise ChangeFeedError(
                    f"{found.where(found.tombstone_at)}: the message's value is null (a tombstone) (table "
                    f"{table}); nothing of batch {batch.batch} was published: fix what writes the topic, "
                    "or the table's DDL in schemas=."
                )
        failed = sorted((r for r in rows if r["n"]), key=lambda r: r["topic"])
        if failed:
            row = failed[0]
            at, table = row["at"], self.routes[row["topic"]].table
            more = f" ({row['n'] - 1:,} more in this batch)" if row["n"] > 1 else ""
            raise ChangeFeedError(
                f"Topic {row['topic']} partition {at['partition']} offset {at['offset']}: the message's "
                f"value {at['why']} (table {table}){more}; nothing of batch {batch.batch} was published: "
                f"fix what writes the topic, or the table's DDL in schemas=."
            )

    def _shapes(self, query: str) -> dict[str, str]:
        if query not in self.recorded:
            self.recorded[query] = read_shapes(self.storage, query)
        return self.recorded[query]

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

    def _keys(self, route: TopicTable) -> tuple[str, ...] | None:
        if route.keys is not None:
            return route.keys
        meta = TableFolder(self.storage, route.table).read_metadata()
        return tuple(meta.key_columns) if meta is not None and meta.key_columns else None
