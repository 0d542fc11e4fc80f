"""What a Kafka topic carries, told from its messages: JSON rows of a declared table, Debezium's
change events (JsonConverter's output, with or without its ``schema``/``payload`` wrapper), or
Debezium's heartbeats and transaction metadata (no table's rows: ignored). Avro (a schema
registry's framing: a zero byte, then the schema's id) is refused: no registry is read here.

``probe`` adds, per message, what the batch's one checking job needs (``PROBE``): the message's
shape, its operation, the Connect schema it carries, its key's fields, whether it holds
Debezium's placeholder for an unchanged TOASTed value, its source position, and the times of a
change (``source_times``). Each value is parsed for that by ``json_tuple`` (the top-level fields
only), in a wrapped event its payload's once more, and the event's ``source`` once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ChangeFeedError
from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.streaming import source_times
from openmirror_nb._core.streaming.positions import Position, of_row, position
from openmirror_nb._core.streaming.source_times import TopicTimes

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

JSON = "JSON rows"
ENVELOPE = "Debezium events"
WRAPPED = "Debezium events with schemas"
HEARTBEAT = "Debezium heartbeats"
TRANSACTION = "Debezium transaction metadata"
AVRO = "Avro"
DEBEZIUM = (ENVELOPE, WRAPPED)
IGNORED = (HEARTBEAT, TRANSACTION)
PLACEHOLDER = "__debezium_unavailable_value"  # Debezium's unavailable.value.placeholder default
HEARTBEAT_PREFIX = "__debezium-heartbeat"  # Debezium's topic.heartbeat.prefix default
# Per message: shape, op, Connect schema text (wrapped events), key fields (JSON array), placeholder,
# source position (``positions``), and whether it is the first event of a Debezium snapshot.
SHAPE, OP, SCHEMA, KEY_FIELDS, UNAVAILABLE, POSITION, SNAPSHOT_START = (
    "_om_shape",
    "_om_op",
    "_om_schema",
    "_om_key_fields",
    "_om_toast",
    "_om_position",
    "_om_snapshot",
)
PROBE = (SHAPE, OP, SCHEMA, KEY_FIELDS, UNAVAILABLE, POSITION, SNAPSHOT_START)
SHAPES_FOLDER, SHAPES_SUFFIX = f"{INTERNAL_FOLDER}/streams", ".topics.json"


def read_shapes(storage: Storage, query: str) -> dict[str, str]:
    """The shape a stream recorded for each topic from its first message (none yet: empty)."""
    try:
        return dict(json.loads(storage.read_bytes(f"{SHAPES_FOLDER}/{query}{SHAPES_SUFFIX}")))
    except FileNotFoundError:
        return {}


def save_shapes(storage: Storage, query: str, shapes: dict[str, str]) -> None:
    text = json.dumps(dict(sorted(shapes.items())), indent=2) + "\n"
    storage.write_bytes(f"{SHAPES_FOLDER}/{query}{SHAPES_SUFFIX}", text.encode("utf-8"), overwrite=True)


def probe(df: DataFrame) -> DataFrame:
    """``df`` (Spark's Kafka columns) with ``text`` (the value as text), the ``PROBE`` columns and
    a change's times (``source_times.probe_columns``)."""
    from pyspark.sql import functions as F

    top = ("schema", "payload", "op", "source", "status", "id")
    out = df.select("*", F.col("value").cast("string").alias("text")).select(
        "*", F.json_tuple("text", *top).alias(*[f"_t_{n}" for n in top])
    )
    inner = ("op", "source", "status")
    out = out.select("*", F.json_tuple("_t_payload", *inner).alias(*[f"_w_{n}" for n in inner]))
    at = ("sequence", "snapshot", "ts_ms")
    source = F.coalesce("_w_source", "_t_source")
    out = out.select("*", F.json_tuple(source, *at).alias(*[f"_s_{n}" for n in at]))
    wrapped = F.col("_t_schema").isNotNull() & F.col("_t_payload").isNotNull()
    schema_name = F.get_json_object("_t_schema", "$.name")
    shape = (
        F.when(F.col("value").isNull(), F.lit(None))
        .when(F.hex(F.substring("value", 1, 1)) == "00", F.lit(AVRO))
        .when(F.col("topic").startswith(HEARTBEAT_PREFIX), F.lit(HEARTBEAT))
        .when(wrapped & F.col("_w_op").isNotNull() & F.col("_w_source").isNotNull(), F.lit(WRAPPED))
        .when(wrapped & F.col("_w_status").isin("BEGIN", "END"), F.lit(TRANSACTION))
        .when(wrapped & schema_name.endswith(".Heartbeat"), F.lit(HEARTBEAT))
        .when(F.col("_t_op").isNotNull() & F.col("_t_source").isNotNull(), F.lit(ENVELOPE))
        .when(F.col("_t_status").isin("BEGIN", "END") & F.col("_t_id").isNotNull(), F.lit(TRANSACTION))
        .otherwise(F.lit(JSON))
    )
    key = F.col("key").cast("string")
    key_schema = F.to_json(
        F.from_json(key, "schema struct<fields: array<struct<field: string>>>")["schema"]["fields"]["field"]
    )
    plain_key = F.to_json(F.map_keys(F.from_json(key, "map<string,string>")))
    key_fields = F.when(wrapped, F.coalesce(key_schema, F.lit("[]"))).otherwise(plain_key)
    op, debezium = F.coalesce("_w_op", "_t_op"), shape.isin(*DEBEZIUM)
    return out.select(
        *df.columns,
        "text",
        shape.alias(SHAPE),
        op.alias(OP),
        F.when(wrapped, F.get_json_object("_t_schema", "$.fields")).alias(SCHEMA),
        F.when(F.col("key").isNotNull(), key_fields).alias(KEY_FIELDS),
        F.col("text").contains(PLACEHOLDER).alias(UNAVAILABLE),
        F.when(debezium, position(F.col("_s_sequence"), F.col("_s_snapshot"), op)).alias(POSITION),
        (debezium & (F.lower(F.col("_s_snapshot")) == "first")).alias(SNAPSHOT_START),
        *source_times.probe_columns(debezium, shape == JSON, op, F.col("_s_snapshot"), "_s_ts_ms"),
    )


def aggregates() -> list[Column]:
    """What the checking job gathers per topic partition from the ``PROBE`` columns (``gather``
    then combines them per topic)."""
    from pyspark.sql import functions as F

    at = F.struct("partition", "offset")
    debezium = F.col(SHAPE).isin(*DEBEZIUM)
    return [
        F.min(
            F.when(F.col(SHAPE).isNotNull(), F.struct("partition", "offset", F.col(SHAPE).alias("shape")))
        ).alias("first"),
        F.collect_set(SHAPE).alias("shapes"),
        F.collect_set(F.when(F.col(SHAPE) == WRAPPED, F.col(SCHEMA))).alias("schemas"),
        F.collect_set(F.when(debezium, F.col(KEY_FIELDS))).alias("key_fields"),
        F.count(F.when(debezium & F.col("key").isNull() & (F.col(OP) != "t"), 1)).alias("keyless"),
        F.min(F.when(debezium & (F.col(OP) == "t"), at)).alias("truncate_at"),
        F.min(F.when(debezium & F.col(OP).isin("u", "d"), at)).alias("change_at"),
        F.min(F.when(debezium & F.col(UNAVAILABLE), at)).alias("toast_at"),
        F.min(F.when(F.col("value").isNull(), at)).alias("tombstone_at"),
        F.min(F.when(F.col(SNAPSHOT_START), at)).alias("snapshot_at"),
        F.count(F.when(F.col(SNAPSHOT_START), 1)).alias("snapshots"),
        F.max(POSITION).alias("position"),
        *source_times.aggregates(),
    ]


def gather(probed: DataFrame, *, first: Mapping[str, Column], count: Mapping[str, Column]) -> list[Any]:
    """One row per topic of ``probed`` (a batch's messages, probed): ``aggregates`` per topic
    partition combined, each partition's highest source position kept apart (``positions``: a
    key's events share a partition, and only within one does Kafka keep their order); and the
    caller's ``first`` (the least value) and ``count`` (of non-NULL values), by name. One job."""
    from pyspark.sql import functions as F

    mins = [F.min(c).alias(n) for n, c in first.items()]
    counts = [F.count(c).alias(n) for n, c in count.items()]
    per_partition = probed.groupBy("topic", "partition").agg(*mins, *counts, *aggregates())
    union = F.array_distinct
    return (
        per_partition.groupBy("topic")
        .agg(
            *[F.min(n).alias(n) for n in first],
            *[F.sum(n).alias(n) for n in count],
            F.min("first").alias("first"),
            union(F.flatten(F.collect_list("shapes"))).alias("shapes"),
            union(F.flatten(F.collect_list("schemas"))).alias("schemas"),
            union(F.flatten(F.collect_list("key_fields"))).alias("key_fields"),
            F.sum("keyless").alias("keyless"),
            F.sum("snapshots").alias("snapshots"),
            *[
                F.min(n).alias(n)
                for n in ("truncate_at", "change_at", "toast_at", "tombstone_at", "snapshot_at")
            ],
            F.collect_list(F.when(F.col("position").isNotNull(), F.struct("partition", "position"))).alias(
                "positions"
            ),
            *source_times.combined(),
        )
        .collect()
    )


@dataclass(frozen=True)
class TopicBatch:
    """One topic's messages in a batch, as the checking job found them."""

    topic: str
    shape: str | None  # None: only tombstones
    first: tuple[int, int] | None  # partition and offset of the first message with a shape
    shapes: tuple[str, ...]
    schemas: tuple[str, ...]  # the Connect ``fields`` of wrapped events, as text
    key_fields: tuple[str, ...]  # the keys' field names, as JSON arrays
    keyless: int  # Debezium events without a key
    truncate_at: tuple[int, int] | None
    change_at: tuple[int, int] | None  # the first update or delete
    toast_at: tuple[int, int] | None
    tombstone_at: tuple[int, int] | None
    snapshot_at: tuple[int, int] | None = None  # the first event of a Debezium snapshot
    snapshots: int = 0  # snapshots begun in the batch
    positions: Mapping[int, Position] = field(default_factory=dict)  # per partition, the highest
    times: TopicTimes = field(default_factory=TopicTimes)  # when its changes happened (``source_times``)

    @property
    def position(self) -> Position | None:
        """The highest source position of the batch's events, over its partitions."""
        return max(self.positions.values()) if self.positions else None

    @classmethod
    def of(cls, row: Any, known: str | None) -> TopicBatch:
        """From the checking job's row; ``known``: the shape the stream recorded for the topic."""

        def pos(value: Any) -> tuple[int, int] | None:
            return None if value is None else (int(value["partition"]), int(value["offset"]))

        first = row["first"]
        shape = known or (first["shape"] if first is not None else None)
        return cls(
            row["topic"],
            shape,
            pos(first),
            tuple(sorted(row["shapes"])),
            tuple(sorted(row["schemas"])),
            tuple(sorted(row["key_fields"])),
            int(row["keyless"]),
            pos(row["truncate_at"]),
            pos(row["change_at"]),
            pos(row["toast_at"]),
            pos(row["tombstone_at"]),
            pos(row["snapshot_at"]),
            int(row["snapshots"] or 0),
            {int(p["partition"]): found for p in row["positions"] if (found := of_row(p["position"]))},
            TopicTimes.of(row),
        )

    def where(self, at: tuple[int, int] | None) -> str:
        return f"Topic {self.topic}" + ("" if at is None else f" partition {at[0]} offset {at[1]}")

    def check(self, table: str) -> None:
        """Refuse, in one line naming the first message at fault: a shape other than the
        topic's, Avro, a truncate, or the placeholder of a TOASTed value."""
        if self.shape == AVRO or AVRO in self.shapes:
            raise ChangeFeedError(
                f"{self.where(self.first)}: the message is Avro framed for a schema registry, which "
                "this mirror does not read; write the topic with Kafka Connect's JsonConverter "
                "(value.converter=org.apache.kafka.connect.json.JsonConverter)."
            )
        others = [s for s in self.shapes if s != self.shape]
        if others:
            raise ChangeFeedError(
                f"Topic {self.topic} carries {self.shape} (so recorded from its first message), and "
                f"this batch also has {others[0]}; nothing of the batch was published: write one "
                "shape to a topic, or map the other to a table of its own with tables=."
            )
        if self.shape not in DEBEZIUM:
            return
        if self.truncate_at is not None:
            raise ChangeFeedError(
                f"{self.where(self.truncate_at)}: a truncate (op t) of table {table}, which a mirror cannot "
                "apply as changes; nothing of the batch was published: reload the table from a full copy "
                "(db.apply_schema_change), or leave truncates out (the connector's skipped.operations=t)."
            )
        if self.toast_at is not None:
            raise ChangeFeedError(
                f"{self.where(self.toast_at)}: an update of table {table} holds Debezium's "
                f"{PLACEHOLDER!r} for a TOASTed value it did not send; nothing of the batch was "
                f"published: ALTER TABLE {table} REPLICA IDENTITY FULL in PostgreSQL, then reload the table."
            )
        if self.keyless and self.change_at is not None and not self.key_names():
            raise ChangeFeedError(
                f"{self.where(self.change_at)}: an update or delete of table {table}, which has no key "
                "(its messages carry none), so the mirror takes inserts only; nothing of the batch was "
                "published: give the source table a primary key, or keys= and REPLICA IDENTITY FULL."
            )

    def key_names(self) -> tuple[str, ...]:
        """The key's fields, as the messages' Kafka keys name them (one set, or refused)."""
        found = {tuple(json.loads(k)) for k in self.key_fields if k}
        if len(found) > 1:
            shown = " and ".join(str(list(k)) for k in sorted(found))
            raise ChangeFeedError(
                f"Topic {self.topic}: the messages' keys name different fields ({shown}) in one batch; a "
                "table keeps one key: give it in keys=."
            )
        return next(iter(found), ())

    def connect_groups(self) -> dict[str, list[dict[str, Any]]]:
        """Per Connect schema the batch's events carry (its text, as the ``SCHEMA`` column holds
        it), the fields of the rows' schema (``after``'s); a batch spanning a change of the
        source table carries two. Empty without schemas."""
        groups: dict[str, list[dict[str, Any]]] = {}
        for text in self.schemas:
            groups[text] = [
                one
                for part in json.loads(text)
                if part.get("field") == "after" and part.get("type") == "struct"
                for one in part.get("fields", [])
            ]
        return groups
