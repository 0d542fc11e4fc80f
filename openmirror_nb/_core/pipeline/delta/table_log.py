"""The Delta log of a table: what ``deltalake`` tells of a version, and the commits themselves.

``deltalake`` replays the log (checkpoints of every kind, JSON commits) into a version's
protocol, metadata, live files with typed partition values and their deletion vectors. The
commits of a change data feed are read as they are: each version's JSON file, fetched with
Spark's ``binaryFile`` source, so the log and the deletion-vector files are read wherever Spark
reads the data. Nothing here reads table rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from openmirror_nb._core.errors import ConfigError, MissingDependencyError, NotSupportedError, user_line
from openmirror_nb._core.pipeline.delta.columns import TableColumns

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Reader features the reader reads (Delta PROTOCOL.md, "Table Features"). The others (type
# widening, variant, catalog-managed tables, any future one) stop the sync with the way out.
READS = frozenset({"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})
_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
WAY_OUT = (
    "sync it from a Spark session with Delta (a Fabric notebook), or read it yourself and "
    "db.push(df, table=..., keys=[...])"
)


@dataclass(frozen=True)
class TableRoot:
    """Where a table's files are: ``prefix`` (``scheme://authority``, empty for local files) and
    the decoded ``path`` of the table folder, ending in ``/``."""

    prefix: str
    path: str

    @classmethod
    def of(cls, table_uri: str) -> TableRoot:
        parts = urlparse(table_uri)
        prefix = "" if parts.scheme in ("", "file") else f"{parts.scheme}://{parts.netloc}"
        return cls(prefix, unquote(parts.path).rstrip("/") + "/")

    def locate(self, ref: str) -> tuple[str, str]:
        """A log path (a URI reference, relative to the table or absolute) as (the path Spark
        reads, its decoded path component: the key ``_metadata.file_path`` is matched on)."""
        if _ABSOLUTE.match(ref):
            parts = urlparse(ref)
            path = unquote(parts.path)
            return (path if parts.scheme == "file" else f"{parts.scheme}://{parts.netloc}{path}"), path
        path = unquote(ref) if ref.startswith("/") else self.path + unquote(ref)
        return self.prefix + path, path


@dataclass(frozen=True)
class Version:
    """One version of the table as ``deltalake`` sees it."""

    uri: str
    number: int
    table: Any  # deltalake.DeltaTable loaded at ``number``
    root: TableRoot
    columns: TableColumns
    config: dict[str, Any]


@dataclass(frozen=True)
class Commit:
    """The actions of one JSON commit, and when it was made."""

    version: int
    timestamp: datetime
    actions: tuple[dict[str, Any], ...]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [a[kind] for a in self.actions if kind in a]


def open_version(uri: str, version: int | None = None) -> Version:
    """``uri`` at ``version`` (default: the latest), refused if it has a reader feature
    this reader cannot read."""
    table = _delta_table(uri, version)
    protocol = table.protocol()
    check_readable(uri, protocol.min_reader_version, protocol.reader_features)
    meta = table.metadata()
    mapping = protocol.min_reader_version == 2 or "columnMapping" in (protocol.reader_features or ())
    schema = json.loads(table.schema().to_json())
    columns = TableColumns.of(schema, meta.partition_columns, meta.configuration, mapping)
    return Version(uri, table.version(), table, TableRoot.of(table.table_uri), columns, meta.configuration)


def check_readable(uri: str, reader_version: int, features: Any) -> None:
    unknown = sorted(set(features or ()) - READS)
    if reader_version > 3 or unknown:
        what = f"reader feature {unknown[0]!r}" if unknown else f"reader version {reader_version}"
        raise NotSupportedError(f"Delta table {uri} uses {what}, which this reader cannot read; {WAY_OUT}.")


def read_commits(spark: SparkSession, root: TableRoot, first: int, last: int) -> list[Commit]:
    """The JSON commits ``first..last``; raises when one is gone (its log was cleaned up)."""
    return read_versions(spark, root, range(first, last + 1))


def read_versions(spark: SparkSession, root: TableRoot, versions: Iterable[int]) -> list[Commit]:
    """The JSON commits of ``versions`` (in one Spark job), in version order; raises when one is
    gone."""
    wanted = {v: root.locate(f"_delta_log/{v:020d}.json") for v in sorted(set(versions))}
    found = fetch_files(spark, list(wanted.values()))
    commits = []
    for version, (_, key) in wanted.items():
        content, modified = found[key]
        actions = tuple(json.loads(line) for line in content.decode("utf-8").splitlines() if line.strip())
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        stamp = info.get("inCommitTimestamp")  # in-commit timestamps win over the file's time
        when = datetime.fromtimestamp(stamp / 1000, UTC) if stamp is not None else modified
        commits.append(Commit(version, when, actions))
    return commits


def fetch_files(spark: SparkSession, files: list[tuple[str, str]]) -> dict[str, tuple[bytes, datetime]]:
    """Small files (commits, deletion vectors) by key: their bytes and modification time.

    ``files`` are ``TableRoot.locate`` pairs; Spark raises if one does not exist.
    """
    if not files:
        return {}
    paths = sorted({path for path, _ in files})
    rows = spark.read.format("binaryFile").load(paths).select("path", "modificationTime", "content").collect()
    out = {}
    for row in rows:
        modified = row["modificationTime"]
        modified = modified.astimezone(UTC) if modified.tzinfo is None else modified
        out[unquote(urlparse(row["path"]).path)] = (bytes(row["content"]), modified)
    return out


def _delta_table(uri: str, version: int | None) -> Any:
    try:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError, TableNotFoundError
    except ImportError:
        raise MissingDependencyError(
            "Reading a Delta table without Spark's Delta reader needs deltalake; "
            "pip install 'openmirror-nb[spark]'."
        ) from None
    try:
        return DeltaTable(uri, version=version)
    except TableNotFoundError as exc:
        raise ConfigError(
            f"{uri!r} is not a Delta table ({user_line(exc)}); give the folder that holds its _delta_log."
        ) from None
    except DeltaError as exc:
        if "not supported" in str(exc).lower() or "unsupported" in str(exc).lower():
            raise NotSupportedError(
                f"Delta table {uri} cannot be read here: {user_line(exc)}; {WAY_OUT}."
            ) from None
        raise
