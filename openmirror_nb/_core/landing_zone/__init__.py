"""The landing zone as one model: names, metadata, table discovery, the home of each table
(``TableFolder``), the publish protocol, the incarnation of a table's internals and ``scan``.

The publisher and status read the landing zone through this package, over any ``Storage`` (local
folder or OneLake). The local mirror takes its names and metadata rules from here too, but lists
a local landing zone's folders itself (``mirror.discovery``).
"""

from __future__ import annotations

from openmirror_nb._core.landing_zone.blockers import Blocker
from openmirror_nb._core.landing_zone.discovery import TableLocation, discover_tables
from openmirror_nb._core.landing_zone.metadata import (
    TableMetadata,
    metadata_bytes,
    parse_metadata,
    partner_events_bytes,
    read_metadata,
)
from openmirror_nb._core.landing_zone.names import (
    CLEANUP_FOLDERS,
    DATA_EXTENSIONS,
    DEFAULT_SCHEMA,
    INTERNAL_FOLDER,
    METADATA_FILE,
    PARTNER_EVENTS_FILE,
    SCHEMA_SUFFIX,
    data_file_name,
    parse_sequence,
)
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.landing_zone.table_scan import DataFileInfo, TableScan, scan

__all__ = [
    "CLEANUP_FOLDERS",
    "DATA_EXTENSIONS",
    "DEFAULT_SCHEMA",
    "INTERNAL_FOLDER",
    "METADATA_FILE",
    "PARTNER_EVENTS_FILE",
    "SCHEMA_SUFFIX",
    "Blocker",
    "DataFileInfo",
    "PushState",
    "TableFolder",
    "TableLocation",
    "TableMetadata",
    "TableScan",
    "data_file_name",
    "discover_tables",
    "metadata_bytes",
    "parse_metadata",
    "parse_sequence",
    "partner_events_bytes",
    "read_metadata",
    "scan",
]
