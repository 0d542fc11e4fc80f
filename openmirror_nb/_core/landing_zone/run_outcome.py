"""The last failed run of a table by ``db.run_plan``, kept where a failed run can leave it.

A run that cannot read its source or publish changes nothing in the table folder (it must not:
the folder is the mirror's), so the failure is recorded at the landing-zone root, under
``_openmirror/runs/<table>.json`` (ignored by the service): the table, when, and the one-line
error, already scrubbed of the source's secrets. ``db.status`` shows the table ``failed`` with it
until a later run of the table succeeds, which deletes the record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.storage.base import Storage

RUNS_FOLDER = f"{INTERNAL_FOLDER}/runs"


@dataclass(frozen=True)
class FailedRun:
    """A table's last run failed: ``error`` is its one line (never a secret), ``at`` when."""

    table: str
    at: datetime
    error: str


def _path(storage: Storage, table: str) -> str:
    return f"{RUNS_FOLDER}/{TableFolder.of(storage, table).ref.key}.json"


def record_failed_run(storage: Storage, *, table: str, error: str, at: datetime | None = None) -> None:
    """Record that ``table``'s run failed with ``error`` (one line, scrubbed by the caller)."""
    moment = (at or datetime.now(UTC)).astimezone(UTC)
    doc = {"table": table, "at": moment.isoformat(), "error": error}
    # write_bytes is whole or nothing on every backend: a reader never sees half a record
    storage.write_bytes(_path(storage, table), json.dumps(doc).encode("utf-8") + b"\n", overwrite=True)


def clear_failed_run(storage: Storage, *, table: str) -> None:
    """Forget ``table``'s failed run: a later run of it succeeded."""
    path = _path(storage, table)
    if storage.exists(path):
        storage.delete(path)


def failed_runs(storage: Storage) -> list[FailedRun]:
    """Every recorded failed run (for ``db.status``); unreadable records are skipped."""
    found = []
    for entry in storage.list_dir(RUNS_FOLDER):
        if entry.is_dir or not entry.name.endswith(".json"):
            continue
        try:
            doc = json.loads(storage.read_bytes(f"{RUNS_FOLDER}/{entry.name}"))
            found.append(FailedRun(str(doc["table"]), datetime.fromisoformat(doc["at"]), str(doc["error"])))
        except (FileNotFoundError, ValueError, TypeError, KeyError):
            continue
    return found
