"""``Files/Monitoring/replicator.json`` and ``tables.json`` in the service's own format (§7.3).

Field names are the service's (``processedRowCount``, ``processedByte``, ``lastSyncTimeUtc``...),
not the REST API's. Times are written like the service writes them: UTC with seven fractional
digits and a ``Z``; "never" is ``0001-01-01T00:00:00``. A table waiting on a sequence gap keeps its
status and carries the wait in ``errorMessage`` with an empty ``errorCode``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from openmirror_nb._core.landing_zone.names import REPLICATOR_FILE, TABLES_FILE
from openmirror_nb._core.mirror.state import MirroredTableState, write_json_atomic

NEVER = "0001-01-01T00:00:00"
TABLE_STATUSES = ("Initialized", "Snapshotting", "Replicating", "Reseeding", "Stopped", "Failed")


def format_time(moment: datetime) -> str:
    """``2025-05-20T00:02:24.2389980Z`` (seven digits, as .NET writes them)."""
    utc = moment.astimezone(UTC)
    return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond:06d}0Z"


def utc_now_text() -> str:
    return format_time(datetime.now(UTC))


def replicator_doc(*, status: str, error_code: str = "", error_message: str = "") -> dict[str, Any]:
    """The content of ``replicator.json``; ``status`` is ``Running`` or ``Stopped``."""
    return {
        "status": status,
        "errorCode": error_code,
        "errorMessage": error_message,
        "lastHeartbeatTime": utc_now_text(),
    }


def table_doc(table: MirroredTableState) -> dict[str, Any]:
    """One entry of ``tables.json``."""
    return {
        "id": table.id,
        "status": table.status,
        "errorCode": table.error_code,
        "errorMessage": table.error_message,
        "normalizedTableName": table.qualified,
        "sourceTableName": table.name,
        "sourceSchemaName": table.schema,
        "sourceObjectType": "Table",
        "metrics": {
            "processedRowCount": table.processed_rows,
            "processedByte": table.processed_bytes,
            "lastSourceCommitTimeUtc": NEVER,
            "lastSyncTimeUtc": table.last_sync or NEVER,
        },
    }


def write_monitoring(
    monitoring: Path,
    *,
    status: str,
    tables: Iterable[MirroredTableState],
    error_code: str = "",
    error_message: str = "",
) -> None:
    """Write both files atomically (tables first, so a heartbeat never precedes its tables)."""
    entries = sorted((table_doc(t) for t in tables), key=lambda d: d["normalizedTableName"])
    write_json_atomic(monitoring / TABLES_FILE, {"tables": entries}, durable=False)
    write_json_atomic(
        monitoring / REPLICATOR_FILE,
        replicator_doc(status=status, error_code=error_code, error_message=error_message),
        durable=False,
    )
