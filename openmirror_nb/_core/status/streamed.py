"""What ``db.status()`` says of a table a stream feeds (``db.batch_sink``): its last micro-batch,
and for a Kafka mirror (``db.mirror_kafka``) how far it is behind each topic partition and the
events it keeps for a table a schema change stopped."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.landing_zone.held_events import read_held
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.stream_lags import PartitionLag, read_lags
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.status.records import HEALTH_ORDER, NOT_LISTED, Health, TableStatus

if TYPE_CHECKING:
    from openmirror_nb._core.storage.base import Storage


def stream_fields(state: PushState | None, now: datetime) -> dict[str, Any]:
    """The status fields of a streamed table: its last micro-batch (none for other tables)."""
    batch = state.stream if state else None
    if batch is None:
        return {}
    return {
        "stream_query": batch.query,
        "stream_batch": batch.batch,
        "stream_batch_time": _when(batch.at),
        "stream_batch_rows": batch.rows,
        "stream_seconds": max(0.0, now.timestamp() - batch.at),
    }


def _when(epoch: float) -> datetime | None:
    return datetime.fromtimestamp(epoch, UTC) if epoch else None


def with_stream_lags(statuses: list[TableStatus], landing_zone: Storage) -> list[TableStatus]:
    """``statuses`` with the Kafka lag saved for each table: per topic partition, the newest
    saved (a table a new checkpoint reads again has older records too)."""
    lags = {table.casefold(): found for table, found in read_lags(landing_zone).items()}
    out = []
    for status in statuses:
        newest: dict[tuple[str, int], tuple[float, PartitionLag]] = {}
        for saved, lag in lags.get(status.table.casefold(), []):
            at = (lag.topic, lag.partition)
            if at not in newest or newest[at][0] < saved:
                newest[at] = (saved, lag)
        parts = tuple(lag for _, lag in sorted(newest.values(), key=lambda s: (s[1].topic, s[1].partition)))
        out.append(replace(status, stream_lag=parts) if parts else status)
    return out


def with_held(statuses: list[TableStatus], landing_zone: Storage, *, table: str | None) -> list[TableStatus]:
    """``statuses`` with the events Kafka mirrors keep for tables a schema change stopped: each
    such table is blocked, says why and counts them (one missing from the listing, dropped by
    its reseed, gets a row of its own); only ``table``'s, if given."""
    out = list(statuses)
    for held in read_held(landing_zone):
        if table is not None and held.table.casefold() != table.casefold():
            continue
        state = TableFolder(landing_zone, TableRef.parse(held.table)).read_state()
        kept = (
            f"{held.events:,} event(s) of topic {held.topic} kept since batch {held.since_batch} "
            f"of stream {held.query}"
        )
        floor: Health = "blocked"
        note = f"stopped by a schema change, {kept}, applied once the table is reseeded: {held.reason}"
        if state is not None and state.incarnation != held.incarnation:
            floor, note = "warning", f"reseeded: the stream's next batch applies the {kept}."
        at = next((i for i, s in enumerate(out) if s.table.casefold() == held.table.casefold()), None)
        if at is None:
            out.append(TableStatus(held.table, "", floor, NOT_LISTED, notes=(note,), held_events=held.events))
            continue
        found = out[at]
        worst = min(found.health, floor, key=HEALTH_ORDER.index)
        out[at] = replace(
            found, health=worst, notes=(note, *found.notes), held_events=found.held_events + held.events
        )
    return out
