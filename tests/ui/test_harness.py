"""Smoke tests of the browser harness: widgets really work end to end in JupyterLab."""

from __future__ import annotations

import sys

import pytest
from playwright.sync_api import expect

from tests.ui.lab import (
    NotebookError,
    cell_outputs_text,
    open_notebook,
    run_all_cells,
    screenshot,
    toasts,
    widget,
    widget_button,
    write_notebook,
)

PROBE_CELLS = [
    "# %% md\n# Harness probe\nA button whose clicks the kernel counts.",
    "import os, sys\nprint('kernel prefix', sys.prefix)\nprint('SPARK_LOCAL_IP', os.environ.get('SPARK_LOCAL_IP'))",
    """\
import ipywidgets as w

clicks = 0
html = w.HTML("<b>probe ready</b>: 0 clicks")
button = w.Button(description="Poke the kernel", button_style="primary")


def on_click(_button):
    global clicks
    clicks += 1
    html.value = f"<b>probe poked</b>: {clicks} clicks"


button.on_click(on_click)
w.VBox([button, html], _dom_classes=["harness-probe"])""",
]


def test_widget_round_trip(lab, page):
    path = write_notebook(lab, "harness_probe.ipynb", PROBE_CELLS)
    open_notebook(page, lab, path)
    run_all_cells(page)

    # The kernel is the venv's Python and has the Spark loopback setting.
    env_output = cell_outputs_text(page)[0]
    assert f"kernel prefix {sys.prefix}" in env_output
    assert "SPARK_LOCAL_IP 127.0.0.1" in env_output

    probe = widget(page, "harness-probe")
    html = probe.locator(".widget-html")
    expect(html).to_have_text("probe ready: 0 clicks")

    # Each click goes browser -> comm -> kernel callback -> comm -> browser.
    widget_button(probe, "Poke the kernel").click()
    expect(html).to_have_text("probe poked: 1 clicks")
    widget_button(probe, "Poke the kernel").click()
    expect(html).to_have_text("probe poked: 2 clicks")

    # The news prompt (and any other toast) is off; by now Lab has long finished starting up.
    expect(toasts(page)).to_have_count(0)
    expect(page.get_by_text("Jupyter news")).to_have_count(0)
    screenshot(page, "harness_probe")


def test_run_all_cells_reports_the_error(lab, page):
    path = write_notebook(
        lab, "harness_raises.ipynb", ["x = 1", "raise ValueError(f'probe failure {x}')", "y = 2"]
    )
    open_notebook(page, lab, path)
    with pytest.raises(NotebookError, match=r"cell 1 raised ValueError: probe failure 1") as info:
        run_all_cells(page)
    assert "raise ValueError" in str(info.value)
