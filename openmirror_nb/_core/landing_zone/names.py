"""What names mean in a landing zone: data-file names, sequence numbers, reserved folders.

Contract references (``../shared/reference/landing-zone-contract.md``): §1 layout (``_`` items
are ignored, ``<schema>.schema`` folders), §3.3 20-digit sequential names, §6 cleanup folders.
Every reader of the landing zone (publisher, local mirror, status) takes these rules from here.
"""

from __future__ import annotations

import re

from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.table_names import DEFAULT_SCHEMA, SCHEMA_SUFFIX

__all__ = ["DEFAULT_SCHEMA", "SCHEMA_SUFFIX"]  # with the names below: what a landing-zone name means

METADATA_FILE = "_metadata.json"
PARTNER_EVENTS_FILE = "_partnerEvents.json"
# The service moves processed files into one of these and always leaves the newest in place.
CLEANUP_FOLDERS = ("_ProcessedFiles", "_FilesReadyToDelete")
PROCESSED_FOLDER, READY_TO_DELETE_FOLDER = CLEANUP_FOLDERS
# Everything this tool keeps for itself, in the landing zone root and in each table folder.
INTERNAL_FOLDER = "_openmirror"
DATA_EXTENSIONS = ("parquet", "csv", "tsv", "psv")
SEQUENCE_DIGITS = 20
_SEQUENCE_NAME = re.compile(r"^(\d{20})\.(parquet|csv|tsv|psv)$")


def data_file_name(sequence: int, extension: str) -> str:
    """``00000000000000000001.parquet`` for sequence 1."""
    if not 0 < sequence < 10**SEQUENCE_DIGITS:
        raise LandingZoneError(f"Sequence number {sequence} is outside 1..{10**20 - 1}.")
    return f"{sequence:0{SEQUENCE_DIGITS}d}.{extension}"


def parse_sequence(name: str) -> int | None:
    """The sequence number of a conforming data file name, else ``None``."""
    match = _SEQUENCE_NAME.match(name)
    return int(match.group(1)) if match else None


def is_ignored(name: str) -> bool:
    """The service ignores every ``_``-prefixed file or folder (§1)."""
    return name.startswith("_")


def data_extension(name: str) -> str | None:
    """The data-file extension of ``name`` (``parquet``, ``csv``...), else ``None``."""
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    return ext if ext in DATA_EXTENSIONS else None


# Beside the landing zone in the item's Files area: the replicator's own status files (§7.3),
# written by the service in Fabric and by the local mirror here. Names within MONITORING_FOLDER.
MONITORING_FOLDER = "Monitoring"
REPLICATOR_FILE = "replicator.json"
TABLES_FILE = "tables.json"
