"""Spark writes complete files into a staging folder, counting what the checks need as it writes.

Validation runs on what is staged, not on the source: a DataFrame backed by an expensive query
is computed once. The counts (rows, rows per marker, NULL keys) are observed metrics of the job
that writes the files, so no second job reads them back; nothing is collected to the driver
except those counts and the first few offending keys of a rejected push.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.model import ROW_MARKER, Compression, TableOptions
from openmirror_nb._core.pipeline.push import observed, write_session
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, DataFrameWriter, SparkSession
    from pyspark.sql.types import StructType

# part-<task>-<uuid>-c<file>.<ext>; the uuid itself can hold "-c<digits>", so match it exactly.
PART_NAME = r"^part-(\d+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-c(\d+)"
_PART = re.compile(PART_NAME)
_PLACE = "_om_partition"
# A push never changes the user's Spark session, not even while it runs (other cells and
# threads share it). What the files must hold is pinned per write instead:
# - Parquet timestamps are INT64 microseconds, adjusted to UTC (Spark's default is the deprecated
#   INT96), and dates and timestamps before 1582 are written in the proleptic calendar every other
#   reader uses (Spark 3.5's default refuses them; LEGACY would shift them). Spark has no per-write
#   option for either: the Parquet writer takes both from the SQL conf of the session that runs
#   the write. So the write runs in a private clone of the user's session that has them set
#   (``write_session.isolated``); where Spark cannot clone one, they are set for exactly the write
#   (``write_session.session_conf``).
# - Reading staged Parquet back needs no conf: files Spark 3+ wrote record their calendar in the
#   footer; the read options only pin files that do not.
# - INT64 micros are instants, so no Parquet value depends on the session time zone; text files
#   format and parse timestamps with an explicit UTC ``timeZone`` option.
_WRITE_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
}
_PARQUET_READ = {"datetimeRebaseMode": "CORRECTED", "int96RebaseMode": "CORRECTED"}
TIMESTAMP_TEXT = "yyyy-MM-dd HH:mm:ss.SSSSSS"
_COUNTS = "the row counts of the staged files"


@dataclass(frozen=True)
class StagedPart:
    """One staged file, in publication order."""

    path: str
    bytes: int


@dataclass(frozen=True)
class StagedStats:
    """What the staged files hold: rows, rows per marker, rows with a NULL key, and whether the
    first Spark partition was empty (its file is then empty: Spark writes that one file even
    without rows, and no file for any other empty partition)."""

    rows: int
    rows_by_marker: dict[int | None, int]
    null_key_rows: int = 0
    empty_first: bool = False
    # a fingerprint of the rows at their positions, when asked (pipeline.keystate.feed_state)
    fingerprint: int | None = None


def _text_options(options: TableOptions) -> dict[str, Any]:
    d = options.delimited
    return {
        "header": True,
        "sep": options.column_separator,
        "quote": d.quote or "\u0000",
        "escape": d.escape or "\u0000",
        "nullValue": d.null_value,
        "emptyValue": '""',
        "encoding": d.encoding,
        "lineSep": d.row_separator,
        "timestampFormat": TIMESTAMP_TEXT,
        "timestampNTZFormat": TIMESTAMP_TEXT,
        "dateFormat": "yyyy-MM-dd",
        "timeZone": "UTC",
    }


def write_parts(
    df: DataFrame,
    *,
    uri: str,
    options: TableOptions,
    compression: Compression,
    rows_per_file: int,
    metrics: Sequence[Column] = (),
    hidden: Sequence[str] = (),
) -> dict[str, int]:
    """Spark writes the DataFrame as complete files under ``uri`` (one job, no collect) and
    returns what that job counted: ``rows``, ``first_rows`` (rows of the first partition) and
    each of ``metrics`` (aggregates over the written rows, by their alias). Columns in ``hidden``
    are read by the metrics only: they are not written."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation()
    # the partition is taken in the stage that writes, so it is the file's task
    counted = [
        F.expr("count(1) AS rows"),
        rows_where(f"{_PLACE} = 0", "first_rows"),
        *metrics,
    ]
    placed = df.withColumn(_PLACE, F.spark_partition_id())
    # The observation is attached in the session that runs the write: from Spark 4.3 only the
    # executing session completes an observation (its ObservationManager is no longer a listener
    # that a clone inherits), so one attached before the clone would never be completed.
    isolated = None if options.is_delimited else write_session.isolated(placed, _WRITE_CONF)
    framed = (placed if isolated is None else isolated).observe(observation, *counted).drop(_PLACE, *hidden)
    if options.is_delimited:
        _writer(framed, rows_per_file).options(**_text_options(options)).csv(uri)
    elif isolated is not None:
        _writer(framed, rows_per_file).option("compression", compression).parquet(uri)
    else:
        # Kept only for a Spark without session clones (see _WRITE_CONF): bounded, then restored.
        with write_session.session_conf(df.sparkSession, _WRITE_CONF):
            _writer(framed, rows_per_file).option("compression", compression).parquet(uri)
    return observed.counts(observation, spark=df.sparkSession, what=_COUNTS)


