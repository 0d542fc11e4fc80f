"""``MonitorPane``'s freshness, headless: the ``fresh`` column in the grid (worst first still by
health, unknown said as unknown), its recent files as blocks, and where the time goes in the detail
view of the table picked. Reports built by hand, served by an injected ``status``."""

from __future__ import annotations

import re
import types
from datetime import UTC, datetime

import pytest

import openmirror_nb as om
from openmirror_nb._core.status import ReplicatorStatus, StatusReport, TableStatus
from openmirror_nb._core.status.freshness_records import (
    PUBLISHED_TO_APPLIED,
    SOURCE_TO_PUBLISHED,
    Freshness,
    FreshnessFigure,
    FreshnessPoint,
    FreshnessStage,
)
from openmirror_nb._core.target import OneLakeTarget
from tests.widgets.test_monitor_pane import db, grid_rows  # noqa: F401  (db: a fixture)

MISSED = "the age 10 min is past the goal of 2 min; published → applied is the slow stage"


def freshness(table: str, age: float, p95: float, *, missed: str = "") -> Freshness:
    figure = FreshnessFigure(p95 / 2, p95 / 3, p95, 6)
    return Freshness(
        table,
        age=age,
        published=FreshnessFigure(1.0, 1.0, 2.0, 6),
        applied=figure,
        applied_bound="exact",
        stages=(
            FreshnessStage(SOURCE_TO_PUBLISHED, FreshnessFigure(1.0, 1.0, 2.0, 6)),
            FreshnessStage(PUBLISHED_TO_APPLIED, FreshnessFigure(p95 / 2 - 1, p95 / 3 - 1, p95 - 2, 6)),
        ),
        history=tuple(FreshnessPoint(i, 1e9 + i, 1.0, float(i)) for i in range(1, 7)),
        goal=120.0 if missed else None,
        missed=missed,
        source="read",
    )


def report() -> StatusReport:
    """A failed table with nothing measured, a stale one that misses its goal (warning), a fresh
    one and one pending whose freshness is unknown, in name order (the pane sorts)."""
    now = datetime.now(UTC)
    tables = (
        TableStatus(
            "a.fresh", "a.schema/fresh", "ok", "Replicating", freshness=freshness("a.fresh", 4.0, 9.0)
        ),
        TableStatus("b.failed", "b.schema/failed", "failed", "Failed", error="boom"),
        TableStatus("c.waits", "c.schema/waits", "pending", "Replicating"),
        TableStatus(
            "d.stale",
            "d.schema/stale",
            "warning",
            "Replicating",
            notes=(MISSED,),
            freshness=freshness("d.stale", 600.0, 45.0, missed=MISSED),
        ),
    )
    return StatusReport("https://onelake/ws/db", now, ReplicatorStatus("Running"), tables)


@pytest.fixture
def pane():
    fake = types.SimpleNamespace(target=OneLakeTarget("ws", "db"), status=report, local_mirror=None)
    pane = om.widgets.MonitorPane(fake)
    yield pane
    pane.close()


def fresh_cells(pane) -> dict[str, str]:
    rows = re.findall(r"<tr class='om-row' data-table='([^']*)'>(.*?)</tr>", pane.grid.value)
    return {name: re.search(r"<td class='om-fresh'[^>]*>(.*?)</td>", row).group(1) for name, row in rows}


def test_the_grid_has_the_fresh_column_worst_first_by_health(pane):
    header = pane.grid.value.split("<tr class='om-row'", 1)[0]
    titles = re.findall(r"<th[^>]*>([^<]*)</th>", header)
    assert titles[-2:] == ["fresh", "pending over time"]
    assert grid_rows(pane) == ["b.failed", "d.stale", "c.waits", "a.fresh"]  # freshness reorders nothing
    cells = fresh_cells(pane)
    assert cells["a.fresh"].startswith("age 4.0 s · p95 9.0 s")
    assert cells["d.stale"].startswith("age 10 min · p95 45 s")


def test_unknown_freshness_shows_unknown_not_zero(pane):
    cells = fresh_cells(pane)
    for name in ("b.failed", "c.waits"):
        assert cells[name] == "<i>unknown</i>", cells[name]


def test_a_missed_goal_is_red_with_the_miss_as_its_tooltip_and_the_rest_plain(pane):
    row = pane.grid.value.split("data-table='d.stale'>", 1)[1].split("</tr>", 1)[0]
    cell = re.search(r"<td class='om-fresh'[^>]*>", row).group(0)
    assert "color:#c62828" in cell and "slow stage" in cell
    fresh = pane.grid.value.split("data-table='a.fresh'>", 1)[1].split("</tr>", 1)[0]
    assert "color:" not in re.search(r"<td class='om-fresh'[^>]*>", fresh).group(0)


def test_each_row_shows_its_recent_files_as_blocks(pane):
    cells = fresh_cells(pane)
    assert re.search(r"om-fresh-history'[^>]*>▂▃▅▆▇█<", cells["a.fresh"])  # six files, growing
    assert "om-fresh-history" not in cells["c.waits"]


def test_the_detail_shows_where_the_time_goes_for_the_table_picked(pane):
    assert pane.selected_table == "b.failed"  # the worst table, as before
    assert "Freshness</b> <i>unknown" in pane.detail.value
    pane.table_picker.value = "d.stale"
    detail = pane.detail.value
    assert "data-table='d.stale'" in detail and "Freshness: where the time goes" in detail
    stages = re.findall(r"<tr class='om-stage'><td[^>]*>([^<]*)</td>", detail)
    assert stages == [SOURCE_TO_PUBLISHED, PUBLISHED_TO_APPLIED]
    assert "2 min, missed: the age 10 min" in detail
    assert "exact: when the local mirror applied each file" in detail
    assert "unknown (source times not corrected)" in detail  # no skew measured


def test_a_real_database_without_measured_files_says_unknown(db):  # noqa: F811  (the fixture)
    """Files published without a freshness log (what an older writer leaves): the column is
    there, and every table's cell is unknown, not 0."""
    pane = om.widgets.MonitorPane(db)
    try:
        cells = fresh_cells(pane)
        assert len(cells) == 4 and all("unknown" in cell for cell in cells.values()), cells
        assert not re.search(r"\b0(\.0)? s\b", "".join(cells.values()))
        assert "om-fresh-history" not in pane.grid.value  # no blocks of unknowns
    finally:
        pane.close()
