"""One pass of the local mirror over the landing zone's table folders: which folder each table is
mirrored from, the tables whose folders are gone dropped, and each folder synced (adopted, rebuilt
when recreated, caught up, its pending files applied); a failing table never stops the others.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from openmirror_nb._core.errors import user_line
from openmirror_nb._core.mirror.discovery import MirrorFolder
from openmirror_nb._core.mirror.faults import INTERNAL
from openmirror_nb._core.mirror.interpreter_exit import exiting
from openmirror_nb._core.mirror.monitoring import utc_now_text
from openmirror_nb._core.mirror.recovery import adopt, catch_up
from openmirror_nb._core.mirror.results import TableEvent, TableRun
from openmirror_nb._core.mirror.state import MirrorState
from openmirror_nb._core.mirror.table_sync import SyncLimits, drop_table_dir, sync_table
from openmirror_nb._core.table_names import identity

log = logging.getLogger(__name__)


def run_pass(
    state: MirrorState, folders: list[MirrorFolder], *, tables: Path, limits: SyncLimits
) -> list[TableRun]:
    """Sync every table folder once, into its Delta table under ``tables``; what each did, sorted."""
    runs: list[TableRun] = []
    owners = _owners(folders, state)
    live = {f.rel for f in owners.values()}
    for rel, known in list(state.tables.items()):
        if rel not in live:
            # The folder is gone (contract §5.2): drop the table unless another folder owns it now.
            owner = owners.get(identity(known.schema, known.name))
            if owner is None or (owner.schema, owner.name) != (known.schema, known.name):
                drop_table_dir(tables / known.schema / known.name)
            del state.tables[rel]
            runs.append(TableRun(known.qualified, rel, "Stopped", event="dropped"))
    named: dict[str, list[str]] = {}
    for folder in folders:
        named.setdefault(identity(folder.schema, folder.name), []).append(folder.rel)
    for folder in folders:
        key = identity(folder.schema, folder.name)
        owner = owners[key]
        if owner is not folder:
            message = (
                f"Table {folder.qualified} is already mirrored from folder '{owner.rel}' (table "
                f"names compare case-insensitively, root tables are in dbo); rename or remove "
                f"'{folder.rel}'."
            )
            runs.append(TableRun(folder.qualified, folder.rel, "Failed", error_code=INTERNAL, error=message))
            continue
        others = tuple(rel for rel in named[key] if rel != folder.rel)
        runs.append(replace(_sync_folder(folder, state, tables=tables, limits=limits), conflicts=others))
    return sorted(runs, key=lambda r: (r.table, r.folder))


def _sync_folder(folder: MirrorFolder, state: MirrorState, *, tables: Path, limits: SyncLimits) -> TableRun:
    """``_sync_known``, with an unexpected error failing this table only (recorded in its state),
    unless the interpreter is exiting: then the error ends the pass unrecorded."""
    try:
        return _sync_known(folder, state, tables=tables, limits=limits)
    except Exception as exc:
        if exiting():  # not the table's failure: the pass is dropped (mirror.interpreter_exit)
            raise
        log.exception("Replicating %s failed", folder.qualified)
        known = state.tables.get(folder.rel)
        if known is None:
            return TableRun(folder.qualified, folder.rel, "Failed", error_code=INTERNAL, error=user_line(exc))
        known.status, known.error_code = "Failed", INTERNAL
        known.error_message = user_line(exc)
        known.failure = {"kind": "internal", "file": None, "signature": None}
        return TableRun(known.qualified, folder.rel, "Failed", error_code=INTERNAL, error=known.error_message)


def _sync_known(folder: MirrorFolder, state: MirrorState, *, tables: Path, limits: SyncLimits) -> TableRun:
    """Adopt a new folder, rebuild a recreated one or catch up a known one, then apply its files."""
    table_dir = tables / folder.schema / folder.name
    known = state.tables.get(folder.rel)
    event: TableEvent = ""
    try:
        if known is not None and not known.is_same_folder(folder):
            drop_table_dir(table_dir)
            known, event = None, "rebuilt"
        if known is None:
            known = adopt(folder, table_dir)
            state.tables[folder.rel] = known
            event = event or "added"
        else:
            catch_up(known, table_dir)
        run = sync_table(folder, known, table_dir=table_dir, now=utc_now_text, save=state.save, limits=limits)
    except FileNotFoundError:
        if folder.path.exists():
            raise
        # The folder vanished during the pass; the next pass drops the table.
        state.tables.pop(folder.rel, None)
        return TableRun(folder.qualified, folder.rel, "Stopped")
    return replace(run, event=event)


def _owners(folders: list[MirrorFolder], state: MirrorState) -> dict[str, MirrorFolder]:
    """Per table (``table_names.identity``), the folder mirrored into it: the one the mirror
    already replicates, else the first; the others fail until they are renamed or removed."""
    owners: dict[str, MirrorFolder] = {}
    for folder in folders:
        key = identity(folder.schema, folder.name)
        held = owners.get(key)
        if held is None or (folder.rel in state.tables and held.rel not in state.tables):
            owners[key] = folder
    return owners
