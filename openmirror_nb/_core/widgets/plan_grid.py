"""``PlanGrid``: the tables of a ``SourcePlan`` as one row of widgets each (enabled, source, target,
keys and their origin, strategy, rows, badge, problems), edited in place; ``planned()`` gives the
plan as the grid now says. The ``SourcePlanner`` panel embeds it."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable
from typing import Any, get_args

import ipywidgets as w

import openmirror_nb as om
from openmirror_nb._core.widgets.panel import RED, RenderGuard

STRATEGIES: tuple[str, ...] = get_args(om.Strategy)
HEADS = ("", "source", "target table", "keys", "origin", "strategy", "watermark", "rows", "run", "problems")
_COLUMNS = "28px 140px 190px 150px 140px 120px 120px 60px 90px minmax(220px, 1fr)"
WATERMARKED = ("incremental", "append")  # the strategies that read past a watermark column
BADGES = {  # the run's colours (PlanRun's HTML uses the same for its statuses)
    "waiting": "#9e9e9e",
    "running": "#1565c0",
    "ok": "#2e7d32",
    "unchanged": "#616161",
    "skipped": "#ef6c00",
    "failed": RED,
}


class PlanRow(RenderGuard):
    """The widgets of one planned table; ``planned()`` is the table as edited."""

    def __init__(self, planned: om.PlannedTable, edited: Callable[[], None]) -> None:
        self.original = planned
        self._edited = edited
        self.enabled = w.Checkbox(value=planned.enabled, indent=False, layout=_width("auto"))
        self.target = w.Text(value=planned.table, layout=_width("180px"))
        self.keys = w.Text(value=", ".join(planned.keys), placeholder="key columns", layout=_width("140px"))
        self.origin = w.HTML()
        self.accept = w.Checkbox(description="accept", value=False, indent=False, layout=_width("auto"))
        self.strategy = w.Dropdown(options=STRATEGIES, value=planned.strategy, layout=_width("112px"))
        self.watermark = w.Text(value=planned.watermark or "", placeholder="column", layout=_width("112px"))
        self.badge = w.HTML()
        self.rows_note = w.HTML(_rows(planned.rows))
        self.problems = w.HTML(_problems(planned.problems))
        self._inputs = (self.enabled, self.target, self.keys, self.accept, self.strategy, self.watermark)
        for widget in self._inputs:
            widget.observe(self._on_edit, names="value")
        self._show_origin()
        self.cells: list[Any] = [
            self.enabled,
            w.HTML(f"<span title='{html.escape(planned.source)}'>{html.escape(planned.source)}</span>"),
            self.target,
            self.keys,
            w.HBox([self.origin, self.accept], layout=w.Layout(align_items="center")),
            self.strategy,
            self.watermark,
            self.rows_note,
            self.badge,
            self.problems,
        ]

    @property
    def suggested(self) -> bool:
        """Whether the keys are the planner's suggestion, still unedited (an accept is needed)."""
        return self.original.key_origin == "suggested" and self.key_columns == self.original.keys

    @property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.keys.value.split(",") if k.strip())

    def planned(self) -> om.PlannedTable:
        """The table as the row says: keys typed or an accepted suggestion are ``declared``."""
        keys, origin = self.key_columns, self.original.key_origin
        if keys != self.original.keys or (self.suggested and self.accept.value):
            origin = "declared" if keys else None
        return dataclasses.replace(
            self.original,
            enabled=self.enabled.value,
            table=self.target.value.strip(),
            keys=keys,
            key_origin=origin,
            strategy=self.strategy.value,
            watermark=self.watermark.value.strip() or None,
        )

    def trouble(self) -> str | None:
        """What keeps the row from being saved or run as typed (a bad target, no watermark)."""
        try:
            om.check_table_name(self.target.value.strip())
        except om.InvalidNameError as exc:
            return str(exc)
        if self.strategy.value in WATERMARKED and not self.watermark.value.strip():
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

    def lock(self, locked: bool) -> None:
        for widget in self._inputs:
            widget.disabled = locked
        if not locked:
            self.watermark.disabled = self.strategy.value not in WATERMARKED and not self.watermark.value

    def _on_edit(self, change: dict[str, Any]) -> None:
        if self._rendering:
            return
        with self._quiet():
            self._show_origin()
        self._edited()

    def _show_origin(self) -> None:
        origin = self.planned().key_origin
        colour = "#ef6c00" if self.suggested and not self.accept.value else "inherit"
        self.origin.value = f"<span style='color:{colour}'>{origin or '-'}</span>"
        self.accept.layout.display = None if self.suggested else "none"
        self.watermark.disabled = self.strategy.value not in WATERMARKED and not self.watermark.value


class PlanGrid(w.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """Every table of a plan as a grid row under a header, scrolled when long."""

    def __init__(self, edited: Callable[[], None]) -> None:
        self._edited = edited
        self.rows: list[PlanRow] = []
        self.grid = w.GridBox(layout=w.Layout(grid_template_columns=_COLUMNS, grid_gap="2px 8px"))
        self.grid.add_class("om-plan-grid")
        super().__init__([self.grid], layout=w.Layout(max_height="460px", overflow="auto"))

    def show(self, plan: om.SourcePlan) -> None:
        """Lay out ``plan``'s tables (the widgets of the earlier plan are closed)."""
        old = [cell for row in self.rows for cell in row.cells]
        self.rows = [PlanRow(t, self._edited) for t in plan.tables]
        heads = [w.HTML(f"<b>{h}</b>") for h in HEADS]
        self.grid.children = [*heads, *(cell for row in self.rows for cell in row.cells)]
        for cell in old:
            for child in getattr(cell, "children", ()):
                child.close()
            cell.close()

    def row(self, name: str) -> PlanRow:
        """The row whose source or (planned) target table is ``name``."""
        for row in self.rows:
            if name in (row.original.source, row.original.table, row.target.value.strip()):
                return row
        raise KeyError(name)


def _width(width: str) -> w.Layout:
    return w.Layout(width=width)  # one Layout per widget: a shared one would hide every accept at once


def _rows(rows: int | None) -> str:
    return f"<span style='float:right'>{'?' if rows is None else f'{rows:,}'}</span>"


def _problems(problems: tuple[str, ...]) -> str:
    lines = "".join(f"<div>{html.escape(p)}</div>" for p in problems)
    return f"<div class='om-problems' style='color:{RED};line-height:1.3;white-space:normal'>{lines}</div>"
