"""The WAL a live mirror's replication slot retains, in ``db.status()`` (issue 42): as last
measured, with its age, and a warning with the fix past the threshold."""

from __future__ import annotations

import openmirror_nb as om
from openmirror_nb._core.landing_zone.slot_wal import save_slot_wal, size


def test_status_shows_the_slots_wal_and_warns_past_its_threshold(tmp_path):
    db = om.connect(tmp_path / "db")
    save_slot_wal(db.storage, query="q1", slot="erp", retained=300 << 20, threshold=1 << 30)
    notes = db.status().notes
    assert any(n.startswith("replication slot erp retains 300 MB of WAL") for n in notes), notes
    assert not any("Warning" in n for n in notes)
    save_slot_wal(db.storage, query="q2", slot="erp", retained=3 << 30, threshold=1 << 30)  # a later stream
    notes = [n for n in db.status().notes if "slot erp" in n]
    assert len(notes) == 1 and notes[0].startswith("Warning: replication slot erp retains 3.0 GB of WAL")
    assert "over 1.0 GB" in notes[0] and "SELECT pg_drop_replication_slot('erp');" in notes[0]


def test_sizes_read_as_postgresql_writes_them():
    assert [size(n) for n in (512, 2048, 5 << 20, 1536 << 20, 300 << 30)] == [
        "512 bytes",
        "2.0 kB",
        "5.0 MB",
        "1.5 GB",
        "300 GB",
    ]
