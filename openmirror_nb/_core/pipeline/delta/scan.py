"""Spark reads a list of a Delta table's files: one Parquet scan, then the log's facts joined in.

The driver holds only the file list and the row indexes of deletion vectors. Each file's facts
(partition values, and for a feed its commit and kind of change) are a small broadcast table
joined to the rows on the file's path (``_metadata.file_path``); deletion vectors are a table of
(entry, row index) joined on ``_metadata.row_index``, so deleted rows are dropped (or, for a
feed, only the rows a commit deleted are kept) by Spark, not by the driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.pipeline.delta.columns import TableColumns, partition_value

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

# Delta defines timestamps in the proleptic Gregorian calendar; files written by Spark 2 or with
# INT96 carry their own calendar in the footer, which Spark honours over these options.
REBASE = {"datetimeRebaseMode": "CORRECTED", "int96RebaseMode": "CORRECTED"}
FEED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
_CHANGE_TYPE = {"name": "_change_type", "type": "string", "nullable": True, "metadata": {}}
# The decoded path component of a file's URI (scheme and authority dropped), as TableRoot.locate
# gives it: a literal '+' is kept, since url_decode would read it as a space.
_FILE_KEY = (
    "regexp_replace(url_decode(replace(_metadata.file_path, '+', '%2B')), "
    "'^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?', '')"
)
_BROADCAST_ROWS = 2_000_000


@dataclass(frozen=True)
class FileRead:
    """One file to read, and which of its rows.

    Attributes:
        path: The file as Spark reads it.
        key: Its decoded path (``TableRoot.locate``).
        partition: Partition values by logical column: typed, or as the log serializes them.
        rows: Row indexes: deleted ones (``keep="all"``) or the only ones read (``"only"``).
        version, timestamp, change: For a feed, the commit and ``insert``/``delete``; a change
            data file (``change=None``) carries its own ``_change_type``.
    """

    path: str
    key: str
    partition: Mapping[str, Any] = field(default_factory=dict)
    rows: np.ndarray | None = None
    keep: Literal["all", "only"] = "all"
    version: int | None = None
    timestamp: datetime | None = None
    change: str | None = None


def read_files(
    spark: SparkSession,
    columns: TableColumns,
    files: list[FileRead],
    *,
    feed: bool = False,
    serialized: bool = False,
    change_files: bool = False,
) -> DataFrame:
    """The rows of ``files`` with the table's logical columns (and, for a ``feed``, its three
    columns); ``serialized``: partition values are the log's text; ``change_files``: the files
    are change data files with their own ``_change_type``."""
    from pyspark.sql import functions as F

    out = output_schema(columns, feed=feed)
    if not files:
        return spark.createDataFrame([], out)
    schema = columns.physical_data(*([_CHANGE_TYPE] if change_files else []))
    frame = spark.read.schema(schema).options(**REBASE).parquet(*sorted({f.path for f in files}))
    data = columns.data_columns() + ([F.col("_change_type")] if change_files else [])
    if not (feed or columns.partition_columns or any(f.rows is not None for f in files)):
        return frame.select(*data)
    frame = frame.select(
        *data, F.expr(_FILE_KEY).alias("_om_file"), F.col("_metadata.row_index").alias("_om_row")
    )
    joined = frame.join(F.broadcast(_entries(spark, columns, files, serialized=serialized)), "_om_file")
    selected = _selected_rows(spark, files)
    if selected is not None:
        joined = joined.join(selected, ["_om_entry", "_om_row"], "left").where(
            F.col("_om_hit").isNull() == (F.col("_om_keep") == "all")
        )
    if feed and not change_files:
        joined = joined.withColumn("_change_type", F.col("_om_change"))
    return joined.select(*[F.col(quoted(f.name)) for f in out.fields])


def output_schema(columns: TableColumns, *, feed: bool) -> StructType:
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    fields = list(columns.logical().fields)
    if feed:
        fields += [
            StructField("_change_type", StringType()),
            StructField("_commit_version", LongType()),
            StructField("_commit_timestamp", TimestampType()),
        ]
    return StructType(fields)


def _entries(
    spark: SparkSession, columns: TableColumns, files: list[FileRead], *, serialized: bool
) -> DataFrame:
    """One row per file entry: its key, index, keep mode, feed facts and partition values."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    kinds = {f.name: f.dataType for f in columns.logical().fields}
    parts = list(columns.partition_columns)
    schema = StructType(
        [
            StructField("_om_file", StringType()),
            StructField("_om_entry", LongType()),
            StructField("_om_keep", StringType()),
            StructField("_om_change", StringType()),
            StructField("_commit_version", LongType()),
            StructField("_commit_timestamp", TimestampType()),
        ]
        + [StructField(p, StringType() if serialized else kinds[p]) for p in parts]
    )
    rows = [
        (f.key, i, f.keep, f.change, f.version, f.timestamp, *[f.partition.get(p) for p in parts])
        for i, f in enumerate(files)
    ]
    entries = spark.createDataFrame(rows, schema)
    if serialized:
        entries = entries.select(
            *[c for c in entries.columns if c not in parts],
            *[partition_value(F.col(quoted(p)), kinds[p]).alias(p) for p in parts],
        )
    return entries


def _selected_rows(spark: SparkSession, files: list[FileRead]) -> DataFrame | None:
    """(entry, row index) of every deletion-vector row: the only rows the driver holds."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    pairs = [(i, f.rows) for i, f in enumerate(files) if f.rows is not None and len(f.rows)]
    if not pairs and all(f.keep == "all" for f in files):
        return None
    rows = [(i, int(r)) for i, indexes in pairs for r in indexes.tolist()]
    schema = StructType([StructField("_om_entry", LongType()), StructField("_om_row", LongType())])
    selected = spark.createDataFrame(rows, schema).withColumn("_om_hit", F.lit(True))
    return F.broadcast(selected) if len(rows) <= _BROADCAST_ROWS else selected
