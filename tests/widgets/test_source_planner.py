"""``SourcePlanner`` headless: a Spark catalog database of Parquet tables planned into a real local
database, driven by setting the grid's widgets and clicking, as a user would."""

from __future__ import annotations

import html

import pytest

import openmirror_nb as om
from tests.conftest import tree_hash

pytestmark = pytest.mark.spark
DATABASE = "om_planner_source"
ROWS = {
    "orders": [(1, "a"), (2, "b"), (3, "c")],
    "items": [(10, "x"), (11, "y")],
    "notes": [(7, "n"), (7, "n")],  # no column is unique: no key to suggest
}


@pytest.fixture
def shop(spark, tmp_path):
    spark.sql(f"CREATE DATABASE {DATABASE} LOCATION '{(tmp_path / 'catalog').as_uri()}'")
    try:
        for name, rows in ROWS.items():
            spark.createDataFrame(rows, "id long, v string").write.saveAsTable(f"{DATABASE}.{name}")
        yield om.Catalog(DATABASE)
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db", lock_timeout=5)


@pytest.fixture
def panel(db, shop):
    panel = om.widgets.SourcePlanner(db, shop, target_schema="shop", parallel=2)
    yield panel
    panel.close()


def badges(panel):
    return {row.original.source: row.badge.value.split(">")[-2].split("<")[0] for row in panel.grid.rows}


def is_error(panel):
    return "#c62828" in panel.status_line.value


def test_the_grid_shows_the_plan_and_suggested_keys_wait_for_an_accept(panel, db):
    rows = {row.original.source: row for row in panel.grid.rows}
    assert list(rows) == ["items", "notes", "orders"]
    orders = rows["orders"]
    assert (orders.target.value, orders.keys.value, orders.strategy.value) == (
        "shop.orders",
        "id",
        "snapshot",
    )
    assert "suggested" in orders.origin.value and orders.accept.layout.display is None
    assert "?" not in orders.rows_note.value and "3" in orders.rows_note.value  # its rows
    assert rows["notes"].keys.value == "" and "declare" in rows["notes"].problems.value  # its problem
    assert rows["notes"].accept.layout.display == "none"
    assert "2 with suggested keys to accept" in panel.status_line.value
    # under a suggested key, its evidence and risk; none under the keyless table (its problem says)
    assert "keys [id] suggested from today" in rows["orders"].notes.value
    assert "all 3 rows profiled (3 distinct values)" in rows["orders"].notes.value
    assert rows["orders"].notes in rows["orders"].box.children
    assert rows["notes"].notes not in rows["notes"].box.children

    before = tree_hash(db.target.landing_zone)
    run = panel.run()
    assert run is not None and {t.source: t.status for t in run.tables} == {
        "items": "skipped",
        "notes": "skipped",
        "orders": "skipped",
    }
    assert badges(panel) == {"items": "skipped", "notes": "skipped", "orders": "skipped"}
    assert tree_hash(db.target.landing_zone) == before  # nothing accepted: nothing written
    assert "3 skipped" in panel.summary.value


def test_accepted_keys_and_edits_change_what_runs(panel, db):
    rows = {row.original.source: row for row in panel.grid.rows}
    rows["orders"].accept.value = True
    assert "declared" in rows["orders"].origin.value
    rows["items"].target.value = "shop.things"
    rows["items"].accept.value = True
    rows["notes"].enabled.value = False
    assert "Edited" in panel.status_line.value
    planned = {t.source: t for t in panel.plan.tables}
    assert planned["orders"].key_origin == "declared" and planned["items"].table == "shop.things"
    assert planned["orders"].notes == ()  # accepted: the note about a guess goes with the guess
    assert not planned["notes"].enabled

    run = panel.run()
    assert {t.table: t.status for t in run.tables} == {
        "shop.things": "ok",
        "shop.notes": "skipped",
        "shop.orders": "ok",
    }
    assert sorted(db.tables()) == ["shop.orders", "shop.things"]
    assert badges(panel) == {"items": "ok", "notes": "skipped", "orders": "ok"}
    assert panel.last_run is run and "2 ok" in panel.summary.value and not is_error(panel)

    again = panel.run()  # a rerun: nothing changed
    assert {t.table: t.status for t in again.tables if t.status != "skipped"} == {
        "shop.things": "unchanged",
        "shop.orders": "unchanged",
    }


