"""``KeyChoice``: the key columns of a push as one row of widgets: the source's columns to pick
from, the suggested keys as buttons, and the profile of the choice. The onboarding panel embeds it;
the panel counts the suggestions and the profile and tells it what to show."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from openmirror_nb._core.widgets.panel import RenderGuard

if TYPE_CHECKING:
    from openmirror_nb import KeyProfile

_WIDE = {"description_width": "initial"}


class KeyChoice(RenderGuard, w.HBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """Pick key columns from a list or take a suggestion; ``on_change`` callbacks run after each
    choice the user makes, not after the panel's own settings."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []
        self.key_select = w.SelectMultiple(description="Keys", rows=6, style=_WIDE)
        self.key_select.layout = w.Layout(width="300px")
        self.suggest_note = w.HTML()
        self.suggestions = w.ToggleButtons(options=[], value=None, style={"button_width": "auto"})
        self.profile = w.HTML()
        super().__init__([self.key_select, w.VBox([self.suggest_note, self.suggestions, self.profile])])
        self.key_select.observe(self._on_keys, names="value")
        self.suggestions.observe(self._on_suggestion, names="value")

    @property
    def columns(self) -> tuple[str, ...]:
        """The key columns chosen."""
        return tuple(self.key_select.value)

    def on_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def offer(self, columns: Sequence[tuple[str, str]]) -> None:
        """A new source's (name, type) columns to pick from; the choice is cleared."""
        with self._quiet():
            self.key_select.value = ()
            self.key_select.options = [(f"{n}  ({t})", n) for n, t in columns]

    def choose(self, keys: tuple[str, ...]) -> None:
        """Set the choice as the panel's own setting (an existing table's keys, or none)."""
        with self._quiet():
            self.key_select.value = keys

    def show(
        self, *, suggestions: list[tuple[str, ...]], profile: KeyProfile | None, loaded: bool, fixed: bool
    ) -> None:
        """Show a loaded source's suggestions and the choice's profile; ``fixed`` (the keys of an
        existing table) locks the choice."""
        with self._quiet():
            self.key_select.disabled = fixed or not loaded
            self.suggestions.options = [(" + ".join(k), k) for k in suggestions]
            self.suggestions.value = self.columns if self.columns in suggestions else None
            self.suggestions.disabled = fixed
            self.suggest_note.value = _suggest_note(loaded, suggestions)
            self.profile.value = profile._repr_html_() if profile else ""

    def _on_keys(self, change: dict[str, Any]) -> None:
        if not self._rendering:
            self._changed()

    def _on_suggestion(self, change: dict[str, Any]) -> None:
        if self._rendering or change["new"] is None:
            return
        with self._quiet():
            self.key_select.value = tuple(change["new"])
        self._changed()

    def _changed(self) -> None:
        for callback in list(self._callbacks):
            callback()


def _suggest_note(loaded: bool, found: list[tuple[str, ...]]) -> str:
    if not loaded:
        return ""
    if not found:
        return "<i>No suggested key: no column or pair of columns is non-NULL and unique here.</i>"
    return "<b>Suggested keys</b> <small>(non-NULL and unique on the source):</small>"
