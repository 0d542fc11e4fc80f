"""The ways a push stages its files: initial load, snapshot diff, change feed, insert-only append.

Each flow writes the files to publish and the table's next key state, then checks them; none
publishes anything (see ``pipeline.push.context`` for what they share).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ChangeFeedError, preview
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.model import ROW_MARKER, RowMarker
from openmirror_nb._core.pipeline.feeds.changes import INVALID_MARKER
from openmirror_nb._core.pipeline.keystate import buckets as buckets_mod
from openmirror_nb._core.pipeline.keystate import feed_state, hashes, snapdiff, stored
from openmirror_nb._core.pipeline.push import checks, context, observed, stage
from openmirror_nb._core.pipeline.push.context import StageContext, Staged

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation


def stage_initial(ctx: StageContext, shaped: DataFrame) -> Staged:
    """First push of a snapshot: every row, marker-free; its key state is read back from the
    staged files, so the source query runs once."""
    stats = context.write_data(ctx, shaped, split=True)
    uri = ctx.uri(f"{ctx.staging}/parts")
    staged = stage.read_staged(ctx.spark, uri=uri, schema=shaped.schema, options=ctx.options)
    n = context.bucket_target(ctx, None, rows=stats.rows)
    seen = context.write_state(ctx, snapdiff.snapshot_state(staged, keys=ctx.keys, buckets=n), buckets=n)
    context.check_state(ctx, seen)
    return context.finish(
        ctx, shaped.schema, split=True, new_base=True, state_rows=None, stats=stats, buckets=seen["buckets"]
    )


def stage_append(ctx: StageContext, shaped: DataFrame, *, first: bool) -> Staged:
    """Insert-only rows to a table without keyColumns: marker-free files and no key state (there
    is no key to track). Nothing to append to a table that exists already writes nothing."""
    stats = context.write_data(ctx, shaped, split=True)
    if not stats.rows and not first:
        return Staged(None, stats, new_base=False, state_rows=0)
    return context.finish(ctx, shaped.schema, split=True, new_base=False, state_rows=0, stats=stats)


def stage_diff(ctx: StageContext, shaped: DataFrame, *, prior: PushState, update_marker: int) -> Staged:
    """A later snapshot: one join of key states finds what changed; only those rows are written.

    The key state written is a delta of the touched keys, or the whole next state when the
    deltas have grown past ``hashes.compaction_due``. Rows with duplicate keys are always
    written, so that the error can name them. With nothing changed (and nothing to compact)
    nothing is written but the empty delta, which the push then drops (``Staged.nothing``).
    """
    from pyspark.sql import functions as F

    compact = hashes.compaction_due(prior)
    # Both sides in the stored state's buckets: the stored side is then read without a shuffle,
    # and the join's output (the next state) is in the same buckets.
    n = context.bucket_target(ctx, prior, rows=0)
    single = context.one_task(prior, buckets=n)
    old, touched = stored.for_diff(ctx, prior, place=n, schema=shaped.schema, single=single)
    new = snapdiff.snapshot_state(shaped, keys=ctx.keys, buckets=n, touched=touched, single=single)
    diff = snapdiff.diff_states(new, old, keys=ctx.keys, update_marker=update_marker)
    changed = F.col(hashes.CHANGE).isNotNull()
    if compact:
        seen = context.write_state(ctx, diff, buckets=n)
    else:
        seen = context.write_state(ctx, diff, keep=changed | (F.col(hashes.ROWS) > 1))
    context.check_state(ctx, seen)
    total = sum(seen[f"change_{int(m)}"] for m in RowMarker)
    state_rows = seen["rows"] if compact else None
    if not total:
        return Staged(
            None,
            stage.StagedStats(0, {}),
            new_base=compact,
            state_rows=state_rows or 0,
            buckets=seen["buckets"] or None,
        )
    rows = _changed_rows(ctx, shaped, total=total, single=single)
    # Each key occurs once in a diff, so its rows are dealt straight into as many files as the
    # row count needs, rather than written as many fragments and merged afterwards (a small
    # table's one task splits its files by rows_per_file as it writes them).
    placed = rows.coalesce(1) if single else rows.repartition(max(1, math.ceil(total / ctx.rows_per_file)))
    stats = context.write_data(ctx, placed, split=True, markers=_DIFF_MARKERS)
    return context.finish(
        ctx,
        rows.schema,
        split=True,
        new_base=compact,
        state_rows=state_rows,
        stats=stats,
        buckets=seen["buckets"],
        merge=False,
    )


_DIFF_MARKERS = (int(RowMarker.INSERT), int(RowMarker.UPDATE), int(RowMarker.DELETE), int(RowMarker.UPSERT))


def _changed_rows(ctx: StageContext, shaped: DataFrame, *, total: int, single: bool) -> DataFrame:
    """The rows of the keys the diff found changed (as written in the key state), with their
    markers: the source's row for an insert or update, the key alone for a delete. ``single``:
    a small table, joined in one task (no job to broadcast the changed keys)."""
    from pyspark.sql import functions as F

    fields = shaped.schema.fields
    schema = hashes.state_schema(shaped.schema, ctx.keys, change=True)
    change, keys = hashes.CHANGE, [quoted(k) for k in ctx.keys]
    changes = ctx.spark.read.schema(schema).parquet(ctx.uri(ctx.state_dir)).where(f"{change} IS NOT NULL")
    touched = changes.where(f"{change} != {int(RowMarker.DELETE)}").selectExpr(*keys, change)
    if single:  # both sides in one partition: a hash join there needs no exchange
        shaped, touched = shaped.coalesce(1), touched.coalesce(1).hint("shuffle_hash")
    elif total <= hashes.BROADCAST_ROWS:
        # the source is read a second time: a broadcast of the few changed keys keeps it map-only
        touched = F.broadcast(touched)
    upserts = shaped.join(touched, list(ctx.keys))
    # SQL text: one call to the JVM per column
    marker = f"CAST({change} AS INT) AS {ROW_MARKER}"
    typed_nulls = [
        quoted(f.name)
        if f.name in ctx.keys
        else f"CAST(NULL AS {f.dataType.simpleString()}) AS {quoted(f.name)}"
        for f in fields
    ]
    deletes = changes.where(f"{change} = {int(RowMarker.DELETE)}")
    return upserts.selectExpr(*[quoted(f.name) for f in fields], marker).unionByName(
        deletes.selectExpr(*typed_nulls, marker)
    )


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
    to name a few of them in the error. The key state written is this push's delta (a small
    feed's: a copy of its files, see ``pipeline.keystate.feed_state``) or, once the deltas have grown past
    ``hashes.compaction_due``, the whole state as a new base, so a table fed only by change
    pushes does not pile up deltas. An empty feed to a table that has a state writes no key state
    at all (``Staged.nothing``).
    """
    compacting = prior is not None and hashes.compaction_due(prior)
    # A small feed's files are its delta, or its delta is written beside them (pipeline.keystate.feed_state):
    # one job, or two at once, instead of two in turn.
    if not compacting and feed_state.files_hold_state(ctx, rows, unique_keys=unique_keys):
        return _files_as_state(ctx, rows, invalid_values=invalid_values, prior=prior)
    ahead = None if compacting else feed_state.start(ctx, rows, count=unique_keys)
    try:
        stats = _write_feed(ctx, rows, ahead=ahead, invalid_values=invalid_values)
        if not stats.rows and prior is not None:
            return Staged(None, stats, new_base=False, state_rows=0)
        ctx.step("writing the key state")
        seen = None if ahead is None else ahead.result(stats.fingerprint)
    finally:
        if ahead is not None:
            ahead.join()
    repeated = None if ahead is None else ahead.repeated
    written: int | None = None
    if seen is None:
        delta, repeated = _delta_from_files(ctx, rows, stats, unique_keys=unique_keys)
        if compacting and prior is not None:
            n = context.bucket_target(ctx, prior, rows=stats.rows)
            merged = stored.current(ctx, prior, latest=delta, place=n, schema=rows.schema) or delta
            seen = context.write_state(ctx, merged, buckets=n, announce=False)
            written = seen["rows"]
        else:
            seen = context.write_state(ctx, delta, announce=False)
    what = f"the count of keys changed more than once in {ctx.table!r}"
    if repeated is not None and observed.counts(repeated, spark=ctx.spark, what=what)["repeated"]:
        uri = ctx.uri(f"{ctx.staging}/parts")
        schema, options = rows.schema, ctx.options
        dupes = stage.duplicate_keys(ctx.spark, uri=uri, schema=schema, options=options, keys=ctx.keys)
        raise ChangeFeedError(
            f"Keys {preview([d[0] if len(d) == 1 else d for d in dupes])} occur more than once in this "
            f"sys_op batch of table {ctx.table!r}; a Prostore delta allows one change per key."
        )
    return context.finish(
        ctx,
        rows.schema,
        split=False,
        new_base=written is not None,
        state_rows=written,
        stats=stats,
        buckets=seen["buckets"],
    )


