"""What ``db.status()`` says of a table a stream feeds (``db.batch_sink``): its last micro-batch,
and for a Kafka mirror (``db.mirror_kafka``) how far it is behind each topic partition."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.stream_lags import PartitionLag, read_lags

if TYPE_CHECKING:
    from openmirror_nb._core.status.records import TableStatus
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
