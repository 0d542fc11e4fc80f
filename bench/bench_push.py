"""Initial load of N rows through db.push ÷ a plain df.write.parquet of the same DataFrame
(issue 25: <= 2.0 on narrow rows, <= 1.3 on 30 columns).

Two shapes, each against its own plain write in the same session: **narrow** (long, long,
double, string: the row that decides) and **wide** (30 columns: longs, doubles, strings,
decimals, timestamps). Plain writes and pushes alternate after a warm-up; medians of --repeat.
Every push is profiled per phase with its Spark jobs (``ProgressEvent.jobs``).
Usage: .venv/bin/python bench/bench_push.py [--rows 5000000] [--repeat 3] [--shapes narrow,wide]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

import openmirror_nb as om
from openmirror_nb._core.runtime import get_spark

GOALS = {"narrow": 2.0, "wide": 1.3}


def narrow(spark: Any, rows: int) -> Any:
    """long, long, double, string."""
    from pyspark.sql import functions as F

    return spark.range(rows).select(
        F.col("id"),
        (F.col("id") * 7 % 100_003).alias("ref"),
        (F.col("id") * 0.37).alias("price"),
        F.concat(F.lit("item-"), (F.col("id") % 9973).cast("string")).alias("name"),
    )


def wide(spark: Any, rows: int) -> Any:
    """30 columns: the key, then longs, doubles, strings, decimals and timestamps in turn."""
    from pyspark.sql import functions as F

    id_ = F.col("id")
    kinds = [
        lambda i: (id_ * (i + 3) % 1_000_003).alias(f"n{i:02d}"),
        lambda i: (id_ * (0.5 + i)).alias(f"d{i:02d}"),
        lambda i: F.concat(F.lit(f"s{i}-"), (id_ % (97 + i)).cast("string")).alias(f"s{i:02d}"),
        lambda i: ((id_ % 100_000) / (i + 1)).cast("decimal(18,2)").alias(f"m{i:02d}"),
        lambda i: (F.lit(1_760_000_000) + id_ + i).cast("timestamp").alias(f"t{i:02d}"),
    ]
    return spark.range(rows).select(id_, *[kinds[i % len(kinds)](i) for i in range(29)])


SHAPES = {"narrow": narrow, "wide": wide}


def measure(
    spark: Any, work: Path, shape: str, rows: int, repeat: int, profiler: c.Profiler
) -> dict[str, Any]:
    make = SHAPES[shape]
    plain, ours, files, profiles = [], [], [], []
    make(spark, 100_000).write.parquet(str(work / f"warm-{shape}"))  # warm-up: JIT, first-job costs
    om.connect(work / f"warmdb-{shape}").push(make(spark, 100_000), table="warm", keys=["id"], progress=False)
    for i in range(repeat):
        target = str(work / f"plain-{shape}{i}")
        seconds, _ = c.timed(lambda target=target: make(spark, rows).write.parquet(target))
        plain.append(round(seconds, 3))
        db = om.connect(work / f"db-{shape}{i}")
        with profiler.push() as prof:
            seconds, result = c.timed(
                lambda db=db: db.push(make(spark, rows), table="bench.orders", keys=["id"], progress=profiler)
            )
        if result.rows != {"initial": rows}:
            raise SystemExit(f"the initial load published {result.rows}, expected {rows} rows")
        ours.append(round(seconds, 3))
        files.append(len(result.sequence_numbers))
        profiles.append(prof)
        print(f"{shape} rep {i + 1}: plain {plain[-1]:.2f} s, push {ours[-1]:.2f} s", flush=True)
        shutil.rmtree(target)
        shutil.rmtree(work / f"db-{shape}{i}")
    ratio = c.median(ours) / c.median(plain)
    return {
        "columns": len(make(spark, 1).columns),
        "plain_write_seconds": plain,
        "push_seconds": ours,
        "published_files": files,
        "median_plain_seconds": round(c.median(plain), 3),
        "median_push_seconds": round(c.median(ours), 3),
        "ratio": round(ratio, 3),
        "goal": f"<= {GOALS[shape]}",
        "met": ratio <= GOALS[shape],
        "spark_jobs": profiles[0]["spark_jobs"],
        "phases_median": c.summarize_phases(profiles),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default="narrow,wide")
    parser.add_argument("--quick", action="store_true", help="500k rows, 2 repetitions (smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeat = 500_000, 2
    c.require_disk(4)
    load_before = c.loadavg()
    spark = get_spark()
    profiler = c.Profiler(spark)
    work = Path(tempfile.mkdtemp(prefix="bench-push-"))
    try:
        shapes = {
            s: measure(spark, work, s, args.rows, args.repeat, profiler) for s in args.shapes.split(",")
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {
        "benchmark": "initial load: db.push ÷ df.write.parquet",
        "rows": args.rows,
        "repeat": args.repeat,
        "quick": args.quick,
        "shapes": shapes,
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
    }
    first = next(iter(shapes))
    out["ratio"] = shapes[first]["ratio"]
    out["headline"] = {
        "figure": f"initial load of {args.rows:,} rows ÷ plain df.write.parquet: "
        + " / ".join(f"{s} ({v['columns']} columns)" for s, v in shapes.items()),
        "value": " / ".join(str(v["ratio"]) for v in shapes.values()),
        "goal": " / ".join(v["goal"] for v in shapes.values()),
        "met": all(v["met"] for v in shapes.values()),
    }
    path = c.write_result("push", out)
    print(f"{out['headline']}; wrote {path}")


if __name__ == "__main__":
    main()
