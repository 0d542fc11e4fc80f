"""The three ways a push stages its files: initial load, snapshot diff, change feed.

Each flow writes the files to publish and the table's next key state, then checks them; none
publishes anything. Where Spark cannot write to the store (OneLake outside Fabric) it works in a
local folder, and the files to publish are uploaded into the store's staging folder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openmirror_nb.errors import ChangeFeedError, KeyColumnsError, preview
from openmirror_nb.model import ROW_MARKER, Compression, RowMarker, TableOptions
from openmirror_nb.pipeline import checks, keystate, stage
from openmirror_nb.state import TableState
from openmirror_nb.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

NO_SPLIT = 0  # maxRecordsPerFile 0: one file per Spark task, so a key's changes share a file


@dataclass(frozen=True)
class StageContext:
    """Where and how one push stages its files."""

    storage: Storage
    spark: SparkSession
    staging: str
    state_dir: str
    options: TableOptions
    compression: Compression
    rows_per_file: int
    keys: tuple[str, ...]
    table: str
    local_dir: str | None = None

    def uri(self, path: str) -> str:
        if self.local_dir is None:
            return self.storage.uri(path)
        return (Path(self.local_dir) / path).as_uri()

    def fetch(self, path: str) -> str:
        """A Spark URI for a store folder, downloading it first if Spark cannot read the store."""
        if self.local_dir is not None:
            for rel, _ in self.storage.walk_files(path):
                target = Path(self.local_dir) / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(self.storage.read_bytes(rel))
        return self.uri(path)

    def upload(self, path: str) -> None:
        if self.local_dir is None:
            return
        root = Path(self.local_dir)
        files = [p for p in (root / path).rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
        self.storage.upload_files([(str(p), p.relative_to(root).as_posix()) for p in files])


@dataclass(frozen=True)
class Staged:
    """Checked files ready to publish, and the key state that goes with them.

    ``new_base`` says whether the key state written is a whole new base (initial load, or a diff
    that compacted) or a delta on top of the current state; ``state_rows`` is how many rows it has.
    """

    folder: str
    stats: stage.StagedStats
    new_base: bool
    state_rows: int


def _write_state(ctx: StageContext, state: DataFrame, *, keep: Column | None = None) -> dict[str, int]:
    """Write the key state (only the rows ``keep`` selects) and count, in the same job, what the
    checks and the result need: rows, NULL-key rows, duplicate-key rows, and keys per change."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    def rows_where(cond: Column, name: str) -> Column:
        return F.sum(F.when(cond, 1).otherwise(0)).alias(name)

    null_key = F.lit(False)
    for key in ctx.keys:
        null_key = null_key | F.col(f"`{key}`").isNull()
    metrics = [
        F.count(F.lit(1)).alias("rows"),
        rows_where(null_key, "null_keys"),
        rows_where(F.col(keystate.ROWS) > 1, "duplicate_rows"),
    ]
    if keystate.CHANGE in state.columns:
        change = F.col(keystate.CHANGE)
        metrics += [rows_where(change == int(m), f"change_{int(m)}") for m in RowMarker]
    observation = Observation()
    observed = state.observe(observation, *metrics)
    (observed if keep is None else observed.where(keep)).write.mode("errorifexists").parquet(
        ctx.uri(ctx.state_dir)
    )
    return {name: int(value or 0) for name, value in observation.get.items()}


def _check_state(ctx: StageContext, seen: dict[str, int]) -> None:
    """NULL or duplicate keys, as counted while the state was written; the few duplicate keys an
    error names are read back from the state files (rows with duplicate keys are always kept)."""
    from pyspark.sql import functions as F

    if seen["null_keys"]:
        raise KeyColumnsError(
            f"{seen['null_keys']:,} row(s) of table {ctx.table!r} have a NULL in key columns "
            f"{list(ctx.keys)}; every key value must be set. Filter them out or fill them before pushing."
        )
    if seen["duplicate_rows"]:
        state = ctx.spark.read.parquet(ctx.uri(ctx.state_dir))
        keys = [F.col(f"`{k}`") for k in ctx.keys]
        dupes = state.where(F.col(keystate.ROWS) > 1).select(*keys).distinct().limit(6).collect()
        raise checks.duplicate_error([tuple(r) for r in dupes], keys=ctx.keys, table=ctx.table)


def _finish(
    ctx: StageContext,
    schema: StructType,
    *,
    split: bool,
    new_base: bool,
    state_rows: int | None,
    stats: stage.StagedStats | None = None,
) -> Staged:
    """Count what was staged, merge fragments, and upload when Spark worked locally."""
    sub = "parts"
    uri = ctx.uri(f"{ctx.staging}/{sub}")
    kw: dict[str, Any] = {"options": ctx.options, "schema": schema, "keys": ctx.keys}
    stats = stats or stage.staged_stats(ctx.spark, uri=uri, **kw)
    files = max(1, math.ceil(sum(stats.rows_by_file.values()) / ctx.rows_per_file))
    if _fragmented(stats, files=files, rows_per_file=ctx.rows_per_file):
        merged = ctx.uri(f"{ctx.staging}/compact")
        stage.compact(
            ctx.spark,
            src_uri=uri,
            dst_uri=merged,
            schema=schema,
            options=ctx.options,
            compression=ctx.compression,
            files=files,
            rows_per_file=ctx.rows_per_file if split else NO_SPLIT,
        )
        sub, uri = "compact", merged
        stats = stage.staged_stats(ctx.spark, uri=uri, **kw)
    ctx.upload(f"{ctx.staging}/{sub}")
    ctx.upload(ctx.state_dir)
    rows = sum(stats.rows_by_file.values()) if state_rows is None else state_rows
    return Staged(f"{ctx.staging}/{sub}", stats, new_base=new_base, state_rows=rows)


