"""Delta sync of a table larger than the driver's memory (issue 21): no driver collection.

In a child process started with ``OPENMIRROR_DRIVER_MEMORY=1g``: a CDF-enabled Delta table of N
rows is written with ``deltalake`` (batch by batch, never whole in memory), synced (the first
sync: a snapshot), 1% of its rows deleted and updated, synced again (the change data feed). The
figures: the table's size as Arrow data and as Parquet, the JVM heap, and the peak RSS of the
child's Python process alone (``ru_maxrss``), which reading the table or the feed into the
driver (the old ``to_pyarrow_table()`` / ``load_cdf().read_all()`` path) would push past the
Arrow size. Writes bench/results/delta_sync.json.

Usage: .venv/bin/python bench/bench_delta_sync.py [--rows 20000000] [--memory 1g] [--quick]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

BATCH = 1_000_000


def _batches(rows: int) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    for start in range(0, rows, BATCH):
        ids = pa.array(range(start, min(rows, start + BATCH)), pa.int64())
        text = pc.binary_join_element_wise(
            pc.cast(ids, pa.string()), "-payload-of-about-forty-characters", ""
        )
        yield pa.record_batch({"id": ids, "v": ids, "note": text})


def child(rows: int) -> None:
    def run() -> dict[str, Any]:
        import pyarrow as pa
        from deltalake import DeltaTable, write_deltalake

        import openmirror_nb as om
        from openmirror_nb.runtime import get_spark

        spark = get_spark()
        work = Path(tempfile.mkdtemp(prefix="bench-delta-sync-"))
        try:
            source = str(work / "source")
            schema = next(_batches(1)).schema
            arrow_bytes = 0
            for batch in _batches(rows):
                arrow_bytes += batch.nbytes
                write_deltalake(source, pa.Table.from_batches([batch], schema), mode="append",
                                configuration={"delta.enableChangeDataFeed": "true"})  # fmt: skip
            parquet_bytes = sum(f.stat().st_size for f in Path(source).glob("*.parquet"))
            db = om.connect(work / "db")
            start = time.perf_counter()
            first = db.sync_delta(source, table="big", keys=["id"])
            s_first = time.perf_counter() - start
            step = 100  # 1% of rows: every 100th deleted, the next one updated
            DeltaTable(source).delete(f"id % {step} = 0")
            DeltaTable(source).update(updates={"v": "v + 1"}, predicate=f"id % {step} = 1")
            start = time.perf_counter()
            second = db.sync_delta(source, table="big")
            s_second = time.perf_counter() - start
            planned = {"delete": -(-rows // step), "upsert": rows // step + (rows % step > 1)}
            if second.how != "changes" or second.push.rows != planned:
                raise RuntimeError(f"the feed sync published {second}, planned {planned}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {
            "rows": rows,
            "arrow_mib": round(arrow_bytes / 2**20, 1),
            "parquet_mib": round(parquet_bytes / 2**20, 1),
            "snapshot_seconds": round(s_first, 2),
            "feed_seconds": round(s_second, 2),
            "snapshot_rows": first.push.rows,
            "feed_rows": second.push.rows,
            "python_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            **c.jvm_memory(spark),
            **c.machine(spark),
        }

    c.child_main(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--memory", default="1g", help="spark.driver.memory of the child")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--quick", action="store_true", help="2M rows (smoke run)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.rows)
        return
    if args.quick:
        args.rows, args.timeout = 2_000_000, 900
    c.require_disk(4 + args.rows / 2_000_000)
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
    python_rss, arrow = result.get("python_peak_rss_mib"), result.get("arrow_mib")
    met = failure is None and python_rss is not None and arrow is not None and python_rss < arrow
    out = {
        "benchmark": f"sync_delta of a {args.rows:,}-row Delta table (snapshot, then a 1% feed), driver {args.memory}",
        "quick": args.quick,
        "success": failure is None,
        "failure": failure,
        **res,
        "child": result,
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        "headline": {
            "figure": f"Python driver peak RSS vs the table as Arrow ({args.rows:,} rows, {args.memory} JVM)",
            "value": f"{python_rss} MiB vs {arrow} MiB",
            "goal": "syncs; Python peak RSS below the table's Arrow size",
            "met": met,
        },
    }
    path = c.write_result("delta_sync", out)
    print(
        f"{'ok' if failure is None else failure}: snapshot {result.get('snapshot_seconds')} s, feed "
        f"{result.get('feed_seconds')} s, Python peak RSS {python_rss} MiB, table {arrow} MiB as Arrow; wrote {path}"
    )


if __name__ == "__main__":
    main()
