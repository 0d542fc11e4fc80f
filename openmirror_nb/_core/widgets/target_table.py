"""``TargetTable``: the table a push goes to, as one row of widgets: an existing table picked from
the database's list, or a schema and name typed and checked as typed (``om.check_table_name``: reserved
``_`` names, path separators, ``..``). The onboarding panel embeds it."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from openmirror_nb import check_table_name
from openmirror_nb._core.widgets.panel import Panel

if TYPE_CHECKING:
    from openmirror_nb import TableInfo

_WIDE = {"description_width": "initial"}
# "" rather than None: a Dropdown shows nothing at all for the value None
_NEW_TABLE = ("new table", "")


class TargetTable(w.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """Pick an existing table or type a new one; ``on_change`` callbacks run after each change.

    Args:
        describe: Called with an existing table's name (``db.describe``): its keys and format.
    """

    def __init__(self, describe: Callable[[str], TableInfo]) -> None:
        self._describe = describe
        self._callbacks: list[Callable[[], None]] = []
        self._tables: list[str] = []
        self._table: str | None = None
        self._info: TableInfo | None = None
        self._error: str | None = None
        self._auto_name = ""
        self._rendering = False
        self.table_picker = w.Dropdown(
            description="Table", options=[_NEW_TABLE], style=_WIDE, layout=w.Layout(width="260px")
        )
        self.schema_box = w.Text(description="schema", placeholder="none (dbo)", style=_WIDE)
        self.name_box = w.Text(description="name", placeholder="orders", style=_WIDE)
        self.note = w.HTML()
        super().__init__([w.HBox([self.table_picker, self.schema_box, self.name_box]), self.note])
        self.table_picker.observe(self._on_pick, names="value")
        self.schema_box.observe(self._on_name, names="value")
        self.name_box.observe(self._on_name, names="value")

    @property
    def table(self) -> str | None:
        """``name`` or ``schema.name`` when the name is valid, else ``None``."""
        return self._table

    @property
    def existing(self) -> TableInfo | None:
        """What ``db.describe`` says of the table when it exists (its keys and format are fixed)."""
        return self._info

    @property
    def error(self) -> str | None:
        """Why the name is refused (or the table could not be read), in one line."""
        return self._error

    def on_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def set_tables(self, tables: list[str]) -> None:
        """The database's tables, offered in the picker (a push may have added one)."""
        self._tables = list(tables)
        self._rendering = True
        try:
            self.table_picker.options = [_NEW_TABLE, *((t, t) for t in self._tables)]
        finally:
            self._rendering = False
        self.resolve()

    def follow_source(self, name: str) -> None:
        """Name the table after a source, unless the user typed a name of their own."""
        if self.name_box.value in ("", self._auto_name):
            self._auto_name = name.rsplit(".", 1)[-1].lstrip("_")  # "lakehouse.orders" -> "orders"
            self._set(self.schema_box.value, self._auto_name)
        self.resolve()

    def resolve(self) -> None:
        """Check the typed name, read the table if it exists, and tell the callbacks."""
        schema, name = self.schema_box.value.strip(), self.name_box.value
        self._table = self._info = self._error = None
        try:
            if name or schema:
                self._table = check_table_name(f"{schema}.{name}" if schema else name)
            if self._table is not None and self._table in self._tables:
                self._info = self._describe(self._table)
        except Exception as exc:  # one line here; a foreign error's traceback goes to the log
            self._error = Panel._line(exc, f"Reading table {self._table} failed")
        self._rendering = True
        try:
            self.table_picker.value = self._table if self._info is not None else ""
        finally:
            self._rendering = False
        self.note.value = _note(self._table, self._info)
        for callback in list(self._callbacks):
            callback()

    def _on_pick(self, change: dict[str, Any]) -> None:
        if self._rendering:
            return
        # a listed name is already checked: "schema.name" or "name"; "" is "new table", a name to type
        schema, _, name = check_table_name(change["new"]).rpartition(".") if change["new"] else ("", "", "")
        self._set(schema, name)
        self.resolve()

    def _on_name(self, change: dict[str, Any]) -> None:
        if not self._rendering:
            self.resolve()

    def _set(self, schema: str, name: str) -> None:
        self._rendering = True
        try:
            self.schema_box.value, self.name_box.value = schema, name
        finally:
            self._rendering = False


def _note(table: str | None, info: TableInfo | None) -> str:
    if table is None:
        return ""
    if info is None:
        return f"<small>New table <code>{html.escape(table)}</code>: the first push fixes its keys.</small>"
    return (
        f"<small>Existing table <code>{html.escape(table)}</code>: keys "
        f"<b>{html.escape(', '.join(info.keys))}</b> and format {info.options.file_format} are fixed; "
        f"last sequence number {info.last_sequence}.</small>"
    )
