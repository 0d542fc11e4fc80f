"""Notebook manners (issue 14 §4): ``dir(om)`` and tab completion show the public names only,
Spark's start-up lines stay out of the first cell when the toolkit starts the session (and a
session the user started keeps its level), and every count in a result reads with thousands
separators, while sequence numbers and versions do not."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone.table_scan import DataFileInfo
from openmirror_nb._core.mirror.results import MirrorRun, TableRun
from openmirror_nb._core.model import DropResult, PushResult, SyncResult, TableOptions
from openmirror_nb._core.status import ReplicatorStatus, StatusReport, TableStatus
from openmirror_nb._core.table_info import ColumnInfo, TableInfo, database_html

NOW = datetime(2025, 5, 20, 12, 0, 0, tzinfo=UTC)
HEAVY = ("pyspark", "ipywidgets", "IPython", "azure", "sempy", "deltalake")


def test_dir_lists_every_public_name_and_no_helper_import():
    names = dir(om)
    assert set(om.__all__) <= set(names)
    for public in ("connect", "LocalMirror", "MirroredDatabase", "arrow_to_spark", "widgets", "ConfigError"):
        assert public in names
    assert not {"annotations", "Any", "importlib", "TYPE_CHECKING", "errors", "model"} & set(names)
    assert "__version__" in names and "__doc__" in names


def test_dir_keeps_the_import_light():
    code = f"import sys, openmirror_nb; dir(openmirror_nb); print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("jedi", [True, False], ids=["jedi", "dir"])
def test_ipython_completes_the_public_names(jedi):
    pytest.importorskip("IPython")
    from IPython.core.completer import provisionalcompleter
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell(config=config)
    shell.user_ns["om"] = om
    shell.Completer.use_jedi = jedi

    def complete(text):
        with provisionalcompleter():
            return {text[: c.start] + c.text for c in shell.Completer.completions(text, len(text))}

    assert "om.connect" in complete("om.con")
    offered = complete("om.")
    assert {"om.LocalMirror", "om.MirroredDatabase", "om.arrow_to_spark", "om.widgets"} <= offered
    assert not {"om.Any", "om.importlib", "om.TYPE_CHECKING", "om.annotations"} & offered


# -- counts read with thousands separators; sequence numbers and versions do not ----------------


def _push(**changes) -> PushResult:
    fields = {
        "table": "sales.orders",
        "mode": "snapshot",
        "sequence_numbers": (1000, 1001),
        "rows": {"insert": 1_234_567, "delete": 2_050},
        "bytes": 9_876_543,
        "seconds": 1.5,
    }
    return PushResult(**{**fields, **changes})


def test_push_drop_and_sync_results_separate_thousands():
    push = _push()
    assert repr(push) == (
        "PushResult(sales.orders: files 1000..1001; insert 1,234,567, delete 2,050; 9,876,543 bytes in 1.5 s)"
    )
    assert ">1,234,567<" in push._repr_html_() and "9,876,543 bytes" in push._repr_html_()
    assert "1000, 1001" in push._repr_html_()
    drop = DropResult(
        "sales.orders", True, "inc1", data_files=1_500, removed=tuple(f"p{i}" for i in range(1_200))
    )
    assert "removed 1,200 paths, 1,500 data files" in repr(drop)
    sync = SyncResult(
        "sales.orders", "/delta/orders", from_version=1999, to_version=2024, how="changes", push=push
    )
    assert "source version 1999 -> 2024" in repr(sync) and "insert 1,234,567" in repr(sync)


def test_table_info_separates_counts_not_sequence_numbers():
    info = TableInfo(
        table="sales.orders",
        folder="sales.schema/orders",
        keys=("id",),
        columns=(ColumnInfo("id", "BIGINT", False, True),),
        options=TableOptions(),
        last_sequence=123_456,
        base_rows=1_000_000,
        changed_keys=25_000,
        pushes=1_500,
        pushes_since_base=1_200,
        incarnation="inc1",
        created=NOW,
        last_push=NOW,
        source="/delta/orders",
        source_version=2024,
    )
    text = repr(info)
    assert "  last sequence: 123456" in text
    assert "  rows in key state: 1,000,000 at the base, then at most 25,000 keys changed" in text
    assert "  pushes: 1,500 (1,200 since the key-state base)" in text
    assert "at version 2024" in text
    page = database_html("/data/db", lambda: [f"t{i}" for i in range(1_000)], lambda name: info)
    assert ", 1,000 tables<table>" in page and ">123456<" in page and "1,000,000 (±25,000)" in page


def test_mirror_runs_separate_counts_not_sequence_numbers():
    files = tuple(f"{n:020d}.parquet" for n in range(1, 1_002))
    run = TableRun("dbo.t", "t", "Replicating", files, rows_inserted=2_050, rows_updated=21, rows_deleted=20)
    assert "1,001 file(s) applied (1, 2," in repr(run) and "999, 1000, 1001)" in repr(run)
    assert "+2,050 ~21 -20 rows" in repr(run) and "+2,050 ~21 -20 rows" in run._repr_html_()
    waiting = TableRun("dbo.w", "w", "Replicating", missing_sequence=12_345)
    mirror = MirrorRun((run, waiting), started=NOW, seconds=0.5)
    assert repr(mirror).startswith("MirrorRun(2 table(s), 1,001 file(s) applied in 0.50 s:")
    page = mirror._repr_html_()
    assert "1,001 file(s) applied" in page and "<td>2,050</td>" in page and "<td>12345</td>" in page


def test_status_report_separates_counts():
    pending = tuple(
        DataFileInfo(f"{n:020d}.parquet", n, 1_500, NOW.timestamp() - 60) for n in range(1, 1_235)
    )
    waits = TableStatus("waits", "waits", "pending", "Replicating", pending=pending, lag_seconds=60.0)
    done = TableStatus(
        "done",
        "done",
        "ok",
        "Replicating",
        processed_files=2_345,
        ready_to_delete=1_500,
        mirrored_rows=7_654_321,
    )
    report = StatusReport("/data/db", NOW, ReplicatorStatus("Running"), (waits, done))
    text = repr(report)
    assert "1,234 pending, oldest waiting 60 s" in text
    assert "2,345 processed, 7,654,321 rows" in text
    page = report._repr_html_()
    assert (
        "<td style='text-align:right'>1,234</td>" in page
        and "<td style='text-align:right'>2,345</td>" in page
    )
    detail = done.to_html(now=NOW)
    assert "<td>2,345</td>" in detail and "<td>1,500</td>" in detail
    assert "... and 1,184 more" in waits.to_html(now=NOW) and "1,500 B" in waits.to_html(now=NOW)
    many = StatusReport("/data/db", NOW, ReplicatorStatus("Running"), (done,) * 1_000)
    assert repr(many).splitlines()[1] == "1,000 tables: 1,000 ok"


# -- Spark's start-up lines ----------------------------------------------------------------------

STARTUP_LINES = ("Setting default log level", "To adjust logging level", "NativeCodeLoader")

OURS = """
from openmirror_nb._core.runtime import get_spark
spark = get_spark()
assert spark.range(3).count() == 3
print("LEVEL", spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())
try:
    spark.range(1).selectExpr("assert_true(false)").collect()  # a real error: its log must show
