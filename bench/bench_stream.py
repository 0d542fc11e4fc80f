"""Streaming into the landing zone (issue 26): what a micro-batch costs, and rows per second.

1. **latency**: a file-source stream of 1,000-row Parquet files, one file per micro-batch, into one
   table through ``db.batch_sink`` (row markers, upserts). Per batch, the time from the batch's start
   in ``foreachBatch`` to its files being published (the sink returns once they are), ÷ a plain
   ``batch.write.parquet`` of the same batch, timed in the same ``foreachBatch`` call. The first
   batches (the table's initial load and JIT warm-up) are not counted; medians. The sink runs as
   by default (no progress callback); a second stream over the same files, into a second table,
   is profiled: the push's phases and Spark jobs (``_common.Profiler``), and the jobs the sink runs
   outside its push (a job group around the call). Its ratio is recorded too (``profiled``):
   listening to a push's progress costs calls of its own.
2. **throughput**: 10,000-row batches, the whole query (``availableNow``) from start to end: rows
   per second into one table, and into ten tables through a routed sink (``route=``, the route
   column spreads each batch over the ten; its tables applied ``parallel`` at a time, the default).

The sink's results are checked against the plan (rows per batch). Writes bench/results/stream.json.

Usage: .venv/bin/python bench/bench_stream.py [--batches 12] [--big-batches 8] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

import openmirror_nb as om
from openmirror_nb._core.runtime import get_spark

LATENCY_GOAL = 3.0
WARM_UP = 2


def make_feed(spark: Any, folder: Path, *, batches: int, rows: int, tables: int) -> None:
    """``batches`` Parquet files of ``rows`` change rows each (new keys, upserts), one per batch."""
    from pyspark.sql import functions as F

    folder.mkdir(parents=True)
    for i in range(batches):
        out = folder.parent / f"_write{i}"
        frame = (
            c.source(spark, rows)
            .withColumn("id", F.col("id") + i * rows)
            .withColumn("tbl", F.concat(F.lit("bench.t"), (F.col("id") % tables).cast("string")))
            .withColumn("op", F.lit(4))
        )
        frame.coalesce(1).write.parquet(str(out))
        part = next(out.glob("part-*.parquet"))
        part.rename(folder / f"batch-{i:05d}.parquet")
        shutil.rmtree(out)


def stream(spark: Any, folder: Path) -> Any:
    schema = spark.read.parquet(str(folder)).schema
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))


def latency(spark: Any, work: Path, batches: int) -> dict[str, Any]:
    """The batches timed as a sink runs by default (no progress callback), then again, into a
    second table, profiled through the push's progress events (phases, Spark jobs), which costs
    the push calls of its own: the headline is the first."""
    feed = work / "latency-feed"
    make_feed(spark, feed, batches=batches, rows=1000, tables=1)
    plain, pushed, _ = latency_run(spark, work, feed, profiled=False)
    plain_p, pushed_p, profiles = latency_run(spark, work, feed, profiled=True)
    plain, pushed, profiles = plain[WARM_UP:], pushed[WARM_UP:], profiles[WARM_UP:]
    plain_p, pushed_p = plain_p[WARM_UP:], pushed_p[WARM_UP:]
    ratio = round(c.median(pushed) / c.median(plain), 2)
    return {
        "batches_counted": len(pushed),
        "spark_jobs_per_batch": {
            "push": int(c.median([p["spark_jobs"] for p in profiles])),
            "sink, outside the push": int(c.median([p["sink_jobs_outside_the_push"] for p in profiles])),
        },
        "phases": c.summarize_phases(profiles),
        "rows_per_batch": 1000,
        "sink_seconds": [round(s, 4) for s in pushed],
        "plain_seconds": [round(s, 4) for s in plain],
        "median_sink_seconds": round(c.median(pushed), 4),
        "median_plain_seconds": round(c.median(plain), 4),
        "ratio": ratio,
        "profiled": {
            "median_sink_seconds": round(c.median(pushed_p), 4),
            "median_plain_seconds": round(c.median(plain_p), 4),
            "ratio": round(c.median(pushed_p) / c.median(plain_p), 2),
        },
        "goal": f"<= {LATENCY_GOAL}",
    }


def latency_run(
    spark: Any, work: Path, feed: Path, *, profiled: bool
) -> tuple[list[float], list[float], list[dict[str, Any]]]:
    """One stream over ``feed`` into a table of its own: per batch, the plain write's seconds, the
    sink's, and (``profiled``) the push's profile."""
    name = "profiled" if profiled else "timed"
    db = om.connect(work / f"latency-db-{name}")
    profiler = c.Profiler(spark)
    progress = profiler if profiled else None
    sink = db.batch_sink(table="bench.stream", keys=["id"], op_column="op", progress=progress)
    plain: list[float] = []
    pushed: list[float] = []
    profiles: list[dict[str, Any]] = []

    def timed_batch(df: Any, batch_id: int) -> None:
        df = df.drop("tbl")
        seconds, _ = c.timed(lambda: df.write.parquet(str(work / f"plain-{name}-{batch_id}")))
        plain.append(seconds)
        with profiler.push() as prof, SinkJobs(spark, f"bench-stream-{name}-{batch_id}") as outside:
            seconds, _ = c.timed(lambda: sink(df, batch_id))
        prof["sink_jobs_outside_the_push"] = outside.count()
        pushed.append(seconds)
        profiles.append(prof)
        got = sink.applied["bench.stream"].rows
        if sum(got.values()) != 1000:
            raise SystemExit(f"batch {batch_id} published {got}, planned 1000 rows")

    run(stream(spark, feed), timed_batch, work / f"latency-ckpt-{name}")
    return plain, pushed, profiles


def throughput(spark: Any, work: Path, batches: int, tables: int) -> dict[str, Any]:
    feed = work / f"feed-{tables}"
    make_feed(spark, feed, batches=batches, rows=10_000, tables=tables)
    db = om.connect(work / f"db-{tables}")
    if tables == 1:
        sink = db.batch_sink(table="bench.t0", keys=["id"], op_column="op")
        df = stream(spark, feed).drop("tbl")
    else:
        keys = {f"bench.t{i}": ["id"] for i in range(tables)}
        sink = db.batch_sink(route="tbl", keys=keys, op_column="op")
        df = stream(spark, feed)
    seconds, _ = c.timed(lambda: run(df, sink, work / f"ckpt-{tables}"))
    published = sum(TableFolderRows.rows(db, f"bench.t{i}") for i in range(tables))
    if published != batches * 10_000:
        raise SystemExit(f"{tables} table(s): {published} rows published, planned {batches * 10_000}")
    return {
        "tables": tables,
        "batches": batches,
        "rows_per_batch": 10_000,
        "seconds": round(seconds, 3),
        "rows_per_second": round(batches * 10_000 / seconds),
        "seconds_per_batch": round(seconds / batches, 3),
    }


class SinkJobs:
    """The Spark jobs a sink call runs outside its push (the push tags its own with a job group of
    its own, which the profiler counts): a job group around the call, put back after."""

    def __init__(self, spark: Any, group: str) -> None:
        self.sc, self.group = spark.sparkContext, group

    def __enter__(self) -> SinkJobs:
        self.before = self.sc.getLocalProperty("spark.jobGroup.id")
        self.sc.setLocalProperty("spark.jobGroup.id", self.group)
        return self

    def __exit__(self, *exc: object) -> None:
        self.sc.setLocalProperty("spark.jobGroup.id", self.before)

    def count(self) -> int:
        return len(self.sc.statusTracker().getJobIdsForGroup(self.group))


class TableFolderRows:
    @staticmethod
    def rows(db: Any, table: str) -> int:
        import pyarrow.parquet as pq

        folder = Path(db.target.landing_zone) / table.replace(".", ".schema/", 1)
        return sum(pq.ParquetFile(p).metadata.num_rows for p in folder.glob("0*.parquet"))


def run(df: Any, fn: Any, checkpoint: Path) -> None:
    query = (
        df.writeStream.foreachBatch(fn)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=12, help="1,000-row batches (latency)")
    parser.add_argument("--big-batches", type=int, default=8, help="10,000-row batches (throughput)")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.batches, args.big_batches = 4, 2
    load_before = c.loadavg()
    spark = get_spark()
    work = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    started = time.time()
    try:
        lat = latency(spark, work, args.batches + WARM_UP)
        one = throughput(spark, work, args.big_batches, 1)
        ten = throughput(spark, work, args.big_batches, 10)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {
        "benchmark": "streamed micro-batches through db.batch_sink (file source, availableNow)",
        "quick": args.quick,
        "latency": lat,
        "throughput": {"one_table": one, "ten_tables": ten},
        "wall_seconds": round(time.time() - started, 1),
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
        "headline": {
            "figure": "1,000-row batch start -> files published ÷ plain write of the batch; rows/s (1 / 10 tables)",
            "value": f"{lat['ratio']}x; {one['rows_per_second']:,} / {ten['rows_per_second']:,} rows/s",
            "goal": f"<= {LATENCY_GOAL}x",
            "met": lat["ratio"] <= LATENCY_GOAL,
        },
    }
    path = c.write_result("stream", out)
    print(out["headline"])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
