"""Our initial load (db.push) vs the path other tools take, and where that path runs out of memory.

Part 1 (same Spark session, same DataFrame, alternating order, medians; issue 4 goal: ours >= 3x
faster at 2M rows): the peers' path is ``df.toPandas()`` (Arrow enabled, its fastest setting) ->
``pyarrow.Table.from_pandas`` -> ``pq.write_table`` of one file ``00000000000000000001.parquet``
into the table folder, plus ``_metadata.json``. Ours is ``db.push(df, keys=["id"])``. The same
path with Spark's default row-based toPandas (Arrow off) is timed too (--no-arrow-reps).

Part 2: in separate processes, each with ``OPENMIRROR_DRIVER_MEMORY=1g`` and a timeout, the
peers' path (Arrow on) at increasing sizes (2M, 3M, 4M, 5M, 10M, 20M rows by default) until it
fails; then our push at the size where it failed, also in a 1g-driver process. The source has
2 partitions (``spark.range`` on local[2]), so each toPandas task carries half the rows. Peak RSS
of each process tree (Python + JVM) is sampled from /proc. Writes bench/results/vs_pandas.json.

Usage: .venv/bin/python bench/bench_vs_pandas.py [--rows 2000000] [--repeat 3]
           [--sizes 2000000,3000000,4000000,5000000,10000000,20000000] [--timeout 1200] [--quick]
Child mode (used by part 2): bench_vs_pandas.py --child pandas|ours --rows N
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

GOAL = 3.0
TABLE = "bench.orders"
FOLDER = ("bench.schema", "orders")  # the table folder of TABLE in the landing zone


def peers_path(df: Any, root: Path) -> int:
    """collect to pandas, one Parquet file with pyarrow, write it into the table folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pdf = df.toPandas()
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    del pdf
    folder = root / "Files" / "LandingZone" / Path(*FOLDER)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    pq.write_table(table, folder / f"{1:020d}.parquet")
    return table.num_rows


def our_push(df: Any, root: Path, progress: Any = False) -> int:
    import openmirror_nb as om

    result = om.connect(root).push(df, table=TABLE, keys=["id"], progress=progress)
    return result.total_rows


def spark_session(arrow: bool = True) -> Any:
    from openmirror_nb._core.runtime import get_spark

    spark = get_spark()
    set_arrow(spark, arrow)
    return spark


def set_arrow(spark: Any, on: bool) -> None:
    """Arrow-based toPandas is the peers' best case (Spark's own default is off); the setting
    changes nothing on our path."""
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true" if on else "false")
    spark.conf.set("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")


def child(kind: str, rows: int) -> None:
    def run() -> dict[str, Any]:
        spark = spark_session()
        work = Path(tempfile.mkdtemp(prefix=f"bench-vsp-{kind}-"))
        try:
            fn = peers_path if kind == "pandas" else our_push
            start = time.perf_counter()
            n = fn(c.source(spark, rows), work / "db")
            seconds = time.perf_counter() - start
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if n != rows:
            raise RuntimeError(f"wrote {n} rows, expected {rows}")
        return {"kind": kind, "rows": rows, "seconds": round(seconds, 2), **c.jvm_memory(spark)}

    c.child_main(run)


def plain_write(df: Any, root: Path) -> int:
    """Context only: a plain Spark ``df.write.parquet`` of the same frame (no checks, no state)."""
    df.write.parquet(str(root / "plain"))
    return -1


