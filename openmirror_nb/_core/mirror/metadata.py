"""A table's ``_metadata.json`` as the replicator takes it: parsed by ``landing_zone`` (the one
reader of the file, tolerant of key spelling, contract §2), refused as the service refuses it.
"""

from __future__ import annotations

from pathlib import Path

from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.landing_zone.metadata import TableMetadata, parse_metadata
from openmirror_nb._core.landing_zone.names import METADATA_FILE
from openmirror_nb._core.mirror.faults import TableFault


def load_settings(folder: Path) -> TableMetadata | None:
    """The table's metadata, or ``None`` when the folder has no ``_metadata.json`` (yet).

    Raises:
        TableFault: kind ``metadata`` when the file is not valid JSON or has invalid values.
    """
    try:
        raw = (folder / METADATA_FILE).read_bytes()
    except FileNotFoundError:
        return None
    try:
        return parse_metadata(raw)
    except LandingZoneError as exc:
        raise TableFault(
            f"Exception reading the metadata file: {METADATA_FILE}, Exception: {exc}", kind="metadata"
        ) from None


def missing_metadata_fault(rel: str) -> TableFault:
    """The service's error for a table folder whose data files arrived without metadata."""
    return TableFault(
        f"Exception reading the metadata file: {METADATA_FILE}, Exception: PathNotFound "
        f"Files/LandingZone/{rel}/{METADATA_FILE}",
        kind="metadata",
    )
