"""The watermark of the ``incremental`` and ``append`` strategies: the highest value of a column a
table holds, kept as text in its push state (a number as written, a date in ISO form, a timestamp
as microseconds since the epoch, so no session time zone can shift it), and the rows past it.

A timestamp or date watermark can miss a row committed late with an earlier value, so an
``incremental`` run re-reads an overlap window before it (harmless for upserts); ``append``
reads strictly past it, which is why it needs a column the source numbers rows by.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.identifiers import quoted

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

_TIMES = ("timestamp", "timestamp_ntz")
# A frame's attribute (set by the source that read it) filtering its rows in the source: (column,
# bound, inclusive) -> the frame of the rows past bound, or None when it cannot for that column.
ROWS_PAST = "openmirror_rows_past"
_INTEGRAL = ("byte", "short", "integer", "long")
_DAY = 86400.0


def highest(frame: DataFrame, column: str) -> str | None:
    """The highest value of ``column`` in ``frame`` as the push state keeps it (``None``: no rows)."""
    from pyspark.sql import functions as F

    kind = _kind(frame, column)
    value = F.max(_col(column))
    if kind in _TIMES:
        value = F.unix_micros(value.cast("timestamp"))
    row = frame.agg(value.cast("string").alias("w")).first()
    return None if row is None or row["w"] is None else str(row["w"])


def past(frame: DataFrame, column: str, mark: str | None, *, overlap: float = 0.0) -> DataFrame:
    """The rows of ``frame`` past ``mark`` (all of them when ``mark`` is ``None``); with ``overlap``
    seconds, also those up to that much before it (dates: whole days, rounded up; numbers have no
    overlap). The filter is one comparison, which a JDBC source runs in the database."""
    if mark is None:
        return frame
    kind = _kind(frame, column)
    inclusive = overlap > 0 and kind in (*_TIMES, "date")
    in_source = _in_source(frame, column, kind, mark, overlap, inclusive)
    if in_source is not None:
        return in_source
    bound = _literal(mark, kind, frame.schema[column].dataType, overlap)
    return frame.where(_col(column) >= bound) if inclusive else frame.where(_col(column) > bound)


def _in_source(
    frame: DataFrame, column: str, kind: str, mark: str, overlap: float, inclusive: bool
) -> DataFrame | None:
    """The rows past ``mark`` filtered where the source reads them, when the frame is one a source
    converts date-times on Spark (``pg_read``: Spark cannot hand a filter on a converted column to
    the database) and says how (``ROWS_PAST``: the bound as microseconds or days since 1970)."""
    rows_past = frame.__dict__.get(ROWS_PAST)
    if rows_past is None or kind not in (*_TIMES, "date"):
        return None
    if kind == "date":
        day = dt.date.fromisoformat(mark) - dt.timedelta(days=math.ceil(overlap / _DAY) if overlap > 0 else 0)
        bound = (day - dt.date(1970, 1, 1)).days
    else:
        bound = int(mark) - int(overlap * 1_000_000)
    found: DataFrame | None = rows_past(column, bound, inclusive)
    return found


def keep_rows_past(frame: DataFrame, then: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """``then(frame)``, still filtering rows past a watermark where ``frame``'s source reads them
    (its ``ROWS_PAST``), ``then`` applied to those rows too."""
    made = then(frame)
    rows_past = frame.__dict__.get(ROWS_PAST)
    if rows_past is not None and made is not frame:

        def past_then(column: str, bound: int, inclusive: bool) -> DataFrame | None:
            rows = rows_past(column, bound, inclusive)
            return None if rows is None else then(rows)

        made.__dict__[ROWS_PAST] = past_then
    return made


def upto(frame: DataFrame, column: str, mark: str) -> DataFrame:
    """The rows of ``frame`` at or before ``mark``: what a run read ``highest`` of, so a row that
    arrives while it pushes waits for the next run rather than being read twice."""
    kind = _kind(frame, column)
    return frame.where(_col(column) <= _literal(mark, kind, frame.schema[column].dataType, 0.0))


def _literal(mark: str, kind: str, data_type: DataType, overlap: float) -> Column:
    from pyspark.sql import functions as F

    if kind in _TIMES:
        micros = int(mark) - int(overlap * 1_000_000)
        return F.timestamp_micros(F.lit(micros)).cast(data_type)
    if kind == "date":
        return F.date_sub(F.to_date(F.lit(mark)), math.ceil(overlap / _DAY))
    return F.lit(mark).cast(data_type)


def _kind(frame: DataFrame, column: str) -> str:
    if column not in frame.columns:
        raise ConfigError(
            f"Watermark column {column!r} is not in the source table (columns: {', '.join(frame.columns)}); "
            "set watermark: to one of them in the plan."
        )
    return frame.schema[column].dataType.typeName()


def integral(frame: DataFrame, column: str) -> bool:
    """Whether ``column`` is a whole number (what a JDBC read can split into ranges)."""
    return column in frame.columns and frame.schema[column].dataType.typeName() in _INTEGRAL


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(quoted(name))
