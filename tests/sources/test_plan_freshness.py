"""Freshness in a plan: ``freshness_goal`` saved and loaded back, a bad one refused in one line
before anything runs, a run storing each table's goal (and leaving one the plan does not set);
each table's push carrying when its read began."""

from __future__ import annotations

import dataclasses
import time

import pyarrow as pa
import pytest
from deltalake import write_deltalake

import openmirror_nb as om
from openmirror_nb._core.landing_zone.freshness_log import SourceTimes, read_goals, read_log, write_goal
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.sources import plan_goals, strategies
from openmirror_nb._core.sources.runner import Runner
from tests.conftest import tree_hash

ORDERS = om.PlannedTable("orders", "shop.orders", ("id",), "declared", "snapshot", None, True, True, 3, ())
EVENTS = om.PlannedTable("events", "shop.events", (), None, "append", "id", False, True, None, ())


def _plan(*tables: om.PlannedTable, source: om.Source | None = None) -> om.SourcePlan:
    return om.SourcePlan(source or om.Catalog("lakehouse.shop"), "shop", list(tables))


def _key(db: om.MirroredDatabase, table: str) -> str:
    return TableFolder.of(db.storage, table).lock_name


def test_a_goal_is_saved_loads_back_and_a_table_without_one_writes_none(tmp_path):
    plan = _plan(
        dataclasses.replace(ORDERS, freshness_goal=300), dataclasses.replace(EVENTS, freshness_goal=0.5)
    )
    plan.save(tmp_path / "shop.yaml")
    text = (tmp_path / "shop.yaml").read_text(encoding="utf-8")
    assert "  freshness_goal: 300\n" in text and "  freshness_goal: 0.5\n" in text
    loaded = om.load_plan(tmp_path / "shop.yaml")
    assert [t.freshness_goal for t in loaded.tables] == [300, 0.5] and loaded.tables == plan.tables
    loaded.save(tmp_path / "again.yaml")
    assert (tmp_path / "again.yaml").read_bytes() == (tmp_path / "shop.yaml").read_bytes()
    _plan(ORDERS).save(tmp_path / "none.yaml")
    assert "freshness_goal" not in (tmp_path / "none.yaml").read_text(encoding="utf-8").split("\n# ")[-1]
    assert om.load_plan(tmp_path / "none.yaml").tables[0].freshness_goal is None
    assert "freshness goal: 300 s" in repr(plan)


@pytest.mark.parametrize("bad", [-5, 0, "soon", True, [300], ".inf"], ids=str)
def test_a_bad_goal_is_refused_in_one_line_before_anything_runs(tmp_path, bad):
    db = om.connect(tmp_path / "db")
    before = tree_hash(db.target.root)
    _plan(ORDERS).save(tmp_path / "shop.yaml")
    text = (tmp_path / "shop.yaml").read_text(encoding="utf-8")
    value = bad if bad == ".inf" else repr(bad).lower().replace("'", "")
    (tmp_path / "shop.yaml").write_text(text + f"  freshness_goal: {value}\n", encoding="utf-8")
    with pytest.raises(om.ConfigError) as refused:
        db.run_plan(om.load_plan(tmp_path / "shop.yaml"))
    line = str(refused.value)
    assert "\n" not in line and "table 'orders': freshness_goal " in line and "freshness_goal: 300" in line
    assert tree_hash(db.target.root) == before
    with pytest.raises(om.ConfigError, match="freshness_goal -5 is not a number of seconds above 0"):
        dataclasses.replace(ORDERS, freshness_goal=-5)


def test_a_run_stores_changed_goals_only_and_leaves_those_the_plan_does_not_set(tmp_path, monkeypatch):
    db = om.connect(tmp_path / "db")
    write_goal(db.storage, _key(db, "shop.events"), 60)  # db.set_freshness_goal's
    written = []
    monkeypatch.setattr(plan_goals, "write_goal", lambda s, k, v: (written.append(k), write_goal(s, k, v)))
    off = dataclasses.replace(ORDERS, source="old", table="shop.old", enabled=False, freshness_goal=5)
    tables = [dataclasses.replace(ORDERS, freshness_goal=300), EVENTS, off]
    plan_goals.store_goals(db.storage, tables)
    plan_goals.store_goals(db.storage, tables)  # the same goals again: nothing written
    assert read_goals(db.storage) == {_key(db, "shop.orders"): 300.0, _key(db, "shop.events"): 60.0}
    assert written == [_key(db, "shop.orders")]


def test_an_incremental_or_append_push_carries_the_read_time(tmp_path):
    runner = Runner(
        om.connect(tmp_path / "db").storage, om.Catalog("x"), 5, om.PartnerInfo(), False, False, 0, None
    )
    assert strategies._request(runner, EVENTS, append=True).source_times is None  # the push's own start
    timed = dataclasses.replace(runner, read_at=1234.5)
    request = strategies._request(
        timed, EVENTS, mode="changes", feed=om.FeedOptions(convention="sys_op", op_column="op")
    )
    assert (
        request.source_times
        == SourceTimes.read_at(1234.5)
        == SourceTimes("read", 1234.5, 1234.5, skew=0.0, skew_error=0.0)
    )


@pytest.mark.spark
def test_a_run_stores_the_goal_and_each_file_says_when_its_table_was_read(spark, tmp_path):
    write_deltalake(str(tmp_path / "lake" / "orders"), pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    db = om.connect(tmp_path / "db", lock_timeout=5)
    plan = _plan(dataclasses.replace(ORDERS, freshness_goal=120), source=om.DeltaFolder(tmp_path / "lake"))
    started = time.time()
    run = db.run_plan(plan, progress=False)
    ended = time.time()
    assert [t.status for t in run.tables] == ["ok"]
    assert read_goals(db.storage) == {_key(db, "shop.orders"): 120.0}
    files = read_log(db.storage, TableFolder.of(db.storage, "shop.orders").internal).files
    assert files and all(f.source.kind == "read" and f.source.skew == 0 for f in files)
    assert all(started <= f.source.oldest == f.source.newest <= f.published <= ended for f in files)
