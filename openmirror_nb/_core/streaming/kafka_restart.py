"""A Kafka mirror restarted after a crash, on Spark 4.

When a query restarts with a batch in its offset log that its commit log lacks (the driver died
while the batch ran), Spark runs that batch again first. Spark 4.1's Kafka source then fails the
batch's progress report (a ``NullPointerException`` in ``KafkaMicroBatchStream.metrics``: the
latest offsets it reports are only known to a batch it planned itself), after the batch was
applied and committed; Spark 3.5 does not. So a Kafka mirror whose checkpoint holds such a batch
runs that batch alone first (``trigger(once=True)``), takes that one failure as the end of the
replay once the commit log holds the batch, and then starts the query as asked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("openmirror_nb")
_SIGNATURE = "KafkaMicroBatchStream.metrics"  # where the Java stack puts it


def _is_the_report_failure(exc: BaseException) -> bool:
    """Spark 4.1's failure: its Java stack names the metrics call (PySpark keeps the stack beside
    the message); without the stack, its message on a query of the Kafka source."""
    stack = str(getattr(exc, "_stackTrace", "") or "")
    text = str(exc)
    return (
        _SIGNATURE in stack
        or _SIGNATURE in text
        or ('because the return value of "scala.Option.get()" is null' in text and "KafkaV2[" in text)
    )


def _batches(spark: SparkSession, folder: str) -> list[int]:
    jvm: Any = spark._jvm  # Hadoop's file system: a checkpoint may be on OneLake (abfss://)
    path = jvm.org.apache.hadoop.fs.Path(folder)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return []
    names = [status.getPath().getName() for status in fs.listStatus(path)]
    return sorted(int(n) for n in names if n.isdigit())


def pending_batch(spark: SparkSession, checkpoint: str) -> int | None:
    """The batch ``checkpoint``'s offset log planned and its commit log lacks, if any."""
    planned = _batches(spark, f"{checkpoint.rstrip('/')}/offsets")
    if not planned:
        return None
    committed = _batches(spark, f"{checkpoint.rstrip('/')}/commits")
    return planned[-1] if not committed or committed[-1] < planned[-1] else None


def replay_first(spark: SparkSession, checkpoint: str, run_once: Callable[[], Any]) -> None:
    """On Spark 4, run the batch a crash left uncommitted alone (``run_once`` starts the query with
    ``trigger(once=True)`` and waits; its ``OpenMirrorError`` is raised as it is), see the module
    docstring."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        return
    batch = pending_batch(spark, checkpoint)
    if batch is None:
        return
    log.info("Checkpoint %s holds batch %s uncommitted: it runs alone first.", checkpoint, batch)
    try:
        run_once()
    except Exception as exc:
        if not _is_the_report_failure(exc) or pending_batch(spark, checkpoint) is not None:
            raise
        log.info("Batch %s replayed and committed (Spark 4's report of it failed, as expected).", batch)
