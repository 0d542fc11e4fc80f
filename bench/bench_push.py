"""Initial load of N rows through db.push ÷ a plain df.write.parquet of the same DataFrame.

Both run in the same Spark session, alternating, after a warm-up; medians are reported.
Usage: .venv/bin/python bench/bench_push.py [--rows 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import loadavg, source  # shared with the other benchmarks

import openmirror_nb as om
from openmirror_nb._core.runtime import get_spark

RESULTS = Path(__file__).parent / "results"


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load_before = loadavg()
    spark = get_spark()
    df = source(spark, args.rows)
    work = Path(tempfile.mkdtemp(prefix="bench-push-"))
    plain, ours, files = [], [], []
    try:
        # warm-up: JIT, class loading, first-job costs
        df.limit(100_000).write.parquet(str(work / "warm"))
        om.connect(work / "warmdb").push(source(spark, 100_000), table="warm", keys=["id"])
        for i in range(args.repeat):
            target = str(work / f"plain{i}")
            plain.append(timed(lambda target=target: df.write.parquet(target)))
            db = om.connect(work / f"db{i}")
            result = None

            def push(db=db):
                nonlocal result
                result = db.push(df, table="bench.orders", keys=["id"])

            ours.append(timed(push))
            files.append(len(result.sequence_numbers))
            shutil.rmtree(work / f"plain{i}")
            shutil.rmtree(work / f"db{i}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {
        "benchmark": "initial load: db.push ÷ df.write.parquet",
        "rows": args.rows,
        "repeat": args.repeat,
        "spark": spark.version,
        "master": spark.sparkContext.master,
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "plain_write_seconds": plain,
        "push_seconds": ours,
        "published_files": files,
        "median_plain_seconds": statistics.median(plain),
        "median_push_seconds": statistics.median(ours),
        "ratio": statistics.median(ours) / statistics.median(plain),
        "goal": "<= 1.2",
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }
    out["headline"] = {
        "figure": "initial load ÷ plain df.write.parquet",
        "value": round(out["ratio"], 3),
        "goal": "<= 1.2",
        "met": out["ratio"] <= 1.2,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "push.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
