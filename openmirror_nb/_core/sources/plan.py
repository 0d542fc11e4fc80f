"""A source plan: per table of a source, where it goes, its keys and their origin, how it is
mirrored, what stands in the way and what to know before it runs (``PlannedTable``); the whole
(``SourcePlan``), shown as text, HTML and pandas, and saved as a YAML file a person edits
(``plan_file``)."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from openmirror_nb._core.errors import ConfigError, did_you_mean
from openmirror_nb._core.feed_options import FeedOptions, changed
from openmirror_nb._core.table_names import fold

if TYPE_CHECKING:
    import pandas as pd

    from openmirror_nb._core.sources.table import Source

Strategy = str
"""How a planned table is mirrored, by the name a strategy is registered as: ``snapshot`` (the
whole table, diffed against the last push), ``delta_sync`` (a Delta table's change data feed,
``db.sync_delta``), ``incremental`` (rows past a watermark column, upserted), ``append``
(insert-only rows past a strictly increasing watermark, no key columns), or one registered with
``om.register_strategy`` (``om.strategy_names()`` lists them)."""
KeyOrigin = Literal["declared", "primary_key", "unique", "suggested"]
"""Where a planned table's keys come from, in precedence order: written in the plan (``declared``),
the source's primary key, a unique constraint on NOT NULL columns, or profiling the rows
(``suggested``: pushed only once accepted; its note gives the evidence and the risk)."""
KEY_ORIGINS: tuple[KeyOrigin, ...] = ("declared", "primary_key", "unique", "suggested")
_SHOWN = 500  # rows of the plain and HTML views; to_pandas() has every table


@dataclass(frozen=True)
class PlannedTable:
    """One source table in a plan.

    Attributes:
        source: The table as the source names it.
        table: The mirrored table, ``schema.name`` (or ``name``), as ``db.push`` takes it.
        keys: Its key columns (``keyColumns``); empty for ``append`` or when none was found.
        key_origin: Where the keys come from (``KeyOrigin``), ``None`` without keys.
        strategy: How it is mirrored (``Strategy``).
        watermark: The column ``incremental`` and ``append`` read past; ``None`` otherwise.
        detect_deletes: Whether deletes in the source are mirrored (always for ``snapshot`` and
            ``delta_sync``; for ``incremental`` by a sweep of the key columns; never for ``append``).
        enabled: Whether a run mirrors it.
        rows: Rows in the source when planned (an estimate for JDBC), ``None`` if unknown.
        problems: What stops it from being mirrored as planned, each with its fix.
        feed: The change-feed options its pushes read (``FeedOptions``; ``None``: the defaults):
            ``update_marker`` for ``snapshot``, also ``compact`` for ``delta_sync``; none for
            ``incremental`` and ``append``, which write feeds of their own (the strategy's
            ``feed`` says; a plan file that sets another is refused, and so is a run of the table).
        notes: What the planner assumed that nothing in the source guarantees, each with what to
            do: keys only today's rows make unique (rows profiled, distinct values, the risk), or
            ``append`` planned for a keyless table the source numbers rows of (what insert-only
            leaves out). They stop nothing; planning again writes them anew.
        types: Declared column types, column -> ``decimal(p,s)`` or ``string``, for columns whose
            source type no Spark type holds whole (PostgreSQL's ``numeric`` without precision):
            a run converts each value exactly or refuses it (``column_types``). Kept when planning
            again with ``like=``.
        freshness_goal: How fresh the mirrored table should be, in seconds (``db.status`` warns
            when its age or p95 exceeds it); ``None``: the plan sets none, and a goal set with
            ``db.set_freshness_goal`` stays. A run stores it. Kept when planning again with ``like=``.

    Raises:
        ConfigError: ``feed`` is not a ``FeedOptions``; ``freshness_goal`` is not a number of
            seconds above 0.
    """

    source: str
    table: str
    keys: tuple[str, ...]
    key_origin: KeyOrigin | None
    strategy: Strategy
    watermark: str | None
    detect_deletes: bool
    enabled: bool
    rows: int | None
    problems: tuple[str, ...]
    feed: FeedOptions | None = None
    notes: tuple[str, ...] = ()
    types: Mapping[str, str] = field(default_factory=dict, hash=False)
    freshness_goal: float | None = None

    def __post_init__(self) -> None:
        if self.freshness_goal is not None and not good_goal(self.freshness_goal):
            raise ConfigError(
                f"freshness_goal {self.freshness_goal!r} is not a number of seconds above 0; write e.g. "
                "freshness_goal=300, or None for no goal."
            )
        if self.feed is None:
            return
        if not isinstance(self.feed, FeedOptions):
            raise ConfigError(f"feed {self.feed!r} is not an om.FeedOptions; write feed=om.FeedOptions(...).")


FIELDS = tuple(f.name for f in fields(PlannedTable))


def good_goal(value: object) -> bool:
    """Whether ``value`` is a freshness goal: a finite number of seconds above 0 (not a bool)."""
    return type(value) in (int, float) and math.isfinite(value) and value > 0  # type: ignore[arg-type,operator]


@dataclass
class SourcePlan:
    """What ``db.plan_sources`` found: every table of a source with its target, keys, strategy
    and problems. Edit it in its saved file (``save``, ``om.load_plan``) or replace its tables
    with ``dataclasses.replace``; ``db.run_plan`` mirrors it.

    Attributes:
        source: The source planned (an ``om.Source``: ``Catalog``, ``Jdbc``, ``DeltaFolder``...).
        target_schema: The mirrored tables' schema (``None``: the landing zone's root, ``dbo``).
        tables: One ``PlannedTable`` per source table, in source name order.
        problems: What concerns the plan as a whole (more tables than a mirrored database holds).
    """

    source: Source
    target_schema: str | None
    tables: list[PlannedTable]
    problems: list[str] = field(default_factory=list)

    def table(self, name: str) -> PlannedTable:
        """The planned table whose source or target is ``name`` (compared case-insensitively).

        Raises:
            ConfigError: no table has that name (the message suggests the nearest).

        Example:
            >>> plan.table("orders").keys
            ('order_id',)
        """
        for planned in self.tables:
            if fold(name) in (fold(planned.source), fold(planned.table)):
                return planned
        names = [t.source for t in self.tables]
        raise ConfigError(f"The plan has no table {name!r}.{did_you_mean(name, names)}")

    def to_pandas(self) -> pd.DataFrame:
        """One row per planned table, one column per ``PlannedTable`` field (keys and problems as
        lists).

        Example:
            >>> plan.to_pandas().query("problems.str.len() > 0")
        """
        import pandas as pd

        rows = [
            {n: list(v) if isinstance(v, tuple) else v for n, v in _items(t)} | {"types": dict(t.types)}
            for t in self.tables
        ]
        return pd.DataFrame(rows, columns=list(FIELDS))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the plan as YAML, to edit by hand and load with ``om.load_plan``. The source is
        saved without secrets: a JDBC password as its reference (``password_env`` or
        ``password_secret``) only.

        Example:
            >>> plan.save("shop.yaml")
        """
        from openmirror_nb._core.sources.plan_text import VERSION, Flow, plan_text

        body = {
            "version": VERSION,
            "source": _saved_source(self.source),
            "target_schema": self.target_schema,
            "problems": list(self.problems),
            "tables": [_entry(t, Flow) for t in self.tables],
        }
        Path(path).write_text(plan_text(body, unsaved=self.source.has_unsaved_secrets), encoding="utf-8")

    def _summary(self) -> str:
        troubled = sum(1 for t in self.tables if t.problems)
        guessed = sum(1 for t in self.tables if t.key_origin == "suggested")
        where = self.target_schema or "the landing zone's root"
        # A suggested key is planned, not a problem, but a run pushes it only once accepted, and
        # a key only today's rows vouch for can break on the next run: the count says what to do.
        accept = (
            f", {guessed:,} with suggested keys to accept: only today's rows make them unique and keys "
            "never change once pushed (declare a key, or mirror insert-only with append; see "
            f"{'its note' if guessed == 1 else 'their notes'})"
            if guessed
            else ""
        )
        return (
            f"SourcePlan of {self.source!r} into {where}: {len(self.tables):,} tables, "
            f"{troubled:,} with problems{accept}"
        )

    def __repr__(self) -> str:
        lines = [self._summary(), *(f"! {p}" for p in self.problems)]
        cells = [_cells(t) for t in self.tables[:_SHOWN]]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(_HEADS)] if cells else []
        if cells:
            lines.append("  " + "  ".join(h.ljust(w) for h, w in zip(_HEADS, widths, strict=True)).rstrip())
        for planned, row in zip(self.tables, cells, strict=False):
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
            lines += [f"      ! {p}" for p in planned.problems]
            lines += [f"      note: {n}" for n in planned.notes]
            lines += [f"      type: {c} {t}" for c, t in planned.types.items()]
            if planned.freshness_goal is not None:
                lines.append(f"      freshness goal: {planned.freshness_goal:g} s")
        if len(self.tables) > _SHOWN:
            lines.append(f"  ... and {len(self.tables) - _SHOWN:,} more (plan.to_pandas() has them all)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th style='text-align:left'>{h}</th>" for h in _HEADS)
        body = "".join(_row_html(t) for t in self.tables[:_SHOWN])
        more = (
            f"<div><i>... and {len(self.tables) - _SHOWN:,} more (plan.to_pandas() has them all)</i></div>"
            if len(self.tables) > _SHOWN
            else ""
        )
        plan_problems = "".join(f"<div style='color:#c62828'>{html.escape(p)}</div>" for p in self.problems)
        return (
            f"<div class='om-source-plan'><b>{html.escape(self._summary())}</b>{plan_problems}"
            f"<table><tr>{head}</tr>{body}</table>{more}</div>"
        )


