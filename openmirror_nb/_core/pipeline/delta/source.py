"""One Delta table as ``db.sync_delta`` reads it: through Spark's own Delta reader (a session with
Delta, as in Fabric) or through ``pipeline.delta`` (the log by ``deltalake``, the files by Spark).

Both give the same rows, the same change data feed and the same columns with their physical
names; which one ran is said in ``SyncResult.reader`` and the log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError, NotSupportedError, SourceError, user_line
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.model import DeltaReader
from openmirror_nb._core.pipeline.delta.columns import FIELD_ID_READ, TableColumns
from openmirror_nb._core.pipeline.delta.gone import FeedGone
from openmirror_nb._core.pipeline.delta.reader import read_changes, snapshot_of
from openmirror_nb._core.pipeline.delta.schema_check import SourceSchema, held_columns, source_columns
from openmirror_nb._core.pipeline.delta.spark_log import columns_at
from openmirror_nb._core.pipeline.delta.table_log import (
    Commit,
    TableRoot,
    Version,
    open_version,
    read_commits,
    read_versions,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("openmirror_nb")
READERS = ("auto", "spark", "deltalake")
FEED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
# Delta's Spark reader of timestamps written by writers other than Spark: a Delta table's values
# are proleptic Gregorian (PROTOCOL.md, "Primitive Types"), which Spark 3.5's default refuses
# before 1900 (it raises, where Spark 4 reads them as they are).
# Spark's Delta reader's words for a path that holds no Delta table, and for a feature it lacks.
NOT_A_TABLE = (
    "DELTA_MISSING_DELTA_TABLE",
    "DELTA_TABLE_ONLY_OPERATION",
    "DELTA_TABLE_NOT_FOUND",
    "PATH_NOT_FOUND",
)
_UNSUPPORTED = re.compile(r'unsupported by Delta Lake "?([0-9A-Za-z.-]+)"?: ([A-Za-z0-9_, ]+)')
REBASE = ("spark.sql.parquet.datetimeRebaseModeInRead", "spark.sql.parquet.int96RebaseModeInRead")


@dataclass(frozen=True)
class DeltaSource:
    """One Delta table and the reader that reads it (``reader``: ``"spark"`` or ``"deltalake"``)."""

    uri: str
    spark: SparkSession
    reader: DeltaReader
    _versions: dict[int | None, Version] = field(default_factory=dict, compare=False, repr=False)
    _columns: dict[int, TableColumns] = field(default_factory=dict, compare=False, repr=False)
    _stamps: dict[int, datetime] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def open(cls, uri: str, spark: SparkSession, reader: str = "auto") -> DeltaSource:
        """``reader``: ``"auto"`` (Spark's where the session has Delta), ``"spark"`` or ``"deltalake"``."""
        if not isinstance(uri, str) or not uri:
            raise ConfigError(f"sync_delta source {uri!r} is not a Delta table path or URI.")
        if reader not in READERS:
            raise ConfigError(f"reader={reader!r} is not a Delta reader; use 'auto', 'spark' or 'deltalake'.")
        has_delta = spark_has_delta(spark)
        if reader == "spark" and not has_delta:
            raise ConfigError(
                "reader='spark' needs a Spark session with Delta (Fabric's has it; locally, start it "
                "with Delta's jars: OPENMIRROR_SPARK_JARS); use reader='deltalake' or 'auto'."
            )
        chosen: DeltaReader = (
            "spark" if reader == "spark" or (reader == "auto" and has_delta) else "deltalake"
        )
        for key in REBASE:
            if str(spark.conf.get(key)).upper() == "EXCEPTION":
                spark.conf.set(key, "CORRECTED")  # frames are read lazily: set for the session
        log.info(
            "Delta table %s: read with %s",
            uri,
            "Spark's Delta reader" if chosen == "spark" else "deltalake for the log and Spark for the files",
        )
        return cls(uri, spark, chosen)

    @property
    def spark_delta(self) -> bool:
        return self.reader == "spark"

    def version(self) -> int:
        if self.spark_delta:
            try:
                row = self.spark.sql(f"DESCRIBE HISTORY delta.{quoted(self.uri)} LIMIT 1").collect()[0]
            except Exception as exc:
                raise refused(exc, self.uri) from None
            return int(row["version"])
        latest = self._at(None)
        self._versions.setdefault(latest.number, latest)
        return latest.number

    def columns(self, version: int) -> TableColumns:
        """The columns at ``version`` with their physical names, from the log."""
        if not self.spark_delta:
            return self._at(version).columns
        if version not in self._columns:
            self._columns[version] = columns_at(self.spark, self.uri, version)
        return self._columns[version]

    def snapshot(self, version: int) -> DataFrame:
        if self.spark_delta:
            self._field_ids(self.columns(version))
            return self.spark.read.format("delta").option("versionAsOf", version).load(self.uri)
        return snapshot_of(self.spark, self._read(version))

    def changes(self, after: int, upto: int) -> DataFrame:
        """The change data feed of versions ``after + 1 .. upto``, in the columns of ``upto``.

        Raises ``FeedGone`` (this reader) or Delta's own errors (Spark's) where there is none; a
        vacuumed file may be found only when the frame is read.
        """
        if not self.spark_delta:
            try:
                start = self._at(after)
            except ConfigError as exc:  # deltalake finds no log of a version before the latest
                raise FeedGone(f"their log was cleaned up (version {after} is no longer in it)") from exc
            last = self._read(upto)
            return read_changes(
                self.spark, start, last, self._kept(read_commits(self.spark, last.root, after + 1, upto))
            )
        # Spark's reader refuses a range across a column mapping schema change (a drop, a rename):
        # the range is read in stretches of one schema each, every column found by physical name.
        commits = self._kept(read_commits(self.spark, TableRoot.of(self.uri), after + 1, upto))
        end = self._field_ids(self.columns(upto))
        stretches, schema, first = [], None, after + 1
        for commit in commits:
            for meta in commit.of("metaData"):
                if meta.get("schemaString") != schema and commit.version > first:
                    stretches.append((first, commit.version - 1))
                    first = commit.version
                schema = meta.get("schemaString")
        stretches.append((first, upto))
        frames = [self._feed(a, b, end, len(stretches) > 1) for a, b in stretches]
        out = frames[0]
        for frame in frames[1:]:
            out = out.unionByName(frame)
        return out

    def commit_times(self, versions: Iterable[int]) -> dict[int, datetime]:
        """When each of ``versions`` was committed (``Commit.timestamp``: its in-commit timestamp,
        else its log file's modification time), from the commits ``changes`` read already, else
        from those versions' log files alone (one Spark job); raises when one is gone."""
        wanted = set(versions)
        missing = wanted - set(self._stamps)
        if missing:
            root = TableRoot.of(self.uri) if self.spark_delta else self._at(None).root
            self._kept(read_versions(self.spark, root, missing))
        return {v: self._stamps[v] for v in wanted}

    def _kept(self, commits: list[Commit]) -> list[Commit]:
        self._stamps.update((c.version, c.timestamp) for c in commits)
        return commits

    def schema_at(self, version: int, *, held: int | None, held_at: Any = ()) -> SourceSchema:
        """The source's schema at ``version`` and its columns then, against the columns at
        ``held`` (``held_at``: those the table's state kept; else read from the log)."""
        now = self.columns(version)
        before = held_columns(held_at, lambda: self.columns(held) if held is not None else None)
        frame_schema = self.snapshot(version).schema
        return SourceSchema.of(frame_schema, source_columns(now), before, mapped=now.mode != "none")

    def _feed(self, first: int, last: int, end: TableColumns, mapped: bool) -> DataFrame:
        from pyspark.sql import functions as F

        frame = (
            self.spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", first)
            .option("endingVersion", last)
            .load(self.uri)
        )
        if not mapped:
            return frame
        here = {p: n for n, p, _ in source_columns(self.columns(last))}
        kinds = {f.name: f.dataType for f in end.logical().fields}
        picked = []
        for name, physical, _ in source_columns(end):
            found = here.get(physical)
            column = F.col(quoted(found)) if found is not None else F.lit(None).cast(kinds[name])
            picked.append(column.alias(name))
        return frame.select(*picked, *FEED_COLUMNS)

    def _read(self, version: int) -> Version:
        at = self._at(version)
        self._field_ids(at.columns)
        return at

    def _field_ids(self, columns: TableColumns) -> TableColumns:
        if columns.mode == "id":
            # Spark matches Parquet columns by field id only with this on (Delta 3.2's reader
            # refuses an id-mapped table without it); it changes no read whose schema has no
            # field ids. Set for the session: frames are read lazily.
            self.spark.conf.set(FIELD_ID_READ, "true")
            if self.spark_delta:
                # Delta 3.2 checks the conf of the JVM thread's active session, which a thread
                # may have inherited from a push's private clone of the session: make it ours.
                jvm: Any = self.spark._jvm
                jvm.org.apache.spark.sql.SparkSession.setActiveSession(self.spark._jsparkSession)
        return columns

    def _at(self, version: int | None) -> Version:
        if version not in self._versions:
            self._versions[version] = open_version(self.uri, version)
        return self._versions[version]


def spark_has_delta(spark: SparkSession) -> bool:
    """True when the session reads Delta with Spark's own reader (Delta's SQL extension is on, as
    in Fabric and Databricks sessions; a plain local session has none)."""
    extensions = spark.conf.get("spark.sql.extensions", None) or ""
    return "delta" in extensions.lower()


def refused(exc: Exception, uri: str) -> Exception:
    """Spark's Delta reader's refusal to open ``uri`` as one line: not a Delta table, or a reader
    feature this Delta cannot read; any other failure as a ``SourceError``."""
    line, text = user_line(exc), " ".join(str(exc).split())
    if any(c in line for c in NOT_A_TABLE):
        return ConfigError(
            f"{uri!r} is not a Delta table ({line}); give the folder that holds its _delta_log."
        )
    if "DELTA_UNSUPPORTED_FEATURES_FOR_READ" in line:
        found = _UNSUPPORTED.search(text)
        what = (
            f"reader feature(s) {found.group(2)}, which Delta {found.group(1)}"
            if found
            else "a reader feature the Delta"
        )
        return NotSupportedError(
            f"Delta table {uri} uses {what} of this Spark session cannot read; sync it from a session "
            "with a newer Delta (a Fabric notebook of the newest runtime), or read it yourself and "
            "db.push(df, table=..., keys=[...])."
        )
    return SourceError(f"Delta table {uri} could not be read: {line}")
