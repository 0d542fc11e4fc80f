"""``db.sync_delta`` on Delta tables that Databricks and Apache Spark wrote (tests/data/delta,
from delta-rs' test data): each is replayed a version at a time, synced, mirrored and compared
with its rows at that version, written out by hand from the commits. No second reader of
deletion vectors or column mapping runs here: the expected rows are the check."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import openmirror_nb as om
from tests.pipeline.delta_tables import DATA, as_of, mirrored, ordered

pytestmark = [pytest.mark.spark, pytest.mark.runtime13]  # Delta sync: both Fabric lines

CDF = "cdf-table-with-cdc-and-dvs"
# Rows of cdf-table-with-cdc-and-dvs (id, comment) after the versions the test syncs to; the comments
# name the commits: DELETEs (2, 5, 10, 16, 24) wrote deletion vectors and no change files,
# UPDATE (9, 12, 20) and MERGE (18, 22) wrote change files, OPTIMIZE (3, 6, ...) changed nothing.
CDF_ROWS = {
    0: [(1, "initial")],
    2: [(1, "initial"), (2, "insert1"), (4, "insert1-delete2"), (5, "insert1-delete2")],
    9: [(1, "update1"), (2, "update1"), (3, "update1"), (4, "insert1-delete2"), (5, "insert2")],
    25: [(0, "new"), (1, "after-large-delete"), (2, ""), (10, "merge1-insert"), (12, "merge2-insert")],
}
CDF_PUSHED = {
    2: {"delete": 1, "upsert": 4},
    9: {"delete": 2, "upsert": 6},
    25: {"delete": 10, "upsert": 13},
}


def _no_driver_reads(monkeypatch, source):
    """The old local path read whole tables and feeds of the source into the driver: any read
    of ``source`` through these is a regression (the mirror's own tables may use them)."""

    def guard(original):
        def read(table, *args, **kwargs):
            assert str(source) not in table.table_uri, "a Delta source was read into the driver"
            return original(table, *args, **kwargs)

        return read

    for name in ("to_pyarrow_table", "to_pyarrow_dataset", "to_pandas", "load_cdf", "scan"):
        monkeypatch.setattr(DeltaTable, name, guard(getattr(DeltaTable, name)))

    def refuse(*args, **kwargs):
        raise AssertionError("a Delta source went through Arrow in the driver")

    monkeypatch.setattr("openmirror_nb._core.pipeline.inputs.arrow_input.arrow_to_spark", refuse)


def test_a_feed_with_deletion_vectors_and_change_files_is_mirrored_version_by_version(
    spark, tmp_path, monkeypatch
):
    _no_driver_reads(monkeypatch, tmp_path / "source")
    db = om.connect(tmp_path / "db")
    for version, rows in CDF_ROWS.items():
        source = as_of(CDF, tmp_path / "source", version)
        result = db.sync_delta(source, table="t", keys=["id"])
        assert (result.how, result.to_version) == ("snapshot" if version == 0 else "changes", version)
        if version:
            assert result.push.rows == CDF_PUSHED[version]
        assert mirrored(db, "t", ("id", "comment")) == rows


def test_the_feed_and_the_snapshot_are_scans_of_the_tables_files(spark, tmp_path, monkeypatch):
    """What keeps a large table off the driver: both frames read the table's own Parquet files."""
    from openmirror_nb._core.pipeline.delta.source import DeltaSource

    _no_driver_reads(monkeypatch, tmp_path / "source")
    source = DeltaSource.open(as_of(CDF, tmp_path / "source", 25), spark, "deltalake")
    root = (tmp_path / "source").as_posix()
    live = {
        "part-00000-6452b8c8-73fb-40ac-a721-90588b728955",
        "part-00000-92f71a43-287d-4b61-bc93-321cc9a236d4",
    }
    snapshot = source.snapshot(25)
    assert {f.rpartition("/")[2].partition(".")[0] for f in snapshot.inputFiles()} == live
    assert all(root in f for f in snapshot.inputFiles())
    feed = source.changes(17, 25)  # MERGE and UPDATE with change files, DELETEs and appends without
    names = {f.rpartition("/")[2][:9] for f in feed.inputFiles()}
    assert names == {"cdc-00000", "cdc-00001", "part-0000"}
    assert len(feed.inputFiles()) == 3 + 2  # change files of 18, 20, 22; data files of 24 and 25
    assert sorted(
        (r["_commit_version"], r["_change_type"], r["id"])
        for r in feed.collect()
        if r["_commit_version"] == 24
    ) == [(24, "delete", i) for i in (2, 3, 4, 5, 6, 9)]


def test_deletion_vectors_of_a_databricks_table_hide_their_rows(spark, tmp_path, reader):
    db = om.connect(tmp_path / "db")
    first = db.sync_delta(
        as_of("table-with-dv-small", tmp_path / "s", 0), table="t", keys=["value"], reader=reader
    )
    assert first.push.rows == {"initial": 10}
    second = db.sync_delta(as_of("table-with-dv-small", tmp_path / "s", 1), table="t", reader=reader)
    assert second.how == "snapshot" and "not enabled" in second.fallback  # no feed: a diff
    assert second.push.rows == {"delete": 2}  # DELETE WHERE value IN (0, 9), by deletion vector
    assert mirrored(db, "t", ("value",)) == [(v,) for v in range(1, 9)]


def test_deletes_by_deletion_vector_and_checkpoints_are_followed(spark, tmp_path):
    """Deletes of ids 12 (v3) and 89 (v4) by deletion vector; empty commits 5-20, checkpoints at 10
    and 20: version 12 is read from checkpoint 10 and the two commits after it."""
    name = "table_with_deletion_logs"
    columns = ("id", "name", "age", "address", "company", "nbr", "phone_number")
    everything = pq.read_table(next(DATA.joinpath(name).glob("*.parquet"))).to_pylist()
    db = om.connect(tmp_path / "db")
    for version, gone in ((0, set()), (4, {12, 89}), (12, {12, 89})):
        result = db.sync_delta(as_of(name, tmp_path / "s", version), table="t", keys=["id"])
        assert result.push.rows == (
            {"initial": 100} if version == 0 else {"delete": 2} if version == 4 else {}
        )
        expected = ordered(tuple(r[c] for c in columns) for r in everything if r["id"] not in gone)
        assert mirrored(db, "t", columns) == expected
    assert len(expected) == 98


def test_a_renamed_key_column_stops_the_sync_until_the_table_is_reseeded(spark, tmp_path, lz_hash):
    """table_with_partitioning_mapping: partition (and key) column ``id``; column mapping from
    version 2; ``id`` renamed to ``newid`` at version 3, whose physical name stays ``id``."""
    name = "table_with_partitioning_mapping"
    db = om.connect(tmp_path / "db", lock_timeout=5)
    lz = db.target.landing_zone
    for version in (1, 2):
        db.sync_delta(as_of(name, tmp_path / "s", version), table="t", keys=["id"])
    assert mirrored(db, "t", ("id", "description")) == [(1, "Initial data")]
    source, before = as_of(name, tmp_path / "s", 3), lz_hash(lz)
    with pytest.raises(om.SchemaChangeError) as error:
        db.sync_delta(source, table="t")
    message = str(error.value)
    assert "column 'id' was renamed to 'newid'" in message and "\n" not in message
    assert f"df = om.read_delta({source!r})" in message and "keys=['newid']" in message
    assert lz_hash(lz) == before  # nothing published, nothing staged
    df = om.read_delta(source)  # the call the message gives, as given
    db.apply_schema_change(db.plan_schema_change("t", df, keys=["newid"]), df, confirm="t")
    result = db.sync_delta(as_of(name, tmp_path / "s", 4), table="t")
    assert (result.how, result.push.rows) == ("snapshot", {"insert": 1})  # one diff, then it follows
    assert mirrored(db, "t", ("newid", "description")) == [(1, "Initial data"), (2, "Additional data")]


def test_column_mapping_names_with_spaces_and_a_mapped_partition(spark, tmp_path):
    db = om.connect(tmp_path / "db")
    source = as_of("table_with_column_mapping", tmp_path / "s", 0)
    assert db.sync_delta(source, table="t", keys=["Super Name"]).push.rows == {"initial": 5}
    assert mirrored(db, "t", ("Company Very Short", "Super Name")) == [
        ("BME", "Timothy Lamb"),
        ("BMS", "Anthony Johnson"),
        ("BMS", "Mr. Daniel Ferguson MD"),
        ("BMS", "Nathan Bennett"),
        ("BMS", "Stephanie Mcgrath"),
    ]


def test_int96_timestamps_of_the_year_9999(spark, tmp_path):
    from datetime import UTC, datetime

    db = om.connect(tmp_path / "db")
    db.sync_delta(as_of("table_with_edge_timestamps", tmp_path / "s", 0), table="t", keys=["SOME_VALUE"])
    assert mirrored(db, "t", ("SOME_VALUE", "BIG_DATE", "NORMAL_DATE")) == [
        (1, datetime(9999, 12, 31, tzinfo=UTC), datetime(2022, 1, 1, tzinfo=UTC)),
        (2, datetime(9999, 12, 30, tzinfo=UTC), datetime(2022, 2, 1, tzinfo=UTC)),
    ]
