"""``om.Catalog``: the tables of a Spark catalog database, such as a Fabric Lakehouse or one of
its schemas. Spark's catalog keeps no key constraints, so keys are suggested from the rows (or
declared); a Delta table with its change data feed on is planned for ``delta_sync``. A Delta
table's NOT NULL and identity columns and its change data feed are read from its log, where
Spark's Delta reader keeps them (``delta_folder.delta_facts``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError, did_you_mean, user_line
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.sources.table import Source, SourceKind, SourceTable, source_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_STATS_ROWS = re.compile(r"([0-9]+) rows")
_DETAILS = "# Detailed Table Information"  # DESCRIBE TABLE EXTENDED: the table's rows follow it


class Catalog(Source):
    """The tables of a Spark catalog database (a Lakehouse, or a Lakehouse schema).

    Args:
        database: The database (``"shop"``; ``"lakehouse.schema"`` for a schema of a Lakehouse
            with schemas). Temporary views are not part of it; persistent views are.

    Example:
        >>> plan = db.plan_sources(om.Catalog("shop"), target_schema="shop")
    """

    kind: SourceKind = "catalog"

    def __init__(self, database: str) -> None:
        if not isinstance(database, str) or not database.strip():
            raise ConfigError(
                f"Catalog database {database!r} is not a name; give one like om.Catalog('shop')."
            )
        self.database = database

    def discover(self) -> list[SourceTable]:
        """The database's tables and views with their columns, row counts (the catalog's
        statistics when ``ANALYZE``'d, else a count; none for views), Delta identity columns and
        whether a Delta table's change data feed is on.

        Raises:
            ConfigError: the database does not exist (the message names the close ones).
        """
        from openmirror_nb._core.runtime import get_spark

        spark = get_spark()
        if not spark.catalog.databaseExists(self.database):
            known = [d.name for d in spark.catalog.listDatabases()]
            raise ConfigError(
                f"Catalog database {self.database!r} does not exist (databases: {', '.join(sorted(known))})."
                f"{did_you_mean(self.database, known)}"
            )
        listed = [t for t in spark.catalog.listTables(self.database) if not t.isTemporary]
        return [
            self._describe(spark, t.name, t.tableType == "VIEW") for t in sorted(listed, key=lambda t: t.name)
        ]

    def read(self, table: str) -> DataFrame:
        """One table of the database as a Spark DataFrame."""
        from openmirror_nb._core.runtime import get_spark

        return get_spark().table(self.qualified(table))

    def qualified(self, table: str) -> str:
        """``table`` as Spark SQL names it: ```shop`.`orders```."""
        return ".".join(quoted(p) for p in [*self.database.split("."), table])

    def _describe(self, spark: SparkSession, name: str, view: bool) -> SourceTable:
        try:
            frame = self.read(name)
            described = spark.sql(f"DESCRIBE TABLE EXTENDED {self.qualified(name)}").collect()
            detail = _details(described)
            delta = detail.get("Provider", "").lower() == "delta"
            facts = self._delta_facts(spark, name) if delta else {}
            stats = _STATS_ROWS.search(detail.get("Statistics", ""))
            rows = int(stats.group(1)) if stats else None if view else frame.count()
        except Exception as exc:  # one table Spark cannot read must not hide the others
            return SourceTable(
                name, unreadable=f"Spark cannot read it ({user_line(exc)}); leave it out (enabled: false)"
            )
        return source_table(name, frame.schema, rows=rows, **facts)

    def _delta_facts(self, spark: SparkSession, name: str) -> dict[str, Any]:
        """A Delta table's NOT NULL and identity columns and change data feed, from its log (the
        table a catalog names is a Delta table only where the session has Spark's Delta reader)."""
        from openmirror_nb._core.pipeline.delta.source import DeltaSource
        from openmirror_nb._core.sources.delta_folder import delta_facts
        from openmirror_nb._core.sources.ranges import delta_location

        source = DeltaSource.open(delta_location(self, name), spark, "spark")
        return delta_facts(source, source.version())

    def delta_location(self, table: str) -> str | None:
        """``table``'s location as ``DESCRIBE DETAIL`` gives it, when it is a Delta table (``None``
        for a view, another format, or a session without Spark's Delta reader)."""
        from openmirror_nb._core.runtime import get_spark

        try:  # a view, or a session without Delta (no DESCRIBE DETAIL), has no Delta location
            detail = get_spark().sql(f"DESCRIBE DETAIL {self.qualified(table)}").first()
        except Exception:
            return None
        if detail is not None and str(detail["format"]).lower() == "delta" and detail["location"]:
            return str(detail["location"])
        return None

    def version(self, table: str) -> str | None:
        """A Delta table's latest version and its id, from its log (``Source.version``); ``None``
        for a view or a table of another format, which every run reads."""
        from openmirror_nb._core.runtime import get_spark
        from openmirror_nb._core.sources.delta_version import catalog_version

        return catalog_version(get_spark(), self.qualified(table))

    def to_dict(self) -> dict[str, Any]:
        """The source as a saved plan holds it."""
        return {"kind": self.kind, "database": self.database}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Catalog) and other.database == self.database

    def __hash__(self) -> int:
        return hash(self.database)

    def __repr__(self) -> str:
        return f"Catalog({self.database!r})"


def _details(described: list[Any]) -> dict[str, str]:
    """``DESCRIBE TABLE EXTENDED``'s rows about the table (``Provider``, ``Statistics``, ...), not
    those of its columns: a column named ``Provider`` is not the table's provider."""
    names = [str(r[0]).strip() for r in described]
    starts = names.index(_DETAILS) if _DETAILS in names else 0
    return {names[i]: str(r[1] or "") for i, r in enumerate(described) if i >= starts}
