"""``PushOptions``: the file options of a push as one row of widgets (format, compression, rows per
file, update marker) with ``db.push``'s defaults. The onboarding panel embeds it."""

from __future__ import annotations

from typing import Any, get_args

import ipywidgets as w

from openmirror_nb import DEFAULT_ROWS_PER_FILE, Compression, FileFormat, TableOptions

_WIDE = {"description_width": "initial"}


class PushOptions(w.HBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """Format (parquet, csv, tsv, psv), compression (Parquet only), rows per file, and the marker
    of updated rows in a snapshot diff (4 upsert or 1 update)."""

    def __init__(self) -> None:
        narrow = w.Layout(width="190px")
        self.format_picker = w.Dropdown(
            description="Format", options=list(get_args(FileFormat)), style=_WIDE, layout=narrow
        )
        self.compression_picker = w.Dropdown(
            description="Compression",
            options=list(get_args(Compression)),
            value="snappy",
            style=_WIDE,
            layout=narrow,
        )
        self.rows_box = w.BoundedIntText(
            value=DEFAULT_ROWS_PER_FILE,
            min=1,
            max=10**9,
            step=100_000,
            description="Rows per file",
            style=_WIDE,
            layout=w.Layout(width="230px"),
        )
        self.marker_picker = w.Dropdown(
            description="Updates as", options=[("4 upsert", 4), ("1 update", 1)], style=_WIDE, layout=narrow
        )
        super().__init__([self.format_picker, self.compression_picker, self.rows_box, self.marker_picker])
        self.add_class("openmirror-push-options")
        self.format_picker.observe(self._on_format, names="value")

    def fix_format(self, file_format: str | None) -> None:
        """Show an existing table's format, read-only; ``None``: the format is a choice again."""
        if file_format is not None:
            self.format_picker.value = file_format
        self.format_picker.disabled = file_format is not None

    def push_arguments(self, *, new_table: bool) -> dict[str, Any]:
        """``db.push`` keyword arguments; the format only for a new table (it is fixed after)."""
        delimited = self.format_picker.value != "parquet"
        return {
            "table_options": TableOptions(file_format=self.format_picker.value) if new_table else None,
            "compression": None if delimited else self.compression_picker.value,
            "rows_per_file": int(self.rows_box.value),
            "update_marker": 1 if self.marker_picker.value == 1 else 4,
        }

    def _on_format(self, change: dict[str, Any]) -> None:
        # Compression applies to Parquet only: a push refuses compressed delimited text.
        delimited = change["new"] != "parquet"
        self.compression_picker.value = "none" if delimited else "snappy"
        self.compression_picker.disabled = delimited
