"""``PlanGrid``: the tables of a ``SourcePlan`` as one row of widgets each (enabled, source, target,
keys and their origin, strategy, rows, badge, problems and notes), edited in place; ``planned()``
gives the plan as the grid now says. The ``SourcePlanner`` panel embeds it."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable
from typing import Any

import ipywidgets as w

import openmirror_nb as om
from openmirror_nb._core.widgets.panel import RED, RenderGuard

ORANGE = "#ef6c00"  # what waits for the user: a suggested key to accept, a note to read

HEADS = ("", "source", "target table", "keys", "origin", "strategy", "watermark", "rows", "run")
# Fixed widths, the same in the header and every row: rows of HBoxes line up as a grid, and a row's
# problems go under it across the columns (a GridBox child's grid_column did not span in JupyterLab).
WIDTHS = ("28px", "140px", "170px", "130px", "150px", "120px", "100px", "64px", "90px")
BADGES = {  # the run's colours (PlanRun's HTML uses the same for its statuses)
    "waiting": "#9e9e9e",
    "running": "#1565c0",
    "ok": "#2e7d32",
    "unchanged": "#616161",
    "skipped": ORANGE,
    "failed": RED,
}


class PlanRow(RenderGuard):
    """The widgets of one planned table; ``planned()`` is the table as edited."""

    def __init__(self, planned: om.PlannedTable, edited: Callable[[], None]) -> None:
        self.original = planned
        self._edited = edited
        self.enabled = w.Checkbox(value=planned.enabled, indent=False)
        self.target = w.Text(value=planned.table)
        self.keys = w.Text(value=", ".join(planned.keys), placeholder="key columns")
        self.origin = w.HTML()
        self.accept = w.Checkbox(description="accept", value=False, indent=False, layout=_width("auto"))
        self.strategy = w.Dropdown(options=om.strategy_names(), value=planned.strategy)
        self.watermark = w.Text(value=planned.watermark or "", placeholder="column")
        self.badge = w.HTML()
        self.rows_note = w.HTML(_rows(planned.rows))
        # under the row, across it: a problem is a sentence with its fix, too long for a cell
        self.problems = w.HTML(_problems(planned.problems), layout=w.Layout(margin="0 0 4px 36px"))
        self.notes = w.HTML(_notes(planned.notes), layout=w.Layout(margin="0 0 4px 36px"))
        self._inputs = (self.enabled, self.target, self.keys, self.accept, self.strategy, self.watermark)
        for widget in self._inputs:
            widget.observe(self._on_edit, names="value")
        self._show_origin()
        self.cells: list[Any] = [
            self.enabled,
            w.HTML(_source(planned.source)),
            self.target,
            self.keys,
            w.HBox([self.origin, self.accept], layout=w.Layout(align_items="center")),
            self.strategy,
            self.watermark,
            self.rows_note,
            self.badge,
        ]
        line = w.HBox([_fit(cell, width) for cell, width in zip(self.cells, WIDTHS, strict=True)])
        under = [self.problems] if planned.problems else []
        self.box = w.VBox([line, *under, *([self.notes] if planned.notes else [])])

    @property
    def suggested(self) -> bool:
        """Whether the keys are the planner's suggestion, still unedited (an accept is needed)."""
        return self.original.key_origin == "suggested" and self.key_columns == self.original.keys

    @property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.keys.value.split(",") if k.strip())

    def planned(self) -> om.PlannedTable:
        """The table as the row says: keys typed or an accepted suggestion are ``declared``; the
        planner's notes stay only while the row's keys and strategy are the ones they are about."""
        keys, origin, strategy = self.key_columns, self.original.key_origin, self.strategy.value
        if keys != self.original.keys or (self.suggested and self.accept.value):
            origin = "declared" if keys else None
        rules = om.get_strategy(strategy)  # the plan file's rules: keys and deletes by the strategy
        if rules.keys is False:
            keys, origin = (), None
        deletes = self.original.detect_deletes if rules.deletes is None else rules.deletes
        watermark = self.watermark.value.strip() or None
        was = self.original
        same = (keys, origin, strategy, watermark) == (was.keys, was.key_origin, was.strategy, was.watermark)
        return dataclasses.replace(
            was,
            enabled=self.enabled.value,
            table=self.target.value.strip(),
            keys=keys,
            key_origin=origin,
            strategy=strategy,
            watermark=watermark,
            detect_deletes=deletes,
            notes=was.notes if same else (),
        )

    def trouble(self) -> str | None:
        """What keeps the row from being saved or run as typed (a bad target, no watermark)."""
        try:
            om.check_table_name(self.target.value.strip())
        except om.InvalidNameError as exc:
            return str(exc)
        keys = self.key_columns
        if len(set(keys)) != len(keys):
            return f"Table {self.original.source!r}: keys {', '.join(keys)} repeat a column; list each once."
        if om.get_strategy(self.strategy.value).watermark and not self.watermark.value.strip():
            return (
                f"Table {self.original.source!r}: strategy {self.strategy.value} reads past a watermark "
                "column; type it in the watermark field."
            )
        return None

    def set_badge(self, status: str, *, title: str = "") -> None:
        colour = BADGES.get(status, "inherit")
        self.badge.value = (
            f"<span class='om-badge om-badge-{status}' title='{html.escape(title)}' style='color:#fff;"
            f"background:{colour};border-radius:8px;padding:1px 7px;font-size:11px'>{status}</span>"
            if status
            else ""
        )

    def close(self) -> None:
        """Close the row's widgets (each holds a comm)."""
        stack = [self.box, self.problems, self.notes]
        while stack:
            widget = stack.pop()
            stack.extend(getattr(widget, "children", ()))
            widget.close()

    def lock(self, locked: bool) -> None:
        for widget in self._inputs:
            widget.disabled = locked
        if not locked:
            self._by_strategy()

    def _on_edit(self, change: dict[str, Any]) -> None:
        if self._rendering:
            return
        with self._quiet():
            self._show_origin()
        self._edited()

    def _show_origin(self) -> None:
        origin = self.planned().key_origin
        colour = ORANGE if self.suggested and not self.accept.value else "inherit"
        self.origin.value = f"<span style='color:{colour}'>{origin or '-'}</span>"
        self.accept.layout.display = None if self.suggested else "none"
        self._by_strategy()

    def _by_strategy(self) -> None:
        """A watermark only for the strategies that read past one; no keys for those that write
        none (``append``)."""
        rules = om.get_strategy(self.strategy.value)
        self.watermark.disabled = not rules.watermark and not self.watermark.value
        self.keys.disabled = self.accept.disabled = rules.keys is False


