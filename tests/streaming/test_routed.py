"""A routed batch sink: one stream, many tables. Each table publishes its rows without the route,
operation and ordering columns (or the ones ``columns=`` lists); the whole batch, every route, is
checked before any table publishes; a crash between two tables is repaired by Spark's replay."""

from __future__ import annotations

import logging
import threading

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.streaming import route as route_mod
from openmirror_nb._core.streaming import sink as sink_mod
from tests.conftest import tree_hash
from tests.reliability.harness import lzcheck, rows_of
from tests.streaming.feeds import Feed, run

pytestmark = pytest.mark.spark

SCHEMA = "tbl string, op int, seq long, id long, order_id long, name string, total double"
KEYS = {"inv.customers": ["id"], "inv.orders": ["order_id"]}
COLUMNS = {"inv.orders": ["order_id", "total"]}


def _customer(i, op, name, seq):
    return {"tbl": "inv.customers", "op": op, "seq": seq, "id": i, "name": name}


def _order(i, op, total, seq):
    return {"tbl": "inv.orders", "op": op, "seq": seq, "order_id": i, "total": total}


def _sink(db, **extra):
    return db.batch_sink(route="tbl", keys=KEYS, op_column="op", order_by=["seq"], columns=COLUMNS, **extra)


def _tables(db):
    om.LocalMirror(db.target.root).run_once()
    customers = db.read_table("inv.customers", as_pandas=True)
    orders = db.read_table("inv.orders", as_pandas=True)
    return customers, orders


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db", lock_timeout=30)


def test_each_table_gets_its_rows_and_columns(spark, db, tmp_path):
    feed = Feed(tmp_path)
    feed.drop(
        [
            _customer(1, 0, "ann", 1),
            _order(10, 0, 5.0, 2),
            _customer(1, 4, "anne", 3),  # the later change of a key wins: order_by seq
            _order(11, 0, 7.5, 4),
            _order(10, 2, None, 5),
        ]
    )
    run(feed.stream(spark, SCHEMA), _sink(db), tmp_path / "ckpt")
    customers, orders = _tables(db)
    # customers: every column but the route, op and ordering columns (order_id and total are NULL)
    assert sorted(customers.columns) == ["id", "name", "order_id", "total"]
    assert rows_of(customers.to_dict("records"), ("id", "name")) == [(1, "anne")]
    assert sorted(orders.columns) == ["order_id", "total"]  # columns= for this one
    assert rows_of(orders.to_dict("records"), ("order_id", "total")) == [(11, 7.5)]
    lz = db.target.landing_zone
    assert [r[:1] for r in lzcheck(lz, "inv.customers")] == [(1,)]
    state = TableFolder.of(db.storage, "inv.orders").read_state()
    assert state.stream.batch == 0 and state.stream.rows == 3


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (_order(None, 0, 1.0, 9), r"NULL in key columns \['order_id'\]"),
        (_order(12, 7, 1.0, 9), r"operation value\(s\) 7"),
        ({"tbl": "inv.returns", "op": 0, "seq": 9, "id": 3}, "names no table in keys= and no existing table"),
        ({"tbl": None, "op": 0, "seq": 9, "id": 3}, "NULL route column 'tbl'"),
    ],
    ids=["null-key", "invalid-op", "unknown-route", "null-route"],
)
def test_a_bad_row_in_any_route_stops_the_whole_batch(spark, db, tmp_path, bad, error):
    feed, ckpt = Feed(tmp_path), tmp_path / "ckpt"
    feed.drop([_customer(1, 0, "ann", 1), _order(10, 0, 5.0, 2)])
    run(feed.stream(spark, SCHEMA), _sink(db), ckpt)
    before = tree_hash(db.target.landing_zone)
    feed.drop([_customer(2, 0, "bob", 3), bad])  # customers sort first: they would publish first
    ms = db.mirror_stream(
        feed.stream(spark, SCHEMA),
        route="tbl",
        keys=KEYS,
        op_column="op",
        order_by=["seq"],
        columns=COLUMNS,
        checkpoint=ckpt,
    )
    with pytest.raises(om.OpenMirrorError, match=error):
        ms.await_termination()
    assert tree_hash(db.target.landing_zone) == before
    assert not (ckpt / "commits" / "1").exists()


def test_a_crash_between_two_tables_is_repaired_by_the_replay(spark, db, tmp_path, monkeypatch, caplog):
    feed, ckpt = Feed(tmp_path), tmp_path / "ckpt"
    feed.drop([_customer(1, 0, "ann", 1), _order(10, 0, 5.0, 2)])

    def crash(step):
        if step == "between_tables":
            raise RuntimeError("killed between tables")

    monkeypatch.setattr(route_mod, "crash_point", crash)
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException, match="killed between tables"):
        run(feed.stream(spark, SCHEMA), _sink(db, parallel=1), ckpt)  # one table after the other
    assert db.tables() == ["inv.customers"]
    monkeypatch.undo()
    caplog.set_level(logging.INFO, logger="openmirror_nb")
    run(feed.stream(spark, SCHEMA), _sink(db), ckpt)  # Spark replays batch 0
    assert "already in table inv.customers" in caplog.text
    customers, orders = _tables(db)
    assert rows_of(customers.to_dict("records"), ("id", "name")) == [(1, "ann")]  # inserted once
    assert rows_of(orders.to_dict("records"), ("order_id", "total")) == [(10, 5.0)]


