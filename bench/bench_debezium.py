"""Debezium events through ``db.mirror_kafka`` (issue 41, item 7), against plain JSON messages.

Debezium's PostgreSQL connector with the JsonConverter (``schemas.enable=true``) is generated here
in Python, in exactly the shape the recorded topics of ``tests/data/debezium/schemas.jsonl`` have:
the envelope schema is copied from a recorded message (``source``, ``transaction``, ``op``,
``ts_ms``/``ts_us``/``ts_ns`` as Debezium 3.6 writes them), its ``before``/``after`` rows are the
bench table's columns in their Connect types (``int64`` id, ``string`` customer, ``Decimal`` amount
with scale 2 and precision 18 as base64 bytes, ``int32`` qty, ``double`` price,
``io.debezium.time.MicroTimestamp`` ordered_at, ``boolean`` flag); the key is the Kafka key
(``{"schema": ..., "payload": {"id": N}}``). Every event is a transaction of its own, in commit
order across the tables: ``source.sequence`` is ``["<commit lsn>","<lsn>"]``, rising per event.
Creates (``c``) and updates (``u``) carry ``after`` (an update's ``before`` is null, as with the
default replica identity), deletes (``d``) a ``before`` with only the key set, each followed by a
tombstone (same key, null value): extra messages, not events.

1. **debezium**: 100,000 events over ten tables ``bench.t0`` .. ``bench.t9`` (10,000 each), on
   ten 3-partition topics ``dbz.bench.t<i>``, key id in partition ``id % 3``: per table the
   logical changes of ``bench_kafka.table_rows`` (90% creates, then 8% updates and 2% deletes of
   ids created earlier; 8,800 rows remain), plus 2,000 tombstones (102,000 messages).
   ``db.mirror_kafka(om.Kafka(...), trigger="available_now", max_offsets_per_trigger=M)`` with
   nothing declared, M = messages / ``--batches`` + 30 (``per_trigger``: exactly that many batches).
2. **json** (the baseline, issue 40's messages): the same rows as plain JSON messages with an
   ``op`` column (row markers: 0 insert, 4 upsert, 2 delete) and ``seq``, through
   ``db.mirror_kafka(..., schemas=, keys=, feed=FeedOptions(op_column="op", order_by=["seq"]))``,
   on topics ``json.bench.t<i>``, as many batches (M = events / ``--batches`` + 30).

Each is timed from the call to the query's end: rows/s = events (100,000) ÷ seconds; batch
latency = median and p95 of the batches' ``durationMs["triggerExecution"]``. Both run once on a
smaller copy first (warm-up, not counted), then alternately ``--reps`` times, each into a database
and checkpoint of its own; the figures are medians over the reps, the ratios debezium ÷ json.

3. **one batch**: 1,000 events of one table (``table_rows(1000)``: 900 creates, 80 updates, 20
   deletes and their 20 tombstones, 880 rows remain) on a fresh topic per run, mirrored by
   ``db.mirror_kafka(trigger="available_now")`` in one batch, timed from the call to the query's
   end, against a plain write of the same final rows: ``db.push(df, table=..., keys=["id"])`` of
   a DataFrame of the 880 rows made from Python rows before the timing. Both into a fresh
   database each run; one warm-up of each, then ``--batch-reps`` runs alternately; the ratio of
   the medians, goal at most 3x.

After each run the local mirror replicates the database; every table must hold the planned rows,
the Debezium tables exactly the events' columns, and the Debezium mirror's rows must equal the
JSON mirror's (and the one-batch mirror's the push's) on the shared columns (a hash of every
column), so the bench cannot pass while wrong.

Writes bench/results/spark4/debezium.json.

Usage: .venv/bin/python bench/bench_debezium.py [--rows-per-table 10000] [--batches 10] [--reps 1]
    [--batch-reps 5] [--quick]
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.kafka_broker

import _common as c
from bench_kafka import SCHEMA, expected_rows, figures, mirror, table_rows

import openmirror_nb as om
from tests import spark_packages
from tests.kafka_broker import KafkaBroker, missing

TABLES = 10
PARTITIONS = 3
RECORDED = c.ROOT / "tests" / "data" / "debezium" / "schemas.jsonl"
ONE_TABLE = "bench.one"
ONE_EVENTS = 1000
# The bench table's columns in Kafka Connect's types, as Debezium's PostgreSQL connector names them
# for bigint, text, numeric(18,2), int, double precision, timestamp and boolean.
VALUE_FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "customer"},
    {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "18"},
        "field": "amount",
    },
    {"type": "int32", "optional": True, "field": "qty"},
    {"type": "double", "optional": True, "field": "price"},
    {
        "type": "int64",
        "optional": True,
        "name": "io.debezium.time.MicroTimestamp",
        "version": 1,
        "field": "ordered_at",
    },
    {"type": "boolean", "optional": True, "field": "flag"},
]
COLUMNS = tuple(f["field"] for f in VALUE_FIELDS)
PLAIN_SCHEMA = ", ".join(part for part in SCHEMA.split(", ") if part.split()[0] in COLUMNS)
OPS = {0: "c", 4: "u", 2: "d"}  # bench_kafka's row markers -> Debezium's op
LSN0 = 26_000_000  # the first event's LSN; each event a transaction of its own, 64 bytes of WAL apart
TS0_MS = 1_795_000_000_000
COMPACT = (",", ":")  # the JsonConverter writes no spaces


def recorded_envelope() -> dict[str, Any]:
    """The envelope schema of a recorded streamed update (Debezium 3.6.1's PostgreSQL connector)."""
    for line in RECORDED.read_text().splitlines():
        message = json.loads(line)
        if message["topic"] != "pg.inv.small" or message["value"] is None:
            continue
        value = json.loads(message["value"])
        if value["payload"]["op"] == "u":
            return value["schema"]
    raise SystemExit(f"no recorded update of pg.inv.small in {RECORDED}")


def envelope_text(recorded: dict[str, Any], topic: str) -> str:
    """The recorded envelope schema with the bench table's rows, named for ``topic``."""
    schema = copy.deepcopy(recorded)
    for part in schema["fields"]:
        if part["field"] in ("before", "after"):
            part["fields"] = copy.deepcopy(VALUE_FIELDS)
            part["name"] = f"{topic}.Value"
    schema["name"] = f"{topic}.Envelope"
    return json.dumps(schema, separators=COMPACT)


def key_text(topic: str, id_: int) -> str:
    schema = {"type": "struct", "fields": [VALUE_FIELDS[0]], "optional": False, "name": f"{topic}.Key"}
    return json.dumps({"schema": schema, "payload": {"id": id_}}, separators=COMPACT)


def connect_decimal(value: float, scale: int = 2) -> str:
    """Connect's Decimal: base64 of the unscaled value, big-endian two's complement, as Java's
    ``BigInteger.toByteArray`` writes it (the fewest bytes that hold the sign)."""
    unscaled = int(Decimal(repr(value)).scaleb(scale))
    return base64.b64encode(unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)).decode()


