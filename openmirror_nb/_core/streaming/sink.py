"""``db.batch_sink``: a ``foreachBatch`` function that applies each micro-batch exactly once.

Spark's ``foreachBatch`` is at-least-once: after a crash between the sink returning and Spark's
commit log, the batch is replayed with the same batch id. So each batch's identity (the query id,
which the checkpoint keeps across restarts, and the batch id) is committed in the table's push
state in the same journaled commit as the batch's files (``PushRequest.stream``). Under the table
lock, once whatever a dead writer left is rolled forward, a batch at or below the last one the
table holds for that query is skipped, and said so in the log: a replay publishes nothing.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError, OpenMirrorError
from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.publish import crash_point
from openmirror_nb._core.landing_zone.push_state import StreamBatch
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import PushResult
from openmirror_nb._core.pipeline.push.checks_before import Checked
from openmirror_nb._core.pipeline.push.request import PushRequest
from openmirror_nb._core.pipeline.push.run import run_push
from openmirror_nb._core.progress import ProgressCallback, always
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.streaming.query_record import QueryRecord
from openmirror_nb._core.streaming.route import Router

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("openmirror_nb")
QUERY_ID = "sql.streaming.queryId"  # the local property Spark sets on a query's batch thread


def batch_of(df: DataFrame, batch_id: int) -> StreamBatch:
    """The identity of the micro-batch ``df``: its query's id and ``batch_id``."""
    query = df.sparkSession.sparkContext.getLocalProperty(QUERY_ID)
    if not query:
        raise ConfigError(
            "A batch sink applies micro-batches of a streaming query and this call has none: pass it "
            "to df.writeStream.foreachBatch(sink), or use db.push for a DataFrame that is not a stream."
        )
    return StreamBatch(query=query, batch=int(batch_id))


@dataclass
class BatchSink:
    """The ``foreachBatch`` function ``db.batch_sink`` returns: call it with (batch, batch id).

    Attributes:
        error: The ``OpenMirrorError`` that stopped the last batch, if any (``mirror_stream``
            re-raises it; through ``foreachBatch`` it reaches Spark as a ``StreamingQueryException``).
        applied: Per table, the result of the last batch it published (an empty result when the
            batch was empty or the table held it already).
    """

    storage: Storage
    request: PushRequest | None  # one table; None when routed
    router: Router | None = None  # routed: how a batch splits into tables
    progress: ProgressCallback | None = None
    error: OpenMirrorError | None = None
    applied: dict[str, PushResult] = field(default_factory=dict)
    _records: dict[str, QueryRecord] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        """Apply micro-batch ``batch_id`` of ``df``'s query (see the module docstring)."""
        batch = batch_of(df, batch_id)
        with self._lock:
            record = self._records.get(batch.query) or QueryRecord.read(self.storage, batch.query)
            self._records[batch.query] = record
            try:
                if self.request is not None:
                    self._apply(df, self.request, batch, record, self.progress)
                elif self.router is not None:
                    # each table's push on a thread of its own runs its Spark jobs in a group of its own
                    progress = always(self.progress) if self.router.parallel > 1 else self.progress
                    self.router.apply(
                        df,
                        batch,
                        lambda part, request, checked: self._apply(
                            part, request, batch, record, progress, checked
                        ),
                    )
            except OpenMirrorError as exc:
                self.error = exc
                raise
            self.error = None

    def _apply(
        self,
        df: DataFrame,
        request: PushRequest,
        batch: StreamBatch,
        record: QueryRecord,
        progress: ProgressCallback | None,
        checked: Checked | None = None,
    ) -> None:
        self.applied[str(request.table)] = apply_batch(
            self.storage, df, request, batch, record, progress=progress, checked=checked
        )


def apply_batch(
    storage: Storage,
    df: DataFrame,
    request: PushRequest,
    batch: StreamBatch,
    record: QueryRecord,
    *,
    progress: ProgressCallback | None,
    checked: Checked | None = None,
) -> PushResult:
    """Apply one batch to one table under its lock, unless the table holds it already
    (``checked``: what a routed batch's checks found for ``df``, see ``run_push``)."""
    home = TableFolder(storage, request.table)
    table = str(request.table)
    with home.lock(timeout=request.lock_timeout):
        settled = settle(home)  # a batch a dead writer journaled is in the table now
        state = settled.state
        record.check(home, state, batch)
        held = state.applied(batch.query) if state else None
        if held is not None and held >= batch.batch:
            log.info(
                "Batch %s of streaming query %s is already in table %s (it holds batches up to %s): "
                "Spark replayed it after a restart; nothing published.",
                batch.batch,
                batch.query,
                table,
                held,
            )
            record.note(home)
            return _nothing(request)
        if state is None and df.isEmpty():  # an empty batch creates no table
            return _nothing(request)
        crash_point("before_push")
        result = run_push(
            storage,
            df,
            replace(request, stream=batch),
            progress,
            lock_held=True,
            settled=settled,
            checked=checked,
        )
        record.note(home)
    return result


def _nothing(request: PushRequest) -> PushResult:
    return PushResult(
        table=str(request.table), mode=request.mode, sequence_numbers=(), rows={}, bytes=0, seconds=0.0
    )
