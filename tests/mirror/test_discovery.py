"""Behaviour 2: table and <schema>.schema folders, found on every pass; `_` items ignored."""

from __future__ import annotations

ROWS = [{"id": 1, "v": "a"}]


def test_root_tables_land_in_dbo_and_schema_folders_name_their_schema(lz):
    for table in ("orders", "sales.orders", "sales.items", "hr.people"):
        lz.metadata(table, keyColumns=["id"])
        lz.parquet(table, 1, ROWS)
    run = lz.mirror.run_once()
    assert [r.table for r in run.tables] == ["dbo.orders", "hr.people", "sales.items", "sales.orders"]
    assert run["orders"].folder == "orders" and run["sales.orders"].folder == "sales.schema/orders"
    for schema, name in (("dbo", "orders"), ("sales", "orders"), ("sales", "items"), ("hr", "people")):
        assert (lz.root / "Tables" / schema / name / "_delta_log").is_dir()


def test_new_table_folders_are_discovered_on_every_pass(lz):
    assert lz.mirror.run_once().tables == ()
    lz.metadata("first", keyColumns=["id"])
    lz.parquet("first", 1, ROWS)
    assert [r.table for r in lz.mirror.run_once().tables] == ["dbo.first"]
    lz.metadata("sales.second", keyColumns=["id"])
    lz.parquet("sales.second", 1, ROWS)
    run = lz.mirror.run_once()
    assert run["sales.second"].event == "added"
    assert run["sales.second"].files_applied == ("00000000000000000001.parquet",)
    assert run["first"].event == "" and run["first"].files_applied == ()


def test_underscore_files_and_folders_are_ignored(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, ROWS)
    lz.parquet("orders", "_00000000000000000002.parquet", [{"id": 2, "v": "staged"}])
    lz.parquet("orders", "_openmirror/staging/p1/00000000000000000002.parquet", [{"id": 3, "v": "x"}])
    for hidden in ("_scratchPad", "_x.schema/t", "sales.schema/_t"):
        lz.metadata(hidden, keyColumns=["id"])
        lz.parquet(hidden, 1, ROWS)
    (lz.lz / "_partnerEvents.json").write_text("{}")
    run = lz.mirror.run_once()
    assert [r.table for r in run.tables] == ["dbo.orders"]
    assert run["orders"].ignored_files == ()
    assert lz.rows("orders") == ROWS
    assert sorted(p.name for p in (lz.root / "Tables").iterdir()) == ["dbo"]


def test_non_conforming_names_are_reported_not_processed(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, ROWS)
    lz.parquet("orders", "data.parquet", [{"id": 7, "v": "x"}])
    lz.parquet("orders", "1.parquet", [{"id": 8, "v": "x"}])
    lz.publish("orders", "notes.txt", b"hello")
    (lz.folder("orders") / "Region=eu").mkdir()
    run = lz.mirror.run_once()
    assert run["orders"].files_applied == ("00000000000000000001.parquet",)
    assert sorted(run["orders"].ignored_files) == ["1.parquet", "Region=eu/", "data.parquet", "notes.txt"]
    assert lz.rows("orders") == ROWS


def test_two_folders_for_one_table_fail_the_second(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, ROWS)
    lz.metadata("dbo.orders", keyColumns=["id"])
    lz.parquet("dbo.orders", 1, [{"id": 2, "v": "b"}])
    run = lz.mirror.run_once()
    by_folder = {r.folder: r for r in run.tables}
    assert by_folder["dbo.schema/orders"].status == "Replicating"
    assert by_folder["orders"].status == "Failed"
    assert "already mirrored from folder 'dbo.schema/orders'" in by_folder["orders"].error
    assert lz.rows("orders") == [{"id": 2, "v": "b"}]
