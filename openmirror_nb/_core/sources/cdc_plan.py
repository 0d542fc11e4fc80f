"""The ``cdc`` tables of a source plan as the connector and its checks see them (``CdcTable``):
each planned table's schema and name in PostgreSQL, its mirrored keys and the source's primary
key, and the Kafka topic Debezium writes its changes to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.sources.jdbc import Jdbc
from openmirror_nb._core.sources.jdbc_meta import _connect, _primary_key
from openmirror_nb._core.sources.pg_cdc_config import Cdc, CdcTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from openmirror_nb._core.sources.plan import PlannedTable, SourcePlan

DEFAULT_SCHEMA = "public"  # PostgreSQL's, where om.Jdbc names none


@dataclass(frozen=True)
class CdcEntry:
    """One ``cdc`` table of a plan: the plan's entry, the connector's view of it, and its topic."""

    planned: PlannedTable
    table: CdcTable
    topic: str


def cdc_source(plan: SourcePlan) -> Jdbc:
    """The plan's source, if Debezium's PostgreSQL connector can capture it."""
    source = plan.source
    if not isinstance(source, Jdbc) or source.subprotocol != "postgresql":
        raise ConfigError(
            f"The plan's source {source!r} is not a PostgreSQL database over JDBC; the cdc strategy "
            "captures one with Debezium: plan om.Jdbc('jdbc:postgresql://...')."
        )
    return source


def cdc_entries(spark: SparkSession, plan: SourcePlan, cdc: Cdc) -> list[CdcEntry]:
    """The plan's enabled ``cdc`` tables but the heartbeat table, with the source's primary keys
    (one connection).

    Raises:
        ConfigError: the source is not PostgreSQL, no table is planned ``cdc``, or one has problems
            in the plan (the first, with its fix).
    """
    source = cdc_source(plan)
    schema = source.schema or DEFAULT_SCHEMA
    # the heartbeat table is the connector's: its events only move the stream's position
    beats = cdc.heartbeat_parts
    chosen = [t for t in plan.tables if t.strategy == "cdc" and t.enabled and (schema, t.source) != beats]
    if not chosen:
        raise ConfigError(
            "No enabled table of the plan has strategy cdc; plan them so, e.g. "
            "db.plan_sources(source, strategy='cdc'), or set strategy: cdc in the plan file."
        )
    troubled = next((t for t in chosen if t.problems), None)
    if troubled is not None:
        raise ConfigError(
            f"Table {troubled.source} of the plan has a problem: {troubled.problems[0]}; fix it and plan "
            "again (db.plan_sources(source, like=plan))."
        )
    connection = _connect(spark, source)
    try:
        meta = connection.getMetaData()
        keys = {t.source: _primary_key(meta, schema, t.source) for t in chosen}
    finally:
        connection.close()
    return [
        CdcEntry(t, CdcTable(schema, t.source, tuple(t.keys), keys[t.source]), cdc.topic(schema, t.source))
        for t in chosen
    ]
