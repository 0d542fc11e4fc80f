"""The built-in strategies of a planned table, each one push, registered by name as any other
strategy is (``registry``; ``plan_strategy.PlanStrategy`` says what a strategy is):

- ``snapshot``: the whole table, diffed against the last push (``db.push``);
- ``delta_sync``: a Delta table's change data feed (``db.sync_delta``);
- ``incremental``: the rows past the watermark the table holds (less an overlap window), upserted
  as one change feed, with, when ``detect_deletes``, a delete for each mirrored key the source no
  longer has (a sweep that reads the key columns only); the new watermark is committed with the
  files, so a crash can neither skip nor repeat rows;
- ``append``: the rows strictly past the watermark, up to the highest read now, as marker-free
  inserts to a table without keyColumns (``PushRequest.append``); planned for a table the source
  numbers rows of and declares no key for.

A large table is read in parallel ranges of a whole-number key or watermark where its source can
(``ranges``: a JDBC source can).
"""

from __future__ import annotations

import shutil
import tempfile
from typing import TYPE_CHECKING

from openmirror_nb._core.feed_options import FeedOptions
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import DEFAULT_ROWS_PER_FILE, PushResult, SyncResult
from openmirror_nb._core.pipeline.keystate import hashes
from openmirror_nb._core.pipeline.keystate import stored as stored_keystate
from openmirror_nb._core.pipeline.push.normalize import normalize
from openmirror_nb._core.pipeline.push.request import PushRequest
from openmirror_nb._core.pipeline.push.run import run_push
from openmirror_nb._core.sources import ranges
from openmirror_nb._core.sources.plan import PlannedTable
from openmirror_nb._core.sources.plan_strategy import PlanStrategy
from openmirror_nb._core.sources.watermark import highest, past, upto

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from openmirror_nb._core.sources.runner import Runner
    from openmirror_nb._core.sources.table import Source, SourceTable

OP = "_om_sys_op"  # the incremental feed's operation column (Prostore's sys_op: 0 upsert, 1 delete)


class Snapshot(PlanStrategy):
    """``snapshot``: the whole table, diffed against the last push (``db.push``)."""

    def push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> PushResult:
        """The table, read in ranges where the source can (``ranges``), pushed as a snapshot."""
        return run.push(planned, ranges.split(run.source, planned, frame))

    def would_push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> str:
        """The rows a push would load or diff (one count)."""
        return _counted(frame, _state(run, planned))


class DeltaSync(PlanStrategy):
    """``delta_sync``: a Delta table's change data feed, from the version the table holds
    (``db.sync_delta``); planned for a table with its change data feed on."""

    feed = ("update_marker", "compact")

    def fits(self, table: SourceTable) -> bool:
        """A table with its change data feed on."""
        return table.change_feed

    def problems(
        self, empty: DataFrame, planned: PlannedTable, table: SourceTable, source: Source
    ) -> list[str]:
        """A table that is not a Delta table it can read."""
        if table.change_feed or source.delta_tables:
            return []
        return ["delta_sync reads a Delta table's change data feed and this table is not one; use snapshot"]

    def push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> SyncResult:
        """The table's changes since the version it holds (all of it on the first run)."""
        return _sync(run, planned)

    def would_push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> str:
        """Whether a run would load the table or sync its changes, and from which version."""
        state = _state(run, planned)
        held = f" from version {state.source_version}" if state and state.source_version is not None else ""
        return f"would sync the Delta table's changes{held}" if state else "would load the Delta table"


class Incremental(PlanStrategy):
    """``incremental``: the rows past the watermark, upserted; deletes by a sweep of the keys."""

    watermark = True
    deletes = None
    feed = ()  # it writes a sys_op feed of its own

    def push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> PushResult:
        """All rows on the first run, then those past the watermark less an overlap window."""
        return _incremental(run, planned, ranges.split(run.source, planned, frame))

    def would_push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> str:
        """The rows a run would upsert (one count), and whether it would sweep for deletes."""
        state = _state(run, planned)
        if state is None:
            return _counted(frame, state)
        mark = _held(state, planned)
        rows = past(frame, planned.watermark or "", mark, overlap=run.overlap).count()
        sweep = ", and delete the keys the source no longer has" if planned.detect_deletes else ""
        return f"would upsert up to {rows:,} rows past watermark {planned.watermark} = {mark}{sweep}"


class Append(PlanStrategy):
    """``append``: insert-only rows strictly past a watermark the source numbers rows by."""

    keys = False
    watermark = True
    increasing = True
    deletes = False
    feed = ()  # it writes inserts of its own

    def fits(self, table: SourceTable) -> bool:
        """A table the source numbers rows of (identity, serial, auto-increment) and declares no
        key for, such as a log: mirrored insert-only by that column, before any key its rows
        would only suggest (a plan note says what insert-only leaves out)."""
        return bool(table.increasing) and not table.primary_key and not table.unique

    def push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> PushResult:
        """The rows past the watermark, up to the highest read now, as inserts."""
        return _append(run, planned, ranges.split(run.source, planned, frame))

    def would_push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> str:
        """The rows a run would append (one count)."""
        state = _state(run, planned)
        if state is None:
            return _counted(frame, state)
        mark = _held(state, planned)
        rows = past(frame, planned.watermark or "", mark).count()
        return f"would append {rows:,} rows past watermark {planned.watermark} = {mark}"


def _state(runner: Runner, planned: PlannedTable) -> PushState | None:
    return TableFolder.of(runner.storage, planned.table).read_state()


