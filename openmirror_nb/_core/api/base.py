"""What every part of the ``MirroredDatabase`` handle stands on: where the database is, and the
table reads the other parts use (``describe``, ``tables``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import OpenMirrorError
from openmirror_nb._core.landing_zone.discovery import discover_tables
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import PartnerInfo
from openmirror_nb._core.table_info import TableInfo, database_html, describe
from openmirror_nb._core.target import LocalTarget, Target

if TYPE_CHECKING:
    from openmirror_nb._core.mirror import LocalMirror
    from openmirror_nb._core.storage.base import Storage

# One local mirror per database folder in this process: two over one folder would race each other.
_MIRRORS: dict[Path, LocalMirror] = {}
_MIRRORS_LOCK = threading.Lock()


class DatabaseBase:
    """The handle's state and its table reads; ``MirroredDatabase`` adds the rest."""

    def __init__(
        self,
        *,
        target: Target,
        storage: Storage,
        partner: PartnerInfo | None = None,
        lock_timeout: float = 600.0,
        credential: Any = None,
    ) -> None:
        self.target = target
        self.storage = storage
        self.partner = partner or PartnerInfo()
        self.lock_timeout = lock_timeout
        self._credential = credential

    def __repr__(self) -> str:
        try:
            count = f", {len(self.tables())} tables"
        except OpenMirrorError:
            count = ""  # unreachable store: the handle still says what it points at
        return f"MirroredDatabase({self.target}{count})"

    def _repr_html_(self) -> str:
        return database_html(str(self.target), self.tables, self.describe)

    @property
    def local_mirror(self) -> LocalMirror | None:
        """The local mirror of this database: one per database folder in this process, shared
        by every handle on the folder, the ``%openmirror mirror`` magic and the monitor pane's
        switch. ``None`` on OneLake, where the service mirrors.

        Example:
            >>> db.local_mirror.run_once()
        """
        if not isinstance(self.target, LocalTarget):
            return None
        from openmirror_nb._core.mirror import LocalMirror

        root = self.target.root.resolve()
        with _MIRRORS_LOCK:
            if root not in _MIRRORS:
                _MIRRORS[root] = LocalMirror(root)
            return _MIRRORS[root]

    def describe(self, table: str) -> TableInfo:
        """Keys, schema, file format, last sequence number, key-state rows, pushes and the
        table's incarnation, from ``_metadata.json`` and the push state.

        Raises:
            LandingZoneError: the table does not exist (the message names the close ones).

        Example:
            >>> db.describe("sales.orders")
        """
        home = TableFolder.of(self.storage, table)
        return describe(home, known=self.tables)

    def tables(self) -> list[str]:
        """The tables of the landing zone (folders holding a ``_metadata.json``), as ``db.push``
        names them (``name`` or ``schema.name``)."""
        return sorted(
            str(t.ref)
            for t in discover_tables(self.storage)
            if TableFolder(self.storage, t.ref).has_metadata()
        )
