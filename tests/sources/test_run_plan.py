"""``db.run_plan`` over a Spark catalog database of Parquet tables: the gates (suggested keys, no
key, disabled), parallel pushes each in its own Spark job group, a rerun that writes only the
last-checked records, a dry run that writes nothing, failures isolated to their own table (gone,
keys edited, duplicate and NULL keys) with that table's folder byte-identical, the run's views,
and an interrupted run that the next run finishes."""

from __future__ import annotations

import _thread
import dataclasses
import json
import threading

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError, PushCancelledError
from tests.conftest import tree_hash
from tests.reliability.harness import lzcheck, mirrored_rows, rows_of

pytestmark = pytest.mark.spark
DATABASE = "om_run_source"
ROWS = {
    "orders": [(1, "a"), (2, "b"), (3, "c")],
    "items": [(10, "x"), (11, "y")],
    "notes": [(7, "n")],
}


def _save(spark, name: str, rows: list[tuple[int, str]]) -> None:
    spark.createDataFrame(rows, "id long, v string").write.mode("overwrite").saveAsTable(f"{DATABASE}.{name}")


@pytest.fixture
def shop(spark, tmp_path):
    spark.sql(f"CREATE DATABASE {DATABASE} LOCATION '{(tmp_path / 'catalog').as_uri()}'")
    try:
        for name, rows in ROWS.items():
            _save(spark, name, rows)
        yield om.Catalog(DATABASE)
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")


def _declared(plan: om.SourcePlan, **keys: tuple[str, ...]) -> om.SourcePlan:
    """The plan with every table's keys declared (``id`` unless given)."""
    tables = [
        dataclasses.replace(t, keys=keys.get(t.source, ("id",)), key_origin="declared") for t in plan.tables
    ]
    return dataclasses.replace(plan, tables=tables)


def _mirror(db, table: str) -> list[tuple]:
    db.local_mirror.run_once()
    return mirrored_rows(db, table, ("id", "v"))


def _expected(rows: list[tuple[int, str]]) -> list[tuple]:
    return rows_of([{"id": i, "v": v} for i, v in rows], ("id", "v"))


def _lz(db):
    return db.target.landing_zone


def test_suggested_keys_wait_for_acceptance_then_every_table_is_mirrored(shop, db):
    plan = db.plan_sources(shop, target_schema="shop")
    assert {t.key_origin for t in plan.tables} == {"suggested"}
    before = tree_hash(_lz(db))
    held = db.run_plan(plan, parallel=2)
    assert [t.status for t in held.tables] == ["skipped"] * 3
    assert all("accept_suggested=True" in t.reason for t in held.tables)
    assert tree_hash(_lz(db)) == before  # a skipped table writes nothing

    run = db.run_plan(plan, parallel=2, accept_suggested=True)
    assert {t.table: (t.status, t.rows) for t in run.tables} == {
        "shop.items": ("ok", {"initial": 2}),
        "shop.notes": ("ok", {"initial": 1}),
        "shop.orders": ("ok", {"initial": 3}),
    }
    assert run.ok and run.counts["ok"] == 3
    for name, rows in ROWS.items():
        assert _mirror(db, f"shop.{name}") == _expected(rows)
        assert lzcheck(_lz(db), f"shop.{name}") == rows_of([{"id": i, "v": v} for i, v in rows])


def test_a_rerun_publishes_only_what_changed(shop, db, spark):
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    db.run_plan(plan, parallel=3)
    data = {name: tree_hash(_lz(db) / "shop.schema" / name) for name in ROWS}
    logs = {
        name: json.loads((_lz(db) / "shop.schema" / name / "_openmirror" / "freshness.json").read_text())
        for name in ROWS
    }

    again = db.run_plan(plan, parallel=3)
    assert [t.status for t in again.tables] == ["unchanged"] * 3
    assert all(t.push and t.push.sequence_numbers == () for t in again.tables)
    for name in ROWS:  # only the last-checked record and the freshness check were written
        folder = _lz(db) / "shop.schema" / name
        checked = folder / "_openmirror" / "checked.json"
        assert checked.is_file()
        checked.unlink()
        log = folder / "_openmirror" / "freshness.json"
        found = json.loads(log.read_text())
        assert found["files"] == logs[name]["files"] and len(found["checks"]) == 1
        log.write_text(json.dumps(logs[name], separators=(",", ":")))
        assert tree_hash(folder) == data[name]

    changed = [(1, "a"), (2, "B"), (4, "d")]  # 2 updated, 3 deleted, 4 inserted
    _save(spark, "orders", changed)
    third = db.run_plan(plan, parallel=3)
    assert {t.table: t.status for t in third.tables} == {
        "shop.items": "unchanged",
        "shop.notes": "unchanged",
        "shop.orders": "ok",
    }
    assert third.table("shop.orders").rows == {"insert": 1, "delete": 1, "upsert": 1}
    assert _mirror(db, "shop.orders") == _expected(changed)


