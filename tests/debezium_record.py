"""Record what Debezium's PostgreSQL connector really puts on Kafka, for tests that replay the topics
without starting Kafka Connect: ``python -m tests.debezium_record`` starts a PostgreSQL with
``wal_level=logical``, a Kafka broker and a Connect worker (``tests/kafka_connect.py``) for each
variant, runs ``SNAPSHOT_SQL`` before the connector starts and ``STEPS`` while it streams, and writes
every message of every topic the connector wrote to ``tests/data/debezium/<variant>.jsonl`` (one
JSON object a line, ordered by topic, partition, offset), and the README beside them.

``python -m tests.debezium_record schemas`` records only the variants named.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.kafka_broker import KafkaBroker
from tests.kafka_connect import KafkaConnect, jars, missing
from tests.sources import postgres

OUT = Path(__file__).parent / "data" / "debezium"
PREFIX = "pg"
HEARTBEATS = f"__debezium-heartbeat.{PREFIX}"
# Every variant: a heartbeat each second and the transaction topic.
COMMON = {"heartbeat.interval.ms": 1000, "provide.transaction.metadata": "true"}
VARIANTS: dict[str, tuple[bool, dict[str, object]]] = {
    "schemas": (True, COMMON),
    "plain": (False, COMMON),
    "schemas_connect_string": (
        True,
        {**COMMON, "decimal.handling.mode": "string", "time.precision.mode": "connect"},
    ),
}

# ~10.5 kB of md5 hex: stored out of line (TOAST), so an UPDATE that leaves it alone sends no value.
BIG = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 330) AS i)"

SNAPSHOT_SQL = """
CREATE SCHEMA inv;
CREATE TYPE inv.mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE inv.every_type (
  id int PRIMARY KEY, i2 smallint, i8 bigint, r real, f double precision, bo boolean, t text,
  vc varchar(20), c char(5), n102 numeric(10,2), n numeric, d date, tm time, tm3 time(3),
  tmtz timetz, ts timestamp, ts3 timestamp(3), tstz timestamptz, u uuid, j json, jb jsonb,
  e inv.mood, ai int[], at text[], b bytea, iv interval, m money
);
CREATE TABLE inv.small (id int PRIMARY KEY, v text);
CREATE TABLE inv.toasty (id int PRIMARY KEY, big text, n int);
CREATE TABLE inv.toasty_full (id int PRIMARY KEY, big text, n int);
ALTER TABLE inv.toasty_full REPLICA IDENTITY FULL;
CREATE TABLE inv.nokey (a int, b text);
ALTER TABLE inv.nokey REPLICA IDENTITY FULL;
INSERT INTO inv.every_type VALUES
 (1, 12, 1234567890123, 1.5, 3.141592653589793, true, 'héllo "wörld"' || chr(10) || 'line 2',
  'varchar', 'ab', 12345678.91, 42.5, '2024-02-29', '12:34:56.789012', '12:34:56.789',
  '12:34:56.789012+05:30', '2024-02-29 12:34:56.789012', '2024-02-29 12:34:56.789',
  '2024-02-29 12:34:56.789012+01', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2], "b": null}',
  '{"z": 1, "a": {"x": "y"}}', 'happy', '{1,2,3}', '{"a","b c",NULL}', '\\xdeadbeef00',
  '1 year 2 mons 3 days 04:05:06.789', 1234.56),
 (2, -32768, -9223372036854775808, -1.25e-7, -1.7976931348623157e308, false, '', 'x', 'abcde',
  -99999999.99, 123456789012345678901234.12, '1969-12-31', '24:00:00', '00:00:00.001',
  '23:59:59.999999-14:59', '9999-12-31 23:59:59.999999', '1900-01-01 00:00:00.001',
  '1969-12-31 23:59:59.999999+00', '00000000-0000-0000-0000-000000000000', '[]', '{}', 'sad',
  '{}', '{}', '\\x', '-100 years -3 days -00:00:00.000001', -92233720368547758.08),
 (3, NULL, NULL, 'Infinity', 'NaN', NULL, NULL, NULL, NULL, NULL, 'NaN', '0001-01-01', NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, 'null', 'null', NULL, '{NULL,7}', NULL, NULL, NULL, NULL),
 (4, 0, 0, 0, -0.0, true, 'tiny', 'y', 'z', 0.01, 0.000000000000000000001, '9999-12-31', '00:00:00',
  '23:59:59.999', '00:00:00+00', '1970-01-01 00:00:00', '1970-01-01 00:00:00', '1970-01-01 00:00:00+00',
  'ffffffff-ffff-ffff-ffff-ffffffffffff', '"text"', '[1, "two", 3.0]', 'ok', '{-1}', '{""}',
  '\\x00ff', '0', 0);
