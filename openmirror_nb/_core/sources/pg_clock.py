"""The PostgreSQL server's clock against this machine's, measured over JDBC (issue 43).

Debezium's ``source.ts_ms`` is a commit's time on the server's clock; the freshness figures
subtract it from times on this machine's. ``measure_skew`` asks the server for
``clock_timestamp()`` between two readings of this machine's clock: the server read its clock
somewhere in that round trip, so the skew is its time minus the round trip's middle, within half
the round trip. The best of ``TRIES`` (the shortest round trip) is kept. A failed measure is
``None``, unknown, never a skew of 0.

``measure_source`` takes the slot's retained WAL (``pg_cdc.retained_wal``) and the skew on one
connection: ``db.mirror_plan`` measures both when its stream starts and after its batches.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import user_line
from openmirror_nb._core.sources.jdbc_meta import _connect
from openmirror_nb._core.sources.pg_cdc import slot_retained

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from openmirror_nb._core.sources.jdbc import Jdbc

TRIES = 3
_NOW = "SELECT extract(epoch from clock_timestamp())::text"
log = logging.getLogger("openmirror_nb")


@dataclass(frozen=True)
class ClockSkew:
    """The server's clock minus this machine's (``skew``), within ± ``error``, in seconds."""

    skew: float
    error: float


def measure_skew(conn: Any, *, tries: int = TRIES) -> ClockSkew:
    """The skew on the open JDBC connection ``conn``, the best of ``tries`` round trips.

    Raises:
        Exception: the driver's, when the query fails.
    """
    best: ClockSkew | None = None
    statement = conn.createStatement()
    try:
        for _ in range(tries):
            before = time.time()
            result = statement.executeQuery(_NOW)
            after = time.time()
            try:
                result.next()
                server = float(result.getString(1))
            finally:
                result.close()
            found = ClockSkew(server - (before + after) / 2, (after - before) / 2)
            if best is None or found.error < best.error:
                best = found
    finally:
        statement.close()
    assert best is not None
    return best


def _skew_or_none(conn: Any, source: Jdbc) -> ClockSkew | None:
    try:
        return measure_skew(conn)
    except Exception as exc:  # the figure is advice: unknown, and the stream goes on
        log.warning("Could not measure the clock of %s: %s", source.url, user_line(exc, hide=source.hide))
        return None


def measure_source(spark: SparkSession, source: Jdbc, slot: str) -> tuple[int | None, ClockSkew | None]:
    """The WAL replication slot ``slot`` retains (as ``retained_wal``: ``None`` without the slot
    or its position) and the server's skew (``None``: unknown), on one connection.

    Raises:
        ConfigError: the database cannot be reached, or the slot not read.
    """
    conn = _connect(spark, source)
    try:
        skew = _skew_or_none(conn, source)
        return slot_retained(conn, source, slot), skew
    finally:
        conn.close()
