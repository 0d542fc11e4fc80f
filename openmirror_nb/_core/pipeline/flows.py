"""The three ways a push stages its files: initial load, snapshot diff, change feed.

Each flow writes the files to publish and the table's next key state, then checks them; none
publishes anything (see ``pipeline.context`` for what they share).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ChangeFeedError, preview
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.model import ROW_MARKER, RowMarker
from openmirror_nb._core.pipeline import checks, context, keystate, snapdiff, stage
from openmirror_nb._core.pipeline.context import StageContext, Staged

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def stage_initial(ctx: StageContext, shaped: DataFrame) -> Staged:
    """First push of a snapshot: every row, marker-free; its key state is read back from the
    staged files, so the source query runs once."""
    context.write_data(ctx, shaped, split=True)
    uri = ctx.uri(f"{ctx.staging}/parts")
    staged = stage.read_staged(ctx.spark, uri=uri, schema=shaped.schema, options=ctx.options)
    # counted first (footers, or one Spark job for text) to size the key state's buckets
    stats = None if ctx.options.is_delimited else stage.footer_stats(uri)
    if stats is None:
        ctx.step("counting rows per file")
        stats = stage.staged_stats(
            ctx.spark, uri=uri, options=ctx.options, schema=shaped.schema, keys=ctx.keys
        )
    n = context.bucket_target(ctx, None, rows=sum(stats.rows_by_file.values()))
    seen = context.write_state(ctx, snapdiff.snapshot_state(staged, keys=ctx.keys, buckets=n), buckets=n)
    context.check_state(ctx, seen)
    return context.finish(
        ctx, shaped.schema, split=True, new_base=True, state_rows=None, stats=stats, buckets=seen["buckets"]
    )


def stage_diff(ctx: StageContext, shaped: DataFrame, *, prior: PushState, update_marker: int) -> Staged:
    """A later snapshot: one join of key states finds what changed; only those rows are written.

    The key state written is a delta of the touched keys, or the whole next state when the
    deltas have grown past ``keystate.compaction_due``. Rows with duplicate keys are always
    written, so that the error can name them.
    """
    from pyspark.sql import functions as F

    compact = keystate.compaction_due(prior)
    # Both sides in the stored state's buckets: the stored side is then read without a shuffle,
    # and the join's output (the next state) is in the same buckets.
    n = context.bucket_target(ctx, prior, rows=0)
    old, touched = context.stored(ctx, prior, place=n)
    new = snapdiff.snapshot_state(shaped, keys=ctx.keys, buckets=n, touched=touched)
    diff = snapdiff.diff_states(new, old, keys=ctx.keys, update_marker=update_marker)
    changed = F.col(keystate.CHANGE).isNotNull()
    if compact:
        seen = context.write_state(ctx, diff, buckets=n)
    else:
        seen = context.write_state(ctx, diff, keep=changed | (F.col(keystate.ROWS) > 1))
    context.check_state(ctx, seen)
    counts = {int(m): seen[f"change_{int(m)}"] for m in RowMarker if seen[f"change_{int(m)}"]}
    total = sum(counts.values())
    changes = ctx.spark.read.parquet(ctx.uri(ctx.state_dir)).where(changed)
    keys = [F.col(f"`{k}`") for k in ctx.keys]
    touched = changes.where(F.col(keystate.CHANGE) != int(RowMarker.DELETE)).select(*keys, keystate.CHANGE)
    if total <= keystate.BROADCAST_ROWS:
        # the source is read a second time: a broadcast of the few changed keys keeps it map-only
        touched = F.broadcast(touched)
    upserts = shaped.join(touched, list(ctx.keys))
    data = [F.col(f"`{f.name}`") for f in shaped.schema.fields]
    typed_nulls = [
        F.col(f"`{f.name}`") if f.name in ctx.keys else F.lit(None).cast(f.dataType).alias(f.name)
        for f in shaped.schema.fields
    ]
    deletes = changes.where(F.col(keystate.CHANGE) == int(RowMarker.DELETE))
    rows = upserts.select(*data, F.col(keystate.CHANGE).cast("int").alias(ROW_MARKER)).unionByName(
        deletes.select(*typed_nulls, F.col(keystate.CHANGE).cast("int").alias(ROW_MARKER))
    )
    # Each key occurs once in a diff, so its rows are dealt straight into as many files as the
    # row count needs, rather than written as many fragments and merged afterwards.
    files = max(1, math.ceil(total / ctx.rows_per_file))
    context.write_data(ctx, rows.repartition(files), split=True)
    return context.finish(
        ctx,
        rows.schema,
        split=True,
        new_base=compact,
        state_rows=seen["rows"] if compact else None,
        stats=_diff_stats(ctx, counts),
        buckets=seen["buckets"],
    )


def _diff_stats(ctx: StageContext, counts: dict[int, int]) -> stage.StagedStats | None:
    """Rows per file from the Parquet footers, per marker from the key state, when they agree.

    They differ only when the source query returned other rows on its second read (a table
    written to meanwhile); Spark then counts what was really staged.
    """
    if ctx.options.is_delimited:
        return None
    footers = stage.footer_stats(ctx.uri(f"{ctx.staging}/parts"))
    if footers is None or sum(footers.rows_by_file.values()) != sum(counts.values()):
        return None
    return stage.StagedStats(footers.rows_by_file, {int(m): n for m, n in counts.items()}, 0)


def stage_changes(
    ctx: StageContext,
    rows: DataFrame,
    *,
    unique_keys: bool,
    invalid_values: Any,
    prior: PushState | None,
) -> Staged:
    """A change feed: files hold whole keys in order; the key state records each key's last change.

    ``invalid_values`` is called only when operation values outside the convention were found,
    to name a few of them in the error. The key state written is this push's delta or, once the
    deltas have grown past ``keystate.compaction_due``, the whole state as a new base, so a table
    fed only by change pushes does not pile up deltas.
    """
    context.write_data(ctx, rows, split=False)
    uri = ctx.uri(f"{ctx.staging}/parts")
    ctx.step("counting rows per file and operation")
    stats = stage.staged_stats(ctx.spark, uri=uri, schema=rows.schema, keys=ctx.keys, options=ctx.options)
    bad = stats.rows_by_marker.get(-1, 0)
    checks.check_stats(stats, keys=ctx.keys, table=ctx.table, invalid_values=invalid_values() if bad else ())
    staged = stage.read_staged(ctx.spark, uri=uri, schema=rows.schema, options=ctx.options)
    if unique_keys:
        dupes = stage.duplicate_keys(
            ctx.spark, uri=uri, schema=rows.schema, options=ctx.options, keys=ctx.keys
        )
        if dupes:
            raise ChangeFeedError(
                f"Keys {preview([d[0] if len(d) == 1 else d for d in dupes])} occur more than once in this "
                f"sys_op batch of table {ctx.table!r}; a Prostore delta allows one change per key."
            )
    delta = keystate.delta_state(staged, keys=ctx.keys, has_row_index=not ctx.options.is_delimited)
    written: int | None = None
    if prior is not None and keystate.compaction_due(prior):
        n = context.bucket_target(ctx, prior, rows=sum(stats.rows_by_file.values()))
        merged = context.effective(ctx, prior, latest=delta, place=n) or delta
        seen = context.write_state(ctx, merged, buckets=n)
        written = seen["rows"]
    else:
        seen = context.write_state(ctx, delta)
    return context.finish(
        ctx,
        rows.schema,
        split=False,
        new_base=written is not None,
        state_rows=written,
        stats=stats,
        buckets=seen["buckets"],
    )


def check_strict_deletes(ctx: StageContext, deletes: DataFrame, *, prior: PushState | None) -> None:
    """Prostore's rule (contract §9): a delete must carry exactly the current row, else the whole
    batch is refused. Compared through the key state's row hashes."""
    from pyspark.sql import functions as F

    old = context.effective(ctx, prior) if prior else None
    h1, h2 = keystate.row_hashes(deletes, keys=ctx.keys)
    asked = deletes.select(*[F.col(f"`{k}`") for k in ctx.keys], h1.alias("_d1"), h2.alias("_d2"))
    if old is None:
        bad = asked.limit(6).collect()
    else:
        joined = asked.join(old, list(ctx.keys), "left")
        mismatch = (
            F.col(keystate.H1).isNull()
            | (F.col("_d1") != F.col(keystate.H1))
            | (F.col("_d2") != F.col(keystate.H2))
        )
        bad = joined.where(mismatch).limit(6).collect()
    if bad:
        found = [r[ctx.keys[0]] if len(ctx.keys) == 1 else tuple(r[k] for k in ctx.keys) for r in bad]
        raise ChangeFeedError(
            f"strict_delete: deletes of keys {preview(found)} of table {ctx.table!r} do not match the "
            "current row (or the key does not exist); nothing was published. Send the full current row, "
            "or drop strict_delete."
        )
