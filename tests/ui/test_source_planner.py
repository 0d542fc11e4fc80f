"""The source planner in a real JupyterLab and Chromium: ``widgets/source_planner.ipynb`` runs (its
second panel ran with a failed table), then a user accepts every suggested key in the fresh panel,
switches a table off and clicks Run, all by mouse: the badges go from waiting to their ends while the
run goes on its thread, and the run's summary shows."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.ui.lab import copy_notebook, open_notebook, run_all_cells, screenshot, widget, widget_button

WAIT = 120_000  # ms: a guard for a run of four tables on a loaded machine

# Every badge the grid shows, recorded in the page as the run changes them.
_WATCH_BADGES = """(grid) => {
  window.__omBadges = new Set();
  new MutationObserver(() => grid.querySelectorAll('.om-badge').forEach(
    (b) => window.__omBadges.add(b.textContent))).observe(grid, {childList: true, subtree: true});
}"""


def badge(panel, status: str):
    return panel.locator(f".om-badge-{status}")


def test_source_planner_in_the_browser(lab, page):
    path = copy_notebook(lab, "widgets/source_planner.ipynb")
    open_notebook(page, lab, path)
    run_all_cells(page, timeout=240_000)
    panels = widget(page, "openmirror-source-planner")
    expect(panels).to_have_count(2)
    fresh, ran = panels.nth(0), panels.nth(1)

    # the run the gallery made: a table ok, one failed with its one line, two skipped
    expect(badge(ran, "ok")).to_have_count(1)
    expect(badge(ran, "failed")).to_have_count(1)
    expect(badge(ran, "skipped")).to_have_count(2)
    expect(ran.locator(".om-run-summary")).to_contain_text("1 ok, 2 skipped, 1 failed")
    expect(ran.locator(".om-run-summary")).to_contain_text("shop.customers:")
    expect(ran.locator(".om-run-summary")).not_to_contain_text("Traceback")
    screenshot(page, "source_planner_ran", target=ran)

    # the fresh plan: suggested keys waiting for an accept, the keyless table's problem in words
    expect(fresh.locator(".widget-html").last).to_contain_text("with suggested keys to accept")
    expect(fresh.locator(".om-problems").filter(has_text="declare")).to_have_count(1)
    expect(fresh.locator(".om-plan-grid")).to_contain_text("suggested")
    screenshot(page, "source_planner_fresh", target=fresh)

    # by mouse: accept every suggestion, switch `returns` off (the 4th row's checkbox), Run
    fresh.locator("label", has_text="Accept every suggested key").click()
    expect(fresh.locator(".om-plan-grid")).to_contain_text("declared")
    fresh.locator(".om-plan-grid input[type=checkbox]").nth(6).uncheck()  # rows: enabled, accept
    expect(fresh.locator(".widget-html").last).to_contain_text("Edited")
    fresh.locator(".om-plan-grid").evaluate(_WATCH_BADGES)
    widget_button(fresh, re.compile(r"^\s*Run\s*$")).click()
    expect(fresh.locator(".om-run-summary")).to_contain_text("PlanRun of 4 tables", timeout=WAIT)
    # orders unchanged (the gallery pushed it), customers fails again, clicks and returns skipped
    expect(badge(fresh, "unchanged")).to_have_count(1)
    expect(badge(fresh, "failed")).to_have_count(1)
    expect(badge(fresh, "skipped")).to_have_count(2)
    expect(badge(fresh, "waiting")).to_have_count(0)
    seen = set(page.evaluate("[...window.__omBadges]"))
    assert {"waiting", "running"} <= seen, seen  # the badges followed the run, not only its end
    screenshot(page, "source_planner_run", target=fresh)
