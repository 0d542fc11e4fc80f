"""The onboarding panel in a real JupyterLab and Chromium: ``widgets/onboarding.ipynb`` runs, then a
user picks a source in the first (fresh) panel, accepts the suggested key and pushes, all by mouse;
the progress bar inside the panel moves to 100 and the push's result shows.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.ui.lab import copy_notebook, open_notebook, run_all_cells, screenshot, widget

WAIT = 90_000  # ms: a guard for a push on a loaded machine

# Every width the bar's element takes, recorded in the page as it changes.
_WATCH_BAR = """(bar) => {
  window.__omWidths = [bar.style.width];
  new MutationObserver(() => window.__omWidths.push(bar.style.width))
    .observe(bar, {attributes: true, attributeFilter: ['style']});
}"""


def dropdown(panel, label: str):
    return panel.locator(".widget-dropdown", has=panel.page.locator("label", has_text=label)).locator(
        "select"
    )


def test_onboarding_in_the_browser(lab, page):
    path = copy_notebook(lab, "widgets/onboarding.ipynb")
    open_notebook(page, lab, path)
    run_all_cells(page, timeout=240_000)
    panels = widget(page, "openmirror-onboarding")
    expect(panels).to_have_count(4)
    panel = panels.first
    status = panel.locator(".widget-html").last
    expect(status).to_contain_text("Pick a source.")

    # the states the gallery built: ready, an existing table's fixed keys, a refused duplicate key
    expect(panels.nth(1).locator(".om-key-profile")).to_contain_text("a good key")
    expect(panels.nth(2)).to_contain_text("Existing table crm.customers: keys customer_id")
    expect(panels.nth(2).locator("select[multiple]")).to_be_disabled()
    expect(panels.nth(3).locator(".om-dupes")).to_contain_text("duplicated key")
    expect(panels.nth(3).locator(".widget-html").last).to_contain_text("are not unique")
    for i, name in [(1, "onboarding_picked"), (2, "onboarding_existing"), (3, "onboarding_refused")]:
        screenshot(page, name, target=panels.nth(i))

    # pick a source: its rows, a preview and the suggested key show
    dropdown(panel, "Source").select_option(label="orders (Spark DataFrame)")
    expect(panel.locator(".om-preview")).to_contain_text("1,000 rows", timeout=WAIT)
    expect(panel.locator(".om-preview tr")).to_have_count(11)
    suggestion = panel.locator(".widget-toggle-buttons button", has_text="order_id")
    expect(suggestion).to_be_visible()
    expect(panel.locator("input[type=text]").nth(1)).to_have_value("orders")  # named after the source
    push = panel.locator("button", has_text=re.compile(r"^\s*Push\s*$"))
    expect(push).to_be_disabled()

    # accept it: the profile says it is a key, Push is enabled
    suggestion.click()
    expect(panel.locator(".om-key-profile")).to_contain_text("a good key", timeout=WAIT)
    expect(status).to_contain_text("Ready: Push publishes the initial load of orders to orders.")
    expect(push).to_be_enabled()

    # push: the bar moves through the push's phases to 100 and turns green; the result shows
    bar = panel.locator(".openmirror-progress .progress-bar")  # WidgetProgress's IntProgress
    bar.evaluate(_WATCH_BAR)
    push.click()
    expect(panel).to_contain_text("Pushed orders", timeout=WAIT)
    expect(bar).to_have_attribute("style", re.compile(r"width:\s*100%"))
    expect(bar).to_have_class(re.compile(r"progress-bar-success"))
    widths = [float(w.rstrip("%")) for w in page.evaluate("window.__omWidths") if w]
    assert widths[-1] == 100 and any(0 < w < 100 for w in widths), widths  # it moved, not jumped
    expect(status).to_contain_text("Pushed orders: file 1; initial 1,000")
    # the table exists now: its keys are fixed and shown read-only
    expect(panel).to_contain_text("Existing table orders: keys order_id")
    expect(panel.locator("select[multiple]")).to_be_disabled()
    screenshot(page, "onboarding_pushed", target=panel)
