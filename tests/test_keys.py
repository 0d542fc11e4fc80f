"""``openmirror_nb._core.keys``: profiling key columns, suggesting keys and listing the sources a notebook
can push, on the shared local Spark session."""

from __future__ import annotations

import types

import pandas as pd
import pytest
from pyspark.sql import DataFrame

from openmirror_nb._core.errors import ConfigError, KeyColumnsError
from openmirror_nb._core.keys import KeyProfile, key_suggestions, profile_keys, suggest_keys
from openmirror_nb._core.widgets.sources import list_sources, source_preview

pytestmark = pytest.mark.spark


@pytest.fixture
def collected(monkeypatch, spark):
    """Row counts of every result brought to the driver (``first``, ``head``, ``take`` collect too).

    The spy goes on the class the session's frames are: ``pyspark.sql.DataFrame`` on Spark 3.5, its
    subclass ``pyspark.sql.classic.dataframe.DataFrame`` on Spark 4, which overrides these methods
    (a spy on the parent would see nothing there)."""
    frame_class = type(spark.range(0))
    assert issubclass(frame_class, DataFrame)
    sizes: list[int] = []
    collect = frame_class.collect

    def spy(self):
        rows = collect(self)
        sizes.append(len(rows))
        return rows

    monkeypatch.setattr(frame_class, "collect", spy)
    monkeypatch.setattr(frame_class, "toPandas", lambda self: pytest.fail("toPandas collects the data"))
    monkeypatch.setattr(frame_class, "toLocalIterator", lambda self, *a: pytest.fail("iterates the data"))
    return sizes


def frame(spark, rows, ddl):
    return spark.createDataFrame(rows, ddl)


def test_a_unique_key(spark):
    profile = profile_keys(spark.range(20).withColumnRenamed("id", "order_id"), ["order_id"])
    assert (profile.rows, profile.distinct, profile.null_keys, profile.duplicated) == (20, 20, 0, 0)
    assert profile.unique and profile.duplicates == ()
    assert repr(profile) == "KeyProfile(order_id: 20 rows, 20 distinct keys, 0 NULL keys: unique)"
    assert "data-unique='true'" in profile._repr_html_()


def test_null_keys_are_counted_and_not_distinct(spark):
    df = frame(spark, [(1, "a"), (None, "b"), (None, "c"), (2, "d")], "id long, v string")
    profile = profile_keys(df, ["id"])
    assert (profile.rows, profile.distinct, profile.null_keys) == (4, 2, 2)
    assert not profile.unique and profile.duplicates == ()  # two NULLs are not a duplicated value
    assert "2 rows with a NULL key" in repr(profile)


def test_duplicates_are_listed_most_frequent_first_with_counts(spark):
    df = spark.range(30).selectExpr("id % 20 AS k", "id").union(spark.range(2).selectExpr("7 AS k", "id"))
    profile = profile_keys(df, ["k"], examples=3)
    assert (profile.rows, profile.distinct, profile.null_keys, profile.duplicated) == (32, 20, 0, 10)
    assert profile.duplicates == (((7,), 4), ((0,), 2), ((1,), 2))
    assert not profile.unique
    assert "10 key values repeated (7 in 4 rows, 0 in 2 rows, 1 in 2 rows)" in repr(profile)
    page = profile._repr_html_()
    assert (
        "data-unique='false'" in page and "<code>7</code>" in page and "and 7 more duplicated values" in page
    )


def test_a_composite_key(spark):
    df = spark.range(12).selectExpr("id div 4 AS order_id", "id % 4 AS line")
    assert not profile_keys(df, ["order_id"]).unique
    both = profile_keys(df, ["order_id", "line"])
    assert both.unique and (both.rows, both.distinct) == (12, 12)
    dup = profile_keys(df.union(df.limit(1)), ["order_id", "line"])
    assert dup.duplicates == (((0, 0), 2),) and "(0, 0) in 2 rows" in repr(dup)


def test_a_null_in_any_key_column_counts(spark):
    df = frame(spark, [(1, 1), (1, None), (None, 2)], "a int, b int")
    profile = profile_keys(df, ["a", "b"])
    assert (profile.rows, profile.distinct, profile.null_keys) == (3, 1, 2)


def test_an_empty_frame_is_vacuously_unique(spark):
    profile = profile_keys(spark.range(0), ["id"])
    assert profile == KeyProfile(("id",), 0, 0, 0)
    assert profile.unique


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([], "No key columns given"),
        (["id", "id"], r"Key columns \['id', 'id'\] repeat a column"),
        (["idd"], r"Key column 'idd' is not in the DataFrame \(columns: id\)\. Did you mean 'id'\?"),
    ],
)
def test_bad_keys_are_refused_in_one_line(spark, keys, message):
    with pytest.raises(KeyColumnsError, match=message):
        profile_keys(spark.range(3), keys)


