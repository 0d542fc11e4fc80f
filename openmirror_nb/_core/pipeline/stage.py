"""Spark writes complete files into a staging folder, then reads back only what checks need.

Validation runs on the staged files, not the source: a DataFrame backed by an expensive query is
computed once, and key checks read just the key columns from columnar files. Nothing is
collected to the driver except per-file counts and the first few offending keys.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.model import ROW_MARKER, Compression, TableOptions
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.storage.local import FILE_SCHEME

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, DataFrameWriter, SparkSession
    from pyspark.sql.types import StructType

# part-<task>-<uuid>-c<file>.<ext>; the uuid itself can hold "-c<digits>", so match it exactly.
PART_NAME = r"^part-(\d+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-c(\d+)"
_PART = re.compile(PART_NAME)
# A push never changes the user's Spark session, not even while it runs (other cells and
# threads share it). What the files must hold is pinned per write instead:
# - Parquet timestamps are INT64 microseconds, adjusted to UTC (Spark's default is the deprecated
#   INT96), and dates and timestamps before 1582 are written in the proleptic calendar every other
#   reader uses (Spark 3.5's default refuses them; LEGACY would shift them). Spark has no per-write
#   option for either: the Parquet writer takes both from the SQL conf of the session that runs
#   the write. So the write runs in a private clone of the user's session that has them set
#   (``_isolated``); where Spark cannot clone one, they are set for exactly the write
#   (``session_conf``).
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


@dataclass(frozen=True)
class StagedPart:
    """One staged file, in publication order."""

    path: str
    rows: int
    bytes: int


@dataclass(frozen=True)
class StagedStats:
    """What the staged files hold: rows per file, rows per marker, rows with a NULL key."""

    rows_by_file: dict[str, int]
    rows_by_marker: dict[int | None, int]
    null_key_rows: int


# Confs ``session_conf`` holds set, per (session, key): [pushes inside, the user's value].
_HELD: dict[tuple[int, str], list[Any]] = {}
_HELD_LOCK = threading.Lock()


@contextmanager
def session_conf(spark: SparkSession, conf: dict[str, str]) -> Iterator[None]:
    """Set SQL confs session-wide for exactly the enclosed write, then put the user's back.

    Only the fallback of ``write_parts`` for a Spark that cannot clone a session: the user's
    other threads see ``conf`` while the write runs. Our own concurrent pushes share one set:
    the first in saves the user's values, the last out restores them (unset stays unset).
    """
    sid = id(spark)
    entered: list[str] = []
    try:
        with _HELD_LOCK:
            for key, value in conf.items():
                held = _HELD.get((sid, key))
                if held is None:
                    saved = spark.conf.get(key, None)
                    spark.conf.set(key, value)
                    _HELD[(sid, key)] = [1, saved]
                else:
                    held[0] += 1
                entered.append(key)
        yield
    finally:
        with _HELD_LOCK:
            for key in entered:
                held = _HELD[(sid, key)]
                held[0] -= 1
                if held[0] == 0:
                    del _HELD[(sid, key)]
                    if held[1] is None:
                        spark.conf.unset(key)
                    else:
                        spark.conf.set(key, held[1])


def _isolated(df: DataFrame, conf: dict[str, str]) -> DataFrame | None:
    """``df`` bound to a private clone of its session that has ``conf`` set, or ``None`` when
    this Spark cannot clone one (Spark Connect, or internals that moved).

    The clone copies the session's state (every SQL conf, so the query keeps its meaning) and
    shares its SparkContext and cache; ``conf`` is set on the clone only, so the user's session
    is never changed. ``cloneSession`` and ``Dataset.ofRows`` are ``private[sql]`` JVM APIs of
    classic Spark 3.5 and 4.x (the Dataset class moved to ``sql.classic`` in 4.0).
    """
    from pyspark.sql import DataFrame as Frame

    try:
        jdf: Any = df._jdf
        jvm: Any = df.sparkSession._jvm
        clone = jdf.sparkSession().cloneSession()
        for key, value in conf.items():
            clone.conf().set(key, value)
        dataset = functools.reduce(getattr, jdf.getClass().getName().split("."), jvm)
        frame = Frame(dataset.ofRows(clone, jdf.logicalPlan()), df.sparkSession)
    except Exception:  # an internal API: any failure only means the bounded session-wide set
        return None
    return frame


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
) -> None:
    """Spark writes the DataFrame as complete files under ``uri`` (one job, no collect)."""
    if options.is_delimited:
        _writer(df, rows_per_file).options(**_text_options(options)).csv(uri)
        return
    isolated = _isolated(df, _WRITE_CONF)
    if isolated is not None:
        _writer(isolated, rows_per_file).option("compression", compression).parquet(uri)
        return
    # Kept only for a Spark without session clones (see _WRITE_CONF): bounded, then restored.
    with session_conf(df.sparkSession, _WRITE_CONF):
        _writer(df, rows_per_file).option("compression", compression).parquet(uri)


def _writer(df: DataFrame, rows_per_file: int) -> DataFrameWriter:
    return df.write.mode("errorifexists").option("maxRecordsPerFile", rows_per_file)


def read_staged(spark: SparkSession, *, uri: str, schema: StructType, options: TableOptions) -> DataFrame:
    """Read staged files back with the schema they were written with."""
    reader = spark.read.schema(schema)
    if options.is_delimited:
        return reader.options(**_text_options(options)).csv(uri)
    return reader.options(**_PARQUET_READ).parquet(uri)


def any_null(keys: tuple[str, ...]) -> Column:
    """True for a row with a NULL in any of ``keys``."""
    from pyspark.sql import functions as F

    cond = F.lit(False)
    for key in keys:
        cond = cond | F.col(f"`{key}`").isNull()
    return cond


def staged_stats(
    spark: SparkSession, *, uri: str, schema: StructType, options: TableOptions, keys: tuple[str, ...]
) -> StagedStats:
    """One small aggregation over the key and marker columns of the staged files."""
    from pyspark.sql import functions as F

    staged = read_staged(spark, uri=uri, schema=schema, options=options)
    null_key = any_null(keys)
    marker = F.col(ROW_MARKER) if ROW_MARKER in schema.fieldNames() else F.lit(None).cast("int")
    rows = (
        staged.groupBy(F.col("_metadata.file_name").alias("file"), marker.alias("marker"))
        .agg(F.count(F.lit(1)).alias("rows"), F.sum(F.when(null_key, 1).otherwise(0)).alias("nulls"))
        .collect()
    )
    by_file: dict[str, int] = {}
    by_marker: dict[int | None, int] = {}
    nulls = 0
    for row in rows:
        by_file[row["file"]] = by_file.get(row["file"], 0) + row["rows"]
        by_marker[row["marker"]] = by_marker.get(row["marker"], 0) + row["rows"]
        nulls += row["nulls"] or 0
    return StagedStats(by_file, by_marker, nulls)


def footer_stats(uri: str) -> StagedStats | None:
    """Rows per staged Parquet file from the file footers alone, when the files are local.

    Serves marker-free initial loads, whose key checks run on the key state instead; ``None``
    when the files are not on this machine (Spark then counts them).
    """
    import pyarrow.parquet as pq

    if not uri.startswith(FILE_SCHEME):
        return None
    folder = Path(uri.removeprefix(FILE_SCHEME))
    by_file = {p.name: pq.read_metadata(p).num_rows for p in folder.glob("part-*")}
    return StagedStats(by_file, {None: sum(by_file.values())}, 0)


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
    cols = [F.col(f"`{k}`") for k in keys]
    dupes = staged.groupBy(*cols).count().where(F.col("count") > 1).limit(limit).collect()
    return [tuple(row[k] for k in keys) for row in dupes]


def part_order(name: str) -> tuple[int, int, str]:
    """Spark names parts ``part-<task>-<uuid>-c<n>``: task order, then file order within a task."""
    match = _PART.match(name)
    return (int(match.group(1)), int(match.group(2)), name) if match else (1 << 30, 0, name)


def list_parts(storage: Storage, folder: str, stats: StagedStats, *, keep_empty: bool) -> list[StagedPart]:
    """The staged data files in publication order; empty ones only if ``keep_empty`` (one kept)."""
    parts = [
        StagedPart(f"{folder}/{e.name}", stats.rows_by_file.get(e.name, 0), e.size)
        for e in storage.list_dir(folder)
        if not e.is_dir and e.name.startswith("part-")
    ]
    parts.sort(key=lambda p: part_order(p.path.rsplit("/", 1)[-1]))
    with_rows = [p for p in parts if p.rows > 0]
    if with_rows or not keep_empty:
        return with_rows
    return parts[:1]


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
) -> None:
    """Rewrite many small staged files as ``files`` larger ones, each old file kept whole."""
    staged = read_staged(spark, uri=src_uri, schema=schema, options=options)
    write_parts(
        staged.coalesce(files),
        uri=dst_uri,
        options=options,
        compression=compression,
        rows_per_file=rows_per_file,
    )
