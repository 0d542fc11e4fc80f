"""The monitoring pane in a real JupyterLab and Chromium: ``widgets/monitor.ipynb`` runs, then a
user's clicks go through the widget comms to the kernel and back.

The gallery builds a local database with an ok, a pending, a blocked (gap) and a failed
(zero-byte file) table, and one that misses a freshness goal (warning); a table pushed by Spark
and mirrored shows its measured freshness in the grid's ``fresh`` column. The test then changes
that database from outside, as another process would, and watches the pane follow: Refresh,
auto-refresh, the local mirror's switch (the pending table turns green after a pass, its
freshness gains a history) and a table made to fail while the mirror runs.
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from tests.ui.lab import VIEWPORT, copy_notebook, open_notebook, run_all_cells, screenshot, widget

WAIT = 90_000  # ms: a guard for what happens after a click (a mirror pass, a refresh)
FIGURES = re.compile(r"^age [\d.]+ (s|min) · p95 [\d.]+ (s|min)")  # a measured fresh cell


def row(panel, table: str):
    return panel.locator(f"tr.om-row[data-table='{table}']")


def test_monitor_pane_in_the_browser(lab, page):
    # a tall window: the pane with a table's detail (its files and freshness) is taller than the
    # harness's 1000 px, and a screenshot of it shows only what Lab's notebook scrolls into view
    page.set_viewport_size({**VIEWPORT, "height": 1500})
    path = copy_notebook(lab, "widgets/monitor.ipynb")
    open_notebook(page, lab, path)
    run_all_cells(page, timeout=300_000)
    panel = widget(page, "openmirror-monitor").first

    # the grid: every table with the badge of its state, the fix under a problem, a sparkline each
    for table, health in [
        ("sales.healthy", "ok"),
        ("sales.late", "warning"),
        ("sales.pending", "pending"),
        ("sales.blocked", "blocked"),
        ("sales.failed", "failed"),
    ]:
        expect(row(panel, table).locator(f".om-badge-{health}")).to_be_visible()
    expect(panel.locator("tr.om-advice[data-table='sales.failed']")).to_contain_text(
        "00000000000000000002.parquet is empty (0 bytes)"
    )
    expect(panel.locator("tr.om-advice[data-table='sales.blocked']")).to_contain_text(
        "file 00000000000000000002.parquet is missing: file 3 waits for it; publish 2 or reseed the table."
    )
    expect(panel.locator("svg.om-spark")).to_have_count(5)
    # freshness, measured from the push's read time: a real age and p95, and a missed goal in red
    expect(panel.locator(".om-grid th", has_text=re.compile(r"^fresh$"))).to_be_visible()
    expect(row(panel, "sales.healthy").locator("td.om-fresh")).to_have_text(FIGURES)
    expect(row(panel, "sales.late").locator("td.om-fresh")).to_have_css("color", "rgb(198, 40, 40)")
    expect(panel.locator("tr.om-advice[data-table='sales.late']")).to_contain_text(
        "freshness goal 1.0 s missed"
    )
    # the detail view opens on the worst table: the failed one, with its file and reason
    detail = panel.locator(".om-detail")
    expect(detail).to_have_attribute("data-table", "sales.failed")
    expect(detail).to_contain_text("the mirror failed: file 00000000000000000002.parquet is empty")
    expect(widget(page, "openmirror-monitor").nth(1)).to_contain_text("No tables yet.")
    screenshot(page, "monitor_gallery", target=panel)

    root = Path(panel.locator(".widget-html code").first.inner_text())
    landing_zone = root / "Files" / "LandingZone"
    assert landing_zone.is_dir(), root

    # Refresh: something another process did shows after a click
    (landing_zone / "notes.txt").write_text("not a table")
    page_button(panel, "Refresh").click()
    expect(panel).to_contain_text("notes.txt: a file at the landing-zone root, not a table")

    # auto-refresh (every 2 s in the gallery): the next change shows with no click
    page_button(panel, "Auto-refresh").click()
    expect(panel.locator(".widget-html").last).to_contain_text("Auto-refresh every 2 s")
    (landing_zone / "later.txt").write_text("not a table either")
    expect(panel).to_contain_text("later.txt: a file at the landing-zone root", timeout=WAIT)
    page_button(panel, "Auto-refresh").click()
    expect(panel.locator(".widget-html").last).to_contain_text("Auto-refresh off")

    # the local mirror's switch: its pass applies the pending snapshot and the pane follows
    expect(row(panel, "sales.pending").locator("td").nth(3)).to_have_text("1")
    page_button(panel, "Run local mirror").click()
    expect(row(panel, "sales.pending").locator(".om-badge-ok")).to_be_visible(timeout=WAIT)
    expect(row(panel, "sales.pending").locator("td").nth(3)).to_have_text("0")
    expect(
        row(panel, "sales.failed").locator(".om-badge-failed")
    ).to_be_visible()  # only a publisher fixes it
    # both of its files applied now: its freshness has a history of two, drawn as blocks
    expect(row(panel, "sales.pending").locator(".om-fresh-history")).to_have_text(re.compile(r"^[▁-█]{2}$"))
    screenshot(page, "monitor_after_mirror_pass", target=panel)

    # a table made to fail while the mirror runs: an empty file where its next file goes
    (landing_zone / "sales.schema" / "healthy" / "00000000000000000002.parquet").write_bytes(b"")
    expect(row(panel, "sales.healthy").locator(".om-badge-failed")).to_be_visible(timeout=WAIT)
    expect(panel.locator("tr.om-advice[data-table='sales.healthy']")).to_contain_text(
        "00000000000000000002.parquet is empty (0 bytes)"
    )
    expect(row(panel, "sales.healthy")).to_contain_text("00000000000000000002.parquet")  # failed file
    page_button(panel, "Run local mirror").click()
    expect(panel.locator(".widget-html").last).to_contain_text("Refreshed", timeout=WAIT)

    # the detail view follows the picker
    panel.locator("select").select_option("sales.pending")
    expect(detail).to_have_attribute("data-table", "sales.pending")
    expect(detail).to_contain_text("No pending files.")
    screenshot(page, "monitor_failed_live", target=panel)
    # where the time goes, for the table picked: the split by stage, each with latest, p50, p95
    split = detail.locator(".om-freshness")
    expect(split).to_contain_text("Freshness: where the time goes")
    expect(split.locator("tr.om-stage")).to_have_count(2)  # source → published, published → applied
    expect(split.locator("tr.om-stage").last).to_contain_text(re.compile(r"published → applied\s*[\d.]+ s"))
    expect(split).to_contain_text("exact: when the local mirror applied each file")
    screenshot(page, "monitor_freshness_detail", target=detail)

    # a hundred tables: the worst on top, the grid scrolls in a box under a header that stays
    fleet = widget(page, "openmirror-monitor").nth(2)
    rows = fleet.locator("tr.om-row")
    expect(rows).to_have_count(100)
    assert [rows.nth(i).get_attribute("data-table") for i in range(3)] == ["erp.t013", "erp.t077", "erp.t050"]
    box = fleet.locator(".om-grid-box")
    height, scrolls = box.evaluate("e => [e.getBoundingClientRect().height, e.scrollHeight > e.clientHeight]")
    assert height <= 460 and scrolls, (height, scrolls)
    # the rest of the pane (bars, picker, one table's detail) does not grow with the tables either
    assert fleet.bounding_box()["height"] < height + 800, (fleet.bounding_box(), height)
    screenshot(page, "monitor_hundred_tables", target=box)
    box.evaluate("e => { e.scrollTop = e.scrollHeight; }")
    header_top = fleet.locator(".om-grid-box th").nth(1).bounding_box()["y"]
    assert abs(header_top - box.bounding_box()["y"]) < 12, (header_top, box.bounding_box())  # still on top
    expect(row(fleet, "erp.t089")).to_be_in_viewport()
    # the filters: part of a name, then only the tables that need attention
    fleet.get_by_placeholder("part of a table name").fill("t07")
    expect(rows).to_have_count(10)
    expect(fleet.locator(".om-shown")).to_have_text("showing 10 of 100 tables matching 't07'")
    fleet.get_by_placeholder("part of a table name").fill("")
    page_button(fleet, "Needs attention").click()
    expect(rows).to_have_count(3)
    expect(fleet.locator("tr.om-advice[data-table='erp.t050']")).to_contain_text("is missing")
    screenshot(page, "monitor_hundred_needing_attention", target=fleet)


def page_button(panel, label: str):
    # ipywidgets renders Button and ToggleButton as <button> holding an icon and the description
    return panel.locator("button", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))