def test_tables_applied_in_parallel_keep_one_failure_to_its_table(spark, db, tmp_path, monkeypatch, caplog):
    """Each table's push runs on a thread of its own; one table failing leaves the other applied
    once, and the replay applies the batch to the failed table only."""
    feed, ckpt = Feed(tmp_path), tmp_path / "ckpt"
    feed.drop([_customer(1, 0, "ann", 1), _order(10, 0, 5.0, 2)])
    threads: dict[str, str] = {}
    real = sink_mod.run_push

    def failing(storage, df, request, *args, **kw):
        threads[str(request.table)] = threading.current_thread().name
        if str(request.table) == "inv.orders":
            raise RuntimeError("orders failed")
        return real(storage, df, request, *args, **kw)

    monkeypatch.setattr(sink_mod, "run_push", failing)
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException, match="orders failed"):
        run(feed.stream(spark, SCHEMA), _sink(db, parallel=2), ckpt)
    assert db.tables() == ["inv.customers"]
    assert len(set(threads.values())) == 2 and all(
        t.startswith("openmirror-stream") for t in threads.values()
    )
    monkeypatch.undo()
    caplog.set_level(logging.INFO, logger="openmirror_nb")
    run(feed.stream(spark, SCHEMA), _sink(db, parallel=2), ckpt)  # Spark replays batch 0
    assert "already in table inv.customers" in caplog.text
    customers, orders = _tables(db)
    assert rows_of(customers.to_dict("records"), ("id", "name")) == [(1, "ann")]  # inserted once
    assert rows_of(orders.to_dict("records"), ("order_id", "total")) == [(10, 5.0)]
    for table in ("inv.customers", "inv.orders"):
        assert len(lzcheck(db.target.landing_zone, table)) == 1


@pytest.mark.parametrize("parallel", [0, True, 1.5])
def test_parallel_is_a_whole_number_of_tables(db, parallel):
    with pytest.raises(om.ConfigError, match="parallel="):
        _sink(db, parallel=parallel)


def test_an_existing_table_may_be_routed_without_keys(spark, db, tmp_path):
    db.push(spark.createDataFrame([(1, "x")], "id long, name string"), table="inv.vendors", keys=["id"])
    feed = Feed(tmp_path)
    feed.drop([{"tbl": "inv.vendors", "op": 4, "seq": 1, "id": 2, "name": "y"}])
    sink = db.batch_sink(route="tbl", keys={}, op_column="op", order_by=["seq"])
    run(feed.stream(spark, "tbl string, op int, seq long, id long, name string"), sink, tmp_path / "c")
    om.LocalMirror(db.target.root).run_once()
    vendors = db.read_table("inv.vendors", as_pandas=True)
    assert rows_of(vendors.to_dict("records"), ("id", "name")) == [(1, "x"), (2, "y")]


def test_routed_options_are_checked_when_the_sink_is_made(db):
    with pytest.raises(om.ConfigError, match="columns= names tables"):
        db.batch_sink(route="tbl", keys={"a": ["id"]}, columns={"b": ["id"]})
    with pytest.raises(om.ConfigError, match="keys and columns take lists per table"):
        db.batch_sink(route="tbl", keys={"a": "id"})
    with pytest.raises(om.InvalidNameError):
        db.batch_sink(route="tbl", keys={"a/b": ["id"]})


def test_a_type_one_table_cannot_hold_stops_the_whole_batch(spark, db, tmp_path):
    """Only inv.orders publishes the interval column; inv.customers, which would publish first,
    publishes nothing either."""
    from pyspark.sql import functions as F

    feed = Feed(tmp_path)
    feed.drop([_customer(1, 0, "ann", 1), _order(10, 0, 5.0, 2)])
    events = feed.stream(spark, SCHEMA).withColumn("wait", F.expr("INTERVAL 1 DAY"))
    columns = {"inv.customers": ["id", "name"], "inv.orders": ["order_id", "total", "wait"]}
    before = tree_hash(db.target.landing_zone)
    ms = db.mirror_stream(
        events, route="tbl", keys=KEYS, op_column="op", columns=columns, checkpoint=tmp_path / "c"
    )
    with pytest.raises(om.UnsupportedTypeError, match="Column 'wait' has type interval day"):
        ms.await_termination()
    assert tree_hash(db.target.landing_zone) == before and db.tables() == []


def test_each_routed_table_is_checked_once_per_batch(spark, db, tmp_path, monkeypatch):
    """The batch's checks of a table (``checks_before.check_frame``) are the ones its push stages
    with: the push does not resolve the keys or compare the schema with the state a second time."""
    from openmirror_nb._core.pipeline.push import checks

    keyed, compared = [], []
    resolve_keys, against_state = checks.resolve_keys, checks.check_against_state

    def counted_keys(given, meta, table, **kw):
        keyed.append(table)
        return resolve_keys(given, meta, table, **kw)

    def counted_state(schema, state, options, table):
        compared.append(table)
        return against_state(schema, state, options, table)

    monkeypatch.setattr(checks, "resolve_keys", counted_keys)
    monkeypatch.setattr(checks, "check_against_state", counted_state)
    feed, ckpt = Feed(tmp_path), tmp_path / "ckpt"
    feed.drop([_customer(1, 0, "ann", 1), _order(10, 0, 5.0, 2)])
    run(feed.stream(spark, SCHEMA), _sink(db), ckpt)  # batch 0: both tables created
    feed.drop([_customer(1, 4, "anne", 3), _order(11, 0, 7.5, 4)])
    run(feed.stream(spark, SCHEMA), _sink(db), ckpt)  # batch 1: against their states
    tables = ["inv.customers", "inv.orders"]
    assert sorted(keyed) == sorted(compared) == sorted(tables * 2)
    customers, orders = _tables(db)
    assert rows_of(customers.to_dict("records"), ("id", "name")) == [(1, "anne")]
    assert rows_of(orders.to_dict("records"), ("order_id", "total")) == [(10, 5.0), (11, 7.5)]
