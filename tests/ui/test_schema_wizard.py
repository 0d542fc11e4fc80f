"""The schema-change wizard in a real JupyterLab and Chromium: ``widgets/schema_wizard.ipynb`` runs,
then a user types the table's name into the waiting wizard and clicks Run reseed; the six steps
turn done through the widget comms while the click handler runs, and the verification shows.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.ui.lab import copy_notebook, open_notebook, run_all_cells, screenshot, widget

WAIT = 120_000  # ms: a guard for a reseed (a reload on Spark and two mirror waits) on a loaded machine


def button(panel, label: str):
    return panel.locator("button", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))


def test_schema_wizard_in_the_browser(lab, page):
    path = copy_notebook(lab, "widgets/schema_wizard.ipynb")
    open_notebook(page, lab, path)
    run_all_cells(page, timeout=300_000)
    wizards = widget(page, "openmirror-schema-wizard")
    expect(wizards).to_have_count(5)
    absorbable, waiting, done, stopped, unknown = (wizards.nth(i) for i in range(5))

    # the states the gallery built
    expect(button(absorbable, "Push")).to_be_enabled()
    expect(absorbable.locator("input[type=text]")).to_be_hidden()
    expect(done.locator(".om-step-done")).to_have_count(6)
    expect(done.locator(".om-reseed-result")).to_contain_text("reseeded and verified")
    expect(stopped.locator(".om-step-failed")).to_contain_text("step 3 of 6: wait until the mirror drops")
    expect(button(stopped, "Resume")).to_be_visible()
    expect(unknown).to_contain_text("does not exist")
    for panel, name in [
        (absorbable, "schema_wizard_absorbable"),
        (done, "schema_wizard_gallery_done"),
        (stopped, "schema_wizard_stopped"),
    ]:
        screenshot(page, name, target=panel)

    # the waiting reseed: the plan, Run disabled until the exact name is typed
    expect(waiting.locator("table.om-plan")).to_contain_text("type changed")
    expect(waiting.locator("table.om-plan")).to_contain_text("absorbed")
    expect(waiting.locator(".om-step")).to_have_count(6)
    run = button(waiting, "Run reseed")
    expect(run).to_be_disabled()
    name = waiting.locator("input[type=text]")
    name.fill("sales.order")
    expect(run).to_be_disabled()
    screenshot(page, "schema_wizard_waiting", target=waiting)
    name.fill("sales.orders")
    expect(run).to_be_enabled()

    run.click()
    expect(waiting.locator(".om-reseed-result")).to_contain_text(
        "reseeded and verified: the mirrored table holds 1,000 rows", timeout=WAIT
    )
    expect(waiting.locator(".om-step-done")).to_have_count(6)
    expect(waiting.locator(".om-step-done").last).to_contain_text("step 6 of 6: verify the row count — done")
    expect(waiting.locator(".progress-bar-success")).to_be_visible()  # the reload's bar, full
    expect(button(waiting, "Done")).to_be_disabled()
    screenshot(page, "schema_wizard_done", target=waiting)

    # Resume in the stopped wizard: the same plan again, this time to the end
    button(stopped, "Resume").click()
    expect(stopped.locator(".om-reseed-result")).to_contain_text("reseeded and verified", timeout=WAIT)
    expect(stopped.locator(".om-step-done")).to_have_count(6)
    screenshot(page, "schema_wizard_resumed", target=stopped)
