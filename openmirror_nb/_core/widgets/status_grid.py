"""The monitor pane's grid at any size (a database may hold hundreds of tables): the tables that
need attention first, a filter by name and one by badge, a line saying how many tables show, and a
header that stays on top while the grid scrolls in a box of bounded height."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import ipywidgets as w

if TYPE_CHECKING:
    from openmirror_nb import StatusReport, TableStatus

ATTENTION = ("failed", "blocked", "warning")  # the badges the "Needs attention" switch keeps
GRID_HEIGHT = "440px"  # about fifteen tables; the rest scroll under the header


def shown(report: StatusReport, *, text: str = "", attention: bool = False) -> list[TableStatus]:
    """The tables the grid shows, worst first: names containing ``text`` (in any case), and only
    the failed, blocked and warning ones when ``attention``."""
    needle = text.strip().casefold()
    return [
        t
        for t in report.worst_first
        if needle in t.table.casefold() and (not attention or t.health in ATTENTION)
    ]


class GridView:
    """The filter bar (a name filter, the "Needs attention" switch and the count line) and the
    grid itself; ``on_change`` is called when the user changes a filter."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.filter_box = w.Text(
            placeholder="part of a table name", description="Filter", layout=w.Layout(width="300px")
        )
        self.attention_toggle = w.ToggleButton(
            description="Needs attention",
            icon="exclamation-triangle",
            value=False,
            tooltip="Show only the failed, blocked and warning tables",
        )
        self.count_line = w.HTML()
        # the widget's own box scrolls: its layout is all Fabric's ipywidgets need to bound it
        self.grid = w.HTML(layout=w.Layout(max_height=GRID_HEIGHT, overflow="auto"))
        self.grid.add_class("om-grid-box")
        self.bar = w.HBox([self.filter_box, self.attention_toggle, self.count_line])
        self.filter_box.observe(lambda _: on_change(), names="value")
        self.attention_toggle.observe(lambda _: on_change(), names="value")

    def render(self, report: StatusReport, *, trend: Mapping[str, Sequence[int]], notes: str) -> None:
        """Show the tables of ``report`` that pass the filters, worst first, then ``notes``."""
        total = len(report.tables)
        rows = shown(report, text=self.filter_box.value, attention=self.attention_toggle.value)
        view = dataclasses.replace(report, tables=tuple(rows))
        empty = "<div><i>No table matches the filter.</i></div>" if total and not rows else ""
        self.grid.value = view.grid_html(trend=trend, sticky=True) + empty + notes
        self.count_line.value = _count(len(rows), total, self.filter_box.value, self.attention_toggle.value)


def _count(count: int, total: int, text: str, attention: bool) -> str:
    if count == total:
        said = f"{total:,} table{'' if total == 1 else 's'}" + (", worst first" if total > 1 else "")
    else:
        said = f"showing {count:,} of {total:,} tables"
        if text.strip():
            said += f" matching '{text.strip()}'"
        if attention:
            said += ", needing attention only"
    return f"<span class='om-shown'>{html.escape(said)}</span>"
