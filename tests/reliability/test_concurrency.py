"""Concurrency: two writer processes publish every push exactly once; locks wait, time out, and are
taken over from a dead holder.

Two real processes (one Spark session each) push 12 change feeds each to one shared table and 12
each to a table of their own (soak runs raise it: RELIABILITY_PUSHES=50), alternating, while this process runs the local mirror, which moves
processed files away underneath them as the service does. Each push carries keys no other push
has, so every push can be found in exactly the files it reported.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import threading
import time

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import LockTimeoutError
from tests.conftest import tree_hash
from tests.reliability import workloads as w
from tests.reliability.harness import (
    assert_landing_zone_sound,
    assert_state_knows,
    kill_group,
    read_ids,
    sequence_numbers,
    spawn,
    tail,
    wait_until,
)

pytestmark = pytest.mark.spark

WORKERS = 2
# Enough for the two writers to meet on the lock many times; CI keeps inside its budget.
PUSHES = int(os.environ.get("RELIABILITY_PUSHES", "12"))
INITIAL = [(i, f"init{i}", i) for i in range(10)]


@pytest.mark.slow
def test_two_writers_publish_every_push_exactly_once(spark, tmp_path):
    root = tmp_path / "db"
    db = om.connect(root, lock_timeout=60)
    tables = (w.SHARED, *(w.own_table(i) for i in range(WORKERS)))
    for table in tables:
        db.push(w.frame(spark, INITIAL, w.SCHEMA, 1), table=table, keys=["id"])
    mirror = om.LocalMirror(root)
    mirror.run_once()
    work = tmp_path / "workers"
    work.mkdir()
    logs = [tmp_path / f"worker{i}.log" for i in range(WORKERS)]
    outs = [work / f"worker{i}.jsonl" for i in range(WORKERS)]
    procs = [
        spawn(
            ["worker", str(root), str(i), str(PUSHES), str(outs[i])],
            logs[i],
            OPENMIRROR_SHUFFLE_PARTITIONS="1",
        )
        for i in range(WORKERS)
    ]
    passes = 0
    try:
        while any(p.poll() is None for p in procs):  # replicate while they push, as the service does
            mirror.run_once()
            passes += 1
            time.sleep(0.5)
    finally:
        for p in procs:
            kill_group(p)  # no-op for a finished worker; reaps its JVM
    for p, log in zip(procs, logs, strict=True):
        assert p.returncode == 0, tail(log)
    mirror.run_once()

    records = [json.loads(line) for out in outs for line in out.read_text().splitlines()]
    assert len(records) == WORKERS * PUSHES * 2
    lz = db.target.landing_zone
    for table in tables:
        pushes = [r for r in records if r["table"] == table]
        claimed = [s for r in pushes for s in r["sequence_numbers"]]
        # every push published, each sequence number by exactly one push, none missing
        assert all(r["sequence_numbers"] for r in pushes)
        assert sorted([1, *claimed]) == sequence_numbers(lz / table) == list(range(1, len(claimed) + 2))
        for r in pushes:  # each push's rows are in exactly the files it reported, once
            names = [f.rsplit("/", 1)[-1] for f in r["files"]]
            assert sorted(i for name in names for i in read_ids(lz / table, name)) == r["keys"]
        expected = INITIAL + [
            (k, f"w{r['worker']}p{r['push']}", r["push"]) for r in pushes for k in r["keys"]
        ]
        assert_landing_zone_sound(root, table, expected, db=db)
        assert_state_knows(db, spark, table, expected, w.SCHEMA)

    shared = sorted(
        (s, r["worker"]) for r in records if r["table"] == w.SHARED for s in r["sequence_numbers"]
    )
    switches = sum(a[1] != b[1] for a, b in itertools.pairwise(shared))
    assert switches >= 2, "the two writers never contended for the shared table; the test proved nothing"
    assert passes >= 1


def _hold_lock(root, tmp_path):
    log = tmp_path / "holder.log"
    holder = spawn(["hold", str(root), w.TABLE], log)
    wait_until(lambda: "held" in log.read_text(), "the holder to take the lock", holder)
    return holder


@pytest.fixture
def seeded(spark, tmp_path):
    db = om.connect(tmp_path / "db", lock_timeout=1)
    w.setup_push(db, spark)
    return db


def _change(spark, key):
    return w.frame(spark, [(key, "c", key, 0)], w.CHANGE_SCHEMA, 1)


def test_second_writer_waits_then_gets_a_clear_error(spark, tmp_path, seeded):
    holder = _hold_lock(seeded.target.root, tmp_path)
    try:
        before = tree_hash(seeded.target.landing_zone)
        with pytest.raises(LockTimeoutError) as info:
            seeded.push(_change(spark, 900), table=w.TABLE, mode="changes", op_column="op")
        assert str(info.value) == (
            f"Table 't' is locked by another writer (held by {socket.gethostname()}:{holder.pid}) for "
            "more than 1 s; wait for it to finish or raise lock_timeout."
        )
        assert tree_hash(seeded.target.landing_zone) == before
    finally:
        kill_group(holder)


def test_lock_of_a_killed_holder_is_taken_over(spark, tmp_path, seeded):
    """flock locks belong to the holder's open file: the kernel drops them when it dies, so a
    waiting writer proceeds at once, and no stale lock file needs breaking."""
    holder = _hold_lock(seeded.target.root, tmp_path)
    db = om.connect(seeded.target.root, lock_timeout=600)
    outcome = {}

    def waiting_push():
        try:
            outcome["result"] = db.push(_change(spark, 901), table=w.TABLE, mode="changes", op_column="op")
        except BaseException as exc:
            outcome["error"] = exc

    try:
        with pytest.raises(LockTimeoutError):  # really held by the holder
            with seeded.storage.lock(w.TABLE, timeout=0.2):
                pass
        pusher = threading.Thread(target=waiting_push)
        pusher.start()
        pusher.join(timeout=3)
        assert pusher.is_alive() and not outcome, outcome  # it waits for the lock
    finally:
        kill_group(holder)  # SIGKILL: no cleanup code of the holder runs
    pusher.join(timeout=600)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"].sequence_numbers == (sequence_numbers(db.target.landing_zone / w.TABLE)[-1],)
    with seeded.storage.lock(w.TABLE, timeout=5):  # and it is free again afterwards
        pass
    om.LocalMirror(db.target.root).run_once()
    expected = [*w.BASE, (901, "c", 901)]
    assert_landing_zone_sound(db.target.root, w.TABLE, expected, db=db)
