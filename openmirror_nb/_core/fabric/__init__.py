"""Fabric service surfaces: the mirroring status REST API (through semantic-link) and the
``Files/Monitoring`` status files. sempy and azure load only when a function here is called.
"""

from __future__ import annotations

from openmirror_nb._core.errors import FabricRestError
from openmirror_nb._core.fabric.monitoring import read_monitoring_files
from openmirror_nb._core.fabric.rest import fabric_rest_client
from openmirror_nb._core.fabric.status import (
    FabricErrorInfo,
    MirroringStatus,
    TableMirroringStatus,
    get_mirroring_status,
    get_tables_mirroring_status,
)

__all__ = [
    "FabricErrorInfo",
    "FabricRestError",
    "MirroringStatus",
    "TableMirroringStatus",
    "fabric_rest_client",
    "get_mirroring_status",
    "get_tables_mirroring_status",
    "read_monitoring_files",
]
