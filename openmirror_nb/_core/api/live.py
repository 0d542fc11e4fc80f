"""A source plan's ``cdc`` tables mirrored continuously: ``db.mirror_plan`` takes a PostgreSQL
database from nothing to live (checks, first loads, then Debezium's change stream), and the
connector's configuration and the checks it runs on their own (``db.cdc_connector``,
``db.check_cdc``)."""

from __future__ import annotations

import html
import logging
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from openmirror_nb._core.api.kafka import KafkaStreams
from openmirror_nb._core.api.running import Running
from openmirror_nb._core.errors import ConfigError, SourceError
from openmirror_nb._core.model import DEFAULT_ROWS_PER_FILE
from openmirror_nb._core.progress import Progress
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.streaming.positions import Position, read_positions
from openmirror_nb._core.streaming.stream import MirrorStream

log = logging.getLogger("openmirror_nb")

if TYPE_CHECKING:
    from openmirror_nb._core.sources import SourcePlan
    from openmirror_nb._core.sources.pg_cdc import Cdc, CdcCheck, ConnectorConfig
    from openmirror_nb._core.sources.run_result import PlanRun
    from openmirror_nb._core.streaming.kafka_source import EventHubs, Kafka


@dataclass
class LivePlan:
    """A plan's ``cdc`` tables, loaded and streaming.

    Attributes:
        loaded: The run that gave each keyed table its first load (a table mirrored already, or
            without keys, loads nothing).
        check: What the checks of the source found (its warnings did not stop the start).
        stream: The stream applying Debezium's changes to every table.
        topics: Per topic, the table its events go to.
        storage: The landing zone, where the stream records the positions it applied.
    """

    loaded: PlanRun
    check: CdcCheck
    stream: MirrorStream
    topics: dict[str, str]
    storage: Storage

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait until the stream ends (``available_now``: once what arrived is applied), or
        ``timeout`` seconds; its error, if one stopped it, is raised."""
        return self.stream.await_termination(timeout)

    def stop(self) -> None:
        """Stop the stream (``MirrorStream.stop``: a batch it stops is applied again at the next start)."""
        self.stream.stop()

    def applied(self) -> dict[str, Position]:
        """Per topic, the highest source position the stream applied to every table: PostgreSQL's
        (last commit LSN, change LSN, rank), as committed after each batch."""
        return read_positions(self.storage, str(self.stream.query.id))

    def applied_lsn(self) -> int | None:
        """The newest change LSN the stream applied, over every topic (the heartbeat table's too)."""
        found = [p[1] for p in self.applied().values()]
        return max(found) if found else None

    def __repr__(self) -> str:
        return f"LivePlan({len(self.topics)} topics, {self.stream!r})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(t)}</code></td><td>{html.escape(table)}</td></tr>"
            for t, table in sorted(self.topics.items())
        )
        warnings = "".join(f"<li>{html.escape(w)}</li>" for w in self.check.warnings)
        return (
            f"<div><b>{html.escape(repr(self.stream))}</b><table><tr><th>topic</th><th>table</th></tr>"
            f"{rows}</table>{f'<ul>{warnings}</ul>' if warnings else ''}</div>"
        )


