"""Kafka into the landing zone (issue 40, item 7): ``db.mirror_kafka`` against the file source.

100,000 JSON messages on ten 3-partition topics (``bench.bench.t0`` .. ``bench.bench.t9``, one per
table ``bench.t0`` .. ``bench.t9``, 10,000 each), keyed by id, each in partition ``id % 3``,
produced to a throwaway broker (``tests/kafka_broker.py``) before anything is timed. Each table's
messages carry an operation column (``op``, Fabric's row markers) and a sequence (``seq``, the
feed's ``order_by``): 90% inserts of new ids, then 8% updates (``op`` 4, upserts) and 2% deletes
(``op`` 2) of ids inserted earlier; 8,800 rows per table remain.

1. **kafka**: ``db.mirror_kafka(om.Kafka(...), schemas=, keys=, feed=, trigger="available_now",
   max_offsets_per_trigger=M)`` into a fresh local database, M = 100,000 / ``--batches``.
2. **file** (the baseline): the same 100,000 rows as JSON-lines files with a ``tbl`` column naming
   the table (1,000 rows a file, the tables interleaved in each table's order, as the Kafka batches
   take them), ``db.mirror_stream(spark.readStream.json(folder), route="tbl", ...)`` with
   ``maxFilesPerTrigger`` such that it runs as many batches.

Each is timed from the call to the query's end (``await_termination``): rows/s = 100,000 ÷ seconds;
batch latency = median and p95 of the batches' ``durationMs["triggerExecution"]`` (the query's
``recentProgress``). Both run once on a smaller copy first (warm-up, not counted), then
alternately ``--reps`` times, each run into a database and checkpoint of its own; the figures
are medians over the reps, and the ratios kafka ÷ file. After each run the local mirror
replicates the database and every table must hold the planned rows, and the Kafka mirror's tables
the same rows as the file mirror's (a hash of every row), so the bench cannot pass while wrong.

Writes bench/results/spark4/kafka.json.

Usage: .venv/bin/python bench/bench_kafka.py [--rows-per-table 10000] [--batches 10] [--reps 1] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.kafka_broker

import _common as c

import openmirror_nb as om
from tests import spark_packages
from tests.kafka_broker import KafkaBroker, missing

TABLES = 10
PARTITIONS = 3
SCHEMA = (
    "id BIGINT, customer STRING, amount DECIMAL(18,2), qty INT, price DOUBLE, "
    "ordered_at TIMESTAMP, flag BOOLEAN, op INT, seq BIGINT"
)


def table_rows(n: int) -> list[dict[str, Any]]:
    """One table's change rows in order: 90% inserts, then 8% updates and 2% deletes of
    inserted ids (updates on ids ending in 1, deletes on ids ending in 2: never the same id)."""
    inserts = n * 9 // 10
    updates, deletes = n * 8 // 100, n - inserts - n * 8 // 100
    rows = [
        {
            "id": i,
            "customer": f"customer-{i % 9973}",
            "amount": round((i % 100_000) / 100, 2),
            "qty": i % 17,
            "price": i * 0.37,
            "ordered_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_760_000_000 + i)),
            "flag": i % 2 == 0,
            "op": 0,
        }
        for i in range(inserts)
    ]
    for j in range(updates):
        row = dict(rows[10 * j + 1], op=4, amount=round(rows[10 * j + 1]["amount"] + 1, 2), qty=-1)
        rows.append(row)
    for j in range(deletes):
        rows.append(dict(rows[10 * j + 2], op=2))
    for seq, row in enumerate(rows):
        row["seq"] = seq
    return rows


def expected_rows(n: int) -> int:
    return n * 9 // 10 - (n - n * 9 // 10 - n * 8 // 100)


def interleaved(per_table: list[list[dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """(table, row) round robin over the tables, each table's rows in its own order."""
    return [(t, rows[i]) for i in range(len(per_table[0])) for t, rows in enumerate(per_table)]


def produce(broker: KafkaBroker, prefix: str, per_table: list[list[dict[str, Any]]]) -> list[str]:
    topics = []
    for t, rows in enumerate(per_table):
        topic = f"{prefix}.bench.t{t}"
        broker.create_topic(topic, partitions=PARTITIONS)
        broker.produce(topic, [(str(r["id"]), json.dumps(r), r["id"] % PARTITIONS) for r in rows])
        topics.append(topic)
    return topics


def write_files(folder: Path, per_table: list[list[dict[str, Any]]], rows_per_file: int) -> int:
    folder.mkdir(parents=True)
    lines = [json.dumps({**row, "tbl": f"bench.t{t}"}) for t, row in interleaved(per_table)]
    files = 0
    for start in range(0, len(lines), rows_per_file):
        (folder / f"part-{files:05d}.json").write_text("\n".join(lines[start : start + rows_per_file]) + "\n")
        files += 1
    return files


