"""``om.FeedOptions``: a change feed's options as one frozen value, taken as ``feed=`` by ``push``,
``batch_sink``, ``mirror_stream``, a plan's tables and the ``push``/``stream`` verbs, with the keyword
forms mapped onto it in one place. No Spark except the last test, which pushes through a real local
database."""

from __future__ import annotations

import argparse
import dataclasses

import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.feed_options import FEED_FIELDS, feed_of
from openmirror_nb._core.grammar import add_verbs
from openmirror_nb._core.push_flags import feed_options, push_keywords

FEED = om.FeedOptions(op_column="op", convention="sys_op", order_by=["lsn", "pos"], compact=True)
KEYWORDS = {"op_column": "op", "convention": "sys_op", "order_by": ["lsn", "pos"], "compact": True}


def test_the_defaults_and_a_list_kept_as_a_tuple():
    feed = om.FeedOptions()
    assert (feed.op_column, feed.convention, feed.order_by) == (None, "rowmarker", ())
    assert (feed.update_marker, feed.compact, feed.strict_delete) == (4, False, False)
    assert [f.name for f in dataclasses.fields(om.FeedOptions)] == list(FEED_FIELDS)
    assert FEED.order_by == ("lsn", "pos") and FEED == dataclasses.replace(FEED, order_by=("lsn", "pos"))
    assert hash(FEED) == hash(om.FeedOptions(**KEYWORDS))
    assert om.FeedOptions(update_marker=om.RowMarker.UPDATE).update_marker == 1
    assert [om.FeedOptions(convention=c).op for c in ("rowmarker", "sys_op", "cdf", "debezium")] == [
        "__rowMarker__",
        "sys_op",
        "_change_type",
        "op",
    ]
    assert FEED.op == "op"


def test_it_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FEED.compact = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"convention": "rowmaker"}, ["convention 'rowmaker' is not known", "Did you mean 'rowmarker'?"]),
        ({"update_marker": 3}, ["update_marker 3 must be 1 (update) or 4 (upsert)"]),
        ({"update_marker": True}, ["update_marker True"]),
        ({"order_by": "lsn"}, ["order_by 'lsn' is not a list", "order_by=['lsn']"]),
        ({"order_by": ["lsn", 7]}, ["order_by ['lsn', 7]", "list names only"]),
        ({"op_column": ""}, ["op_column '' is not a column name", "op_column='op'"]),
        ({"compact": "yes"}, ["compact 'yes' is not True or False", "compact=True"]),
        ({"strict_delete": 1}, ["strict_delete 1 is not True or False"]),
        ({"strict_delete": True}, ["strict_delete is Prostore's rule", "convention='sys_op'"]),
    ],
)
def test_a_value_no_feed_takes_is_refused_in_one_line_naming_it(options, words):
    with pytest.raises(om.ConfigError) as info:
        om.FeedOptions(**options)
    assert "\n" not in str(info.value) and all(w in str(info.value) for w in words), str(info.value)


def test_the_keyword_forms_make_the_same_options():
    assert feed_of(None, **KEYWORDS) == FEED == feed_of(FEED)
    assert feed_of(None) == om.FeedOptions()
    with pytest.raises(om.ConfigError, match="strict_delete is Prostore's rule"):
        feed_of(None, strict_delete=True)


def test_feed_and_its_keywords_together_are_refused_naming_both(tmp_path):
    with pytest.raises(om.ConfigError) as info:
        feed_of(FEED, op_column="op", compact=False)
    line = str(info.value)
    assert "feed=" in line and "op_column=, compact=" in line and "\n" not in line
    with pytest.raises(om.ConfigError, match=r"feed=\{'op_column': 'op'\} is not an om.FeedOptions"):
        feed_of({"op_column": "op"})  # type: ignore[arg-type]
    db = om.connect(tmp_path / "db")
    # refused before the frame is looked at, and before anything is written
    with pytest.raises(om.ConfigError, match="Both feed= and convention="):
        db.push(object(), table="t", keys=["id"], mode="changes", feed=FEED, convention="cdf")
    with pytest.raises(om.ConfigError, match="Both feed= and order_by="):
        db.batch_sink(table="t", keys=["id"], feed=FEED, order_by=["lsn"])
    assert db.tables() == []


def test_batch_sink_and_mirror_stream_take_feed(tmp_path, monkeypatch):
    from openmirror_nb._core.streaming import stream

    db = om.connect(tmp_path / "db")
    sink = db.batch_sink(table="t", keys=["id"], feed=FEED)
    assert sink.request is not None and sink.request.feed == FEED
    assert db.batch_sink(table="t", keys=["id"], **KEYWORDS).request == sink.request
    routed = db.batch_sink(route="tbl", keys={"a": ["id"]}, feed=FEED)
    assert routed.router is not None and routed.router.base.feed == FEED
    started = []
    monkeypatch.setattr(stream, "start_stream", lambda df, made, **kw: started.append(made) or "started")
    assert db.mirror_stream("df", table="t", keys=["id"], feed=FEED, checkpoint=tmp_path / "c") == "started"
    assert db.mirror_stream("df", table="t", keys=["id"], **KEYWORDS, checkpoint=tmp_path / "c") == "started"
    assert [s.request.feed for s in started] == [FEED, FEED]
    with pytest.raises(om.ConfigError, match="Both feed= and compact="):
        db.mirror_stream("df", table="t", keys=["id"], feed=FEED, compact=True, checkpoint=tmp_path / "c")


def _parsed(skin, line):
    if skin == "magic":
        from openmirror_nb._core.magics.parser import parse

        return parse(line)
    return add_verbs(argparse.ArgumentParser(), "cli").parse_args(line.split())


