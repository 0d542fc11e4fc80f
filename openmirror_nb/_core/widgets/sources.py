"""What the onboarding panel offers to push: the notebook's Spark and pandas DataFrames, temp views
and catalog tables (``list_sources``), and what one holds (``source_preview``: rows, columns, the
first rows)."""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from openmirror_nb import ConfigError, OpenMirrorError
from openmirror_nb._core.errors import user_line  # the one line a user sees of an exception
from openmirror_nb._core.widgets.panel import TABLE_STYLE, TD_STYLE, TH_STYLE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SourceKind = Literal["spark", "pandas", "view", "table"]
_CELL = 60  # characters of a preview cell
_RIGHT = ";text-align:right"
_NUMERIC = re.compile(r"(tinyint|smallint|int|bigint|float|double|decimal)\b")


@dataclass(frozen=True)
class SourcePreview:
    """What a source holds: its row count, its columns (name, Spark type) and its first rows."""

    rows: int
    columns: tuple[tuple[str, str], ...]
    head: tuple[tuple[Any, ...], ...]

    def __repr__(self) -> str:
        return f"SourcePreview({self.rows:,} rows; {', '.join(f'{n} {t}' for n, t in self.columns)})"

    def _repr_html_(self) -> str:
        header = "".join(
            f"<th style='{TH_STYLE}{_RIGHT if _NUMERIC.match(t) else ''}'>{html.escape(n)} "
            f"<small style='font-weight:normal;color:#757575'>{html.escape(t)}</small></th>"
            for n, t in self.columns
        )
        body = "".join("<tr>" + "".join(_td(v) for v in row) + "</tr>" for row in self.head)
        shown = f"first {len(self.head)}" if len(self.head) < self.rows else "all"
        return (
            f"<div class='om-preview' style='line-height:1.4'><b>{self.rows:,} rows</b>, "
            f"{len(self.columns)} columns <small>({shown} rows shown)</small>"
            f"<div style='overflow-x:auto'><table style='{TABLE_STYLE}'><tr>{header}</tr>{body}</table>"
            "</div></div>"
        )


def _td(value: Any) -> str:
    text = "NULL" if value is None else str(value)
    text = text if len(text) <= _CELL else text[: _CELL - 1] + "…"
    number = isinstance(value, int | float | Decimal) and not isinstance(value, bool)
    style = TD_STYLE + (_RIGHT if number else "") + (";color:#9e9e9e" if value is None else "")
    return f"<td style='{style}'>{html.escape(text)}</td>"


def source_preview(df: DataFrame, *, rows: int = 10) -> SourcePreview:
    """The row count (a Spark count), the columns and the first ``rows`` rows of ``df``."""
    head = df.limit(rows).collect()
    return SourcePreview(
        rows=df.count(),
        columns=tuple((f.name, f.dataType.simpleString()) for f in df.schema.fields),
        head=tuple(tuple(row) for row in head),
    )


@dataclass(frozen=True)
class Source:
    """A frame that can be pushed: a Spark or pandas DataFrame of the namespace, a temp view or a
    catalog table. ``load()`` returns it as a Spark DataFrame."""

    name: str
    kind: SourceKind
    loader: Callable[[], DataFrame] = field(repr=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.name} ({'Spark DataFrame' if self.kind == 'spark' else self.kind})"

    def load(self) -> DataFrame:
        """The source as a Spark DataFrame (a pandas frame goes through Arrow and Parquet).

        Raises:
            ConfigError: the source cannot be read (a dropped view, a table without access).
        """
        try:
            return self.loader()
        except OpenMirrorError:
            raise
        except Exception as exc:  # Spark's and pandas' own errors: say which source, in one line
            raise ConfigError(
                f"Source {self.name!r} cannot be read ({user_line(exc)}); pick another source."
            ) from None


def list_sources(namespace: Mapping[str, Any], spark: SparkSession | None = None) -> list[Source]:
    """The Spark and pandas DataFrames of ``namespace`` (names starting with ``_`` skipped: they
    are IPython's output history), then the temp views and tables of the current catalog database.

    Example:
        >>> [s.label for s in list_sources(globals())]
        ['orders (Spark DataFrame)', 'customers (pandas)', 'events (view)']
    """
    if spark is None:
        from openmirror_nb import get_spark

        spark = get_spark()
    frames = sorted(
        ((name, obj) for name, obj in namespace.items() if not name.startswith("_")), key=lambda f: f[0]
    )
    found = [Source(name, "spark", partial(_same, obj)) for name, obj in frames if _is_spark(obj)]
    found += [
        Source(name, "pandas", partial(_pandas_to_spark, obj, spark))
        for name, obj in frames
        if _is_pandas(obj)
    ]
    try:
        listed = spark.sql("SHOW TABLES").collect()
    except Exception:  # an unreachable metastore must not hide the frames of the notebook
        listed = []
    catalog = sorted(
        (not row["isTemporary"], tuple(p for p in (row["namespace"], row["tableName"]) if p))
        for row in listed
    )
    found += [
        Source(".".join(parts), "table" if stored else "view", partial(spark.table, _qualified(parts)))
        for stored, parts in catalog
    ]
    return found


def _same(df: DataFrame) -> DataFrame:
    return df


def _is_spark(obj: Any) -> bool:
    # Classic and Spark Connect frames; only a loaded module can have made one, so none is imported.
    for name in ("pyspark.sql.dataframe", "pyspark.sql.connect.dataframe"):
        module = sys.modules.get(name)
        if module is not None and isinstance(obj, module.DataFrame):
            return True
    return False


def _is_pandas(obj: Any) -> bool:
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def _pandas_to_spark(pdf: Any, spark: SparkSession) -> DataFrame:
    """A pandas DataFrame as a Spark one, converted as ``db.push`` converts it (so a profile and
    the push see the same columns and types)."""
    from openmirror_nb import arrow_to_spark

    return arrow_to_spark(pdf, spark=spark)


def _quote(name: str) -> str:
    return f"`{name.replace('`', '``')}`"


def _qualified(parts: tuple[str, ...]) -> str:
    return ".".join(_quote(part) for part in parts)
