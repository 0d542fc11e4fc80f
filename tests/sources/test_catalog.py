"""A Spark catalog database as a source, with Parquet tables (Delta tables of a catalog:
test_delta_sources_spark.py): its tables and persistent views (not the session's temporary views),
their columns and row counts (the catalog's statistics when analyzed), keys suggested from the
rows, a view whose column the landing zone cannot hold planned with that problem, and no Delta
location for a table or view that is not Delta."""

from __future__ import annotations

import pytest

import openmirror_nb as om

pytestmark = [pytest.mark.spark, pytest.mark.runtime13]  # Delta sync: both Fabric lines
DATABASE = "om_catalog_source"


@pytest.fixture(scope="module")
def shop(spark, tmp_path_factory):
    where = tmp_path_factory.mktemp("catalog")  # the tables' files live here, not in the working folder
    spark.sql(f"CREATE DATABASE {DATABASE} LOCATION '{where.as_uri()}'")
    try:
        spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "order_id long, note string").write.saveAsTable(
            f"{DATABASE}.orders"
        )
        lines = spark.createDataFrame(
            [(1, 1, 5), (1, 2, 5), (2, 1, 7)], "order_id long, line_no int, qty int"
        )
        lines.write.saveAsTable(f"{DATABASE}.order_lines")
        spark.createDataFrame([("x", 1.5), ("y", 1.5)], "code string, rate double").write.saveAsTable(
            f"{DATABASE}.rates"
        )
        spark.sql(f"ANALYZE TABLE {DATABASE}.rates COMPUTE STATISTICS")
        spark.sql(f"CREATE VIEW {DATABASE}.gaps AS SELECT 1 AS id, INTERVAL '1' DAY AS gap")
        spark.range(2).createOrReplaceTempView("om_catalog_temp")
        yield om.Catalog(DATABASE)
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")
        spark.catalog.dropTempView("om_catalog_temp")


def test_tables_and_views_are_discovered_with_columns_and_rows(shop):
    found = {t.name: t for t in shop.discover()}
    assert sorted(found) == [
        "gaps",
        "order_lines",
        "orders",
        "rates",
    ]  # the temporary view is not the database's
    assert [(c.name, c.type, c.nullable, c.key) for c in found["order_lines"].columns] == [
        ("order_id", "bigint", True, False), ("line_no", "int", True, False), ("qty", "int", True, False),
    ]  # fmt: skip
    assert {n: t.rows for n, t in found.items()} == {"gaps": None, "order_lines": 3, "orders": 3, "rates": 2}
    assert all(t.primary_key == () and not t.change_feed and t.unreadable is None for t in found.values())


def test_the_plan_suggests_keys_from_the_rows_and_names_what_cannot_be_held(shop, db):
    plan = db.plan_sources(shop, target_schema="shop")
    keys = {t.source: (t.table, t.keys, t.key_origin, t.strategy) for t in plan.tables}
    assert keys == {
        "gaps": ("shop.gaps", ("id",), "suggested", "snapshot"),
        "order_lines": ("shop.order_lines", ("order_id", "line_no"), "suggested", "snapshot"),
        "orders": ("shop.orders", ("order_id",), "suggested", "snapshot"),
        "rates": ("shop.rates", ("code",), "suggested", "snapshot"),  # a double is never suggested
    }
    problems = {t.source: t.problems for t in plan.tables}
    assert problems["gaps"] == (
        "Column 'gap' has type interval day, which the landing zone cannot hold; cast it to a string or a "
        "number of seconds.",
    )
    assert problems["orders"] == problems["order_lines"] == problems["rates"] == ()


def test_read_and_an_unknown_database(shop, spark):
    assert sorted(r["order_id"] for r in shop.read("orders").collect()) == [1, 2, 3]
    with pytest.raises(
        om.ConfigError,
        match=r"Catalog database 'om_catalog_sourse' does not exist .*Did you mean 'om_catalog_source'\?",
    ):
        om.Catalog("om_catalog_sourse").discover()
    assert shop == om.Catalog(DATABASE) and repr(shop) == f"Catalog({DATABASE!r})"


def test_a_table_or_view_that_is_not_delta_has_no_delta_location(shop, spark):
    """What a run of a saved plan's delta_sync meets when the table became another kind: said so."""
    from openmirror_nb._core.sources.ranges import delta_location

    for name in ("orders", "gaps"):  # a Parquet table (DESCRIBE DETAIL gives its folder), a view
        with pytest.raises(om.ConfigError, match=rf"Table '{name}' of .* has no Delta location"):
            delta_location(shop, name)
