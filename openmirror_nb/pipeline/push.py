"""One push, end to end: shape -> stage and check -> lock -> recover -> journal -> publish.

Everything that can reject a push runs before anything visible is written; a rejected push
removes what it staged, so the landing zone is left byte-for-byte as it was. Pushes to a table
that already has state hold the table lock from the start, so a snapshot diff is computed
against the state it will replace.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from openmirror_nb.errors import ConfigError
from openmirror_nb.landing_zone import (
    last_sequence_number,
    metadata_bytes,
    partner_events_bytes,
    read_metadata,
)
from openmirror_nb.model import (
    ROW_MARKER,
    PartnerInfo,
    PushMode,
    PushResult,
    RowMarker,
)
from openmirror_nb.pipeline import checks, context, flows, stage
from openmirror_nb.pipeline.changes import to_marker
from openmirror_nb.pipeline.normalize import normalize
from openmirror_nb.pipeline.request import PushRequest, compression_for, invalid_ops, shape
from openmirror_nb.publish import (
    Journal,
    JournalEntry,
    crash_point,
    journal_path,
    next_sequence_number,
    publish,
    recover,
)
from openmirror_nb.publish import staging_folder as staging_path
from openmirror_nb.state import TableState, next_state, read_state
from openmirror_nb.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_MARKER_LABELS: dict[int, str] = {int(m): m.name.lower() for m in RowMarker}
STATE_FOLDER = "_openmirror/snapshots"


class _Stale(Exception):
    """Another push committed between our staging and our lock: stage again under the lock."""


def run_push(storage: Storage, df: DataFrame, request: PushRequest) -> PushResult:
    """Push one DataFrame to one table (see ``MirroredDatabase.push``)."""
    started = time.monotonic()
    if request.rows_per_file < 1:
        raise ConfigError(f"rows_per_file {request.rows_per_file} must be at least 1.")
    if request.update_marker not in (int(RowMarker.UPDATE), int(RowMarker.UPSERT)):
        raise ConfigError(f"update_marker {request.update_marker} must be 1 (update) or 4 (upsert).")
    if request.strict_delete and request.convention != "sys_op":
        raise ConfigError("strict_delete is Prostore's rule; use it with convention='sys_op'.")
    # A table with state, or with a decided push still to roll forward, is worked on under its lock.
    locked = read_state(storage, request.table.folder) is not None or storage.exists(
        journal_path(request.table.key)
    )
    try:
        return _attempt(storage, df, request, started=started, locked=locked)
    except _Stale:
        return _attempt(storage, df, request, started=started, locked=True)


def _attempt(
    storage: Storage, df: DataFrame, request: PushRequest, *, started: float, locked: bool
) -> PushResult:
    ref, name = request.table, str(request.table)
    lock: AbstractContextManager[None] = (
        storage.lock(ref.key, timeout=request.lock_timeout) if locked else nullcontext()
    )
    with lock:
        if locked:
            recover(storage, ref.key)
            _sweep(storage, ref.key, read_state(storage, ref.folder))
        meta = read_metadata(storage, ref.folder)
        options = checks.resolve_options(request.table_options, meta, name)
        keys = checks.resolve_keys(request.keys, meta, name)
        state = read_state(storage, ref.folder)
        shaped = shape(df, request, keys, options)
        checks.check_against_state(shaped.schema, state, options, name)
        push_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        ctx = context.StageContext(
            storage=storage,
            spark=shaped.sparkSession,
            staging=staging_path(ref.key, push_id),
            state_dir=f"{STATE_FOLDER}/{ref.key}/{push_id}",
            options=options,
            compression=compression_for(request, options),
            rows_per_file=request.rows_per_file,
            keys=keys,
            table=name,
            local_dir=None if storage.SPARK_WRITABLE else tempfile.mkdtemp(prefix="openmirror-"),
        )
        fresh = [p for p in _internal_parents(ref.key) if not storage.exists(p)]
        journaled = False
        try:
            staged = _stage(ctx, df, shaped, request, state)
            crash_point("after_staging")
            with nullcontext() if locked else storage.lock(ref.key, timeout=request.lock_timeout):
                journal, size = _decide(ctx, shaped, request, staged, push_id=push_id, staged_against=state)
                journaled = True
                done = publish(storage, journal)
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
    return PushResult(
        table=name,
        mode=request.mode,
        sequence_numbers=tuple(e.sequence for e in done.entries),
        rows=_rows(staged.stats, request.mode, first=state is None),
        bytes=size,
        seconds=time.monotonic() - started,
        files=tuple(done.final(e) for e in done.entries),
    )


def _sweep(storage: Storage, key: str, state: TableState | None) -> None:
    """Remove what pushes that died before their journal left behind.

    Runs under the table lock of a table that has state: every push of such a table stages under
    that lock, so any staging folder or unreferenced key state found now is an orphan.
    """
    for entry in storage.list_dir(f"_openmirror/staging/{key}"):
        storage.delete(f"_openmirror/staging/{key}/{entry.name}")
    live = set(state.key_state) if state else set()
    for entry in storage.list_dir(f"{STATE_FOLDER}/{key}"):
        if f"{STATE_FOLDER}/{key}/{entry.name}" not in live:
            storage.delete(f"{STATE_FOLDER}/{key}/{entry.name}")


def _internal_parents(key: str) -> tuple[str, ...]:
    return (
        "_openmirror",
        "_openmirror/staging",
        f"_openmirror/staging/{key}",
        STATE_FOLDER,
        f"{STATE_FOLDER}/{key}",
    )


def _stage(
    ctx: context.StageContext,
    df: DataFrame,
    shaped: DataFrame,
    request: PushRequest,
    state: TableState | None,
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
    ctx: context.StageContext,
    shaped: DataFrame,
    request: PushRequest,
    staged: context.Staged,
    *,
    push_id: str,
    staged_against: TableState | None,
) -> tuple[Journal, int]:
    """Under the table lock: finish any interrupted push, re-check, assign sequence numbers."""
    storage, ref, name = ctx.storage, request.table, str(request.table)
    recover(storage, ref.key)
    meta = read_metadata(storage, ref.folder)
    checks.resolve_keys(ctx.keys, meta, name)
    state = read_state(storage, ref.folder)
    if state != staged_against:
        raise _Stale()
    first = state is None and last_sequence_number(storage, ref.folder) == 0
    parts = stage.list_parts(storage, staged.folder, staged.stats, keep_empty=first)
    start = next_sequence_number(storage, ref.folder, floor=state.last_sequence_number if state else 0)
    data_schema = type(shaped.schema)([f for f in shaped.schema.fields if f.name != ROW_MARKER])
    new_state = next_state(
        state,
        key_columns=ctx.keys,
        schema=data_schema.json(),
        folder=ctx.state_dir,
        new_base=staged.new_base,
        rows=staged.state_rows,
        buckets=staged.buckets,
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
        table=ref.key,
        folder=ref.folder,
        extension=ctx.options.extension,
        file_detection=ctx.options.file_detection,
        staging=ctx.staging,
        state=new_state.to_bytes().decode("utf-8"),
        metadata=metadata.decode("utf-8") if metadata else None,
        partner_events=partner_events_bytes(partner).decode("utf-8"),
        entries=tuple(JournalEntry(p.path, start + i) for i, p in enumerate(parts)),
        obsolete=obsolete,
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
