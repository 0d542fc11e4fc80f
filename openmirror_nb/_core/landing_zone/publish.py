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
from collections.abc import Callable
from dataclasses import replace

from openmirror_nb._core.errors import LandingZoneError, PathExistsError, StorageError
from openmirror_nb._core.landing_zone.freshness_log import (
    Check,
    FileFreshness,
    SourceTimes,
    record_check,
    record_files,
)
from openmirror_nb._core.landing_zone.journal import Journal, JournalEntry
from openmirror_nb._core.landing_zone.names import CLEANUP_FOLDERS, PARTNER_EVENTS_FILE, data_file_name
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.storage.base import Storage

CRASH_ENV = "OPENMIRROR_CRASH_AT"


def crash_point(step: str) -> None:
    """Fault injection for the crash tests: die here, as SIGKILL would, if asked to."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def publish(
    home: TableFolder,
    journal: Journal,
    *,
    on_file: Callable[[int, int, str], None] | None = None,
    on_commit: Callable[[], None] | None = None,
) -> Journal:
    """Record the push, then carry it out. Returns the journal as executed.

    ``on_file(i, n, path)`` is called after file ``i`` of ``n`` is published, ``on_commit()``
    before the state is committed (a push's progress display).
    """
    home.write_journal(journal)
    crash_point("after_journal")
    return roll_forward(home, journal, recovering=False, on_file=on_file, on_commit=on_commit)


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
    if not recovering:  # the part was listed just before the journal: rename it, no look first
        try:
            storage.rename(entry.staged, final)
            return True
        except StorageError:  # the number is taken, or the part is gone: look as a recovery does
            return _place(storage, journal, entry, recovering=True)
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


def roll_forward(
    home: TableFolder,
    journal: Journal,
    *,
    recovering: bool,
    path: str | None = None,
    on_file: Callable[[int, int, str], None] | None = None,
    on_commit: Callable[[], None] | None = None,
) -> Journal:
    """Create the metadata, rename every staged part to its number in order, commit the state.

    When ``recovering``, a part may already have been published (and even processed and moved
    by the service) before the crash: it is recognised by its bytes and not published again.
    The caller has checked that the journal belongs to the table's incarnation (``journal_belongs``).
    ``path``: where the journal is kept (default the table's; an older version's at the root).
    """
    storage, path = home.storage, path or home.journal_path
    # database-wide, written by the first push of the first table: looked for at a first push only
    if journal.partner_events and journal.metadata and not storage.exists(PARTNER_EVENTS_FILE):
        try:
            storage.write_bytes(PARTNER_EVENTS_FILE, journal.partner_events.encode("utf-8"))
        except PathExistsError:
            pass  # another table's first push wrote it; it is database-wide and identical
    if journal.metadata and not home.has_metadata():
        storage.write_bytes(home.metadata_path, journal.metadata.encode("utf-8"))
    if journal.file_detection == "LastUpdateTimeFileDetection" and journal.entries:
        _wait_for_next_second(storage, journal.folder)
    entries = list(journal.entries)
    placed: dict[int, float] = {}  # entry index -> when it was published (as this run saw it)
    i = 0
    while i < len(entries):
        if not _place(storage, journal, entries[i], recovering=recovering):
            # Someone outside our lock took this number: renumber the rest after it.
            start = home.next_sequence_number()
            entries[i:] = [replace(e, sequence=start + n) for n, e in enumerate(entries[i:])]
            journal = replace(journal, entries=tuple(entries))
            storage.write_bytes(path, journal.to_bytes(), overwrite=True)
            continue
        placed[i] = time.time()
        i += 1
        if on_file is not None:
            on_file(i, len(entries), journal.final(entries[i - 1]))
        if i < len(entries):
            crash_point("between_renames")
    if on_commit is not None:
        on_commit()
    crash_point("before_state_commit")
    state = journal.state
    if entries:
        doc = json.loads(state)
        doc["last_sequence_number"] = entries[-1].sequence
        state = json.dumps(doc, indent=2) + "\n"
    storage.write_bytes(home.state_path, state.encode("utf-8"), overwrite=True)
    crash_point("after_state_commit")
    _record_freshness(home, journal, entries, placed, state)
    storage.delete(path)
    storage.delete(journal.staging)
    storage.delete(home.staging_root, recursive=False)  # empty now: every push stages under the lock
    for folder in journal.obsolete:  # key state the new state no longer refers to
        storage.delete(folder)
    return journal


def _record_freshness(
    home: TableFolder, journal: Journal, entries: list[JournalEntry], placed: dict[int, float], state: str
) -> None:
    """Each published file's summary (or, with none, the table current as of the source times);
    after the state commit, so only what the table now holds is recorded. A roll-forward after a
    crash records the files published before it as published now: an upper bound."""
    source = SourceTimes.from_doc(journal.freshness)
    if entries:
        files = [
            FileFreshness(
                e.sequence, data_file_name(e.sequence, journal.extension), placed.get(n, time.time()), source
            )
            for n, e in enumerate(entries)
        ]
        record_files(home.storage, home.internal, files)
    elif source is not None:
        through = int(json.loads(state).get("last_sequence_number") or 0)
        record_check(home.storage, home.internal, Check(through, time.time(), source))
