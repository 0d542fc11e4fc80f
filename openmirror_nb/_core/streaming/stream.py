"""``db.mirror_stream``: start a streaming query whose sink is a ``BatchSink``, and the handle on it
(``MirrorStream``) that re-raises the sink's own error rather than Spark's wrapper of it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError
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

    def __repr__(self) -> str:
        state = "active" if self.query.isActive else "stopped"
        return f"MirrorStream(query {self.query.id}, {state})"

    @property
    def error(self) -> Exception | None:
        """The ``OpenMirrorError`` that stopped the stream (or Spark's error, if the sink did not fail)."""
        if self.sink.error is not None:
            return self.sink.error
        return self.query.exception() if not self.query.isActive else None

    def stop(self) -> None:
        """Stop the query; a batch being applied finishes first (Spark waits for it)."""
        self.query.stop()

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait until the query ends (``available_now``/``once``: once the data is in), or
        ``timeout`` seconds. Returns whether it ended.

        Raises:
            OpenMirrorError: the sink's error that stopped the query (a bad row, a table dropped
                under it), re-raised as itself; Spark's ``StreamingQueryException`` for others.
        """
        from pyspark.errors import StreamingQueryException

        try:
            if timeout is None:
                self.query.awaitTermination()
                return True
            return bool(self.query.awaitTermination(timeout))  # type: ignore[arg-type]  # typed int, takes float
        except StreamingQueryException:
            if self.sink.error is not None:
                raise self.sink.error from None
            raise


def start_stream(
    df: DataFrame,
    sink: BatchSink,
    *,
    checkpoint: str | os.PathLike[str] | None,
    trigger: str,
    name: str | None,
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
    return MirrorStream(writer.start(), sink)
