"""``db.run_plan`` against the real PostgreSQL: the erp schema mirrored and compared with the
database row for row after inserts, updates and deletes (``orders`` incremental on ``updated_at``
with its delete sweep, the rest snapshots); a third run with nothing changed publishes nothing;
a table dropped in the source and an unreachable server fail only their own tables, without a
secret in any message; the incremental read is filtered in the database; a large table is read
in ranges."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.model import TableOptions
from openmirror_nb._core.pipeline.push.normalize import normalize
from openmirror_nb._core.sources import ranges
from openmirror_nb._core.sources.watermark import past
from tests.reliability.harness import lzcheck
from tests.sources.conftest import SCHEMA
from tests.sources.postgres import DATABASE, PASSWORD, SUPERUSER

pytestmark = pytest.mark.spark
RUN_DB = "erp_run"


@pytest.fixture(scope="module")
def erp_run(postgres, spark):
    """The erp schema in a database of its own, which these tests change."""
    postgres.sql(f"CREATE DATABASE {RUN_DB};", database="postgres")
    postgres.sql(SCHEMA.read_text(encoding="utf-8"), database=RUN_DB)
    url = postgres.url.replace(f"/{DATABASE}", f"/{RUN_DB}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ERP_PASSWORD", PASSWORD)
        yield om.Jdbc(url, user=SUPERUSER, password_env="ERP_PASSWORD", schema="public")


def _incremental(plan: om.SourcePlan) -> om.SourcePlan:
    orders = plan.table("orders")
    tables = [
        dataclasses.replace(t, strategy="incremental", watermark="updated_at", detect_deletes=True)
        if t is orders
        else t
        for t in plan.tables
    ]
    return dataclasses.replace(plan, tables=tables)


def _same_rows(db, source: om.Jdbc, planned: om.PlannedTable) -> None:
    """The mirrored table holds exactly the source's rows, as a push writes them."""
    from pyspark.sql import functions as F

    rows = normalize(source.read(planned.source), options=TableOptions())
    db.local_mirror.run_once()
    mirrored = db.read_table(planned.table)
    mirrored = mirrored.select(*[F.col(c).cast(rows.schema[c].dataType) for c in rows.columns])
    assert rows.count() == mirrored.count(), planned.table
    assert rows.exceptAll(mirrored).count() == 0, planned.table
    assert mirrored.exceptAll(rows).count() == 0, planned.table


def test_the_erp_schema_round_trips_through_inserts_updates_and_deletes(erp_run, postgres, db):
    plan = _incremental(db.plan_sources(erp_run, target_schema="erp", suggest=False))
    first = db.run_plan(plan, parallel=2)
    ran = [t for t in first.tables if t.status == "ok"]
    assert {t.source for t in ran} == {
        "customers", "events", "order_lines", "orders", "products", "sessions", "stock_levels", "warehouses",
    }  # fmt: skip
    skipped = {t.source: t.reason for t in first.tables if t.status == "skipped"}
    assert "no key" in skipped["page_views"] and "problem" in skipped["legacy_import"]
    assert first.ok
    for t in ran:
        _same_rows(db, erp_run, plan.table(t.source))
    state = TableFolder.of(db.storage, "erp.orders").read_state()
    assert state.watermark_column == "updated_at" and state.watermark == "1712361599999999"

    postgres.sql(
        """
        INSERT INTO orders VALUES (1004, 3, now(), 'open', 5.00, '2024-05-01 00:00:00+00');
        UPDATE orders SET status = 'shipped', updated_at = '2024-05-02 00:00:00+00' WHERE order_id = 1002;
        DELETE FROM order_lines WHERE order_id = 1003;
        DELETE FROM orders WHERE order_id = 1003;
        UPDATE products SET price = 8.00 WHERE sku = 'SKU-2';
        INSERT INTO customers (email, name, signed_up) VALUES ('di@example.com', 'Di', '2024-05-01');
        """,
        database=RUN_DB,
    )
    second = db.run_plan(plan, parallel=2)
    status = {t.source: t.status for t in second.tables if t.status != "skipped"}
    assert status == {
        "customers": "ok", "order_lines": "ok", "orders": "ok", "products": "ok",
        "events": "unchanged", "sessions": "unchanged", "stock_levels": "unchanged", "warehouses": "unchanged",
    }  # fmt: skip
    assert second.table("orders").rows == {"delete": 1, "upsert": 2}  # 1004 and 1002; 1003 swept
    for t in ran:
        _same_rows(db, erp_run, plan.table(t.source))
    lzcheck(db.target.landing_zone, "erp.orders")
    assert TableFolder.of(db.storage, "erp.orders").read_state().watermark == "1714608000000000"

    # read again all the same: the overlap window re-reads rows, and none is published
    third = db.run_plan(plan, parallel=2, reread=True)
    assert {t.status for t in third.tables if t.source in status} == {"unchanged"}
    assert not any(t.reason.startswith("not read") for t in third.tables)
    fourth = db.run_plan(plan, parallel=2)  # PostgreSQL's counters say nothing changed: none is read
    assert {t.reason.split(":")[0] for t in fourth.tables if t.source in status} == {"not read"}


