"""A Delta table read on Spark, without Spark's Delta reader: a version's rows, or the change
data feed between two versions. Both are lazy Parquet scans of the table's files; the driver
reads the log and the deletion vectors only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from openmirror_nb._core.pipeline.delta.feed import check_feed, plan_feed
from openmirror_nb._core.pipeline.delta.scan import FileRead, read_files
from openmirror_nb._core.pipeline.delta.table_log import Commit, Version

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def snapshot_of(spark: SparkSession, at: Version) -> DataFrame:
    """The rows of the table at version ``at``."""
    import pyarrow as pa

    actions = pa.table(at.table.get_add_actions(flatten=False))
    paths = [str(p) for p in actions.column("path").to_pylist()]
    parts = (
        actions.column("partition").to_pylist() if "partition" in actions.column_names else [{}] * len(paths)
    )
    deleted = _deleted_rows(at)
    files = []
    for path, values in zip(paths, parts, strict=True):
        where, key = at.root.locate(path)
        files.append(FileRead(where, key, values or {}, deleted.get(key)))
    return read_files(spark, at.columns, files)


def read_changes(spark: SparkSession, start: Version, end: Version, commits: list[Commit]) -> DataFrame:
    """The change data feed after version ``start`` up to ``end`` (``commits``: the JSON commits
    between, ``read_commits``), with ``_change_type``, ``_commit_version`` and
    ``_commit_timestamp``; raises when there is none over that range (not enabled, or its log or
    files were cleaned up)."""
    check_feed(end.uri, commits, start.config)
    plan = plan_feed(spark, end.root, end.columns, commits)
    cdc = read_files(spark, end.columns, plan.change_files, feed=True, serialized=True, change_files=True)
    data = read_files(spark, end.columns, plan.data_files, feed=True, serialized=True)
    return cdc.unionByName(data)


def row_count(at: Version) -> int | None:
    """Rows of version ``at`` from its log alone: the files' ``numRecords`` statistics less the
    rows their deletion vectors remove; ``None`` when a file was written without statistics."""
    import pyarrow as pa

    actions = pa.table(at.table.get_add_actions(flatten=True))
    if "num_records" not in actions.column_names and actions.num_rows:
        return None
    total = 0
    for count in actions.column("num_records").to_pylist() if actions.num_rows else []:
        if count is None:
            return None
        total += int(count)
    return total - sum(len(rows) for rows in _deleted_rows(at).values())


def _deleted_rows(at: Version) -> dict[str, np.ndarray]:
    """Deleted row indexes of each file with a deletion vector, by key (``deltalake`` decodes
    them into keep masks; rows past the end of a mask are kept)."""
    import pyarrow as pa

    out = {}
    for batch in pa.RecordBatchReader.from_stream(at.table.deletion_vectors()):
        masks = batch.column("selection_vector")
        files = [str(p) for p in batch.column("filepath").to_pylist()]
        for path, mask in zip(files, masks, strict=True):
            keep = mask.values.to_numpy(zero_copy_only=False)
            out[at.root.locate(path)[1]] = np.flatnonzero(~keep).astype(np.int64)
    return out
