"""The pieces a change-data-capture chain test composes (issue 42, item 4): a PostgreSQL database
written by ``pgbench`` throughout, captured by Debezium in Kafka Connect (``tests/kafka_connect.py``)
into a test broker (``tests/kafka_broker.py``), faults injected on the way, then "drained" and
compared row for row. No package code here: the oracle (``reference_apply``) is written from
Debezium's message format alone, so that it can judge what the package's mirror holds.

The parts:

- ``Pgbench``: ``init`` (``pgbench -i``), a background, rate-limited, restartable run (``start``,
  ``stop``), and the count of transactions it committed, parsed from its summary. pgbench's own
  tables: ``pgbench_accounts``/``branches``/``tellers`` have primary keys, ``pgbench_history`` has
  none (insert-only; its replica identity is left at the default).
- Positions: ``lsn`` (``'0/16B3748'`` as an int), ``lsn_text``, ``drain_target`` (the WAL end after
  pgbench stopped), ``marker`` (one committed write to ``MARKER_TABLE`` after it).
- Rows: ``pg_rows`` (PostgreSQL's exact text of each value, ``None`` for NULL), ``debezium_text``
  (a Debezium JSON value as PostgreSQL's text of it), ``assert_same`` (row for row, or as multisets).
- Faults: ``kill_connect``, ``bounce_broker``, ``restart_postgres``; each returns its seconds.
  ``fault_plan(seed, count)``: a seeded random sequence of them, for soaks. Before any fault:
  ``wait_snapshot_committed`` (Connect's committed offset, ``connect_offset``, past the snapshot),
  and ``durable_commits`` if PostgreSQL is to crash (what pgbench counts stays committed).
- Topics: ``TopicReader`` (every message of the chain's topics, from offset 0, with a plain
  confluent-kafka consumer), ``wait_drained``, and ``reference_apply``, the independent oracle.

Drained, and why the marker. "Drained" means: everything PostgreSQL committed before
``drain_target`` (read after pgbench stopped) has been delivered (the harness) or applied (the
mirror). A table's own applied position cannot say so by itself: once pgbench stops, an idle table's
last event stays below the target for ever. So, after reading the target, ``marker`` commits one
write to ``MARKER_TABLE`` (captured with the rest): its event is past the target. Debezium reads the
slot in commit order and Connect's one producer writes in that order, so once the marker's event
(``source.lsn`` >= target: its first change can start exactly there) is consumed, every earlier change has been written to its topic:
``wait_drained`` then takes each topic's end offset and reads up to it. A mirror's drain check is
the same: the marker table's applied position past the target, and every other table having
applied its topic up to the end offset seen after that (or, per table, its last event's position).

Positions. Debezium's PostgreSQL ``source.sequence`` is a JSON text ``["<last commit LSN>",
"<change LSN>"]`` (decimal strings); ``Event.position`` makes it ``(int, int)``, ``-1`` for
``null``. Seen with Debezium 3.6.1 and pgoutput: all of one table's snapshot (``op`` ``r``) events
share one position, ``(null, snapshot LSN)``; the first transaction streamed after a snapshot has a
``null`` first element too; after that the first element is where the transaction streamed before
it ended (its commit record's end), the same for all of a transaction's events, so increasing
in commit order, while the change LSN alone goes back now and then (concurrent transactions
interleave in the WAL). A re-sent event (Connect at-least-once) has the position it had.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests import kafka_connect
from tests.kafka_broker import KafkaBroker
from tests.kafka_connect import KafkaConnect
from tests.sources import postgres
from tests.sources.postgres import PostgresServer


def missing() -> str | None:
    """Why a chain test cannot run here, or ``None``: Kafka Connect's and Debezium's jars, the
    broker's, Java, confluent-kafka, PostgreSQL (``tests/kafka_connect.py``), and ``pgbench``."""
    why = kafka_connect.missing()
    folder = postgres.binaries()
    if why is None and (folder is None or not (folder / "pgbench").exists()):
        why = "pgbench is not installed beside PostgreSQL's binaries (Debian's postgresql has it)"
    return why


