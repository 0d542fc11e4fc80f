"""Behaviour 3: SequentialFileName strictly in order (a gap waits); LastUpdateTime by mtime."""

from __future__ import annotations

import os


def _upsert(lz, id_, v):
    return lz.with_marker([{"id": id_, "v": v}], [4])


def test_gap_makes_the_table_wait_and_names_the_missing_number(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1, "v": "a"}])
    lz.parquet("orders", 3, _upsert(lz, 1, "c"))
    lz.parquet("orders", 4, _upsert(lz, 1, "d"))
    run = lz.mirror.run_once()
    assert run["orders"].files_applied == ("00000000000000000001.parquet",)
    assert run["orders"].missing_sequence == 2
    assert run["orders"].status == "Replicating"
    assert "Waiting for sequence number 2" in lz.table_status("orders")["errorMessage"]
    assert lz.rows("orders") == [{"id": 1, "v": "a"}]
    lz.parquet("orders", 2, _upsert(lz, 1, "b"))
    run = lz.mirror.run_once()
    assert run["orders"].sequence_numbers == (2, 3, 4)
    assert run["orders"].missing_sequence is None
    assert lz.table_status("orders")["errorMessage"] == ""
    assert lz.rows("orders") == [{"id": 1, "v": "d"}]


def test_a_new_table_starts_at_sequence_number_1(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 2, _upsert(lz, 1, "b"))
    run = lz.mirror.run_once()
    assert run["orders"].missing_sequence == 1
    assert run["orders"].status == "Snapshotting"
    assert not (lz.root / "Tables" / "dbo" / "orders").exists()
    lz.parquet("orders", 1, [{"id": 1, "v": "a"}])
    assert lz.mirror.run_once()["orders"].sequence_numbers == (1, 2)
    assert lz.rows("orders") == [{"id": 1, "v": "b"}]


def test_numbers_at_or_below_the_last_applied_are_not_applied_again(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1, "v": "a"}])
    lz.parquet("orders", 2, _upsert(lz, 1, "b"))
    lz.mirror.run_once()
    lz.parquet("orders", 1, [{"id": 9, "v": "again"}])
    run = lz.mirror.run_once()
    assert run["orders"].files_applied == ()
    assert "00000000000000000001.parquet" in run["orders"].ignored_files
    assert lz.rows("orders") == [{"id": 1, "v": "b"}]


def _at(path, seconds):
    os.utime(path, ns=(seconds * 10**9, seconds * 10**9))


def test_last_update_time_applies_files_by_modification_time(lz):
    lz.metadata("events", keyColumns=["id"], fileDetectionStrategy="LastUpdateTimeFileDetection")
    # Names sort the other way round from the modification times.
    _at(lz.parquet("events", "c-first.parquet", [{"id": 1, "v": "first"}]), 1_700_000_000)
    _at(lz.parquet("events", "b-second.parquet", _upsert(lz, 1, "second")), 1_700_000_100)
    _at(lz.parquet("events", "a-third.parquet", _upsert(lz, 1, "third")), 1_700_000_200)
    run = lz.mirror.run_once()
    assert run["events"].files_applied == ("c-first.parquet", "b-second.parquet", "a-third.parquet")
    assert lz.rows("events") == [{"id": 1, "v": "third"}]


def test_last_update_time_never_reingests_a_processed_path(lz):
    lz.metadata("events", keyColumns=["id"], fileDetectionStrategy="LastUpdateTimeFileDetection")
    lz.parquet("events", "6f1c.parquet", [{"id": 1, "v": "a"}])
    lz.parquet("events", "9a2e.parquet", _upsert(lz, 2, "b"))
    lz.mirror.run_once()
    # Rewrite both processed paths (one moved to _ProcessedFiles, one kept in place) and add one.
    lz.parquet("events", "6f1c.parquet", [{"id": 5, "v": "rewritten"}])
    lz.parquet("events", "9a2e.parquet", [{"id": 6, "v": "rewritten"}])
    lz.parquet("events", "0b7d.parquet", _upsert(lz, 1, "new"))
    run = lz.mirror.run_once()
    assert run["events"].files_applied == ("0b7d.parquet",)
    assert run["events"].event == ""
    assert lz.rows("events") == [{"id": 1, "v": "new"}, {"id": 2, "v": "b"}]
