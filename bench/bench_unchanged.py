"""A rerun with nothing changed (issue 39, item 3): ``db.run_plan`` of a PostgreSQL database a second
time, as a ratio to its first load, now that a table whose source says it has not changed is not
read (``Source.version``: PostgreSQL's statistics of the table).

A throwaway PostgreSQL (``tests/sources/postgres.py``) is loaded with two databases: pgbench's
(``pgbench -i -s 5``: 500,000 accounts, 50 tellers, 5 branches; ``pgbench_history`` starts empty
and has no key, so the plan skips it) and a TPC-H-shaped one at scale 0.1 made in SQL with
``generate_series`` (the spec's eight tables and primary keys, ``numeric(15,2)`` money, dates,
``char(n)``: lineitem 600,000 rows, orders 150,000, partsupp 80,000, part 20,000, customer 15,000,
supplier 1,000, nation 25, region 5), then ``VACUUM ANALYZE``'d. Each is planned once
(``om.Jdbc``, keys from the primary keys). Per repetition, into a fresh local database: the first
``run_plan(parallel=4)`` (the initial load), the rerun with nothing changed (its time, the Spark
jobs it started, every table's status), and a rerun with ``reread=True`` (every table read and
diffed, as every rerun did before). After the repetitions, ``pgbench -n -t 100`` changes three
tables of pgbench's database and an update of one order one table of TPC-H's; the run after each
change is timed, with the tables it read. One warm-up, then --repeat runs; medians. Writes
bench/results/spark4/unchanged.json (bench/results/ on the Runtime 1.3 line).

Usage: .venv/bin/python bench/bench_unchanged.py [--repeat 2] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.sources.postgres

import _common as c

import openmirror_nb as om
from openmirror_nb._core.runtime import get_spark
from tests.sources.postgres import DATABASE, PASSWORD, SUPERUSER, PostgresServer, missing, start_server

RATIO_GOAL = 0.1
TPCH = "tpch"


def tpch_sql(sf: float) -> str:
    """The eight TPC-H tables with the spec's keys and types, ``sf`` times 6M lineitems."""
    parts, suppliers, customers, orders = (
        int(200_000 * sf),
        int(10_000 * sf),
        int(150_000 * sf),
        int(1_500_000 * sf),
    )
    return f"""
    CREATE TABLE region (r_regionkey integer PRIMARY KEY, r_name char(25) NOT NULL, r_comment varchar(152));
    INSERT INTO region SELECT i, (ARRAY['AFRICA','AMERICA','ASIA','EUROPE','MIDDLE EAST'])[i + 1], md5(i::text)
      FROM generate_series(0, 4) i;
    CREATE TABLE nation (n_nationkey integer PRIMARY KEY, n_name char(25) NOT NULL, n_regionkey integer NOT NULL,
      n_comment varchar(152));
    INSERT INTO nation SELECT i, 'NATION ' || i, i % 5, md5(i::text) FROM generate_series(0, 24) i;
    CREATE TABLE part (p_partkey integer PRIMARY KEY, p_name varchar(55) NOT NULL, p_mfgr char(25) NOT NULL,
      p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL, p_size integer NOT NULL,
      p_container char(10) NOT NULL, p_retailprice numeric(15,2) NOT NULL, p_comment varchar(23) NOT NULL);
    INSERT INTO part SELECT i, 'part ' || md5(i::text), 'Manufacturer#' || (1 + i % 5),
      'Brand#' || (1 + i % 5) || (1 + i / 5 % 5), 'STANDARD ANODIZED TIN', 1 + i % 50, 'SM BOX',
      (90000 + i / 10 % 20001 + 100 * (i % 1000)) / 100.0, left(md5('p' || i), 20)
      FROM generate_series(1, {parts}) i;
    CREATE TABLE supplier (s_suppkey integer PRIMARY KEY, s_name char(25) NOT NULL, s_address varchar(40) NOT NULL,
      s_nationkey integer NOT NULL, s_phone char(15) NOT NULL, s_acctbal numeric(15,2) NOT NULL,
      s_comment varchar(101) NOT NULL);
    INSERT INTO supplier SELECT i, 'Supplier#' || lpad(i::text, 9, '0'), md5('a' || i), i % 25,
      (10 + i % 25) || '-' || lpad((i % 1000)::text, 3, '0') || '-555-0100', (i * 7919 % 1099998 - 99999) / 100.0,
      md5('s' || i) FROM generate_series(1, {suppliers}) i;
    CREATE TABLE partsupp (ps_partkey integer NOT NULL, ps_suppkey integer NOT NULL, ps_availqty integer NOT NULL,
      ps_supplycost numeric(15,2) NOT NULL, ps_comment varchar(199) NOT NULL, PRIMARY KEY (ps_partkey, ps_suppkey));
    INSERT INTO partsupp SELECT p, 1 + (p + j * ({suppliers} / 4)) % {suppliers}, 1 + p * (j + 1) % 9999,
      (100 + (p * 7 + j) % 99901) / 100.0, md5(p || '-' || j)
      FROM generate_series(1, {parts}) p, generate_series(0, 3) j;
    CREATE TABLE customer (c_custkey integer PRIMARY KEY, c_name varchar(25) NOT NULL, c_address varchar(40) NOT NULL,
      c_nationkey integer NOT NULL, c_phone char(15) NOT NULL, c_acctbal numeric(15,2) NOT NULL,
      c_mktsegment char(10) NOT NULL, c_comment varchar(117) NOT NULL);
    INSERT INTO customer SELECT i, 'Customer#' || lpad(i::text, 9, '0'), md5('c' || i), i % 25,
      (10 + i % 25) || '-' || lpad((i % 1000)::text, 3, '0') || '-555-0100', (i * 7919 % 1099998 - 99999) / 100.0,
      (ARRAY['AUTOMOBILE','BUILDING','FURNITURE','MACHINERY','HOUSEHOLD'])[1 + i % 5], md5('k' || i)
      FROM generate_series(1, {customers}) i;
    CREATE TABLE orders (o_orderkey integer PRIMARY KEY, o_custkey integer NOT NULL, o_orderstatus char(1) NOT NULL,
      o_totalprice numeric(15,2) NOT NULL, o_orderdate date NOT NULL, o_orderpriority char(15) NOT NULL,
      o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL, o_comment varchar(79) NOT NULL);
    INSERT INTO orders SELECT o, 1 + o * 31 % {customers}, (ARRAY['F','O','P'])[1 + o % 3],
      (o * 7919 % 50000000) / 100.0, date '1992-01-01' + o * 37 % 2406,
      (ARRAY['1-URGENT','2-HIGH','3-MEDIUM','4-NOT SPECIFIED','5-LOW'])[1 + o % 5],
      'Clerk#' || lpad((1 + o % 1000)::text, 9, '0'), 0, md5('o' || o)
      FROM generate_series(1, {orders}) o;
    CREATE TABLE lineitem (l_orderkey integer NOT NULL, l_partkey integer NOT NULL, l_suppkey integer NOT NULL,
      l_linenumber integer NOT NULL, l_quantity numeric(15,2) NOT NULL, l_extendedprice numeric(15,2) NOT NULL,
      l_discount numeric(15,2) NOT NULL, l_tax numeric(15,2) NOT NULL, l_returnflag char(1) NOT NULL,
      l_linestatus char(1) NOT NULL, l_shipdate date NOT NULL, l_commitdate date NOT NULL,
      l_receiptdate date NOT NULL, l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL,
      l_comment varchar(44) NOT NULL, PRIMARY KEY (l_orderkey, l_linenumber));
    INSERT INTO lineitem SELECT o, 1 + o * l * 13 % {parts}, 1 + (o + l) % {suppliers}, l, 1 + o * l % 50,
      (o::bigint * l * 7919 % 10000000) / 100.0, (o + l) % 11 / 100.0, (o * l) % 9 / 100.0,
      (ARRAY['A','N','R'])[1 + (o + l) % 3], (ARRAY['F','O'])[1 + o % 2],
      date '1992-01-02' + o * 37 % 2406 + l, date '1992-01-31' + o * 37 % 2406,
      date '1992-01-03' + o * 37 % 2406 + 2 * l,
      (ARRAY['DELIVER IN PERSON','COLLECT COD','NONE','TAKE BACK RETURN'])[1 + l % 4],
      (ARRAY['REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'])[1 + (o + l) % 7], left(md5(o || '.' || l), 30)
      FROM generate_series(1, {orders}) o, generate_series(1, 7) l WHERE l <= 1 + o % 7;
    """


