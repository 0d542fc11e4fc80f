"""``db.sync_delta`` on real ``deltalake`` tables: a snapshot first, then each new version's
change data feed, the version committed with the files; a crash between publish and commit
neither skips nor repeats a version; a vacuumed history or a table without a feed falls back to a
snapshot diff and says so."""

from __future__ import annotations

import shutil
import time

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from tests.reliability.harness import mirrored_rows, rows_of, sequence_numbers

pytestmark = [pytest.mark.spark, pytest.mark.runtime13]  # Delta sync: both Fabric lines

COLUMNS = ("id", "v")


class Killed(BaseException):
    pass


def _rows(ids, v) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([v] * len(ids), pa.int64())})


def _source(tmp_path, *, feed: bool = True) -> str:
    path = str(tmp_path / "source")
    config = {"delta.enableChangeDataFeed": "true"} if feed else None
    write_deltalake(path, _rows(range(10), 0), configuration=config)  # version 0
    return path


def _expect_mirror_equals_source(db, source: str) -> None:
    om.LocalMirror(db.target.root).run_once()
    expected = rows_of(DeltaTable(source).to_pyarrow_table().to_pylist(), COLUMNS)
    assert mirrored_rows(db, "t", COLUMNS) == expected


def test_versions_are_published_one_feed_at_a_time(spark, tmp_path, reader):
    source = _source(tmp_path)
    db = om.connect(tmp_path / "db")
    first = db.sync_delta(source, table="t", keys=["id"], reader=reader)
    assert (first.how, first.from_version, first.to_version, first.reader) == ("snapshot", None, 0, reader)
    assert first.push.rows == {"initial": 10}
    DeltaTable(source).update(updates={"v": "v + 1"}, predicate="id < 3")  # version 1
    DeltaTable(source).delete("id = 9")  # version 2
    write_deltalake(source, _rows([3, 50], 7), mode="overwrite", predicate="id in (3, 50)")  # version 3
    second = db.sync_delta(source, table="t", reader=reader)
    assert (second.how, second.from_version, second.to_version, second.fallback) == ("changes", 0, 3, None)
    assert second.push.rows == {"delete": 2, "upsert": 5}  # 3 postimages + 2 inserts; 9 and old 3
    assert f"0 -> 3, changes by {reader}" in repr(second)
    assert db.sync_delta(source, table="t", reader=reader).how == "none"
    assert TableFolder.of(db.storage, "t").read_state().source_version == 3
    assert f"synced from: {source} at version 3" in repr(db.describe("t"))
    _expect_mirror_equals_source(db, source)


def test_a_crash_between_publish_and_commit_neither_skips_nor_repeats(spark, tmp_path, monkeypatch):
    source = _source(tmp_path)
    db = om.connect(tmp_path / "db")
    db.sync_delta(source, table="t", keys=["id"])
    DeltaTable(source).update(updates={"v": "v + 5"}, predicate="id >= 5")  # version 1

    def die(step: str) -> None:
        if step == "before_state_commit":
            raise Killed

    with monkeypatch.context() as patch:
        patch.setattr("openmirror_nb._core.landing_zone.publish.crash_point", die)
        with pytest.raises(Killed):
            db.sync_delta(source, table="t")
    folder = db.target.landing_zone / "t"
    assert sequence_numbers(folder) == [1, 2]  # published, but the state still says version 0
    assert TableFolder.of(db.storage, "t").read_state().source_version == 0
    again = db.sync_delta(source, table="t")  # finishes the decided push first, then sees v1 held
    assert again.how == "none" and again.to_version == 1
    assert sequence_numbers(folder) == [1, 2]  # nothing published twice
    DeltaTable(source).delete("id = 0")  # version 2: the next sync goes on from version 1
    assert db.sync_delta(source, table="t").push.rows == {"delete": 1}
    _expect_mirror_equals_source(db, source)


