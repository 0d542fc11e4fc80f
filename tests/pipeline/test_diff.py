"""Later snapshots publish only what changed, against the key state of what was last pushed."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.model import ROW_MARKER
from openmirror_nb._core.pipeline.keystate import hashes as keystate
from tests.conftest import tree_hash

pytestmark = [pytest.mark.spark, pytest.mark.newest]  # core: the newest PySpark runs it too

SCHEMA = "id long, v string, x double"


def published(lz, table="t", after=1):
    folder = lz / table
    files = sorted(p for p in folder.iterdir() if p.name[:20].isdigit() and int(p.name[:20]) > after)
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def test_diff_publishes_inserts_updates_deletes_only(spark, db, lz):
    db.push(
        spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0), (3, "c", 3.0), (4, "d", 4.0)], SCHEMA),
        table="t",
        keys=["id"],
    )
    snap = spark.createDataFrame([(1, "a", 1.0), (2, "B", 2.0), (4, "d", 4.0), (5, "e", 5.0)], SCHEMA)
    result = db.push(snap, table="t")
    assert result.rows == {"insert": 1, "delete": 1, "upsert": 1} and result.sequence_numbers == (2,)
    rows = {r["id"]: r for r in published(lz)}
    assert rows == {
        2: {"id": 2, "v": "B", "x": 2.0, ROW_MARKER: 4},
        3: {"id": 3, "v": None, "x": None, ROW_MARKER: 2},
        5: {"id": 5, "v": "e", "x": 5.0, ROW_MARKER: 0},
    }
    table = pq.read_table(lz / "t" / f"{2:020d}.parquet")
    assert table.column_names[-1] == ROW_MARKER and str(table.schema.field("x").type) == "double"


def test_update_marker_one_and_unchanged_snapshot(spark, db, lz):
    db.push(spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0)], SCHEMA), table="t", keys=["id"])
    same = db.push(spark.createDataFrame([(2, "b", 2.0), (1, "a", 1.0)], SCHEMA), table="t")
    assert same.sequence_numbers == () and same.rows == {}
    changed = db.push(
        spark.createDataFrame([(1, "z", 1.0), (2, "b", 2.0)], SCHEMA), table="t", update_marker=1
    )
    assert [r[ROW_MARKER] for r in published(lz)] == [1] and changed.rows == {"update": 1}


def test_empty_snapshot_deletes_everything(spark, db, lz):
    db.push(spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0)], SCHEMA), table="t", keys=["id"])
    result = db.push(spark.createDataFrame([], SCHEMA), table="t")
    assert result.rows == {"delete": 2}
    assert sorted(r["id"] for r in published(lz)) == [1, 2]


@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        ((0.0, "a"), (-0.0, "a"), False),  # -0.0 equals 0.0
        ((float("nan"), "a"), (float("nan"), "a"), False),  # NaN equals NaN
        ((None, "a"), (1.0, "a"), True),
        ((1.0, None), (None, "1.0"), True),  # NULLs move: must not collide
        ((None, ""), (None, None), True),  # empty string is not NULL
    ],
)
def test_row_hash_edge_cases(spark, db, before, after, changed):
    schema = "id long, x double, v string"
    db.push(spark.createDataFrame([(1, *before)], schema), table="t", keys=["id"])
    result = db.push(spark.createDataFrame([(1, *after)], schema), table="t")
    assert bool(result.sequence_numbers) is changed


def test_decimals_timestamps_and_column_order(spark, db):
    make = lambda ts, amount: spark.sql(  # noqa: E731
        f"select 1L as id, cast('{amount}' as decimal(18,4)) as amount, timestamp'{ts}' as ts"
    )
    db.push(make("2026-01-01 00:00:00.000001", "1.50"), table="t", keys=["id"])
    assert db.push(make("2026-01-01 00:00:00.000001", "1.5000"), table="t").sequence_numbers == ()
    reordered = make("2026-01-01 00:00:00.000001", "1.5").select("ts", "id", "amount")
    assert db.push(reordered, table="t").sequence_numbers == ()
    assert db.push(make("2026-01-01 00:00:00.000002", "1.5"), table="t").rows == {"upsert": 1}


def test_change_pushes_move_the_baseline(spark, db, lz):
    db.push(spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0)], SCHEMA), table="t", keys=["id"])
    rows = [(3, "c", 3.0, 4), (1, None, None, 2), (2, "b2", 2.0, 4), (2, "b", 2.0, 4)]
    changes = spark.createDataFrame(rows, SCHEMA + ", op int").coalesce(1)  # input order: b2, then b
    db.push(changes, table="t", mode="changes", op_column="op")
    # the user's source now matches what the mirror holds: nothing to publish
    assert (
        db.push(spark.createDataFrame([(2, "b", 2.0), (3, "c", 3.0)], SCHEMA), table="t").sequence_numbers
        == ()
    )
    again = db.push(spark.createDataFrame([(2, "b", 2.0)], SCHEMA), table="t")
    assert again.rows == {"delete": 1} and [r["id"] for r in published(lz, after=2)] == [3]


def test_bad_later_snapshot_leaves_everything_untouched(spark, db):
    db.push(spark.createDataFrame([(1, "a", 1.0)], SCHEMA), table="t", keys=["id"])
    before = tree_hash(db.target.landing_zone)
    with pytest.raises(om.KeyColumnsError, match="not unique"):
        db.push(spark.createDataFrame([(1, "a", 1.0), (1, "b", 1.0)], SCHEMA), table="t")
    # the same unchanged row twice: nothing to publish for it, yet still a duplicate key
    with pytest.raises(om.KeyColumnsError, match="not unique in this snapshot: 1 occur"):
        db.push(spark.createDataFrame([(1, "a", 1.0), (1, "a", 1.0), (2, "b", 2.0)], SCHEMA), table="t")
    with pytest.raises(om.KeyColumnsError, match="NULL"):
        db.push(spark.createDataFrame([(None, "a", 1.0)], SCHEMA), table="t")
    assert tree_hash(db.target.landing_zone) == before
    assert db.push(spark.createDataFrame([(1, "a", 1.0)], SCHEMA), table="t").sequence_numbers == ()


def test_mirror_holds_what_was_pushed(spark, db):
    db.push(
        spark.range(0, 500).selectExpr("id", "cast(id as string) as v", "id * 0.5 as x"),
        table="s.t",
        keys=["id"],
    )
    db.push(
        spark.range(0, 500)
        .where("id % 7 != 0")
        .selectExpr(
            "id", "case when id % 5 = 0 then 'five' else cast(id as string) end as v", "id * 0.5 as x"
        )
        .union(spark.range(1000, 1010).selectExpr("id", "'new' as v", "0.0 as x")),
        table="s.t",
    )
    om.LocalMirror(db.target.root).run_once()
    mirrored = db.read_table("s.t", as_pandas=True).sort_values("id").reset_index(drop=True)
    expected = [i for i in range(500) if i % 7] + list(range(1000, 1010))
    assert mirrored["id"].tolist() == expected
    assert set(mirrored.loc[(mirrored.id % 5 == 0) & (mirrored.id < 500), "v"]) == {"five"}
    lz = db.target.landing_zone
    state = json.loads((lz / "s.schema" / "t" / "_openmirror" / "state.json").read_text())
    on_disk = sorted(
        f"s.schema/t/_openmirror/keystate/{p.name}"
        for p in (lz / "s.schema/t/_openmirror/keystate").iterdir()
    )
    assert on_disk == sorted([state["base"], *state["deltas"]]) and len(state["deltas"]) == 1
    # the diff's key state holds only the keys it touched: 72 deleted, 85 changed, 10 new
    delta = pq.read_table(lz / state["deltas"][0]).to_pylist()
    assert len(delta) == state["delta_rows"] == 72 + 85 + 10 and state["base_rows"] == 500
    assert {r[keystate.CHANGE] for r in delta} == {0, 2, 4}


def test_deltas_are_compacted_into_a_new_base(spark, db, monkeypatch):
    """Past MAX_DELTAS, the next diff writes the whole state as a base and drops the old files,
    and later diffs (over base + deltas, applied by a broadcast) stay exact."""
    monkeypatch.setattr(keystate, "MAX_DELTAS", 2)
    lz = db.target.landing_zone
    rows = {i: f"v{i}" for i in range(40)}
    db.push(spark.createDataFrame(list(rows.items()), "id long, v string"), table="t", keys=["id"])
    seen = []
    for step in range(5):
        rows[step] = f"changed{step}"  # one update
        rows.pop(39 - step)  # one delete
        rows[100 + step] = "new"  # one insert
        result = db.push(spark.createDataFrame(list(rows.items()), "id long, v string"), table="t")
        assert result.rows == {"insert": 1, "delete": 1, "upsert": 1}
        state = json.loads((lz / "t" / "_openmirror" / "state.json").read_text())
        on_disk = sorted(
            f"t/_openmirror/keystate/{p.name}" for p in (lz / "t/_openmirror/keystate").iterdir()
        )
        assert on_disk == sorted([state["base"], *state["deltas"]])
        seen.append((len(state["deltas"]), state["base_rows"], state["delta_rows"]))
    # deltas 1 and 2, then a diff that writes the whole state (its tombstones included) as a base
    assert [d for d, _, _ in seen] == [1, 2, 0, 1, 2]
    assert seen[2][2] == 0 and seen[3][2] == 3 and seen[4][2] == 6
    assert seen[2][1] == len(
        pq.read_table(lz / json.loads((lz / "t/_openmirror/state.json").read_text())["base"])
    )
    om.LocalMirror(db.target.root).run_once()
    mirrored = db.read_table("t", as_pandas=True).sort_values("id")
    assert dict(zip(mirrored["id"], mirrored["v"], strict=True)) == rows
    assert db.push(spark.createDataFrame(list(rows.items()), "id long, v string"), table="t").rows == {}


def test_change_only_table_compacts_its_deltas(spark, db, monkeypatch):
    """A table fed only by change pushes gets a new base past MAX_DELTAS; strict deletes and a
    later snapshot diff, both read against that state, stay exact."""
    monkeypatch.setattr(keystate, "MAX_DELTAS", 2)
    lz = db.target.landing_zone
    schema = "id long, v string, sys_op int"
    batches = [
        [(1, "a", 0), (2, "b", 0), (3, "c", 0)],
        [(2, "B", 0), (4, "d", 0)],
        [(3, "c", 1)],  # the third push compacts: a base of keys 1, 2, 4
        [(5, "e", 0), (1, "a", 1)],
    ]
    seen = []
    for batch in batches:
        db.push(
            spark.createDataFrame(batch, schema), table="t", keys=["id"], mode="changes", convention="sys_op"
        )
        state = json.loads((lz / "t" / "_openmirror" / "state.json").read_text())
        on_disk = sorted(
            f"t/_openmirror/keystate/{p.name}" for p in (lz / "t/_openmirror/keystate").iterdir()
        )
        assert on_disk == sorted([state["base"], *state["deltas"]] if state["base"] else state["deltas"])
        seen.append((state["base"] is not None, len(state["deltas"]), state["base_rows"]))
    assert seen == [(False, 1, 0), (False, 2, 0), (True, 0, 3), (True, 1, 3)]
    base = pq.read_table(lz / json.loads((lz / "t/_openmirror/state.json").read_text())["base"])
    assert sorted(base.column("id").to_pylist()) == [1, 2, 4]
    with pytest.raises(om.ChangeFeedError, match="strict_delete"):  # 2 holds "B", not "b"
        db.push(
            spark.createDataFrame([(2, "b", 1)], schema),
            table="t",
            mode="changes",
            convention="sys_op",
            strict_delete=True,
        )
    result = db.push(spark.createDataFrame([(2, "B"), (4, "d"), (5, "e")], "id long, v string"), table="t")
    assert result.rows == {}  # the state after compaction and one more delta is exactly the table
    om.LocalMirror(db.target.root).run_once()
    mirrored = db.read_table("t", as_pandas=True).sort_values("id")
    assert list(zip(mirrored["id"], mirrored["v"], strict=True)) == [(2, "B"), (4, "d"), (5, "e")]
