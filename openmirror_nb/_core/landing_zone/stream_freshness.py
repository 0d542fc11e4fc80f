"""How far a stream has read its source, per micro-batch: ``_openmirror/streams/<query>.freshness.json``.

A batch that brings a table no change still proves it current: every change committed at the
source before the newest source time the batch saw (a heartbeat's, with Debezium) is in the
table's files up to the one it had then. One record per batch for all the stream's tables (one
write, however many tables), the newest ``KEEP_BATCHES`` kept; ``status.freshness`` turns each
into the table's age once the mirror has applied that file.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from openmirror_nb._core.errors import StorageError
from openmirror_nb._core.landing_zone.freshness_log import SourceTimes
from openmirror_nb._core.landing_zone.stream_lags import LAG_FOLDER
from openmirror_nb._core.storage.base import Storage

SUFFIX = ".freshness.json"
KEEP_BATCHES = 20
log = logging.getLogger("openmirror_nb")


@dataclass(frozen=True)
class BatchMark:
    """One micro-batch of ``query``: the source times it saw, when it ended, and per table (as
    ``db.push`` names it) the last sequence number the table had after it."""

    query: str
    batch: int
    at: float
    source: SourceTimes
    tables: dict[str, int]


def _path(query: str) -> str:
    return f"{LAG_FOLDER}/{query}{SUFFIX}"


def record_batch(storage: Storage, mark: BatchMark) -> None:
    """Add ``mark`` to its query's record (the stream's driver is its only writer)."""
    kept = [m for m in read_query(storage, mark.query) if m.batch != mark.batch]
    doc = {
        "query": mark.query,
        "batches": [
            {"batch": m.batch, "at": m.at, "source": m.source.to_doc(), "tables": m.tables}
            for m in [*kept, mark][-KEEP_BATCHES:]
        ],
    }
    try:
        storage.write_bytes(_path(mark.query), json.dumps(doc).encode("utf-8"), overwrite=True)
    except StorageError as exc:  # it only measures: the batch is committed already
        log.warning("The freshness of stream %s could not be saved: %s", mark.query, exc)


def read_query(storage: Storage, query: str) -> list[BatchMark]:
    try:
        return _marks(json.loads(storage.read_bytes(_path(query))))
    except FileNotFoundError:
        return []
    except (StorageError, ValueError, KeyError, TypeError) as exc:
        log.warning("The freshness of stream %s could not be read: %s", query, exc)
        return []


def read_all(storage: Storage) -> list[BatchMark]:
    """Every stream's batch marks, oldest first per stream."""
    found: list[BatchMark] = []
    for entry in storage.list_dir(LAG_FOLDER) if storage.exists(LAG_FOLDER) else []:
        if not entry.is_dir and entry.name.endswith(SUFFIX):
            found += read_query(storage, entry.name.removesuffix(SUFFIX))
    return found


def _marks(doc: dict[str, object]) -> list[BatchMark]:
    out = []
    for b in doc.get("batches", []):  # type: ignore[attr-defined]
        source = SourceTimes.from_doc(b.get("source"))
        if source is not None:
            tables = {str(t): int(s) for t, s in b.get("tables", {}).items()}
            out.append(BatchMark(str(doc["query"]), int(b["batch"]), float(b["at"]), source, tables))
    return out
