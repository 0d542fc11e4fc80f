"""A table's ``_metadata.json`` and the database's ``_partnerEvents.json``, written and read.

Contract §2: producers spell keys both ways (``keyColumns`` / ``KeyColumns``, ``FileFormat`` /
``fileFormat``) and write booleans as JSON booleans or strings; every reader here (publisher,
local mirror, status) accepts all of them through the one parser below.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from openmirror_nb._core.errors import ConfigError, LandingZoneError
from openmirror_nb._core.landing_zone.names import METADATA_FILE
from openmirror_nb._core.model import DelimitedTextOptions, PartnerInfo, TableOptions
from openmirror_nb._core.storage.base import Storage

SEQUENTIAL = "SequentialFileName"
LAST_UPDATE_TIME = "LastUpdateTimeFileDetection"
# SchemaDefinition DataType values (contract §2.2), compared in lower case.
TEXT_TYPES = (
    "double",
    "single",
    "int16",
    "int32",
    "int64",
    "datetime",
    "idate",
    "itime",
    "string",
    "boolean",
    "bytearray",
)


@dataclass(frozen=True)
class TextColumn:
    """One ``SchemaDefinition`` column of a delimited-text table."""

    name: str
    data_type: str  # lower case, one of TEXT_TYPES
    nullable: bool


@dataclass(frozen=True)
class TableMetadata:
    """What a table's ``_metadata.json`` declares.

    Attributes:
        key_columns: ``keyColumns``.
        options: File format, detection strategy, upsert default and delimited-text layout.
        schema_definition: ``SchemaDefinition.Columns`` as written (delimited text only).
        text_columns: The same columns, checked.
        separator: ``ColumnSeparator`` as declared, ``None`` when absent (the extension's own).
        digest: A short hash of the file's bytes; changes when the file is rewritten.
    """

    key_columns: tuple[str, ...]
    options: TableOptions
    schema_definition: tuple[dict[str, Any], ...] = ()
    text_columns: tuple[TextColumn, ...] = ()
    separator: str | None = None
    digest: str = ""
    doc: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def sequential(self) -> bool:
        return self.options.file_detection == SEQUENTIAL

    @property
    def upsert_default(self) -> bool:
        return self.options.upsert_default


def lookup(doc: dict[str, Any], key: str, default: Any) -> Any:
    """``doc[key]`` compared case-insensitively."""
    for k, v in doc.items():
        if k.lower() == key.lower():
            return v
    return default


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
    if not key_columns:  # an insert-only table (run_plan's append): the contract's "no key"
        del doc["keyColumns"]
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


def parse_metadata(data: bytes) -> TableMetadata:
    """Read a ``_metadata.json`` written by us or any other producer.

    Raises:
        LandingZoneError: not a JSON object, or a value the service would refuse.
    """
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LandingZoneError(f"{METADATA_FILE} is not valid JSON ({exc}); fix or recreate it.") from None
    if not isinstance(doc, dict):
        raise LandingZoneError(f"{METADATA_FILE} is not a JSON object; fix or recreate it.")
    keys = lookup(doc, "keyColumns", None) or []
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        raise LandingZoneError(f"keyColumns must be a list of column names, not {keys!r}.")
    strategy = str(lookup(doc, "fileDetectionStrategy", SEQUENTIAL))
    if strategy not in (SEQUENTIAL, LAST_UPDATE_TIME):
        raise LandingZoneError(
            f"fileDetectionStrategy '{strategy}' is not supported; use {SEQUENTIAL} or {LAST_UPDATE_TIME}."
        )
    fmt = str(lookup(doc, "fileFormat", "parquet")).lower()
    ext = str(lookup(doc, "fileExtension", "")).lstrip(".").lower()
    has_text = lookup(doc, "schemaDefinition", None) is not None or fmt in ("csv", "delimitedtext")
    file_format = (ext if ext in ("tsv", "psv") else "csv") if has_text else "parquet"
    props = lookup(doc, "fileFormatTypeProperties", None) or {}
    delimited, separator = DelimitedTextOptions(), None
    columns: tuple[TextColumn, ...] = ()
    if has_text:
        delimited, separator = _delimited(props, file_format)
        columns = _text_columns(doc)
    try:
        options = TableOptions(
            file_format=file_format,  # type: ignore[arg-type]
            file_detection=strategy,  # type: ignore[arg-type]
            upsert_default=_flag(lookup(doc, "isUpsertDefaultRowMarker", False)),
            delimited=delimited,
        )
    except ConfigError as exc:
        raise LandingZoneError(str(exc)) from None
    definition = lookup(lookup(doc, "schemaDefinition", None) or {}, "Columns", None) or []
    return TableMetadata(
        key_columns=tuple(keys),
        options=options,
        schema_definition=tuple(definition),
        text_columns=columns,
        separator=separator,
        digest=hashlib.sha256(data).hexdigest()[:16],
        doc=doc,
    )


def _delimited(props: dict[str, Any], file_format: str) -> tuple[DelimitedTextOptions, str | None]:
    if lookup(props, "FirstRowAsHeader", True) is False:
        raise LandingZoneError("FirstRowAsHeader must be true: delimited text needs a header row.")
    encoding = str(lookup(props, "Encoding", "UTF-8"))
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise LandingZoneError(f"Encoding '{encoding}' is not a known character set.") from None
    declared = lookup(props, "ColumnSeparator", None)
    separator = str(declared) if declared else None
    default_separator = TableOptions(file_format=file_format).column_separator  # type: ignore[arg-type]
    options = DelimitedTextOptions(
        # The contract's default record terminator is \r\n when the property is absent.
        row_separator=str(lookup(props, "RowSeparator", "\r\n")),
        quote=str(lookup(props, "QuoteCharacter", '"')),
        escape=str(lookup(props, "EscapeCharacter", "\\")),
        null_value=str(lookup(props, "NullValue", "")),
        encoding=encoding,
        separator=None if separator in (None, default_separator) else separator,
    )
    return options, separator


def _text_columns(doc: dict[str, Any]) -> tuple[TextColumn, ...]:
    columns = []
    for col in lookup(lookup(doc, "SchemaDefinition", None) or {}, "Columns", None) or []:
        name = lookup(col, "Name", None) if isinstance(col, dict) else None
        data_type = str(lookup(col, "DataType", "String")) if isinstance(col, dict) else "?"
        if not isinstance(name, str) or data_type.lower() not in TEXT_TYPES:
            raise LandingZoneError(
                f"SchemaDefinition column {name!r} has DataType '{data_type}'; use one of Double, "
                "Single, Int16, Int32, Int64, DateTime, IDate, ITime, String, Boolean, ByteArray."
            )
        nullable = lookup(col, "IsNullable", True)
        columns.append(TextColumn(name, data_type.lower(), str(nullable).strip().lower() != "false"))
    return tuple(columns)


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
