"""Which incarnation of each table a streaming query started on (its ``QueryRecord``), or went
on with after the reseed a schema change needed (``streaming.held_tables``).

A table's push state says which batches of which query it holds, but it lives in the table folder,
so a drop deletes it: a query restarted after a drop would find no state and start a new table from
the middle of its feed. The record lives outside every table folder, at
``_openmirror/streams/<query id>.json`` in the landing-zone root (ignored by the service), so it
outlives the table. Spark runs one batch of a query at a time, so one writer owns each record
(the tables of a routed batch, applied on threads, take turns through its lock).
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field

from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.landing_zone.held_events import read_one
from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.landing_zone.push_state import PushState, StreamBatch
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.storage.base import Storage

STREAMS_FOLDER = f"{INTERNAL_FOLDER}/streams"
log = logging.getLogger("openmirror_nb")


@dataclass
class QueryRecord:
    """Per table (its key), the incarnation ``query`` first applied a batch to."""

    storage: Storage
    query: str
    tables: dict[str, str] = field(default_factory=dict)
    # a routed batch's tables note themselves from threads of their own: one writer at a time
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def path(self) -> str:
        return f"{STREAMS_FOLDER}/{self.query}.json"

    @classmethod
    def read(cls, storage: Storage, query: str) -> QueryRecord:
        record = cls(storage, query)
        try:
            doc = json.loads(storage.read_bytes(record.path))
        except FileNotFoundError:
            return record
        record.tables.update(doc.get("tables", {}))
        return record

    def check(self, home: TableFolder, state: PushState | None, batch: StreamBatch) -> None:
        """Refuse a table that is not the incarnation the query started on (dropped, reseeded);
        tell what a new query on a table that holds other queries' batches means."""
        table, now = str(home.ref), state.incarnation if state else None
        started_on = self.tables.get(home.ref.key)
        if started_on is not None and started_on != now and now is not None and self._adopts(home, batch):
            self._write(home, now)  # reseeded after a schema change stopped it: its events wait for it
        elif started_on is not None and started_on != now:
            raise LandingZoneError(
                f"Table {table} was dropped or reseeded while streaming query {batch.query} fed it "
                f"(incarnation {started_on} then, {now or 'none'} now); batch {batch.batch} was not "
                "published: restart the stream from a new checkpoint to load the table again from "
                "its source."
            )
        others = [q for q, _ in state.streams if q != batch.query] if state else []
        if started_on is None and others and (state is None or state.applied(batch.query) is None):
            log.warning(
                "Table %s holds batches of other streaming queries (%s); query %s is a new one (a new "
                "checkpoint): if it reads its source from the start, events are applied again (row "
                "marker 0 inserts them again, upserts and deletes do not change the result).",
                table,
                ", ".join(others),
                batch.query,
            )

    def note(self, home: TableFolder) -> None:
        """Remember the table's incarnation, once the query applied (or holds) a batch there."""
        if home.ref.key in self.tables:
            return
        state = home.read_state()
        if state is None or state.incarnation is None:
            return
        self._write(home, state.incarnation)

    def _adopts(self, home: TableFolder, batch: StreamBatch) -> bool:
        """Whether ``batch`` applies the events the query kept for the table while a schema change
        stopped it (``streaming.held_tables``): the reseed is the new incarnation it waited for."""
        held = read_one(self.storage, self.query, str(home.ref))
        return held is not None and held.adopting == batch.batch

    def _write(self, home: TableFolder, incarnation: str) -> None:
        with self._lock:
            self.tables[home.ref.key] = incarnation
            doc = {"query": self.query, "tables": dict(self.tables)}
            self.storage.write_bytes(
                self.path, (json.dumps(doc, indent=2) + "\n").encode("utf-8"), overwrite=True
            )