def rows_where(cond: str, name: str) -> Column:
    """An aggregate, as SQL text (one call to the JVM): how many rows meet ``cond``."""
    from pyspark.sql import functions as F

    return F.expr(f"sum(CASE WHEN {cond} THEN 1 ELSE 0 END) AS {name}")


def marker_metrics(keys: tuple[str, ...], *, markers: Sequence[int]) -> list[Column]:
    """Rows with a NULL key and rows per marker (``marker_<m>``), for ``write_parts``."""
    return [
        rows_where(any_null(keys), "null_keys"),
        *(rows_where(f"{ROW_MARKER} = {m}", f"marker_{m}".replace("-", "_")) for m in markers),
    ]


def stats_of(seen: dict[str, int], *, markers: Sequence[int] = ()) -> StagedStats:
    """``StagedStats`` from the counts of ``write_parts`` (with ``marker_metrics`` if ``markers``)."""
    counted = {m: seen[f"marker_{m}".replace("-", "_")] for m in markers}
    by_marker: dict[int | None, int] = {m: n for m, n in counted.items() if n}
    if not markers:
        by_marker = {None: seen["rows"]}
    empty_first = seen["rows"] > 0 and seen["first_rows"] == 0
    return StagedStats(
        seen["rows"],
        by_marker,
        seen.get("null_keys", 0),
        empty_first=empty_first,
        fingerprint=seen.get("fingerprint"),
    )


def _writer(df: DataFrame, rows_per_file: int) -> DataFrameWriter:
    return df.write.mode("errorifexists").option("maxRecordsPerFile", rows_per_file)


def read_staged(spark: SparkSession, *, uri: str, schema: StructType, options: TableOptions) -> DataFrame:
    """Read staged files back with the schema they were written with."""
    reader = spark.read.schema(schema)
    if options.is_delimited:
        return reader.options(**_text_options(options)).csv(uri)
    return reader.options(**_PARQUET_READ).parquet(uri)


def any_null(keys: tuple[str, ...]) -> str:
    """SQL: true for a row with a NULL in any of ``keys``."""
    return " OR ".join(f"{quoted(k)} IS NULL" for k in keys) or "false"


def duplicate_keys(
    spark: SparkSession,
    *,
    uri: str,
    schema: StructType,
    options: TableOptions,
    keys: tuple[str, ...],
    limit: int = 6,
) -> list[tuple[Any, ...]]:
    """The first few key values that occur more than once in the staged files."""
    from pyspark.sql import functions as F

    staged = read_staged(spark, uri=uri, schema=schema, options=options)
    cols = [F.col(quoted(k)) for k in keys]
    dupes = staged.groupBy(*cols).count().where(F.col("count") > 1).limit(limit).collect()
    return [tuple(row[k] for k in keys) for row in dupes]


def part_order(name: str) -> tuple[int, int, str]:
    """Spark names parts ``part-<task>-<uuid>-c<n>``: task order, then file order within a task."""
    match = _PART.match(name)
    return (int(match.group(1)), int(match.group(2)), name) if match else (1 << 30, 0, name)


def list_parts(storage: Storage, folder: str, stats: StagedStats, *, keep_empty: bool) -> list[StagedPart]:
    """The staged data files in publication order; with no rows, none, or one if ``keep_empty``.

    Raises ``FileNotFoundError`` when there are none: Spark writes at least its first
    partition's file, so the folder was deleted (with the table folder, by hand).
    """
    parts = [
        StagedPart(f"{folder}/{e.name}", e.size)
        for e in storage.list_dir(folder)
        if not e.is_dir and e.name.startswith("part-")
    ]
    if not parts:
        raise FileNotFoundError(folder)
    parts.sort(key=lambda p: part_order(p.path.rsplit("/", 1)[-1]))
    if not stats.rows:
        return parts[:1] if keep_empty else []
    if stats.empty_first:
        return [p for p in parts if part_order(p.path.rsplit("/", 1)[-1])[:2] != (0, 0)]
    return parts


def compact(
    spark: SparkSession,
    *,
    src_uri: str,
    dst_uri: str,
    schema: StructType,
    options: TableOptions,
    compression: Compression,
    files: int,
    rows_per_file: int,
) -> dict[str, int]:
    """Rewrite many small staged files as ``files`` larger ones, each old file kept whole
    (``write_parts``'s counts)."""
    staged = read_staged(spark, uri=src_uri, schema=schema, options=options)
    return write_parts(
        staged.coalesce(files),
        uri=dst_uri,
        options=options,
        compression=compression,
        rows_per_file=rows_per_file,
    )
