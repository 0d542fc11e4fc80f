"""How a run reads a source table: a large one in parallel ranges of a whole-number column where
its source can (``Source.read_in_ranges``; JDBC: Spark's ``partitionColumn``, ``lowerBound``,
``upperBound``, ``numPartitions``), so its rows come over several connections at once; and where a
``delta_sync`` table's files are (``Source.delta_location``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.sources.plan import PlannedTable
from openmirror_nb._core.sources.watermark import integral

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.sources.table import Source

SPLIT_ROWS = 1_000_000  # rows per range of a JDBC read; a table of fewer is read over one connection
MAX_RANGES = 16  # connections one table's read opens at most


def split(source: Source, planned: PlannedTable, frame: DataFrame) -> DataFrame:
    """``frame`` (the table as read), or for a table of at least ``SPLIT_ROWS`` rows (by the plan's
    estimate) the same table read in ranges of its watermark or one-column key when that is a
    whole number and the source reads so (JDBC: filters and column choices on the result still
    run in the database)."""
    if (planned.rows or 0) < SPLIT_ROWS or planned.types:
        return frame  # a read in ranges takes no declared types (Source.read_in_ranges)
    candidates = [planned.watermark, *(planned.keys if len(planned.keys) == 1 else ())]
    column = next((c for c in candidates if c and integral(frame, c)), None)
    if column is None:
        return frame
    parts = min(MAX_RANGES, math.ceil((planned.rows or 0) / SPLIT_ROWS))
    split = source.read_in_ranges(planned.source, column, parts)
    return frame if split is None else split


def delta_location(source: Source, table: str) -> str:
    """Where the Delta table ``table`` of ``source`` keeps its files (what ``sync_delta`` reads).

    Raises:
        ConfigError: the source says it is not a Delta table (a view, a Parquet table).
    """
    location = source.delta_location(table)
    if location is None:
        raise ConfigError(
            f"Table {table!r} of {source!r} has no Delta location to sync from; use strategy: snapshot "
            "for it."
        )
    return location