def micros(text: str) -> int:
    """``ordered_at`` (UTC wall clock, as bench_kafka writes it) as MicroTimestamp."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()) * 1_000_000


def image(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "customer": row["customer"],
        "amount": connect_decimal(row["amount"]),
        "qty": row["qty"],
        "price": row["price"],
        "ordered_at": micros(row["ordered_at"]),
        "flag": row["flag"],
    }


def event_value(schema_text: str, prefix: str, table: str, row: dict[str, Any], position: int) -> str:
    """One change of ``row`` (its ``op`` a row marker) as Debezium's JSON value; ``position``: the
    event's place in commit order over every table (its transaction and LSN rise with it)."""
    op = OPS[row["op"]]
    lsn, tx, ts_ms = LSN0 + 64 * position, 1000 + position, TS0_MS + position
    before = None
    if op == "d":  # default replica identity: the key only
        before = dict.fromkeys(COLUMNS)
        before["id"] = row["id"]
    schema_name, table_name = table.split(".")
    payload = {
        "before": before,
        "after": None if op == "d" else image(row),
        "source": {
            "version": "3.6.1.Final",
            "connector": "postgresql",
            "name": prefix,
            "ts_ms": ts_ms,
            "snapshot": "false",
            "db": "erp",
            "sequence": json.dumps([str(lsn), str(lsn)], separators=COMPACT),
            "ts_us": ts_ms * 1000,
            "ts_ns": ts_ms * 1_000_000,
            "schema": schema_name,
            "table": table_name,
            "txId": tx,
            "lsn": lsn,
            "xmin": None,
            "origin": None,
            "origin_lsn": None,
        },
        "transaction": {"id": f"{tx}:{lsn}", "total_order": 1, "data_collection_order": 1},
        "op": op,
        "ts_ms": ts_ms + 300,
        "ts_us": (ts_ms + 300) * 1000,
        "ts_ns": (ts_ms + 300) * 1_000_000,
    }
    return '{"schema":' + schema_text + ',"payload":' + json.dumps(payload, separators=COMPACT) + "}"