@pytest.mark.parametrize("gone", ["log", "change_files"])
def test_a_vacuumed_history_falls_back_to_a_snapshot_diff(spark, tmp_path, gone, reader):
    path = str(tmp_path / "source")
    config = {"delta.enableChangeDataFeed": "true", "delta.logRetentionDuration": "interval 0 seconds"}
    write_deltalake(path, _rows(range(10), 0), configuration=config)
    source = path
    db = om.connect(tmp_path / "db")
    db.sync_delta(source, table="t", keys=["id"], reader=reader)
    DeltaTable(source).update(updates={"v": "v + 1"}, predicate="id < 4")  # version 1
    DeltaTable(source).delete("id >= 8")  # version 2
    DeltaTable(source).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    if gone == "log":  # versions 0-1 of the log cleaned up behind a checkpoint
        DeltaTable(source).create_checkpoint()
        time.sleep(1.1)
        DeltaTable(source).cleanup_metadata()
    else:  # Spark's VACUUM also deletes change files past the retention
        shutil.rmtree(tmp_path / "source" / "_change_data")
    result = db.sync_delta(source, table="t", reader=reader)
    assert result.how == "snapshot" and result.fallback and result.to_version == DeltaTable(source).version()
    assert result.fallback.startswith("no change data feed for versions 1..")
    assert ("log was cleaned up" if gone == "log" else "was vacuumed") in result.fallback
    assert "fell back to a snapshot diff" in repr(result)
    assert result.fallback in " ".join(db.status()["t"].notes)
    assert result.push.rows == {"delete": 2, "upsert": 4}  # a diff: only what changed
    _expect_mirror_equals_source(db, source)


def test_a_change_file_that_cannot_be_read_stops_the_sync_it_is_not_diffed(spark, tmp_path, lz_hash, reader):
    """A feed that is there but fails to read (a corrupt file here; an HTTP 503 or an expired
    token in Fabric) is no reason to rewrite the table from a diff: the sync stops with one
    scrubbed line, nothing published, and goes on from the same version once the file is back."""
    folder = tmp_path / "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu"  # a path that looks like a token
    source = str(folder)
    write_deltalake(source, _rows(range(10), 0), configuration={"delta.enableChangeDataFeed": "true"})
    db = om.connect(tmp_path / "db")
    db.sync_delta(source, table="t", keys=["id"], reader=reader)
    DeltaTable(source).update(updates={"v": "v + 1"}, predicate="id < 4")  # version 1: change files
    files = sorted((folder / "_change_data").rglob("*.parquet"))
    kept = {f: f.read_bytes() for f in files}
    for file in files:
        file.write_bytes(b"not a parquet file")
    before = lz_hash(db.target.landing_zone)
    with pytest.raises(om.SourceError) as error:
        db.sync_delta(source, table="t", reader=reader)
    message = str(error.value)
    assert "versions 1..1" in message and "still holds version 0" in message and "\n" not in message
    assert "c2VjcmV0LXRva2Vu" not in message and "***" in message
    assert lz_hash(db.target.landing_zone) == before
    for file, content in kept.items():
        file.write_bytes(content)
    again = db.sync_delta(source, table="t", reader=reader)
    assert (again.how, again.from_version, again.fallback) == ("changes", 0, None)
    _expect_mirror_equals_source(db, source)


def test_a_table_without_a_change_feed_is_synced_by_snapshot_diffs(spark, tmp_path, reader):
    source = _source(tmp_path, feed=False)
    db = om.connect(tmp_path / "db")
    db.sync_delta(source, table="t", keys=["id"], reader=reader)
    write_deltalake(source, _rows([100], 1), mode="append")  # version 1
    result = db.sync_delta(source, table="t", reader=reader)
    assert result.how == "snapshot" and result.push.rows == {"insert": 1}
    assert result.fallback and "not enabled" in result.fallback
    _expect_mirror_equals_source(db, source)


def test_bad_sources_are_refused_with_the_path(spark, tmp_path):
    db = om.connect(tmp_path / "db")
    with pytest.raises(om.ConfigError, match="not a Delta table path"):
        db.sync_delta("", table="t", keys=["id"])
    assert not (db.target.landing_zone / "t").exists()
