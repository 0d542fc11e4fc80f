"""A folder of Delta tables (written by deltalake, plus a Databricks table with deletion vectors)
as a source: tables one and two levels down (a Lakehouse with schemas), NOT NULL and identity
columns, row counts from the log (deletion vectors subtracted), the change data feed planned as
delta_sync; the same folder listed through Spark's Hadoop file system as a URL."""

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


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("lakehouse") / "Tables"
    orders = pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("status", pa.string())])
    write_deltalake(root / "orders", pa.table({"order_id": [1, 2, 3], "status": ["a", "b", "b"]}, schema=orders),
                    configuration={"delta.enableChangeDataFeed": "true"})  # fmt: skip
    events = pa.schema(
        [pa.field("event_id", pa.int64(), nullable=False, metadata=IDENTITY), pa.field("kind", pa.string())]
    )
    write_deltalake(root / "events", pa.table({"event_id": [1, 2], "kind": ["x", "x"]}, schema=events))
    write_deltalake(root / "sales" / "items", pa.table({"sku": ["A", "B"], "qty": [1, 1]}))
    write_deltalake(root / "sales" / "items", pa.table({"sku": ["C"], "qty": [2]}), mode="append")
    shutil.copytree(DATA / "table-with-dv-small", root / "dv_small")
    (root / "_staging" / "x").mkdir(parents=True)  # underscore folders are no tables
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a table")
    return root


def test_tables_one_and_two_levels_down_with_their_facts(tables, spark):
    found = {t.name: t for t in om.DeltaFolder(tables).discover()}
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
        "events": ("lake.events", ("event_id",), "suggested", "snapshot", True, ()),
        "orders": ("lake.orders", ("order_id",), "suggested", "delta_sync", True, ()),
        "sales/items": ("lake.items", ("sku",), "suggested", "snapshot", True, ()),
    }
    events = replace_table(plan, "events", strategy="append", keys=(), key_origin=None, watermark="event_id",
                           detect_deletes=False)  # fmt: skip
    again = db.plan_sources(om.DeltaFolder(tables), target_schema="lake", like=events, suggest=False)
    assert again.table("events").problems == ()  # an identity column is a strictly increasing watermark


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
