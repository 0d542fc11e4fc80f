"""The change data feed of a range of commits, planned from the commits' actions.

Delta PROTOCOL.md, "Reader Requirements for AddCDCFile": a commit with ``cdc`` actions is read
from those change data files only (they carry ``_change_type``); any other commit's ``add``
files are inserts and its ``remove`` files deletes (``dataChange`` ones only: a compaction
changes no rows). Deletion vectors refine that as Spark's Delta reader does: a file removed
and added back in one commit with a new deletion vector changed only the rows between the two
vectors, so the rows the new one adds are deleted and the rows it no longer holds come back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from openmirror_nb._core.pipeline.delta.deletion_vectors import DeletionVector
from openmirror_nb._core.pipeline.delta.gone import FeedGone
from openmirror_nb._core.pipeline.delta.scan import FileRead
from openmirror_nb._core.pipeline.delta.table_log import Commit, TableRoot, check_readable, fetch_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from openmirror_nb._core.pipeline.delta.columns import TableColumns

CDF_ON = "delta.enableChangeDataFeed"


@dataclass(frozen=True)
class FeedPlan:
    """The files of a feed: change data files, and data files read as inserts or deletes."""

    change_files: list[FileRead]
    data_files: list[FileRead]


def check_feed(uri: str, commits: list[Commit], config: dict[str, Any]) -> None:
    """Every commit must have the feed enabled (``config``: the table's before the first), and
    no commit may raise the protocol beyond what this reader reads."""
    for commit in commits:
        for meta in commit.of("metaData"):
            config = meta.get("configuration") or {}
        for protocol in commit.of("protocol"):
            check_readable(uri, int(protocol.get("minReaderVersion", 1)), protocol.get("readerFeatures"))
        if str(config.get(CDF_ON, "false")).lower() != "true":
            raise FeedGone(f"the change data feed is not enabled at version {commit.version}")


def plan_feed(spark: SparkSession, root: TableRoot, columns: TableColumns, commits: list[Commit]) -> FeedPlan:
    names = {columns.physical_name(p): p for p in columns.partition_columns}
    change_files: list[FileRead] = []
    pairs: list[tuple[Commit, dict[str, Any] | None, dict[str, Any] | None]] = []
    for commit in commits:
        cdc = commit.of("cdc")
        if cdc:
            change_files += [_read(root, names, commit, a, None) for a in cdc]
            continue
        adds = {root.locate(a["path"])[1]: a for a in commit.of("add") if a.get("dataChange", True)}
        removes = {root.locate(a["path"])[1]: a for a in commit.of("remove") if a.get("dataChange", True)}
        pairs += [(commit, adds.get(key), removes.get(key)) for key in sorted({*adds, *removes})]
    deleted = _deleted_rows(spark, root, [a for _, *both in pairs for a in both if a is not None])
    data_files = []
    for commit, add, remove in pairs:
        data_files += _changes(root, names, commit, add, remove, deleted)
    return FeedPlan(change_files, data_files)


def _changes(
    root: TableRoot,
    names: dict[str, str],
    commit: Commit,
    add: dict[str, Any] | None,
    remove: dict[str, Any] | None,
    deleted: dict[str, np.ndarray],
) -> list[FileRead]:
    def rows(action: dict[str, Any]) -> np.ndarray | None:
        dv = DeletionVector.of(action)
        return deleted[_dv_id(dv)] if dv else None

    if add is None or remove is None:
        action = add if add is not None else remove
        assert action is not None
        return [_read(root, names, commit, action, "insert" if add else "delete", rows(action))]
    before, after = rows(remove), rows(add)
    old = before if before is not None else np.zeros(0, np.int64)
    new = after if after is not None else np.zeros(0, np.int64)
    out = []
    gone, back = np.setdiff1d(new, old), np.setdiff1d(old, new)
    if len(gone):
        out.append(_read(root, names, commit, add, "delete", gone, keep="only"))
    if len(back):
        out.append(_read(root, names, commit, add, "insert", back, keep="only"))
    return out


def _read(
    root: TableRoot,
    names: dict[str, str],
    commit: Commit,
    action: dict[str, Any],
    change: str | None,
    rows: np.ndarray | None = None,
    *,
    keep: str = "all",
) -> FileRead:
    path, key = root.locate(action["path"])
    values = action.get("partitionValues") or {}
    partition = {names[k]: v for k, v in values.items() if k in names}
    return FileRead(path, key, partition, rows, keep, commit.version, commit.timestamp, change)  # type: ignore[arg-type]


def _deleted_rows(
    spark: SparkSession, root: TableRoot, actions: list[dict[str, Any]]
) -> dict[str, np.ndarray]:
    """Each deletion vector of ``actions``, decoded, by its unique id (DV files read at once)."""
    vectors = {_dv_id(dv): dv for dv in (DeletionVector.of(a) for a in actions) if dv is not None}
    places = {i: dv.location() for i, dv in vectors.items()}
    files = fetch_files(spark, [root.locate(p) for p in places.values() if p is not None])
    out = {}
    for i, dv in vectors.items():
        place = places[i]
        out[i] = dv.rows(files[root.locate(place)[1]][0] if place is not None else None)
    return out


def _dv_id(dv: DeletionVector) -> str:
    return f"{dv.storage}{dv.path_or_inline}@{dv.offset}"
