"""Replicate one table folder: pick its pending files in order, apply them, fail or wait.

Contract §3.3: ``SequentialFileName`` applies strictly the next contiguous number, and a gap
makes the table wait; ``LastUpdateTimeFileDetection`` applies unprocessed files by modification
time and never re-ingests a processed path. §6: processed files move to ``_ProcessedFiles``
except the newest. §3.5: a bad file fails its table until it is replaced under the same name.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from openmirror_nb._core.errors import user_line
from openmirror_nb._core.landing_zone.metadata import TableMetadata
from openmirror_nb._core.landing_zone.names import CLEANUP_FOLDERS
from openmirror_nb._core.mirror.apply import apply_files, table_schema
from openmirror_nb._core.mirror.changes import PreparedFile, prepare_file
from openmirror_nb._core.mirror.discovery import DataFile, MirrorFolder, list_table_files
from openmirror_nb._core.mirror.faults import STICKY_KINDS, TableFault
from openmirror_nb._core.mirror.metadata import load_settings, missing_metadata_fault
from openmirror_nb._core.mirror.reader import read_data_file
from openmirror_nb._core.mirror.results import TableRun
from openmirror_nb._core.mirror.state import MirroredTableState

PROCESSED_FOLDER = CLEANUP_FOLDERS[0]


@dataclass(frozen=True)
class SyncLimits:
    """How much one Delta commit may take in (several small files share one commit)."""

    max_rows: int = 1_000_000
    max_bytes: int = 256 * 1024 * 1024


@dataclass
class _Pass:
    """Mutable tally of one table's pass."""

    applied: list[str] = field(default_factory=list)
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    ignored: list[str] = field(default_factory=list)
    missing: int | None = None


def sync_table(
    folder: MirrorFolder,
    state: MirroredTableState,
    *,
    table_dir: Path,
    now: Callable[[], str],
    save: Callable[[], None],
    limits: SyncLimits,
) -> TableRun:
    """Bring the Delta table of ``folder`` up to date and report what happened."""
    tally = _Pass()
    try:
        _sync(folder, state, table_dir=table_dir, now=now, save=save, limits=limits, tally=tally)
    except TableFault as fault:
        _fail(state, fault, artifact=state.id)
    if state.status != "Failed":
        state.error_code = ""
        state.error_message = ""
        if tally.missing is not None:
            state.error_message = (
                f"Waiting for sequence number {tally.missing}: later files stay pending until it arrives."
            )
    return TableRun(
        table=state.qualified,
        folder=folder.rel,
        status=state.status,
        files_applied=tuple(tally.applied),
        rows_inserted=tally.inserted,
        rows_updated=tally.updated,
        rows_deleted=tally.deleted,
        error_code=state.error_code,
        error=state.error_message,
        missing_sequence=tally.missing,
        ignored_files=tuple(tally.ignored),
    )


def _fail(state: MirroredTableState, fault: TableFault, *, artifact: str, signature: Any = None) -> None:
    state.status = "Failed"
    state.error_code = fault.error_code
    state.error_message = fault.message(artifact=artifact)
    state.failure = {"kind": fault.kind, "file": fault.file_name, "signature": signature}


def _sync(
    folder: MirrorFolder,
    state: MirroredTableState,
    *,
    table_dir: Path,
    now: Callable[[], str],
    save: Callable[[], None],
    limits: SyncLimits,
    tally: _Pass,
) -> None:
    if state.failure and state.failure["kind"] in STICKY_KINDS:
        return  # stays Failed until the folder is recreated (contract §5.1)
    settings = load_settings(folder.path)
    files, others = list_table_files(folder.path)
    tally.ignored.extend(others)
    if settings is None:
        if files:
            raise missing_metadata_fault(folder.rel)
        state.status = "Initialized"
        state.failure = None
        return
    state.sequential = settings.sequential
    if state.keys and list(settings.key_columns) != state.keys:
        raise TableFault(
            f"keyColumns changed from {state.keys} to {list(settings.key_columns)}; keyColumns cannot "
            "change once set. Delete and recreate the table folder to re-key the table.",
            kind="schema",
        )
    pending, processed = _select(settings, state, files, tally)
    failure = state.failure
    if failure and failure["kind"] == "file" and pending:
        first = pending[0]
        if [first.name, *first.signature, settings.digest] == failure.get("signature"):
            return  # the same bad file is still there; it is read again once replaced
    state.failure = None
    state.status = "Replicating" if state.batch else "Snapshotting"
    try:
        _apply_pending(
            pending, settings, state, table_dir=table_dir, now=now, save=save, limits=limits, tally=tally
        )
    finally:
        _clean_up(folder.path, processed + [f for f in pending if f.name in tally.applied], state, tally)