FLAGS = "--op-column op --convention sys_op --order-by lsn,pos --update-marker 1 --compact --strict-delete"


@pytest.mark.parametrize("skin", ["magic", "cli"])
def test_the_push_verb_makes_feed_options(skin):
    args = _parsed(skin, f"push f --table sales.orders --keys id --mode changes {FLAGS}")
    whole = om.FeedOptions(
        op_column="op", convention="sys_op", order_by=("lsn", "pos"), update_marker=1, compact=True,
        strict_delete=True,
    )  # fmt: skip
    assert push_keywords(args) == {"table": "sales.orders", "keys": ["id"], "mode": "changes", "feed": whole}
    plain = push_keywords(_parsed(skin, "push f --table t"))
    assert plain["feed"] == om.FeedOptions() and "op_column" not in plain  # the defaults are FeedOptions'
    with pytest.raises(om.ConfigError, match="strict_delete is Prostore's rule"):
        feed_options(_parsed(skin, "push f --table t --strict-delete"))


def test_every_feed_option_is_a_flag_of_push_and_stream():
    args = _parsed("magic", f"stream DF --table t --checkpoint c {FLAGS}")
    assert feed_options(args) == feed_options(_parsed("cli", f"push f --table t {FLAGS}"))
    assert {f for f in FEED_FIELDS if getattr(args, f) is None} == set()


PLAN = """\
version: 1
source:
  kind: catalog
  database: lakehouse.shop
target_schema: shop
problems: []
tables:
- source: orders
  table: shop.orders
  keys: [order_id]
  key_origin: declared
  strategy: snapshot
  watermark: null
  detect_deletes: true
  enabled: true
  rows: 4
  problems: []
- source: events
  table: shop.events
  keys: []
  key_origin: null
  strategy: append
  watermark: event_id
  detect_deletes: false
  enabled: true
  rows: null
  problems: []
"""


def test_a_plan_file_of_today_loads_and_saves_unchanged(tmp_path):
    (tmp_path / "old.yaml").write_text(PLAN, encoding="utf-8")
    plan = om.load_plan(tmp_path / "old.yaml")
    assert [t.feed for t in plan.tables] == [None, None]
    plan.save(tmp_path / "again.yaml")
    again = (tmp_path / "again.yaml").read_text(encoding="utf-8")
    assert again.endswith(PLAN) and "feed" not in again


def test_a_planned_table_holds_the_feed_its_strategy_reads(tmp_path):
    plan = om.load_plan(_written(tmp_path, PLAN))
    orders = dataclasses.replace(plan.table("orders"), feed=om.FeedOptions(update_marker=1))
    plan.tables[0] = orders
    plan.save(tmp_path / "feed.yaml")
    text = (tmp_path / "feed.yaml").read_text(encoding="utf-8")
    assert "  problems: []\n  feed:\n    update_marker: 1\n" in text
    assert om.load_plan(tmp_path / "feed.yaml") == plan
    synced = dataclasses.replace(orders, strategy="delta_sync", feed=om.FeedOptions(compact=True))
    assert synced.feed == om.FeedOptions(compact=True)
    from openmirror_nb._core.sources.plan_strategy import feed_problem

    assert feed_problem(synced) is None
    unread = feed_problem(dataclasses.replace(orders, feed=om.FeedOptions(compact=True)))
    assert unread and unread.startswith(
        "strategy snapshot does not read feed compact (it reads update_marker"
    )
    unread = feed_problem(dataclasses.replace(plan.table("events"), feed=om.FeedOptions(update_marker=1)))
    assert unread and unread.startswith("strategy append does not read feed update_marker")


@pytest.mark.parametrize(
    ("feed", "words"),
    [
        ("  feed:\n    update_marker: 3\n", "table 'orders': feed: update_marker 3 must be 1 (update) or 4"),
        ("  feed:\n    updatemarker: 1\n", "feed has an unknown entry 'updatemarker'"),
        ("  feed:\n    order_by: lsn\n", "feed order_by is str, not a list"),
        ("  feed:\n    convention: cdf\n", "table 'orders': strategy snapshot does not read feed convention"),
    ],
)
def test_a_wrong_feed_in_a_plan_file_is_refused_in_one_line(tmp_path, feed, words):
    text = PLAN.replace("  problems: []\n- source: events", f"  problems: []\n{feed}- source: events")
    with pytest.raises(om.ConfigError) as info:
        om.load_plan(_written(tmp_path, text))
    assert str(info.value).startswith("Plan file ") and words in str(info.value), str(info.value)


def _written(tmp_path, text):
    path = tmp_path / "plan.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.spark
def test_a_push_with_feed_publishes_the_feed_as_its_keywords_would(spark, tmp_path):
    """One push through a real local database (the keyword forms make the same request: above)."""
    db = om.connect(tmp_path / "db")
    feed = spark.createDataFrame(
        [(1, "A", 4, 3), (2, "b", 0, 1), (1, "a", 0, 2)], "id long, v string, op int, n int"
    )
    pushed = db.push(
        feed, table="t", keys=["id"], mode="changes", feed=om.FeedOptions(op_column="op", order_by=["n"])
    )
    assert pushed.rows == {"insert": 2, "upsert": 1}
    found = [r for f in pushed.files for r in pq.read_table(db.target.landing_zone / f).to_pylist()]
    assert sorted((r["id"], r["n"], r["v"], r["__rowMarker__"]) for r in found) == [
        (1, 2, "a", 0),
        (1, 3, "A", 4),
        (2, 1, "b", 0),
    ]
    assert "op" not in found[0]
