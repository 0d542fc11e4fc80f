"""Where we run (Fabric notebook or plain Python) and how to get a Spark session.

Only the edges (api, cli, magics, widgets) use this module.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import MissingDependencyError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Shipped with the package: ERROR and above, without Spark's "Setting default log level" banner.
_LOG_CONFIG = Path(__file__).with_name("spark-log4j2.properties")
# JDBC drivers a session this module starts loads when they are installed: Debian's package
# libpostgresql-jdbc-java puts PostgreSQL's here (Fabric's runtime ships its own drivers).
DRIVER_JARS = (Path("/usr/share/java/postgresql.jar"),)
# More jars for a session this module starts (Spark packages such as Delta's and Kafka's, fetched by
# the project's scripts/fetch-jars or by hand): jar files, or folders of them, separated by os.pathsep.
JARS_ENV = "OPENMIRROR_SPARK_JARS"
# What a session needs to read and write Delta tables with Spark's own Delta reader, set when Delta's
# jars are on ``spark.jars`` (and only then: a session without Delta pays nothing for it).
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def is_fabric() -> bool:
    """True inside a Microsoft Fabric notebook (its runtime sets these variables)."""
    return any(k in os.environ for k in ("FABRIC_RUNTIME_VERSION", "MSNOTEBOOKUTILS_VERSION")) or (
        os.environ.get("SPARK_CLUSTER_NAME", "").startswith("synapse")
    )


def get_spark() -> SparkSession:
    """The active Spark session, or a local one configured for loopback-only, quiet use.

    The local settings pin ANSI off and the session time zone to UTC so that Spark 3.5 (Fabric
    Runtime 1.3) and 4.x behave alike (stack.md gotcha 1). A session this starts logs ERROR and
    above only, from its launch on, and has on ``spark.jars`` the installed JDBC drivers
    (``DRIVER_JARS``, e.g. Debian's ``/usr/share/java/postgresql.jar``) and the jars named by
    ``OPENMIRROR_SPARK_JARS`` (files or folders, ``os.pathsep``-separated), unless jars were chosen
    for it (``--jars`` or ``spark.jars`` in ``PYSPARK_SUBMIT_ARGS`` or ``spark-defaults.conf``).
    When Delta's jars (``delta-spark_*``) are among its jars, ours or those chosen, it also gets
    Delta's SQL extension and catalog (``DELTA_CONF``) unless extensions were chosen for it, and
    rebuilds a Delta table's state in as many tasks as it shuffles into
    (``OPENMIRROR_SHUFFLE_PARTITIONS``, 4), not Delta's 50; a session or context the user started
    keeps its level, its jars and its extensions.
    """
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        raise MissingDependencyError(
            "This needs Spark: pip install 'openmirror-nb[spark]' (Fabric notebooks have it)."
        ) from None

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # The active session is per thread: in a mirror or widget thread, the session made in the
    # notebook's thread is the one to use, as it is (the builder would re-apply our settings).
    made = SparkSession._instantiatedSession
    if made is not None and made._sc._jsc is not None:
        return made
    # A context the user made without a session (SparkContext(...)) is reused by the builder and
    # keeps its log level.
    ours = SparkContext._active_spark_context is None
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    partitions = os.environ.get("OPENMIRROR_SHUFFLE_PARTITIONS", "4")
    builder = (
        SparkSession.builder.master(os.environ.get("OPENMIRROR_SPARK_MASTER", "local[2]"))
        .appName("openmirror_nb")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", partitions)
        .config("spark.sql.ansi.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", os.environ.get("OPENMIRROR_DRIVER_MEMORY", "2g"))
    )
    if ours and not _logging_chosen():
        # The JVM logs its start-up (the log-level banner, the native-hadoop WARN) before any
        # setLogLevel can run: only a log4j2 file given at launch keeps it off the cell.
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_LOG_CONFIG.as_uri()}"
        )
    chosen = _chosen_jars()
    jars = [str(jar) for jar in DRIVER_JARS if jar.is_file()] + _listed_jars()
    if ours and jars and chosen is None:
        builder = builder.config("spark.jars", ",".join(jars))
    delta = any(Path(jar).name.startswith("delta-spark_") for jar in (jars if chosen is None else chosen))
    if ours and delta and not _launch_sets("spark.sql.extensions"):
        for key, value in DELTA_CONF.items():
            builder = builder.config(key, value)
    if ours and delta:
        # Delta rebuilds a table's state in 50 tasks unless told: on a local driver of two cores
        # that is most of a small table's read or write (a DELETE, an OPTIMIZE, a versionAsOf).
        builder = builder.config("spark.databricks.delta.snapshotPartitions", partitions)
    session = builder.getOrCreate()
    if ours:
        session.sparkContext.setLogLevel("ERROR")  # also when the JVM was launched before
    return session


def _chosen_jars() -> list[str] | None:
    """The jars the user gave the driver (``--jars`` or ``spark.jars`` at launch, or in
    ``spark-defaults.conf``), or ``None`` when none were given: ours would replace theirs, so
    then none are added."""
    words = os.environ.get("PYSPARK_SUBMIT_ARGS", "").split()
    for i, word in enumerate(words):
        if word == "--jars" and i + 1 < len(words):
            return words[i + 1].split(",")
        if word.startswith(("--jars=", "spark.jars=")):
            return word.split("=", 1)[1].split(",")
    for line in _defaults_lines():
        parts = line.split(None, 1)
        if parts[:1] == ["spark.jars"]:
            return parts[1].split(",") if len(parts) > 1 else []
    return None


def _launch_sets(key: str) -> bool:
    """True when ``key`` is set at launch (``PYSPARK_SUBMIT_ARGS``) or in ``spark-defaults.conf``."""
    if f"{key}=" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return True
    return any(line.split()[:1] == [key] for line in _defaults_lines())


def _listed_jars() -> list[str]:
    """The jars ``OPENMIRROR_SPARK_JARS`` names: files as they are, folders as the jars in them."""
    found: list[str] = []
    for entry in filter(None, os.environ.get(JARS_ENV, "").split(os.pathsep)):
        path = Path(entry)
        found += [str(p) for p in sorted(path.glob("*.jar"))] if path.is_dir() else [str(path)]
    return found


def _defaults_lines() -> list[str]:
    conf = _conf_dir()
    defaults = Path(conf, "spark-defaults.conf") if conf else None
    if defaults is None or not defaults.exists():
        return []
    return defaults.read_text(errors="replace").splitlines()


def _conf_dir() -> str | None:
    home = os.environ.get("SPARK_HOME")
    return os.environ.get("SPARK_CONF_DIR") or (os.path.join(home, "conf") if home else None)


def _logging_chosen() -> bool:
    """True when the user configured the driver's logging or Java options (environment, or
    ``SPARK_CONF_DIR``): the launch option would replace theirs, so it is left out."""
    launch = " ".join(
        os.environ.get(v, "") for v in ("PYSPARK_SUBMIT_ARGS", "SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS")
    )
    if any(word in launch for word in ("log4j", "driver-java-options", "extraJavaOptions")):
        return True
    conf = _conf_dir()
    if conf is None:
        return False
    defaults = Path(conf, "spark-defaults.conf")
    return Path(conf, "log4j2.properties").exists() or (
        defaults.exists() and "spark.driver.extraJavaOptions" in defaults.read_text(errors="replace")
    )
