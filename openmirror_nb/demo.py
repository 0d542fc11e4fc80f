"""The end-to-end demo behind ``openmirror demo``: a generated orders table, its initial load, a
change batch, and (when the local mirror is available) replication and a read-back check."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from openmirror_nb.api import connect
from openmirror_nb.state import read_state

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TABLE = "demo.orders"


def sample_orders(spark: SparkSession, *, rows: int, start: int = 0) -> DataFrame:
    """A deterministic orders table with a decimal, a timestamp and a nested column."""
    from pyspark.sql import functions as F

    ids = spark.range(start, start + rows)
    status = F.array(F.lit("new"), F.lit("paid"), F.lit("shipped"))
    start_ts = F.lit("2026-01-01 00:00:00").cast("timestamp")
    return ids.select(
        F.col("id").alias("order_id"),
        F.concat(F.lit("customer-"), (F.col("id") % 997).cast("string")).alias("customer"),
        ((F.col("id") % 10_000) / 100).cast("decimal(18,2)").alias("amount"),
        F.element_at(status, (F.col("id") % 3 + 1).cast("int")).alias("status"),
        (start_ts + F.make_interval(mins=F.col("id").cast("int"))).alias("ordered_at"),
        F.array(F.struct((F.col("id") % 5).alias("sku"), F.lit(1).alias("qty"))).alias("items"),
    )


def change_batch(spark: SparkSession, *, rows: int, batch: int) -> DataFrame:
    """Updates (4) of every 97th order, deletes (2) of every 101st, inserts (0) of 50 new ones."""
    from pyspark.sql import functions as F

    base = sample_orders(spark, rows=rows)
    updates = base.where(F.col("order_id") % 97 == batch % 97).withColumn("status", F.lit("refunded"))
    deletes = base.where(F.col("order_id") % 101 == batch % 101)
    inserts = sample_orders(spark, rows=50, start=rows + 1000 * batch)
    return (
        updates.withColumn("op", F.lit(4))
        .unionByName(deletes.withColumn("op", F.lit(2)))
        .unionByName(inserts.withColumn("op", F.lit(0)))
    )


def run_demo(path: str | None, *, rows: int = 10_000) -> Iterator[str]:
    """Run the demo and yield what it did, line by line."""
    from openmirror_nb.model import TableRef
    from openmirror_nb.runtime import get_spark

    spark = get_spark()
    db = connect(path)
    yield f"Mirrored database: {db.target}"
    state = read_state(db.storage, TableRef.parse(TABLE).folder)
    if state is None:
        result = db.push(sample_orders(spark, rows=rows), table=TABLE, keys=["order_id"])
        yield f"Initial load:  {result}"
    batch = state.pushes if state else 1
    changes = change_batch(spark, rows=rows, batch=batch)
    result = db.push(changes, table=TABLE, mode="changes", op_column="op")
    yield f"Change batch:  {result}"
    for path_ in result.files:
        yield f"  published {path_}"
    yield from _mirror(db)


def _mirror(db: object) -> Iterator[str]:
    try:
        from openmirror_nb.mirror import LocalMirror
    except ImportError:
        return
    from openmirror_nb.api import MirroredDatabase

    assert isinstance(db, MirroredDatabase)
    run = LocalMirror(db.target.root if hasattr(db.target, "root") else None).run_once()
    yield f"Local mirror:  {run!r}"
    frame: Any = db.read_table(TABLE, as_pandas=True)
    yield f"Read back {TABLE}: {len(frame):,} rows"
