"""A Debezium topic's events in a batch, as the envelope the push's Debezium feed reads.

Each event's ``before`` and ``after`` images hold the table's columns converted from Kafka
Connect's encoding (``connect_types``: from the schema the messages carry, or from the table's
declared DDL), its ``op``, and the fields that order a key's events, all present in every event
(the push takes an event without one as invalid):

- PostgreSQL: ``source.sequence``, the pair of the last commit's LSN and the change's LSN (a change's
  own LSN alone does not rise in commit order across transactions), else ``source.lsn`` (connectors
  too old to write the pair); MySQL: the binlog file, position and row;
- then the Kafka partition and offset: events that share a position (a snapshot's rows, the
  delete and create of a key's change) keep the order Debezium wrote them in, which within a key
  agrees with Kafka's.

Tombstones (the null value after a delete) are left out: the delete carries the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ChangeFeedError, SchemaChangeError
from openmirror_nb._core.feed_options import FeedOptions
from openmirror_nb._core.pipeline.push.request import PushRequest
from openmirror_nb._core.streaming import positions
from openmirror_nb._core.streaming.positions import Positions
from openmirror_nb._core.streaming.topic_shapes import SCHEMA, WRAPPED, TopicBatch
from openmirror_nb._core.streaming.topics import OFFSET, PARTITION, TopicTable

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType

    from openmirror_nb._core.streaming.connect_types import ConnectColumn

ORDER = ("seq_commit_lsn", "seq_change_lsn", "binlog_file", "binlog_pos", "binlog_row", PARTITION, OFFSET)
FEED = FeedOptions(convention="debezium", order_by=ORDER)


def envelope_schema(columns: Sequence[ConnectColumn], *, wrapped: bool) -> StructType:
    """What ``from_json`` reads an event's value as: both images raw, ``op`` and the ordering
    fields of ``source``; inside ``payload`` when the JsonConverter wrote its schema."""
    from pyspark.sql.types import DecimalType, IntegerType, LongType, StringType, StructField, StructType

    row = StructType([StructField(c.name, c.raw) for c in columns])
    source = StructType(
        [
            StructField("sequence", StringType()),
            StructField("lsn", DecimalType(20, 0)),  # an LSN is an unsigned 64-bit number
            StructField("file", StringType()),
            StructField("pos", LongType()),
            StructField("row", IntegerType()),
            StructField("snapshot", StringType()),
        ]
    )
    event = StructType(
        [
            StructField("before", row),
            StructField("after", row),
            StructField("op", StringType()),
            StructField("source", source),
        ]
    )
    return StructType([StructField("payload", event)]) if wrapped else event


def events(
    topic_rows: DataFrame,
    columns: Sequence[ConnectColumn],
    *,
    wrapped: bool,
    target: Sequence[tuple[str, DataType]] | None = None,
    after: Positions | None = None,
) -> DataFrame:
    """The envelope frame of one topic's messages (``text``, ``partition``, ``offset``) whose
    columns are ``columns``; its images hold ``target``'s columns (default: ``columns``'), each
    cast to its type there, NULL where the messages have no such column. ``after``: the source
    position the table holds per partition; the events at or below it are left out (``positions``)."""
    from pyspark.sql import functions as F

    schema = envelope_schema(columns, wrapped=wrapped)
    parsed = topic_rows.where(F.col("text").isNotNull()).select(
        F.from_json("text", schema).alias("e"), F.col("partition"), F.col("offset")
    )
    event = F.col("e.payload") if wrapped else F.col("e")
    if after:
        source = event["source"]
        at = positions.position(source["sequence"], source["snapshot"], event["op"])
        parsed = parsed.where(positions.unseen(at, F.col("partition"), after))
    by_name = {c.name: c for c in columns}
    kinds = target if target is not None else [(c.name, c.spark) for c in columns]

    def field(raw: Column, name: str, kind: DataType) -> Column:
        column = by_name.get(name)
        if column is None:
            return F.lit(None).cast(kind).alias(name)
        value = column.convert(raw[name])
        return (value if column.spark == kind else value.cast(kind)).alias(name)

    def image(side: str) -> Column:
        raw = event[side]
        return F.when(raw.isNotNull(), F.struct(*[field(raw, n, k) for n, k in kinds]))

    source = event["source"]
    sequence = F.from_json(source["sequence"], "array<string>")
    return parsed.select(
        image("before").alias("before"),
        image("after").alias("after"),
        event["op"].alias("op"),
        F.coalesce(sequence[0].cast("decimal(20,0)"), F.lit(-1).cast("decimal(20,0)")).alias(ORDER[0]),
        F.coalesce(sequence[1].cast("decimal(20,0)"), source["lsn"], F.lit(-1).cast("decimal(20,0)")).alias(
            ORDER[1]
        ),
        F.coalesce(source["file"], F.lit("")).alias(ORDER[2]),
        F.coalesce(source["pos"], F.lit(-1).cast("long")).alias(ORDER[3]),
        F.coalesce(source["row"], F.lit(-1)).alias(ORDER[4]),
        F.col("partition").alias(PARTITION),
        F.col("offset").alias(OFFSET),
    )


def target_columns(
    groups: Sequence[Sequence[ConnectColumn]], *, table: str, widen_to: Mapping[str, DataType] | None = None
) -> list[tuple[str, DataType]]:
    """The columns a topic's events of one batch make, over the schemas they carry (``groups``:
    two where the source table changed within the batch): a column the source added is in the
    later one. ``widen_to``: the reseeded table's types, to which events kept from before its
    reseed are cast where nothing is lost (``column_types.widens``).

    Raises:
        SchemaChangeError: a column with two types, which one table cannot hold.
    """
    from openmirror_nb._core.column_types import widens

    found: dict[str, DataType] = {}
    for columns in sorted(groups, key=len, reverse=True):  # the widest schema's column order first
        for column in columns:
            kind = column.spark
            wide = (widen_to or {}).get(column.name)
            if wide is not None and widens(kind, wide):
                kind = wide
            seen = found.setdefault(column.name, kind)
            if seen != kind:
                both = f"{seen.simpleString()} and {kind.simpleString()}"
                raise SchemaChangeError(
                    f"Column {column.name!r} of table {table} has two types in one batch ({both}): its "
                    "source changed type, which the mirror cannot absorb; reseed the table from a full copy "
                    f"of its source: plan = db.plan_schema_change({table!r}, df); "
                    f"db.apply_schema_change(plan, df, confirm={table!r})."
                )
    return list(found.items())


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def part(
    parsed: DataFrame,
    found: TopicBatch,
    route: TopicTable,
    base: PushRequest,
    keys_of: Callable[[TopicTable], tuple[str, ...] | None],
    *,
    widen_to: Mapping[str, DataType] | None = None,
    after: Positions | None = None,
    mirrored: bool = False,
) -> tuple[DataFrame, PushRequest]:
    """A Debezium topic's events of the batch (``parsed``: the batch's messages, probed), as the
    frame its table's push reads and that push's request. Keys: those declared, else the Kafka
    key's fields, else the table's own; none: the table takes inserts only. Each schema the
    events carry reads its own events (``target_columns``; ``widen_to`` as there). ``after``: the
    source position the table holds per partition: events at or below it are skipped, and the push
    commits the batch's highest. ``mirrored``: the table exists already, so a keyless one refuses
    a new snapshot of Debezium's, as it does a batch that holds two (rows would be inserted twice)."""
    from dataclasses import replace

    from pyspark.sql import functions as F

    from openmirror_nb._core.streaming.connect_types import connect_columns, declared_columns

    table, wrapped = str(route.table), found.shape == WRAPPED
    groups = {
        text: connect_columns(fields, table=table, types=route.types)
        for text, fields in found.connect_groups().items()
    }
    if not groups and route.schema is not None:
        groups = {"": declared_columns(route.schema, table=table, types=route.types)}
    if not groups:
        raise ChangeFeedError(
            f"{found.where(found.first)}: Debezium events without schemas, so table {table}'s "
            f"columns are unknown; give them in schemas={{'{table}': 'id INT, ...'}}, or set the "
            "connector's value.converter.schemas.enable=true."
        )
    target = target_columns(list(groups.values()), table=table, widen_to=widen_to)
    keys = route.keys or found.key_names() or keys_of(route)
    rows = parsed.where(F.col("topic") == route.topic)
    frame = _union(
        [
            events(
                rows if len(groups) == 1 else rows.where(F.col(SCHEMA) == text),
                columns,
                wrapped=wrapped,
                target=target,
                after=after,
            )
            for text, columns in groups.items()
        ]
    )
    held = positions.merged(after or {}, found.positions)
    position = positions.encode_all(held) if held else None
    if not keys and found.snapshot_at is not None and (mirrored or found.snapshots > 1):
        raise ChangeFeedError(
            f"{found.where(found.snapshot_at)}: Debezium began a snapshot of table {table} again (Kafka "
            f"Connect lost its offsets, or crashed during the first snapshot), and {table} has no key, so "
            "its rows would be inserted twice; nothing of the batch was published: reload the table from "
            "a full copy (db.apply_schema_change) and restart the stream after that snapshot."
        )
    if not keys:
        # a keyless table's rows: the after image of each snapshot read and create (the checks
        # refused its updates and deletes before), each create once: a copy Kafka Connect sent
        # again after a crash, in this same batch, stands at the original's position
        placed = (F.col("op") == "c") & (F.col(ORDER[0]) != -1)
        once = frame.where(placed).dropDuplicates([ORDER[0], ORDER[1]])
        others = frame.where(~placed & F.col("op").isin("r", "c"))
        inserts = once.unionByName(others).select("after.*")
        request = replace(base, table=route.table, keys=None, mode="snapshot", append=True, position=position)
        return inserts, request
    request = replace(base, table=route.table, keys=tuple(keys), feed=FEED, unpublished=(), position=position)
    return frame, request
