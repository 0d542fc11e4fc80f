"""A small change feed's key state (pipeline.keystate.feed_state): its own data files kept as its delta,
read as the same state as the delta read back from the files; or, for a sys_op feed, written
beside its files and read back after all whenever the two jobs that evaluate the feed saw
different rows."""

from __future__ import annotations

import json
import uuid

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ChangeFeedError, LandingZoneError
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.pipeline.feeds import changes
from openmirror_nb._core.pipeline.keystate import feed_state
from openmirror_nb._core.pipeline.keystate import hashes as keystate
from openmirror_nb._core.pipeline.keystate.stored import count_state_rows, deltas_of
from tests.pipeline.delta_tables import mirrored

pytestmark = pytest.mark.spark
SMALL_FEED = 8 * 2**20  # pipeline.feeds.changes.SMALL_FEED_BYTES outside the suite (its conftest sets -1)


@pytest.fixture(autouse=True)
def small_feeds(monkeypatch):
    monkeypatch.setattr(changes, "SMALL_FEED_BYTES", SMALL_FEED)


class Outcomes:
    """Whether each push's early state stood (True), was thrown away (False), or was not tried."""

    def __init__(self, monkeypatch, *, early=True):
        self.seen: list[bool] = []
        result = feed_state.StateAhead.result

        def spy(ahead, fingerprint):
            out = result(ahead, fingerprint)
            self.seen.append(out is not None)
            return out

        monkeypatch.setattr(feed_state.StateAhead, "result", spy)
        if not early:
            monkeypatch.setattr(feed_state, "start", lambda *a, **k: None)


def state_of(lz, table="t"):
    return json.loads((lz / table / "_openmirror" / "state.json").read_text())


def last_delta(spark, lz, table="t", keys=("id",)):
    """The state rows of the table's newest key-state delta, sorted, as a diff reads them."""
    state = PushState.from_bytes((lz / table / "_openmirror" / "state.json").read_bytes())
    uris, feeds = deltas_of(state, lambda folder: str(lz / folder))
    frame = keystate.read_delta(spark, uris[-1], keys=keys, schema=None, feeds=feeds)
    rows = [r.asDict() for r in frame.collect()]
    return sorted(tuple(sorted(r.items())) for r in rows)


def feed(spark):
    """Key 1 changed four times (two ties on lsn, kept in input order), key 2 deleted last, key 9
    new; spread over three partitions."""
    return spark.range(0, 7, 1, numPartitions=3).selectExpr(
        "CAST(element_at(array(1, 1, 2, 1, 2, 1, 9), int(id) + 1) AS long) AS id",
        "element_at(array('x', 'y', 'z', 'q', 'w', 'r', 'n'), int(id) + 1) AS v",
        "element_at(array(4, 4, 4, 4, 2, 4, 0), int(id) + 1) AS op",
        "element_at(array(3, 5, 2, 4, 6, 5, 1), int(id) + 1) AS lsn",
    )


def test_a_feeds_files_kept_as_its_delta_read_as_the_state_of_the_files(spark, tmp_path, monkeypatch):
    """The delta that is a copy of the published file gives, read, the very rows of the delta a
    second job derives from the staged files; the mirror ends as expected, and a snapshot of it
    finds nothing changed."""
    states = {}
    for kept in (True, False):
        db = om.connect(tmp_path / str(kept))
        lz = db.target.landing_zone
        db.push(spark.range(4).selectExpr("id", "'a' AS v", "0 AS lsn"), table="t", keys=["id"])
        if not kept:
            monkeypatch.setattr(feed_state, "files_hold_state", lambda *a, **k: False)
            monkeypatch.setattr(feed_state, "start", lambda *a, **k: None)
        result = db.push(feed(spark), table="t", mode="changes", op_column="op", order_by=["lsn"])
        state = state_of(lz)
        folder = state["deltas"][-1]
        if kept:  # the published file, byte for byte, and its schema in the state
            published = lz / "t" / f"{result.sequence_numbers[0]:020d}.parquet"
            [copy] = (lz / folder).glob("part-*")
            assert copy.read_bytes() == published.read_bytes()
            assert [f for f, _ in state["feed_deltas"]] == [folder]
            assert "__rowMarker__" in state["feed_deltas"][0][1]
        else:
            assert state["feed_deltas"] == []
        states[kept] = last_delta(spark, lz)
        assert count_state_rows(db.storage, "t") == 4  # what reconciliation reads: keys 0, 1, 3, 9
        held = mirrored(db, "t", ("id", "v", "lsn"))
        assert held == [(0, "a", 0), (1, "r", 5), (3, "a", 0), (9, "n", 1)]
        # a snapshot of what the mirror holds finds nothing changed: the state is the files'
        assert db.push(spark.createDataFrame(held, "id long, v string, lsn int"), table="t").rows == {}
    assert states[True] == states[False] and len(states[True]) == 3


