"""Behaviour 8: processed files move to _ProcessedFiles, except the newest."""

from __future__ import annotations


def _names(folder):
    return sorted(p.name for p in folder.iterdir() if p.is_file())


def test_processed_files_move_except_the_newest(lz):
    lz.metadata("orders", keyColumns=["id"])
    for seq in (1, 2, 3):
        lz.parquet("orders", seq, [{"id": seq}])
    lz.parquet("orders", 5, [{"id": 5}])
    lz.mirror.run_once()
    folder = lz.folder("orders")
    assert _names(folder) == [
        "00000000000000000003.parquet",
        "00000000000000000005.parquet",
        "_metadata.json",
    ]
    assert _names(folder / "_ProcessedFiles") == [
        "00000000000000000001.parquet",
        "00000000000000000002.parquet",
    ]
    lz.parquet("orders", 4, [{"id": 4}])
    lz.mirror.run_once()
    assert _names(folder) == ["00000000000000000005.parquet", "_metadata.json"]
    assert len(_names(folder / "_ProcessedFiles")) == 4
    assert [r["id"] for r in lz.rows("orders")] == [1, 2, 3, 4, 5]


def test_last_update_time_keeps_the_newest_processed_file(lz):
    import os

    lz.metadata("events", keyColumns=["id"], fileDetectionStrategy="LastUpdateTimeFileDetection")
    for i, name in enumerate(("b.parquet", "a.parquet", "c.parquet")):
        path = lz.parquet("events", name, [{"id": i}])
        os.utime(path, ns=(10**18 + i, 10**18 + i))
    lz.mirror.run_once()
    folder = lz.folder("events")
    assert _names(folder) == ["_metadata.json", "c.parquet"]
    assert _names(folder / "_ProcessedFiles") == ["a.parquet", "b.parquet"]


def test_a_failed_file_and_later_files_stay_in_place(lz):
    lz.metadata("orders", keyColumns=["id"])
    for seq in (1, 2):
        lz.parquet("orders", seq, [{"id": seq}])
    lz.publish("orders", "00000000000000000003.parquet", b"")
    lz.parquet("orders", 4, [{"id": 4}])
    lz.mirror.run_once()
    assert _names(lz.folder("orders")) == [
        "00000000000000000002.parquet",
        "00000000000000000003.parquet",
        "00000000000000000004.parquet",
        "_metadata.json",
    ]
