"""The reasons ``scan`` gives for a blocked table, in words a user can act on: what is wrong,
which file, and what to do about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from openmirror_nb._core.landing_zone.names import (
    DATA_EXTENSIONS,
    data_extension,
    data_file_name,
    parse_sequence,
)
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.storage.base import Entry, LockStatus

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
    "name_conflict",
]


@dataclass(frozen=True)
class Blocker:
    """Something that stops or threatens replication, in words a user can act on."""

    kind: BlockerKind
    message: str
    file: str | None = None


def stray(e: Entry, *, sequential: bool, extension: str) -> str | None:
    """Why a visible item of a table folder breaks the contract, or ``None`` if it does not."""
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


def gaps(have: list[int], done: int, extension: str, *, any_cleanup: bool) -> list[Blocker]:
    """Missing numbers after the last processed one, before files that wait for them (``have``:
    the numbers in the table folder, ascending)."""
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


def left_behind(home: TableFolder, lock: LockStatus) -> list[Blocker]:
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


def zero_byte(name: str) -> Blocker:
    return Blocker(
        "zero_byte",
        f"file {name} is empty (0 bytes): the mirror fails on it; publish it again under the same "
        "name with its rows, or reseed the table.",
        name,
    )


def no_metadata() -> Blocker:
    return Blocker(
        "no_metadata",
        "the folder holds data files but no _metadata.json: the mirror cannot read it; push the "
        "table again with its keys, or delete the folder.",
        "_metadata.json",
    )


def bad_metadata(exc: Exception) -> Blocker:
    return Blocker("bad_metadata", f"_metadata.json cannot be read: {exc}", "_metadata.json")


def stale_lock(lock: LockStatus, *, hours: float) -> Blocker:
    return Blocker(
        "stale_lock",
        f"the table has been locked by {lock.holder or 'another writer'} for {hours:.1f} h: a push "
        "may be hung; stop that process, and the lock goes with it.",
    )
