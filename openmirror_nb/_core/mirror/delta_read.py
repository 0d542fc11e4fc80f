"""Read a Delta table back correctly, into Arrow, pandas or Spark (stack.md §2).

Never a glob of the table folder: removed files stay on disk until VACUUM, so a folder read
double-counts. Spark reads the table's live files (``file_uris``) with the table's own schema when
plain Parquet reading is exact (no deletion vectors, no column mapping); otherwise the table goes
through delta-rs' ``scan()`` and is handed to Spark with an explicit schema. ``as_of`` reads an
earlier version (Delta time travel). pyspark is imported only inside ``read_delta_spark``.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import pyarrow as pa
from deltalake import DeltaTable

from openmirror_nb._core.errors import ConfigError, MirrorError
from openmirror_nb._core.identifiers import quoted

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

# Reader features that do not change how the table's data files read as plain Parquet.
_PLAIN_READER_FEATURES = frozenset({"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})

AsOf: TypeAlias = int | datetime | str | None
"""A Delta version, or a time (``datetime`` or ISO text; naive means local time)."""


def open_delta(table_dir: str | os.PathLike[str], *, as_of: AsOf = None) -> DeltaTable:
    """The Delta table at ``table_dir``, at version ``as_of`` (default: the latest).

    A time gives the last version committed at or before it.

    Raises:
        MirrorError: ``table_dir`` holds no Delta table.
        ConfigError: ``as_of`` is no version of the table, or a time before its first commit.
    """
    path = os.fspath(table_dir)
    if not DeltaTable.is_deltatable(path):
        raise MirrorError(f"{path} is not a Delta table; has the mirror replicated the table yet?")
    if as_of is None:
        return DeltaTable(path)
    commits = commit_times(DeltaTable(path).history())
    return DeltaTable(path, version=_version_as_of(as_of, commits, path))


def commit_times(history: list[dict[str, Any]]) -> dict[int, datetime]:
    """Each version of ``DeltaTable.history()`` (the commits still in the log) and its commit
    time (UTC), oldest first."""
    found = {int(h["version"]): _utc(int(h["timestamp"])) for h in history}
    return dict(sorted(found.items()))


def _utc(epoch_ms: int) -> datetime:
    # whole seconds plus milliseconds: exact, where epoch_ms / 1000 may round a microsecond off
    return datetime.fromtimestamp(epoch_ms // 1000, UTC) + timedelta(milliseconds=epoch_ms % 1000)


def _version_as_of(as_of: int | datetime | str, commits: dict[int, datetime], path: str) -> int:
    first, last = min(commits), max(commits)
    exists = (
        f"Delta versions {first} to {last}, committed {utc_text(commits[first])} to {utc_text(commits[last])}"
    )
    if isinstance(as_of, int) and not isinstance(as_of, bool):
        if as_of not in commits:
            raise ConfigError(f"as_of={as_of}: {path} has {exists}; pass one of those.")
        return as_of
    moment = _moment(as_of)
    # Delta time travel by timestamp: the last commit at or before it (commits are in time order).
    before = [v for v, t in commits.items() if t <= moment]
    if not before:
        shown = repr(as_of) if isinstance(as_of, str) else utc_text(moment)
        raise ConfigError(
            f"as_of={shown} is before the first commit of {path} ({exists}); pass a later time."
        )
    return max(before)


def _moment(as_of: object) -> datetime:
    if isinstance(as_of, datetime):
        return as_of.astimezone(UTC)  # a naive time is local, as datetime.now() gives it
    if isinstance(as_of, str):
        try:
            return datetime.fromisoformat(as_of.strip()).astimezone(UTC)
        except ValueError:
            raise ConfigError(
                f"as_of={as_of!r} is neither a Delta version nor an ISO time; "
                "pass an int or text like '2024-05-01T12:00:00Z'."
            ) from None
    raise ConfigError(
        f"as_of={as_of!r} is a {type(as_of).__name__}; pass a Delta version (int), a datetime or ISO text."
    )


def utc_text(moment: datetime) -> str:
    """``moment`` as ISO text in UTC to the millisecond, e.g. ``2024-05-01T12:00:00.000Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


def plain_arrow_schema(table: DeltaTable) -> pa.Schema:
    """The schema of ``table`` (at its loaded version) as plain pyarrow types."""
    return _plain_schema(arrow_schema(table))


