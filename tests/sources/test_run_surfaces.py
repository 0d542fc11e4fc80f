"""A folder of Delta tables mirrored through the surfaces: ``openmirror run PLAN.yaml`` (exit 0,
then 1 when a table failed; ``--dry-run`` writes nothing), ``delta_sync`` for the table with its
change data feed and a snapshot for the other, compared with the source row for row after
updates, deletes and inserts; and ``%openmirror discover`` / ``%openmirror run`` in a real shell."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import openmirror_nb as om
from openmirror_nb._core.cli import main
from tests.conftest import tree_hash
from tests.magics.test_commands import new_shell
from tests.reliability.harness import mirrored_rows, rows_of

pytestmark = pytest.mark.spark
COLUMNS = ("id", "v")


def _rows(ids, v) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([v] * len(ids), pa.string())})


@pytest.fixture
def lake(tmp_path):
    tables = tmp_path / "Tables"
    write_deltalake(
        str(tables / "feed"), _rows(range(5), "a"), configuration={"delta.enableChangeDataFeed": "true"}
    )
    write_deltalake(str(tables / "plain"), _rows(range(3), "b"))
    return tables


def _plan_file(db, lake, path, **keys) -> str:
    plan = db.plan_sources(om.DeltaFolder(lake), target_schema="lake")
    tables = [
        dataclasses.replace(t, keys=keys.get(t.source, ("id",)), key_origin="declared") for t in plan.tables
    ]
    dataclasses.replace(plan, tables=tables).save(path)
    return str(path)


def _same(db, lake, name: str) -> None:
    db.local_mirror.run_once()
    expected = rows_of(DeltaTable(str(lake / name)).to_pyarrow_table().to_pylist(), COLUMNS)
    assert mirrored_rows(db, f"lake.{name}", COLUMNS) == expected


def test_openmirror_run_mirrors_a_delta_folder_and_exits_1_when_a_table_fails(spark, tmp_path, lake, capsys):
    db = om.connect(tmp_path / "db")
    path = _plan_file(db, lake, tmp_path / "lake.yaml")
    assert om.load_plan(path).table("feed").strategy == "delta_sync"
    argv = ["run", path, "--db", str(tmp_path / "db"), "--parallel", "2"]

    before = tree_hash(tmp_path / "db")
    assert main([*argv, "--dry-run"]) == 0
    assert "would load the Delta table" in capsys.readouterr().out
    assert tree_hash(tmp_path / "db") == before

    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "PlanRun of 2 tables" in out and "2 ok" in out
    DeltaTable(str(lake / "feed")).update(updates={"v": "'c'"}, predicate="id < 2")
    DeltaTable(str(lake / "feed")).delete("id = 4")
    write_deltalake(str(lake / "plain"), _rows([0, 1, 7], "b"), mode="overwrite")
    assert main(argv) == 0
    assert "2 ok" in capsys.readouterr().out
    for name in ("feed", "plain"):
        _same(db, lake, name)
    db_run = om.connect(tmp_path / "db").run_plan(om.load_plan(path))
    assert {t.status for t in db_run.tables} == {"unchanged"}
    assert "2 unchanged (not read: the source says so)" in repr(db_run)  # their Delta versions
    capsys.readouterr()
    assert main([*argv, "--reread"]) == 0  # both read, and nothing to publish
    out = capsys.readouterr().out
    assert "2 unchanged" in out and "not read" not in out

    bad = _plan_file(db, lake, tmp_path / "bad.yaml", plain=("v",))  # keys edited on a mirrored table
    assert main(["run", bad, "--db", str(tmp_path / "db")]) == 1
    out = capsys.readouterr().out
    assert "FAILED lake.plain (plain): Table lake.plain is mirrored with keyColumns ['id']" in out


def test_the_magics_discover_and_run(spark, tmp_path, lake, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shell = new_shell(singleton=False)
    shell.run_line_magic("load_ext", "openmirror_nb")
    try:
        shell.user_ns["src"] = om.DeltaFolder(lake)
        shell.run_line_magic("openmirror", f"connect {tmp_path / 'db'}")
        plan = shell.run_line_magic("openmirror", "discover src --target-schema lake --save lake.yaml")
        assert isinstance(plan, om.SourcePlan) and (tmp_path / "lake.yaml").is_file()
        assert [t.table for t in plan.tables] == ["lake.feed", "lake.plain"]
        held = shell.run_line_magic("openmirror", "run lake.yaml")
        assert isinstance(held, om.PlanRun) and {t.status for t in held.tables} == {"skipped"}
        shell.user_ns["plan"] = plan
        run = shell.run_line_magic("openmirror", "run plan --accept-suggested --parallel 2")
        assert run.ok and {t.status for t in run.tables} == {"ok"}
        with pytest.raises(Exception, match="'src' is DeltaFolder, not a SourcePlan"):
            shell.run_line_magic("openmirror", "run src")
    finally:
        shell.run_line_magic("unload_ext", "openmirror_nb")


def test_openmirror_run_in_parallel_logs_every_tables_lines(spark, tmp_path, capsys):
    lake = tmp_path / "Tables"
    names = ("a", "b", "c")
    for n, name in enumerate(names):
        write_deltalake(str(lake / name), _rows(range(n + 2), name))
    db = om.connect(tmp_path / "db")
    path = _plan_file(db, lake, tmp_path / "three.yaml")

    assert main(["run", path, "--db", str(tmp_path / "db"), "--parallel", "3"]) == 0
    err = capsys.readouterr().err
    for name in names:  # before the fix, one table's lines hid the others' (same phase, same step)
        assert f"lake.{name}: validating names, keys and types" in err
        assert f"lake.{name}: done: " in err


def test_a_table_whose_run_failed_is_failed_in_status_until_a_run_of_it_succeeds(
    spark, tmp_path, lake, capsys
):
    db = om.connect(tmp_path / "db")
    path = _plan_file(db, lake, tmp_path / "lake.yaml")
    argv = ["run", path, "--db", str(tmp_path / "db")]
    assert main(argv) == 0
    db.local_mirror.run_once()
    assert main(["status", "--db", str(tmp_path / "db")]) == 0
    capsys.readouterr()

    folders = tmp_path / "db" / "Files" / "LandingZone" / "lake.schema"
    before = tree_hash(folders)
    assert (folders / "plain").is_dir() and (folders / "feed").is_dir()
    (lake / "plain").rename(tmp_path / "plain.away")  # the source table can no longer be read
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert tree_hash(folders) == before  # a failed run touches no table folder

    found = om.connect(tmp_path / "db").status()
    plain = found["lake.plain"]
    assert (plain.health, found["lake.feed"].health) == ("failed", "ok")
    assert plain.run_error and f"FAILED lake.plain (plain): {plain.run_error}" in out
    assert plain.advice[0] == f"the last run failed: {plain.run_error}"
    assert main(["status", "--db", str(tmp_path / "db")]) == 1
    shown = capsys.readouterr().out
    assert "lake.plain" in shown and plain.run_error in shown

    (tmp_path / "plain.away").rename(lake / "plain")
    assert main(argv) == 0
    found = om.connect(tmp_path / "db").status()
    assert (found["lake.plain"].health, found["lake.plain"].run_error) == ("ok", "")
    assert main(["status", "--db", str(tmp_path / "db")]) == 0
