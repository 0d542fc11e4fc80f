"""Read the replicator's own status files, ``Files/Monitoring/replicator.json`` and ``tables.json``.

The service writes them once mirroring has started (contract section 7.3); the local mirror writes
the same format. Field names differ from the REST API (``processedRowCount``, ``lastSyncTimeUtc``).
"""

from __future__ import annotations

import json
from typing import Any

from openmirror_nb._core.errors import StorageError
from openmirror_nb._core.landing_zone.names import MONITORING_FOLDER, REPLICATOR_FILE, TABLES_FILE
from openmirror_nb._core.storage.base import Storage

# Paths within the item's Files area.
REPLICATOR_PATH = f"{MONITORING_FOLDER}/{REPLICATOR_FILE}"
TABLES_PATH = f"{MONITORING_FOLDER}/{TABLES_FILE}"


def read_monitoring_files(storage: Storage) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The replicator status and the per-table list from a storage rooted at the item's ``Files``.

    Returns:
        ``(replicator, tables)``: ``replicator`` has ``status``, ``errorCode``, ``errorMessage``,
        ``lastHeartbeatTime``; each table has ``status``, ``errorCode``, ``errorMessage``,
        ``sourceSchemaName``, ``sourceTableName`` and ``metrics`` (``processedRowCount``,
        ``processedByte``, ``lastSourceCommitTimeUtc``, ``lastSyncTimeUtc``). Both are empty while
        the files do not exist (mirroring not started yet).

    Raises:
        StorageError: a file exists but is not the documented JSON shape.

    Example:
        >>> replicator, tables = read_monitoring_files(open_files_storage(target))
    """
    replicator = _load(storage, REPLICATOR_PATH)
    document = _load(storage, TABLES_PATH)
    tables = document.get("tables", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise StorageError(f"{TABLES_PATH} has no list of table objects under 'tables'; it cannot be read.")
    return replicator, tables


def _load(storage: Storage, path: str) -> dict[str, Any]:
    try:
        raw = storage.read_bytes(path)
    except FileNotFoundError:
        return {}
    try:
        # utf-8-sig: the service's .NET writer may start the file with a byte-order mark.
        value = json.loads(raw.decode("utf-8-sig")) if raw.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StorageError(f"{path} is not valid JSON ({exc}); it cannot be read.") from None
    if not isinstance(value, dict):
        raise StorageError(f"{path} holds a {type(value).__name__}, not a JSON object; it cannot be read.")
    return value