def test_a_dry_run_writes_nothing_and_says_what_it_would_push(shop, db, spark):
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    before = tree_hash(db.target.root)
    dry = db.run_plan(plan, dry_run=True)
    assert tree_hash(db.target.root) == before
    assert dry.dry_run and "dry run" in repr(dry)
    assert dry.table("shop.orders").reason == "would load 3 rows (the table's initial load)"
    db.run_plan(plan)
    _save(spark, "orders", [(1, "a")])
    before = tree_hash(db.target.root)
    dry = db.run_plan(plan, dry_run=True)
    assert tree_hash(db.target.root) == before
    assert dry.table("shop.orders").reason == (
        "would diff 1 rows against the mirrored table and publish what changed"
    )


def test_each_push_runs_on_its_own_thread_in_its_own_job_group(shop, db):
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    events: list[om.ProgressEvent] = []
    threads: dict[str, set[str]] = {}
    lock = threading.Lock()

    def listen(event: om.ProgressEvent) -> None:
        with lock:
            events.append(event)
            threads.setdefault(event.table, set()).add(threading.current_thread().name)

    db.run_plan(plan, parallel=3, progress=listen)
    finished = {e.table: e for e in events if isinstance(e, om.Finished)}
    assert sorted(finished) == ["shop.items", "shop.notes", "shop.orders"]
    # each push counts the Spark jobs of its own group only: an initial load runs a few
    assert all(0 < e.jobs < 20 for e in finished.values())
    pushing = {t: {n for n in names if n.startswith("openmirror-plan")} for t, names in threads.items()}
    assert all(len(names) == 1 for names in pushing.values())  # one thread per push...
    assert len(set().union(*pushing.values())) > 1  # ...and more than one thread at work


def test_a_table_s_failure_is_its_own_and_its_folder_is_untouched(shop, db, spark):
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    db.run_plan(plan)
    folders = {n: tree_hash(_lz(db) / "shop.schema" / n) for n in ROWS}
    _save(spark, "items", [(12, "z"), (13, "z")])
    spark.sql(f"DROP TABLE {DATABASE}.notes")
    edited = _declared(plan, items=("v",), orders=("id", "v"))  # orders' keys edited; items' v repeats
    _save(spark, "orders", [(1, "a"), (2, "b"), (3, "c"), (5, "e")])
    db.drop("shop.items")
    run = db.run_plan(edited, parallel=2)
    status = {t.table: t.status for t in run.tables}
    assert status == {"shop.items": "failed", "shop.notes": "failed", "shop.orders": "failed"}
    reasons = {t.table: t.reason for t in run.tables}
    assert "'notes'" in reasons["shop.notes"] and "enabled: false" in reasons["shop.notes"]
    assert "['id']" in reasons["shop.orders"] and "schema wizard" in reasons["shop.orders"]
    assert "'z'" in reasons["shop.items"] and "duplicate" in reasons["shop.items"].lower()
    assert all("\n" not in r for r in reasons.values())
    for name in ("notes", "orders"):
        assert tree_hash(_lz(db) / "shop.schema" / name) == folders[name]
    assert tree_hash(_lz(db) / "shop.schema" / "items") == "absent"
    text, page = repr(run), run._repr_html_()
    for t in run.tables:
        assert f"FAILED {t.table} ({t.source}): {t.reason}" in text
        assert t.table in page
    assert run.to_pandas()["status"].tolist() == ["failed", "failed", "failed"]