MARKER_TABLE = "openmirror.heartbeat"
# pgbench's tables: their key columns (none for history) and columns, in table order.
PGBENCH_KEYS: dict[str, tuple[str, ...]] = {
    "pgbench_accounts": ("aid",),
    "pgbench_branches": ("bid",),
    "pgbench_tellers": ("tid",),
    "pgbench_history": (),
}
PGBENCH_COLUMNS: dict[str, tuple[str, ...]] = {
    "pgbench_accounts": ("aid", "bid", "abalance", "filler"),
    "pgbench_branches": ("bid", "bbalance", "filler"),
    "pgbench_tellers": ("tid", "bid", "tbalance", "filler"),
    "pgbench_history": ("tid", "bid", "aid", "delta", "mtime", "filler"),
}
Position = tuple[int, int]


# pgbench ------------------------------------------------------------------------------------------


class Pgbench:
    """pgbench against ``server``'s database, over TCP as its superuser (the password through
    ``PGPASSWORD``), each run's output in ``logs/pgbench-<n>.log``.

    ``start`` runs it in the background until ``stop``; a run also ends by itself when PostgreSQL
    drops its connections (a restart): ``start`` again after that is the way on. ``stop`` ends a
    run by terminating its server connections (``pg_terminate_backend``), which makes pgbench print
    its summary (a SIGINT would kill it without one); a transaction cut off that way is rolled back
    (or, if its commit was already done, counted by PostgreSQL but maybe not by pgbench: at most one
    per client). ``transactions`` sums the runs' "number of transactions actually processed";
    every TPC-B transaction inserts one ``pgbench_history`` row, the exact count.

    Runs use ``-n``: pgbench's start-of-run VACUUM would be harmless, but its TRUNCATE of
    ``pgbench_history`` would empty the keyless table at every restart.
    """

    def __init__(self, server: PostgresServer, logs: Path, *, application: str = "pgbench") -> None:
        self.server = server
        self.logs = logs
        self.application = application  # its connections' application_name: how stop finds them
        self.runs: list[int] = []  # transactions of each finished run
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None
        logs.mkdir(parents=True, exist_ok=True)

    @property
    def transactions(self) -> int:
        return sum(self.runs)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _command(self, *args: str) -> list[str]:
        return [
            str(self.server.bin / "pgbench"), *args, "-h", "127.0.0.1", "-p", str(self.server.port),
            "-U", postgres.SUPERUSER, postgres.DATABASE,
        ]  # fmt: skip

    def _env(self) -> dict[str, str]:
        return {**os.environ, "PGPASSWORD": postgres.PASSWORD, "PGAPPNAME": self.application}

    def init(self, scale: int = 1) -> float:
        """``pgbench -i -s scale`` (drops and makes its four tables; keys on all but history); its
        seconds."""
        began = time.monotonic()
        done = subprocess.run(
            self._command("-i", "-q", "-s", str(scale)), env=self._env(), capture_output=True, text=True,
            timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"pgbench -i failed ({done.returncode}): {done.stderr[-2000:]}")
        return time.monotonic() - began

    def start(self, rate: float | None = 50, clients: int = 2, seconds: int | None = None) -> None:
        """A background run: ``clients`` connections, ``rate`` transactions a second in all
        (``None``: as fast as it goes), for ``seconds`` (``None``: until ``stop``). A run that ended
        by itself (its connections died) is collected first."""
        if self.running:
            raise RuntimeError("pgbench is already running")
        self._collect()
        limit = [] if rate is None else ["-R", str(rate)]
        command = self._command(
            "-n", "-c", str(clients), "-j", "1", *limit, "-T", str(seconds or 86400), "-P", "1"
        )
        self._log = self.logs / f"pgbench-{len(self.runs) + 1}.log"
        with self._log.open("wb") as out:
            self._process = subprocess.Popen(
                command, env=self._env(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        # Connected once its sessions show: a stop right after start has something to end.
        deadline = time.monotonic() + 30
        query = f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{self.application}';"
        while int(self.server.sql(query).strip()) < clients:
            if not self.running:
                raise RuntimeError(f"pgbench exited at its start: {self.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"pgbench did not connect in 30 s: {self.tail()}")
            time.sleep(0.05)

    def stop(self) -> int:
        """End the run (terminating its connections) and wait for it; its transactions. Nothing to
        do (0) if none runs; a run that ended by itself is collected."""
        if self.running:
            assert self._process is not None
            deadline = time.monotonic() + 30
            query = (
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                f" WHERE application_name = '{self.application}' AND pid <> pg_backend_pid();"
            )
            while self._process.poll() is None:
                if time.monotonic() > deadline:
                    self._process.kill()
                    self._process.wait(30)
                    raise TimeoutError(f"pgbench did not end in 30 s: {self.tail()}")
                try:
                    self.server.sql(query)
                except RuntimeError:  # PostgreSQL itself going away: pgbench ends anyway
                    pass
                try:
                    self._process.wait(1)
                except subprocess.TimeoutExpired:
                    pass
        return self._collect()

    def run(self, seconds: int, *, rate: float | None = None, clients: int = 2) -> float:
        """A foreground run of ``seconds``; its ``tps`` (the sustainable rate, with ``rate=None``)."""
        self.start(rate=rate, clients=clients, seconds=seconds)
        assert self._process is not None
        self._process.wait(seconds + 60)
        self._collect()
        assert self._log is not None
        found = re.findall(r"^tps = ([0-9.]+)", self._log.read_text(errors="replace"), re.M)
        if not found:
            raise RuntimeError(f"no tps in pgbench's output: {self.tail()}")
        return float(found[-1])

    def _collect(self) -> int:
        process, self._process = self._process, None
        if process is None:
            return 0
        process.wait(30)
        assert self._log is not None
        text = self._log.read_text(errors="replace")
        found = re.findall(r"^number of transactions actually processed: (\d+)", text, re.M)
        if not found:
            raise RuntimeError(f"pgbench ended ({process.returncode}) without a summary: {self.tail()}")
        self.runs.append(int(found[-1]))
        return self.runs[-1]

    def tail(self, chars: int = 2000) -> str:
        if self._log is None or not self._log.exists():
            return "(no pgbench output)"
        return self._log.read_text(errors="replace")[-chars:]


def durable_commits(server: PostgresServer) -> None:
    """Make the superuser's sessions (pgbench's among them) commit with ``synchronous_commit=on``:
    the test servers run with it off, and then a crash (``restart_postgres(mode="immediate")``)
    loses the last commits PostgreSQL had acknowledged (seen: 5 of 1416), so pgbench's count would
    no longer be PostgreSQL's. A role setting, as the command line's ``-c`` outranks
    ``ALTER SYSTEM``; sessions opened after it have it."""
    server.sql(f"ALTER ROLE {postgres.SUPERUSER} SET synchronous_commit = on;")


# Positions ----------------------------------------------------------------------------------------


def lsn(text: str) -> int:
    """PostgreSQL's text of an LSN (``'0/16B3748'``: the high and low 32 bits in hex) as an int."""
    high, low = text.strip().split("/")
    return (int(high, 16) << 32) | int(low, 16)


def lsn_text(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def drain_target(server: PostgresServer) -> str:
    """The WAL's end, read once pgbench has stopped: everything committed is below it.

    ``pg_current_wal_insert_lsn()``, not ``pg_current_wal_lsn()``: the test servers run with
    ``synchronous_commit=off``, and the latter (the *write* position) can lag the last commits by
    up to the WAL writer's delay (seen: 0/259E000 against an insert position of 0/259EFE0)."""
    return server.sql("SELECT pg_current_wal_insert_lsn();").strip()


def create_marker_table(server: PostgresServer) -> None:
    """``MARKER_TABLE``, keyed; before Kafka Connect first starts, so that the publication it makes
    (``publication.autocreate.mode=filtered``) includes it."""
    schema = MARKER_TABLE.split(".")[0]
    server.sql(
        f"CREATE SCHEMA IF NOT EXISTS {schema};"
        f" CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (id int PRIMARY KEY, ts timestamptz NOT NULL);"
    )


def marker(server: PostgresServer, *, id: int = 1) -> str:
    """One committed upsert of row ``id`` in ``MARKER_TABLE``; the WAL's end after it. Called
    after ``drain_target``: its change (and so its event's ``source.lsn``) is past the target."""
    return server.sql(
        f"INSERT INTO {MARKER_TABLE} VALUES ({id}, clock_timestamp())"
        " ON CONFLICT (id) DO UPDATE SET ts = excluded.ts;"
        " SELECT pg_current_wal_insert_lsn();"
    ).strip()


def slot_lsn(server: PostgresServer, slot: str) -> str | None:
    """The slot's ``confirmed_flush_lsn``: what the reader (Debezium, after Connect committed its
    offsets) told PostgreSQL it has; ``None`` while it has none."""
    found = server.sql(f"SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '{slot}';")
    return found.strip() or None


# Rows ---------------------------------------------------------------------------------------------

_COPY_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _copy_field(text: str) -> str | None:
    if text == "\\N":
        return None
    if "\\" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape in _COPY_ESCAPES:
            return _COPY_ESCAPES[escape]
        if escape[0] == "x":
            return chr(int(escape[1:], 16))
        if escape[0].isdigit():
            return chr(int(escape, 8))
        return escape

    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", one, text)


def pg_rows(server: PostgresServer, table: str, columns: Sequence[str]) -> list[tuple[str | None, ...]]:
    """Every row of ``table`` as a tuple of PostgreSQL's text of each column (``COPY ... TO STDOUT``,
    text format, so NULL (``None``) and ``''`` differ); unordered. ``columns`` are SQL expressions
    (``"mtime"``, ``"abalance::text"``...)."""
    out = server.sql(f"COPY (SELECT {', '.join(columns)} FROM {table}) TO STDOUT;")
    return [tuple(_copy_field(value) for value in line.split("\t")) for line in out.split("\n") if line]


_EPOCH = datetime(1970, 1, 1)


def _fraction(moment: datetime) -> str:
    """PostgreSQL's text of a timestamp: microseconds with trailing zeros dropped."""
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text


def debezium_text(value: Any, schema: Mapping[str, Any]) -> str | None:
    """A value of a Debezium JSON event (``schemas.enable``) as PostgreSQL's text of it, by its
    field schema: the integer, text, boolean, float, ``timestamp`` (``MicroTimestamp``/
    ``Timestamp``/``NanoTimestamp``), ``timestamptz`` (``ZonedTimestamp``, as UTC), ``date`` and
    ``numeric`` (Connect's ``Decimal``) cases. Enough for pgbench's tables and the marker's; raises
    on other logical types rather than guess."""
    if value is None:
        return None
    name = schema.get("name")
    if name == "io.debezium.time.MicroTimestamp":
        return _fraction(_EPOCH + timedelta(microseconds=value))
    if name == "io.debezium.time.Timestamp":
        return _fraction(_EPOCH + timedelta(milliseconds=value))
    if name == "io.debezium.time.NanoTimestamp":
        return _fraction(_EPOCH + timedelta(microseconds=value // 1000))
    if name == "io.debezium.time.ZonedTimestamp":  # ISO text in UTC: '2026-11-27T09:40:01.12Z'
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
        return _fraction(moment.replace(tzinfo=None)) + "+00"
    if name == "io.debezium.time.Date":
        return (date(1970, 1, 1) + timedelta(days=value)).isoformat()
    if name == "org.apache.kafka.connect.data.Decimal":
        import base64

        unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
        scale = int(schema.get("parameters", {}).get("scale", 0))
        return f"{Decimal(unscaled).scaleb(-scale):f}"
    if name is not None:
        raise ValueError(f"debezium_text does not know the logical type {name}")
    kind = schema.get("type")
    if kind == "boolean":
        return "t" if value else "f"
    if kind in ("int8", "int16", "int32", "int64", "string"):
        return str(value)
    if kind in ("float", "double"):
        return repr(float(value))
    raise ValueError(f"debezium_text does not know the type {kind}")


def _order(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple((value is not None, value) for value in row)


def assert_same(
    expected: Iterable[Sequence[Any]], mirrored: Iterable[Sequence[Any]], *, keyed: bool, key: int = 1,
    what: str = "the table", show: int = 5,
) -> None:  # fmt: skip
    """``mirrored`` holds exactly ``expected``: keyed (the first ``key`` columns), row for row, each
    key once; keyless, as multisets (a row twice must be there twice). The failure says how many
    rows are missing and extra, with the first ``show`` of each (sorted), and, keyed, the keys held
    twice and the keys whose values differ."""
    want = Counter(tuple(row) for row in expected)
    got = Counter(tuple(row) for row in mirrored)
    if want == got:
        return
    missing = sorted((want - got).elements(), key=_order)
    extra = sorted((got - want).elements(), key=_order)
    lines = [
        f"{what} differs ({'keyed' if keyed else 'keyless, as multisets'}): {sum(want.values())} rows"
        f" expected, {sum(got.values())} mirrored; {len(missing)} missing, {len(extra)} extra"
    ]
    if keyed:
        twice = [k for k, n in Counter(row[:key] for row in got.elements()).items() if n > 1]
        if twice:
            lines.append(f"keys held more than once ({len(twice)}): {sorted(twice, key=_order)[:show]}")
        changed = {row[:key] for row in missing} & {row[:key] for row in extra}
        if changed:
            lines.append(f"keys whose values differ ({len(changed)}): {sorted(changed, key=_order)[:show]}")
    lines.append(f"missing (first {show}): {missing[:show]}")
    lines.append(f"extra (first {show}): {extra[:show]}")
    raise AssertionError("\n".join(lines))


def connect_offset(connect: KafkaConnect) -> dict[str, Any] | None:
    """The source offset Connect last committed for the connector (its offsets file: a Java
    serialized map whose values are JSON text), ``None`` before the first commit. Debezium's:
    ``{"lsn_proc", "lsn_commit", "lsn", "txId", ...}`` while streaming; while snapshotting,
    ``"snapshot": "INITIAL"`` with ``"snapshot_completed": false`` until the snapshot's last record
    is acknowledged."""
    try:
        data = connect.offsets.read_bytes()
    except OSError:
        return None
    found = re.findall(rb'\{"[^{}]*\}', data)
    if not found:
        return None
    offset: dict[str, Any] = json.loads(found[-1])
    return offset


def wait_snapshot_committed(connect: KafkaConnect, *, timeout: float = 120.0) -> float:
    """Wait until Connect has committed an offset past Debezium's snapshot; its seconds.

    ``KafkaConnect.wait_streaming`` is not that: the slot turns active once Debezium has *read*
    the snapshot, while its records are still on their way (seen: 80,000 of 100,000 in the topic,
    the committed offset saying ``snapshot_completed: false`` for about 5 s more). A worker killed
    in that window does the whole snapshot again, at a new position, on its next start."""
    began = time.monotonic()
    while True:
        offset = connect_offset(connect)
        if offset is not None and (offset.get("snapshot_completed") or "snapshot" not in offset):
            return time.monotonic() - began
        if not connect.running:
            raise RuntimeError("Kafka Connect exited before its snapshot was committed")
        if time.monotonic() - began > timeout:
            raise TimeoutError(f"no committed offset past the snapshot after {timeout:.0f} s: {offset}")
        time.sleep(0.2)


# Faults -------------------------------------------------------------------------------------------


def kill_connect(connect: KafkaConnect, *, timeout: float = 120.0) -> float:
    """SIGKILL the worker (a crash: offsets unflushed since its last flush are lost, and it sends
    those changes again), start it again on the same offsets file, wait until Debezium reads the
    slot again; the seconds it took."""
    began = time.monotonic()
    connect.kill()
    connect.start()
    connect.wait_streaming(timeout)
    return time.monotonic() - began


def bounce_broker(broker: KafkaBroker, *, down: float = 0.0) -> float:
    """Stop the broker (a clean SIGTERM, data kept), leave it down ``down`` seconds, start it on
    the same ports; the seconds it took."""
    began = time.monotonic()
    broker.stop()
    time.sleep(down)
    broker.start()
    return time.monotonic() - began


def restart_postgres(server: PostgresServer, *, down: float = 0.0, mode: str = "fast") -> float:
    """Stop PostgreSQL (``pg_ctl stop -m mode``: ``fast`` ends sessions and checkpoints,
    ``immediate`` is a crash, recovered at the start), leave it down ``down`` seconds, start it with
    the options it ran with (its ``postmaster.opts``, as ``pg_ctl restart`` does), wait until it
    accepts connections; the seconds it took. Unlike ``PostgresServer.stop``, the cluster is kept."""
    began = time.monotonic()
    pg_ctl = str(server.bin / "pg_ctl")
    recorded = shlex.split((server.data / "postmaster.opts").read_text())
    options = shlex.join(recorded[1:])  # the server binary's arguments, -D included
    server._run(pg_ctl, "-D", str(server.data), "-m", mode, "-w", "-t", "60", "stop")
    time.sleep(down)
    server._run(pg_ctl, "-D", str(server.data), "-l", str(server.root / "log"), "-w", "-t", "60",
                "-o", options, "start")  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            server.sql("SELECT 1;")
            break
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    return time.monotonic() - began


FAULTS = ("kill_connect", "bounce_broker", "restart_postgres_fast", "restart_postgres_immediate")


def fault_plan(seed: int, count: int, kinds: Sequence[str] = FAULTS) -> list[str]:
    """``count`` faults drawn from ``kinds`` with ``random.Random(seed)``, for a soak that logs its
    seed (and so can be run again as it was); never the same kind twice in a row."""
    import random

    rng = random.Random(seed)
    plan: list[str] = []
    while len(plan) < count:
        kind = rng.choice(kinds)
        if not plan or kind != plan[-1] or len(kinds) == 1:
            plan.append(kind)
    return plan


# Topics and the oracle ----------------------------------------------------------------------------


@dataclass
class Event:
    """One message of a Debezium topic: its key's and value's ``payload`` (``None`` for a null
    key, a keyless table's, and for a tombstone's value)."""

    topic: str
    offset: int
    key: Any
    value: dict[str, Any] | None

    @property
    def op(self) -> str | None:
        return None if self.value is None else self.value["op"]

    @property
    def source(self) -> dict[str, Any]:
        assert self.value is not None
        source: dict[str, Any] = self.value["source"]
        return source

    @property
    def position(self) -> Position:
        """``source.sequence`` as (last commit LSN, change LSN), ``-1`` for a ``null``."""
        first, change = json.loads(self.source["sequence"])
        return (-1 if first is None else int(first), int(change))


class TopicReader:
    """Every message of ``topics`` from offset 0, with one plain confluent-kafka consumer (no group
    offsets: assigned partitions). A topic that does not exist yet (Connect makes each on its
    first record) is picked up when it appears. ``events[topic]`` in offset order; ``schemas[topic]``
    is the value schema of the topic's first event (its ``after`` fields: ``columns``)."""

    def __init__(self, bootstrap: str, topics: Iterable[str]) -> None:
        from confluent_kafka import Consumer

        self.topics = list(topics)
        self.events: dict[str, list[Event]] = {topic: [] for topic in self.topics}
        self.schemas: dict[str, dict[str, Any]] = {}
        self._assigned: set[str] = set()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "cdc-chain-oracle",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "fetch.max.bytes": 64 * 1024 * 1024,
                # Its complaints while a broker is down go to logging (pytest shows them on a
                # failure), not to stderr.
                "logger": logging.getLogger("tests.cdc_chain.kafka"),
            }
        )

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> TopicReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _assign_new(self) -> None:
        from confluent_kafka import TopicPartition

        wanted = [t for t in self.topics if t not in self._assigned]
        if not wanted:
            return
        listed = self._consumer.list_topics(timeout=10).topics
        new = [t for t in wanted if t in listed and listed[t].error is None and listed[t].partitions]
        if new:
            parts = [TopicPartition(t, p, 0) for t in new for p in sorted(listed[t].partitions)]
            self._consumer.incremental_assign(parts)
            self._assigned.update(new)

    def poll(self, seconds: float = 0.5) -> int:
        """Read what arrives within about ``seconds``; how many messages."""
        self._assign_new()
        count = 0
        deadline = time.monotonic() + seconds
        while True:
            batch = self._consumer.consume(
                num_messages=5000, timeout=max(0.0, min(0.5, deadline - time.monotonic()))
            )
            for message in batch:
                if message.error():
                    continue
                topic, offset = message.topic(), message.offset()
                raw_key, raw_value = message.key(), message.value()
                assert topic is not None and offset is not None
                key = None if raw_key is None else json.loads(raw_key)["payload"]
                value = None
                if raw_value is not None:
                    whole = json.loads(raw_value)
                    value = whole["payload"]
                    if topic not in self.schemas:
                        self.schemas[topic] = whole["schema"]
                self.events[topic].append(Event(topic, offset, key, value))
                count += 1
            if time.monotonic() >= deadline:
                return count

    def read_until(self, condition: Callable[[], bool], *, timeout: float, what: str) -> float:
        """Poll until ``condition()``; its seconds; ``TimeoutError`` (saying ``what``) after
        ``timeout``."""
        began = time.monotonic()
        while not condition():
            if time.monotonic() - began > timeout:
                counts = {t: len(e) for t, e in self.events.items()}
                raise TimeoutError(f"{what}: not after {timeout:.0f} s; read so far {counts}")
            self.poll(0.5)
        return time.monotonic() - began

    def end_offsets(self) -> dict[str, int]:
        """Each topic's end offset (partition 0: Connect's topics here have one), 0 if absent."""
        from confluent_kafka import TopicPartition

        listed = self._consumer.list_topics(timeout=10).topics
        ends = {}
        for topic in self.topics:
            if topic in listed and listed[topic].partitions:
                ends[topic] = self._consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
            else:
                ends[topic] = 0
        return ends

    def next_offset(self, topic: str) -> int:
        return self.events[topic][-1].offset + 1 if self.events[topic] else 0

    def columns(self, topic: str) -> dict[str, dict[str, Any]]:
        """The ``after`` image's field schemas, by column, in table order."""
        envelope = {f["field"]: f for f in self.schemas[topic]["fields"]}
        return {f["field"]: f for f in envelope["after"]["fields"]}


def wait_drained(reader: TopicReader, marker_topic: str, target: str, *, timeout: float = 120.0) -> float:
    """Read until ``marker_topic`` holds an event whose change is past ``target`` (``marker``'s,
    written after the target was read), then every topic up to its end offset at that moment (see
    the module's text for why that is all of them); the seconds it took. Bounded by ``timeout``."""
    began = time.monotonic()
    goal = lsn(target)

    def marked() -> bool:
        return any(
            e.value is not None and int(e.source["lsn"]) >= goal
            for e in reversed(reader.events[marker_topic])
        )

    reader.read_until(marked, timeout=timeout, what=f"an event past {target} in {marker_topic}")
    ends = reader.end_offsets()
    left = timeout - (time.monotonic() - began)
    reader.read_until(
        lambda: all(reader.next_offset(t) >= end for t, end in ends.items()),
        timeout=max(left, 1.0), what=f"every topic up to its end offset {ends}",
    )  # fmt: skip
    return time.monotonic() - began


@dataclass
class Applied:
    """A topic's events applied: ``rows`` (keyed: the last image per key; keyless: the multiset of
    inserted images), ``events`` (data events read, tombstones not counted), ``duplicates`` (the
    events skipped as already applied: ``(offset, position, op)``), ``last`` (the highest position
    applied), ``ops`` (applied events by op), ``regressions``/``lsn_regressions`` (below)."""

    keyed: bool | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    duplicates: list[tuple[int, Position, str]] = field(default_factory=list)
    last: Position | None = None
    ops: Counter[str] = field(default_factory=Counter)
    # Streamed events applied at a position not above the streamed one before (offset, position,
    # the one before): none where the positions order the stream, as a position skip needs.
    regressions: list[tuple[int, Position, Position]] = field(default_factory=list)
    lsn_regressions: int = 0  # streamed events whose change LSN alone is below the one before
    covered: int = 0  # keyless: streamed inserts taken as already in a snapshot begun again


def reference_apply(messages: Iterable[Event]) -> dict[str, Applied]:
    """The independent oracle: each topic's Debezium events (in offset order) applied.

    Connect is at-least-once: after a crash it sends again, at new offsets, events whose offsets it
    had not flushed, with the same ``source`` position. A streamed event is a duplicate when its
    (position, op, key) was applied already (keyless: its (position, op, image)), and is skipped.
    Snapshot (``r``) events are not: all of one snapshot share its position (and two equal rows of
    a keyless table are two events there), and a snapshot is never sent twice at one position.
    A snapshot begun again (the worker died before its end was committed: ``wait_snapshot_committed``)
    restates the table, at a new position P: its first event (``_snapshot_begins``) empties the
    topic's rows, the changes streamed after the first snapshot included (the second has them).
    And then inserts that second snapshot holds come again as ``c`` events never sent before (seen:
    1,050 and 697 of them), at positions past P too (the snapshot's LSN is not its cut: it reads
    the tables later, without the slot's exported snapshot): no position dedup catches those.
    Keyed, replaying them in commit order converges. Keyless, after a snapshot at an LSN past the
    first snapshot's (one begun again, seen in any topic), a streamed insert of a row that snapshot
    holds (one count of its multiset each) is taken as the snapshot's (``covered``): exact where
    rows are unique, as ``pgbench_history``'s are (``mtime`` to the microsecond), not in general.
    Keyed (a message key): ``r``/``c``/``u`` set the key's row to ``after``, ``d`` removes it,
    tombstones do nothing. Keyless (no key): ``r``/``c`` add ``after`` to the multiset; ``u``/``d``
    raise (a keyless table without REPLICA IDENTITY FULL cannot publish them; the oracle does not
    guess). ``t`` (truncate) empties the table. Limitation: a table empty at a second snapshot has
    no event there to reset it.
    Limitation: two identical rows streamed at one position (a COPY into a keyless table may log
    several rows in one WAL record) would count once; pgbench's single-row inserts never are."""
    messages = list(messages)
    # The first snapshot's LSN: one at a later LSN is one begun again.
    first_snapshot = min((e.position[1] for e in messages if e.op == "r"), default=-1)
    applied: dict[str, Applied] = {}
    keyed_rows: dict[str, dict[str, dict[str, Any]]] = {}
    keyless_rows: dict[str, list[dict[str, Any]]] = {}
    seen: dict[str, set[tuple[Any, ...]]] = {}
    previous: dict[str, tuple[str, str | None]] = {}  # each topic's last applied (op, snapshot)
    streamed_at: dict[str, Position] = {}  # each topic's last applied streamed position
    snapshot_lsn: dict[str, int] = {}  # each topic's last snapshot's LSN
    covered: dict[str, Counter[str]] = {}  # keyless: its rows not yet matched by a streamed insert
    for event in messages:
        topic = event.topic
        state = applied.setdefault(topic, Applied())
        if event.value is None:  # a tombstone
            continue
        state.events += 1
        op = event.op
        assert op is not None
        position = event.position
        if op == "r":  # one snapshot: every event at its position, each once (see below)
            identity: tuple[Any, ...] | None = None
        elif op == "t":
            identity = (position, op)
        elif event.key is not None:
            identity = (position, op, json.dumps(event.key, sort_keys=True))
        else:
            image = event.value["after"] if op in ("r", "c") else event.value["before"]
            identity = (position, op, json.dumps(image, sort_keys=True))
        done = seen.setdefault(topic, set())
        if identity is not None:
            if identity in done:
                state.duplicates.append((event.offset, position, op))
                continue
            done.add(identity)
        state.ops[op] += 1
        if op != "r":
            if streamed_at.get(topic) is not None:
                if position <= streamed_at[topic]:
                    state.regressions.append((event.offset, position, streamed_at[topic]))
                if position[1] < streamed_at[topic][1]:
                    state.lsn_regressions += 1
            streamed_at[topic] = position
        state.last = position if state.last is None else max(state.last, position)
        before, previous[topic] = previous.get(topic), (op, event.source.get("snapshot"))
        if op == "t" or (op == "r" and _snapshot_begins(event, before)):
            keyed_rows.pop(topic, None)
            keyless_rows.pop(topic, None)
            covered.pop(topic, None)
            if op == "t":
                snapshot_lsn.pop(topic, None)
                continue
            snapshot_lsn[topic] = position[1]
        if state.keyed is None:
            state.keyed = event.key is not None
        if state.keyed:
            key = json.dumps(event.key, sort_keys=True)
            rows = keyed_rows.setdefault(topic, {})
            if op in ("r", "c", "u"):
                rows[key] = event.value["after"]
            elif op == "d":
                rows.pop(key, None)
            else:
                raise ValueError(f"{topic}@{event.offset}: unknown op {op!r}")
        else:
            bag = keyless_rows.setdefault(topic, [])
            image = event.value["after"]
            if op == "r":
                bag.append(image)
                covered.setdefault(topic, Counter())[json.dumps(image, sort_keys=True)] += 1
            elif op == "c":
                text = json.dumps(image, sort_keys=True)
                # After a snapshot begun again, a row that snapshot holds: the snapshot's (above).
                if (
                    snapshot_lsn.get(topic, first_snapshot) > first_snapshot
                    and covered.get(topic, Counter())[text] > 0
                ):
                    covered[topic][text] -= 1
                    state.covered += 1
                    continue
                bag.append(image)
            else:
                raise ValueError(f"{topic}@{event.offset}: {op!r} on a keyless table")
    for topic, state in applied.items():
        if state.keyed:
            state.rows = list(keyed_rows.get(topic, {}).values())
        else:
            state.rows = list(keyless_rows.get(topic, []))
    return applied


def _snapshot_begins(event: Event, before: tuple[str, str | None] | None) -> bool:
    """Whether a snapshot (``r``) event is the first of a snapshot of its table: Debezium marks it
    ``source.snapshot`` ``first`` (the snapshot's first record) or ``first_in_data_collection``;
    a table whose one record is also the snapshot's last is marked ``last``, so an ``r`` event after
    a non-snapshot event or after a ``last``/``last_in_data_collection`` one begins one too."""
    if event.source.get("snapshot") in ("first", "first_in_data_collection"):
        return True
    return before is None or before[0] != "r" or before[1] in ("last", "last_in_data_collection")


def as_text(
    rows: Iterable[Mapping[str, Any]], columns: Mapping[str, Mapping[str, Any]], names: Sequence[str]
) -> list[tuple[str | None, ...]]:
    """Applied rows as tuples of PostgreSQL's text (``debezium_text``) of the columns ``names``, by
    the field schemas ``columns`` (``TopicReader.columns``): comparable with ``pg_rows``."""
    return [tuple(debezium_text(row[name], columns[name]) for name in names) for row in rows]