def same_run(rows: int, repeat: int, no_arrow_reps: int) -> dict[str, Any]:
    spark = spark_session()
    df = c.source(spark, rows)
    work = Path(tempfile.mkdtemp(prefix="bench-vsp-"))
    peers, ours, plain, profiles = [], [], [], []
    profiler = c.Profiler(spark).install()
    try:
        # warm-up all paths (JIT, class loading, Arrow, first-job costs)
        peers_path(c.source(spark, 100_000), work / "warm-p")
        our_push(c.source(spark, 100_000), work / "warm-o")
        plain_write(c.source(spark, 100_000), work / "warm-w")
        for rep in range(repeat):
            profiled = functools.partial(our_push, progress=profiler)
            order = [("pandas", peers_path, peers), ("ours", profiled, ours), ("plain", plain_write, plain)]
            if rep % 2:
                order.reverse()
            for kind, fn, times in order:
                root = work / f"{kind}{rep}"
                with profiler.push() as prof:
                    seconds, n = c.timed(lambda fn=fn, root=root: fn(df, root))
                if kind == "ours":
                    profiles.append(prof)
                if kind != "plain" and n != rows:
                    raise SystemExit(f"{kind} wrote {n} rows, expected {rows}")
                times.append(round(seconds, 3))
                shutil.rmtree(root)
            print(
                f"rep {rep + 1}: pandas path {peers[-1]:.2f} s, db.push {ours[-1]:.2f} s, "
                f"plain df.write.parquet {plain[-1]:.2f} s",
                flush=True,
            )
        profiler.restore()
        set_arrow(spark, False)  # the same path with Spark's default (row-based) toPandas
        no_arrow = []
        for rep in range(no_arrow_reps):
            root = work / f"noarrow{rep}"
            seconds, _ = c.timed(lambda root=root: peers_path(df, root))
            no_arrow.append(round(seconds, 3))
            shutil.rmtree(root)
            print(f"pandas path without Arrow: {seconds:.2f} s", flush=True)
        set_arrow(spark, True)
    finally:
        profiler.restore()
        shutil.rmtree(work, ignore_errors=True)
    speedup = c.median(peers) / c.median(ours)
    return {
        "rows": rows,
        "repeat": repeat,
        "pandas_path_seconds": peers,
        "push_seconds": ours,
        "plain_spark_write_seconds": plain,
        "median_pandas_path_seconds": round(c.median(peers), 3),
        "median_push_seconds": round(c.median(ours), 3),
        "median_plain_spark_write_seconds": round(c.median(plain), 3),
        "ratio_push_over_pandas": round(c.median(ours) / c.median(peers), 3),
        "speedup": round(speedup, 3),
        "pandas_path_without_arrow_seconds": no_arrow,
        "speedup_vs_pandas_path_without_arrow": round(c.median(no_arrow) / c.median(ours), 3)
        if no_arrow
        else None,
        "goal": f"ours >= {GOAL}x faster",
        "meets_goal": speedup >= GOAL,
        "push_phases_median": c.summarize_phases(profiles),
        **c.machine(spark),
    }


