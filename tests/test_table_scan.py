"""``scan`` on landing zones built by the real publish protocol (no Spark), and against what the
local mirror actually processed: pending is what the next pass applies, a gap is what it waits
for, a zero-byte file is what it fails on (contract §3.3, §3.5, §6)."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder, data_file_name, scan
from openmirror_nb._core.landing_zone.journal import Journal
from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.publish import publish
from openmirror_nb._core.mirror import LocalMirror
from tests.journals import staged_journal

META = '{"keyColumns": ["id"]}'
SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}
)


def seq(n: int) -> str:
    return data_file_name(n, "parquet")


def names(files) -> list[str]:
    return [f.name for f in files]


def kinds(result) -> list[tuple[str, str | None]]:
    return [(b.kind, b.file) for b in result.blockers]


def parquet(*ids: int) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"row {i}" for i in ids]}), sink)
    return sink.getvalue()


def decide(home: TableFolder, parts: list[bytes], *, push_id: str, incarnation: str = "inc1") -> Journal:
    """Stage ``parts`` and write the journal of a push, as ``db.push`` decides one."""
    journal = staged_journal(home, parts, push_id=push_id, incarnation=incarnation)
    home.write_journal(journal)
    return journal


def push(home: TableFolder, parts: list[bytes], *, push_id: str) -> Journal:
    with home.lock(timeout=5):
        return publish(home, decide(home, parts, push_id=push_id))


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db")


@pytest.fixture
def home(db):
    return TableFolder.of(db.storage, "sales.orders")


def test_scan_after_published_pushes_and_the_service_moving_files(db, home):
    push(home, [parquet(1), parquet(2), parquet(3)], push_id="p1")
    result = scan(db.storage, "sales.orders")
    assert (result.table, result.folder, result.exists) == ("sales.orders", "sales.schema/orders", True)
    assert result.metadata is not None and result.metadata.key_columns == ("id",)
    assert result.state is not None and result.state.last_sequence_number == 3
    assert result.state.incarnation == "inc1"
    assert names(result.pending) == [seq(1), seq(2), seq(3)] and result.blockers == ()
    assert result.newest_processed is None and result.last_sequence == 3

    # the service processed 1 and 2: it moves 1 and keeps 2, the newest, in place
    db.storage.rename(f"{home.folder}/{seq(1)}", f"{home.folder}/_ProcessedFiles/{seq(1)}")
    result = scan(db.storage, "sales.orders")
    assert names(result.pending) == [seq(3)]
    assert result.newest_processed is not None and result.newest_processed.name == seq(2)
    assert names(result.processed) == [seq(1)] and result.blockers == ()

    push(home, [parquet(4), parquet(5)], push_id="p2")
    result = scan(db.storage, "sales.orders")
    assert names(result.pending) == [seq(3), seq(4), seq(5)] and result.blockers == ()
    assert result.state is not None and result.state.last_sequence_number == 5 and result.state.pushes == 2
    assert result.last_sequence == 5


def test_scan_of_a_push_decided_but_not_finished_until_it_is_rolled_forward(db, home):
    push(home, [parquet(1)], push_id="p1")
    journal = decide(home, [parquet(2), parquet(3)], push_id="p2")
    db.storage.rename(journal.entries[0].staged, journal.final(journal.entries[0]))  # died here
    result = scan(db.storage, "sales.orders")
    assert kinds(result) == [("unfinished_push", home.journal_path)]
    assert "db.recover('sales.orders')" in result.blockers[0].message
    assert names(result.pending) == [seq(1), seq(2)]
    assert result.state is not None and result.state.last_sequence_number == 1  # not committed yet

    with home.lock(timeout=5):
        assert scan(db.storage, "sales.orders").blockers == ()  # the lock holder finishes it
        assert settle(home).rolled_forward is not None
    result = scan(db.storage, "sales.orders")
    assert result.blockers == () and names(result.pending) == [seq(1), seq(2), seq(3)]
    assert result.state is not None and result.state.last_sequence_number == 3


def test_scan_of_staging_left_by_a_push_that_died_before_deciding(db, home):
    push(home, [parquet(1)], push_id="p1")
    decide(home, [parquet(2)], push_id="p2")
    db.storage.delete(home.journal_path)  # it never got as far as its journal
    result = scan(db.storage, "sales.orders")
    assert kinds(result) == [("orphaned_staging", home.staging("inc1", "p2"))]
    assert names(result.pending) == [seq(1)]
    with home.lock(timeout=5):
        settle(home)
    assert scan(db.storage, "sales.orders").blockers == ()


def test_scan_of_a_drop_that_died_after_moving_the_folder_away(db, home):
    push(home, [parquet(1)], push_id="p1")
    trash = home.trash_path("inc1")
    db.storage.move_folder(home.folder, trash)  # drop's first step; the process died after it
    result = scan(db.storage, "sales.orders")
    assert not result.exists and result.metadata is None and result.pending == ()
    assert kinds(result) == [("unfinished_drop", trash)]
    assert kinds(scan(db.storage, "orders")) == []  # another table of the same name, in dbo
    with home.lock(timeout=5):
        settle(home)
    assert scan(db.storage, "sales.orders").blockers == ()


def test_scan_agrees_with_what_the_local_mirror_processed(db, home, tmp_path):
    mirror = LocalMirror(tmp_path / "db")
    push(home, [parquet(1, 2), parquet(3), parquet(4)], push_id="p1")
    before = scan(db.storage, "sales.orders")
    run = mirror.run_once()["sales.orders"]
    assert run.status == "Replicating" and run.files_applied == tuple(names(before.pending))
    after = scan(db.storage, "sales.orders")
    assert after.pending == () and after.blockers == ()
    assert after.newest_processed is not None and after.newest_processed.name == seq(3)
    assert names(after.processed) == [seq(1), seq(2)]

    push(home, [parquet(5), parquet(1)], push_id="p2")
    before = scan(db.storage, "sales.orders")
    assert names(before.pending) == [seq(4), seq(5)]
    assert mirror.run_once()["sales.orders"].files_applied == tuple(names(before.pending))
    after = scan(db.storage, "sales.orders")
    assert after.pending == () and after.newest_processed is not None
    assert after.newest_processed.name == seq(5)
    assert names(after.processed) == [seq(1), seq(2), seq(3), seq(4)]
    assert mirror.run_once()["sales.orders"].files_applied == ()  # nothing was pending

    # seven days on, the moved files are purged: the kept newest still reads as processed
    for f in after.processed:
        db.storage.delete(f"{home.folder}/_ProcessedFiles/{f.name}")
    push(home, [parquet(6)], push_id="p3")
    before = scan(db.storage, "sales.orders")
    assert before.processed == () and before.blockers == ()
    assert before.newest_processed is not None and before.newest_processed.name == seq(5)
    assert names(before.pending) == [seq(6)]
    assert mirror.run_once()["sales.orders"].files_applied == (seq(6),)


def test_scan_names_the_gap_the_mirror_waits_for(db, home, tmp_path):
    mirror = LocalMirror(tmp_path / "db")
    push(home, [parquet(1), parquet(2)], push_id="p1")
    mirror.run_once()
    db.storage.write_bytes(f"{home.folder}/{seq(4)}", parquet(4))  # published out of order
    result = scan(db.storage, "sales.orders")
    assert kinds(result) == [("gap", seq(3))] and names(result.pending) == [seq(4)]
    run = mirror.run_once()["sales.orders"]
    assert run.missing_sequence == 3 and run.files_applied == ()
    db.storage.write_bytes(f"{home.folder}/{seq(3)}", parquet(3))
    result = scan(db.storage, "sales.orders")
    assert result.blockers == () and names(result.pending) == [seq(3), seq(4)]
    assert mirror.run_once()["sales.orders"].files_applied == (seq(3), seq(4))
    assert scan(db.storage, "sales.orders").pending == ()


def test_scan_names_the_zero_byte_file_the_mirror_fails_on(db, home, tmp_path):
    mirror = LocalMirror(tmp_path / "db")
    push(home, [parquet(1), b""], push_id="p1")
    result = scan(db.storage, "sales.orders")
    assert kinds(result) == [("zero_byte", seq(2))]
    run = mirror.run_once()["sales.orders"]
    assert run.is_failed and run.files_applied == (seq(1),)
    assert kinds(scan(db.storage, "sales.orders")) == [("zero_byte", seq(2))]
    # the fix the message gives: publish it again under the same name, with its rows
    db.storage.delete(f"{home.folder}/{seq(2)}")
    db.storage.write_bytes(f"{home.folder}/{seq(2)}", parquet(2))
    assert scan(db.storage, "sales.orders").blockers == ()
    assert mirror.run_once()["sales.orders"].files_applied == (seq(2),)


def test_scan_flags_the_names_the_mirror_ignores(db, home, tmp_path):
    push(home, [parquet(1)], push_id="p1")
    for rel in ("data.parquet", "notes.txt", "extra/f.parquet", "_00000000000000000002.parquet"):
        db.storage.write_bytes(f"{home.folder}/{rel}", parquet(9))
    flagged = {b.file for b in scan(db.storage, "sales.orders").blockers if b.kind == "bad_name"}
    run = LocalMirror(tmp_path / "db").run_once()["sales.orders"]
    assert (
        flagged == {name.rstrip("/") for name in run.ignored_files} == {"data.parquet", "notes.txt", "extra"}
    )
    assert run.files_applied == (seq(1),)
