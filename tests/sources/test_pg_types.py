"""Every PostgreSQL type family mirrored as the database holds it, or refused with the fix, in any
time zone (issue 39, items 1 and 2).

The table of ``every_type.py`` holds each family at its edges: ``numeric`` without precision and
over 38 digits (planned with a problem until the plan declares ``types``), ``money``,
``timestamp`` and ``timestamptz`` from year 1 to 9999 and before 1582, ``date``, ``time``,
``interval``, ``uuid``, ``bytea``, ``json``/``jsonb``, arrays, an enum, ``bit``, ``inet``. The
mirror is judged by the contract checker's replay. The same plan, a pushed and a streamed frame are run
in a process whose JVM and Spark session are in ``Asia/Kolkata`` (a half-hour offset) and, in
``scripts/soak``, also in ``America/New_York`` (daylight saving), and must give the same rows.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import openmirror_nb as om
from tests.sources import every_type
from tests.sources.postgres import PASSWORD

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]
PUSHED = [
    {"id": 1, "ts": dt.datetime(1, 1, 1, tzinfo=dt.UTC), "d": dt.date(1, 1, 1)},
    {"id": 2, "ts": dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC), "d": dt.date(9999, 12, 31)},
    {"id": 3, "ts": dt.datetime(1500, 3, 1, 12, tzinfo=dt.UTC), "d": dt.date(1500, 3, 1)},
    {"id": 4, "ts": dt.datetime(2026, 3, 8, 2, 30, tzinfo=dt.UTC), "d": dt.date(2026, 3, 8)},
]


@pytest.fixture(scope="module")
def typed(postgres, spark):
    """The schema of ``every_type`` in the test database, as a source."""
    postgres.sql(every_type.DDL)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ERP_PASSWORD", PASSWORD)
        yield postgres.url


@pytest.fixture(scope="module")
def mirrored(typed, tmp_path_factory):
    """The table mirrored under UTC, and its landing zone."""
    db = om.connect(tmp_path_factory.mktemp("typed") / "db", lock_timeout=5)
    run = every_type.mirror(db, typed)
    return db, run


def test_columns_no_spark_decimal_holds_are_planned_with_the_fix(typed, planned_db):
    plan = planned_db.plan_sources(every_type.source(typed), target_schema="typed")
    problems = plan.table(every_type.TABLE).problems
    assert len(problems) == 3, problems
    for column, problem in zip(every_type.UNTYPED, problems, strict=True):
        assert problem.startswith(f"column {column!r} is numeric"), problem
        assert f"types: {{{column}: decimal(p,s)}}" in problem and f"{{{column}: string}}" in problem
    assert "numeric(50,2)" in problems[2]
    declared = dataclasses.replace(plan.table(every_type.TABLE), types={"n_exact": "decimal(38,21)"})
    again = planned_db.plan_sources(
        every_type.source(typed), target_schema="typed", like=dataclasses.replace(plan, tables=[declared])
    )
    assert [p.split(" is ")[0] for p in again.table(every_type.TABLE).problems] == [
        "column 'n_text'",
        "column 'n_wide'",
    ]


def test_every_type_round_trips_or_is_declared(mirrored):
    db, run = mirrored
    assert run.ok, run
    rows = every_type.replayed(db.target.landing_zone, "typed.every_type")
    assert rows == every_type.expected_rows()


def test_a_declared_type_is_kept_in_the_plan_file(mirrored, typed, tmp_path):
    db, _ = mirrored
    plan = db.plan_sources(every_type.source(typed), target_schema="typed")
    typed_table = dataclasses.replace(plan.table(every_type.TABLE), types=every_type.TYPES)
    plan = dataclasses.replace(plan, tables=[typed_table])
    plan.save(tmp_path / "plan.yaml")
    assert om.load_plan(tmp_path / "plan.yaml").table(every_type.TABLE).types == every_type.TYPES
    text = (tmp_path / "plan.yaml").read_text().replace("decimal(38,2)", "decimal(40,2)")
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(om.ConfigError, match=r"n_wide: 'decimal\(40,2\)' is not decimal\(p,s\)"):
        om.load_plan(tmp_path / "bad.yaml")


def _landing_zone_bytes(root: Path) -> dict[str, bytes]:
    """Every file of a landing zone but the run records (``_openmirror/runs``)."""
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and "_openmirror" not in p.parts)
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_a_value_a_declared_decimal_does_not_hold_is_refused_before_anything_is_written(typed, db):
    before = _landing_zone_bytes(db.target.landing_zone)
    plan = db.plan_sources(every_type.source(typed), target_schema="typed")
    narrow = {**every_type.TYPES, "n_exact": "decimal(38,20)"}  # 1e-21 needs 21 decimals
    plan = dataclasses.replace(plan, tables=[dataclasses.replace(plan.table(every_type.TABLE), types=narrow)])
    run = db.run_plan(db.plan_sources(every_type.source(typed), target_schema="typed", like=plan))
    table = run.table(every_type.TABLE)
    assert table.status == "failed"
    assert (
        "Table every_type column 'n_exact' holds 0.000000000000000000001, which decimal(38,20)"
        in table.reason
    )
    assert table.reason.endswith("nothing was written: declare a wider decimal or n_exact: string")
    assert _landing_zone_bytes(db.target.landing_zone) == before


def test_infinity_is_refused_with_the_fix_then_kept_as_text(typed, postgres, db):
    postgres.sql(
        f"CREATE TABLE {every_type.SCHEMA}.endless (id int PRIMARY KEY, until timestamptz);"
        f"INSERT INTO {every_type.SCHEMA}.endless VALUES (1, 'infinity'), (2, '2026-01-01 00:00+00');"
    )
    try:
        plan = db.plan_sources(every_type.source(typed), target_schema="typed")
        only = dataclasses.replace(plan, tables=[plan.table("endless")])
        run = db.run_plan(only)
        assert run.table("endless").status == "failed"
        reason = run.table("endless").reason
        assert "Table endless column 'until' holds infinity" in reason and "types: {until: string}" in reason
        assert not (db.target.landing_zone / "typed.schema" / "endless").exists()
        text = dataclasses.replace(only.table("endless"), types={"until": "string"})
        assert db.run_plan(dataclasses.replace(only, tables=[text])).ok
        rows = every_type.replayed(db.target.landing_zone, "typed.endless")
        assert [r["until"] for r in rows] == ["infinity", "2026-01-01 00:00:00+00"]
    finally:
        postgres.sql(f"DROP TABLE {every_type.SCHEMA}.endless;")


# A half-hour offset; daylight saving. CI runs the first (two JVMs at once cost it about 10 s more),
# scripts/soak both.
ZONES = ("Asia/Kolkata", "America/New_York") if os.environ.get("OPENMIRROR_SOAK") else ("Asia/Kolkata",)


def test_the_time_zone_changes_nothing(mirrored, typed, tmp_path):
    """The same plan, a pushed and a streamed frame, in processes whose JVM and Spark session are
    in each of ``ZONES`` (both at once): the rows the UTC run mirrored (``mirrored``), and the
    instants pushed."""
    db, _ = mirrored
    runs = {}
    for zone in ZONES:
        env = {**os.environ, "TZ": zone, "ERP_PASSWORD": PASSWORD, "PYTHONPATH": str(REPO)}
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        where = tmp_path / zone.replace("/", "_") / "db"
        runs[zone] = subprocess.Popen(
            [sys.executable, "-m", "tests.sources.every_type", typed, str(where)],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    utc = every_type.as_json(every_type.replayed(db.target.landing_zone, "typed.every_type"))
    for zone, child in runs.items():
        out, err = child.communicate(timeout=600)
        lines = [line for line in out.splitlines() if line.startswith("ROWS ")]
        assert child.returncode == 0 and lines, f"{zone}: {err[-3000:]}"
        found = json.loads(lines[0][5:])
        assert found["every_type"] == utc, zone
        assert found["pushed"] == found["streamed"] == every_type.as_json(PUSHED), zone


def test_a_watermark_on_a_converted_column_is_still_filtered_in_the_database(typed):
    from openmirror_nb._core.sources.watermark import past

    frame = every_type.source(typed).read_typed(every_type.TABLE, every_type.TYPES)
    rows = past(frame, "ts", "1772937000000000", overlap=1)  # 2026-03-08 02:30 UTC, less a second
    plan = rows._jdf.queryExecution().executedPlan().toString()
    assert "GreaterThanOrEqual(ts,1772936999000000)" in plan  # microseconds, compared in PostgreSQL
    assert [r["id"] for r in rows.select("id").collect()] == [2, 4]  # 9999-12-31 and 2026-03-08
    assert rows.schema["n_exact"].dataType.simpleString() == "decimal(38,21)"  # the declared type kept
    days = past(frame, "d", "2026-03-08")
    assert "GreaterThan(d,20520)" in days._jdf.queryExecution().executedPlan().toString()
    assert [r["id"] for r in days.select("id").collect()] == [2]
