"""Table names real sources have, end to end on a local database (issue 22).

Every hostile name walks the push, sync_delta, drop and reseed paths: each outcome is either a
table that mirrors correctly (the local mirror's Delta table equals the data, ``db.tables()`` and
``db.status()`` show it, a reseed and a drop work) or an ``OpenMirrorError`` with a one-line message,
the landing zone byte-identical after it. No internal exception class reaches the caller. Two
spellings of one table are refused at the first push of the second, even when both race.
"""

from __future__ import annotations

import threading

import pytest
from deltalake import write_deltalake

import openmirror_nb as om
from openmirror_nb._core.errors import InvalidNameError, LandingZoneError, OpenMirrorError
from openmirror_nb._core.pipeline.push import run as push_module
from tests.conftest import tree_hash
from tests.reliability.harness import mirrored_rows, rows_of

pytestmark = pytest.mark.spark

COLUMNS = ("id", "v")
ROWS = [(1, "a"), (2, "b"), (3, "c")]
MAX_NAME = "Ж" * 50 + "." + "ж" * 55 + "a"  # 212 bytes of UTF-8: the longest name allowed
REFUSED = [
    "my table",
    "Sales Header.G-L Entry",
    "a%20b",
    "G/L Entry",
    "a\\b",
    "..",
    "../x",
    "_x",
    "s._t",
    "tab\tle",
    "nul\x00",
    "x" * 300,
    "a.b.c",
]


def _frame(spark, rows=ROWS):
    return spark.createDataFrame(rows, "id long, v string")


@pytest.fixture(scope="module")
def seeded(spark, tmp_path_factory):
    """A database holding table ``orders`` (mirrored) and a Delta source to sync from."""
    root = tmp_path_factory.mktemp("names")
    db = om.connect(root / "db", lock_timeout=5)
    db.push(_frame(spark), table="orders", keys=["id"], progress=False)
    om.LocalMirror(db.target.root).run_once()
    source = str(root / "source")
    write_deltalake(source, _frame(spark).toPandas())
    return db, source


def _calls(spark, db, name, source):
    df = _frame(spark)
    return {
        "push": lambda: db.push(df, table=name, keys=["id"], progress=False),
        "changes": lambda: db.push(df.selectExpr("*", "4 AS op"), table=name, mode="changes", op_column="op"),
        "sync_delta": lambda: db.sync_delta(source, table=name, keys=["id"]),
        "drop": lambda: db.drop(name),
        "plan_schema_change": lambda: db.plan_schema_change(name, df),
        "status": lambda: db.status(name),
        "recover": lambda: db.recover(name),
    }


@pytest.mark.parametrize("name", REFUSED, ids=[repr(n)[:20] for n in REFUSED])
def test_a_refused_name_changes_nothing_on_any_path(spark, seeded, name):
    db, source = seeded
    lz = db.target.landing_zone
    before = tree_hash(lz)
    for path, call in _calls(spark, db, name, source).items():
        with pytest.raises(OpenMirrorError) as caught:
            call()
        message = str(caught.value)
        assert type(caught.value) is InvalidNameError, f"{path}: {type(caught.value).__name__}: {message}"
        assert message and "\n" not in message and message.strip() == message, path
        assert "choose a name like" in message, (path, message)
        assert tree_hash(lz) == before, path
    assert db.tables() == ["orders"]


@pytest.mark.parametrize("name", ["Orders", "ORDERS", "dbo.orders", "DBO.Orders"])
def test_another_spelling_of_a_table_changes_nothing_on_any_path(spark, seeded, name):
    db, source = seeded
    lz = db.target.landing_zone
    before = tree_hash(lz)
    calls = _calls(spark, db, name, source)
    for path in ("push", "changes", "sync_delta"):  # a first push of this spelling
        with pytest.raises(InvalidNameError) as caught:
            calls[path]()
        message = str(caught.value)
        assert f"{name!r} is table 'orders' of the landing zone spelled another way" in message, path
        assert "push to 'orders'" in message and "\n" not in message
        assert tree_hash(lz) == before, path
    assert not calls["drop"]().existed  # no folder of that spelling: nothing to drop
    with pytest.raises(LandingZoneError, match="Did you mean 'orders'"):
        calls["plan_schema_change"]()
    assert [t.table for t in calls["status"]().tables] == ["orders"]  # status compares as the mirror
    assert tree_hash(lz) == before and db.tables() == ["orders"]


