"""A table's life without Spark: what ``settle`` rolls forward or removes, ``db.drop`` (with and
without waiting for the mirror), and the crash-safe order of a drop.

Landing zones are built through the real publish protocol (``publish``) or crafted file by file
for what older versions left (journals, staging and key state at the landing-zone root).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.cli import main
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.journal import Journal
from openmirror_nb._core.landing_zone.lifecycle import settle
from openmirror_nb._core.landing_zone.publish import publish
from tests.journals import staged_journal

TABLE = "sales.orders"
FOLDER = "sales.schema/orders"
META = '{"keyColumns": ["id"]}'


def _parquet(ids: list[int]) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}), sink)
    return sink.getvalue().to_pybytes()


def _journal(
    home: TableFolder, ids: list[int], *, incarnation: str | None, push: str, start: int, metadata: str | None
) -> Journal:
    return staged_journal(
        home, [_parquet(ids)], push_id=push, incarnation=incarnation, start=start, metadata=metadata
    )


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db")


@pytest.fixture
def home(db):
    return TableFolder.of(db.storage, TABLE)


def _data_files(db) -> list[str]:
    folder = db.target.landing_zone / FOLDER
    return sorted(p.name for p in folder.rglob("0*.parquet")) if folder.exists() else []


def test_a_journal_of_an_ended_life_is_removed_and_reported_never_published(db, home):
    publish(home, _journal(home, [1, 2], incarnation="life1", push="p1", start=1, metadata=META))
    # the folder was deleted and a new life began; a journal of the old one is found in the new
    # folder (as a crash in the middle of a hand-made delete would leave it)
    db.storage.delete(FOLDER)
    publish(home, _journal(home, [7], incarnation="life2", push="p2", start=1, metadata=META))
    stale = _journal(home, [3], incarnation="life1", push="p3", start=2, metadata=None)
    home.write_journal(stale)
    done = settle(home)
    assert done.rolled_forward is None
    assert set(done.removed) == {home.journal_path, stale.staging}
    assert _data_files(db) == ["00000000000000000001.parquet"]
    assert home.read_state().incarnation == "life2" and not db.storage.exists(home.journal_path)


def test_a_later_push_is_never_rolled_forward_into_a_folder_without_metadata(db, home):
    publish(home, _journal(home, [1], incarnation="life1", push="p1", start=1, metadata=META))
    home.write_journal(_journal(home, [2], incarnation="life1", push="p2", start=2, metadata=None))
    db.storage.delete(home.metadata_path)  # someone removed _metadata.json by hand
    assert db.recover(TABLE).rolled_forward is None
    assert _data_files(db) == ["00000000000000000001.parquet"]


def test_an_initial_load_journal_creates_its_own_metadata(db, home):
    home.write_journal(_journal(home, [1, 2], incarnation="life1", push="p1", start=1, metadata=META))
    recovery = db.recover(TABLE)
    assert recovery and recovery.rolled_forward == "p1" and recovery.removed == ()
    assert db.storage.read_bytes(home.metadata_path).decode() == META
    assert _data_files(db) == ["00000000000000000001.parquet"]


def test_what_older_versions_left_at_the_root_is_finished_or_removed(db, home):
    # a decided push of an older version, into a table that still has its metadata: finished
    publish(home, _journal(home, [1], incarnation=None, push="p1", start=1, metadata=META))
    legacy = _journal(home, [2], incarnation=None, push="p2", start=2, metadata=None)
    db.storage.write_bytes(home.legacy_journal_path, legacy.to_bytes())
    db.storage.write_bytes(f"_openmirror/snapshots/{TABLE}/dead/part-0.parquet", b"x")
    done = settle(home)
    assert done.rolled_forward is not None and done.rolled_forward.push_id == "p2"
    assert done.removed == (f"_openmirror/snapshots/{TABLE}/dead",)
    assert _data_files(db) == ["00000000000000000001.parquet", "00000000000000000002.parquet"]
    # the same after the folder was deleted: removed, reported, nothing published
    db.storage.delete(FOLDER)
    legacy = _journal(home, [3], incarnation=None, push="p3", start=3, metadata=None)
    db.storage.write_bytes(home.legacy_journal_path, legacy.to_bytes())
    done = settle(home)
    assert done.rolled_forward is None
    assert set(done.removed) == {home.legacy_journal_path, legacy.staging}
    assert not db.storage.exists(FOLDER) and not (db.target.landing_zone / "_openmirror").exists()


def test_drop_removes_the_folder_and_every_internal_then_the_mirror_drops_the_table(db, home, tmp_path):
    publish(home, _journal(home, [1, 2, 3], incarnation="life1", push="p1", start=1, metadata=META))
    db.storage.write_bytes(f"_openmirror/staging/{TABLE}/dead/part-0.parquet", b"x")  # older version
    db.storage.write_bytes("other/_metadata.json", META.encode())
    mirror = om.LocalMirror(db.target.root)
    mirror.run_once()
    assert db.read_table(TABLE, as_pandas=True)["id"].tolist() == [1, 2, 3]
    with pytest.raises(om.MirrorWaitTimeoutError, match=r"still listed .*LocalMirror\("):
        db.drop(TABLE, wait=True, timeout=0.5)  # nobody runs the mirror
    assert not db.storage.exists(FOLDER) and db.tables() == ["other"]
    mirror.start(interval=0.1)
    try:
        again = db.drop(TABLE, wait=True, timeout=60)
    finally:
        mirror.stop()
    assert not again.existed and again.waited is not None and "nothing to drop" in repr(again)
    assert not (db.target.root / "Tables" / "sales" / "orders").exists()
    tables = json.loads((db.target.root / "Files/Monitoring/tables.json").read_text())["tables"]
    assert [t["sourceTableName"] for t in tables] == ["other"]


def test_drop_reports_what_it_removed_and_keeps_other_tables(db, home):
    publish(home, _journal(home, [1], incarnation="life1", push="p1", start=1, metadata=META))
    db.storage.write_bytes(f"_openmirror/staging/{TABLE}/dead/part-0.parquet", b"x")
    db.storage.write_bytes("sales.schema/other/_metadata.json", META.encode())
    dropped = db.drop(TABLE)
    assert dropped.existed and dropped.incarnation == "life1" and dropped.data_files == 1
    assert dropped.removed == (FOLDER, f"_openmirror/staging/{TABLE}/dead")
    assert db.tables() == ["sales.other"]  # the schema folder stays while it holds a table
    db.drop("sales.other")
    assert not (db.target.landing_zone / "sales.schema").exists()
    assert sorted(p.name for p in db.target.landing_zone.iterdir()) == [
        "_partnerEvents.json"
    ]  # database-wide


def test_a_drop_killed_after_the_move_is_finished_by_the_next_operation(db, home, monkeypatch):
    publish(home, _journal(home, [1], incarnation="life1", push="p1", start=1, metadata=META))

    class Killed(BaseException):
        pass

    def die(step: str) -> None:
        if step == "drop_after_move":
            raise Killed

    monkeypatch.setattr("openmirror_nb._core.landing_zone.lifecycle.crash_point", die)
    with pytest.raises(Killed):
        db.drop(TABLE)
    monkeypatch.undo()
    trash = [e.name for e in db.storage.list_dir("_openmirror/trash")]
    assert not db.storage.exists(FOLDER) and len(trash) == 1 and trash[0].startswith(f"{TABLE}.life1.")
    recovery = db.recover(TABLE)
    assert not recovery and recovery.removed == (f"_openmirror/trash/{trash[0]}",)
    assert not (db.target.landing_zone / "_openmirror").exists()


def test_cli_drop(db, home, capsys):
    publish(home, _journal(home, [1], incarnation="life1", push="p1", start=1, metadata=META))
    assert main(["drop", TABLE, "--db", str(db.target.root)]) == 0
    out = capsys.readouterr().out
    assert f"removed {FOLDER}" in out and "1 data files" in out
    assert main(["drop", "_bad", "--db", str(db.target.root)]) == 2
    assert "InvalidNameError" in capsys.readouterr().err