def test_feed_deltas_fold_into_a_new_base(spark, db, lz, monkeypatch):
    """Deltas that are feeds' files, one of them of fewer columns than the table has now, are
    read with their own schema when the next push compacts them into a new base; the state
    then agrees with the mirror, and a feed's delta may follow a snapshot's."""
    monkeypatch.setattr(keystate, "MAX_DELTAS", 3)
    db.push(spark.range(6).selectExpr("id", "'a' AS v"), table="t", keys=["id"])
    small = spark.range(1).selectExpr("CAST(1 AS long) AS id", "'b' AS v", "4 AS op")
    db.push(small, table="t", mode="changes", op_column="op")
    wider = spark.range(2).selectExpr("id + 2 AS id", "'c' AS v", "7 AS w", "IF(id = 0, 4, 2) AS op")
    db.push(wider, table="t", mode="changes", op_column="op")  # a column added: w
    assert len(state_of(lz)["feed_deltas"]) == 2
    db.push(
        spark.range(1).selectExpr("CAST(5 AS long) AS id", "'d' AS v", "8 AS w", "4 AS op"),
        table="t",
        mode="changes",
        op_column="op",
    )
    state = state_of(lz)
    assert len(state["deltas"]) == 3 and len(state["feed_deltas"]) == 3
    db.push(
        spark.range(1).selectExpr("CAST(0 AS long) AS id", "'e' AS v", "9 AS w", "4 AS op"),
        table="t",
        mode="changes",
        op_column="op",
    )  # compacts: a new base, no deltas
    state = state_of(lz)
    assert state["deltas"] == [] and state["feed_deltas"] == [] and state["base_rows"] == 5
    held = mirrored(db, "t", ("id", "v", "w"))
    assert held == [(0, "e", 9), (1, "b", None), (2, "c", 7), (4, "a", None), (5, "d", 8)]
    again = spark.createDataFrame(held, "id long, v string, w int")
    # the keys whose last change predates w (1, by a feed of the columns then; 4, by the initial
    # load) were hashed without it, as a state row written then would be: sent once more
    assert db.push(again, table="t").rows == {"upsert": 2}
    assert db.push(again, table="t").rows == {}


def test_a_state_from_a_newer_version_is_refused():
    doc = json.loads(PushState(key_columns=("id",), schema="{}", last_sequence_number=0).to_bytes())
    doc["version"] += 1
    with pytest.raises(LandingZoneError, match="newer openmirror_nb"):
        PushState.from_bytes(json.dumps(doc).encode())


def sys_op_feed(spark):
    """Key 1 updated, key 2 deleted, key 9 new (sys_op 0 inserts or updates, 1 deletes): one
    change per key, as a Prostore delta has."""
    return spark.range(0, 3, 1, numPartitions=2).selectExpr(
        "CAST(element_at(array(1, 2, 9), int(id) + 1) AS long) AS id",
        "element_at(array('x', NULL, 'n'), int(id) + 1) AS v",
        "element_at(array(0, 1, 0), int(id) + 1) AS sys_op",
    )


def test_a_sys_op_feeds_state_written_beside_its_files_is_the_one_read_from_them(
    spark, tmp_path, monkeypatch
):
    """A sys_op feed must count its repeated keys, so its delta is written by a job beside the
    files' job; it equals the one read back from the files."""
    states = {}
    for early in (True, False):
        db = om.connect(tmp_path / str(early))
        lz = db.target.landing_zone
        db.push(spark.range(4).selectExpr("id", "'a' AS v"), table="t", keys=["id"])
        outcomes = Outcomes(monkeypatch, early=early)
        db.push(sys_op_feed(spark), table="t", mode="changes", convention="sys_op")
        assert outcomes.seen == ([True] if early else [])
        assert state_of(lz)["feed_deltas"] == []
        states[early] = last_delta(spark, lz)
        held = mirrored(db, "t", ("id", "v"))
        assert held == [(0, "a"), (1, "x"), (3, "a"), (9, "n")]
        assert db.push(spark.createDataFrame(held, "id long, v string"), table="t").rows == {}
    assert states[True] == states[False] and len(states[True]) == 3


def test_a_feed_that_reads_otherwise_the_second_time_keeps_the_files_state(spark, db, lz, monkeypatch):
    """A column drawn anew at each evaluation (Spark's own rand() is seeded once per query, so a
    Python function stands in for a source that changes between reads) differs between the two
    jobs of a sys_op feed: the fingerprints differ, the early state is thrown away, and the state
    is the one of the rows published."""
    from pyspark.sql import functions as F

    db.push(spark.range(5).selectExpr("id", "'a' AS v"), table="t", keys=["id"])
    outcomes = Outcomes(monkeypatch)
    draw = F.udf(lambda: uuid.uuid4().hex, "string").asNondeterministic()
    random = spark.range(0, 5, 1, numPartitions=2).select("id", draw().alias("v"), F.lit(0).alias("sys_op"))
    db.push(random, table="t", mode="changes", convention="sys_op")
    assert outcomes.seen == [False]
    assert not list((lz / "t").glob("_openmirror/keystate/*/_temporary"))
    held = mirrored(db, "t", ("id", "v"))
    assert len(held) == 5 and all(v != "a" for _, v in held)
    again = spark.createDataFrame(held, "id long, v string")
    assert db.push(again, table="t").rows == {}  # the hashes are the published values'


def test_bad_rows_and_repeated_sys_op_keys_are_refused_as_before(spark, db, lz, lz_hash, monkeypatch):
    db.push(spark.range(3).selectExpr("id", "'a' AS v"), table="t", keys=["id"])
    before = lz_hash(lz)
    Outcomes(monkeypatch)
    nulls = spark.range(0, 3, 1, 2).selectExpr("IF(id = 1, NULL, id) AS id", "'b' AS v", "4 AS op")
    with pytest.raises(Exception, match="NULL"):
        db.push(nulls, table="t", mode="changes", op_column="op")
    bad_op = spark.range(0, 3, 1, 2).selectExpr("id", "'b' AS v", "IF(id = 1, 7, 4) AS op")
    with pytest.raises(ChangeFeedError, match="7"):
        db.push(bad_op, table="t", mode="changes", op_column="op")
    twice = spark.range(0, 2, 1, 2).selectExpr("CAST(3 AS long) AS id", "'p' AS v", "0 AS sys_op")
    with pytest.raises(ChangeFeedError, match="more than once"):
        db.push(twice, table="t", mode="changes", convention="sys_op")
    assert lz_hash(lz) == before  # nothing of any stays, no file and no key state
