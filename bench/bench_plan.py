"""Many tables at once (issue 27): ``db.run_plan(parallel=4)`` ÷ a loop of ``db.push`` over the
same tables in the same process, the rerun with nothing changed, and ``db.status()`` over 100
tables of a local database.

A Spark catalog database of --tables Parquet tables of --rows rows each (the 8-column
``source()`` frame) is planned with ``om.Catalog`` and keys declared (``id``). Per repetition,
into fresh local databases: the loop (``db.push(spark.table(t), table=..., keys=["id"])`` one
table after the other) and ``run_plan(parallel=4)``, in alternating order; then ``run_plan``
again with nothing changed: its time and every file it created or changed (only the
``_openmirror/checked.json`` records should be). Then the 50 tables' folders are copied under a
second schema and ``db.status()`` is timed over the 100. One warm-up, then --repeat runs; medians.
Writes bench/results/plan.json.

Usage: .venv/bin/python bench/bench_plan.py [--tables 50] [--rows 20000] [--repeat 2] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

import openmirror_nb as om
from openmirror_nb._core.runtime import get_spark

DATABASE = "bench_plan_source"
SPEEDUP_GOAL, STATUS_GOAL = 1.5, 1.0


def make_source(spark: Any, where: Path, tables: int, rows: int) -> om.Catalog:
    spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")
    spark.sql(f"CREATE DATABASE {DATABASE} LOCATION '{where.as_uri()}'")
    for i in range(tables):
        c.source(spark, rows).coalesce(1).write.saveAsTable(f"{DATABASE}.t{i:03d}")
    return om.Catalog(DATABASE)


def declared(plan: om.SourcePlan) -> om.SourcePlan:
    tables = [dataclasses.replace(t, keys=("id",), key_origin="declared", problems=()) for t in plan.tables]
    return dataclasses.replace(plan, tables=tables)


def files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def loop(spark: Any, db: Any, plan: om.SourcePlan) -> None:
    for t in plan.tables:
        db.push(spark.table(f"{DATABASE}.{t.source}"), table=t.table, keys=list(t.keys), progress=False)


def one_rep(spark: Any, work: Path, rep: int, plan: om.SourcePlan) -> dict[str, Any]:
    looped, planned = om.connect(work / f"loop{rep}"), om.connect(work / f"plan{rep}")
    out: dict[str, Any] = {}

    def run_loop() -> None:
        out["loop"], _ = c.timed(lambda: loop(spark, looped, plan))

    def run_planned() -> None:
        out["run_plan"], run = c.timed(lambda: planned.run_plan(plan, parallel=4, progress=False))
        if not run.ok or run.counts["ok"] != len(plan.tables):
            raise SystemExit(f"run_plan did not push every table: {run.summary()}")

    for step in (run_loop, run_planned) if rep % 2 else (run_planned, run_loop):
        step()
    lz = work / f"plan{rep}" / "Files" / "LandingZone"
    before = files(lz)
    out["rerun"], again = c.timed(lambda: planned.run_plan(plan, parallel=4, progress=False))
    if again.counts["unchanged"] != len(plan.tables):
        raise SystemExit(f"the rerun changed tables: {again.summary()}")
    after = files(lz)
    out["rerun_wrote"] = sorted(p for p in after if before.get(p) != after[p])
    out["rerun_removed"] = sorted(set(before) - set(after))
    shutil.copytree(lz / "shop.schema", lz / "copy.schema")
    out["status_tables"] = len(planned.tables())
    out["status"] = c.median([c.timed(lambda: planned.status())[0] for _ in range(3)])
    shutil.rmtree(work / f"loop{rep}")
    shutil.rmtree(work / f"plan{rep}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="10 tables of 2,000 rows, 1 repetition")
    args = parser.parse_args()
    if args.quick:
        args.tables, args.rows, args.repeat = 10, 2_000, 1
    load_before = c.loadavg()
    spark = get_spark()
    work = Path(tempfile.mkdtemp(prefix="bench-plan-"))
    try:
        source = make_source(spark, work / "catalog", args.tables, args.rows)
        plan = declared(
            om.connect(work / "planning").plan_sources(source, target_schema="shop", suggest=False)
        )
        one_rep(spark, work, 0, plan)  # warm-up: JIT, class loading, every flow once
        reps = [one_rep(spark, work, i + 1, plan) for i in range(args.repeat)]
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")
        shutil.rmtree(work, ignore_errors=True)
    out = summarize(args, reps, load_before, spark)
    path = c.write_result("plan", out)
    print(
        f"loop {out['median_seconds']['loop']:.1f} s, run_plan {out['median_seconds']['run_plan']:.1f} s "
        f"({out['speedup']}x), rerun {out['median_seconds']['rerun']:.1f} s, status "
        f"{out['median_seconds']['status']:.3f} s over {out['status_tables']} tables"
    )
    print(f"wrote {path}")


def summarize(args: Any, reps: list[dict[str, Any]], load_before: Any, spark: Any) -> dict[str, Any]:
    m = {k: round(c.median([r[k] for r in reps]), 4) for k in ("loop", "run_plan", "rerun", "status")}
    speedup = round(m["loop"] / m["run_plan"], 2)
    wrote = sorted({p for r in reps for p in r["rerun_wrote"]})
    return {
        "benchmark": "run_plan(parallel=4) vs a loop of db.push over the same tables, same process",
        "tables": args.tables,
        "rows": args.rows,
        "repeat": args.repeat,
        "quick": args.quick,
        "seconds": {k: [round(r[k], 4) for r in reps] for k in m},
        "median_seconds": m,
        "speedup": speedup,
        "speedup_goal": f">= {SPEEDUP_GOAL}",
        "rerun": {
            "median_seconds": m["rerun"],
            "per_table_seconds": round(m["rerun"] / args.tables, 3),
            "files_written": len(wrote),
            "only_checked_records": all(p.endswith("_openmirror/checked.json") for p in wrote),
            "files_removed": sorted({p for r in reps for p in r["rerun_removed"]}),
        },
        "status_tables": reps[0]["status_tables"],
        "status": {"median_seconds": m["status"], "goal": f"< {STATUS_GOAL} s"},
        "headline": {
            "figure": "run_plan(parallel=4) speedup over a loop of db.push",
            "value": speedup,
            "goal": f">= {SPEEDUP_GOAL}",
            "met": speedup >= SPEEDUP_GOAL,
        },
        "status_met": m["status"] < STATUS_GOAL,
        "machine": c.machine(spark),
        "load_before": load_before,
        "load_after": c.loadavg(),
    }


if __name__ == "__main__":
    main()
