"""The tables of a Kafka mirror that a schema change stopped, while the stream goes on.

A Debezium topic whose table cannot take a batch's events (a column that changed type: the
mirror cannot change a column's type) stops only that table: from that batch on, its messages are
kept as they came (``landing_zone.held_events``) and the other tables go on. Once the table has a
new incarnation (the schema wizard's reseed reloaded it from a full copy of its source), the next
batch reads the kept messages with its own and applies them all, in source order, as upserts
and deletes: a key changed since the stop ends as its last change says, whatever the copy held;
the others stay as the copy has them. A keyless table cannot be kept: its events are inserts, and
the ones the copy holds already would be inserted twice.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import SchemaChangeError
from openmirror_nb._core.landing_zone.held_events import (
    HeldTable,
    batch_folder,
    read_held,
    release,
    save_held,
    temporary_folder,
)
from openmirror_nb._core.landing_zone.push_state import StreamBatch
from openmirror_nb._core.landing_zone.reseed_journal import read_reseed
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.storage.local import fetch_folder, file_uri
from openmirror_nb._core.streaming.topics import KAFKA_COLUMNS, TopicTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

log = logging.getLogger("openmirror_nb")
KEPT = "_om_kept"  # true for a message kept from an earlier batch and applied in this one


@dataclass
class Holding:
    """One batch's view of its query's stopped tables (by table identity): ``held``, whose
    messages this batch keeps too, and ``adopting``, whose kept messages it applies."""

    storage: Storage
    batch: StreamBatch
    held: dict[str, HeldTable] = field(default_factory=dict)
    adopting: dict[str, HeldTable] = field(default_factory=dict)
    local_dir: str | None = None  # where kept messages are read from, if Spark cannot read the store

    @classmethod
    def begin(cls, storage: Storage, batch: StreamBatch) -> Holding:
        """The query's stopped tables, each told for ``batch``: still stopped; reseeded (its
        kept messages are applied now: the record says by which batch); or applied already by an
        earlier batch the table holds (its record and messages go)."""
        out = cls(storage, batch)
        for record in read_held(storage, batch.query):
            home = TableFolder(storage, TableRef.parse(record.table))
            state = home.read_state()
            reseeded = state is not None and state.incarnation != record.incarnation
            applied = state.applied(batch.query) if state else None
            if (
                reseeded
                and record.adopting is not None
                and applied is not None
                and applied >= record.adopting
            ):
                release(storage, record)  # that batch applied them; a crash came before this
                continue
            identity = TableRef.parse(record.table).identity
            if reseeded and read_reseed(home) is None:  # a reseed still running has not verified
                if record.adopting != batch.batch:
                    record = replace(record, adopting=batch.batch)
                    save_held(storage, record)
                out.adopting[identity] = record
            else:
                out.held[identity] = record
        return out

    def holds(self, route: TopicTable) -> HeldTable | None:
        """``route``'s table's record if it is stopped (its messages are kept, not applied)."""
        return self.held.get(route.table.identity)

    def held_topics(self) -> set[str]:
        return {r.topic for r in self.held.values()}

    def widen_to(self, route: TopicTable) -> dict[str, DataType] | None:
        """The reseeded table's column types, for a table whose kept messages this batch applies."""
        import json

        from pyspark.sql.types import StructType

        if route.table.identity not in self.adopting:
            return None
        state = TableFolder(self.storage, route.table).read_state()
        if state is None:
            return None
        return {f.name: f.dataType for f in StructType.fromJson(json.loads(state.schema)).fields}

    def with_kept(self, df: DataFrame) -> DataFrame:
        """``df`` (the batch's Kafka columns) and the kept messages of the tables adopted now,
        told apart by ``KEPT``."""
        from pyspark.sql import functions as F

        out = df.withColumn(KEPT, F.lit(False))
        for record in self.adopting.values():
            if self.local_dir is None and not self.storage.SPARK_WRITABLE:
                self.local_dir = tempfile.mkdtemp(prefix="openmirror-kept-")
            uris = [
                fetch_folder(
                    self.storage, batch_folder(record.query, record.table, b), local_dir=self.local_dir
                )
                for b in sorted(record.batches)
            ]
            if uris:
                found = df.sparkSession.read.parquet(*uris)
                # kept without their Kafka time: NULL there, so only the batch's own count
                kept = found.select(
                    *(
                        F.col(c) if c in found.columns else F.lit(None).cast(df.schema[c].dataType).alias(c)
                        for c in df.columns
                    )
                )
                out = out.unionByName(kept.withColumn(KEPT, F.lit(True)))
        return out

    def keep(self, parsed: DataFrame, route: TopicTable, *, reason: str, keyed: bool) -> None:
        """Keep ``route``'s messages of this batch (not those kept before), and record them."""
        from pyspark.sql import functions as F

        table, query, batch = str(route.table), self.batch.query, self.batch.batch
        if not keyed:
            raise SchemaChangeError(
                f"{reason} Table {table} has no key, so its events cannot wait for the reseed and be "
                f"applied after it (inserts the reloaded copy holds would be inserted twice); nothing of "
                f"batch {batch} was published: reseed it, then restart the stream past the change."
            )
        rows = parsed.where((F.col("topic") == route.topic) & ~F.col(KEPT)).select(*KAFKA_COLUMNS)
        final = batch_folder(query, table, batch)
        if not self.storage.exists(final):  # a replayed batch finds its messages kept already
            self._write(rows, temporary_folder(query, table), final)
        home = TableFolder(self.storage, route.table)
        state = home.read_state()
        incarnation = state.incarnation if state else None
        before = self.held.get(route.table.identity) or self.adopting.pop(route.table.identity, None)
        events = rows.count()
        record = (
            before.kept(batch, events, incarnation=incarnation, reason=reason)
            if before is not None
            else HeldTable(
                table, route.topic, query, incarnation, reason, batch, time.time(), {batch: events}
            )
        )
        save_held(self.storage, record)
        self.held[route.table.identity] = record
        log.warning(
            "Table %s stopped at batch %s: its %s event(s) of this batch are kept until it is reseeded, "
            "and the other tables go on. %s",
            table,
            batch,
            f"{events:,}",
            reason,
        )

    def _write(self, rows: DataFrame, temporary: str, final: str) -> None:
        """The messages as Parquet under ``temporary``, then moved to ``final`` in one step."""
        if self.storage.SPARK_WRITABLE:
            rows.write.mode("errorifexists").parquet(self.storage.uri(temporary))
        else:
            local = Path(tempfile.mkdtemp(prefix="openmirror-keep-"))
            try:
                rows.write.parquet(file_uri(local / "out"))
                files = [
                    p for p in (local / "out").iterdir() if p.is_file() and not p.name.startswith((".", "_"))
                ]
                self.storage.upload_files([(str(p), f"{temporary}/{p.name}") for p in files])
            finally:
                shutil.rmtree(local, ignore_errors=True)
        self.storage.move_folder(temporary, final)

    def applied(self) -> None:
        """The batch applied every adopted table's kept messages: their records and messages go."""
        for record in self.adopting.values():
            release(self.storage, record)
        self.adopting.clear()

    def close(self) -> None:
        if self.local_dir is not None:
            shutil.rmtree(self.local_dir, ignore_errors=True)
