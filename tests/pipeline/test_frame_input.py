"""``db.push`` of a pandas DataFrame or a pyarrow Table: converted through the session with every
type kept, replicated by the local mirror and read back; anything else refused in one line
before the landing zone is touched. The index rule and the conversion errors need no Spark."""

from __future__ import annotations

import datetime as dt
import decimal

import pandas as pd
import pyarrow as pa
import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError, UnsupportedTypeError
from openmirror_nb._core.pipeline.inputs.arrow_input import pandas_to_arrow
from openmirror_nb._core.pipeline.inputs.frame_input import as_spark_frame

UTC = dt.UTC


class ArrowSpeaker:
    """Stands for polars, arro3 or deltalake's reader: Arrow data that is not pyarrow's."""

    def __arrow_c_stream__(self, requested_schema=None):
        raise AssertionError("not read: push refuses it")


class PandasOnSpark:
    def to_spark(self):
        raise AssertionError("not called")


@pytest.mark.parametrize(
    ("data", "named", "hint"),
    [
        ([{"id": 1}], "not list.", ""),
        ({"id": [1]}, "not dict.", ""),
        (None, "not None.", ""),
        (ArrowSpeaker(), "not tests.ArrowSpeaker;", "om.arrow_to_spark(data)"),
        (PandasOnSpark(), "not tests.PandasOnSpark;", "data.to_spark() first"),
    ],
)
def test_anything_else_is_refused_in_one_line_naming_its_type(data, named, hint):
    with pytest.raises(ConfigError) as caught:
        as_spark_frame(data)
    message = str(caught.value)
    assert message.startswith("push needs a Spark DataFrame, a pandas DataFrame or a pyarrow Table, ")
    assert named in message and hint in message and "\n" not in message


def test_an_unnamed_index_is_dropped_and_named_levels_become_the_first_columns():
    frame = pd.DataFrame({"id": [1, 2, 3], "v": ["a", "b", "c"]})
    assert pandas_to_arrow(frame).column_names == ["id", "v"]
    assert pandas_to_arrow(frame[frame.id > 1]).column_names == ["id", "v"]  # a gappy index: dropped
    assert pandas_to_arrow(frame.set_index("id")).column_names == ["id", "v"]
    two = frame.assign(k=["x", "y", "z"]).set_index(["id", "k"])
    two.index = two.index.set_names([None, "k"])  # only the named level is data
    table = pandas_to_arrow(two)
    assert table.column_names == ["k", "v"] and table.column("k").to_pylist() == ["x", "y", "z"]


def test_an_index_named_like_a_column_is_refused():
    frame = pd.DataFrame({"id": [1, 2]}, index=pd.Index([7, 8], name="id"))
    with pytest.raises(ConfigError, match=r"pandas index level 'id' is also a column; rename one"):
        pandas_to_arrow(frame)


def test_naive_datetimes_are_read_as_utc_and_aware_ones_keep_their_instant():
    frame = pd.DataFrame(
        {
            "naive": pd.to_datetime(["2024-01-01 10:00"]),
            "paris": pd.to_datetime(["2024-01-01 10:00"]).tz_localize("Europe/Paris"),
        }
    )
    table = pandas_to_arrow(frame)
    assert table.schema.field("naive").type == pa.timestamp("ns", "UTC")
    assert table.column("naive")[0].as_py() == dt.datetime(2024, 1, 1, 10, tzinfo=UTC)
    assert table.column("paris")[0].as_py() == dt.datetime(2024, 1, 1, 9, tzinfo=UTC)


def test_columns_pyarrow_cannot_read_are_named_with_the_fix():
    with pytest.raises(
        UnsupportedTypeError, match=r"pandas column 'mixed' cannot be read as one type .*astype"
    ):
        pandas_to_arrow(pd.DataFrame({"ok": [1, 2], "mixed": [1, "a"]}))
    twice = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(ConfigError, match=r"pandas column 'a' appears twice"):
        pandas_to_arrow(twice)


def test_a_column_of_untyped_nulls_is_refused_before_spark():
    # Spark would read Arrow's null type as INT and fix the table's column to it forever
    with pytest.raises(UnsupportedTypeError, match=r"Column 'note' holds only NULLs with no type"):
        om.arrow_to_spark(pa.table({"id": [1], "note": pa.nulls(1)}))


def _every_dtype() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": pd.Series([1, 2, 3], dtype="int64"),
            "i32": pd.Series([10, -20, 2**31 - 1], dtype="int32"),
            "f": [1.5, None, -2.25],
            "flag": [True, False, True],
            "s": ["a", "b", None],
            "obj": pd.Series(["x", None, "é"], dtype=object),
            "ts": pd.to_datetime(["2024-01-01 10:00:00.123456", None, "1969-12-31 23:59:59.000001"]),
            "tz": pd.to_datetime(["2024-06-01 12:00", "2024-01-01 00:30", None]).tz_localize("Europe/Paris"),
            "d": [dt.date(2024, 2, 29), None, dt.date(1500, 1, 1)],  # before 1582: no calendar shift
            "dec": [decimal.Decimal("12345.67"), None, decimal.Decimal("-0.01")],
            "ni": pd.array([1, None, 3], dtype="Int64"),
            "nb": pd.array([True, None, False], dtype="boolean"),
            "ns": pd.array(["p", None, "r"], dtype="string"),
        }
    )


