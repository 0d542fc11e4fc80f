"""How freshness reads in a status, from records built by hand: the grid's ``fresh`` column (age,
p95, the recent files as blocks; red or amber when the goal is missed; unknown never 0), the text
form's column, and the detail's split by stage with the goal, the skew and the applied bound. Pure."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from openmirror_nb._core.status import ReplicatorStatus, StatusReport, TableStatus
from openmirror_nb._core.status.freshness_html import fresh_cell, fresh_text, freshness_html
from openmirror_nb._core.status.freshness_records import (
    PUBLISHED_TO_APPLIED,
    SOURCE_TO_TOPIC,
    TOPIC_TO_PUBLISHED,
    Freshness,
    FreshnessFigure,
    FreshnessPoint,
    FreshnessStage,
    split_text,
)
from openmirror_nb._core.status.render import blocks

NOW = datetime(2025, 5, 20, 12, 0, 0, tzinfo=UTC)
MISSED = "the age 6.7 min is past the goal of 60 s; published → applied is the slow stage"


def fig(latest: float, p50: float, p95: float, files: int = 20) -> FreshnessFigure:
    return FreshnessFigure(latest, p50, p95, files)


def slow(**overrides) -> Freshness:
    """A Kafka-fed table in Fabric that misses its goal of 60 s: stale for 400 s."""
    fields = {
        "table": "sales.slow",
        "age": 400.0,
        "published": fig(3.0, 2.0, 5.0),
        "applied": fig(9.0, 7.0, 30.0),
        "applied_bound": "upper",
        "stages": (
            FreshnessStage(SOURCE_TO_TOPIC, fig(0.5, 0.4, 0.9)),
            FreshnessStage(TOPIC_TO_PUBLISHED, fig(2.0, 1.5, 4.0)),
            FreshnessStage(PUBLISHED_TO_APPLIED, fig(6.0, 5.0, 25.0)),
        ),
        "history": tuple(FreshnessPoint(i, 1e9 + i, 2.0, float(i)) for i in range(1, 9)),
        "goal": 60.0,
        "missed": MISSED,
        "source": "commit",
        "skew": None,
    }
    return Freshness(**{**fields, **overrides})


FAST = Freshness(
    "sales.fast", age=3.2, published=fig(1, 1, 2, 5), applied=fig(2, 2, 3.5, 5), applied_bound="exact"
)


def report() -> StatusReport:
    tables = (
        TableStatus(
            "sales.fast", "sales.schema/fast", "ok", "Replicating", processed_files=5, freshness=FAST
        ),
        TableStatus("sales.none", "sales.schema/none", "ok", "Replicating"),
        TableStatus(
            "sales.slow", "sales.schema/slow", "warning", "Replicating", freshness=slow(), notes=(MISSED,)
        ),
        TableStatus("sales.bad", "sales.schema/bad", "failed", "Failed", error="boom"),
    )
    return StatusReport("/data/db", NOW, ReplicatorStatus("Running"), tables)


def cells(page: str) -> dict[str, str]:
    """Each table's ``fresh`` cell, by table."""
    rows = re.findall(r"<tr class='om-row' data-table='([^']*)'>(.*?)</tr>", page)
    return {name: re.search(r"<td class='om-fresh'.*?</td>", row).group(0) for name, row in rows}


def test_the_grid_has_a_fresh_column_with_age_and_p95_and_keeps_worst_first():
    page = report().grid_html(trend={}, sticky=True)
    header = page.split("<tr class='om-row'", 1)[0]
    assert re.findall(r"<th[^>]*>([^<]*)</th>", header)[-2:] == ["fresh", "pending over time"]
    found = cells(page)
    assert ">age 3.2 s · p95 3.5 s<" in found["sales.fast"]
    assert "age 7 min · p95 ≤ 30 s" in found["sales.slow"]  # ≤: Fabric's time is an upper bound
    assert list(found) == [t.table for t in report().tables]  # the report's order (the pane sorts)
    # worst first is by health only: a slow table is not put before a failed one, nor a fast one
    # after one that is unknown
    assert [t.table for t in report().worst_first] == ["sales.bad", "sales.slow", "sales.fast", "sales.none"]
    advice = re.search(r"<tr class='om-advice' data-table='sales.slow'><td></td><td colspan='(\d+)'", page)
    assert advice is not None and advice.group(1) == str(page.count("<th") - 1)  # spans the new column


def test_unknown_is_unknown_never_zero():
    for cell in (fresh_cell(None), fresh_cell(Freshness("t"))):
        assert "unknown" in cell and not re.search(r"\b0(\.0)? s\b", cell)
    assert fresh_text(None) == "age unknown"
    # files measured, the age not (nothing applied yet): the age is unknown, the published p95 shows
    published_only = Freshness("t", published=fig(1.0, 1.0, 1.5, 2))
    assert fresh_text(published_only) == "age unknown · published p95 1.5 s"
    # only the apply time known (files without a source time): no figure to show, no blocks
    apply_only = Freshness(
        "t",
        stages=(FreshnessStage(PUBLISHED_TO_APPLIED, fig(0.1, 0.1, 0.1, 1)),),
        history=(FreshnessPoint(1, 1e9, None, None), FreshnessPoint(2, 1e9, None, None)),
    )
    assert fresh_text(apply_only) == "age unknown"
    assert "om-fresh-history" not in fresh_cell(apply_only) and "unknown" in fresh_cell(apply_only)
    assert "unknown" in freshness_html(None) and "0 s" not in freshness_html(None)


