"""What every push flow shares: where it stages (``StageContext``) and the folders that makes
(removed again unless it publishes), what it hands to publish (``Staged``), and the writes and
checks of data parts and key state. Reading the table's stored key state is
``pipeline.keystate.stored``'s (a ``StageContext`` is the ``Site`` it reads from).

Where Spark cannot write to the store (OneLake outside Fabric) it works in a local folder, and
the files to publish are uploaded into the store's staging folder.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import Compression, RowMarker, TableOptions
from openmirror_nb._core.pipeline.keystate import buckets as buckets_mod
from openmirror_nb._core.pipeline.keystate import hashes
from openmirror_nb._core.pipeline.push import checks, observed, stage
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.storage.local import file_uri

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
    on_step: Callable[[str], None] | None = None  # the push's progress: which step runs now
    push_id: str = ""
    incarnation: str = ""

    def step(self, label: str) -> None:
        if self.on_step is not None:
            self.on_step(label)

    def uri(self, path: str) -> str:
        if self.local_dir is None:
            return self.storage.uri(path)
        return file_uri(Path(self.local_dir) / path)

    def upload(self, path: str) -> None:
        if self.local_dir is None:
            return
        root = Path(self.local_dir)
        files = [p for p in (root / path).rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
        self.storage.upload_files([(str(p), p.relative_to(root).as_posix()) for p in files])


@dataclass(frozen=True)
class Staged:
    """Checked files ready to publish (in ``folder``; ``None``: there are none), and the key
    state that goes with them.

    ``new_base`` says whether the key state written is a whole new base (initial load, or a diff
    that compacted) or a delta on top of the current state; ``state_rows`` is how many rows it has;
    ``buckets`` is its bucket layout, if it has one (see ``pipeline.keystate.buckets``); ``feed_schema``,
    the schema JSON of the data files when the key state is a copy of them (``pipeline.keystate.feed_state``).
    """

    folder: str | None
    stats: stage.StagedStats
    new_base: bool
    state_rows: int
    buckets: int | None = None
    feed_schema: str | None = None

    @property
    def nothing(self) -> bool:
        """Nothing to publish and no key state worth keeping: the push changes nothing."""
        return self.folder is None and not self.new_base


def bucket_target(ctx: StageContext, prior: PushState | None, *, rows: int) -> int:
    """The bucket count to write this push's key state in: the table's, once it has one, else
    one for the state's size (``rows`` pushed now, plus what the state holds)."""
    if prior is not None and prior.buckets:
        return prior.buckets
    held = (prior.base_rows or 0) + (prior.delta_rows or 0) if prior is not None else 0
    return buckets_mod.count(ctx.spark, rows=rows + held)


def one_task(prior: PushState, *, buckets: int) -> bool:
    """Whether a diff against ``prior`` is small enough for one task: its key state is one
    bucket, and holds (at most) one bucket's rows. A table that grew past that since its
    layout was chosen keeps the parallel path."""
    held = prior.state_rows
    return buckets == 1 and held is not None and held <= buckets_mod.ROWS_PER_BUCKET


def write_state(
    ctx: StageContext,
    state: DataFrame,
    *,
    keep: Column | None = None,
    buckets: int | None = None,
    announce: bool = True,
) -> dict[str, int]:
    """Write the key state (only the rows ``keep`` selects) and count, in the same job, what the
    checks and the result need: rows, NULL-key rows, duplicate-key rows, and keys per change.

    ``buckets``: ``state`` is expected in that bucket layout. Rows outside their bucket are
    counted as they are written; with none, the files are named as buckets and ``seen["buckets"]``
    is the count (else 0). ``announce``: tell the push's progress that this step begins (not
    from a thread that writes beside another step: ``pipeline.keystate.feed_state``).
    """
    if announce:
        ctx.step("writing the key state")
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    rows_where = stage.rows_where
    metrics = [
        F.expr("count(1) AS rows"),
        rows_where(stage.any_null(ctx.keys), "null_keys"),
        rows_where(f"{hashes.ROWS} > 1", "duplicate_rows"),
    ]
    if hashes.CHANGE in state.columns:
        metrics += [rows_where(f"{hashes.CHANGE} = {int(m)}", f"change_{int(m)}") for m in RowMarker]
    if buckets:
        state = buckets_mod.tag(state)
        metrics.append(buckets_mod.misplaced(ctx.keys, buckets))
    observation = Observation()
    framed = state.observe(observation, *metrics)
    framed = framed if keep is None else framed.where(keep)
    framed.drop(buckets_mod.PLACE).write.mode("errorifexists").parquet(ctx.uri(ctx.state_dir))
    seen = observed.counts(observation, spark=ctx.spark, what=f"the key-state counts of {ctx.table!r}")
    seen["buckets"] = 0
    if buckets and not seen["misplaced"]:
        buckets_mod.name_files(ctx.storage, ctx.state_dir, local_dir=ctx.local_dir)
        seen["buckets"] = buckets
    return seen


