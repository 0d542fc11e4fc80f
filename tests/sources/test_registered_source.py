"""A source kind and a strategy of one's own, registered as the built-in ones are: a folder of CSV
files (``CsvFolder``, registered as ``"package.module:Class"``) planned, saved, loaded, run, changed
and run again, and shown in the ``SourcePlanner`` panel and ``%openmirror discover``; a strategy
(``LiveRows``: a snapshot of the rows not flagged deleted) that a new plan gives the tables it fits.
An unknown or unimportable kind or strategy is one line naming the call that registers it. Each
test leaves the registries as it found them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.sources.plan_strategy import STRATEGIES
from openmirror_nb._core.sources.registry import SOURCES
from tests.magics.test_commands import new_shell
from tests.reliability.harness import mirrored_rows

KIND = "csv_folder"
BUILT_IN = ("snapshot", "delta_sync", "incremental", "append", "cdc")


class CsvFolder(om.Source):
    """The CSV files of a folder, one table each (``orders.csv`` is ``orders``), a header row
    first; the column named ``key`` is each table's primary key."""

    kind = KIND

    def __init__(self, path: str | Path, *, key: str = "id") -> None:
        self.path, self.key = str(path), key

    def discover(self) -> list[om.SourceTable]:
        found = []
        for file in sorted(Path(self.path).glob("*.csv")):
            frame = self.read(file.stem)
            key = (self.key,) if self.key in frame.columns else ()
            rows = len(file.read_text(encoding="utf-8").splitlines()) - 1
            found.append(om.SourceTable.from_schema(file.stem, frame.schema, primary_key=key, rows=rows))
        return found

    def read(self, table: str):  # a Spark DataFrame, read lazily but for its schema
        return om.get_spark().read.csv(f"{self.path}/{table}.csv", header=True, inferSchema=True)

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "key": self.key}

    def __repr__(self) -> str:
        return f"CsvFolder({self.path!r})"


class LiveRows(om.PlanStrategy):
    """A snapshot of the rows whose ``deleted`` column is false: a row the source flags is
    mirrored as deleted. A new plan gives it every table with that column."""

    def fits(self, table: om.SourceTable) -> bool:
        return any(c.name == "deleted" for c in table.columns)

    def problems(self, empty, planned, table, source) -> list[str]:
        if "deleted" in empty.columns:
            return []
        return ["live_rows reads a deleted column and this table has none; use snapshot"]

    def push(self, run, planned, frame):
        return run.push(planned, _live(frame))

    def would_push(self, run, planned, frame) -> str:
        return f"would push the {_live(frame).count():,} live rows"


def _live(frame):
    return frame.where("NOT deleted").drop("deleted")


@pytest.fixture
def registered():
    """``csv_folder`` registered by its path, ``live_rows`` by its class; afterwards the registries
    are as they were, so no other test sees them."""
    saved = [(r, dict(r.targets), dict(r.loaded)) for r in (SOURCES, STRATEGIES)]
    om.register_source(KIND, f"{__name__}:CsvFolder")
    om.register_strategy("live_rows", LiveRows)
    yield
    for registry, targets, loaded in saved:
        registry.targets, registry.loaded = targets, loaded
    assert om.strategy_names() == BUILT_IN and KIND not in SOURCES.names()


def _write(path: Path, *rows: str) -> None:
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "csv"
    root.mkdir()
    _write(root / "orders.csv", "id,v", "1,a", "2,b", "3,c")
    _write(root / "items.csv", "id,v,deleted", "10,x,false", "11,y,false")
    return root


@pytest.mark.spark
def test_a_registered_source_is_planned_saved_loaded_run_and_run_again(registered, folder, spark, tmp_path):
    db = om.connect(tmp_path / "db", lock_timeout=5)
    src = CsvFolder(folder)
    plan = db.plan_sources(src, target_schema="csv", suggest=False)
    assert [(t.source, t.table, t.keys, t.key_origin, t.strategy, t.problems) for t in plan.tables] == [
        ("items", "csv.items", ("id",), "primary_key", "live_rows", ()),  # the strategy that fits it
        ("orders", "csv.orders", ("id",), "primary_key", "snapshot", ()),
    ]
    path = tmp_path / "csv.yaml"
    plan.save(path)
    text = path.read_text(encoding="utf-8")
    assert f"source:\n  kind: {KIND}\n  path: {folder}\n  key: id\n" in text and "strategy: live_rows" in text
    loaded = om.load_plan(path)
    assert isinstance(loaded.source, CsvFolder) and loaded.source.to_dict() == src.to_dict()
    assert loaded.tables == plan.tables

    dry = db.run_plan(loaded, dry_run=True)
    assert dry.table("csv.items").reason == "would push the 2 live rows" and db.tables() == []
    assert {t.source: t.status for t in db.run_plan(loaded).tables} == {"items": "ok", "orders": "ok"}
    _write(folder / "orders.csv", "id,v", "1,a", "2,B", "4,d")  # an update, a delete, an insert
    _write(folder / "items.csv", "id,v,deleted", "10,x,false", "11,y,true", "12,z,false")  # 11 flagged
    again = db.run_plan(om.load_plan(path))
    assert {t.source: t.status for t in again.tables} == {"items": "ok", "orders": "ok"}
    db.local_mirror.run_once()
    assert mirrored_rows(db, "csv.orders", ("id", "v")) == [(1, "a"), (2, "B"), (4, "d")]
    assert mirrored_rows(db, "csv.items", ("id", "v")) == [(10, "x"), (12, "z")]

    nobody = dataclasses.replace(plan.tables[1], strategy="soft_deletes")  # registered by no one
    failed = db.run_plan(dataclasses.replace(plan, tables=[nobody])).tables[0]
    assert failed.status == "failed" and "om.register_strategy('soft_deletes', " in failed.reason


