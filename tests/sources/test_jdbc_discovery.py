"""A JDBC source discovered against a real PostgreSQL, through the driver jar the shared Spark
session loaded: every table of the schema (and only it), columns as Spark reads them, primary keys
in key order, unique constraints on NOT NULL columns, identity columns and row estimates; and the
errors of a source that cannot be reached, each one line."""

from __future__ import annotations

import pytest

import openmirror_nb as om
from openmirror_nb._core.runtime import DRIVER_JARS
from tests.sources.conftest import PUBLIC_TABLES
from tests.sources.postgres import JAR, PASSWORD, SUPERUSER

pytestmark = pytest.mark.spark


def test_the_session_get_spark_started_has_debians_driver_on_spark_jars(spark, postgres):
    assert JAR in DRIVER_JARS
    assert str(JAR) in spark.sparkContext.getConf().get("spark.jars", "").split(",")
    # the class is loadable where Spark's JDBC reader looks for it
    spark._jvm.org.apache.spark.sql.execution.datasources.jdbc.DriverRegistry.register(
        "org.postgresql.Driver"
    )


@pytest.fixture(scope="module")
def found(erp):
    return {t.name: t for t in erp.discover()}


def test_every_table_of_the_schema_and_no_other_is_discovered(found):
    assert sorted(found) == PUBLIC_TABLES  # not hr.employees, no index, no sequence


def test_columns_have_the_types_a_push_sees_and_the_sources_not_null(found):
    columns = {c.name: (c.type, c.nullable, c.key) for c in found["customers"].columns}
    assert columns == {
        "customer_id": ("bigint", False, True),
        "email": ("string", False, False),
        "name": ("string", False, False),
        "signed_up": ("date", False, False),
        "active": ("boolean", False, False),
        "balance": ("decimal(12,2)", True, False),
    }
    types = {c.name: c.type for t in ("products", "sessions", "orders") for c in found[t].columns}
    assert types["tags"] == "array<string>" and types["sizes"] == "array<int>"
    assert types["attributes"] == "string" and types["context"] == "string"  # jsonb, json
    assert types["thumbnail"] == "binary" and types["price"] == "decimal(10,2)"
    assert types["session_id"] == "string" and types["ordered_at"] == "timestamp"  # uuid, timestamptz


def test_primary_keys_come_in_key_order_and_unique_constraints_only_on_not_null_columns(found):
    assert found["order_lines"].primary_key == ("order_id", "line_no")  # not the column order
    assert found["stock_levels"].primary_key == ("sku", "counted_on")
    assert found["warehouses"].primary_key == ()
    # the nullable phone's constraint is no key; the narrowest comes first
    assert found["warehouses"].unique == (("code",), ("region", "site"))
    assert found["customers"].unique == (("email",),)  # the primary key's own index left out
    assert found["events"].primary_key == () and found["events"].unique == ()


def test_identity_columns_and_row_estimates(found):
    assert found["events"].increasing == ("event_id",)
    assert found["customers"].increasing == ("customer_id",)
    assert found["orders"].increasing == ()
    rows = {name: t.rows for name, t in found.items() if name != "mixed_case"}
    assert rows == {
        "Order Notes": 1, "customers": 3, "events": 3, "exchange_rates": 2, "legacy_import": 1,
        "order_lines": 4, "ordernotes": 1, "orders": 3, "page_views": 3, "products": 4, "returns": 0,
        "sessions": 2, "stock_levels": 3, "warehouses": 3,
    }  # fmt: skip


def test_a_table_spark_cannot_read_is_said_so_and_the_others_are_still_there(found):
    broken = found["mixed_case"]
    assert broken.columns == () and "Spark's JDBC reader cannot read its columns" in broken.unreadable
    assert "code" in broken.unreadable and "enabled: false" in broken.unreadable
    assert all(found[n].unreadable is None for n in PUBLIC_TABLES if n != "mixed_case")


def test_the_default_schema_is_the_connections(erp, postgres):
    plain = om.Jdbc(postgres.url, user=SUPERUSER, password_env="ERP_PASSWORD")
    assert [t.name for t in plain.discover()] == PUBLIC_TABLES


def test_read_returns_the_rows(erp):
    rows = erp.read("Order Notes").collect()
    assert [tuple(r) for r in rows] == [(1, "fragile")]


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        ({"password": "not-it"}, om.ConfigError, ["password authentication failed", "check its host"]),
        ({"schema": "nope"}, om.ConfigError, ["Schema 'nope'", "hr, information_schema", "public"]),
        ({"url": "jdbc:postgresql://127.0.0.1:1/erp"}, om.ConfigError, ["127.0.0.1:1", "refused"]),
        ({"url": "jdbc:sqlserver://127.0.0.1:1;databaseName=erp"}, om.MissingDependencyError,
         ["com.microsoft.sqlserver.jdbc.SQLServerDriver", "spark.jars"]),
        ({"password_env": "OPENMIRROR_TEST_UNSET"}, om.ConfigError, ["OPENMIRROR_TEST_UNSET", "is not set"]),
    ],
)  # fmt: skip
def test_a_source_that_cannot_be_read_fails_in_one_line_without_the_password(
    postgres, spark, change, error, words
):
    args = {"url": postgres.url, "user": SUPERUSER, "password": PASSWORD, "schema": "public", **change}
    if "password_env" in change:
        del args["password"]
    with pytest.raises(error) as caught:
        om.Jdbc(args.pop("url"), **args).discover()
    text = str(caught.value)
    assert all(w in text for w in words), text
    assert "\n" not in text and PASSWORD not in text and "at org." not in text
