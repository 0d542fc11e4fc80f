"""The public API: ``connect()`` returns a ``MirroredDatabase`` handle; everything else is thin
over it (magics, widgets, CLI)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from openmirror_nb.errors import (
    ConfigError,
    LandingZoneError,
    NotSupportedError,
    OpenMirrorError,
    StorageError,
)
from openmirror_nb.landing_zone.discovery import discover_tables
from openmirror_nb.landing_zone.names import DEFAULT_SCHEMA
from openmirror_nb.landing_zone.table_folder import TableFolder
from openmirror_nb.model import (
    DEFAULT_ROWS_PER_FILE,
    Compression,
    Convention,
    DropResult,
    PartnerInfo,
    PushMode,
    PushResult,
    Recovery,
    SyncResult,
    TableOptions,
    TableRef,
)
from openmirror_nb.progress import Progress
from openmirror_nb.status.records import Reconciliation
from openmirror_nb.status.report import StatusReport
from openmirror_nb.storage.credentials import scrub
from openmirror_nb.table_info import TableInfo, database_html, describe
from openmirror_nb.target import LocalTarget, Target, parse_target

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

    from openmirror_nb.mirror.delta_read import AsOf
    from openmirror_nb.mirror.history import KeyHistory
    from openmirror_nb.schema_change.plan import SchemaPlan
    from openmirror_nb.schema_change.run import ReseedResult
    from openmirror_nb.storage.base import Storage


class MirroredDatabase:
    """A handle on one mirrored database: a local folder or a Fabric landing zone.

    Create it with :func:`connect`.
    """

    def __init__(
        self,
        *,
        target: Target,
        storage: Storage,
        partner: PartnerInfo | None = None,
        lock_timeout: float = 600.0,
        credential: Any = None,
    ) -> None:
        self.target = target
        self.storage = storage
        self.partner = partner or PartnerInfo()
        self.lock_timeout = lock_timeout
        self._credential = credential

    def __repr__(self) -> str:
        try:
            count = f", {len(self.tables())} tables"
        except OpenMirrorError:
            count = ""  # unreachable store: the handle still says what it points at
        return f"MirroredDatabase({self.target}{count})"

    def _repr_html_(self) -> str:
        return database_html(str(self.target), self.tables, self.describe)

    def push(
        self,
        df: DataFrame | pd.DataFrame | Any,
        *,
        table: str,
        keys: Sequence[str] | None = None,
        mode: PushMode = "snapshot",
        op_column: str | None = None,
        convention: Convention = "rowmarker",
        order_by: Sequence[str] = (),
        table_options: TableOptions | None = None,
        compression: Compression | None = None,
        rows_per_file: int = DEFAULT_ROWS_PER_FILE,
        update_marker: Literal[1, 4] = 4,
        compact: bool = False,
        strict_delete: bool = False,
        progress: Progress = None,
    ) -> PushResult:
        """Publish a DataFrame (Spark, pandas, or a pyarrow Table) to a table of the landing zone.

        The first push of a table is its initial load: ``_metadata.json`` first, then marker-free
        files numbered from 1. A later snapshot publishes only what changed since the last push
        (inserts 0, updates ``update_marker``, deletes 2). ``mode="changes"`` publishes a change
        feed with ``__rowMarker__``. A rejected push leaves the landing zone untouched.

        Args:
            df: The rows to publish: a Spark DataFrame (never collected to the driver), or a
                pandas DataFrame / pyarrow Table, converted through the Spark session with its types.
            table: ``"name"`` or ``"schema.name"`` (folder ``schema.schema/name``).
            keys: Key columns; required on the first push, fixed afterwards.
            mode: ``"snapshot"`` (the full table) or ``"changes"`` (a change feed).
            op_column: The change feed's operation column (default per convention:
                ``__rowMarker__``, ``sys_op``, ``_change_type``, ``op``).
            convention: How ``op_column`` encodes operations: ``"rowmarker"`` (0/1/2/4),
                ``"sys_op"`` (Prostore: 0 upsert, 1 delete; one change per key), ``"cdf"`` (Delta
                change data feed ``_change_type``; within a commit deletes before inserts),
                ``"debezium"`` (c/r/u/d: the envelope with or without ``payload``,
                ExtractNewRecordState output, or a flattened feed).
            order_by: Columns that order each key's changes (default: the DataFrame's order;
                Debezium: ``source.lsn``, binlog position or ``ts_ms``; dotted paths allowed).
            table_options: File format, detection strategy, upsert default; fixed at first push.
            compression: Parquet compression: none, snappy (default), gzip or zstd.
            rows_per_file: Target rows per published file (Fabric lags on very large files).
                Change feeds keep each Spark task's rows in one file so a key's changes stay together.
            update_marker: Marker for changed rows of a snapshot diff and updates of cdf/debezium
                feeds: 4 (upsert, default) or 1 (update).
            compact: Keep only each key's net change of a change feed.
            strict_delete: ``sys_op`` only: refuse the batch unless every delete carries exactly
                the current row (checked against the table's key state).
            progress: Called with each ``openmirror_nb.progress`` event (validating, staging with
                Spark's stage and task counts, waiting for the lock, publishing file i of n,
                committing, finished / failed / cancelled). Default: a progress bar in a notebook,
                text lines in a terminal IPython, nothing in scripts; ``False``: nothing.

        Returns:
            PushResult: sequence numbers, rows per marker, bytes and seconds.

        Raises:
            KeyColumnsError: keys missing, NULL, duplicated, or different from the table's.
            InvalidNameError: a reserved or invalid table, schema or column name.
            ChangeFeedError: operation values outside the convention.
            SchemaChangeError: a column changed type since the last push.
            PushCancelledError: interrupted (KeyboardInterrupt, the notebook's stop button):
                before the push was decided nothing is published; after, it finished first.

        Example:
            >>> db = om.connect()
            >>> db.push(df, table="sales.orders", keys=["order_id"])
        """
        from openmirror_nb.pipeline.push import run_push
        from openmirror_nb.pipeline.request import PushRequest

        request = PushRequest.create(
            table=table,
            keys=keys,
            mode=mode,
            op_column=op_column,
            convention=convention,
            order_by=order_by,
            table_options=table_options,
            compression=compression,
            rows_per_file=rows_per_file,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
            update_marker=update_marker,
            compact=compact,
            strict_delete=strict_delete,
        )
        from openmirror_nb.pipeline.frame_input import as_spark_frame

        df = as_spark_frame(df)  # a pandas or Arrow frame becomes a Spark one; others are refused here
        from openmirror_nb.progress import resolve

        return run_push(self.storage, df, request, resolve(progress))

    def sync_delta(
        self, source: str, *, table: str, keys: Sequence[str] | None = None, compact: bool = False
    ) -> SyncResult:
        """Keep ``table`` in step with the Delta table at ``source`` (a path or URI).

        The first call publishes the source's current version as a snapshot; each later call
        publishes its change data feed since the version the table holds (``compact``: only each
        key's net change), committing the new version with the files, so a crash neither skips
        nor repeats a version. Without a feed over that range (not enabled, vacuumed) it pushes
        a snapshot diff instead and ``SyncResult.fallback`` says why.

        Example:
            >>> db.sync_delta("Tables/orders", table="sales.orders", keys=["order_id"])
        """
        from openmirror_nb.pipeline.delta_sync import DeltaSource, sync_delta
        from openmirror_nb.pipeline.request import PushRequest
        from openmirror_nb.runtime import get_spark

        request = PushRequest.create(
            table=table,
            keys=keys,
            order_by=(),
            mode="snapshot",
            op_column=None,
            convention="rowmarker",
            table_options=None,
            compression=None,
            rows_per_file=DEFAULT_ROWS_PER_FILE,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
            compact=compact,
        )
        return sync_delta(self.storage, DeltaSource.open(source, get_spark()), request)

    def plan_schema_change(self, table: str, df: Any, *, keys: Sequence[str] | None = None) -> SchemaPlan:
        """How ``df`` (with ``keys``, default the table's) differs from ``table`` as last pushed:
        every change classified as absorbed by the mirror or needing a reseed, and what a reseed
        costs (rows and files to reload; the mirrored table is gone until the reload is mirrored).

        Example:
            >>> plan = db.plan_schema_change("sales.orders", df)
            >>> plan.needs_reseed
        """
        from openmirror_nb.pipeline.frame_input import as_spark_frame
        from openmirror_nb.schema_change.plan import make_plan
        from openmirror_nb.schema_change.run import plan_in_progress

        home = TableFolder.of(self.storage, table)
        frame = as_spark_frame(df, caller="plan_schema_change")
        running = plan_in_progress(home, frame.schema.json())
        if running is not None:  # a reseed of it runs (its folder may be gone): that plan goes on
            return running
        info = describe(home, known=self.tables)
        state = home.read_state()
        if state is None:
            raise LandingZoneError(
                f"Table {info.table!r} was not pushed by openmirror_nb: its last schema is unknown; "
                "reseed it by hand (db.drop(table, wait=True), then push)."
            )
        return make_plan(
            table=info.table,
            state_schema=state.schema,
            keys_before=tuple(state.key_columns),
            df_schema=frame.schema.json(),
            keys=tuple(keys) if keys else None,
            delimited=info.options.is_delimited,
            rows=frame.count(),
            rows_per_file=DEFAULT_ROWS_PER_FILE,
            rows_before=info.state_rows,
            options=info.options,
            last_push_seconds=state.load_seconds,
        )

    def apply_schema_change(
        self,
        plan: SchemaPlan,
        df: Any,
        *,
        confirm: str,
        wait: bool = True,
        timeout: float = 600.0,
        progress: Progress = None,
        on_step: Callable[[int, str, str], None] | None = None,
    ) -> ReseedResult:
        """Carry out ``plan`` with ``df``: a plain push when the mirror absorbs every change, else
        a reseed as one resumable operation: record the plan, drop the table folder, wait until
        the mirror no longer lists the table, load ``df`` as an initial load, then (``wait``)
        wait until the table is back and verify its row count. After a crash or a kernel
        restart, the same call continues from the step after the last one done.

        Args:
            confirm: The table's name, typed by the user: a reseed deletes the mirrored table.
            wait: Wait for the table to be back and verify it (the wait for the drop always runs).
            timeout: Seconds each wait may take.
            on_step: Called with (step, what it does, "running" | "done") (the wizard's lines).

        Raises:
            ReseedError: a step failed after the folder was deleted (the message says how to go on).
            MirrorWaitTimeoutError: a wait ran out before the folder was deleted.

        Example:
            >>> db.apply_schema_change(plan, df, confirm="sales.orders")
        """
        from openmirror_nb.pipeline.frame_input import as_spark_frame
        from openmirror_nb.pipeline.request import PushRequest
        from openmirror_nb.progress import resolve
        from openmirror_nb.schema_change.run import apply_plan
        from openmirror_nb.schema_change.waits import Mirror

        request = PushRequest.create(
            table=plan.table,
            keys=plan.keys,
            order_by=(),
            mode="snapshot",
            op_column=None,
            convention="rowmarker",
            table_options=plan.options,
            compression=None,
            rows_per_file=DEFAULT_ROWS_PER_FILE,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
        )
        return apply_plan(
            storage=self.storage,
            mirror=Mirror(self.target, self.storage, credential=self._credential),
            plan=plan,
            df=as_spark_frame(df, caller="apply_schema_change"),
            request=request,
            confirm=confirm,
            wait=wait,
            timeout=timeout,
            progress=resolve(progress),
            on_step=on_step,
        )

    def recover(self, table: str) -> Recovery:
        """Finish an interrupted push of ``table`` and remove what no push will finish.

        A push decided before it died is rolled forward only into the life of the table it was
        decided in; staging and key state of dead pushes or of a dropped table are removed and
        listed in ``removed``. Every push does this first, so calling it is never required.
        A reseed whose reload is in is finished too (wait for the mirror, verify); one that still
        needs its data raises ``ReseedError`` saying how to finish it.

        Example:
            >>> db.recover("sales.orders")
        """
        from openmirror_nb.landing_zone.lifecycle import settle
        from openmirror_nb.schema_change.run import finish_loaded
        from openmirror_nb.schema_change.waits import Mirror

        home = TableFolder.of(self.storage, table)
        finish_loaded(home, Mirror(self.target, self.storage, credential=self._credential), timeout=600.0)
        with home.lock(timeout=self.lock_timeout):
            done = settle(home)
        pushed = done.rolled_forward.push_id if done.rolled_forward else None
        return Recovery(str(home.ref), pushed, done.removed)

    def drop(self, table: str, *, wait: bool = False, timeout: float = 600.0) -> DropResult:
        """Delete a table: its folder (data files, ``_metadata.json``, push state, key state,
        staging, journal) and whatever older operations left of it. The mirror then drops the
        mirrored table; push again to recreate it from scratch (a new life of the table).

        Runs under the table lock. The folder leaves the landing zone in one atomic move (to
        ``_openmirror/trash``, ignored by the service) before it is deleted, so a crash leaves
        either the table as it was or a trash folder the next operation removes.

        Args:
            table: ``"name"`` or ``"schema.name"``.
            wait: Also wait until the mirror no longer lists the table (local mirror: its
                ``Files/Monitoring/tables.json``; in Fabric: ``getTablesMirroringStatus``).
            timeout: Seconds to wait for the lock and, with ``wait``, for the mirror.

        Raises:
            MirrorWaitTimeoutError: ``wait`` and the mirror still lists the table after ``timeout``.
            LockTimeoutError: another writer held the table for longer than ``timeout``.

        Example:
            >>> db.drop("sales.orders", wait=True)
        """
        from openmirror_nb.landing_zone.lifecycle import drop

        home = TableFolder.of(self.storage, table)
        with home.lock(timeout=timeout):
            done = drop(home)
        result = DropResult(str(home.ref), done.existed, done.incarnation, done.data_files, done.removed)
        if not wait:
            return result
        from openmirror_nb.fabric.presence import wait_until_dropped

        waited = wait_until_dropped(self.target, home.ref, timeout=timeout, credential=self._credential)
        return dataclasses.replace(result, waited=waited)

    def describe(self, table: str) -> TableInfo:
        """Keys, schema, file format, last sequence number, key-state rows, pushes and the
        table's incarnation, from ``_metadata.json`` and the push state.

        Raises:
            LandingZoneError: the table does not exist (the message names the close ones).

        Example:
            >>> db.describe("sales.orders")
        """
        home = TableFolder.of(self.storage, table)
        return describe(home, known=self.tables)

    def status(
        self, table: str | None = None, *, reconcile: bool = False, source: Any = None
    ) -> StatusReport:
        """What is pending, processed, blocked or failed, per table and file, and why.

        Joins the landing-zone listing (``landing_zone.scan``), ``Files/Monitoring`` (written by
        the service, or by the local mirror) and, inside Fabric, the REST mirroring status. A
        source that cannot be read becomes a note in the report, never an error.

        Args:
            table: One table (``name`` or ``schema.name``); default every table.
            reconcile: Also count the rows of the mirrored table and the key state (on Spark)
                and say which disagrees (see ``reconcile``).
            source: With ``table`` and ``reconcile``: the source DataFrame (Spark or pandas),
                counted too.

        Raises:
            LandingZoneError: ``table`` does not exist (the message names the tables that do).

        Example:
            >>> db.status()             # the HTML grid in a notebook; print() reads like git status
            >>> db.status().to_pandas()
        """
        from openmirror_nb.status.gather import build_report
        from openmirror_nb.status.reconcile import reconciled
        from openmirror_nb.status.sources import database_sources

        if source is not None and (table is None or not reconcile):
            raise ConfigError("status(source=...) counts one table's source: pass table= and reconcile=True.")
        sources = database_sources(
            self.target, self.storage, credential=self._credential, count_mirrored=reconcile
        )
        report = build_report(str(self.target), sources, table=table)
        if not reconcile:
            return report
        return reconciled(
            report,
            mirrored=sources.mirrored_rows,
            state=self._state_rows,
            source_rows=None if source is None else _row_count(source),
        )

    def reconcile(self, table: str, df: Any = None) -> Reconciliation:
        """Compare the row counts of the mirrored table, the key state and (if given) ``df``,
        and say which one disagrees.

        Example:
            >>> db.reconcile("sales.orders", df).verdict
            'match'
        """
        found = self.status(table, reconcile=True, source=df).tables
        recon = found[0].reconciliation if found else None
        assert recon is not None  # status(table) has that table, or raised
        return recon

    def _state_rows(self, table: str) -> int | None:
        from openmirror_nb.pipeline.state_rows import count_state_rows

        try:
            return count_state_rows(self.storage, table)
        except OpenMirrorError:
            raise
        except Exception as exc:  # Spark's errors: the count is missing, the report says why
            raise StorageError(
                f"reading the key state failed: {scrub(' '.join(str(exc).split()))[:300]}"
            ) from None

    def tables(self) -> list[str]:
        """The tables of the landing zone (folders holding a ``_metadata.json``), as ``db.push``
        names them (``name`` or ``schema.name``)."""
        return sorted(
            str(t.ref)
            for t in discover_tables(self.storage)
            if TableFolder(self.storage, t.ref).has_metadata()
        )

    def read_table(
        self, table: str, *, as_pandas: bool = False, as_of: AsOf = None
    ) -> DataFrame | pd.DataFrame:
        """The mirrored Delta table (``Tables/<schema>/<table>``) as Spark or pandas.

        Local databases only: run ``om.LocalMirror(path).run_once()`` first to replicate.
        ``as_of`` reads an earlier version (Delta time travel): a version number, or a time
        (``datetime`` or ISO text, naive meaning local time) for the last version committed by then.

        Raises:
            ConfigError: ``as_of`` is no version of the table or before its first commit.

        Example:
            >>> db.read_table("sales.orders", as_pandas=True, as_of="2024-05-01T12:00:00Z")
        """
        ref = TableRef.parse(table)
        folder = f"Tables/{ref.schema or DEFAULT_SCHEMA}/{ref.name}"
        if not isinstance(self.target, LocalTarget):
            raise NotSupportedError(
                f"read_table reads a local mirror; in Fabric read {folder} with Spark "
                "(option versionAsOf or timestampAsOf for an earlier version)."
            )
        from openmirror_nb.mirror.delta_read import read_delta_pandas, read_delta_spark

        path = self.target.root / folder
        if as_pandas:
            frame: pd.DataFrame = read_delta_pandas(path, as_of=as_of)
            return frame
        from openmirror_nb.runtime import get_spark

        spark_frame: DataFrame = read_delta_spark(get_spark(), path, as_of=as_of)
        return spark_frame

    def history(self, table: str, *, key: Any) -> KeyHistory:
        """Every version of one key's row across the mirrored table's Delta commits: when it was
        inserted, updated or deleted, its values then, and the files the mirror applied.
        ``.actual`` is the row now, ``.archive`` the earlier entries; a key never seen gives an
        empty history. Local databases only.

        Args:
            table: ``"name"`` or ``"schema.name"``.
            key: ``{column: value}`` over the table's key columns, or a value for a one-column key.

        Example:
            >>> db.history("sales.orders", key={"order_id": 7}).to_pandas()
        """
        ref = TableRef.parse(table)
        folder = f"Tables/{ref.schema or DEFAULT_SCHEMA}/{ref.name}"
        if not isinstance(self.target, LocalTarget):
            raise NotSupportedError(
                f"history reads a local mirror; in Fabric read {folder} with Spark "
                "(DESCRIBE HISTORY, then option versionAsOf per version)."
            )
        from openmirror_nb.mirror.history import key_history

        keys = self.describe(table).keys
        return key_history(self.target.root / folder, table=str(ref), keys=keys, key=key)


def _row_count(df: Any) -> int:
    """Rows of a Spark or pandas DataFrame."""
    count = getattr(df, "count", None)
    if hasattr(df, "sparkSession") and callable(count):
        return int(count())
    if hasattr(df, "shape"):
        return int(df.shape[0])
    raise ConfigError(f"source must be a Spark or pandas DataFrame, not {type(df).__name__}.")


def connect(
    target: str | os.PathLike[str] | None = None,
    *,
    credential: Any = None,
    partner: PartnerInfo | None = None,
    lock_timeout: float = 600.0,
) -> MirroredDatabase:
    """Open a mirrored database.

    Args:
        target: ``None`` for ``./openmirror-db``; a folder or ``file://`` URL for another local
            mirrored database (created if missing); a OneLake landing-zone URL
            (``https://onelake.dfs.fabric.microsoft.com/<ws>/<db>/Files/LandingZone`` or
            ``abfss://<ws>@onelake.dfs.fabric.microsoft.com/<db>/Files/LandingZone``).
        credential: An Azure ``TokenCredential`` for OneLake (default: notebook identity in
            Fabric, else ``DefaultAzureCredential``).
        partner: What ``_partnerEvents.json`` says about the publisher.
        lock_timeout: Seconds a push waits for another writer of the same table.

    Example:
        >>> db = om.connect()
    """
    from openmirror_nb.storage.registry import open_storage

    parsed = parse_target(target)
    if isinstance(parsed, LocalTarget):
        for folder in (parsed.landing_zone, parsed.monitoring, parsed.tables):
            folder.mkdir(parents=True, exist_ok=True)
    storage = open_storage(parsed, credential=credential)
    return MirroredDatabase(
        target=parsed, storage=storage, partner=partner, lock_timeout=lock_timeout, credential=credential
    )
