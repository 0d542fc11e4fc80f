"""``db.sync_delta``: keep a mirrored table in step with a Delta table, version by version.

The first sync publishes the source's current version as a snapshot; each later one publishes
the change data feed since the version the table holds, and the new version is committed in the
same push state as the files (``PushState.source_version``), so a crash can neither skip nor
repeat a version. A source without a change data feed over that range — the feed was never
enabled, or the versions were vacuumed or their log cleaned up — is synced with a snapshot diff
instead, and the result says why. A schema change the mirror cannot absorb stops the sync
before anything is published, with the reseed to run (``pipeline.delta.schema_check``).

The source is read with Spark's Delta reader where the session has Delta (Fabric, Databricks),
else by ``pipeline.delta``: the log through ``deltalake``, the Parquet files through Spark.
Neither pulls the table or the feed into the driver.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError, user_line
from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import SyncResult
from openmirror_nb._core.pipeline.delta.columns import FIELD_ID_READ
from openmirror_nb._core.pipeline.delta.reader import read_changes, snapshot_of
from openmirror_nb._core.pipeline.delta.schema_check import SourceSchema, check_source_schema
from openmirror_nb._core.pipeline.delta.table_log import Version, open_version
from openmirror_nb._core.pipeline.push import run_push
from openmirror_nb._core.pipeline.request import PushRequest
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CDF_OP = "_change_type"
log = logging.getLogger("openmirror_nb")


@dataclass(frozen=True)
class DeltaSource:
    """One Delta table, read through Spark's Delta reader or ``pipeline.delta``."""

    uri: str
    spark: SparkSession
    spark_delta: bool
    _versions: dict[int | None, Version] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def open(cls, uri: str, spark: SparkSession) -> DeltaSource:
        if not isinstance(uri, str) or not uri:
            raise ConfigError(f"sync_delta source {uri!r} is not a Delta table path or URI.")
        spark_delta = _spark_reads_delta(spark)
        log.info(
            "Delta table %s: read with %s",
            uri,
            "Spark's Delta reader (the session has Delta)"
            if spark_delta
            else "deltalake for the log and Spark for the files (the session has no Delta)",
        )
        return cls(uri, spark, spark_delta)

    def version(self) -> int:
        if self.spark_delta:
            row = self.spark.sql(f"DESCRIBE HISTORY delta.`{self.uri}` LIMIT 1").collect()[0]
            return int(row["version"])
        latest = self._at(None)
        self._versions.setdefault(latest.number, latest)
        return latest.number

    def snapshot(self, version: int) -> DataFrame:
        if self.spark_delta:
            return self.spark.read.format("delta").option("versionAsOf", version).load(self.uri)
        return snapshot_of(self.spark, self._read(version))

    def changes(self, after: int, upto: int) -> DataFrame:
        """The change data feed of versions ``after + 1 .. upto``; raises when there is none.

        Checked here, so that a vacuumed range fails now, not mid-push.
        """
        if self.spark_delta:
            feed = (
                self.spark.read.format("delta")
                .option("readChangeFeed", "true")
                .option("startingVersion", after + 1)
                .option("endingVersion", upto)
                .load(self.uri)
            )
            feed.limit(1).collect()  # a missing range fails now, not in the push's job
            return feed
        return read_changes(self.spark, self._at(after), self._read(upto))

    def schema_at(self, version: int, *, held: int | None) -> SourceSchema:
        """The source's schema at ``version`` and its renames since ``held`` (see
        ``SourceSchema``)."""
        if self.spark_delta:  # Spark's Delta reader hides column mapping: renames are guessed
            return SourceSchema(self.snapshot(version).schema, None, True)
        now = self._at(version).columns
        try:
            before = self._at(held).columns if held is not None else None
        except Exception:  # that version's log is gone: renames are guessed
            before = None
        renames = None
        if before is not None:
            old = {before.physical_name(f["name"]): f["name"] for f in before.fields}
            new = {now.physical_name(f["name"]): f["name"] for f in now.fields}
            renames = {old[p]: n for p, n in new.items() if p in old and old[p] != n}
        return SourceSchema(now.logical(), renames, now.mode != "none")

    def _read(self, version: int) -> Version:
        at = self._at(version)
        if at.columns.mode == "id":
            # Spark matches Parquet columns by field id only with this on; it changes no read
            # whose schema has no field ids. Set for the session: frames are read lazily.
            self.spark.conf.set(FIELD_ID_READ, "true")
        return at

    def _at(self, version: int | None) -> Version:
        if version not in self._versions:
            self._versions[version] = open_version(self.uri, version)
        return self._versions[version]


def sync_delta(storage: Storage, source: DeltaSource, request: PushRequest) -> SyncResult:
    """Bring ``request.table`` to the source's current version (see the module docstring).

    ``request`` carries the push options; its mode, convention and source mark are set here.
    """
    home = TableFolder(storage, request.table)
    with home.lock(timeout=request.lock_timeout):
        settle(home)  # a sync that died after deciding its push is finished first: no repeat
        state = home.read_state()
        meta = home.read_metadata()
    held = state.source_version if state and state.source == source.uri else None
    now = source.version()
    name = str(request.table)
    if held is not None and now == held:
        return SyncResult(name, source.uri, held, now, "none")
    if held is not None and now < held:
        raise ConfigError(
            f"{source.uri} is at version {now}, before version {held} that table {name} holds; "
            "was the source restored or replaced? Drop the table (db.drop) and sync again."
        )
    if state is not None:
        check_source_schema(
            source.schema_at(now, held=held),
            uri=source.uri,
            table=name,
            pushed=state.schema,
            keys=tuple(state.key_columns),
            delimited=bool(meta and meta.options.is_delimited),
        )
    fallback = None
    if held is not None:
        try:
            feed = source.changes(held, now)
        except Exception as exc:  # no feed over this range: a diff gets the table there too
            fallback = feed_problem(exc)
        else:
            changes = replace(
                request,
                mode="changes",
                convention="cdf",
                op_column=CDF_OP,
                source=(source.uri, now),
                source_after=held,
            )
            pushed = run_push(storage, feed, changes)
            return SyncResult(name, source.uri, held, now, "changes", push=pushed)
    snapshot = replace(
        request, source=(source.uri, now), source_after=state.source_version if state else None
    )
    pushed = run_push(storage, source.snapshot(now), snapshot)
    return SyncResult(name, source.uri, held, now, "snapshot", fallback, pushed)


def read_delta(source: str, *, version: int | None = None) -> DataFrame:
    """A Delta table (path or URI) as a Spark DataFrame, at ``version`` (default: the latest).

    Read by Spark's Delta reader where the session has Delta (Fabric), else by openmirror_nb's
    own (deletion vectors, column mapping, partitions, checkpoints; the rows stay on Spark).
    This is how a reseed of a table that ``sync_delta`` follows gets its data.

    Example:
        >>> df = om.read_delta("Tables/orders")
        >>> db.apply_schema_change(db.plan_schema_change("sales.orders", df), df, confirm="sales.orders")
    """
    from openmirror_nb._core.runtime import get_spark

    delta = DeltaSource.open(source, get_spark())
    return delta.snapshot(delta.version() if version is None else version)


def _spark_reads_delta(spark: SparkSession) -> bool:
    # Fabric and Databricks sessions carry Delta's SQL extension; plain local Spark does not.
    extensions = spark.conf.get("spark.sql.extensions", None) or ""
    return "delta" in extensions.lower()


def feed_problem(exc: Exception) -> str:
    """One line on why the change data feed could not be read, for ``SyncResult.fallback``."""
    return user_line(exc)