INSERT INTO inv.small VALUES (1, 'one'), (2, 'two');
"""

# Each step one psql session (autocommit unless it says BEGIN) while the connector streams. A
# ("A", ...)/("B", ...) pair is two sessions open at once, their statements interleaved in order.
STEPS: list[tuple[str, str]] = [
    # 2. inserts, updates (one of a primary key), deletes, a truncate
    ("-", "INSERT INTO inv.every_type (id, i2, t, n, n102, d, ts, tstz, ai) VALUES"
     " (5, 5, 'five', 5.5, 5.50, '2025-05-05', '2025-05-05 05:05:05', '2025-05-05 05:05:05+00', '{5}');"),
    ("-", "UPDATE inv.every_type SET t = 'one, changed', n = -0.5, jb = '{\"changed\": true}' WHERE id = 1;"),
    ("-", "UPDATE inv.every_type SET id = 20 WHERE id = 2;"),
    ("-", "DELETE FROM inv.every_type WHERE id = 3;"),
    ("-", "INSERT INTO inv.small VALUES (3, 'three'); UPDATE inv.small SET v = 'TWO' WHERE id = 2;"),
    ("-", "TRUNCATE inv.small;"),
    # 3. TOAST: an update that leaves the big value alone, with and without REPLICA IDENTITY FULL
    ("-", f"INSERT INTO inv.toasty VALUES (1, {BIG}, 1); INSERT INTO inv.toasty_full VALUES (1, {BIG}, 1);"),
    ("-", "UPDATE inv.toasty SET n = 2 WHERE id = 1; UPDATE inv.toasty_full SET n = 2 WHERE id = 1;"),
    ("-", "DELETE FROM inv.toasty WHERE id = 1; DELETE FROM inv.toasty_full WHERE id = 1;"),
    # 4. no primary key (REPLICA IDENTITY FULL); rows 2 are twins, so one delete removes both
    ("-", "INSERT INTO inv.nokey VALUES (1, 'one'), (2, 'two'), (2, 'two'), (NULL, 'null a');"),
    ("-", "UPDATE inv.nokey SET b = 'ONE' WHERE a = 1;"),
    ("-", "DELETE FROM inv.nokey WHERE a = 2;"),
    # 5. schema changes: a column added, then its type widened
    ("-", "ALTER TABLE inv.small ADD COLUMN w int; INSERT INTO inv.small VALUES (4, 'four', 4);"),
    ("-", "ALTER TABLE inv.small ALTER COLUMN w TYPE bigint; INSERT INTO inv.small VALUES (5, 'five', 5000000000);"),
    # 6. one key changed many times in one transaction
    ("-", "BEGIN; INSERT INTO inv.small VALUES (50, 'a', 1); UPDATE inv.small SET v = 'b' WHERE id = 50;"
     " UPDATE inv.small SET w = 2 WHERE id = 50; DELETE FROM inv.small WHERE id = 50;"
     " INSERT INTO inv.small VALUES (50, 'again', 3); UPDATE inv.small SET id = 51 WHERE id = 50; COMMIT;"),
    # ... and two interleaved transactions: A writes first but commits last
    ("A", "BEGIN; INSERT INTO inv.small VALUES (70, 'A first', 1);"),
    ("B", "BEGIN; INSERT INTO inv.small VALUES (71, 'B first', 1);"),
    ("A", "UPDATE inv.every_type SET t = 'A second' WHERE id = 1;"),
    ("B", "UPDATE inv.every_type SET t = 'B second' WHERE id = 4; INSERT INTO inv.small VALUES (73, 'B third', 1);"),
    ("B", "COMMIT;"),
    ("A", "INSERT INTO inv.small VALUES (72, 'A third', 1); COMMIT;"),
    # the last change, which the recorder waits for
    ("-", "INSERT INTO inv.small VALUES (999, 'the end', 999);"),
]  # fmt: skip


class Session:
    """A ``psql`` kept open, for transactions that interleave with another session's."""

    def __init__(self, server: postgres.PostgresServer) -> None:
        self._psql = subprocess.Popen(
            [str(server.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(server.root),
             "-p", str(server.port), "-U", postgres.SUPERUSER, "-d", postgres.DATABASE, "-A", "-t"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip

    def run(self, statements: str) -> None:
        assert self._psql.stdin is not None and self._psql.stdout is not None
        self._psql.stdin.write(statements + "\n\\echo __done__\n")
        self._psql.stdin.flush()
        said = []
        for line in self._psql.stdout:
            if line.strip() == "__done__":
                return
            said.append(line)
        raise RuntimeError(f"psql ended: {''.join(said)[-2000:]}")

    def close(self) -> None:
        assert self._psql.stdin is not None
        self._psql.stdin.close()
        self._psql.wait(timeout=30)


def _payload(value: bytes | None) -> Any:
    if value is None:
        return None
    found = json.loads(value)
    return found.get("payload", found) if isinstance(found, dict) and "schema" in found else found


def _consumer(broker: KafkaBroker) -> Any:
    """One client for the recorder's reads and metadata (each admin client left behind logs)."""
    from confluent_kafka import Consumer

    return Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "recorder", "enable.auto.commit": False}
    )


def _topics(consumer: Any) -> set[str]:
    return set(consumer.list_topics(timeout=10).topics)


def _read_all(consumer: Any, topic: str) -> list[dict[str, Any]]:
    """Every message of ``topic`` from the beginning up to its end now, in offset order."""
    from confluent_kafka import TopicPartition

    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
    consumer.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while len(got) < sum(ends.values()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"read {len(got)} of {sum(ends.values())} messages of {topic}")
        message = consumer.poll(0.5)
        if message is None or message.error() or message.offset() >= ends[message.partition()]:
            continue
        key, value = message.key(), message.value()
        got.append({
            "topic": topic, "partition": message.partition(), "offset": message.offset(),
            "key": None if key is None else key.decode("utf-8"),
            "value": None if value is None else value.decode("utf-8"),
            "timestamp": message.timestamp()[1],
        })  # fmt: skip
    consumer.unassign()
    return sorted(got, key=lambda m: (m["partition"], m["offset"]))


def _wait_for_end(consumer: Any, timeout: float = 90.0) -> None:
    """Wait until the last step's row is on its topic and its transaction's END on the transaction
    topic: everything before it has been written too (one task, one partition a topic)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topics = _topics(consumer)
        if f"{PREFIX}.inv.small" in topics and f"{PREFIX}.transaction" in topics:
            ends = [_payload(m["value"]) for m in _read_all(consumer, f"{PREFIX}.inv.small")]
            last = [e for e in ends if e and (e.get("after") or {}).get("v") == "the end"]
            if last:
                txid = str(last[0]["source"]["txId"])
                done = [_payload(m["value"]) for m in _read_all(consumer, f"{PREFIX}.transaction")]
                if any(d["status"] == "END" and d["id"].startswith(txid + ":") for d in done):
                    return
        time.sleep(0.5)
    raise TimeoutError(f"the last change did not reach Kafka in {timeout:.0f} s")


def record(variant: str) -> tuple[Path, dict[str, float]]:
    """Run the script for ``variant``; the file written and how long each part took."""
    schemas, settings = VARIANTS[variant]
    times: dict[str, float] = {}
    server = postgres.start_server(logical=True)
    try:
        server.sql(SNAPSHOT_SQL)
        with KafkaBroker() as broker:
            connect = KafkaConnect(broker.bootstrap, server, tables="inv\\..*", topic_prefix=PREFIX,
                                   schemas=schemas, settings=settings)  # fmt: skip
            try:
                connect.start()
                times["connect_start"] = connect.started_in
                began = time.monotonic()
                connect.wait_streaming()
                times["snapshot"] = time.monotonic() - began
                sessions = {"A": Session(server), "B": Session(server)}
                for who, statements in STEPS:
                    if who in sessions:
                        sessions[who].run(statements)
                    else:
                        server.sql(statements)
                for session in sessions.values():
                    session.close()
                began = time.monotonic()
                consumer = _consumer(broker)
                _wait_for_end(consumer)
                times["to_last_change"] = time.monotonic() - began
                connect.stop()
                topics = sorted(t for t in _topics(consumer) if t.startswith(f"{PREFIX}.") or t == HEARTBEATS)
                messages = [m for topic in topics for m in _read_all(consumer, topic)]
                consumer.close()
                assert postgres.PASSWORD not in connect.log.read_text(encoding="utf-8", errors="replace")
            finally:
                connect.close()
    finally:
        server.stop()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{variant}.jsonl"
    path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages), encoding="utf-8")
    return path, times


def _versions() -> str:
    names = sorted(p.name for p in jars().glob("*.jar"))
    wanted = ("connect-runtime", "connect-json", "debezium-connector-postgres", "postgresql-")
    return ", ".join(n.removesuffix(".jar") for n in names if n.startswith(wanted))


def write_readme() -> None:
    binaries = postgres.binaries()
    server_version = "?" if binaries is None else subprocess.run(
        [str(binaries / "postgres"), "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()  # fmt: skip
    steps = "\n".join(
        f"-- {'session ' + who if who != '-' else 'own session'}\n{statements}" for who, statements in STEPS
    )
    variants = "\n".join(
        f"- `{name}.jsonl`: JsonConverter `schemas.enable={str(schemas).lower()}` (keys and values); "
        + ", ".join(f"`{k}={v}`" for k, v in settings.items())
        for name, (schemas, settings) in VARIANTS.items()
    )
    (OUT / "README.md").write_text(
        README.format(
            versions=_versions(), server=server_version, variants=variants,
            snapshot=SNAPSHOT_SQL.strip(), steps=steps,
        ),
        encoding="utf-8",
    )  # fmt: skip


README = """# Recorded Debezium topics

Real output of Debezium's PostgreSQL connector, recorded by `python -m tests.debezium_record`
(`tests/debezium_record.py`), so tests can replay Debezium topics without starting Kafka Connect.
Regenerate with `scripts/fetch-jars .venv` (the `kafka-4.3/connect` jars) and then
`.venv/bin/python -m tests.debezium_record [variant ...]`; PostgreSQL, Java 17 and confluent-kafka are
needed, nothing else (no Docker). Each run uses a fresh PostgreSQL, broker and Connect worker, so
timestamps, transaction ids and LSNs differ from run to run.

Made with: {versions}; {server}; a Kafka 4.3.1 broker (`tests/kafka_broker.py`);
Kafka Connect standalone (`tests/kafka_connect.py`).

## Files

One JSON object a line: `{{"topic", "partition", "offset", "key", "value", "timestamp"}}`, `key` and
`value` the message's raw UTF-8 bytes as a string (`null` for none: a tombstone's value, a keyless
table's key), `timestamp` the Kafka record timestamp in ms; ordered by topic, partition, offset.
Every topic has one partition. Topics: `pg.inv.<table>` (changes), `pg.transaction` (BEGIN/END of
each transaction), `__debezium-heartbeat.pg` (a heartbeat a second: how many depends on the run).

{variants}

## What Debezium 3.6 writes (seen in these files)

- Envelope `{{before, after, source, transaction, op, ts_ms, ts_us, ts_ns}}`; `op` `r` (snapshot), `c`,
  `u`, `d`, `t` (truncate). `transaction` is `{{id: "<txId>:<lsn>", total_order,
  data_collection_order}}` for streamed events, `null` for snapshot ones.
- `source.sequence` is a string holding a JSON array of two decimal strings, `[last commit LSN,
  event LSN]`: `[null,"<lsn>"]` for snapshot events (and for events of the first streamed
  transaction), `["<commit lsn>","<lsn>"]` for streamed ones. Order events by it (as numbers),
  not by `source.lsn` alone: transactions arrive in commit order, so interleaved transaction A
  (first write, last commit) has lower event LSNs than B's but a higher last-commit LSN.
- Default replica identity: an update has `before: null`; a delete has `before` with only the key
  columns set (the rest `null`). `REPLICA IDENTITY FULL` tables carry whole before images.
- A delete is followed by a tombstone (same key, value `null`), also for the key-less
  `inv.nokey`, whose key is `null` too: a message with neither key nor value.
- A primary-key change is `d` (old key) + tombstone + `c` (new key), all with the same LSN.
- A truncate is one `t` event with key `null`, `before` and `after` `null`.
- An unchanged TOASTed value (`inv.toasty`, update of `n` only) arrives as the text
  `__debezium_unavailable_value`; with `REPLICA IDENTITY FULL` (`inv.toasty_full`) the value is there.
  The delete of `inv.toasty` has `big: null` in `before` (key only).
- Schema changes (`ADD COLUMN`, `ALTER COLUMN ... TYPE bigint`) emit no event of their own: the next
  change's schema has the new field (`int32`, then `int64`). DDL transactions are not on
  `pg.transaction` either.
- With `decimal.handling.mode=precise` (the default): `numeric(p,s)` and `money` are Connect
  `Decimal` (`bytes`: base64 of the unscaled big-endian two's complement, scale in the schema's
  parameters, e.g. `"SZYC0w=="` for 12345678.91); unbounded `numeric` is
  `io.debezium.data.VariableScaleDecimal`, `{{"scale": 1, "value": "Aak="}}`; its `NaN` becomes `null`.
  With `decimal.handling.mode=string` they are strings, `NaN` is `"NAN"`.
- `real`/`double` `Infinity`/`NaN` are the JSON strings `"Infinity"`, `"NaN"`.
- Default `time.precision.mode=adaptive`: `date` days since 1970 (`0001-01-01` is -719162), `time`
  µs (`MicroTime`; `24:00:00` is 86400000000), `time(3)` ms, `timestamp` µs (`MicroTimestamp`),
  `timestamp(3)` ms, `timestamptz` an ISO string in UTC (`ZonedTimestamp`), `timetz` an ISO time in
  UTC (`ZonedTime`; `23:59:59.999999-14:59` becomes `14:58:59.999999Z`), `interval` µs
  (`MicroDuration`, a year counted as 365.25 days, a month as 365.25/12). With `connect`, `time` and
  `timestamp` become Connect `Time`/`Timestamp` in ms (µs truncated).
- `json`/`jsonb` are strings (`jsonb` normalized by PostgreSQL), enum a string, arrays JSON arrays,
  `bytea` base64, `uuid` a string, `char(5)` blank-padded.

## Connector settings

Besides the variant's: `connector.class=io.debezium.connector.postgresql.PostgresConnector`,
`plugin.name=pgoutput`, `topic.prefix=pg`, `slot.name=debezium`,
`publication.name=debezium_publication`, `publication.autocreate.mode=filtered`,
`table.include.list=inv\\..*`, `skipped.operations=none` (truncates are emitted),
`snapshot.mode=initial`, `topic.creation.default.partitions=1`,
`topic.creation.default.replication.factor=1`; `database.*` the local server as its superuser.
PostgreSQL runs with `wal_level=logical`.

## Before the connector starts (snapshot: `op` `r`)

```sql
{snapshot}
```

## While it streams, in order

Each step one `psql` session; steps of sessions A and B interleave in two open sessions.

```sql
{steps}
```
"""


def main(argv: list[str]) -> int:
    why = missing()
    if why:
        print(f"cannot record: {why}", file=sys.stderr)
        return 1
    for variant in argv or list(VARIANTS):
        path, times = record(variant)
        took = ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
        print(f"{path}: {path.stat().st_size} bytes; {took}")
    write_readme()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
