"""Whether the mirror still lists a table, and waiting until it does not (after a drop).

Two sources: ``Files/Monitoring/tables.json`` (written by the service in Fabric and by the local
mirror here) everywhere, and inside Fabric the REST ``getTablesMirroringStatus`` first, which
answers even before the service has rewritten its files. A REST failure falls back to the files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openmirror_nb._core.errors import MirrorWaitTimeoutError, OpenMirrorError
from openmirror_nb._core.fabric.monitoring import read_monitoring_files
from openmirror_nb._core.landing_zone.names import DEFAULT_SCHEMA
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.table_names import identity
from openmirror_nb._core.target import OneLakeTarget, Target


@dataclass(frozen=True)
class Listing:
    """What the mirror says: whether ``table`` is listed, per which source, and how it is."""

    listed: bool
    source: str
    replicator: str = ""  # replicator.json status and heartbeat, for messages


def _same(ref: TableRef, schema: Any, name: Any) -> bool:
    # Fabric compares names case-insensitively; a table at the root is schema dbo.
    return identity(str(schema or DEFAULT_SCHEMA), str(name or "")) == ref.identity


def listing(files: Storage, ref: TableRef, *, rest: Callable[[], list[Any]] | None = None) -> Listing:
    """Does the mirror list ``ref``? ``files`` is the item's ``Files`` area; ``rest`` returns
    ``TableMirroringStatus`` entries (inside Fabric)."""
    if rest is not None:
        try:
            entries = rest()
            listed = any(_same(ref, e.source_schema_name, e.source_table_name) for e in entries)
            return Listing(listed, "getTablesMirroringStatus")
        except OpenMirrorError:
            pass  # throttled, not resolvable, not allowed: the status files say the same, later
    replicator, tables = read_monitoring_files(files)
    listed = any(_same(ref, t.get("sourceSchemaName"), t.get("sourceTableName")) for t in tables)
    beat = replicator.get("lastHeartbeatTime") or "never"
    state = f"replicator {replicator.get('status') or 'not started'}, last heartbeat {beat}"
    return Listing(listed, "Files/Monitoring/tables.json", state)


def wait_until_unlisted(
    files: Storage,
    ref: TableRef,
    *,
    timeout: float,
    hint: str,
    rest: Callable[[], list[Any]] | None = None,
    poll: float = 0.5,
    tick: Callable[[], object] | None = None,
) -> float:
    """Poll ``listing`` until the table is gone; the seconds it took. ``tick`` runs before each
    look (a reseed runs a local mirror's pass there).

    Raises:
        MirrorWaitTimeoutError: still listed after ``timeout`` seconds; the message says by
            which source, how the replicator looks, and ``hint`` (what to check).
    """
    started = time.monotonic()
    while True:
        if tick is not None:
            tick()
        seen = listing(files, ref, rest=rest)
        if not seen.listed:
            return time.monotonic() - started
        waited = time.monotonic() - started
        if waited >= timeout:
            where = f" ({seen.replicator})" if seen.replicator else ""
            raise MirrorWaitTimeoutError(
                f"Table {ref} is still listed in {seen.source}{where} {timeout:g} s after its folder "
                f"was deleted; {hint}"
            )
        time.sleep(min(poll, max(0.0, timeout - waited)))


def wait_until_dropped(
    target: Target,
    ref: TableRef,
    *,
    timeout: float,
    credential: Any = None,
    tick: Callable[[], object] | None = None,
) -> float:
    """``wait_until_unlisted`` for a database target, with the sources and hint that fit it."""
    from openmirror_nb._core import runtime
    from openmirror_nb._core.storage.registry import open_files_storage

    rest: Callable[[], list[Any]] | None = None
    if isinstance(target, OneLakeTarget):
        hint = "check the mirrored database's replication status in Fabric (is it running?)."
        if runtime.is_fabric():
            from openmirror_nb._core.fabric.status import get_tables_mirroring_status

            def rest() -> list[Any]:
                return list(get_tables_mirroring_status(target.workspace, target.item, credential=credential))

    else:
        root = getattr(target, "root", target)
        hint = (
            f"is the local mirror running? Run om.LocalMirror({str(root)!r}).run_once() or .start(), "
            "then wait again."
        )
    files = open_files_storage(target, credential=credential)
    return wait_until_unlisted(files, ref, timeout=timeout, hint=hint, rest=rest, tick=tick)
