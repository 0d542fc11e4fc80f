"""A plan of a real PostgreSQL schema: targets by the naming rule, keys in precedence (declared >
primary key > unique > suggested), strategies and what they need, and every problem in words with
its fix, the other tables planned all the same; a key only today's rows vouch for (pgbench's log
table) noted with its evidence and risk, and a keyless table the database numbers planned
insert-only by that column."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import openmirror_nb as om
from tests.sources.conftest import PUBLIC_TABLES
from tests.sources.postgres import DATABASE, PASSWORD, SUPERUSER

pytestmark = pytest.mark.spark


def test_every_table_is_planned_to_its_target(erp_plan):
    assert [t.source for t in erp_plan.tables] == PUBLIC_TABLES
    targets = {t.source: t.table for t in erp_plan.tables}
    assert targets["orders"] == "shop.orders" and targets["order_lines"] == "shop.order_lines"
    assert targets["Order Notes"] == "shop.OrderNotes"  # a space is no name: mapped by the rule
    assert all(om.check_table_name(t) == t for t in targets.values())
    assert erp_plan.target_schema == "shop" and erp_plan.problems == []
    keyed = [t for t in erp_plan.tables if t.source != "events"]
    assert all(t.enabled and t.strategy == "snapshot" and t.detect_deletes for t in keyed)
    events = erp_plan.table("events")  # keyless, numbered by an identity column: insert-only by it
    assert (events.strategy, events.watermark, events.detect_deletes) == ("append", "event_id", False)
    assert erp_plan.table("orders").rows == 3 and erp_plan.table("shop.orders").source == "orders"


def test_keys_come_from_the_primary_key_then_a_unique_constraint_then_the_rows(erp_plan):
    keys = {t.source: (t.keys, t.key_origin) for t in erp_plan.tables}
    assert keys["customers"] == (("customer_id",), "primary_key")  # not its unique e-mail
    assert keys["order_lines"] == (("order_id", "line_no"), "primary_key")
    assert keys["warehouses"] == (("code",), "unique")
    assert keys["events"] == ((), None)  # append by its identity column comes before any suggestion
    assert keys["page_views"] == ((), None) and keys["returns"] == ((), None)


PROBLEMS = {
    "exchange_rates": ["key column 'rate' is double", "declare other keys"],
    "legacy_import": ["'__rowMarker__' is reserved for the row marker", "rename it"],
    "mixed_case": ["cannot read its columns", "enabled: false"],
    "page_views": [
        "no key",
        "no column (or pair) unique in its rows",
        "key_origin: declared",
        "strategy: append",
    ],
    "returns": ["no key", "the table is empty", "key_origin: declared"],
    "Order Notes": ["shop.OrderNotes is also where 'ordernotes' goes", "another table:"],
    "ordernotes": ["shop.ordernotes is also where 'Order Notes' goes", "another table:"],
}


def test_each_problem_names_the_value_and_the_fix_and_the_rest_have_none(erp_plan):
    for planned in erp_plan.tables:
        words = PROBLEMS.get(planned.source)
        if words is None:
            assert planned.problems == (), planned
            continue
        assert len(planned.problems) == 1, planned.problems
        assert all(w in planned.problems[0] for w in words), planned.problems[0]


# One edit per table, all checked by one plan made ``like`` the edited one (the source is
# discovered once): strategies with and without what they need, and declared keys.
EDITS = {
    "events": {"strategy": "append", "watermark": "event_id", "detect_deletes": False},
    "orders": {"strategy": "incremental", "watermark": "updated_at", "detect_deletes": False},
    "page_views": {"strategy": "append", "watermark": "seconds", "detect_deletes": False},
    "order_lines": {"strategy": "append", "keys": (), "key_origin": None, "detect_deletes": False},
    "products": {"strategy": "incremental", "watermark": "title"},
    "stock_levels": {"strategy": "incremental", "watermark": "countd_on"},
    "customers": {"strategy": "append", "watermark": "customer_id", "detect_deletes": True},
    "sessions": {"strategy": "delta_sync"},
    "warehouses": {"watermark": "site"},
    "returns": {"keys": ("return_ref",), "key_origin": "declared"},
    "exchange_rates": {"keys": ("currency", "quoted_on"), "key_origin": "declared"},
    "legacy_import": {"keys": ("id", "note"), "key_origin": "declared"},
}
SAYS = {
    "events": [],
    "orders": [],
    "page_views": ["append needs a strictly increasing watermark", "'seconds'", "incremental with keys"],
    "order_lines": [
        "append reads the rows past a watermark column",
        "set watermark (one of line_no, order_id",
    ],
    "products": ["watermark 'title' is string", "number, date or timestamp"],
    "stock_levels": ["watermark 'countd_on' is not a column", "Did you mean 'counted_on'?"],
    "customers": ["append only inserts, so it cannot mirror deletes", "detect_deletes: false"],
    "sessions": ["delta_sync reads a Delta table's change data feed", "use snapshot"],
    "warehouses": ["watermark 'site' is read by incremental and append only"],
    "returns": [],
    "exchange_rates": [],  # keys declared: the inexact primary key is no longer the plan's
    "legacy_import": ["'__rowMarker__' is reserved"],
}


@pytest.fixture(scope="module")
def replanned(erp, planned_db, erp_plan):
    edited = [replace(t, **EDITS.get(t.source, {})) for t in erp_plan.tables]
    return planned_db.plan_sources(
        erp, target_schema="shop", like=replace(erp_plan, tables=edited), suggest=False
    )


@pytest.mark.parametrize("source", sorted(EDITS))
def test_a_strategy_says_what_it_needs_and_declared_keys_win(replanned, source):
    planned, edit = replanned.table(source), EDITS[source]
    assert planned.strategy == edit.get("strategy", "snapshot") and planned.watermark == edit.get("watermark")
    if planned.strategy == "append":
        assert planned.keys == () and planned.key_origin is None  # append writes no keyColumns
    if "keys" in edit and planned.strategy != "append":
        assert (planned.keys, planned.key_origin) == (edit["keys"], "declared")  # over a primary key too
    if not SAYS[source]:
        assert planned.problems == ()
    else:
        assert len(planned.problems) == 1 and all(w in planned.problems[0] for w in SAYS[source]), (
            planned.problems
        )


def test_a_replan_keeps_what_was_not_declared_as_the_source_says(replanned):
    assert replanned.table("warehouses").keys == ("code",)  # the unique constraint, again
    assert (replanned.table("orders").keys, replanned.table("orders").key_origin) == (
        ("order_id",),
        "primary_key",
    )
    # suggest=False: a table whose keys were only suggested has none now, and says so
    assert replanned.table("events").key_origin is None


def test_the_database_s_own_tables_count_and_their_keys_never_change(erp, db):
    # Tables the database holds: their _metadata.json is what a plan reads of them.
    metadata = {"shop.schema/orders": ["order_id", "status"], "shop.schema/Customers": ["customer_id"]}
    metadata.update({f"t{i}": ["id"] for i in range(490)})
    for folder, keys in metadata.items():
        db.storage.write_bytes(f"{folder}/_metadata.json", json.dumps({"keyColumns": keys}).encode())
    plan = db.plan_sources(erp, target_schema="shop", suggest=False)
    problem = plan.table("orders").problems
    assert len(problem) == 1 and "keyColumns ['order_id', 'status'], which never change" in problem[0]
    assert "db.plan_schema_change" in problem[0]
    assert plan.table("customers").problems == ()  # same keys; names compare case-insensitively
    # 14 targets planned (two source tables meet in one) and 490 others
    assert len(plan.problems) == 1 and "504 tables" in plan.problems[0] and "about 500" in plan.problems[0]


def test_the_plan_shows_as_text_html_and_pandas(erp_plan):
    text = repr(erp_plan)
    assert text.splitlines()[0].endswith("15 tables, 7 with problems")
    assert "  orders          shop.orders          order_id" in text
    assert "      ! key column 'rate' is double" in text
    page = erp_plan._repr_html_()
    assert page.count("<tr data-problems='1'") == 7 and "shop.OrderNotes" in page
    frame = erp_plan.to_pandas()
    assert list(frame.columns) == [
        "source", "table", "keys", "key_origin", "strategy", "watermark", "detect_deletes", "enabled", "rows",
        "problems", "feed", "notes", "types", "freshness_goal",
    ]  # fmt: skip
    row = frame.set_index("source").loc["order_lines"]
    assert row["keys"] == ["order_id", "line_no"] and row["problems"] == [] and row["rows"] == 4


def test_a_target_schema_that_breaks_the_naming_rule_is_refused(erp, db):
    with pytest.raises(om.InvalidNameError, match="Schema name 'my shop' contains a space"):
        db.plan_sources(erp, target_schema="my shop")
    with pytest.raises(om.ConfigError, match="plan_sources takes a source"):
        db.plan_sources("jdbc:postgresql://db/erp")


# pgbench's tables (pgbench -i, then runs that log into pgbench_history), and a log numbered by a
# bigserial: the keys a plan gives tables whose rows only happen to be unique today.
BENCH = """
CREATE TABLE pgbench_branches (bid serial PRIMARY KEY, bbalance integer NOT NULL, filler char(88));
CREATE TABLE pgbench_accounts (aid integer PRIMARY KEY, bid integer, abalance integer, filler char(84));
CREATE TABLE pgbench_history (
    tid integer, bid integer, aid integer, delta integer, mtime timestamp, filler char(22)
);
CREATE TABLE audit_log (id bigserial, logged_at timestamptz NOT NULL DEFAULT now(), what text NOT NULL);
INSERT INTO pgbench_branches (bbalance) VALUES (0), (0);
INSERT INTO pgbench_accounts SELECT n, 1, 0 FROM generate_series(1, 40) AS n;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
    SELECT n % 10 + 1, 1, n % 37 + 1, n % 5 - 2, timestamp '2026-11-26 20:00:00' + n * interval '1 ms'
    FROM generate_series(1, 120) AS n;
