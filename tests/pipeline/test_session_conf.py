"""A push leaves the user's Spark session as it found it, during the push and after it.

The user here works in New York time, with Spark's legacy calendar for Parquet and INT96
timestamps, and has one conf unset: every push (initial load, snapshot diff, change feed,
delimited text, a failed one) leaves all of them exactly so, never sets a conf of the session
while it runs, and still publishes INT64 microsecond UTC instants in the proleptic calendar.
"""

from __future__ import annotations

import datetime as dt
import json
import threading

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import KeyColumnsError
from openmirror_nb._core.model import ROW_MARKER
from openmirror_nb._core.pipeline.push import write_session

pytestmark = pytest.mark.spark

USER = {
    "spark.sql.session.timeZone": "America/New_York",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "LEGACY",
    "spark.sql.parquet.outputTimestampType": "INT96",
}
UNSET = ("spark.sql.parquet.datetimeRebaseModeInRead",)
EXPECTED = {**USER, **dict.fromkeys(UNSET)}

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
T1 = dt.datetime(2026, 3, 1, 10, 11, 12, 123456, tzinfo=UTC)
T2 = dt.datetime(2026, 3, 8, 6, 59, 59, 999999, tzinfo=UTC)  # 01:59:59 in New York, as DST starts
T3 = dt.datetime(1960, 7, 4, 23, 0, 0, 1, tzinfo=UTC)
T4 = dt.datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # 01:30 in New York, which happens twice that day
OLD_DAY = dt.date(1500, 1, 1)  # before 1582: Spark's legacy calendar would shift it


def conf_now(spark):
    """The user's values of the watched confs; ``None`` is unset."""
    return {k: spark.conf.get(k, None) for k in EXPECTED}


@pytest.fixture
def user_conf(spark):
    saved = conf_now(spark)
    for key, value in USER.items():
        spark.conf.set(key, value)
    for key in UNSET:
        spark.conf.unset(key)
    assert conf_now(spark) == EXPECTED
    yield
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


@pytest.fixture
def spy(spark, user_conf, monkeypatch):
    """Records every conf set/unset on any session, and the user's confs as each write starts."""
    from pyspark.sql.conf import RuntimeConfig
    from pyspark.sql.readwriter import DataFrameWriter

    calls = {"set": [], "at_write": []}
    original_set, original_unset = RuntimeConfig.set, RuntimeConfig.unset

    def set_(self, key, value):
        calls["set"].append((key, value))
        return original_set(self, key, value)

    def unset(self, key):
        calls["set"].append((key, None))
        return original_unset(self, key)

    monkeypatch.setattr(RuntimeConfig, "set", set_)
    monkeypatch.setattr(RuntimeConfig, "unset", unset)
    for name in ("parquet", "csv"):
        original = getattr(DataFrameWriter, name)

        def write(self, *args, _original=original, **kwargs):
            calls["at_write"].append(conf_now(spark))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(DataFrameWriter, name, write)
    return calls


def micros(t):
    return (t - EPOCH) // dt.timedelta(microseconds=1)


def frame(spark, rows, *, op=False):
    """``(id, instant, v[, op])`` rows with a timestamp, an old date and a nested timestamp."""
    from pyspark.sql import functions as F

    schema = "id long, us long, v string" + (", op int" if op else "")
    source = spark.createDataFrame([(i, micros(t), *rest) for i, t, *rest in rows], schema)
    ts = F.expr("timestamp_micros(us)")
    return source.select(
        "id",
        ts.alias("ts"),
        F.expr("date'1500-01-01'").alias("day"),
        F.struct(ts.alias("t")).alias("nested"),
        "v",
        *(["op"] if op else []),
    )


def data_files(folder, ext="parquet"):
    return sorted(p for p in folder.glob(f"*.{ext}") if p.name[:20].isdigit())


