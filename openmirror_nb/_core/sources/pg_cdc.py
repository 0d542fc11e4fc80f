"""A PostgreSQL database checked, over JDBC, before Debezium's connector captures it (issue 42).

``check_cdc`` asks the server, on one connection through Spark's JVM (``jdbc_meta._connect``),
everything the connector needs that only the database's owner can fix: ``wal_level``, the
REPLICATION role, the replication slot and the publication, each table's replica identity, the
heartbeat table. Each wrong setting is one line naming it and the exact fix; the stream must not
start while any is left. ``retained_wal`` is the WAL the slot holds back: an idle slot keeps every
segment since its position, until the server's disk is full.

``Cdc``, ``CdcTable`` and ``connector_config`` are ``pg_cdc_config``'s, named here too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.landing_zone.slot_wal import size as size_text
from openmirror_nb._core.sources.jdbc_meta import _connect, _failure
from openmirror_nb._core.sources.pg_cdc_config import (
    Cdc,
    CdcTable,
    ConnectorConfig,
    captured,
    connector_config,
    worker_settings,
)
from openmirror_nb._core.sources.pg_cdc_problems import (
    Table,
    heartbeat_problems,
    identity_problems,
    publication_problems,
    slot_problems,
    true,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from openmirror_nb._core.sources.jdbc import Jdbc

__all__ = [
    "Cdc",
    "CdcCheck",
    "CdcTable",
    "ConnectorConfig",
    "check_cdc",
    "connector_config",
    "retained_wal",
    "size_text",
    "worker_settings",
]

_SERVER = """
SELECT current_setting('wal_level'), current_user, current_database(), r.rolsuper, r.rolreplication,
  current_setting('max_replication_slots'), (SELECT count(*) FROM pg_replication_slots),
  current_setting('max_wal_senders'), has_database_privilege(current_database(), 'CREATE')
FROM pg_roles r WHERE r.rolname = current_user
"""
# The WAL a slot retains: from its restart_lsn (the oldest change it may still need) to now.
_SLOT = """
SELECT slot_type, coalesce(plugin, ''), coalesce(database::text, ''),
  pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
    restart_lsn)::bigint
FROM pg_replication_slots WHERE slot_name = ?
"""
_PUBLICATION = "SELECT pubinsert, pubupdate, pubdelete, puballtables FROM pg_publication WHERE pubname = ?"
_PUBLISHED = "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = ?"
# One row a wanted table (a JSON list of {s, t}): its name as SQL writes it, whether it exists, its
# replica identity, whether the user owns it, whether it has a primary key, and its columns that
# PostgreSQL may store out of line (TOAST): any type not stored plain, but a numeric with a
# precision, which is never that long.
_TABLES = """
SELECT w.s, w.t, quote_ident(w.s) || '.' || quote_ident(w.t), c.oid IS NOT NULL,
  coalesce(c.relreplident::text, ''), coalesce(pg_has_role(c.relowner, 'USAGE'), false),
  EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),
  coalesce((SELECT string_agg(a.attname, ', ' ORDER BY a.attnum)
    FROM pg_attribute a JOIN pg_type y ON y.oid = a.atttypid
    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attstorage <> 'p'
      AND NOT (y.typname = 'numeric' AND a.atttypmod >= 0)), '')
