"""``MonitorPane``: the status of a mirrored database as a live panel (design §6).

One ``VBox`` of Fabric-supported widgets only (no ``Output``): a header, a toolbar (Refresh,
auto-refresh and its interval, the local mirror's switch), a filter bar, the status grid (worst
tables first, in a scrolling box: ``status_grid``) with each table's freshness (its age, p95 and
recent files as blocks) and a sparkline of pending files, a detail view of one table (its files,
and where its freshness time goes, stage by stage), and an ``HTML`` status line. All it shows is
laid out from ``db.status()`` (``TableStatus.freshness`` included); it computes nothing itself.

Threads: auto-refresh runs on one daemon thread, the local mirror on its own; both only assign
widget values (never print, per the ipywidgets docs) and both end when the pane is closed, or
when the interpreter exits.
"""

from __future__ import annotations

import atexit
import html
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from openmirror_nb import ConfigError
from openmirror_nb._core.errors import user_line  # the one line a user sees of an exception
from openmirror_nb._core.widgets.panel import Panel
from openmirror_nb._core.widgets.status_grid import GridView

if TYPE_CHECKING:
    from openmirror_nb import LocalMirror, MirroredDatabase, StatusReport

HISTORY = 60  # refreshes kept per table for the sparkline
_LIVE: weakref.WeakSet[MonitorPane] = weakref.WeakSet()