def batches_of(query: Any) -> list[dict[str, Any]]:
    out = []
    for p in query.recentProgress:
        d = json.loads(p.json) if hasattr(p, "json") else p
        if d.get("numInputRows", 0) > 0:
            out.append({"rows": d["numInputRows"], "trigger_ms": d["durationMs"]["triggerExecution"]})
    return out


def p95(values: list[float]) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def figures(seconds: float, rows: int, batches: list[dict[str, Any]]) -> dict[str, Any]:
    ms = [b["trigger_ms"] for b in batches]
    return {
        "seconds": round(seconds, 3),
        "rows_per_second": round(rows / seconds),
        "batches": len(batches),
        "batch_ms_median": c.median(ms),
        "batch_ms_p95": p95(ms),
        "batch_rows": [b["rows"] for b in batches],
        "batch_ms": ms,
    }


def mirror(
    broker: KafkaBroker, topics: list[str], work: Path, name: str, m: int | None, **kwargs: Any
) -> tuple:
    """``db.mirror_kafka`` into a fresh database, timed from the call to the query's end."""
    db = om.connect(work / f"db-{name}")
    start = time.perf_counter()
    ms = db.mirror_kafka(
        om.Kafka(bootstrap_servers=broker.bootstrap, topics=topics),
        checkpoint=work / f"ckpt-{name}",
        trigger="available_now",
        max_offsets_per_trigger=m,
        **kwargs,
    )
    ms.await_termination(timeout=1800)
    seconds = time.perf_counter() - start
    if ms.error is not None:
        raise SystemExit(f"run {name} failed: {ms.error}")
    return db, seconds, batches_of(ms.query)


def run_kafka(spark: Any, broker: KafkaBroker, topics: list[str], work: Path, name: str, m: int) -> tuple:
    keys = {f"bench.t{t}": ["id"] for t in range(TABLES)}
    schemas = dict.fromkeys(keys, SCHEMA)
    feed = om.FeedOptions(op_column="op", order_by=["seq"])
    return mirror(broker, topics, work, name, m, schemas=schemas, keys=keys, feed=feed)


def run_file(spark: Any, folder: Path, work: Path, name: str, files_per_batch: int) -> tuple:
    db = om.connect(work / f"db-{name}")
    keys = {f"bench.t{t}": ["id"] for t in range(TABLES)}
    schema = spark.createDataFrame([], SCHEMA + ", tbl STRING").schema
    feed = om.FeedOptions(op_column="op", order_by=["seq"])
    start = time.perf_counter()
    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", files_per_batch).json(str(folder))
    ms = db.mirror_stream(
        df,
        route="tbl",
        keys=keys,
        feed=feed,
        checkpoint=work / f"ckpt-{name}",
        trigger="available_now",
    )
    ms.await_termination(timeout=1800)
    seconds = time.perf_counter() - start
    if ms.error is not None:
        raise SystemExit(f"file run {name} failed: {ms.error}")
    return db, seconds, batches_of(ms.query)


COMPARED = ("id", "customer", "amount", "qty", "price", "ordered_at", "flag", "seq")


