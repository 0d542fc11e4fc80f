"""A folder of Delta tables (written by deltalake, plus a Databricks table with deletion vectors)
as a source: tables one and two levels down (a Lakehouse with schemas), NOT NULL and identity
columns, row counts (deletion vectors subtracted), the change data feed planned as delta_sync,
each described by both branches (Spark's Delta reader, which the suite's session has as Fabric's
does; the log by deltalake, as a session without Delta has it); the same folder listed through
Spark's Hadoop file system as a URL. Tables Spark's Delta writer made: test_delta_sources_spark.py."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pyarrow as pa
import pytest
from deltalake import write_deltalake

import openmirror_nb as om
from tests.pipeline.delta_tables import DATA

pytestmark = [pytest.mark.spark, pytest.mark.runtime13]  # Delta sync: both Fabric lines
IDENTITY = {
    "delta.identity.start": "1",
    "delta.identity.step": "1",
    "delta.identity.allowExplicitInsert": "false",
}


@pytest.fixture(params=["spark", "deltalake"])
def reader(request, spark, monkeypatch):
    """The branch ``DeltaFolder`` describes each table by, and a count of the tables the log
    branch (``_by_log``) described: Spark's Delta reader where the session has Delta, else the
    log by ``deltalake`` (forced here by a session that seems to have no Delta)."""
    from openmirror_nb._core.pipeline.delta import source
    from openmirror_nb._core.sources import delta_folder

    if request.param == "spark" and not source.spark_has_delta(spark):
        pytest.skip("this Spark line has no Delta jars (Maven Central serves none for it)")
    if request.param == "deltalake":
        monkeypatch.setattr(source, "spark_has_delta", lambda _session: False)
    by_log = delta_folder._by_log
    described: list[str] = []

    def spy(name, uri):
        described.append(name)
        return by_log(name, uri)

    monkeypatch.setattr(delta_folder, "_by_log", spy)
    return request.param, described


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("lakehouse") / "Tables"
    orders = pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("status", pa.string())])
    write_deltalake(root / "orders", pa.table({"order_id": [1, 2, 3], "status": ["a", "b", "b"]}, schema=orders),
                    configuration={"delta.enableChangeDataFeed": "true"})  # fmt: skip
    countdown = {**IDENTITY, "delta.identity.start": "10", "delta.identity.step": "-1"}  # not increasing
    events = pa.schema([
        pa.field("event_id", pa.int64(), nullable=False, metadata=IDENTITY), pa.field("kind", pa.string()),
        pa.field("countdown", pa.int64(), nullable=False, metadata=countdown),
    ])  # fmt: skip
    write_deltalake(root / "events", pa.table({"event_id": [1, 2], "kind": ["x", "x"], "countdown": [10, 9]},
                                              schema=events))  # fmt: skip
    write_deltalake(root / "sales" / "items", pa.table({"sku": ["A", "B"], "qty": [1, 1]}))
    write_deltalake(root / "sales" / "items", pa.table({"sku": ["C"], "qty": [2]}), mode="append")
    shutil.copytree(DATA / "table-with-dv-small", root / "dv_small")
    (root / "_staging" / "x").mkdir(parents=True)  # underscore folders are no tables
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a table")
    return root


def test_tables_one_and_two_levels_down_with_their_facts(tables, reader):
    found = {t.name: t for t in om.DeltaFolder(tables).discover()}
    branch, by_log = reader
    assert sorted(by_log) == ([] if branch == "spark" else sorted(found))  # the branch meant ran
    assert sorted(found) == ["dv_small", "events", "orders", "sales/items"]
    assert {n: t.rows for n, t in found.items()} == {
        "dv_small": 8,
        "events": 2,
        "orders": 3,
        "sales/items": 3,
    }
    assert {n: t.change_feed for n, t in found.items()} == {
        "dv_small": False, "events": False, "orders": True, "sales/items": False,
    }  # fmt: skip
    assert [(c.name, c.type, c.nullable) for c in found["orders"].columns] == [
        ("order_id", "bigint", False), ("status", "string", True),
    ]  # fmt: skip
    assert found["events"].increasing == ("event_id",) and found["orders"].increasing == ()
    assert all(t.unreadable is None for t in found.values())


def test_the_plan_syncs_a_change_feed_and_suggests_keys_from_the_rows(tables, db):
    plan = db.plan_sources(om.DeltaFolder(tables), target_schema="lake")
    got = {
        t.source: (t.table, t.keys, t.key_origin, t.strategy, t.detect_deletes, t.problems)
        for t in plan.tables
    }
    assert got == {
        "dv_small": (
            "lake.dv_small",
            ("value",),
            "suggested",
            "snapshot",
            True,
            (),
        ),  # read past its deletion vectors
        "events": ("lake.events", (), None, "append", False, ()),  # an identity column, no key
        "orders": ("lake.orders", ("order_id",), "suggested", "delta_sync", True, ()),
        "sales/items": ("lake.items", ("sku",), "suggested", "snapshot", True, ()),
    }
    events = plan.table("events")  # an identity column is a strictly increasing watermark
    assert events.watermark == "event_id" and "insert-only" in events.notes[0]
    assert "all 3 rows profiled (3 distinct values)" in plan.table("sales/items").notes[0]  # a guess, said so
    snapshot = replace_table(plan, "events", strategy="snapshot", keys=("event_id",), key_origin="declared",
                             watermark=None, detect_deletes=True)  # fmt: skip
    again = db.plan_sources(om.DeltaFolder(tables), target_schema="lake", like=snapshot, suggest=False)
    assert again.table("events").strategy == "snapshot" and again.table("events").notes == ()  # as edited


def replace_table(plan, source, **changes):
    return replace(plan, tables=[replace(t, **changes) if t.source == source else t for t in plan.tables])


def test_a_url_is_listed_through_spark_and_a_wrong_path_is_said_so(tables, spark):
    assert om.DeltaFolder(tables.as_uri()).tables() == ["dv_small", "events", "orders", "sales/items"]
    with pytest.raises(om.ConfigError, match="does not exist or is not a folder"):
        om.DeltaFolder(tables / "missing").tables()
    with pytest.raises(om.ConfigError, match="does not exist or is not a folder"):
        om.DeltaFolder((tables / "missing").as_uri()).tables()
    with pytest.raises(
        om.ConfigError, match="is a Delta table, not a folder of them; give its parent folder"
    ):
        om.DeltaFolder(tables / "orders").tables()
    assert sorted(r["sku"] for r in om.DeltaFolder(tables).read("sales/items").collect()) == ["A", "B", "C"]
