"""Reseeds in progress, as the status report shows them: a table whose folder a reseed deleted
still has a row, blocked, saying which step comes next and how to finish; a table already
reloaded says the reseed's last steps are still to run."""

from __future__ import annotations

from dataclasses import replace

from openmirror_nb._core.landing_zone.reseed_journal import LOADED, ReseedJournal
from openmirror_nb._core.status.records import HEALTH_ORDER, NOT_LISTED, Health, TableStatus


def advice(journal: ReseedJournal) -> str:
    finish = f"db.apply_schema_change(plan, df, confirm={journal.table!r})"
    if journal.done >= LOADED:
        return f"reseed in progress, {journal.step_text}: the new data is in; {finish} again finishes it."
    return (
        f"reseed in progress, {journal.step_text}: the table has no data until the reload; finish "
        f"it with {finish} (the same plan and DataFrame)."
    )


def with_reseeds(
    statuses: list[TableStatus], journals: list[ReseedJournal], *, table: str | None
) -> list[TableStatus]:
    """``statuses`` with each reseed in progress shown (only ``table``'s, if given)."""
    out = list(statuses)
    for journal in journals:
        if table is not None and journal.table.casefold() != table.casefold():
            continue
        note = advice(journal)
        floor: Health = "warning" if journal.done >= LOADED else "blocked"
        at = next((i for i, s in enumerate(out) if s.table.casefold() == journal.table.casefold()), None)
        if at is None:
            out.append(TableStatus(journal.table, "", floor, NOT_LISTED, notes=(note,)))
            continue
        found = out[at]
        worst = min(found.health, floor, key=HEALTH_ORDER.index)
        out[at] = replace(found, health=worst, notes=(note, *found.notes))
    return out
