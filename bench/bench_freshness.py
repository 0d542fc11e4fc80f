"""Freshness at the steady pgbench rate (issue 43, item 5): the *published* and *applied*
figures' p50/p95 of a PostgreSQL database live through ``db.mirror_plan``, per micro-batch trigger
interval (the floor the figures approach), and the age while busy, idle and stopped.

The real chain of ``bench/bench_live.py``: a throwaway PostgreSQL with logical decoding,
``pgbench -i -s <scale>``, the marker table as Debezium's heartbeat table (``heartbeat_ms``), a
throwaway broker and Kafka Connect with Debezium's PostgreSQL connector, configured by
``db.cdc_connector``. The local mirror runs beside the stream (``LocalMirror.start(interval=1)``),
so *applied* is measured exactly.

1. ``db.mirror_plan(plan, trigger="available_now")``: the first loads, not measured.
2. For each trigger of ``--triggers``: a continuous ``db.mirror_plan(..., trigger=T)`` on the same
   checkpoint, ``pgbench -n -c 2 -j 1 -R <rate>`` for ``--window`` seconds, then the drain (as
   ``bench_live``). The figures are those of ``db.freshness(table).history`` for the files
   published during the step, per pgbench table and over all four; the stages of
   ``db.freshness(table).stages`` are quoted for the first trigger's step (they cover the recent
   files, which are then that step's only). The age of every table is sampled each 2 s.
3. Idle, with the last trigger's stream: ``--idle`` seconds with no writes but heartbeats; the age
   of ``pgbench_branches`` (no change, only heartbeats move it) sampled.
4. Stopped: the stream stops; the age sampled for ``--idle`` seconds grows with the clock.

The skew the stream measured over JDBC is recorded (one machine here: near 0, within its error).

Writes bench/results/spark4/freshness.json.

Usage: SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python bench/bench_freshness.py [--scale 1] [--rate 100]
    [--window 120] [--triggers "5 seconds,10 seconds"] [--idle 30] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.*

import _common as c
from bench_live import ENV, pg_figures

import openmirror_nb as om
from openmirror_nb._core.status.freshness import percentile
from tests import cdc_chain, spark_packages
from tests.cdc_chain import MARKER_TABLE, Pgbench
from tests.kafka_broker import KafkaBroker
from tests.kafka_connect import KafkaConnect
from tests.sources.postgres import PASSWORD, SUPERUSER, start_server

TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history")


def figures(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"files": 0}
    return {
        "files": len(values),
        "p50": round(percentile(values, 50), 2),
        "p95": round(percentile(values, 95), 2),
        "max": round(max(values), 2),
        "min": round(min(values), 2),
    }


def name(db: Any, table: str) -> str:
    """The mirrored table of a pgbench table (the plan's target schema may be any)."""
    return next(t for t in db.tables() if t.split(".")[-1] == table)


def ages(db: Any) -> dict[str, float | None]:
    report = db.status()
    found = {t.table.split(".")[-1]: t.freshness for t in report.tables}
    return {t: (found.get(t) or om.Freshness(table=t)).age for t in TABLES}


def drain(pg: Any, live: Any, stopped_at: float) -> float:
    """Until the stream applied everything pgbench wrote (a marker write every 5 s)."""
    target = cdc_chain.lsn(cdc_chain.drain_target(pg))
    marked = 0.0
    while (live.applied_lsn() or 0) < target:
        if live.stream.error is not None:
            raise SystemExit(f"the stream stopped: {live.stream.error}")
        if time.monotonic() - stopped_at > 300:
            raise SystemExit("not drained 300 s after pgbench stopped")
        if time.monotonic() - marked >= 5:
            cdc_chain.marker(pg)
            marked = time.monotonic()
        time.sleep(0.25)
    return time.monotonic() - stopped_at


def settled(db: Any, timeout: float = 120) -> None:
    """Until the local mirror applied every published file."""
    deadline = time.monotonic() + timeout
    while any(t.pending for t in db.status().tables):
        if time.monotonic() > deadline:
            raise SystemExit("the local mirror did not apply every file in time")
        time.sleep(0.5)


def step(pg: Any, bench: Pgbench, db: Any, live: Any, *, rate: int, window: float, trigger_s: float) -> dict:
    time.sleep(trigger_s)  # the stream's first batch
    began = time.time()
    samples: list[dict[str, float | None]] = []
    bench.start(rate=rate, clients=2)
    started = time.monotonic()
    while time.monotonic() - started < window:
        samples.append(ages(db))
        time.sleep(2)
    stopped_at = time.monotonic()
    tx = bench.stop()
    drained = drain(pg, live, stopped_at)
    ended = time.time()
    settled(db)
    per_table, published, applied = {}, [], []
    stages: dict[str, dict[str, Any]] = {}
    for t in TABLES:
        found = db.freshness(name(db, t))
        mine = [p for p in found.history if began <= p.published_at <= ended]
        pub = [p.published for p in mine if p.published is not None]
        app = [p.applied for p in mine if p.applied is not None]
        published += pub
        applied += app
        per_table[t] = {"published": figures(pub), "applied": figures(app), "age_now": found.age}
        stages[t] = {s.name: {"p50": s.figure.p50, "p95": s.figure.p95} for s in found.stages}
    busy_ages = [a for s in samples for a in s.values() if a is not None]
    return {
        "rate_asked_tps": rate,
        "pgbench_tps": round(tx / window, 1),
        "drain_seconds": round(drained, 2),
        "published": figures(published),
        "applied": figures(applied),
        "per_table": per_table,
        "stages_recent_files": stages,
        "age_while_busy": figures(busy_ages),
        "skew": {"seconds": found.skew, "error": found.skew_error},
        "loadavg_after": c.loadavg(),
    }


def watch(db: Any, seconds: float, table: str = "pgbench_branches") -> list[tuple[float, float | None]]:
    out = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        out.append((round(time.monotonic() - start, 1), ages(db)[table]))
        time.sleep(2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=int, default=1, help="pgbench -i -s")
    parser.add_argument("--rate", type=int, default=100, help="pgbench -R (issue 42's steady rate)")
    parser.add_argument("--window", type=float, default=120, help="seconds of pgbench per trigger")
    parser.add_argument("--triggers", default="5 seconds,10 seconds", help="the streams' triggers, in turn")
    parser.add_argument("--idle", type=float, default=30, help="seconds idle, then stopped")
    parser.add_argument("--heartbeat-ms", type=int, default=5000, help="Debezium's heartbeat interval")
    parser.add_argument("--quick", action="store_true", help="a smoke run: rate 20, 30 s, one trigger")
    args = parser.parse_args()
    if args.quick:
        args.rate, args.window, args.triggers, args.idle = 20, 30, "5 seconds", 10
    triggers = [t.strip() for t in args.triggers.split(",")]
    why = cdc_chain.missing()
    if why:
        raise SystemExit(f"no CDC chain here: {why}")
    os.environ.setdefault("OPENMIRROR_SPARK_JARS", str(spark_packages.jars("kafka")))
    os.environ[ENV] = PASSWORD
    from openmirror_nb._core.runtime import get_spark

    load_before, started = c.loadavg(), time.time()
    spark = get_spark()
    pg = start_server(logical=True)
    work = Path(tempfile.mkdtemp(prefix="bench-freshness-"))
    mirror = None
    try:
        bench = Pgbench(pg, work / "pgbench")
        bench.init(scale=args.scale)
        cdc_chain.create_marker_table(pg)
        source = om.Jdbc(pg.url, user=SUPERUSER, password_env=ENV, schema="public")
        db = om.connect(work / "db")
        plan = db.plan_sources(source, strategy="cdc", suggest=False)
        cdc = om.Cdc(
            topic_prefix="fresh", slot="fresh", publication="fresh", heartbeat_table=MARKER_TABLE,
            heartbeat_ms=args.heartbeat_ms,
        )  # fmt: skip
        config = db.cdc_connector(plan, cdc=cdc)
        with KafkaBroker() as broker, KafkaConnect(
            broker.bootstrap, pg, name=cdc.connector_name, slot=cdc.slot, topic_prefix=cdc.topic_prefix,
            settings=config["config"], worker=om.worker_settings(config), env={ENV: PASSWORD},
        ) as connect:  # fmt: skip
            connect.wait_streaming(120)
            cdc_chain.wait_snapshot_committed(connect)
            kafka = om.Kafka(bootstrap_servers=broker.bootstrap)
            ckpt = work / "ckpt"

            def live_with(trigger: str) -> Any:
                return db.mirror_plan(
                    plan, kafka=kafka, checkpoint=ckpt, cdc=cdc, trigger=trigger, progress=False
                )

            first = live_with("available_now")
            first.await_termination(timeout=900)
            mirror = om.LocalMirror(db.target.root)
            mirror.start(interval=1.0)
            settled(db)
            steps = []
            for trigger in triggers:
                live = live_with(trigger)
                try:
                    got = step(
                        pg,
                        bench,
                        db,
                        live,
                        rate=args.rate,
                        window=args.window,
                        trigger_s=float(trigger.split()[0]),
                    )
                    got["trigger"] = trigger
                    steps.append(got)
                    print(f"{trigger}: published {got['published']}, applied {got['applied']}", flush=True)
                    if trigger == triggers[-1]:
                        idle = watch(db, args.idle)
                finally:
                    live.stop()
            stopped = watch(db, args.idle)
        final_pg = pg_figures(pg)
    finally:
        if mirror is not None:
            mirror.stop()
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)
    first_step = steps[0]
    out = {
        "benchmark": "freshness of db.mirror_plan over a pgbench database (PostgreSQL -> Debezium in Kafka "
        "Connect -> Kafka -> the stream -> the landing zone -> the local mirror) at a steady pgbench rate",
        "quick": args.quick,
        "pgbench_scale": args.scale,
        "rate_tps": args.rate,
        "window_seconds": args.window,
        "heartbeat_ms": args.heartbeat_ms,
        "local_mirror_interval_seconds": 1.0,
        "figures": "per file: published = the file published - its oldest change's source.ts_ms (skew "
        "corrected); applied = the local mirror applied it - the same source time",
        "steps": steps,
        "idle_age_pgbench_branches": idle,
        "stopped_age_pgbench_branches": stopped,
        "rows_in_postgresql": {t: v[0] for t, v in final_pg.items()},
        "wall_seconds": round(time.time() - started, 1),
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
        "headline": {
            "figure": f"published and applied p50/p95 at {args.rate} tx/s, trigger {first_step['trigger']}",
            "value": f"published p50 {first_step['published'].get('p50')} s, p95 "
            f"{first_step['published'].get('p95')} s; applied p50 {first_step['applied'].get('p50')} s, p95 "
            f"{first_step['applied'].get('p95')} s; floor: the trigger interval",
            "goal": "measured, no target (issue 43, item 5)",
        },
    }
    path = c.write_result("freshness", out)
    print(out["headline"])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
