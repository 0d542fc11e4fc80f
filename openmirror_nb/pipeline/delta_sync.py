"""``db.sync_delta``: keep a mirrored table in step with a Delta table, version by version.

The first sync publishes the source's current version as a snapshot; each later one publishes
the change data feed since the version the table holds, and the new version is committed in the
same push state as the files (``PushState.source_version``), so a crash can neither skip nor
repeat a version. A source without a change data feed over that range — the feed was never
enabled, or the versions were vacuumed or their log cleaned up — is synced with a snapshot diff
instead, and the result says why.

The source is read with Spark's Delta reader where the session has Delta (Fabric, Databricks),
else with ``deltalake`` (here), through ``arrow_to_spark``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from openmirror_nb.errors import ConfigError, MissingDependencyError
from openmirror_nb.landing_zone.lifecycle import settle
from openmirror_nb.landing_zone.table_folder import TableFolder
from openmirror_nb.model import SyncResult
from openmirror_nb.pipeline.arrow_input import arrow_to_spark
from openmirror_nb.pipeline.push import run_push
from openmirror_nb.pipeline.request import PushRequest
from openmirror_nb.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CDF_OP = "_change_type"


@dataclass(frozen=True)
class DeltaSource:
    """One Delta table, read through Spark's Delta reader or ``deltalake``."""

    uri: str
    spark: SparkSession
    spark_delta: bool

    @classmethod
    def open(cls, uri: str, spark: SparkSession) -> DeltaSource:
        if not isinstance(uri, str) or not uri:
            raise ConfigError(f"sync_delta source {uri!r} is not a Delta table path or URI.")
        return cls(uri, spark, _spark_reads_delta(spark))

    def version(self) -> int:
        if self.spark_delta:
            row = self.spark.sql(f"DESCRIBE HISTORY delta.`{self.uri}` LIMIT 1").collect()[0]
            return int(row["version"])
        return int(_delta_table(self.uri).version())

    def snapshot(self, version: int) -> DataFrame:
        if self.spark_delta:
            return self.spark.read.format("delta").option("versionAsOf", version).load(self.uri)
        table = _delta_table(self.uri)
        table.load_as_version(version)
        return arrow_to_spark(table.to_pyarrow_table(), spark=self.spark)

    def changes(self, after: int, upto: int) -> DataFrame:
        """The change data feed of versions ``after + 1 .. upto``; raises when there is none.

        Read eagerly with ``deltalake`` so that a vacuumed range fails here, not mid-push.
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
        import pyarrow as pa

        # deltalake would make up a feed from file rewrites where none was recorded: check
        end = _delta_table(self.uri, upto)
        start = end if after + 1 == upto else _delta_table(self.uri, after + 1)
        for version, table in ((after + 1, start), (upto, end)):
            config = table.metadata().configuration
            if str(config.get("delta.enableChangeDataFeed", "false")).lower() != "true":
                raise ConfigError(f"the change data feed is not enabled at version {version} of {self.uri}")
        stream = end.load_cdf(starting_version=after + 1, ending_version=upto)
        return arrow_to_spark(pa.RecordBatchReader.from_stream(stream).read_all(), spark=self.spark)


def sync_delta(storage: Storage, source: DeltaSource, request: PushRequest) -> SyncResult:
    """Bring ``request.table`` to the source's current version (see the module docstring).

    ``request`` carries the push options; its mode, convention and source mark are set here.
    """
    home = TableFolder(storage, request.table)
    with home.lock(timeout=request.lock_timeout):
        settle(home)  # a sync that died after deciding its push is finished first: no repeat
        state = home.read_state()
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


def _spark_reads_delta(spark: SparkSession) -> bool:
    # Fabric and Databricks sessions carry Delta's SQL extension; plain local Spark does not.
    extensions = spark.conf.get("spark.sql.extensions", None) or ""
    return "delta" in extensions.lower()


def _delta_table(uri: str, version: int | None = None) -> Any:
    try:
        from deltalake import DeltaTable
    except ImportError:
        raise MissingDependencyError(
            "Reading a Delta table without Spark's Delta reader needs deltalake; "
            "pip install 'openmirror-nb[spark]'."
        ) from None
    return DeltaTable(uri, version=version)


def feed_problem(exc: Exception) -> str:
    """One line on why the change data feed could not be read, for ``SyncResult.fallback``."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"
