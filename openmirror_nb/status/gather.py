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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from openmirror_nb.errors import LandingZoneError, OpenMirrorError, did_you_mean
from openmirror_nb.fabric.monitoring import read_monitoring_files
from openmirror_nb.fabric.status import MirroringStatus, TableMirroringStatus, parse_time
from openmirror_nb.landing_zone.discovery import TableLocation, discover_tables
from openmirror_nb.landing_zone.names import DEFAULT_SCHEMA, data_file_name, is_ignored
from openmirror_nb.landing_zone.table_folder import TableFolder
from openmirror_nb.landing_zone.table_scan import DataFileInfo, TableScan, scan
from openmirror_nb.mirror.progress import Applied
from openmirror_nb.model import TableRef
from openmirror_nb.status.records import (
    NOT_LISTED,
    STOPPING,
    Health,
    ReplicatorStatus,
    StatusReport,
    TableStatus,
)
from openmirror_nb.storage.base import Storage
from openmirror_nb.storage.credentials import scrub

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


@dataclass(frozen=True)
class _Mirror:
    """What the mirror says about one table, from the status files or the REST API."""

    schema: str
    name: str
    status: str
    error_code: str = ""
    error: str = ""
    processed_rows: int | None = None
    last_sync: datetime | None = None


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
    replicator, listed = _mirror_view(sources, notes, moment)
    locations = discover_tables(sources.landing_zone)
    if table is not None:
        locations, listed = _only(TableRef.parse(table), locations, listed)
    applied = _applied(sources, notes)
    empty = _empty_folders(sources.landing_zone, locations)
    for loc in locations:
        if loc.folder in empty:  # the local mirror lists an empty folder too: it is still no table
            listed.pop(_key(loc.schema, loc.name), None)
    statuses = [
        _table(loc, sources, listed.pop(_key(loc.schema, loc.name), None), applied.get(loc.folder), moment)
        for loc in locations
        if loc.folder not in empty
    ]
    statuses += [_gone(m) for m in listed.values()]
    foreign = _foreign(sources.landing_zone, empty) if table is None else []
    return StatusReport(
        target=target,
        taken_at=moment,
        replicator=replicator,
        tables=tuple(sorted(statuses, key=lambda s: s.table.casefold())),
        foreign=tuple(foreign),
        notes=tuple(notes),
    )


def _key(schema: str | None, name: str) -> tuple[str, str]:
    # The service compares names case-insensitively; a table at the root is in dbo.
    return ((schema or DEFAULT_SCHEMA).casefold(), name.casefold())


def _only(
    ref: TableRef, locations: list[TableLocation], listed: dict[tuple[str, str], _Mirror]
) -> tuple[list[TableLocation], dict[tuple[str, str], _Mirror]]:
    want = _key(ref.schema, ref.name)
    mine = [loc for loc in locations if _key(loc.schema, loc.name) == want]
    if not mine and want not in listed:
        names = [str(loc.ref) for loc in locations]
        hint = did_you_mean(str(ref), names) or (
            f" Tables: {', '.join(names)}." if names else " It has no tables."
        )
        raise LandingZoneError(
            f"Table {str(ref)!r} is not in the landing zone nor listed by the mirror.{hint}"
        )
    return mine, {k: v for k, v in listed.items() if k == want}


def _mirror_view(
    sources: Sources, notes: list[str], now: datetime
) -> tuple[ReplicatorStatus, dict[tuple[str, str], _Mirror]]:
    """The replicator and the tables the mirror lists: REST first (Fabric), else the files."""
    if sources.rest_tables is not None and sources.rest_database is not None:
        try:
            database, tables = sources.rest_database(), sources.rest_tables()
        except Exception as exc:  # sempy and azure raise their own types: any failure degrades
            notes.append(
                f"The Fabric REST status could not be read ({_one_line(exc)}); showing the landing "
                "zone and Files/Monitoring only."
            )
        else:
            error = database.error
            replicator = ReplicatorStatus(
                database.status,
                error_code=error.error_code if error else "",
                error=error.message if error else "",
                source="getMirroringStatus",
            )
            return replicator, {
                _key(t.source_schema_name, t.source_table_name): _from_rest(t) for t in tables
            }
    try:
        doc, entries = read_monitoring_files(sources.files)
    except OpenMirrorError as exc:
        notes.append(f"Files/Monitoring could not be read: {exc} Showing the landing zone only.")
        return ReplicatorStatus("Unknown", source="Files/Monitoring/replicator.json"), {}
    beat = _time(doc.get("lastHeartbeatTime"))
    beat = None if beat is None or beat.year < 2 else beat  # 0001-01-01: never
    replicator = ReplicatorStatus(
        str(doc.get("status") or "NotStarted"),
        heartbeat=beat,
        heartbeat_age=(now - beat).total_seconds() if beat else None,
        error_code=str(doc.get("errorCode") or ""),
        error=str(doc.get("errorMessage") or ""),
        source="Files/Monitoring/replicator.json",
    )
    listed = {}
    for entry in entries:
        mirror = _from_file(entry)
        listed[_key(mirror.schema, mirror.name)] = mirror
    return replicator, listed


