"""Key state: what was last pushed, as key columns + a 128-bit row hash (design §4).

The row hash is two independent 64-bit ``xxhash64`` values over the non-key data columns in name
order (different seeds: the second starts from the hash of a constant salt), preceded by bitmasks
of which of them are NULL, one per 62 columns (``xxhash64`` skips NULLs, so ``(NULL, 1)`` and
``(1, NULL)`` would otherwise collide). ``xxhash64`` is a built-in Spark SQL function (no Python
in the loop; bucketing uses Spark's Murmur3 ``hash``, see ``pipeline.keystate.buckets``) and is computed
identically by Spark 3.5 and 4.x. Values are hashed as the landing zone holds them: complex values
as their JSON text, timestamps as microseconds, decimals by value at the column's scale (so a
precision or scale change is a type change, refused earlier). Floating point ``-0.0`` is hashed as
``0.0`` and every NaN as the one canonical NaN, matching Spark's own equality for those values.

State files live in the table's own folder, under ``_openmirror/keystate/<incarnation>.<push id>/``
(``TableFolder.keystate``), so deleting the table folder deletes them too: one *base* (a full
snapshot) and *deltas*, one per later push holding only the keys it touched,
each with one row per key: ``keys..., _om_rows, _om_h1, _om_h2[, _om_change]``; a small change
feed's delta is instead a copy of its own data files, whose state rows are derived as it is read
(``read_delta``, ``pipeline.keystate.feed_state``). ``_om_rows`` is
how many rows the key has (0 = deleted); ``_om_change`` marks what a snapshot diff published for
the key. Writing a diff's few touched keys instead of the whole next state is what keeps a diff
cheaper than a full load; once the deltas pass ``compaction_due``'s bounds, the next push
(snapshot diff or change feed) writes the whole state as a new base instead. The base's files
are hash buckets on the keys when ``PushState.buckets`` says so (``pipeline.keystate.buckets``); deltas,
being small, need no layout. A snapshot diff is in ``pipeline.keystate.snapdiff``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.model import ROW_MARKER, RowMarker, TableOptions
from openmirror_nb._core.pipeline.keystate import buckets as buckets_mod
from openmirror_nb._core.pipeline.push.stage import PART_NAME, read_staged

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation, SparkSession
    from pyspark.sql.types import StructType

    from openmirror_nb._core.landing_zone.push_state import PushState

ROWS, H1, H2, CHANGE = "_om_rows", "_om_h1", "_om_h2", "_om_change"
_SALT = "openmirror_nb/row-hash/3"
_ORDER, _SOURCE, _CHANGES = "_om_order", "_om_source", "_om_changes"

# Deltas are applied to the base by a broadcast while their rows stay under this bound (about
# 40 MB of hash relation for a one-column key), which also caps how far they may grow.
BROADCAST_ROWS = 1_000_000
# Deltas stop growing at this fraction of the base (or at MAX_DELTAS pushes), whichever is first:
# past it, rewriting the base once costs less than re-reading the deltas on every diff.
COMPACT_FRACTION = 0.1
COMPACT_MIN_ROWS = 100_000
MAX_DELTAS = 16


def compaction_due(state: PushState | None) -> bool:
    """Whether the next push should write a whole new base instead of another delta.

    ``None`` counts are states written before they were recorded: compacted at once.
    """
    if state is None or not state.deltas:
        return False
    if state.base_rows is None or state.delta_rows is None or len(state.deltas) >= MAX_DELTAS:
        return True
    bound = min(max(COMPACT_MIN_ROWS, int(state.base_rows * COMPACT_FRACTION)), BROADCAST_ROWS)
    return state.delta_rows > bound


def row_hashes(df: DataFrame, *, keys: tuple[str, ...], skip: tuple[str, ...] = ()) -> tuple[Column, Column]:
    """The two 64-bit row hashes over the non-key data columns of ``df`` (not those in ``skip``).

    Built as SQL text, two calls to the JVM instead of a few per column (a small push builds
    its whole plan in the time its data takes to write): the same expressions, the same values.
    """
    from pyspark.sql import functions as F

    values: list[str] = []
    masks: list[str] = []
    fields = [
        f
        for f in sorted(df.schema.fields, key=lambda f: f.name)
        if f.name not in keys and f.name != ROW_MARKER and f.name not in skip
    ]
    for i, field in enumerate(fields):
        col, kind = quoted(field.name), field.dataType.typeName()
        # -0.0 hashes as 0.0 (NaN is one value in Spark's hash already)
        values.append(
            f"CASE WHEN {col} = 0 THEN CAST(0.0 AS {kind}) ELSE {col} END" if kind in _FLOATS else col
        )
        # One bit per column says where the NULLs are: one hash input per 62 columns instead of one each.
        bit = f"CASE WHEN {col} IS NULL THEN {1 << (i % 62)} ELSE 0 END"
        if i % 62 == 0:
            masks.append(bit)
        else:
            masks[-1] = f"{masks[-1]} + {bit}"
    parts = ", ".join([*masks, *values]) or "true"
    return F.expr(f"xxhash64({parts})"), F.expr(f"xxhash64('{_SALT}', {parts})")


_FLOATS = ("float", "double")


def delta_state(
    staged: DataFrame,
    *,
    keys: tuple[str, ...],
    has_row_index: bool = True,
    count: bool = False,
    position: str | None = None,
) -> DataFrame:
    """One row per key of a published change set: the key's state after its last change (with
    ``count``, also how many changes the key had, for ``count_repeated``).

    Publication order is the staged part order (Spark task, then file counter) and the row
    position inside the part, which is exactly the order the mirror applies them in. Text files
    have no ``_metadata.row_index``; their reading order stands in (a staged text part is read as
    one split, being far smaller than ``spark.sql.files.maxPartitionBytes``). ``position``: a
    column of ``staged`` (not hashed) that already holds each row's place in publication order,
    for a frame that is not read from the files (``pipeline.keystate.feed_state``).
    """
    from pyspark.sql import functions as F

    h1, h2 = row_hashes(staged, keys=keys, skip=(position,) if position else ())
    order: Column
    if position is not None:
        order = F.col(position)
    else:
        name = F.col("_metadata.file_name")
        place = F.col("_metadata.row_index") if has_row_index else F.monotonically_increasing_id()
        # Materialised first: an aggregate may not take a non-deterministic argument.
        staged = staged.withColumn(_ORDER, place)
        order = F.struct(
            F.regexp_extract(name, PART_NAME, 1).cast("long"),
            F.regexp_extract(name, PART_NAME, 2).cast("long"),
            F.col(_ORDER),
        )
    last = F.max_by(F.struct(F.col(ROW_MARKER).alias("m"), h1.alias("h1"), h2.alias("h2")), order)
    changes = [F.count(F.lit(1)).alias(_CHANGES)] if count else []
    grouped = staged.groupBy(*[F.col(quoted(k)) for k in keys]).agg(last.alias("last"), *changes)
    deleted = F.col("last.m") == int(RowMarker.DELETE)
    return grouped.select(
        *[F.col(quoted(k)) for k in keys],
        F.when(deleted, 0).otherwise(1).cast("long").alias(ROWS),
        F.col("last.h1").alias(H1),
        F.col("last.h2").alias(H2),
        *([F.col(_CHANGES)] if count else []),
    )


def read_effective(
    spark: SparkSession,
    *,
    base: str | None,
    deltas: list[str],
    keys: tuple[str, ...],
    small_deltas: bool,
    latest: DataFrame | None = None,
    place: int | None = None,
    schema: StructType | None = None,
    feeds: Mapping[str, StructType] | None = None,
) -> DataFrame | None:
    """The current state: the base snapshot with every later delta applied, live keys only.

    With ``small_deltas`` (the deltas' rows are known to fit a broadcast) the merged deltas are
    applied to the base by a broadcast anti-join, so the base is read without a shuffle;
    otherwise base and deltas are merged by one group-by on the key, into ``place`` buckets if
    given (see ``pipeline.keystate.buckets``). ``latest`` is one more delta, not yet written, applied
    after the others. ``schema``: see ``read_state``; ``feeds``: see ``read_delta``.
    """
    from pyspark.sql import functions as F

    sources = [read_state(spark, base, schema=schema)] if base else []
    sources += [read_delta(spark, uri, keys=keys, schema=schema, feeds=feeds) for uri in deltas]
    sources += [latest] if latest is not None else []
    if not sources:
        return None
    frames = _frames(sources, keys=keys)
    if len(frames) == 1:
        return frames[0].where(F.col(ROWS) > 0).drop(_SOURCE)
    if base and small_deltas:
        changed = _latest(frames[1:], keys=keys)
        touched = F.broadcast(changed.select(*[F.col(quoted(k)) for k in keys]))
        kept = frames[0].drop(_SOURCE).join(touched, list(keys), "left_anti")
        return kept.unionByName(changed).where(F.col(ROWS) > 0)
    return _latest(frames, keys=keys, buckets=place).where(F.col(ROWS) > 0)


def merge_deltas(
    spark: SparkSession,
    deltas: list[str],
    *,
    keys: tuple[str, ...],
    schema: StructType | None = None,
    single: bool = False,
    feeds: Mapping[str, StructType] | None = None,
) -> DataFrame:
    """Per key the row of the newest delta that has it, tombstones (``_om_rows`` 0) included;
    with ``single``, merged in one partition (no shuffle). ``feeds``: see ``read_delta``."""
    read = [read_delta(spark, uri, keys=keys, schema=schema, feeds=feeds) for uri in deltas]
    frames = _frames(read, keys=keys)
    return _latest(frames, keys=keys, single=single)


def state_schema(frame: StructType, keys: tuple[str, ...], *, change: bool = False) -> StructType:
    """The columns of a key state written from a frame of schema ``frame``: its keys, then
    ``_om_rows``, ``_om_h1``, ``_om_h2`` (and ``_om_change`` if ``change``)."""
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    # the key's type only: its metadata (a Delta source's Parquet field id) is not the state's
    fields = [StructField(k, frame[k].dataType) for k in keys] + [
        StructField(c, LongType()) for c in (ROWS, H1, H2)
    ]
    return StructType(fields + ([StructField(CHANGE, IntegerType())] if change else []))


def read_state(spark: SparkSession, uri: str, *, schema: StructType | None) -> DataFrame:
    """A key-state folder; with its ``schema`` (``state_schema``) no Spark job reads a footer
    to infer it."""
    return (spark.read if schema is None else spark.read.schema(schema)).parquet(uri)


def read_delta(
    spark: SparkSession,
    uri: str,
    *,
    keys: tuple[str, ...],
    schema: StructType | None,
    feeds: Mapping[str, StructType] | None,
) -> DataFrame:
    """A delta's state rows. A delta in ``feeds`` (URI -> its files' schema) holds a change
    feed's own data files, as published (``pipeline.keystate.feed_state``): its state is each key's last
    change, in publication order (``delta_state``), grouped in one task (such a feed is small)."""
    feed = (feeds or {}).get(uri)
    if feed is None:
        return read_state(spark, uri, schema=schema)
    rows = read_staged(spark, uri=uri, schema=feed, options=TableOptions())
    return delta_state(rows.coalesce(1), keys=keys)


def count_repeated(delta: DataFrame) -> tuple[DataFrame, Observation]:
    """``delta`` (``delta_state(..., count=True)``) without its count, observed for keys that
    changed more than once (``observation.get["repeated"]``, once it is written)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation()
    repeated = F.sum(F.when(F.col(_CHANGES) > 1, 1).otherwise(0)).alias("repeated")
    return delta.observe(observation, repeated).drop(_CHANGES), observation