def test_suggest_finds_the_id_column(spark, collected):
    df = spark.range(200).selectExpr(
        "id % 3 AS region", "concat('c', id % 50) AS customer", "id AS order_id", "id * 2 AS twice"
    )
    assert suggest_keys(df) == [("order_id",), ("twice",)]  # identifier-like names first
    assert suggest_keys(df, limit=1) == [("order_id",)]
    assert collected == [1, 1]  # one aggregate row per call: the data never reaches the driver


def test_suggest_finds_a_pair_when_no_column_is_unique(spark, collected):
    df = spark.range(60).selectExpr(
        "'x' AS constant", "id div 6 AS order_id", "id % 6 AS line", "id % 4 AS q"
    )
    assert suggest_keys(df) == [("order_id", "line")]
    assert collected == [1, 1]  # singles in one aggregation, the pairs in a second
    # the evidence a plan's note gives: every row profiled, as many distinct pairs
    assert key_suggestions(df) == [KeyProfile(("order_id", "line"), rows=60, distinct=60, null_keys=0)]


def test_suggest_never_offers_floats_or_columns_with_nulls(spark):
    df = spark.range(50).selectExpr(
        "id * 1.5d AS amount",  # unique, but a double
        "CAST(id AS float) AS f",
        "IF(id = 7, NULL, id) AS almost",  # unique where set, but one NULL
        "CAST(CAST(id AS string) AS binary) AS raw",  # (ANSI mode casts no number to binary)
        "array(id) AS arr",
        "id % 2 AS parity",
    )
    assert suggest_keys(df) == []


def test_suggest_gives_nothing_for_an_empty_frame(spark):
    assert suggest_keys(spark.range(0)) == []


def test_suggest_looks_at_a_bounded_number_of_columns(spark):
    df = spark.range(10).selectExpr(*(f"id % 2 AS c{i}" for i in range(6)), "id AS last")
    assert suggest_keys(df, max_columns=3) == []  # 'last' is beyond the columns examined
    assert suggest_keys(df, max_columns=7) == [("last",)]


def test_preview_has_the_count_the_columns_and_ten_rows(spark):
    preview = source_preview(spark.range(25).selectExpr("id", "concat('<b>', id) AS label"))
    assert preview.rows == 25 and preview.columns == (("id", "bigint"), ("label", "string"))
    assert len(preview.head) == 10 and preview.head[0] == (0, "<b>0")
    page = preview._repr_html_()
    assert "25 rows" in page and "first 10 rows shown" in page and "&lt;b&gt;0" in page


def test_list_sources_finds_frames_and_views_and_ignores_the_rest(spark):
    orders = spark.range(3)
    customers = pd.DataFrame({"id": [1, 2], "name": ["a", "b"]})
    spark.range(4).createOrReplaceTempView("keys_test_view")
    try:
        namespace = {
            "orders": orders,
            "customers": customers,
            "n": 3,
            "spark": spark,
            "_": orders,
            "text": "x",
        }
        found = list_sources(namespace, spark)
    finally:
        spark.catalog.dropTempView("keys_test_view")
    named = {(s.name, s.kind) for s in found}
    assert {("customers", "pandas"), ("orders", "spark"), ("keys_test_view", "view")} <= named
    assert not {name for name, _ in named} & {"n", "spark", "_", "text"}
    assert [s.label for s in found][:2] == ["orders (Spark DataFrame)", "customers (pandas)"]
    by_name = {s.name: s for s in found}
    assert by_name["orders"].load() is orders
    converted = by_name["customers"].load()
    assert sorted(converted.collect()) == [(1, "a"), (2, "b")]  # the index is not a column
    assert dict(converted.dtypes) == {"id": "bigint", "name": "string"}


def test_catalog_tables_are_listed_and_loaded_by_their_quoted_name():
    rows = [
        {"namespace": "lakehouse", "tableName": "orders", "isTemporary": False},
        {"namespace": "", "tableName": "recent", "isTemporary": True},
    ]
    spark = types.SimpleNamespace(
        sql=lambda query: types.SimpleNamespace(collect=lambda: rows), table=lambda name: ("read", name)
    )
    found = list_sources({}, spark)
    assert [(s.name, s.kind) for s in found] == [("recent", "view"), ("lakehouse.orders", "table")]
    assert found[1].load() == ("read", "`lakehouse`.`orders`")


def test_a_source_that_cannot_be_read_says_which_in_one_line(spark):
    spark.range(1).createOrReplaceTempView("keys_gone_view")
    (source,) = [s for s in list_sources({}, spark) if s.name == "keys_gone_view"]
    spark.catalog.dropTempView("keys_gone_view")
    with pytest.raises(
        ConfigError, match=r"^Source 'keys_gone_view' cannot be read \(.*\); pick another source\.$"
    ):
        source.load()


def test_a_catalog_that_cannot_be_listed_still_gives_the_frames(spark):
    def broken(query):
        raise RuntimeError("metastore down")

    found = list_sources({"orders": spark.range(1)}, types.SimpleNamespace(sql=broken))
    assert [s.name for s in found] == ["orders"]
