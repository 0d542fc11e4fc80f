"""A PostgreSQL database live through ``db.mirror_plan`` (issue 42, item 6): its first load against
``db.run_plan`` of the same tables with no stream, and end-to-end rows per second with ``pgbench``
writing at a steady rate.

The real chain, as ``tests/streaming/test_mirror_plan.py`` composes it: a throwaway PostgreSQL with
logical decoding (``tests/sources/postgres.py``, ``start_server(logical=True)``), ``pgbench -i -s 10``
(1,000,000 accounts, 100 tellers, 10 branches; ``pgbench_history`` empty and keyless), the marker
table of ``tests/cdc_chain.py`` as the heartbeat table, a throwaway broker
(``tests/kafka_broker.py``) and Kafka Connect with Debezium's PostgreSQL connector
(``tests/kafka_connect.py``) started with ``db.cdc_connector(plan, cdc=cdc)``'s configuration as it
is, ``om.worker_settings(config)`` and the password through ``env=`` for its ``${env:...}``
reference. Connect runs (its snapshot of the keyless ``pgbench_history`` committed) before anything
is timed, so both first loads share the machine with an idle Connect, broker and PostgreSQL.

1. **Baseline**: ``db.run_plan(plan, parallel=4)`` of the pgbench tables planned with the default
   strategy (``snapshot``; ``pgbench_history`` has no key and is skipped) into a fresh database A.
2. **First load through ``db.mirror_plan``**: the same tables planned
   ``db.plan_sources(source, strategy="cdc", suggest=False)``, ``db.mirror_plan(plan, kafka=...,
   trigger="available_now", parallel=4)`` into a fresh database B, timed from the call until
   ``await_termination`` returns (the check, the first loads, the stream over what the topics hold);
   ``live.loaded.seconds`` is its first loads alone. Ratios: ``live.loaded.seconds`` ÷ the baseline's
   ``PlanRun.seconds`` (the first load; of the medians, and per repetition), and the call's wall
   time ÷ the baseline's wall time. Before them a warm-up, not counted: a ``run_plan`` and a
   ``mirror_plan`` of the two small tables (branches, tellers) into databases of their own (Spark,
   JDBC, the Kafka source warmed).
   ``--reps`` > 1 alternates the order. Afterwards both databases are replicated by the local
   mirror and must hold PostgreSQL's row count in every table they have.
3. **Steady state**: a continuous ``db.mirror_plan(..., trigger="5 seconds")`` on database B (same
   checkpoint: nothing is loaded again), while ``pgbench -n -c 2 -j 1 -R <rate>`` (TPC-B: 3 updates
   and 1 insert a transaction, 4 events) writes for ``--window`` seconds, at each rate of
   ``--rates`` in turn, stopping at the first the stream does not keep up with (and starting no rate
   that would end past ``--budget`` seconds of the whole bench). Every second: the WAL's insert
   position and ``live.applied_lsn()``; the lag is the time since the WAL last stood at or below the
   applied position (±1 s; a sawtooth, a batch's period). After pgbench stops: the drain target
   (``drain_target``) and a ``marker`` write (again every 5 s); the drain lag is the time from the
   stop until ``live.applied_lsn()`` passes the target. A rate is kept up with when the lag does not
   grow (its largest value over the window's last third at most that over its middle third plus the
   trigger) and the drain takes at most two of the window's longest batches plus the trigger and
   5 s (the batch under way, then one with the rest). Per rate: pgbench's transactions a second,
   events a second (4 x transactions ÷ pgbench's seconds: the rate applied, when kept up with), end
   to end (the events ÷ the seconds from pgbench's start until drained, the drain included), the
   stream's batches begun in the step (rows, ``triggerExecution`` and its parts) and their busy
   share of the step. The headline is the highest rate kept up with. After the last rate the
   stream stops, the local mirror replicates B, and every table must equal PostgreSQL in row count
   and in the sum of its balance column (``pgbench_history``: of ``delta``).

The machine's load (others' work shares its 2 cores) is recorded before and after, and per step.

Writes bench/results/spark4/live.json.

Usage: SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python bench/bench_live.py [--scale 10]
    [--rates 100,150,200] [--window 90] [--trigger "5 seconds"] [--budget 660] [--reps 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.*

import _common as c

import openmirror_nb as om
from tests import cdc_chain, spark_packages
from tests.cdc_chain import MARKER_TABLE, PGBENCH_KEYS, Pgbench
from tests.kafka_broker import KafkaBroker
from tests.kafka_connect import KafkaConnect
from tests.sources.postgres import PASSWORD, SUPERUSER, PostgresServer, start_server

ENV = "OPENMIRROR_BENCH_PG_PASSWORD"
SMALL = ("pgbench_branches", "pgbench_tellers")
EVENTS_PER_TX = 4  # TPC-B: accounts, tellers, branches updated, one history row inserted
BALANCE = {
    "pgbench_accounts": "abalance",
    "pgbench_branches": "bbalance",
    "pgbench_tellers": "tbalance",
    "pgbench_history": "delta",
}


def wal(pg: PostgresServer) -> int:
    return cdc_chain.lsn(pg.sql("SELECT pg_current_wal_insert_lsn();"))


def pg_figures(pg: PostgresServer) -> dict[str, tuple[int, int]]:
    """Per pgbench table: (rows, sum of its balance column)."""
    out = {}
    for table, column in BALANCE.items():
        rows, total = pg.sql(f"SELECT count(*), coalesce(sum({column}), 0) FROM {table};").strip().split("|")
        out[table] = (int(rows), int(total))
    return out


def mirrored_figures(db: Any) -> dict[str, tuple[int, int]]:
    """Replicate with the local mirror; per table of the database: (rows, sum of its balance
    column)."""
    from pyspark.sql import functions as F

    om.LocalMirror(db.target.root).run_once()
    out = {}
    for table in db.tables():
        name = table.split(".")[-1]
        df = db.read_table(table)
        row = df.agg(F.count(F.lit(1)), F.coalesce(F.sum(BALANCE[name]), F.lit(0))).first()
        out[name] = (int(row[0]), int(row[1]))
    return out


def subset(plan: Any, names: tuple[str, ...]) -> Any:
    return replace(plan, tables=[t for t in plan.tables if t.source in names])


def progress_of(query: Any, seen: dict[int, dict[str, Any]]) -> None:
    """Add the query's recent batches that read rows to ``seen`` (by batch id), with their start
    (``at``, epoch seconds)."""
    import json
    from datetime import datetime

    for p in query.recentProgress:
        d = json.loads(p.json) if hasattr(p, "json") else p
        if d.get("numInputRows", 0) > 0:
            seen[d["batchId"]] = {
                "rows": d["numInputRows"],
                "trigger_ms": d["durationMs"].get("triggerExecution", 0),
                "at": datetime.fromisoformat(d["timestamp"].replace("Z", "+00:00")).timestamp(),
                "duration_ms": d["durationMs"],
            }


def time_lag(samples: list[tuple[float, int, int | None]]) -> list[tuple[float, float]]:
    """Per sample (t, wal, applied): (t, seconds since the WAL last stood at or below ``applied``)."""
    out = []
    for i, (t, _, applied) in enumerate(samples):
        if applied is None:
            continue
        last = None
        for s, w, _ in samples[: i + 1]:
            if w <= applied:
                last = s
        out.append((t, round(t - (last if last is not None else samples[0][0]), 2)))
    return out


def steady(
    pg: PostgresServer, bench: Pgbench, live: Any, rate: int, window: float, trigger_s: float
) -> dict[str, Any]:
    """pgbench at ``rate`` for ``window`` seconds under the running stream, then the drain."""
    load = c.loadavg()
    batches: dict[int, dict[str, Any]] = {}
    samples: list[tuple[float, int, int | None]] = []
    began, began_wall = time.monotonic(), time.time()
    bench.start(rate=rate, clients=2)
    started = time.monotonic()
    while time.monotonic() - started < window:
        samples.append((time.monotonic() - started, wal(pg), live.applied_lsn()))
        progress_of(live.stream.query, batches)
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started - samples[-1][0])))
    stopped_at = time.monotonic()
    tx = bench.stop()
    pg_seconds = time.monotonic() - started
    target = cdc_chain.lsn(cdc_chain.drain_target(pg))
    deadline = stopped_at + 300
    applied, marked = live.applied_lsn(), 0.0
    while applied is None or applied < target:
        if live.stream.error is not None:
            raise SystemExit(f"the stream stopped at rate {rate}: {live.stream.error}")
        if time.monotonic() > deadline:
            raise SystemExit(
                f"not drained {deadline - stopped_at:.0f} s after pgbench stopped at rate {rate}"
            )
        if time.monotonic() - marked >= 5:
            cdc_chain.marker(pg)
            marked = time.monotonic()
        time.sleep(0.25)
        applied = live.applied_lsn()
    drained_at = time.monotonic()
    progress_of(live.stream.query, batches)
    drain = drained_at - stopped_at
    lags = time_lag(samples)
    third = max(1, len(lags) // 3)
    middle = max([g for _, g in lags[third : 2 * third]] or [0.0])
    last = max([g for _, g in lags[-third:]] or [0.0])
    mine = [batches[b] for b in sorted(batches) if batches[b]["at"] >= began_wall]  # begun in the step
    busy = sum(b["trigger_ms"] for b in mine) / 1000
    rows = sum(b["rows"] for b in mine)
    events = EVENTS_PER_TX * tx
    ms = [b["trigger_ms"] for b in mine]
    limit = 2 * max(ms or [0]) / 1000 + trigger_s + 5
    kept_up = last <= middle + trigger_s and drain <= limit
    parts = sorted({k for b in mine for k in b["duration_ms"]})
    part_ms = {k: c.median([b["duration_ms"].get(k, 0) for b in mine]) for k in parts} if mine else {}
    return {
        "rate_asked_tps": rate,
        "pgbench_transactions": tx,
        "pgbench_seconds": round(pg_seconds, 1),
        "pgbench_tps": round(tx / pg_seconds, 1),
        "events": events,
        "events_per_second": round(events / pg_seconds, 1),
        "end_to_end_rows_per_second": round(events / (drained_at - started), 1),
        "drain_seconds": round(drain, 2),
        "drain_limit_seconds": limit,
        "lag_seconds_max_middle_third": middle,
        "lag_seconds_max_last_third": last,
        "lag_seconds_max": max((g for _, g in lags), default=None),
        "kept_up": kept_up,
        "batches": len(mine),
        "batch_rows_median": c.median([b["rows"] for b in mine]) if mine else None,
        "batch_ms_median": c.median(ms) if ms else None,
        "batch_ms_max": max(ms) if ms else None,
        "batch_duration_ms_median": part_ms,
        "batch_rows": [b["rows"] for b in mine],
        "batch_ms": ms,
        "stream_rows": rows,
        "stream_busy_fraction": round(busy / (drained_at - began), 2),
        "lag_samples": lags,
        "loadavg_before": load,
        "loadavg_after": c.loadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=int, default=10, help="pgbench -i -s")
    parser.add_argument("--rates", default="100,150,200", help="pgbench -R steps, transactions/s")
    parser.add_argument("--window", type=float, default=90, help="seconds of pgbench per rate")
    parser.add_argument("--budget", type=float, default=660, help="start no rate that would end past this")
    parser.add_argument("--trigger", default="5 seconds", help="the continuous stream's trigger")
    parser.add_argument("--reps", type=int, default=3, help="timed first loads of each (alternating)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: -s 1, rates 20,40, 30 s")
    args = parser.parse_args()
    if args.quick:
        args.scale, args.rates, args.window, args.reps = 1, "20,40", 30, 1
    rates = [int(r) for r in args.rates.split(",")]
    trigger_s = float(args.trigger.split()[0])
    why = cdc_chain.missing()
    if why:
        raise SystemExit(f"no CDC chain here: {why}")
    os.environ.setdefault("OPENMIRROR_SPARK_JARS", str(spark_packages.jars("kafka")))
    os.environ[ENV] = PASSWORD
    from openmirror_nb._core.runtime import get_spark

    load_before = c.loadavg()
    started = time.time()
    spark = get_spark()
    pg = start_server(logical=True)
    work = Path(tempfile.mkdtemp(prefix="bench-live-"))
    try:
        bench = Pgbench(pg, work / "pgbench")
        init_s = bench.init(scale=args.scale)
        cdc_chain.create_marker_table(pg)
        pg.sql("VACUUM ANALYZE;")
        source = om.Jdbc(pg.url, user=SUPERUSER, password_env=ENV, schema="public")
        planner = om.connect(work / "planning")
        snap_plan = planner.plan_sources(source, suggest=False)
        cdc_plan = planner.plan_sources(source, strategy="cdc", suggest=False)
        problems = [t.problems for t in cdc_plan.tables if t.problems]
        if problems:
            raise SystemExit(f"the cdc plan has problems: {problems}")
        cdc = om.Cdc(topic_prefix="bench", slot="bench", publication="bench", heartbeat_table=MARKER_TABLE)
        config = planner.cdc_connector(cdc_plan, cdc=cdc)
        at_start = pg_figures(pg)
        with KafkaBroker() as broker, KafkaConnect(
            broker.bootstrap, pg, name=cdc.connector_name, slot=cdc.slot, topic_prefix=cdc.topic_prefix,
            settings=config["config"], worker=om.worker_settings(config), env={ENV: PASSWORD},
        ) as connect:  # fmt: skip
            connect.wait_streaming(120)
            cdc_chain.wait_snapshot_committed(connect)
            kafka = om.Kafka(bootstrap_servers=broker.bootstrap)

            def baseline(name: str, plan: Any) -> tuple[float, Any, Any]:
                db = om.connect(work / f"db-{name}")
                secs, run = c.timed(lambda: db.run_plan(plan, parallel=4, progress=False))
                if run.failed:
                    raise SystemExit(f"{name}: {run.summary()}")
                return secs, run, db

            def live_first(name: str, plan: Any) -> tuple[float, Any, Any]:
                db = om.connect(work / f"db-{name}")
                start = time.perf_counter()
                live = db.mirror_plan(
                    plan, kafka=kafka, checkpoint=work / f"ckpt-{name}", cdc=cdc, parallel=4, progress=False
                )
                live.await_termination(timeout=1800)
                secs = time.perf_counter() - start
                if live.stream.error is not None:
                    raise SystemExit(f"{name}: {live.stream.error}")
                return secs, live, db

            warm_s = {
                "run_plan": round(baseline("warm-a", subset(snap_plan, SMALL))[0], 2),
                "mirror_plan": round(live_first("warm-b", subset(cdc_plan, SMALL))[0], 2),
            }
            print(f"warm-up (not counted): {warm_s}", flush=True)
            runs: list[dict[str, Any]] = []
            dbs: dict[str, Any] = {}
            for rep in range(args.reps):
                order = ["run_plan", "mirror_plan"] if rep % 2 == 0 else ["mirror_plan", "run_plan"]
                got: dict[str, Any] = {"order": order, "loadavg_before": c.loadavg()}
                for kind in order:
                    if kind == "run_plan":
                        secs, run, db = baseline(f"a{rep}", snap_plan)
                        got["run_plan"] = {
                            "wall_seconds": round(secs, 3),
                            "plan_run_seconds": round(run.seconds, 3),
                            "summary": run.summary(),
                            "tables": {t.source: [t.status, t.rows] for t in run.tables},
                        }
                        dbs[f"a{rep}"] = db
                    else:
                        secs, live, db = live_first(f"b{rep}", cdc_plan)
                        got["mirror_plan"] = {
                            "wall_seconds": round(secs, 3),
                            "loaded_seconds": round(live.loaded.seconds, 3),
                            "stream_seconds": round(secs - live.loaded.seconds, 3),
                            "summary": live.loaded.summary(),
                            "tables": {t.source: [t.status, t.rows] for t in live.loaded.tables},
                            "warnings": list(live.check.warnings),
                        }
                        dbs[f"b{rep}"] = db
                    print(f"rep {rep} {kind}: {secs:.1f} s", flush=True)
                got["loadavg_after"] = c.loadavg()
                runs.append(got)
            counts = {name: mirrored_figures(db) for name, db in dbs.items()}
            wrong = [
                f"{name}.{t}: {rows} rows, PostgreSQL {at_start[t][0]}"
                for name, tables in counts.items()
                for t, (rows, _) in tables.items()
                if rows != at_start[t][0]
            ]
            if wrong:
                raise SystemExit(f"a first load differs from PostgreSQL: {wrong}")
            keyed = {t for t, k in PGBENCH_KEYS.items() if k}
            for name, tables in counts.items():
                if not keyed <= set(tables):
                    raise SystemExit(f"{name} lacks tables: {sorted(keyed - set(tables))}")

            # steady state: the last B database, continuous, on the same checkpoint
            b = f"b{args.reps - 1}"
            db_b = dbs[b]
            live = db_b.mirror_plan(
                cdc_plan,
                kafka=kafka,
                checkpoint=work / f"ckpt-{b}",
                cdc=cdc,
                trigger=args.trigger,
                progress=False,
            )
            reloaded = [t.source for t in live.loaded.tables if t.status != "unchanged"]
            if reloaded:
                raise SystemExit(f"the continuous mirror_plan loaded again: {reloaded}")
            steps: list[dict[str, Any]] = []
            skipped: list[int] = []
            try:
                time.sleep(trigger_s)  # its first (empty) batch
                for rate in rates:
                    if time.time() - started + args.window + 60 > args.budget:
                        skipped.append(rate)
                        continue
                    step = steady(pg, bench, live, rate, args.window, trigger_s)
                    steps.append(step)
                    print(
                        f"rate {rate} tx/s: pgbench {step['pgbench_tps']} tx/s, {step['events_per_second']} "
                        f"events/s, end to end {step['end_to_end_rows_per_second']} rows/s, lag "
                        f"{step['lag_seconds_max_middle_third']} -> {step['lag_seconds_max_last_third']} s (max), "
                        f"drain {step['drain_seconds']} s, {step['batches']} batches (median "
                        f"{step['batch_ms_median']} ms), kept up {step['kept_up']}, load {step['loadavg_after']}",
                        flush=True,
                    )
                    if not step["kept_up"]:
                        break
            finally:
                live.stop()
            if live.stream.error is not None:
                raise SystemExit(f"the continuous stream failed: {live.stream.error}")
        at_end = pg_figures(pg)
        final = mirrored_figures(db_b)
        differ = {
            t: {"mirror": final.get(t), "postgresql": v} for t, v in at_end.items() if final.get(t) != v
        }
        transactions = bench.transactions
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)

    def med(kind: str, key: str) -> float:
        return c.median([r[kind][key] for r in runs])

    base_wall, base_run = med("run_plan", "wall_seconds"), med("run_plan", "plan_run_seconds")
    live_wall, live_loaded = med("mirror_plan", "wall_seconds"), med("mirror_plan", "loaded_seconds")
    paired = [round(r["mirror_plan"]["loaded_seconds"] / r["run_plan"]["plan_run_seconds"], 2) for r in runs]
    kept = [s for s in steps if s["kept_up"]]
    best = max(kept, key=lambda s: s["rate_asked_tps"]) if kept else None
    out = {
        "benchmark": "db.mirror_plan of a pgbench database (PostgreSQL -> Debezium in Kafka Connect -> Kafka -> "
        "the stream): the first load vs db.run_plan of the same tables with no stream; end-to-end rows/s "
        "at a steady pgbench rate",
        "quick": args.quick,
        "pgbench_scale": args.scale,
        "pgbench_init_seconds": round(init_s, 1),
        "rows_at_start": {t: v[0] for t, v in at_start.items()},
        "cdc": {
            "topic_prefix": cdc.topic_prefix,
            "heartbeat_table": MARKER_TABLE,
            "heartbeat_ms": cdc.heartbeat_ms,
        },
        "connector_settings": "db.cdc_connector(plan, cdc=cdc) as it is (topics of 1 partition, Connect's "
        "default here), om.worker_settings(config), offset.flush.interval.ms=1000",
        "warm_up_seconds_not_counted": warm_s,
        "reps": args.reps,
        "first_load": {
            "runs": runs,
            "run_plan_wall_seconds": base_wall,
            "run_plan_seconds": base_run,
            "mirror_plan_wall_seconds": live_wall,
            "mirror_plan_loaded_seconds": live_loaded,
            "ratio_loaded_to_run_plan": round(live_loaded / base_run, 2),
            "ratio_wall_to_run_plan_wall": round(live_wall / base_wall, 2),
            "ratio_loaded_to_run_plan_per_rep": paired,
            "ratio_loaded_to_run_plan_per_rep_median": c.median(paired),
            "mirrored_rows": {name: {t: v[0] for t, v in tables.items()} for name, tables in counts.items()},
            "same_rows_as_postgresql": True,
        },
        "steady": {
            "mode": f"one continuous db.mirror_plan(trigger={args.trigger!r}) on database B's checkpoint, "
            "pgbench -n -c 2 -j 1 -R <rate> for each rate in turn",
            "window_seconds": args.window,
            "rates_tried": rates,
            "kept_up_rule": "the lag's largest value over the window's last third <= that over its "
            "middle third + the trigger, and the drain <= 2 x the longest batch + the trigger + 5 s",
            "rates_skipped_for_the_budget": skipped,
            "budget_seconds": args.budget,
            "steps": steps,
            "rate_used_tps": best["rate_asked_tps"] if best else None,
        },
        "final_check": {
            "pgbench_transactions": transactions,
            "postgresql": at_end,
            "mirror": final,
            "differences": differ,
            "same": not differ,
        },
        "wall_seconds": round(time.time() - started, 1),
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
        "versions": {"kafka_connect": "4.3.1", "debezium": "3.6.1.Final", "postgresql": pg.bin.parent.name},
        "headline": {
            "figure": "first load through db.mirror_plan ÷ db.run_plan (same tables, same run); end-to-end rows/s "
            "at the highest pgbench rate the stream kept up with",
            "value": f"{live_loaded / base_run:.2f}x the first load ({live_wall / base_wall:.2f}x wall); "
            + (
                f"{best['end_to_end_rows_per_second']} rows/s at {best['rate_asked_tps']} tx/s "
                f"(drain {best['drain_seconds']} s)"
                if best
                else "no rate kept up with"
            ),
            "goal": "measured, no target (issue 42, item 6)",
            "met": not differ and best is not None,
        },
    }
    path = c.write_result("live", out)
    print(out["headline"])
    print(f"wrote {path}")
    if differ:
        raise SystemExit(f"the mirror differs from PostgreSQL: {differ}")


if __name__ == "__main__":
    main()
