"""How a ``StatusReport`` reads: plain text like ``git status``, HTML with coloured badges (also
the ``MonitorPane``'s building blocks), JSON for ``openmirror status --json``, and an inline SVG
sparkline. Pure functions of the records: no I/O.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from openmirror_nb.status.records import Health, TableStatus

if TYPE_CHECKING:
    from openmirror_nb.status.records import StatusReport

# Badge colours: red, orange, amber, blue, green, grey (readable on Lab's light and dark themes).
BADGE_COLOURS: dict[Health, str] = {
    "failed": "#c62828",
    "blocked": "#d84315",
    "warning": "#b26a00",
    "pending": "#1565c0",
    "ok": "#2e7d32",
    "unknown": "#616161",
}


def ago(seconds: float | None) -> str:
    """``"12 s"``, ``"4 min"``, ``"3.2 h"``, ``"2.0 d"``; ``"-"`` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def since(moment: datetime | None, now: datetime) -> str:
    return "never" if moment is None else f"{ago((now - moment).total_seconds())} ago"


def rows_text(status: TableStatus) -> str:
    """Rows of the mirrored table when counted, else what the mirror processed."""
    if status.mirrored_rows is not None:
        return f"{status.mirrored_rows:,}"
    if status.processed_rows is not None:
        return f"{status.processed_rows:,} processed"
    return "-"


def replicator_line(report: StatusReport) -> str:
    rep = report.replicator
    beat = f", heartbeat {ago(rep.heartbeat_age)} ago" if rep.heartbeat_age is not None else ""
    error = f"; {rep.error_code or 'error'}: {rep.error}" if rep.error else ""
    return f"replicator {rep.status}{beat}{error}"


def summary_line(report: StatusReport) -> str:
    counts: dict[str, int] = {}
    for t in report.tables:
        counts[t.health] = counts.get(t.health, 0) + 1
    parts = ", ".join(f"{n} {h}" for h, n in counts.items())
    return f"{len(report.tables)} tables" + (f": {parts}" if parts else "")


def _detail(t: TableStatus, now: datetime) -> str:
    if t.health in ("failed", "blocked", "warning"):
        return t.advice[0] if t.advice else t.status
    if t.pending:
        return f"{len(t.pending)} pending, oldest waiting {ago(t.lag_seconds)}"
    return f"{t.processed_files} processed, {rows_text(t)} rows, synced {since(t.last_sync, now)}"


def as_text(report: StatusReport) -> str:
    """The report as ``git status`` would put it: one line per table, the fix under a problem."""
    now = report.taken_at
    lines = [f"Mirrored database {report.target} ({replicator_line(report)})", summary_line(report), ""]
    width = max((len(t.table) for t in report.tables), default=5)
    for t in report.tables:
        lines.append(f"  {t.health:<8} {t.table:<{width}}  {t.status:<12} {_detail(t, now)}")
        if t.health in ("failed", "blocked", "warning"):
            lines += [f"{'':<{width + 25}}-> {line}" for line in t.advice[1:4]]
        if t.reconciliation is not None:
            lines.append(f"{'':<{width + 25}}rows: {t.reconciliation.message}")
    if report.foreign:
        lines += ["", "Not tables:", *(f"  {item}" for item in report.foreign)]
    if report.notes:
        lines += ["", "Notes:", *(f"  {note}" for note in report.notes)]
    return "\n".join(lines).rstrip()


def badge(health: Health, text: str | None = None) -> str:
    colour = BADGE_COLOURS[health]
    return (
        f"<span class='om-badge om-badge-{health}' style='background:{colour};color:white;"
        "border-radius:8px;padding:1px 7px;font-size:85%;white-space:nowrap'>"
        f"{html.escape(text or health)}</span>"
    )