INSERT INTO audit_log (what) VALUES ('login'), ('logout'), ('login');
ANALYZE;
"""


@pytest.fixture(scope="module")
def bench_plan(postgres, spark, planned_db):
    """The plan of a database holding pgbench's tables and a bigserial-numbered log."""
    postgres.sql("CREATE DATABASE bench;", database="postgres")
    postgres.sql(BENCH, database="bench")
    url = postgres.url.replace(f"/{DATABASE}", "/bench")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCH_PASSWORD", PASSWORD)
        source = om.Jdbc(url, user=SUPERUSER, password_env="BENCH_PASSWORD", schema="public")
        yield planned_db.plan_sources(source, target_schema="bench")


def test_a_log_table_s_key_only_today_s_rows_allow_is_planned_with_its_evidence_and_risk(bench_plan):
    history = bench_plan.table("pgbench_history")
    assert (history.keys, history.key_origin, history.strategy, history.problems) == (
        ("mtime",),
        "suggested",
        "snapshot",
        (),
    )
    assert len(history.notes) == 1
    note = history.notes[0]
    assert "keys [mtime] suggested from today's rows only" in note
    assert "all 120 rows profiled (120 distinct values)" in note  # counted, not the table's estimate
    assert "no primary key or unique constraint in the source keeps them so" in note
    assert "a timestamp repeats whenever two rows are written in the same instant" in note
    assert "key_origin: declared" in note and "identity column" in note and "strategy: append" in note
    text = repr(bench_plan)
    assert text.splitlines()[0].endswith(
        "4 tables, 0 with problems, 1 with suggested keys to accept: only today's rows make them unique "
        "and keys never change once pushed (declare a key, or mirror insert-only with append; see its note)"
    )
    assert f"      note: {note}" in text


def test_a_keyless_table_numbered_by_a_bigserial_is_planned_append_by_it(bench_plan):
    log = bench_plan.table("audit_log")
    assert (log.strategy, log.watermark, log.keys, log.key_origin, log.detect_deletes, log.problems) == (
        "append",
        "id",
        (),
        None,
        False,
        (),
    )
    assert len(log.notes) == 1 and "rows past the highest id mirrored" in log.notes[0]
    assert "updated or deleted in the source is never mirrored" in log.notes[0]


def test_tables_with_a_primary_key_keep_it_without_a_note(bench_plan):
    for name, key in (("pgbench_accounts", "aid"), ("pgbench_branches", "bid")):  # bid: a serial
        planned = bench_plan.table(name)
        assert (planned.keys, planned.key_origin, planned.strategy, planned.watermark) == (
            (key,),
            "primary_key",
            "snapshot",
            None,
        )
        assert planned.notes == () and planned.problems == ()
