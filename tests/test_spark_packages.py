"""Spark packages from Maven Central, ready on each Spark line: a session given Delta's jars gets
Delta's extension and catalog from ``get_spark`` (and a session without them nothing), writes a
Delta table with Spark's own Delta writer that ``deltalake`` reads back, syncs it with Spark's
Delta reader (which the log says), and finds Spark's Kafka source. Each runs in a child process:
the jars of a Spark driver are fixed at its launch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import spark_packages

pytestmark = [
    pytest.mark.spark,
    pytest.mark.runtime13,
    pytest.mark.skipif(
        not spark_packages.fetched_for_this_line(),
        reason=f"no Spark packages are fetched for {spark_packages.line()} (Maven Central serves none)",
    ),
]

CHILD = r"""
import logging, sys
import deltalake
import openmirror_nb as om

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="LOG %(name)s %(message)s")
root = sys.argv[1]
spark = om.get_spark()
print("EXTENSIONS", spark.conf.get("spark.sql.extensions", None))
print("CATALOG", spark.conf.get("spark.sql.catalog.spark_catalog", None))
rows = spark.range(5).selectExpr("id", "concat('v', id) AS v")
rows.write.format("delta").save(f"{root}/src")
spark.sql(f"UPDATE delta.`{root}/src` SET v = 'changed' WHERE id = 2")
print("DELTALAKE", sorted(deltalake.DeltaTable(f"{root}/src").to_pyarrow_table().to_pylist(), key=lambda r: r["id"]))
db = om.connect(f"{root}/db")
print("SYNC", db.sync_delta(f"{root}/src", table="s.t", keys=["id"]).to_version)
kafka = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
         .option("subscribe", "t").load())
print("KAFKA", kafka.columns)
"""


def _env(**env):
    from tests.reliability.harness import child_env

    return child_env(**env)


def _child(tmp_path, **env):
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


def test_a_session_with_the_lines_packages_has_delta_and_kafka(tmp_path):
    listed = os.pathsep.join(str(spark_packages.jars(kind)) for kind in spark_packages.KINDS)
    out = _child(tmp_path, OPENMIRROR_SPARK_JARS=listed)
    assert "EXTENSIONS io.delta.sql.DeltaSparkSessionExtension" in out
    assert "CATALOG org.apache.spark.sql.delta.catalog.DeltaCatalog" in out
    assert "'id': 2, 'v': 'changed'" in out  # Spark's Delta writer, read by deltalake
    assert "SYNC 1" in out
    assert "read with Spark's Delta reader" in out
    assert "KAFKA ['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType']" in out


def test_the_shared_session_has_delta(spark):
    """The suite's session has Delta's extension and catalog (tests/conftest.py gives it the jars),
    as a Fabric session has: ``sync_delta`` takes Spark's own Delta reader there by default. It
    rebuilds a Delta table's state in the session's shuffle partitions, not Delta's 50 tasks."""
    assert "delta" in (spark.conf.get("spark.sql.extensions", None) or "").lower()
    assert "delta" in (spark.conf.get("spark.sql.catalog.spark_catalog", None) or "").lower()
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    assert spark.conf.get("spark.databricks.delta.snapshotPartitions", None) == partitions == "4"


WITHOUT_DELTA = r"""
import sys
import deltalake, pyarrow as pa
import openmirror_nb as om

root = sys.argv[1]
spark = om.get_spark()
print("EXTENSIONS", spark.conf.get("spark.sql.extensions", None))
deltalake.write_deltalake(f"{root}/src", pa.table({"id": [1, 2]}), configuration={"delta.enableChangeDataFeed": "true"})
db = om.connect(f"{root}/db")
print("SYNC", db.sync_delta(f"{root}/src", table="t", keys=["id"]).reader)
deltalake.write_deltalake(f"{root}/src", pa.table({"id": [3]}), mode="append")
second = db.sync_delta(f"{root}/src", table="t")
print("AGAIN", second.reader, second.how, second.push.rows)
try:
    db.sync_delta(f"{root}/src", table="t", reader="spark")
except om.ConfigError as exc:
    print("REFUSED", exc)
"""


def test_a_session_without_delta_syncs_with_deltalake(tmp_path):
    """A session started without Delta's jars (a plain local Spark) has no Delta extension, and
    ``sync_delta`` reads with ``deltalake`` there, by the change data feed; asking for Spark's
    reader is refused with the way to get it."""
    run = subprocess.run(
        [sys.executable, "-c", WITHOUT_DELTA, str(tmp_path)],
        env=_env(OPENMIRROR_SPARK_JARS=""),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "EXTENSIONS None" in run.stdout
    assert "SYNC deltalake" in run.stdout
    assert "AGAIN deltalake changes {'upsert': 1}" in run.stdout  # an insert is an upsert (marker 4)
    assert "REFUSED reader='spark' needs a Spark session with Delta" in run.stdout
