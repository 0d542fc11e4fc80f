"""The mirrored database's replication status from the Fabric REST API (contract section 7.2).

``getMirroringStatus`` gives the database status, ``getTablesMirroringStatus`` (paged) one entry
per table. Both are typed here as frozen dataclasses; unknown status values pass through as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from openmirror_nb._core.fabric.rest import call, fabric_rest_client, pages, resolve_ids


@dataclass(frozen=True)
class FabricErrorInfo:
    """A Fabric ``ErrorResponse``: what failed and why."""

    error_code: str
    message: str
    request_id: str | None = None
    details: tuple[FabricErrorInfo, ...] = ()

    @classmethod
    def parse(cls, raw: dict[str, Any] | None) -> FabricErrorInfo | None:
        if not raw:
            return None
        details = tuple(d for d in (cls.parse(x) for x in raw.get("moreDetails") or []) if d is not None)
        return cls(str(raw.get("errorCode", "")), str(raw.get("message", "")), raw.get("requestId"), details)


@dataclass(frozen=True)
class MirroringStatus:
    """The database: Initializing, Initialized, Starting, Running, Stopping or Stopped."""

    status: str
    error: FabricErrorInfo | None = None


@dataclass(frozen=True)
class TableMirroringStatus:
    """One table: Initialized, Snapshotting, Replicating, Reseeding, Stopped or Failed."""

    source_schema_name: str | None
    source_table_name: str
    status: str
    processed_rows: int | None = None
    processed_bytes: int | None = None
    last_sync: datetime | None = None
    error: FabricErrorInfo | None = None

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> TableMirroringStatus:
        metrics = raw.get("metrics") or {}
        return cls(
            source_schema_name=raw.get("sourceSchemaName"),
            source_table_name=str(raw.get("sourceTableName", "")),
            status=str(raw.get("status", "")),
            processed_rows=_int(metrics.get("processedRows")),
            processed_bytes=_int(metrics.get("processedBytes")),
            last_sync=parse_time(metrics.get("lastSyncDateTime")),
            error=FabricErrorInfo.parse(raw.get("error")),
        )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 with up to 7 fractional digits (.NET style), which ``fromisoformat`` rejects in 3.11."""
    if not value:
        return None
    text = str(value).replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:digits][:6].ljust(6, '0')}{rest[digits:]}"
    moment = datetime.fromisoformat(text)
    # The status files write "never" as 0001-01-01T00:00:00, with no zone: all times are UTC.
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _base(workspace: str, item: str, client: Any) -> str:
    workspace_id, item_id = resolve_ids(client, workspace, item)
    return f"v1/workspaces/{workspace_id}/mirroredDatabases/{item_id}"


def get_mirroring_status(
    workspace: str, item: str, *, credential: Any = None, client: Any = None
) -> MirroringStatus:
    """The mirrored database's status (``POST .../getMirroringStatus``).

    Args:
        workspace: workspace id, or its display name (looked up).
        item: mirrored database id, or its display name (with or without ``.MirroredDatabase``).
        credential: azure ``TokenCredential`` used when ``client`` is not given.
        client: a ``FabricRestClient`` (see ``fabric_rest_client``), to reuse or redirect.

    Raises:
        FabricRestError: the API refused (e.g. 404 ItemNotFound) or stayed throttled.

    Example:
        >>> get_mirroring_status("Sales", "orders_db").status
        'Running'
    """
    client = fabric_rest_client(credential=credential) if client is None else client
    body = call(client, "POST", f"{_base(workspace, item, client)}/getMirroringStatus")
    return MirroringStatus(str(body.get("status", "")), FabricErrorInfo.parse(body.get("error")))


def get_tables_mirroring_status(
    workspace: str, item: str, *, credential: Any = None, client: Any = None
) -> list[TableMirroringStatus]:
    """Every table's status (``POST .../getTablesMirroringStatus``, all pages).

    Arguments and errors as for ``get_mirroring_status``.
    """
    client = fabric_rest_client(credential=credential) if client is None else client
    path = f"{_base(workspace, item, client)}/getTablesMirroringStatus"
    return [TableMirroringStatus.parse(raw) for raw in pages(client, "POST", path, "data")]
