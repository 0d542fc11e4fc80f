"""Change feeds -> change rows with ``__rowMarker__`` last, ordered per key (design §4 "Order").

Each convention maps the user's operation column to the contract's markers (§4). Invalid
operation values become the sentinel ``INVALID_MARKER`` so the staged-file check can reject the
whole push with the offending values named; nothing invalid is ever published.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ChangeFeedError, ConfigError, did_you_mean
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.model import ROW_MARKER, Convention, RowMarker

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

INVALID_MARKER = -1
_ORDER = "_openmirror_order"
_MARKER = "_openmirror_marker"
_CDF_PHASE = "_openmirror_cdf_phase"
_VALID = [int(m) for m in RowMarker]


# Metadata columns of a Delta change data feed: they describe the change, not the table.
CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
# A feed Spark estimates at most this size (its optimized plan's sizeInBytes) is ordered in one
# task instead of a shuffle by key: one job less, which is most of a small push's cost (a
# micro-batch of a stream, a daily feed of a few thousand rows).
SMALL_FEED_BYTES = 8 * 2**20
_NUMERIC = ("byte", "short", "integer", "long", "string", "decimal", "double", "float")
# The frames to_change_rows ordered in one task (``in_one_task``), held weakly: a frame's
# lifetime is its push's.
_ONE_TASK: weakref.WeakSet[DataFrame] = weakref.WeakSet()


def check_op_column(df: DataFrame, op_column: str, convention: Convention) -> None:
    if op_column not in df.columns:
        raise ChangeFeedError(
            f"Operation column {op_column!r} is not in the DataFrame (columns: {', '.join(df.columns)})."
            + did_you_mean(op_column, df.columns)
        )
    kind = df.schema[op_column].dataType.typeName()
    if convention in ("rowmarker", "sys_op") and kind not in _NUMERIC:
        raise ChangeFeedError(
            f"Operation column {op_column!r} has type {kind}; convention {convention!r} needs numbers."
        )


def rowmarker(op: Column) -> Column:
    """The ``rowmarker`` convention: values are the contract's markers 0/1/2/4 themselves."""
    from pyspark.sql import functions as F

    as_int = _number(op, "int")
    exact = _number(op, "double") == as_int.cast("double")
    return F.when(as_int.isin(*_VALID) & exact, as_int).otherwise(F.lit(INVALID_MARKER))


def _number(op: Column, kind: str) -> Column:
    """``op`` as a number, NULL where it is none (``'x'``) or does not fit, so that it becomes
    ``INVALID_MARKER`` and is named in the push's error. Under ANSI mode, on by default from Spark
    4.0 (Fabric Runtime 2.0), a plain cast raises instead: ``try_cast`` (Spark 4.0+) does not. On
    Spark 3.5 ANSI is off unless the user turns it on, and ``cast`` gives NULL as ``try_cast`` would."""
    from pyspark.sql import Column

    # pyspark 3.5 has no try_cast: its typing sees a field access (op["try_cast"]) there
    return op.try_cast(kind) if hasattr(Column, "try_cast") else op.cast(kind)  # type: ignore[operator, unused-ignore]


def to_marker(op: Column, convention: Convention, *, update_marker: int) -> Column:
    """Map one convention's operation values to markers; anything else is ``INVALID_MARKER``.

    Inserts of the cdf and debezium conventions become upserts (4): feeds are often delivered at
    least once, and an upsert applied twice leaves one row where an insert (0) would leave two.
    """
    from pyspark.sql import functions as F

    upsert, delete = int(RowMarker.UPSERT), int(RowMarker.DELETE)
    if convention == "rowmarker":
        return rowmarker(op)
    if convention == "sys_op":  # Prostore: 0 = insert or update, 1 = delete (contract §9)
        value = rowmarker(op)
        return F.when(value == 0, upsert).when(value == 1, delete).otherwise(F.lit(INVALID_MARKER))
    text = F.lower(F.trim(op.cast("string")))
    if convention == "cdf":
        return (
            F.when(text == "insert", upsert)
            .when(text == "update_postimage", update_marker)
            .when(text == "delete", delete)
            .otherwise(F.lit(INVALID_MARKER))
        )
    if convention == "debezium":
        return (
            F.when(text.isin("c", "r"), upsert)
            .when(text == "u", update_marker)
            .when(text == "d", delete)
            .otherwise(F.lit(INVALID_MARKER))
        )
    raise ConfigError(f"convention {convention!r} is not known; use rowmarker, sys_op, cdf or debezium.")


