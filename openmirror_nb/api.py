"""The public API: ``connect()`` returns a ``MirroredDatabase`` handle; everything else is thin
over it (magics, widgets, CLI)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from openmirror_nb.errors import ConfigError, NotSupportedError
from openmirror_nb.landing_zone import METADATA_FILE
from openmirror_nb.model import (
    DEFAULT_ROWS_PER_FILE,
    Compression,
    Convention,
    PartnerInfo,
    PushMode,
    PushResult,
    TableOptions,
    TableRef,
)
from openmirror_nb.target import LocalTarget, Target, parse_target

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

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
    ) -> None:
        self.target = target
        self.storage = storage
        self.partner = partner or PartnerInfo()
        self.lock_timeout = lock_timeout

    def __repr__(self) -> str:
        return f"MirroredDatabase({self.target})"

    def push(
        self,
        df: DataFrame,
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
    ) -> PushResult:
        """Publish a Spark DataFrame to a table of the landing zone.

        The first push of a table is its initial load: ``_metadata.json`` first, then marker-free
        files numbered from 1. A later snapshot publishes only what changed since the last push
        (inserts 0, updates ``update_marker``, deletes 2). ``mode="changes"`` publishes a change
        feed with ``__rowMarker__``. A rejected push leaves the landing zone untouched.

        Args:
            df: The rows to publish (never collected to the driver).
            table: ``"name"`` or ``"schema.name"`` (folder ``schema.schema/name``).
            keys: Key columns; required on the first push, fixed afterwards.
            mode: ``"snapshot"`` (the full table) or ``"changes"`` (a change feed).
            op_column: The change feed's operation column (default per convention:
                ``__rowMarker__``, ``sys_op``, ``_change_type``, ``op``).
            convention: How ``op_column`` encodes operations: ``"rowmarker"`` (0/1/2/4),
                ``"sys_op"`` (Prostore: 0 upsert, 1 delete; one change per key), ``"cdf"`` (Delta
                change data feed ``_change_type``), ``"debezium"`` (c/r/u/d).
            order_by: Columns that order each key's changes (default: the DataFrame's order).
            table_options: File format, detection strategy, upsert default; fixed at first push.
            compression: Parquet compression: none, snappy (default), gzip or zstd.
            rows_per_file: Target rows per published file (Fabric lags on very large files).
                Change feeds keep each Spark task's rows in one file so a key's changes stay together.
            update_marker: Marker for changed rows of a snapshot diff and updates of cdf/debezium
                feeds: 4 (upsert, default) or 1 (update).
            compact: Keep only each key's net change of a change feed.
            strict_delete: ``sys_op`` only: refuse the batch unless every delete carries exactly
                the current row (checked against the table's key state).

        Returns:
            PushResult: sequence numbers, rows per marker, bytes and seconds.

        Raises:
            KeyColumnsError: keys missing, NULL, duplicated, or different from the table's.
            InvalidNameError: a reserved or invalid table, schema or column name.
            ChangeFeedError: operation values outside the convention.
            SchemaChangeError: a column changed type since the last push.

        Example:
            >>> db = om.connect()
            >>> db.push(df, table="sales.orders", keys=["order_id"])
        """
        from openmirror_nb.pipeline.push import run_push
        from openmirror_nb.pipeline.request import PushRequest

        if mode not in ("snapshot", "changes"):
            raise ConfigError(f"mode {mode!r} is not valid; use 'snapshot' or 'changes'.")
        if mode == "snapshot" and op_column is not None:
            raise ConfigError("op_column is for change feeds; pass mode='changes' with it.")
        if isinstance(keys, str) or isinstance(order_by, str):
            raise ConfigError("keys and order_by take a list of column names, e.g. keys=['id'].")
        request = PushRequest(
            table=TableRef.parse(table),
            keys=tuple(keys) if keys else None,
            mode=mode,
            op_column=op_column,
            convention=convention,
            order_by=tuple(order_by),
            table_options=table_options,
            compression=compression,
            rows_per_file=rows_per_file,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
            update_marker=update_marker,
            compact=compact,
            strict_delete=strict_delete,
        )
        return run_push(self.storage, df, request)

    def recover(self, table: str) -> bool:
        """Finish an interrupted push of ``table``; ``True`` if there was one."""
        from openmirror_nb.publish import recover

        ref = TableRef.parse(table)
        with self.storage.lock(ref.key, timeout=self.lock_timeout):
            return recover(self.storage, ref.key) is not None

    def tables(self) -> list[str]:
        """The tables of the landing zone (folders holding a ``_metadata.json``)."""
        folders = []
        for entry in self.storage.list_dir(""):
            if not entry.is_dir or entry.name.startswith("_"):
                continue
            if entry.name.endswith(".schema"):
                schema = entry.name[: -len(".schema")]
                folders += [
                    (f"{entry.name}/{t.name}", f"{schema}.{t.name}")
                    for t in self.storage.list_dir(entry.name)
                    if t.is_dir and not t.name.startswith("_")
                ]
            else:
                folders.append((entry.name, entry.name))
        return sorted(name for folder, name in folders if self.storage.exists(f"{folder}/{METADATA_FILE}"))

    def read_table(self, table: str, *, as_pandas: bool = False) -> DataFrame | pd.DataFrame:
        """The mirrored Delta table (``Tables/<schema>/<table>``) as Spark or pandas.

        Local databases only: run ``om.LocalMirror(path).run_once()`` first to replicate.
        """
        if not isinstance(self.target, LocalTarget):
            raise NotSupportedError(
                "read_table reads a local mirror; in Fabric read the table with spark.read."
            )
        from openmirror_nb.mirror.delta_read import read_delta_pandas, read_delta_spark

        ref = TableRef.parse(table)
        path = self.target.tables / (ref.schema or "dbo") / ref.name
        if as_pandas:
            frame: pd.DataFrame = read_delta_pandas(path)
            return frame
        from openmirror_nb.runtime import get_spark

        spark_frame: DataFrame = read_delta_spark(get_spark(), path)
        return spark_frame


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
    return MirroredDatabase(target=parsed, storage=storage, partner=partner, lock_timeout=lock_timeout)
