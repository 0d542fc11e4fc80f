"""``db.sync_delta`` of a Delta table: each reader's time on a 1% change (issue 37, item 6), and
the driver's memory on a table larger than it (issue 21). Writes bench/results/delta_sync.json.

**Readers** (``--part readers``). A Delta table of ``--rows`` (1,000,000) rows of the benches'
8-column frame (``_common.source``) is written by Spark's own Delta writer
(``df.write.format("delta")``, ``delta.enableChangeDataFeed`` and ``delta.enableDeletionVectors``
on), in a session started with Delta's jars (``OPENMIRROR_SPARK_JARS``: this line's folder of the
jar cache, ``tests/spark_packages.jars("delta")``, unless it is set). For each reader
(``"spark"``: Spark's Delta reader; ``"deltalake"``: the log by ``deltalake``, the files by Spark)
and each repetition (one warm-up more), a fresh local database (``om.connect(folder)``) syncs the
table once (a snapshot). Then 1% of its rows change by Spark SQL on ``delta.`path```: 0.8%
updated (``UPDATE``), 0.1% deleted (``DELETE``), 0.1% inserted (``INSERT INTO``), three versions.
Then, in alternating order, each repetition times the second sync (the change data feed) of each
reader's database and the baseline: a plain Spark read of the changed rows, i.e. the change data
feed of those versions read by Spark's Delta reader (``readChangeFeed``), less the update
pre-images (the rows the mirror receives: inserts, post-images, deletes), written with
``df.write.parquet``. Each sync must report the reader asked for, ``how == "changes"``, no
fallback, and publish as many rows as the baseline wrote. Figures: medians, each reader's median
÷ the baseline's; for context the baseline's feed and each reader's own feed frame
(``DeltaSource.changes``) read alone (``noop`` sink), each sync's push (its ``PushResult.seconds``),
Spark jobs, and each reader's snapshot sync.

**Memory** (``--part memory``). A CDF-enabled Delta table of ``--memory-rows`` rows is written
with ``deltalake`` (batch by batch), synced in a child process started with
``OPENMIRROR_DRIVER_MEMORY=1g`` (the first sync: a snapshot) by the ``deltalake`` reader (the
child's session has no Delta jars), 1% of its rows deleted and updated (by ``deltalake``, in this
process), and synced again in a second child (the change data feed). The figures: the table's size
as Arrow data and as Parquet, each sync's seconds, and how much the child's Python process grew
during the sync (its peak RSS, ``VmHWM``, reset just before the sync, against its RSS then):
reading the table or the feed into the driver (the old ``to_pyarrow_table()`` /
``load_cdf().read_all()`` path) grows it by about the Arrow size.

Usage: .venv/bin/python bench/bench_delta_sync.py [--part all|readers|memory] [--rows 1000000]
       [--reps 7] [--memory-rows 20000000] [--memory 1g] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

BATCH = 1_000_000
READERS = ("spark", "deltalake")
# The 1% change of the readers part, by key: of every 1000 keys 8 updated and 1 deleted; rows/1000
# new keys inserted after the base range (the mix of _common.changed_source).
UPDATE_SQL = (
    "UPDATE delta.`{p}` SET amount = amount + 1, status = 'changed' WHERE id % 1000 BETWEEN 100 AND 107"
)
DELETE_SQL = "DELETE FROM delta.`{p}` WHERE id % 1000 = 7"
INSERT_SQL = "INSERT INTO delta.`{p}` SELECT * FROM bench_new_rows"


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
        from openmirror_nb._core.pipeline.delta import sync as delta_sync  # noqa: F401
        from openmirror_nb._core.runtime import get_spark

        spark = get_spark()
        db = om.connect(db_path)
        _reset_peak()
        before = _peak_mib()
        start = time.perf_counter()
        if baseline:  # what the old local path did first: the whole table in the driver
            rows = DeltaTable(source).to_pyarrow_table().num_rows
            return {"rows": rows, "python_peak_before_mib": before, "python_peak_mib": _peak_mib()}
        result = db.sync_delta(source, table="big", keys=keys or None, reader="deltalake")
        seconds = time.perf_counter() - start
        return {
            "how": result.how,
            "reader": result.reader,
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
    # The child's session has no Delta jars (OPENMIRROR_SPARK_JARS empty), as this part always had.
    env = {"OPENMIRROR_DRIVER_MEMORY": memory, "OPENMIRROR_SPARK_JARS": ""}
    res = c.run_child(args, env=env, timeout=timeout)
    failure = c.failure_kind(res)
    if failure is not None:
        raise RuntimeError(f"sync failed ({failure}): {res['stderr_errors'] or res['stderr_tail'][-1500:]}")
    return {
        **res.pop("result"),
        "wall_seconds": res["wall_seconds"],
        "tree_peak_rss_mib": res["peak_rss_mib"],
    }


def memory_part(rows: int, memory: str, timeout: float) -> dict[str, Any]:
    """Issue 21: a table larger than the driver synced without collecting it (see the docstring)."""
    c.require_disk(4 + rows / 2_000_000)
    load_before = c.loadavg()
    from deltalake import DeltaTable

    work = Path(tempfile.mkdtemp(prefix="bench-delta-sync-"))
    try:
        source, db = str(work / "source"), str(work / "db")
        arrow_mib = _build(source, rows)
        parquet_mib = round(sum(f.stat().st_size for f in Path(source).glob("*.parquet")) / 2**20, 1)
        old_path = _sync(source, db, [], memory, timeout, baseline=True)
        first = _sync(source, db, ["id"], memory, timeout)
        step = 100  # 1% of rows: every 100th deleted, the next one updated
        DeltaTable(source).delete(f"id % {step} = 0")
        DeltaTable(source).update(updates={"v": "v + 1"}, predicate=f"id % {step} = 1")
        second = _sync(source, db, [], memory, timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    planned = {"delete": -(-rows // step), "upsert": rows // step + (rows % step > 1)}
    correct = first["rows"] == {"initial": rows} and second["how"] == "changes" and second["rows"] == planned
    growth = max(s["python_peak_mib"] - s["python_peak_before_mib"] for s in (first, second))
    old_growth = old_path["python_peak_mib"] - old_path["python_peak_before_mib"]
    print(
        f"memory: {'ok' if correct else 'WRONG ROWS'}: snapshot {first['seconds']} s, feed {second['seconds']} s, "
        f"Python RSS growth {growth:.1f} MiB (to_pyarrow_table: {old_growth:.1f} MiB), table {arrow_mib} MiB "
        "as Arrow",
        flush=True,
    )
    return {
        "benchmark": f"sync_delta of a {rows:,}-row Delta table (snapshot, then a 1% feed), driver {memory}",
        "rows": rows,
        "arrow_mib": arrow_mib,
        "parquet_mib": parquet_mib,
        "snapshot_sync": first,
        "feed_sync": second,
        "feed_rows_planned": planned,
        "baseline_to_pyarrow_table": old_path,
        "correct": correct,
        "python_rss_growth_mib": round(growth, 1),
        "to_pyarrow_table_growth_mib": round(old_growth, 1),
        "met": correct and growth < arrow_mib / 2,
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
    }


# --- readers: each reader's changes sync ÷ a plain Spark read of the changed rows ---------------


def _delta_jars() -> str:
    """This line's Delta jars for the session (``OPENMIRROR_SPARK_JARS``, unless it is set)."""
    if not os.environ.get("OPENMIRROR_SPARK_JARS"):
        spec = importlib.util.spec_from_file_location(
            "spark_packages", c.ROOT / "tests" / "spark_packages.py"
        )
        assert spec is not None and spec.loader is not None
        packages = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(packages)
        os.environ["OPENMIRROR_SPARK_JARS"] = str(packages.jars("delta"))
    return os.environ["OPENMIRROR_SPARK_JARS"]