def _cdf_key_changes(df: DataFrame, *, op_column: str, keys: tuple[str, ...]) -> DataFrame:
    """Drop CDF preimages, except one whose key has no postimage in its commit: the update moved
    the row to another key, so the old key is deleted (contract §4: key change = delete + insert).

    Adds ``_CDF_PHASE``: a commit is one state transition and Delta defines no order of the rows
    inside it, so within a commit every delete (and moved-away preimage) is applied before every
    insert and postimage. A commit that deletes and re-inserts a key (replaceWhere, MERGE) then
    leaves the row, whatever order the reader listed them in.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kind = F.lower(F.trim(F.col(quoted(op_column)).cast("string")))
    by = Window.partitionBy("_commit_version", *[F.col(quoted(k)) for k in keys])
    flagged = df.withColumn("_om_post", F.max((kind == "update_postimage").cast("int")).over(by))
    moved = (kind == "update_preimage") & (F.col("_om_post") == 0)
    kept = flagged.where((kind != "update_preimage") | moved)
    op = F.when(moved, F.lit("delete")).otherwise(F.col(quoted(op_column)))
    phase = F.when(moved | (kind == "delete"), F.lit(0)).otherwise(F.lit(1))
    return kept.withColumn(_CDF_PHASE, phase).withColumn(op_column, op).drop("_om_post")


def to_change_rows(
    df: DataFrame,
    *,
    op_column: str,
    convention: Convention,
    keys: tuple[str, ...],
    order_by: tuple[str, ...],
    update_marker: int = int(RowMarker.UPSERT),
    compact: bool = False,
    unpublished: tuple[str, ...] = (),
) -> DataFrame:
    """Map a change feed to change rows: data columns, then ``__rowMarker__`` (int) last.

    Rows are hash-partitioned by key and sorted by ``order_by`` (then input order) inside each
    partition, so all changes of one key land in one file, in order. Delete rows keep only
    their keys; the other columns become typed NULLs (contract §4). With ``compact`` only each
    key's net change is kept: its last row, as an upsert (4) or a delete (2). Columns in
    ``unpublished`` (ordering fields that are not table columns) order the rows but are dropped.
    """
    from pyspark.sql import functions as F

    df, order_by = _checked_feed(df, op_column=op_column, convention=convention, keys=keys, order_by=order_by)
    # Input order is the tie-breaker, captured before the shuffle that would lose it.
    marker = to_marker(F.col(quoted(op_column)), convention, update_marker=update_marker)
    # The marker is a column of its own first, so the data columns can read it as SQL text.
    ordered = df.select("*", F.monotonically_increasing_id().alias(_ORDER), marker.alias(_MARKER))
    dropped = {op_column, *unpublished, *((*CDF_COLUMNS, _CDF_PHASE) if convention == "cdf" else ())}
    data = _data_columns(df, keys=keys, dropped=dropped)
    # Sort on copies of the order columns: a delete row's non-key values are NULL in the output.
    by = [f"{quoted(c)} AS {_ORDER}_{i}" for i, c in enumerate(order_by)]
    hidden = [f"{_ORDER}_{i}" for i in range(len(order_by))] + [_ORDER]
    shaped = ordered.selectExpr(*data, f"{_MARKER} AS {ROW_MARKER}", *by, _ORDER)
    if compact:
        shaped = _net_changes(shaped, keys=keys, hidden=hidden)
    by_key, one_task = _by_key(shaped, keys)
    rows = by_key.sortWithinPartitions(*hidden).drop(*hidden)
    if one_task:
        _ONE_TASK.add(rows)
    return rows


def in_one_task(rows: DataFrame) -> bool:
    """Whether ``rows`` (from ``to_change_rows``) is a feed ordered in one task: its rows, as that
    task yields them, are in publication order."""
    return rows in _ONE_TASK


def _checked_feed(
    df: DataFrame, *, op_column: str, convention: Convention, keys: tuple[str, ...], order_by: tuple[str, ...]
) -> tuple[DataFrame, tuple[str, ...]]:
    """The feed and its order columns, once checked (a cdf feed: with its key changes resolved and
    ordered by commit first)."""
    check_op_column(df, op_column, convention)
    if convention == "cdf":
        if "_commit_version" not in df.columns:
            raise ChangeFeedError(
                "A cdf change feed needs its _commit_version column to keep commits in order."
            )
        df = _cdf_key_changes(df, op_column=op_column, keys=keys)
        order_by = ("_commit_version", _CDF_PHASE, *[c for c in order_by if c != "_commit_version"])
    for col in order_by:
        if col not in df.columns:
            raise ConfigError(
                f"order_by column {col!r} is not in the DataFrame." + did_you_mean(col, df.columns)
            )
    return df, order_by


def _data_columns(df: DataFrame, *, keys: tuple[str, ...], dropped: set[str]) -> list[str]:
    """The published columns as SQL text (one call to the JVM for all, not a few per column):
    keys as they are, others NULL in a delete row (contract §4; ``CASE`` keeps the column's type)."""
    deleted = f"{_MARKER} = {int(RowMarker.DELETE)}"
    return [
        quoted(f.name)
        if f.name in keys
        else f"CASE WHEN {deleted} THEN NULL ELSE {quoted(f.name)} END AS {quoted(f.name)}"
        for f in df.schema.fields
        if f.name not in dropped
    ]


def _net_changes(shaped: DataFrame, *, keys: tuple[str, ...], hidden: list[str]) -> DataFrame:
    """Each key's last row (by the ``hidden`` order columns), marked with the key's net change."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    key_cols = [F.col(quoted(k)) for k in keys]
    last_first = Window.partitionBy(*key_cols).orderBy(*[F.col(h).desc() for h in hidden])
    net = F.when(F.col(ROW_MARKER).isin(INVALID_MARKER, int(RowMarker.DELETE)), F.col(ROW_MARKER))
    per_key = Window.partitionBy(*key_cols)
    # an invalid row anywhere in a key's changes must survive compaction to reject the push
    return (
        shaped.withColumn("_om_n", F.row_number().over(last_first))
        .withColumn("_om_count", F.count(F.lit(1)).over(per_key))
        .withColumn("_om_bad", F.max((F.col(ROW_MARKER) == INVALID_MARKER).cast("int")).over(per_key))
        .where(F.col("_om_n") == 1)
        .withColumn(
            ROW_MARKER,
            F.when(F.col("_om_bad") == 1, F.lit(INVALID_MARKER))
            .when(F.col("_om_count") == 1, F.col(ROW_MARKER))
            .otherwise(F.coalesce(net, F.lit(int(RowMarker.UPSERT)))),
        )
        .drop("_om_n", "_om_count", "_om_bad")
    )


def _by_key(df: DataFrame, keys: tuple[str, ...]) -> tuple[DataFrame, bool]:
    """``df`` with each key's rows in one partition, and whether that is one partition for all.
    A feed estimated small (``SMALL_FEED_BYTES``) is gathered into one partition without a
    shuffle (the order columns then put it back in input order: ``monotonically_increasing_id``
    is taken before the gathering). Otherwise hash-partitioned on the keys: with adaptive
    execution the partition count is left to it, so a modest feed is still one file, not one per
    partition of its source; a key stays in one partition, as coalescing keeps hash partitions
    whole. Without it, as many partitions as the source has."""
    from pyspark.sql import functions as F

    if estimated_bytes(df) <= SMALL_FEED_BYTES:
        return df.coalesce(1), True
    cols = [F.col(quoted(k)) for k in keys]
    conf = df.sparkSession.conf
    adaptive = conf.get("spark.sql.adaptive.enabled", "true") == "true"
    if adaptive and conf.get("spark.sql.adaptive.coalescePartitions.enabled", "true") == "true":
        return df.repartition(*cols), False
    return df.repartition(max(1, df.rdd.getNumPartitions()), *cols), False


def estimated_bytes(df: DataFrame) -> float:
    """Spark's estimate of ``df``'s size (its optimized plan's statistics). Sources that do not know
    their size (a JDBC query) say so with a huge value, so an unknown size never counts as small."""
    try:
        size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
        return float(size if isinstance(size, int) else str(size))  # py4j converts a BigInt, or not
    except Exception:  # an internal API: no estimate only means the shuffled path
        return float("inf")