def check_state(ctx: StageContext, seen: dict[str, int]) -> None:
    """NULL or duplicate keys, as counted while the state was written; the few duplicate keys an
    error names are read back from the state files (rows with duplicate keys are always kept)."""
    ctx.step("checking the keys")
    from pyspark.sql import functions as F

    if seen["null_keys"]:
        raise checks.null_key_error(seen["null_keys"], keys=ctx.keys, table=ctx.table)
    if seen["duplicate_rows"]:
        state = ctx.spark.read.parquet(ctx.uri(ctx.state_dir))
        keys = [F.col(quoted(k)) for k in ctx.keys]
        dupes = state.where(F.col(hashes.ROWS) > 1).select(*keys).distinct().limit(6).collect()
        raise checks.duplicate_error([tuple(r) for r in dupes], keys=ctx.keys, table=ctx.table)


def finish(
    ctx: StageContext,
    schema: StructType,
    *,
    split: bool,
    new_base: bool,
    state_rows: int | None,
    stats: stage.StagedStats,
    buckets: int | None = None,
    merge: bool = True,
) -> Staged:
    """Merge fragments (unless the data was written in as many files as it needs: ``merge``
    False), and upload when Spark worked locally."""
    sub = "parts"
    files = max(1, math.ceil(stats.rows / ctx.rows_per_file))
    if merge and _fragmented(
        _part_names(ctx, sub), rows=stats.rows, files=files, rows_per_file=ctx.rows_per_file
    ):
        ctx.step("merging small files")
        seen = stage.compact(
            ctx.spark,
            src_uri=ctx.uri(f"{ctx.staging}/{sub}"),
            dst_uri=ctx.uri(f"{ctx.staging}/compact"),
            schema=schema,
            options=ctx.options,
            compression=ctx.compression,
            files=files,
            rows_per_file=ctx.rows_per_file if split else NO_SPLIT,
        )
        sub, stats = (
            "compact",
            dataclasses.replace(stats, empty_first=seen["rows"] > 0 and not seen["first_rows"]),
        )
    if ctx.local_dir is not None:
        ctx.step("uploading the staged files")
    ctx.upload(f"{ctx.staging}/{sub}")
    ctx.upload(ctx.state_dir)
    rows = stats.rows if state_rows is None else state_rows
    return Staged(f"{ctx.staging}/{sub}", stats, new_base=new_base, state_rows=rows, buckets=buckets or None)


def _part_names(ctx: StageContext, sub: str) -> list[str]:
    folder = f"{ctx.staging}/{sub}"
    if ctx.local_dir is not None:
        names = [p.name for p in (Path(ctx.local_dir) / folder).iterdir()]
    else:
        names = [e.name for e in ctx.storage.list_dir(folder)]
    return [n for n in names if n.startswith("part-")]


def _fragmented(names: list[str], *, rows: int, files: int, rows_per_file: int) -> bool:
    """Many small parts (a shuffled or over-partitioned source) make the service lag.

    Merging keeps every part whole and in order, and parts this small are never split by the
    reader, so a key's changes (all in one part, design §4) stay in order.
    """
    if len(names) <= files:
        return False
    whole = all(stage.part_order(n)[1] == 0 for n in names)
    return whole and rows / len(names) < rows_per_file / 4


def write_data(
    ctx: StageContext,
    df: DataFrame,
    *,
    split: bool,
    markers: Sequence[int] = (),
    metrics: Sequence[Column] = (),
    hidden: Sequence[str] = (),
) -> stage.StagedStats:
    """Write the data files; what they hold is counted by the same job (rows per marker of
    ``markers``, NULL keys, and ``metrics``, over columns that include ``hidden``, which are not
    written)."""
    ctx.step("writing the data files")
    seen = stage.write_parts(
        df,
        uri=ctx.uri(f"{ctx.staging}/parts"),
        options=ctx.options,
        compression=ctx.compression,
        rows_per_file=ctx.rows_per_file if split else NO_SPLIT,
        metrics=[*(stage.marker_metrics(ctx.keys, markers=markers) if markers else ()), *metrics],
        hidden=hidden,
    )
    return stage.stats_of(seen, markers=markers)


def fresh_folders(home: TableFolder, state: PushState | None) -> tuple[str, ...]:
    """Folders a push may create that are not there now, outermost first (removed again unless
    it publishes). A table with a state keeps it, and its key state, in its folder: only the
    staging folder can be new then."""
    parents = (f"{home.folder.rpartition('/')[0]}",) if home.ref.schema else ()
    held = state is not None and all(f.startswith(f"{home.keystate_root}/") for f in state.key_state)
    if held and state and state.key_state:
        parents = (home.staging_root,)
    else:
        parents = (*parents, home.folder, home.internal, home.staging_root, home.keystate_root)
    return tuple(p for p in parents if not home.storage.exists(p))


def remove_staged(ctx: StageContext, fresh: tuple[str, ...]) -> None:
    """Remove what a push staged that it does not publish, and the ``fresh`` folders it made."""
    ctx.storage.delete(ctx.staging)
    ctx.storage.delete(ctx.state_dir)
    for path in reversed(fresh):
        ctx.storage.delete(path, recursive=False)
