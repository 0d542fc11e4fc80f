"""Read a Delta table back correctly, into Arrow, pandas or Spark (stack.md §2).

Never a glob of the table folder: removed files stay on disk until VACUUM, so a folder read
double-counts. Spark reads the table's live files (``file_uris``) with the table's own schema when
plain Parquet reading is exact (no deletion vectors, no column mapping); otherwise the table goes
through delta-rs' ``scan()`` and is handed to Spark with an explicit schema. pyspark is imported
only inside ``read_delta_spark``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
from deltalake import DeltaTable

from openmirror_nb.errors import MirrorError

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

# Reader features that do not change how the table's data files read as plain Parquet.
_PLAIN_READER_FEATURES = frozenset({"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})


def _open(table_dir: str | os.PathLike[str]) -> DeltaTable:
    path = os.fspath(table_dir)
    if not DeltaTable.is_deltatable(path):
        raise MirrorError(f"{path} is not a Delta table; has the mirror replicated the table yet?")
    return DeltaTable(path)


def _plain_type(t: pa.DataType) -> pa.DataType:
    """Replace the view types ``scan()`` returns with the types pandas and Spark understand."""
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(_plain_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain_type(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_plain_type(t.key_type), _plain_type(t.item_type))
    return t


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, _plain_type(f.type), f.nullable) for f in schema])


def arrow_schema(table: DeltaTable) -> pa.Schema:
    """The Delta table's schema as pyarrow types (delta-rs 1.x hands out arro3 objects)."""
    stored: Any = table.schema().to_arrow()
    return pa.schema(stored)


def table_arrow_schema(table_dir: str | os.PathLike[str]) -> pa.Schema:
    """The Delta table's schema as plain pyarrow types."""
    return _plain_schema(arrow_schema(_open(table_dir)))


def read_delta_arrow(table_dir: str | os.PathLike[str]) -> pa.Table:
    """The current rows of the Delta table at ``table_dir`` (any protocol) as a pyarrow Table.

    Raises:
        MirrorError: ``table_dir`` holds no Delta table.
    """
    table = _open(table_dir)
    schema = _plain_schema(arrow_schema(table))
    data = pa.RecordBatchReader.from_stream(table.scan()).read_all()
    return data.select(schema.names).cast(schema)


def read_delta_pandas(table_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """The current rows of the Delta table at ``table_dir`` as a pandas DataFrame.

    Timestamps are timezone-aware (UTC). Row order is not defined.
    """
    return read_delta_arrow(table_dir).to_pandas()


def _reads_as_plain_parquet(table: DeltaTable) -> bool:
    protocol = table.protocol()
    features = set(protocol.reader_features or ())
    mode = (table.metadata().configuration or {}).get("delta.columnMapping.mode") or "none"
    return protocol.min_reader_version != 2 and features <= _PLAIN_READER_FEATURES and mode == "none"


def read_delta_spark(
    spark: SparkSession,
    table_dir: str | os.PathLike[str],
    *,
    method: Literal["auto", "files", "scan"] = "auto",
) -> DataFrame:
    """The current rows of the Delta table at ``table_dir`` as a Spark DataFrame.

    Args:
        spark: The Spark session to read with.
        table_dir: The Delta table folder, e.g. ``<db>/Tables/sales/orders``.
        method: ``files`` reads the live Parquet files in Spark (fast, exact only without
            deletion vectors and column mapping), ``scan`` reads through delta-rs and hands the
            rows to Spark, ``auto`` picks ``files`` whenever it is exact.

    Raises:
        MirrorError: ``table_dir`` holds no Delta table, or ``files`` was asked for a table it
            cannot read exactly.
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    table = _open(table_dir)
    plain = _plain_schema(arrow_schema(table))
    spark_schema = from_arrow_schema(plain)
    partitions = table.metadata().partition_columns
    uris = table.file_uris()
    exact = _reads_as_plain_parquet(table) and all(
        all(f"/{column}=" in uri for column in partitions) for uri in uris
    )
    if method == "files" and not exact:
        raise MirrorError(
            f"{os.fspath(table_dir)} has deletion vectors or column mapping; use method='scan'."
        )
    if method == "scan" or not exact:
        data = read_delta_arrow(table_dir)
        # Object columns keep integers with NULLs exact whether or not Arrow transfer is on.
        frame = data.to_pandas(integer_object_nulls=True, date_as_object=True, timestamp_as_object=True)
        return spark.createDataFrame(frame, schema=spark_schema)
    if not uris:
        return spark.createDataFrame([], schema=spark_schema)
    # The explicit schema gives files written before a column was added that column as NULL.
    reader = spark.read.schema(spark_schema).option("basePath", os.fspath(table_dir))
    return reader.parquet(*uris).select(*[f"`{name}`" for name in plain.names])
