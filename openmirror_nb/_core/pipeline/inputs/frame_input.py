"""What ``db.push`` takes besides a Spark DataFrame: a pandas DataFrame or a pyarrow Table,
RecordBatch or RecordBatchReader, made a Spark DataFrame through the active session.

pandas goes through Arrow (``arrow_input.pandas_to_arrow``) and then ``arrow_to_spark``, so both
share one conversion and no row becomes a Python object.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.pipeline.inputs.arrow_input import arrow_to_spark

if TYPE_CHECKING:
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
        return arrow_to_spark(data)  # converted by pandas_to_arrow
    arrow = sys.modules.get("pyarrow")
    if arrow is not None and isinstance(data, (arrow.Table, arrow.RecordBatch, arrow.RecordBatchReader)):
        return arrow_to_spark(data)
    raise ConfigError(
        f"{caller} needs a Spark DataFrame, a pandas DataFrame or a pyarrow Table, "
        f"not {_type_name(data)}{_hint(data)}."
    )


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
