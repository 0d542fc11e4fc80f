"""The lifecycle of a table's internals: settle what earlier operations left, and drop a table.

Both run under the table lock. ``settle`` is what every operation on a table does first: roll
forward a decided push of the table's current incarnation, and remove (and report) everything else a
dead push, an ended incarnation or an unfinished drop left behind. ``drop`` ends the incarnation: it moves the
whole table folder to the trash in one atomic step, then deletes it, so a crash at any point
leaves either the table as it was or a trash folder the next operation removes; nothing of the
dropped incarnation can be published again (design §4).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from openmirror_nb._core.landing_zone.journal import Journal
from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER, SCHEMA_SUFFIX, data_extension
from openmirror_nb._core.landing_zone.publish import crash_point, roll_forward
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.table_folder import (
    LEGACY_JOURNAL_FOLDER,
    LEGACY_SNAPSHOT_FOLDER,
    LEGACY_STAGING_FOLDER,
    TRASH_FOLDER,
    TableFolder,
)

log = logging.getLogger("openmirror_nb")


@dataclass(frozen=True)
class Settled:
    """What ``settle`` did.

    Attributes:
        rolled_forward: The interrupted push it finished, if any.
        removed: Paths it removed: internals of dead pushes, of ended incarnations, unfinished drops.
    """

    rolled_forward: Journal | None = None
    removed: tuple[str, ...] = ()
    state: PushState | None = None


def settle(home: TableFolder) -> Settled:
    """Finish or discard what earlier operations on this table left. Runs under the table lock.

    Every push of a table stages under its lock, so once the lock is ours, a staging folder no
    journal refers to belongs to a dead push, and key state the push state does not refer to
    is left over from one. ``Settled.state`` is the push state once settled.

    Two listings say what is there to settle (the root's and the table's ``_openmirror``), so a
    table with nothing left over costs them, one read of the state and one listing of its key
    state: on OneLake each is a round trip.
    """
    storage, removed = home.storage, []
    rolled: Journal | None = None
    at_root = {e.name for e in storage.list_dir(INTERNAL_FOLDER) if e.is_dir}
    inside = {e.name for e in storage.list_dir(home.internal)}
    if _last(TRASH_FOLDER) in at_root:
        for path in home.trash_entries():  # a drop that died after moving the folder away
            storage.delete(path)
            removed.append(path)
    legacy = False
    journals = [home.legacy_journal_path] if _last(LEGACY_JOURNAL_FOLDER) in at_root else []
    journals += [home.journal_path] if _last(home.journal_path) in inside else []
    for path in journals:  # an older version's one first
        journal = home.read_journal(path)
        if journal is None:
            continue
        legacy = legacy or path == home.legacy_journal_path
        if home.journal_belongs(journal, home.read_state()):
            rolled = roll_forward(home, journal, recovering=True, path=path)
        else:
            removed += [path, *_discard(home, journal)]
            storage.delete(path)
    state = home.read_state()
    older = {_last(LEGACY_STAGING_FOLDER), _last(LEGACY_SNAPSHOT_FOLDER)} & at_root
    removed += _tidy(home, state, staging=_last(home.staging_root) in inside, legacy=bool(older))
    if legacy or any(not r.startswith(f"{home.folder}/") for r in removed):
        _prune_root(home)
    if removed:
        log.warning("Table %s: removed what no push will finish: %s", home.ref, ", ".join(removed))
    return Settled(rolled, tuple(removed), state)


def _prune_root(home: TableFolder) -> None:
    """Root folders emptied by the removals above go, innermost first; ones in use stay."""
    staging, snapshots = home.legacy_internals
    for path in (staging, snapshots, LEGACY_STAGING_FOLDER, LEGACY_SNAPSHOT_FOLDER, LEGACY_JOURNAL_FOLDER):
        home.storage.delete(path, recursive=False)
    home.storage.delete(TRASH_FOLDER, recursive=False)
    home.storage.delete(INTERNAL_FOLDER, recursive=False)


def _discard(home: TableFolder, journal: Journal) -> list[str]:
    """A journal of another incarnation: its staged files and key state go, nothing is published."""
    removed = []
    for path in (journal.staging, _keystate_of(journal)):
        if path and home.storage.exists(path):
            home.storage.delete(path)
            removed.append(path)
    return removed


def _keystate_of(journal: Journal) -> str | None:
    base_or_delta = json.loads(journal.state)
    folders = [base_or_delta.get("base"), *base_or_delta.get("deltas", ())]
    mine = [f for f in folders if f and f.rstrip("/").endswith(journal.push_id)]
    return mine[0] if mine else None


def _last(path: str) -> str:
    return path.rpartition("/")[2]


def _tidy(home: TableFolder, state: PushState | None, *, staging: bool, legacy: bool) -> list[str]:
    """Staging no journal refers to, and key state the push state does not refer to (``staging``,
    ``legacy``: whether the table's staging folder and older versions' root folders exist)."""
    storage, removed = home.storage, []
    live = set(state.key_state) if state else set()
    staging_roots = ([home.staging_root] if staging else []) + ([home.legacy_internals[0]] if legacy else [])
    for root in staging_roots:
        for entry in storage.list_dir(root):
            removed.append(f"{root}/{entry.name}")
    for root in [home.keystate_root] + ([home.legacy_internals[1]] if legacy else []):
        for entry in storage.list_dir(root):
            path = f"{root}/{entry.name}"
            if path not in live:
                removed.append(path)
    for path in removed:
        storage.delete(path)
    return removed


@dataclass(frozen=True)
class Dropped:
    """What ``drop`` removed.

    Attributes:
        existed: The table folder was there.
        incarnation: The incarnation it ended, if the folder had push state.
        data_files: Data files in the folder and its cleanup folders when it went.
        removed: Paths removed: the table folder, then leftovers of earlier operations.
    """

    existed: bool
    incarnation: str | None
    data_files: int
    removed: tuple[str, ...]


def drop(home: TableFolder) -> Dropped:
    """Remove the table folder and every internal of the table. Runs under the table lock."""
    storage, existed = home.storage, home.exists()
    state = home.read_state() if existed else None
    files, removed = 0, []
    if existed:
        files = sum(1 for name in home.file_names() if data_extension(name))
        trash = home.trash_path(state.incarnation if state else None)
        crash_point("drop_before_move")
        storage.move_folder(home.folder, trash)  # the table is gone for the service from here on
        removed.append(home.folder)
        crash_point("drop_after_move")
        storage.delete(trash)
        _prune_root(home)
    leftovers = settle(home)  # older-version internals and unfinished drops of this table
    removed += leftovers.removed
    if home.ref.schema:  # an emptied schema folder goes too; one still holding tables stays
        storage.delete(f"{home.ref.schema}{SCHEMA_SUFFIX}", recursive=False)
    return Dropped(existed, state.incarnation if state else None, files, tuple(removed))
