"""A push killed with SIGKILL mid-publish is rolled forward by the next push; a held lock times out."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import LockTimeoutError
from openmirror_nb._core.landing_zone import TableFolder
from tests.reliability.harness import child_env

pytestmark = pytest.mark.spark

CHILD = """
import sys
import openmirror_nb as om
from openmirror_nb._core.runtime import get_spark
db = om.connect(sys.argv[1])
df = get_spark().range(0, 3000, numPartitions=3).selectExpr("id", "id * 10 as v")
db.push(df, table="t", keys=["id"], rows_per_file=1000)
"""


@pytest.mark.parametrize("step", ["after_staging", "after_journal", "between_renames", "before_state_commit"])
def test_killed_push_then_next_push(spark, tmp_path, step):
    root = tmp_path / "db"
    # as the crash matrix's children: a fast-starting driver (C1 JIT, and the suite's class archive
    # when scripts/test made one), loopback only
    env = child_env(OPENMIRROR_CRASH_AT=step)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(root)], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    db = om.connect(root)
    folder = db.target.landing_zone / "t"
    journaled = step != "after_staging"
    assert db.storage.exists(TableFolder.of(db.storage, "t").journal_path) == journaled
    if journaled:
        assert db.recover("t")
    else:  # nothing the service reads: the folder holds only the dead push's staging
        assert [p.name for p in folder.iterdir()] == ["_openmirror"]
        result = db.push(
            spark.range(0, 3000, numPartitions=3).selectExpr("id", "id * 10 as v"),
            table="t",
            keys=["id"],
            rows_per_file=1000,
        )
        assert [r.split("/")[-2] for r in result.removed] == ["staging", "keystate"]  # reported
    names = sorted(p.name for p in folder.iterdir() if p.name[0].isdigit())
    assert names == [f"{i:020d}.parquet" for i in (1, 2, 3)]
    ids = sorted(i for n in names for i in pq.read_table(folder / n).column("id").to_pylist())
    assert ids == list(range(3000))  # every row once: nothing lost, nothing doubled
    state = json.loads((folder / "_openmirror" / "state.json").read_text())
    assert state["last_sequence_number"] == 3
    result = db.push(
        spark.createDataFrame([(5, 1, 4)], "id long, v long, op int"),
        table="t",
        mode="changes",
        op_column="op",
    )
    assert result.sequence_numbers == (4,)


def test_second_writer_times_out_with_a_clear_error(spark, tmp_path):
    db = om.connect(tmp_path / "db", lock_timeout=1)
    held, release = threading.Event(), threading.Event()

    def hold():
        with db.storage.lock("t", timeout=5):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        with pytest.raises(LockTimeoutError, match="locked by another writer"):
            db.push(spark.range(3), table="t", keys=["id"])
        assert not (db.target.landing_zone / "t").exists()
    finally:
        release.set()
        holder.join()
    assert db.push(spark.range(3), table="t", keys=["id"]).sequence_numbers == (1,)
