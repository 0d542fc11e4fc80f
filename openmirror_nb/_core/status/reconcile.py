"""Row counts compared: the mirrored table, the publisher's key state and the source, and which
one disagrees (``db.reconcile``, ``db.status(reconcile=True)``).

Counting the mirrored table reads its Delta log and, where the log's statistics cannot be trusted
(deletion vectors, files without statistics), scans it. The key state is counted by the caller
(``pipeline.state_rows``, on Spark): this module only compares and words the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from openmirror_nb._core.errors import OpenMirrorError, StorageError, user_line
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.status.records import NOT_LISTED
from openmirror_nb._core.status.report import StatusReport
from openmirror_nb._core.status.row_counts import Reconciliation


def count_delta_rows(uri: str, *, storage_options: dict[str, str] | None = None) -> int:
    """Exact row count of the Delta table at ``uri``.

    Raises:
        StorageError: it is not a Delta table or cannot be read (the message names ``uri``,
            never a credential).
    """
    try:
        from deltalake import DeltaTable, QueryBuilder

        table = DeltaTable(uri, storage_options=storage_options)
        actions = table.get_add_actions(flatten=True)
        names = set(actions.schema.names)
        # Statistics give the count without reading data, unless rows were deleted by deletion
        # vectors (the service writes them) or a file was written without statistics.
        if "num_records" in names and not any(n.startswith("deletionVector") for n in names):
            counts = actions.column("num_records").to_pylist()
            if all(c is not None for c in counts):
                return int(sum(counts))
        result = QueryBuilder().register("t", table).execute("SELECT COUNT(*) AS n FROM t").read_all()
        return int(result.column("n")[0].as_py())
    except Exception as exc:  # deltalake raises its own and OS errors: one message for all
        raise StorageError(f"The mirrored table at {uri} cannot be counted: {user_line(exc)}") from None


def compare(
    table: str,
    *,
    mirrored: int | None,
    state: int | None,
    source: int | None,
    pending_files: int = 0,
    notes: tuple[str, ...] = (),
) -> Reconciliation:
    """Compare the counts that are known and say which one is the odd one out."""
    named = [
        (n, v) for n, v in (("mirrored", mirrored), ("state", state), ("source", source)) if v is not None
    ]
    if len(named) < 2:
        have = ", ".join(f"{_WHAT[n]} {v:,}" for n, v in named) or "nothing"
        why = f" ({'; '.join(notes)})" if notes else ""
        return Reconciliation(
            table, mirrored, state, source, "incomplete", f"only counted {have}{why}.", notes
        )
    values = {v for _, v in named}
    if len(values) == 1:
        message = f"{' and '.join(_WHAT[n] for n, _ in named)} agree: {named[0][1]:,} rows."
        return Reconciliation(table, mirrored, state, source, "match", message, notes)
    odd = _odd_one_out(named)
    counts = ", ".join(f"{_WHAT[n]} {v:,}" for n, v in named)
    why = _WHY.get(odd or "", "they all differ")
    if odd == "mirrored" and pending_files:
        why = f"{pending_files} file(s) are still pending: the mirror has not applied them yet"
    return Reconciliation(table, mirrored, state, source, "mismatch", f"{counts}: {why}.", notes)


_WHAT = {"mirrored": "the mirrored table", "state": "the key state", "source": "the source"}
_WHY = {
    "mirrored": (
        "the mirrored table differs from what was pushed; the mirror may be behind, failed, or the "
        "table was changed elsewhere (reseed it to rebuild)"
    ),
    "state": "the key state differs from the mirror and the source; push the source again",
    "source": "the source has changed since the last push; push it to bring the table in step",
}


def _odd_one_out(named: list[tuple[str, Any]]) -> str | None:
    """The one count that differs while the others agree. With only two counts there is no
    majority: the mirrored table is named when it is one of them (it is the last to change, after
    the push and the mirror's pass), else the source (it changed since the push)."""
    if len(named) == 2:
        names = [n for n, _ in named]
        return "mirrored" if "mirrored" in names else "source"
    for name, value in named:
        others = {v for n, v in named if n != name}
        if len(others) == 1 and value not in others:
            return name
    return None


def reconciled(
    report: StatusReport,
    *,
    mirrored: Callable[[TableRef], int | None] | None,
    state: Callable[[str], int | None],
    source_rows: int | None = None,
) -> StatusReport:
    """``report`` with every table's counts compared (``source_rows`` is for a one-table report).

    A count that cannot be taken becomes a note of the table's reconciliation, never an error.
    """
    tables = []
    for t in report.tables:
        notes: list[str] = []
        mirrored_rows = t.mirrored_rows
        if mirrored_rows is None and mirrored is not None and t.status != NOT_LISTED:
            mirrored_rows = _count(mirrored, TableRef.parse(t.table), "the mirrored table", notes)
        if mirrored_rows is None and not notes:
            notes.append(
                "the mirrored table was not counted: the mirror does not list it or has no Delta table"
            )
        state_rows = _count(state, t.table, "the key state", notes) if t.folder else None
        result = compare(
            t.table,
            mirrored=mirrored_rows,
            state=state_rows,
            source=source_rows,
            pending_files=len(t.pending),
            notes=tuple(notes),
        )
        tables.append(replace(t, mirrored_rows=mirrored_rows, state_rows=state_rows, reconciliation=result))
    return replace(report, tables=tuple(tables))


def _count(take: Callable[[Any], int | None], table: Any, what: str, notes: list[str]) -> int | None:
    try:
        return take(table)
    except OpenMirrorError as exc:
        notes.append(f"{what} could not be counted: {exc}")
        return None
