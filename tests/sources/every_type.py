"""A PostgreSQL table of every type family at its edges, what a faithful mirror of it holds, and the
run that mirrors it: shared by the type suite under UTC (``test_pg_types.py``) and the same run
under other time zones, each in a process of its own (``python -m tests.sources.every_type``: a
JVM's time zone is fixed when it starts).

``python -m tests.sources.every_type URL DB`` (password in ``ERP_PASSWORD``) starts a Spark
session in the zone ``TZ`` names, its session time zone the same, mirrors the table, and a pushed
and a streamed frame of the same instants, into a local database at ``DB``, and prints what ``lzcheck replay``
gives for each as JSON.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

SCHEMA = "types_t"
TABLE = "every_type"
TYPES = {"n_exact": "decimal(38,21)", "n_text": "string", "n_wide": "decimal(38,2)"}
UNTYPED = ("n_exact", "n_text", "n_wide")
DDL = f"""
CREATE SCHEMA {SCHEMA};
CREATE TYPE {SCHEMA}.mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE {SCHEMA}.{TABLE} (
  id int PRIMARY KEY, n_exact numeric, n_text numeric, n_wide numeric(50,2), n152 numeric(15,2),
  m money, ts timestamp, tstz timestamptz, d date, tm time, tmtz timetz, iv interval, u uuid,
  b bytea, j json, jb jsonb, ai int[], at text[], tsa timestamptz[], e {SCHEMA}.mood, b1 bit(1),
  b8 bit(8), vb varbit, ip inet, c char(5)
);
INSERT INTO {SCHEMA}.{TABLE} VALUES
 (1, 0.000000000000000000001, 123456789012345678901234.12, 123456789012345678901234567890123456.12,
  1234567890123.45, 12.34, '0001-01-01 00:00:00', '0001-01-01 00:00:00+00', '0001-01-01',
  '12:34:56.789012', '12:34:56+05:30', '1 year 2 mons 3 days 04:05:06.7',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\xdeadbeef', '{{"a":1}}', '{{"b": [1,2]}}', '{{1,2,3}}',
  '{{"x","y z"}}', '{{"1500-03-01 12:00+00"}}', 'happy', B'1', B'10101010', B'101', '192.168.0.1/24', 'ab'),
 (2, -12345678901234567.000000000000000000001, 'NaN', -1, -0.01, -92233720368547758.08,
  '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59.999999+00', '9999-12-31', '24:00:00',
  '23:59:59-08', '-3 days', NULL, '\\x', 'null', '[]', '{{}}', '{{}}', '{{}}', 'sad', B'0',
  B'00000000', B'', '::1', 'abcde'),
 (3, 0, 0, 0, 0, 0, '1500-03-01 12:00:00', '1500-03-01 12:00:00+00', '1582-10-10', '00:00:00',
  '00:00:00+00', '0', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'ok', NULL, NULL, NULL, NULL, NULL),
 (4, NULL, NULL, NULL, NULL, NULL, '2026-03-08 02:30:00', '2026-03-08 07:30:00.000001+00',
  '2026-03-08', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL),
 (5, NULL, NULL, NULL, NULL, NULL, '1942-09-01 00:15:00', '1942-09-01 00:15:00+05:30', '1942-09-01',
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
"""
UTC = dt.UTC


def _ts(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


# Row by row, what the mirror holds: a timestamp without time zone is its wall clock taken as UTC
# (2026-03-08 02:30 exists in no American zone; 1942-09-01 00:15 is a war-time hour in Kolkata).
EXPECTED: dict[int, dict[str, Any]] = {
    1: {
        "n_exact": Decimal("0.000000000000000000001"), "n_text": "123456789012345678901234.12",
        "n_wide": Decimal("123456789012345678901234567890123456.12"), "n152": Decimal("1234567890123.45"),
        "m": Decimal("12.34"), "ts": _ts(1, 1, 1), "tstz": _ts(1, 1, 1), "d": dt.date(1, 1, 1),
        "tm": "12:34:56.789012", "tmtz": "12:34:56+05:30", "iv": "P1Y2M3DT4H5M6.7S",
        "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "b": bytes.fromhex("deadbeef"), "j": '{"a":1}',
        "jb": '{"b": [1, 2]}', "ai": "[1,2,3]", "at": '["x","y z"]', "tsa": '["1500-03-01T12:00:00+00:00"]',
        "e": "happy", "b1": True, "b8": "10101010", "vb": "101", "ip": "192.168.0.1/24", "c": "ab   ",
    },
    2: {
        "n_exact": Decimal("-12345678901234567.000000000000000000001"), "n_text": "NaN",
        "n_wide": Decimal("-1.00"), "n152": Decimal("-0.01"), "m": Decimal("-92233720368547758.08"),
        "ts": _ts(9999, 12, 31, 23, 59, 59, 999999), "tstz": _ts(9999, 12, 31, 23, 59, 59, 999999),
        "d": dt.date(9999, 12, 31), "tm": "24:00:00", "tmtz": "23:59:59-08", "iv": "P-3D", "u": None,
        "b": b"", "j": "null", "jb": "[]", "ai": "[]", "at": "[]", "tsa": "[]", "e": "sad", "b1": False,
        "b8": "00000000", "vb": "", "ip": "::1", "c": "abcde",
    },
    3: {
        "n_exact": Decimal("0E-21"), "n_text": "0", "n_wide": Decimal("0.00"), "n152": Decimal("0.00"),
        "m": Decimal("0.00"), "ts": _ts(1500, 3, 1, 12), "tstz": _ts(1500, 3, 1, 12),
        "d": dt.date(1582, 10, 10), "tm": "00:00:00", "tmtz": "00:00:00+00", "iv": "PT0S", "e": "ok",
    },
    4: {"ts": _ts(2026, 3, 8, 2, 30), "tstz": _ts(2026, 3, 8, 7, 30, 0, 1), "d": dt.date(2026, 3, 8)},
    5: {"ts": _ts(1942, 9, 1, 0, 15), "tstz": _ts(1942, 8, 31, 18, 45), "d": dt.date(1942, 9, 1)},
}  # fmt: skip
COLUMNS = ("id", *EXPECTED[1])


def expected_rows() -> list[dict[str, Any]]:
    return [{c: (i if c == "id" else EXPECTED[i].get(c)) for c in COLUMNS} for i in sorted(EXPECTED)]


def source(url: str) -> Any:
    import openmirror_nb as om
    from tests.sources.postgres import SUPERUSER

    return om.Jdbc(url, user=SUPERUSER, password_env="ERP_PASSWORD", schema=SCHEMA)


def mirror(db: Any, url: str) -> Any:
    """Plan the schema with the declared types, and run it: the run's result."""
    plan = db.plan_sources(source(url), target_schema="typed")
    typed = [dataclasses.replace(t, types=TYPES) if t.source == TABLE else t for t in plan.tables]
    plan = db.plan_sources(source(url), target_schema="typed", like=dataclasses.replace(plan, tables=typed))
    return db.run_plan(plan)


def replayed(lz: Path, table: str) -> list[dict[str, Any]]:
    """``lzcheck``'s verdict (no violation) and its replay, in id order."""
    from tests.contract_checker import verdict

    return sorted(verdict(lz, table), key=lambda r: r["id"])


INSTANTS = [(1, -62135596800000000, -719162), (2, 253402300799999999, 2932896),
            (3, -14826628800000000, -171605), (4, 1772937000000000, 20520)]  # fmt: skip
_AS_TIMES = "id, timestamp_micros(us) AS ts, date_from_unix_date(days) AS d"


def pushed(db: Any, folder: Path) -> None:
    """The same instants pushed from a frame the session builds, and streamed from JSON lines
    (the session's zone must not matter to either)."""
    spark = db_spark()
    rows = ", ".join(map(str, INSTANTS))
    db.push(
        spark.sql(f"SELECT {_AS_TIMES} FROM VALUES {rows} AS t(id, us, days)"),
        table="typed.pushed",
        keys=["id"],
    )
    feed = folder / "feed"
    feed.mkdir(parents=True)
    lines = [json.dumps({"id": i, "us": us, "days": days, "op": 0}) for i, us, days in INSTANTS]
    (feed / "0.json").write_text("\n".join(lines) + "\n")
    stream = spark.readStream.schema("id INT, us BIGINT, days INT, op INT").json(str(feed))
    ms = db.mirror_stream(
        stream.selectExpr(*_AS_TIMES.split(", "), "op"), table="typed.streamed", keys=["id"], op_column="op",
        checkpoint=folder / "checkpoint",
    )  # fmt: skip
    assert ms.await_termination(timeout=600) is True and ms.error is None, ms


def db_spark() -> Any:
    from openmirror_nb._core.runtime import get_spark

    return get_spark()


def as_json(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Rows as text that compares exactly: instants as ISO 8601 with their offset."""
    return [{k: v.isoformat() if isinstance(v, dt.date) else repr(v) for k, v in r.items()} for r in rows]


def main() -> None:
    """Mirror under this process's zone (``TZ``), the Spark session's zone set to it too."""
    from pyspark.sql import SparkSession

    import openmirror_nb as om

    url, lz = sys.argv[1], Path(sys.argv[2])
    zone = os.environ["TZ"]
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    SparkSession.builder.master("local[2]").config("spark.jars", "/usr/share/java/postgresql.jar").config(
        "spark.sql.session.timeZone", zone
    ).config("spark.ui.enabled", "false").config(
        "spark.ui.showConsoleProgress", "false"
    ).getOrCreate().sparkContext.setLogLevel("ERROR")
    db = om.connect(lz)
    run = mirror(db, url)
    assert run.ok, run
    pushed(db, lz.parent)
    zone_lz = db.target.landing_zone
    found = {t: replayed(zone_lz, f"typed.{t}") for t in ("every_type", "pushed", "streamed")}
    print("ROWS " + json.dumps({k: as_json(v) for k, v in found.items()}))


if __name__ == "__main__":
    main()
