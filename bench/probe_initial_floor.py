"""Probe (not a headline benchmark): the floor of an initial load of narrow rows (issue 25).

An initial load writes the data files and the table's key state (key + two 64-bit row hashes +
a count per row). On the narrow shape of ``bench_push.py`` (long, long, double, string) the key
state is as wide as the data, so this probe times, on N rows, medians of --repeat, each against
the plain ``df.write.parquet`` of the same rows in the same session:

- the data files alone (the push's writer settings);
- the key state written map-only from the staged files: no shuffle, no duplicate check, no
  buckets (the cheapest key state there is);
- the key state shuffled into buckets, without the duplicate check;
- the key state as a push writes it: shuffled into buckets, sorted, a count per key over a window
  (the exact duplicate check), written;
- the same check as a sort aggregate per key instead of the window.

The floor of a push that keeps an exact duplicate check and a key state is "data files + map-only
state": what is above it is the check and the bucket layout the diffs read without a shuffle.
Writes bench/results/probe_initial_floor.json (spark4/ on the Spark 4 line).

Usage: .venv/bin/python bench/probe_initial_floor.py [--rows 5000000] [--repeat 3]
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
from bench_push import narrow

from openmirror_nb._core.pipeline.keystate import buckets, snapdiff
from openmirror_nb._core.pipeline.keystate import hashes as keystate
from openmirror_nb._core.runtime import get_spark

KEYS = ("id",)
PLAIN = "plain df.write.parquet (baseline)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    c.require_disk(3)
    load_before = c.loadavg()
    spark = get_spark()
    from pyspark.sql import functions as F

    work = Path(tempfile.mkdtemp(prefix="probe-floor-"))
    scratch = c.Scratch(spark, work)
    parts = str(work / "parts")
    scratch.write(narrow(spark, args.rows), maxRecordsPerFile=1_000_000)  # warm the writer
    narrow(spark, args.rows).write.option("maxRecordsPerFile", 1_000_000).parquet(parts)
    staged = spark.read.parquet(parts)
    n = buckets.count(spark, rows=args.rows)

    def hashed() -> Any:
        h1, h2 = keystate.row_hashes(staged, keys=KEYS)
        return staged.select("id", h1.alias(keystate.H1), h2.alias(keystate.H2))

    one = F.lit(1).cast("long").alias(keystate.ROWS)
    cases = {
        PLAIN: lambda: narrow(spark, args.rows).write.parquet(scratch.fresh()),
        "data files (the push's writer)": lambda: scratch.write(
            narrow(spark, args.rows), maxRecordsPerFile=1_000_000
        ),
        "key state, map-only (no shuffle, no check)": lambda: scratch.write(hashed().select("*", one)),
        "key state, shuffled into buckets, no check": lambda: scratch.write(
            buckets.place(hashed(), keys=KEYS, buckets=n).select("*", one)
        ),
        "key state as a push writes it (buckets + window count)": lambda: scratch.write(
            snapdiff.snapshot_state(staged, keys=KEYS, buckets=n)
        ),
        "key state, buckets + a sort aggregate per key (the alternative check)": lambda: sort_aggregate(),
    }

    def sort_aggregate() -> None:
        """The count per key as an aggregate over the sorted buckets, not a window."""
        spark.conf.set("spark.sql.execution.replaceHashWithSortAgg", "true")
        try:
            placed = buckets.place(hashed(), keys=KEYS, buckets=n).sortWithinPartitions(*KEYS)
            counted = placed.groupBy(*KEYS).agg(
                F.count(F.lit(1)).alias(keystate.ROWS),
                F.first(keystate.H1).alias(keystate.H1),
                F.first(keystate.H2).alias(keystate.H2),
            )
            scratch.write(counted)
        finally:
            spark.conf.unset("spark.sql.execution.replaceHashWithSortAgg")

    try:
        times = c.time_cases(cases, repeat=args.repeat, scratch=scratch)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    path = c.write_probe(
        "probe_initial_floor",
        title="initial load of narrow rows: data files, and the key state with and without its check",
        rows=args.rows,
        repeat=args.repeat,
        times=times,
        load_before=load_before,
        spark=spark,
    )
    base = c.median(times[PLAIN])
    for name, seconds in times.items():
        print(f"{c.median(seconds) / base:5.2f}x  {name}")
    print(f"wrote {path.relative_to(c.ROOT)}")


if __name__ == "__main__":
    main()
