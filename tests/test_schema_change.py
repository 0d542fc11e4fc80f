"""Schema changes: every change class, and the reseed run end to end on a local database with the
real local mirror: confirm, the waits, the verification, a writer that waits on the lock, a wait
that times out, and ``db.status``/``db.recover`` during a reseed. Kill-and-resume at every step is
in ``tests/reliability/test_reseed_crash.py``."""

from __future__ import annotations

import json
import threading

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError, LandingZoneError, ReseedError
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.reseed_journal import ReseedJournal, read_reseed, write_reseed
from openmirror_nb._core.progress import WaitingForLock
from openmirror_nb._core.schema_change import classify
from openmirror_nb._core.schema_change.waits import Mirror


def schema(*fields):
    return {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": nullable, "metadata": {}} for n, t, nullable in fields],
    }


BEFORE = schema(("id", "long", False), ("name", "string", True), ("qty", "integer", False))


def kinds(changes):
    return [(c.kind, c.column, c.action) for c in changes]


@pytest.mark.parametrize(
    ("after", "keys", "delimited", "expected"),
    [
        (
            schema(
                ("id", "long", False),
                ("name", "string", True),
                ("qty", "integer", False),
                ("note", "string", True),
            ),
            ("id",),
            False,
            [("added", "note", "absorbed")],
        ),
        (
            schema(("id", "long", False), ("qty", "integer", False)),
            ("id",),
            False,
            [("dropped", "name", "absorbed")],
        ),
        (
            schema(("id", "long", False), ("name", "string", True)),
            ("id",),
            False,
            [("dropped", "qty", "reseed")],
        ),
        (
            schema(("id", "long", False), ("name", "string", True), ("qty", "long", False)),
            ("id",),
            False,
            [("type_changed", "qty", "reseed")],
        ),
        (
            schema(("id", "long", False), ("title", "string", True), ("qty", "integer", False)),
            ("id",),
            False,
            [("renamed", "name -> title", "reseed")],
        ),
        (BEFORE, ("id", "name"), False, [("key_changed", "id, name", "reseed")]),
        (
            schema(("id", "long", False), ("name", "string", False), ("qty", "integer", False)),
            ("id",),
            False,
            [("nullability_tightened", "name", "reseed")],
        ),
        (
            schema(
                ("id", "long", False),
                ("name", "string", True),
                ("qty", "integer", False),
                ("note", "string", True),
            ),
            ("id",),
            True,
            [("added", "note", "reseed")],
        ),
        (BEFORE, ("id",), False, []),
    ],
)
def test_every_change_class(after, keys, delimited, expected):
    changes = classify(before=BEFORE, after=after, keys_before=("id",), keys_after=keys, delimited=delimited)
    assert kinds(changes) == expected


def test_reseed_changes_come_first_and_a_rename_is_only_offered():
    after = schema(
        ("id", "long", False), ("title", "string", True), ("qty", "long", False), ("note", "string", True)
    )
    changes = classify(before=BEFORE, after=after, keys_before=("id",), keys_after=("id",), delimited=False)
    assert [c.action for c in changes] == ["reseed", "reseed", "absorbed"]
    rename = next(c for c in changes if c.kind == "renamed")
    assert "looks like a rename" in rename.note and "old column would stay" in rename.note


@pytest.fixture
def table(spark, tmp_path):
    """sales.orders: 50 rows (id, name string, qty int), pushed and mirrored."""
    db = om.connect(tmp_path / "db", lock_timeout=30)
    df = spark.range(50).selectExpr("id", "concat('n', id) AS name", "CAST(id AS INT) AS qty")
    db.push(df, table="sales.orders", keys=["id"], progress=False)
    om.LocalMirror(db.target.root).run_once()
    return db


def new_df(spark, rows=40):
    return spark.range(rows).selectExpr("id", "concat('n', id) AS name", "CAST(id AS BIGINT) * 10 AS qty")


def listed(db, name="orders"):
    doc = json.loads((db.target.monitoring / "tables.json").read_text())
    return [t["status"] for t in doc["tables"] if t["sourceTableName"] == name]


@pytest.mark.spark
def test_a_type_change_is_reseeded_the_mirror_drops_then_gets_the_table_back(spark, table, tmp_path):
    db = table
    before = TableFolder.of(db.storage, "sales.orders").read_state().incarnation
    df = new_df(spark)
    plan = db.plan_schema_change("sales.orders", df)
    assert plan.needs_reseed and kinds(plan.changes) == [("type_changed", "qty", "reseed")]
    assert plan.rows == 40 and plan.files == 1 and "reseed required: reload 40 rows" in repr(plan)
    assert plan.last_push_seconds and "the table's initial load took" in plan.summary
    assert "om-plan" in plan._repr_html_()
    seen = {}

    def on_step(k, what, phase):
        if phase == "done":
            seen[k] = listed(db)

    result = db.apply_schema_change(
        plan, df, confirm="sales.orders", timeout=60, progress=False, on_step=on_step
    )
    assert result.reseeded and result.verified and result.mirrored_rows == 40 == result.rows
    assert len(result.steps) == 6
    assert seen[1] == ["Replicating"] and seen[3] == []  # gone from tables.json before the reload
    assert seen[5] == ["Replicating"]  # back once the reload was mirrored
    frame = db.read_table("sales.orders", as_pandas=True).sort_values("id")
    assert list(frame["qty"]) == [i * 10 for i in range(40)] and str(frame["qty"].dtype) == "int64"
    home = TableFolder.of(db.storage, "sales.orders")
    assert home.read_state().incarnation != before and read_reseed(home) is None
    everything = [p.as_posix() for p in (tmp_path / "db").rglob("*")]
    assert not [p for p in everything if before in p]  # nothing of the old life is left


