"""Bring the mirror's state file and a table's Delta log back in step after a crash.

Every mirror commit records its batch number as a Delta app transaction and its bookkeeping
(files, last sequence number, anchor, counters) in the commit info. The state file is written
after the commit, so it can only lag behind the table: ``catch_up`` replays the commits it
missed, and ``adopt`` rebuilds a lost state file from the table's history when the folder is
still the one the table was built from.
"""

from __future__ import annotations

from pathlib import Path

from openmirror_nb._core.mirror.apply import applied_batch, committed_batches
from openmirror_nb._core.mirror.discovery import MirrorFolder
from openmirror_nb._core.mirror.faults import TableFault
from openmirror_nb._core.mirror.state import MirroredTableState
from openmirror_nb._core.mirror.table_sync import drop_table_dir


def adopt(folder: MirrorFolder, table_dir: Path) -> MirroredTableState:
    """State for a table folder the state file does not know.

    A Delta table the mirror built from this very folder (same identity) is taken over with its
    history; any other table in the way is removed, and the table starts from scratch.
    """
    fresh = MirroredTableState.new(folder)
    if not table_dir.exists():
        return fresh
    try:
        commits = committed_batches(table_dir, after=0) if applied_batch(table_dir) else []
    except Exception:  # an unreadable leftover is replaced like any foreign table
        commits = []
    if commits and commits[-1].get("folder_ino") == fresh.folder_ino:
        adopted = MirroredTableState.new(folder)
        adopted.id = str(commits[-1].get("table_id") or adopted.id)
        for info in commits:
            adopted.record(info)
        if adopted.is_same_folder(folder):
            adopted.status = "Replicating"
            return adopted
    drop_table_dir(table_dir)
    return fresh


def catch_up(table: MirroredTableState, table_dir: Path) -> None:
    """Replay commits the state file missed; fail the table if its Delta log went backwards."""
    if table.batch == 0 and not table_dir.exists():
        return
    applied = applied_batch(table_dir) or 0
    if applied > table.batch:
        for info in committed_batches(table_dir, after=table.batch):
            table.record(info)
    elif applied < table.batch and not (table.failure and table.failure["kind"] == "table"):
        fault = TableFault(
            f"The Delta table {table_dir} is missing or was changed outside the mirror (it holds "
            f"batch {applied}, the mirror applied {table.batch}). Delete and recreate the table "
            "folder to rebuild it.",
            kind="table",
        )
        table.status, table.error_code, table.error_message = "Failed", fault.error_code, fault.reason
        table.failure = {"kind": "table", "file": None, "signature": None}
