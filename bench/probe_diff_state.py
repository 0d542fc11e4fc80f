"""Probe (not a headline benchmark): cheaper ways to keep and diff the key state.

On N rows of the 8-column ``source()`` frame, medians of --repeat, one Spark session: the initial
load's key state with a group-by vs a window count, written with Parquet's defaults vs without
dictionary pages for the hash columns; the diff's state join writing the whole next state vs
only the changed keys (a delta); reading a base with a small delta applied by a broadcast
anti-join vs a group-by; and the second pass over the source with broadcast changed keys.
Writes bench/results/probe_diff_state.json.

Usage: .venv/bin/python bench/probe_diff_state.py [--rows 10000000] [--repeat 2]
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
NO_DICT = {f"parquet.enable.dictionary#{col}": "false" for col in (keystate.H1, keystate.H2, keystate.ROWS)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    c.require_disk(4)
    load_before = c.loadavg()
    spark = get_spark()
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    work = Path(tempfile.mkdtemp(prefix="probe-diff-"))
    scratch = c.Scratch(spark, work)
    fresh, write = scratch.fresh, scratch.write

    def hashed(df: Any) -> Any:
        h1, h2 = keystate.row_hashes(df, keys=KEYS)
        return df.select("id", h1.alias(keystate.H1), h2.alias(keystate.H2))

    def window_state(df: Any) -> Any:
        rows = F.count(F.lit(1)).over(Window.partitionBy(*KEYS)).cast("long")
        return hashed(df).withColumn(keystate.ROWS, rows)

    parts = str(work / "parts")
    old_state = str(work / "old_state")
    delta_state = str(work / "delta_state")
    with session_conf(spark, _WRITE_CONF):
        c.source(spark, args.rows).write.option("maxRecordsPerFile", 1_000_000).parquet(parts)
        window_state(spark.read.parquet(parts)).write.parquet(old_state)
    staged = spark.read.parquet(parts)
    old = spark.read.parquet(old_state)
    diff = snapdiff.diff_states(
        window_state(c.changed_source(spark, args.rows)), old, keys=KEYS, update_marker=4
    )
    with session_conf(spark, _WRITE_CONF):
        diff.where(F.col(keystate.CHANGE).isNotNull()).write.parquet(delta_state)
    delta = spark.read.parquet(delta_state)
    changed_keys = delta.select("id")
    live_delta = delta.where(F.col(keystate.ROWS) > 0).select("id", keystate.ROWS, keystate.H1, keystate.H2)
    applied_broadcast = old.join(F.broadcast(changed_keys), ["id"], "left_anti").unionByName(live_delta)
    applied_groupby = keystate.read_effective(
        spark, base=old_state, deltas=[delta_state], keys=KEYS, small_deltas=False
    )

    cases: dict[str, Callable[[], Any]] = {
        "initial: plain df.write.parquet (baseline)": lambda: c.source(spark, args.rows).write.parquet(
            fresh()
        ),
        "initial state: groupBy -> write": lambda: write(c.groupby_state(staged, KEYS)),
        "initial state: window -> write": lambda: write(window_state(staged)),
        "initial state: window -> write, no dictionary on hashes": lambda: write(
            window_state(staged), **NO_DICT
        ),
        "initial state: window -> write, no dictionary, uncompressed": lambda: write(
            window_state(staged), compression="none", **NO_DICT
        ),
        "diff pass 1: window join old -> write whole state": lambda: write(diff, **NO_DICT),
        "diff pass 1: window join old -> write changed keys only": lambda: write(
            diff.where(F.col(keystate.CHANGE).isNotNull()), **NO_DICT
        ),
        "diff pass 1: window join (old + delta by broadcast anti-join) -> write changed": lambda: write(
            snapdiff.diff_states(
                window_state(c.changed_source(spark, args.rows)),
                applied_broadcast,
                keys=KEYS,
                update_marker=4,
            ).where(F.col(keystate.CHANGE).isNotNull()),
            **NO_DICT,
        ),
        "diff pass 1: window join (old + delta by group-by) -> write changed": lambda: write(
            snapdiff.diff_states(
                window_state(c.changed_source(spark, args.rows)), applied_groupby, keys=KEYS, update_marker=4
            ).where(F.col(keystate.CHANGE).isNotNull()),
            **NO_DICT,
        ),
        "diff pass 2: source join broadcast(changed keys) -> write": lambda: write(
            c.changed_source(spark, args.rows).join(F.broadcast(changed_keys), ["id"])
        ),
    }
    try:
        times = c.time_cases(cases, repeat=args.repeat, scratch=scratch)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.write_probe(
        "probe_diff_state",
        title="key state and diff alternatives",
        rows=args.rows,
        repeat=args.repeat,
        times=times,
        load_before=load_before,
        spark=spark,
    )


if __name__ == "__main__":
    main()