def _fragmented(stats: stage.StagedStats, *, files: int, rows_per_file: int) -> bool:
    """Many small parts (a shuffled or over-partitioned source) make the service lag.

    Merging keeps every part whole and in order, and parts this small are never split by the
    reader, so a key's changes (all in one part, design §4) stay in order.
    """
    names = list(stats.rows_by_file)
    if len(names) <= files:
        return False
    whole = all(stage.part_order(n)[1] == 0 for n in names)
    return whole and sum(stats.rows_by_file.values()) / len(names) < rows_per_file / 4


def _write(ctx: StageContext, df: DataFrame, *, split: bool) -> None:
    stage.write_parts(
        df,
        uri=ctx.uri(f"{ctx.staging}/parts"),
        options=ctx.options,
        compression=ctx.compression,
        rows_per_file=ctx.rows_per_file if split else NO_SPLIT,
    )


def stage_initial(ctx: StageContext, shaped: DataFrame) -> Staged:
    """First push of a snapshot: every row, marker-free; its key state is read back from the
    staged files, so the source query runs once."""
    _write(ctx, shaped, split=True)
    staged = stage.read_staged(
        ctx.spark, uri=ctx.uri(f"{ctx.staging}/parts"), schema=shaped.schema, options=ctx.options
    )
    _check_state(ctx, _write_state(ctx, keystate.snapshot_state(staged, keys=ctx.keys)))
    footers = None if ctx.options.is_delimited else stage.footer_stats(ctx.uri(f"{ctx.staging}/parts"))
    return _finish(ctx, shaped.schema, split=True, new_base=True, state_rows=None, stats=footers)


def _effective(ctx: StageContext, prior: TableState, *, latest: DataFrame | None = None) -> DataFrame | None:
    """The table's current key state, with ``latest`` applied (see ``keystate.read_effective``)."""
    small = latest is None and prior.delta_rows is not None and prior.delta_rows <= keystate.BROADCAST_ROWS
    return keystate.read_effective(
        ctx.spark,
        base=ctx.fetch(prior.base) if prior.base else None,
        deltas=[ctx.fetch(d) for d in prior.deltas],
        keys=ctx.keys,
        small_deltas=small,
        latest=latest,
    )


def stage_diff(ctx: StageContext, shaped: DataFrame, *, prior: TableState, update_marker: int) -> Staged:
    """A later snapshot: one join of key states finds what changed; only those rows are written.

    The key state written is a delta of the touched keys, or the whole next state when the
    deltas have grown past ``keystate.compaction_due``. Rows with duplicate keys are always
    written, so that the error can name them.
    """
    from pyspark.sql import functions as F

    compact = keystate.compaction_due(
        base_rows=prior.base_rows, delta_rows=prior.delta_rows, deltas=len(prior.deltas)
    )
    new = keystate.snapshot_state(shaped, keys=ctx.keys)
    diff = keystate.diff_states(new, _effective(ctx, prior), keys=ctx.keys, update_marker=update_marker)
    changed = F.col(keystate.CHANGE).isNotNull()
    seen = _write_state(ctx, diff, keep=None if compact else changed | (F.col(keystate.ROWS) > 1))
    _check_state(ctx, seen)
    counts = {int(m): seen[f"change_{int(m)}"] for m in RowMarker if seen[f"change_{int(m)}"]}
    changes = ctx.spark.read.parquet(ctx.uri(ctx.state_dir)).where(changed)
    keys = [F.col(f"`{k}`") for k in ctx.keys]
    touched = changes.where(F.col(keystate.CHANGE) != int(RowMarker.DELETE)).select(*keys, keystate.CHANGE)
    if sum(counts.values()) <= keystate.BROADCAST_ROWS:
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
    _write(ctx, rows.repartition(max(1, math.ceil(sum(counts.values()) / ctx.rows_per_file))), split=True)
    return _finish(
        ctx,
        rows.schema,
        split=True,
        new_base=compact,
        state_rows=seen["rows"] if compact else None,
        stats=_diff_stats(ctx, counts),
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
    prior: TableState | None,
) -> Staged:
    """A change feed: files hold whole keys in order; the key state records each key's last change.

    ``invalid_values`` is called only when operation values outside the convention were found,
    to name a few of them in the error. The key state written is this push's delta or, once the
    deltas have grown past ``keystate.compaction_due``, the whole state as a new base, so a table
    fed only by change pushes does not pile up deltas.
    """
    _write(ctx, rows, split=False)
    uri = ctx.uri(f"{ctx.staging}/parts")
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
    compact = prior is not None and keystate.compaction_due(
        base_rows=prior.base_rows, delta_rows=prior.delta_rows, deltas=len(prior.deltas)
    )
    if compact and prior is not None:
        seen = _write_state(ctx, _effective(ctx, prior, latest=delta) or delta)
        return _finish(ctx, rows.schema, split=False, new_base=True, state_rows=seen["rows"], stats=stats)
    _write_state(ctx, delta)
    return _finish(ctx, rows.schema, split=False, new_base=False, state_rows=None, stats=stats)


def check_strict_deletes(ctx: StageContext, deletes: DataFrame, *, prior: TableState | None) -> None:
    """Prostore's rule (contract §9): a delete must carry exactly the current row, else the whole
    batch is refused. Compared through the key state's row hashes."""
    from pyspark.sql import functions as F

    old = _effective(ctx, prior) if prior else None
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