def _counted(frame: DataFrame, state: PushState | None) -> str:
    rows = frame.count()
    if state is None:
        return f"would load {rows:,} rows (the table's initial load)"
    return f"would diff {rows:,} rows against the mirrored table and publish what changed"


def _request(
    runner: Runner, planned: PlannedTable, feed: FeedOptions | None = None, **fields: object
) -> PushRequest:
    return PushRequest.create(
        table=planned.table,
        keys=planned.keys,
        feed=feed,
        **{
            "mode": "snapshot",
            "table_options": None,
            "compression": None,
            "rows_per_file": DEFAULT_ROWS_PER_FILE,
            "lock_timeout": runner.lock_timeout,
            "partner": runner.partner,
            "source_times": runner.source_times,
            **fields,
        },
    )


def _sync(runner: Runner, planned: PlannedTable) -> SyncResult:
    from openmirror_nb._core.pipeline.delta.source import DeltaSource
    from openmirror_nb._core.pipeline.delta.sync import sync_delta
    from openmirror_nb._core.runtime import get_spark

    spark = get_spark()
    uri = ranges.delta_location(runner.source, planned.source)
    request = PushRequest.snapshot(
        table=planned.table,
        keys=planned.keys,
        lock_timeout=runner.lock_timeout,
        partner=runner.partner,
        feed=planned.feed,
    )
    return sync_delta(runner.storage, DeltaSource.open(uri, spark), request)


def _incremental(runner: Runner, planned: PlannedTable, frame: DataFrame) -> PushResult:
    from pyspark.sql import functions as F

    column = planned.watermark
    assert column is not None  # a plan without one has a problem, and the gate skips it
    home = TableFolder.of(runner.storage, planned.table)
    state, meta = _settled(runner, home), home.read_metadata()
    if state is None or meta is None:  # the initial load: every row, and the watermark they reach
        top = highest(frame, column)
        request = _request(runner, planned, watermark=(column, top) if top is not None else None)
        return run_push(runner.storage, frame, request, runner.progress)
    held = _held(state, planned)
    new = highest(past(frame, column, held), column)
    local = None if runner.storage.SPARK_WRITABLE else tempfile.mkdtemp(prefix="openmirror-sweep-")
    try:
        site = stored_keystate.Reader(frame.sparkSession, runner.storage, planned.keys, local)
        stored = stored_keystate.current(site, state, schema=frame.schema)
        rows = past(frame, column, held, overlap=runner.overlap)
        feed = _changed(normalize(rows, options=meta.options), stored, planned.keys).withColumn(OP, F.lit(0))
        if planned.detect_deletes and stored is not None:
            feed = feed.unionByName(_gone(stored, frame, planned.keys), allowMissingColumns=True)
        mark = (column, new) if new is not None else None
        request = _request(
            runner,
            planned,
            mode="changes",
            feed=FeedOptions(convention="sys_op", op_column=OP),
            watermark=mark,
            watermark_after=state.watermark if mark else None,
        )
        return run_push(runner.storage, feed, request, runner.progress)
    finally:
        if local is not None:
            shutil.rmtree(local, ignore_errors=True)


def _append(runner: Runner, planned: PlannedTable, frame: DataFrame) -> PushResult:
    """Insert-only rows strictly past the watermark, up to the highest read now (a row arriving
    meanwhile waits for the next run: read twice, it would be inserted twice)."""
    column = planned.watermark
    assert column is not None  # a plan without one has a problem, and the gate skips it
    state = _settled(runner, TableFolder.of(runner.storage, planned.table))
    held = _held(state, planned) if state else None
    rows = past(frame, column, held)
    new = highest(rows, column)
    if new is not None:
        rows = upto(rows, column, new)
    request = _request(
        runner,
        planned,
        append=True,
        watermark=(column, new) if new is not None else None,
        watermark_after=state.watermark if state and new is not None else None,
    )
    return run_push(runner.storage, rows, request, runner.progress)


def _settled(runner: Runner, home: TableFolder) -> PushState | None:
    """The table's state once a push that died after it was decided is finished (as ``sync_delta``
    does): its watermark is the one the rows are read past."""
    with home.lock(timeout=runner.lock_timeout):
        settle(home)
        return home.read_state()


def _held(state: PushState, planned: PlannedTable) -> str | None:
    """The watermark the table holds for the plan's column (none after the column changed)."""
    return state.watermark if state.watermark_column == planned.watermark else None


def _changed(rows: DataFrame, stored: DataFrame | None, keys: tuple[str, ...]) -> DataFrame:
    """``rows`` (normalized as a push writes them) less those the table holds as they are: the
    overlap window re-reads rows, and an unchanged one is not published again."""
    if stored is None:
        return rows
    h1, h2 = hashes.row_hashes(rows, keys=keys)
    hashed = rows.withColumn(hashes.H1, h1).withColumn(hashes.H2, h2)
    same = stored.select(*[_col(k) for k in keys], hashes.H1, hashes.H2)
    return hashed.join(same, [*keys, hashes.H1, hashes.H2], "left_anti").drop(hashes.H1, hashes.H2)


def _gone(stored: DataFrame, frame: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """A delete (``OP`` 1) for each key the table holds and the source no longer has; the source
    is read for its key columns only."""
    from pyspark.sql import functions as F

    cols = [_col(k) for k in keys]
    return stored.select(*cols).join(frame.select(*cols), list(keys), "left_anti").withColumn(OP, F.lit(1))


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(quoted(name))
