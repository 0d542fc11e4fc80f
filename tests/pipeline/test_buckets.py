"""The key state's bucket layout: claimed only when every row is in its bucket, read in place by
a diff, and never a condition for a correct result (see openmirror_nb/_core/pipeline/keystate/buckets.py)."""

from __future__ import annotations

import json
import re

import pytest

from openmirror_nb._core.landing_zone.push_state import PushState, next_state
from openmirror_nb._core.model import ROW_MARKER
from openmirror_nb._core.pipeline.keystate import buckets, snapdiff
from openmirror_nb._core.pipeline.keystate import hashes as keystate
from tests.pipeline.test_diff import published

pytestmark = pytest.mark.spark

SCHEMA = "region string, id long, v string"
BUCKET_FILE = re.compile(r"^part-(\d+)-.*_(\d{5})\.snappy\.parquet$")


def rows(n, *, v="a", start=0):
    return [(f"r{i % 3}", i, v) for i in range(start, start + n)]


def state_of(lz):
    return json.loads((lz / "t" / "_openmirror" / "state.json").read_text())


def check_layout(spark, lz, folder, n):
    """Every Parquet file is named for a bucket < n, and every row in it hashes to that bucket."""
    from pyspark.sql import functions as F

    files = sorted(p for p in (lz / folder).iterdir() if p.name.endswith(".parquet"))
    assert files
    for path in files:
        m = BUCKET_FILE.match(path.name)
        assert m, path.name
        bucket = int(m.group(2))
        assert bucket == int(m.group(1)) < n
        found = spark.read.parquet(path.as_uri()).select(F.pmod(F.hash("region", "id"), F.lit(n)).alias("b"))
        assert {r.b for r in found.distinct().collect()} <= {bucket}


def test_every_base_holds_its_buckets_and_deltas_need_none(spark, db, lz, monkeypatch):
    db.push(spark.createDataFrame(rows(40), SCHEMA), table="t", keys=["region", "id"])
    assert state_of(lz)["buckets"] == 4
    check_layout(spark, lz, state_of(lz)["base"], 4)
    db.push(spark.createDataFrame(rows(38, start=2) + rows(2, v="b", start=40), SCHEMA), table="t")
    changes = spark.createDataFrame(
        [("r0", 3, "c", 4), ("r1", 4, None, 2), ("r2", 99, "n", 0)], SCHEMA + ", op int"
    )
    db.push(changes.coalesce(1), table="t", mode="changes", op_column="op")
    state = state_of(lz)
    assert state["buckets"] == 4 and len(state["deltas"]) == 2
    for folder in state["deltas"]:  # small: written as they come, no renames
        assert not any(BUCKET_FILE.match(p.name) for p in (lz / folder).iterdir())
    # a change push that compacts writes its new base in the table's buckets
    monkeypatch.setattr(keystate, "MAX_DELTAS", 2)
    db.push(changes.where("op = 4").coalesce(1), table="t", mode="changes", op_column="op")
    state = state_of(lz)
    assert state["deltas"] == [] and state["buckets"] == 4
    check_layout(spark, lz, state["base"], 4)
    got = spark.read.parquet((lz / state["base"]).as_uri()).where(f"{keystate.ROWS} > 0")
    assert got.count() == 40 and got.where("id in (0, 1, 4)").count() == 0


def test_a_diff_reads_the_stored_base_without_a_shuffle(spark, db, lz):
    db.push(spark.createDataFrame(rows(40), SCHEMA), table="t", keys=["region", "id"])
    state = state_of(lz)
    old, touched = snapdiff.stored(
        spark,
        base=(lz / state["base"]).as_uri(),
        deltas=[],
        keys=("region", "id"),
        small_deltas=True,
        buckets=state["buckets"],
        place=state["buckets"],
    )
    assert touched is None
    new = snapdiff.snapshot_state(
        spark.createDataFrame(rows(40, v="z"), SCHEMA), keys=("region", "id"), buckets=4
    )
    diff = snapdiff.diff_states(new, old, keys=("region", "id"), update_marker=4)
    plan = diff._jdf.queryExecution().executedPlan().toString()
    assert "Bucketed: true" in plan and plan.count("Exchange") == 1, plan
    assert diff.where(f"{keystate.CHANGE} = 4").count() == 40


