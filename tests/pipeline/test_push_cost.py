"""What a push costs beyond its data (issue 25): the Spark jobs of each phase, as the progress
events count them; the round trips to the store; and a push that finds nothing to publish,
which writes nothing but the time it looked."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal

import pandas as pd
import pyarrow.parquet as pq
import pytest

from openmirror_nb._core.errors import ChangeFeedError, KeyColumnsError
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.pipeline.feeds import changes
from openmirror_nb._core.pipeline.keystate import buckets
from openmirror_nb._core.pipeline.keystate import hashes as keystate
from openmirror_nb._core.progress import Finished, Staging, Validating
from tests.pipeline.delta_tables import mirrored

pytestmark = pytest.mark.spark
SMALL_FEED = 8 * 2**20  # pipeline.feeds.changes.SMALL_FEED_BYTES outside the suite (its conftest sets -1)


def orders(spark, n=200, *, v="a", parts=2):
    return spark.range(0, n, numPartitions=parts).selectExpr("id", f"concat('{v}', id % 7) AS v")


def files_under(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


class Steps:
    """A progress callback that keeps, per staging step, the push's job count when it began."""

    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append(event)

    def jobs_by_step(self):
        """Spark jobs run in each step (the difference to the next step's first event)."""
        marks = [(e.step, e.jobs) for e in self.events if isinstance(e, Staging) and e.step and not e.stages]
        marks.append(("end", self.total))
        return {step: after - jobs for (step, jobs), (_, after) in itertools.pairwise(marks)}

    @property
    def before_staging(self):
        return next(e.jobs for e in self.events if isinstance(e, Staging))

    @property
    def total(self):
        return next(e.jobs for e in self.events if isinstance(e, Finished))


def test_every_event_carries_the_pushs_own_job_count(spark, db):
    steps = Steps()
    spark.range(10).count()  # a job of the user's own: never counted
    db.push(orders(spark), table="t", keys=["id"], progress=steps)
    counts = [e.jobs for e in steps.events]
    assert isinstance(steps.events[0], Validating) and counts[0] == 0
    assert max(counts) == steps.total >= 2  # the data files and the key state, at least
    assert sum(steps.jobs_by_step().values()) + steps.before_staging == steps.total
    # nothing reads a file footer to learn a schema it knows: no job before the staging
    assert steps.before_staging == 0


def test_a_small_push_runs_only_the_jobs_that_write(spark, db, monkeypatch):
    """Counted by the job that writes: no step of its own counts rows, checks markers or reads
    a schema back. A change feed writes its files (a shuffle keeps each key in one file, in
    order), which a small feed keeps as its key-state delta; a diff writes its key-state delta and
    then its changed rows.
    (A small table, as it is outside the suite: its key state in one bucket; the suite's
    tables have several, for the parallel paths.)"""
    monkeypatch.setattr(buckets, "ROWS_PER_BUCKET", 250_000)
    monkeypatch.setattr(changes, "SMALL_FEED_BYTES", SMALL_FEED)
    db.push(orders(spark), table="t", keys=["id"], progress=False)
    feed = pd.DataFrame({"id": [1, 2, 500], "v": ["x", None, "n"], "op": [4, 2, 0]})
    steps = Steps()
    db.push(feed, table="t", mode="changes", op_column="op", progress=steps)
    by_step = steps.jobs_by_step()
    assert set(by_step) == {"writing the data files", "writing the key state"}, by_step
    # the files: a feed Spark knows is small is ordered in the task that writes it (no shuffle);
    # the key state: a copy of those files (pipeline.keystate.feed_state), no job at all
    assert by_step == {"writing the data files": 1, "writing the key state": 0}, by_step
    assert steps.before_staging == 0 and steps.total == 1
    # a feed of unknown size (built from Python rows) is shuffled by key: one job more
    rows = spark.createDataFrame([(1, "y", 4)], "id long, v string, op int")
    steps = Steps()
    db.push(rows, table="t", mode="changes", op_column="op", progress=steps)
    assert steps.jobs_by_step()["writing the data files"] == 2, steps.jobs_by_step()
    steps = Steps()
    db.push(orders(spark, v="b").where("id < 190"), table="t", keys=["id"], progress=steps)
    by_step = steps.jobs_by_step()
    assert list(by_step) == ["writing the key state", "checking the keys", "writing the data files"]
    assert by_step["checking the keys"] == 0 and steps.before_staging == 0, by_step
    # one job each: a small table's snapshot meets its one-bucket key state in one task, and its
    # changed rows are joined there too (no shuffle, no broadcast)
    assert by_step["writing the key state"] == 1 and by_step["writing the data files"] == 1, by_step


