"""What every panel is: one ``VBox`` (Fabric shows one widget per ``display`` and has no ``Output``
widget) ending in an ``HTML`` status line, with a render guard, an error boundary and a ``close``
that closes every widget inside it."""

from __future__ import annotations

import html
import logging
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import ipywidgets as w

from openmirror_nb import OpenMirrorError
from openmirror_nb._core.errors import scrub, user_line  # the one line a user sees, secrets removed

log = logging.getLogger("openmirror_nb.widgets")
RED = "#c62828"
# Inline table styles (the key profile's HTML, which the panel shows too, uses the same): a widget's
# HTML gets no notebook table styling, and its line height is a control's.
TABLE_STYLE = "border-collapse:collapse;font-size:12px;margin:2px 0"
TD_STYLE = "padding:1px 14px 1px 0;text-align:left;white-space:nowrap"
TH_STYLE = f"{TD_STYLE};border-bottom:1px solid #bdbdbd"


class RenderGuard:
    """``_rendering`` is true while a widget sets its own children (``_quiet``), so their
    observers can tell a user's change from the widget's own."""

    _rendering = False

    @contextmanager
    def _quiet(self) -> Iterator[None]:
        """Set widget values without running the widget's own handlers."""
        was, self._rendering = self._rendering, True
        try:
            yield
        finally:
            self._rendering = was


class Panel(RenderGuard, w.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """The base of ``MonitorPane``, ``Onboarding``, ``SchemaWizard`` and ``SourcePlanner``.

    Subclasses build their widgets, then call ``super().__init__(children, css_class=...)``; the
    status line is added last. The render guard (``RenderGuard``) keeps the panel's handlers from
    firing on the panel's own settings.
    """

    _stamped = False  # a live pane prefixes each status line with the time it was written

    def __init__(self, children: Sequence[Any], *, css_class: str) -> None:
        self.status_line = w.HTML()
        super().__init__([*children, self.status_line])
        self.add_class(css_class)

    def close(self) -> None:
        """Close the panel and every widget in it (each holds a comm of its own, which would
        otherwise outlive the panel in the kernel and in the front end)."""
        stack = list(getattr(self, "children", ()))
        while stack:
            child = stack.pop()
            stack.extend(getattr(child, "children", ()))
            child.close()
        super().close()

    def _say(self, text: str, *, error: bool = False) -> None:
        """Show ``text`` in the status line (red for an error); an empty text clears it."""
        if not text:
            self.status_line.value = ""
            return
        stamp = f"{datetime.now(UTC):%H:%M:%S} " if self._stamped else ""
        colour = RED if error else "inherit"
        self.status_line.value = f"<span style='color:{colour}'>{stamp}{html.escape(text)}</span>"

    @contextmanager
    def _guard(self, what: str, *, keep: bool = False, always: bool = False) -> Iterator[list[str]]:
        """The error boundary of a handler: an error becomes one line in the status line instead
        of an exception that would only reach the kernel's log.

        The line is an ``OpenMirrorError``'s own message, any other error's (Spark's, the SDK's)
        ``what: Type: text`` with its traceback logged, scrubbed; ``always`` prefixes ``what`` to both.
        ``keep``: collect the line in the yielded list without showing it.
        """
        failed: list[str] = []
        try:
            yield failed
        except Exception as exc:
            failed.append(self._line(exc, what, always=always))
        if failed and not keep:
            self._say(failed[0], error=True)

    @staticmethod
    def _line(exc: Exception, what: str, *, always: bool = False) -> str:
        """The status line for ``exc`` (see ``_guard``); call it in an ``except`` block."""
        mine = isinstance(exc, OpenMirrorError)
        if not mine:  # the traceback is for the log, scrubbed like the line: its text has the secrets
            log.error("%s\n%s", what, scrub("".join(traceback.format_exception(exc))).rstrip())
        return user_line(exc, None if mine and not always else what)