def _jobs(spark: Any) -> int:
    """Spark jobs the session has started so far (every job group's)."""
    return int(spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs())


def _log_facts(source: Path, first: int, last: int) -> dict[str, Any]:
    """What Spark's Delta writer put in the log for versions ``first..last``: the operations, the
    files with a deletion vector, the change-data files."""
    import json

    out: dict[str, Any] = {}
    for version in range(first, last + 1):
        actions = [
            json.loads(x) for x in (source / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
        ]
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        adds = [a["add"] for a in actions if "add" in a]
        out[str(version)] = {
            "operation": info.get("operation"),
            "added_files": len(adds),
            "added_with_deletion_vector": sum(1 for a in adds if a.get("deletionVector")),
            "removed_files": sum(1 for a in actions if "remove" in a),
            "cdc_files": sum(1 for a in actions if "cdc" in a),
        }
    return out


def readers_part(rows: int, reps: int) -> dict[str, Any]:
    jars = _delta_jars()
    import openmirror_nb as om
    from openmirror_nb._core.pipeline.delta.source import spark_has_delta

    spark = om.get_spark()
    if not spark_has_delta(spark):
        raise SystemExit(
            f"the session has no Delta (OPENMIRROR_SPARK_JARS={jars}): reader='spark' cannot run"
        )
    c.require_disk(2 + rows / 500_000)
    load_before = c.loadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-delta-readers-"))
    try:
        return _readers(spark, om, work, rows, reps, jars, load_before)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _readers(
    spark: Any, om: Any, work: Path, rows: int, reps: int, jars: str, load_before: Any
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from openmirror_nb._core.pipeline.delta.source import DeltaSource

    source = work / "source"
    path = str(source)
    start = time.perf_counter()
    (
        c.source(spark, rows)
        .write.format("delta")
        .option("delta.enableChangeDataFeed", "true")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
    )
    write_seconds = round(time.perf_counter() - start, 2)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0].asDict()
    properties = dict(detail.get("properties") or {})
    if properties.get("delta.enableChangeDataFeed") != "true":
        raise SystemExit(f"Spark's Delta writer did not enable the change data feed: {properties}")
    base = int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"])
    print(
        f"readers: wrote {rows:,} rows with Spark's Delta writer in {write_seconds} s (version {base})",
        flush=True,
    )

    # One database per reader and repetition (the first a warm-up), each synced once: a snapshot.
    dbs = {r: [work / f"db-{r}-{i}" for i in range(reps + 1)] for r in READERS}
    snapshots: dict[str, list[float]] = {r: [] for r in READERS}
    for i in range(reps + 1):
        for reader in READERS if i % 2 == 0 else tuple(reversed(READERS)):
            db = om.connect(str(dbs[reader][i]))
            seconds, res = c.timed(partial(db.sync_delta, path, table="orders", keys=["id"], reader=reader))
            if (res.reader, res.how, res.fallback) != (reader, "snapshot", None) or res.push.rows != {
                "initial": rows
            }:
                raise SystemExit(f"first sync by {reader} was not the expected snapshot: {res!r}")
            snapshots[reader].append(round(seconds, 3))
            print(f"snapshot {i}: {seconds:7.2f} s  {reader}", flush=True)

    # The 1% change, by Spark SQL: three versions.
    c.source(spark, rows + rows // 1000).where(F.col("id") >= rows).createOrReplaceTempView("bench_new_rows")
    for sql in (UPDATE_SQL, DELETE_SQL, INSERT_SQL):
        spark.sql(sql.format(p=path))
    last = int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"])
    log = _log_facts(source, base, last)

    def feed() -> Any:
        return (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", base + 1)
            .option("endingVersion", last)
            .load(path)
            .where(F.col("_change_type") != "update_preimage")
        )

    feed_rows = {r["_change_type"]: r["count"] for r in feed().groupBy("_change_type").count().collect()}
    expected = sum(feed_rows.values())
    outputs = iter(range(10_000))

    def baseline() -> None:
        feed().write.parquet(str(work / f"plain-{next(outputs)}"))

    def noop_read() -> None:
        feed().write.format("noop").mode("overwrite").save()

    def reader_read(reader: str) -> Any:
        def run() -> None:  # the frame the sync gets from this reader, read alone
            source = DeltaSource.open(path, spark, reader)
            frame = source.changes(base, last).where(F.col("_change_type") != "update_preimage")
            frame.write.format("noop").mode("overwrite").save()

        return run

    runs: dict[str, list[dict[str, Any]]] = {}

    def sync(reader: str, i: int) -> Any:
        db = om.connect(str(dbs[reader][i]))  # opened before the clock starts

        def run() -> None:
            res = db.sync_delta(path, table="orders", keys=["id"], reader=reader)
            got = (res.reader, res.how, res.fallback)
            if got != (reader, "changes", None):
                raise SystemExit(
                    f"sync by {reader}: reader/how/fallback {got}, not ({reader!r}, 'changes', None)"
                )
            if res.push is None or res.push.total_rows != expected:
                raise SystemExit(f"sync by {reader} published {res.push!r}, the feed has {expected} rows")
            extra.update(
                push_seconds=round(res.push.seconds, 3),
                rows=res.push.rows,
                versions=[res.from_version, res.to_version],
            )

        return run

    plain = {
        "baseline": baseline,
        "noop_read": noop_read,
        **{f"{r}_reader_feed_noop": reader_read(r) for r in READERS},
    }
    cases = ["baseline", *READERS, "noop_read", *(f"{r}_reader_feed_noop" for r in READERS)]
    times: dict[str, list[float]] = {k: [] for k in cases}
    for i in range(reps + 1):  # pass 0 is the warm-up: timed, not counted
        for name in cases if i % 2 == 0 else list(reversed(cases)):
            fn = plain.get(name) or sync(name, i)
            extra: dict[str, Any] = {}
            jobs = _jobs(spark)
            seconds, _ = c.timed(fn)
            run = {"seconds": round(seconds, 3), "spark_jobs": _jobs(spark) - jobs, **extra}
            runs.setdefault(name, []).append(run)
            if i > 0:
                times[name].append(round(seconds, 3))
            print(f"{'warm-up' if i == 0 else f'rep {i}'}: {seconds:7.2f} s  {name}", flush=True)
    medians = {k: round(c.median(v), 3) for k, v in times.items()}
    ratio = {r: round(medians[r] / medians["baseline"], 2) for r in READERS}
    return {
        "benchmark": (
            f"sync_delta of a 1%-changed {rows:,}-row Delta table (Spark's writer, CDF and deletion vectors on), "
            "each reader ÷ a plain Spark read of the changed rows written to Parquet"
        ),
        "rows": rows,
        "repetitions": reps,
        "delta_jars": sorted(p.name for p in Path(jars).glob("*.jar")) if Path(jars).is_dir() else jars,
        "source_write_seconds": write_seconds,
        "source_properties": properties,
        "source_min_reader_writer": [detail.get("minReaderVersion"), detail.get("minWriterVersion")],
        "source_features": list(detail.get("tableFeatures") or []),
        "versions": {"snapshot": base, "changed": last},
        "log": log,
        "feed_rows": feed_rows,
        "baseline": (
            "the change data feed of the changed versions read by Spark's Delta reader (readChangeFeed), "
            "update pre-images left out, written with df.write.parquet"
        ),
        "seconds": times,
        "median_seconds": medians,
        "ratio_to_baseline": ratio,
        "read_alone_ratio_to_baseline": {
            k: round(medians[k] / medians["baseline"], 2)
            for k in ("noop_read", *(f"{r}_reader_feed_noop" for r in READERS))
        },
        "runs": runs,
        "snapshot_sync_seconds": snapshots,
        "snapshot_sync_median_seconds": {r: round(c.median(v[1:]), 3) for r, v in snapshots.items()},
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", choices=("all", "readers", "memory"), default="all")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the readers part's table")
    parser.add_argument("--reps", type=int, default=7, help="repetitions of the readers part")
    parser.add_argument("--memory-rows", type=int, default=20_000_000, help="rows of the memory part's table")
    parser.add_argument("--memory", default="1g", help="spark.driver.memory of the memory part's children")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--quick", action="store_true", help="smoke run: 100k rows, 2 reps; 2M rows")
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
        args.rows, args.reps, args.memory_rows, args.timeout = 100_000, 2, 2_000_000, 900
    out: dict[str, Any] = {"quick": args.quick, "part": args.part, "loadavg_before": c.loadavg()}
    # The memory part first: its children start their own sessions, this process none yet.
    if args.part in ("all", "memory"):
        out["memory"] = memory_part(args.memory_rows, args.memory, args.timeout)
    if args.part in ("all", "readers"):
        out["readers"] = readers_part(args.rows, args.reps)
    out["loadavg_after"] = c.loadavg()
    out.update(c.machine())
    if "readers" in out:
        out.update({k: out["readers"][k] for k in ("spark", "master", "driver_memory", "shuffle_partitions")})
    out["headline"] = _headline(out)
    path = c.write_result("delta_sync", out)
    if "readers" in out:
        r = out["readers"]
        med = r["median_seconds"]
        print(
            f"readers: baseline {med['baseline']} s; "
            + "; ".join(f"{k} {med[k]} s = {r['ratio_to_baseline'][k]}x" for k in READERS)
        )
    print(f"wrote {path}")


def _headline(out: dict[str, Any]) -> dict[str, Any]:
    parts, figures, met = [], [], True
    if "readers" in out:
        r = out["readers"]
        figures.append(
            f"changes sync of a 1%-changed {r['rows']:,}-row Delta table ÷ a plain Spark read of the changed "
            "rows (reader spark / deltalake)"
        )
        parts.append(" / ".join(f"{r['ratio_to_baseline'][k]}x" for k in READERS))
    if "memory" in out:
        m = out["memory"]
        figures.append(f"Python driver's RSS growth during a sync vs the table as Arrow ({m['rows']:,} rows)")
        parts.append(f"{m['python_rss_growth_mib']} MiB vs {m['arrow_mib']} MiB")
        met = met and m["met"]
    return {
        "figure": "; ".join(figures),
        "value": "; ".join(parts),
        "goal": "each reader syncs the feed (no fallback, the feed's rows); RSS growth below half the Arrow size",
        "met": met,
    }


if __name__ == "__main__":
    main()
