"""The landing-zone protocol and nothing else: names, numbers and the two JSON files.

Contract references (``../shared/reference/landing-zone-contract.md``): §1 layout, §2 metadata
and partner events, §3.3 20-digit sequential names, §6 cleanup folders.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from openmirror_nb.errors import LandingZoneError
from openmirror_nb.model import DelimitedTextOptions, PartnerInfo, TableOptions
from openmirror_nb.storage.base import Storage

METADATA_FILE = "_metadata.json"
PARTNER_EVENTS_FILE = "_partnerEvents.json"
# The service moves processed files into one of these and always leaves the newest in place.
CLEANUP_FOLDERS = ("_ProcessedFiles", "_FilesReadyToDelete")
INTERNAL_FOLDER = "_openmirror"
SEQUENCE_DIGITS = 20
_SEQUENCE_NAME = re.compile(r"^(\d{20})\.([A-Za-z0-9]+)$")


def data_file_name(sequence: int, extension: str) -> str:
    """``00000000000000000001.parquet`` for sequence 1."""
    if not 0 < sequence < 10**SEQUENCE_DIGITS:
        raise LandingZoneError(f"Sequence number {sequence} is outside 1..{10**20 - 1}.")
    return f"{sequence:0{SEQUENCE_DIGITS}d}.{extension}"


def parse_sequence(name: str) -> int | None:
    """The sequence number of a conforming data file name, else ``None``."""
    match = _SEQUENCE_NAME.match(name)
    return int(match.group(1)) if match else None


def last_sequence_number(storage: Storage, folder: str) -> int:
    """The largest sequence number in a table folder and its cleanup folders (0 if none)."""
    found = 0
    for sub in ("", *CLEANUP_FOLDERS):
        path = f"{folder}/{sub}" if sub else folder
        for entry in storage.list_dir(path):
            seq = parse_sequence(entry.name) if not entry.is_dir else None
            if seq is not None:
                found = max(found, seq)
    return found


@dataclass(frozen=True)
class TableMetadata:
    """What a table's ``_metadata.json`` declares."""

    key_columns: tuple[str, ...]
    options: TableOptions
    schema_definition: tuple[dict[str, Any], ...] = ()


def metadata_bytes(
    *,
    key_columns: tuple[str, ...],
    options: TableOptions,
    schema_definition: tuple[dict[str, Any], ...] = (),
) -> bytes:
    """Serialise ``_metadata.json`` with the documented key spellings (LZ-0925)."""
    doc: dict[str, Any] = {
        "keyColumns": list(key_columns),
        "fileDetectionStrategy": options.file_detection,
        "isUpsertDefaultRowMarker": options.upsert_default,
    }
    if options.is_delimited:
        d = options.delimited
        doc["SchemaDefinition"] = {"Columns": list(schema_definition)}
        doc["FileFormat"] = "DelimitedText"
        doc["FileExtension"] = options.extension
        doc["FileFormatTypeProperties"] = {
            "FirstRowAsHeader": True,
            "RowSeparator": d.row_separator,
            "ColumnSeparator": options.column_separator,
            "QuoteCharacter": d.quote,
            "EscapeCharacter": d.escape,
            "NullValue": d.null_value,
            "Encoding": d.encoding,
        }
    return (json.dumps(doc, indent=2) + "\n").encode("utf-8")


def _lower_first(doc: dict[str, Any]) -> dict[str, Any]:
    # Producers spell keys both ways (keyColumns / KeyColumns, FileFormat / fileFormat).
    return {k[:1].lower() + k[1:]: v for k, v in doc.items()}


def parse_metadata(data: bytes) -> TableMetadata:
    """Read a ``_metadata.json`` written by us or any other producer."""
    try:
        doc = _lower_first(json.loads(data.decode("utf-8-sig")))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LandingZoneError(f"_metadata.json is not valid JSON ({exc}); fix or recreate it.") from None
    fmt = str(doc.get("fileFormat", "parquet")).lower()
    ext = str(doc.get("fileExtension", "")).lstrip(".").lower()
    has_text = "schemaDefinition" in doc or fmt in ("csv", "delimitedtext")
    file_format = (ext if ext in ("tsv", "psv") else "csv") if has_text else "parquet"
    options = TableOptions(
        file_format=file_format,  # type: ignore[arg-type]
        file_detection=doc.get("fileDetectionStrategy", "SequentialFileName"),
        upsert_default=_flag(doc.get("isUpsertDefaultRowMarker", False)),
        delimited=_delimited(doc, file_format) if has_text else DelimitedTextOptions(),
    )
    columns = (doc.get("schemaDefinition") or {}).get("Columns") or []
    return TableMetadata(tuple(doc.get("keyColumns") or ()), options, tuple(columns))


def _delimited(doc: dict[str, Any], file_format: str) -> DelimitedTextOptions:
    props = _lower_first(doc.get("fileFormatTypeProperties") or {})
    separator = props.get("columnSeparator")
    default_separator = TableOptions(file_format=file_format).column_separator  # type: ignore[arg-type]
    return DelimitedTextOptions(
        # The contract's default record terminator is \r\n when the property is absent.
        row_separator=props.get("rowSeparator", "\r\n"),
        quote=props.get("quoteCharacter", '"'),
        escape=props.get("escapeCharacter", "\\"),
        null_value=props.get("nullValue", ""),
        encoding=props.get("encoding", "UTF-8"),
        separator=None if separator in (None, default_separator) else separator,
    )


def _flag(value: Any) -> bool:
    # Some producers write booleans as strings ("true"); bool("false") would be True.
    return value is True or str(value).strip().lower() == "true"


def partner_events_bytes(partner: PartnerInfo) -> bytes:
    """Serialise ``_partnerEvents.json`` (contract §2.3)."""
    info: dict[str, Any] = {"sourceType": partner.source_type}
    if partner.source_version:
        info["sourceVersion"] = partner.source_version
    if partner.additional_information:
        info["additionalInformation"] = dict(partner.additional_information)
    doc = {"partnerName": partner.partner_name, "sourceInfo": info}
    return (json.dumps(doc, indent=2) + "\n").encode("utf-8")


def read_metadata(storage: Storage, folder: str) -> TableMetadata | None:
    """The table's metadata, or ``None`` if the table folder has none yet."""
    try:
        return parse_metadata(storage.read_bytes(f"{folder}/{METADATA_FILE}"))
    except FileNotFoundError:
        return None