def test_an_unchanged_snapshot_writes_only_when_it_looked(spark, db, lz):
    db.push(orders(spark), table="t", keys=["id"])
    db.push(orders(spark, v="b"), table="t", keys=["id"])  # a diff: base and one delta
    folder = lz / "t"
    before = files_under(folder)
    state_before = json.loads((folder / "_openmirror" / "state.json").read_text())
    steps = Steps()
    result = db.push(orders(spark, v="b"), table="t", keys=["id"], progress=steps)
    assert result.sequence_numbers == () and result.rows == {} and result.files == ()
    assert "nothing changed" in repr(result)
    after = files_under(folder)
    # no data file, no key-state delta, no state rewrite: small records of the check (when, and
    # that the table was current as of its read, for its freshness)
    looked = ("_openmirror/checked.json", "_openmirror/freshness.json")
    assert {k: v for k, v in after.items() if k not in looked} == {
        k: v for k, v in before.items() if k not in looked
    }
    checked = json.loads(after["_openmirror/checked.json"])["checked"]
    assert checked >= state_before["last_push"]
    checks = json.loads(after["_openmirror/freshness.json"])["checks"]
    assert [c["through"] for c in checks] == [state_before["last_sequence_number"]]
    # and it stopped after the join that found nothing: no job writes data files
    assert "writing the data files" not in steps.jobs_by_step()
    # checked again: the record moves, nothing else does
    db.push(orders(spark, v="b"), table="t", keys=["id"], progress=False)
    again = files_under(folder)
    assert {k: v for k, v in again.items() if k not in looked} == {
        k: v for k, v in before.items() if k not in looked
    }
    assert json.loads(again["_openmirror/checked.json"])["checked"] >= checked


def test_unchanged_snapshots_never_bring_a_rewrite_of_the_key_state(spark, db, lz, monkeypatch):
    """Before, every unchanged snapshot added an empty delta, and the 16th made the next push
    rewrite the whole base; now they leave the deltas as they are."""
    monkeypatch.setattr(keystate, "MAX_DELTAS", 2)
    db.push(orders(spark), table="t", keys=["id"])
    db.push(orders(spark, v="b"), table="t", keys=["id"])
    state = json.loads((lz / "t" / "_openmirror" / "state.json").read_text())
    for _ in range(3):
        db.push(orders(spark, v="b"), table="t", keys=["id"], progress=False)
    assert json.loads((lz / "t" / "_openmirror" / "state.json").read_text()) == state
    assert len(state["deltas"]) == 1


def test_an_unchanged_snapshot_due_to_compact_commits_the_base_it_wrote(spark, db, lz, monkeypatch):
    """A diff due to compact writes the whole key state before it knows that nothing changed:
    that base is committed (once), so the next unchanged snapshot writes nothing again."""
    db.push(orders(spark), table="t", keys=["id"])
    db.push(orders(spark, v="b"), table="t", keys=["id"])
    monkeypatch.setattr(keystate, "MAX_DELTAS", 1)
    result = db.push(orders(spark, v="b"), table="t", keys=["id"])
    state = json.loads((lz / "t" / "_openmirror" / "state.json").read_text())
    assert result.sequence_numbers == () and state["deltas"] == [] and state["base_rows"] == 200
    before = files_under(lz / "t")
    db.push(orders(spark, v="b"), table="t", keys=["id"], progress=False)
    after = files_under(lz / "t")
    looked = ("_openmirror/checked.json", "_openmirror/freshness.json")  # the check's records
    assert {k: v for k, v in after.items() if k not in looked} == {
        k: v for k, v in before.items() if k not in looked
    }
    # and the compacted base still finds what changes next
    result = db.push(orders(spark, v="b").where("id > 0"), table="t", keys=["id"])
    assert result.rows == {"delete": 1}


def test_an_empty_change_feed_writes_no_key_state(spark, db, lz):
    db.push(orders(spark), table="t", keys=["id"])
    before = files_under(lz / "t")
    empty = spark.createDataFrame([], "id long, v string, op int")
    result = db.push(empty, table="t", mode="changes", op_column="op")
    assert result.sequence_numbers == () and result.rows == {}
    after = files_under(lz / "t")
    assert set(after) - set(before) == {"_openmirror/checked.json"}
    assert {k: after[k] for k in before} == before


def test_status_tells_an_idle_table_from_a_dead_job(spark, db):
    db.push(orders(spark), table="t", keys=["id"])
    pushed = db.status().tables[0]
    assert pushed.last_checked == pushed.last_push is not None
    db.push(orders(spark), table="t", keys=["id"])  # nothing changed
    table = db.status().tables[0]
    assert table.last_push == pushed.last_push and table.last_checked > table.last_push
    assert table.row()["last_checked"] == table.last_checked
    now = datetime.now(UTC)
    report = db.status()
    assert "checked" in repr(report) and "last checked" in report._repr_html_()
    assert (now - table.last_checked).total_seconds() < 600


