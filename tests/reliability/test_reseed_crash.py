"""A reseed killed (SIGKILL) after each of its six steps, then continued by the same call in
another process: the table ends holding exactly the new DataFrame, mirrored and verified, and no
path of the old life of the table is left anywhere in the database."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.publish import CRASH_ENV
from openmirror_nb._core.landing_zone.reseed_journal import read_reseed
from tests.reliability.harness import REPO, child_env

pytestmark = pytest.mark.spark

NEW = "spark.range(40).selectExpr('id', \"concat('n', id) AS name\", 'CAST(id AS BIGINT) * 10 AS qty')"
CHILD = textwrap.dedent(
    f"""
    import sys
    import openmirror_nb as om
    from openmirror_nb._core.runtime import get_spark
    spark = get_spark()
    db = om.connect(sys.argv[1], lock_timeout=60)
    df = {NEW}
    plan = db.plan_schema_change("sales.orders", df)
    db.apply_schema_change(plan, df, confirm="sales.orders", timeout=120, progress=False)
    print("finished")
    """
)


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5, 6])
def test_a_reseed_killed_after_any_step_is_finished_by_the_same_call(spark, tmp_path, step):
    root = tmp_path / "db"
    db = om.connect(root, lock_timeout=60)
    old = spark.range(50).selectExpr("id", "concat('n', id) AS name", "CAST(id AS INT) AS qty")
    db.push(old, table="sales.orders", keys=["id"], progress=False)
    om.LocalMirror(root).run_once()
    home = TableFolder.of(db.storage, "sales.orders")
    life = home.read_state().incarnation

    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(root)],
        cwd=REPO,
        env=child_env(**{CRASH_ENV: f"reseed_step_{step}"}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == -9, child.stdout + child.stderr  # killed right after the step
    journal = read_reseed(home)
    assert journal is not None and journal.done == step
    row = db.status("sales.orders")["sales.orders"]
    assert any(f"reseed in progress, step {min(step + 1, 6)} of 6" in line for line in row.advice)

    df = eval(NEW, {"spark": spark})
    # a new kernel has lost the plan: making it again gives the one the journal keeps (the old
    # table, its schema and state, may be gone by now)
    plan = db.plan_schema_change("sales.orders", df)
    assert plan.digest == journal.plan
    result = db.apply_schema_change(plan, df, confirm="sales.orders", timeout=120, progress=False)
    assert result.verified and result.mirrored_rows == 40
    assert len(result.steps) == 6 - step
    mirrored = db.read_table("sales.orders", as_pandas=True).sort_values("id")
    assert list(mirrored["id"]) == list(range(40)) and list(mirrored["qty"]) == [i * 10 for i in range(40)]
    assert read_reseed(home) is None
    assert home.read_state().incarnation != life
    assert not [p for p in root.rglob("*") if life in p.as_posix()]
