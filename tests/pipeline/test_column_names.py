"""Column names Spark would otherwise parse: a backtick, a dot, a space and a non-ASCII letter, in
key, value, operation, ordering and route columns, through a snapshot push, its diff, a change
feed, a stream, a routed stream and the local mirror (issue 38: every reference built from a name
is quoted in one place, ``identifiers.quoted``)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.identifiers import quoted
from tests.reliability.harness import lzcheck, rows_of
from tests.streaming.feeds import Feed, run

pytestmark = pytest.mark.spark

KEYS = ("we`ird", "a.b")
VALUES = ("with space", "zoë", "all`. ë")
COLUMNS = (*KEYS, *VALUES)
OP, ROUTE = "op`. ë", "rou.te` ë"
TYPES = ("long", "string", "string", "long", "string")


def _schema(*extra: tuple[str, str]):
    from pyspark.sql.types import StructType, _parse_datatype_string

    schema = StructType()
    for name, kind in [*zip(COLUMNS, TYPES, strict=True), *extra]:
        schema = schema.add(name, _parse_datatype_string(kind))
    return schema


def _mirrored(db, table):
    frame = db.read_table(table, as_pandas=True)
    assert sorted(frame.columns) == sorted(COLUMNS)
    return rows_of(frame.to_dict("records"), COLUMNS)


def _event(row, op, **extra):
    return {**dict(zip(COLUMNS, row, strict=True)), OP: op, **extra}


def _applied(events):
    """The table the events make, in order (0/4 write the row, 2 deletes it)."""
    table = {}
    for e in events:
        key = tuple(e[k] for k in KEYS)
        if e[OP] == 2:
            table.pop(key, None)
        else:
            table[key] = tuple(e[c] for c in COLUMNS)
    return rows_of([dict(zip(COLUMNS, r, strict=True)) for r in table.values()], COLUMNS)


def test_quoted_doubles_a_backtick_and_keeps_the_rest():
    assert quoted("we`ird") == "`we``ird`"
    assert quoted("a.b") == "`a.b`" and quoted("zoë x") == "`zoë x`"


def _tick(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith("`")


def _quotes_itself(node: ast.AST) -> bool:
    """``f"`{name}`"``, ``"`" + name`` or ``name.replace("`", ...)``: a backtick-quoted name built inline."""
    if isinstance(node, ast.JoinedStr):
        return any(_tick(a) and isinstance(b, ast.FormattedValue) for a, b in itertools.pairwise(node.values))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _tick(node.left) or _tick(node.right)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "replace"
        and bool(node.args)
        and _tick(node.args[0])
    )


def test_the_package_quotes_names_in_one_place():
    """No module quotes a name for Spark itself. The panels may import only the package root, so
    they keep their own copy for catalog table names."""
    package = Path(om.__file__).parent
    own = {package / "_core" / "identifiers.py", package / "_core" / "widgets" / "sources.py"}
    found = [
        f"{path.relative_to(package)}:{node.lineno}"
        for path in sorted(package.rglob("*.py"))
        if path not in own
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _quotes_itself(node)
    ]
    assert found == []


def test_snapshot_diff_and_mirror(spark, db, lz):
    first = [(1, "x", "p", 10, "u"), (2, "y", "q", 20, "v"), (3, "z", None, 30, None)]
    second = [(1, "x", "P", 11, "u`"), (3, "z", None, 30, None), (4, "w", "s.t", 40, "ë")]
    db.push(spark.createDataFrame(first, _schema()), table="odd.snap", keys=list(KEYS))
    result = db.push(spark.createDataFrame(second, _schema()), table="odd.snap")
    assert result.rows == {"insert": 1, "delete": 1, "upsert": 1}  # key (3, z) is unchanged
    om.LocalMirror(db.target.root).run_once()
    expected = rows_of([dict(zip(COLUMNS, r, strict=True)) for r in second], COLUMNS)
    assert _mirrored(db, "odd.snap") == expected
    lzcheck(lz, "odd.snap")


def test_change_feed_stream_routed_stream_and_mirror(spark, db, lz, tmp_path):
    pushed = [
        _event((1, "x", "p", 1, "u"), 0),
        _event((2, "y", "q", 2, "v"), 0),
        _event((1, "x", "P", 3, "u`"), 4),
        _event((2, "y", None, 4, None), 2),
    ]
    feed_schema = _schema((OP, "int"))
    frame = spark.createDataFrame([tuple(e[c] for c in feed_schema.names) for e in pushed], feed_schema)
    result = db.push(frame, table="odd.feed", keys=list(KEYS), mode="changes", op_column=OP, order_by=["zoë"])
    assert sum(result.rows.values()) == 4

    streamed = [_event((3, "z", "r", 5, "w"), 0), _event((1, "x", None, 6, None), 2)]
    feed = Feed(tmp_path / "plain")
    feed.drop(streamed)
    ms = db.mirror_stream(
        feed.stream(spark, feed_schema),
        table="odd.feed",
        keys=list(KEYS),
        op_column=OP,
        order_by=["zoë"],
        checkpoint=tmp_path / "c1",
    )
    assert ms.await_termination(timeout=600) is True and ms.error is None

    # a routed stream: the route and ordering columns are odd too, and columns= lists the kept ones
    routed = [
        _event((5, "v", "a", 7, "b"), 4, **{ROUTE: "odd.routed", "se.q`": 2}),
        _event((5, "v", "A", 8, "B"), 4, **{ROUTE: "odd.routed", "se.q`": 1}),  # earlier by se.q`
        _event((6, "t", "c", 9, None), 0, **{ROUTE: "odd.routed", "se.q`": 3}),
    ]
    feed = Feed(tmp_path / "routed")
    feed.drop(routed)
    sink = db.batch_sink(
        route=ROUTE,
        keys={"odd.routed": list(KEYS)},
        op_column=OP,
        order_by=["se.q`"],
        columns={"odd.routed": list(COLUMNS)},
    )
    run(feed.stream(spark, _schema((OP, "int"), (ROUTE, "string"), ("se.q`", "long"))), sink, tmp_path / "c2")

    om.LocalMirror(db.target.root).run_once()
    assert _mirrored(db, "odd.feed") == _applied(pushed + streamed)
    assert _mirrored(db, "odd.routed") == [(5, "v", "a", 7, "b"), (6, "t", "c", 9, None)]
    lzcheck(lz, "odd.feed")
    lzcheck(lz, "odd.routed")