def test_a_failure_does_not_stop_the_others_and_null_keys_fail_alone(shop, db, spark):
    spark.createDataFrame([(None, "a"), (2, "b")], "id long, v string").write.mode("overwrite").saveAsTable(
        f"{DATABASE}.notes"
    )
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    run = db.run_plan(plan, parallel=1)
    assert {t.table: t.status for t in run.tables} == {
        "shop.items": "ok",
        "shop.notes": "failed",
        "shop.orders": "ok",
    }
    assert "NULL" in run.table("shop.notes").reason
    assert tree_hash(_lz(db) / "shop.schema" / "notes") == "absent"
    assert _mirror(db, "shop.orders") == _expected(ROWS["orders"])


def test_disabled_keyless_and_troubled_tables_are_skipped_with_the_reason(shop, db):
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    tables = [
        dataclasses.replace(plan.tables[0], enabled=False),
        dataclasses.replace(plan.tables[1], keys=(), key_origin=None),
        dataclasses.replace(plan.tables[2], problems=("a problem; its fix",)),
    ]
    run = db.run_plan(dataclasses.replace(plan, tables=tables))
    assert [t.status for t in run.tables] == ["skipped"] * 3
    assert run.tables[0].reason == "disabled in the plan (enabled: false)"
    assert "no key" in run.tables[1].reason and "strategy: append" in run.tables[1].reason
    assert "a problem; its fix" in run.tables[2].reason
    assert run.ok and db.tables() == []


def test_bad_arguments_are_refused_in_one_line(shop, db):
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    with pytest.raises(ConfigError, match=r"parallel=0 must be"):
        db.run_plan(plan, parallel=0)
    with pytest.raises(ConfigError, match=r"takes a SourcePlan .* not str"):
        db.run_plan("shop.yaml")


def test_an_interrupted_run_is_finished_by_the_next(shop, db, spark):
    for i in range(3):
        _save(spark, f"more{i}", [(i, "m")])
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    fired = threading.Event()

    def interrupt_after_first(event: om.ProgressEvent) -> None:
        if isinstance(event, om.Finished) and not fired.is_set():
            fired.set()
            _thread.interrupt_main()  # what the notebook's stop button does

    with pytest.raises(PushCancelledError, match="Run the plan again"):
        db.run_plan(plan, parallel=1, progress=interrupt_after_first)
    assert 1 <= len(db.tables()) < len(plan.tables)
    for table in db.tables():  # what ran is whole: nothing staged is left behind
        assert not (_lz(db) / table.replace(".", ".schema/") / "_openmirror" / "staging").exists()
    rerun = db.run_plan(plan, parallel=2)
    assert rerun.ok and {t.status for t in rerun.tables} <= {"ok", "unchanged"}
    assert rerun.counts["unchanged"] >= 1
    assert _mirror(db, "shop.orders") == _expected(ROWS["orders"])


class Killed(BaseException):
    pass


def test_an_incremental_run_that_died_after_deciding_is_finished_by_the_next(shop, db, spark, monkeypatch):
    from datetime import datetime

    def save(rows):
        frame = spark.createDataFrame(
            [(i, v, datetime(2024, 5, day)) for i, v, day in rows], "id long, v string, updated_at timestamp"
        )
        frame.write.mode("overwrite").saveAsTable(f"{DATABASE}.stamped")

    save([(1, "a", 1), (2, "b", 2), (3, "c", 3)])
    plan = _declared(db.plan_sources(shop, target_schema="shop"))
    stamped = dataclasses.replace(
        plan.table("stamped"), strategy="incremental", watermark="updated_at", detect_deletes=True
    )
    plan = dataclasses.replace(plan, tables=[stamped])
    assert db.run_plan(plan).table("stamped").rows == {"initial": 3}
    save([(1, "a", 1), (2, "B", 9), (4, "d", 8)])  # 2 updated, 3 deleted, 4 inserted

    def die(step: str) -> None:
        if step == "before_state_commit":
            raise Killed

    with monkeypatch.context() as patch:
        patch.setattr("openmirror_nb._core.landing_zone.publish.crash_point", die)
        with pytest.raises(Killed):
            db.run_plan(plan)
    rerun = db.run_plan(plan)  # settles the decided push first: its watermark is the one read past
    assert rerun.table("stamped").status == "unchanged", repr(rerun)
    folder = _lz(db) / "shop.schema" / "stamped"
    assert sorted(p.name for p in folder.glob("*.parquet")) == [
        "00000000000000000001.parquet",
        "00000000000000000002.parquet",
    ]
    assert _mirror(db, "shop.stamped") == _expected([(1, "a"), (2, "B"), (4, "d")])
    lzcheck(_lz(db), "shop.stamped")
