"""``cdc``: a PostgreSQL table mirrored live, from its first load to Debezium's change stream
(``db.mirror_plan``).

A run of the plan (``db.run_plan``, and ``db.mirror_plan`` before its stream starts) gives a keyed
table its first load over JDBC, once: the replication slot exists by then, so every change the
load may miss is in the stream, which applies them from the slot's start as upserts and deletes.
From then on the stream alone writes the table; a run leaves it be. A table without keys (none in
the source's constraints) is not loaded here: Debezium's own snapshot, taken with the slot, is its
first load, and the stream inserts it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import PushResult
from openmirror_nb._core.sources import ranges
from openmirror_nb._core.sources.plan_strategy import PlanStrategy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.sources.plan import PlannedTable
    from openmirror_nb._core.sources.runner import Runner
    from openmirror_nb._core.sources.table import Source, SourceTable


class Cdc(PlanStrategy):
    """``cdc``: the first load over JDBC, then Debezium's changes (``db.mirror_plan``)."""

    keys = None  # the source's keys only; a keyless table is insert-only
    deletes = True
    feed = ()  # the stream applies Debezium's own operations

    def problems(
        self, empty: DataFrame, planned: PlannedTable, table: SourceTable, source: Source
    ) -> list[str]:
        """A source other than PostgreSQL over JDBC, which Debezium's connector here does not read."""
        if getattr(source, "kind", None) == "jdbc" and getattr(source, "subprotocol", None) == "postgresql":
            return []
        return [
            "cdc captures a PostgreSQL database with Debezium's connector, and this source is not one "
            "(om.Jdbc('jdbc:postgresql://...')); use snapshot"
        ]

    def push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> PushResult:
        """A keyed table's first load; nothing once the table is mirrored, or for a keyless one."""
        if not self.loads(run, planned):
            return PushResult(
                table=planned.table, mode="snapshot", sequence_numbers=(), rows={}, bytes=0, seconds=0.0
            )
        return run.push(planned, ranges.split(run.source, planned, frame))

    def would_push(self, run: Runner, planned: PlannedTable, frame: DataFrame) -> str:
        """Whether a run would load the table, or leave it to the stream."""
        if not planned.keys:
            return "would load nothing: Debezium's snapshot is the first load of a table without keys"
        if not self.loads(run, planned):
            return "would load nothing: the stream (db.mirror_plan) keeps the table live"
        return f"would load {frame.count():,} rows, then the stream applies the changes since the slot"

    @staticmethod
    def loads(run: Runner, planned: PlannedTable) -> bool:
        """Whether a run gives ``planned`` its first load: it has keys and no push state yet."""
        return bool(planned.keys) and TableFolder.of(run.storage, planned.table).read_state() is None
