"""A small change feed's key state written beside its data files (pipeline.feed_state): the same
state as reading it back from the files, and read back after all whenever the two jobs that
evaluate the feed saw different rows."""

from __future__ import annotations

import json
import uuid

import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ChangeFeedError
from openmirror_nb._core.pipeline import changes, feed_state
from tests.pipeline.delta_tables import mirrored

pytestmark = pytest.mark.spark
SMALL_FEED = 8 * 2**20  # pipeline.changes.SMALL_FEED_BYTES outside the suite (its conftest sets -1)


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


def last_delta(lz, table="t"):
    """The rows of the table's newest key-state delta, sorted (its folder name is the push's)."""
    state = json.loads((lz / table / "_openmirror" / "state.json").read_text())
    rows = pq.read_table(lz / state["deltas"][-1]).to_pylist()
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


def test_the_state_written_beside_the_files_is_the_one_read_from_them(spark, tmp_path, monkeypatch):
    states = {}
    for early in (True, False):
        db = om.connect(tmp_path / str(early))
        db.push(spark.range(4).selectExpr("id", "'a' AS v", "0 AS lsn"), table="t", keys=["id"])
        outcomes = Outcomes(monkeypatch, early=early)
        db.push(feed(spark), table="t", mode="changes", op_column="op", order_by=["lsn"])
        assert outcomes.seen == ([True] if early else [])
        states[early] = last_delta(db.target.landing_zone)
        held = mirrored(db, "t", ("id", "v", "lsn"))
        assert held == [(0, "a", 0), (1, "r", 5), (3, "a", 0), (9, "n", 1)]
        # a snapshot of what the mirror holds finds nothing changed: the state is the files'
        assert db.push(spark.createDataFrame(held, "id long, v string, lsn int"), table="t").rows == {}
    assert states[True] == states[False] and len(states[True]) == 3


def test_a_feed_that_reads_otherwise_the_second_time_keeps_the_files_state(spark, db, lz, monkeypatch):
    """A column drawn anew at each evaluation (Spark's own rand() is seeded once per query, so a
    Python function stands in for a source that changes between reads) differs between the two
    jobs: the fingerprints differ, the early state is thrown away, and the state is the one of
    the rows published."""
    from pyspark.sql import functions as F

    db.push(spark.range(5).selectExpr("id", "'a' AS v"), table="t", keys=["id"])
    outcomes = Outcomes(monkeypatch)
    draw = F.udf(lambda: uuid.uuid4().hex, "string").asNondeterministic()
    random = spark.range(0, 5, 1, numPartitions=2).select("id", draw().alias("v"), F.lit(4).alias("op"))
    db.push(random, table="t", mode="changes", op_column="op")
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
    twice = spark.range(0, 2, 1, 2).selectExpr("CAST(3 AS long) AS id", "'p' AS v", "0 AS sys_op")
    with pytest.raises(ChangeFeedError, match="more than once"):
        db.push(twice, table="t", mode="changes", convention="sys_op")
    assert lz_hash(lz) == before  # nothing of either stays, the early state included