def test_an_empty_first_partition_publishes_no_empty_file(spark, db, lz):
    """Spark writes its first partition's file even when that partition is empty (no other
    empty partition gets one); such a file is never published after the first push."""
    df = spark.range(0, 30, numPartitions=3).where("id >= 10").selectExpr("id", "'v' AS v")
    result = db.push(df, table="t", keys=["id"], rows_per_file=100)
    published = [lz / "t" / f"{n:020d}.parquet" for n in result.sequence_numbers]
    assert published and all(pq.read_metadata(p).num_rows > 0 for p in published)
    assert sum(pq.read_metadata(p).num_rows for p in published) == 20 == result.rows["initial"]


def test_a_push_to_a_table_reads_its_state_once_under_the_lock(spark, db, monkeypatch):
    """Round trips, which OneLake charges one by one: the push state is read once before the lock
    (which life the push is for) and once under it; one existence check (whether the staging
    folder is new) and one per staged file's rename, no more."""
    db.push(orders(spark), table="t", keys=["id"])
    calls = Counter()
    home = TableFolder.of(db.storage, "t")
    for name in ("read_bytes", "exists", "list_dir", "write_bytes", "delete"):
        real = getattr(db.storage, name)

        def spy(path, *args, _real=real, _name=name, **kwargs):
            calls[(_name, path)] += 1
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(db.storage, name, spy)
    result = db.push(orders(spark, v="c"), table="t", keys=["id"], progress=False)
    assert len(result.sequence_numbers) == 1
    assert calls[("read_bytes", home.state_path)] == 2, calls
    assert calls[("read_bytes", home.metadata_path)] == 1, calls
    assert sum(n for (kind, _), n in calls.items() if kind == "exists") <= 1, calls
    assert calls[("write_bytes", home.state_path)] == 1
    assert sum(calls.values()) <= 22, sorted(calls.items())


def test_a_small_table_pushed_in_one_task_ends_as_its_source(spark, db, monkeypatch):
    """The one-task paths of a small table (its snapshot gathered without a shuffle, its changed
    rows joined in place, a small feed's key state grouped in one task) publish exactly what the
    parallel paths do: the mirror ends as the source, through diffs against a base and deltas."""
    monkeypatch.setattr(buckets, "ROWS_PER_BUCKET", 250_000)
    monkeypatch.setattr(changes, "SMALL_FEED_BYTES", SMALL_FEED)
    rows = {i: (i, f"v{i}") for i in range(50)}

    def frame():
        return spark.createDataFrame(sorted(rows.values()), "id long, v string").repartition(3)

    db.push(frame(), table="t", keys=["id"])
    for i in range(5):
        rows[i] = (i, f"changed{i}")
    for i in range(40, 45):
        del rows[i]
    rows[99] = (99, "new")
    assert db.push(frame(), table="t").rows == {"insert": 1, "delete": 5, "upsert": 5}
    # Three partitions of known size, key 7's changes across two of them: gathered in one task,
    # they are put back in input order, so 7 ends as "c"
    feed = spark.range(0, 5, 1, numPartitions=3).selectExpr(
        "CAST(element_at(array(7, 7, 8, 7, 100), int(id) + 1) AS long) AS id",
        "element_at(array('a', 'b', NULL, 'c', 'n'), int(id) + 1) AS v",
        "element_at(array(4, 4, 2, 4, 0), int(id) + 1) AS op",
    )
    assert changes.estimated_bytes(feed) <= SMALL_FEED
    db.push(feed, table="t", mode="changes", op_column="op")
    rows[7], rows[100] = (7, "c"), (100, "n")
    del rows[8]
    assert mirrored(db, "t", ("id", "v")) == sorted(rows.values())
    rows[1] = (1, "again")  # a diff against the base and two deltas (one of them a feed's)
    assert db.push(frame(), table="t").rows == {"upsert": 1}
    assert mirrored(db, "t", ("id", "v")) == sorted(rows.values())
    dupes = spark.createDataFrame([(1, "x"), (1, "y"), (2, "z")], "id long, v string")
    with pytest.raises(KeyColumnsError, match="not unique"):
        db.push(dupes, table="t")
    twice = spark.createDataFrame([(3, "p", 0), (3, "q", 0)], "id long, v string, sys_op int")
    with pytest.raises(ChangeFeedError, match="more than once"):
        db.push(twice, table="t", mode="changes", convention="sys_op")


