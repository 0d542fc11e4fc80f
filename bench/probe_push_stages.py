"""Probe (not a headline benchmark): what each piece of a push costs, and cheaper alternatives.

Times, on N rows of the 8-column ``source()`` frame, in one Spark session, medians of --repeat:
the pieces of the initial load's key state (read back, hash, groupBy, write) against a map-only
state plus a key-only duplicate check; and the diff's two source passes (state join, then the
changed rows) with and without broadcasting the changed keys. Uses the library's own keystate
functions, read-only. Writes bench/results/probe_push_stages.json.

Usage: .venv/bin/python bench/probe_push_stages.py [--rows 10000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from openmirror_nb._core.pipeline.keystate import hashes as keystate
from openmirror_nb._core.pipeline.keystate import snapdiff
from openmirror_nb._core.pipeline.push.stage import _WRITE_CONF
from openmirror_nb._core.pipeline.push.write_session import session_conf
from openmirror_nb._core.runtime import get_spark

KEYS = ("id",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    c.require_disk(4)
    load_before = c.loadavg()
    spark = get_spark()
    from pyspark.sql import functions as F

    work = Path(tempfile.mkdtemp(prefix="probe-push-"))
    scratch = c.Scratch(spark, work)
    fresh, write, noop = scratch.fresh, scratch.write, scratch.noop

    parts = str(work / "parts")
    old_state = str(work / "old_state")
    diff_state = str(work / "diff_state")
    with session_conf(spark, _WRITE_CONF):
        c.source(spark, args.rows).write.option("maxRecordsPerFile", 1_000_000).parquet(parts)
        c.groupby_state(spark.read.parquet(parts), KEYS).withColumn(keystate.CHANGE, F.lit(0)).write.parquet(
            old_state
        )
    staged = spark.read.parquet(parts)
    old = keystate.read_effective(spark, base=old_state, deltas=[], keys=KEYS, small_deltas=True)
    diff_full = snapdiff.diff_states(
        c.groupby_state(c.changed_source(spark, args.rows), KEYS),
        old,
        keys=KEYS,
        update_marker=4,
    )
    with session_conf(spark, _WRITE_CONF):
        diff_full.write.parquet(diff_state)
    changed_keys = spark.read.parquet(diff_state).where(F.col(keystate.CHANGE).isNotNull()).select("id")

    def hashed(df: Any) -> Any:
        h1, h2 = keystate.row_hashes(df, keys=KEYS)
        return df.select("id", h1.alias(keystate.H1), h2.alias(keystate.H2))

    def window_state(df: Any) -> Any:
        """snapshot_state without a hash aggregate: a count over a window partitioned by key
        (sort-based: no map-side hash map to overflow; duplicates keep their rows, each with
        _om_rows > 1, which the duplicate check still finds)."""
        from pyspark.sql import Window

        rows = F.count(F.lit(1)).over(Window.partitionBy(*KEYS)).cast("long")
        return hashed(df).withColumn(keystate.ROWS, rows)

    diff_window = snapdiff.diff_states(
        window_state(c.changed_source(spark, args.rows)), old, keys=KEYS, update_marker=4
    )

    cases: dict[str, Callable[[], Any]] = {
        # the initial load: the data write and the pieces of session 1's key state
        "initial: data parts write (source -> Parquet, maxRecordsPerFile 1M)": lambda: write(
            c.source(spark, args.rows), maxRecordsPerFile=1_000_000
        ),
        "initial: plain df.write.parquet (baseline)": lambda: c.source(spark, args.rows).write.parquet(
            fresh()
        ),
        "state: read staged back (all columns) -> noop": lambda: noop(staged),
        "state: read + 2 row hashes -> noop": lambda: noop(hashed(staged)),
        "state: session 1: read + hash + groupBy(key) count/first/first -> write": lambda: write(
            c.groupby_state(staged, KEYS)
        ),
        "state: session 1, with spark.sql.files.maxPartitionBytes=16m (more, smaller map tasks)": lambda: (
            spark.conf.set("spark.sql.files.maxPartitionBytes", "16m"),
            write(c.groupby_state(spark.read.parquet(parts), KEYS)),
            spark.conf.unset("spark.sql.files.maxPartitionBytes"),
        ),
        "state alt: read + hash + window count by key (sort-based) -> write": lambda: write(
            window_state(staged)
        ),
        "state alt: read + hash -> write, map-only (no shuffle)": lambda: write(
            hashed(staged).withColumn(keystate.ROWS, F.lit(1).cast("long"))
        ),
        "state alt: key-only duplicate check (groupBy(id).count > 1, limit 6)": lambda: (
            staged.select("id").groupBy("id").count().where(F.col("count") > 1).limit(6).collect()
        ),
        # the diff: pass 1 (state join), pass 2 (changed rows)
        "diff pass 1: session 1: snapshot_state(source) full-outer-join old -> write": lambda: write(
            diff_full
        ),
        "diff pass 1 alt: window state(source) full-outer-join old -> write": lambda: write(diff_window),
        "diff pass 2: session 1: source join changed keys (AQE decides) -> write": lambda: write(
            c.changed_source(spark, args.rows).join(changed_keys, ["id"])
        ),
        "diff pass 2 alt: source join broadcast(changed keys) -> write": lambda: write(
            c.changed_source(spark, args.rows).join(F.broadcast(changed_keys), ["id"])
        ),
        "source only: changed_source -> noop": lambda: noop(c.changed_source(spark, args.rows)),
    }
    try:
        times = c.time_cases(cases, repeat=args.repeat, scratch=scratch)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.write_probe(
        "probe_push_stages",
        title="cost of the pieces of a push, and cheaper alternatives",
        rows=args.rows,
        repeat=args.repeat,
        times=times,
        load_before=load_before,
        spark=spark,
    )


if __name__ == "__main__":
    main()
