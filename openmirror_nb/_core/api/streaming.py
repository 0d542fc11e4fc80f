"""Streaming into the landing zone: ``batch_sink`` (a ``foreachBatch`` function) and
``mirror_stream`` (the query, started)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from openmirror_nb._core.api.base import DatabaseBase
from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.feed_options import FeedOptions, feed_of
from openmirror_nb._core.model import (
    DEFAULT_ROWS_PER_FILE,
    Compression,
    Convention,
    PushMode,
    TableOptions,
)
from openmirror_nb._core.progress import Progress, check_parallel

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.streaming.sink import BatchSink
    from openmirror_nb._core.streaming.stream import MirrorStream

Keys = Sequence[str] | Mapping[str, Sequence[str]] | None


class Streaming(DatabaseBase):
    """The handle's streams (see ``MirroredDatabase``)."""

    def batch_sink(
        self,
        *,
        table: str | None = None,
        route: str | None = None,
        keys: Keys = None,
        mode: PushMode = "changes",
        feed: FeedOptions | None = None,
        columns: Mapping[str, Sequence[str]] | None = None,
        table_options: TableOptions | None = None,
        compression: Compression | None = None,
        rows_per_file: int = DEFAULT_ROWS_PER_FILE,
        progress: Progress = False,
        parallel: int = 4,
        op_column: str | None = None,
        convention: Convention | None = None,
        order_by: Sequence[str] | None = None,
        update_marker: Literal[1, 4] | None = None,
        compact: bool | None = None,
        strict_delete: bool | None = None,
    ) -> BatchSink:
        """A ``foreachBatch`` function that publishes each micro-batch of a change feed, exactly once.

        Each batch's identity (the query's id, kept by its checkpoint, and the batch id) is
        committed in the table's state with the batch's files; a batch Spark replays after a
        crash (same query, batch id at or below the last applied) publishes nothing and is logged.
        Empty batches publish nothing. A bad row (NULL key, invalid operation, a type the contract
        cannot hold, an unknown route value) raises before anything of its batch is published, so
        the query stops and Spark's checkpoint does not advance. A table dropped or reseeded under
        the query stops it too: it is not the table the query started on.

        Args:
            table: The one table every row goes to (``"name"`` or ``"schema.name"``); or
            route: The column naming each row's table (it is not published); then ``keys`` is a
                dict of keys per table (a table that exists already may be left out).
            keys: Key columns (a list), or per table with ``route``.
            mode: ``"changes"``: a stream is a change feed (``"snapshot"`` is refused).
            feed, table_options, compression, rows_per_file: As for ``push``, shared by every
                table of a routed sink (``feed.order_by``'s columns are used, not published, unless
                ``columns`` lists them).
            columns: With ``route``: per table, the columns to publish (default: every column of
                the batch except the route, operation and ordering columns).
            progress: Off by default: a batch runs on Spark's stream thread, not in the cell.
            parallel: With ``route``: tables of a batch applied at a time, each on a thread of its
                own (its Spark jobs in a job group of their own); every table's push ends before
                the batch's first error is raised, so each table holds the batch once or not at
                all and Spark's replay applies it where it is missing. 1: one after the other.
            op_column, convention, order_by, update_marker, compact, strict_delete: ``feed``'s
                options as keywords of their own, as for ``push``; not together with ``feed``.

        Returns:
            BatchSink: pass it to ``df.writeStream.foreachBatch``.

        Raises:
            ConfigError: ``mode="snapshot"``, both or neither of ``table`` and ``route``, keys not
                shaped for them, ``parallel`` not a whole number of at least 1, ``feed`` together
                with its keyword forms.

        Example:
            >>> feed = om.FeedOptions(convention="debezium")
            >>> sink = db.batch_sink(table="sales.orders", keys=["id"], feed=feed)
            >>> stream_df.writeStream.foreachBatch(sink).option("checkpointLocation", ckpt).start()
        """
        from openmirror_nb._core.pipeline.push.request import PushRequest
        from openmirror_nb._core.progress import resolve
        from openmirror_nb._core.streaming.route import Router
        from openmirror_nb._core.streaming.sink import BatchSink

        _check_target(mode=mode, table=table, route=route, keys=keys, columns=columns)
        check_parallel(parallel)
        fields: dict[str, Any] = dict(
            mode=mode,
            feed=feed_of(
                feed,
                op_column=op_column,
                convention=convention,
                order_by=order_by,
                update_marker=update_marker,
                compact=compact,
                strict_delete=strict_delete,
            ),
            table_options=table_options,
            compression=compression,
            rows_per_file=rows_per_file,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
        )
        if route is None:
            assert table is not None and not isinstance(keys, Mapping)
            request = PushRequest.create(table=table, keys=keys, **fields)
            return BatchSink(self.storage, request, progress=resolve(progress))
        assert isinstance(keys, Mapping)
        base = PushRequest.create(table=next(iter(keys), "routed"), keys=None, **fields)
        router = Router.create(
            self.storage, column=route, base=base, keys=keys, columns=columns, parallel=parallel
        )
        return BatchSink(self.storage, None, router, progress=resolve(progress))

    def mirror_stream(
        self,
        df: DataFrame,
        *,
        checkpoint: str | os.PathLike[str] | None = None,
        trigger: str = "available_now",
        query_name: str | None = None,
        table: str | None = None,
        route: str | None = None,
        keys: Keys = None,
        mode: PushMode = "changes",
        feed: FeedOptions | None = None,
        columns: Mapping[str, Sequence[str]] | None = None,
        table_options: TableOptions | None = None,
        compression: Compression | None = None,
        rows_per_file: int = DEFAULT_ROWS_PER_FILE,
        progress: Progress = False,
        parallel: int = 4,
        op_column: str | None = None,
        convention: Convention | None = None,
        order_by: Sequence[str] | None = None,
        update_marker: Literal[1, 4] | None = None,
        compact: bool | None = None,
        strict_delete: bool | None = None,
    ) -> MirrorStream:
        """Start mirroring a streaming DataFrame: ``batch_sink``'s sink under a query of its own.

        Args:
            df: A streaming DataFrame (``spark.readStream...``).
            checkpoint: The query's checkpoint folder; required: it keeps the query's id and
                offsets across restarts (without one each restart would replay the whole source).
            trigger: ``"available_now"`` (take what has arrived, then end: a scheduled job),
                ``"once"`` (the same in one batch), or an interval such as ``"10 seconds"``.
            query_name: A name for the query (Spark's ``queryName``).
            table, route, keys, mode, feed, columns, table_options, compression, rows_per_file,
                progress, parallel: As for ``batch_sink``.
            op_column, convention, order_by, update_marker, compact, strict_delete: ``feed``'s
                options as keywords of their own, as for ``push``; not together with ``feed``.

        Returns:
            MirrorStream: ``.query``, ``.stop()``, ``.await_termination(timeout=None)``, which
            re-raises the sink's ``OpenMirrorError`` itself.

        Example:
            >>> ms = db.mirror_stream(stream_df, table="sales.orders", keys=["id"],
            ...                       feed=om.FeedOptions(op_column="op", order_by=["lsn"]),
            ...                       checkpoint="Files/checkpoints/orders", trigger="10 seconds")
        """
        from openmirror_nb._core.streaming.stream import start_stream, trigger_of

        trigger_of(trigger)  # a bad trigger is refused before anything starts
        made = self.batch_sink(
            table=table,
            route=route,
            keys=keys,
            mode=mode,
            feed=feed,
            columns=columns,
            table_options=table_options,
            compression=compression,
            rows_per_file=rows_per_file,
            progress=progress,
            parallel=parallel,
            op_column=op_column,
            convention=convention,
            order_by=order_by,
            update_marker=update_marker,
            compact=compact,
            strict_delete=strict_delete,
        )
        return start_stream(df, made, checkpoint=checkpoint, trigger=trigger, name=query_name)


def _check_target(*, mode: str, table: str | None, route: str | None, keys: Keys, columns: Any) -> None:
    if mode == "snapshot":
        raise ConfigError(
            "mode='snapshot' cannot stream: each micro-batch would be taken as the whole table and every "
            "row it does not hold deleted; use mode='changes' with an op_column, or db.push for snapshots."
        )
    if (table is None) == (route is None):
        raise ConfigError(
            "Give a batch sink either table='schema.name' or route='<column naming the table>'."
        )
    if route is None and (isinstance(keys, Mapping) or columns is not None):
        raise ConfigError(
            "keys per table and columns= are for a routed sink (route=); with table= give keys=['id']."
        )
    if route is not None and not isinstance(keys, Mapping):
        raise ConfigError(
            f"A routed sink takes keys per table, e.g. keys={{'inv.orders': ['order_id']}}; got {keys!r}."
        )
