"""Folders a push would refuse to make, met by the local mirror and ``db.status()``: two spellings
of one table made by hand (both reported, one replicated, none dropped silently), folders an older
version left under a percent-encoded name, and a table another tool named against the rule. Built
with the real publish protocol, no Spark."""

from __future__ import annotations

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.status.records import NOT_LISTED
from tests.conftest import tree_hash
from tests.test_table_scan import parquet, push


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db")


@pytest.fixture
def mirror(db):
    return om.LocalMirror(db.target.root)


def by_hand(db, folder_name: str, *ids: int, schema: str | None = None) -> TableFolder:
    """A table folder published with the real protocol under any name (no naming rule)."""
    home = TableFolder(db.storage, TableRef(folder_name, schema))
    push(home, [parquet(*ids)], push_id=f"p-{folder_name}")
    return home


def ids(db, table: str) -> list[int]:
    return sorted(db.read_table(table, as_pandas=True)["id"])


def test_two_spellings_made_by_hand_are_reported_on_both_and_the_mirrored_one_stays(db, mirror):
    by_hand(db, "orders", 1, 2)
    mirror.run_once()
    by_hand(db, "Orders", 3)  # sorts first, but the mirror already replicates "orders"
    run = mirror.run_once()
    runs = {r.folder: r for r in run.tables}
    assert runs["orders"].status == "Replicating" and runs["orders"].conflicts == ("Orders",)
    assert runs["Orders"].status == "Failed" and runs["Orders"].files_applied == ()
    assert "already mirrored from folder 'orders'" in runs["Orders"].error
    assert (
        "case-insensitively" in runs["Orders"].error and "rename or remove 'Orders'" in runs["Orders"].error
    )
    assert "also named by folder 'Orders', which is not replicated" in repr(run)
    assert ids(db, "orders") == [1, 2]

    report = db.status()
    tables = {t.folder: t for t in report.tables}
    assert set(tables) == {"orders", "Orders"}
    for folder, other in (("orders", "Orders"), ("Orders", "orders")):
        (blocker,) = [b for b in tables[folder].blockers if b.kind == "name_conflict"]
        assert f"folder {other!r} names this table too (dbo.{folder}:" in blocker.message
        assert "db.drop('orders')" in blocker.message and "db.drop('Orders')" in blocker.message
        assert tables[folder].health == "blocked"
    assert tables["orders"].status == "Replicating" and tables["Orders"].status == NOT_LISTED
    assert "name_conflict" in str(report) or "names this table too" in str(report)

    assert db.drop("Orders").existed  # removing the hand-made spelling ends the conflict
    run = mirror.run_once()
    assert [(r.folder, r.status, r.conflicts) for r in run.tables] == [("orders", "Replicating", ())]
    assert db.status()["orders"].health == "ok" and ids(db, "orders") == [1, 2]


def test_a_root_table_and_the_same_table_in_dbo_schema_are_one_table(db, mirror):
    by_hand(db, "Orders", 1, schema="dbo")
    by_hand(db, "orders", 2)
    run = mirror.run_once()
    runs = {r.folder: r for r in run.tables}
    assert runs["dbo.schema/Orders"].status == "Replicating"
    assert runs["dbo.schema/Orders"].conflicts == ("orders",)
    assert runs["orders"].status == "Failed"
    report = {t.folder: t for t in db.status().tables}
    assert all(any(b.kind == "name_conflict" for b in t.blockers) for t in report.values())


def test_folders_an_older_version_left_are_named_with_how_to_remove_them(db):
    by_hand(db, "orders", 1)
    # what a failed push of "my table" and of "naïve.ñandú" left before names were checked
    db.storage.write_bytes("my%20table/_openmirror/staging/i1.p1/parts/part-0.parquet", b"x")
    db.storage.write_bytes("na%C3%AFve.schema/%C3%B1and%C3%BA/_openmirror/keystate/i1.p1/k.parquet", b"x")
    report = db.status()
    assert [t.table for t in report.tables] == ["orders"]
    assert report.foreign == (
        "my%20table: left by a push of table 'my table' that an older openmirror_nb could not finish "
        "(it wrote the name percent-encoded); it holds no data: remove it with db.drop('my%20table') "
        "and push it again as 'mytable'.",
        "na%C3%AFve.schema/%C3%B1and%C3%BA: left by a push of table 'naïve.ñandú' that an older "
        "openmirror_nb could not finish (it wrote the name percent-encoded); it holds no data: remove "
        "it with db.drop('na%C3%AFve.%C3%B1and%C3%BA') and push it again as 'naïve.ñandú'.",
    )
    assert "my%20table: left by a push" in str(report)
    assert db.drop("my%20table").existed
    assert db.drop("na%C3%AFve.%C3%B1and%C3%BA").existed
    lz = db.target.landing_zone
    assert sorted(p.name for p in lz.iterdir()) == ["_partnerEvents.json", "orders"]
    assert db.status().foreign == ()


def test_a_table_another_tool_named_against_the_rule_is_shown_and_can_be_dropped(db, mirror):
    by_hand(db, "Sales Header", 1, 2)
    mirror.run_once()
    report = db.status()
    (table,) = report.tables
    assert (table.table, table.health) == ("Sales Header", "ok")
    assert any("naming rule (try 'SalesHeader'): db.push cannot write to it" in n for n in table.notes)
    assert db.status("Sales Header").tables[0].folder == "Sales Header"
    before = tree_hash(db.target.landing_zone)
    with pytest.raises(om.OpenMirrorError, match="contains a space"):
        db.drop("Sales  Header")  # no folder of that name: the rule's refusal stands
    assert tree_hash(db.target.landing_zone) == before
    dropped = db.drop("Sales Header")
    assert dropped.existed and dropped.data_files == 1
    assert db.tables() == []
