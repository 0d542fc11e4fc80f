"""Change feeds -> change rows with ``__rowMarker__`` last, ordered per key (design §4 "Order").

Each convention maps the user's operation column to the contract's markers (§4). Invalid
operation values become the sentinel ``INVALID_MARKER`` so the staged-file check can reject the
whole push with the offending values named; nothing invalid is ever published.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openmirror_nb.errors import ChangeFeedError, ConfigError, did_you_mean
from openmirror_nb.model import ROW_MARKER, Convention, RowMarker

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

INVALID_MARKER = -1
_ORDER = "_openmirror_order"
_VALID = [int(m) for m in RowMarker]


def check_op_column(df: DataFrame, op_column: str) -> None:
    if op_column not in df.columns:
        raise ChangeFeedError(
            f"Operation column {op_column!r} is not in the DataFrame (columns: {', '.join(df.columns)})."
            + did_you_mean(op_column, df.columns)
        )
    kind = df.schema[op_column].dataType.typeName()
    if kind not in ("byte", "short", "integer", "long", "string", "decimal", "double", "float"):
        raise ChangeFeedError(
            f"Operation column {op_column!r} has type {kind}; it must hold the marker numbers 0, 1, 2 or 4."
        )


def rowmarker(op: Column) -> Column:
    """The ``rowmarker`` convention: values are the contract's markers 0/1/2/4 themselves."""
    from pyspark.sql import functions as F

    as_int = op.cast("int")
    exact = op.cast("double") == as_int.cast("double")
    return F.when(as_int.isin(*_VALID) & exact, as_int).otherwise(F.lit(INVALID_MARKER))


def to_change_rows(
    df: DataFrame,
    *,
    op_column: str,
    convention: Convention,
    keys: tuple[str, ...],
    order_by: tuple[str, ...],
) -> DataFrame:
    """Map a change feed to change rows: data columns, then ``__rowMarker__`` (int) last.

    Rows are hash-partitioned by key and sorted by ``order_by`` (then input order) inside each
    partition, so all changes of one key land in one file, in order. Delete rows keep only
    their keys; the other columns become typed NULLs (contract §4).
    """
    from pyspark.sql import functions as F

    if convention != "rowmarker":
        raise ConfigError(f"convention {convention!r} is not available yet; use convention='rowmarker'.")
    check_op_column(df, op_column)
    for col in order_by:
        if col not in df.columns:
            raise ConfigError(
                f"order_by column {col!r} is not in the DataFrame." + did_you_mean(col, df.columns)
            )
    partitions = max(1, df.rdd.getNumPartitions())
    # Input order is the tie-breaker, captured before the shuffle that would lose it.
    ordered = df.withColumn(_ORDER, F.monotonically_increasing_id())
    marker = rowmarker(F.col(f"`{op_column}`"))
    deleted = marker == int(RowMarker.DELETE)
    data = [
        F.col(f"`{f.name}`")
        if f.name in keys
        else F.when(deleted, F.lit(None).cast(f.dataType)).otherwise(F.col(f"`{f.name}`")).alias(f.name)
        for f in df.schema.fields
        if f.name != op_column
    ]
    # Sort on copies of the order columns: a delete row's non-key values are NULL in the output.
    by = [F.col(f"`{c}`").alias(f"{_ORDER}_{i}") for i, c in enumerate(order_by)]
    hidden = [f"{_ORDER}_{i}" for i in range(len(order_by))] + [_ORDER]
    shaped = ordered.select(*data, marker.alias(ROW_MARKER), *by, F.col(_ORDER))
    return (
        shaped.repartition(partitions, *[F.col(f"`{k}`") for k in keys])
        .sortWithinPartitions(*hidden)
        .drop(*hidden)
    )
