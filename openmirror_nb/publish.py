"""The publish protocol (design §4): journal, sequence numbers, no-clobber renames, roll-forward.

A push writes its journal (staged part -> sequence number, the metadata to create, the new
state) before the first rename. From then on the push is decided: whoever holds the table lock
next rolls it forward, finishing the renames in order and committing the state. A crash
therefore leaves either nothing visible or a journal. Runs under the caller's table lock.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, dataclass, field, replace

from openmirror_nb.errors import LandingZoneError, PathExistsError
from openmirror_nb.landing_zone import (
    CLEANUP_FOLDERS,
    METADATA_FILE,
    PARTNER_EVENTS_FILE,
    data_file_name,
    last_sequence_number,
)
from openmirror_nb.state import state_path
from openmirror_nb.storage.base import Storage

JOURNAL_FOLDER = "_openmirror/journal"
STAGING_FOLDER = "_openmirror/staging"
CRASH_ENV = "OPENMIRROR_CRASH_AT"


def crash_point(step: str) -> None:
    """Fault injection for the crash tests: die here, as SIGKILL would, if asked to."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class JournalEntry:
    staged: str
    sequence: int


@dataclass(frozen=True)
class Journal:
    """One decided push of one table."""

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


def journal_path(table_key: str) -> str:
    return f"{JOURNAL_FOLDER}/{table_key}.json"


def staging_folder(table_key: str, push_id: str) -> str:
    return f"{STAGING_FOLDER}/{table_key}/{push_id}"


def next_sequence_number(storage: Storage, folder: str, *, floor: int = 0) -> int:
    """1 + the largest number in the table folder, its cleanup folders and ``floor``."""
    return max(last_sequence_number(storage, folder), floor) + 1


def publish(storage: Storage, journal: Journal) -> Journal:
    """Record the push, then carry it out. Returns the journal as executed."""
    storage.write_bytes(journal_path(journal.table), journal.to_bytes(), overwrite=True)
    crash_point("after_journal")
    return roll_forward(storage, journal, recovering=False)


def recover(storage: Storage, table_key: str) -> Journal | None:
    """Finish an interrupted push of this table, if one was recorded."""
    try:
        data = storage.read_bytes(journal_path(table_key))
    except FileNotFoundError:
        return None
    return roll_forward(storage, Journal.from_bytes(data), recovering=True)


def _same_bytes(storage: Storage, a: str, b: str) -> bool:
    return storage.read_bytes(a) == storage.read_bytes(b)


def _wait_for_next_second(storage: Storage, folder: str) -> None:
    # LastUpdateTimeFileDetection orders by modification time, which listings report to the
    # second: a new push must not share a second with the previous push's newest file.
    newest = max((e.mtime for e in storage.list_dir(folder) if not e.is_dir), default=0.0)
    while int(time.time()) <= int(newest):
        time.sleep(0.05)


def _place(storage: Storage, journal: Journal, entry: JournalEntry, *, recovering: bool) -> bool:
    """Publish one staged part under its number; ``False`` if another file holds that number."""
    final = journal.final(entry)
    staged = storage.exists(entry.staged)
    name = data_file_name(entry.sequence, journal.extension)
    # Where this number is published already, if anywhere: the service (or the local mirror) may
    # have moved the file to a cleanup folder, and may be moving it right now. It only ever moves
    # from the table folder to a cleanup folder, so looking there first cannot miss a moving file.
    published = None
    if recovering or not staged:
        places = (final, *(f"{journal.folder}/{sub}/{name}" for sub in CLEANUP_FOLDERS))
        published = next((p for p in places if storage.exists(p)), None)
    if not staged:
        if published is not None:
            return True
        raise LandingZoneError(
            f"Staged part {entry.staged!r} of push {journal.push_id} is gone and {final!r} was never "
            "published; re-run the push."
        )
    if published is not None:
        taken = published
    else:
        try:
            storage.rename(entry.staged, final)
            return True
        except PathExistsError:
            taken = final
    try:
        same = _same_bytes(storage, entry.staged, taken)
    except FileNotFoundError:  # moved to a cleanup folder while we read it: look again
        return _place(storage, journal, entry, recovering=True)
    if same:
        storage.delete(entry.staged)  # a crash fell between link and unlink: already published
        return True
    return False


def roll_forward(storage: Storage, journal: Journal, *, recovering: bool) -> Journal:
    """Create the metadata, rename every staged part to its number in order, commit the state.

    When ``recovering``, a part may already have been published (and even processed and moved
    by the service) before the crash: it is recognised by its bytes and not published again.
    """
    if journal.partner_events and not storage.exists(PARTNER_EVENTS_FILE):
        try:
            storage.write_bytes(PARTNER_EVENTS_FILE, journal.partner_events.encode("utf-8"))
        except PathExistsError:
            pass  # another table's first push wrote it; it is database-wide and identical
    metadata = f"{journal.folder}/{METADATA_FILE}"
    if journal.metadata and not storage.exists(metadata):
        storage.write_bytes(metadata, journal.metadata.encode("utf-8"))
    if journal.file_detection == "LastUpdateTimeFileDetection" and journal.entries:
        _wait_for_next_second(storage, journal.folder)
    entries = list(journal.entries)
    i = 0
    while i < len(entries):
        if not _place(storage, journal, entries[i], recovering=recovering):
            # Someone outside our lock took this number: renumber the rest after it.
            start = next_sequence_number(storage, journal.folder)
            entries[i:] = [replace(e, sequence=start + n) for n, e in enumerate(entries[i:])]
            journal = replace(journal, entries=tuple(entries))
            storage.write_bytes(journal_path(journal.table), journal.to_bytes(), overwrite=True)
            continue
        i += 1
        if i < len(entries):
            crash_point("between_renames")
    crash_point("before_state_commit")
    state = journal.state
    if entries:
        doc = json.loads(state)
        doc["last_sequence_number"] = entries[-1].sequence
        state = json.dumps(doc, indent=2) + "\n"
    storage.write_bytes(state_path(journal.folder), state.encode("utf-8"), overwrite=True)
    storage.delete(journal_path(journal.table))
    storage.delete(journal.staging)
    for folder in journal.obsolete:  # key state the new state no longer refers to
        storage.delete(folder)
    return journal
