"""The pieces a status is drawn with: coloured badges, relative times and an inline SVG sparkline
(the building blocks of the records' and the report's text and HTML). Pure functions of plain
values: no I/O, and no record type, so the records can draw themselves with them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime

# Badge colours: red, orange, amber, blue, green, grey (readable on Lab's light and dark themes).
# Keyed by the badge of a table (``records.Health``).
BADGE_COLOURS: dict[str, str] = {
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


def badge(health: str, text: str | None = None) -> str:
    colour = BADGE_COLOURS[health]
    return (
        f"<span class='om-badge om-badge-{health}' style='background:{colour};color:white;"
        "border-radius:8px;padding:1px 7px;font-size:85%;white-space:nowrap'>"
        f"{html.escape(text or health)}</span>"
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
        f"<svg class='om-spark' width='{width}' height='{height}' viewBox='0 0 {width} {height}'"
        " style='vertical-align:middle'>"
        f"<polyline fill='none' stroke='#1565c0' stroke-width='1.5' points='{points}'/></svg>"
    )


# Eighth blocks, lowest to highest: a history that reads in any font, and as text too (a title).
BLOCKS = "▁▂▃▄▅▆▇█"


def blocks(values: Sequence[float | None]) -> str:
    """``values`` as a line of unicode blocks scaled to the largest (``"▁▃█"``); an unknown value
    is a middle dot, never the lowest block (which reads as 0). Empty for no values."""
    known = [v for v in values if v is not None]
    top = max(known, default=0.0)
    if top <= 0:
        return "".join("·" if v is None else BLOCKS[0] for v in values)
    last = len(BLOCKS) - 1
    return "".join("·" if v is None else BLOCKS[round(max(v, 0.0) / top * last)] for v in values)
