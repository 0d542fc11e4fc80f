"""One push, end to end: lock -> settle -> shape -> stage and check -> journal -> publish.

Every push holds the table lock from the start, so a snapshot diff is computed against the state
it will replace, and whatever a dead push or an ended life of the table left is settled first
(``landing_zone.lifecycle``). Everything that can reject a push runs before anything visible is
written; a rejected push removes what it staged, so the landing zone is left byte-for-byte as
it was. Where the table is kept (folder, state, journal, staging, key state) is ``TableFolder``'s
business alone.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import LandingZoneError, PushCancelledError
from openmirror_nb._core.landing_zone.discovery import check_unique
from openmirror_nb._core.landing_zone.journal import Journal, JournalEntry
from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.metadata import metadata_bytes, partner_events_bytes
from openmirror_nb._core.landing_zone.publish import crash_point, publish
from openmirror_nb._core.landing_zone.push_state import PushState, next_state
from openmirror_nb._core.landing_zone.reseed_journal import LOADED, read_reseed
from openmirror_nb._core.landing_zone.table_folder import TableFolder, new_incarnation
from openmirror_nb._core.model import (
    ROW_MARKER,
    PartnerInfo,
    PushMode,
    PushResult,
    RowMarker,
)
from openmirror_nb._core.pipeline import checks, context, flows, stage
from openmirror_nb._core.pipeline.changes import to_marker
from openmirror_nb._core.pipeline.normalize import normalize
from openmirror_nb._core.pipeline.push_progress import hold_interrupts, spark_stages
from openmirror_nb._core.pipeline.request import PushRequest, compression_for, invalid_ops, shape
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

_MARKER_LABELS: dict[int, str] = {int(m): m.name.lower() for m in RowMarker}


class _Stale(Exception):
    """The table changed under us while we staged (its folder was deleted by hand): stage again.

    Internal: a second one in a row becomes a ``LandingZoneError`` (``run_push``). It once escaped
    for every name that ``Path.as_uri()`` percent-encodes: Spark staged into ``my%20table``, so
    the staged folder was never where the push looked for it."""


def run_push(
    storage: Storage,
    df: DataFrame,
    request: PushRequest,
    progress: ProgressCallback | None = None,
    *,
    lock_held: bool = False,
    reseed: bool = False,
) -> PushResult:
    """Push one DataFrame to one table (see ``MirroredDatabase.push``), telling ``progress``.

    ``lock_held``: the caller holds the table lock (a reseed, which loads under its own lock);
    ``reseed``: this push is a reseed's reload, which a reseed in progress lets through.
    """
    started = time.monotonic()
    table = str(request.table)

    def say(kind: type[ProgressEvent], **fields: Any) -> ProgressEvent:
        return kind(table, time.monotonic() - started, **fields)

    emit(progress, say(Validating))
    home = TableFolder(storage, request.table)

    def locked(life: str | None, reseeding: bool) -> tuple[tuple[str, ...], PushResult]:
        _check_life(home, life, reseed=reseed, reseeding=reseeding)
        removed = settle(home).removed
        try:
            return removed, _attempt(home, df, request, started=started, say=say, progress=progress)
        except _Stale:
            removed += settle(home).removed
        try:
            return removed, _attempt(home, df, request, started=started, say=say, progress=progress)
        except _Stale:
            raise LandingZoneError(
                f"Table {table} changed twice while this push staged its files (its folder was "
                "deleted or replaced by someone else); nothing was published: push again once "
                "nothing else writes to it."
            ) from None

    try:
        if lock_held:
            removed, result = locked(None, False)
        else:
            held = home.lock_status()
            life = _incarnation(home)
            running = read_reseed(home)
            reseeding = running is not None and running.done < LOADED
            if held.held:
                emit(progress, say(WaitingForLock, holder=held.holder, since=held.since))
            with home.lock(timeout=request.lock_timeout):
                removed, result = locked(life, reseeding)
    except PushCancelledError as exc:
        emit(progress, say(Cancelled, decided=exc.decided))
        raise
    except KeyboardInterrupt:
        # before the decision (the only place an interrupt gets through): nothing was published
        emit(progress, say(Cancelled, decided=False))
        raise PushCancelledError(
            f"Push to {table} cancelled before it was decided: nothing was published, the landing "
            "zone is unchanged.",
            decided=False,
        ) from None
    except BaseException as exc:
        emit(progress, say(PushFailed, error=" ".join(str(exc).split()) or type(exc).__name__))
        raise
    result = dataclasses.replace(result, removed=removed)
    emit(progress, say(Finished, result=result))
    return result


def _attempt(
    home: TableFolder,
    df: DataFrame,
    request: PushRequest,
    *,
    started: float,
    say: Callable[..., ProgressEvent],
    progress: ProgressCallback | None,
) -> PushResult:
    storage, name = home.storage, str(request.table)
    meta, state = home.read_metadata(), home.read_state()
    if meta is None and state is None:  # a first push: under the lock every spelling shares
        check_unique(storage, home.ref)
    options = checks.resolve_options(request.table_options, meta, name)
    keys = checks.resolve_keys(request.keys, meta, name)
    _check_source(request, state)
    shaped = shape(df, request, keys, options)
    checks.check_against_state(shaped.schema, state, options, name)
    push_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    # A table pushed by an older version has no incarnation yet: this push gives it one.
    incarnation = state.incarnation if state and state.incarnation else new_incarnation()
    ctx = context.StageContext(
        storage=storage,
        spark=shaped.sparkSession,
        staging=home.staging(incarnation, push_id),
        state_dir=home.keystate(incarnation, push_id),
        options=options,
        compression=compression_for(request, options),
        rows_per_file=request.rows_per_file,
        keys=keys,
        table=name,
        local_dir=None if storage.SPARK_WRITABLE else tempfile.mkdtemp(prefix="openmirror-"),
    )
    fresh = [p for p in _parents(home) if not storage.exists(p)]
    journaled = False
    try:
        emit(progress, say(Staging))
        group = f"openmirror-{push_id}"
        with spark_stages(ctx.spark.sparkContext, group=group, say=say, progress=progress) as steps:
            staged = _stage(dataclasses.replace(ctx, on_step=steps.on_step), df, shaped, request, state)
        crash_point("after_staging")
        # From the journal on, the push must finish: an interrupt waits until it has.
        with hold_interrupts() as interrupt:
            journal, size = _decide(
                home,
                ctx,
                shaped,
                request,
                staged,
                push_id=push_id,
                incarnation=incarnation,
                staged_against=state,
                started=started,
            )
            journaled = True
            done = publish(
                home,
                journal,
                on_file=lambda i, n, path: emit(progress, say(Publishing, file=i, files=n, name=path)),
                on_commit=lambda: emit(progress, say(Committing)),
            )
    except BaseException:
        if not journaled:
            storage.delete(ctx.staging)
            storage.delete(ctx.state_dir)
            for path in reversed(fresh):
                storage.delete(path, recursive=False)
        raise
    finally:
        if ctx.local_dir is not None:
            shutil.rmtree(ctx.local_dir, ignore_errors=True)
    result = PushResult(
        table=name,
        mode=request.mode,
        sequence_numbers=tuple(e.sequence for e in done.entries),
        rows=_rows(staged.stats, request.mode, first=state is None),
        bytes=size,
        seconds=time.monotonic() - started,
        files=tuple(done.final(e) for e in done.entries),
    )
    if interrupt.arrived:
        raise PushCancelledError(
            f"Push to {name} was cancelled after it was decided, so it finished first: {result!r}.",
            decided=True,
        )
    return result


def _incarnation(home: TableFolder) -> str | None:
    try:
        state = home.read_state()
    except LandingZoneError:
        return None  # settled (or reported) under the lock
    return state.incarnation if state else None


def _check_life(home: TableFolder, life: str | None, *, reseed: bool, reseeding: bool) -> None:
    """Refuse to push into a reseed that has not loaded yet, or into another life of the table
    than the one this push started against (``life``; ``reseeding``: a reseed was running then):
    it was reseeded while the push waited for the lock."""
    if reseed:
        return
    table = str(home.ref)
    running = read_reseed(home)
    if running is not None and running.done < LOADED:
        raise LandingZoneError(
            f"Table {table} is being reseeded ({running.step_text}); a push waits until the new data "
            f"is in: finish the reseed with db.apply_schema_change(plan, df, confirm={table!r})."
        )
    now = _incarnation(home) if life or reseeding else None  # the state is read once more only then
    if (life and now and now != life) or (reseeding and now):
        raise LandingZoneError(
            f"Table {table} was reseeded (or dropped and pushed again) while this push waited for its "
            "lock; its schema and keys may have changed: check db.describe() and push again."
        )


def _check_source(request: PushRequest, state: PushState | None) -> None:
    """A sync was read against the version the table held then; another sync may have moved it."""
    if request.source is None:
        return
    held = state.source_version if state else None
    if held != request.source_after:
        raise LandingZoneError(
            f"Table {request.table} holds version {held} of {request.source[0]} now, but this sync read "
            f"it at version {request.source_after}; another sync ran meanwhile: run sync_delta again."
        )


def _parents(home: TableFolder) -> tuple[str, ...]:
    """Folders a push may create before it is decided, outermost first (removed if rejected)."""
    schema = (f"{home.folder.rpartition('/')[0]}",) if home.ref.schema else ()
    return (*schema, home.folder, home.internal, home.staging_root, home.keystate_root)


def _stage(
    ctx: context.StageContext,
    df: DataFrame,
    shaped: DataFrame,
    request: PushRequest,
    state: PushState | None,
) -> context.Staged:
    if request.mode == "snapshot":
        if state is None:
            return flows.stage_initial(ctx, shaped)
        return flows.stage_diff(ctx, shaped, prior=state, update_marker=request.update_marker)
    if request.strict_delete:
        from pyspark.sql import functions as F

        deletes = normalize(df, options=ctx.options, keep=frozenset({request.op})).where(
            to_marker(F.col(f"`{request.op}`"), "sys_op", update_marker=4) == int(RowMarker.DELETE)
        )
        flows.check_strict_deletes(ctx, deletes.drop(request.op), prior=state)
    return flows.stage_changes(
        ctx,
        shaped,
        unique_keys=request.convention == "sys_op",
        invalid_values=lambda: invalid_ops(df, request),
        prior=state,
    )


def _decide(
    home: TableFolder,
    ctx: context.StageContext,
    shaped: DataFrame,
    request: PushRequest,
    staged: context.Staged,
    *,
    push_id: str,
    incarnation: str,
    staged_against: PushState | None,
    started: float,
) -> tuple[Journal, int]:
    """Re-check the table as it is now and assign sequence numbers (under the table lock)."""
    name = str(request.table)
    meta = home.read_metadata()
    checks.resolve_keys(ctx.keys, meta, name)
    state = home.read_state()
    # Someone deleted the table folder meanwhile (taking our staged files along, or the state).
    if (
        state != staged_against
        or (state is not None and meta is None)
        or not home.storage.exists(staged.folder)
    ):
        raise _Stale()
    last = home.last_sequence_number()
    first = state is None and last == 0
    parts = stage.list_parts(home.storage, staged.folder, staged.stats, keep_empty=first)
    start = max(last, state.last_sequence_number if state else 0) + 1
    data_schema = type(shaped.schema)([f for f in shaped.schema.fields if f.name != ROW_MARKER])
    new_state = next_state(
        state,
        key_columns=ctx.keys,
        schema=data_schema.json(),
        folder=ctx.state_dir,
        new_base=staged.new_base,
        rows=staged.state_rows,
        incarnation=incarnation,
        now=time.time(),
        buckets=staged.buckets,
        source=request.source,
        seconds=time.monotonic() - started,
    )
    # the key state a new base replaces goes once the new state is committed
    obsolete = tuple(state.key_state) if state and staged.new_base else ()
    definition = checks.schema_definition(data_schema, ctx.keys) if ctx.options.is_delimited else ()
    metadata = (
        None
        if meta
        else metadata_bytes(key_columns=ctx.keys, options=ctx.options, schema_definition=definition)
    )
    partner = _partner(request.partner, shaped.sparkSession.version)
    journal = Journal(
        push_id=push_id,
        table=home.ref.key,
        folder=home.folder,
        extension=ctx.options.extension,
        file_detection=ctx.options.file_detection,
        staging=ctx.staging,
        state=new_state.to_bytes().decode("utf-8"),
        metadata=metadata.decode("utf-8") if metadata else None,
        partner_events=partner_events_bytes(partner).decode("utf-8"),
        entries=tuple(JournalEntry(p.path, start + i) for i, p in enumerate(parts)),
        obsolete=obsolete,
        incarnation=incarnation,
    )
    return journal, sum(p.bytes for p in parts)


def _rows(stats: stage.StagedStats, mode: PushMode, *, first: bool) -> dict[str, int]:
    if mode == "snapshot" and first:
        return {"initial": sum(stats.rows_by_marker.values())}
    ordered = sorted((m, n) for m, n in stats.rows_by_marker.items() if m is not None)
    return {_MARKER_LABELS.get(m, str(m)): n for m, n in ordered}


def _partner(partner: PartnerInfo, spark_version: str) -> PartnerInfo:
    if partner.source_version:
        return partner
    return PartnerInfo(
        partner_name=partner.partner_name,
        source_type=partner.source_type,
        source_version=spark_version,
        additional_information=partner.additional_information,
    )
