"""Tables written by Spark's own Delta writer, as Fabric writes them, followed version by version
through both of ``db.sync_delta``'s readers: Spark's Delta reader (the Fabric path) and
``deltalake``'s. After every version each reader's mirror must equal
``spark.read.format("delta").option("versionAsOf", v)``, through the change data feed wherever it
exists; a schema change the mirror cannot absorb is refused before anything is published, named
as it is (renames and drops known from column mapping, never guessed); a vacuumed range is
synced by a snapshot diff that says why; a table ``deltalake`` cannot read is refused in one line.

Runs on both Spark lines (Delta 4.2 on Runtime 2.0's Spark 4.1, Delta 3.2 on Runtime 1.3's 3.5).
``scripts/soak`` syncs after every version (``OPENMIRROR_DELTA_EVERY_VERSION=1``); CI, to fit its
budget, makes the initial load of the first rows and syncs each run of plain steps as one range of
versions (each range crossing every kind of commit the run holds), and every refused, reseeded or
vacuumed version on its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

import openmirror_nb as om
from tests.conftest import tree_hash

pytestmark = [pytest.mark.spark, pytest.mark.runtime13]

READERS = ("spark", "deltalake")
WRITE_CONF = {
    # Spark 3.5 refuses to write timestamps before 1900 as INT96 unless told the calendar (4.x has
    # CORRECTED); VACUUM below keeps nothing, which Delta refuses unless this check is off.
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
}
CDF = "'delta.enableChangeDataFeed' = 'true'"


EVERY_VERSION = os.environ.get("OPENMIRROR_DELTA_EVERY_VERSION") == "1"
# CI's Runtime 1.3 line (Delta 3.2, beside the main steps on two cores) runs the tables where its
# Delta differs from 4.2 in what the readers meet: id mapping (the field-id conf) and the calendar
# of old timestamps. Its deletion vectors are read in test_delta_sources.py, its error classes for
# a vacuumed feed in test_delta_sync.py. CI runs every table on the main line; scripts/soak runs
# every table on both lines.
RUNTIME13_IN_CI = frozenset({"mapping_id", "timestamps"})


@dataclass(frozen=True)
class Step:
    """Statements on the table (``{t}`` is it), or a function of its path; what a sync then does:
    ``changes`` (the feed), ``vacuumed`` (a snapshot diff saying so), ``reseed`` (refused, the
    message matching ``match``)."""

    sql: tuple[str | Callable[[Any, str], None], ...] | Callable[[Any, str], None]
    expect: str = "changes"
    match: str = ""
    alone: bool = False  # synced on its own in CI too (a VACUUM would take the steps before it)


def _steps(*steps: Step | str) -> tuple[Step, ...]:
    return tuple(Step((s,)) if isinstance(s, str) else s for s in steps)


def _mapped(mode: str) -> tuple[str, tuple[Step, ...]]:
    props = f"{CDF}, 'delta.columnMapping.mode' = '{mode}'"
    create = (
        f"CREATE TABLE {{t}} (id BIGINT, a STRING, b STRING, c STRING) USING delta TBLPROPERTIES ({props})"
    )
    return create, _steps(
        "INSERT INTO {t} VALUES (1, 'a1', 'b1', 'c1'), (2, 'a2', 'b2', 'c2'), (3, 'a3', 'b3', 'c3')",
        "ALTER TABLE {t} DROP COLUMN c",  # a nullable column dropped: absorbed
        "UPDATE {t} SET a = 'a2+' WHERE id = 2",
        Step(("ALTER TABLE {t} ADD COLUMNS (d STRING)", "ALTER TABLE {t} DROP COLUMN b")),  # not a rename
        "UPDATE {t} SET d = 'd3' WHERE id = 3",
        Step(
            (
                "ALTER TABLE {t} RENAME COLUMN a TO x",
                "ALTER TABLE {t} RENAME COLUMN d TO a",
                "ALTER TABLE {t} RENAME COLUMN x TO d",
            ),
            "reseed",
            "column 'a' was renamed to 'd'; column 'd' was renamed to 'a'",
        ),  # two columns swapped
    )


def _renamed_and_taken() -> tuple[str, tuple[Step, ...]]:
    create, _ = _mapped("name")
    return create, _steps(
        "INSERT INTO {t} VALUES (1, 'a1', 'b1', 'c1')",
        Step(
            ("ALTER TABLE {t} RENAME COLUMN a TO e", "ALTER TABLE {t} ADD COLUMNS (a STRING)"),
            "reseed",
            "column 'a' was renamed to 'e'",
        ),
    )


def _dropped_and_added_again() -> tuple[str, tuple[Step, ...]]:
    create, _ = _mapped("id")
    return create, _steps(
        "INSERT INTO {t} VALUES (1, 'a1', 'b1', 'c1')",
        Step(
            ("ALTER TABLE {t} DROP COLUMN b", "ALTER TABLE {t} ADD COLUMNS (b STRING)"),
            "reseed",
            "column 'b' was dropped and added again",
        ),
    )


def _vacuum(spark: Any, path: str) -> None:
    """VACUUM keeping nothing: every file no longer live goes, change data files included."""
    spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS")


def _two_updates_the_older_vacuumed(spark: Any, path: str) -> None:
    """Two commits with change data files, the older one's gone: what a VACUUM whose retention
    falls between the two commits leaves (VACUUM keeps change files by their commit's time, which
    a test cannot move, so the older ones are deleted as it would delete them)."""
    spark.sql(f"UPDATE delta.`{path}` SET v = 'A' WHERE id = 1")
    older = set(Path(path, "_change_data").rglob("*.parquet"))
    spark.sql(f"UPDATE delta.`{path}` SET v = 'B' WHERE id = 2")
    assert older and set(Path(path, "_change_data").rglob("*.parquet")) - older
    for file in older:
        file.unlink()


def _delete_then_vacuum(spark: Any, path: str) -> None:
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")
    _vacuum(spark, path)


def _scenarios(line: str) -> dict[str, tuple[str, tuple[Step, ...]]]:
    table = "CREATE TABLE {t} (id BIGINT NOT NULL, v STRING, n INT) USING delta TBLPROPERTIES"
    found = {
        "deletion_vectors": (
            f"{table} ({CDF}, 'delta.enableDeletionVectors' = 'true')",
            _steps(
                "INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', 4), (5, 'e', 5)",
                "DELETE FROM {t} WHERE id = 2",
                "UPDATE {t} SET v = 'C' WHERE id = 3",
                "MERGE INTO {t} AS d USING (SELECT 4 AS id, 'D' AS v, 40 AS n UNION ALL SELECT 6, 'f', 6) AS s "
                "ON d.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
                "OPTIMIZE {t}",
                Step(("RESTORE TABLE {t} TO VERSION AS OF 2",)),
            ),
        ),
        "mapping_name": _mapped("name"),
        "mapping_id": _mapped("id"),
        "renamed_and_taken": _renamed_and_taken(),
        "dropped_and_added": _dropped_and_added_again(),
        "partitions_checkpoints": (
            "CREATE TABLE {t} (id BIGINT, v STRING, p STRING) USING delta PARTITIONED BY (p) "
            f"TBLPROPERTIES ({CDF}, 'delta.checkpointInterval' = '2', 'delta.enableRowTracking' = 'true')",
            _steps(
                "INSERT INTO {t} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', NULL)",
                "UPDATE {t} SET p = 'y' WHERE id = 1",  # moves a row across partitions
                "INSERT INTO {t} VALUES (4, 'd', 'x')",
                "DELETE FROM {t} WHERE p IS NULL",
            ),
        ),
        "timestamps": (
            f"CREATE TABLE {{t}} (id BIGINT NOT NULL, ts TIMESTAMP, d DATE) USING delta TBLPROPERTIES ({CDF})",
            _steps(
                "INSERT INTO {t} VALUES (1, TIMESTAMP'0001-01-01 00:00:00', DATE'0001-01-01'), "
                "(2, TIMESTAMP'9999-12-31 23:59:59.999999', DATE'9999-12-31'), (3, NULL, NULL)",
                "UPDATE {t} SET ts = TIMESTAMP'1500-03-01 12:00:00' WHERE id = 3",
            ),
        ),
        "vacuumed_partly": (
            f"{table} ({CDF}, 'delta.enableDeletionVectors' = 'false')",
            _steps(
                "INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)",
                Step(_two_updates_the_older_vacuumed, "vacuumed"),  # found mid-job: one file of two
                "UPDATE {t} SET v = 'C' WHERE id = 3",  # the feed is whole again after it
                Step(_vacuum, alone=True),  # nothing the next sync reads is vacuumed
                Step(_delete_then_vacuum, "vacuumed"),
            ),
        ),
    }
    clustered = "CREATE TABLE {t} (id BIGINT, v STRING) USING delta CLUSTER BY (id)"
    commit_times = "delta.enableInCommitTimestamps" + ("" if line == "spark-4.1" else "-preview")
    found["clustered_commit_times"] = (
        f"{clustered} TBLPROPERTIES ({CDF}, '{commit_times}' = 'true')",
        _steps(
            "INSERT INTO {t} VALUES (1, 'a'), (2, 'b')", "UPDATE {t} SET v = 'B' WHERE id = 2", "OPTIMIZE {t}"
        ),
    )
    if line == "spark-4.1":  # identity columns: Delta 3.3 and later, made by the builder (SQL cannot
        # make one on a path table)
        found["identity"] = (
            _identity_table,
            _steps("INSERT INTO {t} (v) VALUES ('a'), ('b')", "UPDATE {t} SET v = 'B' WHERE v = 'b'"),
        )
    return found


def _identity_table(spark: Any, path: str) -> None:
    """``DeltaTable.create()`` of Delta's Scala API (the Python package is not installed here)."""
    jvm, session = spark._jvm, spark._jsparkSession
    tables = jvm.io.delta.tables.DeltaTable
    identity = tables.columnBuilder(session, "id").dataType("BIGINT").generatedAlwaysAsIdentity(1, 1).build()
    builder = tables.create(session).location(path).addColumn(identity).addColumn("v", "STRING", False)
    builder.property("delta.enableChangeDataFeed", "true").execute()


