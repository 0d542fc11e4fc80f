"""What ``db.status()`` says of a table a stream feeds (``db.batch_sink``): its last micro-batch."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from openmirror_nb._core.landing_zone.push_state import PushState


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
