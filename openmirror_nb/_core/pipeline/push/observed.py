"""Reading what a Spark job observed (``DataFrame.observe``), with a bounded wait.

Spark completes an ``Observation`` after the job that carries it has returned: synchronously in
Spark 4.x, from the listener bus (another thread) in 3.5. PySpark's ``Observation.get`` waits for
that without a bound, so a job whose metrics never come (an observation attached in one session and
run in another, as Spark 4.3 made of our staging write) hangs the push forever. Every read here waits
at most ``spark.openmirror.metricsTimeout`` seconds (default 60) and then raises
``MetricsTimeoutError`` naming what did not come. The Spark jobs themselves are not time-limited.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError, MetricsTimeoutError

if TYPE_CHECKING:
    from pyspark.sql import Observation, SparkSession

TIMEOUT_CONF = "spark.openmirror.metricsTimeout"
DEFAULT_TIMEOUT = 60.0


def timeout_of(spark: SparkSession) -> float:
    """Seconds a read waits for a returned job's observed metrics: the session's
    ``spark.openmirror.metricsTimeout`` (a number of seconds), else ``DEFAULT_TIMEOUT``."""
    value = spark.conf.get(TIMEOUT_CONF, None)
    if value is None:
        return DEFAULT_TIMEOUT
    text = str(value).strip().removesuffix("s")
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ConfigError(
            f"{TIMEOUT_CONF} is {value!r}: give a number of seconds above 0, e.g. "
            f'spark.conf.set("{TIMEOUT_CONF}", "120").'
        )
    return seconds


def counts(observation: Observation, *, spark: SparkSession, what: str) -> dict[str, int]:
    """An ``Observation``'s counts (whole numbers or NULL) once its job has returned; ``what`` names
    them in the error should they not come (e.g. "the staged files' row counts of 'sales.orders'").

    PySpark's ``get`` makes a few JVM calls per metric, which a small push pays on the order of its
    write: the map's text is read in one call instead (its keys are the callers' aliases, its
    values numbers or ``null``), with ``get`` as the fallback should that text ever differ.
    """
    wait(observation, spark=spark, what=what)
    try:
        jo: Any = observation._jo
        text = str(jo.getAsJava().toString())
        pairs = [item.split("=") for item in text.strip()[1:-1].split(", ") if item]
        return {name: 0 if value == "null" else int(value) for name, value in pairs}
    except Exception:  # an internal detail: any surprise only means the slower, public read
        return {name: int(value or 0) for name, value in observation.get.items()}


def wait(observation: Observation, *, spark: SparkSession, what: str) -> None:
    """Return once ``observation`` is complete; raise ``MetricsTimeoutError`` after the session's
    timeout. Spark 4.x exposes the observation's future; 3.5 sets a private field, read by
    reflection; any other Spark gets the public, unbounded ``get`` in a daemon thread that is
    abandoned if the time runs out."""
    seconds = timeout_of(spark)
    jo: Any = observation._jo
    if jo is None:  # never attached to a DataFrame: nothing will ever complete it
        raise MetricsTimeoutError(f"Spark never ran the job that counts {what}; nothing was published.")
    done = _future_ready(observation, jo, seconds)
    if done is None:
        done = _field_ready(jo, seconds)
    if done is None:
        done = _thread_ready(observation, seconds)
    if not done:
        raise MetricsTimeoutError(
            f"Spark's job returned but {what} did not arrive within {seconds:g} s; nothing was "
            f"published. Run it again; if it recurs, check that this Spark version is supported "
            f'(docs: Spark lines) or raise spark.conf.set("{TIMEOUT_CONF}", "<seconds>").'
        )


def _future_ready(observation: Observation, jo: Any, seconds: float) -> bool | None:
    """Spark 4.x: ``Observation.future`` awaited in the JVM (``None``: this Spark has none)."""
    from py4j.protocol import Py4JError, Py4JJavaError

    try:
        future = jo.future()
    except Py4JError:
        return None
    if future.isCompleted():
        return True
    jvm: Any = observation._jvm
    try:
        jvm.scala.concurrent.Await.ready(
            future, jvm.scala.concurrent.duration.Duration.create(int(seconds * 1000), "ms")
        )
    except Py4JJavaError as exc:
        if "TimeoutException" in exc.java_exception.getClass().getName():
            return False
        raise
    return True


def _field_ready(jo: Any, seconds: float) -> bool | None:
    """Spark 3.5: its private ``metrics`` option, polled (``None``: this Spark has no such field)."""
    from py4j.protocol import Py4JError

    try:
        field = jo.getClass().getDeclaredField("metrics")
        field.setAccessible(True)
    except Py4JError:
        return None
    deadline, pause = time.monotonic() + seconds, 0.001
    while not field.get(jo).isDefined():
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return True


def _thread_ready(observation: Observation, seconds: float) -> bool:
    """Any other Spark: the public ``get`` in a daemon thread, joined for at most ``seconds``."""
    reader = threading.Thread(target=lambda: observation.get, name="openmirror-observed", daemon=True)
    reader.start()
    reader.join(seconds)
    return not reader.is_alive()