def load(server: PostgresServer, scale: int, sf: float) -> dict[str, float]:
    """pgbench's tables in ``erp``, TPC-H's in ``tpch``, both analyzed; seconds each took."""
    took = {}
    took["pgbench"], _ = c.timed(lambda: pgbench(server, "-i", "-q", "-s", str(scale)))
    server.sql(f"CREATE DATABASE {TPCH};", database="postgres")
    took["tpch"], _ = c.timed(lambda: server.sql(tpch_sql(sf), database=TPCH))
    for database in (DATABASE, TPCH):  # settled counts: no autovacuum between the runs
        server.sql("VACUUM ANALYZE; SELECT pg_stat_force_next_flush();", database=database)
    return took


def pgbench(server: PostgresServer, *args: str) -> None:
    """``pgbench`` on ``erp`` through the server's socket (as the server's user under root)."""
    where = ("-h", str(server.root), "-p", str(server.port), "-U", SUPERUSER)
    server._run(str(server.bin / "pgbench"), *args, *where, DATABASE)


def source(server: PostgresServer, database: str) -> om.Jdbc:
    url = server.url.replace(f"/{DATABASE}", f"/{database}")
    return om.Jdbc(url, user=SUPERUSER, password=PASSWORD, schema="public")


def jobs(spark: Any) -> int:
    """How many Spark jobs the session ever started (the next job's id)."""
    return int(spark.sparkContext._jsc.sc().dagScheduler().nextJobId())


