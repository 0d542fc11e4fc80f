"""Tables whose last ``db.run_plan`` run failed to read or publish, as the status report shows
them: ``failed`` with the run's one-line error, whatever the mirror says of what was published
before (a failed run publishes nothing, so the mirror alone would call the table healthy)."""

from __future__ import annotations

from dataclasses import replace

from openmirror_nb._core.landing_zone.run_outcome import failed_runs
from openmirror_nb._core.status.records import NOT_LISTED, TableStatus
from openmirror_nb._core.storage.base import Storage


def with_failed_runs(
    statuses: list[TableStatus], landing_zone: Storage, *, table: str | None
) -> list[TableStatus]:
    """``statuses`` with each failed run recorded in ``landing_zone`` shown (only ``table``'s, if
    given); a table whose first run failed has no folder yet and gets a row of its own."""
    out = list(statuses)
    for run in failed_runs(landing_zone):
        if table is not None and run.table.casefold() != table.casefold():
            continue
        at = next((i for i, s in enumerate(out) if s.table.casefold() == run.table.casefold()), None)
        if at is None:
            out.append(TableStatus(run.table, "", "failed", NOT_LISTED, run_error=run.error))
        else:
            out[at] = replace(out[at], health="failed", run_error=run.error)
    return out
