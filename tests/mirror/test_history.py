"""Issue 15 §4, the history of a key: ``read_table(as_of=...)`` (Delta time travel) and
``db.history(table, key=...)`` (Prostore's actual record and its archive) over real mirror
commits."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import openmirror_nb as om
from openmirror_nb._core.api import MirroredDatabase
from openmirror_nb._core.errors import ConfigError, NotSupportedError
from openmirror_nb._core.mirror import history as history_module
from openmirror_nb._core.storage.local import LocalStorage
from openmirror_nb._core.target import OneLakeTarget

TABLE = "sales.orders"
SCHEMA = "id long, name string, qty int"
SNAPSHOTS = [
    [(1, "a", 10), (2, "b", 20)],
    [(1, "a2", 11), (3, "c", 30)],  # 1 updated, 2 deleted, 3 inserted
    [(1, "a3", 12), (3, "c", 30)],  # 1 updated again
]


def _rows(frame) -> list[tuple]:
    return sorted(tuple(r) for r in frame[["id", "name", "qty"]].itertuples(index=False))


@pytest.fixture(scope="module")
def pushed(spark, tmp_path_factory):
    """Three snapshots pushed and mirrored: the database, each push's sequence numbers, and the
    Delta version each mirror run made."""
    root = tmp_path_factory.mktemp("history") / "db"
    db = om.connect(root)
    sequences, versions = [], []
    for i, rows in enumerate(SNAPSHOTS):
        df = spark.createDataFrame(rows, SCHEMA)
        result = db.push(df, table=TABLE, keys=["id"] if i == 0 else None, progress=False)
        sequences.append(result.sequence_numbers)
        om.LocalMirror(root).run_once()
        versions.append(DeltaTable(str(root / "Tables" / "sales" / "orders")).version())
    return db, sequences, versions


@pytest.mark.spark
def test_read_table_as_of_each_version_gives_the_rows_of_that_time(pushed, spark):
    db, _, versions = pushed
    assert versions == [0, 1, 2]  # one Delta commit per mirror run
    for version, rows in zip(versions, SNAPSHOTS, strict=True):
        assert _rows(db.read_table(TABLE, as_pandas=True, as_of=version)) == rows
    assert _rows(db.read_table(TABLE, as_pandas=True)) == SNAPSHOTS[-1]
    frame = db.read_table(TABLE, as_of=1)  # Spark reads the files of version 1
    assert sorted((r.id, r.name, r.qty) for r in frame.collect()) == SNAPSHOTS[1]


@pytest.mark.spark
def test_read_table_as_of_a_time_gives_the_last_version_committed_by_then(pushed):
    db = pushed[0]
    first, second, third = (e.timestamp for e in db.history(TABLE, key=1).entries)
    between = second + (third - second) / 2
    assert _rows(db.read_table(TABLE, as_pandas=True, as_of=between)) == SNAPSHOTS[1]
    assert _rows(db.read_table(TABLE, as_pandas=True, as_of=between.isoformat())) == SNAPSHOTS[1]
    local = between.astimezone().replace(tzinfo=None)  # a naive time is local time
    assert _rows(db.read_table(TABLE, as_pandas=True, as_of=local)) == SNAPSHOTS[1]
    assert _rows(db.read_table(TABLE, as_pandas=True, as_of=first)) == SNAPSHOTS[0]  # exactly at a commit
    later = third + dt.timedelta(days=1)
    assert _rows(db.read_table(TABLE, as_pandas=True, as_of=later)) == SNAPSHOTS[2]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("as_of", "message"),
    [
        (7, r"^as_of=7: .*orders has Delta versions 0 to 2, committed .*Z to .*Z; pass one of those\.$"),
        (-1, r"^as_of=-1: .*versions 0 to 2"),
        (
            dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
            r"^as_of=2000-01-01T00:00:00.000Z is before the first commit of .*orders \(Delta versions "
            r"0 to 2, committed .*Z to .*Z\); pass a later time\.$",
        ),
        ("2000-01-01", r"^as_of='2000-01-01' is before the first commit"),
        ("yesterday", r"^as_of='yesterday' is neither a Delta version nor an ISO time"),
        (True, r"^as_of=True is a bool; pass a Delta version"),
    ],
)
def test_read_table_as_of_nothing_there_is_a_one_line_error(pushed, as_of, message):
    with pytest.raises(ConfigError, match=message) as caught:
        pushed[0].read_table(TABLE, as_pandas=True, as_of=as_of)
    assert "\n" not in str(caught.value)


@pytest.mark.spark
def test_history_of_an_updated_key_is_insert_update_update(pushed):
    db, sequences, versions = pushed
    found = db.history(TABLE, key=1)
    assert [(e.version, e.operation) for e in found.entries] == list(
        zip(versions, ["insert", "update", "update"], strict=True)
    )
    assert [e.row for e in found.entries] == [
        {"id": 1, "name": "a", "qty": 10},
        {"id": 1, "name": "a2", "qty": 11},
        {"id": 1, "name": "a3", "qty": 12},
    ]
    assert [e.sequences for e in found.entries] == sequences  # each mirror run applied one push
    assert found.entries[0].files[0] == f"{sequences[0][0]:020d}.parquet"
    assert found.actual == {"id": 1, "name": "a3", "qty": 12}
    assert found.archive == found.entries[:2]
    times = [e.timestamp for e in found.entries]
    assert times == sorted(times) and all(t.tzinfo is not None for t in times)
    assert db.history(TABLE, key={"id": 1}) == found
    lines = repr(found).splitlines()
    assert lines[0] == "KeyHistory sales.orders (id=1): 3 versions"
    assert len(lines) == 4 and "insert" in lines[1] and "name='a3'" in lines[3]
    html = found._repr_html_()
    assert html.count("<tr>") == 4 and "a3" in html and "update" in html
    frame = found.to_pandas()
    assert list(frame.columns) == [
        "_commit_version",
        "_commit_timestamp",
        "_operation",
        "_files",
        "id",
        "name",
        "qty",
    ]
    assert frame["_operation"].tolist() == ["insert", "update", "update"]
    assert frame["name"].tolist() == ["a", "a2", "a3"]


@pytest.mark.spark
def test_history_of_a_deleted_key_and_of_an_inserted_one(pushed):
    db, _, versions = pushed
    deleted = db.history(TABLE, key=2)
    assert [(e.version, e.operation, e.row) for e in deleted.entries] == [
        (versions[0], "insert", {"id": 2, "name": "b", "qty": 20}),
        (versions[1], "delete", None),
    ]
    assert deleted.actual is None and len(deleted.archive) == 1
    assert "(deleted)" in repr(deleted).splitlines()[2]
    frame = deleted.to_pandas()
    assert frame["id"].tolist() == [2, 2] and frame["_operation"].tolist() == ["insert", "delete"]
    inserted = db.history(TABLE, key=3)
    assert [(e.version, e.operation) for e in inserted.entries] == [(versions[1], "insert")]
    assert inserted.actual == {"id": 3, "name": "c", "qty": 30} and inserted.archive == ()


@pytest.mark.spark
def test_history_of_an_unknown_key_is_empty(pushed):
    found = pushed[0].history(TABLE, key=99)
    assert found.entries == () and found.actual is None and found.archive == ()
    assert repr(found) == (
        "KeyHistory sales.orders (id=99): no version of the mirrored table holds this key "
        "(versions 0 to 2 searched)"
    )
    assert "no version" in found._repr_html_()
    assert found.to_pandas().empty


@pytest.mark.spark
@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("one", r"^key id='one' is not a int64 value"),
        ({"id": 1, "name": "a"}, r"^key=\{'id': 1, 'name': 'a'\} does not name the key columns of sales"),
        ({"ID": 1}, r"does not name the key columns of sales.orders; pass key=\{'id': \.\.\.\}\.$"),
    ],
)
def test_history_of_a_malformed_key_is_a_one_line_error(pushed, key, message):
    with pytest.raises(ConfigError, match=message):
        pushed[0].history(TABLE, key=key)


def _composite(lz) -> MirroredDatabase:
    """A two-column key, a column added on the way and an upsert that changes nothing, mirrored
    without Spark."""
    lz.metadata("eu.stock", keyColumns=["site", "sku"])
    first = [{"site": "A", "sku": 1, "n": 5}, {"site": "B", "sku": 1, "n": 7}]
    lz.parquet("eu.stock", 1, first)
    lz.mirror.run_once()  # v0
    wider = pa.schema([("site", pa.string()), ("sku", pa.int64()), ("n", pa.int64()), ("note", pa.string())])
    same = {"site": "A", "sku": 1, "n": 5, "note": None}
    lz.parquet(
        "eu.stock", 2, lz.with_marker([same, {"site": "B", "sku": 1, "n": 8, "note": "x"}], [4, 4], wider)
    )
    lz.mirror.run_once()  # the column added, then the upserts
    lz.parquet("eu.stock", 3, lz.with_marker([{"site": "A", "sku": 1, "n": 6, "note": "y"}], [1], wider))
    lz.mirror.run_once()
    return om.connect(lz.root)


@pytest.mark.parametrize("by_file", [True, False])
def test_history_of_a_composite_key_across_a_new_column(lz, monkeypatch, by_file):
    if not by_file:  # the path for deletion vectors or column mapping: delta-rs scans each version
        monkeypatch.setattr(history_module, "reads_as_plain_parquet", lambda table: False)
    db = _composite(lz)
    last = DeltaTable(str(lz.table_dir("eu.stock"))).version()
    found = db.history("eu.stock", key={"sku": 1, "site": "A"})
    assert found.key == {"site": "A", "sku": 1}  # in key-column order
    # the added column and the unchanged upsert are not changes of A's row
    assert [(e.version, e.operation, e.sequences) for e in found.entries] == [
        (0, "insert", (1,)),
        (last, "update", (3,)),
    ]
    assert found.entries[0].row == {"site": "A", "sku": 1, "n": 5}
    assert found.actual == {"site": "A", "sku": 1, "n": 6, "note": "y"}
    other = db.history("eu.stock", key={"site": "B", "sku": 1})
    assert [(e.operation, e.sequences) for e in other.entries] == [("insert", (1,)), ("update", (2,))]
    assert other.actual == {"site": "B", "sku": 1, "n": 8, "note": "x"}
    assert db.history("eu.stock", key={"site": "C", "sku": 1}).entries == ()
    with pytest.raises(ConfigError, match=r"^key=1: eu.stock has key columns site, sku; pass key=\{'site'"):
        db.history("eu.stock", key=1)


def test_read_table_and_history_of_a_table_not_mirrored_yet(lz):
    lz.metadata("t", keyColumns=["id"])
    db = om.connect(lz.root)
    with pytest.raises(om.OpenMirrorError, match="is not a Delta table; has the mirror replicated"):
        db.history("t", key=1)
    with pytest.raises(om.OpenMirrorError, match="is not a Delta table"):
        db.read_table("t", as_pandas=True, as_of=0)


def test_onelake_databases_read_history_with_spark_in_fabric(tmp_path: Path):
    db = MirroredDatabase(target=OneLakeTarget("ws", "mirror"), storage=LocalStorage(tmp_path))
    with pytest.raises(
        NotSupportedError, match=r"^history reads a local mirror; in Fabric read Tables/sales/"
    ):
        db.history(TABLE, key=1)
    with pytest.raises(
        NotSupportedError, match=r"^read_table reads a local mirror; .*Tables/dbo/t with Spark"
    ):
        db.read_table("t", as_pandas=True, as_of=1)
