"""What stands in the way of mirroring a planned table, each problem in words with its fix: columns
the landing zone cannot hold (the push's own checks, run on an empty frame of the source's schema),
keys that are missing, inexact or not the mirrored table's, a strategy without what it needs, and
target names that meet after mapping."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import KeyColumnsError, UnsupportedTypeError, did_you_mean
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.model import TableOptions
from openmirror_nb._core.pipeline.push.normalize import check_keys, column_name_problems, normalize
from openmirror_nb._core.sources.plan import PlannedTable
from openmirror_nb._core.sources.plan_strategy import PlanStrategy, get_strategy, no_deletes, readers
from openmirror_nb._core.table_names import identity, parse_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.sources.table import Source, SourceTable

TABLE_LIMIT = 500  # tables in a mirrored database (Fabric's mirroring troubleshooting page)
_INEXACT = frozenset({"float", "double"})
_ORDERED = frozenset({"byte", "short", "integer", "long", "decimal", "date", "timestamp", "timestamp_ntz"})
_APPEND_FIX = "strategy: append with a watermark the source numbers rows by"


def column_problems(empty: DataFrame) -> list[str]:
    """What a push would refuse in the columns of a frame with the source table's schema."""
    found = column_name_problems(empty.columns)
    options = TableOptions()
    try:
        normalize(empty, options=options)
    except UnsupportedTypeError:  # it names the first such column: name each of them
        for name in empty.columns:
            try:
                normalize(empty.select(quoted(name)), options=options)
            except UnsupportedTypeError as exc:
                found.append(str(exc))
    return found


def key_problems(empty: DataFrame, planned: PlannedTable, existing: tuple[str, ...] | None) -> list[str]:
    """Keys a push would refuse, keys that compare inexactly, and keys other than the mirrored
    table's (which never change)."""
    keys = planned.keys
    if not keys:
        if existing and get_strategy(planned.strategy).keys is not False:
            return [
                f"no key, and {planned.table} is mirrored already with keyColumns {list(existing)}: "
                f"declare them (keys: {list(existing)}, key_origin: declared)"
            ]
        return []
    try:
        check_keys(empty, keys)
    except KeyColumnsError as exc:
        return [str(exc)]
    found = [
        f"key column {k!r} is {empty.schema[k].dataType.simpleString()}: floating-point values do not "
        "compare exactly, so a row could never be found again; declare other keys (key_origin: declared)"
        for k in keys
        if empty.schema[k].dataType.typeName() in _INEXACT
    ]
    if existing is not None and set(existing) != set(keys):
        found.append(
            f"{planned.table} is mirrored already with keyColumns {list(existing) or 'none'}, which never "
            f"change; declare keys: {list(existing)}, or reseed it with {list(keys)} through the schema "
            "wizard (db.plan_schema_change)"
        )
    return found


def no_key_problem(table: SourceTable, *, suggested: bool) -> str:
    """The problem of a table nothing gave a key, with the fix."""
    looked = "no primary key, no unique constraint on NOT NULL columns"
    if suggested:
        looked += (
            ", and the table is empty so no key could be suggested"
            if table.rows == 0
            else " and no column (or pair) unique in its rows"
        )
    numbered = f" (e.g. {table.increasing[0]!r})" if table.increasing else ""
    return (
        f"no key: {looked}; declare keys (keys: [...], key_origin: declared), or mirror it insert-only "
        f"with {_APPEND_FIX}{numbered}"
    )


def strategy_problems(
    empty: DataFrame, planned: PlannedTable, table: SourceTable, source: Source
) -> list[str]:
    """What the strategy needs and does not have: its own problems, then its watermark's and
    deletes' (by its rules, ``PlanStrategy``)."""
    rules = get_strategy(planned.strategy)
    found = list(rules.problems(empty, planned, table, source))
    strategy, watermark = planned.strategy, planned.watermark
    if rules.watermark and watermark is None:
        candidates = [f.name for f in empty.schema.fields if f.dataType.typeName() in _ORDERED]
        like = f" (one of {', '.join(candidates[:5])})" if candidates else ""
        found.append(f"{strategy} reads the rows past a watermark column: set watermark{like}")
    if watermark is not None:
        found += _watermark_problems(empty, planned, table, rules)
    if rules.deletes is False and planned.detect_deletes:
        found.append(f"{no_deletes(strategy, rules)}, so it cannot mirror deletes: set detect_deletes: false")
    return found


def _watermark_problems(
    empty: DataFrame, planned: PlannedTable, table: SourceTable, rules: PlanStrategy
) -> list[str]:
    watermark = planned.watermark
    assert watermark is not None
    if not rules.watermark:
        return [f"watermark {watermark!r} is read by {readers()} only: remove it, or choose one"]
    if watermark not in empty.columns:
        return [
            f"watermark {watermark!r} is not a column of the table.{did_you_mean(watermark, empty.columns)}"
        ]
    kind = empty.schema[watermark].dataType
    if kind.typeName() not in _ORDERED:
        return [
            f"watermark {watermark!r} is {kind.simpleString()}; a watermark is a number, date or timestamp "
            "that grows with every change"
        ]
    if rules.increasing and watermark not in table.increasing:
        numbered = f" such as {table.increasing[0]!r}" if table.increasing else ""
        return [
            f"{planned.strategy} needs a strictly increasing watermark (an identity or sequence the source "
            f"numbers rows by) and the source does not say {watermark!r} is one: a row committed late with "
            f"a smaller value would never be read; use such a column{numbered}, or incremental with keys"
        ]
    return []


def collisions(tables: Sequence[PlannedTable]) -> dict[int, str]:
    """Index -> problem, for each table whose target is also another's (names compare case-folded)."""
    seen: dict[str, list[int]] = {}
    for i, planned in enumerate(tables):
        seen.setdefault(_identity(planned.table), []).append(i)
    found = {}
    for same in seen.values():
        for i in same if len(same) > 1 else ():
            others = ", ".join(repr(tables[j].source) for j in same if j != i)
            found[i] = (
                f"its target {tables[i].table} is also where {others} goes (table names compare "
                "case-insensitively); give one of them another table: in the plan"
            )
    return found


def too_many(planned: Sequence[PlannedTable], existing: Sequence[str]) -> list[str]:
    """The plan's problem when the database would hold more tables than a mirrored database takes."""
    targets = {_identity(t.table) for t in planned if t.enabled} | {_identity(t) for t in existing}
    if len(targets) <= TABLE_LIMIT:
        return []
    return [
        f"{len(targets):,} tables with the database's own: a mirrored database holds about {TABLE_LIMIT} "
        "(Fabric's limit); disable some (enabled: false) or split them over two databases"
    ]


def _identity(table: str) -> str:
    return identity(*parse_table(table))
