"""Arrow data as other libraries hand it out, as a Spark DataFrame ready to push.

``deltalake``'s ``DeltaTable.load_cdf()`` returns an Arrow stream (arro3) with ``string_view``
and ``uint64`` columns, which ``spark.createDataFrame`` refuses. ``arrow_to_spark`` takes any
object speaking the Arrow C stream or array interface (arro3, pyarrow, polars...), casts each
column to the nearest type Spark reads, and hands Spark a Parquet copy: the rows are never
turned into Python objects, and the user's session confs are not touched.

A pandas DataFrame goes through Arrow first (``pandas_to_arrow``), as ``db.push`` takes it. Naive
pandas datetimes are read as UTC instants, as ``spark.createDataFrame`` reads them in a UTC
session; an Arrow timestamp without a zone stays a wall-clock time (``TIMESTAMP_NTZ``), as Arrow
defines it. A pandas index is dropped unless it is named: named levels become the first columns,
as ``df.reset_index()`` makes them.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import uuid
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError, OpenMirrorError, UnsupportedTypeError, user_line

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

_FOLDER: list[str] = []


def arrow_to_spark(data: Any, *, spark: SparkSession | None = None) -> DataFrame:
    """A Spark DataFrame of ``data`` (an Arrow table, record batch reader or anything with
    ``__arrow_c_stream__``), with view, large, unsigned and non-microsecond types made plain.
    A pandas DataFrame is converted as ``db.push`` converts one (named index levels as leading
    columns, naive datetimes as UTC), so what a profile or a preview sees is what a push writes.

    ``uint64`` becomes ``bigint`` when every value fits, else ``decimal(20,0)``.

    Example:
        >>> feed = om.arrow_to_spark(DeltaTable(path).load_cdf(starting_version=3))
        >>> db.push(feed, table="sales.orders", mode="changes", convention="cdf")
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = _as_table(data, pa)
    # safe=False only lets timestamps drop sub-microsecond digits: uint64 was checked above.
    table = table.cast(pa.schema([_plain(f, table.column(f.name)) for f in table.schema]), safe=False)
    if spark is None:
        from openmirror_nb._core.runtime import get_spark

        spark = get_spark()
    path = f"{_scratch()}/{uuid.uuid4().hex}.parquet"
    pq.write_table(table, path)
    # pyarrow writes the proleptic calendar but no Spark version in the file, so Spark 3.x would
    # refuse (or rebase) dates before 1582 and timestamps before 1900 unless told: per read, the
    # session's confs stay the user's.
    return spark.read.options(datetimeRebaseMode="CORRECTED", int96RebaseMode="CORRECTED").parquet(path)


def _as_table(data: Any, pa: Any) -> Any:
    if isinstance(data, pa.Table):
        return data
    pd = sys.modules.get("pandas")  # only a loaded pandas can have made a pandas frame
    if pd is not None and isinstance(data, pd.DataFrame):
        return pandas_to_arrow(data)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data).read_all()
    if hasattr(data, "__arrow_c_array__"):
        return pa.table(data)
    raise ConfigError(
        f"arrow_to_spark takes Arrow data (a pyarrow Table, a RecordBatchReader, deltalake's "
        f"load_cdf()) or a pandas DataFrame, not {type(data).__name__}; pass a Spark DataFrame "
        "to push directly."
    )


def _plain(field: Any, column: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_null(field.type):
        # Spark would read a Parquet column of Arrow's null type as INT: a wrong type, fixed forever
        raise UnsupportedTypeError(
            f"Column {field.name!r} holds only NULLs with no type; give it one, e.g. "
            f"df[{field.name!r}].astype('string') in pandas or pa.array(values, type=pa.string())."
        )
    kind = _plain_type(field.type)
    if pa.types.is_uint64(field.type):
        top = pc.max(column).as_py() if len(column) else 0
        kind = pa.int64() if top is None or top < 2**63 else pa.decimal128(20, 0)
    return pa.field(field.name, kind, field.nullable)


def _plain_type(kind: Any) -> Any:
    import pyarrow as pa

    t = pa.types
    if t.is_string_view(kind) or t.is_large_string(kind):
        return pa.string()
    if t.is_binary_view(kind) or t.is_large_binary(kind):
        return pa.binary()
    wider = {
        pa.uint8(): pa.int16(),
        pa.uint16(): pa.int32(),
        pa.uint32(): pa.int64(),
        pa.uint64(): pa.int64(),
    }
    if kind in wider:
        return wider[kind]
    if t.is_timestamp(kind) and kind.unit != "us":
        return pa.timestamp("us", tz=kind.tz)
    if t.is_dictionary(kind):
        return _plain_type(kind.value_type)
    if t.is_large_list(kind) or t.is_list_view(kind) or t.is_list(kind):
        return pa.list_(_plain_type(kind.value_type))
    if t.is_struct(kind):
        return pa.struct([pa.field(f.name, _plain_type(f.type), f.nullable) for f in kind])
    if t.is_map(kind):
        return pa.map_(_plain_type(kind.key_type), _plain_type(kind.item_type))
    return kind


def _scratch() -> str:
    # One folder per process, removed at exit: Spark reads the files lazily, whenever the
    # DataFrame is used, so they must outlive this call.
    if not _FOLDER:
        _FOLDER.append(tempfile.mkdtemp(prefix="openmirror-arrow-"))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    return _FOLDER[0]


def pandas_to_arrow(frame: pd.DataFrame) -> pa.Table:
    """``frame`` as an Arrow table: named index levels as leading columns, naive datetimes UTC."""
    import pyarrow as pa

    named = [n for n in frame.index.names if n is not None]
    if named:
        clash = [n for n in named if n in frame.columns]
        if clash:
            raise ConfigError(
                f"pandas index level {clash[0]!r} is also a column; rename one, or drop the index "
                "with df.reset_index(drop=True)."
            )
        frame = frame.reset_index(level=named)  # unnamed levels stay in the index, dropped below
    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise _conversion_error(frame, exc) from None
    if not any(_naive(f.type) for f in table.schema):
        return table
    return table.cast(
        pa.schema(
            [f.with_type(pa.timestamp(f.type.unit, "UTC")) if _naive(f.type) else f for f in table.schema]
        )
    )


def _naive(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_timestamp(kind) and kind.tz is None


def _conversion_error(frame: pd.DataFrame, exc: Exception) -> OpenMirrorError:
    import pyarrow as pa

    if not frame.columns.is_unique:
        twice = frame.columns[frame.columns.duplicated()][0]
        return ConfigError(f"pandas column {twice!r} appears twice; give every column its own name.")
    for name in frame.columns:
        try:
            pa.array(frame[name], from_pandas=True)
        except (pa.ArrowException, ValueError, TypeError) as column_exc:
            return UnsupportedTypeError(
                f"pandas column {name!r} cannot be read as one type ({user_line(column_exc)}); cast it, "
                f"e.g. df[{name!r}].astype('string')."
            )
    return UnsupportedTypeError(
        f"pyarrow cannot read the pandas DataFrame ({user_line(exc)}); cast its columns."
    )