@pytest.fixture(scope="module")
def written(spark):
    from openmirror_nb._core.pipeline.delta.source import spark_has_delta

    if not spark_has_delta(spark):
        pytest.skip("this Spark line has no Delta jars (Maven Central serves none for it)")
    before = {k: spark.conf.get(k, None) for k in WRITE_CONF}
    for key, value in WRITE_CONF.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in before.items():
        spark.conf.unset(key) if value is None else spark.conf.set(key, value)


def _as_text(frame: Any) -> tuple[list[str], list[tuple[str | None, ...]]]:
    """A frame's columns, and its rows as text (a year-1 timestamp has no Python datetime in every
    time zone), sorted."""
    rows = frame.selectExpr(*(f"CAST(`{c}` AS STRING) AS `{c}`" for c in frame.columns)).collect()
    return frame.columns, _sorted(tuple(r) for r in rows)


def _mirrored(table: Path, columns: list[str]) -> list[tuple[str | None, ...]]:
    """The mirrored table's rows as ``_as_text`` gives the source's: read with ``deltalake``, each
    value as Spark casts it to text; a column added by a commit of no rows has no file yet, and
    reads as NULL."""
    rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    return _sorted(tuple(_text(row.get(c)) for c in columns) for row in rows)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=None).isoformat(sep=" ")
    return str(value)


