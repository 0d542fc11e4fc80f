"""What ``db.push`` takes besides a Spark DataFrame: a pandas DataFrame or a pyarrow Table,
RecordBatch or RecordBatchReader, made a Spark DataFrame through the active session.

pandas goes through Arrow (``pa.Table.from_pandas``) and then ``arrow_to_spark``, so both share
one conversion and no row becomes a Python object. Naive pandas datetimes are read as UTC
instants, as ``spark.createDataFrame`` reads them in a UTC session; an Arrow timestamp without a
zone stays a wall-clock time (``TIMESTAMP_NTZ``), as Arrow defines it. A pandas index is dropped
unless it is named: named levels become the first columns, as ``df.reset_index()`` makes them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError, OpenMirrorError, UnsupportedTypeError
from openmirror_nb._core.pipeline.arrow_input import arrow_to_spark

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame

# Classic (3.5: pyspark.sql.dataframe, 4.x subclasses it) and Spark Connect DataFrames.
_SPARK_MODULES = ("pyspark.sql.dataframe", "pyspark.sql.connect.dataframe")


def as_spark_frame(data: Any, *, caller: str = "push") -> DataFrame:
    """``data`` as a Spark DataFrame: a Spark DataFrame as it is, pandas and Arrow converted.
    ``caller`` names the method in the error (``"plan_schema_change"``...).

    Raises:
        ConfigError: ``data`` is none of those (a list, a dict, a polars frame, ``None``...).
    """
    # Only a loaded module can have made ``data``: nothing is imported to recognise it.
    for name in _SPARK_MODULES:
        module = sys.modules.get(name)
        if module is not None and isinstance(data, module.DataFrame):
            spark_frame: DataFrame = data
            return spark_frame
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, pandas.DataFrame):
        return arrow_to_spark(pandas_to_arrow(data))
    arrow = sys.modules.get("pyarrow")
    if arrow is not None and isinstance(data, (arrow.Table, arrow.RecordBatch, arrow.RecordBatchReader)):
        return arrow_to_spark(data)
    raise ConfigError(
        f"{caller} needs a Spark DataFrame, a pandas DataFrame or a pyarrow Table, "
        f"not {_type_name(data)}{_hint(data)}."
    )


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
            reason = str(column_exc).splitlines()[0] if str(column_exc) else type(column_exc).__name__
            return UnsupportedTypeError(
                f"pandas column {name!r} cannot be read as one type ({reason}); cast it, "
                f"e.g. df[{name!r}].astype('string')."
            )
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return UnsupportedTypeError(f"pyarrow cannot read the pandas DataFrame ({first}); cast its columns.")


def _type_name(data: Any) -> str:
    if data is None:
        return "None"
    kind = type(data)
    package = kind.__module__.split(".")[0]
    return kind.__qualname__ if package == "builtins" else f"{package}.{kind.__qualname__}"


def _hint(data: Any) -> str:
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        return "; for other Arrow data (polars, arro3, deltalake) pass om.arrow_to_spark(data)"
    if hasattr(data, "to_spark"):
        return "; call data.to_spark() first"
    return ""