def arrow_schema(table: DeltaTable) -> pa.Schema:
    """The Delta table's schema as pyarrow types (delta-rs 1.x hands out arro3 objects)."""
    stored: Any = table.schema().to_arrow()
    return pa.schema(stored)


def table_arrow_schema(table_dir: str | os.PathLike[str]) -> pa.Schema:
    """The Delta table's schema as plain pyarrow types."""
    return plain_arrow_schema(open_delta(table_dir))


def read_delta_arrow(table_dir: str | os.PathLike[str], *, as_of: AsOf = None) -> pa.Table:
    """The rows of the Delta table at ``table_dir`` (any protocol) as a pyarrow Table: the
    current version, or the one ``as_of`` names (see ``open_delta``).

    Raises:
        MirrorError: ``table_dir`` holds no Delta table.
        ConfigError: ``as_of`` names no version of the table.
    """
    return scan_arrow(open_delta(table_dir, as_of=as_of))


def scan_arrow(table: DeltaTable) -> pa.Table:
    """The rows of ``table`` at its loaded version, read through delta-rs (any protocol)."""
    schema = plain_arrow_schema(table)
    data = pa.RecordBatchReader.from_stream(table.scan()).read_all()
    return data.select(schema.names).cast(schema)


def read_delta_pandas(table_dir: str | os.PathLike[str], *, as_of: AsOf = None) -> pd.DataFrame:
    """The rows of the Delta table at ``table_dir`` (current, or ``as_of``) as a pandas DataFrame.

    Timestamps are timezone-aware (UTC). Row order is not defined.
    """
    return read_delta_arrow(table_dir, as_of=as_of).to_pandas()


def reads_as_plain_parquet(table: DeltaTable) -> bool:
    """Whether each data file of ``table`` reads exactly as plain Parquet (no deletion vectors,
    no column mapping)."""
    protocol = table.protocol()
    features = set(protocol.reader_features or ())
    mode = (table.metadata().configuration or {}).get("delta.columnMapping.mode") or "none"
    return protocol.min_reader_version != 2 and features <= _PLAIN_READER_FEATURES and mode == "none"


def read_delta_spark(
    spark: SparkSession,
    table_dir: str | os.PathLike[str],
    *,
    method: Literal["auto", "files", "scan"] = "auto",
    as_of: AsOf = None,
) -> DataFrame:
    """The rows of the Delta table at ``table_dir`` (current, or ``as_of``) as a Spark DataFrame.

    Args:
        spark: The Spark session to read with.
        table_dir: The Delta table folder, e.g. ``<db>/Tables/sales/orders``.
        method: ``files`` reads the live Parquet files in Spark (fast, exact only without
            deletion vectors and column mapping), ``scan`` reads through delta-rs and hands the
            rows to Spark, ``auto`` picks ``files`` whenever it is exact.
        as_of: A Delta version or a time (see ``open_delta``); the files of that version are read.

    Raises:
        MirrorError: ``table_dir`` holds no Delta table, or ``files`` was asked for a table it
            cannot read exactly.
        ConfigError: ``as_of`` names no version of the table.
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    table = open_delta(table_dir, as_of=as_of)
    plain = _plain_schema(arrow_schema(table))
    spark_schema = from_arrow_schema(plain)
    partitions = table.metadata().partition_columns
    uris = table.file_uris()
    exact = reads_as_plain_parquet(table) and all(
        all(f"/{column}=" in uri for column in partitions) for uri in uris
    )
    if method == "files" and not exact:
        raise MirrorError(
            f"{os.fspath(table_dir)} has deletion vectors or column mapping; use method='scan'."
        )
    if method == "scan" or not exact:
        data = scan_arrow(table)
        # Object columns keep integers with NULLs exact whether or not Arrow transfer is on.
        frame = data.to_pandas(integer_object_nulls=True, date_as_object=True, timestamp_as_object=True)
        return spark.createDataFrame(frame, schema=spark_schema)
    if not uris:
        return spark.createDataFrame([], schema=spark_schema)
    # The explicit schema gives files written before a column was added that column as NULL.
    reader = spark.read.schema(spark_schema).option("basePath", os.fspath(table_dir))
    # delta-rs writes the proleptic Gregorian calendar, never Spark 2's hybrid one: Spark 3.5 would
    # otherwise refuse a date before 1582 or a timestamp before 1900 as ambiguous (Spark 4 reads them)
    reader = reader.option("datetimeRebaseMode", "CORRECTED").option("int96RebaseMode", "CORRECTED")
    return reader.parquet(*uris).select(*[quoted(name) for name in plain.names])
