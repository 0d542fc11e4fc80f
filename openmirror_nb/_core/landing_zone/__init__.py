"""The landing zone as one model: names, metadata, table discovery, the home of each table
(``TableFolder``) with its push state and journals, the publish protocol, the lifecycle of a table's
internals, and ``scan`` with the ``Blocker`` reasons it gives.

The publisher, the status report and ``describe`` read the landing zone through this package, over
any ``Storage`` (local folder or OneLake). The local mirror finds its table folders here too
(``discover_tables`` over a ``LocalStorage``) and takes its names and metadata rules from here,
but lists the files of each table folder itself, with the inodes and exact times only a local
replicator needs (``mirror.discovery``).
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
