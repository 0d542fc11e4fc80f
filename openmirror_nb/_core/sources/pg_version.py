"""A PostgreSQL table's version (``Jdbc.version``): what tells, without reading a row, that the
table has not changed since a run read it.

PostgreSQL's cumulative statistics count every row its heap storage inserts, updates and deletes
in a table (``pg_stat_user_tables``: ``n_tup_ins``, ``n_tup_upd``, ``n_tup_del``, and
``n_live_tup``); these only grow until they are reset, and a reset stamps the database's
``stats_reset``. What they do not count changes something else: ``TRUNCATE`` (and any rewrite)
gives the table a new file (``pg_relation_filenode``), ``ADD COLUMN ... DEFAULT`` and every
other column change its ``pg_attribute`` rows. The version is a digest of all of it, with the
server's start (a crash or restart discards the counters, which could then meet the old sums
again), for the table and every partition or child a read of it includes (a partitioned
table has no rows, nor counters, of its own).

A backend reports a transaction's counts after it ends: when it next waits for a command, unless
it reported less than a second before (then about ten seconds later), and at the latest a minute
later while it stays busy. A version asked before the report gives the old digest, and the table
is left unread; the first run after the report reads it. A change is never lost; it may be
mirrored one run later.

The counters are not used at all (``None``: every run reads the table) where they may miss a
change: ``track_counts`` off (for the server, this database or a role), a standby
(``pg_is_in_recovery()``: it counts nothing it replays), a server before 15 (its statistics
collector could drop counts under load), a table stored otherwise than in PostgreSQL's heap (a
foreign table or partition, another access method), Citus (a distributed table's rows live on the
workers), and servers that speak PostgreSQL's protocol without being PostgreSQL.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.sources.jdbc_meta import _connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from openmirror_nb._core.sources.jdbc_meta import Jdbc

log = logging.getLogger(__name__)
MIN_MAJOR = 15  # statistics in shared memory: a count is delayed, never dropped
_ON = ("on", "true", "yes", "1")

# One row, whether the table exists or not. Columns 1-4 say whether the counters can be trusted,
# 5-6 whether the table is there and stored in the heap, 7-11 are its version.
_QUERY = """
WITH RECURSIVE target AS (
  SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = ? AND c.relname = ? AND c.relkind IN ('r', 'p')
), tree(oid) AS (
  SELECT oid FROM target
  UNION
  SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid
)
SELECT
  version(),
  current_setting('track_counts'),
  pg_is_in_recovery(),
  coalesce((SELECT string_agg(DISTINCT lower(c), ',') FROM pg_db_role_setting s, unnest(s.setconfig) c
    WHERE lower(c) LIKE 'track_counts=%'
      AND s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))), '')
  || coalesce((SELECT ',citus' FROM pg_extension WHERE extname = 'citus'), ''),
  (SELECT count(*) FROM target),
  (SELECT bool_and(c.relkind = 'p' OR a.amname = 'heap') FROM tree t JOIN pg_class c ON c.oid = t.oid
   LEFT JOIN pg_am a ON a.oid = c.relam),
  (SELECT string_agg(concat_ws(':', t.oid, pg_relation_filenode(t.oid),
     pg_stat_get_tuples_inserted(t.oid) + pg_stat_get_tuples_updated(t.oid)
       + pg_stat_get_tuples_deleted(t.oid),
     pg_stat_get_live_tuples(t.oid)), ';' ORDER BY t.oid) FROM tree t),
  (SELECT string_agg(concat_ws(':', a.attnum, a.attname, a.atttypid, a.atttypmod, a.attnotnull,
     a.atthasmissing, (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e
       WHERE e.enumtypid IN (a.atttypid, (SELECT y.typelem FROM pg_type y WHERE y.oid = a.atttypid)))),
     ';' ORDER BY a.attnum)
   FROM target g JOIN pg_attribute a ON a.attrelid = g.oid WHERE a.attnum > 0 AND NOT a.attisdropped),
  (SELECT concat_ws(':', c.relrowsecurity, c.relforcerowsecurity, (SELECT string_agg(
     concat_ws(':', p.polname, p.polcmd, p.polpermissive, p.polroles::text,
       pg_get_expr(p.polqual, p.polrelid)), ';' ORDER BY p.polname)
     FROM pg_policy p WHERE p.polrelid = c.oid))
   FROM target g JOIN pg_class c ON c.oid = g.oid),
  (SELECT stats_reset FROM pg_stat_database WHERE datname = current_database())::text,
  pg_postmaster_start_time()::text
"""


def pg_version(spark: SparkSession, source: Jdbc, table: str) -> str | None:
    """``table``'s version in ``source``'s schema (or the connection's current one); ``None`` when
    the database is not PostgreSQL 15 or later, its counters may miss a change, or the table is
    gone (its read then fails as it would have). One connection, one query; errors are raised."""
    conn = _connect(spark, source)
    try:
        meta = conn.getMetaData()
        if meta.getDatabaseProductName() != "PostgreSQL" or meta.getDatabaseMajorVersion() < MIN_MAJOR:
            return None
        query = conn.prepareStatement(_QUERY)
        try:
            query.setString(1, source.schema or conn.getSchema())
            query.setString(2, table)
            found = query.executeQuery()
            found.next()
            row = [found.getString(i) for i in range(1, 12)]
        finally:
            query.close()
    finally:
        conn.close()
    return version_of(row)


def version_of(row: Sequence[Any]) -> str | None:
    """The version the query's ``row`` gives (as its driver's strings), or ``None`` when the
    counters cannot be trusted or the table is not there."""
    server, track_counts, standby, configured, found, heap, *version = row
    why = untrusted(str(server), str(track_counts), _true(standby), str(configured or ""))
    if why is None and (str(found) != "1" or not _true(heap)):
        why = "the table is gone, or not stored in PostgreSQL's heap"
    if why is not None:
        log.debug("PostgreSQL cannot say whether a table changed: %s", why)
        return None
    digest = hashlib.sha256("\x1f".join(str(part) for part in version).encode("utf-8"))
    return f"pg-{digest.hexdigest()[:24]}"


def untrusted(server: str, track_counts: str, standby: bool, configured: str) -> str | None:
    """Why the counters may miss a change on this server (``None``: they do not).

    ``configured``: the ``track_counts=`` settings of this database and of roles (lower case,
    comma-separated), and ``citus`` when that extension is installed.
    """
    if not server.startswith("PostgreSQL ") or "-YB-" in server:
        return f"the server is not PostgreSQL ({server[:60]})"
    if track_counts.lower() not in _ON:
        return "track_counts is off"
    if standby:
        return "the server is a standby (pg_is_in_recovery())"
    settings = [s for s in configured.split(",") if s]
    if "citus" in settings:
        return "Citus is installed (a distributed table's rows are on its workers)"
    if any(s.partition("=")[2] not in _ON for s in settings):
        return "track_counts is off for this database or a role"
    return None


def _true(value: object) -> bool:
    return str(value).lower() in ("t", "true", "1")
