"""Every rejected push raises the precise error and leaves the landing zone byte-for-byte as it was."""

from __future__ import annotations

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import (
    ChangeFeedError,
    ConfigError,
    InvalidNameError,
    KeyColumnsError,
    SchemaChangeError,
    UnsupportedTypeError,
)
from tests.conftest import tree_hash

pytestmark = pytest.mark.spark


@pytest.fixture
def seeded(spark, db):
    """A table with one committed initial load, so checks against existing state run too."""
    db.push(spark.createDataFrame([(1, "a", 10)], "id long, v string, n int"), table="s.t", keys=["id"])
    return db


def _rejected(db, error, match, call):
    before = tree_hash(db.target.landing_zone)
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    assert match in message, message
    assert tree_hash(db.target.landing_zone) == before
    return message


def test_null_keys(spark, db):
    df = spark.createDataFrame([(1, "a"), (None, "b"), (None, "c")], "id long, v string")
    msg = _rejected(db, KeyColumnsError, "2 row(s)", lambda: db.push(df, table="t", keys=["id"]))
    assert "['id']" in msg and "NULL" in msg


def test_duplicate_keys_are_named(spark, db):
    df = spark.createDataFrame([(1, "a"), (2, "b"), (2, "c"), (3, "d"), (3, "e")], "id long, v string")
    msg = _rejected(db, KeyColumnsError, "not unique", lambda: db.push(df, table="t", keys=["id"]))
    assert "2" in msg and "3" in msg


def test_duplicate_compound_keys(spark, db):
    df = spark.createDataFrame([(1, "x", 1), (1, "x", 2), (1, "y", 3)], "a long, b string, v int")
    msg = _rejected(db, KeyColumnsError, "not unique", lambda: db.push(df, table="t", keys=["a", "b"]))
    assert "(1, 'x')" in msg


def test_missing_key_column_suggests_near_name(spark, db):
    df = spark.createDataFrame([(1, "a")], "order_id long, v string")
    msg = _rejected(db, KeyColumnsError, "'orderid'", lambda: db.push(df, table="t", keys=["orderid"]))
    assert "Did you mean 'order_id'?" in msg


def test_keys_can_never_change(spark, seeded):
    df = spark.createDataFrame([(1, "a", 10)], "id long, v string, n int")
    msg = _rejected(
        seeded, KeyColumnsError, "can never change", lambda: seeded.push(df, table="s.t", keys=["v"])
    )
    assert "['id']" in msg and "['v']" in msg


def test_row_marker_in_user_data(spark, db):
    df = spark.createDataFrame([(1, 0)], "id long, __rowMarker__ int")
    _rejected(
        db, InvalidNameError, "reserved for the row marker", lambda: db.push(df, table="t", keys=["id"])
    )


@pytest.mark.parametrize("name", ["_x", "a/b", "..", "", "s._t"])
def test_bad_table_names(spark, db, name):
    df = spark.range(1)
    _rejected(db, InvalidNameError, "name", lambda: db.push(df, table=name, keys=["id"]))


def test_unsupported_types(spark, db):
    df = spark.sql("select 1L as id, null as nothing")
    _rejected(db, UnsupportedTypeError, "'nothing'", lambda: db.push(df, table="t", keys=["id"]))
    df2 = spark.sql("select 1L as id, interval 3 days as wait")
    _rejected(db, UnsupportedTypeError, "'wait'", lambda: db.push(df2, table="t", keys=["id"]))


def test_decimal_in_delimited_text(spark, db):
    df = spark.sql("select 1L as id, cast(1.5 as decimal(10,2)) as amount")
    options = om.TableOptions(file_format="csv")
    _rejected(
        db,
        UnsupportedTypeError,
        "parquet",
        lambda: db.push(df, table="t", keys=["id"], table_options=options),
    )


def test_changed_column_type_points_to_schema_change(spark, seeded):
    df = spark.createDataFrame([(1, "a", "ten", 4)], "id long, v string, n string, op int")
    msg = _rejected(
        seeded,
        SchemaChangeError,
        "changed type",
        lambda: seeded.push(df, table="s.t", mode="changes", op_column="op"),
    )
    assert "reseed" in msg and "'n'" in msg


def test_marker_values_outside_the_contract(spark, seeded):
    df = spark.createDataFrame(
        [(1, "a", 10, "3"), (2, "b", 20, "x"), (3, "c", 30, "4")], "id long, v string, n int, op string"
    )
    msg = _rejected(
        seeded,
        ChangeFeedError,
        "2 change row(s)",
        lambda: seeded.push(df, table="s.t", mode="changes", op_column="op"),
    )
    assert "'3'" in msg and "'x'" in msg and "0 (insert)" in msg


def test_fractional_marker_is_not_truncated(spark, seeded):
    df = spark.createDataFrame([(1, "a", 10, 1.5)], "id long, v string, n int, op double")
    _rejected(
        seeded, ChangeFeedError, "1.5", lambda: seeded.push(df, table="s.t", mode="changes", op_column="op")
    )


def test_null_keys_in_a_change_feed(spark, seeded):
    df = spark.createDataFrame([(None, "a", 10, 4)], "id long, v string, n int, op int")
    _rejected(
        seeded, KeyColumnsError, "NULL", lambda: seeded.push(df, table="s.t", mode="changes", op_column="op")
    )


def test_missing_op_column(spark, seeded):
    df = spark.createDataFrame([(1, "a", 10, 4)], "id long, v string, n int, opp int")
    _rejected(
        seeded,
        ChangeFeedError,
        "Did you mean 'opp'?",
        lambda: seeded.push(df, table="s.t", mode="changes", op_column="op"),
    )


def test_format_cannot_change_after_creation(spark, seeded):
    df = spark.createDataFrame([(2, "b", 20, 0)], "id long, v string, n int, op int")
    options = om.TableOptions(file_format="csv")
    call = lambda: seeded.push(df, table="s.t", mode="changes", op_column="op", table_options=options)  # noqa: E731
    _rejected(seeded, ConfigError, "file_format='parquet'", call)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"compression": "lz4"}, "'lz4'"),
        ({"rows_per_file": 0}, "rows_per_file 0"),
        ({"mode": "append"}, "'append'"),
        ({"keys": "id"}, "list of column names"),
    ],
)
def test_bad_arguments(spark, db, kwargs, match):
    df = spark.range(2)
    args = {"table": "t", "keys": ["id"], **kwargs}
    _rejected(db, ConfigError, match, lambda: db.push(df, **args))


def test_case_insensitive_duplicate_columns(spark, db):
    df = spark.sql("select 1L as id, 2 as Amount, 3 as amount")
    _rejected(db, InvalidNameError, "differ only by case", lambda: db.push(df, table="t", keys=["id"]))


@pytest.mark.parametrize("name", ["_om_partition", "_OM_Position", "_openmirror_order"])
@pytest.mark.parametrize("mode", ["snapshot", "changes"])
def test_columns_named_as_the_ones_a_push_adds(spark, db, name, mode):
    """Spark resolves names regardless of case: a user's column named as one a push adds while
    it writes would be replaced or dropped with it (a snapshot lost its ``_om_partition``)."""
    df = spark.range(2).selectExpr("id", f"'x' AS `{name}`", "4 AS op")
    kwargs = {"mode": "changes", "op_column": "op"} if mode == "changes" else {}
    msg = _rejected(
        db,
        InvalidNameError,
        "keeps for the columns it adds",
        lambda: db.push(df, table="t", keys=["id"], **kwargs),
    )
    assert repr(name) in msg and "withColumnRenamed" in msg