@pytest.mark.spark
def test_the_panel_and_the_discover_magic_show_a_registered_source(
    registered, folder, spark, tmp_path, monkeypatch
):
    db = om.connect(tmp_path / "db", lock_timeout=5)
    panel = om.widgets.SourcePlanner(db, CsvFolder(folder), target_schema="csv")
    try:
        rows = {row.original.source: row for row in panel.grid.rows}
        assert (rows["items"].strategy.value, rows["orders"].strategy.value) == ("live_rows", "snapshot")
        assert (
            rows["orders"].strategy.options == (*BUILT_IN, "live_rows") and rows["items"].keys.value == "id"
        )
        run = panel.run(dry_run=True)
        assert run is not None and run.table("csv.items").reason == "would push the 2 live rows"
    finally:
        panel.close()

    monkeypatch.chdir(tmp_path)
    shell = new_shell(singleton=False)
    shell.run_line_magic("load_ext", "openmirror_nb")
    try:
        shell.user_ns.update(src=CsvFolder(folder), other=3)
        shell.run_line_magic("openmirror", f"connect {tmp_path / 'db'}")
        plan = shell.run_line_magic("openmirror", "discover src --target-schema csv --save csv.yaml")
        assert [(t.table, t.strategy) for t in plan.tables] == [
            ("csv.items", "live_rows"),
            ("csv.orders", "snapshot"),
        ]
        assert isinstance(om.load_plan(tmp_path / "csv.yaml").source, CsvFolder)
        with pytest.raises(Exception, match=r"'other' is int, not a source .*om.register_source"):
            shell.run_line_magic("openmirror", "discover other")
    finally:
        shell.run_line_magic("unload_ext", "openmirror_nb")


def test_an_unknown_or_unimportable_kind_or_strategy_is_one_line_naming_the_call(registered, tmp_path):
    planned = om.PlannedTable(
        "items", "csv.items", ("id",), "primary_key", "live_rows", None, True, True, 2, ()
    )
    path = tmp_path / "csv.yaml"
    om.SourcePlan(CsvFolder(tmp_path), "csv", [planned]).save(path)
    text = path.read_text(encoding="utf-8")

    def refused(edited: str, *words: str) -> None:
        path.write_text(edited, encoding="utf-8")
        with pytest.raises(om.ConfigError) as caught:
            om.load_plan(path)
        assert "\n" not in str(caught.value) and all(w in str(caught.value) for w in words), str(caught.value)

    refused(
        text.replace(KIND, "parquet_folder"),
        f"source kind 'parquet_folder' is not one of catalog, jdbc, delta_folder, {KIND}.",
        "om.register_source('parquet_folder', 'package.module:Class')",
    )
    refused(
        text.replace("live_rows", "live_rowz"),
        "strategy 'live_rowz' is not one of",
        "Did you mean 'live_rows'?",
    )
    refused(
        text.replace("live_rows", "soft_deletes"),
        "om.register_strategy('soft_deletes', 'package.module:Class')",
    )
    om.register_source("broken", "no_such_package.sources:Broken")  # registering imports nothing
    refused(
        text.replace(KIND, "broken"),
        "om.register_source('broken', 'no_such_package.sources:Broken'): no_such_package.sources cannot be "
        "imported (ModuleNotFoundError: No module named 'no_such_package')",
    )
    om.register_strategy("gone", f"{__name__}:Gone")
    refused(
        text.replace("live_rows", "gone"), f"om.register_strategy('gone', '{__name__}:Gone'): ", "has no Gone"
    )

    class Unregistered(CsvFolder):
        kind = "unregistered"

    with pytest.raises(om.ConfigError, match=r"Register it first: om.register_source\('unregistered', "):
        om.SourcePlan(Unregistered(tmp_path), "csv", [planned]).save(path)  # it could not load back


def test_registering_a_name_again_and_a_class_that_is_not_one(registered):
    om.register_source(KIND, CsvFolder)  # the same class, as a class: nothing changes
    om.register_strategy("live_rows", f"{__name__}:LiveRows")
    with pytest.raises(
        om.ConfigError, match=rf"'{KIND}' is registered already, to '{__name__}:CsvFolder'; pass clobber"
    ):
        om.register_source(KIND, "my_package.csv:CsvFolder")
    om.register_strategy("live_rows", "my_package.strategies:LiveRows", clobber=True)
    with pytest.raises(om.ConfigError, match=r"my_package\.strategies cannot be imported"):
        om.get_strategy("live_rows")

    class Half:
        kind = "half"

        def discover(self) -> list[om.SourceTable]:
            return []

    bad = [
        (lambda: om.register_source("half", Half), "Half lacks delta_location, delta_tables, from_dict"),
        (lambda: om.register_source("other", CsvFolder), f"CsvFolder.kind is '{KIND}', not 'other'"),
        (lambda: om.register_strategy("Live Rows", LiveRows), "not a name of lower-case letters"),
        (lambda: om.register_strategy("live", "no colon"), "'package.module:Class'"),
    ]
    for call, words in bad:
        with pytest.raises(om.ConfigError) as caught:
            call()
        assert words in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
    assert isinstance(CsvFolder("x"), om.Source) and not isinstance(Half(), om.Source)
    assert "half" not in SOURCES.names() and "live" not in om.strategy_names()
