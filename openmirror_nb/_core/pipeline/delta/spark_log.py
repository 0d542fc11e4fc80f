"""What the log says of one version of a Delta table, read through Spark, for Spark's Delta reader.

Spark's Delta reader hides column mapping (its frames carry no physical names or ids), so renames,
drops and re-adds are read from the log: the version's ``metaData`` and ``protocol``, from the
newest JSON commit at or before it that has them, else from the checkpoint the commits follow
(classic, multi-part or V2). The log is listed and read with Spark's file system and its
``binaryFile`` and Parquet sources, wherever the table is (OneLake, ADLS, a local folder), and
``deltalake`` is not needed: a table with a feature ``deltalake`` cannot read is read here too.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import SourceError
from openmirror_nb._core.pipeline.delta.columns import TableColumns
from openmirror_nb._core.pipeline.delta.table_log import Commit, TableRoot, read_commits

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# 0000.checkpoint.parquet, 0000.checkpoint.0000000001.0000000003.parquet, 0000.checkpoint.<uuid>.json
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.\d+\.\d+|\.[0-9A-Za-z-]+)?\.(parquet|json)$")


def columns_at(spark: SparkSession, uri: str, version: int) -> TableColumns:
    """The columns of ``uri`` at ``version``, with their physical names (``TableColumns``)."""
    root = TableRoot.of(uri)
    names = _log_names(spark, f"{uri.rstrip('/')}/_delta_log")
    checkpoints: dict[int, list[str]] = {}
    for name in names:
        found = _CHECKPOINT.match(name)
        if found and int(found.group(1)) <= version:
            checkpoints.setdefault(int(found.group(1)), []).append(name)
    start = max(checkpoints, default=-1)
    meta, protocol = _newest(read_commits(spark, root, start + 1, version) if version > start else [])
    if (meta is None or protocol is None) and start >= 0:
        held_meta, held_protocol = _from_checkpoint(spark, root, checkpoints[start])
        meta, protocol = meta or held_meta, protocol or held_protocol
    if meta is None or protocol is None:
        raise SourceError(f"The log of Delta table {uri} has no metaData or protocol for version {version}.")
    mapping = int(protocol.get("minReaderVersion", 1)) == 2 or "columnMapping" in (
        protocol.get("readerFeatures") or ()
    )
    schema, config = json.loads(meta["schemaString"]), meta.get("configuration") or {}
    return TableColumns.of(schema, meta.get("partitionColumns") or (), config, mapping)


def _newest(commits: list[Commit]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    meta = protocol = None
    for commit in commits:
        meta = next(iter(commit.of("metaData")[-1:]), meta)
        protocol = next(iter(commit.of("protocol")[-1:]), protocol)
    return meta, protocol


def _from_checkpoint(
    spark: SparkSession, root: TableRoot, files: list[str]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    from pyspark.sql import functions as F

    paths = [root.locate(f"_delta_log/{name}")[0] for name in sorted(files)]
    reader = spark.read.format("json" if paths[0].endswith(".json") else "parquet")
    frame = reader.load(paths)
    wanted = [c for c in ("metaData", "protocol") if c in frame.columns]
    rows = (
        frame.where(" OR ".join(f"{c} IS NOT NULL" for c in wanted))
        .select(*(F.to_json(c).alias(c) for c in wanted))
        .collect()
    )
    meta = next((json.loads(r["metaData"]) for r in rows if "metaData" in wanted and r["metaData"]), None)
    protocol = next((json.loads(r["protocol"]) for r in rows if "protocol" in wanted and r["protocol"]), None)
    return meta, protocol


def _log_names(spark: SparkSession, log: str) -> list[str]:
    """The file names in the ``_delta_log`` folder ``log``, through Spark's Hadoop file system."""
    jvm: Any = spark._jvm
    assert jvm is not None  # a classic session (Fabric's); Spark Connect has no Hadoop file system here
    where = jvm.org.apache.hadoop.fs.Path(log)
    fs = where.getFileSystem(spark._jsc.hadoopConfiguration())
    return [str(s.getPath().getName()) for s in fs.listStatus(where) if s.isFile()]
