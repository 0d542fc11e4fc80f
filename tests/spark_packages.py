"""The Spark packages (Delta's, Kafka's) of the running PySpark's line, from the jar cache that
``scripts/fetch-jars`` fills (``scripts/setup-env`` runs it): ``jars("delta")`` is the folder a
test hands to a session it starts, through ``OPENMIRROR_SPARK_JARS`` (``get_spark`` puts the jars
on ``spark.jars``). A line the project fetches no packages for (the newest PySpark: Maven Central
serves no Spark packages for it) has none; a line it does fetch for must have them, so a cache that
was not filled is an error, not a skip."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KINDS = ("delta", "kafka")


def line() -> str:
    """``spark-<major>.<minor>`` of the installed PySpark (the folder names of ``scripts/jars``)."""
    import pyspark

    return "spark-" + ".".join(pyspark.__version__.split(".")[:2])


def cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("OPENMIRROR_JAR_CACHE") or Path(base, "openmirror-nb", "jars"))


def fetched_for_this_line() -> bool:
    return (REPO / "scripts" / "jars" / line()).is_dir()


def jars(kind: str) -> Path:
    """The folder of ``kind``'s jars for this line; raises when the cache lacks them."""
    folder = cache() / line() / kind
    if not (folder / ".fetched").is_file() or not list(folder.glob("*.jar")):
        raise FileNotFoundError(f"no {kind} jars in {folder}: run scripts/fetch-jars on this environment")
    return folder