def test_rows_outside_their_bucket_are_not_claimed(spark, db, lz, monkeypatch):
    # a round-robin shuffle in place of the hash placement: the files are not buckets
    monkeypatch.setattr(buckets, "place", lambda df, *, keys, buckets: df.repartition(buckets or 1))
    db.push(spark.createDataFrame(rows(40), SCHEMA), table="t", keys=["region", "id"])
    state = state_of(lz)
    assert state["buckets"] is None
    assert not any(BUCKET_FILE.match(p.name) for p in (lz / state["base"]).iterdir())
    result = db.push(spark.createDataFrame(rows(39, start=1) + rows(1, v="b", start=40), SCHEMA), table="t")
    assert result.rows == {"insert": 1, "delete": 1}
    assert state_of(lz)["buckets"] is None


def test_without_the_bucketed_reader_the_state_is_read_plainly(spark, db, lz, monkeypatch):
    monkeypatch.setattr(buckets, "read", lambda *a, **k: None)
    db.push(spark.createDataFrame(rows(40), SCHEMA), table="t", keys=["region", "id"])
    result = db.push(spark.createDataFrame(rows(38, start=1) + rows(1, v="b", start=39), SCHEMA), table="t")
    assert result.rows == {"delete": 1, "upsert": 1}
    assert {(r["id"], r[ROW_MARKER]) for r in published(lz)} == {(0, 2), (39, 4)}


def test_the_layout_survives_a_change_of_shuffle_partitions(spark, db, lz, monkeypatch):
    db.push(spark.createDataFrame(rows(40), SCHEMA), table="t", keys=["region", "id"])
    monkeypatch.setattr(keystate, "MAX_DELTAS", 1)
    db.push(spark.createDataFrame(rows(40, v="p"), SCHEMA), table="t")
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        result = db.push(spark.createDataFrame(rows(40, v="q"), SCHEMA), table="t")
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "4")
    assert result.rows == {"upsert": 40}
    state = state_of(lz)
    assert state["buckets"] == 4 and state["deltas"] == []
    check_layout(spark, lz, state["base"], 4)


def test_a_small_table_has_one_bucket(spark, db, lz, monkeypatch):
    monkeypatch.setattr(buckets, "ROWS_PER_BUCKET", 250_000)
    db.push(spark.createDataFrame(rows(40), SCHEMA), table="t", keys=["region", "id"])
    state = state_of(lz)
    assert state["buckets"] == 1
    check_layout(spark, lz, state["base"], 1)


def test_a_state_without_buckets_gets_them_at_its_next_base(spark, db, lz, monkeypatch):
    db.push(spark.createDataFrame(rows(40), SCHEMA), table="t", keys=["region", "id"])
    path = lz / "t" / "_openmirror" / "state.json"
    legacy = {k: v for k, v in json.loads(path.read_text()).items() if k != "buckets"}
    path.write_text(json.dumps(legacy))  # as written before the layout existed
    db.push(spark.createDataFrame(rows(40, v="b"), SCHEMA), table="t")
    assert state_of(lz)["buckets"] is None
    monkeypatch.setattr(keystate, "MAX_DELTAS", 1)
    result = db.push(spark.createDataFrame(rows(40, v="c"), SCHEMA), table="t")
    state = state_of(lz)
    assert result.rows == {"upsert": 40} and state["deltas"] == [] and state["buckets"] == 4
    check_layout(spark, lz, state["base"], 4)


def test_a_base_sets_the_layout_and_a_delta_keeps_it():
    def step(prior, folder, *, new_base, rows, buckets=None):
        return next_state(
            prior,
            key_columns=("id",),
            schema="s",
            folder=folder,
            new_base=new_base,
            rows=rows,
            incarnation="i",
            now=1.0,
            buckets=buckets,
        )

    base = step(None, "b", new_base=True, rows=9, buckets=4)
    assert base.buckets == 4 and PushState.from_bytes(base.to_bytes()) == base
    delta = step(base, "d", new_base=False, rows=1)
    assert delta.buckets == 4 and delta.deltas == ("d",)
    plain = step(delta, "c", new_base=True, rows=9)
    assert plain.buckets is None and plain.deltas == ()
    assert step(None, "d", new_base=False, rows=2).buckets is None
