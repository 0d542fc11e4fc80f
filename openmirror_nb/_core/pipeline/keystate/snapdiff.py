"""A snapshot's key state, and the diff of a later snapshot against the stored one (design §4).

The stored state is a base (kept in hash buckets, see ``pipeline.keystate.buckets``, so it is read in
place) and the deltas of the pushes since. The deltas are small (``hashes.compaction_due``
bounds them) but applying them to the base takes a union, and a union loses the base's
partitioning, which would bring back the shuffle of the whole stored state. So the deltas'
merged rows instead join the new snapshot's rows in the one shuffle that side needs anyway: the
window that counts each key's new rows also carries the key's delta row, if any, and the join
with the base then takes the delta's hashes over the base's for those keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.model import RowMarker
from openmirror_nb._core.pipeline.keystate import buckets as buckets_mod
from openmirror_nb._core.pipeline.keystate import hashes
from openmirror_nb._core.pipeline.keystate.hashes import CHANGE, H1, H2, ROWS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

# a key's row in the merged deltas, carried on the new side: rows (0 = deleted), hashes
D_ROWS, D1, D2 = "_om_drows", "_om_d1", "_om_d2"
_NEW, O1, O2 = "_om_new", "_om_o1", "_om_o2"


def stored(
    spark: SparkSession,
    *,
    base: str | None,
    deltas: list[str],
    keys: tuple[str, ...],
    small_deltas: bool,
    buckets: int | None,
    place: int | None,
    schema: StructType | None = None,
    single: bool = False,
    feeds: Mapping[str, StructType] | None = None,
) -> tuple[DataFrame | None, DataFrame | None]:
    """The stored state as (the base's live rows, the deltas' merged rows).

    The base is read bucketed when it has ``buckets``. Deltas too large to carry on the new side
    are merged with the base instead (one group-by, into ``place`` buckets): (that merge, None).
    ``schema``: the state's columns (``hashes.state_schema``), so that no Spark job reads a
    file footer to find them; else they are read from the files. ``single``: a small state, read
    into one partition (see ``snapshot_state``), bucketed or not. ``feeds``: the deltas that
    hold a change feed's own files (``hashes.read_delta``).
    """
    from pyspark.sql import functions as F

    if deltas and not small_deltas:
        merged = hashes.read_effective(
            spark,
            base=base,
            deltas=deltas,
            keys=keys,
            small_deltas=False,
            place=place,
            schema=schema,
            feeds=feeds,
        )
        return merged, None
    old = None
    if base:
        plain = hashes.read_state(spark, base, schema=schema).select(
            *[quoted(c) for c in (*keys, ROWS, H1, H2)]
        )
        if buckets and not single:
            old = buckets_mod.read(spark, uris=[base], schema=plain.schema, keys=keys, buckets=buckets)
        old = (plain.coalesce(1) if single else plain if old is None else old).where(F.col(ROWS) > 0)
    merged = (
        hashes.merge_deltas(spark, deltas, keys=keys, schema=schema, single=single, feeds=feeds)
        if deltas
        else None
    )
    return old, merged


def snapshot_state(
    df: DataFrame,
    *,
    keys: tuple[str, ...],
    buckets: int | None = None,
    touched: DataFrame | None = None,
    single: bool = False,
) -> DataFrame:
    """One row per row of a snapshot: its key, hashes, and how many rows share the key (>1 = duplicate).

    A count over a window, not a group-by: the group-by's map-side hash map overflows and spills
    when nearly every key is distinct (the usual case), while the window's sort on the key is the
    one a later join on the key needs anyway, so the diff's join adds no shuffle on this side.
    The rows are shuffled into ``buckets`` hash partitions when given; with ``single`` (a
    snapshot small enough for one task) they are gathered into one partition instead, without a
    shuffle: one partition holds every key together, and meets a one-bucket base as it lies.
    With ``touched`` (merged delta rows), each key's delta row is carried as
    ``_om_drows``/``_om_d1``/``_om_d2``, and a key only in ``touched`` gets a row with
    ``_om_rows`` 0.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cols = [F.col(quoted(k)) for k in keys]
    h1, h2 = hashes.row_hashes(df, keys=keys)
    hashed = df.select(*cols, h1.alias(H1), h2.alias(H2))
    window = Window.partitionBy(*cols)
    if touched is None:
        placed = hashed.coalesce(1) if single else buckets_mod.place(hashed, keys=keys, buckets=buckets)
        count = F.count(F.lit(1)).over(window)
        return placed.select(*cols, count.cast("long").alias(ROWS), H1, H2)
    none = F.lit(None).cast("long")
    rows = hashed.select(
        *cols, H1, H2, F.lit(1).alias(_NEW), none.alias(D_ROWS), none.alias(D1), none.alias(D2)
    )
    extra = touched.select(
        *cols,
        none.alias(H1),
        none.alias(H2),
        F.lit(0).alias(_NEW),
        F.col(ROWS).alias(D_ROWS),
        F.col(H1).alias(D1),
        F.col(H2).alias(D2),
    )
    both = rows.unionByName(extra)
    placed = both.coalesce(1) if single else buckets_mod.place(both, keys=keys, buckets=buckets)
    # a key has one delta row at most, so max() over its window is that row's value
    state = placed.select(
        *cols,
        F.sum(_NEW).over(window).cast("long").alias(ROWS),
        H1,
        H2,
        _NEW,
        *[F.max(c).over(window).alias(c) for c in (D_ROWS, D1, D2)],
    )
    return state.where((F.col(_NEW) == 1) | (F.col(ROWS) == 0)).drop(_NEW)


