"""When a Kafka micro-batch's changes happened, for the freshness figures (issue 43).

The batch's one checking job (``topic_shapes.gather``) also takes, per topic, the oldest and the
newest source time of its changes (Debezium's ``source.ts_ms``: the commit's time, on the
source's clock) and of their Kafka messages (the message ``timestamp``). A snapshot's reads
(``op`` ``r``, or ``source.snapshot`` other than ``false``) are left out: their time is the
snapshot's, not a change's. So are Debezium's heartbeat messages (``__debezium-heartbeat``), whose
time is the connector's, not a commit's; the heartbeat *table*'s changes count, being commits.
A topic of JSON rows has no source time: its Kafka times stand in (``kind="topic"``).

Each table's push carries its topic's times (``table_times``); after the batch, one
``stream_freshness.BatchMark`` records the newest source time seen over every topic and each
table's last sequence number (``record``), which proves an idle table current too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.landing_zone.freshness_log import SourceTimes
from openmirror_nb._core.landing_zone.push_state import StreamBatch
from openmirror_nb._core.landing_zone.stream_freshness import BatchMark, record_batch
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import Column

log = logging.getLogger("openmirror_nb")
# Per message: the change's source time (ms) and its Kafka time (µs), NULL for a snapshot read,
# a heartbeat, transaction metadata or a tombstone.
SOURCE_MS, TOPIC_US = "_om_source_ms", "_om_topic_us"
TIMES = ("source_oldest", "source_newest", "topic_oldest", "topic_newest")
TIMESTAMP = "timestamp"  # Spark's Kafka column: the message's time


def probe_columns(debezium: Column, plain: Column, op: Column, snapshot: Column, ts_ms: str) -> list[Column]:
    """The ``SOURCE_MS`` and ``TOPIC_US`` columns of a probed message: ``debezium`` and ``plain``
    say its shape (an event; a JSON row), ``op`` and ``snapshot`` are its event's, ``ts_ms`` names
    the column of its ``source.ts_ms``, as text. A value that is no number is NULL, never a failed
    batch: the times only measure."""
    from pyspark.sql import functions as F

    change = debezium & ~op.eqNullSafe("r") & (snapshot.isNull() | (F.lower(snapshot) == "false"))
    ms = F.expr(f"try_cast({quoted(ts_ms)} AS BIGINT)")
    kafka = F.expr(f"unix_micros({quoted(TIMESTAMP)})")
    return [F.when(change, ms).alias(SOURCE_MS), F.when(change | plain, kafka).alias(TOPIC_US)]


def aggregates() -> list[Column]:
    """Per topic partition, the oldest and newest of each time (``combined`` merges them)."""
    from pyspark.sql import functions as F

    source, topic = F.col(SOURCE_MS), F.col(TOPIC_US)
    return [
        F.min(source).alias(TIMES[0]),
        F.max(source).alias(TIMES[1]),
        F.min(topic).alias(TIMES[2]),
        F.max(topic).alias(TIMES[3]),
    ]


def combined() -> list[Column]:
    """Per topic, over its partitions' ``aggregates``."""
    from pyspark.sql import functions as F

    return [(F.min if n.endswith("oldest") else F.max)(n).alias(n) for n in TIMES]


@dataclass(frozen=True)
class TopicTimes:
    """One topic's times in a batch, in epoch seconds: its changes' ``source`` (oldest, newest)
    and their messages' ``topic`` (oldest, newest); ``None`` when it had none."""

    source: tuple[float, float] | None = None
    topic: tuple[float, float] | None = None

    @classmethod
    def of(cls, row: Any) -> TopicTimes:
        """From the checking job's row of the topic (``combined``'s columns)."""

        def pair(oldest: str, newest: str, scale: float) -> tuple[float, float] | None:
            low, high = row[oldest], row[newest]
            return None if low is None or high is None else (low / scale, high / scale)

        return cls(pair(*TIMES[:2], 1e3), pair(*TIMES[2:], 1e6))


@dataclass
class SourceClock:
    """The source's clock minus this machine's, as last measured: ``measured`` is (skew, its ±
    bound), in seconds, ``None`` when unknown. ``db.mirror_plan`` measures it over JDBC and sets
    it while the stream runs; a Kafka mirror alone cannot, and leaves it unknown."""

    measured: tuple[float, float] | None = None

    def set(self, skew: float | None, error: float | None) -> None:
        # one assignment: a batch's thread reads the pair whole
        self.measured = None if skew is None or error is None else (float(skew), float(error))


def times_of(found: TopicTimes, clock: SourceClock | None) -> SourceTimes | None:
    """A push's ``SourceTimes``: the commit times of its changes, with their Kafka times and the
    clock's skew; without a commit time (JSON rows), the Kafka times (``kind="topic"``, its clock
    unknown); ``None``: only a snapshot's reads (or nothing timed)."""
    measured = clock.measured if clock is not None else None
    skew, error = measured if measured is not None else (None, None)
    topic_oldest, topic_newest = found.topic if found.topic is not None else (None, None)
    if found.source is not None:
        return SourceTimes("commit", *found.source, topic_oldest, topic_newest, skew, error)
    if found.topic is not None:
        return SourceTimes("topic", *found.topic, *found.topic)
    return None


def over(found: Iterable[TopicTimes]) -> TopicTimes:
    """The times of several topics together (a batch's)."""
    found = list(found)
    sources = [t.source for t in found if t.source is not None]
    # with commit times, the Kafka times are those of the timed changes' topics only
    topics = [t.topic for t in found if t.topic is not None and (t.source is not None or not sources)]

    def span(pairs: list[tuple[float, float]]) -> tuple[float, float] | None:
        return (min(p[0] for p in pairs), max(p[1] for p in pairs)) if pairs else None

    return TopicTimes(span(sources), span(topics))


@dataclass
class LastSequences:
    """Each table's last sequence number, for the batch marks: read from its state when a batch
    pushed to it, and every table's again at most every ``every`` seconds (a table another
    writer published to, or one created since), so that an idle stream of many tables reads no
    state per batch. A table not created yet is left out."""

    every: float = 60.0
    known: dict[str, int] = field(default_factory=dict)
    _read_at: float | None = None

    def after(self, storage: Storage, tables: Iterable[TableRef], pushed: set[str]) -> dict[str, int]:
        """Per table of ``tables`` (by ``str``), its last sequence number; ``pushed``: the tables
        the batch pushed to, read again."""
        now = time.monotonic()
        everything = self._read_at is None or now - self._read_at >= self.every
        if everything:
            self._read_at = now
        out = {}
        for ref in tables:
            name = str(ref)
            if everything or name in pushed:
                state = TableFolder(storage, ref).read_state()
                if state is None:
                    self.known.pop(name, None)
                else:
                    self.known[name] = state.last_sequence_number
            if name in self.known:
                out[name] = self.known[name]
        return out


def record(
    storage: Storage,
    batch: StreamBatch,
    found: Iterable[TopicTimes],
    clock: SourceClock | None,
    tables: Callable[[], dict[str, int]],
) -> None:
    """Record the batch's mark (one write), when it saw a change with a time: every table of
    ``tables()`` is current, through its last sequence number, up to the newest time seen. It
    only measures: a failure is logged, and the batch, committed already, goes on."""
    source = times_of(over(found), clock)
    if source is None:
        return
    try:
        record_batch(storage, BatchMark(batch.query, batch.batch, time.time(), source, tables()))
    except Exception as exc:
        log.warning(
            "The freshness of batch %s of stream %s was not recorded: %s", batch.batch, batch.query, exc
        )
