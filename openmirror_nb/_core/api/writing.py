"""Writing to the landing zone: ``push``, ``sync_delta``, ``recover`` and ``drop``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from openmirror_nb._core.api.base import DatabaseBase
from openmirror_nb._core.feed_options import FeedOptions, feed_of
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import (
    DEFAULT_ROWS_PER_FILE,
    Compression,
    Convention,
    DeltaReaderChoice,
    DropResult,
    PushMode,
    PushResult,
    Recovery,
    SyncResult,
    TableOptions,
)
from openmirror_nb._core.progress import Progress

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame


class Writing(DatabaseBase):
    """The handle's writes (see ``MirroredDatabase``)."""

    def push(
        self,
        df: DataFrame | pd.DataFrame | Any,
        *,
        table: str,
        keys: Sequence[str] | None = None,
        mode: PushMode = "snapshot",
        feed: FeedOptions | None = None,
        table_options: TableOptions | None = None,
        compression: Compression | None = None,
        rows_per_file: int = DEFAULT_ROWS_PER_FILE,
        progress: Progress = None,
        op_column: str | None = None,
        convention: Convention | None = None,
        order_by: Sequence[str] | None = None,
        update_marker: Literal[1, 4] | None = None,
        compact: bool | None = None,
        strict_delete: bool | None = None,
    ) -> PushResult:
        """Publish a DataFrame (Spark, pandas, or a pyarrow Table) to a table of the landing zone.

        The first push of a table is its initial load: ``_metadata.json`` first, then marker-free
        files numbered from 1. A later snapshot publishes only what changed since the last push
        (inserts 0, updates ``feed.update_marker``, deletes 2). ``mode="changes"`` publishes a change
        feed with ``__rowMarker__``, read as ``feed`` says. A rejected push leaves the landing zone
        untouched.

        Args:
            df: The rows to publish: a Spark DataFrame (never collected to the driver), or a
                pandas DataFrame / pyarrow Table, converted through the Spark session with its types.
            table: ``"name"`` or ``"schema.name"`` (folder ``schema.schema/name``).
            keys: Key columns; required on the first push, fixed afterwards.
            mode: ``"snapshot"`` (the full table) or ``"changes"`` (a change feed).
            feed: The change feed's options (``FeedOptions``: operation column, convention,
                ordering, update marker, compaction, strict deletes); default ``FeedOptions()``.
                A snapshot reads its ``update_marker`` only.
            table_options: File format, detection strategy, upsert default; fixed at first push.
            compression: Parquet compression: none, snappy (default), gzip or zstd.
            rows_per_file: Target rows per published file (Fabric lags on very large files).
                Change feeds keep each Spark task's rows in one file so a key's changes stay together.
            progress: Called with each ``openmirror_nb._core.progress`` event (validating, staging with
                Spark's stage and task counts, waiting for the lock, publishing file i of n,
                committing, finished / failed / cancelled). Default: a progress bar in a notebook,
                text lines in a terminal IPython, nothing in scripts; ``False``: nothing.
            op_column, convention, order_by, update_marker, compact, strict_delete: ``feed``'s
                options as keywords of their own (``op_column="op"`` is
                ``feed=FeedOptions(op_column="op")``); not together with ``feed``.

        Returns:
            PushResult: sequence numbers, rows per marker, bytes and seconds.

        Raises:
            KeyColumnsError: keys missing, NULL, duplicated, or different from the table's.
            InvalidNameError: a reserved or invalid table, schema or column name.
            ChangeFeedError: operation values outside the convention.
            ConfigError: an argument no push takes, or ``feed`` together with its keyword forms.
            SchemaChangeError: a column changed type since the last push.
            PushCancelledError: interrupted (KeyboardInterrupt, the notebook's stop button):
                before the push was decided nothing is published; after, it finished first.

        Example:
            >>> db = om.connect()
            >>> db.push(df, table="sales.orders", keys=["order_id"])
            >>> db.push(cdc, table="sales.orders", mode="changes", feed=om.FeedOptions(op_column="op"))
        """
        from openmirror_nb._core.pipeline.inputs.frame_input import as_spark_frame
        from openmirror_nb._core.pipeline.push.request import PushRequest
        from openmirror_nb._core.pipeline.push.run import run_push
        from openmirror_nb._core.progress import resolve

        request = PushRequest.create(
            table=table,
            keys=keys,
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
        df = as_spark_frame(df)  # a pandas or Arrow frame becomes a Spark one; others are refused here
        return run_push(self.storage, df, request, resolve(progress))

    def sync_delta(
        self,
        source: str,
        *,
        table: str,
        keys: Sequence[str] | None = None,
        compact: bool = False,
        reader: DeltaReaderChoice = "auto",
    ) -> SyncResult:
        """Keep ``table`` in step with the Delta table at ``source`` (a path or URI).

        The first call publishes the source's current version as a snapshot; each later call
        publishes its change data feed since the version the table holds (``compact``: only each
        key's net change), committing the new version with the files, so a crash neither skips
        nor repeats a version. Without a feed over that range (not enabled, vacuumed) it pushes
        a snapshot diff instead and ``SyncResult.fallback`` (the log, and the table's notes in
        ``db.status()``) says why. ``reader``: ``"auto"`` reads with Spark's own Delta reader where
        the session has Delta (Fabric), else with ``"deltalake"``: the log through ``deltalake``,
        the files on Spark (deletion vectors, column mapping, partitions, checkpoints), never into
        the driver; ``SyncResult.reader`` says which ran.

        Raises:
            SchemaChangeError: the source changed in a way the mirror cannot absorb (a rename, a
                type change, a key column gone); the message gives the reseed to run. Nothing is
                published.
            NotSupportedError: the source uses a reader feature ``deltalake`` cannot read.
            SourceError: the feed is there but could not be read (a corrupt file, a refused
                request); nothing is published.

        Example:
            >>> db.sync_delta("Tables/orders", table="sales.orders", keys=["order_id"])
        """
        from openmirror_nb._core.pipeline.delta.source import DeltaSource
        from openmirror_nb._core.pipeline.delta.sync import sync_delta
        from openmirror_nb._core.pipeline.push.request import PushRequest
        from openmirror_nb._core.runtime import get_spark

        request = PushRequest.snapshot(
            table=table,
            keys=keys,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
            feed=FeedOptions(compact=compact),
        )
        return sync_delta(self.storage, DeltaSource.open(source, get_spark(), reader), request)

    def recover(self, table: str) -> Recovery:
        """Finish an interrupted push of ``table`` and remove what no push will finish.

        A push decided before it died is rolled forward only into the incarnation of the table it was
        decided in; staging and key state of dead pushes or of a dropped table are removed and
        listed in ``removed``. Every push does this first, so calling it is never required.
        A reseed whose reload is in is finished too (wait for the mirror, verify); one that still
        needs its data raises ``ReseedError`` saying how to finish it.

        Example:
            >>> db.recover("sales.orders")
        """
        from openmirror_nb._core.landing_zone.lifecycle import settle
        from openmirror_nb._core.schema_change.run import finish_loaded
        from openmirror_nb._core.schema_change.waits import Mirror

        home = TableFolder.of(self.storage, table)
        finish_loaded(home, Mirror(self.target, self.storage, credential=self._credential), timeout=600.0)
        with home.lock(timeout=self.lock_timeout):
            done = settle(home)
        pushed = done.rolled_forward.push_id if done.rolled_forward else None
        return Recovery(str(home.ref), pushed, done.removed)

    def drop(self, table: str, *, wait: bool = False, timeout: float = 600.0) -> DropResult:
        """Delete a table: its folder (data files, ``_metadata.json``, push state, key state,
        staging, journal) and whatever older operations left of it. The mirror then drops the
        mirrored table; push again to recreate it from scratch (a new incarnation of the table).

        Runs under the table lock. The folder leaves the landing zone in one atomic move (to
        ``_openmirror/trash``, ignored by the service) before it is deleted, so a crash leaves
        either the table as it was or a trash folder the next operation removes.

        Args:
            table: ``"name"`` or ``"schema.name"``; also a folder whose name the naming rule
                refuses, exactly as ``db.status()`` names it (one an older version left).
            wait: Also wait until the mirror no longer lists the table (local mirror: its
                ``Files/Monitoring/tables.json``; in Fabric: ``getTablesMirroringStatus``).
            timeout: Seconds to wait for the lock and, with ``wait``, for the mirror.

        Raises:
            MirrorWaitTimeoutError: ``wait`` and the mirror still lists the table after ``timeout``.
            LockTimeoutError: another writer held the table for longer than ``timeout``.

        Example:
            >>> db.drop("sales.orders", wait=True)
        """
        from openmirror_nb._core.landing_zone.discovery import existing_ref
        from openmirror_nb._core.landing_zone.lifecycle import drop

        home = TableFolder(self.storage, existing_ref(self.storage, table))
        with home.lock(timeout=timeout):
            done = drop(home)
        result = DropResult(str(home.ref), done.existed, done.incarnation, done.data_files, done.removed)
        if not wait:
            return result
        from openmirror_nb._core.fabric.presence import wait_until_dropped

        waited = wait_until_dropped(self.target, home.ref, timeout=timeout, credential=self._credential)
        return dataclasses.replace(result, waited=waited)
