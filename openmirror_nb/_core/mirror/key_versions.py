"""``KeyHistory`` and ``KeyVersion``: the versions of one key's row that ``db.history`` returns
(``history.key_history`` finds them), and how they print in a notebook.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from openmirror_nb._core.landing_zone.names import parse_sequence
from openmirror_nb._core.mirror.delta_read import utc_text

if TYPE_CHECKING:
    import pandas as pd

Operation = Literal["insert", "update", "delete"]
Row = dict[str, Any]


@dataclass(frozen=True)
class KeyVersion:
    """One Delta version in which the key's row appeared, changed or was deleted.

    Attributes:
        version: The Delta version.
        timestamp: Its commit time (UTC).
        operation: ``insert``, ``update`` or ``delete``.
        row: The row as of that version, in the table's column order (``None``: deleted).
        files: The landing-zone files the mirror applied in that commit (empty when the commit
            info does not name them).
    """

    version: int
    timestamp: datetime
    operation: Operation
    row: Row | None
    files: tuple[str, ...] = ()

    @property
    def sequences(self) -> tuple[int, ...]:
        """The sequence numbers of ``files`` (files not named by sequence are left out)."""
        found = (parse_sequence(name) for name in self.files)
        return tuple(n for n in found if n is not None)

    def _files_text(self) -> str:
        shown = self.sequences if len(self.sequences) == len(self.files) else self.files
        return ",".join(map(str, shown)) or "-"


@dataclass(frozen=True)
class KeyHistory:
    """Every version of one key's row in a mirrored table, oldest first.

    Attributes:
        table: ``name`` or ``schema.name``.
        key: The key, ``{column: value}`` over the table's key columns.
        entries: One per Delta version that inserted, changed or deleted the row.
        versions: The first and last Delta version searched.
    """

    table: str
    key: Mapping[str, Any]
    entries: tuple[KeyVersion, ...]
    versions: tuple[int, int]

    @property
    def actual(self) -> Row | None:
        """The row as the table holds it now (``None``: deleted, or never there)."""
        return self.entries[-1].row if self.entries else None

    @property
    def archive(self) -> tuple[KeyVersion, ...]:
        """The entries before the last one: the row's past versions."""
        return self.entries[:-1]

    def to_pandas(self) -> pd.DataFrame:
        """One row per entry: ``_commit_version``, ``_commit_timestamp``, ``_operation``,
        ``_files``, then the row's columns (a delete keeps only the key's values)."""
        import pandas as pd

        meta = ["_commit_version", "_commit_timestamp", "_operation", "_files"]
        records = [
            {
                "_commit_version": e.version,
                "_commit_timestamp": e.timestamp,
                "_operation": e.operation,
                "_files": list(e.files),
                **(e.row if e.row is not None else dict(self.key)),
            }
            for e in self.entries
        ]
        return pd.DataFrame(records, columns=meta + self._columns())

    def _title(self) -> str:
        key = ", ".join(f"{k}={v!r}" for k, v in self.key.items())
        return f"KeyHistory {self.table} ({key})"

    def _empty(self) -> str:
        first, last = self.versions
        return f"no version of the mirrored table holds this key (versions {first} to {last} searched)"

    def __repr__(self) -> str:
        if not self.entries:
            return f"{self._title()}: {self._empty()}"
        count = len(self.entries)
        lines = [f"{self._title()}: {count} version{'' if count == 1 else 's'}"]
        for e in self.entries:
            row = "(deleted)" if e.row is None else ", ".join(f"{k}={v!r}" for k, v in e.row.items())
            when, files = utc_text(e.timestamp), e._files_text()
            lines.append(f"  v{e.version:<4} {when}  {e.operation:<6}  files {files:<8}  {row}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        title = f"<b>{html.escape(self._title())}</b>"
        if not self.entries:
            return f"<div>{title}: <i>{html.escape(self._empty())}</i></div>"
        columns = self._columns()
        rows = [["version", "committed", "operation", "files", *columns]] + [
            [str(e.version), utc_text(e.timestamp), e.operation, e._files_text()]
            + ["" if e.row is None or e.row.get(c) is None else str(e.row[c]) for c in columns]
            for e in self.entries
        ]
        tag = ["th"] + ["td"] * len(self.entries)
        body = "".join(
            "<tr>" + "".join(f"<{t}>{html.escape(text)}</{t}>" for text in row) + "</tr>"
            for t, row in zip(tag, rows, strict=True)
        )
        return f"<div>{title}<table>{body}</table></div>"

    def _columns(self) -> list[str]:
        """The key columns, then every other column some entry's row has."""
        columns = list(self.key)
        for entry in self.entries:
            columns += [c for c in entry.row or () if c not in columns]
        return columns
