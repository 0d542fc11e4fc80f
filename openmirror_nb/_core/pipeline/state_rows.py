"""How many rows a table's key state holds, exactly: the base with every delta applied, on Spark
(for reconciliation; a push never needs it, since it keeps approximate counts in the state)."""

from __future__ import annotations

import shutil
import tempfile

from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.pipeline import keystate
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.storage.local import fetch_folder


def count_state_rows(storage: Storage, table: str) -> int | None:
    """Rows of ``table`` as last pushed (``None`` if this tool never pushed to it).

    Reads the state without the table lock: a push that commits meanwhile leaves the folders
    this state names in place until the next push settles, so the count is of one state.
    """
    from pyspark.sql import functions as F

    from openmirror_nb._core.runtime import get_spark

    state = TableFolder.of(storage, table).read_state()
    if state is None:
        return None
    local_dir = None if storage.SPARK_WRITABLE else tempfile.mkdtemp(prefix="openmirror-count-")
    try:
        deltas, feeds = keystate.deltas_of(state, lambda d: fetch_folder(storage, d, local_dir=local_dir))
        current = keystate.read_effective(
            get_spark(),
            base=fetch_folder(storage, state.base, local_dir=local_dir) if state.base else None,
            deltas=deltas,
            keys=tuple(state.key_columns),
            small_deltas=False,
            feeds=feeds,
        )
        if current is None:
            return 0
        total = current.agg(F.sum(F.col(keystate.ROWS))).first()
        return int(total[0] or 0) if total is not None else 0
    finally:
        if local_dir is not None:
            shutil.rmtree(local_dir, ignore_errors=True)