def _frames(sources: list[DataFrame], *, keys: tuple[str, ...]) -> list[DataFrame]:
    from pyspark.sql import functions as F

    cols = [*keys, ROWS, H1, H2]
    return [
        df.select(*[F.col(quoted(c)) for c in cols]).withColumn(_SOURCE, F.lit(i))
        for i, df in enumerate(sources)
    ]


def _latest(
    frames: list[DataFrame], *, keys: tuple[str, ...], buckets: int | None = None, single: bool = False
) -> DataFrame:
    """Per key, the row of the newest frame that has it (tombstones included); grouped within
    ``buckets`` hash partitions when given, so the result has that bucket layout."""
    from pyspark.sql import functions as F

    if len(frames) == 1:  # one delta already holds one row per key
        return frames[0].drop(_SOURCE)
    merged = frames[0]
    for frame in frames[1:]:
        merged = merged.unionByName(frame)
    merged = merged.coalesce(1) if single else buckets_mod.place(merged, keys=keys, buckets=buckets)
    latest = F.max_by(F.struct(F.col(ROWS), F.col(H1), F.col(H2)), F.col(_SOURCE)).alias("s")
    state = merged.groupBy(*[F.col(quoted(k)) for k in keys]).agg(latest)
    return state.select(
        *[F.col(quoted(k)) for k in keys],
        F.col(f"s.{ROWS}").alias(ROWS),
        F.col(f"s.{H1}").alias(H1),
        F.col(f"s.{H2}").alias(H2),
    )
