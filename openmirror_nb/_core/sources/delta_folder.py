"""``om.DeltaFolder``: the Delta tables in a folder, such as a Lakehouse's ``Tables`` (one level:
``Tables/<table>``; a Lakehouse with schemas, two: ``Tables/<schema>/<table>``).

A local folder is listed directly, a URL (``abfss://``, ``file://``) through Spark's Hadoop file
system. Each table is described by Spark's Delta reader where the session has it (Fabric), else
from its log by ``deltalake``: row counts from the log's statistics, no table read. Either way its
NOT NULL and identity columns come from the log's schema: Spark's reader keeps no identity
metadata in the schema of the frames it reads.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError, user_line
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.sources.table import Source, SourceKind, SourceTable, source_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from openmirror_nb._core.pipeline.delta.source import DeltaSource

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
LOG = "_delta_log"
CDF = "delta.enableChangeDataFeed"
# A Delta identity column's field metadata in the log (Delta PROTOCOL.md, "Identity Columns").
IDENTITY = "delta.identity.start"
IDENTITY_STEP = "delta.identity.step"


class DeltaFolder(Source):
    """A folder of Delta tables.

    Args:
        path: A local folder or a URL (``abfss://<ws>@onelake.dfs.fabric.microsoft.com/<lh>/Tables``).
            Its subfolders holding a ``_delta_log`` are its tables (named by the subfolder); a
            subfolder of such folders is a schema (tables named ``schema/table``).

    Example:
        >>> plan = db.plan_sources(om.DeltaFolder("/lakehouse/default/Tables"), target_schema="shop")
    """

    kind: SourceKind = "delta_folder"
    delta_tables = True  # every table of it is a Delta table: delta_sync reads it, feed on or not

    def __init__(self, path: str | os.PathLike[str]) -> None:
        text = os.fspath(path) if isinstance(path, str | os.PathLike) else None
        if not text or not str(text).strip():
            raise ConfigError(f"DeltaFolder path {path!r} is not a folder; give a path or URL of one.")
        self.path = str(text).rstrip("/") or "/"

    def discover(self) -> list[SourceTable]:
        """The folder's Delta tables with their columns, NOT NULL and identity columns, row
        counts and whether their change data feed is on.

        Raises:
            ConfigError: the folder does not exist, or is itself a Delta table.
        """
        from openmirror_nb._core.runtime import get_spark

        spark = get_spark()
        return [self._describe(spark, name) for name in self.tables()]

    def tables(self) -> list[str]:
        """The names of the folder's tables (``table`` or ``schema/table``), sorted."""
        from openmirror_nb._core.runtime import get_spark

        listing = _Listing(get_spark() if _URL.match(self.path) else None)
        top = listing.folders(self.path)
        if LOG in top:
            raise ConfigError(
                f"{self.path} is a Delta table, not a folder of them; give its parent folder, or sync "
                "it alone with db.sync_delta."
            )
        found = []
        for name in _visible(top):
            inner = listing.folders(self.uri(name))
            if LOG in inner:
                found.append(name)
            else:
                found += [
                    f"{name}/{t}" for t in _visible(inner) if LOG in listing.folders(self.uri(f"{name}/{t}"))
                ]
        return sorted(found)

    def uri(self, table: str) -> str:
        """Where one table's files are."""
        return f"{self.path.rstrip('/')}/{table}"

    def delta_location(self, table: str) -> str:
        """Where one table's files are (``uri``): every table of the folder is a Delta table."""
        return self.uri(table)

    def version(self, table: str) -> str:
        """The table's latest Delta version and its id, from its log (``Source.version``)."""
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.sources.delta_version import delta_version

        return delta_version(get_spark(), self.uri(table))

    def read(self, table: str) -> DataFrame:
        """One table at its latest version as a Spark DataFrame (``om.read_delta``)."""
        from openmirror_nb._core.pipeline.delta.sync import read_delta

        return read_delta(self.uri(table))

    def _describe(self, spark: SparkSession, name: str) -> SourceTable:
        from openmirror_nb._core.pipeline.delta.source import DeltaSource

        uri = self.uri(name)
        try:
            source = DeltaSource.open(uri, spark)
            if source.spark_delta:
                version = source.version()
                frame = source.snapshot(version)
                rows = frame.count()  # Delta answers a count from its log's statistics
                return source_table(name, frame.schema, rows=rows, **delta_facts(source, version))
            return _by_log(name, uri)
        except Exception as exc:  # one table that cannot be read must not hide the others
            return SourceTable(
                name, unreadable=f"it cannot be read ({user_line(exc)}); leave it out (enabled: false)"
            )

    def to_dict(self) -> dict[str, Any]:
        """The source as a saved plan holds it."""
        return {"kind": self.kind, "path": self.path}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeltaFolder) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"DeltaFolder({self.path!r})"


def delta_facts(source: DeltaSource, version: int) -> dict[str, Any]:
    """What the log of ``source`` (Spark's Delta reader) says of it at ``version``: its NOT NULL
    and identity columns and whether its change data feed is on (``source_table``'s facts)."""
    detail = source.spark.sql(f"DESCRIBE DETAIL delta.{quoted(source.uri)}").first()
    properties = dict(detail["properties"] or {}) if detail is not None else {}
    return {**_field_facts(source.columns(version).fields), "change_feed": _on(properties.get(CDF))}


def _by_log(name: str, uri: str) -> SourceTable:
    from openmirror_nb._core.pipeline.delta.reader import row_count
    from openmirror_nb._core.pipeline.delta.table_log import open_version

    at = open_version(uri)
    return source_table(
        name,
        at.columns.logical(),
        rows=row_count(at),
        change_feed=_on(at.config.get(CDF)),
        **_field_facts(at.columns.fields),
    )


def _field_facts(fields: list[dict[str, Any]]) -> dict[str, Any]:
    """The NOT NULL columns and the identity columns that count up (a negative step counts down)
    of a Delta schema's top-level ``fields``."""
    meta = {f["name"]: f.get("metadata") or {} for f in fields}
    return {
        "not_null": frozenset(f["name"] for f in fields if not f.get("nullable", True)),
        "increasing": tuple(n for n, m in meta.items() if IDENTITY in m and int(m.get(IDENTITY_STEP, 1)) > 0),
    }


def _on(value: object) -> bool:
    return str(value or "").strip().lower() == "true"


def _visible(names: list[str]) -> list[str]:
    """Folders a reader sees: not ``_``- or ``.``-prefixed (logs, staging, checkpoints)."""
    return [n for n in names if not n.startswith(("_", "."))]


class _Listing:
    """Subfolder names of a local folder, or of a URL through Spark's Hadoop file system."""

    def __init__(self, spark: SparkSession | None) -> None:
        self.spark = spark

    def folders(self, path: str) -> list[str]:
        if self.spark is None:
            folder = Path(path)
            if not folder.is_dir():
                raise ConfigError(f"Delta folder {path} does not exist or is not a folder; check the path.")
            return sorted(p.name for p in folder.iterdir() if p.is_dir())
        jvm = self.spark._jvm
        assert jvm is not None  # a classic session; Spark Connect has no Hadoop file system here
        where = jvm.org.apache.hadoop.fs.Path(path)
        fs = where.getFileSystem(self.spark._jsc.hadoopConfiguration())
        if not fs.isDirectory(where):
            raise ConfigError(f"Delta folder {path} does not exist or is not a folder; check the path.")
        return sorted(str(s.getPath().getName()) for s in fs.listStatus(where) if s.isDirectory())
