"""``SchemaWizard`` headless: built on a real local database (pushed with Spark, replicated by the
real local mirror, which ``apply_schema_change`` runs itself for a local database), driven by
typing into the name box and clicking, as a user would. A failing apply is injected where the
failure must come at a chosen step; resuming it runs the real one. One test uses fakes only."""

from __future__ import annotations

import re

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ReseedError
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.reseed_journal import STEPS, read_reseed
from openmirror_nb._core.schema_change import Change, SchemaPlan
from openmirror_nb._core.schema_change.waits import Mirror


@pytest.fixture
def db(spark, tmp_path):
    """sales.orders: 50 rows (id, name string, qty int), pushed and mirrored."""
    db = om.connect(tmp_path / "db", lock_timeout=30)
    df = spark.range(50).selectExpr("id", "concat('n', id) AS name", "CAST(id AS INT) AS qty")
    db.push(df, table="sales.orders", keys=["id"], progress=False)
    om.LocalMirror(db.target.root).run_once()
    return db


@pytest.fixture
def retyped(spark):
    """40 rows, qty now a bigint (a reseed) and a new column (absorbed)."""
    return spark.range(40).selectExpr(
        "id", "concat('n', id) AS name", "CAST(id AS BIGINT) * 10 AS qty", "'x' AS note"
    )


@pytest.fixture
def wizards():
    made = []

    def make(*args, **kwargs):
        made.append(om.widgets.SchemaWizard(*args, **kwargs))
        return made[-1]

    yield make
    for wizard in made:
        wizard.close()


def plan_row(wizard, column: str) -> str:
    return wizard.plan_view.value.split(f"<code>{column}</code>", 1)[0].rsplit("<tr>", 1)[1]


def steps(wizard) -> list[str]:
    return [re.sub("</?b>", "", line) for line in re.findall("<li[^>]*>(.*?)</li>", wizard.steps_view.value)]


def shown(w) -> bool:
    return w.layout.display != "none"


@pytest.mark.spark
def test_the_plan_shows_each_change_with_its_class_and_the_cost(db, retyped, wizards):
    wizard = wizards(db, "sales.orders", retyped)
    assert wizard.plan.needs_reseed
    assert "reseed" in plan_row(wizard, "qty") and "type changed" in plan_row(wizard, "qty")
    assert "absorbed" in plan_row(wizard, "note") and "added" in plan_row(wizard, "note")
    assert "reseed required: reload 40 rows in 1 file(s)" in wizard.plan_view.value
    assert steps(wizard) == [f"step {k} of 6: {what} — to do" for k, what in enumerate(STEPS, 1)]
    assert not shown(wizard.progress.widget) and not shown(wizard.resume_button)
    assert "openmirror-schema-wizard" in wizard._dom_classes
    assert {"_model_module", "children"} <= set(wizard.get_state())  # a front end can show it


@pytest.mark.spark
def test_run_is_disabled_until_the_exact_name_is_typed(db, retyped, wizards):
    wizard = wizards(db, "sales.orders", retyped)
    assert shown(wizard.name_box) and wizard.run_button.description == "Run reseed"
    assert "<code>sales.orders</code>" in wizard.confirm_note.value
    for typed in ("", "orders", "sales.order", "Sales.Orders", " sales.orders", "sales.orders "):
        wizard.name_box.value = typed
        assert wizard.run_button.disabled, typed
    assert "Type sales.orders to confirm" in wizard.status_line.value
    wizard.run_button.click()  # a disabled button's click() still calls the handler: it refuses
    assert wizard.result is None and read_reseed(TableFolder.of(db.storage, "sales.orders")) is None
    wizard.name_box.value = "sales.orders"
    assert not wizard.run_button.disabled
    assert "deletes the mirrored table" in wizard.status_line.value


@pytest.mark.spark
def test_run_reseeds_and_ends_with_the_verified_row_count(db, retyped, wizards):
    wizard = wizards(db, "sales.orders", retyped)
    done = []
    wizard.on_done(done.append)
    wizard.name_box.value = "sales.orders"
    wizard.run_button.click()
    result = wizard.result
    assert done == [result] and result.reseeded and result.verified and result.mirrored_rows == 40
    assert steps(wizard) == [f"step {k} of 6: {what} — done" for k, what in enumerate(STEPS, 1)]
    assert wizard.steps_view.value.count("om-step-done") == 6
    assert "reseeded and verified: the mirrored table holds 40 rows" in wizard.result_view.value
    assert "#2e7d32" in wizard.result_view.value  # green
    assert wizard.progress.bar.value == 100 and wizard.progress.bar.bar_style == "success"  # the reload
    assert wizard.run_button.disabled and wizard.run_button.description == "Done"
    assert "reload: sales.orders: file 1; initial 40" in wizard.progress.label.value
    assert wizard.name_box.disabled
    frame = db.read_table("sales.orders", as_pandas=True).sort_values("id")
    assert list(frame["qty"]) == [i * 10 for i in range(40)] and list(frame["note"]) == ["x"] * 40


def failing_at_step_3(calls):
    """An apply that reports steps 1 and 2 done and fails in step 3, as a reseed whose wait for the
    drop ran out does."""

    def apply(plan, df, **kwargs):
        calls.append((plan, df, kwargs))
        on_step = kwargs["on_step"]
        for k in (1, 2):
            on_step(k, STEPS[k - 1], "running")
            on_step(k, STEPS[k - 1], "done")
        on_step(3, STEPS[2], "running")
        raise ReseedError(
            "Reseed of sales.orders stopped at step 3 of 6 (wait until the mirror drops the table): "
            "Table sales.orders is still listed after 1 s. Run db.apply_schema_change(plan, df, "
            "confirm='sales.orders') again to continue from there.",
            step=3,
        )

    return apply


