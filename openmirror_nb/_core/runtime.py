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


def is_fabric() -> bool:
    """True inside a Microsoft Fabric notebook (its runtime sets these variables)."""
    return any(k in os.environ for k in ("FABRIC_RUNTIME_VERSION", "MSNOTEBOOKUTILS_VERSION")) or (
        os.environ.get("SPARK_CLUSTER_NAME", "").startswith("synapse")
    )


def get_spark() -> SparkSession:
    """The active Spark session, or a local one configured for loopback-only, quiet use.

    The local settings pin ANSI off and the session time zone to UTC so that Spark 3.5 (Fabric
    Runtime 1.3) and 4.x behave alike (stack.md gotcha 1). A session this starts logs ERROR and
    above only, from its launch on, and has the installed JDBC drivers (``DRIVER_JARS``, e.g.
    Debian's ``/usr/share/java/postgresql.jar``) on ``spark.jars`` unless jars were chosen for it
    (``--jars`` or ``spark.jars`` in ``PYSPARK_SUBMIT_ARGS`` or ``spark-defaults.conf``); a session
    or context the user started keeps its level and its jars.
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
    builder = (
        SparkSession.builder.master(os.environ.get("OPENMIRROR_SPARK_MASTER", "local[2]"))
        .appName("openmirror_nb")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", os.environ.get("OPENMIRROR_SHUFFLE_PARTITIONS", "4"))
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
    jars = [str(jar) for jar in DRIVER_JARS if jar.is_file()]
    if ours and jars and not _jars_chosen():
        builder = builder.config("spark.jars", ",".join(jars))
    session = builder.getOrCreate()
    if ours:
        session.sparkContext.setLogLevel("ERROR")  # also when the JVM was launched before
    return session


def _jars_chosen() -> bool:
    """True when the user gave the driver its jars (``--jars`` or ``spark.jars`` at launch, or in
    ``spark-defaults.conf``): ours would replace theirs, so none are added."""
    launch = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if "--jars" in launch or "spark.jars=" in launch:
        return True
    conf = _conf_dir()
    defaults = Path(conf, "spark-defaults.conf") if conf else None
    if defaults is None or not defaults.exists():
        return False
    lines = defaults.read_text(errors="replace").splitlines()
    return any(line.split()[:1] == ["spark.jars"] for line in lines)


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
