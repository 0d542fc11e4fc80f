"""``scan(storage, table)``: what a table folder holds and what keeps it from replicating.

Listings only, plus ``_metadata.json``, the push state, the time a push last found nothing to
publish (``TableFolder.read_checked``) and the lock's status: cheap enough to run
for every table of a database on OneLake. What it reports:

- files pending (after the last one known processed), processed (``_ProcessedFiles``) and ready
  to delete (``_FilesReadyToDelete``);
- blockers, each with the file and what to do: a gap in the numbering, a zero-byte file, a name
  the contract does not allow, data without ``_metadata.json``, a push interrupted after it was
  decided, staging left by a dead push, a drop that did not finish, a lock held for too long.

What is processed cannot be read from listings alone: the service moves processed files to the
cleanup folders but always keeps the newest processed one in place (contract §6). So once any
file has moved, the first file after the moved ones is processed too (and once the moved files
have been purged from a cleanup folder, the first file left in the table folder); before that,
nothing is known processed unless the caller says so (``processed_through``, e.g. from the
mirror's status, which never un-processes what the listings show processed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.landing_zone import blockers as why
from openmirror_nb._core.landing_zone.blockers import Blocker
from openmirror_nb._core.landing_zone.metadata import TableMetadata
from openmirror_nb._core.landing_zone.names import (
    CLEANUP_FOLDERS,
    PROCESSED_FOLDER,
    data_extension,
    is_ignored,
    parse_sequence,
)
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.base import Entry, LockStatus, Storage

STALE_LOCK_SECONDS = 3600.0


@dataclass(frozen=True)
class DataFileInfo:
    """One data file: its name, sequence number (``None`` if the name is not a 20-digit one),
    size, modification time and where it is (``""`` the table folder, or a cleanup folder)."""

    name: str
    sequence: int | None
    size: int
    mtime: float
    place: str = ""


@dataclass(frozen=True)
class TableScan:
    """One table folder as listed now (see the module docstring)."""

    table: str
    folder: str
    exists: bool
    metadata: TableMetadata | None
    state: PushState | None
    checked: float | None
    pending: tuple[DataFileInfo, ...]
    newest_processed: DataFileInfo | None
    processed: tuple[DataFileInfo, ...]
    ready_to_delete: tuple[DataFileInfo, ...]
    last_sequence: int
    lock: LockStatus
    blockers: tuple[Blocker, ...]

    @property
    def blocked(self) -> bool:
        """Whether anything is found that blocks the table or needs attention."""
        return bool(self.blockers)


def scan(
    storage: Storage,
    table: str | TableRef,
    *,
    processed_through: int | None = None,
    stale_lock_after: float = STALE_LOCK_SECONDS,
    now: float | None = None,
) -> TableScan:
    """List one table folder and name what blocks it (see the module docstring).

    Args:
        storage: The landing zone.
        table: ``name`` or ``schema.name``.
        processed_through: The last sequence number known processed, if the caller knows it.
        stale_lock_after: A lock held longer than this many seconds is reported.
        now: The current time (epoch seconds), for tests.
    """
    home = TableFolder.of(storage, table)
    blockers: list[Blocker] = []
    listing = storage.list_dir(home.folder)
    metadata, state = _read_internals(home, blockers)
    sequential = metadata.sequential if metadata else True
    extension = metadata.options.extension if metadata else "parquet"
    in_folder, strays = _split(listing, sequential=sequential, extension=extension)
    cleanup = {sub: _files(storage.list_dir(f"{home.folder}/{sub}"), sub) for sub in CLEANUP_FOLDERS}
    moved = [f.sequence for files in cleanup.values() for f in files if f.sequence is not None]
    last_moved = max(moved, default=0)
    numbered = sorted((f for f in in_folder if f.sequence is not None), key=lambda f: f.sequence or 0)
    any_cleanup = bool(moved) or _has_cleanup(listing)
    if sequential:
        done = _processed_through(numbered, last_moved, processed_through, any_cleanup=any_cleanup)
        pending = tuple(f for f in in_folder if f.sequence is None or f.sequence > done)
    else:  # last-update-time detection: every data file in the folder waits, oldest first
        done, pending = 0, tuple(sorted(in_folder, key=lambda f: f.mtime))
    blockers += [Blocker("bad_name", why, name) for name, why in strays]
    if sequential:
        blockers += why.gaps([f.sequence or 0 for f in numbered], done, extension, any_cleanup=any_cleanup)
    blockers += [why.zero_byte(f.name) for f in pending if f.size == 0]
    exists = bool(listing) or home.exists()
    if exists and metadata is None and in_folder and not any(b.kind == "bad_metadata" for b in blockers):
        blockers.append(why.no_metadata())
    lock = home.lock_status()
    blockers += _lock_blockers(home, lock, stale_lock_after, time.time() if now is None else now)
    last = max([last_moved, *(f.sequence or 0 for f in numbered), state.last_sequence_number if state else 0])
    return TableScan(
        table=str(home.ref),
        folder=home.folder,
        exists=exists,
        metadata=metadata,
        state=state,
        checked=home.read_checked() if state is not None else None,
        pending=pending,
        newest_processed=next((f for f in numbered if f.sequence == done), None),
        processed=tuple(cleanup[PROCESSED_FOLDER]),
        ready_to_delete=tuple(cleanup[CLEANUP_FOLDERS[1]]),
        last_sequence=last,
        lock=lock,
        blockers=tuple(blockers),
    )


def _read_internals(
    home: TableFolder, blockers: list[Blocker]
) -> tuple[TableMetadata | None, PushState | None]:
    """``_metadata.json`` and the push state; one that cannot be read is a blocker, not an error."""
    metadata: TableMetadata | None = None
    try:
        metadata = home.read_metadata()
    except LandingZoneError as exc:
        blockers.append(why.bad_metadata(exc))
    state: PushState | None = None
    try:
        state = home.read_state()
    except LandingZoneError as exc:
        blockers.append(Blocker("bad_state", str(exc), home.state_path))
    return metadata, state


def _lock_blockers(home: TableFolder, lock: LockStatus, stale_after: float, clock: float) -> list[Blocker]:
    """What dead pushes and drops left behind, and a lock held for longer than ``stale_after``."""
    found = why.left_behind(home, lock)
    if lock.held and lock.since is not None and clock - lock.since > stale_after:
        found.append(why.stale_lock(lock, hours=(clock - lock.since) / 3600))
    return found


def _files(entries: list[Entry], place: str = "") -> list[DataFileInfo]:
    return [
        DataFileInfo(e.name, parse_sequence(e.name), e.size, e.mtime, place)
        for e in entries
        if not e.is_dir and data_extension(e.name) and not is_ignored(e.name)
    ]


def _has_cleanup(listing: list[Entry]) -> bool:
    return any(e.is_dir and e.name in CLEANUP_FOLDERS for e in listing)


def _split(
    listing: list[Entry], *, sequential: bool, extension: str
) -> tuple[list[DataFileInfo], list[tuple[str, str]]]:
    """Data files of the table folder, and the visible names the contract does not allow."""
    files, strays = [], []
    for e in listing:
        if is_ignored(e.name):
            continue
        reason = why.stray(e, sequential=sequential, extension=extension)
        if reason:
            strays.append((e.name, f"{'folder' if e.is_dir else 'file'} {e.name} {reason}"))
        else:
            files.append(DataFileInfo(e.name, parse_sequence(e.name), e.size, e.mtime))
    return files, strays


def _processed_through(
    numbered: list[DataFileInfo], last_moved: int, given: int | None, *, any_cleanup: bool
) -> int:
    """The last sequence number known processed: what the listings prove, or the caller's word
    if it knows more."""
    known = last_moved
    # the service keeps the newest processed file in place: the one right after the moved ones,
    # or, once every moved file has been purged from the cleanup folders, the first one left
    if last_moved and any(f.sequence == last_moved + 1 for f in numbered):
        known = last_moved + 1
    elif not last_moved and any_cleanup and numbered:
        known = numbered[0].sequence or 0
    return max(known, given or 0)
