"""Shared fixtures: one local Spark session for the whole run, landing-zone tree hashes, and no
test that can reach the link-local metadata address."""

from __future__ import annotations

import hashlib
import os
import socket
import sys
from pathlib import Path

import pytest

from tests import spark_packages
from tests.kafka_fixtures import kafka  # noqa: F401  (the broker fixture, for every test module)

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# The suite's session (and each notebook kernel's, which inherits this) has Delta's jars of the line,
# so Spark's own Delta reader and writer, as a Fabric session has; the short-lived children of
# tests/reliability/harness.child_env get them only when asked. The newest PySpark has none (Maven
# Central serves no Delta for it).
DELTA_JARS = str(spark_packages.jars("delta")) if spark_packages.fetched_for_this_line() else ""
# and Spark's Kafka source, as a Fabric session has it (tests/kafka_fixtures.py starts the broker)
KAFKA_JARS = str(spark_packages.jars("kafka")) if spark_packages.fetched_for_this_line() else ""
if DELTA_JARS and "OPENMIRROR_SPARK_JARS" not in os.environ:
    os.environ["OPENMIRROR_SPARK_JARS"] = os.pathsep.join((DELTA_JARS, KAFKA_JARS))
# The values in place before the session changed them (the live OneLake tests restore them).
AZURE_BEFORE = {
    name: os.environ.get(name) for name in ("AZURE_POD_IDENTITY_AUTHORITY_HOST", "AZURE_TOKEN_CREDENTIALS")
}


@pytest.fixture(scope="session", autouse=True)
def no_metadata_endpoint():
    """No ``DefaultAzureCredential`` built in a test (or in a process a test starts) asks the
    metadata address 169.254.169.254: ``AZURE_TOKEN_CREDENTIALS=dev`` leaves managed identity out of
    the chain, and a ``ManagedIdentityCredential`` built anyway asks a loopback port that is bound
    but never listens (refused at once)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", f"http://127.0.0.1:{closed.getsockname()[1]}")
        mp.setenv("AZURE_TOKEN_CREDENTIALS", "dev")
        yield
    closed.close()


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    """Nothing a ``DefaultAzureCredential`` could find: no service principal or workload identity
    in the environment, no ``az``/``azd``/PowerShell sign-in or token cache under an empty home."""
    for name in list(os.environ):
        if name.startswith(("AZURE_", "MSI_", "IDENTITY_")) and name not in AZURE_BEFORE:
            monkeypatch.delenv(name)
    home = tmp_path / "empty-home"
    home.mkdir()
    for name in ("HOME", "USERPROFILE"):
        monkeypatch.setenv(name, str(home))
    monkeypatch.setenv("AZURE_CONFIG_DIR", str(home / ".azure"))
    monkeypatch.setenv("AZD_CONFIG_DIR", str(home / ".azd"))


@pytest.fixture(scope="session")
def spark():
    """The local session ``get_spark`` starts, with Delta (``DELTA_JARS``) and Spark's own ANSI
    mode: a notebook's session in Fabric has it, and it is on from Spark 4 (Runtime 2.0), where casts that gave NULL raise. The
    session ``get_spark`` starts pins it off on both lines, so the Spark 4 line would never meet it."""
    from openmirror_nb._core.runtime import get_spark

    session = get_spark()
    session.conf.unset("spark.sql.ansi.enabled")
    # Delta's VACUUM lists the table in a Spark job of this many tasks (10,000 by default): on a
    # local two-core driver that is 30 s a VACUUM, and about 5 s with a few.
    session.conf.set("spark.sql.sources.parallelPartitionDiscovery.parallelism", "4")
    yield session
    session.stop()


def tree_hash(root: Path) -> str:
    """Hash of every path and file content below ``root`` (folders included)."""
    digest = hashlib.sha256()
    if not root.exists():
        return "absent"
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        digest.update(rel.encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes())
        digest.update(b"\1")
    return digest.hexdigest()


def visible_hash(root: Path) -> str:
    """``tree_hash`` of what the service reads below ``root``: the tool's own ``_openmirror``
    folders left out, and an absent folder the same as an empty one."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")) if root.exists() else ():
        rel = path.relative_to(root)
        if "_openmirror" in rel.parts:
            continue
        digest.update(
            rel.as_posix().encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\1"
        )
    return digest.hexdigest()


@pytest.fixture(autouse=True)
def small_buckets(monkeypatch):
    """Test tables have a few rows: one row per bucket gives them several (up to the 4 shuffle
    partitions), so every push in the suite runs the bucket layout as a large table would (see
    pipeline.keystate.buckets); and every change feed is shuffled by key as a large feed is (not gathered
    into one task: pipeline.feeds.changes.SMALL_FEED_BYTES)."""
    from openmirror_nb._core.pipeline.feeds import changes
    from openmirror_nb._core.pipeline.keystate import buckets

    monkeypatch.setattr(buckets, "ROWS_PER_BUCKET", 1)
    monkeypatch.setattr(changes, "SMALL_FEED_BYTES", -1)


@pytest.fixture
def lz_hash():
    return tree_hash


def pytest_collection_finish(session):
    """Say which push kinds the crash matrix kills, when the run has it (tests/reliability/rotation.py)."""
    from tests.reliability import rotation

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and any("test_crash_matrix.py" in item.nodeid for item in session.items):
        reporter.write_line(f"crash matrix kills: {rotation.kinds()[1]}")
