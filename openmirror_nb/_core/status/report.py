"""``StatusReport``, what ``db.status()`` returns, and how it reads: plain text like
``git status``, HTML with a coloured badge per table (the ``MonitorPane`` shows its header and
grid), and JSON for ``openmirror status --json``. Built in ``status.gather``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from openmirror_nb._core.landing_zone.stream_lags import lag_text
from openmirror_nb._core.status.freshness_html import fresh_cell, fresh_text
from openmirror_nb._core.status.records import COLUMNS, HEALTH_ORDER, Health, ReplicatorStatus, TableStatus
from openmirror_nb._core.status.render import BADGE_COLOURS, ago, badge, since, sparkline_svg

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class StatusReport:
    """The status of a mirrored database (or one table of it), taken at ``taken_at``.

    ``tables`` has one ``TableStatus`` per table folder (and per table the mirror still lists
    after its folder was deleted); ``foreign`` names landing-zone items that are not tables;
    ``notes`` says which source could not be read and what the report shows instead.
    """

    target: str
    taken_at: datetime
    replicator: ReplicatorStatus
    tables: tuple[TableStatus, ...]
    foreign: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def __getitem__(self, table: str) -> TableStatus:
        for status in self.tables:
            if status.table == table or status.table.casefold() == table.casefold():
                return status
        raise KeyError(table)

    @property
    def health(self) -> Health:
        """The worst badge of all tables (``ok`` for a database without tables)."""
        found = {t.health for t in self.tables}
        return next((h for h in HEALTH_ORDER if h in found), "ok")

    @property
    def needs_attention(self) -> tuple[TableStatus, ...]:
        """The tables that are failed or blocked (what a scheduled job alerts on), failed ones
        first, each kind in table order."""
        return tuple(
            sorted(
                (t for t in self.tables if t.health in ("failed", "blocked")),
                key=lambda t: HEALTH_ORDER.index(t.health),
            )
        )

    @property
    def worst_first(self) -> tuple[TableStatus, ...]:
        """The tables by badge, worst first (failed, blocked, warning, pending, ok, unknown), each
        badge's tables by name (the order the monitoring pane lists them in)."""
        return tuple(sorted(self.tables, key=lambda t: (HEALTH_ORDER.index(t.health), t.table.casefold())))

    @property
    def summary(self) -> str:
        """One line: how many tables, and how many of each badge, worst first."""
        return summary_line(self)

    def header_html(self) -> str:
        """The database, a badge of the worst health with the summary, and the replicator's line
        (the first line of the HTML the report shows, and the monitoring pane's header)."""
        return (
            f"<b>Mirrored database</b> <code>{html.escape(self.target)}</code> "
            f"{badge(self.health, self.summary)} <span>{html.escape(self.replicator.summary)}</span>"
        )

    def grid_html(self, *, trend: Mapping[str, Sequence[int]] | None = None, sticky: bool = False) -> str:
        """The status grid, one row per table with what to do under a problem; ``trend`` (pending
        files over time, per table) adds a ``pending over time`` column of sparklines; ``sticky``
        keeps the header row on top while the grid scrolls in a box (the monitor pane's)."""
        lines = None if trend is None else {name: sparkline_svg(list(v)) for name, v in trend.items()}
        return grid_html(self, trend=lines, sticky=sticky)

    def to_pandas(self) -> pd.DataFrame:
        """One row per table with the columns of ``COLUMNS``."""
        import pandas as pd

        frame = pd.DataFrame([t.row() for t in self.tables], columns=list(COLUMNS))
        # nullable integers: an unknown count stays <NA> instead of turning the column to floats
        counts = ["last_sequence", "processed_rows", "mirrored_rows", "state_rows", "source_rows"]
        return frame.astype({c: "Int64" for c in counts})

    def to_dict(self) -> dict[str, object]:
        """The report as JSON-ready values (``openmirror status --json``)."""
        return as_json(self)

    def __repr__(self) -> str:
        return as_text(self)

    def _repr_html_(self) -> str:
        return as_html(self)


def summary_line(report: StatusReport) -> str:
    counts: dict[str, int] = {}
    for t in report.tables:
        counts[t.health] = counts.get(t.health, 0) + 1
    parts = ", ".join(f"{counts[h]:,} {h}" for h in HEALTH_ORDER if h in counts)  # worst first
    count = len(report.tables)
    return f"{count:,} table{'' if count == 1 else 's'}" + (f": {parts}" if parts else "")


def _detail(t: TableStatus, now: datetime) -> str:
    if t.health in ("failed", "blocked", "warning"):
        return t.advice[0] if t.advice else t.status
    # when a push last looked: an idle table's scheduled job keeps this recent, a dead one does not
    checked = f", checked {since(t.last_checked, now)}" if t.last_checked else ""
    if t.pending:
        return f"{len(t.pending):,} pending, oldest waiting {ago(t.lag_seconds)}{checked}"
    return f"{t.processed_files:,} processed, {t.rows_text} rows, synced {since(t.last_sync, now)}{checked}"