_FEED_MARKERS = (*(int(m) for m in RowMarker), INVALID_MARKER)


def _files_as_state(
    ctx: StageContext, rows: DataFrame, *, invalid_values: Any, prior: PushState | None
) -> Staged:
    """A small feed's data files, written by one job, and a copy of them as its key-state delta."""
    stats = _write_feed(ctx, rows, ahead=None, invalid_values=invalid_values)
    if not stats.rows and prior is not None:
        return Staged(None, stats, new_base=False, state_rows=0)
    ctx.step("writing the key state")
    feed_state.keep_files(ctx)
    # one task wrote one file, as it is to be published: nothing to merge
    staged = context.finish(
        ctx, rows.schema, split=False, new_base=False, state_rows=None, stats=stats, merge=False
    )
    return dataclasses.replace(staged, feed_schema=rows.schema.json())


def _write_feed(
    ctx: StageContext, rows: DataFrame, *, ahead: feed_state.StateAhead | None, invalid_values: Any
) -> stage.StagedStats:
    """The feed's data files, checked: with ``ahead``, the job also takes the rows' fingerprint."""
    if ahead is None:
        stats = context.write_data(ctx, rows, split=False, markers=_FEED_MARKERS)
    else:
        framed, metrics = ahead.data_frame()
        stats = context.write_data(
            ctx, framed, split=False, markers=_FEED_MARKERS, metrics=metrics, hidden=(feed_state.POSITION,)
        )
    bad = stats.rows_by_marker.get(INVALID_MARKER, 0)
    checks.check_stats(stats, keys=ctx.keys, table=ctx.table, invalid_values=invalid_values() if bad else ())
    return stats


