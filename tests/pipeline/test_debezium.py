"""Debezium change events as a Spark consumer gets them, pushed with ``convention="debezium"``.

The events are built field for field after the change event values documented on Debezium's
PostgreSQL and MySQL connector pages (``before``, ``after``, ``source`` with the connector's own
fields, ``op``, ``ts_ms``, ``transaction``; the JSON converter's ``schema``/``payload`` wrapper)
and ExtractNewRecordState's output (``__op``, ``__deleted``, ``__source_*``). They are written as
JSON lines and read back with ``spark.read.json``, so each DataFrame has the schema a real reader
infers. The expected table is the events applied one by one in commit order, in plain Python;
the mirror, the independent checker's replay and the published files are compared with it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.model import ROW_MARKER
from tests.conftest import tree_hash
from tests.reliability.harness import lzcheck, mirrored_rows, rows_of

pytestmark = pytest.mark.spark

TABLE = "customers"
COLUMNS = ("id", "first_name", "last_name", "email")
NOT_PUBLISHED = {"source", "ts_ms", "transaction", "op", "before", "after", "payload", "schema"}


# Events, as the connector pages document them -----------------------------------------------------


def customer(i: int, first: str, last: str = "Kretchmar") -> dict[str, Any]:
    return {"id": i, "first_name": first, "last_name": last, "email": f"{first.lower()}@noanswer.org"}


def key_only(i: int) -> dict[str, Any]:
    """A before image under REPLICA IDENTITY DEFAULT: the primary key, every other field NULL."""
    return {"id": i, "first_name": None, "last_name": None, "email": None}


def pg(op: str, before: Any, after: Any, *, lsn: int, tx: int, snapshot: str = "false") -> dict[str, Any]:
    """A PostgreSQL connector change event value (payload only, the JSON converter's default
    without schemas)."""
    commit = 1559033904863 + tx
    return {
        "before": before,
        "after": after,
        "source": {
            "version": "2.7.3.Final",
            "connector": "postgresql",
            "name": "PostgreSQL_server",
            "ts_ms": commit,
            "snapshot": snapshot,
            "db": "postgres",
            "sequence": json.dumps([str(lsn - 8), str(lsn)]),
            "schema": "public",
            "table": "customers",
            "txId": tx,
            "lsn": lsn,
            "xmin": None,
        },
        "op": op,
        "ts_ms": commit + 40,
        "transaction": None
        if snapshot != "false"
        else {"id": f"{tx}:{lsn}", "total_order": 1, "data_collection_order": 1},
    }


def postgres_history() -> list[dict[str, Any]]:
    """A snapshot, then every kind of change; listed in commit order."""
    return [
        pg("r", None, customer(1, "Anne"), lsn=24023128, tx=555, snapshot="first"),
        pg("r", None, customer(2, "Sally"), lsn=24023128, tx=555, snapshot="true"),
        pg("r", None, customer(3, "George"), lsn=24023128, tx=555, snapshot="true"),
        pg("r", None, customer(4, "Edward"), lsn=24023128, tx=555, snapshot="last"),
        pg("c", None, customer(5, "Kenneth"), lsn=24023200, tx=556),
        pg("u", None, customer(1, "Anne Marie"), lsn=24023300, tx=557),  # DEFAULT: no before
        # two updates of one key in one transaction: same txId, increasing lsn
        pg("u", None, customer(2, "Sally", "Thomas"), lsn=24023400, tx=558),
        pg("u", None, customer(2, "Sally", "Walker"), lsn=24023456, tx=558),
        pg("d", key_only(3), None, lsn=24023500, tx=559),  # DEFAULT: before holds only the key
        # the key of 4 becomes 40: a delete of the old key and a create of the new one
        pg("d", key_only(4), None, lsn=24023600, tx=560),
        pg("c", None, customer(40, "Edward"), lsn=24023608, tx=560),
        # deleted and created again
        pg("d", key_only(5), None, lsn=24023700, tx=561),
        pg("c", None, customer(5, "Kenneth", "Anderson"), lsn=24023800, tx=562),
        pg("u", None, customer(40, "Edward", "Walker"), lsn=24023900, tx=563),
    ]


def mysql(op: str, before: Any, after: Any, *, file: str, pos: int, row: int = 0) -> dict[str, Any]:
    """A MySQL connector change event value: the binlog file, position and row in ``source``."""
    return {
        "before": before,
        "after": after,
        "source": {
            "version": "2.7.3.Final",
            "connector": "mysql",
            "name": "mysql-server-1",
            "ts_ms": 1465581029000,  # binlog time has whole seconds: every event ties on it
            "snapshot": "false",
            "db": "inventory",
            "table": "customers",
            "server_id": 223344,
            "gtid": None,
            "file": file,
            "pos": pos,
            "row": row,
            "thread": 7,
            "query": None,
        },
        "op": op,
        "ts_ms": 1465581029523,
        "transaction": None,
    }


def mysql_history() -> list[dict[str, Any]]:
    """MySQL sends the full before image; one statement's rows share a position; the binlog rotates."""
    a, b = customer(1004, "Anne"), customer(1005, "Sally")
    a2, b2 = customer(1004, "Anne Marie"), customer(1005, "Sally", "Thomas")
    return [
        mysql("c", None, a, file="mysql-bin.000003", pos=154),
        mysql("c", None, b, file="mysql-bin.000003", pos=154, row=1),
        mysql("u", a, a2, file="mysql-bin.000003", pos=484),
        mysql("u", b, b2, file="mysql-bin.000003", pos=484, row=1),
        mysql("d", b2, None, file="mysql-bin.000003", pos=805),
        mysql("c", None, customer(1005, "Sally", "Again"), file="mysql-bin.000004", pos=4),
        mysql("u", a2, customer(1004, "Anne", "Final"), file="mysql-bin.000004", pos=219),
    ]


