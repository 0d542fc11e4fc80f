"""The public API: ``connect()`` returns a ``MirroredDatabase`` handle; everything else is thin
over it (magics, widgets, CLI). The handle's methods live in this package's modules by what they
do: writing, schema changes, monitoring, reading mirrored tables, planning and running many tables."""

from __future__ import annotations

import os
from typing import Any

from openmirror_nb._core.api.kafka import KafkaStreams
from openmirror_nb._core.api.live import LivePlans
from openmirror_nb._core.api.monitoring import Monitoring
from openmirror_nb._core.api.planning import Planning
from openmirror_nb._core.api.reading import Reading
from openmirror_nb._core.api.running import Running
from openmirror_nb._core.api.schema import SchemaChanges
from openmirror_nb._core.api.streaming import Streaming
from openmirror_nb._core.api.writing import Writing
from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.model import PartnerInfo
from openmirror_nb._core.target import LocalTarget, OneLakeTarget, parse_target


class MirroredDatabase(
    Writing, Streaming, LivePlans, KafkaStreams, SchemaChanges, Monitoring, Reading, Planning, Running
):
    """A handle on one mirrored database: a local folder or a Fabric landing zone.

    Create it with :func:`connect`.
    """


def connect(
    target: str | os.PathLike[str] | None = None,
    *,
    credential: Any = None,
    partner: PartnerInfo | None = None,
    lock_timeout: float = 600.0,
    create: bool = True,
) -> MirroredDatabase:
    """Open a mirrored database.

    Args:
        target: ``None`` for ``./openmirror-db``; a folder or ``file://`` URL for another local
            mirrored database (created if missing); a OneLake landing-zone URL
            (``https://onelake.dfs.fabric.microsoft.com/<ws>/<db>/Files/LandingZone`` or
            ``abfss://<ws>@onelake.dfs.fabric.microsoft.com/<db>/Files/LandingZone``).
        credential: An Azure ``TokenCredential`` for OneLake (default: notebook identity in
            Fabric, else ``DefaultAzureCredential``). Nothing is read here: the first call that
            reads OneLake raises ``CredentialError`` if no token is obtained or it is refused.
        partner: What ``_partnerEvents.json`` says about the publisher.
        lock_timeout: Seconds a push waits for another writer of the same table.
        create: For a local folder, create the database when it is missing. ``False`` raises
            ``ConfigError`` instead: a mistyped path in a scheduled job must not read as a new,
            empty and healthy database. OneLake databases are never created here.

    Example:
        >>> db = om.connect()
    """
    from openmirror_nb._core.storage.registry import open_storage

    parsed = parse_target(target)
    if isinstance(parsed, LocalTarget):
        if not create and not parsed.landing_zone.is_dir():
            raise ConfigError(
                f"No mirrored database at {parsed.root} (it has no Files/LandingZone); check the "
                "path, or connect with create=True to make one."
            )
        for folder in (parsed.landing_zone, parsed.monitoring, parsed.tables):
            folder.mkdir(parents=True, exist_ok=True)
    storage = open_storage(parsed, credential=credential)
    if isinstance(parsed, OneLakeTarget):
        from openmirror_nb._core.storage.adls import AdlsStorage

        assert isinstance(storage, AdlsStorage)
        # Files, the REST status and row counts use the landing zone's guarded credential: one
        # token chain per handle, and a failure remembered for all of them.
        credential = storage.credential
    return MirroredDatabase(
        target=parsed, storage=storage, partner=partner, lock_timeout=lock_timeout, credential=credential
    )


__all__ = ["MirroredDatabase", "connect"]