def _select(
    settings: TableMetadata, state: MirroredTableState, files: list[DataFile], tally: _Pass
) -> tuple[list[DataFile], list[DataFile]]:
    """Split the folder's data files into pending (in apply order) and already processed."""
    if not settings.sequential:
        done = set(state.processed)
        pending = sorted((f for f in files if f.name not in done), key=lambda f: (f.mtime_ns, f.name))
        return pending, [f for f in files if f.name in done]
    by_number: dict[int, list[DataFile]] = {}
    for f in files:
        if f.sequence is None:
            tally.ignored.append(f.name)
        else:
            by_number.setdefault(f.sequence, []).append(f)
    pending = []
    expected = state.last_sequence + 1
    while expected in by_number:
        same = by_number[expected]
        if len(same) > 1:
            names = ", ".join(f.name for f in same)
            raise TableFault(
                f"Several files carry sequence number {expected}: {names}.",
                file_name=same[0].name,
                sequence=expected,
            )
        pending.append(same[0])
        expected += 1
    if any(n > expected for n in by_number):
        tally.missing = expected
    processed = [f for n, same in sorted(by_number.items()) if n <= state.last_sequence for f in same]
    return pending, processed


def _apply_pending(
    pending: list[DataFile],
    settings: TableMetadata,
    state: MirroredTableState,
    *,
    table_dir: Path,
    now: Callable[[], str],
    save: Callable[[], None],
    limits: SyncLimits,
    tally: _Pass,
) -> None:
    schema = table_schema(table_dir)
    batch: list[PreparedFile] = []
    rows = size = 0
    for file in pending:
        try:
            raw = read_data_file(file, settings)
            prepared, next_schema = prepare_file(
                file, raw, keys=settings.key_columns, upsert_default=settings.upsert_default, schema=schema
            )
        except TableFault as fault:
            if batch:
                _commit(
                    batch,
                    settings,
                    state,
                    table_dir=table_dir,
                    schema=schema,
                    now=now,
                    save=save,
                    tally=tally,
                )
            located = fault.for_file(file.name, file.sequence)
            _fail(state, located, artifact=state.id, signature=[file.name, *file.signature, settings.digest])
            return
        batch.append(prepared)
        schema = next_schema
        rows += raw.num_rows
        size += file.size
        if rows >= limits.max_rows or size >= limits.max_bytes:
            _commit(
                batch, settings, state, table_dir=table_dir, schema=schema, now=now, save=save, tally=tally
            )
            batch, rows, size = [], 0, 0
    if batch:
        _commit(batch, settings, state, table_dir=table_dir, schema=schema, now=now, save=save, tally=tally)


def _commit(
    batch: list[PreparedFile],
    settings: TableMetadata,
    state: MirroredTableState,
    *,
    table_dir: Path,
    schema: pa.Schema | None,
    now: Callable[[], str],
    save: Callable[[], None],
    tally: _Pass,
) -> None:
    assert schema is not None
    last = batch[-1].file
    info: dict[str, Any] = {
        "files": [p.file.name for p in batch],
        "last_sequence": last.sequence if settings.sequential else None,
        "anchor": {"name": last.name, "ino": last.ino, "size": last.size, "mtime_ns": last.mtime_ns},
        "folder_ino": state.folder_ino,
        "table_id": state.id,
        "sequential": settings.sequential,
        "keys": list(settings.key_columns),
        "rows": sum(p.data.num_rows for p in batch),
        "bytes": sum(p.file.size for p in batch),
        "time": now(),
    }
    try:
        apply_files(
            table_dir, batch, schema=schema, keys=settings.key_columns, batch=state.batch + 1, info=info
        )
    except Exception as exc:  # a Delta write failure fails this table only
        first = batch[0].file
        raise TableFault(user_line(exc, "Writing the Delta table failed"), kind="internal").for_file(
            first.name, first.sequence
        ) from exc
    state.record({**info, "batch": state.batch + 1})
    state.status = "Replicating"
    save()
    tally.applied.extend(info["files"])
    tally.inserted += sum(p.inserts for p in batch)
    tally.updated += sum(p.updates for p in batch)
    tally.deleted += sum(p.deletes for p in batch)


def _clean_up(folder: Path, processed: list[DataFile], state: MirroredTableState, tally: _Pass) -> None:
    """Move processed files to ``_ProcessedFiles``, leaving the newest in place (contract §6)."""
    anchor = state.anchor["name"] if state.anchor else None
    target = folder / PROCESSED_FOLDER
    for file in processed:
        if file.name == anchor:
            continue
        destination = target / file.name
        if destination.exists():
            # An already processed path was written again: never re-ingested, never clobbered.
            tally.ignored.append(file.name)
            continue
        target.mkdir(exist_ok=True)
        try:
            os.rename(file.path, destination)
        except FileNotFoundError:
            continue


def drop_table_dir(table_dir: Path) -> None:
    """Remove a mirrored table's Delta folder, and its schema folder once empty."""
    shutil.rmtree(table_dir, ignore_errors=True)
    try:
        table_dir.parent.rmdir()
    except OSError:
        pass
