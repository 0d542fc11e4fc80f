"""Debezium change events, in the shapes a Spark reader gets them, as one flat change feed.

``spark.read.json`` of a topic (or ``from_json`` on a Kafka value) yields one of three shapes,
told apart from the schema alone:

- the envelope: ``before``/``after`` row images, ``op``, ``ts_ms``, ``source``, ``transaction``,
  wrapped in ``payload`` (beside ``schema``) when the JSON converter writes its schema;
- ExtractNewRecordState's output: the row plus the fields it adds, prefixed ``__`` (``__op``,
  ``__deleted``, ``__source_lsn``, ...);
- a feed flattened by hand: the row plus an op column.

Each becomes the row's columns, the op letter (``OP``) and ordering columns that order each key's
events but are never published: only row fields become table columns, never envelope metadata
or ``__`` fields.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ChangeFeedError, KeyColumnsError, did_you_mean, preview
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.pipeline.feeds.debezium_fields import (
    ENVELOPE_ORDER,
    FLAT_ORDER,
    field,
    field_type,
    leaves,
    ordering,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType

OP = "_openmirror_op"
ORDER_PREFIX = "_openmirror_by_"
META_PREFIX = "__"  # ExtractNewRecordState's add.fields.prefix
_OPS = ("c", "r", "u", "d")
_IMAGES = ("before", "after")
_CORRUPT = "_corrupt_record"  # where spark.read.json puts lines it cannot parse
_OLD = "_openmirror_old_key"


@dataclass(frozen=True)
class Feed:
    """One Debezium feed, read: its events and where each part of an event is found."""

    shape: str  # for messages: "envelope", "ExtractNewRecordState output" or "flattened feed"
    events: DataFrame  # one row per event: payload unwrapped, tombstones dropped
    op_label: str  # where the operation is read, for messages
    op_raw: Column  # the operation as given
    deleted: Column | None  # ExtractNewRecordState's __deleted, lower-case text
    after: dict[str, Column]  # each table column's value in a create, snapshot read or update
    before: dict[str, Column]  # each table column's value in a delete (only keys are used)
    kinds: dict[str, DataType]  # each table column's type
    moves: bool  # before and after are separate images, so an update may move a key
    before_has: tuple[str, ...]  # the before image's fields, when it is a struct
    order: tuple[tuple[str, Column], ...]  # (name as given, value) ordering each key's events

    def letter(self) -> Column:
        """The op letter; NULL (an invalid operation) where __deleted or an ordering field cannot
        be read, so the staged-file check rejects the push and ``invalid_error`` says why."""
        from pyspark.sql import functions as F

        text = F.lower(F.trim(self.op_raw.cast("string")))
        if self.deleted is not None:
            # rewrite mode sends a delete as the row's last state with __deleted = 'true'
            text = F.when(self.deleted == "true", F.lit("d")).when(
                self.deleted.isNull() | (self.deleted == "false"), text
            )
        return F.when(_all([v.isNotNull() for _, v in self.order]), text)

    def rows(self, keys: tuple[str, ...]) -> tuple[DataFrame, tuple[str, ...]]:
        """The flat feed: table columns, ``OP``, then the ordering columns (also returned)."""
        from pyspark.sql import functions as F

        missing = [k for k in keys if k not in self.after]
        if missing:
            raise KeyColumnsError(
                f"Key column {missing[0]!r} is not in the Debezium {self.shape} (columns: "
                f"{', '.join(self.after)}).{did_you_mean(missing[0], self.after)}"
            )
        lacking = [k for k in keys if self.moves and k not in self.before_has]
        if lacking:
            raise ChangeFeedError(
                f"Key column {lacking[0]!r} is not in Debezium's 'before' image (fields: "
                f"{', '.join(self.before_has)}), where a delete carries the key of the row it deletes; "
                "capture keys in before (PostgreSQL: REPLICA IDENTITY DEFAULT or FULL)."
            )
        letter, events = self.letter(), self.events
        gone, op = letter == "d", letter
        if self.moves:
            # An update whose before image holds another key moved the row: delete the old key too.
            old = [self.before[k] for k in keys]
            moved = (
                (letter == "u")
                & _all([o.isNotNull() for o in old])
                & ~_all([o.eqNullSafe(self.after[k]) for o, k in zip(old, keys, strict=True)])
            )
            both = F.array(F.lit(True), F.lit(False))
            events = events.withColumn(_OLD, F.explode(F.when(moved, both).otherwise(F.array(F.lit(False)))))
            gone, op = F.col(_OLD) | gone, F.when(F.col(_OLD), F.lit("d")).otherwise(letter)

        def key(name: str) -> Column:
            return F.when(gone, self.before[name]).otherwise(self.after[name])

        columns = [(key(n) if n in keys else v).alias(n) for n, v in self.after.items()]
        names = tuple(f"{ORDER_PREFIX}{i}" for i in range(len(self.order)))
        order = [value.alias(name) for (_, value), name in zip(self.order, names, strict=True)]
        return events.select(*columns, op.alias(OP), *order), names

    def invalid_error(self) -> ChangeFeedError:
        """Why some events have no valid op letter (``letter``); runs Spark jobs, error path only."""
        from pyspark.sql import functions as F

        live = self.events
        if self.deleted is not None:
            bad = live.where(self.deleted.isNotNull() & ~self.deleted.isin("true", "false"))
            if seen := _seen(bad, self.deleted):
                return ChangeFeedError(
                    f"{bad.count():,} Debezium event(s) have __deleted value(s) {seen}; "
                    "ExtractNewRecordState writes 'true' or 'false' there: push its output unchanged."
                )
            live = live.where(F.coalesce(self.deleted, F.lit("false")) != "true")
        text = F.lower(F.trim(self.op_raw.cast("string")))
        bad = live.where(text.isNull() | ~text.isin(*_OPS))
        if seen := _seen(bad, self.op_raw):
            return ChangeFeedError(
                f"{bad.count():,} Debezium event(s) have {self.op_label} value(s) {seen}; Debezium's "
                "op is c (create), r (snapshot read), u (update) or d (delete): filter the others out "
                "(t, a truncate, has no rows to mirror)."
            )
        for name, value in self.order:
            count = self.events.where(value.isNull()).count()
            if count:
                return ChangeFeedError(
                    f"{count:,} Debezium event(s) have no value (None) in ordering field {name!r}, so "
                    "their order is unknown: drop them, or pass order_by=[...] naming fields every "
                    "event carries."
                )
        return ChangeFeedError(f"Some events of this Debezium {self.shape} could not be read.")


def read_feed(df: DataFrame, *, op_column: str | None, order_by: tuple[str, ...]) -> Feed:
    """Tell the shape of a Debezium DataFrame from its schema and read it. No Spark job runs,
    except to name lines that are not JSON or an ``after`` that holds text."""
    from pyspark.sql import functions as F

    if _CORRUPT in df.columns:
        _refuse_corrupt(df)
    # A tombstone (the null value that follows a delete in Kafka) reads as a row of NULLs.
    events = df.where(~_all([F.col(quoted(c)).isNull() for c in df.columns]))
    wrapped = "payload" in df.columns and set(df.columns) <= {"schema", "payload", _CORRUPT}
    if wrapped:
        kind = df.schema["payload"].dataType
        if kind.typeName() != "struct":
            raise ChangeFeedError(
                f"Debezium's 'payload' is {kind.simpleString()}, not the event; parse it with "
                "F.from_json('payload', schema) or read the topic with spark.read.json."
            )
        events = events.select("payload.*")
    columns = events.columns
    if op_column in (None, "op") and "op" in columns and any(i in columns for i in _IMAGES):
        return _envelope(events, order_by, op_label="payload.op" if wrapped else "op")
    return _flat(events, op_column, order_by)


def _refuse_corrupt(df: DataFrame) -> None:
    from pyspark.sql import functions as F

    # Spark refuses a query of raw JSON that reads only the corrupt-record column: read one more.
    other = [quoted(c) for c in df.columns if c != _CORRUPT][:1]
    bad = df.where(F.col(_CORRUPT).isNotNull()).select(_CORRUPT, *other).limit(3).collect()
    if bad:
        shown = preview([r[0][:80] for r in bad])
        raise ChangeFeedError(
            f"Lines of this Debezium feed are not JSON (_corrupt_record: {shown}); fix them, or push "
            "df.where('_corrupt_record IS NULL').drop('_corrupt_record')."
        )


def _envelope(events: DataFrame, order_by: tuple[str, ...], *, op_label: str) -> Feed:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = events.schema
    images: dict[str, StructType] = {}
    for name in _IMAGES:
        kind = schema[name].dataType if name in schema.names else None
        if isinstance(kind, StructType):
            images[name] = kind
        elif kind is not None and kind.typeName() != "string":
            raise ChangeFeedError(
                f"Debezium's {name!r} is {kind.simpleString()}, not a struct of the row's columns; read "
                f"the topic with spark.read.json, or give {name!r} a struct type in from_json's schema."
            )
    # spark.read.json types an image that is NULL in every event as string (a batch of deletes
    # has no after); text in it is an image this reader cannot see into.
    if "after" not in images and "after" in schema.names:
        text = events.where(F.col("after").isNotNull()).select("after").limit(1).collect()
        if text:
            raise ChangeFeedError(
                f"Debezium's 'after' holds text, not a struct of the row's columns (e.g. "
                f"{text[0]['after'][:60]!r}); parse it with F.from_json('after', schema) or read the "
                "topic with spark.read.json."
            )
    if not images:
        raise ChangeFeedError(
            "Debezium's 'before' and 'after' are not structs of the row's columns; parse them with "
            "F.from_json('after', schema) or read the topic with spark.read.json."
        )
    table = images.get("after") or images["before"]  # the table's columns and their types
    kinds = {f.name: f.dataType for f in table}

    def image(side: str, name: str) -> Column:
        if side in images and name in images[side].names:
            return F.col(side).getField(name).cast(kinds[name])
        return F.lit(None).cast(kinds[name])

    after = {n: image("after", n) for n in kinds}
    before = {n: image("before", n) for n in kinds}
    deleting = F.lower(F.trim(F.col("op").cast("string"))) == "d"

    def resolve(name: str) -> tuple[DataType, Column] | None:
        head, _, rest = name.partition(".")
        if head in _IMAGES and rest in kinds:
            name = rest
        elif head not in (*_IMAGES, "op") and (kind := field_type(schema, name)) is not None:
            return kind, field(name)
        if name in kinds:
            return kinds[name], F.when(deleting, before[name]).otherwise(after[name])
        return None

    known = [p for c in schema.names if c not in (*_IMAGES, "op") for p in leaves(schema[c].dataType, c)]
    order = ordering(order_by, ENVELOPE_ORDER, resolve, [*known, *kinds], "envelope")
    has = tuple(images["before"].names) if "before" in images else ()
    moves = len(images) == 2
    return Feed("envelope", events, op_label, F.col("op"), None, after, before, kinds, moves, has, order)


def _flat(events: DataFrame, op_column: str | None, order_by: tuple[str, ...]) -> Feed:
    from pyspark.sql import functions as F

    columns = events.columns
    op_name = op_column or next((c for c in ("__op", "op") if c in columns), None)
    has_deleted = "__deleted" in columns
    if (op_name is None and not has_deleted) or (op_name is not None and op_name not in columns):
        wanted = op_name or "op"
        raise ChangeFeedError(
            f"Operation column {wanted!r} is not in the DataFrame (columns: {', '.join(columns)}); a "
            "Debezium feed has an envelope (op, before, after), ExtractNewRecordState's __op or "
            f"__deleted, or an op column named by op_column.{did_you_mean(wanted, columns)}"
        )
    shape = "ExtractNewRecordState output" if op_name == "__op" or has_deleted else "flattened feed"
    data = [c for c in columns if c not in (op_name, _CORRUPT) and not c.startswith(META_PREFIX)]
    values = {c: F.col(quoted(c)) for c in data}
    kinds = {c: events.schema[c].dataType for c in data}
    deleted = F.lower(F.trim(F.col("__deleted").cast("string"))) if has_deleted else None
    # without __op, ExtractNewRecordState tells only deletes apart: the rest are upserts
    op = F.col(quoted(op_name)) if op_name else F.lit("c")

    def resolve(name: str) -> tuple[DataType, Column] | None:
        if name in columns:
            return events.schema[name].dataType, F.col(quoted(name))
        kind = field_type(events.schema, name)
        return None if kind is None else (kind, field(name))

    known = [p for c in columns for p in leaves(events.schema[c].dataType, c)]
    order = ordering(order_by, FLAT_ORDER, resolve, known, shape)
    label = op_name or "__deleted"
    return Feed(shape, events, label, op, deleted, values, values, kinds, False, (), order)


def _all(conditions: list[Column]) -> Column:
    from pyspark.sql import functions as F

    return functools.reduce(lambda a, b: a & b, conditions, F.lit(True))


def _seen(df: DataFrame, value: Column) -> str:
    rows = df.select(value.alias("v")).distinct().limit(6).collect()
    return preview([r["v"] for r in rows]) if rows else ""
