"""What a table's source said of its content when ``db.run_plan`` last mirrored it whole.

A run that reads a source table and pushes it successfully records the source's version of it as
asked before the read (``Source.version``), the plan's fingerprint of the table, and where it left
the mirrored table (its incarnation and last sequence number). The next run that finds the same
version, fingerprint and table leaves the source table unread. The record lives beside the failed
runs' (``run_outcome``), under ``_openmirror/runs/versions/<table>.json`` at the landing-zone root
(ignored by the service), never in the table folder: only pushes write there, and a drop takes
the folder but not this, so a record is trusted only beside the incarnation it names.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from openmirror_nb._core.landing_zone.run_outcome import RUNS_FOLDER
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.storage.base import Storage

VERSIONS_FOLDER = f"{RUNS_FOLDER}/versions"  # a folder: failed_runs reads the files beside it only


@dataclass(frozen=True)
class SourceVersion:
    """One table's record.

    Attributes:
        table: The mirrored table.
        version: The source's version of the table, taken before the read that was pushed.
        plan: The fingerprint of the planned table the run pushed (its source, strategy, keys...).
        incarnation: The mirrored table's incarnation after that push.
        sequence: The mirrored table's last sequence number after that push.
        at: When the run read the table (UTC).
    """

    table: str
    version: str
    plan: str
    incarnation: str | None
    sequence: int
    at: datetime

    def to_bytes(self) -> bytes:
        doc = asdict(self) | {"at": self.at.astimezone(UTC).isoformat()}
        return json.dumps(doc).encode("utf-8") + b"\n"


def _path(storage: Storage, table: str) -> str:
    return f"{VERSIONS_FOLDER}/{TableFolder.of(storage, table).ref.key}.json"


def record_source_version(storage: Storage, record: SourceVersion) -> None:
    """Keep ``record`` as its table's, replacing the one before."""
    # write_bytes is whole or nothing on every backend: a reader never sees half a record
    storage.write_bytes(_path(storage, record.table), record.to_bytes(), overwrite=True)


def read_source_version(storage: Storage, table: str) -> SourceVersion | None:
    """``table``'s record, or ``None`` (none, or one that cannot be read: the table is read)."""
    try:
        doc = json.loads(storage.read_bytes(_path(storage, table)))
        return SourceVersion(
            table=str(doc["table"]),
            version=str(doc["version"]),
            plan=str(doc["plan"]),
            incarnation=None if doc["incarnation"] is None else str(doc["incarnation"]),
            sequence=int(doc["sequence"]),
            at=datetime.fromisoformat(doc["at"]),
        )
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError):
        return None


def clear_source_version(storage: Storage, table: str) -> None:
    """Forget ``table``'s record: its run failed, or its source cannot say."""
    path = _path(storage, table)
    if storage.exists(path):
        storage.delete(path)