def table_hashes(db: Any, planned: int) -> dict[str, Any]:
    """Replicate with the local mirror; each table's rows must be ``planned``; per table its
    columns and a hash of each compared column (sum of xxhash64 over the rows)."""
    from pyspark.sql import functions as F

    om.LocalMirror(db.target.root).run_once()
    out: dict[str, Any] = {}
    for t in range(TABLES):
        df = db.read_table(f"bench.t{t}")
        cols = [x for x in COMPARED if x in df.columns]
        sums = [F.sum(F.xxhash64(x).cast("decimal(38,0)")).alias(x) for x in cols]
        row = df.agg(F.count(F.lit(1)).alias("__n"), *sums).first()
        if row["__n"] != planned:
            raise SystemExit(f"{db.target.root}: bench.t{t} holds {row['__n']} rows, planned {planned}")
        out[f"bench.t{t}"] = {"columns": sorted(df.columns), **{x: str(row[x]) for x in cols}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows-per-table", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=10, help="about this many micro-batches a run")
    parser.add_argument("--reps", type=int, default=1, help="timed runs of each (alternating)")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.rows_per_table, args.batches, args.reps = 1000, 4, 1
    why = missing()
    if why:
        raise SystemExit(f"no Kafka broker here: {why}")
    os.environ.setdefault("OPENMIRROR_SPARK_JARS", str(spark_packages.jars("kafka")))
    from openmirror_nb._core.runtime import get_spark

    load_before = c.loadavg()
    started = time.time()
    total = TABLES * args.rows_per_table
    m = total // args.batches
    rows_per_file = 1000 if total >= 10 * 1000 * args.batches else max(1, total // (10 * args.batches))
    files_per_batch = max(1, m // rows_per_file)
    warm_rows = max(100, args.rows_per_table // 10)
    spark = get_spark()
    work = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    runs: dict[str, list[dict[str, Any]]] = {"kafka": [], "file": []}
    try:
        with KafkaBroker() as broker:
            warm = [table_rows(warm_rows) for _ in range(TABLES)]
            data = [table_rows(args.rows_per_table) for _ in range(TABLES)]
            warm_topics = produce(broker, "warm", warm)
            write_files(work / "warm-files", warm, max(1, warm_rows * TABLES // 20))
            prod_s, topics = c.timed(lambda: produce(broker, "bench", data))
            files = write_files(work / "files", data, rows_per_file)
            print(f"produced {total:,} messages in {prod_s:.1f} s; {files} files", flush=True)
            # warm-up (not counted): JIT, the Kafka consumer, first-job costs
            run_kafka(spark, broker, warm_topics, work, "warm-kafka", warm_rows * TABLES // 2)
            run_file(spark, work / "warm-files", work, "warm-file", 10)
            hashes = []
            for rep in range(args.reps):
                order = ["kafka", "file"] if rep % 2 == 0 else ["file", "kafka"]
                for kind in order:
                    name = f"{kind}-{rep}"
                    if kind == "kafka":
                        db, secs, batches = run_kafka(spark, broker, topics, work, name, m)
                    else:
                        db, secs, batches = run_file(spark, work / "files", work, name, files_per_batch)
                    got = figures(secs, total, batches)
                    if sum(got["batch_rows"]) != total:
                        raise SystemExit(f"{name}: batches took {sum(got['batch_rows'])} rows, sent {total}")
                    runs[kind].append(got)
                    print(
                        f"{name}: {secs:.1f} s, {got['rows_per_second']:,} rows/s, {got['batches']} batches, "
                        f"median {got['batch_ms_median']} ms, p95 {got['batch_ms_p95']} ms",
                        flush=True,
                    )
                    hashes.append((name, table_hashes(db, expected_rows(args.rows_per_table))))
            # rows are compared on the columns both mirrors' tables have: the file source's routed
            # sink leaves the feed's order_by column (seq) out of the table, mirror_kafka keeps it
            first = hashes[0][1]
            differ = sorted(
                {
                    f"{name} {table}.{col}"
                    for name, h in hashes[1:]
                    for table, cols in h.items()
                    for col in (set(cols) & set(first[table])) - {"columns"}
                    if cols[col] != first[table][col]
                }
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med(kind: str, key: str) -> float:
        return c.median([r[key] for r in runs[kind]])

    k_rps, f_rps = med("kafka", "rows_per_second"), med("file", "rows_per_second")
    k_lat, f_lat = med("kafka", "batch_ms_median"), med("file", "batch_ms_median")
    k_p95, f_p95 = med("kafka", "batch_ms_p95"), med("file", "batch_ms_p95")
    out = {
        "benchmark": "db.mirror_kafka (10 topics x 3 partitions) vs the same rows from the JSON file source",
        "quick": args.quick,
        "messages": total,
        "tables": TABLES,
        "partitions_per_topic": PARTITIONS,
        "rows_per_table": args.rows_per_table,
        "rows_per_table_after": expected_rows(args.rows_per_table),
        "changes": "90% inserts, 8% updates (op 4), 2% deletes (op 2); FeedOptions(op_column='op', order_by=['seq'])",
        "max_offsets_per_trigger": m,
        "file_rows_per_file": rows_per_file,
        "max_files_per_trigger": files_per_batch,
        "produce_seconds_not_counted": round(prod_s, 1),
        "reps": args.reps,
        "kafka": {
            "rows_per_second": k_rps,
            "batch_ms_median": k_lat,
            "batch_ms_p95": k_p95,
            "runs": runs["kafka"],
        },
        "file": {
            "rows_per_second": f_rps,
            "batch_ms_median": f_lat,
            "batch_ms_p95": f_p95,
            "runs": runs["file"],
        },
        "ratio_kafka_to_file": {
            "rows_per_second": round(k_rps / f_rps, 2),
            "batch_ms_median": round(k_lat / f_lat, 2),
            "batch_ms_p95": round(k_p95 / f_p95, 2),
        },
        "checked": "every table of every run holds the planned rows; Kafka's tables equal the file source's",
        "same_rows": not differ,
        "compared_columns": "those both tables have, of " + ", ".join(COMPARED),
        "differences": differ[:40],
        "table_columns": {name: h["bench.t0"]["columns"] for name, h in hashes},
        "wall_seconds": round(time.time() - started, 1),
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
        "headline": {
            "figure": "rows/s and median batch latency, mirror_kafka ÷ file source (same rows, same run)",
            "value": f"{k_rps / f_rps:.2f}x rows/s; {k_lat / f_lat:.2f}x batch latency",
            "goal": "measured, no target (issue 40); met = both mirrors hold the same rows",
            "met": not differ,
        },
    }
    path = c.write_result("kafka", out)
    print(out["headline"])
    print(f"wrote {path}")
    if differ:
        raise SystemExit(f"the mirrors' tables differ: {differ[:10]}")


if __name__ == "__main__":
    main()