def test_a_small_feed_gathered_in_one_task_keeps_each_keys_order(spark, db, lz, monkeypatch):
    """Gathered without a shuffle, a feed is still put in order: by ``order_by``, ties in input
    order, across the partitions it came in; one file holds it all."""
    monkeypatch.setattr(changes, "SMALL_FEED_BYTES", SMALL_FEED)
    db.push(spark.range(3).selectExpr("id", "'a' AS v"), table="t", keys=["id"])
    feed = spark.range(0, 6, 1, numPartitions=3).selectExpr(
        "CAST(element_at(array(1, 1, 2, 1, 2, 1), int(id) + 1) AS long) AS id",
        "element_at(array('x', 'y', 'z', 'q', 'w', 'r'), int(id) + 1) AS v",
        "4 AS op",
        "element_at(array(3, 5, 2, 4, 1, 5), int(id) + 1) AS lsn",
    )
    assert changes.estimated_bytes(feed) <= SMALL_FEED
    result = db.push(feed, table="t", mode="changes", op_column="op", order_by=["lsn"])
    assert len(result.sequence_numbers) == 1
    published = sorted((lz / "t").glob("0*.parquet"))[-1]
    out = [(r["id"], r["v"]) for r in pq.read_table(published).to_pylist()]
    assert [v for k, v in out if k == 1] == ["x", "q", "y", "r"]  # lsn 3, 4, 5, 5 (y came first)
    assert [v for k, v in out if k == 2] == ["w", "z"]
    assert mirrored(db, "t", ("id", "v")) == [(0, "a"), (1, "r"), (2, "z")]


def test_the_row_hash_is_the_one_stored_states_hold(spark):
    """Built as SQL text (two JVM calls, not a few per column), the row hash keeps the values
    earlier versions wrote into every stored key state: NULL masks (two of them past 62
    columns), -0.0 as 0.0, NaN, decimals, timestamps, dates, binary; no data column at all."""
    schema = (
        "k long, i int, f float, d double, s string, b boolean, dec decimal(10,3), ts timestamp, dd date, "
        "bin binary, sh short, by byte"
    )
    rows = [
        (
            1,
            7,
            1.5,
            -0.0,
            "x",
            True,
            Decimal("1.250"),
            dt.datetime(2024, 1, 2, 3, 4, 5, 678901),
            dt.date(2020, 2, 29),
            b"\x00\x01",
            3,
            4,
        ),
        (2, None, float("nan"), 0.0, None, None, None, None, None, None, None, None),
        (
            3,
            -1,
            -0.0,
            float("nan"),
            "",
            False,
            Decimal("-0.001"),
            dt.datetime(1500, 1, 1),
            dt.date(1, 1, 1),
            b"",
            -3,
            -4,
        ),
    ]
    wide = "CASE WHEN id = {m} THEN NULL ELSE id * {i} END AS c{i:02d}"
    frames = {
        "types": spark.createDataFrame(rows, schema),
        "wide": spark.range(3).selectExpr("id AS k", *[wide.format(m=i % 3, i=i) for i in range(70)]),
        "keys only": spark.range(2).selectExpr("id AS k"),
    }
    got = {}
    for name, df in frames.items():
        h1, h2 = keystate.row_hashes(df, keys=("k",))
        got[name] = sorted(tuple(r) for r in df.select("k", h1, h2).collect())
    assert got == {
        "types": [
            (1, -1424461130111443509, 3272535010311201328),
            (2, -8083330233902072113, 4551545246153069275),
            (3, -3006554508658624572, -5153326746486214957),
        ],
        "wide": [
            (0, 6484522977651260285, 2935548046854340337),
            (1, 2508391719102265846, -800511821117668291),
            (2, -3168223385899556708, 9210270909382900610),
        ],
        "keys only": [
            (0, -6698625589789238999, -7468882110013326303),
            (1, -6698625589789238999, -7468882110013326303),
        ],
    }


def test_observed_counts_are_read_in_one_call_and_match_the_public_read(spark):
    """A job's counts, read from the map's text in one JVM call: the same numbers as PySpark's
    ``Observation.get`` (a count over no rows, NULL, is 0), without falling back to it."""
    from pyspark.sql import Observation

    from openmirror_nb._core.pipeline.push import observed, stage

    observation = Observation()
    frame = orders(spark, 50).observe(
        observation,
        stage.rows_where("id % 5 = 0", "fives"),
        stage.rows_where("id < 0", "negative"),  # no row: NULL
        stage.rows_where("v = 'a3'", "a_3"),
    )
    frame.write.format("noop").mode("overwrite").save()

    class NoFallback:  # the public read raises: only the one-call path can answer
        _jo, _jvm = observation._jo, observation._jvm

        @property
        def get(self):
            raise AssertionError("fell back to Observation.get")

    read = observed.counts(NoFallback(), spark=spark, what="the test's counts")
    assert read == {"fives": 10, "negative": 0, "a_3": 7}
    assert read == {k: int(v or 0) for k, v in observation.get.items()}