def one_rep(spark: Any, work: Path, rep: int, plans: dict[str, om.SourcePlan]) -> dict[str, Any]:
    db = om.connect(work / f"db{rep}")
    out: dict[str, Any] = {}
    for name, plan in plans.items():
        first_s, first = c.timed(lambda plan=plan: db.run_plan(plan, parallel=4, progress=False))
        if not first.ok or first.counts["ok"] + first.counts["skipped"] != len(plan.tables):
            raise SystemExit(f"{name}: the first run did not load every table: {first.summary()}")
        before = jobs(spark)
        rerun_s, rerun = c.timed(lambda plan=plan: db.run_plan(plan, parallel=4, progress=False))
        spark_jobs = jobs(spark) - before
        if len(rerun.unread) != first.counts["ok"]:
            raise SystemExit(f"{name}: the rerun read tables: {rerun!r}")
        reread_s, reread = c.timed(
            lambda plan=plan: db.run_plan(plan, parallel=4, progress=False, reread=True)
        )
        if not reread.ok or reread.counts["ok"]:
            raise SystemExit(f"{name}: the reread published something: {reread.summary()}")
        out[name] = {
            "first": first_s,
            "rerun": rerun_s,
            "reread": reread_s,
            "rerun_spark_jobs": spark_jobs,
            "rerun_summary": rerun.summary(),
        }
    out["db"] = db
    return out


