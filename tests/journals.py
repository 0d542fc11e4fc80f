"""Decided pushes built without Spark: parts staged where ``db.push`` stages them, and the
journal it would write, for the publish-protocol, lifecycle and scan tests."""

from __future__ import annotations

from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.journal import Journal, JournalEntry
from openmirror_nb._core.landing_zone.push_state import PushState

META = '{"keyColumns": ["id"]}'
SCHEMA = '{"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": true, "metadata": {}}]}'
_AUTO = "auto"


def staged_journal(
    home: TableFolder,
    parts: list[bytes],
    *,
    push_id: str,
    incarnation: str | None = "inc1",
    start: int | None = None,
    metadata: str | None = _AUTO,
) -> Journal:
    """Stage ``parts`` and return the journal of their push (not written).

    ``incarnation=None`` builds what versions before incarnations wrote: staging at the root.
    ``metadata`` defaults to ``META`` for a table without ``_metadata.json`` (an initial load).
    """
    storage, prior = home.storage, home.read_state()
    if incarnation is None:
        staging = f"_openmirror/staging/{home.ref.key}/{push_id}"
    else:
        staging = home.staging(incarnation, push_id)
    if start is None:
        start = home.next_sequence_number(floor=prior.last_sequence_number if prior else 0)
    entries = []
    for i, data in enumerate(parts):
        path = f"{staging}/parts/part-{i:05d}-c000.parquet"
        storage.write_bytes(path, data)
        entries.append(JournalEntry(path, start + i))
    state = PushState(
        key_columns=("id",),
        schema=SCHEMA,
        last_sequence_number=prior.last_sequence_number if prior else 0,
        pushes=(prior.pushes if prior else 0) + 1,
        incarnation=incarnation,
        created=1_700_000_000.0,
        last_push=1_700_000_000.0,
    )
    return Journal(
        push_id=push_id,
        table=home.ref.key,
        folder=home.folder,
        extension="parquet",
        file_detection="SequentialFileName",
        staging=staging,
        state=state.to_bytes().decode(),
        metadata=(None if home.has_metadata() else META) if metadata == _AUTO else metadata,
        partner_events='{"partnerName": "openmirror_nb"}',
        entries=tuple(entries),
        incarnation=incarnation,
    )
