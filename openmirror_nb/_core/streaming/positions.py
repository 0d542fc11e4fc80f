"""Where a Debezium event stands in its source, so that each table applies a change once.

Kafka Connect is at least once: after a crash its connector sends events again, at new Kafka
offsets, which a batch's identity does not recognise. A PostgreSQL event's ``source.sequence`` is
the pair (last commit LSN, the change's LSN); in the order Debezium sends a table's events the pair
rises, except that a primary-key change sends a delete and a create at one pair: the *rank* (0 for
the delete, 1 otherwise) tells them apart. A table keeps, per Kafka partition of its topic, the
highest (pair, rank) it holds (``PushState.source_position``, committed with the batch's files), and
skips the events of that partition at or below it. Per partition: a key's events, and the copies
Connect sends again, share one, and only within one does Kafka keep the order they were sent in
(a producer's retry can make a later event of one partition visible before an earlier one of
another).

Snapshot reads (``source.snapshot`` other than ``false``) all stand at the snapshot's LSN: they are
never skipped by position (a keyed table's are upserts; a keyless one's are the table's first load,
and a second snapshot of a keyless table mirrored already is refused, ``TopicBatch.check``). Events
without a complete pair (see ``position``; MySQL's, whose binlog position is no LSN) have no
position here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from openmirror_nb._core.landing_zone.names import INTERNAL_FOLDER
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import Column

Position = tuple[int, int, int]  # last commit LSN (-1: none sent), change LSN, rank
Positions = dict[int, Position]  # per Kafka partition
POSITIONS_FOLDER, POSITIONS_SUFFIX = f"{INTERNAL_FOLDER}/streams", ".positions.json"
_LSN = "decimal(20,0)"  # an LSN is an unsigned 64-bit number


def encode(position: Position) -> str:
    return ":".join(str(p) for p in position)


def decode(text: str | None) -> Position | None:
    if not text:
        return None
    first, second, rank = (int(p) for p in text.split(":"))
    return first, second, rank


def encode_all(found: Positions) -> str:
    """``found`` as ``PushState.source_position`` holds it: ``partition=commit:change:rank;...``."""
    return ";".join(f"{p}={encode(found[p])}" for p in sorted(found))


def decode_all(text: str | None) -> Positions:
    found: Positions = {}
    for part in (text or "").split(";"):
        if part:
            partition, _, at = part.partition("=")
            position = decode(at)
            if position is not None:
                found[int(partition)] = position
    return found


def merged(*found: Mapping[int, Position]) -> Positions:
    """The highest position of each partition over ``found``."""
    out: Positions = {}
    for one in found:
        for partition, at in one.items():
            out[partition] = max(at, out.get(partition, at))
    return out


def position(sequence: Column, snapshot: Column, op: Column) -> Column:
    """An event's position as a struct (``commit``, ``change``, ``rank``), from ``source``'s
    ``sequence`` (JSON text of two LSNs as text) and ``snapshot`` (as text), and its ``op``; NULL
    where the pair is incomplete: a snapshot read, the first transaction Debezium streams after a
    snapshot (no commit before it: its changes' own LSNs may lie below commits already applied),
    and connectors too old to write the pair (a change's LSN alone does not rise in commit order).
    Such events are never skipped by position, and do not move it."""
    from pyspark.sql import functions as F

    pair = F.from_json(sequence, "array<string>")
    commit, change = pair[0].cast(_LSN), pair[1].cast(_LSN)
    streamed = snapshot.isNull() | (F.lower(snapshot) == "false")
    return F.when(
        streamed & commit.isNotNull() & change.isNotNull(),
        F.struct(
            commit.alias("commit"), change.alias("change"), F.when(op == "d", 0).otherwise(1).alias("rank")
        ),
    )


def unseen(at: Column, partition: Column, applied: Positions) -> Column:
    """Whether position ``at`` of an event in ``partition`` is past what ``applied`` holds for
    that partition (an event without a position, or of a partition not held, is)."""
    from pyspark.sql import functions as F

    kept = F.lit(True)
    for number, held in applied.items():
        kept = F.when(partition == number, past(at, held)).otherwise(kept)
    return kept


def past(at: Column, applied: Position) -> Column:
    """Whether position ``at`` (a ``position`` struct) is past ``applied``, or has none."""
    from pyspark.sql import functions as F

    c, n = (F.lit(v).cast(_LSN) for v in applied[:2])
    r = F.lit(applied[2])
    later = (
        (at["commit"] > c)
        | ((at["commit"] == c) & (at["change"] > n))
        | ((at["commit"] == c) & (at["change"] == n) & (at["rank"] > r))
    )
    return at.isNull() | later


def of_row(value: object) -> Position | None:
    """A ``position`` struct collected by Spark, as a ``Position``."""
    if value is None:
        return None
    return int(value["commit"]), int(value["change"]), int(value["rank"])  # type: ignore[index]


def read_positions(storage: Storage, query: str) -> dict[str, Position]:
    """Per topic, the highest position query ``query`` applied (every table of its batch holds it)."""
    try:
        doc = json.loads(storage.read_bytes(f"{POSITIONS_FOLDER}/{query}{POSITIONS_SUFFIX}"))
    except FileNotFoundError:
        return {}
    return {t: p for t, p in ((t, decode(v)) for t, v in doc.items()) if p is not None}


def save_positions(storage: Storage, query: str, found: dict[str, Position]) -> None:
    """Raise the recorded position of each topic in ``found`` (after a batch applied it)."""
    if not found:
        return
    held = read_positions(storage, query)
    merged = {t: max(p, held[t]) if t in held else p for t, p in found.items()}
    doc = {t: encode(p) for t, p in sorted({**held, **merged}.items())}
    path = f"{POSITIONS_FOLDER}/{query}{POSITIONS_SUFFIX}"
    storage.write_bytes(path, (json.dumps(doc, indent=2) + "\n").encode("utf-8"), overwrite=True)
