"""Bad input matrix: every rejected push raises the exact error class, with a one-line message that
names the offending value and the fix, and leaves the landing zone byte-for-byte as it was.

One row per case in ``CASES``: the DataFrame and arguments, the error class, and the substrings
the message must contain (the value first, then the fix). The cases run against one database
holding a committed table ``s.t`` (id long, v string, n int; keys ['id']), so the checks against
an existing table's metadata and state run too; the tree hash of the whole landing zone (internal
``_openmirror`` folders included) is compared before and after each rejected push.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import (
    ChangeFeedError,
    ConfigError,
    InvalidNameError,
    KeyColumnsError,
    OpenMirrorError,
    SchemaChangeError,
    UnsupportedTypeError,
)
from tests.conftest import tree_hash

pytestmark = pytest.mark.spark

SEEDED = "s.t"
SEEDED_SCHEMA = "id long, v string, n int"
CHANGE = f"{SEEDED_SCHEMA}, op int"
MARKERS_FIX = "accepts only 0 (insert), 1 (update), 2 (delete) and 4 (upsert)"


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[Any], tuple[Any, dict[str, Any]]]  # spark -> (DataFrame, push arguments)
    error: type[OpenMirrorError]
    message: tuple[str, ...]  # the offending value, then the fix
    marks: tuple[Any, ...] = field(default=())


def _df(rows: list[tuple[Any, ...]], schema: str) -> Callable[[Any], Any]:
    return lambda spark: spark.createDataFrame(rows, schema)


def _sql(query: str) -> Callable[[Any], Any]:
    return lambda spark: spark.sql(query)


def snapshot(df: Callable[[Any], Any], table: str = "fresh", **kwargs: Any) -> Callable[[Any], Any]:
    return lambda spark: (df(spark), {"table": table, **({"keys": ["id"]} | kwargs)})


def changes(df: Callable[[Any], Any], **kwargs: Any) -> Callable[[Any], Any]:
    return lambda spark: (df(spark), {"table": SEEDED, "mode": "changes", "op_column": "op", **kwargs})


CASES = [
    # key columns
    Case(
        "null-keys",
        snapshot(_df([(1, "a"), (None, "b"), (None, "c")], "id long, v string")),
        KeyColumnsError,
        ("2 row(s)", "NULL in key columns ['id']", "Filter them out or fill them"),
    ),
    Case(
        "null-keys-in-a-change-feed",
        changes(_df([(None, "a", 10, 4)], CHANGE)),
        KeyColumnsError,
        ("1 row(s)", "NULL in key columns ['id']", "Filter them out or fill them"),
    ),
    Case(
        "duplicate-keys",
        snapshot(_df([(1, "a"), (2, "b"), (2, "c"), (3, "d"), (3, "e")], "id long, v string")),
        KeyColumnsError,
        ("2, 3 occur more than once", "Deduplicate the DataFrame"),
    ),
    Case(
        "duplicate-compound-keys",
        snapshot(_df([(1, "x", 1), (1, "x", 2), (1, "y", 3)], "a long, b string, v int"), keys=["a", "b"]),
        KeyColumnsError,
        ("(1, 'x') occur more than once", "['a', 'b']", "Deduplicate the DataFrame"),
    ),
    Case(
        "duplicate-keys-in-a-snapshot-diff",
        snapshot(_df([(1, "a", 10), (1, "b", 11)], SEEDED_SCHEMA), table=SEEDED),
        KeyColumnsError,
        ("1 occur more than once", "Deduplicate the DataFrame"),
    ),
    Case(
        "duplicate-keys-in-a-sys_op-batch",
        changes(_df([(1, "a", 10, 0), (1, "b", 11, 0)], CHANGE), convention="sys_op"),
        ChangeFeedError,
        ("Keys 1 occur more than once", "one change per key"),
    ),
    Case(
        "missing-key-column",
        snapshot(_df([(1, "a")], "order_id long, v string"), keys=["orderid"]),
        KeyColumnsError,
        ("'orderid'", "Did you mean 'order_id'?"),
    ),
    Case(
        "key-column-missing-from-a-change-feed",
        changes(_df([(1, "a", 10, 4)], "idd long, v string, n int, op int")),
        KeyColumnsError,
        ("Key column 'id' is not in the DataFrame", "Did you mean 'idd'?"),
    ),
    Case(
        "no-keys-on-the-first-push",
        snapshot(_df([(1, "a")], "id long, v string"), keys=None),
        KeyColumnsError,
        ("'fresh' has no keyColumns", "pass keys=['id']"),
    ),
    Case(
        "changed-key-columns",
        snapshot(_df([(1, "a", 10)], SEEDED_SCHEMA), table=SEEDED, keys=["v"]),
        KeyColumnsError,
        ("['id']", "['v']", "can never change", "push with keys=['id']"),
    ),
    Case(
        "complex-key-column",
        snapshot(_sql("select named_struct('a', 1) as id, 'x' as v")),
        KeyColumnsError,
        ("'id' has type struct<a:int>", "must be simple values"),
    ),
    # names
    Case(
        "row-marker-in-user-data",
        snapshot(_df([(1, 0)], "id long, __rowMarker__ int")),
        InvalidNameError,
        ("'__rowMarker__' is reserved for the row marker", "rename it", "mode='changes'"),
    ),
    Case(
        "columns-differ-only-by-case",
        snapshot(_sql("select 1L as id, 2 as Amount, 3 as amount")),
        InvalidNameError,
        ("'Amount' and 'amount'", "rename one of them"),
    ),
    *[
        Case(
            f"table-name-{label}",
            snapshot(_sql("select 1L as id"), table=name),
            InvalidNameError,
            (f"name {shown!r} {problem}", f"choose a name like {like!r}", "letters, digits, '_' and '-'"),
        )
        for label, name, shown, problem, like in [
            ("underscore", "_x", "_x", "starts with '_'", "x"),
            ("slash", "a/b", "a/b", "contains a path separator", "ab"),
            ("dotdot", "..", "..", "contains '..'", "orders"),
            ("empty", "", "", "is empty", "orders"),
            ("underscore-in-schema", "s._t", "_t", "starts with '_'", "s.t"),
            ("space", "Sales Header", "Sales Header", "contains a space", "SalesHeader"),
            ("percent", "a%20b", "a%20b", "contains '%'", "a20b"),
            ("two-dots", "a.b.c", "a.b.c", "has more than one '.'", "a.b_c"),
            ("too-long", "x" * 300, "x" * 300, "is 300 bytes in UTF-8", "x" * 212),
        ]
    ],
    # types
    Case(
        "unsupported-type-void",
        snapshot(_sql("select 1L as id, null as nothing")),
        UnsupportedTypeError,
        ("'nothing' has type void", "cast it"),
    ),
    Case(
        "unsupported-type-interval",
        snapshot(_sql("select 1L as id, interval 3 days as wait")),
        UnsupportedTypeError,
        ("'wait'", "cast it to a string or a number of seconds"),
    ),
    Case(
        "decimal-in-delimited-text",
        snapshot(
            _sql("select 1L as id, cast(1.5 as decimal(10,2)) as amount"),
            table_options=om.TableOptions(file_format="csv"),
        ),
        UnsupportedTypeError,
        ("'amount' is decimal(10,2)", "use file_format='parquet'"),
    ),
    Case(
        "changed-column-type-in-a-change-feed",
        changes(_df([(1, "a", "ten", 4)], "id long, v string, n string, op int")),
        SchemaChangeError,
        ("'n'", "from integer to string", "reseed: plan = db.plan_schema_change('s.t', df)"),
    ),
    Case(
        "changed-column-type-in-a-snapshot",
        snapshot(_df([(1, "a", 10.5)], "id long, v string, n double"), table=SEEDED),
        SchemaChangeError,
        ("'n'", "from integer to double", "reseed: plan = db.plan_schema_change('s.t', df)"),
    ),
    # change feeds
    Case(
        "marker-values-outside-0-1-2-4",
        changes(
            _df(
                [(1, "a", 10, "3"), (2, "b", 20, "x"), (3, "c", 30, "4")],
                "id long, v string, n int, op string",
            )
        ),
        ChangeFeedError,
        ("2 change row(s)", "'3'", "'x'", MARKERS_FIX),
    ),
    Case(
        "marker-3",
        changes(_df([(1, "a", 10, 3)], CHANGE)),
        ChangeFeedError,
        ("operation value(s) 3;", MARKERS_FIX),
    ),
    Case(
        "fractional-marker",
        changes(_df([(1, "a", 10, 1.5)], "id long, v string, n int, op double")),
        ChangeFeedError,
        ("1.5", MARKERS_FIX),
    ),
    Case(
        "null-marker",
        changes(_df([(1, "a", 10, None)], CHANGE)),
        ChangeFeedError,
        ("None", MARKERS_FIX),
    ),
    Case(
        "missing-op-column",
        changes(_df([(1, "a", 10, 4)], "id long, v string, n int, opp int")),
        ChangeFeedError,
        ("'op'", "Did you mean 'opp'?"),
    ),
    # arguments and table options
    Case(
        "file-format-cannot-change",
        changes(_df([(2, "b", 20, 0)], CHANGE), table_options=om.TableOptions(file_format="csv")),
        ConfigError,
        ("file_format='parquet'", "'csv'", "dropping and reseeding"),
    ),
    Case(
        "unknown-compression",
        snapshot(_sql("select 1L as id"), compression="lz4"),
        ConfigError,
        ("'lz4'", "use none, snappy, gzip or zstd"),
    ),
    Case(
        "rows-per-file-zero",
        snapshot(_sql("select 1L as id"), rows_per_file=0),
        ConfigError,
        ("rows_per_file 0", "must be at least 1"),
    ),
    Case(
        "keys-as-a-string",
        snapshot(_sql("select 1L as id"), keys="id"),
        ConfigError,
        ("keys take a list of column names", "keys=['id']"),
    ),
]


@pytest.fixture(scope="module")
def db(spark, tmp_path_factory):
    """One database for every case: a rejected push must not change it, which each case checks."""
    db = om.connect(tmp_path_factory.mktemp("bad-input") / "db", lock_timeout=30)
    db.push(spark.createDataFrame([(1, "a", 10)], SEEDED_SCHEMA), table=SEEDED, keys=["id"])
    return db


def test_the_matrix_covers_the_issue():
    ids = {c.id for c in CASES}
    assert len(ids) == len(CASES)
    for needed in (
        "null-keys",
        "duplicate-keys",
        "missing-key-column",
        "changed-key-columns",
        "row-marker-in-user-data",
        "table-name-underscore",
        "table-name-slash",
        "table-name-dotdot",
        "table-name-empty",
        "unsupported-type-void",
        "changed-column-type-in-a-change-feed",
        "marker-values-outside-0-1-2-4",
    ):
        assert needed in ids


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES])
def test_bad_input_is_rejected_untouched(spark, db, case):
    lz = db.target.landing_zone
    before = tree_hash(lz)
    df, kwargs = case.build(spark)
    with pytest.raises(OpenMirrorError) as info:
        db.push(df, **kwargs)
    assert type(info.value) is case.error, f"{type(info.value).__name__}: {info.value}"
    message = str(info.value)
    assert "\n" not in message and message.strip() == message
    for part in case.message:
        assert part in message, f"{part!r} not in: {message}"
    assert tree_hash(lz) == before, "a rejected push changed the landing zone"