class PlanGrid(w.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """Every table of a plan as a grid row under a header, scrolled when long."""

    def __init__(self, edited: Callable[[], None]) -> None:
        self._edited = edited
        self.rows: list[PlanRow] = []
        heads = [_fit(w.HTML(f"<b>{h}</b>"), width) for h, width in zip(HEADS, WIDTHS, strict=True)]
        self.head = w.HBox(heads)
        self.grid = w.VBox([self.head])
        self.grid.add_class("om-plan-grid")
        super().__init__([self.grid], layout=w.Layout(max_height="460px", overflow="auto"))

    def show(self, plan: om.SourcePlan) -> None:
        """Lay out ``plan``'s tables (the widgets of the earlier plan are closed)."""
        old = self.rows
        self.rows = [PlanRow(t, self._edited) for t in plan.tables]
        self.grid.children = [self.head, *(row.box for row in self.rows)]
        for row in old:
            row.close()

    def row(self, name: str) -> PlanRow:
        """The row whose source or (planned) target table is ``name``."""
        for row in self.rows:
            if name in (row.original.source, row.original.table, row.target.value.strip()):
                return row
        raise KeyError(name)


def _fit(cell: Any, width: str) -> Any:
    """``cell`` at the column's width, neither growing nor shrinking with its content."""
    cell.layout.width, cell.layout.flex = width, f"0 0 {width}"
    return cell


def _width(width: str) -> w.Layout:
    return w.Layout(width=width)  # one Layout per widget: a shared one would hide every accept at once


def _source(name: str) -> str:
    return (
        f"<div title='{html.escape(name)}' style='overflow:hidden;text-overflow:ellipsis;"
        f"white-space:nowrap;max-width:136px'>{html.escape(name)}</div>"
    )


def _rows(rows: int | None) -> str:
    return f"<span style='float:right'>{'?' if rows is None else f'{rows:,}'}</span>"


def _notes(notes: tuple[str, ...]) -> str:
    lines = "".join(f"<div>{html.escape(n)}</div>" for n in notes)
    return (
        f"<div class='om-notes' style='color:{ORANGE};line-height:1.3;white-space:normal;margin-bottom:4px'>"
        f"{lines}</div>"
    )


def _problems(problems: tuple[str, ...]) -> str:
    lines = "".join(f"<div>{html.escape(p)}</div>" for p in problems)
    return (
        f"<div class='om-problems' style='color:{RED};line-height:1.3;white-space:normal;margin-bottom:4px'>"
        f"{lines}</div>"
    )
