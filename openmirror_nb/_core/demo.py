"""The end-to-end demo behind ``openmirror demo``: a generated orders table, its initial load, a
change batch, and (when the local mirror is available) replication and a read-back check."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from openmirror_nb import ConfigError, connect, get_spark

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
    """Run the demo and yield what it did, line by line.

    Run it again and it pushes a new snapshot of the same table: only the difference is
    published. Every run ends with the local mirror replicating the table and a read-back check.
    """
    spark = get_spark()
    db = connect(path)
    mirror = db.local_mirror
    if mirror is None:
        raise ConfigError("The demo runs on a local mirrored database; pass a folder.")
    yield f"Mirrored database: {db.target}"
    pushes = db.describe(TABLE).pushes if TABLE in db.tables() else 0
    if pushes == 0:
        result = db.push(sample_orders(spark, rows=rows), table=TABLE, keys=["order_id"])
        yield f"Initial load:  {result}"
    else:
        # the source table again, grown a little and without every 211th order
        grown = sample_orders(spark, rows=rows + 25 * pushes)
        result = db.push(grown.where(f"order_id % 211 != {pushes % 211}"), table=TABLE)
        yield f"Snapshot diff: {result}"
    batch = pushes + 1
    result = db.push(change_batch(spark, rows=rows, batch=batch), table=TABLE, mode="changes", op_column="op")
    yield f"Change batch:  {result}"
    for published in result.files:
        yield f"  published {published}"
    run = mirror.run_once()
    yield f"Local mirror:  {run!r}"
    frame: Any = db.read_table(TABLE, as_pandas=True)
    yield f"Read back {TABLE}: {len(frame):,} rows in Tables/demo/orders"
    recon = db.reconcile(TABLE)
    yield f"Row counts:    {recon.verdict}: {recon.message}"
    yield ""
    yield from str(db.status()).splitlines()
