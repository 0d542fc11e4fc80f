"""``scan(storage, table)``: what a table folder holds and what keeps it from replicating.

Listings only, plus ``_metadata.json``, the push state and the lock's status: cheap enough to run
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
from typing import Literal

from openmirror_nb.errors import LandingZoneError
from openmirror_nb.landing_zone.metadata import TableMetadata
from openmirror_nb.landing_zone.names import (
    CLEANUP_FOLDERS,
    DATA_EXTENSIONS,
    PROCESSED_FOLDER,
    data_extension,
    data_file_name,
    is_ignored,
    parse_sequence,
)
from openmirror_nb.landing_zone.push_state import PushState
from openmirror_nb.landing_zone.table_folder import TableFolder
from openmirror_nb.model import TableRef
from openmirror_nb.storage.base import Entry, LockStatus, Storage

BlockerKind = Literal[
    "gap",
    "zero_byte",
    "bad_name",
    "no_metadata",
    "bad_metadata",
    "bad_state",
    "unfinished_push",
    "orphaned_staging",
    "unfinished_drop",
    "stale_lock",
]
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
class Blocker:
    """Something that stops or threatens replication, in words a user can act on."""

    kind: BlockerKind
    message: str
    file: str | None = None


@dataclass(frozen=True)
class TableScan:
    """One table folder as listed now (see the module docstring)."""

    table: str
    folder: str
    exists: bool
    metadata: TableMetadata | None
    state: PushState | None
    pending: tuple[DataFileInfo, ...]
    newest_processed: DataFileInfo | None
    processed: tuple[DataFileInfo, ...]
    ready_to_delete: tuple[DataFileInfo, ...]
    last_sequence: int
    lock: LockStatus
    blockers: tuple[Blocker, ...]

    @property
    def blocked(self) -> bool:
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
    exists = bool(listing) or home.exists()
    metadata: TableMetadata | None = None
    try:
        metadata = home.read_metadata()
    except LandingZoneError as exc:
        blockers.append(Blocker("bad_metadata", f"_metadata.json cannot be read: {exc}", "_metadata.json"))
    state: PushState | None = None
    try:
        state = home.read_state()
    except LandingZoneError as exc:
        blockers.append(Blocker("bad_state", f"{exc}", home.state_path))
    sequential = metadata.sequential if metadata else True
    extension = metadata.options.extension if metadata else "parquet"
    in_folder, strays = _split(listing, sequential=sequential, extension=extension)
    cleanup = {sub: _files(storage.list_dir(f"{home.folder}/{sub}"), sub) for sub in CLEANUP_FOLDERS}
    moved = [f.sequence for files in cleanup.values() for f in files if f.sequence is not None]
    last_moved = max(moved, default=0)
    numbered = sorted((f for f in in_folder if f.sequence is not None), key=lambda f: f.sequence or 0)
    any_cleanup = bool(moved) or _has_cleanup(listing)
    done = (
        _processed_through(numbered, last_moved, processed_through, any_cleanup=any_cleanup)
        if sequential
        else 0
    )
    pending = tuple(f for f in in_folder if f.sequence is None or f.sequence > done) if sequential else ()
    if not sequential:
        pending = tuple(sorted(in_folder, key=lambda f: f.mtime))
    newest = next((f for f in numbered if f.sequence == done), None)
    blockers += [Blocker("bad_name", why, name) for name, why in strays]
    if sequential:
        blockers += _gaps(numbered, done, extension, any_cleanup=any_cleanup)
    blockers += [
        Blocker(
            "zero_byte",
            f"file {f.name} is empty (0 bytes): the mirror fails on it; publish it again "
            "under the same name with its rows, or reseed the table.",
            f.name,
        )
        for f in pending
        if f.size == 0
    ]
    if exists and metadata is None and in_folder and not any(b.kind == "bad_metadata" for b in blockers):
        blockers.append(
            Blocker(
                "no_metadata",
                "the folder holds data files but no _metadata.json: the mirror "
                "cannot read it; push the table again with its keys, or delete the folder.",
                "_metadata.json",
            )
        )
    lock = home.lock_status()
    clock = time.time() if now is None else now
    blockers += _internals(home, lock)
    if lock.held and lock.since is not None and clock - lock.since > stale_lock_after:
        hours = (clock - lock.since) / 3600
        blockers.append(
            Blocker(
                "stale_lock",
                f"the table has been locked by {lock.holder or 'another writer'} for "
                f"{hours:.1f} h: a push may be hung; stop that process, and the lock goes with it.",
            )
        )
    last = max([last_moved, *(f.sequence or 0 for f in numbered), state.last_sequence_number if state else 0])
    return TableScan(
        table=str(home.ref),
        folder=home.folder,
        exists=exists,
        metadata=metadata,
        state=state,
        pending=pending,
        newest_processed=newest,
        processed=tuple(cleanup[PROCESSED_FOLDER]),
        ready_to_delete=tuple(cleanup[CLEANUP_FOLDERS[1]]),
        last_sequence=last,
        lock=lock,
        blockers=tuple(blockers),
    )


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
        why = _stray(e, sequential=sequential, extension=extension)
        if why:
            strays.append((e.name, f"{'folder' if e.is_dir else 'file'} {e.name} {why}"))
        else:
            files.append(DataFileInfo(e.name, parse_sequence(e.name), e.size, e.mtime))
    return files, strays


def _stray(e: Entry, *, sequential: bool, extension: str) -> str | None:
    aside = "move it out or rename it with a leading '_'."
    ext = data_extension(e.name)
    if e.is_dir:
        return f"in a table folder is not part of the contract; {aside}"
    if ext is None:
        return f"is not a data file ({', '.join(DATA_EXTENSIONS)}); {aside}"
    if ext != extension:
        return f"is {ext} but the table declares {extension}: the mirror fails on it; {aside}"
    if sequential and parse_sequence(e.name) is None:
        return (
            "is not named with 20 digits (SequentialFileName): the mirror never picks it up; "
            "publish its rows under the next number."
        )
    return None


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


def _gaps(numbered: list[DataFileInfo], done: int, extension: str, *, any_cleanup: bool) -> list[Blocker]:
    """Missing numbers after the last processed one, before files that wait for them."""
    have = [f.sequence for f in numbered if f.sequence is not None]
    if not have:
        return []
    # Nothing known processed: below the first file in the folder only what the service never
    # moved can be missing; with nothing moved yet (no cleanup folder), numbering starts at 1.
    start = done + 1 if done else (have[0] if any_cleanup else 1)
    present, blockers = set(have), []
    missing = [n for n in range(start, have[-1]) if n not in present]
    for n in missing[:5]:
        waiting = [s for s in have if s > n]
        who = f"file {waiting[0]} waits" if len(waiting) == 1 else f"files {waiting[0]}-{waiting[-1]} wait"
        name = data_file_name(n, extension)
        blockers.append(
            Blocker("gap", f"file {name} is missing: {who} for it; publish {n} or reseed the table.", name)
        )
    return blockers


def _internals(home: TableFolder, lock: LockStatus) -> list[Blocker]:
    """What pushes and drops left: reported only while no writer holds the lock."""
    if lock.held:
        return []
    storage, found = home.storage, []
    journal = next((p for p in (home.journal_path, home.legacy_journal_path) if storage.exists(p)), None)
    if journal:
        found.append(
            Blocker(
                "unfinished_push",
                f"a push was interrupted after it was decided (its journal {journal} is still "
                f"there); the next push or db.recover({str(home.ref)!r}) finishes it (or removes "
                "it, if the table was dropped since).",
                journal,
            )
        )
    staged = [f"{home.staging_root}/{e.name}" for e in storage.list_dir(home.staging_root)]
    staged += [f"{home.legacy_internals[0]}/{e.name}" for e in storage.list_dir(home.legacy_internals[0])]
    if staged and not journal:
        found += [
            Blocker(
                "orphaned_staging",
                f"{path} was left by a push that died before it was decided; "
                "the next push of the table removes it.",
                path,
            )
            for path in staged
        ]
    found += [
        Blocker(
            "unfinished_drop",
            f"a drop of the table did not finish deleting {path}; the next push, "
            "drop or recover of the table removes it.",
            path,
        )
        for path in home.trash_entries()
    ]
    return found