def snapshot_run(rows: int, repeat: int) -> dict[str, Any]:
    """The case snapshots are about: the table holds yesterday's snapshot and today's differs by
    1%. The peers' path collects and writes the whole snapshot again (peers.md §4, §6); ours
    publishes the diff. Our initial load is done untimed first, in a fresh database per rep."""
    import openmirror_nb as om

    spark = spark_session()
    changed = c.changed_source(spark, rows)
    work = Path(tempfile.mkdtemp(prefix="bench-vsp-snap-"))
    peers, ours = [], []
    try:
        warm = om.connect(work / "warm")
        warm.push(c.source(spark, 100_000), table=TABLE, keys=["id"])
        warm.push(c.changed_source(spark, 100_000), table=TABLE, keys=["id"])
        for rep in range(repeat):
            db = om.connect(work / f"ours{rep}")
            db.push(c.source(spark, rows), table=TABLE, keys=["id"])
            order = [("pandas", peers), ("ours", ours)]
            if rep % 2:
                order.reverse()
            for kind, times in order:
                if kind == "pandas":
                    seconds, n = c.timed(lambda rep=rep: peers_path(changed, work / f"pandas{rep}"))
                    if n != rows + rows // 1000 - c.planned_changes(rows)["delete"]:
                        raise SystemExit(f"pandas path wrote {n} rows")
                else:
                    seconds, result = c.timed(lambda db=db: db.push(changed, table=TABLE, keys=["id"]))
                    if result.rows != c.planned_changes(rows):
                        raise SystemExit(f"the diff published {result.rows}")
                times.append(round(seconds, 3))
            shutil.rmtree(work / f"pandas{rep}")
            shutil.rmtree(work / f"ours{rep}")
            print(f"snapshot rep {rep + 1}: pandas path {peers[-1]:.2f} s, db.push (diff) {ours[-1]:.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    speedup = c.median(peers) / c.median(ours)
    return {
        "rows": rows,
        "repeat": repeat,
        "changed_fraction": round(sum(c.planned_changes(rows).values()) / rows, 4),
        "pandas_path_seconds": peers,
        "push_diff_seconds": ours,
        "median_pandas_path_seconds": round(c.median(peers), 3),
        "median_push_diff_seconds": round(c.median(ours), 3),
        "speedup": round(speedup, 3),
        "goal": f"ours >= {GOAL}x faster",
        "meets_goal": speedup >= GOAL,
    }


def memory_limit(sizes: list[int], timeout: float) -> dict[str, Any]:
    env = {"OPENMIRROR_DRIVER_MEMORY": "1g"}
    me = str(Path(__file__).resolve())
    runs, failed_at = [], None
    for rows in sizes:
        c.require_disk(2 + rows / 5_000_000)
        res = c.run_child([me, "--child", "pandas", "--rows", str(rows)], env=env, timeout=timeout)
        res.update(kind="pandas", rows=rows, failure=c.failure_kind(res))
        runs.append(res)
        print(
            f"pandas path, {rows:,} rows, 1g driver: {res['failure'] or 'ok'} ({res['wall_seconds']} s)",
            flush=True,
        )
        if res["failure"]:
            failed_at = rows
            break
    ours_size = failed_at or sizes[-1]
    res = c.run_child([me, "--child", "ours", "--rows", str(ours_size)], env=env, timeout=timeout)
    res.update(kind="ours", rows=ours_size, failure=c.failure_kind(res))
    runs.append(res)
    print(
        f"db.push, {ours_size:,} rows, 1g driver: {res['failure'] or 'ok'} ({res['wall_seconds']} s)",
        flush=True,
    )
    for r in runs:  # keep the JSON readable: the stderr tail only where it explains a failure
        if not r["failure"]:
            r.pop("stderr_tail")
            r.pop("stderr_errors")
    return {
        "driver_memory": "1g",
        "sizes_tried": sizes,
        "timeout_seconds": timeout,
        "pandas_path_fails_at_rows": failed_at,
        "ours_at_that_size_ok": res["failure"] is None,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="2000000,3000000,4000000,5000000,10000000,20000000")
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--no-arrow-reps", type=int, default=1, help="runs of the path with Arrow off")
    parser.add_argument("--skip-memory", action="store_true", help="only the same-run comparison")
    parser.add_argument("--quick", action="store_true", help="500k rows, 2 reps, sizes 1M,2M (smoke run)")
    parser.add_argument("--child", choices=("pandas", "ours"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.rows)
        return
    if args.quick:
        args.rows, args.repeat, args.sizes, args.timeout = 500_000, 2, "1000000,2000000", 300
    c.require_disk(3)
    load_before = c.loadavg()
    out: dict[str, Any] = {
        "benchmark": "db.push (initial load; 1%-changed later snapshot) vs toPandas -> pyarrow -> one Parquet file",
        "quick": args.quick,
        "same_run": same_run(args.rows, args.repeat, args.no_arrow_reps),
    }
    out["loadavg_after_same_run"] = c.loadavg()
    out["later_snapshot"] = snapshot_run(args.rows, args.repeat)
    if not args.skip_memory:
        sizes = [int(s) for s in args.sizes.split(",")]
        out["memory_limit"] = memory_limit(sizes, args.timeout)
    out["loadavg_before"] = load_before
    out["loadavg_after"] = c.loadavg()
    s = out["same_run"]
    out["headline"] = {
        "figure": f"pandas path ÷ db.push at {args.rows:,} rows (speedup), initial load",
        "value": s["speedup"],
        "goal": f">= {GOAL}",
        "met": s["meets_goal"],
        "later_snapshot_1pct_changed": out["later_snapshot"]["speedup"],
        "later_snapshot_met": out["later_snapshot"]["meets_goal"],
    }
    if "memory_limit" in out:
        m = out["memory_limit"]
        out["headline"]["pandas_path_fails_at_rows_1g"] = m["pandas_path_fails_at_rows"]
        out["headline"]["ours_ok_at_that_size_1g"] = m["ours_at_that_size_ok"]
    path = c.write_result("vs_pandas", out)
    print(json.dumps(out["headline"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