@pytest.mark.spark
def test_confirm_must_name_the_table_and_nothing_changes(spark, table, lz_hash):
    db = table
    df = new_df(spark)
    plan = db.plan_schema_change("sales.orders", df)
    before = lz_hash(db.target.landing_zone)
    with pytest.raises(
        ConfigError, match=r"confirm must be the table's name, 'sales.orders' \(got 'orders'\)"
    ):
        db.apply_schema_change(plan, df, confirm="orders")
    with pytest.raises(ConfigError, match="df is not the DataFrame the plan"):
        db.apply_schema_change(plan, df.withColumn("x", df.id), confirm="sales.orders")
    assert lz_hash(db.target.landing_zone) == before


@pytest.mark.spark
def test_an_absorbable_plan_just_pushes(spark, table):
    db = table
    df = spark.range(60).selectExpr("id", "concat('n', id) AS name", "CAST(id AS INT) AS qty", "'x' AS note")
    plan = db.plan_schema_change("sales.orders", df)
    assert not plan.needs_reseed and kinds(plan.changes) == [("added", "note", "absorbed")]
    result = db.apply_schema_change(plan, df, confirm="sales.orders", progress=False)
    assert not result.reseeded and result.push.rows == {"insert": 10, "upsert": 50}


@pytest.mark.spark
def test_a_wait_that_times_out_says_how_to_finish_and_status_shows_the_step(spark, table, monkeypatch):
    db = table
    df = new_df(spark)
    plan = db.plan_schema_change("sales.orders", df)
    monkeypatch.setattr(Mirror, "tick", lambda self: None)  # no mirror runs: it never drops the table
    with pytest.raises(
        ReseedError, match="stopped at step 3 of 6 \\(wait until the mirror drops the table\\)"
    ) as err:
        db.apply_schema_change(plan, df, confirm="sales.orders", timeout=1, progress=False)
    assert "still listed in Files/Monitoring/tables.json" in str(err.value)
    assert "db.apply_schema_change(plan, df, confirm='sales.orders') again" in str(err.value)
    status = db.status("sales.orders")
    row = status["sales.orders"]
    assert row.health == "blocked" and "reseed in progress, step 3 of 6" in row.advice[0]
    # a push meanwhile is refused, and recover says it needs the data
    with pytest.raises(LandingZoneError, match="is being reseeded \\(step 3 of 6"):
        db.push(df, table="sales.orders", progress=False)
    with pytest.raises(ReseedError, match="the reload needs the new data"):
        db.recover("sales.orders")
    monkeypatch.undo()
    result = db.apply_schema_change(plan, df, confirm="sales.orders", timeout=60, progress=False)
    assert result.verified and result.steps[0] == "wait until the mirror drops the table"


@pytest.mark.spark
def test_a_writer_waiting_on_the_lock_is_told_the_table_was_reseeded(spark, table):
    db = table
    df = new_df(spark)
    plan = db.plan_schema_change("sales.orders", df)
    writer_waits, outcome = threading.Event(), {}
    old_snapshot = spark.range(50).selectExpr("id", "concat('w', id) AS name", "CAST(id AS INT) AS qty")

    def writer():
        def progress(event):
            if isinstance(event, WaitingForLock):
                writer_waits.set()

        try:
            outcome["result"] = db.push(old_snapshot, table="sales.orders", progress=progress)
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=writer)

    def on_step(k, what, phase):
        if k == 1 and phase == "done":  # the plan is recorded, the lock held: a writer comes
            thread.start()
            assert writer_waits.wait(60)

    result = db.apply_schema_change(
        plan, df, confirm="sales.orders", timeout=60, progress=False, on_step=on_step
    )
    thread.join(120)
    assert result.verified
    assert isinstance(outcome.get("error"), LandingZoneError), outcome
    assert "was reseeded" in str(outcome["error"]) and "push again" in str(outcome["error"])
    assert db.read_table("sales.orders", as_pandas=True)["qty"].max() == 390  # the reload, untouched


@pytest.mark.spark
def test_recover_finishes_a_reseed_whose_reload_is_in(spark, table):
    db = table
    df = new_df(spark)
    plan = db.plan_schema_change("sales.orders", df)
    db.apply_schema_change(plan, df, confirm="sales.orders", wait=False, timeout=60, progress=False)
    home = TableFolder.of(db.storage, "sales.orders")
    assert read_reseed(home) is None  # wait=False ends after the reload
    # a reseed whose reload is in, but whose last steps did not run (killed while waiting)
    write_reseed(home, ReseedJournal("sales.orders", plan.digest, 4, 0.0, None, 40, "x"))
    assert "the new data is in" in db.status("sales.orders")["sales.orders"].advice[0]
    db.recover("sales.orders")
    assert read_reseed(home) is None
    assert db.status("sales.orders")["sales.orders"].health == "ok"