def as_text(report: StatusReport) -> str:
    """The report as ``git status`` would put it: one line per table (its badge, name, status,
    freshness and what it does), the fix under a problem."""
    now = report.taken_at
    lines = [f"Mirrored database {report.target} ({report.replicator.summary})", summary_line(report), ""]
    width = max((len(t.table) for t in report.tables), default=5)
    fresh = {t.table: fresh_text(t.freshness) for t in report.tables}
    fresh_width = max((len(v) for v in fresh.values()), default=0)
    indent = " " * (width + 25 + fresh_width + 2)  # under the last column, where the detail starts
    for t in report.tables:
        cells = f"  {t.health:<8} {t.table:<{width}}  {t.status:<12} {fresh[t.table]:<{fresh_width}}"
        lines.append(f"{cells}  {_detail(t, now)}")
        if t.health in ("failed", "blocked", "warning"):
            lines += [f"{indent}-> {line}" for line in t.advice[1:4]]
        # a missed goal is said in full (the column only marks it with "!"), unless the advice has it
        if t.freshness is not None and t.freshness.missed and t.freshness.missed not in t.advice[:4]:
            lines.append(f"{indent}fresh: {t.freshness.missed}")
        if t.reconciliation is not None:
            lines.append(f"{indent}rows: {t.reconciliation.message}")
        if t.stream_lag:
            lines.append(f"{indent}kafka: {lag_text(t.stream_lag)}")
    if report.foreign:
        lines += ["", "Not tables:", *(f"  {item}" for item in report.foreign)]
    if report.notes:
        lines += ["", "Notes:", *(f"  {note}" for note in report.notes)]
    return "\n".join(lines).rstrip()


def table_rows_html(report: StatusReport, *, trend: Mapping[str, str] | None = None) -> str:
    """The ``<tr>`` rows of the status grid: one per table (its ``fresh`` cell red or amber when
    the table misses its freshness goal), plus a row with what to do for a table that is failed,
    blocked or needs attention. ``trend`` adds a last cell per table (the
    pane's sparklines)."""
    out = []
    now = report.taken_at
    span = len(GRID_COLUMNS) - 1 + (trend is not None)  # every column but the badge's
    for t in report.tables:
        name = html.escape(t.table)
        last = "" if trend is None else f"<td>{trend.get(t.table, '')}</td>"
        out.append(
            f"<tr class='om-row' data-table='{name}'><td>{badge(t.health)}</td><td><b>{name}</b></td>"
            f"<td>{html.escape(t.status)}</td><td style='text-align:right'>{len(t.pending):,}</td>"
            f"<td style='text-align:right'>{t.processed_files:,}</td>"
            f"<td>{html.escape(t.failed_file or '')}</td><td style='text-align:right'>{t.rows_text}</td>"
            f"<td>{since(t.last_sync, now)}</td><td>{since(t.last_checked, now)}</td>"
            f"<td style='text-align:right'>{ago(t.lag_seconds)}</td>{fresh_cell(t.freshness)}"
            f"{last}</tr>"
        )
        if t.health in ("failed", "blocked", "warning"):
            advice = "<br>".join(html.escape(line) for line in t.advice[:4])
            out.append(
                f"<tr class='om-advice' data-table='{name}'><td></td>"
                f"<td colspan='{span}' style='color:{BADGE_COLOURS[t.health]}'>{advice}</td></tr>"
            )
    return "".join(out)


# (title, left-aligned) per column of the grid
GRID_COLUMNS = (
    ("", False),
    ("table", True),
    ("status", True),
    ("pending", False),
    ("processed", False),
    ("failed file", True),
    ("rows", False),
    ("last sync", True),
    ("last checked", True),
    ("lag", False),
    ("fresh", True),  # the age and the p95 of the recent files, with their history (freshness_html)
)
# A header cell that stays on top while its table scrolls in a box: opaque, in Lab's own colour.
STICKY = "position:sticky;top:0;z-index:1;background:var(--jp-layout-color1,white)"


def grid_header(*, trend: bool = False, sticky: bool = False) -> str:
    """The grid's header row, with the sparklines' column when ``trend``."""
    columns = [*GRID_COLUMNS, ("pending over time", False)] if trend else list(GRID_COLUMNS)
    cells = []
    for title, left in columns:
        style = ";".join(s for s in ("text-align:left" if left else "", STICKY if sticky else "") if s)
        cells.append(f"<th style='{style}'>{title}</th>" if style else f"<th>{title}</th>")
    return f"<tr>{''.join(cells)}</tr>"


def grid_html(report: StatusReport, *, trend: Mapping[str, str] | None = None, sticky: bool = False) -> str:
    """The status grid as one ``<table>``, with a ``pending over time`` column when ``trend``.
    ``sticky`` is for a grid in a scrolling box: its header stays on top, and its rows take a
    text line's height, not a widget control's (what an ipywidgets ``HTML`` gives them)."""
    header = grid_header(trend=trend is not None, sticky=sticky)
    style = " style='line-height:1.4'" if sticky else ""
    rows = table_rows_html(report, trend=trend)
    return f"<table class='om-grid' cellpadding='3'{style}>{header}{rows}</table>"


def as_html(report: StatusReport) -> str:
    extra = ""
    if report.foreign:
        extra += "<div><b>Not tables:</b> " + "; ".join(html.escape(f) for f in report.foreign) + "</div>"
    if report.notes:
        extra += "<div><i>" + "<br>".join(html.escape(n) for n in report.notes) + "</i></div>"
    return f"<div class='om-status'>{report.header_html()}{grid_html(report)}{extra}</div>"


def as_json(report: StatusReport) -> dict[str, object]:
    """The report as JSON-ready values (times as ISO 8601 text)."""

    def value(v: object) -> object:
        return v.isoformat() if isinstance(v, datetime) else v

    rep = report.replicator
    return {
        "target": report.target,
        "taken_at": report.taken_at.isoformat(),
        "health": report.health,
        "replicator": {
            "status": rep.status,
            "heartbeat": value(rep.heartbeat),
            "heartbeat_age_seconds": rep.heartbeat_age,
            "error_code": rep.error_code,
            "error": rep.error,
            "source": rep.source,
        },
        "tables": [
            {
                **{k: value(v) for k, v in t.row().items()},
                "pending": [f.name for f in t.pending],
                "advice": list(t.advice),
            }
            for t in report.tables
        ],
        "foreign": list(report.foreign),
        "notes": list(report.notes),
    }
