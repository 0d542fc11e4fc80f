"""The pushes of the reliability tests, run in the test process or in a subprocess that gets killed.

Entry points for subprocesses (``python -m tests.reliability.workloads ...`` from the repo root):

- ``push KIND DB``: one push of a crash-matrix kind (``initial``, ``changes``, ``diff``, or
  ``changes_in_one_task``: a feed small enough to be ordered in one task, whose files are kept
  as its key-state delta, ``pipeline.keystate.feed_state``).
  ``OPENMIRROR_CRASH_AT`` (set by the parent) makes it SIGKILL itself at a publish step;
  ``RELIABILITY_GATE`` (a glob below the landing zone; empty: at once) makes its Spark tasks block
  as soon as the glob matches, after touching ``RELIABILITY_GATE_MARK``, so the parent can kill it
  mid-job.
- ``recover DB``: roll a journaled push of table ``t`` forward (no Spark), crashing where
  ``OPENMIRROR_CRASH_AT`` says.
- ``worker DB ID PUSHES OUT``: a concurrency worker; one Spark session, ``PUSHES`` change pushes
  to the shared table and as many to its own table, one JSON line per push in ``OUT``.
- ``hold DB TABLE``: take the table lock, print ``held``, and keep it until killed.
- ``drop DB``: drop table ``t`` (no Spark), crashing where ``OPENMIRROR_CRASH_AT`` says.

The expected tables are computed here in plain Python, independently of the library.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

TABLE = "t"
SCHEMA = "id long, v string, n long"
CHANGE_SCHEMA = f"{SCHEMA}, op int"
KINDS = ("initial", "changes", "diff")

Row = tuple[int, str | None, int | None]
Change = tuple[int, str | None, int | None, int]

# The first snapshot (initial load) of table ``t``.
BASE: list[Row] = [(i, f"v{i}", i * 10) for i in range(60)]
_INSERTED: list[Row] = [(i, f"new{i}", i) for i in range(100, 120)]
_UPDATED: list[Row] = [(i, f"u{i}", -i) for i in range(10)]
_DELETED = range(50, 55)
# A change feed (row-marker convention) and a second snapshot with the same net effect.
CHANGES: list[Change] = (
    [(*r, 0) for r in _INSERTED] + [(*r, 4) for r in _UPDATED] + [(i, f"v{i}", i * 10, 2) for i in _DELETED]
)
# The push every crash trial ends with: inserts, a delete and an update (marker 1).
NEXT: list[Change] = [(200 + i, f"next{i}", 1000 + i, 0) for i in range(5)] + [
    (1, None, None, 2),
    (20, "again", 7, 1),
]


def apply_changes(rows: list[Row], changes: list[Change]) -> list[Row]:
    """What a faithful mirror holds after ``changes``: 0 insert, 1/4 insert-or-replace, 2 delete."""
    table = {r[0]: r for r in rows}
    for key, v, n, marker in changes:
        if marker == 0:
            assert key not in table, f"test data inserts existing key {key}"
            table[key] = (key, v, n)
        elif marker in (1, 4):
            table[key] = (key, v, n)
        elif marker == 2:
            table.pop(key, None)
        else:
            raise AssertionError(f"bad marker {marker} in test data")
    return sorted(table.values())


SNAPSHOT_2: list[Row] = apply_changes(BASE, CHANGES)


def after_crashed_push(kind: str) -> list[Row]:
    """The table once the push of ``kind`` is published."""
    return BASE if kind == "initial" else SNAPSHOT_2


def final_rows(kind: str) -> list[Row]:
    """The table after the crashed push (recovered or re-run) and then ``NEXT``."""
    return apply_changes(after_crashed_push(kind), NEXT)


def frame(spark: Any, rows: list[Any], schema: str, partitions: int) -> Any:
    """A DataFrame of local rows in exactly ``partitions`` partitions."""
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), schema)


def _gated(df: Any, lz: str, pattern: str, mark: str) -> Any:
    """``df`` whose tasks block for good once ``pattern`` matches below ``lz`` (an empty pattern:
    at once; ``glob#N``: once the glob matches N paths), after touching ``mark``; until then
    values pass through unchanged."""
    from pyspark.sql import functions as F

    glob_, _, least = pattern.partition("#")

    def passthrough(value: Any) -> Any:
        import glob
        import os
        import time

        if not pattern or len(glob.glob(os.path.join(lz, glob_))) >= int(least or 1):
            Path(mark).touch()
            while True:
                time.sleep(1)
        return value

    return df.withColumn("n", F.udf(passthrough, "long")(F.col("n")))


def setup_push(db: Any, spark: Any) -> Any:
    """The initial load every non-initial crash trial starts from."""
    return db.push(frame(spark, BASE, SCHEMA, 2), table=TABLE, keys=["id"], rows_per_file=20)


def crash_push(db: Any, spark: Any, kind: str, *, gate: tuple[str, str] | None = None) -> Any:
    """The push a crash trial kills (and the user re-runs when nothing was journaled).

    Each publishes at least two files, so a kill can fall between two renames; but a feed in one
    task, which is one file (and read from Parquet files, so Spark knows it is small).
    """
    if kind == "changes_in_one_task":
        feed = Path(db.target.root).parent / "feed-in-one-task"
        if not feed.exists():  # the same files for the killed push and the user's re-run
            frame(spark, CHANGES, CHANGE_SCHEMA, 1).write.parquet(str(feed))
        frame_ = spark.read.parquet(str(feed))
        if gate is not None:
            frame_ = _gated(frame_, str(db.target.landing_zone), *gate)
        return db.push(frame_, table=TABLE, mode="changes", op_column="op")
    if kind == "initial":
        df, schema, parts = BASE, SCHEMA, 2
    elif kind == "changes":
        df, schema, parts = CHANGES, CHANGE_SCHEMA, 3
    elif kind == "diff":
        df, schema, parts = SNAPSHOT_2, SCHEMA, 2
    else:
        raise ValueError(kind)
    frame_ = frame(spark, df, schema, parts)
    if gate is not None:
        frame_ = _gated(frame_, str(db.target.landing_zone), *gate)
    if kind == "changes":
        # Adaptive execution deals a feed this small into one file; with it off, a change feed
        # gets a file per partition of its source (three), as a larger feed does.
        conf = "spark.sql.adaptive.coalescePartitions.enabled"
        spark.conf.set(conf, "false")
        try:
            return db.push(frame_, table=TABLE, mode="changes", op_column="op", rows_per_file=10)
        finally:
            spark.conf.unset(conf)
    return db.push(frame_, table=TABLE, keys=["id"], rows_per_file=20 if kind == "initial" else 10)


# A reseed after the table is dropped: column n changes type (long -> double), which only a new
# life of the table can take.
RESEED_SCHEMA = "id long, v string, n double"
RESEED: list[tuple[int, str, float]] = [(i, f"r{i}", i / 2) for i in range(0, 90, 3)]


def reseed_push(db: Any, spark: Any) -> Any:
    return db.push(frame(spark, RESEED, RESEED_SCHEMA, 1), table=TABLE, keys=["id"])


def next_push(db: Any, spark: Any) -> Any:
    """The next push after a crash: a change feed that names no keys (the table has them)."""
    return db.push(frame(spark, NEXT, CHANGE_SCHEMA, 1), table=TABLE, mode="changes", op_column="op")


# Concurrency workers ----------------------------------------------------------------------------

SHARED = "shared"
KEYS_PER_PUSH = 3


def worker_keys(worker: int, push: int) -> list[int]:
    """Keys unique to one push of one worker (and never in the initial loads, which use 0..9)."""
    return [100_000 + worker * 10_000 + push * 10 + j for j in range(KEYS_PER_PUSH)]


def own_table(worker: int) -> str:
    return f"own{worker}"


def _wait_for(paths: list[Path], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        if time.monotonic() > deadline:
            raise TimeoutError(f"barrier: {paths} did not all appear")
        time.sleep(0.05)


def worker(root: str, worker_id: int, pushes: int, out: str, workers: int = 2) -> None:
    """Alternate change pushes to the shared table and to this worker's own table."""
    import openmirror_nb as om
    from openmirror_nb._core.runtime import get_spark

    spark = get_spark()
    db = om.connect(root, lock_timeout=600)
    spark.range(1).collect()  # warm up before the barrier so both workers start pushing together
    barrier = Path(out).parent
    (barrier / f"ready-{worker_id}").touch()
    _wait_for([barrier / f"ready-{w}" for w in range(workers)], timeout=600)
    with open(out, "a", encoding="utf-8") as log:
        for push in range(pushes):
            for table in (SHARED, own_table(worker_id)):
                keys = worker_keys(worker_id, push)
                rows = [(k, f"w{worker_id}p{push}", push, 0) for k in keys]
                result = db.push(
                    frame(spark, rows, CHANGE_SCHEMA, 1), table=table, mode="changes", op_column="op"
                )
                record = {
                    "worker": worker_id,
                    "push": push,
                    "table": table,
                    "keys": keys,
                    "sequence_numbers": list(result.sequence_numbers),
                    "files": list(result.files),
                    "seconds": round(result.seconds, 3),
                }
                log.write(json.dumps(record) + "\n")
                log.flush()
                os.fsync(log.fileno())


def hold(root: str, table: str) -> None:
    """Hold ``table``'s lock until killed."""
    import openmirror_nb as om

    db = om.connect(root)
    with db.storage.lock(table, timeout=60):
        print("held", flush=True)
        while True:
            time.sleep(1)


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "push":
        import openmirror_nb as om
        from openmirror_nb._core.runtime import get_spark

        kind, root = args
        db = om.connect(root, lock_timeout=120)
        pattern = os.environ.get("RELIABILITY_GATE")
        gate = (pattern, os.environ["RELIABILITY_GATE_MARK"]) if pattern is not None else None
        crash_push(db, get_spark(), kind, gate=gate)
    elif command == "recover":
        import openmirror_nb as om

        (root,) = args
        om.connect(root, lock_timeout=120).recover(TABLE)
    elif command == "worker":
        root, worker_id, pushes, out = args
        worker(root, int(worker_id), int(pushes), out)
    elif command == "hold":
        hold(*args)
    elif command == "drop":
        import openmirror_nb as om

        (root,) = args
        om.connect(root, lock_timeout=120).drop(TABLE)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
