"""The mirror a reseed waits on: until it no longer lists the table, until it has the reloaded
table back with nothing pending, and its row count.

A local database's mirror is run here, one pass per look (``LocalMirror.run_once`` takes the
mirror's own lock, so a mirror running in the background is not disturbed). In Fabric the
service replicates; the looks go through ``getTablesMirroringStatus`` inside Fabric, else the
``Files/Monitoring`` files.
"""

from __future__ import annotations

import time
from typing import Any

from openmirror_nb._core.errors import MirrorError, MirrorWaitTimeoutError
from openmirror_nb._core.fabric.presence import wait_until_dropped
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.status.gather import build_report
from openmirror_nb._core.status.records import NOT_LISTED
from openmirror_nb._core.status.sources import database_sources, local_row_counter, onelake_row_counter
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.target import LocalTarget, Target


class Mirror:
    """Waits and counts for one database (see the module docstring)."""

    def __init__(
        self, target: Target, storage: Storage, *, credential: Any = None, poll: float = 0.5
    ) -> None:
        self.target, self.storage, self.credential = target, storage, credential
        self.poll = poll if isinstance(target, LocalTarget) else max(poll, 5.0)

    def tick(self) -> None:
        if isinstance(self.target, LocalTarget):
            from openmirror_nb._core.mirror import LocalMirror

            LocalMirror(self.target.root).run_once()

    def wait_dropped(self, ref: TableRef, *, timeout: float) -> float:
        return wait_until_dropped(
            self.target, ref, timeout=timeout, credential=self.credential, tick=self.tick
        )

    def wait_back(self, ref: TableRef, *, timeout: float) -> float:
        """Until the mirror lists ``ref`` again with every published file applied.

        Raises:
            MirrorError: the mirror failed the reloaded table (its reason in words).
            MirrorWaitTimeoutError: not back after ``timeout`` seconds.
        """
        started = time.monotonic()
        sources = database_sources(self.target, self.storage, credential=self.credential)
        while True:
            self.tick()
            found = build_report(str(self.target), sources, table=str(ref)).tables
            table = found[0] if found else None
            if table is not None and table.health == "failed":
                raise MirrorError(f"The mirror failed the reloaded table {ref}: {table.advice[0]}")
            # "warning" is the reseed's own note (it is in progress until this wait ends)
            if (
                table is not None
                and table.status != NOT_LISTED
                and not table.pending
                and table.health in ("ok", "warning")
            ):
                return time.monotonic() - started
            waited = time.monotonic() - started
            if waited >= timeout:
                how = f"{table.status}, {len(table.pending)} file(s) pending" if table else "not listed"
                raise MirrorWaitTimeoutError(
                    f"Table {ref} is not back in the mirror {timeout:g} s after its reload ({how}); is the "
                    "mirror running? The reload is published: waiting again continues from here."
                )
            time.sleep(min(self.poll, max(0.0, timeout - waited)))

    def count(self, ref: TableRef) -> int | None:
        """Rows of the mirrored table (OneLake: read with the connection's credential)."""
        if isinstance(self.target, LocalTarget):
            return local_row_counter(self.target)(ref)
        return onelake_row_counter(self.target, self.credential)(ref)
