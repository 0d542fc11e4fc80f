"""What a ``db.mirror_plan`` stream measures of its PostgreSQL source while it runs, on one JDBC
connection each time (``sources.pg_clock.measure_source``): the WAL its replication slot retains
(saved for ``db.status()``: ``landing_zone.slot_wal``), and the server's clock against this
machine's, which the stream's batches put in their pushes' source times (``SourceClock``).

Measured once before the stream starts (its first batches need the clock), after a batch at most
every ``SLOT_EVERY`` seconds, and when the stream ends. Both are advice: a failed measure is
logged, leaves the slot's last figure, makes the skew unknown, and never stops the stream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.streaming.source_times import SourceClock
from openmirror_nb._core.streaming.stream import MirrorStream

if TYPE_CHECKING:
    from openmirror_nb._core.sources.pg_cdc import Cdc
    from openmirror_nb._core.sources.pg_clock import ClockSkew

log = logging.getLogger("openmirror_nb")
SLOT_EVERY = 60.0  # seconds between two measures of the source while a stream runs


@dataclass
class SourceWatch:
    """Measures the source (``measure``: the slot's retained WAL and the clock's skew) and keeps
    the skew in ``clock``, which the stream reads."""

    measure: Callable[[], tuple[int | None, ClockSkew | None]]
    slot: str
    clock: SourceClock = field(default_factory=SourceClock)

    def take(self) -> int | None:
        """Measure now; the clock is set (unknown if its measure failed), and the WAL the slot
        retains returned (``None``: no slot, no position yet, or the measure failed)."""
        try:
            retained, skew = self.measure()
        except Exception as exc:  # the figures are advice: a stream never stops for them
            self.clock.set(None, None)
            log.warning("Could not measure the WAL replication slot %s retains: %s", self.slot, exc)
            return None
        self.clock.set(skew.skew if skew else None, skew.error if skew else None)
        return retained


def watch_slot(
    storage: Storage, stream: MirrorStream, spark: Any, *, watch: SourceWatch, cdc: Cdc, retained: int | None
) -> None:
    """Save ``retained`` (measured as the stream started), then measure and save again after a
    batch at most every ``SLOT_EVERY`` seconds, and when the stream ends (``db.status()`` shows
    the last)."""
    from pyspark.sql.streaming.listener import StreamingQueryListener

    from openmirror_nb._core.landing_zone.slot_wal import save_slot_wal

    query = str(stream.query.id)
    last = [0.0]

    def save(found: int | None) -> None:
        try:
            if found is not None:
                save_slot_wal(
                    storage, query=query, slot=cdc.slot, retained=found, threshold=cdc.slot_wal_warning_bytes
                )
        except Exception as exc:
            log.warning("Could not save the WAL replication slot %s retains: %s", cdc.slot, exc)
        last[0] = time.monotonic()

    class SlotListener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            if str(event.progress.id) == query and time.monotonic() - last[0] >= SLOT_EVERY:
                save(watch.take())

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    listener = SlotListener()
    spark.streams.addListener(listener)
    save(retained)
    before = stream.on_end

    def ended() -> None:
        spark.streams.removeListener(listener)
        save(watch.take())
        if before is not None:
            before()

    stream.on_end = ended
