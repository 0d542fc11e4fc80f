"""Small pushes, where a push's fixed cost shows, each ÷ a plain ``df.write.parquet`` of the same
rows in the same run (issue 25).

Per repetition, in a fresh local mirrored database holding a table of N rows (the 8-column
``source()`` frame; its initial load is not timed):

1. **snapshot**: the N-row table with 1,000 rows changed (``changed_source``: 0.8% updated, 0.1%
   deleted, 0.1% new) ÷ a plain write of the 1,000 changed rows, and ÷ the *floor*: hashing the
   N-row snapshot, reading an N-row key state and joining them, writing the changed keys;
2. **unchanged snapshot**: the same snapshot pushed again: its time, and every file it created
   or changed in the table folder (the lock lives outside it);
3. **change feed**: 1,000 rows with ``__rowMarker__`` (500 upserts and 250 deletes of existing
   keys, 250 inserts of new ones) ÷ a plain write of the same 1,000-row frame.

Published counts are checked against the plan. One warm-up repetition, then --repeat (>= 5)
timed ones; medians. Every push is profiled per phase with its Spark jobs (``ProgressEvent.jobs``).
Writes bench/results/small.json.

Usage: .venv/bin/python bench/bench_small.py [--rows 100000] [--repeat 7] [--quick]
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

TABLE = "bench.small"
FEED_GOAL, SNAPSHOT_GOAL, FLOOR_GOAL = 3.0, 6.0, 1.5
FEED_PLAN = {"insert": 250, "upsert": 500, "delete": 250}


def feed(spark: Any, rows: int) -> Any:
    """1,000 change rows against a table of ``rows`` keys (``FEED_PLAN``)."""
    from pyspark.sql import functions as F

    new = rows + rows // 1000  # past the keys the snapshot adds
    old = F.col("id") < rows
    picked = (old & (F.col("id") % 400 < 3) & (F.col("id") < 400 * 250)) | (F.col("id") >= new)
    marker = F.when(~old, 0).when(F.col("id") % 400 == 0, 2).otherwise(4)
    return (
        c.source(spark, new + 250)
        .where(picked)
        .withColumn("status", F.lit("changed"))
        .withColumn("__rowMarker__", marker.cast("int"))
    )


def changes(spark: Any, rows: int) -> Any:
    """The 1,000 rows ``changed_source`` changes, as a frame of the table's shape."""
    from pyspark.sql import functions as F

    mod = F.col("id") % 1000
    touched = mod.isin(*c.UPDATED_MOD, *c.DELETED_MOD) | (F.col("id") >= rows)
    return c.source(spark, rows + rows // 1000).where(touched)


def hashed(frame: Any) -> Any:
    from openmirror_nb._core.pipeline.keystate import hashes as keystate

    h1, h2 = keystate.row_hashes(frame, keys=("id",))
    return frame.select("id", h1.alias("h1"), h2.alias("h2"))


def floor(spark: Any, rows: int, state: str, out: str) -> None:
    """What a snapshot diff cannot avoid: hash the snapshot, read the key state, join, write."""
    from pyspark.sql import functions as F

    old = spark.read.parquet(state).select("id", F.col("h1").alias("o1"), F.col("h2").alias("o2"))
    joined = hashed(c.changed_source(spark, rows)).join(old, ["id"], "full_outer")
    changed = F.col("h1").isNull() | F.col("o1").isNull() | (F.col("h1") != F.col("o1"))
    joined.where(changed | (F.col("h2") != F.col("o2"))).select("id").write.parquet(out)


def files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def one_rep(spark: Any, work: Path, rep: int, rows: int, profiler: c.Profiler) -> dict[str, Any]:
    db = om.connect(work / f"db{rep}")
    db.push(c.source(spark, rows), table=TABLE, keys=["id"], progress=False)
    scratch = c.Scratch(spark, work / f"plain{rep}")
    out: dict[str, Any] = {"profiles": {}}

    def push(name: str, frame: Any, **kw: Any) -> Any:
        with profiler.push() as prof:
            seconds, result = c.timed(
                lambda: db.push(frame, table=TABLE, keys=["id"], progress=profiler, **kw)
            )
        out[name], out["profiles"][name] = seconds, prof
        return result

    out["plain_changes"], _ = c.timed(lambda: changes(spark, rows).write.parquet(scratch.fresh()))
    state = scratch.fresh()
    hashed(c.source(spark, rows)).write.parquet(state)
    out["floor"], _ = c.timed(lambda: floor(spark, rows, state, scratch.fresh()))
    planned = c.planned_changes(rows)
    got = push("snapshot", c.changed_source(spark, rows))
    if got.rows != planned:
        raise SystemExit(f"the snapshot published {got.rows}, planned {planned}")
    folder = work / f"db{rep}" / "Files" / "LandingZone" / "bench.schema" / "small"
    before = files(folder)
    got = push("unchanged", c.changed_source(spark, rows))
    after = files(folder)
    if got.rows or got.sequence_numbers:
        raise SystemExit(f"the unchanged snapshot published {got.rows}")
    out["unchanged_wrote"] = sorted(p for p in after if before.get(p) != after[p])
    out["unchanged_removed"] = sorted(set(before) - set(after))
    out["plain_feed"], _ = c.timed(lambda: feed(spark, rows).write.parquet(scratch.fresh()))
    got = push("feed", feed(spark, rows), mode="changes")
    if got.rows != FEED_PLAN:
        raise SystemExit(f"the change feed published {got.rows}, planned {FEED_PLAN}")
    shutil.rmtree(work / f"db{rep}")
    shutil.rmtree(work / f"plain{rep}", ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2 repetitions (smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.repeat = 2
    load_before = c.loadavg()
    spark = get_spark()
    profiler = c.Profiler(spark)
    work = Path(tempfile.mkdtemp(prefix="bench-small-"))
    try:
        one_rep(spark, work, 0, args.rows, profiler)  # warm-up: JIT, class loading, every flow once
        reps = [one_rep(spark, work, i + 1, args.rows, profiler) for i in range(args.repeat)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = summarize(args, reps, load_before, spark)
    path = c.write_result("small", out)
    for name in ("feed", "snapshot", "unchanged"):
        print(f"{name:10s} {out[name]['median_seconds']:.3f} s  {out[name]}")
    print(f"wrote {path}")


def _median(reps: list[dict[str, Any]], name: str) -> float:
    return round(c.median([r[name] for r in reps]), 4)


def summarize(args: Any, reps: list[dict[str, Any]], load_before: Any, spark: Any) -> dict[str, Any]:
    m = {
        k: _median(reps, k) for k in ("feed", "snapshot", "unchanged", "plain_feed", "plain_changes", "floor")
    }
    feed_ratio = round(m["feed"] / m["plain_feed"], 2)
    snap_ratio = round(m["snapshot"] / m["plain_changes"], 2)
    floor_ratio = round(m["snapshot"] / m["floor"], 2)
    snap_met = snap_ratio <= SNAPSHOT_GOAL or floor_ratio <= FLOOR_GOAL
    wrote = sorted({p for r in reps for p in r["unchanged_wrote"]})

    def phases(name: str) -> list[dict[str, Any]]:
        return c.summarize_phases([r["profiles"][name] for r in reps])

    def jobs(name: str) -> int:
        return int(c.median([r["profiles"][name]["spark_jobs"] for r in reps]))

    return {
        "benchmark": "small pushes into a table of N rows ÷ a plain df.write.parquet of the same rows",
        "rows": args.rows,
        "repeat": args.repeat,
        "quick": args.quick,
        "seconds": {k: [round(r[k], 4) for r in reps] for k in m},
        "median_seconds": m,
        "feed": {
            "median_seconds": m["feed"],
            "ratio_to_plain_write": feed_ratio,
            "spark_jobs": jobs("feed"),
            "goal": f"<= {FEED_GOAL}",
        },
        "snapshot": {
            "median_seconds": m["snapshot"],
            "ratio_to_plain_write_of_changes": snap_ratio,
            "ratio_to_floor": floor_ratio,
            "spark_jobs": jobs("snapshot"),
            "goal": f"<= {SNAPSHOT_GOAL} x the plain write, or <= {FLOOR_GOAL} x the floor",
        },
        "unchanged": {
            "median_seconds": m["unchanged"],
            "ratio_to_plain_write_of_changes": round(m["unchanged"] / m["plain_changes"], 2),
            "spark_jobs": jobs("unchanged"),
            "files_written": wrote,
        },
        "phases_median": {name: phases(name) for name in ("feed", "snapshot", "unchanged")},
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
        "headline": {
            "figure": "1,000-row change feed / 1,000-change snapshot of 100k rows ÷ plain write of the rows",
            "value": f"{feed_ratio}x / {snap_ratio}x ({floor_ratio}x the floor); unchanged wrote {len(wrote)} file(s)",
            "goal": f"<= {FEED_GOAL}x / <= {SNAPSHOT_GOAL}x (or <= {FLOOR_GOAL}x the floor)",
            "met": feed_ratio <= FEED_GOAL and snap_met,
        },
    }


if __name__ == "__main__":
    main()
