"""Kill tests: a real streaming query in a child process is SIGKILLed at each step of a micro-batch
and restarted from the same checkpoint; then Spark is made to replay the last batch (its entry
under the checkpoint's commits/ removed, as a crash between the sink and Spark's commit log
leaves it). The mirrored tables must equal the events applied exactly once (the events insert with
row marker 0, so a batch applied twice shows as duplicate rows), file numbers must run from 1
with no gap or repeat, and ``lzcheck`` must validate the landing zone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.publish import CRASH_ENV
from tests.conftest import tree_hash
from tests.reliability.harness import REPO, assert_landing_zone_sound, child_env, kill_group, tail
from tests.streaming import stream_child
from tests.streaming.feeds import Feed, applied, forget_commit, kill_events

# CI kills the Kafka mirror at each of these steps (test_kafka_kills.py: the same sink, two routed
# tables); the file source's kills are repeated in scripts/soak.
pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(not os.environ.get("OPENMIRROR_SOAK"), reason="scripts/soak runs it"),
]

STEPS = ("before_push", "after_staging", "after_journal", "between_renames", "after_state_commit")


def _events(table: str, batch: int) -> list[list[dict]]:
    """Two files of change events for micro-batch ``batch`` of ``table``."""
    rows = [{"tbl": table, **e} for e in kill_events(batch)]
    return [rows[0::2], rows[1::2]]  # a key's changes are all in one batch, in one file


def _drop(feed: Feed, tables: tuple[str, ...], batch: int) -> list[dict]:
    files: list[list[dict]] = [[], []]
    for table in tables:
        for i, rows in enumerate(_events(table, batch)):
            files[i] += rows
    for rows in files:
        feed.drop(rows)
    return files[0] + files[1]


def _run_here(spark, db, feed: Feed, ckpt: Path, kind: str) -> None:
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        df = stream_child.stream(spark, str(feed.folder))
        options = stream_child.sink_options(kind)
        if options.pop("columns_drop", None):
            df = df.drop("tbl")
        db.mirror_stream(df, checkpoint=ckpt, **options).await_termination()
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")


def _killed_run(root: Path, feed: Feed, ckpt: Path, kind: str, step: str, log: Path) -> None:
    with open(log, "wb") as out:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.streaming.stream_child",
                str(root),
                str(feed.folder),
                str(ckpt),
                kind,
            ],
            cwd=REPO,
            env=child_env(**{CRASH_ENV: step}),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    child.wait(timeout=600)
    kill_group(child)  # the JVM and Python workers die with the driver, as in a real crash
    assert child.returncode == -signal.SIGKILL, tail(log)


def _trial(spark, tmp_path, kind: str, step: str, tables: tuple[str, ...]) -> None:
    root, ckpt = tmp_path / "db", tmp_path / "ckpt"
    db = om.connect(root, lock_timeout=120)
    mirror = om.LocalMirror(root)
    feed = Feed(tmp_path)
    events = _drop(feed, tables, 0)
    _run_here(spark, db, feed, ckpt, kind)  # batch 0: the tables exist
    mirror.run_once()
    events += _drop(feed, tables, 1) + _drop(feed, tables, 2)
    _killed_run(root, feed, ckpt, kind, step, tmp_path / "child.log")  # killed in batch 1
    assert not (ckpt / "commits" / "1").exists()
    first = TableFolder.of(db.storage, tables[0])
    assert first.storage.exists(first.journal_path) == (
        step in ("after_journal", "between_renames", "after_state_commit")
    )
    held = [[b for _, b in TableFolder.of(db.storage, t).read_state().streams] for t in tables]
    assert held == [
        [1] if step in ("after_state_commit", "between_tables") and i == 0 else [0]
        for i in range(len(tables))
    ]
    mirror.run_once()  # the service keeps replicating while the writer is dead
    _run_here(spark, db, feed, ckpt, kind)  # restarted: batch 1 again, then batch 2
    assert (ckpt / "commits" / "2").exists()

    forget_commit(ckpt, 2)  # the sink returned, Spark's commit log did not get the batch
    before = tree_hash(db.target.landing_zone)
    _run_here(spark, db, feed, ckpt, kind)
    assert (ckpt / "commits" / "2").exists()
    assert tree_hash(db.target.landing_zone) == before  # the replay published nothing

    mirror.run_once()
    for table in tables:
        expected = applied([e for e in events if e["tbl"] == table])
        assert_landing_zone_sound(root, table, expected, db=db)
        state = TableFolder.of(db.storage, table).read_state()
        assert [b for _, b in state.streams] == [2]


@pytest.mark.parametrize("step", STEPS)
def test_a_stream_killed_in_a_batch_applies_every_event_once(spark, tmp_path, step):
    _trial(spark, tmp_path, "table", step, ("t",))


@pytest.mark.parametrize("step", ["between_tables", "after_journal"])
def test_a_routed_stream_killed_between_its_tables_applies_every_event_once(spark, tmp_path, step):
    _trial(spark, tmp_path, "routed", step, ("a", "b"))