def diff_states(
    new: DataFrame, old: DataFrame | None, *, keys: tuple[str, ...], update_marker: int
) -> DataFrame:
    """Join the new snapshot's state with the stored one: the next state, with what changed per key.

    ``_om_change`` is 0 for a new key, ``update_marker`` for a changed row, 2 for a key that is
    gone (kept as a tombstone with ``_om_rows`` 0) and NULL for an unchanged row. A key's delta
    row, where ``new`` carries one, is its stored state in place of the base's.
    """
    from pyspark.sql import functions as F

    carried = D_ROWS in new.columns
    if old is None and not carried:
        return new.withColumn(CHANGE, F.lit(int(RowMarker.INSERT)))
    # No presence flags: the window's count is never NULL on the new side, nor a hash on the old
    # one, and every column left out here is one less in the rows both shuffles carry.
    if old is None:
        none = F.lit(None).cast("long")
        joined = new.withColumn(O1, none).withColumn(O2, none)
    else:
        prior = old.select(*[F.col(quoted(k)) for k in keys], F.col(H1).alias(O1), F.col(H2).alias(O2))
        joined = new.join(prior, list(keys), "full_outer")
    o1, o2 = F.col(O1), F.col(O2)
    if carried:
        in_delta, live = F.col(D_ROWS).isNotNull(), F.col(D_ROWS) > 0
        o1 = F.when(in_delta, F.when(live, F.col(D1))).otherwise(o1)
        o2 = F.when(in_delta, F.when(live, F.col(D2))).otherwise(o2)
    is_new, is_old = F.coalesce(F.col(ROWS), F.lit(0)) > 0, o1.isNotNull()
    changed = (F.col(H1) != o1) | (F.col(H2) != o2)
    change = (
        F.when(is_new & ~is_old, int(RowMarker.INSERT))
        .when(~is_new, int(RowMarker.DELETE))
        .when(changed, update_marker)
    )
    if carried:  # a key deleted by a delta and absent from the snapshot has nothing to say
        joined = joined.where(is_new | is_old)
    return joined.select(
        *[F.col(quoted(k)) for k in keys],
        F.coalesce(F.col(ROWS), F.lit(0)).cast("long").alias(ROWS),
        F.col(H1),
        F.col(H2),
        change.cast("int").alias(CHANGE),
    )