def after_change(
    server: PostgresServer, db: Any, plan: om.SourcePlan, database: str, table: str
) -> dict[str, Any]:
    """A change of ``database`` (pgbench's: ``pgbench -n -t 100``, one client: 100 updates of accounts,
    tellers and branches and 100 history rows; TPC-H's: one order's comment updated), its counts
    waited for, then a run: its time and what it read."""
    count = f"SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = '{table}';"
    held = int(server.sql(count, database=database))
    if database == DATABASE:
        pgbench(server, "-n", "-t", "100")
    else:
        server.sql("UPDATE orders SET o_comment = 'changed' WHERE o_orderkey = 1;", database=database)
    end = time.monotonic() + 120
    while int(server.sql(count, database=database)) <= held:  # a backend reports as it exits
        if time.monotonic() > end:
            raise SystemExit(f"the change of {table} did not reach pg_stat_user_tables within 120 s")
        time.sleep(0.2)
    seconds, run = c.timed(lambda: db.run_plan(plan, parallel=4, progress=False))
    return {
        "seconds": round(seconds, 3),
        "summary": run.summary(),
        "tables": {
            t.source: {"status": t.status, "read": t.result is not None, "rows": t.rows} for t in run.tables
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--quick", action="store_true", help="pgbench scale 1, TPC-H scale 0.01, 1 repetition"
    )
    args = parser.parse_args()
    scale, sf = (1, 0.01) if args.quick else (5, 0.1)
    if args.quick:
        args.repeat = 1
    why = missing()
    if why:
        raise SystemExit(why)
    load_before = c.loadavg()
    spark = get_spark()
    server = start_server()
    work = Path(tempfile.mkdtemp(prefix="bench-unchanged-"))
    try:
        loaded = load(server, scale, sf)
        planning = om.connect(work / "planning")
        plans = {
            "pgbench": planning.plan_sources(
                source(server, DATABASE), target_schema="pgbench", suggest=False
            ),
            "tpch": planning.plan_sources(source(server, TPCH), target_schema="tpch", suggest=False),
        }
        one_rep(spark, work, 0, plans)  # warm-up: JIT, class loading, every flow once
        reps = [one_rep(spark, work, i + 1, plans) for i in range(args.repeat)]
        changed = {
            "pgbench_t100": after_change(
                server, reps[-1]["db"], plans["pgbench"], DATABASE, "pgbench_branches"
            ),
            "tpch_one_order": after_change(server, reps[-1]["db"], plans["tpch"], TPCH, "orders"),
        }
        rows = {
            n: p.to_pandas()[["source", "rows"]].set_index("source")["rows"].to_dict()
            for n, p in plans.items()
        }
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    out = summarize(args, scale, sf, loaded, rows, reps, changed, load_before, spark)
    path = c.write_result("unchanged", out)
    for name in ("pgbench", "tpch"):
        m = out[name]["median_seconds"]
        print(
            f"{name}: first load {m['first']:.1f} s, rerun {m['rerun']:.2f} s ({out[name]['ratio']}x), "
            f"reread {m['reread']:.1f} s"
        )
    for name, after in changed.items():
        print(f"after the change ({name}): {after['seconds']:.1f} s, {after['summary']}")
    print(f"wrote {path}")


def summarize(
    args: Any, scale: int, sf: float, loaded: dict[str, float], rows: dict[str, Any],
    reps: list[dict[str, Any]], changed: dict[str, Any], load_before: Any, spark: Any,
) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {
        "benchmark": "run_plan rerun with nothing changed ÷ the first load, PostgreSQL via om.Jdbc",
        "pgbench_scale": scale,
        "tpch_scale_factor": sf,
        "repeat": args.repeat,
        "quick": args.quick,
        "load_seconds": {k: round(v, 1) for k, v in loaded.items()},
        "planned_rows": rows,
    }
    for name in ("pgbench", "tpch"):
        runs = [r[name] for r in reps]
        m = {k: round(c.median([r[k] for r in runs]), 3) for k in ("first", "rerun", "reread")}
        out[name] = {
            "seconds": {k: [round(r[k], 3) for r in runs] for k in m},
            "median_seconds": m,
            "ratio": round(m["rerun"] / m["first"], 4),
            "reread_ratio": round(m["reread"] / m["first"], 3),
            "rerun_spark_jobs": [r["rerun_spark_jobs"] for r in runs],
            "rerun_summary": runs[-1]["rerun_summary"],
        }
    out["after_a_change"] = changed
    worst = max(out["pgbench"]["ratio"], out["tpch"]["ratio"])
    out["headline"] = {
        "figure": "no-change rerun ÷ first load (the worse of pgbench and TPC-H)",
        "value": worst,
        "goal": f"<= {RATIO_GOAL}",
        "met": worst <= RATIO_GOAL,
    }
    out["machine"] = c.machine(spark)
    out["load_before"] = load_before
    out["load_after"] = c.loadavg()
    return out


if __name__ == "__main__":
    main()