def unwrap(event: dict[str, Any]) -> dict[str, Any] | None:
    """ExtractNewRecordState with delete.handling.mode=rewrite and add.fields=op,source.lsn,
    source.ts_ms,table: the row image plus ``__`` fields; a delete is its last state, __deleted."""
    deleted = event["op"] == "d"
    image = event["before"] if deleted else event["after"]
    return {
        **image,
        "__op": event["op"],
        "__source_lsn": event["source"]["lsn"],
        "__source_ts_ms": event["source"]["ts_ms"],
        "__table": event["source"]["table"],
        "__deleted": "true" if deleted else "false",
    }


def with_schema(event: dict[str, Any]) -> dict[str, Any]:
    """The JSON converter with schemas.enable=true: the Kafka Connect schema beside the payload."""
    row = {"type": "struct", "optional": True, "name": "PostgreSQL_server.public.customers.Value"}
    row["fields"] = [{"type": "int32", "optional": False, "field": "id"}] + [
        {"type": "string", "optional": c != "email", "field": c} for c in COLUMNS[1:]
    ]
    fields = [{**row, "field": "before"}, {**row, "field": "after"}]
    fields += [{"type": "struct", "fields": [], "optional": False, "field": "source"}]
    fields += [{"type": "string", "optional": False, "field": "op"}]
    fields += [{"type": "int64", "optional": True, "field": "ts_ms"}]
    schema = {"type": "struct", "fields": fields, "optional": False, "name": "customers.Envelope"}
    return {"schema": schema, "payload": event}