class MonitorPane(Panel):
    """A live view of ``db.status()``.

    Args:
        db: The mirrored database.
        status: Called for each refresh (default ``db.status``); tests inject their own.
        interval: Seconds between automatic refreshes once auto-refresh is on.
        auto_refresh: Start refreshing automatically at once.
        mirror: For a local database, the ``LocalMirror`` the pane's switch runs (default:
            ``db.local_mirror``, the one every handle on the folder shares). ``None`` on OneLake,
            where the service mirrors.

    Example:
        >>> om.widgets.MonitorPane(db)
    """

    _built = False  # ipywidgets closes a half-built pane too (its __del__): nothing to stop then
    _stamped = True

    def __init__(
        self,
        db: MirroredDatabase,
        *,
        status: Callable[[], StatusReport] | None = None,
        interval: float = 10.0,
        auto_refresh: bool = False,
        mirror: LocalMirror | None = None,
    ) -> None:
        if interval < 1:
            raise ConfigError(f"interval must be at least 1 second, not {interval!r}.")
        self._db = db
        self._status = status or db.status
        self._mirror = mirror if mirror is not None else db.local_mirror
        self._report: StatusReport | None = None
        self._history: dict[str, deque[int]] = {}
        self._callbacks: list[Callable[[StatusReport], None]] = []
        self._refresh_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refreshes = 0

        self.header = w.HTML()
        self.refresh_button = w.Button(description="Refresh", icon="refresh", tooltip="Read the status now")
        self.auto_toggle = w.ToggleButton(description="Auto-refresh", icon="clock-o", value=False)
        self.interval_box = w.BoundedIntText(
            value=int(interval), min=1, max=3600, description="every (s)", layout=w.Layout(width="150px")
        )
        self.mirror_toggle = w.ToggleButton(
            description="Run local mirror",
            icon="play",
            value=False,
            disabled=self._mirror is None,
            tooltip="Replicate pending files in the background (local databases)",
        )
        self.table_picker = w.Dropdown(description="Details", options=[], layout=w.Layout(width="360px"))
        self.view = GridView(self._on_filter)
        self.grid, self.filter_box, self.attention_toggle = (
            self.view.grid,
            self.view.filter_box,
            self.view.attention_toggle,
        )
        self.detail = w.HTML()
        toolbar = w.HBox([self.refresh_button, self.auto_toggle, self.interval_box, self.mirror_toggle])
        children = [self.header, toolbar, self.view.bar, self.grid, self.table_picker, self.detail]
        super().__init__(children, css_class="openmirror-monitor")

        self.refresh_button.on_click(lambda _: self.refresh())
        self.auto_toggle.observe(self._on_auto, names="value")
        self.interval_box.observe(self._on_interval, names="value")
        self.mirror_toggle.observe(self._on_mirror, names="value")
        self.table_picker.observe(self._on_pick, names="value")
        self._started_mirror = False  # only a mirror this pane started is stopped with it
        if self._mirror is not None and self._mirror.is_running:
            with self._quiet():  # started elsewhere (%openmirror mirror --start): show it on
                self.mirror_toggle.value, self.mirror_toggle.icon = True, "stop"
        self._built = True
        _LIVE.add(self)
        self.refresh()
        if auto_refresh:
            self.auto_toggle.value = True

    # -- public surface -------------------------------------------------------------------------

    @property
    def report(self) -> StatusReport | None:
        """The report shown now (``None`` before the first successful refresh)."""
        return self._report

    @property
    def selected_table(self) -> str | None:
        """The table whose files the pane details, if one is picked."""
        return self.table_picker.value or None

    @property
    def auto_refreshing(self) -> bool:
        """Whether auto-refresh is on (its thread is alive)."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def mirror(self) -> LocalMirror | None:
        """The local mirror the pane's switch runs, for a local database; else ``None``."""
        return self._mirror

    def on_refresh(self, callback: Callable[[StatusReport], None]) -> None:
        """Call ``callback(report)`` after every successful refresh (on the refreshing thread)."""
        self._callbacks.append(callback)

    def refresh(self) -> StatusReport | None:
        """Read the status now and show it; an error shows in the status line, never raises."""
        with self._refresh_lock:
            started = time.perf_counter()
            with self._guard("Refresh failed", always=True) as failed:
                report = self._status()
            if failed:
                return None
            self._report = report
            self.refreshes += 1
            for t in report.tables:
                self._history.setdefault(t.table, deque(maxlen=HISTORY)).append(len(t.pending))
            self._render(report)
            took = time.perf_counter() - started
            # the status line starts with the time (UTC): said once, not twice
            self._say(f"Refreshed in {took:.1f} s{self._activity()}.")
        for callback in list(self._callbacks):
            callback(report)
        return report

    def close(self) -> None:
        """Stop auto-refresh and the mirror this pane started, then close the widgets."""
        if not self._built:
            super().close()
            return
        self.stop()
        _LIVE.discard(self)
        super().close()

    def stop(self, *, timeout: float = 30.0) -> None:
        """End both background threads (auto-refresh, local mirror) and wait for them."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None
        if self._mirror is not None and self._started_mirror and self._mirror.is_running:
            self._mirror.stop(timeout=timeout)
        self._started_mirror = False

    # -- handlers -------------------------------------------------------------------------------

    def _on_auto(self, change: dict[str, Any]) -> None:
        if self._rendering:
            return
        if change["new"]:
            self._start_auto()
        else:
            self._stop.set()
            thread = self._thread
            if thread is not None:
                thread.join(30)
            self._thread = None
            self._say("Auto-refresh off.")

    def _on_interval(self, change: dict[str, Any]) -> None:
        if not self._rendering and self.auto_refreshing:
            # restart the loop so the new interval applies from now, not after the old wait
            self._stop.set()
            if self._thread is not None:
                self._thread.join(30)
            self._start_auto()

    def _on_mirror(self, change: dict[str, Any]) -> None:
        if self._rendering or self._mirror is None:
            return
        if change["new"]:
            with self._guard("Starting the local mirror failed") as failed:
                self._mirror.start(
                    interval=float(self.interval_box.value),
                    on_pass=self._after_pass,
                    on_error=lambda exc: self._say(user_line(exc, "Mirror pass failed"), error=True),
                )
            if failed:
                return
            self._started_mirror = True
            self.mirror_toggle.icon = "stop"
            self._say("Local mirror running: the pane refreshes after each pass.")
        else:
            self._mirror.stop(timeout=60)
            self.mirror_toggle.icon = "play"
            self.refresh()

    def _after_pass(self, run: object) -> None:
        self.refresh()

    def _on_pick(self, change: dict[str, Any]) -> None:
        if not self._rendering and self._report is not None:
            self._render_detail(self._report)

    def _on_filter(self) -> None:
        # The pane never sets the filters itself, so this is always the user; the lock keeps a
        # refresh on the auto-refresh thread from laying out the grid with the filters before.
        with self._refresh_lock:
            if self._report is not None:
                self._render_grid(self._report)

    # -- rendering ------------------------------------------------------------------------------

    def _start_auto(self) -> None:
        self._stop = threading.Event()
        stop, interval, pane = self._stop, float(self.interval_box.value), weakref.ref(self)
        self._thread = threading.Thread(
            target=_auto_loop, args=(pane, stop, interval), name="openmirror-monitor", daemon=True
        )
        self._thread.start()
        self._say(f"Auto-refresh every {interval:g} s.")

    def _render(self, report: StatusReport) -> None:
        with self._quiet():
            self.header.value = report.header_html()
            self._render_grid(report)
            names = [t.table for t in report.worst_first]
            keep = self.table_picker.value if self.table_picker.value in names else None
            worst = report.needs_attention[0].table if report.needs_attention else None
            self.table_picker.options = names
            self.table_picker.value = keep or worst or (names[0] if names else None)
        self._render_detail(report)

    def _render_grid(self, report: StatusReport) -> None:
        notes = "".join(f"<div><i>{html.escape(n)}</i></div>" for n in (*report.foreign, *report.notes))
        self.view.render(report, trend=self._history, notes=notes)

    def _render_detail(self, report: StatusReport) -> None:
        chosen = self.table_picker.value
        found = next((t for t in report.tables if t.table == chosen), None)
        self.detail.value = found.to_html(now=report.taken_at) if found else "<i>No tables yet.</i>"

    def _activity(self) -> str:
        parts = []
        if self.auto_refreshing:
            parts.append(f"auto-refresh every {self.interval_box.value} s")
        if self._mirror is not None and self._mirror.is_running:
            parts.append("local mirror running")
        return f" ({', '.join(parts)})" if parts else ""


def _auto_loop(pane: weakref.ref[MonitorPane], stop: threading.Event, interval: float) -> None:
    """Refresh every ``interval`` s until ``stop`` is set or the pane is gone. Holding the pane
    only weakly lets a pane that nothing references any more be collected, ending the loop."""
    while not stop.wait(interval):
        live = pane()
        if live is None:
            return
        live.refresh()
        del live


@atexit.register
def _stop_all() -> None:
    # A kernel restart ends the process: stop the loops first, so no thread touches a widget
    # while the interpreter tears down.
    for pane in list(_LIVE):
        pane.stop(timeout=5)