class LivePlans(KafkaStreams, Running):
    """The handle's continuous mirrors of source plans (see ``MirroredDatabase``)."""

    def check_cdc(self, plan: SourcePlan, *, cdc: Cdc | None = None) -> CdcCheck:
        """Check the plan's PostgreSQL database for Debezium's connector, over JDBC, writing nothing:
        ``wal_level``, the REPLICATION role, the slot and the publication, each table's replica
        identity, the heartbeat table, and the WAL the slot retains.

        Returns:
            CdcCheck: its ``problems`` (each one line with the fix: ``db.mirror_plan`` does not
            start while there is one) and ``warnings``.

        Example:
            >>> db.check_cdc(plan, cdc=om.Cdc(heartbeat_table="public.openmirror_heartbeat")).problems
        """
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.sources.cdc_plan import cdc_entries, cdc_source
        from openmirror_nb._core.sources.pg_cdc import Cdc, check_cdc

        cdc = cdc or Cdc()
        spark = get_spark()
        entries = cdc_entries(spark, plan, cdc)
        return check_cdc(spark, cdc_source(plan), [e.table for e in entries], cdc)

    def cdc_connector(
        self, plan: SourcePlan, *, cdc: Cdc | None = None, password_ref: str | None = None
    ) -> ConnectorConfig:
        """The configuration of Debezium's PostgreSQL connector for the plan's ``cdc`` tables, as
        Kafka Connect's REST API takes it (``POST /connectors``): ``plugin.name=pgoutput``, the
        tables, their keys, Debezium's snapshot for the keyless ones only, heartbeats. The password
        is a reference the worker resolves (``password_ref``, else ``${env:NAME}`` of the source's
        ``password_env``), never the value; ``om.worker_settings(config)`` gives the worker's lines.

        Example:
            >>> import json; print(json.dumps(db.cdc_connector(plan), indent=2))
        """
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.sources.cdc_plan import cdc_entries, cdc_source
        from openmirror_nb._core.sources.pg_cdc import Cdc, connector_config

        cdc = cdc or Cdc()
        entries = cdc_entries(get_spark(), plan, cdc)
        return connector_config(cdc_source(plan), [e.table for e in entries], cdc, password_ref=password_ref)

    def mirror_plan(
        self,
        plan: SourcePlan,
        *,
        kafka: Kafka | EventHubs,
        checkpoint: str | os.PathLike[str],
        cdc: Cdc | None = None,
        trigger: str = "available_now",
        max_offsets_per_trigger: int | None = None,
        rows_per_file: int = DEFAULT_ROWS_PER_FILE,
        parallel: int = 4,
        progress: Progress = None,
    ) -> LivePlan:
        """Mirror the plan's ``cdc`` tables of a PostgreSQL database continuously: from nothing to
        live, and on from where the checkpoint stands.

        1. The database is checked over JDBC (``db.check_cdc``); a problem stops the start, in one
           line with its fix.
        2. The replication slot must exist: Debezium's connector makes it on its first start (run it
           with ``db.cdc_connector(plan)``'s configuration first), taking the snapshot of the tables
           without keys with it.
        3. Each keyed table without data gets its first load over JDBC (``db.run_plan``), after the
           slot: a change the load misses is in the slot.
        4. One stream applies every table's events from the slot's start (``starting_offsets``:
           earliest), each into its plan entry's table, as upserts and deletes (a keyless table's as
           inserts); a table skips the events at or below the source position it holds, which its
           batches commit with its files, so the events Kafka Connect sends again after a crash are
           applied once.
        5. While it runs, the WAL the slot retains and the server's clock against this machine's
           (``clock_timestamp()``, within half a round trip) are measured over JDBC as it starts and
           after a batch at most once a minute; each file's commit times carry that skew
           (``db.status()``'s freshness), unknown when it could not be measured.

        Args:
            plan: From ``db.plan_sources(om.Jdbc(...), strategy="cdc")`` or ``om.load_plan``.
            kafka: ``om.Kafka(bootstrap_servers=...)`` or ``om.EventHubs(namespace=..., ...)`` the
                connector writes to; its topics are the plan's (``Cdc.topic``), whatever it names.
            checkpoint: The stream's checkpoint folder.
            cdc: The connector's names (topic prefix, slot, publication, heartbeat table).
            trigger: ``"available_now"`` (a scheduled job), or an interval such as ``"30 seconds"``.
            max_offsets_per_trigger: At most this many messages a batch (default: all there are).
            rows_per_file: At most this many rows in one published file.
            parallel: Tables loaded, and a batch's tables applied, at a time.
            progress: As ``db.run_plan``'s and ``db.mirror_kafka``'s.

        Returns:
            LivePlan: the first loads' run, the checks' warnings and the stream.

        Raises:
            SourceError: the database failed a check, the slot does not exist yet, or a first load
                failed (nothing streams then).
            ConfigError: the plan has no ``cdc`` table, or one with a problem.

        Example:
            >>> live = db.mirror_plan(plan, kafka=om.Kafka(bootstrap_servers="broker:9092"),
            ...                       checkpoint="Files/checkpoints/erp", trigger="1 minute")
        """
        from openmirror_nb._core.api.live_watch import SourceWatch, watch_slot
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.sources.cdc_plan import cdc_entries, cdc_source
        from openmirror_nb._core.sources.pg_cdc import Cdc, check_cdc
        from openmirror_nb._core.sources.pg_clock import measure_source
        from openmirror_nb._core.streaming.kafka_source import EventHubs, Kafka

        if not isinstance(kafka, Kafka | EventHubs):
            raise ConfigError(f"kafka= takes om.Kafka(...) or om.EventHubs(...), not {type(kafka).__name__}.")
        cdc = cdc or Cdc()
        spark = get_spark()
        entries = cdc_entries(spark, plan, cdc)
        source = cdc_source(plan)
        check = check_cdc(spark, source, [e.table for e in entries], cdc)
        if check.problems:
            more = (
                f" ({len(check.problems) - 1} more: db.check_cdc(plan) lists them)"
                if len(check.problems) > 1
                else ""
            )
            raise SourceError(f"{check.problems[0]}{more}")
        if not check.slot_exists:
            raise SourceError(
                f"Replication slot {cdc.slot} does not exist yet: start Debezium's connector with the "
                "configuration db.cdc_connector(plan) writes (it makes the slot, and the snapshot of the "
                "tables without keys), then run db.mirror_plan again."
            )
        chosen = {e.planned.source for e in entries}
        loaded = self.run_plan(
            replace(plan, tables=[t for t in plan.tables if t.source in chosen]),
            parallel=parallel,
            progress=progress,
        )
        if loaded.failed:
            first = loaded.failed[0]
            raise SourceError(
                f"The first load of {first.table} failed ({first.reason}); nothing streams until every "
                "table is loaded: fix it and run db.mirror_plan again (loaded tables are not loaded twice)."
            )
        topics = {e.topic: e.planned.table for e in entries}
        # measured before the stream, whose first batches put the clock's skew in their pushes
        watch = SourceWatch(lambda: measure_source(spark, source, cdc.slot), cdc.slot)
        retained = watch.take()
        parts = cdc.heartbeat_parts
        markers = frozenset({cdc.topic(*parts)} if parts else set())
        stream = self._kafka_mirror(
            replace(kafka, topics=[*topics, *markers]),
            markers=markers,
            missing_ok=True,  # Debezium makes a table's topic at its first change
            clock=watch.clock,
            checkpoint=checkpoint,
            trigger=trigger,
            tables=topics,
            keys={e.planned.table: list(e.planned.keys) for e in entries if e.planned.keys},
            types={e.planned.table: dict(e.planned.types) for e in entries if e.planned.types},
            starting_offsets="earliest",
            max_offsets_per_trigger=max_offsets_per_trigger,
            rows_per_file=rows_per_file,
            parallel=parallel,
            progress=progress,
        )
        watch_slot(self.storage, stream, spark, watch=watch, cdc=cdc, retained=retained)
        return LivePlan(loaded, check, stream, topics, self.storage)
