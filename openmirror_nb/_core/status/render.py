"""The pieces a status is drawn with: coloured badges, relative times, row counts, one table's
detail view and an inline SVG sparkline (the ``MonitorPane``'s and ``StatusReport``'s building
blocks). Pure functions of the records: no I/O.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime

from openmirror_nb._core.status.records import Health, TableStatus

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
    # clocks of two machines may disagree by a little: a moment "in the future" is just now
    return "never" if moment is None else f"{ago(max(0.0, (now - moment).total_seconds()))} ago"


def rows_text(status: TableStatus) -> str:
    """Rows of the mirrored table when counted, else what the mirror processed."""
    if status.mirrored_rows is not None:
        return f"{status.mirrored_rows:,}"
    if status.processed_rows is not None:
        return f"{status.processed_rows:,} processed"
    return "-"


def badge(health: Health, text: str | None = None) -> str:
    colour = BADGE_COLOURS[health]
    return (
        f"<span class='om-badge om-badge-{health}' style='background:{colour};color:white;"
        "border-radius:8px;padding:1px 7px;font-size:85%;white-space:nowrap'>"
        f"{html.escape(text or health)}</span>"
    )


def table_detail_html(t: TableStatus, now: datetime) -> str:
    """One table in full: its files, blockers, error and counts (the pane's detail view)."""
    facts = [
        ("status", t.status),
        ("folder", t.folder or "(deleted)"),
        ("last sequence", str(t.last_sequence)),
        ("processed files", f"{t.processed_files:,}"),
        ("ready to delete", f"{t.ready_to_delete:,}"),
        ("rows", rows_text(t)),
        ("key-state rows", "-" if t.state_rows is None else f"{t.state_rows:,}"),
        ("last push", since(t.last_push, now)),
        ("last checked", since(t.last_checked, now)),
        ("last sync", since(t.last_sync, now)),
    ]
    if t.error:
        facts.append(("error", f"{t.error_code}: {t.error}" if t.error_code else t.error))
    if t.reconciliation is not None:
        facts.append(("row counts", t.reconciliation.message))
    cells = "".join(
        f"<tr><th style='text-align:left;white-space:nowrap;padding-right:1em'>{html.escape(k)}</th>"
        f"<td>{html.escape(v)}</td></tr>"
        for k, v in facts
    )
    files = "".join(
        f"<tr><td><code>{html.escape(f.name)}</code></td><td style='text-align:right'>{f.size:,} B</td>"
        f"<td>{ago(max(0.0, now.timestamp() - f.mtime))} ago</td></tr>"
        for f in t.pending[:50]
    )
    more = f"<div>... and {len(t.pending) - 50:,} more</div>" if len(t.pending) > 50 else ""
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
    if len(values) == 1:
        values = [values[0], values[0]]  # one reading: a flat line, not an invisible point
    top = max(max(values), 1)
    step = width / max(len(values) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 1 - (v / top) * (height - 2):.1f}" for i, v in enumerate(values)
    )
    return (
        f"<svg class='om-spark' width='{width}' height='{height}' viewBox='0 0 {width} {height}'>"
        f"<polyline fill='none' stroke='#1565c0' stroke-width='1.5' points='{points}'/></svg>"
    )
