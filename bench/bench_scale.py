"""Scale: a 20M-row snapshot push with ``spark.driver.memory=1g`` (issue 4, item 4).

In a child process started with ``OPENMIRROR_DRIVER_MEMORY=1g`` (the driver memory applies only
when the session is created): the initial load of the 8-column ``source()`` frame of N rows,
then a snapshot with 1% of rows changed (0.8% updated, 0.1% deleted, 0.1% new keys) published
as a diff and checked against the planned counts. The parent records success, seconds per
push, the per-stage/Spark-job profile, the JVM's max heap and GC time, and the peak RSS of the
child's whole process tree (Python + JVM, sampled from /proc). Writes bench/results/scale.json.

Usage: .venv/bin/python bench/bench_scale.py [--rows 20000000] [--memory 1g] [--timeout 2400] [--quick]
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

TABLE = "bench.orders"


def child(rows: int) -> None:
    def run() -> dict[str, Any]:
        import openmirror_nb as om
        from openmirror_nb._core.runtime import get_spark

        spark = get_spark()
        profiler = c.Profiler(spark).install()
        work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
        try:
            db = om.connect(work / "db")
            with profiler.push() as p_init:
                start = time.perf_counter()
                r_init = db.push(c.source(spark, rows), table=TABLE, keys=["id"], progress=profiler)
                s_init = time.perf_counter() - start
            if r_init.rows != {"initial": rows}:
                raise RuntimeError(f"initial load published {r_init.rows}, expected {rows} rows")
            planned = c.planned_changes(rows)
            with profiler.push() as p_diff:
                start = time.perf_counter()
                r_diff = db.push(c.changed_source(spark, rows), table=TABLE, keys=["id"], progress=profiler)
                s_diff = time.perf_counter() - start
            if r_diff.rows != planned:
                raise RuntimeError(f"the diff published {r_diff.rows}, planned {planned}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {
            "rows": rows,
            "initial_seconds": round(s_init, 2),
            "diff_seconds": round(s_diff, 2),
            "initial_files": len(r_init.sequence_numbers),
            "initial_bytes": r_init.bytes,
            "diff_rows": r_diff.rows,
            "diff_rows_planned": planned,
            "diff_bytes": r_diff.bytes,
            "profile_initial": p_init,
            "profile_diff": p_diff,
            **c.jvm_memory(spark),
            **c.machine(spark),
        }

    c.child_main(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--memory", default="1g", help="spark.driver.memory of the child")
    parser.add_argument("--timeout", type=float, default=2400)
    parser.add_argument("--quick", action="store_true", help="2M rows (smoke run)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.rows)
        return
    if args.quick:
        args.rows, args.timeout = 2_000_000, 600
    c.require_disk(4 + args.rows / 2_000_000)
    free_before = round(c.free_gib(), 1)
    load_before = c.loadavg()
    res = c.run_child(
        [str(Path(__file__).resolve()), "--child", "--rows", str(args.rows)],
        env={"OPENMIRROR_DRIVER_MEMORY": args.memory},
        timeout=args.timeout,
    )
    failure = c.failure_kind(res)
    result = res.pop("result") or {}
    if failure is None:
        res.pop("stderr_tail")
        res.pop("stderr_errors")
    out = {
        "benchmark": f"{args.rows:,}-row snapshot push (initial load + 1%-changed diff), driver {args.memory}",
        "rows": args.rows,
        "driver_memory": args.memory,
        "quick": args.quick,
        "success": failure is None,
        "failure": failure,
        **res,
        "child": result,
        "free_gib_tmp_before": free_before,
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        "headline": {
            "figure": f"{args.rows:,}-row snapshot push (initial + diff) with a {args.memory} driver",
            "value": "ok" if failure is None else failure,
            "initial_seconds": result.get("initial_seconds"),
            "diff_seconds": result.get("diff_seconds"),
            "peak_rss_mib": res["peak_rss_mib"],
            "goal": "succeeds",
            "met": failure is None,
        },
    }
    path = c.write_result("scale", out)
    print(
        f"{'ok' if failure is None else failure}: initial {result.get('initial_seconds')} s, "
        f"diff {result.get('diff_seconds')} s, peak RSS {res['peak_rss_mib']} MiB; wrote {path}"
    )


if __name__ == "__main__":
    main()