def test_run_button_runs_on_a_thread_with_badges_from_progress_events(panel, db):
    panel.accept_all.value = True
    assert {row.original.source: row.accept.value for row in panel.grid.rows if row.suggested} == {
        "items": True,
        "orders": True,
    }
    seen: list[str] = []
    follow = panel._on_progress
    panel._on_progress = lambda event: (seen.append(event.table), follow(event))  # type: ignore[method-assign]
    panel.run_button.click()
    run = panel.wait(120)
    assert not panel.running and run is not None
    assert {"shop.orders", "shop.items"} <= set(seen)  # the badges followed each table's push
    assert badges(panel)["orders"] == "ok" and not panel.run_button.disabled


def test_a_dry_run_writes_nothing_and_says_what_it_would_push(panel, db):
    panel.accept_all.value = True
    before = tree_hash(db.target.landing_zone)
    run = panel.dry_run_button.click() or panel.wait(120)
    assert run is not None and run.dry_run
    assert {t.source: t.status for t in run.tables} == {"items": "ok", "notes": "skipped", "orders": "ok"}
    assert tree_hash(db.target.landing_zone) == before
    assert "dry run" in panel.summary.value


def test_a_failed_table_shows_its_one_line_error_and_the_others_run(panel, db, spark):
    panel.accept_all.value = True  # the key id, which a duplicate breaks after planning
    spark.createDataFrame([(10, "x"), (10, "z")], "id long, v string").write.mode("overwrite").saveAsTable(
        f"{DATABASE}.items"
    )
    run = panel.run()
    assert {t.source: t.status for t in run.tables} == {"items": "failed", "notes": "skipped", "orders": "ok"}
    assert badges(panel)["items"] == "failed"
    reason = run.table("shop.items").reason
    assert "\n" not in reason and f"shop.items</b>: {html.escape(reason)}" in panel.summary.value
    assert is_error(panel) and "Traceback" not in panel.summary.value


def test_a_bad_target_name_is_one_line_and_writes_nothing(panel, db):
    panel.accept_all.value = True
    panel.grid.rows[0].target.value = "shop.bad/name"
    before = tree_hash(db.target.landing_zone)
    assert panel.run() is None
    assert is_error(panel) and "bad/name" in panel.status_line.value
    assert tree_hash(db.target.landing_zone) == before
    assert not panel.run_button.disabled  # the panel is usable again


def test_save_plan_writes_the_edits_and_load_plan_reads_them(panel, tmp_path):
    rows = {row.original.source: row for row in panel.grid.rows}
    rows["notes"].keys.value = "id, v"
    rows["orders"].strategy.value = "incremental"
    panel.path.value = str(tmp_path / "shop.yaml")
    panel.save()
    assert is_error(panel) and "strategy incremental reads past a watermark" in panel.status_line.value
    assert not (tmp_path / "shop.yaml").exists()
    rows["orders"].watermark.value = "id"
    panel.path.value = ""
    panel.save()
    assert is_error(panel) and "Type a path" in panel.status_line.value
    panel.path.value = str(tmp_path / "shop.yaml")
    panel.save()
    assert not is_error(panel) and "Saved the plan" in panel.status_line.value
    loaded = om.load_plan(tmp_path / "shop.yaml")
    notes, orders = loaded.table("notes"), loaded.table("orders")
    assert (notes.keys, notes.key_origin) == (("id", "v"), "declared")
    assert (orders.strategy, orders.watermark, orders.key_origin) == ("incremental", "id", "suggested")

    rows["items"].strategy.value = "append"  # insert-only: its keys go, and it needs a watermark
    assert rows["items"].keys.disabled
    rows["items"].watermark.value = "id"
    rows["notes"].keys.value = "id, id"
    panel.save()
    assert is_error(panel) and "repeat a column" in panel.status_line.value
    rows["notes"].keys.value = "id"
    panel.save()
    items = om.load_plan(tmp_path / "shop.yaml").table("items")
    assert (items.strategy, items.keys, items.key_origin, items.detect_deletes) == ("append", (), None, False)

    panel.path.value = str(tmp_path / "missing" / "dir" / "shop.yaml")
    panel.save()
    assert is_error(panel) and "Saving the plan" in panel.status_line.value


def test_an_unreadable_source_is_one_line(db):
    panel = om.widgets.SourcePlanner(db, om.Catalog("om_no_such_database"))
    assert panel.plan is None and is_error(panel) and "om_no_such_database" in panel.status_line.value
    assert panel.grid.rows == []
