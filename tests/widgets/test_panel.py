"""The parts every panel shares: the one line an error becomes, the error boundary, close."""

from __future__ import annotations

import logging

import ipywidgets as w
import pytest

from openmirror_nb._core.errors import LINE_LIMIT, KeyColumnsError, user_line
from openmirror_nb._core.widgets.panel import Panel

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"


def test_an_openmirror_error_is_its_own_message_and_a_foreign_one_says_its_type():
    assert user_line(KeyColumnsError("NULL in key columns ['id']; fix the rows.")) == (
        "NULL in key columns ['id']; fix the rows."
    )
    assert (
        user_line(RuntimeError("boom\n  at java.lang.Thread\n")) == "RuntimeError: boom at java.lang.Thread"
    )
    assert user_line(RuntimeError()) == "RuntimeError"
    assert user_line(ValueError("x"), "Refresh failed") == "Refresh failed: ValueError: x"


def test_a_line_never_carries_a_secret_nor_runs_on():
    leaked = user_line(OSError(f"401 Authorization: Bearer {JWT} for ?sv=1&sig=abc123"))
    assert JWT not in leaked and "abc123" not in leaked and "\n" not in leaked
    assert user_line(KeyColumnsError(f"token {JWT}")) == "token ***"
    long = user_line(RuntimeError("x" * 5000))
    assert long == "RuntimeError: " + "x" * (LINE_LIMIT - 1) + "…"


class _Probe(Panel):
    def __init__(self):
        self.inner = w.HBox([w.Button(), w.VBox([w.Text()])])
        super().__init__([self.inner], css_class="probe")


def ours(caplog) -> list[logging.LogRecord]:
    # the package's records only: a kernel client an earlier test left may log from its
    # garbage collection at any moment ("Could not destroy zmq context", seen in CI)
    return [r for r in caplog.records if r.name.startswith("openmirror_nb")]


def test_the_guard_shows_one_line_and_logs_only_foreign_tracebacks(caplog):
    panel = _Probe()
    assert panel.children[-1] is panel.status_line and "probe" in panel._dom_classes
    with (
        caplog.at_level(logging.ERROR, logger="openmirror_nb.widgets"),
        panel._guard("Push failed") as failed,
    ):
        raise KeyColumnsError("duplicate keys in ['id']; dedupe first.")
    assert failed == ["duplicate keys in ['id']; dedupe first."] and not ours(caplog)
    assert "color:#c62828" in panel.status_line.value and "dedupe first" in panel.status_line.value
    with caplog.at_level(logging.ERROR, logger="openmirror_nb.widgets"), panel._guard("Push failed"):
        raise RuntimeError(f"Py4J said Bearer {JWT}")
    assert "Push failed: RuntimeError: Py4J said ***" in panel.status_line.value
    [record] = ours(caplog)  # the traceback reaches the log, without the token
    assert "Traceback" in record.getMessage() and "Py4J said ***" in record.getMessage()
    assert JWT not in caplog.text
    with panel._guard("Refresh failed", always=True):
        raise KeyColumnsError("gone")
    assert "Refresh failed: gone" in panel.status_line.value
    panel._say("fine")
    with panel._guard("Quiet", keep=True) as kept:
        raise KeyColumnsError("kept")
    assert kept == ["kept"] and "fine" in panel.status_line.value
    with panel._guard("Nothing") as nothing:
        pass
    assert nothing == []


def test_quiet_restores_the_render_flag_even_after_an_error():
    panel = _Probe()
    with pytest.raises(ZeroDivisionError), panel._quiet():
        assert panel._rendering
        1 / 0  # noqa: B018
    assert not panel._rendering


def test_close_closes_every_widget_inside():
    panel = _Probe()
    inside = [panel.inner, *panel.inner.children, panel.inner.children[1].children[0], panel.status_line]
    panel.close()
    assert all(widget.comm is None for widget in inside) and panel.comm is None
