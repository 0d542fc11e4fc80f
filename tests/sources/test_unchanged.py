"""Unchanged tables are not read (issue 39, item 3): a rerun asks each source table's version first
(``Source.version``) and leaves a table whose version, plan and mirrored table are as the last run
left them unread, ``unchanged``, without a Spark job; a table changed in any way (insert, update,
delete, TRUNCATE, ``ADD COLUMN ... DEFAULT``) is read and mirrored, also a change its backend has
not reported to PostgreSQL's statistics yet (by the run after it is reported); a Delta table by its
version; a source that cannot say, or fails to, is read as before, and so is every table with
``reread=True``. The PostgreSQL tables are in a schema of their own of the session's server."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest

import openmirror_nb as om
from openmirror_nb._core.sources import pg_version
from openmirror_nb._core.sources.delta_version import delta_version
from tests.conftest import tree_hash
from tests.reliability.harness import lzcheck, rows_of
from tests.sources.postgres import DATABASE, SUPERUSER

pytestmark = pytest.mark.spark
SCHEMA = "unchanged_t"
TABLES = ("calm", "col", "del", "ins", "trn", "upd")
# psql's session reports its counts before it answers the last statement: the run after sees them
# (a backend reports at most once a second, so a session of several statements would not)
FLUSH = "SELECT pg_stat_force_next_flush();"


@pytest.fixture(scope="module")
def source(erp, postgres):
    """``TABLES`` and ``live`` (the open connection's), two rows each (``id``, ``v``), in a schema of
    their own, and a source of it."""
    made = "".join(
        f"CREATE TABLE {SCHEMA}.{t} (id int PRIMARY KEY, v text); INSERT INTO {SCHEMA}.{t} VALUES (1, 'a'), (2, 'b');"
        for t in (*TABLES, "live")
    )
    postgres.sql(f"CREATE SCHEMA {SCHEMA}; {made} {FLUSH}")
    return om.Jdbc(erp.url, user=SUPERUSER, password_env="ERP_PASSWORD", schema=SCHEMA)


def _plan(db, source, *tables: str) -> om.SourcePlan:
    plan = db.plan_sources(source, target_schema="u", suggest=False)
    return dataclasses.replace(plan, tables=[t for t in plan.tables if t.source in tables])


def _source_rows(postgres, table: str, columns: tuple[str, ...]) -> list[tuple]:
    out = postgres.sql(f"SELECT {', '.join(columns)} FROM {SCHEMA}.{table};")
    records = [dict(zip(columns, line.split("|"), strict=True)) for line in out.splitlines() if line]
    typed = [{c: int(v) if c != "v" else v for c, v in r.items()} for r in records]
    return rows_of(typed, columns)


def _mirrored(db, table: str, columns: tuple[str, ...] = ("id", "v")) -> list[tuple]:
    """The rows the landing zone holds for ``u.<table>``, replayed by the contract checker."""
    return lzcheck(db.target.landing_zone, f"u.{table}", columns)


def _jobs(spark) -> int:
    """The id the next Spark job of the session gets: how many jobs it ever started."""
    return int(spark.sparkContext._jsc.sc().dagScheduler().nextJobId())


def _unread(monkeypatch) -> None:
    """Any read of a table of a JDBC source fails the test."""

    def read(self, table, **_):
        raise AssertionError(f"table {table} was read")

    monkeypatch.setattr(om.Jdbc, "read_columns", read)


def test_a_rerun_reads_only_the_tables_that_changed_each_way(source, postgres, db, spark, monkeypatch):
    plan = _plan(db, source, *TABLES)
    first = db.run_plan(plan, parallel=3)
    assert first.counts["ok"] == len(TABLES), repr(first)

    events: list[om.ProgressEvent] = []
    written = tree_hash(db.target.root)
    with monkeypatch.context() as patch:
        _unread(patch)
        jobs = _jobs(spark)
        again = db.run_plan(plan, parallel=3, progress=events.append)
        assert _jobs(spark) == jobs  # not one Spark job, over rows or anything else
    assert events == [] and again.ok  # no push started
    assert tree_hash(db.target.root) == written  # nothing written, not even a last-checked record
    assert [t.status for t in again.tables] == ["unchanged"] * len(TABLES)
    assert all(t.result is None and t.reason.startswith("not read: the source says") for t in again.tables)
    assert f"{len(TABLES)} unchanged (not read: the source says so)" in again.summary()

    postgres.sql(
        f"""
        INSERT INTO {SCHEMA}.ins VALUES (3, 'c');
        UPDATE {SCHEMA}.upd SET v = 'B' WHERE id = 2;
        DELETE FROM {SCHEMA}.del WHERE id = 2;
        TRUNCATE {SCHEMA}.trn;
        ALTER TABLE {SCHEMA}.col ADD COLUMN x int DEFAULT 7;
        {FLUSH}
        """
    )
    third = db.run_plan(plan, parallel=3)
    assert {t.source: (t.status, t.rows) for t in third.tables} == {
        "calm": ("unchanged", {}),
        "col": ("ok", {"upsert": 2}),
        "del": ("ok", {"delete": 1}),
        "ins": ("ok", {"insert": 1}),
        "trn": ("ok", {"delete": 2}),
        "upd": ("ok", {"upsert": 1}),
    }, repr(third)
    assert third.table("calm").result is None  # still not read
    for table in TABLES:
        columns = ("id", "v", "x") if table == "col" else ("id", "v")
        assert _mirrored(db, table, columns) == _source_rows(postgres, table, columns), table


def test_a_change_its_backend_has_not_reported_yet_is_mirrored_by_a_later_run(source, postgres, db):
    """A connection that stays open commits an update, then stays busy: its counts reach the
    statistics only once it is idle. A run may find the old counts (and leave the table unread);
    the run after they show the change mirrors it."""
    plan = _plan(db, source, "live")
    assert db.run_plan(plan).table("live").rows == {"initial": 2}
    counted = f"SELECT n_tup_upd FROM pg_stat_user_tables WHERE relid = '{SCHEMA}.live'::regclass;"
    updates = int(postgres.sql(counted))
    psql = subprocess.Popen(
        [str(postgres.bin / "psql"), "-X", "-q", "-h", str(postgres.root), "-p", str(postgres.port),
         "-U", SUPERUSER, "-d", DATABASE],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        **_as_server(postgres),
    )  # fmt: skip
    try:
        assert psql.stdin is not None
        # one message: the update commits, and the backend reports its count only after the sleep
        psql.stdin.write(
            f"BEGIN \\; UPDATE {SCHEMA}.live SET v = 'z' WHERE id = 1 \\; COMMIT \\; SELECT pg_sleep(4);\n"
        )
        psql.stdin.flush()
        _wait(lambda: postgres.sql(f"SELECT v FROM {SCHEMA}.live WHERE id = 1;").strip() == "z", "the update")
        soon = db.run_plan(plan).table("live")  # may find the old counts: unchanged, or the update
        assert (soon.status, soon.rows) in [("unchanged", {}), ("ok", {"upsert": 1})], soon
        _wait(lambda: int(postgres.sql(counted)) > updates, "the update's count in pg_stat_user_tables")
        later = db.run_plan(plan).table("live")
        assert (soon.rows or later.rows) == {"upsert": 1} and not (soon.rows and later.rows)
        assert _mirrored(db, "live") == [(1, "z"), (2, "b")]  # never lost
    finally:
        psql.stdin.close() if psql.stdin else None
        psql.wait(timeout=60)


def _as_server(postgres) -> dict:
    """``psql`` as the server's user where the tests run as root (``postgres._run`` does so)."""
    user = postgres.user
    return {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _wait(done, what: str, seconds: float = 120) -> None:
    """Poll ``done`` until true; fail naming ``what`` after ``seconds`` (a backend reports its
    counts at the latest a minute after a change)."""
    end = time.monotonic() + seconds
    while not done():
        if time.monotonic() > end:
            pytest.fail(f"{what} did not show within {seconds:.0f} s")
        time.sleep(0.2)


def test_a_source_that_fails_to_say_has_its_table_read(source, caplog, monkeypatch):
    from openmirror_nb._core.sources.unchanged import ask

    def fails(self, table):
        raise RuntimeError(f"no statistics for {table}")

    planned = om.PlannedTable(
        source="calm", table="u.calm", keys=("id",), key_origin="primary_key", strategy="snapshot",
        watermark=None, detect_deletes=True, enabled=True, rows=2, problems=(),
    )  # fmt: skip
    monkeypatch.setattr(om.Jdbc, "version", fails)
    with caplog.at_level(logging.WARNING):
        assert ask(source, planned).version is None  # as a source that cannot say: read
    assert (
        "cannot say whether table calm changed (RuntimeError: no statistics for calm); it is read"
        in caplog.text
    )


def test_the_counters_are_not_used_where_they_may_miss_a_change(source, postgres):
    assert source.version("calm") == source.version("calm") is not None
    assert source.version("no_such_table") is None  # its read fails as before
    counts_off = om.Jdbc(
        source.url,
        user=SUPERUSER,
        password_env="ERP_PASSWORD",
        schema=SCHEMA,
        properties={"options": "-c track_counts=off"},  # this session's setting, as a superuser may
    )
    assert counts_off.version("calm") is None
    good = [
        "PostgreSQL 16.2 on x86_64",
        "on",
        "f",
        "",
        "1",
        "t",
        "16384:16390:5:2",
        "1:id:23",
        "f:f:",
        "",
        "",
    ]
    assert pg_version.version_of(good) is not None
    for index, value in [
        (0, "PostgreSQL 15.2-YB-2.25.0.0 on x86_64"),  # Yugabyte speaks PostgreSQL's protocol
        (1, "off"),
        (2, "t"),  # a standby
        (3, "track_counts=off"),  # ALTER DATABASE / ROLE ... SET track_counts = off
        (3, ",citus"),
        (4, "0"),  # gone
        (5, "f"),  # a foreign partition or another access method
    ]:
        assert pg_version.version_of([*good[:index], value, *good[index + 1 :]]) is None, (index, value)
    assert pg_version.version_of([*good[:6], "16384:16390:6:2", *good[7:]]) != pg_version.version_of(good)


@pytest.fixture
def lake(tmp_path):
    from deltalake import write_deltalake

    root = tmp_path / "Tables"
    write_deltalake(root / "orders", pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    return root


def test_a_delta_table_is_read_only_when_its_version_moved(lake, db, monkeypatch):
    from deltalake import write_deltalake

    source = om.DeltaFolder(lake)
    plan = db.plan_sources(source, target_schema="u", suggest=False)
    plan = dataclasses.replace(
        plan, tables=[dataclasses.replace(plan.tables[0], keys=("id",), key_origin="declared", problems=())]
    )
    assert db.run_plan(plan).table("orders").rows == {"initial": 2}
    with monkeypatch.context() as patch:
        patch.setattr(om.DeltaFolder, "read", lambda self, table: pytest.fail(f"{table} was read"))
        before = tree_hash(db.target.root)
        dry = db.run_plan(plan, dry_run=True).table("orders")
        assert tree_hash(db.target.root) == before  # a dry run records nothing
        again = db.run_plan(plan).table("orders")
    assert (dry.status, again.status, again.result) == ("unchanged", "unchanged", None)
    assert "not read" in dry.reason and again.reason == dry.reason

    write_deltalake(lake / "orders", pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}), mode="append")
    assert db.run_plan(plan).table("orders").rows == {"insert": 1}

    reread = db.run_plan(plan, reread=True).table("orders")
    assert reread.status == "unchanged" and reread.result is not None  # read, and nothing to publish

    db.push(_frame([(1, "x")]), table="u.orders", keys=["id"], progress=False)  # another writer
    assert db.run_plan(plan).table("orders").rows == {"upsert": 1, "insert": 2}  # read: put back
    assert _mirrored(db, "orders") == [(1, "a"), (2, "b"), (3, "c")]


def _frame(rows: list[tuple[int, str]]):
    from openmirror_nb._core.runtime import get_spark

    return get_spark().createDataFrame(rows, "id long, v string")


@pytest.mark.parametrize("reader", ["spark", "deltalake"])
def test_a_delta_version_moves_with_each_commit_and_a_table_made_again(lake, spark, reader, monkeypatch):
    from deltalake import write_deltalake

    from openmirror_nb._core.pipeline.delta import source

    if reader == "spark" and not source.spark_has_delta(spark):
        pytest.skip("this Spark line has no Delta jars")
    if reader == "deltalake":
        monkeypatch.setattr(source, "spark_has_delta", lambda _session: False)
    uri = str(lake / "orders")
    first = delta_version(spark, uri)
    assert first.startswith("0 of table ") and delta_version(spark, uri) == first
    write_deltalake(uri, pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}), mode="append")
    moved = delta_version(spark, uri)
    assert moved.startswith("1 of table ") and moved.removeprefix("1") == first.removeprefix("0")
    for path in Path(uri).iterdir():  # the table made again: its versions start again
        path.unlink() if path.is_file() else shutil.rmtree(path)
    write_deltalake(uri, pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    write_deltalake(uri, pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}), mode="append")
    assert delta_version(spark, uri).startswith("1 of table ") and delta_version(spark, uri) != moved


def test_a_catalog_table_has_a_version_only_when_it_is_a_delta_table(spark, tmp_path):
    from openmirror_nb._core.pipeline.delta.source import spark_has_delta

    if not spark_has_delta(spark):
        pytest.skip("this Spark line has no Delta jars")
    name = "om_unchanged_catalog"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{(tmp_path / 'catalog').as_uri()}'")
    try:
        spark.sql(f"CREATE TABLE {name}.d (id long) USING delta")
        spark.sql(f"CREATE TABLE {name}.p (id long) USING parquet")
        spark.sql(f"CREATE VIEW {name}.w AS SELECT id FROM {name}.d")
        catalog = om.Catalog(name)
        empty = catalog.version("d")
        spark.sql(f"INSERT INTO {name}.d VALUES (1)")
        assert empty is not None and empty.startswith("0 of table ")
        assert catalog.version("d") == "1" + empty.removeprefix("0")
        assert (catalog.version("p"), catalog.version("w")) == (None, None)
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
