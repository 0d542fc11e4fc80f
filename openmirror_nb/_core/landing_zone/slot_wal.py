"""The WAL a ``db.mirror_plan`` stream's replication slot retains, as last measured, at
``_openmirror/streams/<query id>.slot.json``: ``db.status()`` shows it from any notebook, with its
age, and warns past the threshold (an idle slot keeps every WAL segment until the disk is full)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.storage.base import Storage

SLOT_FOLDER, SLOT_SUFFIX = f"{INTERNAL_FOLDER}/streams", ".slot.json"


@dataclass(frozen=True)
class SlotWal:
    """One measure: the slot, the WAL it retained (bytes), the warning threshold, and when."""

    query: str
    slot: str
    retained: int
    threshold: int
    at: float

    def note(self, now: float) -> str:
        """The status line, a warning past the threshold."""
        ago = max(0, int(now - self.at))
        said = (
            f"replication slot {self.slot} retains {size(self.retained)} of WAL "
            f"({ago} s ago, stream {self.query})"
        )
        if self.retained <= self.threshold:
            return said
        drop = f"SELECT pg_drop_replication_slot('{self.slot}');"
        return (
            f"Warning: {said}, over {size(self.threshold)}: the source's disk fills while it grows; "
            f"check that the connector runs, or drop the slot if it is abandoned ({drop})"
        )


def size(count: int) -> str:
    """Bytes as PostgreSQL's ``pg_size_pretty`` words them (1024-based): ``512 MB``, ``1.5 GB``."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if count >= scale:
            value = count / scale
            return f"{value:.0f} {unit}" if value >= 100 else f"{value:.1f} {unit}"
    return f"{count} bytes"


def save_slot_wal(storage: Storage, *, query: str, slot: str, retained: int, threshold: int) -> None:
    record = SlotWal(query, slot, int(retained), int(threshold), time.time())
    data = (json.dumps(asdict(record), indent=2) + "\n").encode("utf-8")
    storage.write_bytes(f"{SLOT_FOLDER}/{query}{SLOT_SUFFIX}", data, overwrite=True)


def read_slot_wals(storage: Storage) -> list[SlotWal]:
    """Every stream's last measure, newest first per slot (an older stream of the same slot left out)."""
    found: dict[str, SlotWal] = {}
    for entry in storage.list_dir(SLOT_FOLDER):
        if entry.is_dir or not entry.name.endswith(SLOT_SUFFIX):
            continue
        try:
            record = SlotWal(**json.loads(storage.read_bytes(f"{SLOT_FOLDER}/{entry.name}")))
        except (FileNotFoundError, ValueError, TypeError):
            continue  # replaced meanwhile, or not ours
        if record.slot not in found or found[record.slot].at < record.at:
            found[record.slot] = record
    return sorted(found.values(), key=lambda r: r.slot)