FROM json_to_recordset(?::json) AS w(s text, t text)
LEFT JOIN pg_namespace n ON n.nspname = w.s
LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = w.t AND c.relkind IN ('r', 'p')
"""


@dataclass(frozen=True)
class CdcCheck:
    """What ``check_cdc`` found.

    Attributes:
        problems: One line each, naming the setting or object and the exact fix (the SQL to run);
            the stream must not start while there is any.
        warnings: One line each; the stream starts.
        slot_exists: Whether the replication slot exists (Debezium makes it on its first start).
        retained_wal_bytes: The WAL the slot retains (``pg_wal_lsn_diff`` of the server's position
            and the slot's ``restart_lsn``); ``None`` without a slot.
    """

    problems: tuple[str, ...]
    warnings: tuple[str, ...]
    slot_exists: bool
    retained_wal_bytes: int | None

    @property
    def ok(self) -> bool:
        """No problem: ``db.mirror_plan`` may start (warnings aside)."""
        return not self.problems


def check_cdc(spark: SparkSession, source: Jdbc, tables: Sequence[CdcTable], cdc: Cdc) -> CdcCheck:
    """Check, on one connection to ``source``, that Debezium's connector can capture ``tables``
    as ``cdc`` says (see the module's docstring); the database is only read.

    Raises:
        ConfigError: the database cannot be reached, or is not PostgreSQL.
        MissingDependencyError: the driver is not on the session's ``spark.jars``.
    """
    if source.subprotocol != "postgresql":
        raise ConfigError(
            f"cdc tables are captured from PostgreSQL; {source.url} is {source.subprotocol}: give a "
            "jdbc:postgresql:// source, or another strategy."
        )
    conn = _connect(spark, source)
    try:
        server = _rows(conn, _SERVER)[0]
        slot = _slot(conn, cdc.slot)
        publication = _rows(conn, _PUBLICATION, cdc.publication)
        published = (
            {(str(r[0]), str(r[1])) for r in _rows(conn, _PUBLISHED, cdc.publication)}
            if publication
            else set()
        )
        wanted = captured(tables, cdc)
        found = {(t.schema, t.name): t for t in _tables(conn, wanted)}
    except ConfigError:
        raise
    except Exception as exc:
        raise _failure(exc, source, connected=True) from None
    finally:
        conn.close()

    wal_level, user, database = (str(v) for v in server[:3])
    superuser, replication, max_slots, slots, max_senders, may_create = server[3:]
    problems: list[str] = []
    warnings: list[str] = []
    if wal_level != "logical":
        problems.append(
            f"wal_level is {wal_level}, not logical: set wal_level = logical in postgresql.conf (on Azure "
            "Database for PostgreSQL, the server parameter wal_level), then restart the server."
        )
    if not (true(superuser) or true(replication)):
        role = user.replace('"', '""')
        problems.append(
            f"User {user} may not read a replication slot (neither REPLICATION nor superuser): run "
            f'ALTER ROLE "{role}" WITH REPLICATION; as a superuser (on Azure, as the server\'s admin user).'
        )
    missing = [f"{s}.{t}" for s, t in wanted if not found[(s, t)].exists and (s, t) != cdc.heartbeat_parts]
    if missing:
        problems.append(
            f"Tables not found in database {database}: {', '.join(missing)}; create them, or plan again "
            "(db.plan_sources) without them."
        )
    problems += slot_problems(
        cdc, slot, database, int(max_slots or 0), int(slots or 0), int(max_senders or 0)
    )
    existing = [found[w] for w in wanted if found[w].exists]
    problems += publication_problems(
        cdc, publication, published, existing, user, true(superuser), true(may_create)
    )
    for table in tables:
        known = found[(table.schema, table.name)]
        if known.exists:
            identity_problems(table, known, cdc, problems, warnings)
    heartbeat_problems(cdc, tables, found, problems, warnings)
    retained = slot[3] if slot else None
    if retained is not None and retained > cdc.slot_wal_warning_bytes:
        warnings.append(
            f"Replication slot {cdc.slot} retains {size_text(retained)} of WAL (over "
            f"{size_text(cdc.slot_wal_warning_bytes)}), which fills the server's disk: start the connector "
            "so it reads the slot, or drop the slot if it is abandoned: "
            f"SELECT pg_drop_replication_slot('{cdc.slot}');"
        )
    return CdcCheck(tuple(problems), tuple(warnings), slot is not None, retained)


def retained_wal(spark: SparkSession, source: Jdbc, slot: str) -> int | None:
    """The bytes of WAL replication slot ``slot`` retains (from its ``restart_lsn`` to the server's
    position), or ``None`` when there is no such slot (or it has no position yet). One connection,
    one query.

    Raises:
        ConfigError: the database cannot be reached.
    """
    conn = _connect(spark, source)
    try:
        return slot_retained(conn, source, slot)
    finally:
        conn.close()


def slot_retained(conn: Any, source: Jdbc, slot: str) -> int | None:
    """``retained_wal`` on an open connection (``conn``, of ``source``).

    Raises:
        ConfigError: the slot cannot be read.
    """
    try:
        found = _slot(conn, slot)
    except Exception as exc:
        raise _failure(exc, source, connected=True) from None
    return None if found is None else found[3]


def _slot(conn: Any, slot: str) -> tuple[str, str, str, int | None] | None:
    rows = _rows(conn, _SLOT, slot)
    if not rows:
        return None
    kind, plugin, database, retained = rows[0]
    return str(kind), str(plugin), str(database), None if retained is None else int(retained)


def _tables(conn: Any, wanted: list[tuple[str, str]]) -> list[Table]:
    names = json.dumps([{"s": s, "t": t} for s, t in wanted])
    return [
        Table(str(s), str(t), str(sql), true(exists), str(ident), true(owned), true(pk), str(toast or ""))
        for s, t, sql, exists, ident, owned, pk, toast in _rows(conn, _TABLES, names)
    ]


def _rows(conn: Any, sql: str, *params: str) -> list[list[str | None]]:
    """Every row of ``sql`` as the driver's strings (``None`` for NULL)."""
    statement = conn.prepareStatement(sql)
    try:
        for index, value in enumerate(params, start=1):
            statement.setString(index, value)
        result = statement.executeQuery()
        width = result.getMetaData().getColumnCount()
        rows = []
        while result.next():
            rows.append([result.getString(i) for i in range(1, width + 1)])
        return rows
    finally:
        statement.close()