def test_a_table_gone_and_a_source_unreachable_fail_alone_without_secrets(erp_run, postgres, db):
    plan = db.plan_sources(erp_run, target_schema="erp", suggest=False)
    postgres.sql("CREATE TABLE gone_soon (id integer PRIMARY KEY);", database=RUN_DB)
    replanned = db.plan_sources(erp_run, target_schema="erp", suggest=False, like=plan)
    postgres.sql("DROP TABLE gone_soon;", database=RUN_DB)
    run = db.run_plan(replanned)
    gone = run.table("gone_soon")
    assert gone.status == "failed" and "'gone_soon'" in gone.reason and "\n" not in gone.reason
    assert {t.status for t in run.tables if t.source != "gone_soon"} <= {"ok", "skipped"}

    runs = db.target.landing_zone / "_openmirror" / "runs"  # where a failed run is recorded
    before = _outside(db.target.root, runs)
    closed = om.Jdbc("jdbc:postgresql://127.0.0.1:9/erp", user=SUPERUSER, password=PASSWORD, schema="public")
    away = dataclasses.replace(replanned, source=closed)
    down = db.run_plan(away, parallel=2)
    failed = [t for t in down.tables if t.status == "failed"]
    assert failed and {t.status for t in down.tables} == {"failed", "skipped"}
    assert all("127.0.0.1:9" in t.reason and "\n" not in t.reason for t in failed)
    assert PASSWORD not in repr(down) + down._repr_html_() + down.to_pandas().to_string()
    assert _outside(db.target.root, runs) == before  # the tables' folders: untouched
    records = "".join(p.read_text(encoding="utf-8") for p in runs.glob("*.json"))
    assert len(list(runs.glob("*.json"))) >= len(failed) and "127.0.0.1:9" in records
    assert PASSWORD not in records


def _outside(root: Path, skipped: Path) -> list[tuple[str, bytes]]:
    """Every file below ``root`` but those under ``skipped``, with its content."""
    return sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and skipped not in p.parents
    )


def test_the_incremental_read_is_filtered_in_the_database(erp_run):
    frame = erp_run.read("orders")
    rows = past(frame, "updated_at", "1712361599999999", overlap=3600)
    plan = rows._jdf.queryExecution().executedPlan().toString()
    # the bound in microseconds since 1970, as the database hands the column to Spark (pg_read)
    assert "PushedFilters: [*IsNotNull(updated_at), *GreaterThanOrEqual(updated_at,1712357999999999)]" in plan
    keys = frame.select("order_id")._jdf.queryExecution().executedPlan().toString()
    assert "ReadSchema: struct<order_id:bigint>" in keys  # the sweep reads the key column only


def test_a_large_jdbc_table_is_read_in_ranges_of_its_key(erp_run, monkeypatch):
    monkeypatch.setattr(ranges, "SPLIT_ROWS", 1)
    planned = om.PlannedTable(
        "orders", "erp.orders", ("order_id",), "primary_key", "snapshot", None, True, True, 3, ()
    )
    whole = erp_run.read("orders")
    split = ranges.split(erp_run, planned, whole)
    assert split.rdd.getNumPartitions() == 3
    assert sorted(split.collect()) == sorted(whole.collect())
    text = dataclasses.replace(planned, source="products", keys=("sku",))
    assert ranges.split(erp_run, text, erp_run.read("products")).rdd.getNumPartitions() == 1


def test_partitions_are_not_listed_beside_their_parent(erp_run, postgres):
    postgres.sql(
        """
        CREATE TABLE visits (visit_id bigint, day date NOT NULL, PRIMARY KEY (visit_id, day))
            PARTITION BY RANGE (day);
        CREATE TABLE visits_2024 PARTITION OF visits FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
        CREATE TABLE visits_2025 PARTITION OF visits FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
        INSERT INTO visits VALUES (1, '2024-03-01'), (2, '2025-03-01'), (3, '2025-04-01');
        ANALYZE visits_2024; ANALYZE visits_2025;
        """,
        database=RUN_DB,
    )
    try:
        found = {t.name: t for t in erp_run.discover()}
        assert "visits" in found and not {"visits_2024", "visits_2025"} & set(found)
        assert found["visits"].rows == 3 and found["visits"].primary_key == ("visit_id", "day")
    finally:
        postgres.sql("DROP TABLE visits;", database=RUN_DB)


def test_append_publishes_marker_free_inserts_past_an_identity_watermark(erp_run, postgres, db):
    import pyarrow.parquet as pq

    plan = db.plan_sources(erp_run, target_schema="erp", suggest=False)
    events = plan.table("events")  # keyless, numbered by an identity column: planned append by it
    assert (events.strategy, events.watermark, events.keys, events.problems) == ("append", "event_id", (), ())
    only = dataclasses.replace(plan, tables=[events])
    first = db.run_plan(only)
    assert first.table("events").rows == {"initial": 3}, repr(first)
    postgres.sql(
        "INSERT INTO events (happened_at, kind) VALUES (now(), 'logout'), (now(), 'login');", database=RUN_DB
    )
    second = db.run_plan(only)
    assert second.table("events").rows == {"insert": 2}
    assert db.run_plan(only).table("events").status == "unchanged"
    folder = db.target.landing_zone / "erp.schema" / "events"
    assert "keyColumns" not in (folder / "_metadata.json").read_text()
    files = sorted(folder.glob("*.parquet"))
    assert len(files) == 2 and all("__rowMarker__" not in pq.read_schema(f).names for f in files)
    _same_rows(db, erp_run, only.table("events"))
    lzcheck(db.target.landing_zone, "erp.events")
    keyed = dataclasses.replace(only.table("events"), strategy="incremental", keys=("event_id",))
    refused = db.run_plan(
        dataclasses.replace(only, tables=[dataclasses.replace(keyed, key_origin="declared")])
    )
    assert "mirrored with keyColumns none" in refused.table("events").reason
