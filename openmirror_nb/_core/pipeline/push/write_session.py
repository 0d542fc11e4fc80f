"""How a push's write gets the SQL confs its files need without changing the user's session: a
private clone of the session (``isolated``), or, where Spark cannot clone one, the confs set for
exactly the write (``session_conf``). ``stage`` says which confs and why.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Confs ``session_conf`` holds set, per (session, key): [pushes inside, the user's value].
_HELD: dict[tuple[int, str], list[Any]] = {}
_HELD_LOCK = threading.Lock()


@contextmanager
def session_conf(spark: SparkSession, conf: dict[str, str]) -> Iterator[None]:
    """Set SQL confs session-wide for exactly the enclosed write, then put the user's back.

    Only the fallback of ``stage.write_parts`` for a Spark that cannot clone a session: the user's
    other threads see ``conf`` while the write runs. Our own concurrent pushes share one set:
    the first in saves the user's values, the last out restores them (unset stays unset).
    """
    sid = id(spark)
    entered: list[str] = []
    try:
        with _HELD_LOCK:
            for key, value in conf.items():
                held = _HELD.get((sid, key))
                if held is None:
                    saved = spark.conf.get(key, None)
                    spark.conf.set(key, value)
                    _HELD[(sid, key)] = [1, saved]
                else:
                    held[0] += 1
                entered.append(key)
        yield
    finally:
        with _HELD_LOCK:
            for key in entered:
                held = _HELD[(sid, key)]
                held[0] -= 1
                if held[0] == 0:
                    del _HELD[(sid, key)]
                    if held[1] is None:
                        spark.conf.unset(key)
                    else:
                        spark.conf.set(key, held[1])


def isolated(df: DataFrame, conf: dict[str, str]) -> DataFrame | None:
    """``df`` bound to a private clone of its session that has ``conf`` set, or ``None`` when
    this Spark cannot clone one (Spark Connect, or internals that moved).

    The clone copies the session's state (every SQL conf, so the query keeps its meaning) and
    shares its SparkContext and cache; ``conf`` is set on the clone only, so the user's session
    is never changed. ``cloneSession`` and ``Dataset.ofRows`` are ``private[sql]`` JVM APIs of
    classic Spark 3.5 and 4.x (the Dataset class moved to ``sql.classic`` in 4.0).
    """
    from pyspark.sql import DataFrame as Frame

    try:
        jdf: Any = df._jdf
        jvm: Any = df.sparkSession._jvm
        clone = jdf.sparkSession().cloneSession()
        for key, value in conf.items():
            clone.conf().set(key, value)
        dataset = functools.reduce(getattr, jdf.getClass().getName().split("."), jvm)
        frame = Frame(dataset.ofRows(clone, jdf.logicalPlan()), df.sparkSession)
    except Exception:  # an internal API: any failure only means the bounded session-wide set
        return None
    return frame
