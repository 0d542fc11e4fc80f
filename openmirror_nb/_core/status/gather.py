"""Build a ``StatusReport`` from its three sources (design §6).

1. The landing-zone listing, per table folder, through ``landing_zone.scan``: pending, processed
   and ready-to-delete files, and what blocks the table.
2. ``Files/Monitoring/replicator.json`` and ``tables.json`` (the service writes them in Fabric,
   the local mirror here): each table's status, error, processed rows and last sync.
3. Inside Fabric, the REST ``getMirroringStatus`` / ``getTablesMirroringStatus``, which answer
   before the service has rewritten its files and win over them. A source that cannot be read
   becomes a note in the report; the others still show.

What is processed: a listing proves it only once later files were (the service keeps the newest
processed file in place). A local database adds the mirror's own progress, which is exact; in
Fabric, a file is taken as processed when the mirror synced after it was written and no earlier
file is missing, and a failed table's error names the file it stopped at.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from openmirror_nb._core.errors import LandingZoneError, OpenMirrorError, did_you_mean
from openmirror_nb._core.fabric.status import MirroringStatus, TableMirroringStatus
from openmirror_nb._core.landing_zone.discovery import TableLocation, discover_tables, existing_ref, spellings
from openmirror_nb._core.landing_zone.names import DEFAULT_SCHEMA, data_file_name, is_ignored
from openmirror_nb._core.landing_zone.reseed_journal import reseeds_in_progress
from openmirror_nb._core.landing_zone.slot_wal import read_slot_wals
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.landing_zone.table_scan import DataFileInfo, TableScan, scan
from openmirror_nb._core.mirror.progress import Applied
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.status import naming
from openmirror_nb._core.status.failed_runs import with_failed_runs
from openmirror_nb._core.status.freshness import with_freshness
from openmirror_nb._core.status.mirror_view import MirrorView, mirror_key, read_mirror_view
from openmirror_nb._core.status.records import NOT_LISTED, STOPPING, Health, TableStatus
from openmirror_nb._core.status.report import StatusReport
from openmirror_nb._core.status.reseeds import with_reseeds
from openmirror_nb._core.status.streamed import stream_fields, with_held, with_stream_lags
from openmirror_nb._core.storage.base import Storage

_SEQUENCE = re.compile(r"SequenceNumber:\s*(\d+)")
_FILE = re.compile(r"FileName:\s*([^\s,]+)")


@dataclass(frozen=True)
class Sources:
    """Where a report reads from. ``files`` is the item's ``Files`` area; the callables are
    optional sources (each may raise; the report then notes it and goes on)."""

    landing_zone: Storage
    files: Storage
    applied: Callable[[], dict[str, Applied]] | None = None
    rest_database: Callable[[], MirroringStatus] | None = None
    rest_tables: Callable[[], list[TableMirroringStatus]] | None = None
    mirrored_rows: Callable[[TableRef], int | None] | None = None


def build_report(
    target: str, sources: Sources, *, table: str | None = None, now: datetime | None = None
) -> StatusReport:
    """The status of every table (or of ``table``) of one database.

    Raises:
        LandingZoneError: ``table`` is neither a table folder nor listed by the mirror (the
            message names the tables that exist).
    """
    moment = now or datetime.now(UTC)
    notes: list[str] = []
    replicator, listed = read_mirror_view(
        sources.files,
        rest_database=sources.rest_database,
        rest_tables=sources.rest_tables,
        notes=notes,
        now=moment,
    )
    locations = discover_tables(sources.landing_zone)
    reseeds = reseeds_in_progress(sources.landing_zone)
    reseeding = table is not None and any(r.table.casefold() == table.casefold() for r in reseeds)
    if table is not None and not reseeding:
        want = existing_ref(sources.landing_zone, table)
        locations, listed = _only(want, locations, listed, sources.landing_zone)
    elif table is not None:  # its folder may be gone: show what is left, and the reseed
        want = existing_ref(sources.landing_zone, table)
        key = mirror_key(want.schema, want.name)
        locations = [loc for loc in locations if mirror_key(loc.schema, loc.name) == key]
        listed = {k: v for k, v in listed.items() if k == key}
    applied = _applied(sources, notes)
    notes += [w.note(moment.timestamp()) for w in read_slot_wals(sources.landing_zone)]
    empty = _empty_folders(sources.landing_zone, locations)
    for loc in locations:
        if loc.folder in empty:  # the local mirror lists an empty folder too: it is still no table
            listed.pop(mirror_key(loc.schema, loc.name), None)
    tables = [loc for loc in locations if loc.folder not in empty]
    twins = spellings(tables)
    statuses = [
        _table(loc, sources, _view(loc, listed, twins.get(loc.folder, [])), applied, moment, twins)
        for loc in tables
    ]
    for loc in tables:
        listed.pop(mirror_key(loc.schema, loc.name), None)
    statuses += [_gone(m) for m in listed.values()]
    statuses = with_reseeds(statuses, reseeds, table=table)
    statuses = with_failed_runs(statuses, sources.landing_zone, table=table)
    statuses = with_stream_lags(statuses, sources.landing_zone)
    statuses = with_held(statuses, sources.landing_zone, table=table)
    statuses = with_freshness(statuses, sources.landing_zone, applied=applied, now=moment)
    leftover = [loc for loc in locations if loc.folder in empty]
    foreign = naming.not_tables(sources.landing_zone, leftover) if table is None else []
    return StatusReport(
        target=target,
        taken_at=moment,
        replicator=replicator,
        tables=tuple(sorted(statuses, key=lambda s: s.table.casefold())),
        foreign=tuple(foreign),
        notes=tuple(notes),
    )


def _view(
    loc: TableLocation, listed: dict[tuple[str, str], MirrorView], twins: list[TableLocation]
) -> MirrorView | None:
    """What the mirror says about ``loc``; of folders that are one table to it, the one it lists
    under their own spelling (else the first) gets it."""
    view = listed.get(mirror_key(loc.schema, loc.name))
    if view is None or not twins:
        return view
    spelled = (view.schema, view.name)
    if spelled == (loc.schema, loc.name):
        return view
    if any(spelled == (t.schema, t.name) for t in twins):
        return None
    return view if all(loc.folder < t.folder for t in twins) else None


def _only(
    ref: TableRef, locations: list[TableLocation], listed: dict[tuple[str, str], MirrorView], storage: Storage
) -> tuple[list[TableLocation], dict[tuple[str, str], MirrorView]]:
    want = mirror_key(ref.schema, ref.name)
    mine = [loc for loc in locations if mirror_key(loc.schema, loc.name) == want]
    # An empty folder is no table, even though the local mirror lists it (as Initialized).
    if len(_empty_folders(storage, mine)) == len(mine) and (mine or want not in listed):
        empty = _empty_folders(storage, locations)
        names = [str(loc.ref) for loc in locations if loc.folder not in empty]
        hint = did_you_mean(str(ref), names) or (
            f" Tables: {', '.join(names)}." if names else " It has no tables."
        )
        raise LandingZoneError(
            f"Table {str(ref)!r} is not in the landing zone nor listed by the mirror.{hint}"
        )
    return mine, {k: v for k, v in listed.items() if k == want}


def _applied(sources: Sources, notes: list[str]) -> dict[str, Applied]:
    if sources.applied is None:
        return {}
    try:
        return sources.applied()
    except OpenMirrorError as exc:
        notes.append(f"The local mirror's progress could not be read: {exc}")
        return {}


def _table(
    loc: TableLocation,
    sources: Sources,
    mirror: MirrorView | None,
    progress: dict[str, Applied],
    now: datetime,
    twins: dict[str, list[TableLocation]],
) -> TableStatus:
    ref, notes, applied = loc.ref, [], progress.get(loc.folder)
    failed = mirror is not None and mirror.status == "Failed"
    failed_seq = _failed_sequence(mirror) if failed else None
    through = applied.last_sequence if applied else (failed_seq - 1 if failed_seq else None)
    found = scan(sources.landing_zone, ref, processed_through=through, now=now.timestamp())
    if loc.folder in twins:
        found = replace(found, blockers=(*found.blockers, naming.conflict(loc, twins[loc.folder])))
    if not naming.allowed(loc):
        notes.append(naming.refused_note(loc))
    pending, inferred = _still_pending(found, mirror, applied, failed=failed)
    processed = len(found.processed) + (1 if found.newest_processed else 0) + inferred
    extension = found.metadata.options.extension if found.metadata else "parquet"
    failed_file = None
    if failed and mirror is not None:
        named = _FILE.search(mirror.error)
        failed_file = (
            data_file_name(failed_seq, extension) if failed_seq else (named.group(1) if named else None)
        )
    mirrored_rows = None
    if sources.mirrored_rows is not None and mirror is not None:
        try:
            mirrored_rows = sources.mirrored_rows(ref)
        except OpenMirrorError as exc:
            notes.append(f"The mirrored table could not be counted: {exc}")
    if mirror is None:
        notes.append("The mirror does not list this table yet.")
    state = found.state
    if state is not None and state.source_fallback:
        synced = f"Its sync to version {state.source_version} of {state.source}"
        notes.append(f"{synced} pushed a snapshot diff, not the change data feed: {state.source_fallback}.")
    return TableStatus(
        table=str(ref),
        folder=loc.folder,
        health=_health(found, mirror, pending),
        status=mirror.status if mirror else NOT_LISTED,
        pending=pending,
        processed_files=processed,
        ready_to_delete=len(found.ready_to_delete),
        blockers=found.blockers,
        error_code=mirror.error_code if mirror else "",
        error=mirror.error if mirror else "",
        failed_file=failed_file,
        last_sequence=found.last_sequence,
        processed_rows=mirror.processed_rows if mirror else None,
        mirrored_rows=mirrored_rows,
        state_rows=state.exact_rows if state else None,
        last_push=_when(state.last_push if state else None),
        last_sync=mirror.last_sync if mirror else None,
        last_checked=_when(
            max(filter(None, (state.last_push if state else None, found.checked)), default=None)
        ),
        lag_seconds=_lag(pending, now, listed=mirror is not None),
        notes=tuple(notes),
        **stream_fields(state, now),
    )


def _when(epoch: float | None) -> datetime | None:
    return datetime.fromtimestamp(epoch, UTC) if epoch else None


def _failed_sequence(mirror: MirrorView | None) -> int | None:
    found = _SEQUENCE.search(mirror.error) if mirror else None
    return int(found.group(1)) if found else None


def _still_pending(
    found: TableScan, mirror: MirrorView | None, applied: Applied | None, *, failed: bool
) -> tuple[tuple[DataFileInfo, ...], int]:
    """The pending files, and how many of the scan's pending ones turned out processed."""
    pending = list(found.pending)
    sequential = found.metadata.sequential if found.metadata else True
    if applied is not None and not sequential:
        kept = [f for f in pending if f.name not in applied.processed]
        return tuple(kept), len(pending) - len(kept)
    if applied is not None or failed or mirror is None or mirror.last_sync is None:
        return tuple(pending), 0
    synced = mirror.last_sync.timestamp()
    if not sequential:
        kept = [f for f in pending if f.mtime > synced]
        return tuple(kept), len(pending) - len(kept)
    # Sequential: only a run of numbers with no hole, written before the last sync.
    done = found.newest_processed.sequence if found.newest_processed else 0
    count = 0
    for f in pending:
        if f.sequence != (done or 0) + count + 1 or f.mtime > synced or f.size == 0:
            break
        count += 1
    return tuple(pending[count:]), count


