"""What ``check_cdc`` makes of the facts it read from PostgreSQL (``pg_cdc``): each wrong setting
one line naming it and the exact fix, the problems that stop a start and the warnings that do not.
Pure: no connection here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openmirror_nb._core.sources.pg_cdc_config import Cdc, CdcTable

_IDENTITY = {"d": "DEFAULT", "n": "NOTHING", "f": "FULL", "i": "USING INDEX"}


@dataclass(frozen=True)
class Table:
    schema: str
    name: str
    sql: str  # the name as SQL writes it: quote_ident of each part
    exists: bool
    identity: str
    owned: bool
    has_primary_key: bool
    toastable: str


def slot_problems(cdc: Cdc, slot: tuple[str, str, str, int | None] | None, database: str, max_slots: int,
                   slots: int, max_senders: int) -> list[str]:  # fmt: skip
    problems = []
    if slot is None and slots >= max_slots:
        problems.append(
            f"Replication slot {cdc.slot} does not exist and no slot is free ({slots} of "
            f"max_replication_slots = {max_slots} taken): drop an unused one "
            "(SELECT pg_drop_replication_slot('<name>');) or raise max_replication_slots in postgresql.conf, "
            "then restart the server."
        )
    if max_senders <= 0:
        problems.append(
            "max_wal_senders is 0, so the connector cannot stream: set max_wal_senders = 10 in "
            "postgresql.conf, then restart the server."
        )
    if slot is not None:
        kind, plugin, slot_database, _ = slot
        if (kind, plugin, slot_database) != ("logical", "pgoutput", database):
            what = f"a {kind} slot" + (f" of plugin {plugin}" if plugin else "")
            what += f" in database {slot_database}" if slot_database else ""
            problems.append(
                f"Replication slot {cdc.slot} is {what}, not a logical pgoutput slot of database {database}: "
                f"drop it if nothing else reads it (SELECT pg_drop_replication_slot('{cdc.slot}');) or use "
                "another, om.Cdc(slot='...')."
            )
    return problems


def publication_problems(
    cdc: Cdc,
    publication: list[list[str | None]],
    published: set[tuple[str, str]],
    tables: list[Table],
    user: str,
    superuser: bool,
    may_create: bool,
) -> list[str]:
    name = cdc.publication
    if publication:
        inserts, updates, deletes, every_table = (true(v) for v in publication[0])
        problems = []
        unpublished = [
            op for op, on in (("insert", inserts), ("update", updates), ("delete", deletes)) if not on
        ]
        if unpublished:
            problems.append(
                f"Publication {name} does not publish {', '.join(unpublished)}: run ALTER PUBLICATION {name} "
                "SET (publish = 'insert, update, delete');"
            )
        left_out = [t.sql for t in tables if not every_table and (t.schema, t.name) not in published]
        if left_out:
            problems.append(
                f"Publication {name} does not include {', '.join(left_out)}: run ALTER PUBLICATION {name} "
                f"ADD TABLE {', '.join(left_out)};"
            )
        return problems
    # Debezium makes it (publication.autocreate.mode=filtered), which needs CREATE on the database and
    # the ownership of every table.
    not_owned = [t.sql for t in tables if not t.owned]
    if superuser or (may_create and not not_owned):
        return []
    why = f"it does not own {', '.join(not_owned)}" if not_owned else "it has no CREATE on the database"
    every = ", ".join(t.sql for t in tables)
    return [
        f"Publication {name} does not exist and user {user} cannot create it ({why}): have the tables' owner "
        f"run CREATE PUBLICATION {name} FOR TABLE {every};"
    ]


def identity_problems(
    table: CdcTable, known: Table, cdc: Cdc, problems: list[str], warnings: list[str]
) -> None:
    """A table's replica identity: FULL where the mirrored keys are not the primary key (an update's
    or delete's event carries them only then); a warning where PostgreSQL may leave a value out."""
    full = known.identity == "f"
    identity = _IDENTITY.get(known.identity, known.identity)
    fix = f"ALTER TABLE {known.sql} REPLICA IDENTITY FULL;"
    if table.keys and not table.keys_are_primary and not full:
        primary = (
            f"its primary key ({', '.join(table.primary_key)})" if table.primary_key else "no primary key"
        )
        problems.append(
            f"Table {known.sql} is mirrored with keys ({', '.join(table.keys)}), not {primary}, and its "
            f"replica identity is {identity}, so an update's or delete's event may lack them: run {fix}"
        )
    elif table.keys and known.toastable and not full:
        warnings.append(
            f"Table {known.sql} has columns PostgreSQL may store out of line ({known.toastable}) and replica "
            f"identity {identity}: an update that leaves such a value unchanged sends Debezium's "
            f"__debezium_unavailable_value, which stops the table's batches; run {fix}"
        )
    elif not table.keys and not full and known.identity != "i" and not known.has_primary_key:
        warnings.append(
            f"Table {known.sql} has no primary key nor replica identity: in publication {cdc.publication} "
            f"its UPDATE and DELETE fail in PostgreSQL; if anything updates or deletes its rows, run {fix}"
        )


def heartbeat_problems(
    cdc: Cdc,
    tables: Sequence[CdcTable],
    found: dict[tuple[str, str], Table],
    problems: list[str],
    warnings: list[str],
) -> None:
    if cdc.heartbeat_ms <= 0:
        problems.append(
            f"Cdc(heartbeat_ms={cdc.heartbeat_ms}) sends no heartbeats, so the slot keeps WAL while the "
            "captured tables are idle: give heartbeat_ms > 0, e.g. om.Cdc(heartbeat_ms=10000)."
        )
    parts = cdc.heartbeat_parts
    if parts is None:
        schema = tables[0].schema if tables else "public"
        name = f"{schema}.openmirror_heartbeat"
        warnings.append(
            f"No heartbeat table: while the captured tables are idle and the server writes elsewhere, slot "
            f"{cdc.slot} holds WAL; run CREATE TABLE {name} (id int PRIMARY KEY, ts timestamptz NOT NULL); "
            f"and give om.Cdc(heartbeat_table='{name}')."
        )
    elif not found[parts].exists:
        problems.append(
            f"Heartbeat table {cdc.heartbeat_table} does not exist: run CREATE TABLE {cdc.heartbeat_table} "
            "(id int PRIMARY KEY, ts timestamptz NOT NULL);"
        )


def true(value: object) -> bool:
    return str(value).lower() in ("t", "true", "1")
