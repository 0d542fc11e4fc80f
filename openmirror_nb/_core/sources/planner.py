"""``db.plan_sources``: discover a source and plan each of its tables.

Keys, in precedence: declared in the plan (``like=``) > the source's primary key > a unique
constraint on NOT NULL columns > a suggestion from the rows (``suggest_keys``), which carries a note
of its evidence and its risk (``notes``). The strategy is the first registered one that fits the
table (``delta_sync`` for a Delta table with its change data feed on, ``append`` for one the source
numbers rows of and declares no key for), else ``snapshot``, unless the plan given as ``like=`` says
otherwise; what it needs comes from the registry (``get_strategy``), never from its name. Nothing
here writes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from openmirror_nb._core.column_types import apply_types, type_problems
from openmirror_nb._core.errors import ConfigError, InvalidNameError
from openmirror_nb._core.keys import key_suggestions
from openmirror_nb._core.sources import notes
from openmirror_nb._core.sources import problems as check
from openmirror_nb._core.sources.plan import KeyOrigin, PlannedTable, SourcePlan, Strategy
from openmirror_nb._core.sources.plan_strategy import PlanStrategy, get_strategy, strategy_for
from openmirror_nb._core.sources.registry import lacking
from openmirror_nb._core.sources.run_table import one_line
from openmirror_nb._core.sources.table import Source
from openmirror_nb._core.table_names import check_name, check_table_name, suggest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from openmirror_nb._core.sources.table import SourceTable

KeysOf = Callable[[str], "tuple[str, ...] | None"]
_SOURCES = "an om.Source: om.Catalog, om.Jdbc, om.DeltaFolder or a kind of om.register_source"


def plan_sources(
    source: Source,
    *,
    target_schema: str | None,
    like: SourcePlan | None,
    suggest: bool,
    keys_of: KeysOf,
    existing: Sequence[str],
    strategy: Strategy | None = None,
) -> SourcePlan:
    """The plan of every table of ``source`` (see ``Planning.plan_sources``).

    ``keys_of(target)`` gives the keyColumns of a table the database holds already (``None`` when
    it holds no such table); ``existing`` names the database's tables; ``strategy``, when given,
    is every table's that ``like`` does not plan.
    """
    from openmirror_nb._core.runtime import get_spark

    missing = lacking(source, Source)
    if missing:
        lacks = "" if len(missing) > 3 else f", which lacks {', '.join(missing)} (subclass om.Source)"
        raise ConfigError(f"plan_sources takes a source ({_SOURCES}), not {type(source).__name__}{lacks}.")
    schema = check_name(target_schema, what="Schema") if target_schema is not None else None
    if strategy is not None:
        get_strategy(strategy)  # a name no one registered is refused now, naming the registering call
    if like is not None and not _same(like.source, source):
        raise ConfigError(
            f"like= is a plan of {like.source!r}, not of {source!r}; pass a plan of this source."
        )
    before = {t.source: t for t in like.tables} if like else {}
    spark = get_spark()
    tables = [
        _plan_table(
            spark,
            source,
            found,
            schema,
            before.get(found.name),
            suggest=suggest,
            keys_of=keys_of,
            strategy=strategy,
        )
        for found in source.discover()
    ]
    for i, problem in check.collisions(tables).items():
        tables[i] = replace(tables[i], problems=(*tables[i].problems, problem))
    gone = sorted(set(before) - {t.source for t in tables})
    problems = check.too_many(tables, existing)
    if gone:
        problems.append(
            f"{', '.join(map(repr, gone))} of the earlier plan {'is' if len(gone) == 1 else 'are'} no longer "
            "in the source; they are left out"
        )
    return SourcePlan(source, schema, tables, problems)


def _same(one: Source, other: Source) -> bool:
    """Whether two sources are one: of one kind, saved alike (a loaded plan's source is another
    object than the one planned)."""
    return one.kind == other.kind and one.to_dict() == other.to_dict()


def target_name(schema: str | None, name: str) -> str:
    """The mirrored table of source table ``name``: ``schema.name`` by the naming rule, or the
    name the rule suggests for it (``Order Notes`` -> ``OrderNotes``)."""
    base = name.rsplit("/", 1)[-1].replace(".", "_")
    candidate = base if schema is None else f"{schema}.{base}"
    try:
        return check_table_name(candidate)
    except InvalidNameError:
        return check_table_name(suggest(candidate))


def _plan_table(
    spark: SparkSession,
    source: Source,
    table: SourceTable,
    schema: str | None,
    before: PlannedTable | None,
    *,
    suggest: bool,
    keys_of: KeysOf,
    strategy: Strategy | None = None,
) -> PlannedTable:
    strategy = before.strategy if before else strategy or strategy_for(table)
    rules = get_strategy(strategy)
    planned = PlannedTable(
        source=table.name,
        table=before.table if before else target_name(schema, table.name),
        keys=(),
        key_origin=None,
        strategy=strategy,
        watermark=before.watermark if before else _watermark(rules, table),
        detect_deletes=before.detect_deletes if before else rules.deletes is True,
        enabled=before.enabled if before else True,
        rows=table.rows,
        problems=(),
        feed=before.feed if before else None,
        types=dict(before.types) if before else {},
        freshness_goal=before.freshness_goal if before else None,
    )
    if table.unreadable or table.schema is None:
        return replace(planned, problems=(table.unreadable or "its columns are unknown",))
    existing = keys_of(planned.table)
    chosen = _keys(source, table, before, rules, suggest=suggest)
    noted = [chosen.note] if chosen.note else []
    watermark = planned.watermark
    if rules.keys is False and watermark is not None and watermark in table.increasing:
        noted.append(notes.insert_only(watermark))
    planned = replace(planned, keys=chosen.keys, key_origin=chosen.origin, notes=tuple(noted))
    found = type_problems(table.schema, planned.types, dict(table.untyped))
    empty = spark.createDataFrame([], table.schema)
    if not found:  # the columns as a run reads them, the declared types applied
        empty = apply_types(empty, planned.types, table=table.name)
    found += check.column_problems(empty)
    if chosen.problem and not existing:
        found.append(chosen.problem)
    found += check.key_problems(empty, planned, existing)
    found += check.strategy_problems(empty, planned, table, source)
    return replace(planned, problems=tuple(found))


def _watermark(rules: PlanStrategy, table: SourceTable) -> str | None:
    """A new plan's watermark, for a strategy that reads past one: the first column the source
    numbers rows by (strictly increasing, so right for ``append`` too), else none to guess."""
    return table.increasing[0] if rules.watermark and table.increasing else None


@dataclass(frozen=True)
class _Keys:
    """A planned table's keys, their origin, the problem when there are none, and the note of
    keys only the rows vouch for."""

    keys: tuple[str, ...] = ()
    origin: KeyOrigin | None = None
    problem: str | None = None
    note: str | None = None


def _keys(
    source: Source, table: SourceTable, before: PlannedTable | None, rules: PlanStrategy, *, suggest: bool
) -> _Keys:
    """The keys of ``table`` by precedence (none for a strategy that writes none, ``append``)."""
    if rules.keys is False:
        return _Keys()
    if before is not None and before.key_origin == "declared":
        return _Keys(before.keys, "declared")
    if table.primary_key:
        return _Keys(table.primary_key, "primary_key")
    if table.unique:
        return _Keys(table.unique[0], "unique")
    if rules.keys is None:  # keys only a constraint vouches for: a keyless table is insert-only
        return _Keys(note=notes.keyless(table.name))
    if suggest:
        try:
            found = key_suggestions(source.read(table.name))
        except Exception as exc:  # the rows cannot be read: the other tables are still planned
            why = one_line(source, exc)
            return _Keys(problem=f"its rows cannot be read to suggest keys ({why}); declare keys")
        if found:
            return _Keys(found[0].keys, "suggested", note=notes.guessed_keys(found[0], table))
    return _Keys(problem=check.no_key_problem(table, suggested=suggest))
