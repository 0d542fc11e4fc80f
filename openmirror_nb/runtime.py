"""Where we run (Fabric notebook or plain Python) and how to get a Spark session.

Only the edges (api, cli, magics, widgets) use this module.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def is_fabric() -> bool:
    """True inside a Microsoft Fabric notebook (its runtime sets these variables)."""
    return any(k in os.environ for k in ("FABRIC_RUNTIME_VERSION", "MSNOTEBOOKUTILS_VERSION")) or (
        os.environ.get("SPARK_CLUSTER_NAME", "").startswith("synapse")
    )


def get_spark() -> SparkSession:
    """The active Spark session, or a local one configured for loopback-only, quiet use.

    The local settings pin ANSI off and the session time zone to UTC so that Spark 3.5 (Fabric
    Runtime 1.3) and 4.x behave alike (stack.md gotcha 1).
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
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
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