def _cells(frame: pd.DataFrame) -> dict[str, list]:
    """Column -> values, NULL/NaN/NaT as None, sorted by id."""
    frame = frame.sort_values("id").astype(object)
    return {c: [None if pd.isna(v) else v for v in frame[c]] for c in frame.columns}


@pytest.mark.spark
def test_a_pandas_frame_is_pushed_with_every_type_kept_and_a_list_is_refused_untouched(spark, db, lz_hash):
    frame = _every_dtype()
    result = db.push(frame, table="sales.kinds", keys=["id"])
    assert result.rows == {"initial": 3}
    info = db.describe("sales.kinds")
    assert {c.name: c.type for c in info.columns} == {
        "id": "BIGINT",
        "i32": "INT",
        "f": "DOUBLE",
        "flag": "BOOLEAN",
        "s": "STRING",
        "obj": "STRING",
        "ts": "TIMESTAMP",
        "tz": "TIMESTAMP",
        "d": "DATE",
        "dec": "DECIMAL(7,2)",
        "ni": "BIGINT",
        "nb": "BOOLEAN",
        "ns": "STRING",
    }
    om.LocalMirror(db.target.root).run_once()
    back = db.read_table("sales.kinds", as_pandas=True)
    assert str(back["ts"].dtype) == str(back["tz"].dtype) == "datetime64[us, UTC]"
    assert (back["id"].dtype, back["i32"].dtype, back["flag"].dtype) == ("int64", "int32", "bool")
    expected = _cells(frame)
    expected["ts"] = [
        dt.datetime(2024, 1, 1, 10, 0, 0, 123456, tzinfo=UTC),
        None,
        dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
    ]
    expected["tz"] = [
        dt.datetime(2024, 6, 1, 10, tzinfo=UTC),
        dt.datetime(2023, 12, 31, 23, 30, tzinfo=UTC),
        None,
    ]
    got = _cells(back)
    got["ts"] = [None if v is None else v.to_pydatetime() for v in got["ts"]]
    got["tz"] = [None if v is None else v.to_pydatetime() for v in got["tz"]]
    got["ni"] = [None if v is None else int(v) for v in got["ni"]]
    assert got == expected

    before = lz_hash(db.target.root)
    with pytest.raises(ConfigError, match=r"^push needs a Spark DataFrame, .* not list\.$"):
        db.push(frame.to_dict("records"), table="sales.kinds")
    assert lz_hash(db.target.root) == before


@pytest.mark.spark
def test_arrow_tables_and_record_batches_are_pushed_with_their_types(spark, db):
    first = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "day": pa.array([dt.date(2024, 1, 1), None], pa.date32()),
            "amount": pa.array([decimal.Decimal("1.10"), None], pa.decimal128(10, 2)),
            "at": pa.array([dt.datetime(2024, 1, 1, 1, tzinfo=UTC), None], pa.timestamp("ms", tz="UTC")),
            "wall": pa.array([dt.datetime(2024, 1, 1, 1), None], pa.timestamp("us")),
            "n": pa.array([1, None], pa.uint32()),
            "name": pa.array(["a", None], pa.large_string()),
        }
    )
    db.push(first, table="moves", keys=["id"])
    types = {c.name: c.type for c in db.describe("moves").columns}
    assert types == {
        "id": "BIGINT",
        "day": "DATE",
        "amount": "DECIMAL(10,2)",
        "at": "TIMESTAMP",
        "wall": "TIMESTAMP_NTZ",  # Arrow without a zone is a wall-clock time
        "n": "BIGINT",
        "name": "STRING",
    }
    # the next snapshot as a record batch: one row changed, one added, one deleted
    second = pa.RecordBatch.from_pylist(
        [
            {
                "id": 2,
                "day": dt.date(2024, 2, 2),
                "amount": decimal.Decimal("-3.50"),
                "at": None,
                "wall": None,
                "n": 7,
                "name": "b",
            },
            {
                "id": 3,
                "day": None,
                "amount": None,
                "at": dt.datetime(2024, 3, 3, tzinfo=UTC),
                "wall": None,
                "n": None,
                "name": "c",
            },
        ],
        schema=first.schema,
    )
    result = db.push(second, table="moves")
    assert result.rows == {"insert": 1, "upsert": 1, "delete": 1}
    om.LocalMirror(db.target.root).run_once()
    back = db.read_table("moves", as_pandas=True).sort_values("id")
    assert back["id"].tolist() == [2, 3]
    assert back["day"].tolist()[0] == dt.date(2024, 2, 2) and back["amount"].tolist()[0] == decimal.Decimal(
        "-3.50"
    )
    assert back["at"].tolist()[1] == pd.Timestamp("2024-03-03", tz="UTC") and back["name"].tolist() == [
        "b",
        "c",
    ]
