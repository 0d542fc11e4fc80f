"""How a run reads a source table: a large JDBC table in parallel ranges of a whole-number column
(Spark's ``partitionColumn``, ``lowerBound``, ``upperBound``, ``numPartitions``), so its rows come
over several connections at once; and where a ``delta_sync`` table's files are."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.sources.delta_folder import DeltaFolder
from openmirror_nb._core.sources.jdbc import Jdbc
from openmirror_nb._core.sources.plan import PlannedTable
from openmirror_nb._core.sources.watermark import integral

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from openmirror_nb._core.sources.table import Source

SPLIT_ROWS = 1_000_000  # rows per range of a JDBC read; a table of fewer is read over one connection
MAX_RANGES = 16  # connections one table's read opens at most


def split(source: Source, planned: PlannedTable, frame: DataFrame) -> DataFrame:
    """``frame`` (the table as read), or for a JDBC table of at least ``SPLIT_ROWS`` rows (by the
    plan's estimate) the same table read in ranges of its watermark or one-column key when that
    is a whole number. Filters and column choices on the result still run in the database."""
    if not isinstance(source, Jdbc) or (planned.rows or 0) < SPLIT_ROWS:
        return frame
    candidates = [planned.watermark, *(planned.keys if len(planned.keys) == 1 else ())]
    column = next((c for c in candidates if c and integral(frame, c)), None)
    if column is None:
        return frame
    low, high = source.bounds(planned.source, column)
    if low is None or high is None or low >= high:
        return frame
    parts = min(MAX_RANGES, math.ceil((planned.rows or 0) / SPLIT_ROWS))
    return source.read(planned.source, ranges=(column, low, high, parts))


def delta_location(source: Source, table: str, spark: SparkSession) -> str:
    """Where the Delta table ``table`` of ``source`` keeps its files (what ``sync_delta`` reads):
    a catalog table's location as ``DESCRIBE DETAIL`` gives it, when the table is a Delta table."""
    if isinstance(source, DeltaFolder):
        return source.uri(table)
    qualified = getattr(source, "qualified", None)
    if source.kind == "catalog" and qualified is not None:
        try:  # a view, or a session without Delta (no DESCRIBE DETAIL), has no Delta location
            detail = spark.sql(f"DESCRIBE DETAIL {qualified(table)}").first()
        except Exception:
            detail = None
        if detail is not None and str(detail["format"]).lower() == "delta" and detail["location"]:
            return str(detail["location"])
    raise ConfigError(
        f"Table {table!r} of {source!r} has no Delta location to sync from; use strategy: snapshot for it."
    )
