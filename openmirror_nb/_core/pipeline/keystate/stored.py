"""Reading a table's stored key state: the one way every reader of it does so.

A push's flows (a snapshot diff, a change feed's new base, a strict delete's check), a plan's
overlap window and reconciliation's count all start from the table's ``PushState``, which names
the state's folders: its base and the deltas of the pushes since (``pipeline.keystate.hashes``). Here
those folders become Spark URIs (downloaded first where Spark cannot read the store), and are
read as the table's live keys (``current``, by ``hashes.read_effective``) or as a snapshot
diff takes them (``for_diff``, by ``snapdiff.stored``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.pipeline.keystate import hashes, snapdiff
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.storage.local import fetch_folder

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


class Site(Protocol):
    """Where the state is read: the Spark session, the store, the table's key columns, and the
    local folder Spark works in where it cannot read the store (``None``: it can). A push's
    ``context.StageContext`` is one; ``Reader`` is one for anyone else."""

    @property
    def spark(self) -> SparkSession: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def local_dir(self) -> str | None: ...


@dataclass(frozen=True)
class Reader:
    """A ``Site`` for a reader that is not a push."""

    spark: SparkSession
    storage: Storage
    keys: tuple[str, ...]
    local_dir: str | None = None


def current(
    site: Site,
    state: PushState,
    *,
    schema: StructType | None = None,
    latest: DataFrame | None = None,
    place: int | None = None,
) -> DataFrame | None:
    """The table's live keys with their row hashes: the base with every delta applied, and
    ``latest`` (one more delta, not written yet) after them, merged into ``place`` buckets if
    given (``hashes.read_effective``); ``None`` when there is no key state.

    ``schema``: a frame's that has the key columns (the pushed one), so that no Spark job reads
    a file footer to find the state's columns.
    """
    deltas, feeds = deltas_of(state, lambda folder: _uri(site, folder))
    small = latest is None and state.delta_rows is not None and state.delta_rows <= hashes.BROADCAST_ROWS
    return hashes.read_effective(
        site.spark,
        base=_uri(site, state.base) if state.base else None,
        deltas=deltas,
        keys=site.keys,
        small_deltas=small,
        latest=latest,
        place=place,
        schema=None if schema is None else hashes.state_schema(schema, site.keys),
        feeds=feeds,
    )


def for_diff(
    site: Site, state: PushState, *, place: int, schema: StructType, single: bool = False
) -> tuple[DataFrame | None, DataFrame | None]:
    """The table's key state as a snapshot diff reads it (``snapdiff.stored``): the base's live
    rows and the deltas' merged rows, apart. ``schema``: as for ``current``."""
    deltas, feeds = deltas_of(state, lambda folder: _uri(site, folder))
    return snapdiff.stored(
        site.spark,
        base=_uri(site, state.base) if state.base else None,
        deltas=deltas,
        feeds=feeds,
        keys=site.keys,
        small_deltas=state.delta_rows is not None and state.delta_rows <= hashes.BROADCAST_ROWS,
        buckets=state.buckets,
        place=place,
        schema=hashes.state_schema(schema, site.keys),
        single=single,
    )


def count_state_rows(storage: Storage, table: str) -> int | None:
    """Rows of ``table`` as last pushed, exactly (``None`` if this tool never pushed to it), on
    Spark: for reconciliation (a push never needs it, since it keeps approximate counts in the
    state).

    Reads the state without the table lock: a push that commits meanwhile leaves the folders
    this state names in place until the next push settles, so the count is of one state.
    """
    from pyspark.sql import functions as F

    from openmirror_nb._core.runtime import get_spark

    state = TableFolder.of(storage, table).read_state()
    if state is None:
        return None
    local_dir = None if storage.SPARK_WRITABLE else tempfile.mkdtemp(prefix="openmirror-count-")
    try:
        live = current(Reader(get_spark(), storage, tuple(state.key_columns), local_dir), state)
        if live is None:
            return 0
        total = live.agg(F.sum(F.col(hashes.ROWS))).first()
        return int(total[0] or 0) if total is not None else 0
    finally:
        if local_dir is not None:
            shutil.rmtree(local_dir, ignore_errors=True)


def deltas_of(state: PushState, fetch: Callable[[str], str]) -> tuple[list[str], dict[str, StructType]]:
    """``state``'s delta folders as Spark URIs (``fetch`` makes one of a folder) and, for
    ``hashes.read_delta``, the schemas of those that hold a change feed's own files."""
    from pyspark.sql.types import StructType

    schemas = dict(state.feed_deltas)
    uris: list[str] = []
    feeds: dict[str, StructType] = {}
    for folder in state.deltas:
        uris.append(fetch(folder))
        if folder in schemas:
            feeds[uris[-1]] = StructType.fromJson(json.loads(schemas[folder]))
    return uris, feeds


def _uri(site: Site, folder: str) -> str:
    """A Spark URI for a store folder, downloaded first if Spark cannot read the store."""
    return fetch_folder(site.storage, folder, local_dir=site.local_dir)
