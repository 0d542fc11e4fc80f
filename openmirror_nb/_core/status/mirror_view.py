"""What the mirror says about each table and about itself: from the REST API inside Fabric
(``getMirroringStatus`` / ``getTablesMirroringStatus``, which answer before the service rewrites
its files), else from ``Files/Monitoring/replicator.json`` and ``tables.json``. Either source may
be unreadable; that becomes a note of the report, never an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from openmirror_nb._core.errors import OpenMirrorError, user_line
from openmirror_nb._core.fabric.monitoring import read_monitoring_files
from openmirror_nb._core.fabric.status import MirroringStatus, TableMirroringStatus, parse_time
from openmirror_nb._core.landing_zone.names import DEFAULT_SCHEMA
from openmirror_nb._core.status.records import ReplicatorStatus
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.table_names import fold

# A replicator writes its heartbeat after every pass (the local mirror's loop: every 5 s by
# default, plus the pass itself); one that says Running with no heartbeat for this long is not
# running. Only the files are judged so: the REST API's statuses are the service's own word.
STALE_AFTER = 600.0


@dataclass(frozen=True)
class MirrorView:
    """What the mirror says about one table, from the status files or the REST API."""

    schema: str
    name: str
    status: str
    error_code: str = ""
    error: str = ""
    processed_rows: int | None = None
    last_sync: datetime | None = None


def mirror_key(schema: str | None, name: str) -> tuple[str, str]:
    # The service compares names case-insensitively; a table at the root is in dbo.
    return (fold(schema or DEFAULT_SCHEMA), fold(name))


def read_mirror_view(
    files: Storage,
    *,
    rest_database: Callable[[], MirroringStatus] | None,
    rest_tables: Callable[[], list[TableMirroringStatus]] | None,
    notes: list[str],
    now: datetime,
) -> tuple[ReplicatorStatus, dict[tuple[str, str], MirrorView]]:
    """The replicator and the tables the mirror lists (by ``mirror_key``): REST first (inside
    Fabric), else the files. What cannot be read is added to ``notes``."""
    if rest_tables is not None and rest_database is not None:
        try:
            database, tables = rest_database(), rest_tables()
        except Exception as exc:  # sempy and azure raise their own types: any failure degrades
            notes.append(
                f"The Fabric REST status could not be read ({user_line(exc)}); showing the landing "
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
                mirror_key(t.source_schema_name, t.source_table_name): _from_rest(t) for t in tables
            }
    try:
        doc, entries = read_monitoring_files(files)
    except (OpenMirrorError, OSError) as exc:  # OSError: local files the process may not read
        notes.append(f"Files/Monitoring could not be read: {user_line(exc)} Showing the landing zone only.")
        return ReplicatorStatus("Unknown", source="Files/Monitoring/replicator.json"), {}
    beat = _time(doc.get("lastHeartbeatTime"))
    beat = None if beat is None or beat.year < 2 else beat  # 0001-01-01: never
    age = max(0.0, (now - beat).total_seconds()) if beat else None
    status = str(doc.get("status") or "NotStarted")
    if status == "Running" and age is not None and age > STALE_AFTER:
        status = "Stale"  # said Running, then stopped beating: a process that crashed or was killed
    replicator = ReplicatorStatus(
        status,
        heartbeat=beat,
        heartbeat_age=age,
        error_code=str(doc.get("errorCode") or ""),
        error=str(doc.get("errorMessage") or ""),
        source="Files/Monitoring/replicator.json",
    )
    listed = {}
    for entry in entries:
        mirror = _from_file(entry)
        listed[mirror_key(mirror.schema, mirror.name)] = mirror
    return replicator, listed


def _from_rest(t: TableMirroringStatus) -> MirrorView:
    return MirrorView(
        t.source_schema_name or DEFAULT_SCHEMA,
        t.source_table_name,
        t.status,
        t.error.error_code if t.error else "",
        t.error.message if t.error else "",
        t.processed_rows,
        t.last_sync,
    )


def _from_file(entry: dict[str, Any]) -> MirrorView:
    metrics = entry.get("metrics") or {}
    sync = _time(metrics.get("lastSyncTimeUtc"))
    rows = metrics.get("processedRowCount")
    return MirrorView(
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