def check_parquet(path):
    """The file's rows by id, after checking its timestamps are INT64 micros adjusted to UTC."""
    table = pq.read_table(path)
    physical = pq.ParquetFile(path).schema
    assert physical.column(table.column_names.index("ts")).physical_type == "INT64"  # not INT96
    assert str(table.schema.field("ts").type) == "timestamp[us, tz=UTC]"
    assert b"org.apache.spark.legacyDateTime" not in (pq.read_metadata(path).metadata or {})
    rows = {r["id"]: r for r in table.to_pylist()}
    for row in rows.values():
        if row["ts"] is not None:
            assert row["day"] == OLD_DAY
            nested = dt.datetime.fromisoformat(json.loads(row["nested"])["t"])
            assert nested.utcoffset() == dt.timedelta(0)  # UTC text, not the session's zone
            assert nested == row["ts"].replace(microsecond=row["ts"].microsecond // 1000 * 1000)
    return rows


def test_pushes_leave_the_session_conf_unchanged_and_publish_utc_instants(spark, db, lz, spy):
    folder = lz / "events"

    db.push(frame(spark, [(1, T1, "a"), (2, T2, "b"), (3, T3, "c")]), table="events", keys=["id"])
    assert conf_now(spark) == EXPECTED
    rows = check_parquet(data_files(folder)[0])
    assert {i: r["ts"] for i, r in rows.items()} == {1: T1, 2: T2, 3: T3}
    assert all(ROW_MARKER not in r for r in rows.values())

    # snapshot diff: 1 unchanged (not republished), 2 changed, 3 deleted, 4 new
    result = db.push(frame(spark, [(1, T1, "a"), (2, T4, "b"), (4, T3, "d")]), table="events")
    assert conf_now(spark) == EXPECTED
    assert result.rows == {"insert": 1, "upsert": 1, "delete": 1}
    rows = check_parquet(data_files(folder)[1])
    assert {i: (r["ts"], r[ROW_MARKER]) for i, r in rows.items()} == {
        2: (T4, 4),
        3: (None, 2),
        4: (T3, 0),
    }

    # change feed
    changes = frame(spark, [(5, T2, "e", 0), (1, T4, "f", 4)], op=True)
    db.push(changes, table="events", mode="changes", op_column="op")
    assert conf_now(spark) == EXPECTED
    rows = check_parquet(data_files(folder)[2])
    assert {i: (r["ts"], r[ROW_MARKER]) for i, r in rows.items()} == {5: (T2, 0), 1: (T4, 4)}

    assert len(data_files(folder)) == 3
    assert spy["set"] == []  # no conf of any session was set or unset, before or during a write
    assert spy["at_write"] and all(seen == EXPECTED for seen in spy["at_write"])


def test_failed_pushes_leave_the_session_conf_unchanged(spark, db, lz, spy):
    from pyspark.sql import functions as F

    dupes = frame(spark, [(1, T1, "a"), (1, T2, "b")])
    with pytest.raises(KeyColumnsError):
        db.push(dupes, table="dupes", keys=["id"])
    assert conf_now(spark) == EXPECTED
    assert not (lz / "dupes").exists() or not data_files(lz / "dupes")

    # the source query itself fails while Spark writes the files
    broken = frame(spark, [(1, T1, "a"), (2, T2, "b")]).withColumn(
        "v", F.when(F.col("id") == 2, F.raise_error(F.lit("boom"))).otherwise(F.col("v"))
    )
    with pytest.raises(Exception, match="boom"):
        db.push(broken, table="broken", keys=["id"])
    assert conf_now(spark) == EXPECTED
    assert spy["set"] == []
    assert spy["at_write"] and all(seen == EXPECTED for seen in spy["at_write"])


def test_delimited_text_holds_utc_text_and_diffs_cleanly(spark, db, lz, spy):
    options = om.TableOptions(file_format="csv")
    first = frame(spark, [(1, T1, "a"), (2, T2, "b"), (3, T4, "c")]).drop("nested")
    db.push(first, table="txt", keys=["id"], table_options=options)
    assert conf_now(spark) == EXPECTED
    [published] = data_files(lz / "txt", "csv")
    text = published.read_text(encoding="utf-8")
    assert "2026-03-01 10:11:12.123456" in text and "1500-01-01" in text
    table = pcsv.read_csv(
        published,
        convert_options=pcsv.ConvertOptions(column_types={"ts": pa.timestamp("us"), "day": pa.date32()}),
    )
    got = {r["id"]: (r["ts"].replace(tzinfo=UTC), r["day"]) for r in table.to_pylist()}
    assert got == {1: (T1, OLD_DAY), 2: (T2, OLD_DAY), 3: (T4, OLD_DAY)}

    # the same snapshot again: the key state read back from the text files matches the source
    again = db.push(first, table="txt")
    assert conf_now(spark) == EXPECTED
    assert again.sequence_numbers == () and len(data_files(lz / "txt", "csv")) == 1
    assert spy["set"] == []
    assert spy["at_write"] and all(seen == EXPECTED for seen in spy["at_write"])


def test_fallback_without_a_session_clone_sets_confs_only_for_the_write(
    spark, db, lz, user_conf, monkeypatch
):
    """Where Spark cannot clone the session, the Parquet confs are set for exactly the write."""
    from pyspark.sql import functions as F

    monkeypatch.setattr(write_session, "isolated", lambda df, conf: None)
    db.push(frame(spark, [(1, T1, "a"), (2, T3, "b")]), table="fallback", keys=["id"])
    assert conf_now(spark) == EXPECTED
    rows = check_parquet(data_files(lz / "fallback")[0])
    assert {i: r["ts"] for i, r in rows.items()} == {1: T1, 2: T3}

    broken = frame(spark, [(1, T1, "a")]).withColumn(
        "v", F.when(F.col("id") == 1, F.raise_error(F.lit("boom"))).otherwise(F.col("v"))
    )
    with pytest.raises(Exception, match="boom"):
        db.push(broken, table="fallback2", keys=["id"])
    assert conf_now(spark) == EXPECTED


def test_session_conf_restores_exactly_across_overlapping_pushes(spark, user_conf):
    """Two of our pushes overlapping on two threads: the first in saves, the last out restores."""
    conf = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS", UNSET[0]: "CORRECTED"}
    during = {**EXPECTED, **conf}
    first, second = write_session.session_conf(spark, conf), write_session.session_conf(spark, conf)
    entered, leave = threading.Event(), threading.Event()

    def other():
        with second:
            entered.set()
            leave.wait(30)

    first.__enter__()
    thread = threading.Thread(target=other)
    thread.start()
    assert entered.wait(30)
    assert conf_now(spark) == during
    first.__exit__(None, None, None)  # the first push ends while the second still writes
    assert conf_now(spark) == during
    leave.set()
    thread.join(30)
    assert conf_now(spark) == EXPECTED  # the user's INT96 is back, the unset conf unset again

    with pytest.raises(RuntimeError), write_session.session_conf(spark, conf):
        assert conf_now(spark) == during
        raise RuntimeError("write failed")
    assert conf_now(spark) == EXPECTED and not write_session._HELD
