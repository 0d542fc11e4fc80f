"""``TableFolder``: the one home of a table in the landing zone (design §4).

Everything the toolkit keeps about a table is reached through this object: the table folder,
its ``_metadata.json``, and under the folder's ``_openmirror/`` (which the service ignores) the
push state, the publish journal, the staging folders and the key-state snapshots. Deleting the
table folder therefore deletes all of it, whoever deletes it (``db.drop``, the schema wizard, a
person in OneLake explorer).

Only the lock lives outside, at ``_openmirror/locks/<table>.lock`` in the landing-zone root (or
beside a local database's landing zone), named by the table's case-folded identity: a drop holds
it while the folder goes away, and a lock inside the folder would go with it.

A table's *incarnation* is its life from one initial load to the deletion of its folder. Its id
is written in the push state and carried by every journal, staging folder
(``staging/<incarnation>.<push>``) and key-state snapshot (``keystate/<incarnation>.<push>``),
so that nothing of an ended incarnation is ever rolled forward, read or published again.

Versions before incarnations kept the journal, staging and snapshots at the landing-zone root,
keyed by table name (``LEGACY_*``); they are still recognised, so that they can be finished or
removed.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass

from openmirror_nb._core.landing_zone.journal import Journal
from openmirror_nb._core.landing_zone.metadata import TableMetadata, read_metadata
from openmirror_nb._core.landing_zone.names import (
    CLEANUP_FOLDERS,
    DEFAULT_SCHEMA,
    INTERNAL_FOLDER,
    METADATA_FILE,
    parse_sequence,
)
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.base import LockStatus, Storage
from openmirror_nb._core.table_names import MAX_NAME_BYTES, cut

# At the landing-zone root: a dropped table folder is moved here in one step, then deleted.
TRASH_FOLDER = f"{INTERNAL_FOLDER}/trash"
LEGACY_JOURNAL_FOLDER = f"{INTERNAL_FOLDER}/journal"
LEGACY_STAGING_FOLDER = f"{INTERNAL_FOLDER}/staging"
LEGACY_SNAPSHOT_FOLDER = f"{INTERNAL_FOLDER}/snapshots"


def new_incarnation() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class TableFolder:
    """Where everything of one table lives, and the reads every operation needs.

    Args:
        storage: The landing zone.
        ref: The table (``name`` or ``schema.name``).
    """

    storage: Storage
    ref: TableRef

    @classmethod
    def of(cls, storage: Storage, table: str | TableRef) -> TableFolder:
        return cls(storage, table if isinstance(table, TableRef) else TableRef.parse(table))

    # -- paths -------------------------------------------------------------------------------

    @property
    def folder(self) -> str:
        """The table folder (``schema.schema/name`` or ``name``)."""
        return self.ref.folder

    @property
    def metadata_path(self) -> str:
        return f"{self.folder}/{METADATA_FILE}"

    @property
    def internal(self) -> str:
        return f"{self.folder}/{INTERNAL_FOLDER}"

    @property
    def state_path(self) -> str:
        return f"{self.internal}/state.json"

    @property
    def journal_path(self) -> str:
        return f"{self.internal}/journal.json"

    @property
    def checked_path(self) -> str:
        """When a push last found nothing to publish (``write_checked``)."""
        return f"{self.internal}/checked.json"

    @property
    def staging_root(self) -> str:
        return f"{self.internal}/staging"

    @property
    def keystate_root(self) -> str:
        return f"{self.internal}/keystate"

    def staging(self, incarnation: str, push_id: str) -> str:
        return f"{self.staging_root}/{incarnation}.{push_id}"

    def keystate(self, incarnation: str, push_id: str) -> str:
        return f"{self.keystate_root}/{incarnation}.{push_id}"

    @property
    def lock_name(self) -> str:
        """The table's identity to the mirror, case-folded (``dbo.`` left out, as for a table at
        the root): two spellings of one table share one lock, so two first pushes cannot both win."""
        name = self.ref.identity.removeprefix(f"{DEFAULT_SCHEMA}.")
        if len(name.encode()) <= MAX_NAME_BYTES:
            return name
        # Only a folder someone else named can be this long (the rule refuses such names).
        return f"{cut(name, MAX_NAME_BYTES // 2)}~{hashlib.sha256(name.encode()).hexdigest()[:16]}"

    @property
    def legacy_journal_path(self) -> str:
        return f"{LEGACY_JOURNAL_FOLDER}/{self.ref.key}.json"

    @property
    def legacy_internals(self) -> tuple[str, str]:
        """Root folders where older versions staged and kept key state for this table."""
        return (f"{LEGACY_STAGING_FOLDER}/{self.ref.key}", f"{LEGACY_SNAPSHOT_FOLDER}/{self.ref.key}")

    def trash_entries(self) -> list[str]:
        """Folders of this table moved to the trash by a drop that did not finish deleting them."""
        prefix = f"{self.ref.key}."
        return [
            f"{TRASH_FOLDER}/{e.name}"
            for e in self.storage.list_dir(TRASH_FOLDER)
            if e.name.startswith(prefix) and e.name.count(".") == self.ref.key.count(".") + 2
        ]

    def trash_path(self, incarnation: str | None) -> str:
        return f"{TRASH_FOLDER}/{self.ref.key}.{incarnation or 'unknown'}.{uuid.uuid4().hex[:8]}"

    # -- reads -------------------------------------------------------------------------------

    def lock(self, *, timeout: float) -> AbstractContextManager[None]:
        """The table lock: one writer (push, recover, drop) per table at a time."""
        return self.storage.lock(self.lock_name, timeout=timeout)

    def lock_status(self) -> LockStatus:
        return self.storage.lock_status(self.lock_name)

    def exists(self) -> bool:
        return self.storage.exists(self.folder)

    def read_metadata(self) -> TableMetadata | None:
        return read_metadata(self.storage, self.folder)

    def has_metadata(self) -> bool:
        return self.storage.exists(self.metadata_path)

    def read_state(self) -> PushState | None:
        """The committed push state, or ``None`` for a table this tool has not pushed to."""
        try:
            return PushState.from_bytes(self.storage.read_bytes(self.state_path))
        except FileNotFoundError:
            return None

    def read_journal(self, path: str | None = None) -> Journal | None:
        """The journal at ``path`` (default the table's own), or ``None``."""
        try:
            return Journal.from_bytes(self.storage.read_bytes(path or self.journal_path))
        except FileNotFoundError:
            return None

    def write_journal(self, journal: Journal) -> None:
        self.storage.write_bytes(self.journal_path, journal.to_bytes(), overwrite=True)

    def write_checked(self, at: float) -> None:
        """Record that a push found nothing to publish at ``at`` (epoch seconds): all a push
        that changes nothing writes, so that status tells an idle table from a dead job."""
        self.storage.write_bytes(
            self.checked_path, json.dumps({"checked": at}).encode("utf-8"), overwrite=True
        )

    def read_checked(self) -> float | None:
        """When a push last found nothing to publish, or ``None`` (never, or unreadable)."""
        try:
            return float(json.loads(self.storage.read_bytes(self.checked_path))["checked"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            return None  # a record of when, not of what: one that cannot be read says nothing

    def file_names(self) -> list[str]:
        """Names of the files in the table folder and its cleanup folders."""
        names = []
        for sub in ("", *CLEANUP_FOLDERS):
            path = f"{self.folder}/{sub}" if sub else self.folder
            names += [e.name for e in self.storage.list_dir(path) if not e.is_dir]
        return names

    def last_sequence_number(self) -> int:
        """The largest sequence number in the table folder and its cleanup folders (0 if none)."""
        return max((s for s in map(parse_sequence, self.file_names()) if s is not None), default=0)

    def next_sequence_number(self, *, floor: int = 0) -> int:
        """1 + the largest number in the table folder, its cleanup folders and ``floor``."""
        return max(self.last_sequence_number(), floor) + 1

    def journal_belongs(self, journal: Journal, state: PushState | None) -> bool:
        """May ``journal`` be rolled forward into this folder as it is now?

        Only into the incarnation it was decided in: a later push needs that incarnation's ``_metadata.json``
        and state; an initial load (which creates the metadata itself) needs no state of
        another incarnation. A journal without an incarnation (older versions) is rolled forward only
        where the table's ``_metadata.json`` still is.
        """
        if journal.incarnation is None:
            return self.has_metadata()
        if state is not None and state.incarnation not in (None, journal.incarnation):
            return False
        if journal.metadata is not None:
            return True
        return state is not None and self.has_metadata()