@pytest.mark.spark
def test_a_failed_step_shows_its_reason_and_resume_finishes(db, retyped, wizards):
    calls = []
    fail = failing_at_step_3(calls)

    def apply(plan, df, **kwargs):  # fails the first time, works the next
        return (fail if not calls else db.apply_schema_change)(plan, df, **kwargs)

    wizard = wizards(db, "sales.orders", retyped, apply=apply)
    wizard.name_box.value = "sales.orders"
    wizard.run_button.click()
    assert wizard.result is None
    assert steps(wizard)[1:4] == [
        "step 2 of 6: drop the table folder — done",
        "step 3 of 6: wait until the mirror drops the table — failed",
        "step 4 of 6: load the new data — to do",
    ]
    failure = wizard.result_view.value
    assert "Step 3 of 6 (wait until the mirror drops the table) failed." in failure
    assert "Table sales.orders is still listed after 1 s." in failure  # the reason, in its words
    assert shown(wizard.resume_button) and wizard.resume_button.description == "Resume"
    assert not shown(wizard.run_button)
    assert not shown(wizard.progress.widget)  # no reload began: no empty bar

    wizard.resume_button.click()
    plan, df, asked = calls[0]
    assert plan is wizard.plan and df is retyped and asked["confirm"] == "sales.orders"
    assert wizard.result.verified and wizard.result.mirrored_rows == 40
    assert wizard.steps_view.value.count("om-step-done") == 6
    assert "reseeded and verified" in wizard.result_view.value
    assert not shown(wizard.resume_button) and shown(wizard.run_button)


@pytest.mark.spark
def test_resume_continues_a_real_reseed_from_the_step_that_failed(db, retyped, wizards, monkeypatch):
    monkeypatch.setattr(Mirror, "tick", lambda self: None)  # no mirror runs: the drop is never seen
    wizard = wizards(db, "sales.orders", retyped, timeout=1)
    wizard.name_box.value = "sales.orders"
    wizard.run_button.click()
    assert "step 3 of 6: wait until the mirror drops the table — failed" in steps(wizard)
    assert "still listed in Files/Monitoring/tables.json" in wizard.result_view.value
    assert wizard.resume_button.description == "Resume"
    monkeypatch.undo()
    wizard.resume_button.click()
    assert wizard.result.verified and wizard.result.steps[0] == "wait until the mirror drops the table"
    assert steps(wizard)[:3] == [
        "step 1 of 6: record the plan — done",
        "step 2 of 6: drop the table folder — done",
        "step 3 of 6: wait until the mirror drops the table — done",
    ]


@pytest.mark.spark
def test_an_absorbable_plan_needs_no_name_and_its_button_pushes(db, spark, wizards):
    df = spark.range(60).selectExpr("id", "concat('n', id) AS name", "CAST(id AS INT) AS qty", "'x' AS note")
    wizard = wizards(db, "sales.orders", df)
    assert not wizard.plan.needs_reseed and "all absorbed by the mirror" in wizard.plan_view.value
    assert not shown(wizard.name_box) and not shown(wizard.confirm_note) and wizard.steps_view.value == ""
    assert wizard.run_button.description == "Push" and not wizard.run_button.disabled
    wizard.run_button.click()
    assert not wizard.result.reseeded and wizard.result.push.rows == {"insert": 10, "upsert": 50}
    assert "no reseed needed; pushed 60 rows" in wizard.result_view.value
    assert wizard.progress.bar.value == 100


@pytest.mark.spark
def test_a_plan_that_cannot_be_made_is_one_line_and_nothing_runs(db, retyped, wizards):
    wizard = wizards(db, "sales.nosuch", retyped)
    assert wizard.plan is None and wizard.run_button.disabled and wizard.plan_view.value == ""
    assert "does not exist" in wizard.status_line.value and "#c62828" in wizard.status_line.value


def test_an_unexpected_error_is_one_line_and_try_again_runs_the_plan_again(wizards):
    """Fakes only (design §5.6): a Spark error out of apply, not an ``OpenMirrorError``."""
    plan = SchemaPlan(
        table="sales.orders",
        changes=(Change("key_changed", "id, region", "id", "id, region", "reseed", "fixed for life"),),
        keys=("id", "region"),
        schema="{}",
        rows=3,
        files=1,
    )
    calls = []

    def apply(plan, df, **kwargs):
        calls.append(kwargs["confirm"])
        kwargs["on_step"](1, STEPS[0], "running")
        raise RuntimeError("Py4JJavaError: An error occurred\n  at org.apache.spark...")

    db = type("FakeDatabase", (), {"target": "file:///tmp/db"})()
    wizard = wizards(db, "sales.orders", "df", plan=lambda table, df, keys: plan, apply=apply)
    assert wizard.plan is plan and "key changed" in wizard.plan_view.value
    wizard.name_box.value = "sales.orders"
    wizard.run_button.click()
    assert "Step 1 of 6 (record the plan) failed." in wizard.result_view.value
    assert "Schema change of sales.orders failed: RuntimeError: Py4JJavaError: An error occurred at" in (
        wizard.result_view.value
    )
    assert wizard.resume_button.description == "Try again" and shown(wizard.resume_button)
    wizard.resume_button.click()
    assert calls == ["sales.orders", "sales.orders"] and wizard.result is None
