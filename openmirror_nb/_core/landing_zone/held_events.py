"""Events a stream keeps for a table it cannot apply them to (a schema change the mirror cannot
absorb), until the table is reseeded: ``_openmirror/streams/held/<query id>/``.

Per table, a record (``<table>.json``: why, since which batch, the table's incarnation then, and
the events kept from each batch) and one folder of the batch's Kafka messages as they came
(``<table>/batch-<id>``, Parquet). The folder lies outside the table's own, so the reseed's drop
of the table folder leaves it; ``db.status()`` counts it (``with_held`` in ``status``).

A batch's messages are written under a temporary name and then moved to their name in one step
(a replay of the batch finds them there and writes nothing), before the record names them: a
record never names a batch that is not whole. ``adopting`` marks the batch that applies the kept
events to the new incarnation: once the table holds that batch, the kept events are done and go.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.storage.base import Storage

HELD_FOLDER = f"{INTERNAL_FOLDER}/streams/held"


@dataclass(frozen=True)
class HeldTable:
    """One table's kept events of one streaming query.

    Attributes:
        table: The table (``schema.table``); ``topic``: the topic its events come from.
        query: The streaming query's id.
        incarnation: The table's incarnation when its events were first kept: the stream applies
            them once the table has another (it was reseeded).
        reason: The one line that stopped the table (the schema change).
        since_batch: The first batch whose events were kept; ``since``: when (epoch seconds).
        batches: Events kept per batch id.
        adopting: The batch that applies the kept events to the reseeded table, once one began.
    """

    table: str
    topic: str
    query: str
    incarnation: str | None
    reason: str
    since_batch: int
    since: float
    batches: Mapping[int, int] = field(default_factory=dict)
    adopting: int | None = None

    @property
    def events(self) -> int:
        """Messages kept, over every batch."""
        return sum(self.batches.values())

    def kept(self, batch: int, events: int, *, incarnation: str | None, reason: str) -> HeldTable:
        """This record with ``batch``'s events kept too (a replayed batch: counted once)."""
        return replace(
            self,
            batches={**self.batches, batch: events},
            incarnation=incarnation,
            reason=reason,
            adopting=None,
        )

    def to_bytes(self) -> bytes:
        doc: dict[str, Any] = asdict(self)
        doc["batches"] = {str(b): n for b, n in sorted(self.batches.items())}
        return (json.dumps(doc, indent=2) + "\n").encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> HeldTable:
        doc = json.loads(data)
        doc["batches"] = {int(b): int(n) for b, n in doc.get("batches", {}).items()}
        return cls(**doc)


def _folder(query: str) -> str:
    return f"{HELD_FOLDER}/{query}"


def record_path(query: str, table: str) -> str:
    return f"{_folder(query)}/{table.casefold()}.json"


def batch_folder(query: str, table: str, batch: int) -> str:
    """Where batch ``batch``'s kept messages of ``table`` lie (a folder of Parquet files)."""
    return f"{_folder(query)}/{table.casefold()}/batch-{batch:020d}"


def temporary_folder(query: str, table: str) -> str:
    """A fresh folder to write a batch's messages to before they move to ``batch_folder``."""
    return f"{_folder(query)}/{table.casefold()}/_writing-{uuid.uuid4().hex}"


def read_held(storage: Storage, query: str | None = None) -> list[HeldTable]:
    """The tables whose events are kept: of ``query``, or of every query."""
    queries = [query] if query is not None else [e.name for e in storage.list_dir(HELD_FOLDER) if e.is_dir]
    found = []
    for q in queries:
        for entry in storage.list_dir(_folder(q)):
            if not entry.is_dir and entry.name.endswith(".json"):
                try:
                    found.append(HeldTable.from_bytes(storage.read_bytes(f"{_folder(q)}/{entry.name}")))
                except FileNotFoundError:
                    continue  # released meanwhile
    return sorted(found, key=lambda h: (h.table.casefold(), h.query))


def read_one(storage: Storage, query: str, table: str) -> HeldTable | None:
    """``table``'s kept events of ``query``, if any."""
    try:
        return HeldTable.from_bytes(storage.read_bytes(record_path(query, table)))
    except FileNotFoundError:
        return None


def save_held(storage: Storage, held: HeldTable) -> None:
    storage.write_bytes(record_path(held.query, held.table), held.to_bytes(), overwrite=True)


def release(storage: Storage, held: HeldTable) -> None:
    """The kept events are applied: the record goes first (a record naming gone messages would
    make them look lost), then the messages."""
    storage.delete(record_path(held.query, held.table))
    storage.delete(f"{_folder(held.query)}/{held.table.casefold()}")
