"""What was last pushed to a table, kept in the table folder's ``_openmirror/`` (design §4).

Living inside the table folder means dropping the folder drops the state with it. The state is
committed only through the publish journal, so it never disagrees with the published files.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from openmirror_nb.landing_zone import INTERNAL_FOLDER
from openmirror_nb.storage.base import Storage

STATE_VERSION = 1


def state_path(folder: str) -> str:
    return f"{folder}/{INTERNAL_FOLDER}/state.json"


@dataclass(frozen=True)
class TableState:
    """The table as of the last committed push.

    Attributes:
        key_columns: The table's keyColumns.
        schema: The pushed columns as Spark's schema JSON (``StructType.json()``).
        last_sequence_number: The last sequence number this tool published.
        pushes: How many pushes were committed.
        base: Key-state folder of the last snapshot push (keys + row hashes), if any.
        deltas: Key-state folders of the pushes since ``base``, oldest first.
        base_rows: Rows in ``base`` (0 without one); ``None`` in states older than the count.
        delta_rows: Rows in ``deltas`` (keys touched, at most); ``None`` as for ``base_rows``.
        buckets: The hash-bucket count ``base`` is laid out in (see ``pipeline.buckets``);
            ``None`` when it is not, which reads it plainly.
    """

    key_columns: tuple[str, ...]
    schema: str
    last_sequence_number: int
    pushes: int = 0
    base: str | None = None
    deltas: tuple[str, ...] = ()
    base_rows: int | None = 0
    delta_rows: int | None = 0
    buckets: int | None = None

    @property
    def key_state(self) -> list[str]:
        """The state folders to merge, oldest first (see ``pipeline.keystate``)."""
        return ([self.base] if self.base else []) + list(self.deltas)

    def to_bytes(self) -> bytes:
        doc: dict[str, Any] = {"version": STATE_VERSION, **asdict(self)}
        doc["key_columns"] = list(self.key_columns)
        doc["deltas"] = list(self.deltas)
        return (json.dumps(doc, indent=2) + "\n").encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> TableState:
        doc = json.loads(data)
        return cls(
            key_columns=tuple(doc["key_columns"]),
            schema=doc["schema"],
            last_sequence_number=int(doc["last_sequence_number"]),
            pushes=int(doc.get("pushes", 0)),
            base=doc.get("base"),
            deltas=tuple(doc.get("deltas", ())),
            base_rows=_count(doc.get("base_rows")),
            delta_rows=_count(doc.get("delta_rows")),
            buckets=_count(doc.get("buckets")),
        )


def next_state(
    prior: TableState | None,
    *,
    key_columns: tuple[str, ...],
    schema: str,
    folder: str,
    new_base: bool,
    rows: int,
    buckets: int | None = None,
) -> TableState:
    """The state after a push that wrote ``rows`` rows of key state to ``folder``: a new base
    (replacing base and deltas, laid out in ``buckets`` if given), or one more delta on top of
    ``prior``."""
    before = prior or TableState(key_columns=key_columns, schema=schema, last_sequence_number=0)
    base: str | None
    deltas: tuple[str, ...]
    base_rows: int | None
    delta_rows: int | None
    if new_base:
        base, deltas, base_rows, delta_rows = folder, (), rows, 0
    else:
        base, deltas, base_rows = before.base, (*before.deltas, folder), before.base_rows
        delta_rows = None if before.delta_rows is None else before.delta_rows + rows
        buckets = before.buckets
    return TableState(
        key_columns=key_columns,
        schema=schema,
        last_sequence_number=before.last_sequence_number,
        pushes=before.pushes + 1,
        base=base,
        deltas=deltas,
        base_rows=base_rows,
        delta_rows=delta_rows,
        buckets=buckets,
    )


def _count(value: Any) -> int | None:
    return None if value is None else int(value)


def read_state(storage: Storage, folder: str) -> TableState | None:
    """The committed state, or ``None`` for a table this tool has not pushed to."""
    try:
        return TableState.from_bytes(storage.read_bytes(state_path(folder)))
    except FileNotFoundError:
        return None