def debezium_messages(
    recorded: dict[str, Any], prefix: str, table: str, rows: list[dict[str, Any]], positions: range
) -> list[tuple[str, str | None, int]]:
    """A table's change rows as Debezium's messages (key, value, partition): a tombstone after
    each delete."""
    topic = f"{prefix}.{table}"
    schema_text = envelope_text(recorded, topic)
    out: list[tuple[str, str | None, int]] = []
    for row, position in zip(rows, positions, strict=True):
        key, partition = key_text(topic, row["id"]), row["id"] % PARTITIONS
        out.append((key, event_value(schema_text, prefix, table, row, position), partition))
        if row["op"] == 2:
            out.append((key, None, partition))
    return out


def produce_debezium(
    broker: KafkaBroker, recorded: dict[str, Any], prefix: str, per_table: list[list[dict[str, Any]]]
) -> tuple[list[str], int]:
    """The tables' topics (interleaved in commit order: event i of table t is the
    ``i * TABLES + t``-th transaction) and how many messages they hold."""
    topics, messages = [], 0
    for t, rows in enumerate(per_table):
        topic = f"{prefix}.bench.t{t}"
        broker.create_topic(topic, partitions=PARTITIONS)
        batch = debezium_messages(recorded, prefix, f"bench.t{t}", rows, range(t, len(rows) * TABLES, TABLES))
        broker.produce(topic, batch)
        topics.append(topic)
        messages += len(batch)
    return topics, messages


def produce_json(broker: KafkaBroker, prefix: str, per_table: list[list[dict[str, Any]]]) -> list[str]:
    """bench_kafka's messages: each row as plain JSON with ``op`` and ``seq``, keyed by id."""
    topics = []
    for t, rows in enumerate(per_table):
        topic = f"{prefix}.bench.t{t}"
        broker.create_topic(topic, partitions=PARTITIONS)
        broker.produce(topic, [(str(r["id"]), json.dumps(r), r["id"] % PARTITIONS) for r in rows])
        topics.append(topic)
    return topics


