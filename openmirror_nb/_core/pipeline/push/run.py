"""One push, end to end: lock -> settle -> shape -> stage and check -> journal -> publish.

Every push holds the table lock from the start, so a snapshot diff is computed against the state
it will replace, and whatever a dead push or an ended incarnation of the table left is settled first
(``landing_zone.lifecycle``). Everything that can reject a push runs before anything visible is
written; a rejected push removes what it staged, so the landing zone is left byte-for-byte as
it was. A push that finds nothing to publish (an unchanged snapshot, an empty change feed)
leaves it so too: no file, no key state, no state rewrite, only the record of when the table was
last checked (``TableFolder.write_checked``). Where the table is kept (folder, state, journal,
staging, key state) is ``TableFolder``'s business alone.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import LandingZoneError, PushCancelledError, user_line
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.landing_zone.discovery import check_unique
from openmirror_nb._core.landing_zone.freshness_log import Check, record_check
from openmirror_nb._core.landing_zone.lifecycle import Settled, settle
from openmirror_nb._core.landing_zone.metadata import TableMetadata
from openmirror_nb._core.landing_zone.publish import crash_point, publish
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.reseed_journal import LOADED, read_reseed
from openmirror_nb._core.landing_zone.table_folder import TableFolder, new_incarnation
from openmirror_nb._core.model import PushResult, RowMarker
from openmirror_nb._core.pipeline.feeds.changes import to_marker
from openmirror_nb._core.pipeline.push import checks_before, context, flows
from openmirror_nb._core.pipeline.push.decision import StaleTable, decide, published_rows, push_times
from openmirror_nb._core.pipeline.push.normalize import normalize
from openmirror_nb._core.pipeline.push.progress import PushJobs, hold_interrupts, spark_stages
from openmirror_nb._core.pipeline.push.request import PushRequest, compression_for, invalid_ops
from openmirror_nb._core.progress import (
    Cancelled,
    Committing,
    Finished,
    ProgressCallback,
    ProgressEvent,
    Publishing,
    PushFailed,
    Staging,
    Validating,
    WaitingForLock,
    emit,
)
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class _Push:
    """One push's inputs, and how it reports (``say`` makes an event, ``tell`` sends one)."""

    home: TableFolder
    df: DataFrame
    request: PushRequest
    started: float
    say: Callable[..., ProgressEvent]
    progress: ProgressCallback | None
    jobs: PushJobs
    checked: checks_before.Checked | None = None

    @property
    def name(self) -> str:
        return str(self.request.table)

    def tell(self, kind: type[ProgressEvent], **fields: Any) -> None:
        emit(self.progress, self.say(kind, **fields))


def run_push(
    storage: Storage,
    df: DataFrame,
    request: PushRequest,
    progress: ProgressCallback | None = None,
    *,
    lock_held: bool = False,
    reseed: bool = False,
    settled: Settled | None = None,
    checked: checks_before.Checked | None = None,
) -> PushResult:
    """Push one DataFrame to one table (see ``MirroredDatabase.push``), telling ``progress``.

    ``lock_held``: the caller holds the table lock (a reseed, which loads under its own lock;
    a stream's batch sink); ``reseed``: this push is a reseed's reload, which a reseed in progress
    lets through; ``settled``: with ``lock_held``, what the caller's own ``settle`` of the table
    found under that lock, so the table is not settled (listed, its state read) a second time;
    ``checked``: what a routed batch's ``checks_before.check_frame`` found for ``df``, not checked
    again unless the table has changed since.
    """
    started = time.monotonic()
    table = str(request.table)
    jobs = PushJobs(None if progress is None else df.sparkSession.sparkContext, f"openmirror-{uuid.uuid4()}")

    def say(kind: type[ProgressEvent], **fields: Any) -> ProgressEvent:
        return kind(table, time.monotonic() - started, jobs=jobs.count(), **fields)

    push = _Push(TableFolder(storage, request.table), df, request, started, say, progress, jobs, checked)
    push.tell(Validating)
    try:
        with jobs.tagged():
            removed, result = _locked(push, lock_held=lock_held, reseed=reseed, settled=settled)
    except PushCancelledError as exc:
        push.tell(Cancelled, decided=exc.decided)
        raise
    except KeyboardInterrupt:
        # before the decision (the only place an interrupt gets through): nothing was published
        push.tell(Cancelled, decided=False)
        raise PushCancelledError(
            f"Push to {table} cancelled before it was decided: nothing was published, the landing "
            "zone is unchanged.",
            decided=False,
        ) from None
    except BaseException as exc:
        push.tell(PushFailed, error=user_line(exc))
        raise
    result = dataclasses.replace(result, removed=removed)
    push.tell(Finished, result=result)
    return result


def _locked(
    push: _Push, *, lock_held: bool, reseed: bool, settled: Settled | None
) -> tuple[tuple[str, ...], PushResult]:
    """The push under the table lock (taken here unless ``lock_held``)."""
    home = push.home
    if lock_held:
        return _attempts(push, None, reseed=reseed, reseeding=False, settled=settled)
    held = home.lock_status()
    incarnation = checks_before.incarnation(home)
    running = read_reseed(home)
    reseeding = running is not None and running.done < LOADED
    if held.held:
        push.tell(WaitingForLock, holder=held.holder, since=held.since)
    with home.lock(timeout=push.request.lock_timeout):
        return _attempts(push, incarnation, reseed=reseed, reseeding=reseeding)


