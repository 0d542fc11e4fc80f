"""What was last pushed to a table (``PushState``), kept in the table folder's ``_openmirror/``.

Living inside the table folder means dropping the folder drops the state with it (design §4).
The state is committed only through the publish journal, so it never disagrees with the
published files. Not to be confused with the local mirror's ``MirroredTableState``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from openmirror_nb._core.errors import LandingZoneError, user_line

# 2: deltas may be a change feed's own files (``feed_deltas``), which version 1 cannot read
STATE_VERSION = 2


@dataclass(frozen=True)
class StreamBatch:
    """One micro-batch of a Structured Streaming query (``db.batch_sink``), as committed.

    Attributes:
        query: The streaming query's id (a checkpoint keeps it across restarts).
        batch: The batch id, which Spark repeats when it replays the batch after a crash.
        at: When the batch was decided (epoch seconds): its files were published right after.
        rows: Change rows the batch published to this table.
    """

    query: str
    batch: int
    at: float = 0.0
    rows: int = 0


@dataclass(frozen=True)
class PushState:
    """The table as of the last committed push.

    Attributes:
        key_columns: The table's keyColumns.
        schema: The pushed columns as Spark's schema JSON (``StructType.json()``).
        last_sequence_number: The last sequence number this tool published.
        pushes: How many pushes were committed.
        base: Key-state folder of the last snapshot push (keys + row hashes), if any.
        deltas: Key-state folders of the pushes since ``base``, oldest first.
        feed_deltas: The ``deltas`` that hold a change feed's own data files rather than state
            rows, each with those files' Spark schema JSON (see ``pipeline.keystate.feed_state``).
        base_rows: Rows in ``base`` (0 without one); ``None`` in states older than the count.
        delta_rows: Rows in ``deltas`` (keys touched, at most); ``None`` as for ``base_rows``.
        buckets: The hash-bucket count ``base`` is laid out in (see ``pipeline.keystate.buckets``);
            ``None`` when it is not, which reads it plainly.
        incarnation: The id of this incarnation of the table, from its initial load to the deletion of
            its folder (``None`` in states written before incarnations existed).
        created: When the initial load was decided (epoch seconds), if known.
        last_push: When the last push was decided (epoch seconds), if known.
        pushes_since_base: Pushes whose key state is a delta on top of ``base``.
        source: The Delta table ``db.sync_delta`` keeps this table in step with, if any.
        source_version: The version of ``source`` the table holds; committed with the push
            that published it, so a crash can neither skip nor repeat a version.
        source_columns: ``source``'s columns at ``source_version``: (name, physical name, NOT
            NULL) each, the physical name being the column mapping's (the name without it), so
            the next sync knows renames, drops and re-adds without the log of this version.
        source_fallback: Why the sync that brought the table to ``source_version`` pushed a
            snapshot diff instead of the change data feed (``None``: it did not).
        load_seconds: How long the initial load took to stage (what a reseed costs again).
        streams: Per streaming query id, the last batch id applied (``db.batch_sink``), committed
            with that batch's files: a replayed batch at or below it publishes nothing.
        stream: The last streamed batch applied to the table (for ``db.status()``).
        watermark_column: The column an ``incremental`` or ``append`` run of a source plan reads
            past, if any.
        watermark: The highest value of ``watermark_column`` the table holds (as text: a number,
            an ISO date, or microseconds since the epoch for a timestamp); committed with the push
            that published the rows, so a crash can neither skip nor repeat them.
        source_position: The newest change of a Debezium stream the table holds per partition of
            its topic, as ``streaming.positions`` writes it (PostgreSQL's ``source.sequence`` pair
            and the rank of the event at it); committed with the batch's files, so the events a
            restarted Kafka Connect sends again, at new offsets, are skipped by it.
    """

    key_columns: tuple[str, ...]
    schema: str
    last_sequence_number: int
    pushes: int = 0
    base: str | None = None
    deltas: tuple[str, ...] = ()
    feed_deltas: tuple[tuple[str, str], ...] = ()
    base_rows: int | None = 0
    delta_rows: int | None = 0
    buckets: int | None = None
    incarnation: str | None = None
    created: float | None = None
    last_push: float | None = None
    source: str | None = None
    source_version: int | None = None
    source_columns: tuple[tuple[str, str, bool], ...] = ()
    source_fallback: str | None = None
    load_seconds: float | None = None
    # Structured Streaming (db.batch_sink): the exactly-once record, see streaming.sink
    streams: tuple[tuple[str, int], ...] = ()
    stream: StreamBatch | None = None

    # run_plan's watermark (issue 27)
    watermark_column: str | None = None
    watermark: str | None = None
    source_position: str | None = None

    def applied(self, query: str) -> int | None:
        """The last batch id of streaming query ``query`` this table holds, if any."""
        return dict(self.streams).get(query)

    @property
    def pushes_since_base(self) -> int:
        return len(self.deltas)

    @property
    def state_rows(self) -> int | None:
        """Keys held by the key state: exact after a new base, at most this after deltas."""
        if self.base_rows is None or self.delta_rows is None:
            return None
        return self.base_rows + self.delta_rows

    @property
    def exact_rows(self) -> int | None:
        """Keys held by the key state when exactly known: right after a new base, before any
        delta (what ``describe`` and ``status`` show as the table's key-state rows)."""
        return self.base_rows if self.delta_rows == 0 else None

    @property
    def key_state(self) -> list[str]:
        """The state folders to merge, oldest first (see ``pipeline.keystate.hashes``)."""
        return ([self.base] if self.base else []) + list(self.deltas)

    def to_bytes(self) -> bytes:
        doc: dict[str, Any] = {"version": STATE_VERSION, **asdict(self)}
        doc["key_columns"] = list(self.key_columns)
        doc["deltas"] = list(self.deltas)
        doc["feed_deltas"] = [list(pair) for pair in self.feed_deltas]
        doc["source_columns"] = [list(column) for column in self.source_columns]
        return (json.dumps(doc, indent=2) + "\n").encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> PushState:
        """Raises ``LandingZoneError`` when the file is not a state this tool wrote."""
        try:
            return cls._from_doc(json.loads(data))
        except (ValueError, KeyError, TypeError) as exc:
            raise LandingZoneError(
                f"The table's push state _openmirror/state.json cannot be read ({user_line(exc)}); drop "
                "the table (db.drop) and push it again to rebuild it."
            ) from None

    @classmethod
    def _from_doc(cls, doc: Any) -> PushState:
        if int(doc.get("version", 1)) > STATE_VERSION:
            raise LandingZoneError(
                f"The table's push state _openmirror/state.json is version {doc['version']}, written by "
                f"a newer openmirror_nb than this one (it reads up to {STATE_VERSION}); upgrade it."
            )
        return cls(
            key_columns=tuple(doc["key_columns"]),
            schema=doc["schema"],
            last_sequence_number=int(doc["last_sequence_number"]),
            pushes=int(doc.get("pushes", 0)),
            base=doc.get("base"),
            deltas=tuple(doc.get("deltas", ())),
            feed_deltas=tuple((str(folder), str(schema)) for folder, schema in doc.get("feed_deltas", ())),
            base_rows=_count(doc.get("base_rows")),
            delta_rows=_count(doc.get("delta_rows")),
            buckets=_count(doc.get("buckets")),
            incarnation=doc.get("incarnation"),
            created=_time(doc.get("created")),
            last_push=_time(doc.get("last_push")),
            source=doc.get("source"),
            source_version=_count(doc.get("source_version")),
            source_columns=tuple((str(n), str(p), bool(nn)) for n, p, nn in doc.get("source_columns", ())),
            source_fallback=doc.get("source_fallback"),
            load_seconds=_time(doc.get("load_seconds")),
            streams=tuple((str(q), int(b)) for q, b in doc.get("streams", ())),
            stream=StreamBatch(**doc["stream"]) if doc.get("stream") else None,
            watermark_column=doc.get("watermark_column"),
            watermark=doc.get("watermark"),
            source_position=doc.get("source_position"),
        )


def next_state(
    prior: PushState | None,
    *,
    key_columns: tuple[str, ...],
    schema: str,
    folder: str | None,
    new_base: bool,
    rows: int,
    incarnation: str,
    now: float,
    buckets: int | None = None,
    source: tuple[str, int] | None = None,
    source_columns: tuple[tuple[str, str, bool], ...] = (),
    source_fallback: str | None = None,
    seconds: float | None = None,
    stream: StreamBatch | None = None,
    watermark: tuple[str, str] | None = None,
    feed_schema: str | None = None,
    position: str | None = None,
) -> PushState:
    """The state after a push that wrote ``rows`` rows of key state to ``folder``: a new base
    (replacing base and deltas, laid out in ``buckets`` if given), or one more delta on top of
    ``prior`` (``feed_schema``: one that holds the change feed's own files, of that schema); with
    no ``folder`` (the push published nothing) the key state stays as it was.
    ``source``: the (Delta table, version) the push brings the table to, with that version's
    ``source_columns`` and the sync's ``source_fallback``; ``seconds``: how long
    the push took to decide (kept for the initial load, what a reseed costs again); ``stream``:
    the streamed micro-batch this push applies; ``watermark``: the (column, value) a source plan's
    run read up to; ``position``: the Debezium source position the push brings the table to."""
    before = prior or PushState(
        key_columns=key_columns, schema=schema, last_sequence_number=0, incarnation=incarnation, created=now
    )
    base: str | None
    deltas: tuple[str, ...]
    base_rows: int | None
    delta_rows: int | None
    feeds = before.feed_deltas
    if folder is None:
        base, deltas, base_rows, delta_rows = before.base, before.deltas, before.base_rows, before.delta_rows
        buckets = before.buckets
    elif new_base:
        base, deltas, base_rows, delta_rows, feeds = folder, (), rows, 0, ()
    else:
        base, deltas, base_rows = before.base, (*before.deltas, folder), before.base_rows
        delta_rows = None if before.delta_rows is None else before.delta_rows + rows
        buckets = before.buckets
        feeds = (*feeds, (folder, feed_schema)) if feed_schema else feeds
    return PushState(
        key_columns=key_columns,
        schema=schema,
        last_sequence_number=before.last_sequence_number,
        pushes=before.pushes + 1,
        base=base,
        deltas=deltas,
        feed_deltas=feeds,
        base_rows=base_rows,
        delta_rows=delta_rows,
        buckets=buckets,
        incarnation=before.incarnation or incarnation,
        created=before.created,
        last_push=now,
        source=source[0] if source else before.source,
        source_version=source[1] if source else before.source_version,
        source_columns=source_columns if source else before.source_columns,
        source_fallback=source_fallback if source else before.source_fallback,
        load_seconds=seconds if prior is None else before.load_seconds,
        streams=_streams(before.streams, stream),
        stream=stream or before.stream,
        watermark_column=watermark[0] if watermark else before.watermark_column,
        watermark=watermark[1] if watermark else before.watermark,
        source_position=position or before.source_position,
    )


def _streams(held: tuple[tuple[str, int], ...], stream: StreamBatch | None) -> tuple[tuple[str, int], ...]:
    if stream is None:
        return held
    return (*((q, b) for q, b in held if q != stream.query), (stream.query, stream.batch))


def _time(value: Any) -> float | None:
    return None if value is None else float(value)


def _count(value: Any) -> int | None:
    return None if value is None else int(value)
