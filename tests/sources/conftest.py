"""Fixtures of the source tests: one PostgreSQL server for the session (``postgres.py``), loaded
with ``erp.sql``; the shared Spark session, which has Debian's driver jar on ``spark.jars`` because
``get_spark`` started it; the ``public`` schema as a source and its plan, made once per test session
(profiling the keyless tables runs Spark jobs)."""

from __future__ import annotations

from pathlib import Path

import pytest

import openmirror_nb as om
from tests.sources.postgres import PASSWORD, SUPERUSER, missing, start_server

SCHEMA = Path(__file__).with_name("erp.sql")
PUBLIC_TABLES = [
    "Order Notes",
    "customers",
    "events",
    "exchange_rates",
    "legacy_import",
    "mixed_case",
    "order_lines",
    "ordernotes",
    "orders",
    "page_views",
    "products",
    "returns",
    "sessions",
    "stock_levels",
    "warehouses",
]


@pytest.fixture(scope="session")
def postgres():
    """A running PostgreSQL with the ``erp`` database loaded; stopped and deleted after the session.

    Skips (saying why) where PostgreSQL or its JDBC driver is not installed: scripts/setup-env
    installs both on Debian, and fails there if it cannot.
    """
    why = missing()
    if why:
        pytest.skip(why)
    server = start_server()
    try:
        server.sql(SCHEMA.read_text(encoding="utf-8"))
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def erp(postgres, spark):
    """The ``public`` schema of the test database as a source; its password is in an environment
    variable, as a saved plan refers to it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ERP_PASSWORD", PASSWORD)
        yield om.Jdbc(postgres.url, user=SUPERUSER, password_env="ERP_PASSWORD", schema="public")


@pytest.fixture(scope="session")
def planned_db(tmp_path_factory):
    return om.connect(tmp_path_factory.mktemp("planned") / "db")


@pytest.fixture(scope="session")
def erp_plan(erp, planned_db):
    """The plan of the ``public`` schema into ``shop``, keys suggested where the database has none."""
    return planned_db.plan_sources(erp, target_schema="shop")


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db", lock_timeout=5)
