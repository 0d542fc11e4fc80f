"""Behaviour 7: a deleted folder drops its table; a recreated one rebuilds it from scratch."""

from __future__ import annotations

import shutil

ROW = [{"id": 1, "v": "old"}]


def _table(lz, rows, files=2):
    lz.metadata("sales.orders", keyColumns=["id"])
    lz.parquet("sales.orders", 1, rows)
    for seq in range(2, files + 1):
        lz.parquet("sales.orders", seq, lz.with_marker([{"id": seq, "v": f"v{seq}"}], [0]))


def test_a_deleted_folder_drops_the_table(lz):
    _table(lz, ROW)
    lz.metadata("keep", keyColumns=["id"])
    lz.parquet("keep", 1, ROW)
    lz.mirror.run_once()
    table_dir = lz.root / "Tables" / "sales" / "orders"
    assert table_dir.is_dir()
    shutil.rmtree(lz.folder("sales.orders"))
    run = lz.mirror.run_once()
    assert run["sales.orders"].event == "dropped"
    assert not table_dir.exists() and not table_dir.parent.exists()
    assert [t["normalizedTableName"] for t in lz.monitoring()["tables"]] == ["dbo.keep"]
    assert run["keep"].status == "Replicating"


def test_a_recreated_folder_rebuilds_the_table_from_the_new_content_only(lz):
    _table(lz, [{"id": 1, "v": "old"}, {"id": 9, "v": "gone"}], files=3)
    first = lz.mirror.run_once()
    old_id = lz.table_status("sales.orders")["id"]
    # Delete and recreate between two passes, reusing the same names (and sizes) at once.
    shutil.rmtree(lz.folder("sales.orders"))
    _table(lz, [{"id": 1, "v": "new"}, {"id": 8, "v": "keep"}], files=3)
    run = lz.mirror.run_once()
    assert first["sales.orders"].sequence_numbers == (1, 2, 3)
    assert run["sales.orders"].event == "rebuilt"
    assert run["sales.orders"].sequence_numbers == (1, 2, 3)
    assert lz.rows("sales.orders") == [
        {"id": 1, "v": "new"},
        {"id": 2, "v": "v2"},
        {"id": 3, "v": "v3"},
        {"id": 8, "v": "keep"},
    ]
    assert lz.table_status("sales.orders")["id"] != old_id


def test_a_folder_recreated_with_only_metadata_empties_the_table(lz):
    _table(lz, ROW)
    lz.mirror.run_once()
    shutil.rmtree(lz.folder("sales.orders"))
    lz.metadata("sales.orders", keyColumns=["id"])
    run = lz.mirror.run_once()
    assert run["sales.orders"].event == "rebuilt" and run["sales.orders"].status == "Snapshotting"
    assert not (lz.root / "Tables" / "sales" / "orders").exists()


def test_a_lost_state_file_neither_reapplies_nor_rebuilds(lz):
    _table(lz, ROW)
    lz.mirror.run_once()
    table_id = lz.table_status("sales.orders")["id"]
    (lz.root / ".mirror" / "state.json").unlink()
    lz.parquet("sales.orders", 3, lz.with_marker([{"id": 1, "v": "three"}], [1]))
    run = lz.mirror.run_once()
    assert run["sales.orders"].sequence_numbers == (3,)
    assert lz.rows("sales.orders") == [{"id": 1, "v": "three"}, {"id": 2, "v": "v2"}]
    assert lz.table_status("sales.orders")["id"] == table_id
    assert lz.table_status("sales.orders")["metrics"]["processedRowCount"] == 3


def test_a_crash_between_delta_commit_and_state_save_applies_each_file_once(lz):
    _table(lz, ROW)
    lz.mirror.run_once()
    state = lz.root / ".mirror" / "state.json"
    saved = state.read_bytes()
    lz.parquet("sales.orders", 3, lz.with_marker([{"id": 3, "v": "v3"}], [0]))
    lz.mirror.run_once()
    state.write_bytes(saved)  # as if the process died right after the Delta commit
    lz.parquet("sales.orders", 4, lz.with_marker([{"id": 4, "v": "v4"}], [0]))
    run = lz.mirror.run_once()
    assert run["sales.orders"].sequence_numbers == (4,)
    assert [r["id"] for r in lz.rows("sales.orders")] == [1, 2, 3, 4]
    assert lz.table_status("sales.orders")["metrics"]["processedRowCount"] == 4