def test_a_missed_goal_is_red_when_stale_and_amber_when_only_the_figures_are_slow():
    red = fresh_cell(slow())
    assert "color:#c62828" in red and f"title='{MISSED}'" in red.replace("&#x27;", "'")
    catching_up = fresh_cell(slow(age=20.0, missed="the p95 of 30 s is past the goal of 25 s"))
    assert "color:#b26a00" in catching_up and "#c62828" not in catching_up
    assert "color:" not in fresh_cell(FAST)  # met: no colour
    assert fresh_text(slow()).startswith("! age 7 min")


def test_the_cell_shows_the_recent_files_as_blocks_the_last_twenty_only():
    cell = fresh_cell(slow())
    assert "<span class='om-fresh-history'" in cell and "▂▃▄▅▅▆▇█" in cell
    many = slow(history=tuple(FreshnessPoint(i, 1e9 + i, 1.0, float(i % 7)) for i in range(500)))
    spark = re.search(r"om-fresh-history'[^>]*>([^<]*)<", fresh_cell(many)).group(1)
    assert len(spark) == 20


def test_blocks_scale_to_the_largest_and_show_unknown_as_a_dot():
    assert blocks([]) == ""
    assert blocks([1.0, None, 4.0, 8.0]) == "▂·▅█"
    assert blocks([0.0, 0.0]) == "▁▁" and blocks([None]) == "·"


def test_text_has_a_fresh_column_and_says_a_missed_goal_once():
    text = str(report())
    lines = text.splitlines()
    fast = next(line for line in lines if "sales.fast" in line)
    assert re.match(r"  ok       sales\.fast  Replicating  age 3\.2 s · p95 3\.5 s +5 processed", fast)
    assert "age unknown" in next(line for line in lines if "sales.none" in line)
    assert text.count(MISSED) == 1  # the warning's advice says it; no "fresh:" line repeats it
    alone = StatusReport(
        "/d",
        NOW,
        ReplicatorStatus("Running"),
        (TableStatus("s", "s", "ok", "Replicating", freshness=slow()),),
    )
    assert f"fresh: {MISSED}" in str(alone)  # a miss the advice does not carry is said under the row


def test_the_detail_splits_the_time_by_stage_with_the_goal_skew_and_bound():
    status = TableStatus("sales.slow", "sales.schema/slow", "warning", "Replicating", freshness=slow())
    detail = status.to_html(now=NOW)
    section = detail.split("<div class='om-freshness'", 1)[1]
    stages = re.findall(r"<tr class='om-stage'><td[^>]*>([^<]*)</td>((?:<td[^>]*>[^<]*</td>){4})", section)
    assert [name for name, _ in stages] == [SOURCE_TO_TOPIC, TOPIC_TO_PUBLISHED, PUBLISHED_TO_APPLIED]
    values = re.findall(r">([^<]*)</td>", stages[2][1])
    assert values == ["6.0 s", "5.0 s", "25 s", "20"]  # latest, p50, p95, files
    assert "applied (source → applied, an upper bound)" in section
    assert "upper bound: the service&#x27;s lastSyncDateTime" in section
    assert "60 s, missed: " in section and "color:#c62828" in section
    assert "unknown (source times not corrected)" in section  # the skew
    assert "om-stage-part" in section and "published → applied 72%" in section  # the bar
    known = slow(skew=0.25, skew_error=0.01, applied_bound="exact", missed="", goal=None)
    html = freshness_html(known)
    assert "+0.25 s ± 0.01 s" in html and "exact: when the local mirror applied each file" in html
    assert "none set" in html and "missed" not in html


def test_the_detail_escapes_what_it_shows():
    hostile = freshness_html(slow(missed="<script>x</script>", stages=(FreshnessStage("<b>", fig(1, 1, 1)),)))
    assert "<script>" not in hostile and "<b><" not in hostile and "&lt;b&gt;" in hostile


@pytest.mark.parametrize(
    ("freshness", "expected"),
    [
        (None, ["Freshness: unknown, nothing measured yet."]),
        (slow(), ["Freshness of sales.slow:", "  age:            7 min", "  clock skew:     unknown"]),
    ],
)
def test_split_text(freshness, expected):
    text = split_text(freshness)
    for piece in expected:
        assert piece in text
    if freshness is not None:
        applied = next(line for line in text.splitlines() if line.strip().startswith("applied ("))
        assert re.search(r"9\.0 s +7\.0 s +30 s +20$", applied)