def expected(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The table the events leave, applied one by one in the order they are listed."""
    table: dict[int, dict[str, Any]] = {}
    for e in events:
        if e["op"] == "d":
            table.pop(e["before"]["id"], None)
            continue
        if e["before"] and e["before"]["id"] != e["after"]["id"]:
            table.pop(e["before"]["id"], None)
        table[e["after"]["id"]] = e["after"]
    return rows_of(list(table.values()), COLUMNS)


# Reading, pushing, checking -----------------------------------------------------------------------


def read(spark, folder: Path, lines: list[Any], *, files: int = 1, seed: int | None = None):
    """Write ``lines`` as JSON lines over ``files`` files (shuffled if ``seed``); read them all."""
    lines = list(lines)
    if seed is not None:
        random.Random(seed).shuffle(lines)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(files):
        path = folder / f"part-{n}.json"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines[n::files]))
        paths.append(str(path))
    if seed is not None:
        random.Random(seed + 1).shuffle(paths)
    return spark.read.json(paths)


def published_columns(lz: Path) -> set[str]:
    files = sorted((lz / TABLE).glob("*.parquet"))
    assert files
    return {name for f in files for name in pq.read_schema(f).names}


def assert_mirrors(db, events: list[dict[str, Any]], *, extra: tuple[str, ...] = ()) -> None:
    want = expected(events)
    om.LocalMirror(db.target.root).run_once()
    assert mirrored_rows(db, TABLE, COLUMNS) == want
    assert sorted(db.read_table(TABLE, as_pandas=True).columns) == sorted((*COLUMNS, *extra))
    assert lzcheck(db.target.landing_zone, TABLE, COLUMNS) == want


def push(db, df, **kwargs):
    return db.push(df, table=TABLE, keys=["id"], mode="changes", convention="debezium", **kwargs)


# The envelope -------------------------------------------------------------------------------------


def test_the_oracle_sees_every_kind_of_change():
    """Guards the tests below: the history really moves, deletes and re-creates keys."""
    assert expected(postgres_history()) == [
        (1, "Anne Marie", "Kretchmar", "anne marie@noanswer.org"),
        (2, "Sally", "Walker", "sally@noanswer.org"),
        (5, "Kenneth", "Anderson", "kenneth@noanswer.org"),
        (40, "Edward", "Walker", "edward@noanswer.org"),
    ]


@pytest.mark.parametrize(
    "how",
    ["in_order", "shuffled_over_3_files", "delivered_twice", "payload_wrapped", "compact", "named_order"],
)
def test_postgres_envelope_mirrors_the_events_in_commit_order(spark, db, lz, tmp_path, how):
    events = postgres_history()
    lines: list[Any] = [with_schema(e) for e in events] if how == "payload_wrapped" else list(events)
    lines.append(None)  # the tombstone Kafka carries after a delete reads as a row of NULLs
    if how == "delivered_twice":
        lines += events[4:]  # redelivered after a consumer restart, later in the topic
    shuffled = how != "in_order"
    df = read(spark, tmp_path / "topic", lines, files=3 if shuffled else 1, seed=7 if shuffled else None)
    assert {"before", "after", "source", "op"} <= set(df.columns) or how == "payload_wrapped"
    kwargs = {"compact": True} if how == "compact" else {}
    if how == "named_order":
        kwargs = {"order_by": ["source.txId", "source.lsn"]}
    push(db, df, **kwargs)
    assert published_columns(lz) == {*COLUMNS, ROW_MARKER}
    assert_mirrors(db, events)


def test_snapshot_then_changes_in_two_pushes(spark, db, lz, tmp_path):
    events = postgres_history()
    push(db, read(spark, tmp_path / "snapshot", events[:4]))
    assert_mirrors(db, events[:4])
    result = push(db, read(spark, tmp_path / "changes", events[4:], files=3, seed=11))
    assert result.rows == {"delete": 3, "upsert": 7}
    assert published_columns(lz) == {*COLUMNS, ROW_MARKER}
    assert_mirrors(db, events)


def test_a_batch_of_deletes_only(spark, db, tmp_path):
    """No event has an after image, so spark.read.json types after as text that is always NULL."""
    events = postgres_history()[:4]
    push(db, read(spark, tmp_path / "snapshot", events))
    deletes = [pg("d", key_only(i), None, lsn=30000000 + i, tx=700 + i) for i in (2, 4)]
    df = read(spark, tmp_path / "deletes", [*deletes, None], seed=29)
    assert dict(df.dtypes)["after"] == "string"
    assert push(db, df).rows == {"delete": 2}
    assert_mirrors(db, events + deletes)


def test_mysql_binlog_position_orders_events_of_one_second(spark, db, lz, tmp_path):
    events = mysql_history()
    df = read(spark, tmp_path / "topic", [*events, *events[2:4]], files=3, seed=3)
    push(db, df)
    assert published_columns(lz) == {*COLUMNS, ROW_MARKER}
    assert_mirrors(db, events)


def test_an_update_that_changes_the_key_deletes_the_old_key(spark, db, tmp_path):
    """With REPLICA IDENTITY FULL and keys other than the primary key, one u event moves a row."""
    events = [
        pg("c", None, customer(1, "Anne"), lsn=100, tx=1),
        pg("c", None, customer(2, "Sally"), lsn=200, tx=2),
        pg("u", customer(1, "Anne"), customer(10, "Anne"), lsn=300, tx=3),
    ]
    push(db, read(spark, tmp_path / "topic", events, seed=5))
    assert_mirrors(db, events)
    assert [r[0] for r in mirrored_rows(db, TABLE, COLUMNS)] == [2, 10]


def test_metadata_is_published_when_added_to_the_row(spark, db, lz, tmp_path):
    from pyspark.sql import functions as F

    events = postgres_history()
    df = read(spark, tmp_path / "topic", events, files=2, seed=23)
    df = df.withColumn("after", F.col("after").withField("lsn", F.col("source.lsn")))
    push(db, df)
    assert published_columns(lz) == {*COLUMNS, "lsn", ROW_MARKER}
    assert_mirrors(db, events, extra=("lsn",))
    lsn = {e["after"]["id"]: e["source"]["lsn"] for e in events if e["after"]}
    assert mirrored_rows(db, TABLE, ("id", "lsn")) == sorted((i, lsn[i]) for i in (1, 2, 5, 40))


# ExtractNewRecordState and the flattened form ------------------------------------------------------


def test_extract_new_record_state_output(spark, db, lz, tmp_path):
    events = postgres_history()
    full = [  # rewrite mode sends a delete's last state: give the deletes full before images
        {**e, "before": {**customer(e["before"]["id"], "Gone")}} if e["op"] == "d" else e for e in events
    ]
    lines = [unwrap(e) for e in full] + [None]  # drop.tombstones=false
    df = read(spark, tmp_path / "topic", lines, files=3, seed=13)
    assert {"__op", "__deleted", "__source_lsn"} <= set(df.columns)
    push(db, df)
    assert published_columns(lz) == {*COLUMNS, ROW_MARKER}
    assert_mirrors(db, events)


def test_extract_new_record_state_without_op_tells_deletes_by_deleted(spark, db, tmp_path):
    events = postgres_history()
    lines = [{k: v for k, v in unwrap(e).items() if k != "__op"} for e in events]
    for line in lines:
        if line["__deleted"] == "true":
            line.update({c: None for c in COLUMNS[1:]})
    push(db, read(spark, tmp_path / "topic", lines, files=2, seed=17))
    assert_mirrors(db, events)


def test_the_flattened_form_still_works_and_keeps_order_fields_unpublished(spark, db, lz, tmp_path):
    events = postgres_history()
    lines = [
        {**(e["before"] if e["op"] == "d" else e["after"]), "op": e["op"], "__source_lsn": e["source"]["lsn"]}
        for e in events
    ]
    df = read(spark, tmp_path / "topic", lines, files=3, seed=19)
    push(db, df, order_by=["__source_lsn"])
    assert published_columns(lz) == {*COLUMNS, ROW_MARKER}  # __source_lsn is not a table column
    assert_mirrors(db, events)


# Bad input: one line naming the field, the values seen and the fix; the landing zone untouched ----


@pytest.fixture
def seeded(spark, db, tmp_path):
    push(db, read(spark, tmp_path / "seed", postgres_history()[:4]))
    return db


def _rejected(db, error, call, *parts):
    before = tree_hash(db.target.landing_zone)
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert type(info.value) is error, message
    assert "\n" not in message
    for part in parts:
        assert part in message, message
    assert tree_hash(db.target.landing_zone) == before
    return message


def _change(i: int, op: str = "u", **over: Any) -> dict[str, Any]:
    return {**pg(op, None, customer(i, "X"), lsn=90000000 + i, tx=900 + i), **over}


BAD_EVENTS = {
    "op-outside-crud": (
        [_change(1), _change(2, "x"), _change(9, "t", after=None), _change(3, "U")],
        {},
        om.ChangeFeedError,
        ("2 Debezium event(s)", "op value(s)", "'t'", "'x'", "c (create)", "filter the others out"),
    ),
    "op-outside-crud-in-payload": (
        [with_schema(_change(1)), with_schema(_change(2, "m"))],
        {},
        om.ChangeFeedError,
        ("payload.op value(s) 'm'", "c (create)"),
    ),
    "after-is-text": (
        [{**_change(1), "after": json.dumps(customer(1, "X"))}],
        {},
        om.ChangeFeedError,
        ("'after' holds text", '\'{"id": 1', "F.from_json('after', schema)"),
    ),
    "after-is-a-number": (
        [{**_change(1), "after": 5}],
        {},
        om.ChangeFeedError,
        ("'after' is bigint, not a struct", "spark.read.json"),
    ),
    "payload-is-text": (
        [{"schema": None, "payload": json.dumps(_change(1))}],
        {},
        om.ChangeFeedError,
        ("'payload' is string", "F.from_json('payload', schema)"),
    ),
    "order-field-missing": (
        [_change(1)],
        {"order_by": ["source.lssn"]},
        om.ConfigError,
        ("'source.lssn'", "source.lsn", "Did you mean 'source.lsn'?"),
    ),
    "order-field-a-struct": (
        [_change(1)],
        {"order_by": ["source"]},
        om.ConfigError,
        ("'source' is a struct, which has no order", "name a number, text or time field"),
    ),
    "order-field-without-value": (
        [_change(1), {**_change(2), "source": {"connector": "postgresql", "lsn": None, "ts_ms": 5}}],
        {},
        om.ChangeFeedError,
        ("1 Debezium event(s)", "(None)", "'source.lsn'", "drop them, or pass order_by=[...]"),
    ),
    "delete-without-key-in-before": (
        [_change(1), {**_change(2, "d"), "after": None, "before": {"email": "x@y"}}],
        {},
        om.ChangeFeedError,
        ("Key column 'id' is not in Debezium's 'before' image (fields: email)", "REPLICA IDENTITY"),
    ),
    "key-not-in-after": (
        [_change(1)],
        {"keys": ["first-name"]},
        om.KeyColumnsError,
        ("'first-name'", "columns: email, first_name, id, last_name", "Did you mean 'first_name'?"),
    ),
    "deleted-not-true-or-false": (
        [unwrap(_change(1)), {**unwrap(_change(2)), "__deleted": "yes"}],
        {},
        om.ChangeFeedError,
        ("__deleted value(s) 'yes'", "'true' or 'false'"),
    ),
    "unwrapped-op-outside-crud": (
        [unwrap(_change(1)), {**unwrap(_change(2)), "__op": "q"}],
        {},
        om.ChangeFeedError,
        ("__op value(s) 'q'",),
    ),
}


@pytest.mark.parametrize("table_exists", [True, False], ids=["seeded", "new-table"])
@pytest.mark.parametrize("case", list(BAD_EVENTS))
def test_bad_feeds_are_rejected_untouched(spark, db, tmp_path, case, table_exists):
    lines, kwargs, error, parts = BAD_EVENTS[case]
    if table_exists:
        if "keys" in kwargs:
            pytest.skip("a seeded table's keys can never change; that error is another test's")
        push(db, read(spark, tmp_path / "seed", postgres_history()[:4]))
    df = read(spark, tmp_path / "topic", lines)
    args = {"keys": ["id"], **kwargs}
    _rejected(
        db,
        error,
        lambda: db.push(df, table=TABLE, mode="changes", convention="debezium", **args),
        *parts,
    )


def test_lines_that_are_not_json_are_named(spark, seeded, tmp_path):
    folder = tmp_path / "topic"
    folder.mkdir()
    (folder / "part-0.json").write_text(json.dumps(_change(1)) + "\n{not json\n")
    df = spark.read.json(str(folder))
    _rejected(seeded, om.ChangeFeedError, lambda: push(seeded, df), "_corrupt_record: '{not json'")


def test_compaction_keeps_an_unreadable_event_from_being_dropped(spark, seeded, tmp_path):
    """An invalid event followed by a valid one of the same key must still reject the push."""
    lines = [_change(1, "x"), {**_change(1), "source": {**_change(1)["source"], "lsn": 99999999}}]
    df = read(spark, tmp_path / "topic", lines)
    _rejected(seeded, om.ChangeFeedError, lambda: push(seeded, df, compact=True), "op value(s) 'x'")
