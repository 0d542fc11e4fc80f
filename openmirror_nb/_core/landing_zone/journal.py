"""The publish journal: one decided push of one table, as written before its first rename."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from openmirror_nb._core.landing_zone.names import data_file_name


@dataclass(frozen=True)
class JournalEntry:
    staged: str
    sequence: int


@dataclass(frozen=True)
class Journal:
    """One decided push of one table.

    Attributes:
        incarnation: The table incarnation the push belongs to (see ``TableFolder``); a journal of
            another incarnation is never rolled forward. ``None`` only in journals of older versions.
        metadata: The ``_metadata.json`` this push creates (its initial load), else ``None``.
        freshness: When the push's changes happened at the source (a ``SourceTimes`` as JSON),
            recorded with each published file once the state is committed; ``None`` if unknown.
    """

    push_id: str
    table: str
    folder: str
    extension: str
    file_detection: str
    staging: str
    state: str
    metadata: str | None = None
    partner_events: str | None = None
    entries: tuple[JournalEntry, ...] = field(default_factory=tuple)
    obsolete: tuple[str, ...] = ()
    incarnation: str | None = None
    # the push's SourceTimes (landing_zone.freshness_log), for its files' freshness summaries
    freshness: dict[str, Any] | None = None

    def final(self, entry: JournalEntry) -> str:
        return f"{self.folder}/{data_file_name(entry.sequence, self.extension)}"

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> Journal:
        doc = json.loads(data)
        doc["entries"] = tuple(JournalEntry(**e) for e in doc["entries"])
        doc["obsolete"] = tuple(doc.get("obsolete", ()))
        return cls(**doc)