def _sorted(rows: Any) -> list[tuple[str | None, ...]]:
    return sorted(rows, key=lambda r: tuple((v is None, v or "") for v in r))


def _condensed(steps: tuple[Step, ...]) -> list[Step]:
    """CI's steps: the first data step is the initial load (no sync of the empty table), and each
    run of plain steps after it is one step (one sync over its range of versions)."""
    out: list[Step] = []
    for step in steps:
        if len(out) > 1 and step.expect == out[-1].expect == "changes" and not (step.alone or out[-1].alone):
            out[-1] = Step(_parts(out[-1]) + _parts(step))
        else:
            out.append(step)
    return out


def _parts(step: Step) -> tuple[Any, ...]:
    return step.sql if isinstance(step.sql, tuple) else (step.sql,)


def _line() -> str:
    from tests import spark_packages

    return spark_packages.line()


@pytest.mark.parametrize("name", sorted(_scenarios("spark-4.1")))
def test_every_version_of_a_table_spark_wrote_is_mirrored_by_both_readers(written, tmp_path, name):
    spark = written
    scenarios = _scenarios(_line())
    if name not in scenarios:
        pytest.skip(f"{name}: not written by the Delta of {_line()}")
    if _line() == "spark-3.5" and not EVERY_VERSION and name not in RUNTIME13_IN_CI:
        pytest.skip(f"{name}: on Spark 3.5 in scripts/soak (CI runs it on the main line)")
    create, steps = scenarios[name]
    path = str(tmp_path / "source")
    sql_name = f"delta.`{path}`"
    if callable(create):
        create(spark, path)
    else:
        spark.sql(create.format(t=sql_name))
    dbs = {reader: om.connect(tmp_path / reader) for reader in READERS}
    table = {reader: "t" for reader in READERS}
    for step in (Step(()), *steps) if EVERY_VERSION else _condensed(steps):
        for part in _parts(step):
            part(spark, path) if callable(part) else spark.sql(part.format(t=sql_name))
        version = spark.sql(f"DESCRIBE HISTORY {sql_name} LIMIT 1").first()["version"]
        expected = spark.read.format("delta").option("versionAsOf", version).load(path)
        expected = _as_text(spark.read.format("delta").option("versionAsOf", version).load(path))

        def sync(reader: str, step: Step = step, version: int = version, expected: Any = expected) -> None:
            db = dbs[reader]
            folder = db.target.landing_zone / table[reader]
            before = tree_hash(folder)
            first = not folder.exists()
            if step.expect == "reseed":
                with pytest.raises(om.SchemaChangeError, match=step.match):
                    db.sync_delta(path, table=table[reader], reader=reader)
                assert tree_hash(folder) == before, f"{reader}: a refused sync changed the landing zone"
                table[reader] += "_reseeded"  # the reseed: a new table from the source as it is
                first = True
            result = db.sync_delta(path, table=table[reader], keys=["id"] if first else None, reader=reader)
            assert (result.reader, result.to_version) == (reader, version)
            if first:
                assert result.how == "snapshot" and result.fallback is None
            elif step.expect == "vacuumed":
                assert result.how == "snapshot" and "vacuumed" in (result.fallback or ""), (reader, result)
            else:
                assert (result.how, result.fallback) == ("changes", None), (reader, version, result)
            om.LocalMirror(db.target.root).run_once()
            mirrored = _mirrored(db.target.root / "Tables" / "dbo" / table[reader], expected[0])
            assert mirrored == expected[1], (reader, name, version)

        with ThreadPoolExecutor(len(READERS)) as pool:  # the two readers' syncs share the two cores
            for done in [pool.submit(sync, reader) for reader in READERS]:
                done.result()
