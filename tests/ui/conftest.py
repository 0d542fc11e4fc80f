"""Fixtures of the browser tests: one JupyterLab per session, a fresh browser page per test.

See tests/ui/lab.py for how a panel test uses them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui.lab import ARTIFACTS, VIEWPORT, chromium_missing_reason, launch_browser, running_lab, screenshot

UI_DIR = Path(__file__).resolve().parent
_skipped: list[str] = []


def _is_ui(item: pytest.Item) -> bool:
    return UI_DIR in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees the items of the whole session: mark (and maybe skip) only ours.
    reason = chromium_missing_reason()
    for item in items:
        if _is_ui(item):
            item.add_marker(pytest.mark.ui)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
                _skipped.append(item.nodeid)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Skip reasons are hidden without -rs; a machine without Chromium must not look like it passed UI tests.
    if _skipped:
        terminalreporter.write_line(
            f"tests/ui: {len(_skipped)} UI test(s) skipped: {chromium_missing_reason()}", yellow=True
        )


_CONSOLE = pytest.StashKey[list[str]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    # Evidence of a failed UI test, in its failure report: what the page showed, what the browser and
    # the server said.
    if report.when == "call" and report.failed and "page" in getattr(item, "funcargs", {}):
        page, lab = item.funcargs["page"], item.funcargs["lab"]
        try:
            shot = str(screenshot(page, f"FAILED-{item.name}"))
        except Exception as e:
            shot = f"(screenshot failed: {e})"
        report.sections.append(("ui failure screenshot", shot))
        report.sections.append(
            ("browser console errors", "\n".join(item.stash.get(_CONSOLE, [])[-50:]) or "(none)")
        )
        report.sections.append(("jupyter server log (tail)", lab.log_tail()))
    return report


# Package scope: one server and one browser for all of tests/ui (sub-packages included) in a pytest
# session, stopped as soon as the last UI test is done instead of idling through the rest of the suite.
@pytest.fixture(scope="package")
def lab(tmp_path_factory: pytest.TempPathFactory):
    """The JupyterLab server of the UI tests (a tests.ui.lab.Lab)."""
    # Failure screenshots of an earlier run would pass for this run's.
    for stale in ARTIFACTS.glob("FAILED-*.png"):
        stale.unlink()
    with running_lab(tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="package")
def browser():
    from playwright.sync_api import expect, sync_playwright

    # Kernel round-trips and widget rendering on a loaded 2-core machine can take more than the default 5 s.
    expect.set_options(timeout=20_000)
    pw = sync_playwright().start()
    try:
        browser = launch_browser(pw)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        pw.stop()


# lab before browser: the server is forked before playwright starts any thread.
@pytest.fixture
def page(lab, browser, request: pytest.FixtureRequest):
    """A fresh page in a browser context of its own (viewport 1400x1000). A failed test's report gets
    a screenshot, the browser console errors and the server log tail. Afterwards every kernel is shut
    down, so the next test starts from fresh kernels."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(30_000)
    console = request.node.stash.setdefault(_CONSOLE, [])
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    try:
        yield page
    finally:
        context.close()
        lab.shutdown_kernels()