def _delta_from_files(
    ctx: StageContext, rows: DataFrame, stats: stage.StagedStats, *, unique_keys: bool
) -> tuple[DataFrame, Observation | None]:
    """A change feed's key-state delta read back from its staged files (and, for ``unique_keys``,
    the observation of keys changed more than once, counted by the job that writes it)."""
    uri = ctx.uri(f"{ctx.staging}/parts")
    staged = stage.read_staged(ctx.spark, uri=uri, schema=rows.schema, options=ctx.options)
    if stats.rows <= buckets_mod.ROWS_PER_BUCKET:  # grouped by key in one task: no shuffle
        staged = staged.coalesce(1)
    delta = hashes.delta_state(
        staged, keys=ctx.keys, has_row_index=not ctx.options.is_delimited, count=unique_keys
    )
    return hashes.count_repeated(delta) if unique_keys else (delta, None)


def check_strict_deletes(ctx: StageContext, deletes: DataFrame, *, prior: PushState | None) -> None:
    """Prostore's rule (contract §9): a delete must carry exactly the current row, else the whole
    batch is refused. Compared through the key state's row hashes."""
    from pyspark.sql import functions as F

    old = stored.current(ctx, prior, schema=deletes.schema) if prior else None
    h1, h2 = hashes.row_hashes(deletes, keys=ctx.keys)
    asked = deletes.select(*[F.col(quoted(k)) for k in ctx.keys], h1.alias("_d1"), h2.alias("_d2"))
    if old is None:
        bad = asked.limit(6).collect()
    else:
        joined = asked.join(old, list(ctx.keys), "left")
        mismatch = (
            F.col(hashes.H1).isNull()
            | (F.col("_d1") != F.col(hashes.H1))
            | (F.col("_d2") != F.col(hashes.H2))
        )
        bad = joined.where(mismatch).limit(6).collect()
    if bad:
        found = [r[ctx.keys[0]] if len(ctx.keys) == 1 else tuple(r[k] for k in ctx.keys) for r in bad]
        raise ChangeFeedError(
            f"strict_delete: deletes of keys {preview(found)} of table {ctx.table!r} do not match the "
            "current row (or the key does not exist); nothing was published. Send the full current row, "
            "or drop strict_delete."
        )