@pytest.mark.parametrize(
    ("name", "stored", "reseed"),
    [
        ("nai\u0308ve.n\u0303andu\u0301", "naïve.ñandú", False),  # typed decomposed, kept NFC
        (MAX_NAME, MAX_NAME, True),
        ("Δ.表", "Δ.表", False),
        ("GLEntry-17", "GLEntry-17", False),
    ],
    ids=["nfd", "longest", "greek-cjk", "hyphen"],
)
def test_a_name_that_works_is_mirrored_listed_reseeded_and_dropped(spark, tmp_path, name, stored, reseed):
    db = om.connect(tmp_path / "db", lock_timeout=30)
    mirror = om.LocalMirror(db.target.root)
    result = db.push(_frame(spark), table=name, keys=["id"], progress=False)
    assert result.table == stored and result.sequence_numbers == (1,)
    mirror.run_once()
    assert mirrored_rows(db, name, COLUMNS) == rows_of(
        [dict(zip(COLUMNS, r, strict=True)) for r in ROWS], COLUMNS
    )
    assert db.tables() == [stored]
    status = db.status()
    assert [(t.table, t.health) for t in status.tables] == [(stored, "ok")] and status.foreign == ()
    if reseed:
        changed = spark.createDataFrame([(1, 10), (4, 40)], "id long, v long")  # v: string -> long
        plan = db.plan_schema_change(name, changed)
        assert plan.needs_reseed
        done = db.apply_schema_change(plan, changed, confirm=stored, timeout=60, progress=False)
        assert done.verified and mirrored_rows(db, name, COLUMNS) == [(1, 10), (4, 40)]
    dropped = db.drop(name)
    assert dropped.existed and dropped.table == stored
    mirror.run_once()
    assert db.tables() == [] and [p.name for p in db.target.landing_zone.iterdir()] == ["_partnerEvents.json"]
    assert not (db.target.root / "Tables" / stored.replace(".", "/")).exists()


def test_sync_delta_makes_a_non_ascii_table_and_refuses_another_spelling(spark, tmp_path):
    db = om.connect(tmp_path / "db", lock_timeout=30)
    source = str(tmp_path / "source")
    write_deltalake(source, _frame(spark).toPandas())
    assert db.sync_delta(source, table="Δ.表", keys=["id"]).how == "snapshot"
    om.LocalMirror(db.target.root).run_once()
    assert mirrored_rows(db, "Δ.表", COLUMNS) == sorted(ROWS)
    before = tree_hash(db.target.landing_zone)
    with pytest.raises(InvalidNameError) as caught:
        db.sync_delta(source, table="δ.表", keys=["id"])
    assert "is table 'Δ.表' of the landing zone spelled another way" in str(caught.value)
    assert "push to 'Δ.表'" in str(caught.value)
    assert tree_hash(db.target.landing_zone) == before


@pytest.mark.parametrize(
    ("second", "says"),
    [
        ("sales.orders", "Table 'sales.orders' is table 'Sales.Orders'"),
        ("SALES.ORDERS", "Table 'SALES.ORDERS' is table 'Sales.Orders'"),
        ("sales.returns", "Schema 'sales' of table 'sales.returns' is schema 'Sales'"),
    ],
)
def test_a_second_spelling_is_refused_at_its_first_push(spark, tmp_path, second, says):
    db = om.connect(tmp_path / "db", lock_timeout=30)
    db.push(_frame(spark), table="Sales.Orders", keys=["id"], progress=False)
    before = tree_hash(db.target.landing_zone)
    with pytest.raises(InvalidNameError) as caught:
        db.push(_frame(spark), table=second, keys=["id"], progress=False)
    assert says in str(caught.value) and "case-insensitively" in str(caught.value)
    assert tree_hash(db.target.landing_zone) == before
    assert db.tables() == ["Sales.Orders"]


def test_two_first_pushes_of_two_spellings_racing_cannot_both_win(spark, tmp_path):
    db = om.connect(tmp_path / "db", lock_timeout=60)
    start = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def first_push(name: str) -> None:
        start.wait()
        try:
            outcomes[name] = db.push(_frame(spark), table=name, keys=["id"], progress=False)
        except Exception as exc:  # the outcome is what the test checks
            outcomes[name] = exc

    threads = [threading.Thread(target=first_push, args=(n,)) for n in ("Race.Orders", "race.orders")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [n for n, o in outcomes.items() if isinstance(o, om.PushResult)]
    lost = [o for o in outcomes.values() if not isinstance(o, om.PushResult)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert isinstance(lost[0], InvalidNameError) and f"is table {won[0]!r}" in str(lost[0])
    assert db.tables() == won
    om.LocalMirror(db.target.root).run_once()
    assert mirrored_rows(db, won[0], COLUMNS) == sorted(ROWS)


def test_a_table_that_changes_twice_while_staging_is_a_one_line_error(spark, tmp_path, monkeypatch):
    """The internal retry signal never escapes: a second change under the push becomes a
    ``LandingZoneError`` (it once escaped as an empty ``_Stale`` for every percent-encoded name)."""
    db = om.connect(tmp_path / "db", lock_timeout=30)
    before = tree_hash(db.target.landing_zone)
    stage = push_module._stage

    def staged_then_deleted(ctx, *args, **kwargs):
        staged = stage(ctx, *args, **kwargs)
        ctx.storage.delete(staged.folder)  # as if someone deleted the table folder meanwhile
        return staged

    monkeypatch.setattr(push_module, "_stage", staged_then_deleted)
    with pytest.raises(LandingZoneError) as caught:
        db.push(_frame(spark), table="orders", keys=["id"], progress=False)
    message = str(caught.value)
    assert "changed twice while this push staged" in message and "nothing was published" in message
    assert "\n" not in message
    assert tree_hash(db.target.landing_zone) == before
