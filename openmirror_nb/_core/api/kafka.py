"""Mirroring Kafka topics: ``db.mirror_kafka`` (a broker, an Event Hubs namespace, or a stream
of Spark's Kafka source the user built), each topic into its table, exactly once per batch."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from openmirror_nb._core.api.base import DatabaseBase
from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.feed_options import FeedOptions
from openmirror_nb._core.model import DEFAULT_ROWS_PER_FILE, Compression, TableOptions
from openmirror_nb._core.progress import Progress, check_parallel

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from openmirror_nb._core.streaming.kafka_source import EventHubs, Kafka
    from openmirror_nb._core.streaming.source_times import SourceClock
    from openmirror_nb._core.streaming.stream import MirrorStream


class KafkaStreams(DatabaseBase):
    """The handle's Kafka mirrors (see ``MirroredDatabase``)."""

    def mirror_kafka(
        self,
        source: Kafka | EventHubs | DataFrame,
        *,
        checkpoint: str | os.PathLike[str],
        trigger: str = "available_now",
        tables: Mapping[str, str] | None = None,
        schemas: Mapping[str, str] | None = None,
        keys: Mapping[str, Sequence[str]] | None = None,
        feed: FeedOptions | Mapping[str, FeedOptions] | None = None,
        types: Mapping[str, Mapping[str, str]] | None = None,
        starting_offsets: str | Mapping[str, Mapping[int, int]] | None = None,
        max_offsets_per_trigger: int | None = None,
        query_name: str | None = None,
        table_options: TableOptions | None = None,
        compression: Compression | None = None,
        rows_per_file: int = DEFAULT_ROWS_PER_FILE,
        progress: Progress = False,
        parallel: int = 4,
    ) -> MirrorStream:
        """Mirror Kafka topics, each into its table, exactly once per micro-batch.

        Each topic carries JSON rows of its table, or Debezium's change events (JsonConverter's
        output, with or without schemas), told from its first message and recorded: a later
        message of another shape stops the batch. Debezium's tombstones, heartbeats and
        transaction metadata are skipped; a truncate, an unavailable TOASTed value or Avro stop
        the batch in one line. A batch's identity is committed with its
        files, so a batch Spark replays after a crash publishes nothing twice; a value that does
        not parse (or a null one) stops the batch before anything of it is published, named by
        topic, partition and offset; offsets the checkpoint needs that are gone from a topic stop
        the query (``failOnDataLoss`` is on): nothing is skipped silently. Each published file
        records when its changes happened (Debezium's ``source.ts_ms``, a snapshot's reads left
        out; for JSON rows, their Kafka times) for ``db.status()``'s freshness, and each batch how
        far it read, so that an idle table's age stays small (not with ``max_offsets_per_trigger``
        or a DataFrame you built: a batch may stop short of a topic's end). The source's clock
        skew is unknown here; ``db.mirror_plan`` measures it.

        Args:
            source: ``om.Kafka(bootstrap_servers=..., topics=...)``,
                ``om.EventHubs(namespace=..., topics=..., connection_string_env=...)``, or a
                streaming DataFrame of Spark's Kafka source (then its options are yours: keep
                ``failOnDataLoss`` true; ``startingOffsets`` and ``maxOffsetsPerTrigger`` are
                read from it, not from the arguments below).
            checkpoint: The query's checkpoint folder: its id and offsets across restarts.
            trigger: ``"available_now"`` (what has arrived, then end: a scheduled job), ``"once"``
                or an interval such as ``"10 seconds"`` (runs until stopped).
            tables: Topic -> table (``"schema.table"``). Without it a topic's last two
                dot-separated parts name its table (``erp.sales.orders`` -> ``sales.orders``).
            schemas: Per table, its columns as DDL (``"id BIGINT, name STRING, op STRING"``):
                needed for JSON rows and for Debezium events without schemas (a column's
                ``COMMENT`` may name its Connect type, e.g. ``'io.debezium.time.Timestamp'``);
                Debezium events with schemas need none.
            keys: Per table, its key columns (a table that exists already may be left out;
                Debezium events take them from the Kafka key).
                A table without keys and without a feed takes inserts only.
            feed: Messages carrying an operation column: one ``om.FeedOptions`` for every table,
                or a dict of them by table; a key's changes apply in ``order_by``'s order, then
                by partition and offset. Tables without one take each message as an upsert by key.
                Debezium events need none: each key's events apply in the order of their source
                position (PostgreSQL's ``source.sequence``, MySQL's binlog position).
            types: Per table, columns whose source type no Spark type holds whole (Debezium's
                ``VariableScaleDecimal``: PostgreSQL's ``numeric`` without precision) as
                ``"decimal(p,s)"`` or ``"string"``, as a plan's ``types``.
            starting_offsets: Where a new checkpoint starts: ``"earliest"`` (default),
                ``"latest"`` or ``{topic: {partition: offset}}``. A checkpoint that exists goes on
                where it stopped.
            max_offsets_per_trigger: At most this many messages a batch (across partitions).
            query_name: A name for the query (Spark's ``queryName``).
            table_options, compression, rows_per_file, progress, parallel: As for ``batch_sink``.

        Returns:
            MirrorStream: ``.query``, ``.stop()``, ``.await_termination(timeout=None)``, which
            re-raises the sink's ``OpenMirrorError`` itself, and says in one line when offsets
            the checkpoint needs are gone from a topic.

        Raises:
            ConfigError: a topic that names no table, a bad trigger, types=,
                starting offset or option; the Event Hubs connection string not found.

        Example:
            >>> ms = db.mirror_kafka(om.Kafka(bootstrap_servers="broker:9092", topics=["erp.sales.orders"]),
            ...                      schemas={"sales.orders": "id BIGINT, amount DECIMAL(12,2)"},
            ...                      keys={"sales.orders": ["id"]}, checkpoint="Files/checkpoints/erp")
        """
        from openmirror_nb._core.streaming.kafka_source import EMPTY, EventHubs, Kafka

        if isinstance(source, Kafka | EventHubs) and not source.topics:
            raise ConfigError(EMPTY)
        return self._kafka_mirror(
            source,
            markers=frozenset(),
            missing_ok=False,
            checkpoint=checkpoint,
            trigger=trigger,
            tables=tables,
            schemas=schemas,
            keys=keys,
            feed=feed,
            types=types,
            starting_offsets=starting_offsets,
            max_offsets_per_trigger=max_offsets_per_trigger,
            query_name=query_name,
            table_options=table_options,
            compression=compression,
            rows_per_file=rows_per_file,
            progress=progress,
            parallel=parallel,
        )

    def _kafka_mirror(
        self,
        source: Kafka | EventHubs | DataFrame,
        *,
        markers: frozenset[str],
        missing_ok: bool,
        clock: SourceClock | None = None,
        checkpoint: str | os.PathLike[str],
        trigger: str = "available_now",
        tables: Mapping[str, str] | None = None,
        schemas: Mapping[str, str] | None = None,
        keys: Mapping[str, Sequence[str]] | None = None,
        feed: FeedOptions | Mapping[str, FeedOptions] | None = None,
        types: Mapping[str, Mapping[str, str]] | None = None,
        starting_offsets: str | Mapping[str, Mapping[int, int]] | None = None,
        max_offsets_per_trigger: int | None = None,
        query_name: str | None = None,
        table_options: TableOptions | None = None,
        compression: Compression | None = None,
        rows_per_file: int = DEFAULT_ROWS_PER_FILE,
        progress: Progress = False,
        parallel: int = 4,
    ) -> MirrorStream:
        """``mirror_kafka``, with ``markers``: topics whose events only move the source positions
        the stream records (``streaming.positions``), mirrored nowhere (``db.mirror_plan``'s
        heartbeat table); ``missing_ok``: topics are read once they exist (``read_kafka``); ``clock``:
        the source's clock against this machine's, as measured while the stream runs (``None``:
        unknown, as for any Kafka source alone)."""
        from openmirror_nb._core.landing_zone.stream_lags import save_lag
        from openmirror_nb._core.pipeline.push.request import PushRequest
        from openmirror_nb._core.progress import resolve
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.streaming import kafka_lag
        from openmirror_nb._core.streaming.kafka_failures import check_kafka_frame, kafka_failure
        from openmirror_nb._core.streaming.kafka_restart import replay_first
        from openmirror_nb._core.streaming.kafka_route import TopicRouter
        from openmirror_nb._core.streaming.kafka_source import EventHubs, Kafka, read_kafka
        from openmirror_nb._core.streaming.sink import BatchSink
        from openmirror_nb._core.streaming.stream import start_stream, trigger_of
        from openmirror_nb._core.streaming.topic_shapes import HEARTBEAT_PREFIX
        from openmirror_nb._core.streaming.topics import TopicTables

        trigger_of(trigger)
        check_parallel(parallel)
        if not checkpoint:
            raise ConfigError("mirror_kafka needs checkpoint='<folder>': it keeps the offsets applied.")
        declared = TopicTables.create(tables=tables, schemas=schemas, keys=keys, feed=feed, types=types)
        spark = get_spark()

        def schema_of(ddl: str) -> StructType:
            return spark.createDataFrame([], ddl).schema

        routes = {}
        where = source.describe() if isinstance(source, Kafka | EventHubs) else "Kafka"
        if isinstance(source, Kafka | EventHubs):
            # refused before the stream starts; Debezium's heartbeats name no table
            tabled = [t for t in source.topics if not t.startswith(HEARTBEAT_PREFIX) and t not in markers]
            routes = declared.routes(tabled, schema_of)
            df = read_kafka(
                spark,
                source,
                starting_offsets=starting_offsets,
                max_offsets_per_trigger=max_offsets_per_trigger,
                missing_ok=missing_ok,
            )
        else:
            if starting_offsets is not None or max_offsets_per_trigger is not None:
                raise ConfigError(
                    "starting_offsets and max_offsets_per_trigger are for om.Kafka and om.EventHubs; a "
                    "DataFrame you built has its own (startingOffsets, maxOffsetsPerTrigger)."
                )
            check_kafka_frame(source)
            df = source
        base = PushRequest.create(
            table="kafka",
            keys=None,
            mode="changes",
            table_options=table_options,
            compression=compression,
            rows_per_file=rows_per_file,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
        )
        router = TopicRouter(
            self.storage,
            "topic",
            base,
            {},
            {},
            parallel,
            declared=declared,
            schema_of=schema_of,
            routes=routes,
            where=where,
            markers=markers,
            clock=clock,
            # a batch of at most so many messages may stop short of a topic's end, so it cannot
            # prove an idle table current (a DataFrame the user built may have such a limit)
            limited=max_offsets_per_trigger is not None or not isinstance(source, Kafka | EventHubs),
        )
        sink = BatchSink(self.storage, None, router, progress=resolve(progress))
        # the lag is saved after each batch by a listener, and once more when the query ends
        started: list[str] = []
        storage = self.storage

        def topics() -> dict[str, str]:
            return {topic: str(route.table) for topic, route in router.routes.items()}

        explain = partial(kafka_failure, where=where)
        ckpt = os.fspath(checkpoint)
        replay_first(
            spark,
            ckpt,
            lambda: start_stream(
                df, sink, checkpoint=ckpt, trigger="once", name=query_name, explain=explain
            ).await_termination(),
        )
        watch = kafka_lag.listener(storage, lambda: started[0] if started else None, topics)
        spark.streams.addListener(watch)
        try:
            ms = start_stream(
                df,
                sink,
                checkpoint=checkpoint,
                trigger=trigger,
                name=query_name,
                explain=explain,
            )
        except BaseException:
            spark.streams.removeListener(watch)
            raise
        started.append(str(ms.query.id))

        def ended() -> None:
            spark.streams.removeListener(watch)
            last = ms.query.lastProgress
            if last is not None:
                save_lag(storage, last, topics())

        ms.on_end = ended
        return ms
