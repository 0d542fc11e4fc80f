"""Moved: ``openmirror_nb.fabric`` is internal now; ``db.status()`` includes the Fabric status. Names
read from here still work, with a ``DeprecationWarning``."""

from __future__ import annotations

from openmirror_nb._core.moved import forwarder

__getattr__ = forwarder(
    "fabric",
    {
        "get_mirroring_status": "db.status()",
        "get_tables_mirroring_status": "db.status()",
        "read_monitoring_files": "db.status()",
    },
)