_HEADS = ("source", "table", "keys", "origin", "strategy", "watermark", "deletes", "enabled", "rows")


def _saved_source(source: Source) -> dict[str, object]:
    """``source`` as its plan file holds it, ``kind`` first; refused when that kind would not load
    back as this source (``om.register_source``)."""
    from openmirror_nb._core.sources.registry import source_class

    registered = source_class(source.kind)
    if not isinstance(source, registered):
        raise ConfigError(
            f"The plan's source {source!r} is of kind {source.kind!r}, which is registered to "
            f"{registered.__name__}, so its plan file would not load back as it; give "
            f"{type(source).__name__} a kind of its own and register it (om.register_source)."
        )
    return {"kind": source.kind, **source.to_dict()}


def _items(planned: PlannedTable) -> list[tuple[str, object]]:
    return [(n, getattr(planned, n)) for n in FIELDS]


def _entry(planned: PlannedTable, flow: type[list[str]]) -> dict[str, object]:
    """A table as its plan file holds it: lists as YAML lists, keys on one line (``flow``); notes,
    types, a freshness goal and a feed (by the options it sets) only when the table has them
    (files without stay as before)."""
    entry: dict[str, object] = {
        n: flow(planned.keys) if n == "keys" else list(v) if isinstance(v, tuple) else v
        for n, v in _items(planned)
        if n not in ("feed", "notes", "types", "freshness_goal")
    }
    if planned.notes:
        entry["notes"] = list(planned.notes)
    if planned.types:
        entry["types"] = dict(planned.types)
    if planned.freshness_goal is not None:
        entry["freshness_goal"] = planned.freshness_goal
    if planned.feed is not None:
        entry["feed"] = {n: flow(v) if n == "order_by" else v for n, v in changed(planned.feed).items()}
    return entry


def _cells(t: PlannedTable) -> tuple[str, ...]:
    return (
        t.source,
        t.table,
        ", ".join(t.keys) or "-",
        t.key_origin or "-",
        t.strategy,
        t.watermark or "-",
        "yes" if t.detect_deletes else "no",
        "yes" if t.enabled else "no",
        "?" if t.rows is None else f"{t.rows:,}",
    )


def _row_html(t: PlannedTable) -> str:
    cells = "".join(f"<td style='text-align:left'>{html.escape(c)}</td>" for c in _cells(t))
    style = "" if t.enabled else " style='color:#9e9e9e'"
    extra = _under(t.problems, "#c62828") + _under(t.notes, "#ef6c00")
    return f"<tr data-problems='{len(t.problems)}' data-notes='{len(t.notes)}'{style}>{cells}</tr>{extra}"


def _under(lines: tuple[str, ...], colour: str) -> str:
    """A row's problems or notes, as a list across the columns under it."""
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return (
        f"<tr><td></td><td colspan='{len(_HEADS) - 1}' style='color:{colour};text-align:left'>"
        f"<ul style='margin:0'>{items}</ul></td></tr>"
    )