except Exception:
    print("FAILED AS ASKED")
print("JARS", spark.sparkContext.getConf().get("spark.jars", "none"))
"""

USERS = """
import threading
from pyspark.sql import SparkSession
from openmirror_nb._core.runtime import get_spark
mine = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
mine.sparkContext.setLogLevel("INFO")
assert get_spark() is mine
# the active session is per thread: a mirror or widget thread gets the same one, settings untouched
seen = []
worker = threading.Thread(target=lambda: seen.append(get_spark()))
worker.start()
worker.join()
assert seen == [mine]
jvm = mine.sparkContext._jvm
print("LEVEL", jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())
print("JAVA", mine.sparkContext.getConf().get("spark.driver.extraJavaOptions", "none"))
print("PARTITIONS", mine.conf.get("spark.sql.shuffle.partitions"))
print("JARS", mine.sparkContext.getConf().get("spark.jars", "none"))
"""


@pytest.fixture(scope="module")
def started():
    """Both scripts, each in a fresh Python with a fresh JVM, run side by side to save time."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    for name in (
        "PYSPARK_SUBMIT_ARGS",
        "SPARK_SUBMIT_OPTS",
        "SPARK_CONF_DIR",
        "JAVA_TOOL_OPTIONS",
        "OPENMIRROR_SPARK_JARS",
    ):
        env.pop(name, None)
    runs = {
        name: subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, code in (("ours", OURS), ("users", USERS))
    }
    done = {name: proc.communicate(timeout=300) for name, proc in runs.items()}
    for name, proc in runs.items():
        assert proc.returncode == 0, done[name][1][-2000:]
    return done


