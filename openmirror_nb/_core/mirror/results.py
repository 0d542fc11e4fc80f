"""What one replication pass did: ``TableRun`` per table folder, ``MirrorRun`` for the pass."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from openmirror_nb._core.landing_zone.names import parse_sequence

TableEvent = Literal["", "added", "rebuilt", "dropped"]


@dataclass(frozen=True)
class TableRun:
    """One table's part of a pass.

    Attributes:
        table: ``schema.table`` (root-level folders are in schema ``dbo``).
        folder: The table folder relative to the landing zone.
        status: The service's table status: ``Initialized``, ``Snapshotting``, ``Replicating``,
            ``Stopped`` or ``Failed``.
        files_applied: Names of the data files applied in this pass, in order.
        rows_inserted: Applied change rows that insert: marker 0, or marker-free rows.
        rows_updated: Applied rows with marker 1 or 4 (or marker-free rows of an upsert-default
            table): each inserted or replaced its key's row.
        rows_deleted: Applied rows with marker 2.
        error_code: ``errorCode`` of a failed table, else empty.
        error: The error text of a failed table, or the gap note of a waiting one.
        missing_sequence: The sequence number the table waits for, when a gap blocks it.
        ignored_files: Visible names in the table folder that are not processed (non-conforming
            names, subfolders, already processed paths).
        event: ``added`` (first seen), ``rebuilt`` (folder recreated), ``dropped`` (folder
            deleted, Delta table removed) or empty.
        conflicts: Other folders naming this same table (their names differ only by case, or
            one is at the root and one in ``dbo.schema``): they fail, this one is replicated.
    """

    table: str
    folder: str
    status: str
    files_applied: tuple[str, ...] = ()
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    error_code: str = ""
    error: str = ""
    missing_sequence: int | None = None
    ignored_files: tuple[str, ...] = ()
    event: TableEvent = ""
    conflicts: tuple[str, ...] = ()

    @property
    def sequence_numbers(self) -> tuple[int, ...]:
        """Sequence numbers of the applied files that have 20-digit names."""
        found = (parse_sequence(n) for n in self.files_applied)
        return tuple(s for s in found if s is not None)

    @property
    def is_failed(self) -> bool:
        """Whether the mirror stopped on one of the table's files (status ``Failed``)."""
        return self.status == "Failed"

    def _summary(self) -> str:
        parts = [f"{self.table}: {self.status}"]
        if self.event:
            parts.append(self.event)
        if self.files_applied:
            seqs = self.sequence_numbers
            what = ", ".join(str(s) for s in seqs) if len(seqs) == len(self.files_applied) else None
            parts.append(f"{len(self.files_applied):,} file(s) applied" + (f" ({what})" if what else ""))
            parts.append(f"+{self.rows_inserted:,} ~{self.rows_updated:,} -{self.rows_deleted:,} rows")
        if self.missing_sequence is not None:
            parts.append(f"waiting for sequence number {self.missing_sequence}")
        if self.is_failed:
            parts.append(f"{self.error_code}: {self.error}")
        if self.conflicts:
            shown = ", ".join(f"'{c}'" for c in self.conflicts)
            parts.append(f"also named by folder {shown}, which is not replicated: rename or remove it")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"TableRun({self._summary()})"

    def _repr_html_(self) -> str:
        return (
            f"<div><b>{html.escape(self.table)}</b>: {html.escape(self._summary().split(': ', 1)[1])}</div>"
        )


@dataclass(frozen=True)
class MirrorRun:
    """One replication pass over every table folder of the landing zone.

    Attributes:
        tables: One ``TableRun`` per table folder seen (and per table dropped).
        started: When the pass started (UTC).
        seconds: Wall time of the pass.
    """

    tables: tuple[TableRun, ...]
    started: datetime
    seconds: float

    def __getitem__(self, table: str) -> TableRun:
        """The run of ``"schema.table"``, or of ``"table"`` in schema ``dbo``."""
        wanted = table if "." in table else f"dbo.{table}"
        for run in self.tables:
            if run.table == wanted:
                return run
        known = ", ".join(r.table for r in self.tables) or "none"
        raise KeyError(f"No table {wanted!r} in this run; tables: {known}.")

    def __contains__(self, table: object) -> bool:
        return isinstance(table, str) and any(
            r.table == (table if "." in table else f"dbo.{table}") for r in self.tables
        )

    @property
    def files_applied(self) -> int:
        """Data files applied in this pass, over every table."""
        return sum(len(r.files_applied) for r in self.tables)

    @property
    def failed(self) -> tuple[TableRun, ...]:
        """The tables the mirror failed in this pass."""
        return tuple(r for r in self.tables if r.is_failed)

    def __repr__(self) -> str:
        head = (
            f"MirrorRun({len(self.tables):,} table(s), {self.files_applied:,} file(s) applied "
            f"in {self.seconds:.2f} s"
        )
        if not self.tables:
            return head + ")"
        return head + ":\n" + "\n".join(f"  {r._summary()}" for r in self.tables) + "\n)"

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (
                    r.table,
                    r.status,
                    r.event,
                    ", ".join(r.files_applied),
                    f"{r.rows_inserted:,}",
                    f"{r.rows_updated:,}",
                    f"{r.rows_deleted:,}",
                    "" if r.missing_sequence is None else r.missing_sequence,
                    r.error,
                )
            )
            + "</tr>"
            for r in self.tables
        )
        head = "".join(
            f"<th>{h}</th>"
            for h in (
                "table",
                "status",
                "event",
                "files applied",
                "inserted",
                "updated",
                "deleted",
                "waiting for",
                "error",
            )
        )
        return (
            f"<div><b>Mirror pass</b>: {len(self.tables):,} table(s), {self.files_applied:,} file(s) applied "
            f"in {self.seconds:.2f} s<table><tr>{head}</tr>{rows}</table></div>"
        )
