"""How a table's freshness (``Freshness``) reads in a status: the ``fresh`` column of the grid and
of the text form (``status.report``), and the detail view's section of where the time goes (the
split by stage, the goal and its miss, the clock skew, how exact the applied figure is).

Unknown reads as ``-`` or ``unknown``, never as ``0``.
"""

from __future__ import annotations

import html

from openmirror_nb._core.status.freshness_records import (
    Freshness,
    FreshnessFigure,
    facts,
    seconds_text,
    split_rows,
)
from openmirror_nb._core.status.render import BADGE_COLOURS, blocks

RED, AMBER, GREY = BADGE_COLOURS["failed"], BADGE_COLOURS["warning"], BADGE_COLOURS["unknown"]
BLUE = BADGE_COLOURS["pending"]  # the history's, as the pending files' sparkline
# Colours of the stages in the detail's bar, in stage order (blue, teal, green, purple).
STAGE_COLOURS = ("#1565c0", "#00838f", "#2e7d32", "#6a1b9a")
# The recent files drawn: a streamed table publishes a file a batch, hundreds in the window.
CELL_FILES, DETAIL_FILES = 20, 60


def headline(f: Freshness | None) -> tuple[str, str]:
    """The age and the p95 the cell shows: the applied figure's, else the published one's (``≤``
    for an upper bound, ``published`` said); ``("unknown", "")`` when nothing is known."""
    if f is None or not f.known:
        return "unknown", ""
    age = f"age {seconds_text(f.age)}" if f.age is not None else "age unknown"
    if f.applied.files:
        bound = "≤ " if f.applied_bound == "upper" else ""
        return age, f"p95 {bound}{seconds_text(f.applied.p95)}"
    if f.published.files:
        return age, f"published p95 {seconds_text(f.published.p95)}"
    return age, ""


def fresh_text(f: Freshness | None) -> str:
    """The text form's cell: ``age 41 s · p95 2.3 s``, ``!`` first when the goal is missed."""
    age, figure = headline(f)
    if age == "unknown":
        return "age unknown"  # the column has no header in text: say what is unknown
    text = f"{age} · {figure}" if figure else age
    return f"! {text}" if f is not None and f.missed else text


def history(f: Freshness | None, last: int = CELL_FILES) -> list[float | None]:
    """The ``last`` recent files' applied figures (the published ones while none is applied)."""
    points = f.history[-last:] if f is not None else ()
    applied = any(p.applied is not None for p in points)
    return [p.applied if applied else p.published for p in points]


def missed_colour(f: Freshness | None) -> str | None:
    """Red when the age is past the goal (the table is stale now), amber when only the recent
    figures are (it was slow, and may be catching up); ``None`` when the goal is met or unknown."""
    if f is None or not f.missed:
        return None
    stale = f.goal is not None and f.age is not None and f.age > f.goal
    return RED if stale else AMBER


def fresh_cell(f: Freshness | None) -> str:
    """The grid's ``fresh`` ``<td>``: the age, the p95 and the recent files as blocks, red or
    amber (with the miss as its tooltip) when the goal is missed."""
    age, figure = headline(f)
    colour = missed_colour(f)
    style = "white-space:nowrap" + (f";color:{colour};font-weight:bold" if colour else "")
    if f is None or not f.known:
        return f"<td class='om-fresh' style='{style};color:{GREY}'><i>unknown</i></td>"
    title = f.missed or f.text
    spark = history(f)
    line = (
        f" <span class='om-fresh-history' style='color:{BLUE};letter-spacing:-1px'>{blocks(spark)}</span>"
        if sum(v is not None for v in spark) > 1  # a line of unknowns says nothing
        else ""
    )
    figure_html = f" · {html.escape(figure)}" if figure else ""
    return (
        f"<td class='om-fresh' title='{html.escape(title, quote=True)}' style='{style}'>"
        f"{html.escape(age)}{figure_html}{line}</td>"
    )


def _figure_cells(figure: FreshnessFigure) -> str:
    values = (seconds_text(figure.latest), seconds_text(figure.p50), seconds_text(figure.p95))
    cells = "".join(f"<td style='text-align:right;padding-right:1em'>{v}</td>" for v in values)
    return f"{cells}<td style='text-align:right'>{figure.files:,}</td>"


def _stage_bar(f: Freshness) -> str:
    """Where the time goes, at a glance: one bar split by the stages' medians."""
    parts = [(s.name, s.figure.p50) for s in f.stages if s.figure.p50 is not None and s.figure.p50 > 0]
    total = sum(v for _, v in parts)
    if not total:
        return ""
    spans = "".join(
        f"<span class='om-stage-part' title='{html.escape(name, quote=True)}: p50 {seconds_text(v)}' "
        f"style='display:inline-block;height:10px;width:{100 * v / total:.1f}%;"
        f"background:{STAGE_COLOURS[i % len(STAGE_COLOURS)]}'></span>"
        for i, (name, v) in enumerate(parts)
    )
    legend = " ".join(
        f"<span style='color:{STAGE_COLOURS[i % len(STAGE_COLOURS)]}'>■</span> {html.escape(name)} "
        f"{100 * v / total:.0f}%"
        for i, (name, v) in enumerate(parts)
    )
    return f"<div style='width:360px;display:flex'>{spans}</div><div style='font-size:90%'>{legend}</div>"


def freshness_html(f: Freshness | None) -> str:
    """The detail view's section: the age, the goal and its miss, the applied figure's bound, the
    source times and the clock skew, then the time split by stage (latest, p50, p95 each) and the
    recent files' figures."""
    if f is None or not f.known:
        return "<div class='om-freshness'><b>Freshness</b> <i>unknown: nothing measured yet.</i></div>"
    colour = missed_colour(f)
    told = facts(f)
    missed_style = f" style='color:{colour};font-weight:bold'" if colour else ""
    cells = "".join(
        f"<tr><th style='text-align:left;white-space:nowrap;padding-right:1em'>{k}</th>"
        f"<td{missed_style if k == 'goal' else ''}>{html.escape(v)}</td></tr>"
        for k, v in told
    )
    head = "".join(
        f"<th style='text-align:{'left' if i == 0 else 'right'};padding-right:1em'>{t}</th>"
        for i, t in enumerate(("stage", "latest", "p50", "p95", "files"))
    )
    body = "".join(
        f"<tr class='{cls}'><td style='padding-right:1em'>{html.escape(name)}</td>{_figure_cells(fig)}</tr>"
        for name, fig, cls in split_rows(f)
    )
    spark = history(f, DETAIL_FILES)
    dots = "; · unknown" if None in spark else ""
    recent = (
        f"<div>recent files: <span class='om-fresh-history' style='color:{BLUE}'>{blocks(spark)}</span> "
        f"(the last {len(spark)}, oldest first{dots})</div>"
        if sum(v is not None for v in spark) > 1  # one file is no history
        else ""
    )
    # the facts beside the split, in text lines' height: the section sits under a table's detail,
    # which must stay within a notebook's window
    return (
        "<div class='om-freshness' style='line-height:1.4;margin-top:4px'>"
        "<b>Freshness: where the time goes</b>"
        "<div style='display:flex;flex-wrap:wrap;gap:0 3em;align-items:flex-start'>"
        f"<table>{cells}</table><div>{_stage_bar(f)}<table class='om-stages'><tr>{head}</tr>{body}</table>"
        f"{recent}</div></div></div>"
    )
