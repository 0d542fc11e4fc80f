"""Choosing key columns before a first push: which columns identify a row (``suggest_keys``) and
how well the chosen ones do (``profile_keys``). Everything is counted on Spark; only aggregates
and a few duplicated keys come back. The onboarding panel lays these out; they work as well
without it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.pipeline.push.normalize import check_keys

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["KeyProfile", "key_suggestions", "profile_keys", "suggest_keys"]

# Inline styles, as the onboarding panel's own tables have them: a widget's HTML gets no notebook
# table styling, and its line height is a control's.
TABLE_STYLE = "border-collapse:collapse;font-size:12px;margin:2px 0"
TD_STYLE = "padding:1px 14px 1px 0;text-align:left;white-space:nowrap"
TH_STYLE = f"{TD_STYLE};border-bottom:1px solid #bdbdbd"


# Types a key can have and that compare exactly; float/double (rounding), binary and complex
# types are never suggested.
KEY_TYPES = frozenset(
    {"string", "integer", "long", "short", "byte", "decimal", "date", "timestamp", "timestamp_ntz"}
)
# Names that usually hold an identifier are tried first, so a wide frame's id is among the
# columns examined even when it is not among the first ones.
_ID_LIKE = re.compile(r"(?i:(^|[_\s])(id|key|code|no|nr|number|uuid|guid)$)|[a-z0-9](Id|ID)$")


@dataclass(frozen=True)
class KeyProfile:
    """How well ``keys`` identify the rows of a DataFrame.

    Attributes:
        keys: The key columns profiled.
        rows: Rows of the DataFrame.
        distinct: Distinct key values among rows whose key has no NULL.
        null_keys: Rows with a NULL in some key column (a push refuses them).
        duplicated: Key values that occur more than once.
        duplicates: A few of those, most frequent first: ``(key values, rows)``.
    """

    keys: tuple[str, ...]
    rows: int
    distinct: int
    null_keys: int
    duplicated: int = 0
    duplicates: tuple[tuple[tuple[Any, ...], int], ...] = ()

    @property
    def unique(self) -> bool:
        """Every row has a key without NULLs and no key value occurs twice: a push accepts them."""
        return self.null_keys == 0 and self.distinct == self.rows

    def _problems(self, *, examples: bool = True) -> list[str]:
        found = []
        if self.null_keys:
            found.append(f"{_count(self.null_keys, 'row')} with a NULL key")
        if self.duplicated:
            shown = ", ".join(f"{_key_text(k)} in {n:,} rows" for k, n in self.duplicates)
            found.append(
                f"{_count(self.duplicated, 'key value')} repeated" + (f" ({shown})" if examples else "")
            )
        return found

    def __repr__(self) -> str:
        verdict = "unique" if self.unique else "; ".join(self._problems())
        return (
            f"KeyProfile({', '.join(self.keys)}: {self.rows:,} rows, {self.distinct:,} distinct keys, "
            f"{self.null_keys:,} NULL keys: {verdict})"
        )

    def _repr_html_(self) -> str:
        colour, verdict = ("#2e7d32", "unique, not NULL: a good key") if self.unique else ("#c62828", "")
        cells = [("rows", self.rows), ("distinct keys", self.distinct), ("NULL keys", self.null_keys)]
        facts = " &nbsp; ".join(f"{k} <b>{v:,}</b>" for k, v in cells)
        dupes = "".join(
            f"<tr><td style='{TD_STYLE}'><code>{html.escape(_key_text(k))}</code></td>"
            f"<td style='{TD_STYLE};text-align:right'>{n:,}</td></tr>"
            for k, n in self.duplicates
        )
        more = self.duplicated - len(self.duplicates)
        dupes_html = (
            f"<table class='om-dupes' style='{TABLE_STYLE}'><tr><th style='{TH_STYLE}'>duplicated key</th>"
            f"<th style='{TH_STYLE};text-align:right'>rows</th></tr>{dupes}</table>"
            + (f"<i>and {_count(more, 'more duplicated value')}</i>" if more > 0 else "")
            if dupes
            else ""
        )
        verdict = verdict or html.escape("; ".join(self._problems(examples=False)))  # the table has them
        return (
            f"<div class='om-key-profile' data-unique='{str(self.unique).lower()}' style='line-height:1.4'>"
            f"<b>Key {html.escape(', '.join(self.keys))}</b>: {facts}"
            f"<div style='color:{colour}'>{verdict}</div>{dupes_html}</div>"
        )


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _key_text(values: tuple[Any, ...]) -> str:
    return repr(values[0]) if len(values) == 1 else repr(values)


def profile_keys(df: DataFrame, keys: Sequence[str], *, examples: int = 5) -> KeyProfile:
    """Rows, distinct key values, NULL keys and a few duplicated values of ``keys`` in ``df``.

    One aggregation over the key columns (two when some value is duplicated, to fetch
    ``examples`` of them); nothing but counts and those values reaches the driver.

    Raises:
        KeyColumnsError: no keys, a key named twice, a key that is not a column of ``df``, or
            one whose type cannot be a key (the checks a push makes).

    Example:
        >>> profile_keys(df, ["order_id"]).unique
        True
    """
    from pyspark.sql import functions as F

    keys = tuple(keys)
    check_keys(df, keys)  # what a push would refuse, refused here in the same words
    cols = [F.col(quoted(k)) for k in keys]
    has_null = F.lit(False)
    for c in cols:
        has_null = has_null | c.isNull()
    # NULL keys group together, so one grouping gives rows, NULL-key rows and distinct keys.
    groups = df.groupBy(*cols).agg(F.count(F.lit(1)).alias("__n"), F.max(has_null).alias("__null"))
    total = groups.agg(
        F.coalesce(F.sum("__n"), F.lit(0)).alias("rows"),
        F.coalesce(F.sum(F.when(F.col("__null"), F.col("__n"))), F.lit(0)).alias("nulls"),
        F.count(F.when(~F.col("__null"), 1)).alias("distinct"),
        F.count(F.when(~F.col("__null") & (F.col("__n") > 1), 1)).alias("duplicated"),
    ).first()
    assert total is not None  # a global aggregate always has one row
    dupes: list[tuple[tuple[Any, ...], int]] = []
    if total["duplicated"]:
        top = (
            groups.where(~F.col("__null") & (F.col("__n") > 1))
            .orderBy(F.col("__n").desc(), *cols)
            .limit(examples)
            .collect()
        )
        dupes = [(tuple(row[i] for i in range(len(keys))), int(row["__n"])) for row in top]
    return KeyProfile(
        keys=keys,
        rows=int(total["rows"]),
        distinct=int(total["distinct"]),
        null_keys=int(total["nulls"]),
        duplicated=int(total["duplicated"]),
        duplicates=tuple(dupes),
    )


def suggest_keys(
    df: DataFrame, *, limit: int = 5, max_columns: int = 12, max_pairs: int = 10
) -> list[tuple[str, ...]]:
    """Columns, else pairs of columns, that are never NULL and unique in ``df``.

    Bounded work: at most ``max_columns`` columns of key types (identifier-like names first;
    never float, double, binary or complex ones) are counted in one aggregation; only when none
    of them is a key alone, at most ``max_pairs`` pairs of the NULL-free ones in a second. An
    empty DataFrame proves nothing and gets no suggestion.

    Returns:
        Up to ``limit`` key tuples, single columns first, then pairs.

    Example:
        >>> suggest_keys(spark.range(5).selectExpr("id AS order_id", "'x' AS note"))
        [('order_id',)]
    """
    found = key_suggestions(df, limit=limit, max_columns=max_columns, max_pairs=max_pairs)
    return [profile.keys for profile in found]


def key_suggestions(
    df: DataFrame, *, limit: int = 5, max_columns: int = 12, max_pairs: int = 10
) -> list[KeyProfile]:
    """``suggest_keys`` with its evidence: each suggestion as the ``KeyProfile`` its counts give
    (rows profiled, distinct values), which a plan shows beside a key only the rows vouch for."""
    from pyspark.sql import functions as F

    ranked = sorted(
        (f.name for f in df.schema.fields if f.dataType.typeName() in KEY_TYPES),
        key=lambda name: 0 if _ID_LIKE.search(name) else 1,
    )[:max_columns]
    if not ranked or limit < 1:
        return []
    exprs = [F.count(F.lit(1)).alias("rows")]
    for i, name in enumerate(ranked):
        exprs += [
            F.count(F.col(quoted(name))).alias(f"n{i}"),
            F.countDistinct(F.col(quoted(name))).alias(f"d{i}"),
        ]
    counts = df.agg(*exprs).first()
    assert counts is not None
    rows = int(counts["rows"])
    if rows == 0:
        return []
    full = {name: int(counts[f"d{i}"]) for i, name in enumerate(ranked) if counts[f"n{i}"] == rows}
    singles = [_unique((name,), rows) for name, distinct in full.items() if distinct == rows]
    if singles:
        return singles[:limit]
    # A constant column adds nothing to a pair, and a pair of columns with fewer value
    # combinations than rows cannot be unique: neither is worth counting.
    usable = [name for name, distinct in full.items() if distinct > 1]
    pairs = [(a, b) for i, a in enumerate(usable) for b in usable[i + 1 :] if full[a] * full[b] >= rows]
    pairs = pairs[:max_pairs]
    if not pairs:
        return []
    counted = df.agg(
        *(
            F.countDistinct(F.col(quoted(a)), F.col(quoted(b))).alias(f"p{i}")
            for i, (a, b) in enumerate(pairs)
        )
    ).first()
    assert counted is not None
    found = [_unique(pair, rows) for i, pair in enumerate(pairs) if counted[f"p{i}"] == rows]
    return found[:limit]


def _unique(keys: tuple[str, ...], rows: int) -> KeyProfile:
    """The profile of keys the counts found unique and never NULL in ``rows`` rows."""
    return KeyProfile(keys=keys, rows=rows, distinct=rows, null_keys=0)