def _health(found: TableScan, mirror: MirrorView | None, pending: tuple[DataFileInfo, ...]) -> Health:
    if mirror is not None and mirror.status == "Failed":
        return "failed"
    if any(b.kind in STOPPING for b in found.blockers):
        return "blocked"
    if found.blockers:
        return "warning"
    if pending:
        return "pending"
    return "ok" if mirror is not None or not found.exists else "unknown"


def _lag(pending: tuple[DataFileInfo, ...], now: datetime, *, listed: bool) -> float | None:
    if pending:
        return max(0.0, now.timestamp() - min(f.mtime for f in pending))
    return 0.0 if listed else None


def _gone(mirror: MirrorView) -> TableStatus:
    """A table the mirror lists whose folder is gone: dropped, and the mirror not caught up yet."""
    name = mirror.name if mirror.schema == DEFAULT_SCHEMA else f"{mirror.schema}.{mirror.name}"
    return TableStatus(
        table=name,
        folder="",
        health="failed" if mirror.status == "Failed" else "pending",
        status=mirror.status,
        error_code=mirror.error_code,
        error=mirror.error,
        processed_rows=mirror.processed_rows,
        last_sync=mirror.last_sync,
        notes=("Its folder is gone: the mirror drops the table on its next pass.",),
    )


def _empty_folders(storage: Storage, locations: list[TableLocation]) -> set[str]:
    """Table-shaped folders that hold nothing of a table: no ``_metadata.json``, no files."""
    return {
        loc.folder
        for loc in locations
        if not TableFolder(storage, loc.ref).has_metadata()
        and not any(not is_ignored(e.name) for e in storage.list_dir(loc.folder))
    }
