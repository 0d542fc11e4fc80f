"""Delta sync of a table larger than the driver's memory (issue 21): no driver collection.

A CDF-enabled Delta table of N rows is written with ``deltalake`` (batch by batch), synced in a
child process started with ``OPENMIRROR_DRIVER_MEMORY=1g`` (the first sync: a snapshot), 1% of
its rows deleted and updated (by ``deltalake``, in this process), and synced again in a second
child (the change data feed). The figures: the table's size as Arrow data and as Parquet, each
sync's seconds, and how much the child's Python process grew during the sync (its peak RSS,
``VmHWM``, reset just before the sync, against its RSS then): reading the table or the feed into the driver (the old
``to_pyarrow_table()`` / ``load_cdf().read_all()`` path) grows it by about the Arrow size. Writes bench/results/delta_sync.json.

Usage: .venv/bin/python bench/bench_delta_sync.py [--rows 20000000] [--memory 1g] [--quick]
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


def child(source: str, db_path: str, keys: list[str], *, baseline: bool) -> None:
    """One sync in this process: its seconds, what it pushed, and this Python process's peak RSS
    before it (Spark started, packages imported) and after it."""

    def run() -> dict[str, Any]:
        import pyarrow  # noqa: F401  (loaded before the measure: imports are not the sync's)
        from deltalake import DeltaTable

        import openmirror_nb as om
        from openmirror_nb._core.pipeline import delta_sync  # noqa: F401
        from openmirror_nb._core.runtime import get_spark

        spark = get_spark()
        db = om.connect(db_path)
        _reset_peak()
        before = _peak_mib()
        start = time.perf_counter()
        if baseline:  # what the old local path did first: the whole table in the driver
            rows = DeltaTable(source).to_pyarrow_table().num_rows
            return {"rows": rows, "python_peak_before_mib": before, "python_peak_mib": _peak_mib()}
        result = db.sync_delta(source, table="big", keys=keys or None)
        seconds = time.perf_counter() - start
        return {
            "how": result.how,
            "rows": result.push.rows if result.push else {},
            "seconds": round(seconds, 2),
            "python_peak_before_mib": before,
            "python_peak_mib": _peak_mib(),
            **c.jvm_memory(spark),
        }

    c.child_main(run)


def _peak_mib() -> float:
    """This process's peak RSS (``VmHWM``: per address space, so not inherited from the parent
    as ``ru_maxrss`` is)."""
    status = Path("/proc/self/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
    return round(int(line.split()[1]) / 1024, 1)


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # the peak RSS starts again from the RSS now


def _build(source: str, rows: int) -> float:
    """Versions 0 (``rows`` rows) of a CDF-enabled table, written batch by batch; its Arrow MiB."""
    import pyarrow as pa
    from deltalake import write_deltalake

    arrow_bytes = 0
    for batch in _batches(rows):
        arrow_bytes += batch.nbytes
        table = pa.Table.from_batches([batch])
        write_deltalake(source, table, mode="append", configuration={"delta.enableChangeDataFeed": "true"})
    return round(arrow_bytes / 2**20, 1)


def _sync(
    source: str, db: str, keys: list[str], memory: str, timeout: float, *, baseline: bool = False
) -> dict[str, Any]:
    args = [str(Path(__file__).resolve()), "--child", "--source", source, "--db", db, "--keys", *keys]
    args += ["--baseline"] if baseline else []
    res = c.run_child(args, env={"OPENMIRROR_DRIVER_MEMORY": memory}, timeout=timeout)
    failure = c.failure_kind(res)
    if failure is not None:
        raise RuntimeError(f"sync failed ({failure}): {res['stderr_errors'] or res['stderr_tail'][-1500:]}")
    return {
        **res.pop("result"),
        "wall_seconds": res["wall_seconds"],
        "tree_peak_rss_mib": res["peak_rss_mib"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--memory", default="1g", help="spark.driver.memory of the child")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--quick", action="store_true", help="2M rows (smoke run)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--keys", nargs="*", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--baseline", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.source, args.db, args.keys, baseline=args.baseline)
        return
    if args.quick:
        args.rows, args.timeout = 2_000_000, 900
    c.require_disk(4 + args.rows / 2_000_000)
    load_before = c.loadavg()
    from deltalake import DeltaTable

    work = Path(tempfile.mkdtemp(prefix="bench-delta-sync-"))
    try:
        source, db = str(work / "source"), str(work / "db")
        arrow_mib = _build(source, args.rows)
        parquet_mib = round(sum(f.stat().st_size for f in Path(source).glob("*.parquet")) / 2**20, 1)
        old_path = _sync(source, db, [], args.memory, args.timeout, baseline=True)
        first = _sync(source, db, ["id"], args.memory, args.timeout)
        step = 100  # 1% of rows: every 100th deleted, the next one updated
        DeltaTable(source).delete(f"id % {step} = 0")
        DeltaTable(source).update(updates={"v": "v + 1"}, predicate=f"id % {step} = 1")
        second = _sync(source, db, [], args.memory, args.timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    planned = {"delete": -(-args.rows // step), "upsert": args.rows // step + (args.rows % step > 1)}
    correct = (
        first["rows"] == {"initial": args.rows} and second["how"] == "changes" and second["rows"] == planned
    )
    growth = max(s["python_peak_mib"] - s["python_peak_before_mib"] for s in (first, second))
    old_growth = old_path["python_peak_mib"] - old_path["python_peak_before_mib"]
    out = {
        "benchmark": f"sync_delta of a {args.rows:,}-row Delta table (snapshot, then a 1% feed), driver {args.memory}",
        "rows": args.rows,
        "quick": args.quick,
        "arrow_mib": arrow_mib,
        "parquet_mib": parquet_mib,
        "snapshot_sync": first,
        "feed_sync": second,
        "feed_rows_planned": planned,
        "baseline_to_pyarrow_table": old_path,
        "correct": correct,
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(),
        "headline": {
            "figure": f"Python driver's RSS growth during a sync vs the table as Arrow ({args.rows:,} rows)",
            "value": f"{growth:.1f} MiB vs {arrow_mib} MiB",
            "baseline": f"to_pyarrow_table() grew it by {old_growth:.1f} MiB",
            "goal": "syncs; RSS growth below half the table's Arrow size",
            "met": correct and growth < arrow_mib / 2,
        },
    }
    path = c.write_result("delta_sync", out)
    print(
        f"{'ok' if correct else 'WRONG ROWS'}: snapshot {first['seconds']} s, feed {second['seconds']} s, "
        f"Python RSS growth {growth:.1f} MiB (to_pyarrow_table: {old_growth:.1f} MiB), table {arrow_mib} MiB "
        f"as Arrow; wrote {path}"
    )


if __name__ == "__main__":
    main()
