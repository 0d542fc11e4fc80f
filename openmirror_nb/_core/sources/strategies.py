"""The strategies of a planned table at run time, each one push:

- ``snapshot``: the whole table, diffed against the last push (``db.push``);
- ``delta_sync``: a Delta table's change data feed (``db.sync_delta``);
- ``incremental``: the rows past the watermark the table holds (less an overlap window), upserted
  as one change feed, with, when ``detect_deletes``, a delete for each mirrored key the source no
  longer has (a sweep that reads the key columns only); the new watermark is committed with the
  files, so a crash can neither skip nor repeat rows;
- ``append``: the rows strictly past the watermark, up to the highest read now, as marker-free
  inserts to a table without keyColumns (``PushRequest.append``).

A large JDBC table is read in parallel ranges of a whole-number key or watermark (``ranges``).
"""

from __future__ import annotations

import shutil
import tempfile
from typing import TYPE_CHECKING

from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import DEFAULT_ROWS_PER_FILE, PushResult, SyncResult
from openmirror_nb._core.pipeline import keystate
from openmirror_nb._core.pipeline.normalize import normalize
from openmirror_nb._core.pipeline.push import run_push
from openmirror_nb._core.pipeline.request import PushRequest
from openmirror_nb._core.sources import ranges
from openmirror_nb._core.sources.plan import PlannedTable
from openmirror_nb._core.sources.watermark import highest, past, upto
from openmirror_nb._core.storage.local import fetch_folder

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from openmirror_nb._core.sources.runner import Runner

OP = "_om_sys_op"  # the incremental feed's operation column (Prostore's sys_op: 0 upsert, 1 delete)


def push(runner: Runner, planned: PlannedTable, frame: DataFrame) -> PushResult | SyncResult:
    """Push ``planned`` by its strategy (``frame``: the source table, read lazily)."""
    if planned.strategy == "delta_sync":
        return _sync(runner, planned)
    frame = ranges.split(runner.source, planned, frame)
    if planned.strategy == "incremental":
        return _incremental(runner, planned, frame)
    if planned.strategy == "append":
        return _append(runner, planned, frame)
    return run_push(runner.storage, frame, _request(runner, planned, mode="snapshot"), runner.progress)


def would_push(runner: Runner, planned: PlannedTable, frame: DataFrame) -> str:
    """What a run would push for ``planned``, in words (``dry_run``: one count, nothing written)."""
    state = TableFolder.of(runner.storage, planned.table).read_state()
    if planned.strategy == "delta_sync":
        held = f" from version {state.source_version}" if state and state.source_version is not None else ""
        return f"would sync the Delta table's changes{held}" if state else "would load the Delta table"
    if planned.strategy in ("incremental", "append") and state is not None:
        mark, append = _held(state, planned), planned.strategy == "append"
        rows = past(frame, planned.watermark or "", mark, overlap=0.0 if append else runner.overlap).count()
        if append:
            return f"would append {rows:,} rows past watermark {planned.watermark} = {mark}"
        sweep = ", and delete the keys the source no longer has" if planned.detect_deletes else ""
        return f"would upsert up to {rows:,} rows past watermark {planned.watermark} = {mark}{sweep}"
    rows = frame.count()
    if state is None:
        return f"would load {rows:,} rows (the table's initial load)"
    return f"would diff {rows:,} rows against the mirrored table and publish what changed"


def _request(runner: Runner, planned: PlannedTable, **fields: object) -> PushRequest:
    return PushRequest.create(
        table=planned.table,
        keys=planned.keys,
        order_by=(),
        **{
            "mode": "snapshot",
            "op_column": None,
            "convention": "rowmarker",
            "table_options": None,
            "compression": None,
            "rows_per_file": DEFAULT_ROWS_PER_FILE,
            "lock_timeout": runner.lock_timeout,
            "partner": runner.partner,
            **fields,
        },
    )


def _sync(runner: Runner, planned: PlannedTable) -> SyncResult:
    from openmirror_nb._core.pipeline.delta.source import DeltaSource
    from openmirror_nb._core.pipeline.delta_sync import sync_delta
    from openmirror_nb._core.runtime import get_spark

    spark = get_spark()
    uri = ranges.delta_location(runner.source, planned.source, spark)
    request = PushRequest.snapshot(
        table=planned.table, keys=planned.keys, lock_timeout=runner.lock_timeout, partner=runner.partner
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
        stored = _stored(runner, planned, frame, state, local)
        rows = past(frame, column, held, overlap=runner.overlap)
        feed = _changed(normalize(rows, options=meta.options), stored, planned.keys).withColumn(OP, F.lit(0))
        if planned.detect_deletes and stored is not None:
            feed = feed.unionByName(_gone(stored, frame, planned.keys), allowMissingColumns=True)
        mark = (column, new) if new is not None else None
        request = _request(
            runner,
            planned,
            mode="changes",
            convention="sys_op",
            op_column=OP,
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


def _stored(
    runner: Runner, planned: PlannedTable, frame: DataFrame, state: PushState, local: str | None
) -> DataFrame | None:
    """The table's live keys with their row hashes, from its key state (``None``: it has none)."""
    keys = planned.keys
    deltas, feeds = keystate.deltas_of(state, lambda d: fetch_folder(runner.storage, d, local_dir=local))
    return keystate.read_effective(
        frame.sparkSession,
        base=fetch_folder(runner.storage, state.base, local_dir=local) if state.base else None,
        deltas=deltas,
        keys=keys,
        small_deltas=False,
        schema=keystate.state_schema(frame.schema, keys),
        feeds=feeds,
    )


def _changed(rows: DataFrame, stored: DataFrame | None, keys: tuple[str, ...]) -> DataFrame:
    """``rows`` (normalized as a push writes them) less those the table holds as they are: the
    overlap window re-reads rows, and an unchanged one is not published again."""
    if stored is None:
        return rows
    h1, h2 = keystate.row_hashes(rows, keys=keys)
    hashed = rows.withColumn(keystate.H1, h1).withColumn(keystate.H2, h2)
    same = stored.select(*[_col(k) for k in keys], keystate.H1, keystate.H2)
    return hashed.join(same, [*keys, keystate.H1, keystate.H2], "left_anti").drop(keystate.H1, keystate.H2)


def _gone(stored: DataFrame, frame: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """A delete (``OP`` 1) for each key the table holds and the source no longer has; the source
    is read for its key columns only."""
    from pyspark.sql import functions as F

    cols = [_col(k) for k in keys]
    return stored.select(*cols).join(frame.select(*cols), list(keys), "left_anti").withColumn(OP, F.lit(1))


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(f"`{name.replace('`', '``')}`")