@pytest.mark.spark
def test_a_session_the_toolkit_starts_keeps_its_start_up_lines_out_of_the_cell(started):
    out, err = started["ours"]
    assert not [line for line in err.splitlines() if any(s in line for s in STARTUP_LINES)], err[:2000]
    # quiet, not mute: the level is ERROR and a failing task still says so
    assert "LEVEL ERROR" in out and "FAILED AS ASKED" in out
    assert " ERROR Executor: Exception in task" in err
    # Debian's JDBC driver, when installed, is on spark.jars (what a Jdbc source reads through)
    driver = Path("/usr/share/java/postgresql.jar")
    assert f"JARS {driver if driver.is_file() else 'none'}\n" in out


@pytest.mark.spark
def test_a_session_the_user_started_keeps_its_level_and_options(started):
    out, _ = started["users"]
    assert "LEVEL INFO" in out
    assert "JAVA " in out and "log4j2.configurationFile" not in out  # no option of ours slipped in
    assert "PARTITIONS 200" in out  # nor any of get_spark's settings (Spark's default stays)
    assert "JARS none" in out  # nor our driver jar


def test_jars_the_user_chose_at_launch_or_in_spark_defaults_are_left_alone(monkeypatch, tmp_path):
    from openmirror_nb._core.runtime import _chosen_jars

    for name in ("PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert _chosen_jars() is None
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--jars /opt/drivers/mssql.jar,/opt/d.jar pyspark-shell")
    assert _chosen_jars() == ["/opt/drivers/mssql.jar", "/opt/d.jar"]
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.jars=/opt/x.jar pyspark-shell")
    assert _chosen_jars() == ["/opt/x.jar"]
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.ui.enabled=false pyspark-shell")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    (tmp_path / "spark-defaults.conf").write_text("spark.jars.packages  x:y:1\n")
    assert _chosen_jars() is None  # packages are not jars
    (tmp_path / "spark-defaults.conf").write_text("spark.jars  /opt/drivers/oracle.jar\n")
    assert _chosen_jars() == ["/opt/drivers/oracle.jar"]


def test_jars_listed_for_our_session_are_files_or_the_jars_of_folders(monkeypatch, tmp_path):
    from openmirror_nb._core.runtime import JARS_ENV, _listed_jars

    (tmp_path / "delta").mkdir()
    for name in ("delta-spark_2.13-4.2.0.jar", "delta-storage-4.2.0.jar", "README"):
        (tmp_path / "delta" / name).write_text("")
    monkeypatch.setenv(JARS_ENV, os.pathsep.join([str(tmp_path / "delta"), "/opt/one.jar", ""]))
    assert _listed_jars() == [
        str(tmp_path / "delta" / "delta-spark_2.13-4.2.0.jar"),
        str(tmp_path / "delta" / "delta-storage-4.2.0.jar"),
        "/opt/one.jar",
    ]
    monkeypatch.delenv(JARS_ENV)
    assert _listed_jars() == []
