"""A Delta table's version as a source gives it (``Source.version``): its latest commit's number,
with the table's id, which a table made again at the same path or name does not keep (its
versions start again from 0). Read from the log only, by the reader a sync would use: Spark's
Delta reader where the session has it, else ``deltalake`` (``DeltaSource``); no row is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openmirror_nb._core.identifiers import quoted

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def delta_version(spark: SparkSession, uri: str) -> str:
    """The version of the Delta table at ``uri``.

    Raises:
        Exception: ``uri`` holds no Delta table, or its log cannot be read (the reader's error).
    """
    from openmirror_nb._core.pipeline.delta.source import DeltaSource

    source = DeltaSource.open(uri, spark)
    if source.spark_delta:
        detail = spark.sql(f"DESCRIBE DETAIL delta.{quoted(uri)}").first()
        return _text(source.version(), detail["id"] if detail is not None else None)
    from deltalake import DeltaTable  # DeltaSource chose it: the session has no Delta reader

    table = DeltaTable(uri, without_files=True)  # the log's actions, not its list of files
    return _text(table.version(), table.metadata().id)


def catalog_version(spark: SparkSession, qualified: str) -> str | None:
    """The version of the catalog table ``qualified`` (```db`.`t```) when it is a Delta table;
    ``None`` for a view, another format, or a session without Spark's Delta reader."""
    try:  # a view, or a session without Delta (no DESCRIBE DETAIL), has no Delta version
        detail = spark.sql(f"DESCRIBE DETAIL {qualified}").first()
    except Exception:
        return None
    if detail is None or str(detail["format"]).lower() != "delta":
        return None
    latest = spark.sql(f"DESCRIBE HISTORY {qualified} LIMIT 1").first()
    return None if latest is None else _text(int(latest["version"]), detail["id"])


def _text(version: int, table_id: object) -> str:
    return f"{version} of table {table_id}"