def per_trigger(messages: int, batches: int) -> int:
    """``max_offsets_per_trigger`` for a run of ``batches`` batches. Spark's rate limit floors each
    partition's share of it, so messages ÷ batches leaves a last batch of a few messages a
    partition; here those are the topics' last messages, tombstones, and a batch in which a
    Debezium topic holds only tombstones stops ``db.mirror_kafka`` ("Debezium events without
    schemas"; a bug, reported with issue 41's bench). One message a partition more a batch ends
    the run in ``batches`` batches, the last one taking the rest; the JSON runs take the same."""
    return -(-messages // batches) + TABLES * PARTITIONS


def run_debezium(broker: KafkaBroker, topics: list[str], work: Path, name: str, m: int | None) -> tuple:
    return mirror(broker, topics, work, name, m)  # nothing declared: the events carry it all


def run_json(broker: KafkaBroker, topics: list[str], work: Path, name: str, m: int | None) -> tuple:
    keys = {f"bench.t{t}": ["id"] for t in range(TABLES)}
    feed = om.FeedOptions(op_column="op", order_by=["seq"])
    return mirror(broker, topics, work, name, m, schemas=dict.fromkeys(keys, SCHEMA), keys=keys, feed=feed)


def table_hash(db: Any, table: str, planned: int) -> dict[str, Any]:
    """``table``'s columns and a hash of each (sum of xxhash64 over the rows); its rows must be
    ``planned``. Replicate with the local mirror first."""
    from pyspark.sql import functions as F

    df = db.read_table(table)
    cols = [x for x in (*COLUMNS, "seq") if x in df.columns]
    sums = [F.sum(F.xxhash64(x).cast("decimal(38,0)")).alias(x) for x in cols]
    row = df.agg(F.count(F.lit(1)).alias("__n"), *sums).first()
    if row["__n"] != planned:
        raise SystemExit(f"{db.target.root}: {table} holds {row['__n']} rows, planned {planned}")
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    return {"columns": sorted(df.columns), "types": types, **{x: str(row[x]) for x in cols}}


def replicated(db: Any, tables: list[str], planned: int) -> dict[str, Any]:
    om.LocalMirror(db.target.root).run_once()
    return {t: table_hash(db, t, planned) for t in tables}


def differences(first: tuple[str, dict[str, Any]], others: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Per other run, table and column both runs' tables have: where the hash or the type differs
    from ``first``'s."""
    _, base = first
    out = []
    for name, hashes in others:
        for table, cols in hashes.items():
            for col in sorted(set(cols["types"]) & set(base[table]["types"])):
                if cols[col] != base[table][col] or cols["types"][col] != base[table]["types"][col]:
                    out.append(f"{name} {table}.{col}")
    return out


def final_rows(rows: list[dict[str, Any]]) -> list[tuple]:
    """The rows a table holds after ``rows`` (row markers), as Python values of its columns."""
    live: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r["op"] == 2:
            live.pop(r["id"], None)
        else:
            live[r["id"]] = r
    return [
        (
            r["id"],
            r["customer"],
            Decimal(repr(r["amount"])).quantize(Decimal("0.01")),
            r["qty"],
            r["price"],
            datetime.fromisoformat(r["ordered_at"]).replace(tzinfo=UTC),
            r["flag"],
        )
        for r in live.values()
    ]


def one_batch(
    spark: Any, broker: KafkaBroker, recorded: dict[str, Any], work: Path, reps: int
) -> tuple[dict[str, Any], list[str]]:
    """The second figure: a 1,000-event batch of one table against ``db.push`` of its final rows."""
    rows = table_rows(ONE_EVENTS)
    planned = expected_rows(ONE_EVENTS)
    df = spark.createDataFrame(final_rows(rows), PLAIN_SCHEMA)
    if len(final_rows(rows)) != planned:
        raise SystemExit(f"the 1,000 events leave {len(final_rows(rows))} rows, planned {planned}")
    topics = []
    for run in range(reps + 1):  # a fresh topic for each run, the warm-up's included
        prefix = f"one{run}"
        broker.create_topic(f"{prefix}.{ONE_TABLE}", partitions=PARTITIONS)
        broker.produce(
            f"{prefix}.{ONE_TABLE}", debezium_messages(recorded, prefix, ONE_TABLE, rows, range(len(rows)))
        )
        topics.append(f"{prefix}.{ONE_TABLE}")
    messages = ONE_EVENTS + sum(1 for r in rows if r["op"] == 2)

    def kafka(run: int) -> tuple[float, Any]:
        db, secs, batches = mirror(broker, [topics[run]], work, f"one-kafka-{run}", None)
        if len(batches) != 1 or batches[0]["rows"] != messages:
            raise SystemExit(f"one-kafka-{run}: batches {batches}, expected one of {messages} messages")
        return secs, db

    def push(run: int) -> tuple[float, Any]:
        db = om.connect(work / f"db-one-push-{run}")
        start = time.perf_counter()
        db.push(df, table=ONE_TABLE, keys=["id"])
        return time.perf_counter() - start, db

    kafka(0)  # warm-up (not counted)
    push(0)
    times: dict[str, list[float]] = {"mirror_kafka": [], "push": []}
    hashes = []
    for rep in range(1, reps + 1):
        order = ["mirror_kafka", "push"] if rep % 2 else ["push", "mirror_kafka"]
        for kind in order:
            secs, db = kafka(rep) if kind == "mirror_kafka" else push(rep)
            times[kind].append(round(secs, 3))
            print(f"one batch rep {rep}: {secs:6.2f} s  {kind}", flush=True)
            hashes.append((f"one-{kind}-{rep}", replicated(db, [ONE_TABLE], planned)))
    k, p = c.median(times["mirror_kafka"]), c.median(times["push"])
    out = {
        "table": ONE_TABLE,
        "events": ONE_EVENTS,
        "tombstones": messages - ONE_EVENTS,
        "messages": messages,
        "rows_after": planned,
        "changes": "900 creates, 80 updates, 20 deletes (+20 tombstones), one topic of 3 partitions, one batch",
        "plain_write": f"db.push(df, table={ONE_TABLE!r}, keys=['id']) of the {planned} final rows "
        "(spark.createDataFrame of Python rows, made before the timing), into a fresh database",
        "reps": reps,
        "seconds": times,
        "mirror_kafka_seconds_median": k,
        "push_seconds_median": p,
        "ratio_mirror_kafka_to_push": round(k / p, 2),
        "goal": "<= 3x",
        "met": k / p <= 3,
    }
    return out, differences(hashes[0], hashes[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows-per-table", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=10, help="about this many micro-batches a run")
    parser.add_argument("--reps", type=int, default=1, help="timed runs of each (alternating)")
    parser.add_argument("--batch-reps", type=int, default=5, help="timed runs of the one-batch figure")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.rows_per_table, args.batches, args.reps, args.batch_reps = 1000, 4, 1, 2
    why = missing()
    if why:
        raise SystemExit(f"no Kafka broker here: {why}")
    os.environ.setdefault("OPENMIRROR_SPARK_JARS", str(spark_packages.jars("kafka")))
    from openmirror_nb._core.runtime import get_spark

    load_before = c.loadavg()
    started = time.time()
    events = TABLES * args.rows_per_table
    warm_rows = max(100, args.rows_per_table // 10)
    tables = [f"bench.t{t}" for t in range(TABLES)]
    spark = get_spark()
    recorded = recorded_envelope()
    work = Path(tempfile.mkdtemp(prefix="bench-debezium-"))
    runs: dict[str, list[dict[str, Any]]] = {"debezium": [], "json": []}
    try:
        with KafkaBroker() as broker:
            warm = [table_rows(warm_rows) for _ in range(TABLES)]
            data = [table_rows(args.rows_per_table) for _ in range(TABLES)]
            warm_dbz, warm_messages = produce_debezium(broker, recorded, "warmdbz", warm)
            warm_json = produce_json(broker, "warmjson", warm)
            dbz_s, (dbz_topics, messages) = c.timed(lambda: produce_debezium(broker, recorded, "dbz", data))
            json_s, json_topics = c.timed(lambda: produce_json(broker, "json", data))
            tombstones = messages - events
            sent = {"debezium": messages, "json": events}
            m = {kind: per_trigger(n, args.batches) for kind, n in sent.items()}
            print(
                f"produced {messages:,} Debezium messages ({events:,} events, {tombstones:,} tombstones) "
                f"in {dbz_s:.1f} s; {events:,} JSON messages in {json_s:.1f} s",
                flush=True,
            )
            # warm-up (not counted): JIT, the Kafka consumer, first-job costs
            run_debezium(broker, warm_dbz, work, "warm-debezium", per_trigger(warm_messages, 2))
            run_json(broker, warm_json, work, "warm-json", per_trigger(warm_rows * TABLES, 2))
            hashes = []
            for rep in range(args.reps):
                order = ["debezium", "json"] if rep % 2 == 0 else ["json", "debezium"]
                for kind in order:
                    name = f"{kind}-{rep}"
                    if kind == "debezium":
                        db, secs, batches = run_debezium(broker, dbz_topics, work, name, m[kind])
                    else:
                        db, secs, batches = run_json(broker, json_topics, work, name, m[kind])
                    got = figures(secs, events, batches)
                    if sum(got["batch_rows"]) != sent[kind]:
                        raise SystemExit(
                            f"{name}: batches took {sum(got['batch_rows'])} messages, sent {sent[kind]}"
                        )
                    runs[kind].append(got)
                    print(
                        f"{name}: {secs:.1f} s, {got['rows_per_second']:,} events/s, {got['batches']} batches, "
                        f"median {got['batch_ms_median']} ms, p95 {got['batch_ms_p95']} ms",
                        flush=True,
                    )
                    found = replicated(db, tables, expected_rows(args.rows_per_table))
                    if kind == "debezium":
                        wrong = [t for t, h in found.items() if tuple(h["columns"]) != tuple(sorted(COLUMNS))]
                        if wrong:
                            raise SystemExit(f"{name}: {wrong[0]} has columns {found[wrong[0]]['columns']}")
                    hashes.append((name, found))
            # compared on the columns both have: the JSON tables keep seq, the Debezium ones have none
            differ = differences(hashes[0], hashes[1:])
            one, one_differ = one_batch(spark, broker, recorded, work, args.batch_reps)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med(kind: str, key: str) -> float:
        return c.median([r[key] for r in runs[kind]])

    d_rps, j_rps = med("debezium", "rows_per_second"), med("json", "rows_per_second")
    d_lat, j_lat = med("debezium", "batch_ms_median"), med("json", "batch_ms_median")
    d_p95, j_p95 = med("debezium", "batch_ms_p95"), med("json", "batch_ms_p95")
    same = not differ and not one_differ
    out = {
        "benchmark": "db.mirror_kafka of Debezium events (10 topics x 3 partitions) vs the same rows as plain "
        "JSON messages; a 1,000-event batch of one table vs db.push of its rows",
        "quick": args.quick,
        "events": events,
        "tombstones": tombstones,
        "debezium_messages": messages,
        "json_messages": events,
        "tables": TABLES,
        "partitions_per_topic": PARTITIONS,
        "rows_per_table": args.rows_per_table,
        "rows_per_table_after": expected_rows(args.rows_per_table),
        "changes": "per table 90% creates (c), 8% updates (u), 2% deletes (d) + a tombstone each; JSON: "
        "the same rows with op 0/4/2 and seq, FeedOptions(op_column='op', order_by=['seq'])",
        "event_shape": "JsonConverter schemas.enable=true; envelope schema copied from a recorded Debezium "
        "3.6.1 PostgreSQL event; one transaction per event, source.sequence rising in commit order",
        "debezium_value_bytes_per_create": round(
            sum(
                len(v)
                for _, v, _ in debezium_messages(recorded, "dbz", "bench.t0", data[0][:100], range(100))
                if v
            )
            / 100
        ),
        "json_value_bytes_per_create": round(sum(len(json.dumps(r)) for r in data[0][:100]) / 100),
        "max_offsets_per_trigger": m,
        "produce_seconds_not_counted": {"debezium": round(dbz_s, 1), "json": round(json_s, 1)},
        "reps": args.reps,
        "rows_per_second_counts": "events (tombstones are messages, not rows)",
        "debezium": {
            "rows_per_second": d_rps,
            "batch_ms_median": d_lat,
            "batch_ms_p95": d_p95,
            "runs": runs["debezium"],
        },
        "json": {
            "rows_per_second": j_rps,
            "batch_ms_median": j_lat,
            "batch_ms_p95": j_p95,
            "runs": runs["json"],
        },
        "ratio_debezium_to_json": {
            "rows_per_second": round(d_rps / j_rps, 2),
            "batch_ms_median": round(d_lat / j_lat, 2),
            "batch_ms_p95": round(d_p95 / j_p95, 2),
        },
        "one_batch": one,
        "checked": "every table of every run holds the planned rows; the Debezium tables have exactly the events' "
        "columns; the Debezium mirror's rows equal the JSON mirror's, the one-batch mirror's the push's",
        "same_rows": same,
        "compared_columns": "those both tables have, of " + ", ".join((*COLUMNS, "seq")),
        "differences": (differ + one_differ)[:40],
        "table_columns": {name: h[next(iter(h))]["columns"] for name, h in hashes},
        "wall_seconds": round(time.time() - started, 1),
        "loadavg_before": load_before,
        "loadavg_after": c.loadavg(),
        **c.machine(spark),
        "headline": {
            "figure": "a 1,000-event Debezium batch of one table ÷ db.push of its rows; "
            "Debezium ÷ plain JSON messages, rows/s and median batch latency (same run)",
            "value": f"{one['ratio_mirror_kafka_to_push']:.2f}x a push; "
            f"{d_rps / j_rps:.2f}x rows/s, {d_lat / j_lat:.2f}x batch latency",
            "goal": "one batch <= 3x a plain push; met also needs every mirror to hold the same rows",
            "met": bool(one["met"]) and same,
        },
    }
    path = c.write_result("debezium", out)
    print(out["headline"])
    print(f"wrote {path}")
    if not same:
        raise SystemExit(f"the mirrors' tables differ: {(differ + one_differ)[:10]}")


if __name__ == "__main__":
    main()
