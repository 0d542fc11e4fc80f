"""Reading the mirrored tables of a local database: ``read_table`` (time travel) and ``history``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.api.base import DatabaseBase
from openmirror_nb._core.errors import NotSupportedError
from openmirror_nb._core.landing_zone.names import DEFAULT_SCHEMA
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.target import LocalTarget

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

    from openmirror_nb._core.mirror.delta_read import AsOf
    from openmirror_nb._core.mirror.key_versions import KeyHistory


class Reading(DatabaseBase):
    """The handle's reads of mirrored tables (see ``MirroredDatabase``)."""

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
        path = self._mirrored(
            table, "read_table", "(option versionAsOf or timestampAsOf for an earlier version)"
        )
        from openmirror_nb._core.mirror.delta_read import read_delta_pandas, read_delta_spark

        if as_pandas:
            frame: pd.DataFrame = read_delta_pandas(path, as_of=as_of)
            return frame
        from openmirror_nb._core.runtime import get_spark

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
        path = self._mirrored(table, "history", "(DESCRIBE HISTORY, then option versionAsOf per version)")
        from openmirror_nb._core.mirror.history import key_history

        keys = self.describe(table).keys
        return key_history(path, table=str(TableRef.parse(table)), keys=keys, key=key)

    def _mirrored(self, table: str, verb: str, how: str) -> Path:
        """The local mirror's Delta folder of ``table``; on OneLake, what to do in Fabric instead."""
        ref = TableRef.parse(table)
        folder = f"Tables/{ref.schema or DEFAULT_SCHEMA}/{ref.name}"
        if not isinstance(self.target, LocalTarget):
            raise NotSupportedError(f"{verb} reads a local mirror; in Fabric read {folder} with Spark {how}.")
        return self.target.root / folder
