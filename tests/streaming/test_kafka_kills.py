"""Kill tests on the Kafka source: ``db.mirror_kafka`` over two 3-partition topics (two tables,
applied one after the other) in a child process, SIGKILLed at each step of a micro-batch and
restarted from the same checkpoint; then Spark is made to replay the last batch (its entry under
the checkpoint's commits/ removed, as a crash between the sink and Spark's commit log leaves it);
and a broker stopped and started under a running query. The mirrored tables must equal the
messages applied exactly once (inserts carry row marker 0, so a batch applied twice shows as
duplicate rows), file numbers must run from 1 with no gap or repeat, and ``lzcheck`` must agree."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.publish import CRASH_ENV
from tests.conftest import KAFKA_JARS, visible_hash
from tests.kafka_broker import KafkaBroker, missing
from tests.reliability.harness import REPO, assert_landing_zone_sound, child_env, kill_group, tail
from tests.streaming import stream_child
from tests.streaming.feeds import applied, forget_commit, kill_events

pytestmark = [pytest.mark.spark, pytest.mark.slow]

STEPS = ("before_push", "after_staging", "after_journal", "between_renames", "after_state_commit")
TABLES = ("s.a", "s.b")


def _send(kafka, prefix: str, batch: int) -> dict[str, list[dict]]:
    """Each table's events of ``batch`` to its topic, a key always in partition id % 3."""
    sent = {}
    for table in TABLES:
        rows = kill_events(batch)
        kafka.produce(f"{prefix}.{table}", [(str(r["id"]), json.dumps(r), r["id"] % 3) for r in rows])
        sent[table] = rows
    return sent


def _run_here(db, kafka, prefix: str, ckpt: Path) -> None:
    source = stream_child.kafka_source(kafka.bootstrap, prefix)
    db.mirror_kafka(source, checkpoint=ckpt, **stream_child.kafka_options()).await_termination(timeout=600)


def _killed_run(root: Path, kafka, prefix: str, ckpt: Path, step: str, log: Path) -> None:
    with open(log, "wb") as out:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.streaming.stream_child",
                str(root),
                f"{kafka.bootstrap} {prefix}",
                str(ckpt),
                "kafka",
            ],
            cwd=REPO,
            env=child_env(**{CRASH_ENV: step, "OPENMIRROR_SPARK_JARS": KAFKA_JARS}),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    child.wait(timeout=600)
    kill_group(child)  # the JVM and Python workers die with the driver, as in a real crash
    assert child.returncode == -signal.SIGKILL, tail(log)


def _topics(kafka) -> str:
    prefix = f"k{uuid.uuid4().hex[:8]}"
    for table in TABLES:
        kafka.create_topic(f"{prefix}.{table}", partitions=3)
    return prefix


def _sound(db, root: Path, events: dict[str, list[dict]], last_batch: int) -> None:
    om.LocalMirror(root).run_once()
    for table in TABLES:
        assert_landing_zone_sound(root, table, applied(events[table]), db=db)
        state = TableFolder.of(db.storage, table).read_state()
        assert [b for _, b in state.streams] == [last_batch]


@pytest.mark.parametrize("step", [*STEPS, "between_tables"])
def test_a_kafka_mirror_killed_in_a_batch_applies_every_message_once(spark, kafka, tmp_path, step):
    root, ckpt, prefix = tmp_path / "db", tmp_path / "ckpt", _topics(kafka)
    db = om.connect(root, lock_timeout=120)
    events = _send(kafka, prefix, 0)
    _run_here(db, kafka, prefix, ckpt)  # batch 0: the tables exist
    om.LocalMirror(root).run_once()
    for table, rows in {**_send(kafka, prefix, 1)}.items():
        events[table] += rows
    for table, rows in _send(kafka, prefix, 2).items():
        events[table] += rows
    _killed_run(root, kafka, prefix, ckpt, step, tmp_path / "child.log")  # killed in batch 1
    assert not (ckpt / "commits" / "1").exists()
    held = [[b for _, b in TableFolder.of(db.storage, t).read_state().streams] for t in TABLES]
    assert held == [
        [1] if step in ("after_state_commit", "between_tables") and i == 0 else [0] for i in range(2)
    ]
    om.LocalMirror(root).run_once()  # the service keeps replicating while the writer is dead
    _run_here(db, kafka, prefix, ckpt)  # restarted: batch 1 again, then batch 2
    assert (ckpt / "commits" / "2").exists() and not (ckpt / "commits" / "3").exists()

    forget_commit(ckpt, 2)  # the sink returned, Spark's commit log did not get the batch
    before, states = visible_hash(db.target.landing_zone), _states(db)
    _run_here(db, kafka, prefix, ckpt)
    # the replay published nothing (the lag it saw is saved under _openmirror/streams)
    assert visible_hash(db.target.landing_zone) == before and _states(db) == states
    _sound(db, root, events, 2)


@pytest.mark.skipif(missing() is not None, reason=str(missing()))
def test_a_broker_stopped_and_started_under_a_running_mirror_loses_and_doubles_nothing(spark, tmp_path):
    root, ckpt = tmp_path / "db", tmp_path / "ckpt"
    db = om.connect(root, lock_timeout=120)
    with KafkaBroker() as broker:
        prefix = _topics(broker)
        events = _send(broker, prefix, 0)
        source = stream_child.kafka_source(broker.bootstrap, prefix)
        options = {**stream_child.kafka_options(), "max_offsets_per_trigger": 1000}
        ms = db.mirror_kafka(source, checkpoint=ckpt, trigger="1 second", **options)
        try:
            _wait(lambda: _held(db) == [0, 0], ms)
            broker.stop()  # the query's consumers lose the broker mid-stream
            time.sleep(3)
            broker.start()
            for table, rows in _send(broker, prefix, 1).items():
                events[table] += rows
            _wait(lambda: min(_held(db)) >= 1 and _applied_all(db, broker, prefix), ms)
        finally:
            ms.stop()
        if ms.error is not None:  # the query gave up while the broker was away: restart it
            ms = db.mirror_kafka(source, checkpoint=ckpt, **options)
            ms.await_termination(timeout=600)
        for table, rows in _send(broker, prefix, 2).items():
            events[table] += rows
        db.mirror_kafka(source, checkpoint=ckpt, **options).await_termination(timeout=600)
    om.LocalMirror(root).run_once()
    for table in TABLES:
        assert_landing_zone_sound(root, table, applied(events[table]), db=db)


def _states(db) -> list[object]:
    return [TableFolder.of(db.storage, t).read_state() for t in TABLES]


def _held(db) -> list[int]:
    states = [TableFolder.of(db.storage, t).read_state() for t in TABLES]
    return [max((b for _, b in s.streams), default=-1) if s else -1 for s in states]


def _applied_all(db, broker, prefix: str) -> bool:
    lag = db.status()
    return all(
        lag[t].stream_lag
        and sum(p.lag for p in lag[t].stream_lag) == 0
        and sum(p.latest for p in lag[t].stream_lag) == sum(broker.end_offsets(f"{prefix}.{t}").values())
        for t in TABLES
    )


def _wait(condition, ms, timeout: float = 300.0) -> None:  # type: ignore[no-untyped-def]
    """Until ``condition`` holds, or the query has stopped (the test restarts it then)."""
    deadline = time.monotonic() + timeout
    while ms.query.isActive and not condition():
        assert time.monotonic() < deadline, "timed out waiting for the mirror"
        time.sleep(0.5)
