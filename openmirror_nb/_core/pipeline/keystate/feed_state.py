"""A small change feed's key state: its own data files, or written beside them.

A change feed's key-state delta is each key's last change in publication order. Read back from
the staged files (``flows.stage_changes``) it is a second Spark job after the one that writes
them, which is most of what a small push (a stream's micro-batch) costs beyond its data. A feed
ordered in one task (``changes.in_one_task``) avoids that job in one of two ways:

- **Its files are its delta** (``files_hold_state``): a copy of the data files, as published,
  is kept as the delta folder, and ``PushState.feed_deltas`` records their schema; whoever reads
  the state derives each key's last change from them (``hashes.read_delta``). One job, and the
  state is the published bytes' by construction. Parquet tables, and feeds that may repeat a key.
- **Its delta is written beside its files** (``StateAhead``), where the push must also count keys
  changed more than once (a ``sys_op`` feed refuses them) or the table is delimited text: the
  delta is derived from the frame by a job of its own, on a thread, while the data files are
  written; both jobs are in the push's job group. The two jobs evaluate the source twice, and a
  source need not give the same rows in the same order twice (a query over a table that changes
  meanwhile, the order of a shuffle). Both jobs therefore observe the same fingerprint: an XOR
  of a 64-bit hash of each row together with its position. Equal fingerprints mean both saw the
  same rows at the same positions, so the delta is the one of the files; otherwise it is thrown
  away and read from the staged files after all.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.pipeline.keystate import hashes
from openmirror_nb._core.pipeline.push import context, observed

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation

    from openmirror_nb._core.pipeline.push.context import StageContext

POSITION = "_om_position"


def fingerprint(columns: list[str]) -> Column:
    """The aggregate both jobs observe, as SQL text: rows hashed with their ``POSITION``."""
    from pyspark.sql import functions as F

    hashed = ", ".join(quoted(c) for c in [POSITION, *columns])
    return F.expr(f"bit_xor(xxhash64({hashed})) AS fingerprint")


def positioned(rows: DataFrame) -> DataFrame:
    """``rows`` with each row's place in its one task's order (0, 1, ...: the partition is the first)."""
    from pyspark.sql import functions as F

    return rows.withColumn(POSITION, F.monotonically_increasing_id())


class StateAhead:
    """The key-state delta of ``rows``, written into ``ctx.state_dir`` on a thread of its own.

    ``count``: also observe keys changed more than once (``hashes.count_repeated``). ``result``
    waits for it and says whether it may stand; ``join`` waits in any case (a push must not
    remove its staging while the thread still writes there).
    """

    def __init__(self, ctx: StageContext, rows: DataFrame, *, count: bool) -> None:
        from pyspark import InheritableThread  # copies the job group and tags of this thread

        self.ctx, self.rows, self.count = ctx, rows, count
        self.columns = rows.columns  # one schema call for both jobs' fingerprints
        self.seen: dict[str, int] = {}
        self.repeated: Observation | None = None
        self.error: BaseException | None = None
        self._thread = InheritableThread(target=self._write, name="openmirror-key-state")
        self._thread.start()

    def data_frame(self) -> tuple[DataFrame, list[Column]]:
        """What the data files' job writes (with ``POSITION``, not written) and the metric it adds."""
        return positioned(self.rows), [fingerprint(self.columns)]

    def _write(self) -> None:
        from pyspark.sql import Observation

        try:
            observation = Observation()
            framed = positioned(self.rows).observe(observation, fingerprint(self.columns))
            delta = hashes.delta_state(framed, keys=self.ctx.keys, count=self.count, position=POSITION)
            if self.count:
                delta, self.repeated = hashes.count_repeated(delta)
            self.seen = context.write_state(self.ctx, delta, announce=False)
            what = f"the fingerprint of the change feed of {self.ctx.table!r}"
            self.seen["fingerprint"] = observed.counts(observation, spark=self.ctx.spark, what=what)[
                "fingerprint"
            ]
        except BaseException as exc:  # then ``result`` has the state read from the files
            self.error = exc

    def join(self) -> None:
        self._thread.join()

    def result(self, data_fingerprint: int | None) -> dict[str, int] | None:
        """The written state's counts (``context.write_state``'s), or ``None`` when the data
        files' job saw other rows (its ``data_fingerprint``) or the thread failed: then nothing
        of it stays, and the state is to be derived from the staged files."""
        self.join()
        if self.error is None and self.seen.get("fingerprint") == data_fingerprint:
            return self.seen
        ctx = self.ctx
        if ctx.local_dir is None:  # where Spark wrote it (a local folder when it cannot write the store)
            ctx.storage.delete(ctx.state_dir)
        else:
            shutil.rmtree(Path(ctx.local_dir) / ctx.state_dir, ignore_errors=True)
        return None


def files_hold_state(ctx: StageContext, rows: DataFrame, *, unique_keys: bool) -> bool:
    """Whether ``rows``' data files are to be their own key-state delta (``keep_files``): a
    Parquet feed ordered in one task, with no need to count keys changed more than once."""
    from openmirror_nb._core.pipeline.feeds.changes import in_one_task

    return not unique_keys and not ctx.options.is_delimited and in_one_task(rows)


def keep_files(ctx: StageContext) -> None:
    """Copy the staged data files into ``ctx.state_dir``, names and bytes unchanged (their part
    names give the publication order ``hashes.delta_state`` reads). Off Fabric's Spark they are
    in the local staging folder, which ``context.finish`` uploads."""
    source = f"{ctx.staging}/parts"
    if ctx.local_dir is not None:
        root = Path(ctx.local_dir)
        (root / ctx.state_dir).mkdir(parents=True, exist_ok=True)
        for part in (root / source).glob("part-*"):
            shutil.copyfile(part, root / ctx.state_dir / part.name)
        return
    for entry in ctx.storage.list_dir(source):
        if not entry.is_dir and entry.name.startswith("part-"):
            ctx.storage.write_bytes(
                f"{ctx.state_dir}/{entry.name}", ctx.storage.read_bytes(f"{source}/{entry.name}")
            )


def start(ctx: StageContext, rows: DataFrame, *, count: bool) -> StateAhead | None:
    """A ``StateAhead`` for a feed ordered in one task, or ``None`` (then the state is read back
    from the staged files): a feed shuffled by key, or a Spark that cannot run the thread."""
    from openmirror_nb._core.pipeline.feeds.changes import in_one_task

    if not in_one_task(rows):
        return None
    try:
        return StateAhead(ctx, rows, count=count)
    except Exception:  # no thread on this Spark: the files' way still holds
        return None
