"""``db.mirror_stream``: start a streaming query whose sink is a ``BatchSink``, and the handle on it
(``MirrorStream``) that re-raises the sink's own error rather than Spark's wrapper of it."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError, OpenMirrorError
from openmirror_nb._core.streaming.sink import BatchSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

_INTERVAL = re.compile(
    r"^\s*\d+(\.\d+)?\s*(ms|millis|milliseconds?|s|sec|seconds?|min|minutes?|h|hours?)\s*$", re.IGNORECASE
)


def trigger_of(trigger: str) -> dict[str, Any]:
    """``DataStreamWriter.trigger``'s keyword for ``"available_now"``, ``"once"`` or an interval."""
    if trigger == "available_now":
        return {"availableNow": True}
    if trigger == "once":
        return {"once": True}
    if isinstance(trigger, str) and _INTERVAL.match(trigger):
        return {"processingTime": trigger.strip()}
    raise ConfigError(
        f"trigger {trigger!r} is not one of 'available_now', 'once' or an interval such as '10 seconds'."
    )


@dataclass
class MirrorStream:
    """A running mirror of a stream (``db.mirror_stream``).

    Attributes:
        query: Spark's ``StreamingQuery`` (its id, status, recent progress).
        sink: The ``BatchSink`` applying its micro-batches.
    """

    query: StreamingQuery
    sink: BatchSink
    # Says in one line what stopped the query when the sink did not (a Kafka source's data loss)
    explain: Callable[[BaseException], OpenMirrorError | None] | None = None
    # Runs once the query has ended (a Kafka mirror saves its last lag and drops its listener)
    on_end: Callable[[], None] | None = None

    def __repr__(self) -> str:
        state = "active" if self.query.isActive else "stopped"
        return f"MirrorStream(query {self.query.id}, {state})"

    @property
    def error(self) -> Exception | None:
        """The ``OpenMirrorError`` that stopped the stream (or Spark's error, if the sink did not fail)."""
        if self.sink.error is not None:
            return self.sink.error
        failed = self.query.exception() if not self.query.isActive else None
        said = self.explain(failed) if failed is not None and self.explain is not None else None
        return said or failed

    def stop(self) -> None:
        """Stop the query. Spark interrupts a batch it is applying: what that batch published is
        finished by the next push or start (its journal), and the next start applies the batch again,
        each table skipping it if it holds it already."""
        self.query.stop()
        self._ended()

    def _ended(self) -> None:
        if self.on_end is not None and not self.query.isActive:
            done, self.on_end = self.on_end, None
            done()

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait until the query ends (``available_now``/``once``: once the data is in), or
        ``timeout`` seconds. Returns whether it ended.

        Raises:
            OpenMirrorError: the sink's error that stopped the query (a bad row, a table dropped
                under it), re-raised as itself, or the source's said in one line (a Kafka
                source's offsets gone); Spark's ``StreamingQueryException`` for others.
        """
        from pyspark.errors import StreamingQueryException

        try:
            if timeout is None:
                self.query.awaitTermination()
            elif not self.query.awaitTermination(timeout):  # type: ignore[arg-type]  # typed int, takes float
                return False
            self._ended()
            return True
        except StreamingQueryException as exc:
            self._ended()
            if self.sink.error is not None:
                raise self.sink.error from None
            said = self.explain(exc) if self.explain is not None else None
            if said is not None:
                raise said from None
            raise


def start_stream(
    df: DataFrame,
    sink: BatchSink,
    *,
    checkpoint: str | os.PathLike[str] | None,
    trigger: str,
    name: str | None,
    explain: Callable[[BaseException], OpenMirrorError | None] | None = None,
) -> MirrorStream:
    """Start ``df``'s query with ``sink`` (see ``MirroredDatabase.mirror_stream``)."""
    if not getattr(df, "isStreaming", False):
        raise ConfigError(
            "mirror_stream takes a streaming DataFrame (spark.readStream...); push a static one with db.push."
        )
    if not checkpoint:
        raise ConfigError(
            "mirror_stream needs checkpoint='<folder>': without one every restart is a new query that "
            "replays its whole source."
        )
    writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", os.fspath(checkpoint))
    writer = writer.trigger(**trigger_of(trigger))
    if name:
        writer = writer.queryName(name)
    return MirrorStream(writer.start(), sink, explain)