def table_rows_html(report: StatusReport, *, trend: Mapping[str, str] | None = None) -> str:
    """The ``<tr>`` rows of the status grid: one per table, plus a row with what to do for a
    table that is failed, blocked or needs attention. ``trend`` adds a last cell per table (the
    pane's sparklines)."""
    out = []
    now = report.taken_at
    span = 8 if trend is None else 9
    for t in report.tables:
        name = html.escape(t.table)
        last = "" if trend is None else f"<td>{trend.get(t.table, '')}</td>"
        out.append(
            f"<tr class='om-row' data-table='{name}'><td>{badge(t.health)}</td><td><b>{name}</b></td>"
            f"<td>{html.escape(t.status)}</td><td style='text-align:right'>{len(t.pending)}</td>"
            f"<td style='text-align:right'>{t.processed_files}</td>"
            f"<td>{html.escape(t.failed_file or '')}</td><td style='text-align:right'>{rows_text(t)}</td>"
            f"<td>{since(t.last_sync, now)}</td><td style='text-align:right'>{ago(t.lag_seconds)}</td>"
            f"{last}</tr>"
        )
        if t.health in ("failed", "blocked", "warning"):
            advice = "<br>".join(html.escape(line) for line in t.advice[:4])
            out.append(
                f"<tr class='om-advice' data-table='{name}'><td></td>"
                f"<td colspan='{span}' style='color:{BADGE_COLOURS[t.health]}'>{advice}</td></tr>"
            )
    return "".join(out)


GRID_HEADER = (
    "<tr><th></th><th style='text-align:left'>table</th><th style='text-align:left'>status</th>"
    "<th>pending</th><th>processed</th><th style='text-align:left'>failed file</th><th>rows</th>"
    "<th style='text-align:left'>last sync</th><th>lag</th></tr>"
)


def grid_html(report: StatusReport, *, trend: Mapping[str, str] | None = None) -> str:
    """The status grid as one ``<table>``, with a ``pending over time`` column when ``trend``."""
    header = GRID_HEADER if trend is None else GRID_HEADER.replace("</tr>", "<th>pending over time</th></tr>")
    return f"<table class='om-grid'>{header}{table_rows_html(report, trend=trend)}</table>"


def as_html(report: StatusReport) -> str:
    extra = ""
    if report.foreign:
        extra += "<div><b>Not tables:</b> " + "; ".join(html.escape(f) for f in report.foreign) + "</div>"
    if report.notes:
        extra += "<div><i>" + "<br>".join(html.escape(n) for n in report.notes) + "</i></div>"
    return (
        f"<div class='om-status'><b>Mirrored database</b> <code>{html.escape(report.target)}</code> "
        f"{badge(report.health, summary_line(report))} <span>{html.escape(replicator_line(report))}</span>"
        f"{grid_html(report)}{extra}</div>"
    )


def table_detail_html(t: TableStatus, now: datetime) -> str:
    """One table in full: its files, blockers, error and counts (the pane's detail view)."""
    facts = [
        ("status", t.status),
        ("folder", t.folder or "(deleted)"),
        ("last sequence", str(t.last_sequence)),
        ("processed files", str(t.processed_files)),
        ("ready to delete", str(t.ready_to_delete)),
        ("rows", rows_text(t)),
        ("key-state rows", "-" if t.state_rows is None else f"{t.state_rows:,}"),
        ("last push", since(t.last_push, now)),
        ("last sync", since(t.last_sync, now)),
    ]
    if t.error:
        facts.append(("error", f"{t.error_code}: {t.error}" if t.error_code else t.error))
    if t.reconciliation is not None:
        facts.append(("row counts", t.reconciliation.message))
    cells = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in facts
    )
    files = "".join(
        f"<tr><td><code>{html.escape(f.name)}</code></td><td style='text-align:right'>{f.size:,} B</td>"
        f"<td>{ago(max(0.0, now.timestamp() - f.mtime))} ago</td></tr>"
        for f in t.pending[:50]
    )
    more = f"<div>... and {len(t.pending) - 50} more</div>" if len(t.pending) > 50 else ""
    pending = f"<b>Pending files</b><table>{files}</table>{more}" if files else "<i>No pending files.</i>"
    problems = "".join(f"<li>{html.escape(line)}</li>" for line in t.advice)
    return (
        f"<div class='om-detail' data-table='{html.escape(t.table)}'>{badge(t.health)} "
        f"<b>{html.escape(t.table)}</b>"
        f"<table>{cells}</table>{f'<ul>{problems}</ul>' if problems else ''}{pending}</div>"
    )


def sparkline_svg(values: Sequence[int], *, width: int = 90, height: int = 18) -> str:
    """An inline SVG polyline of ``values`` (pending files over time); empty for no values."""
    if not values:
        return ""
    top = max(max(values), 1)
    step = width / max(len(values) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 1 - (v / top) * (height - 2):.1f}" for i, v in enumerate(values)
    )
    return (
        f"<svg class='om-spark' width='{width}' height='{height}' viewBox='0 0 {width} {height}'>"
        f"<polyline fill='none' stroke='#1565c0' stroke-width='1.5' points='{points}'/></svg>"
    )


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
