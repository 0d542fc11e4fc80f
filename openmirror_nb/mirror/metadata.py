"""A table's ``_metadata.json`` as the replicator reads it: tolerant of key spelling (contract §2).

Producers write ``keyColumns`` and ``KeyColumns``, ``FileFormat`` and ``fileFormat``, booleans as
JSON booleans or strings; all of them are accepted here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openmirror_nb.landing_zone import METADATA_FILE
from openmirror_nb.mirror.faults import TableFault

SEQUENTIAL = "SequentialFileName"
LAST_UPDATE_TIME = "LastUpdateTimeFileDetection"


def lookup(doc: dict[str, Any], key: str, default: Any) -> Any:
    """``doc[key]`` compared case-insensitively."""
    for k, v in doc.items():
        if k.lower() == key.lower():
            return v
    return default


@dataclass(frozen=True)
class TableSettings:
    """What the replicator needs from ``_metadata.json``."""

    key_columns: tuple[str, ...]
    sequential: bool
    upsert_default: bool
    digest: str
    doc: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def load_settings(folder: Path) -> TableSettings | None:
    """The table's settings, or ``None`` when the folder has no ``_metadata.json`` (yet).

    Raises:
        TableFault: kind ``metadata`` when the file is not valid JSON or has invalid values.
    """
    try:
        raw = (folder / METADATA_FILE).read_bytes()
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TableFault(
            f"Exception reading the metadata file: {METADATA_FILE}, Exception: {exc}", kind="metadata"
        ) from None
    if not isinstance(doc, dict):
        raise TableFault(
            f"Exception reading the metadata file: {METADATA_FILE} is not a JSON object.", kind="metadata"
        )
    keys = lookup(doc, "keyColumns", None) or []
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        raise TableFault(f"keyColumns must be a list of column names, not {keys!r}.", kind="metadata")
    strategy = str(lookup(doc, "fileDetectionStrategy", SEQUENTIAL))
    if strategy not in (SEQUENTIAL, LAST_UPDATE_TIME):
        raise TableFault(
            f"fileDetectionStrategy '{strategy}' is not supported; use {SEQUENTIAL} or {LAST_UPDATE_TIME}.",
            kind="metadata",
        )
    upsert = lookup(doc, "isUpsertDefaultRowMarker", False)
    return TableSettings(
        key_columns=tuple(keys),
        sequential=strategy == SEQUENTIAL,
        upsert_default=upsert is True or str(upsert).lower() == "true",
        digest=hashlib.sha256(raw).hexdigest()[:16],
        doc=doc,
    )


def missing_metadata_fault(rel: str) -> TableFault:
    """The service's error for a table folder whose data files arrived without metadata."""
    return TableFault(
        f"Exception reading the metadata file: {METADATA_FILE}, Exception: PathNotFound "
        f"Files/LandingZone/{rel}/{METADATA_FILE}",
        kind="metadata",
    )