def _from_rest(t: TableMirroringStatus) -> _Mirror:
    return _Mirror(
        t.source_schema_name or DEFAULT_SCHEMA,
        t.source_table_name,
        t.status,
        t.error.error_code if t.error else "",
        t.error.message if t.error else "",
        t.processed_rows,
        t.last_sync,
    )


def _from_file(entry: dict[str, Any]) -> _Mirror:
    metrics = entry.get("metrics") or {}
    sync = _time(metrics.get("lastSyncTimeUtc"))
    rows = metrics.get("processedRowCount")
    return _Mirror(
        str(entry.get("sourceSchemaName") or DEFAULT_SCHEMA),
        str(entry.get("sourceTableName") or ""),
        str(entry.get("status") or ""),
        str(entry.get("errorCode") or ""),
        str(entry.get("errorMessage") or ""),
        int(rows) if isinstance(rows, int | float) else None,
        None if sync is None or sync.year < 2 else sync,
    )


def _time(value: Any) -> datetime | None:
    """A time from a status file; one that does not parse is unknown rather than an error."""
    try:
        return parse_time(value)
    except ValueError:
        return None


def _applied(sources: Sources, notes: list[str]) -> dict[str, Applied]:
    if sources.applied is None:
        return {}
    try:
        return sources.applied()
    except OpenMirrorError as exc:
        notes.append(f"The local mirror's progress could not be read: {exc}")
        return {}


def _table(
    loc: TableLocation, sources: Sources, mirror: _Mirror | None, applied: Applied | None, now: datetime
) -> TableStatus:
    ref, notes = loc.ref, []
    failed = mirror is not None and mirror.status == "Failed"
    failed_seq = _failed_sequence(mirror) if failed else None
    through = applied.last_sequence if applied else (failed_seq - 1 if failed_seq else None)
    found = scan(sources.landing_zone, ref, processed_through=through, now=now.timestamp())
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
    exact = state is not None and state.base_rows is not None and state.delta_rows == 0
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
        state_rows=state.base_rows if exact and state else None,
        last_push=datetime.fromtimestamp(state.last_push, UTC) if state and state.last_push else None,
        last_sync=mirror.last_sync if mirror else None,
        lag_seconds=_lag(pending, now, listed=mirror is not None),
        notes=tuple(notes),
    )


def _failed_sequence(mirror: _Mirror | None) -> int | None:
    found = _SEQUENCE.search(mirror.error) if mirror else None
    return int(found.group(1)) if found else None


def _still_pending(
    found: TableScan, mirror: _Mirror | None, applied: Applied | None, *, failed: bool
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
    if not done and count and pending[0].sequence != 1:
        count = 0  # files before the first one are missing: nothing is proven
    return tuple(pending[count:]), count


def _health(found: TableScan, mirror: _Mirror | None, pending: tuple[DataFileInfo, ...]) -> Health:
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


def _gone(mirror: _Mirror) -> TableStatus:
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


def _foreign(storage: Storage, empty: set[str]) -> list[str]:
    """Landing-zone items that are not tables, each with what the service does with it."""
    found = [
        f"{e.name}: a file at the landing-zone root, not a table; the mirror ignores it."
        for e in storage.list_dir("")
        if not e.is_dir and not is_ignored(e.name)
    ]
    found += [
        f"{folder}: a folder with no _metadata.json and no data files, not a table (yet)."
        for folder in sorted(empty)
    ]
    return found


def _one_line(exc: BaseException) -> str:
    text = scrub(" ".join(str(exc).split())) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
