"""A 1%-changed snapshot push (the diff) ÷ a plain write of that snapshot (issue 25, goal <= 1.2),
and ÷ the initial load of the same data (issue 4, goal <= 1.0).

Per repetition, in a fresh local mirrored database: push the 8-column ``source()`` frame of
N rows (initial load, timed), then push a snapshot of it with 1% of rows changed (0.8% updated,
0.1% deleted, 0.1% new keys; timed). The published diff is checked through ``PushResult.rows``
against the planned counts. Medians over the repetitions; ratio = median diff ÷ median initial.
For context (not in the ratio) each rep then pushes the base snapshot back in a second diff,
which reads the stored base plus the first diff's delta (``later_diff_seconds``, the steady state
between compactions), and the changed snapshot once more in a diff forced to compact the key
state (``compacting_diff_seconds``), which every diff past the delta bounds does.
Each rep also times a plain ``df.write.parquet`` of the changed snapshot (the headline's
baseline). Every push is profiled per phase with its Spark jobs (bench/_common.py ``Profiler``),
and the cost of just computing each source frame (``write.format("noop")``) is measured for
reference.
Writes bench/results/diff.json.

Usage: .venv/bin/python bench/bench_diff.py [--rows 10000000] [--repeat 2] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

import openmirror_nb as om
from openmirror_nb._core.runtime import get_spark

GOAL = 1.0
PLAIN_GOAL = 1.2
TABLE = "bench.orders"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="1M rows, 2 repetitions (smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeat = 1_000_000, 2
    c.require_disk(3)
    load_before = c.loadavg()
    spark = get_spark()
    planned = c.planned_changes(args.rows)
    profiler = c.Profiler(spark).install()
    work = Path(tempfile.mkdtemp(prefix="bench-diff-"))
    initial, diff, later, compacting, files, profiles, published = [], [], [], [], [], [], []
    plain: list[float] = []
    try:
        # warm-up: JIT, class loading, first-job costs, both flows
        warm = om.connect(work / "warmdb")
        warm.push(c.source(spark, 100_000), table=TABLE, keys=["id"])
        warm.push(c.changed_source(spark, 100_000), table=TABLE, keys=["id"])
        for rep in range(args.repeat):
            db = om.connect(work / f"db{rep}")
            with profiler.push() as p_init:
                s_init, r_init = c.timed(
                    lambda db=db: db.push(
                        c.source(spark, args.rows), table=TABLE, keys=["id"], progress=profiler
                    )
                )
            if r_init.rows != {"initial": args.rows}:
                raise SystemExit(f"initial load published {r_init.rows}, expected {args.rows} rows")
            with profiler.push() as p_diff:
                s_diff, r_diff = c.timed(
                    lambda db=db: db.push(
                        c.changed_source(spark, args.rows), table=TABLE, keys=["id"], progress=profiler
                    )
                )
            if r_diff.rows != planned:
                raise SystemExit(f"the diff published {r_diff.rows}, planned {planned}")
            target = str(work / f"plain{rep}")
            s_plain, _ = c.timed(
                lambda target=target: c.changed_source(spark, args.rows).write.parquet(target)
            )
            plain.append(round(s_plain, 3))
            shutil.rmtree(target)
            # Context, not the ratio: the base snapshot back, in a diff against base + one delta;
            # then the changed one again, in a push made to compact the key state (rewrite it
            # whole), as every diff past the delta bounds does.
            s_later, r_later = c.timed(
                lambda db=db: db.push(c.source(spark, args.rows), table=TABLE, keys=["id"], progress=profiler)
            )
            if sum(r_later.rows.values()) != sum(planned.values()):
                raise SystemExit(f"the second diff published {r_later.rows}")
            with c.forced_compaction():
                s_comp, r_comp = c.timed(
                    lambda db=db: db.push(
                        c.changed_source(spark, args.rows), table=TABLE, keys=["id"], progress=profiler
                    )
                )
            if r_comp.rows != planned:
                raise SystemExit(f"the compacting diff published {r_comp.rows}")
            later.append(round(s_later, 3))
            compacting.append(round(s_comp, 3))
            initial.append(round(s_init, 3))
            diff.append(round(s_diff, 3))
            files.append({"initial": len(r_init.sequence_numbers), "diff": len(r_diff.sequence_numbers)})
            published.append({"initial_bytes": r_init.bytes, "diff_bytes": r_diff.bytes})
            profiles.append({"initial": p_init, "diff": p_diff})
            print(
                f"rep {rep + 1}: initial {s_init:.2f} s, diff {s_diff:.2f} s, diff rows {r_diff.rows}, "
                f"second diff {s_later:.2f} s, compacting diff {s_comp:.2f} s",
                flush=True,
            )
            shutil.rmtree(work / f"db{rep}")
        profiler.restore()
        # reference: what computing each source frame costs, with no write at all
        noop_base, _ = c.timed(
            lambda: c.source(spark, args.rows).write.format("noop").mode("overwrite").save()
        )
        noop_changed, _ = c.timed(
            lambda: c.changed_source(spark, args.rows).write.format("noop").mode("overwrite").save()
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratio = c.median(diff) / c.median(initial)
    to_plain = c.median(diff) / c.median(plain)
    out = {
        "benchmark": "1%-changed snapshot push (diff) ÷ initial load of the same data",
        "rows": args.rows,
        "repeat": args.repeat,
        "quick": args.quick,
        "change_mix_planned": planned,
        "changed_fraction": round(sum(planned.values()) / args.rows, 4),
        "initial_seconds": initial,
        "diff_seconds": diff,
        "median_initial_seconds": round(c.median(initial), 3),
        "median_diff_seconds": round(c.median(diff), 3),
        "later_diff_seconds": later,
        "median_later_diff_seconds": round(c.median(later), 3),
        "later_diff_ratio_to_initial": round(c.median(later) / c.median(initial), 3),
        "compacting_diff_seconds": compacting,
        "median_compacting_diff_seconds": round(c.median(compacting), 3),
        "compacting_diff_ratio_to_initial": round(c.median(compacting) / c.median(initial), 3),
        "plain_write_seconds": plain,
        "median_plain_write_seconds": round(c.median(plain), 3),
        "ratio_to_plain_write": round(to_plain, 3),
        "plain_goal": f"<= {PLAIN_GOAL}",
        "ratio": round(ratio, 3),
        "goal": f"<= {GOAL}",
        "meets_goal": ratio <= GOAL,
        "published_files": files,
        "published_bytes": published,
        "diff_rows_verified": True,
        "source_compute_only_seconds": {"base": round(noop_base, 3), "changed": round(noop_changed, 3)},
        "phases_initial_median": c.summarize_phases([p["initial"] for p in profiles]),
        "phases_diff_median": c.summarize_phases([p["diff"] for p in profiles]),
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
        "headline": {
            "figure": "1%-changed snapshot push ÷ plain df.write.parquet of the snapshot (÷ the initial load)",
            "value": f"{round(to_plain, 3)} ({round(ratio, 3)})",
            "goal": f"<= {PLAIN_GOAL} (<= {GOAL})",
            "met": to_plain <= PLAIN_GOAL and ratio <= GOAL,
        },
    }
    path = c.write_result("diff", out)
    print(
        f"÷ plain write {to_plain:.3f} (goal <= {PLAIN_GOAL}), ÷ initial {ratio:.3f} (goal <= {GOAL}); wrote {path}"
    )


if __name__ == "__main__":
    main()