def _attempts(
    push: _Push, incarnation: str | None, *, reseed: bool, reseeding: bool, settled: Settled | None = None
) -> tuple[tuple[str, ...], PushResult]:
    """Settle the table (unless the caller did, under this lock) and push; once more, settled
    again, if the table changed under the staging."""
    settled = settled or settle(push.home)
    checks_before.check_incarnation(push.home, settled.state, incarnation, reseed=reseed, reseeding=reseeding)
    removed = settled.removed
    try:
        return removed, _attempt(push, settled.state)
    except StaleTable:
        settled = settle(push.home)
        removed += settled.removed
    try:
        return removed, _attempt(push, settled.state)
    except StaleTable:
        raise LandingZoneError(
            f"Table {push.name} changed twice while this push staged its files (its folder was "
            "deleted or replaced by someone else); nothing was published: push again once "
            "nothing else writes to it."
        ) from None


def _attempt(push: _Push, state: PushState | None) -> PushResult:
    """Stage, then decide and publish (or, with nothing to publish, only note the check)."""
    home, request = push.home, push.request
    meta = home.read_metadata()
    if meta is None and state is None:  # a first push: under the lock every spelling shares
        check_unique(home.storage, home.ref)
    ctx, shaped = _prepare(push, meta, state)
    fresh = context.fresh_folders(home, state)
    journaled = False
    try:
        push.tell(Staging)
        with spark_stages(push.jobs, say=push.say, progress=push.progress) as steps:
            staged = _stage(dataclasses.replace(ctx, on_step=steps.on_step), push.df, shaped, request, state)
        crash_point("after_staging")
        if staged.nothing and not checks_before.moves_source(request, state):
            return _unchanged(push, state)
        if staged.nothing:  # only a sync's new source version to commit: no key state with it
            home.storage.delete(ctx.state_dir)
        # From the journal on, the push must finish: an interrupt waits until it has.
        with hold_interrupts() as interrupt:
            seconds = time.monotonic() - push.started
            journal, size = decide(
                home, ctx, shaped.schema, staged, request=request, meta=meta, state=state, seconds=seconds
            )
            journaled = True
            done = publish(
                home,
                journal,
                on_file=lambda i, n, path: push.tell(Publishing, file=i, files=n, name=path),
                on_commit=lambda: push.tell(Committing),
            )
    finally:
        if not journaled:  # rejected, or nothing to publish: nothing of it stays
            context.remove_staged(ctx, fresh)
        if ctx.local_dir is not None:
            shutil.rmtree(ctx.local_dir, ignore_errors=True)
    result = PushResult(
        table=push.name,
        mode=request.mode,
        sequence_numbers=tuple(e.sequence for e in done.entries),
        rows=published_rows(staged.stats, request.mode, first=state is None),
        bytes=size,
        seconds=time.monotonic() - push.started,
        files=tuple(done.final(e) for e in done.entries),
    )
    if interrupt.arrived:
        raise PushCancelledError(
            f"Push to {push.name} was cancelled after it was decided, so it finished first: {result!r}.",
            decided=True,
        )
    return result


def _prepare(
    push: _Push, meta: TableMetadata | None, state: PushState | None
) -> tuple[context.StageContext, DataFrame]:
    """Check the push against the table (unless a routed batch did, against the table as it is
    now), shape its frame, and say where it stages."""
    home, request, checked = push.home, push.request, push.checked
    if checked is None or not checked.holds(meta, state):
        checked = checks_before.check_frame(push.df, request, meta, state)
    checks_before.check_source(request, state)
    checks_before.check_stream(request, state)
    push_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    # A table pushed by an older version has no incarnation yet: this push gives it one.
    incarnation = state.incarnation if state and state.incarnation else new_incarnation()
    ctx = context.StageContext(
        storage=home.storage,
        spark=checked.shaped.sparkSession,
        staging=home.staging(incarnation, push_id),
        state_dir=home.keystate(incarnation, push_id),
        options=checked.options,
        compression=compression_for(request, checked.options),
        rows_per_file=request.rows_per_file,
        keys=checked.keys,
        table=push.name,
        local_dir=None if home.storage.SPARK_WRITABLE else tempfile.mkdtemp(prefix="openmirror-"),
        push_id=push_id,
        incarnation=incarnation,
    )
    return ctx, checked.shaped


def _unchanged(push: _Push, state: PushState | None) -> PushResult:
    """Nothing to publish: only the time of the check is written, and that the table was current
    as of the push's source times (what staged goes in ``_attempt``)."""
    now = time.time()
    push.home.write_checked(now)
    source = push_times(push.request, started=now - (time.monotonic() - push.started))
    if source is not None and state is not None:
        record_check(push.home.storage, push.home.internal, Check(state.last_sequence_number, now, source))
    seconds = time.monotonic() - push.started
    return PushResult(
        table=push.name, mode=push.request.mode, sequence_numbers=(), rows={}, bytes=0, seconds=seconds
    )


def _stage(
    ctx: context.StageContext,
    df: DataFrame,
    shaped: DataFrame,
    request: PushRequest,
    state: PushState | None,
) -> context.Staged:
    if request.append:
        return flows.stage_append(ctx, shaped, first=state is None)
    if request.mode == "snapshot":
        if state is None:
            return flows.stage_initial(ctx, shaped)
        return flows.stage_diff(ctx, shaped, prior=state, update_marker=request.feed.update_marker)
    if request.feed.strict_delete:
        from pyspark.sql import functions as F

        deletes = normalize(df, options=ctx.options, keep=frozenset({request.feed.op})).where(
            to_marker(F.col(quoted(request.feed.op)), "sys_op", update_marker=4) == int(RowMarker.DELETE)
        )
        flows.check_strict_deletes(ctx, deletes.drop(request.feed.op), prior=state)
    return flows.stage_changes(
        ctx,
        shaped,
        unique_keys=request.feed.convention == "sys_op",
        invalid_values=lambda: invalid_ops(df, request),
        prior=state,
    )
